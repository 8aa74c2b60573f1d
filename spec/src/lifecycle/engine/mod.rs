//! The lifecycle engine for one object: a sans-I/O state machine.
//!
//! [`Engine::step`] takes what the world says (a version of the object seen
//! by a watch, a list or a read; a run's outcome; a patch's result; the
//! time) and returns what the engine asks of the world (run a handler on an
//! essence by a deadline, send one patch, read the object, wake at a time).
//! Each processing cycle follows kopf's: derive the reason from the
//! diff-base and the essence, keep the finalizer, pick one handler or
//! sub-handler to run, record its outcome, and commit the diff-base when
//! everything active is finished, all in one patch. The [`Rules`] decide
//! what "finished" means and how the engine meets the API server's faults.
//!
//! [`Rules`]: super::rules::Rules
//!
//! The engine is one state machine with one [`Engine::step`]; its concerns
//! are kept apart as quinn-proto keeps a connection's: what it is told
//! ([`inputs`]) and asks ([`effects`]), the cycle ([`cycle`]), the outcomes
//! of runs ([`outcomes`]), its writes and their answers ([`patches`]), and
//! the claim ([`claims`]).

mod claims;
mod cycle;
mod effects;
mod inputs;
mod outcomes;
mod patches;
mod renewal;

use serde::{Deserialize, Serialize};

use super::domain::Domain;
use super::handlers::Config;
use super::object::ObjectView;
use super::rules::Rule;

pub use cycle::Cycle;
pub use effects::{ClaimChange, Effect, Patch, Verdict};
pub use inputs::{ClientError, Failure, Input, Outcome, RunId};
pub use outcomes::Carried;
pub use patches::Pause;
pub use renewal::Renewal;

/// Where the engine is in its cycle.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(bound = "")]
pub enum Phase<D: Domain> {
    /// Waiting for a version to process, or for a wake-up.
    Idle,
    /// A handler runs; its outcome continues the cycle.
    Running {
        /// The run.
        run: RunId,
        /// The handler that runs.
        handler: D::Handler,
        /// A sub-handler's parent.
        parent: Option<D::Handler>,
        /// When the run is abandoned: its timeout, or its claim's end.
        deadline: D::Time,
        /// When its episode's time is up (its start plus the handler's
        /// timeout).
        limit: D::Time,
        /// The renewal of its claim ([`Rule::RenewClaims`]), if it may
        /// outlast the claim.
        renewal: Option<Renewal<D>>,
        /// The cycle it runs in.
        cycle: Cycle<D>,
    },
    /// A patch is in flight.
    Patching {
        /// The patch, on the version it was computed from (a split patch's
        /// rest is sent on the version its status part made).
        patch: Patch<D>,
        /// What follows it, sent once it applied: the rest of a patch whose
        /// status went first through the status subresource
        /// ([`Config::status_subresource`]).
        rest: Option<Patch<D>>,
        /// The outcome of the run it records, if it records one.
        carried: Option<Carried<D>>,
        /// The versions the watch showed since it was sent: one of them
        /// may be the version it makes.
        seen: Vec<ObjectView<D>>,
    },
}

/// Which versions the engine will not process yet.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(bound = "")]
pub enum Hold<D: Domain> {
    /// None: the newest version seen is processed.
    None,
    /// Until the watch shows this version (the engine's own write, or a
    /// version it read): anything else it shows is older.
    Until(D::Version),
    /// Until a consistent read answers: a list showed a version other than
    /// the newest seen, which may be newer or stale.
    Fetching {
        /// The versions the list and the restarted watch showed meanwhile.
        seen: Vec<D::Version>,
        /// Whether the read was asked for (it is asked for once the engine
        /// is idle, so that it reads every write of the engine's).
        asked: bool,
    },
    /// Until the object changes from this version: a patch computed from
    /// it was refused for good, and would be again.
    Refused(D::Version),
}

impl<D: Domain> Hold<D> {
    /// Until a consistent read answers, which is yet to be asked for.
    fn fetching() -> Self {
        Hold::Fetching {
            seen: Vec::new(),
            asked: false,
        }
    }
}

/// The engine's memory of one object. It is lost on a restart; everything
/// that must survive one is in the object's annotations.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(bound = "")]
pub struct Engine<D: Domain> {
    /// Where the engine is in its cycle.
    pub phase: Phase<D>,
    /// The newest version seen that is not known to be older than another
    /// seen: the one processed next.
    pub view: Option<ObjectView<D>>,
    /// The version the watch (or a list) showed last, kept or not.
    pub shown: Option<D::Version>,
    /// Which versions are not processed yet.
    pub hold: Hold<D>,
    /// Outcomes of runs whose patches were refused, one per handler, each
    /// to be written onto a version on which its handler's digest is the
    /// one it ran on (an object may change and change back).
    pub carried: Vec<Carried<D>>,
    /// Noticed when the operator started and not handled in full since:
    /// resume handlers apply.
    pub initial: bool,
    /// The wait after a throttled or failed request, until a request is
    /// served.
    pub pause: Option<Pause<D>>,
    /// What was told of the last version whose annotations could not be
    /// read, until one can be read (so that it is told once).
    pub unreadable: Option<D::Message>,
    /// The version whose mark ([`Effect::Mark`]) the engine last asked to
    /// clear, so that it asks once per version.
    pub unmarked: Option<D::Version>,
    /// Told to stop: no new run starts, and the engine's claim is released.
    pub stopping: bool,
    /// A run the engine cancelled that is not known to have stopped: its
    /// claim is not released meanwhile ([`Rule::KeepClaimPastCancel`]).
    pub cancelled: Option<RunId>,
    /// The replica it belongs to, as its claims name it.
    pub identity: D::Holder,
    /// The time last told.
    pub now: D::Time,
    /// This start of the operator.
    pub incarnation: u32,
    /// Runs started in this incarnation.
    pub runs: u32,
}

impl<D: Domain> Engine<D> {
    /// The engine of replica `identity` of an operator started at `now`,
    /// its `incarnation`th start (any number not used by an earlier start
    /// of this operator).
    pub fn new(identity: D::Holder, incarnation: u32, now: D::Time) -> Self {
        Engine {
            phase: Phase::Idle,
            view: None,
            shown: None,
            hold: Hold::None,
            carried: Vec::new(),
            initial: true,
            pause: None,
            unreadable: None,
            unmarked: None,
            stopping: false,
            cancelled: None,
            identity,
            now,
            incarnation,
            runs: 0,
        }
    }

    /// The inputs to feed, one by one, for `input` coming in at `now`: a
    /// [`Input::Tick`] first if the engine's time is behind, so that it
    /// decides on the time the input comes in (whether its claim is still
    /// live, among others), not on the last time it was told.
    pub fn timed(&self, now: D::Time, input: Input<D>) -> Vec<Input<D>> {
        if self.now < now && !matches!(input, Input::Tick { .. }) {
            vec![Input::Tick { now }, input]
        } else {
            vec![input]
        }
    }

    /// Feeds one input to the engine and returns what it asks for.
    pub fn step(&mut self, config: &Config<D>, input: Input<D>) -> Vec<Effect<D>> {
        let mut effects = self.take(config, input);
        effects.extend(self.unmark());
        effects
    }

    /// The newest version seen can be read and carries the mark that said
    /// an older one could not: the mark is cleared, once per version.
    fn unmark(&mut self) -> Option<Effect<D>> {
        let view = self.view.as_ref().filter(|v| v.marked)?;
        if self.unmarked.as_ref() == Some(&view.version) {
            return None;
        }
        self.unmarked = Some(view.version.clone());
        Some(Effect::Mark {
            expect: view.version.clone(),
            message: None,
        })
    }

    /// What the engine does with `input`.
    fn take(&mut self, config: &Config<D>, input: Input<D>) -> Vec<Effect<D>> {
        let waits = config.rules.has(Rule::WaitForOwnWrite);
        if input.served() {
            // The API server serves again: the waits after throttled
            // requests are over.
            self.pause = None;
        }
        match input {
            Input::Observed(view) => {
                let mut effects = self.observe(config, view);
                // A renewal that failed on an older version is sent again.
                effects.extend(self.renew_if_due(config));
                effects
            }
            Input::Listed(view) => {
                let newest = self.view.as_ref().map(|v| v.version.clone());
                if let Hold::Fetching { .. } = self.hold {
                    return self.observe(config, view);
                }
                if config.rules.has(Rule::ConfirmLists) && newest.is_some_and(|v| v != view.version)
                {
                    // A list may be served from a cache: a version other
                    // than the newest seen may be older than it, or newer.
                    // Only a consistent read can tell.
                    self.hold = Hold::fetching();
                    self.see(view, false);
                    return self.cycle(config);
                }
                self.observe(config, view)
            }
            Input::Fetched(view) => {
                if let Hold::Fetching { seen, .. } = &self.hold {
                    // The watch restarted from a list, or lags: unless it has
                    // shown the version read here, it will, after older ones.
                    let shown =
                        seen.contains(&view.version) || self.shown.as_ref() == Some(&view.version);
                    self.hold = if shown {
                        Hold::None
                    } else {
                        Hold::Until(view.version.clone())
                    };
                }
                self.unreadable = None;
                self.view = Some(view);
                self.cycle(config)
            }
            Input::Gone => {
                self.view = None;
                self.shown = None;
                self.hold = Hold::None;
                self.carried.clear();
                // A run on an object that is gone has nothing left to do;
                // a patch or read in flight is answered, and comes to
                // nothing.
                match std::mem::replace(&mut self.phase, Phase::Idle) {
                    Phase::Running { run, .. } => vec![Effect::Cancel { run }],
                    other => {
                        self.phase = other;
                        Vec::new()
                    }
                }
            }
            Input::Unlisted => {
                // Gone, or the list is older than the object: only a
                // consistent read can tell (it answers Gone or Fetched).
                if !matches!(self.hold, Hold::Fetching { .. }) {
                    self.hold = Hold::fetching();
                }
                self.cycle(config)
            }
            Input::HandlerDone {
                run,
                outcome,
                subs,
                write,
            } => match std::mem::replace(&mut self.phase, Phase::Idle) {
                Phase::Running {
                    run: running,
                    handler,
                    parent,
                    cycle,
                    ..
                } if running == run => {
                    let digest = self
                        .spec(config, &handler, parent.as_ref())
                        .digest(&cycle.view.essence);
                    let done = Carried::ran(&cycle.view, handler, digest, outcome, subs, write);
                    self.finish_telling(config, parent, cycle, done)
                }
                other => {
                    // Not the run this engine waits for: one it abandoned
                    // (which has stopped, then), or one from before a
                    // restart.
                    self.phase = other;
                    self.stopped_run(run);
                    Vec::new()
                }
            },
            Input::Stopped { run } => {
                self.stopped_run(run);
                Vec::new()
            }
            Input::PatchApplied { version } => {
                if let Some(effects) = self.send_rest(&version) {
                    return effects;
                }
                let Phase::Patching { seen, .. } = std::mem::replace(&mut self.phase, Phase::Idle)
                else {
                    return Vec::new();
                };
                // The newest version the watch showed, if it showed the one
                // the patch made (it shows versions in order: whatever came
                // after is newer still, another writer's).
                let made = seen
                    .iter()
                    .any(|v| v.version == version)
                    .then(|| seen.last().cloned())
                    .flatten();
                if self.view.is_none() {
                    // The object went meanwhile: no version of it will come.
                    self.hold = Hold::None;
                    return Vec::new();
                }
                if let Hold::Fetching { .. } = self.hold {
                    // The read is asked for now, after the write.
                } else if let Some(newest) = made {
                    // The watch showed the version the patch made, and
                    // perhaps newer ones: the newest is processed.
                    self.view = Some(newest);
                    self.hold = Hold::None;
                } else if waits {
                    self.hold = Hold::Until(version);
                    return Vec::new();
                } else {
                    self.hold = Hold::None;
                }
                self.cycle(config)
            }
            Input::PatchConflict => self.refused(config),
            Input::PatchRefused { message } => self.refused_for_good(config, message),
            // A patch that may or may not have applied, whatever the
            // reason, is met as a refused one once the wait is over
            // (nothing is asked of the server before): the object is read,
            // and the run's outcome written again if it is not there.
            Input::PatchThrottled { retry_after } => self.unanswered(config, retry_after),
            Input::PatchUnanswered { .. } => self.unanswered(config, None),
            Input::FetchFailed { retry_after, .. } => {
                let Hold::Fetching { asked, .. } = &mut self.hold else {
                    return Vec::new();
                };
                // Asked for again once the wait is over.
                *asked = false;
                self.back_off(config, retry_after)
            }
            Input::Unreadable { version, message } => {
                // Nothing of this version can be processed, nor of any
                // version before it; the next readable one is. The mark
                // is set once per message (its own write makes a version
                // that says the same).
                self.shown = Some(version.clone());
                self.view = None;
                self.hold = Hold::None;
                if self.unreadable.as_ref() == Some(&message) {
                    return Vec::new();
                }
                self.unreadable = Some(message.clone());
                vec![
                    Effect::Mark {
                        expect: version,
                        message: Some(message.clone()),
                    },
                    Effect::Tell(Verdict::Unreadable { message }),
                ]
            }
            Input::Stop => {
                self.stopping = true;
                // An idle engine releases its claim now.
                if self.processable() {
                    self.cycle(config)
                } else {
                    Vec::new()
                }
            }
            Input::Tick { now } => {
                self.now = self.now.max(now);
                match &self.phase {
                    Phase::Running { deadline, .. }
                        if config.rules.has(Rule::RunDeadline) && self.now >= *deadline =>
                    {
                        self.abandon(config)
                    }
                    Phase::Idle => match &self.pause {
                        // Woken early: the wait is asked for again.
                        Some(pause) if self.now < pause.until => vec![Effect::WakeAt(pause.until)],
                        _ if self.processable() || self.read_due() => self.cycle(config),
                        _ => Vec::new(),
                    },
                    Phase::Running { .. } => self.renew_if_due(config),
                    Phase::Patching { .. } => Vec::new(),
                }
            }
            Input::Renewed { version } => self.renewed(config, version),
            Input::RenewFailed { retry_after } => self.renewal_failed(config, retry_after),
        }
    }

    /// Takes in a version a watch event or a list showed, and processes it
    /// unless it is held. A version held by [`Hold::Until`] or
    /// [`Hold::Fetching`] may be older than one seen: it is not kept.
    fn observe(&mut self, config: &Config<D>, view: ObjectView<D>) -> Vec<Effect<D>> {
        let (keep, process) = match &self.hold {
            Hold::None => (true, true),
            Hold::Until(version) => {
                let awaited = *version == view.version;
                (awaited, awaited)
            }
            Hold::Fetching { .. } => (false, false),
            Hold::Refused(version) => (true, *version != view.version),
        };
        self.see(view, keep);
        if !process {
            return Vec::new();
        }
        self.hold = Hold::None;
        self.cycle(config)
    }

    /// Takes in a version of the object, as the newest seen if `keep`; it
    /// may be the version the patch in flight made.
    fn see(&mut self, view: ObjectView<D>, keep: bool) {
        self.shown = Some(view.version.clone());
        self.unreadable = None;
        if let Phase::Patching { seen, .. } = &mut self.phase {
            seen.push(view.clone());
        }
        if let Hold::Fetching { seen, .. } = &mut self.hold {
            seen.push(view.version.clone());
        }
        if keep {
            self.view = Some(view);
        }
    }

    /// Whether the newest version seen may be processed.
    fn processable(&self) -> bool {
        match &self.hold {
            Hold::None => true,
            Hold::Until(_) | Hold::Fetching { .. } | Hold::Refused(_) => false,
        }
    }

    /// Whether a consistent read is to be asked for, and is not yet.
    fn read_due(&self) -> bool {
        matches!(self.hold, Hold::Fetching { asked: false, .. })
    }
}

impl<D: Domain> Engine<D> {
    /// Every resourceVersion the engine holds (so that a driver keeps the
    /// versions of the object it may be asked to act on, and no more).
    pub fn versions(&self) -> Vec<D::Version> {
        let mut versions = Vec::new();
        self.clone()
            .visit_versions(&mut |v| versions.push(v.clone()));
        versions
    }

    /// Whether a stopping engine is done: nothing in flight (no run, patch
    /// or read), no version of its own write or of a read still to come
    /// from the watch, and no wait after a throttled request to sit out.
    /// Every cycle it started has written what it could (an outcome a
    /// refused patch carried is written, or moot on a newer digest), so the
    /// operator may exit with no run to repeat at its next start.
    pub fn stopped(&self) -> bool {
        let settled = match &self.hold {
            Hold::None | Hold::Refused(_) => true,
            Hold::Until(_) | Hold::Fetching { .. } => false,
        };
        let waiting = self.pause.as_ref().is_some_and(|p| self.now < p.until);
        // Its claim is released, unless the API server refused that for good.
        let claimed = self.view.as_ref().is_some_and(|v| self.holds(v))
            && !matches!(self.hold, Hold::Refused(_));
        self.stopping && matches!(self.phase, Phase::Idle) && settled && !waiting && !claimed
    }

    /// When the engine gives `run` up if it has not returned: its
    /// timeout, or its claim's end (later than its timer while the claim
    /// is renewed); `None` if the engine does not wait for it.
    pub fn cuts(&self, run: RunId) -> Option<D::Time> {
        match &self.phase {
            Phase::Running {
                run: running,
                deadline,
                ..
            } if *running == run => Some(*deadline),
            _ => None,
        }
    }

    /// Whether the engine waits for `run` to return.
    pub fn awaits(&self, run: RunId) -> bool {
        self.cuts(run).is_some()
    }

    /// Calls `f` on every resourceVersion the engine holds (for a model
    /// that renames versions).
    pub fn visit_versions(&mut self, f: &mut impl FnMut(&mut D::Version)) {
        if let Some(view) = &mut self.view {
            f(&mut view.version);
        }
        if let Some(version) = &mut self.shown {
            f(version);
        }
        if let Some(version) = &mut self.unmarked {
            f(version);
        }
        match &mut self.hold {
            Hold::Until(version) | Hold::Refused(version) => f(version),
            Hold::Fetching { seen, .. } => seen.iter_mut().for_each(&mut *f),
            Hold::None => {}
        }
        match &mut self.phase {
            Phase::Running { cycle, renewal, .. } => {
                f(&mut cycle.view.version);
                match renewal {
                    Some(
                        Renewal::Sent {
                            expect: version, ..
                        }
                        | Renewal::Failed { on: version, .. },
                    ) => {
                        f(version);
                    }
                    Some(Renewal::Due { .. }) | None => {}
                }
            }
            Phase::Patching {
                patch, rest, seen, ..
            } => {
                f(&mut patch.expect);
                if let Some(rest) = rest {
                    f(&mut rest.expect);
                }
                seen.iter_mut().for_each(|v| f(&mut v.version));
            }
            Phase::Idle => {}
        }
    }

    /// Calls `f` on the name of every run the engine keeps: the one it
    /// waits for, and one it cancelled (for a model that renames runs).
    pub fn visit_runs(&mut self, f: &mut impl FnMut(&mut RunId)) {
        if let Phase::Running { run, .. } = &mut self.phase {
            f(run);
        }
        if let Some(run) = &mut self.cancelled {
            f(run);
        }
    }
}
