//! The leasequeue properties that span nodes, counted from the traces:
//! "executed at most once", "at most one outcome" and "one owner per key".
//!
//! Every execution counts, acknowledged or not: the executions of an
//! activation are the `Execute` effects of every scheduler's trace. As in
//! the model, an activation may run, and end, once more each time a
//! scheduler it was delivered to stopped while its sender may still send it
//! (its trace ends holding it unacknowledged, or with a report of it not
//! confirmed: its controller sends it until it learns how it ended), and
//! once more each time a scheduler forgot it (its dedupe window past).

use std::collections::{BTreeMap, BTreeSet};

use super::{controllers, schedulers, At, Rule, Violation};
use crate::leasequeue::scheduler::{ClaimResult, Effect, Input};
use crate::leasequeue::trace::{Named, SchedulerRecord};
use crate::leasequeue::{controller, Outcome};
use crate::trace::Trace;

/// Per activation, where each of a kind of event happened.
type Places = BTreeMap<String, Vec<At>>;

pub(super) fn check(traces: &[&Trace], out: &mut Vec<Violation>) {
    let mut executions = Places::new();
    let mut ends = Places::new();
    let mut failures = Places::new();
    // Resolutions no submission at that controller asked for: a second
    // one of a call.
    let mut resolved_again = Places::new();
    // What each controller told callers of an activation, where.
    let mut told: BTreeMap<String, Vec<(At, Outcome)>> = BTreeMap::new();
    let mut owners: BTreeMap<(String, i64), BTreeSet<String>> = BTreeMap::new();
    let mut forgotten: BTreeMap<String, usize> = BTreeMap::new();
    let mut excuses: BTreeMap<String, usize> = BTreeMap::new();
    for (trace, header, records) in schedulers(traces) {
        let at = |step| At { trace, step };
        for id in sent_again(records) {
            *excuses.entry(id).or_default() += 1;
        }
        facts(
            &header.id,
            header.config.remember_for,
            records,
            |fact, step| match fact {
                Fact::Executed(id) => executions.entry(id).or_default().push(at(step)),
                Fact::Ended(id, outcome) => {
                    if matches!(outcome, Outcome::Failed(_)) {
                        failures.entry(id.clone()).or_default().push(at(step));
                    }
                    ends.entry(id).or_default().push(at(step));
                }
                Fact::Forgotten(id) => *forgotten.entry(id).or_default() += 1,
                Fact::Served(action, created) => {
                    owners
                        .entry((action, created))
                        .or_default()
                        .insert(header.id.clone());
                }
            },
        );
    }
    for (trace, _, records) in controllers(traces) {
        // The ids submitted at this controller and not resolved since: a
        // resubmission of a pending one joins it.
        let mut open: BTreeSet<&String> = BTreeSet::new();
        for (step, record) in records.iter().enumerate() {
            // A failure the controller decided, rather than one a scheduler
            // reported, is an end of its own.
            let reported = matches!(record.input, controller::Input::Outcome { .. });
            if let controller::Input::Submit { id, .. } = &record.input {
                open.insert(id);
            }
            for effect in &record.effects {
                if let controller::Effect::Resolve { id, outcome } = effect {
                    let at = At { trace, step };
                    if !open.remove(id) {
                        resolved_again.entry(id.clone()).or_default().push(at);
                    }
                    told.entry(id.clone()).or_default().push((at, *outcome));
                    if let (Outcome::Failed(_), false) = (outcome, reported) {
                        failures.entry(id.clone()).or_default().push(at);
                        ends.entry(id.clone()).or_default().push(at);
                    }
                }
            }
        }
    }
    let allowed = |id: &String| 1 + forgotten.get(id).copied().unwrap_or(0);
    for (id, places) in &executions {
        let excused = excuses.get(id).copied().unwrap_or(0);
        if places.len() > allowed(id) + excused {
            out.push(Violation {
                rule: Rule::ExecutedAtMostOnce,
                places: places.clone(),
                what: format!("activation {id} was executed {} times", places.len()),
            });
        }
    }
    for (id, places) in &ends {
        let excused = excuses.get(id).copied().unwrap_or(0);
        if places.len() > allowed(id) + excused {
            out.push(Violation {
                rule: Rule::AtMostOneOutcome,
                places: places.clone(),
                what: format!("activation {id} ended {} times", places.len()),
            });
        }
    }
    for (id, fails) in &failures {
        let ran = executions.get(id).filter(|_| !forgotten.contains_key(id));
        if let Some(ran) = ran {
            let mut places = ran.clone();
            places.extend(fails);
            out.push(Violation {
                rule: Rule::AtMostOneOutcome,
                places,
                what: format!("activation {id} failed after it was executed"),
            });
        }
    }
    for (id, places) in resolved_again {
        out.push(Violation {
            rule: Rule::AtMostOneOutcome,
            what: format!("a submission of {id} resolved more than once"),
            places,
        });
    }
    for (id, told) in told.iter().filter(|(id, _)| !forgotten.contains_key(*id)) {
        let mut ends = told.iter().filter(|(_, o)| o.tells_how_it_ended());
        let first = ends.next().map(|(_, o)| *o);
        if ends.any(|(_, outcome)| Some(*outcome) != first) {
            out.push(Violation {
                rule: Rule::AtMostOneOutcome,
                places: told.iter().map(|(at, _)| *at).collect(),
                what: format!("the callers of {id} were told different ends"),
            });
        }
    }
    for ((action, created), schedulers) in owners {
        if schedulers.len() > 1 {
            let schedulers: Vec<_> = schedulers.into_iter().collect();
            out.push(Violation {
                rule: Rule::OneOwnerPerKey,
                places: Vec::new(),
                what: format!(
                    "schedulers {} all served action {action} from the key created at \
                     revision {created}",
                    schedulers.join(" and ")
                ),
            });
        }
    }
}

/// The activations a scheduler took in (delivered, not refused) that their
/// senders may send again when its trace ends: not acknowledged, or
/// reported to a controller that had not confirmed the report.
fn sent_again(records: &[SchedulerRecord]) -> BTreeSet<String> {
    let mut held = BTreeSet::new();
    let mut unconfirmed: BTreeSet<(String, String)> = BTreeSet::new();
    for record in records {
        match &record.input {
            Input::Activation { id, .. } => {
                let refused = record
                    .effects
                    .iter()
                    .any(|e| matches!(e, Effect::Refuse { id: r, .. } if r == id));
                if !refused {
                    held.insert(id.clone());
                }
            }
            _ => confirm_reports(&mut unconfirmed, &record.input),
        }
        for effect in &record.effects {
            match effect {
                Effect::Ack { id } => {
                    held.remove(id);
                }
                Effect::Report { id, to, .. } => {
                    unconfirmed.insert((id.clone(), to.clone()));
                }
                _ => {}
            }
        }
    }
    held.extend(unconfirmed.into_iter().map(|(id, _)| id));
    held
}

/// Takes out of `reporting` (reports not confirmed yet, by activation and
/// controller) those `input` confirms, or says bounced.
fn confirm_reports(reporting: &mut BTreeSet<(String, String)>, input: &Input<Named>) {
    match input {
        Input::ReportAcked { id, from } => {
            reporting.retain(|(r, to)| r != id || from.as_ref().is_some_and(|f| f != to));
        }
        Input::ReportBounced { id, to } => {
            reporting.remove(&(id.clone(), to.clone()));
        }
        _ => {}
    }
}

/// What a scheduler's trace says that a property reads.
enum Fact {
    /// The scheduler ran this activation.
    Executed(String),
    /// The scheduler settled this activation: it reported this end (a
    /// report sent again before it was confirmed is the same end).
    Ended(String, Outcome),
    /// The scheduler forgot this activation: a copy of it is new again.
    Forgotten(String),
    /// Work of this action was handed out from the key created at this
    /// revision.
    Served(String, i64),
}

/// Walks scheduler `me`'s records and reports each [`Fact`] with its step.
/// A scheduler that remembers what it settled for `remember_for` (by its
/// own clock, the sum of its steps' `elapsed`) has forgotten an activation
/// settled that long before it settles it again. A report of the outcome it
/// remembers, to another controller or to one that asks again, is not
/// another end.
fn facts(
    me: &str,
    remember_for: Option<u64>,
    records: &[SchedulerRecord],
    mut report: impl FnMut(Fact, usize),
) {
    let mut clock: u64 = 0;
    // When (by its clock) each activation was last settled, and how.
    let mut settled_at: BTreeMap<String, (u64, Outcome)> = BTreeMap::new();
    // The key each (action, lease) queue was opened on, from the replies
    // that open queues.
    let mut keys: BTreeMap<(String, i64), i64> = BTreeMap::new();
    // Reports not confirmed yet, by activation and controller: one of
    // these reported again is a resend, not another settlement.
    let mut reporting: BTreeSet<(String, String)> = BTreeSet::new();
    for (step, record) in records.iter().enumerate() {
        clock += record.elapsed;
        confirm_reports(&mut reporting, &record.input);
        match &record.input {
            Input::Claimed {
                action,
                lease,
                result,
            } => {
                let created = match result {
                    ClaimResult::Created { created } => Some(*created),
                    ClaimResult::Exists(key) if key.owner == me => Some(key.created),
                    ClaimResult::Exists(_)
                    | ClaimResult::LeaseNotFound
                    | ClaimResult::Unreadable { .. } => None,
                };
                if let Some(created) = created {
                    keys.insert((action.clone(), *lease), created);
                }
            }
            Input::Resolved {
                action,
                key: Some(key),
                ..
            } if key.owner == me => {
                keys.insert((action.clone(), key.lease), key.created);
            }
            Input::Forget { id } => {
                reporting.retain(|(r, _)| r != id);
                settled_at.remove(id);
                report(Fact::Forgotten(id.clone()), step);
            }
            _ => {}
        }
        for effect in &record.effects {
            match effect {
                Effect::Execute { id, action, lease } => {
                    report(Fact::Executed(id.clone()), step);
                    if let Some(created) = keys.get(&(action.clone(), *lease)) {
                        report(Fact::Served(action.clone(), *created), step);
                    }
                }
                Effect::Report { id, to, outcome } => {
                    // That it ended, how no longer known, is no end; nor
                    // that a call was not routed.
                    if !outcome.tells_how_it_ended() || !reporting.insert((id.clone(), to.clone()))
                    {
                        continue;
                    }
                    let last = settled_at.get(id).copied();
                    let forgotten = last
                        .zip(remember_for)
                        .is_some_and(|((at, _), span)| clock >= at + span);
                    if last.is_some_and(|(_, kept)| kept == *outcome) && !forgotten {
                        continue;
                    }
                    settled_at.insert(id.clone(), (clock, *outcome));
                    if forgotten {
                        report(Fact::Forgotten(id.clone()), step);
                    }
                    report(Fact::Ended(id.clone(), *outcome), step);
                }
                _ => {}
            }
        }
    }
}
