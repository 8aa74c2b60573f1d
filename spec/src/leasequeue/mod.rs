//! `leasequeue`: per-action queues owned by schedulers under etcd leases and
//! routed by controllers (OpenWhisk's new scheduler), and the fix for
//! OpenWhisk #5286.
//!
//! - [`etcd`]: etcd as the protocol sees it.
//! - [`scheduler`] and [`controller`]: the two roles' transition functions.
//! - [`model`]: the stateright model of their world, its properties and
//!   fairness, and its scenarios.

pub mod controller;
pub mod etcd;
pub mod model;
pub mod scheduler;

#[cfg(test)]
mod tests;

use serde::{Deserialize, Serialize};

/// Why an activation failed for good: a named reason a caller can match on,
/// which reads as the words OpenWhisk's users see.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum FailReason {
    /// A controller could not reach etcd to route the activation
    /// (OpenWhisk: "no scheduler endpoint available").
    NoSchedulerEndpoint,
    /// A scheduler without a queue for the action found no endpoint key for
    /// it (#5286: "failed to get the queue endpoint").
    NoQueueEndpoint,
}

impl FailReason {
    /// The words the user sees.
    pub fn message(self) -> &'static str {
        match self {
            FailReason::NoSchedulerEndpoint => "no scheduler endpoint available",
            FailReason::NoQueueEndpoint => "failed to get the queue endpoint",
        }
    }
}

impl std::fmt::Display for FailReason {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.message())
    }
}

/// Which rules the roles follow.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum Variant {
    /// OpenWhisk's rules (#5286): the endpoint cache is fed only by watch
    /// events and never re-listed; a restarted watch starts from "now"; a
    /// scheduler without a queue fails an activation whose key is missing; a
    /// keepalive answer of TTL 0 counts as success; deletes are
    /// unconditional.
    OpenWhisk,
    /// Lease loss detected (TTL 0, or no answer for nearly a TTL), the old
    /// lease revoked, a new one granted and every owned key re-registered by
    /// create-if-absent; a scheduler without a queue elects itself by
    /// create-if-absent, or forwards to the winner; watches resume from the
    /// next revision and re-list after compaction; deletes conditioned on
    /// ownership; work handed out only under the lease believed live.
    Steadfast,
}
