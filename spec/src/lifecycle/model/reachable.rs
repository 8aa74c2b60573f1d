//! `sometimes` properties that show each fault and each path of interest is
//! reached in a scenario that budgets it, so that no property holds only
//! because its trigger never happens.
//!
//! Each comes with the condition on a scenario under which it must be
//! reached; a scenario checks those whose condition holds (and a model
//! built [`LifecycleModel::with_every_sometimes`] checks them all, to show
//! that each can fail).

use stateright::Property;

use super::{LifecycleModel, SubPlan, Timing, World};
use crate::lifecycle::engine::{Phase, Renewal};
use crate::lifecycle::handlers::On;
use crate::lifecycle::object::Final;

/// One `sometimes`: its name, when a scenario must reach it, and the
/// condition.
struct Reachable {
    name: &'static str,
    expected: fn(&LifecycleModel) -> bool,
    condition: fn(&LifecycleModel, &World) -> bool,
}

/// The runs in flight, of every replica.
fn running(w: &World) -> impl Iterator<Item = &super::Run> {
    w.replicas.iter().filter_map(|r| r.running.as_ref())
}

fn registers(m: &LifecycleModel, on: On<super::Field>) -> bool {
    m.config.handlers.iter().any(|h| h.on == on)
}

const REACHABLE: [Reachable; 26] = [
    Reachable {
        name: "a sub-handler runs",
        expected: |m| m.code.iter().any(|c| c.subs != SubPlan::None),
        condition: |_, w| running(w).any(|r| r.key.sub.is_some()),
    },
    // Without it, "finalizer kept until delete handlers finish" and
    // "deletion releases the finalizer" could hold for want of a deletion.
    Reachable {
        name: "a delete handler runs while the finalizer holds the object",
        expected: |m| m.budget.faults.deletion && registers(m, On::Delete),
        condition: |m, w| {
            let held = w.object.as_ref().is_some_and(|o| o.deleting && o.finalizer);
            held && running(w)
                .any(|r| m.config.handlers[usize::from(r.key.handler)].on == On::Delete)
        },
    },
    Reachable {
        name: "a handler fails for good",
        expected: |m| m.budget.faults.permanent_errors > 0,
        condition: |_, w| {
            w.object.as_ref().is_some_and(|o| {
                o.progress
                    .iter()
                    .any(|(_, r)| r.outcome == Some(Final::Failure))
            })
        },
    },
    Reachable {
        name: "a resume handler runs",
        expected: |m| registers(m, On::Resume),
        condition: |m, w| {
            running(w).any(|r| m.config.handlers[usize::from(r.key.handler)].on == On::Resume)
        },
    },
    Reachable {
        name: "a create handler runs",
        expected: |m| registers(m, On::Create),
        condition: |m, w| {
            running(w).any(|r| m.config.handlers[usize::from(r.key.handler)].on == On::Create)
        },
    },
    // Without it, "create succeeds at most once per object" could hold for
    // want of an edit during the creation.
    Reachable {
        name: "an update handler runs on a change made during the creation",
        expected: |m| {
            m.budget.faults.edits > 0
                && registers(m, On::Create)
                && registers(m, On::Update)
                && m.config
                    .rules
                    .has(crate::lifecycle::rules::Rule::CreateOnce)
        },
        condition: |m, w| {
            let creating = w.object.as_ref().is_some_and(|o| o.diff_base.is_none());
            creating
                && running(w)
                    .any(|r| m.config.handlers[usize::from(r.key.handler)].on == On::Update)
        },
    },
    Reachable {
        name: "a handler's own write changes the essence",
        expected: |m| m.code.iter().any(|c| c.writes.is_some()),
        condition: |_, w| w.ghost.wrote,
    },
    // Without it, the properties could hold with a status subresource only
    // because its two writes always land together.
    Reachable {
        name: "a status write lands without the rest of its patch",
        expected: |m| {
            let between = m.budget.faults.crashes > 0 || m.budget.faults.lost_replies > 0;
            m.config.status_subresource && between
        },
        condition: |_, w| {
            let rest_in_flight = w.replicas.iter().any(
                |r| matches!(&r.engine.phase, Phase::Patching { patch, .. } if !patch.to_status),
            );
            w.ghost.status_first && !rest_in_flight
        },
    },
    Reachable {
        name: "an edit brings the essence back to an earlier one",
        expected: |m| m.budget.modulo.is_some_and(|n| n <= m.budget.faults.edits),
        condition: |_, w| w.ghost.returned_to_earlier,
    },
    Reachable {
        name: "a deletion is requested while a handler runs",
        expected: |m| m.budget.faults.deletion,
        condition: |_, w| w.ghost.deleted_while_running,
    },
    Reachable {
        name: "another writer's change refuses a patch",
        expected: |m| {
            m.budget.faults.foreign_writes > 0
                && m.config
                    .rules
                    .has(crate::lifecycle::rules::Rule::CheckedPatches)
        },
        condition: |_, w| w.ghost.foreign_refused,
    },
    Reachable {
        name: "a run of a crashed operator returns after the restart",
        expected: |m| m.budget.faults.crashes > 0,
        condition: |_, w| w.ghost.zombie_returned,
    },
    Reachable {
        name: "a hung run passes its deadline",
        expected: |m| m.budget.faults.hangs > 0,
        condition: |_, w| w.ghost.deadline_passed,
    },
    Reachable {
        name: "a stale list is served",
        expected: |m| m.budget.faults.stale_lists > 0,
        condition: |_, w| w.ghost.stale_listed,
    },
    Reachable {
        name: "the watch expires and the operator lists again",
        expected: |m| m.budget.faults.expiries > 0,
        condition: |_, w| w.ghost.expired,
    },
    Reachable {
        name: "a run returns after its deadline",
        expected: |m| m.budget.faults.overruns > 0 || m.budget.timing != Timing::Timely,
        condition: |_, w| w.ghost.late_returned,
    },
    // Without it, the exemption of a refused object from "handled on the
    // final essence" could never be tried.
    Reachable {
        name: "a patch is refused for good",
        expected: |m| m.budget.faults.refusals > 0,
        condition: |_, w| w.ghost.refused.is_some(),
    },
    Reachable {
        name: "a throttled request is asked again after the wait",
        expected: |m| m.budget.faults.throttles > 0,
        condition: |_, w| w.ghost.throttled && w.replicas.iter().all(|r| r.engine.pause.is_none()),
    },
    Reachable {
        name: "a handler runs out of attempts",
        expected: |m| {
            m.config
                .handlers
                .iter()
                .any(|h| h.retries <= m.budget.faults.temporary_errors)
        },
        condition: |_, w| w.ghost.exhausted,
    },
    // Without it, a panic could end its handler for good, as it did when
    // the runtime told the engine nothing of it, and no property notice.
    Reachable {
        name: "a handler that panicked runs again",
        expected: |m| m.budget.faults.panics > 0,
        condition: |m, w| w.left.panics < m.budget.faults.panics && running(w).any(|r| r.retry > 0),
    },
    // Without it, "a run is cut before its timeout only if its claim could
    // not be renewed" could hold for want of a renewal that fails.
    Reachable {
        name: "a renewal of a running run's claim fails",
        expected: |m| {
            let faults = &m.budget.faults;
            faults.long_runs && (faults.edits > 0 || faults.lost_replies > 0)
        },
        condition: |_, w| {
            w.replicas.iter().any(|r| {
                matches!(
                    r.engine.phase,
                    Phase::Running {
                        renewal: Some(Renewal::Failed { .. }),
                        ..
                    }
                )
            })
        },
    },
    Reachable {
        name: "a stopped operator's successor starts",
        expected: |m| m.budget.faults.stops > 0,
        condition: |_, w| w.ghost.restarted,
    },
    // Without them, "a dead replica's objects are taken over" could hold
    // for want of a dead replica, and the drift budget go untried.
    Reachable {
        name: "a dead replica's claim is taken over",
        expected: |m| {
            m.budget.faults.deaths > 0
                && m.config.rules.has(crate::lifecycle::rules::Rule::TakeOver)
        },
        condition: |_, w| w.ghost.taken_over && w.ghost.died,
    },
    // Without it, "no two runs of the object's handlers overlap" could
    // hold in `bounded` for want of a claim lapsing under a live holder.
    Reachable {
        name: "a live replica's claim is taken over",
        expected: |m| m.replicas > 1 && m.budget.timing != Timing::Timely,
        condition: |_, w| w.ghost.taken_from_live,
    },
    Reachable {
        name: "a replica's clock runs ahead while another's run is under way",
        expected: |m| m.budget.faults.skew > 0,
        condition: |_, w| {
            w.replicas.iter().any(|r| r.ahead > 0) && w.replicas.iter().any(|r| r.busy())
        },
    },
    Reachable {
        name: "a patch's reply is lost",
        expected: |m| m.budget.faults.lost_replies > 0,
        condition: |m, w| w.left.lost_replies < m.budget.faults.lost_replies,
    },
];

/// The `sometimes` a model checks: those its scenario must reach, or with
/// `every`, all of them.
pub(super) fn sometimes(m: &LifecycleModel, every: bool) -> Vec<Property<LifecycleModel>> {
    REACHABLE
        .iter()
        .filter(|r| every || (r.expected)(m))
        .map(|r| Property::sometimes(r.name, r.condition))
        .collect()
}
