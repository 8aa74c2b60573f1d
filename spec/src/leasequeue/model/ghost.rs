//! What the properties read beyond the world itself, and the predicates
//! they are written with.

use serde::{Deserialize, Serialize};

use super::{ActivationState, World};
use crate::leasequeue::FailReason;

/// What the properties need beyond the world itself.
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct Ghost {
    /// Per activation, executions since it was submitted (counted up to
    /// two more than its excuses: more reads as that many, one too many
    /// already).
    pub executions: Vec<u8>,
    /// Per activation, failures decided since it was submitted (by a
    /// scheduler, or by a controller that could not route it): each once,
    /// as it is decided, not at each report of it or answer from memory.
    pub failures: Vec<u8>,
    /// Per activation, times a controller resolved it since it was
    /// submitted.
    pub resolutions: Vec<u8>,
    /// Per resubmission ([`Bounds::retries`]), times its controller
    /// resolved it since it was made.
    ///
    /// [`Bounds::retries`]: super::Bounds::retries
    pub retry_resolutions: Vec<u8>,
    /// Per activation, how many times a scheduler it was delivered to
    /// crashed or left before acknowledging it (and with it the memory that
    /// it had): each time its sender sends it again, and it may run once
    /// more. One fault excuses one execution, not every later one.
    pub excuses: Vec<u8>,
    /// Per activation, how many times its memory was lost while a caller
    /// could still submit it again (counted up to two): it had settled,
    /// and no running scheduler held it, forwarded it, or remembered
    /// settling it while owning its action's queue (the one that settled
    /// it stopped, or the queue moved). A resubmission then reaches a
    /// scheduler that knows nothing of it, and it may run, and end, once
    /// more: one loss excuses one execution, not every later one.
    pub forgotten: Vec<u8>,
    /// Per activation, whether its memory is lost now: the last loss
    /// counted in `forgotten` has not been made good (no running scheduler
    /// has held it, or settled it while owning its queue, since).
    pub memory_lost: Vec<bool>,
    /// Work was once handed out under a lease etcd no longer held, or from a
    /// queue whose key was not its owner's.
    pub unfenced: bool,
    /// A scheduler once lost an election to another and forwarded work to
    /// the winner.
    pub contested: bool,
    /// A message to a scheduler that had left bounced back to its sender.
    pub bounced: bool,
    /// A copy of an activation was sent to a scheduler that had vanished,
    /// and lost.
    pub swallowed: bool,
    /// A scheduler took back a copy it had forwarded to a peer that had
    /// vanished, having presumed the peer gone.
    pub taken_back: bool,
    /// A scheduler's claim of an endpoint key once found a value no
    /// steadfast node wrote.
    pub claim_unreadable: bool,
    /// etcd once refused a scheduler's claim of an endpoint key (its user
    /// lacks the permission).
    #[serde(default)]
    pub claim_denied: bool,
    /// A scheduler refused a copy addressed to an incarnation of it before
    /// a crash (not one addressed to none).
    pub refused: bool,
    /// A scheduler drained and left.
    pub drained: bool,
    /// A scheduler was told to drain while it ran an activation.
    pub drained_busy: bool,
    /// A controller once placed a queue while a running scheduler was
    /// missing from the members it knew (its member key gone with its
    /// lease).
    pub placed_member_missing: bool,
    /// An activation was once started at or past its deadline.
    pub late_start: bool,
    /// A controller once told a caller there was no outcome by its
    /// deadline.
    pub overdue: bool,
    /// A scheduler answered a copy of an activation it had settled with
    /// the outcome it kept.
    pub answered_from_memory: bool,
}

/// Every action's routing agrees with etcd: a key's owner holds the queue
/// under the key's live lease, nobody else holds one, and every cache points
/// to the owner; without a key, no queue and no cache entry. And every
/// controller knows the members etcd holds.
pub(super) fn routing_restored(w: &World) -> bool {
    let members = w.etcd.members.iter().map(|m| (m.scheduler, m.incarnation));
    let members_known = w
        .controllers
        .iter()
        .all(|c| c.members.iter().copied().eq(members.clone()));
    members_known && endpoints_agree(w)
}

fn endpoints_agree(w: &World) -> bool {
    let actions: Vec<u8> = w
        .etcd
        .keys
        .iter()
        .map(|k| k.action)
        .chain(
            w.schedulers
                .iter()
                .flat_map(|s| s.queues.iter().map(|q| q.action)),
        )
        .chain(
            w.controllers
                .iter()
                .flat_map(|c| c.cache.iter().map(|(a, _)| *a)),
        )
        .collect();
    actions.into_iter().all(|action| match w.etcd.get(action) {
        Some(key) => {
            w.etcd.is_live(key.lease)
                && w.schedulers.iter().all(|s| match s.queue(&action) {
                    Some(q) => s.id == key.owner && q.lease == key.lease,
                    None => s.id != key.owner,
                })
                && w.controllers
                    .iter()
                    .all(|c| c.route(&action) == Some(&key.owner))
        }
        None => {
            w.schedulers.iter().all(|s| s.queue(&action).is_none())
                && w.controllers.iter().all(|c| c.route(&action).is_none())
        }
    })
}

/// Something is still routed to a scheduler that left for good: an
/// action's endpoint key or a controller's cache names one, or an
/// activation is being sent (by a controller) or forwarded (by a scheduler
/// still running) to one.
pub(super) fn routed_to_departed(w: &World) -> bool {
    let gone = |s: &u8| w.gone[usize::from(*s)];
    w.etcd.keys.iter().any(|k| gone(&k.owner))
        || w.controllers.iter().any(|c| {
            c.cache.iter().any(|(_, s)| gone(s)) || c.sent.iter().any(|sent| gone(&sent.to))
        })
        || w.schedulers
            .iter()
            .filter(|s| !gone(&s.id))
            .any(|s| s.forwarding.iter().any(|f| gone(&f.to)))
}

/// Some caller waits: a submission or a resubmission is not resolved.
pub(super) fn any_pending(w: &World) -> bool {
    calls(w).any(|a| *a == ActivationState::Pending)
}

/// Every call a user made, as the user sees it: each submission, then each
/// resubmission.
fn calls(w: &World) -> impl Iterator<Item = &ActivationState> {
    w.activations.iter().chain(&w.retries)
}

pub(super) fn probe_state(w: &World) -> Option<ActivationState> {
    w.activations.last().copied()
}

/// Every activation submitted was executed (with a result, or ending
/// without one: it ran), or failed only because its deadline passed before
/// it could start (or before it could start again, having maybe run at a
/// scheduler that stopped), or its call could not be routed (its action's
/// key held a value no steadfast node wrote).
pub(super) fn all_submitted_executed(w: &World) -> bool {
    calls(w).all(|a| {
        matches!(
            a,
            ActivationState::Unsubmitted
                | ActivationState::Executed
                | ActivationState::ExecutionFailed(_)
                | ActivationState::Failed(FailReason::PastDeadline)
                | ActivationState::Ambiguous(FailReason::PastDeadline)
                | ActivationState::Forgotten
                | ActivationState::Unrouted
        )
    })
}
