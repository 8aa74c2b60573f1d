//! etcd's rules: every answer a driver fed its role is one etcd could give
//! for the history the traces reveal.
//!
//! The history comes from two sides. Schedulers learn of endpoint keys by
//! the answers to their claims and lookups, each naming the key's owner,
//! lease and create revision. Controllers watch those keys: each change
//! with its revision. Endpoint keys are only ever created (put if absent)
//! and deleted, so a watched put is a creation.

use std::collections::{BTreeMap, BTreeSet};

use super::{controllers, schedulers, At, Rule, Violation};
use crate::leasequeue::controller::{self, Change};
use crate::leasequeue::scheduler::{ClaimResult, Effect, Input};
use crate::trace::Trace;

pub(super) fn check(traces: &[&Trace], out: &mut Vec<Violation>) {
    let keys = Keys::answered(traces, out);
    let deleted = watches(traces, &keys, out);
    leases(traces, &keys, &deleted, out);
    keepalives(traces, out);
}

/// An endpoint key, by its action and create revision.
type Key = (String, i64);

/// What the schedulers' answers say of each key: its owner and lease, and
/// where an answer first named it.
struct Keys {
    known: BTreeMap<Key, (String, i64, At)>,
}

impl Keys {
    /// The keys the schedulers' answers name; two answers that name one
    /// key (one action, one create revision) with two owners or leases
    /// break "a key is created once between deletes".
    fn answered(traces: &[&Trace], out: &mut Vec<Violation>) -> Self {
        let mut keys = Keys {
            known: BTreeMap::new(),
        };
        for (trace, header, records) in schedulers(traces) {
            for (step, record) in records.iter().enumerate() {
                let at = At { trace, step };
                let (action, owner, lease, created) = match &record.input {
                    Input::Claimed {
                        action,
                        lease,
                        result: ClaimResult::Created { created },
                    } => (action, &header.id, *lease, *created),
                    Input::Claimed {
                        action,
                        result: ClaimResult::Exists(key),
                        ..
                    }
                    | Input::Resolved {
                        action,
                        key: Some(key),
                        ..
                    } => (action, &key.owner, key.lease, key.created),
                    _ => continue,
                };
                let entry = keys
                    .known
                    .entry((action.clone(), created))
                    .or_insert_with(|| (owner.clone(), lease, at));
                if (&entry.0, entry.1) != (owner, lease) {
                    out.push(Violation {
                        rule: Rule::CreatedOnceBetweenDeletes,
                        places: vec![entry.2, at],
                        what: format!(
                            "the key of {action} created at revision {created} is {}'s under \
                             lease {}, and {owner}'s under lease {lease}",
                            entry.0, entry.1
                        ),
                    });
                }
            }
        }
        keys
    }
}

/// One watch of a controller, from the revision it started at.
struct Segment {
    start: i64,
    /// The highest revision it reported, by a change or a progress.
    reach: i64,
    /// It reported a compaction: what it skipped is excused.
    compacted: bool,
    /// The creations it reported.
    puts: BTreeSet<Key>,
    /// The keys it has seen created and not deleted, each with its
    /// creation's revision.
    live: BTreeMap<String, i64>,
    /// Where it started.
    at: At,
}

/// Reads every controller's watches: the order of their revisions, keys
/// created twice, and the creations the schedulers' answers reveal that a
/// watch skipped. Returns the revision at which each key it saw created
/// was deleted.
fn watches(traces: &[&Trace], keys: &Keys, out: &mut Vec<Violation>) -> BTreeMap<Key, i64> {
    let mut deleted = BTreeMap::new();
    let mut segments = Vec::new();
    for (trace, header, records) in controllers(traces) {
        // Each watch that started, by the watch the controller asked for:
        // one it gave up on may still report.
        let mut open: BTreeMap<controller::WatchId, Segment> = BTreeMap::new();
        let mut listed = header.rev;
        for (step, record) in records.iter().enumerate() {
            let at = At { trace, step };
            let mut broken = |rule, what| {
                out.push(Violation {
                    rule,
                    places: vec![at],
                    what,
                })
            };
            match &record.input {
                controller::Input::WatchStarted { watch, next, .. } => {
                    let segment = Segment {
                        start: *next,
                        reach: next - 1,
                        compacted: false,
                        puts: BTreeSet::new(),
                        live: BTreeMap::new(),
                        at,
                    };
                    segments.extend(open.insert(*watch, segment));
                }
                controller::Input::Listed { rev, .. } => {
                    if *rev < listed {
                        broken(
                            Rule::RevisionsIncrease,
                            format!("a listing at revision {rev} came after one at {listed}"),
                        );
                    }
                    listed = listed.max(*rev);
                }
                controller::Input::Compacted { watch, .. } => {
                    if let Some(s) = open.get_mut(watch) {
                        s.compacted = true;
                    }
                }
                controller::Input::Progress { watch, rev, .. } => {
                    if let Some(s) = open.get_mut(watch) {
                        if *rev < s.reach {
                            broken(
                                Rule::RevisionsIncrease,
                                format!(
                                    "the watch reported progress to revision {rev} after a \
                                     change at {}",
                                    s.reach
                                ),
                            );
                        }
                        s.reach = s.reach.max(*rev);
                    }
                }
                controller::Input::Changed { watch, changes, .. } => {
                    let Some(s) = open.get_mut(watch) else {
                        continue;
                    };
                    let floor = s.reach;
                    let mut last = None;
                    for (rev, change) in changes {
                        let late = match last {
                            None => *rev <= floor,
                            Some(last) => *rev < last,
                        };
                        if late {
                            broken(
                                Rule::WatchWithoutGaps,
                                format!(
                                    "the watch reported revision {rev} after revision {}",
                                    last.unwrap_or(floor)
                                ),
                            );
                        }
                        last = Some(*rev);
                        s.reach = s.reach.max(*rev);
                        let Change::Endpoint { action, owner } = change else {
                            continue;
                        };
                        match owner {
                            Some(owner) => {
                                if let Some(before) = s.live.insert(action.clone(), *rev) {
                                    broken(
                                        Rule::CreatedOnceBetweenDeletes,
                                        format!(
                                            "the key of {action} was created at revision {rev} \
                                             for {owner}, and at {before}, with no delete \
                                             between"
                                        ),
                                    );
                                }
                                s.puts.insert((action.clone(), *rev));
                            }
                            None => {
                                if let Some(created) = s.live.remove(action) {
                                    deleted.insert((action.clone(), created), *rev);
                                }
                            }
                        }
                    }
                }
                _ => {}
            }
        }
        segments.extend(open.into_values());
    }
    for segment in segments.iter().filter(|s| !s.compacted) {
        let skipped = keys.known.iter().filter(|((action, created), _)| {
            (segment.start..=segment.reach).contains(created)
                && !segment.puts.contains(&(action.clone(), *created))
        });
        for ((action, created), (owner, _, at)) in skipped {
            out.push(Violation {
                rule: Rule::WatchWithoutGaps,
                places: vec![*at, segment.at],
                what: format!(
                    "a watch reported revisions {} to {} without {owner}'s key of {action}, \
                     created at revision {created}",
                    segment.start, segment.reach
                ),
            });
        }
    }
    deleted
}

/// "a lease's keys go at one revision": the keys of a lease that no
/// request deleted one by one were deleted together, as a revoke or an
/// expiry deletes them.
fn leases(traces: &[&Trace], keys: &Keys, deleted: &BTreeMap<Key, i64>, out: &mut Vec<Violation>) {
    // The keys their owners asked to delete one by one.
    let mut by_request: BTreeSet<Key> = BTreeSet::new();
    // The actions whose keys a request deleted whatever their revision.
    let mut any_of: BTreeSet<String> = BTreeSet::new();
    for (_, _, records) in schedulers(traces) {
        for record in records {
            for effect in &record.effects {
                if let Effect::Delete { action, created } = effect {
                    match created {
                        Some(created) => {
                            by_request.insert((action.clone(), *created));
                        }
                        None => {
                            any_of.insert(action.clone());
                        }
                    }
                }
            }
        }
    }
    let mut by_lease: BTreeMap<i64, BTreeMap<i64, (Key, At)>> = BTreeMap::new();
    for (key, (_, lease, at)) in &keys.known {
        let one_by_one = by_request.contains(key) || any_of.contains(&key.0);
        if let (Some(rev), false) = (deleted.get(key), one_by_one) {
            by_lease
                .entry(*lease)
                .or_default()
                .insert(*rev, (key.clone(), *at));
        }
    }
    for (lease, revisions) in by_lease {
        if revisions.len() > 1 {
            let places = revisions.values().map(|(_, at)| *at).collect();
            let list: Vec<String> = revisions
                .iter()
                .map(|(rev, ((action, _), _))| format!("{action}'s at {rev}"))
                .collect();
            out.push(Violation {
                rule: Rule::LeaseKeysGoTogether,
                places,
                what: format!(
                    "the keys of lease {lease} went at several revisions: {}",
                    list.join(", ")
                ),
            });
        }
    }
}

/// "a keepalive succeeds only for a live lease": no keepalive sent after
/// its scheduler learned that its lease was gone (a keepalive that found
/// none, a revoke, a claim or a put that found no lease) succeeds.
fn keepalives(traces: &[&Trace], out: &mut Vec<Violation>) {
    for (trace, _, records) in schedulers(traces) {
        // The step at which each lease was first known to be gone.
        let mut gone: BTreeMap<i64, usize> = BTreeMap::new();
        // The step that sent each keepalive.
        let mut sent: BTreeMap<(i64, u64), usize> = BTreeMap::new();
        for (step, record) in records.iter().enumerate() {
            let lost = match &record.input {
                Input::KeptAlive { lease, ttl: 0, .. }
                | Input::Revoked { lease }
                | Input::Registered {
                    lease,
                    found: false,
                }
                | Input::Claimed {
                    lease,
                    result: ClaimResult::LeaseNotFound,
                    ..
                } => Some(*lease),
                Input::KeptAlive {
                    lease, keepalive, ..
                } => {
                    let asked = sent.get(&(*lease, *keepalive));
                    if let (Some(&asked), Some(&known)) = (asked, gone.get(lease)) {
                        if asked > known {
                            out.push(Violation {
                                rule: Rule::KeepAliveOfLiveLease,
                                places: vec![At { trace, step: known }, At { trace, step }],
                                what: format!(
                                    "keepalive {keepalive} of lease {lease} succeeded, sent \
                                     after the lease was known to be gone"
                                ),
                            });
                        }
                    }
                    None
                }
                _ => None,
            };
            if let Some(lease) = lost {
                gone.entry(lease).or_insert(step);
            }
            for effect in &record.effects {
                if let Effect::KeepAlive { lease, keepalive } = effect {
                    sent.insert((*lease, *keepalive), step);
                }
            }
        }
    }
}
