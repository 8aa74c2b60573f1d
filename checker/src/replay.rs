//! `steadfast replay`: recorded runs read from their files, each replayed
//! through its role's `step`, and all of them checked together against the
//! protocols' properties and the model's world
//! ([`steadfast_spec::trace::conformance`]).
//!
//! A trace is what a driver of the `steadfast` runtime records (JSON lines:
//! a header, then one record per step). [`read`] reads one; [`check`]
//! replays and checks a run's traces and returns a [`Report`] that names,
//! for each step that diverges and each rule broken, the file and line.

use std::path::{Path, PathBuf};

pub use steadfast_spec::trace::conformance::Options;
use steadfast_spec::trace::conformance::{self, At, Rule, Violation};
use steadfast_spec::trace::{Divergence, ReadError, Trace};

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
    /// The file is not a trace.
    #[error("{}:{source}", path.display())]
    Parse {
        /// The file.
        path: PathBuf,
        /// What is wrong, and where.
        #[source]
        source: ReadError,
    },
}

/// One role's recorded run, and the file it came from.
#[derive(Clone, Debug)]
pub struct Traced {
    /// The file.
    pub path: PathBuf,
    /// What it recorded.
    pub trace: Trace,
}

/// Reads the trace in `path`.
///
/// # Errors
///
/// If the file cannot be read, is empty, or a line is not a header (the
/// first) or a record of the role the header names (the others); blank
/// lines are skipped.
pub fn read(path: &Path) -> Result<Traced, TraceError> {
    let text = std::fs::read_to_string(path).map_err(|source| TraceError::Read {
        path: path.to_owned(),
        source,
    })?;
    let trace = Trace::read(&text).map_err(|source| TraceError::Parse {
        path: path.to_owned(),
        source,
    })?;
    Ok(Traced {
        path: path.to_owned(),
        trace,
    })
}

/// What a replay of a run's traces found.
#[derive(Clone, Debug)]
pub struct Report {
    /// Per trace (in the order given), how many steps agree, or the first
    /// that diverges (each effect as JSON).
    pub replays: Vec<Result<usize, Divergence<String>>>,
    /// Every rule broken.
    pub violations: Vec<Violation>,
}

/// Replays each of `traces` through its role's `step`, and checks them
/// together against every [`Rule`].
pub fn check(traces: &[Traced], options: &Options) -> Report {
    Report {
        replays: traces.iter().map(|t| t.trace.replay()).collect(),
        violations: conformance::check(traces.iter().map(|t| &t.trace), options),
    }
}

impl Report {
    /// Whether every step agrees and no rule is broken (with `properties`
    /// false, the protocols' properties aside: a legacy variant's run may
    /// break those, as its model does; never the world's rules).
    pub fn passes(&self, properties: bool) -> bool {
        self.replays.iter().all(Result::is_ok)
            && self
                .violations
                .iter()
                .all(|v| !properties && v.rule.is_property())
    }

    /// The report as `steadfast replay` prints it: a line per trace, then
    /// a line per rule (`holds`, or `VIOLATED` and each violation with the
    /// file and line of every step that shows it).
    pub fn render(&self, traces: &[Traced]) -> String {
        let mut out = String::new();
        for (traced, replay) in traces.iter().zip(&self.replays) {
            let path = traced.path.display();
            let role = traced.trace.role();
            match replay {
                Ok(steps) => out += &format!("{path}: {role}: {steps} steps agree\n"),
                Err(d) => {
                    out += &format!(
                        "{path}: {role}: step {} (line {}) diverges\n  recorded: {}\n  \
                         replayed: {}\n",
                        d.step,
                        traced.trace.line(d.step),
                        list(&d.recorded),
                        list(&d.replayed),
                    );
                }
            }
        }
        for rule in Rule::ALL {
            let broken: Vec<_> = self.violations.iter().filter(|v| v.rule == rule).collect();
            if broken.is_empty() {
                out += &format!("{rule}: holds\n");
                continue;
            }
            out += &format!("{rule}: VIOLATED\n");
            for violation in broken {
                out += &format!("  {}\n", violation.what);
                let mut places = violation.places.clone();
                places.dedup();
                for at in &places {
                    out += &format!("    at {}\n", place(traces, *at));
                }
            }
        }
        out
    }
}

/// Effects, each as JSON, as a JSON list.
fn list(effects: &[String]) -> String {
    format!("[{}]", effects.join(","))
}

/// `file:line (step n)`.
fn place(traces: &[Traced], at: At) -> String {
    match traces.get(at.trace) {
        Some(traced) => format!(
            "{}:{} (step {})",
            traced.path.display(),
            traced.trace.line(at.step),
            at.step
        ),
        None => format!("trace {} step {}", at.trace, at.step),
    }
}
