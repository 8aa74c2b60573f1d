//! Leaving the cluster: drain, settle what it holds, give the lease
//! back (see "Leaving" in the role's documentation).

use serde::{Deserialize, Serialize};

use crate::leasequeue::Domain;

use super::{Effect, LeaseState, Scheduler};

/// Whether a scheduler serves or is leaving ([`Input::Drain`]).
///
/// [`Input::Drain`]: super::Input::Drain
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum Phase {
    /// Taking work.
    #[default]
    Serving,
    /// Taking no new work; what it holds settles, then its lease goes.
    Draining,
    /// Done: nothing held, the lease given back.
    Drained,
}

impl<D: Domain> Scheduler<D> {
    /// Takes no new work from now on. Elections no activation waits on
    /// (asked for by a controller) are dropped: the queue would not serve.
    pub(super) fn drain(&mut self) {
        if self.phase != Phase::Serving {
            return;
        }
        self.phase = Phase::Draining;
        self.drop_unwanted_elections();
    }

    /// Draining, it drops every election no activation waits on.
    pub(super) fn drop_unwanted_elections(&mut self) {
        let waiting = &self.waiting;
        self.electing
            .retain(|action| waiting.iter().any(|(_, a)| a == action));
    }

    /// Whether it is draining and holds nothing more: its lease is to go.
    pub(super) fn leaving(&self) -> bool {
        self.phase == Phase::Draining && self.holds_none()
    }

    /// Draining, and everything it took in settled: revokes its lease (all
    /// its keys go with it at one revision), and once etcd has confirmed
    /// (or if it held none) and every forward and report it sent is
    /// acknowledged, it has drained.
    /// Returns whether it began to revoke its lease.
    pub(super) fn release(&mut self, out: &mut Vec<Effect<D>>) -> bool {
        if !self.leaving() {
            return false;
        }
        match &self.lease {
            LeaseState::Held { id, .. } => {
                let id = id.clone();
                self.queues.clear();
                self.electing.clear();
                self.lease = LeaseState::Revoking { id: id.clone() };
                out.push(Effect::Revoke { lease: id });
                return true;
            }
            // Its lost lease's revoke is under way: drained once confirmed.
            LeaseState::Revoking { .. } => {}
            // What it sent would be lost with it.
            LeaseState::Granting if !self.forwarding.is_empty() || !self.reporting.is_empty() => {}
            LeaseState::Granting => {
                self.phase = Phase::Drained;
                out.push(Effect::Drained);
            }
        }
        false
    }
}
