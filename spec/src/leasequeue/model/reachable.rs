//! `sometimes` properties that show each fault and each path of interest is
//! reached in a scenario that budgets it, so that no property holds only
//! because its trigger never happens.
//!
//! Each comes with the condition on a scenario's bounds under which it must
//! be reached; a scenario checks those whose condition holds (and a model
//! built [`LeaseQueueModel::with_every_sometimes`] checks them all, to show
//! that each can fail).

use stateright::Property;

use super::{ActivationState, Bounds, Client, LeaseQueueModel, Placement, World};
use crate::leasequeue::controller::Watch;
use crate::leasequeue::etcd::{Key, MIN_TTL};
use crate::leasequeue::Variant;
use crate::leasequeue::{ExecutionFailure, FailReason};

/// One `sometimes`: its name, when a scenario must reach it, and the
/// condition.
struct Reachable {
    name: &'static str,
    expected: fn(&Bounds) -> bool,
    condition: fn(&LeaseQueueModel, &World) -> bool,
}

const REACHABLE: [Reachable; 40] = [
    // The world places two actions' queues on one scheduler; its lease's
    // loss then deletes both keys in one revision, which every controller
    // must take in whole.
    Reachable {
        name: "a lease's loss deletes two keys at once",
        expected: |b| {
            let lease_lost = b.outage_ticks > 0 || b.faults.crashes > 0;
            lease_lost && pairs(b).any(|(x, y)| x.1 != y.1 && may_share(b, x, y))
        },
        condition: |_, w| {
            let log = &w.etcd.log;
            let deleted = |c: &crate::leasequeue::etcd::Change| {
                c.value.is_none() && matches!(c.key, Key::Endpoint(_))
            };
            log.iter().enumerate().any(|(i, c)| {
                deleted(c) && log[i + 1..].iter().any(|o| deleted(o) && o.rev == c.rev)
            })
        },
    },
    // Two controllers that place one action on different schedulers make
    // their elections race for its key.
    Reachable {
        name: "a scheduler loses an election and forwards",
        expected: |b| pairs(b).any(|(x, y)| x.1 == y.1 && may_race(b, x, y)),
        condition: |_, w| w.ghost.contested,
    },
    // A lease that expires in the outage takes its scheduler's member key:
    // a steadfast controller, which sees the deletion, then places the
    // probe's queue among the members left.
    Reachable {
        name: "a queue is placed while a member's key is gone",
        expected: |b| {
            let expires = b.ttl.max(MIN_TTL) <= b.outage_ticks;
            b.variant == Variant::Steadfast && b.probe && expires
        },
        condition: |_, w| w.ghost.placed_member_missing,
    },
    Reachable {
        name: "a compaction cancels a watch",
        expected: |b| b.faults.compactions > 0,
        condition: |_, w| {
            w.controllers
                .iter()
                .any(|c| matches!(c.watch, Watch::Listing | Watch::Starting { from: None, .. }))
        },
    },
    Reachable {
        name: "a request is applied after its retry",
        expected: |b| b.faults.delays > 0,
        condition: |_, w| w.late.iter().flatten().next().is_some() && w.left.delays == 0,
    },
    Reachable {
        name: "a reply is lost",
        expected: |b| b.faults.lost_replies > 0,
        condition: |m, w| w.left.lost_replies < m.bounds.faults.lost_replies,
    },
    Reachable {
        name: "a message is sent twice",
        expected: |b| b.faults.duplicates > 0,
        condition: |m, w| w.left.duplicates < m.bounds.faults.duplicates,
    },
    Reachable {
        name: "a message overtakes another",
        expected: |b| b.faults.reorders > 0,
        condition: |m, w| w.left.reorders < m.bounds.faults.reorders,
    },
    Reachable {
        name: "a message is lost",
        expected: |b| b.faults.lost_messages > 0 && !b.submissions.is_empty(),
        condition: |m, w| w.left.lost_messages < m.bounds.faults.lost_messages,
    },
    // The fault armed for a kind of answer struck one.
    Reachable {
        name: "an answer is lost",
        expected: |b| b.faults.lost_answers > 0 && !b.submissions.is_empty(),
        condition: |m, w| w.left.lost_answers < m.bounds.faults.lost_answers && w.armed.is_none(),
    },
    Reachable {
        name: "an answer is held up in the network",
        expected: |b| {
            let held = b.faults.delayed_answers + b.faults.duplicate_answers;
            held > 0 && !b.submissions.is_empty()
        },
        condition: |_, w| !w.answers.is_empty(),
    },
    Reachable {
        name: "a stalled watch is restarted",
        expected: |b| b.faults.stalls > 0,
        condition: |m, w| {
            w.left.stalls < m.bounds.faults.stalls
                && w.controllers
                    .iter()
                    .any(|c| matches!(c.watch, Watch::Starting { .. }))
        },
    },
    Reachable {
        name: "a scheduler crashes before acknowledging an activation that runs",
        // OpenWhisk's schedulers acknowledge on receipt.
        expected: |b| {
            b.variant == Variant::Steadfast && b.faults.crashes > 0 && !b.submissions.is_empty()
        },
        condition: |_, w| {
            let g = &w.ghost;
            g.excuses
                .iter()
                .zip(&g.executions)
                .any(|(e, n)| *e > 0 && *n > 0)
        },
    },
    // A copy delivered twice, the second time after its scheduler crashed
    // and restarted, is addressed to the run before the crash.
    Reachable {
        name: "a scheduler refuses a copy addressed to its run before a crash",
        expected: |b| {
            let fenced = b.variant == Variant::Steadfast;
            fenced && b.faults.crashes > 0 && b.faults.duplicates > 0 && !b.submissions.is_empty()
        },
        condition: |_, w| w.ghost.refused,
    },
    Reachable {
        name: "a queue retires",
        expected: |b| b.faults.retirements > 0 && !b.submissions.is_empty(),
        condition: |_, w| w.schedulers.iter().any(|s| !s.retiring.is_empty()),
    },
    Reachable {
        name: "etcd's clock runs ahead",
        expected: |b| b.faults.drift > 0,
        condition: |m, w| w.left.drift < m.bounds.faults.drift,
    },
    // A controller's watch passes a revision that changed no endpoint key.
    Reachable {
        name: "a watch skips a revision",
        expected: |b| b.faults.foreign_writes > 0,
        condition: |_, w| {
            let floor = w.etcd.compacted.max(1);
            w.controllers.iter().any(|c| match c.watch {
                Watch::Active { next, .. } => {
                    (floor + 1..next).any(|rev| w.etcd.log.iter().all(|change| change.rev != rev))
                }
                _ => false,
            })
        },
    },
    // A steadfast watch restarted after a stall, or after an outage that
    // outlasts a lease, resumes from a past revision, and etcd may send it
    // every revision it missed in one response.
    Reachable {
        name: "a watch catches up on several revisions at once",
        expected: |b| {
            let expires = b.ttl.max(MIN_TTL) <= b.outage_ticks;
            b.variant == Variant::Steadfast && (expires || b.faults.stalls > 0)
        },
        condition: |m, w| {
            (0..m.bounds.controllers)
                .any(|c| (0..w.streams[usize::from(c)].len()).any(|at| m.catches_up(w, c, at)))
        },
    },
    // etcd holds a watch opening past a wake-up, at which the controller
    // asks for another: two are on their way.
    Reachable {
        name: "a controller asks for a watch while another is slow to open",
        expected: |b| b.slow_watch_openings,
        condition: |_, w| w.openings.iter().any(|o| o.len() > 1),
    },
    Reachable {
        name: "a scheduler joins the cluster",
        expected: |b| b.faults.joins > 0,
        condition: |m, w| w.left.joins < m.bounds.faults.joins,
    },
    // Controllers learn of a member that joined from their watch, and may
    // place a new queue on it.
    Reachable {
        name: "a queue is placed on a scheduler that joined",
        expected: |b| b.faults.joins > 0 && !b.submissions.is_empty(),
        condition: |m, w| {
            let first_joiner = m.bounds.schedulers - m.bounds.faults.joins;
            w.etcd.keys.iter().any(|k| k.owner >= first_joiner)
        },
    },
    Reachable {
        name: "a scheduler leaves for good",
        expected: |b| b.faults.departures > 0,
        condition: |m, w| w.left.departures < m.bounds.faults.departures,
    },
    // A controller (or a peer) sends to a scheduler that has left: it
    // learns so only by the send bouncing.
    Reachable {
        name: "a send to a scheduler that left bounces",
        expected: |b| b.faults.departures + b.faults.drains > 0 && !b.submissions.is_empty(),
        condition: |_, w| w.ghost.bounced,
    },
    // A controller sends to a scheduler that vanished: nothing answers,
    // and it routes the copy again only once it presumes it gone.
    Reachable {
        name: "a send to a scheduler that vanished is lost",
        expected: |b| b.faults.vanishings > 0 && !b.submissions.is_empty(),
        condition: |_, w| w.ghost.swallowed,
    },
    // A scheduler forwards to a peer that vanished: nothing answers, and
    // it takes the copy back once it presumes the peer gone
    // (`Rule::PresumePeerGone`).
    Reachable {
        name: "a forward to a scheduler that vanished is taken back",
        expected: |b| {
            let steadfast = b.variant == Variant::Steadfast;
            let forwards = pairs(b).any(|(x, y)| x.1 == y.1 && may_race(b, x, y));
            steadfast && forwards && b.faults.vanishings > 0
        },
        condition: |_, w| w.ghost.taken_back,
    },
    // A value no steadfast node wrote sits under an action's key: a
    // controller's lookup, or a scheduler's claim, finds it, and the call
    // is answered as not routed (`Rule::RefuseUnreadable`).
    Reachable {
        name: "a scheduler's claim finds a value no steadfast node wrote",
        expected: |b| b.faults.foreign_values > 0 && !b.submissions.is_empty(),
        condition: |_, w| w.ghost.claim_unreadable,
    },
    // etcd refuses a scheduler's user the action's key: its claim is
    // refused, and the call is answered as not routed.
    Reachable {
        name: "etcd refuses a scheduler's claim",
        expected: |b| b.faults.denials > 0 && !b.submissions.is_empty(),
        condition: |_, w| w.ghost.claim_denied,
    },
    Reachable {
        name: "a call is answered as not routed",
        expected: |b| {
            let steadfast = b.variant == Variant::Steadfast;
            let unreadable = b.faults.foreign_values > 0 || b.faults.denials > 0;
            steadfast && unreadable && !b.submissions.is_empty()
        },
        condition: |_, w| {
            let calls = w.activations.iter().chain(&w.retries);
            calls.copied().any(|a| a == ActivationState::Unrouted)
        },
    },
    Reachable {
        name: "a scheduler drains and leaves",
        expected: |b| b.faults.drains > 0,
        condition: |_, w| w.ghost.drained,
    },
    // What it runs when told to drain settles before it leaves.
    Reachable {
        name: "a scheduler is told to drain while it runs an activation",
        expected: |b| b.faults.drains > 0 && !b.submissions.is_empty(),
        condition: |_, w| w.ghost.drained_busy,
    },
    // An activation waits on its scheduler, whose lease's validity ran out
    // in the outage, until its deadline has passed: steadfast fails it
    // there (OpenWhisk checks its deadline only as it arrives).
    Reachable {
        name: "an activation fails past its deadline",
        expected: |b| b.variant == Variant::Steadfast && b.deadline.is_some() && b.outage_ticks > 0,
        condition: |_, w| {
            let failed = ActivationState::Failed(FailReason::PastDeadline);
            w.activations.contains(&failed)
        },
    },
    // A scheduler crashes holding an activation it may have run; the copy
    // sent again reaches a scheduler past the deadline, which fails it
    // saying it may have run.
    Reachable {
        name: "a caller is told it is not known whether an activation ran",
        expected: |b| {
            let steadfast = b.variant == Variant::Steadfast;
            steadfast && b.deadline.is_some() && b.faults.crashes > 0 && !b.submissions.is_empty()
        },
        condition: |_, w| {
            let ambiguous = ActivationState::Ambiguous(FailReason::PastDeadline);
            w.activations.contains(&ambiguous)
        },
    },
    Reachable {
        name: "a caller is told there is no outcome by its deadline",
        expected: |b| b.deadline.is_some() && b.outage_ticks > 0,
        condition: |_, w| w.ghost.overdue,
    },
    Reachable {
        name: "an execution ends with the executor's error",
        expected: |b| b.faults.execution_failures > 0 && !b.submissions.is_empty(),
        condition: |_, w| {
            let failed = ActivationState::ExecutionFailed(ExecutionFailure::Error);
            w.activations.contains(&failed)
        },
    },
    // An execution that hangs holds its activation until the scheduler's
    // execution timeout settles it.
    Reachable {
        name: "a hung execution times out",
        expected: |b| {
            let timed = b.variant == Variant::Steadfast && b.execute_for.is_some();
            timed && b.faults.hangs > 0 && !b.submissions.is_empty()
        },
        condition: |_, w| {
            let timed_out = ActivationState::ExecutionFailed(ExecutionFailure::Timeout);
            w.activations.contains(&timed_out)
        },
    },
    // A resubmission reaches the scheduler that settled the activation,
    // which answers it with the outcome it kept.
    Reachable {
        name: "a copy of an activation that ended is answered with its outcome",
        expected: |b| b.variant == Variant::Steadfast && !b.retries.is_empty(),
        condition: |_, w| w.ghost.answered_from_memory,
    },
    // A caller resubmits through another controller than the first, and
    // is told how the activation ended.
    Reachable {
        name: "a resubmission through another controller resolves",
        expected: |b| {
            let elsewhere = |(c, id): &(u8, u8)| {
                b.submissions
                    .get(usize::from(*id))
                    .is_some_and(|s| s.0 != *c)
            };
            b.variant == Variant::Steadfast && b.retries.iter().any(elsewhere)
        },
        condition: |m, w| {
            let retries = m.bounds.retries.iter().zip(&w.retries);
            retries
                .into_iter()
                .any(|((c, id), state)| state.resolved() && m.submitter(*id) != *c)
        },
    },
    // A resubmission asks the peer that took the activation in, which is
    // gone with what it knew: the caller is told it ended.
    Reachable {
        name: "a caller is told an activation ended, how no longer known",
        expected: |b| {
            let lost = b.faults.departures > 0 || b.faults.drains > 0;
            b.variant == Variant::Steadfast && !b.retries.is_empty() && lost
        },
        condition: |_, w| w.retries.contains(&ActivationState::Forgotten),
    },
    Reachable {
        name: "etcd loses its leader",
        expected: |b| b.faults.leader_losses > 0,
        condition: |_, w| !w.etcd.leader,
    },
    // An outage takes a scheduler's member key with its lease, and etcd
    // has no leader before the scheduler could put it back: a steadfast
    // controller holds the copy it sent there (`Rule::EtcdTime`).
    Reachable {
        name: "a copy waits on a scheduler whose key is gone while etcd has no leader",
        expected: |b| {
            let scheduler_cut = !b.outage_owners.is_empty()
                || (b.outage_clients.iter()).any(|c| matches!(c, Client::Scheduler(_)));
            let lease_lost = b.outage_ticks > 0 && scheduler_cut;
            let steadfast = b.variant == Variant::Steadfast;
            steadfast && lease_lost && b.faults.leader_losses > 0 && !b.submissions.is_empty()
        },
        condition: |_, w| {
            let waits_on_missing = |c: &crate::leasequeue::controller::Controller<_>| {
                let member = |to| c.members.iter().any(|(m, _)| m == to);
                c.sent.iter().any(|s| !member(&s.to))
            };
            !w.etcd.leader && w.controllers.iter().any(waits_on_missing)
        },
    },
];

/// Whether the queues of two submissions (controller, action) may go on
/// one scheduler while every scheduler is a member.
fn may_share(b: &Bounds, x: (u8, u8), y: (u8, u8)) -> bool {
    match b.placement {
        Placement::World => true,
        Placement::Seeded => seeded(b, x) == seeded(b, y),
    }
}

/// Whether two submissions through different controllers may have their
/// queues placed on different schedulers while every scheduler is a
/// member.
fn may_race(b: &Bounds, x: (u8, u8), y: (u8, u8)) -> bool {
    match b.placement {
        Placement::World => b.schedulers > 1 && x.0 != y.0,
        Placement::Seeded => seeded(b, x) != seeded(b, y),
    }
}

/// Where the seeded rule places a submission's queue while every scheduler
/// is a member.
fn seeded(b: &Bounds, (c, a): (u8, u8)) -> Option<u8> {
    Placement::seeded(c, a, 0..b.schedulers)
}

/// Every pair of submissions.
fn pairs(b: &Bounds) -> impl Iterator<Item = ((u8, u8), (u8, u8))> + '_ {
    let s = &b.submissions;
    s.iter()
        .enumerate()
        .flat_map(move |(i, x)| s[i + 1..].iter().map(move |y| (*x, *y)))
}

/// The `sometimes` properties a scenario of `bounds` must reach; with
/// `every`, all of them.
pub fn sometimes(bounds: &Bounds, every: bool) -> Vec<Property<LeaseQueueModel>> {
    REACHABLE
        .iter()
        .filter(|r| every || (r.expected)(bounds))
        .map(|r| Property::sometimes(r.name, r.condition))
        .collect()
}
