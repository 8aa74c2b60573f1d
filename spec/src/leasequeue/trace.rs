//! The leasequeue roles' traces (the format is [`crate::trace`]'s): their
//! headers, their records, and their replay through the roles' `step`.
//!
//! Traces are written in the [`Named`] domain, the one a runtime uses.

use serde::{Deserialize, Serialize};

use super::{controller, scheduler, Domain};
use crate::trace::{self, Divergence, Record};

/// The domain a runtime uses: names for actions, schedulers and
/// activations, etcd's `i64` lease ids and revisions, milliseconds.
#[derive(
    Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize,
)]
pub struct Named;

impl Domain for Named {
    type Action = String;
    type Scheduler = String;
    type Controller = String;
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

/// How a scheduler started: the header of its trace.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct SchedulerHeader {
    /// Its id: the address it advertises.
    pub id: String,
    /// This run of it.
    pub incarnation: u64,
    /// Its setup.
    pub config: scheduler::Config<Named>,
}

/// How a controller started: the header of its trace.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ControllerHeader {
    /// The address it listens on: schedulers answer it there.
    pub address: String,
    /// The endpoint keys of its first listing: action and owner.
    pub keys: Vec<(String, String)>,
    /// The members of its first listing, each with its incarnation.
    pub members: Vec<(String, u64)>,
    /// The revision of its first listing.
    pub rev: i64,
    /// Its setup.
    pub config: controller::Config<Named>,
}

/// A scheduler's step as recorded.
pub type SchedulerRecord = Record<scheduler::Input<Named>, scheduler::Effect<Named>>;
/// A controller's step as recorded.
pub type ControllerRecord = Record<controller::Input<Named>, controller::Effect<Named>>;

impl SchedulerHeader {
    /// Runs `records` through a fresh scheduler set up as this header says.
    ///
    /// # Errors
    ///
    /// The first step whose effects differ.
    pub fn replay(
        &self,
        records: &[SchedulerRecord],
    ) -> Result<usize, Divergence<scheduler::Effect<Named>>> {
        let mut role = scheduler::Scheduler::<Named>::new(self.id.clone(), self.incarnation);
        trace::replay(records, |r| {
            role.step(&self.config, r.elapsed, r.input.clone())
        })
    }
}

impl ControllerHeader {
    /// Runs `records` through a fresh controller set up as this header says.
    ///
    /// # Errors
    ///
    /// The first step whose effects differ.
    pub fn replay(
        &self,
        records: &[ControllerRecord],
    ) -> Result<usize, Divergence<controller::Effect<Named>>> {
        let mut role =
            controller::Controller::<Named>::new(self.keys.clone(), self.members.clone(), self.rev);
        trace::replay(records, |r| role.step(&self.config, r.input.clone()))
    }
}
