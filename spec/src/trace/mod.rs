//! Recorded runs, for every role of every protocol: one format, one reader
//! and one replay loop.
//!
//! A driver of the `steadfast` runtime records its role's run as JSON lines:
//! first a [`Header`], tagged with the role (`"role": "scheduler"`,
//! `"controller"` or `"engine"`) and saying how the role was set up, then
//! one [`Record`] per step: what came in, and the effects `step` returned.
//! [`Trace::read`] parses a file's text; [`Trace::replay`] runs the same
//! inputs through a fresh role and reports the first step whose effects
//! differ ([`Divergence`]): the trace is not what that code recorded.
//!
//! A replay through `step` alone agrees by construction when the driver
//! decided something outside the role; what the traces of every node show
//! together is checked against the model's world in [`conformance`].

pub mod conformance;
#[cfg(test)]
pub(crate) mod json;

use serde::{Deserialize, Serialize};

use crate::leasequeue::trace::{
    ControllerHeader, ControllerRecord, SchedulerHeader, SchedulerRecord,
};
use crate::lifecycle::trace::{EngineHeader, EngineRecord};

/// One step of a role: what came in, and what `step` returned.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Record<I, E> {
    /// When the step was taken: milliseconds since the Unix epoch by the
    /// recording machine's clock, so that the traces of several nodes can
    /// be merged in order, within their clocks' skew (0 in a trace written
    /// before steps were stamped).
    #[serde(default)]
    pub at: u64,
    /// Milliseconds by the role's own clock since the step before (a
    /// scheduler's `elapsed`; roles whose steps take no time record 0).
    #[serde(default)]
    pub elapsed: u64,
    /// The node whose message this step takes in, by the address it
    /// listens on (`None`: the input is no message from another node).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub from: Option<String>,
    /// The input.
    pub input: I,
    /// The effects.
    pub effects: Vec<E>,
}

/// A recorded step whose effects `step` does not return.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Divergence<E> {
    /// The step, counted from 0 after the header.
    pub step: usize,
    /// The effects the trace holds.
    pub recorded: Vec<E>,
    /// The effects `step` returns.
    pub replayed: Vec<E>,
}

/// Runs `records` through `step` (a role's, fed each record in turn): the
/// number of steps if every one returns the effects recorded, or the first
/// that does not.
///
/// # Errors
///
/// The first step whose effects differ.
pub fn replay<I, E: PartialEq + Clone>(
    records: &[Record<I, E>],
    mut step: impl FnMut(&Record<I, E>) -> Vec<E>,
) -> Result<usize, Divergence<E>> {
    for (index, record) in records.iter().enumerate() {
        let replayed = step(record);
        if replayed != record.effects {
            return Err(Divergence {
                step: index,
                recorded: record.effects.clone(),
                replayed,
            });
        }
    }
    Ok(records.len())
}

/// The first line of a trace: the role and how it started.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "role", rename_all = "snake_case")]
pub enum Header {
    /// A leasequeue scheduler.
    Scheduler(SchedulerHeader),
    /// A leasequeue controller.
    Controller(ControllerHeader),
    /// A lifecycle engine: one object, in one operator start.
    Engine(EngineHeader),
}

/// A role's recorded run: its header and its steps.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Run {
    /// A leasequeue scheduler's.
    Scheduler(SchedulerHeader, Vec<SchedulerRecord>),
    /// A leasequeue controller's.
    Controller(ControllerHeader, Vec<ControllerRecord>),
    /// A lifecycle engine's.
    Engine(EngineHeader, Vec<EngineRecord>),
}

/// A recorded run, and where in its file each step was written.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Trace {
    run: Run,
    /// The line of each step in its file, counted from 1.
    lines: Vec<usize>,
}

/// Why a trace's text is not a trace.
#[derive(Debug, thiserror::Error)]
pub enum ReadError {
    /// There is no header.
    #[error(
        "empty; a trace starts with a header line naming its role (`\"role\": \
         \"scheduler\"`, `\"controller\"` or `\"engine\"`)"
    )]
    Empty,
    /// A line is not what its place in the trace asks for.
    #[error("{line}: not a {what}: {source}")]
    Line {
        /// The line, counted from 1.
        line: usize,
        /// What the line should be.
        what: &'static str,
        /// Where the JSON went wrong.
        #[source]
        source: serde_json::Error,
    },
}

impl From<Run> for Trace {
    /// A run as a driver writes it: the header on line 1, a step per line.
    fn from(run: Run) -> Self {
        let steps = match &run {
            Run::Scheduler(_, records) => records.len(),
            Run::Controller(_, records) => records.len(),
            Run::Engine(_, records) => records.len(),
        };
        Trace {
            run,
            lines: (2..steps + 2).collect(),
        }
    }
}

impl Trace {
    /// The trace a file's `text` holds: a header line, then a record of the
    /// header's role per line; blank lines are skipped.
    ///
    /// # Errors
    ///
    /// If there is no header, or a line is not a header (the first) or a
    /// record of the role the header names (the others).
    pub fn read(text: &str) -> Result<Self, ReadError> {
        let mut lines = text
            .lines()
            .enumerate()
            .map(|(index, line)| (index + 1, line))
            .filter(|(_, line)| !line.trim().is_empty());
        let first = lines.next().ok_or(ReadError::Empty)?;
        let header = parse(first, "trace header")?;
        let numbers = lines.clone().map(|(number, _)| number).collect();
        let run = match header {
            Header::Scheduler(header) => {
                Run::Scheduler(header, records(lines, "scheduler record")?)
            }
            Header::Controller(header) => {
                Run::Controller(header, records(lines, "controller record")?)
            }
            Header::Engine(header) => Run::Engine(header, records(lines, "engine record")?),
        };
        Ok(Trace {
            run,
            lines: numbers,
        })
    }

    /// The role's run.
    pub fn run(&self) -> &Run {
        &self.run
    }

    /// The line of step `step` (from 0) in the trace's file, counted from 1.
    pub fn line(&self, step: usize) -> usize {
        self.lines.get(step).copied().unwrap_or(step + 2)
    }

    /// The role and its name, for reports: `scheduler 127.0.0.1:7001`,
    /// `controller 127.0.0.1:7100`, `engine of default/t (start 3)`.
    pub fn role(&self) -> String {
        match &self.run {
            Run::Scheduler(header, _) => format!("scheduler {}", header.id),
            Run::Controller(header, _) => format!("controller {}", header.address),
            Run::Engine(header, _) => {
                format!("engine of {} (start {})", header.object, header.incarnation)
            }
        }
    }

    /// Re-runs every step through a fresh role set up as the header says:
    /// the number of steps if every one agrees.
    ///
    /// # Errors
    ///
    /// The first step whose effects differ, each effect as JSON.
    pub fn replay(&self) -> Result<usize, Divergence<String>> {
        match &self.run {
            Run::Scheduler(header, records) => header.replay(records).map_err(as_json),
            Run::Controller(header, records) => header.replay(records).map_err(as_json),
            Run::Engine(header, records) => header.replay(records).map_err(as_json),
        }
    }
}

/// A divergence, each effect as JSON, as a trace writes it (to report,
/// whatever the role).
fn as_json<E: Serialize>(divergence: Divergence<E>) -> Divergence<String> {
    let json = |effects: Vec<E>| {
        effects
            .iter()
            .map(|effect| serde_json::to_string(effect).unwrap_or_else(|e| format!("<{e}>")))
            .collect()
    };
    Divergence {
        step: divergence.step,
        recorded: json(divergence.recorded),
        replayed: json(divergence.replayed),
    }
}

/// The JSON in `line` (numbered from 1), which should be a `what`.
fn parse<T: serde::de::DeserializeOwned>(
    (line, text): (usize, &str),
    what: &'static str,
) -> Result<T, ReadError> {
    serde_json::from_str(text).map_err(|source| ReadError::Line { line, what, source })
}

/// Every line of `lines` parsed as a `what`.
fn records<'a, T: serde::de::DeserializeOwned>(
    lines: impl Iterator<Item = (usize, &'a str)>,
    what: &'static str,
) -> Result<Vec<T>, ReadError> {
    lines.map(|line| parse(line, what)).collect()
}
