//! Replay of recorded runs: each leasequeue role's or lifecycle engine's
//! trace through its `step`, then the safety properties that the traces
//! show, over every trace together.
//!
//! A trace is what a driver of the `steadfast` runtime records (JSON lines:
//! a header, then one record per step). [`read`] parses one;
//! [`Trace::replay`] re-runs it and reports the first step whose effects
//! differ: the driver decided something the role did not, or the trace was
//! edited. [`cross_role`] then checks what no single role can see:
//!
//! - **executed at most once**: at most one execution of an activation is
//!   settled and acknowledged (an execution whose scheduler died before
//!   acknowledging it is delivered again, as the spec allows);
//! - **one end per activation**: no activation both fails and is executed
//!   (settled), or fails twice;
//!
//! (an activation a scheduler forgot, its dedupe window past, may end once
//! more per time it was forgotten);
//! - **one owner per key**: no two schedulers serve an action from queues
//!   on the same endpoint key (the key its create revision names);
//! - **a handler succeeds once per digest per start** (lifecycle engines):
//!   no handler runs again, in one operator start, on a digest it succeeded
//!   on without a run on another digest in between (a parent's run starts
//!   its sub-handlers afresh), as the model's property of that name says.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

use steadfast_spec::leasequeue::scheduler::{ClaimResult, Effect, Input};
use steadfast_spec::leasequeue::trace::{Header, Replay, SchedulerRecord, Steps};
use steadfast_spec::leasequeue::{controller, trace::ControllerRecord, Outcome};
use steadfast_spec::lifecycle;

/// Why a trace could not be read.
#[derive(Debug, thiserror::Error)]
pub enum TraceError {
    /// The file could not be read.
    #[error("failed to read the trace {}: {source}", path.display())]
    Read {
        /// The file.
        path: PathBuf,
        /// Why.
        #[source]
        source: std::io::Error,
    },
    /// The file holds no header.
    #[error(
        "{}: empty; a trace starts with a header line naming its role (`\"role\": \
         \"scheduler\"` or `\"controller\"`)",
        path.display()
    )]
    Empty {
        /// The file.
        path: PathBuf,
    },
    /// A line is not what its place in the trace asks for.
    #[error("{}:{line}: not a {what}: {source}", path.display())]
    Line {
        /// The file.
        path: PathBuf,
        /// The line, counted from 1.
        line: usize,
        /// What the line should be.
        what: &'static str,
        /// Where the JSON went wrong.
        #[source]
        source: serde_json::Error,
    },
}

/// One role's recorded run.
#[derive(Clone, Debug)]
pub struct Trace {
    /// The file it came from.
    pub path: PathBuf,
    /// What it recorded.
    pub run: Recorded,
}

/// A recorded run, of the protocol its header names.
#[derive(Clone, Debug)]
pub enum Recorded {
    /// A leasequeue scheduler's or controller's.
    Role {
        /// The role and its setup.
        header: Header,
        /// Its steps.
        steps: Steps,
    },
    /// A lifecycle engine's (one object, one operator start).
    Engine {
        /// The object and the engine's setup.
        header: lifecycle::trace::Header,
        /// Its steps.
        records: Vec<lifecycle::trace::Record>,
    },
}

/// Reads the trace in `path`.
///
/// # Errors
///
/// If the file cannot be read, is empty, or a line is not a header (the
/// first) or a record of the role the header names (the others); blank
/// lines are skipped.
pub fn read(path: &Path) -> Result<Trace, TraceError> {
    let text = std::fs::read_to_string(path).map_err(|source| TraceError::Read {
        path: path.to_owned(),
        source,
    })?;
    let mut lines = text
        .lines()
        .enumerate()
        .filter(|(_, line)| !line.trim().is_empty());
    let first = lines.next().ok_or_else(|| TraceError::Empty {
        path: path.to_owned(),
    })?;
    let role: serde_json::Value = parse(path, first, "trace header")?;
    if role.get("role").and_then(|r| r.as_str()) == Some("engine") {
        let header = parse(path, first, "lifecycle engine header")?;
        let records = lines
            .map(|line| parse(path, line, "lifecycle engine record"))
            .collect::<Result<_, _>>()?;
        return Ok(Trace {
            path: path.to_owned(),
            run: Recorded::Engine { header, records },
        });
    }
    let header: Header = parse(path, first, "trace header")?;
    let steps = match header {
        Header::Scheduler { .. } => Steps::Scheduler(
            lines
                .map(|line| parse(path, line, "scheduler record"))
                .collect::<Result<_, _>>()?,
        ),
        Header::Controller { .. } => Steps::Controller(
            lines
                .map(|line| parse(path, line, "controller record"))
                .collect::<Result<_, _>>()?,
        ),
    };
    Ok(Trace {
        path: path.to_owned(),
        run: Recorded::Role { header, steps },
    })
}

/// Line `index` (from 0) of `path`, which should be a `what`.
fn parse<T: serde::de::DeserializeOwned>(
    path: &Path,
    (index, line): (usize, &str),
    what: &'static str,
) -> Result<T, TraceError> {
    serde_json::from_str(line).map_err(|source| TraceError::Line {
        path: path.to_owned(),
        line: index + 1,
        what,
        source,
    })
}

/// Where a trace's replay stopped.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Verdict {
    /// Every step returned the effects recorded; this many steps.
    Agrees(usize),
    /// A step returned other effects.
    Diverged {
        /// The step, counted from 0 after the header.
        step: usize,
        /// Its line in the file (blank lines aside).
        line: usize,
        /// The effects recorded, as JSON.
        recorded: String,
        /// The effects `step` returns, as JSON.
        replayed: String,
    },
}

impl Trace {
    /// The role and its name, for reports: `scheduler 127.0.0.1:7001`,
    /// `engine of default/t (start 3)`.
    pub fn role(&self) -> String {
        match &self.run {
            Recorded::Role {
                header: Header::Scheduler { id, .. },
                ..
            } => format!("scheduler {id}"),
            Recorded::Role { .. } => "controller".into(),
            Recorded::Engine { header, .. } => {
                format!("engine of {} (start {})", header.object, header.incarnation)
            }
        }
    }

    /// Re-runs every step through the role's `step`.
    pub fn replay(&self) -> Verdict {
        let diverged = |step: usize, recorded: String, replayed: String| Verdict::Diverged {
            step,
            line: step + 2,
            recorded,
            replayed,
        };
        let (header, steps) = match &self.run {
            Recorded::Role { header, steps } => (header, steps),
            Recorded::Engine { header, records } => {
                return match header.replay(records) {
                    Ok(count) => Verdict::Agrees(count),
                    Err(d) => diverged(d.step, to_json(&d.recorded), to_json(&d.replayed)),
                };
            }
        };
        match header.replay(steps.clone()) {
            Replay::Agrees(count) => Verdict::Agrees(count),
            Replay::SchedulerDiverged(d) => {
                diverged(d.step, to_json(&d.recorded), to_json(&d.replayed))
            }
            Replay::ControllerDiverged(d) => {
                diverged(d.step, to_json(&d.recorded), to_json(&d.replayed))
            }
            // `read` parses the steps of the role the header names.
            Replay::WrongRole => unreachable!("a trace's steps are of its header's role"),
        }
    }

    /// A scheduler's id, how long it remembers what it settled
    /// (`scheduler::Config::remember_for`), and its records.
    fn scheduler(&self) -> Option<(&str, Option<u64>, &[SchedulerRecord])> {
        match &self.run {
            Recorded::Role {
                header: Header::Scheduler { id, config, .. },
                steps: Steps::Scheduler(records),
            } => Some((id, config.remember_for, records)),
            _ => None,
        }
    }

    fn controller(&self) -> Option<&[ControllerRecord]> {
        match &self.run {
            Recorded::Role {
                steps: Steps::Controller(records),
                ..
            } => Some(records),
            _ => None,
        }
    }

    fn engine(&self) -> Option<(&lifecycle::trace::Header, &[lifecycle::trace::Record])> {
        match &self.run {
            Recorded::Engine { header, records } => Some((header, records)),
            Recorded::Role { .. } => None,
        }
    }
}

/// `value` as JSON, for a report.
fn to_json<T: serde::Serialize>(value: &T) -> String {
    serde_json::to_string(value).unwrap_or_else(|error| format!("<{error}>"))
}

/// A place in the traces: a file and a step of it.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub struct At {
    /// The trace's file.
    pub path: PathBuf,
    /// The step, counted from 0 after the header.
    pub step: usize,
}

impl std::fmt::Display for At {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{} step {}", self.path.display(), self.step)
    }
}

/// A safety property that spans roles, violated.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Violation {
    /// Two executions of one activation both finished and were reported.
    ExecutedTwice {
        /// The activation.
        id: String,
        /// Where each execution was handed out.
        executions: Vec<At>,
    },
    /// An activation ended twice: failed and executed, failed twice, or
    /// resolved twice by a controller.
    EndedTwice {
        /// The activation.
        id: String,
        /// Where each end was recorded.
        ends: Vec<At>,
    },
    /// A handler ran again, in one operator start, on a digest it had
    /// succeeded on.
    Rerun {
        /// The handler.
        handler: String,
        /// The digest.
        digest: String,
        /// The success, and the run after it.
        runs: Vec<At>,
    },
    /// Two schedulers served one action from queues on the same key.
    SharedKey {
        /// The action.
        action: String,
        /// The key's create revision.
        created: i64,
        /// The schedulers.
        schedulers: Vec<String>,
    },
}

impl Violation {
    /// The property violated, by name.
    pub fn property(&self) -> &'static str {
        match self {
            Violation::ExecutedTwice { .. } => "executed at most once",
            Violation::EndedTwice { .. } => "one end per activation",
            Violation::SharedKey { .. } => "one owner per key",
            Violation::Rerun { .. } => "a handler succeeds once per digest per start",
        }
    }
}

impl std::fmt::Display for Violation {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let list = |places: &[At]| {
            places
                .iter()
                .map(ToString::to_string)
                .collect::<Vec<_>>()
                .join(", ")
        };
        match self {
            Violation::ExecutedTwice { id, executions } => write!(
                f,
                "activation {id} was executed more than once: {}",
                list(executions)
            ),
            Violation::EndedTwice { id, ends } => {
                write!(f, "activation {id} ended more than once: {}", list(ends))
            }
            Violation::Rerun {
                handler,
                digest,
                runs,
            } => write!(
                f,
                "handler {handler} ran again on digest {digest} after succeeding on it: {}",
                list(runs)
            ),
            Violation::SharedKey {
                action,
                created,
                schedulers,
            } => write!(
                f,
                "schedulers {} all served action {action} from the key created at revision \
                 {created}",
                schedulers.join(" and ")
            ),
        }
    }
}

/// The names of the properties [`cross_role`] checks.
pub const CROSS_ROLE_PROPERTIES: [&str; 4] = [
    "executed at most once",
    "one end per activation",
    "one owner per key",
    "a handler succeeds once per digest per start",
];

/// Checks the safety properties that span roles over `traces` together.
pub fn cross_role(traces: &[Trace]) -> Vec<Violation> {
    let mut settled: BTreeMap<String, Vec<At>> = BTreeMap::new();
    let mut ends: BTreeMap<String, Vec<At>> = BTreeMap::new();
    let mut resolved: BTreeMap<String, Vec<At>> = BTreeMap::new();
    let mut owners: BTreeMap<(String, i64), BTreeSet<String>> = BTreeMap::new();
    let mut forgotten: BTreeMap<String, usize> = BTreeMap::new();
    for trace in traces {
        let at = |step| At {
            path: trace.path.clone(),
            step,
        };
        if let Some((id, remember_for, records)) = trace.scheduler() {
            scheduler_facts(id, remember_for, records, |fact, step| match fact {
                Fact::Settled(activation) => {
                    ends.entry(activation.clone()).or_default().push(at(step));
                    settled.entry(activation).or_default().push(at(step));
                }
                Fact::Failed(activation) => ends.entry(activation).or_default().push(at(step)),
                Fact::Forgotten(activation) => *forgotten.entry(activation).or_default() += 1,
                Fact::Served(action, created) => {
                    owners
                        .entry((action, created))
                        .or_default()
                        .insert(id.to_owned());
                }
            });
        }
        for (step, record) in trace.controller().unwrap_or_default().iter().enumerate() {
            // A failure the controller decided, rather than one a scheduler
            // reported, is an end of its own.
            let reported = matches!(record.input, controller::Input::Outcome { .. });
            for effect in &record.effects {
                if let controller::Effect::Resolve { id, outcome } = effect {
                    resolved.entry(id.clone()).or_default().push(at(step));
                    if let (Outcome::Failed(_), false) = (outcome, reported) {
                        ends.entry(id.clone()).or_default().push(at(step));
                    }
                }
            }
        }
    }
    let twice =
        |id: &String, places: &Vec<At>| places.len() > 1 + forgotten.get(id).copied().unwrap_or(0);
    let executed = settled
        .into_iter()
        .filter(|(id, places)| twice(id, places))
        .map(|(id, executions)| Violation::ExecutedTwice { id, executions });
    let ended = ends
        .into_iter()
        .filter(|(id, places)| twice(id, places))
        .map(|(id, ends)| Violation::EndedTwice { id, ends });
    let resolved_twice = resolved
        .into_iter()
        .filter(|(_, places)| places.len() > 1)
        .map(|(id, ends)| Violation::EndedTwice { id, ends });
    let shared = owners
        .into_iter()
        .filter(|(_, schedulers)| schedulers.len() > 1)
        .map(|((action, created), schedulers)| Violation::SharedKey {
            action,
            created,
            schedulers: schedulers.into_iter().collect(),
        });
    let reruns = traces.iter().flat_map(reruns);
    executed
        .chain(ended)
        .chain(resolved_twice)
        .chain(shared)
        .chain(reruns)
        .collect()
}

/// The runs of a lifecycle engine's trace that repeat a success: a run of a
/// handler on a digest returning after a success of it on that digest, with
/// no run of it on another digest in between (a top-level handler's return
/// starts its sub-handlers afresh; the object going starts everything
/// afresh).
fn reruns(trace: &Trace) -> Vec<Violation> {
    let Some((header, records)) = trace.engine() else {
        return Vec::new();
    };
    let at = |step| At {
        path: trace.path.clone(),
        step,
    };
    // Each run's handler, parent and digest, from its invocation.
    let mut runs: BTreeMap<lifecycle::RunId, (String, Option<String>, String)> = BTreeMap::new();
    // Each handler's last return: its digest, and where it succeeded on it.
    let mut last: BTreeMap<String, (String, Option<usize>)> = BTreeMap::new();
    let mut violations = Vec::new();
    for (step, record) in records.iter().enumerate() {
        if let lifecycle::Input::Gone = &record.input {
            // An object made again under the name is another object.
            last.clear();
        }
        if let lifecycle::Input::HandlerDone { run, outcome, .. } = &record.input {
            if let Some((handler, parent, digest)) = runs.get(run).cloned() {
                if parent.is_none() {
                    let prefix = format!("{handler}/");
                    last.retain(|h, _| !h.starts_with(&prefix));
                }
                let before = last.get(&handler).filter(|(d, _)| *d == digest);
                let succeeded = before.and_then(|(_, s)| *s);
                if let Some(first) = succeeded {
                    violations.push(Violation::Rerun {
                        handler: handler.clone(),
                        digest: digest.clone(),
                        runs: vec![at(first), at(step)],
                    });
                }
                let now = (*outcome == lifecycle::Outcome::Success).then_some(step);
                last.insert(handler, (digest, succeeded.or(now)));
            }
        }
        for effect in &record.effects {
            if let lifecycle::Effect::Invoke {
                run,
                handler,
                parent,
                essence,
                ..
            } = effect
            {
                let registered = parent.as_ref().unwrap_or(handler);
                let digest = header
                    .config
                    .handler(registered)
                    .map(|spec| spec.digest(essence))
                    .unwrap_or_default();
                runs.insert(*run, (handler.clone(), parent.clone(), digest));
            }
        }
    }
    violations
}

/// What a scheduler's trace says that a cross-role property reads.
enum Fact {
    /// An execution of this activation finished and was reported: it
    /// ended, executed.
    Settled(String),
    /// This activation failed for good.
    Failed(String),
    /// The scheduler forgot this activation: a copy of it is new again.
    Forgotten(String),
    /// Work of this action was handed out from the key created at this
    /// revision.
    Served(String, i64),
}

/// Walks scheduler `me`'s records and reports each [`Fact`] with its step.
/// A scheduler that remembers what it settled for `remember_for` (by its
/// own clock, the sum of its steps' `elapsed`) has forgotten an activation
/// settled that long before it settles it again.
fn scheduler_facts(
    me: &str,
    remember_for: Option<u64>,
    records: &[SchedulerRecord],
    mut report: impl FnMut(Fact, usize),
) {
    let mut clock: u64 = 0;
    // When (by its clock) each activation was last settled.
    let mut settled_at: BTreeMap<String, u64> = BTreeMap::new();
    let mut settle = |id: &String, clock: u64, step: usize, report: &mut dyn FnMut(Fact, usize)| {
        let last = settled_at.insert(id.clone(), clock);
        let forgotten = last
            .zip(remember_for)
            .is_some_and(|(at, span)| clock >= at + span);
        if forgotten {
            report(Fact::Forgotten(id.clone()), step);
        }
    };
    // The key each (action, lease) queue was opened on, from the replies
    // that open queues.
    let mut keys: BTreeMap<(String, i64), i64> = BTreeMap::new();
    // Reports not confirmed yet: one of these reported again is a resend,
    // not another settlement.
    let mut reporting: BTreeSet<String> = BTreeSet::new();
    for (step, record) in records.iter().enumerate() {
        clock += record.elapsed;
        match &record.input {
            Input::ReportAcked { id } | Input::ReportBounced { id } => {
                reporting.remove(id);
            }
            Input::Claimed {
                action,
                lease,
                result,
            } => {
                let created = match result {
                    ClaimResult::Created { created } => Some(*created),
                    ClaimResult::Exists(key) if key.owner == me => Some(key.created),
                    ClaimResult::Exists(_) | ClaimResult::LeaseNotFound => None,
                };
                if let Some(created) = created {
                    keys.insert((action.clone(), *lease), created);
                }
            }
            Input::Resolved {
                action,
                key: Some(key),
                ..
            } if key.owner == me => {
                keys.insert((action.clone(), key.lease), key.created);
            }
            Input::Forget { id } => {
                reporting.remove(id);
                report(Fact::Forgotten(id.clone()), step);
            }
            _ => {}
        }
        for effect in &record.effects {
            match effect {
                Effect::Execute { action, lease, .. } => {
                    if let Some(created) = keys.get(&(action.clone(), *lease)) {
                        report(Fact::Served(action.clone(), *created), step);
                    }
                }
                Effect::Report { id, outcome } => {
                    if !reporting.insert(id.clone()) {
                        continue;
                    }
                    settle(id, clock, step, &mut report);
                    report(
                        match outcome {
                            Outcome::Executed => Fact::Settled(id.clone()),
                            Outcome::Failed(_) => Fact::Failed(id.clone()),
                        },
                        step,
                    );
                }
                _ => {}
            }
        }
    }
}
