//! Recorded runs of a role, and their replay through the role's `step`.
//!
//! A driver records one line per step (JSON lines: reading them is the
//! `steadfast replay` command's): first a [`Header`] that says which role it
//! drives and how it was set up, then a [`Record`] per input with the
//! effects `step` returned. [`Header::replay`] runs the same inputs through a
//! fresh role and reports the first step whose effects differ: the driver
//! decided something the role did not, or the trace is not what was
//! recorded.
//!
//! Traces are written in the [`Named`] domain, the one a runtime uses.

use serde::{Deserialize, Serialize};

use super::{controller, scheduler, Domain};

/// The domain a runtime uses: names for actions, schedulers and
/// activations, etcd's `i64` lease ids and revisions, milliseconds.
#[derive(
    Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize,
)]
pub struct Named;

impl Domain for Named {
    type Action = String;
    type Scheduler = String;
    type Activation = String;
    type Lease = i64;
    type Incarnation = u64;
    type Revision = i64;
    type Duration = u64;

    fn next_revision(rev: i64) -> i64 {
        rev + 1
    }

    fn saturating_sub(a: u64, b: u64) -> u64 {
        a.saturating_sub(b)
    }

    /// FNV-1a over the seed and both names, finished by a mix: the same in
    /// every process and every build, unlike `std`'s hasher.
    fn placement(seed: u64, action: &String, scheduler: &String) -> u64 {
        let named = format!("{seed}\0{action}\0{scheduler}");
        crate::stable_hash::mix(crate::stable_hash::fnv1a(&named))
    }
}

/// The first line of a trace: the role and how it started.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "role", rename_all = "snake_case")]
pub enum Header {
    /// A scheduler.
    Scheduler {
        /// Its id.
        id: String,
        /// This run of it.
        incarnation: u64,
        /// Its setup.
        config: scheduler::Config<Named>,
    },
    /// A controller.
    Controller {
        /// The endpoint keys of its first listing: action and owner.
        keys: Vec<(String, String)>,
        /// The members of its first listing, each with its incarnation.
        members: Vec<(String, u64)>,
        /// The revision of its first listing.
        rev: i64,
        /// Its setup.
        config: controller::Config<Named>,
    },
}

/// One step of a role: what came in, and what `step` returned.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Record<I, E> {
    /// When the step was taken: milliseconds since the Unix epoch by the
    /// recording machine's clock, so that the traces of several nodes can
    /// be merged in order, within their clocks' skew (0 in a trace written
    /// before steps were stamped).
    #[serde(default)]
    pub at: u64,
    /// Milliseconds since the step before (the scheduler's `elapsed`; a
    /// controller's steps take no time, and record 0).
    pub elapsed: u64,
    /// The input.
    pub input: I,
    /// The effects.
    pub effects: Vec<E>,
}

/// A scheduler's step as recorded.
pub type SchedulerRecord = Record<scheduler::Input<Named>, scheduler::Effect<Named>>;
/// A controller's step as recorded.
pub type ControllerRecord = Record<controller::Input<Named>, controller::Effect<Named>>;

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

/// A role's recorded steps, of the kind its header names.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Steps {
    /// A scheduler's.
    Scheduler(Vec<SchedulerRecord>),
    /// A controller's.
    Controller(Vec<ControllerRecord>),
}

/// Where a replay stopped.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Replay {
    /// Every step returned the effects recorded; this many steps.
    Agrees(usize),
    /// A scheduler's step returned other effects.
    SchedulerDiverged(Divergence<scheduler::Effect<Named>>),
    /// A controller's step returned other effects.
    ControllerDiverged(Divergence<controller::Effect<Named>>),
    /// The steps are not of the role the header names.
    WrongRole,
}

impl Header {
    /// Runs `steps` through a fresh role set up as this header says, and
    /// returns where the replay stopped.
    pub fn replay(&self, steps: Steps) -> Replay {
        match (self, steps) {
            (
                Header::Scheduler {
                    id,
                    incarnation,
                    config,
                },
                Steps::Scheduler(records),
            ) => {
                let mut role = scheduler::Scheduler::<Named>::new(id.clone(), *incarnation);
                first_divergence(records, |r| role.step(config, r.elapsed, r.input.clone()))
                    .map_or_else(Replay::SchedulerDiverged, Replay::Agrees)
            }
            (
                Header::Controller {
                    keys,
                    members,
                    rev,
                    config,
                },
                Steps::Controller(records),
            ) => {
                let mut role =
                    controller::Controller::<Named>::new(keys.clone(), members.clone(), *rev);
                first_divergence(records, |r| role.step(config, r.input.clone()))
                    .map_or_else(Replay::ControllerDiverged, Replay::Agrees)
            }
            _ => Replay::WrongRole,
        }
    }
}

/// Steps through `records` with `step`; the first whose effects differ, or
/// the number of steps when none does.
fn first_divergence<I, E: PartialEq>(
    records: Vec<Record<I, E>>,
    mut step: impl FnMut(&Record<I, E>) -> Vec<E>,
) -> Result<usize, Divergence<E>> {
    let count = records.len();
    for (index, record) in records.into_iter().enumerate() {
        let replayed = step(&record);
        if replayed != record.effects {
            return Err(Divergence {
                step: index,
                recorded: record.effects,
                replayed,
            });
        }
    }
    Ok(count)
}
