//! Between kube-rs objects and the engine: the version of an object the
//! engine sees (its essence and the progress read from its annotations),
//! and the merge patch an engine's patch becomes.

use std::collections::BTreeMap;

use serde_json::{json, Map, Value};
use steadfast_spec::lifecycle::annotations::{
    self, claim_value, error_annotation, progress_key, AnnotationError, ClaimRecord,
    ProgressRecord, CLAIM, DIFF_BASE, EPOCH, ERROR, PREFIX,
};
use steadfast_spec::lifecycle::named::{canonical, compose, essence_of, Named};
use steadfast_spec::lifecycle::{Claim, ObjectView, Patch, Progress, Record};

/// The finalizer steadfast puts on an object while a delete handler holds
/// it.
pub const FINALIZER: &str = "steadfast.dev/finalizer";

/// An object as JSON, and what the engine sees of it.
pub(crate) struct Seen {
    pub(crate) view: ObjectView<Named>,
    pub(crate) finalizers: Vec<String>,
}

/// What the engine sees of `object`: its resourceVersion, essence (with the
/// `watched` status fields), deletion, finalizer and progress.
///
/// # Errors
///
/// The annotations under `steadfast.dev/` that cannot be read; no handler
/// runs on a guess.
pub(crate) fn seen(object: &Value, watched: &[String]) -> Result<Seen, Vec<AnnotationError>> {
    let metadata = object.get("metadata").cloned().unwrap_or(Value::Null);
    let text = |v: Option<&Value>| v.and_then(Value::as_str).unwrap_or_default().to_owned();
    let finalizers: Vec<String> = metadata
        .get("finalizers")
        .and_then(Value::as_array)
        .map(|list| {
            list.iter()
                .filter_map(|f| f.as_str().map(str::to_owned))
                .collect()
        })
        .unwrap_or_default();
    let ours: BTreeMap<String, String> = metadata
        .get("annotations")
        .and_then(Value::as_object)
        .map(|annotations| {
            annotations
                .iter()
                .filter(|(k, _)| k.starts_with(PREFIX))
                .map(|(k, v)| (k.clone(), v.as_str().unwrap_or_default().to_owned()))
                .collect()
        })
        .unwrap_or_default();
    let progress = annotations::decode(&ours)?;
    let records = progress
        .records
        .into_iter()
        .map(|r| {
            let record = Record {
                retries: u8::try_from(r.retries).unwrap_or(u8::MAX),
                outcome: r.outcome,
                delayed_until: r.delayed_until,
                seen: r.seen,
                started: r.started,
                subs: r.subs,
                error: r.error,
            };
            (r.handler, record)
        })
        .collect();
    let view = ObjectView {
        version: text(metadata.get("resourceVersion")),
        essence: canonical(&essence_of(object, watched)),
        deleting: metadata
            .get("deletionTimestamp")
            .is_some_and(|t| !t.is_null()),
        finalizer: finalizers.iter().any(|f| f == FINALIZER),
        progress: Progress(records),
        diff_base: progress.diff_base.as_ref().map(canonical),
        claim: progress.claim.map(|c| Claim {
            holder: c.holder,
            until: c.until,
            epoch: progress.epoch,
        }),
        epoch: progress.epoch,
        marked: ours.contains_key(ERROR),
    };
    Ok(Seen { view, finalizers })
}

/// The JSON merge patch that carries out `patch` on an object whose
/// finalizers are `finalizers`.
///
/// # Errors
///
/// A handler id that cannot be written as an annotation key.
pub(crate) fn merge_patch_of(
    patch: &Patch<Named>,
    finalizers: &[String],
) -> Result<Value, AnnotationError> {
    let mut body = Value::Null;
    for write in &patch.writes {
        let write: Value = serde_json::from_str(write).unwrap_or(Value::Null);
        compose(&mut body, &write);
    }
    let mut annotations = Map::new();
    for (handler, record) in &patch.records {
        let value = match record {
            Some(r) => Value::String(
                serde_json::to_string(&ProgressRecord {
                    handler: handler.clone(),
                    retries: u32::from(r.retries),
                    outcome: r.outcome,
                    seen: r.seen.clone(),
                    started: r.started,
                    delayed_until: r.delayed_until,
                    subs: r.subs.clone(),
                    error: r.error.clone(),
                })
                .expect("a record serializes"),
            ),
            None => Value::Null,
        };
        annotations.insert(progress_key(handler)?, value);
    }
    if let Some(base) = &patch.diff_base {
        annotations.insert(DIFF_BASE.to_owned(), Value::String(base.clone()));
    }
    if let Some(change) = &patch.claim {
        let claim = change.after();
        let value = claim.as_ref().map_or(Value::Null, |c| {
            Value::String(claim_value(&ClaimRecord {
                holder: c.holder.clone(),
                until: c.until,
            }))
        });
        annotations.insert(CLAIM.to_owned(), value);
        // A released claim's epoch stays, so that the next one is greater.
        if let Some(claim) = claim {
            annotations.insert(EPOCH.to_owned(), Value::String(claim.epoch.to_string()));
        }
    }
    // Set, not merged: a `null` here removes an annotation at the API
    // server, and must reach it.
    if !body.is_object() {
        body = json!({});
    }
    if !body["metadata"].is_object() {
        body["metadata"] = json!({});
    }
    let metadata = &mut body["metadata"];
    if !metadata["annotations"].is_object() {
        metadata["annotations"] = json!({});
    }
    for (key, value) in annotations {
        metadata["annotations"][key] = value;
    }
    if let Some(add) = patch.finalizer {
        let mut list: Vec<String> = finalizers
            .iter()
            .filter(|f| *f != FINALIZER)
            .cloned()
            .collect();
        if add {
            list.push(FINALIZER.to_owned());
        }
        metadata["finalizers"] = json!(list);
    }
    if patch.checked {
        metadata["resourceVersion"] = json!(patch.expect);
    }
    Ok(body)
}

/// What is wrong with unreadable annotations, one line per error.
pub(crate) fn unreadable(errors: &[AnnotationError]) -> String {
    error_annotation(errors).1
}

/// The merge patch of an engine's [`Effect::Mark`]: what is wrong with
/// unreadable annotations, recorded on the object for people
/// (`steadfast.dev/error`), or (`None`) the record removed; checked against
/// `expect`.
///
/// [`Effect::Mark`]: steadfast_spec::lifecycle::Effect::Mark
pub(crate) fn mark_patch(expect: &str, message: Option<&str>) -> Value {
    json!({ "metadata": { "resourceVersion": expect, "annotations": { ERROR: message } } })
}

#[cfg(test)]
mod tests {
    use steadfast_spec::lifecycle::{ClaimChange, Final, Record};

    use super::*;

    fn record() -> Record<Named> {
        Record {
            retries: 1,
            outcome: Some(Final::Success),
            delayed_until: None,
            seen: Some("00000000000000aa".into()),
            started: 5,
            subs: Vec::new(),
            error: None,
        }
    }

    #[test]
    fn a_purge_should_reach_the_server_as_nulls_with_the_writes_and_precondition() {
        let patch = Patch {
            expect: "41".into(),
            checked: true,
            records: vec![("a".into(), None), ("b".into(), Some(record()))],
            diff_base: Some(r#"{"spec":{"size":2}}"#.into()),
            writes: vec![r#"{"metadata":{"labels":{"size":"2","old":null}}}"#.into()],
            finalizer: Some(false),
            claim: Some(ClaimChange::Release),
            to_status: false,
        };
        let finalizers = vec!["other.io/keep".to_owned(), FINALIZER.to_owned()];
        let body = merge_patch_of(&patch, &finalizers).unwrap();
        let annotations = &body["metadata"]["annotations"];
        assert_eq!(annotations[progress_key("a").unwrap()], Value::Null);
        assert!(annotations
            .as_object()
            .unwrap()
            .contains_key(&progress_key("a").unwrap()));
        let b: ProgressRecord =
            serde_json::from_str(annotations[progress_key("b").unwrap()].as_str().unwrap())
                .unwrap();
        assert_eq!(b.seen.as_deref(), Some("00000000000000aa"));
        assert_eq!(annotations[DIFF_BASE], r#"{"spec":{"size":2}}"#);
        // A released claim is removed; its epoch stays.
        assert_eq!(annotations.get(CLAIM), Some(&Value::Null));
        assert_eq!(annotations.get(EPOCH), None);
        assert_eq!(
            body["metadata"]["labels"],
            json!({"size": "2", "old": null})
        );
        assert_eq!(body["metadata"]["finalizers"], json!(["other.io/keep"]));
        assert_eq!(body["metadata"]["resourceVersion"], "41");
    }

    #[test]
    fn a_claim_taken_should_be_written_with_its_epoch() {
        let patch = Patch {
            claim: Some(ClaimChange::Set(Claim {
                holder: "op-1".into(),
                until: 7000,
                epoch: 5,
            })),
            expect: "3".into(),
            checked: true,
            records: Vec::new(),
            diff_base: None,
            writes: Vec::new(),
            finalizer: None,
            to_status: false,
        };
        let body = merge_patch_of(&patch, &[]).unwrap();
        let annotations = &body["metadata"]["annotations"];
        assert_eq!(annotations[CLAIM], r#"{"holder":"op-1","until":7000}"#);
        assert_eq!(annotations[EPOCH], "5");
    }

    #[test]
    fn an_object_should_be_seen_with_its_progress_and_unreadable_ones_refused() {
        let object = json!({
            "metadata": {
                "resourceVersion": "7",
                "finalizers": [FINALIZER],
                "deletionTimestamp": "2026-12-01T00:00:00Z",
                "annotations": {
                    "steadfast.dev/diff-base": r#"{"spec":{"size":1}}"#,
                    "steadfast.dev/claim": r#"{"holder":"op-0","until":9000}"#,
                    "steadfast.dev/epoch": "4",
                },
            },
            "spec": {"size": 2},
        });
        let seen = seen(&object, &[]).unwrap();
        assert_eq!(seen.view.version, "7");
        assert!(seen.view.deleting && seen.view.finalizer);
        assert_eq!(
            seen.view.diff_base.as_deref(),
            Some(r#"{"spec":{"size":1}}"#)
        );
        assert_eq!(seen.view.essence, r#"{"spec":{"size":2}}"#);
        assert_eq!(
            seen.view.claim,
            Some(Claim {
                holder: "op-0".into(),
                until: 9000,
                epoch: 4,
            })
        );
        assert_eq!(seen.view.epoch, 4);
        assert!(!seen.view.marked);
        let mut marked = object.clone();
        marked["metadata"]["annotations"][ERROR] = json!("steadfast.dev/x: unknown");
        assert!(super::seen(&marked, &[]).unwrap().view.marked);
        let mut corrupt = object.clone();
        corrupt["metadata"]["annotations"]["steadfast.dev/surprise"] = json!("x");
        assert!(super::seen(&corrupt, &[]).is_err());
    }

    #[test]
    fn a_mark_should_be_set_and_cleared_under_its_version() {
        assert_eq!(
            mark_patch("7", Some("bad")),
            json!({ "metadata": { "resourceVersion": "7", "annotations": { ERROR: "bad" } } })
        );
        assert_eq!(
            mark_patch("8", None),
            json!({ "metadata": { "resourceVersion": "8", "annotations": { ERROR: null } } })
        );
    }
}
