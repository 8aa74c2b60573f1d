//! The Kubernetes API's rules, for the engines' traces: every answer and
//! every event a driver fed its engine is one the API server could give.
//!
//! The API calls resourceVersions opaque; the servers it runs on (etcd's
//! revisions) and the test server make them increasing integers, which the
//! rules of order read. A version that is no integer is compared only for
//! equality.

use std::collections::BTreeMap;

use super::{engines, At, Rule, Violation};
use crate::lifecycle::trace::EngineRecord;
use crate::lifecycle::{Effect, Input};
use crate::trace::Trace;

pub(super) fn check(traces: &[&Trace], out: &mut Vec<Violation>) {
    // Per object: every version any engine saw or made, and where.
    let mut versions: BTreeMap<&str, Vec<(u64, At)>> = BTreeMap::new();
    // Per object: the versions patches made, and where.
    let mut made: BTreeMap<(&str, String), At> = BTreeMap::new();
    for (trace, header, records) in engines(traces) {
        let object = header.object.as_str();
        // The version the last patch sent expected, if it may change nothing.
        let mut expected = None;
        for (step, record) in records.iter().enumerate() {
            let at = At { trace, step };
            let version = match &record.input {
                Input::Observed(view) | Input::Listed(view) | Input::Fetched(view) => {
                    Some(&view.version)
                }
                Input::PatchApplied { version } if expected == Some(version) => Some(version),
                // A claim's renewal is a write too.
                Input::PatchApplied { version } | Input::Renewed { version } => {
                    if let Some(first) = made.insert((object, version.clone()), at) {
                        out.push(Violation {
                            rule: Rule::WriteMakesNewerVersion,
                            places: vec![first, at],
                            what: format!("{object}: two writes made version {version}"),
                        });
                    }
                    Some(version)
                }
                _ => None,
            };
            if let Some(number) = version.and_then(|v| number(v)) {
                versions.entry(object).or_default().push((number, at));
            }
            expected = patch_sent(record).unwrap_or(expected);
        }
        one_engine(trace, object, records, out);
    }
    for (trace, header, records) in engines(traces) {
        let known = versions
            .get(header.object.as_str())
            .map_or(&[][..], Vec::as_slice);
        conflicts(trace, &header.object, records, known, out);
    }
}

/// The version `version` as a number, if it is one.
fn number(version: &str) -> Option<u64> {
    version.parse().ok()
}

/// Whether `record` sent a patch, and if it may change nothing, the
/// version it expected: a status part alone (`Patch::to_status`) merges
/// again what a patch whose rest failed wrote, makes no new version, and is
/// answered with the one it expected. Every other patch of the engine's
/// changes a record, the diff-base or the claim.
fn patch_sent(record: &EngineRecord) -> Option<Option<&String>> {
    record.effects.iter().find_map(|e| match e {
        Effect::Patch(patch) => Some(patch.to_status.then_some(&patch.expect)),
        _ => None,
    })
}

/// The rules one engine's trace shows alone: its writes make newer
/// versions, the watch shows them, and the watch shows versions in order.
fn one_engine(trace: usize, object: &str, records: &[EngineRecord], out: &mut Vec<Violation>) {
    // The newest version seen or made, and where; and that as the last
    // patch was sent (its answer may come after newer events).
    let mut newest: Option<(u64, At)> = None;
    let mut before_patch: Option<(u64, At)> = None;
    // The last version this watch showed (reset by a list).
    let mut watched: Option<u64> = None;
    // A version a patch made that the watch has not shown yet, and where.
    let mut unshown: Option<(u64, At)> = None;
    // The version the last patch sent expected, if it may change nothing.
    let mut expected = None;
    for (step, record) in records.iter().enumerate() {
        let at = At { trace, step };
        let mut broken = |rule, places, what| {
            out.push(Violation {
                rule,
                places,
                what: format!("{object}: {what}"),
            })
        };
        match &record.input {
            Input::PatchApplied { version } => {
                if let (Some(v), Some((before, seen))) = (number(version), before_patch) {
                    if v <= before && expected != Some(version) {
                        broken(
                            Rule::WriteMakesNewerVersion,
                            vec![seen, at],
                            format!(
                                "a write made version {version}, not newer than {before}, seen \
                                 before it was sent"
                            ),
                        );
                    }
                }
                // The watch may have shown it already.
                unshown = number(version)
                    .filter(|v| watched.is_none_or(|w| w < *v))
                    .map(|v| (v, at));
            }
            Input::Renewed { version } => {
                unshown = number(version)
                    .filter(|v| watched.is_none_or(|w| w < *v))
                    .map(|v| (v, at));
            }
            Input::Listed(view) => {
                watched = number(&view.version);
                unshown = None;
            }
            Input::Gone => {
                watched = None;
                unshown = None;
                newest = None;
                before_patch = None;
            }
            Input::Observed(view) => {
                let Some(v) = number(&view.version) else {
                    continue;
                };
                if let Some(before) = watched.filter(|before| v <= *before) {
                    broken(
                        Rule::VersionsInOrder,
                        vec![at],
                        format!("the watch showed version {v} after {before}"),
                    );
                }
                watched = Some(v);
                if let Some((patched, applied)) = unshown.filter(|(p, _)| v >= *p) {
                    if v > patched {
                        broken(
                            Rule::PatchedVersionShown,
                            vec![applied, at],
                            format!(
                                "a patch made version {patched}, and the watch showed {v} \
                                 without it"
                            ),
                        );
                    }
                    unshown = None;
                }
            }
            _ => {}
        }
        let seen = match &record.input {
            Input::Observed(view) | Input::Listed(view) | Input::Fetched(view) => {
                number(&view.version)
            }
            Input::PatchApplied { version } | Input::Renewed { version } => number(version),
            _ => None,
        };
        if let Some(v) = seen {
            if newest.is_none_or(|(n, _)| v > n) {
                newest = Some((v, at));
            }
        }
        if let Some(unchanged) = patch_sent(record) {
            before_patch = newest;
            expected = unchanged;
        }
    }
}

/// "a 409 comes only after a newer version": a patch refused as a
/// conflict carried a precondition, and a version newer than the one it
/// expected is known from some engine's trace of the object, if this
/// engine saw the object again after the refusal.
fn conflicts(
    trace: usize,
    object: &str,
    records: &[EngineRecord],
    known: &[(u64, At)],
    out: &mut Vec<Violation>,
) {
    // The last patch sent: the version it expected, whether it was
    // checked, and where.
    let mut patch: Option<(Option<u64>, bool, At)> = None;
    // A conflict not yet borne out: the version expected, and where.
    let mut pending: Vec<(u64, At)> = Vec::new();
    for (step, record) in records.iter().enumerate() {
        let at = At { trace, step };
        match &record.input {
            Input::PatchConflict => match patch {
                Some((_, false, sent)) => out.push(Violation {
                    rule: Rule::ConflictAfterNewerVersion,
                    places: vec![sent, at],
                    what: format!("{object}: a patch with no precondition was refused with 409"),
                }),
                Some((Some(expect), true, _)) => pending.push((expect, at)),
                _ => {}
            },
            Input::Observed(_) | Input::Listed(_) | Input::Fetched(_) => {
                for (expect, refused) in pending.drain(..) {
                    if !known.iter().any(|(v, _)| *v > expect) {
                        out.push(Violation {
                            rule: Rule::ConflictAfterNewerVersion,
                            places: vec![refused, at],
                            what: format!(
                                "{object}: a patch on version {expect} was refused with 409, \
                                 and no trace shows a newer version"
                            ),
                        });
                    }
                }
            }
            _ => {}
        }
        for effect in &record.effects {
            if let Effect::Patch(p) = effect {
                patch = Some((number(&p.expect), p.checked, at));
            }
        }
    }
}
