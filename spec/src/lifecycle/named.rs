//! The runtime's domain: handler ids and field paths as strings, the
//! essence as canonical JSON text, digests as 16 hex digits of a stable
//! hash of the canonical JSON of what a handler depends on, opaque
//! resourceVersions, a handler's own write as a JSON merge patch, and
//! wall-clock milliseconds.
//!
//! Canonical JSON is `serde_json`'s compact text of a value whose objects
//! keep their keys sorted (`serde_json`'s map is ordered by key), so equal
//! values have equal text in every process.

use serde_json::Value;

use super::domain::Domain;
use crate::stable_hash::fnv1a;

/// The runtime's instantiation of the engine's [`Domain`].
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Named;

impl Domain for Named {
    type Handler = String;
    type Field = String;
    type Essence = String;
    type Digest = String;
    type Version = String;
    type Write = String;
    type Time = u64;
    type Duration = u64;
    type Message = String;
    type Holder = String;

    /// The hash of the canonical JSON at `field` (a dotted path; `null`
    /// where it is absent), or of the whole essence.
    fn digest(essence: &String, field: Option<&String>) -> String {
        let whole = parse(essence);
        let part = match field {
            Some(path) => at_path(&whole, path).cloned().unwrap_or(Value::Null),
            None => whole,
        };
        format!("{:016x}", fnv1a(&canonical(&part)))
    }

    /// The essence after the merge patch `write` (RFC 7386), taken again
    /// ([`essence_of`]): a write of `status` fields no field handler
    /// watches, or of metadata other than labels and annotations, changes
    /// nothing in it.
    fn apply(essence: &String, write: &String, watched: &[String]) -> String {
        let mut value = parse(essence);
        merge_patch(&mut value, &parse(write));
        canonical(&essence_of(&value, watched))
    }

    /// The merge patch's `status` key, and the rest of it.
    fn split_status(write: &String) -> (Option<String>, Option<String>) {
        let mut rest = parse(write);
        let status = rest.as_object_mut().and_then(|w| w.remove("status"));
        let status = status.map(|s| canonical(&serde_json::json!({ "status": s })));
        let empty = rest.as_object().is_some_and(serde_json::Map::is_empty);
        (status, (!empty).then(|| canonical(&rest)))
    }

    fn after(time: u64, span: u64) -> u64 {
        time.saturating_add(span)
    }

    fn before(time: u64, span: u64) -> u64 {
        time.saturating_sub(span)
    }

    fn doubled(span: u64) -> u64 {
        span.saturating_mul(2)
    }
}

/// The text of `value`, the same for equal values.
pub fn canonical(value: &Value) -> String {
    value.to_string()
}

/// Parses text the engine was given as canonical JSON; text that is not
/// JSON (which no driver gives) reads as `null`, so that a digest is still
/// a function of it.
fn parse(text: &str) -> Value {
    serde_json::from_str(text).unwrap_or(Value::Null)
}

/// Why a field path cannot be read.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error(
    "field {path:?} is not a path: {why}; write keys joined by dots (spec.replicas), and a key \
     that holds dots in brackets and quotes (metadata.labels[\"app.kubernetes.io/name\"])"
)]
pub struct BadPath {
    /// The path as given.
    pub path: String,
    /// What is wrong with it.
    pub why: &'static str,
}

/// The keys of a field path: keys joined by dots (`spec.replicas`), and a
/// key that holds dots or brackets written in brackets and double quotes
/// (`metadata.labels["app.kubernetes.io/name"]`, `data["a.b"].c`).
///
/// # Errors
///
/// An empty path or key, an unclosed bracket or quote, or anything but a
/// dot or a bracket after a bracketed key.
pub fn path_keys(path: &str) -> Result<Vec<String>, BadPath> {
    let bad = |why| BadPath {
        path: path.to_owned(),
        why,
    };
    let mut keys = Vec::new();
    let mut rest = path;
    loop {
        let key = if let Some(quoted) = rest.strip_prefix("[\"") {
            let end = quoted
                .find("\"]")
                .ok_or_else(|| bad("a bracket is not closed by \"]"))?;
            rest = &quoted[end + 2..];
            &quoted[..end]
        } else {
            let end = rest.find(['.', '[']).unwrap_or(rest.len());
            let key = &rest[..end];
            rest = &rest[end..];
            if key.contains([']', '"']) {
                return Err(bad("a bare key holds a bracket or a quote"));
            }
            key
        };
        if key.is_empty() {
            return Err(bad("a key is empty"));
        }
        keys.push(key.to_owned());
        if rest.is_empty() {
            return Ok(keys);
        }
        if let Some(after) = rest.strip_prefix('.') {
            if after.starts_with('[') || after.is_empty() {
                return Err(bad("a dot is not followed by a key"));
            }
            rest = after;
        } else if !rest.starts_with("[\"") {
            return Err(bad("a bracket must hold a quoted key: [\"key\"]"));
        }
    }
}

/// `path` ([`path_keys`]; empty for the root) with `key` added: after a
/// dot, or in brackets and quotes if it holds a dot, a bracket or a quote,
/// so that [`at_path`] reads it back.
pub fn joined(path: &str, key: &str) -> String {
    if key.contains(['.', '[', ']', '"']) || key.is_empty() {
        format!("{path}[\"{key}\"]")
    } else if path.is_empty() {
        key.to_owned()
    } else {
        format!("{path}.{key}")
    }
}

/// The keys of a field path a field handler may watch: a [`path_keys`]
/// path inside the essence ([`essence_of`]): not `apiVersion` or `kind`,
/// and under `metadata` only the labels and the annotations.
///
/// # Errors
///
/// A path that is not one, or that names nothing of the essence (it would
/// never change, and its handler run once with no value).
pub fn field_keys(path: &str) -> Result<Vec<String>, BadPath> {
    let keys = path_keys(path)?;
    let outside = match keys[0].as_str() {
        "apiVersion" | "kind" => true,
        "metadata" => !matches!(
            keys.get(1).map(String::as_str),
            Some("labels" | "annotations")
        ),
        _ => false,
    };
    if outside {
        return Err(BadPath {
            path: path.to_owned(),
            why: "it is outside the essence (of metadata, only the labels and annotations are)",
        });
    }
    Ok(keys)
}

/// The value at field `path` ([`path_keys`]); `None` where it is absent,
/// or where `path` is not a path.
pub fn at_path<'v>(value: &'v Value, path: &str) -> Option<&'v Value> {
    path_keys(path)
        .ok()?
        .iter()
        .try_fold(value, |value, key| value.as_object()?.get(key))
}

/// Applies a JSON merge patch (RFC 7386) to `target`.
pub fn merge_patch(target: &mut Value, patch: &Value) {
    let Value::Object(patch) = patch else {
        *target = patch.clone();
        return;
    };
    if !target.is_object() {
        *target = Value::Object(Default::default());
    }
    let Value::Object(map) = target else {
        return;
    };
    for (key, value) in patch {
        if value.is_null() {
            map.remove(key);
        } else {
            merge_patch(map.entry(key.clone()).or_insert(Value::Null), value);
        }
    }
}

/// Composes two merge patches into one that does what applying `first`
/// then `then` does: unlike [`merge_patch`], a `null` (a removal) is kept.
pub fn compose(first: &mut Value, then: &Value) {
    match (first, then) {
        (Value::Object(first), Value::Object(then)) => {
            for (key, value) in then {
                match first.get_mut(key) {
                    Some(existing) if existing.is_object() && value.is_object() => {
                        compose(existing, value);
                    }
                    _ => {
                        first.insert(key.clone(), value.clone());
                    }
                }
            }
        }
        (first, then) => *first = then.clone(),
    }
}

/// The annotations steadfast never counts in an essence: its own, and
/// `kubectl`'s copy of the last applied configuration.
fn ignored_annotation(key: &str) -> bool {
    key.starts_with(super::annotations::PREFIX)
        || key == "kubectl.kubernetes.io/last-applied-configuration"
}

/// The top-level fields that are never in an essence: the object's
/// identity and bookkeeping (`metadata`, of which the labels and
/// annotations are taken apart), and `status`, which the object's
/// controllers write (only the watched fields of it are taken).
const NOT_ESSENCE: [&str; 4] = ["apiVersion", "kind", "metadata", "status"];

/// The essence of an object, as kopf takes it: every top-level field but
/// `apiVersion`, `kind`, `metadata` and `status` (a custom resource's
/// `spec`, a ConfigMap's `data`, a Secret's `type`...), the labels and the
/// annotations (less steadfast's own and `kubectl`'s), and the `status`
/// fields that `watched` names (paths under `status`, [`path_keys`]).
pub fn essence_of(object: &Value, watched: &[String]) -> Value {
    let mut essence: serde_json::Map<String, Value> = object
        .as_object()
        .into_iter()
        .flatten()
        .filter(|(key, _)| !NOT_ESSENCE.contains(&key.as_str()))
        .map(|(key, value)| (key.clone(), value.clone()))
        .collect();
    let metadata = object.get("metadata");
    let mut kept = serde_json::Map::new();
    // Empty maps are left out, as the API server leaves them out.
    if let Some(labels) = metadata
        .and_then(|m| m.get("labels"))
        .filter(|l| l.as_object().is_none_or(|l| !l.is_empty()))
    {
        kept.insert("labels".into(), labels.clone());
    }
    if let Some(Value::Object(annotations)) = metadata.and_then(|m| m.get("annotations")) {
        let own: serde_json::Map<String, Value> = annotations
            .iter()
            .filter(|(k, _)| !ignored_annotation(k))
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect();
        if !own.is_empty() {
            kept.insert("annotations".into(), Value::Object(own));
        }
    }
    if !kept.is_empty() {
        essence.insert("metadata".into(), Value::Object(kept));
    }
    let mut essence = Value::Object(essence);
    for keys in watched.iter().filter_map(|p| path_keys(p).ok()) {
        if keys[0] != "status" {
            continue;
        }
        let value = keys
            .iter()
            .try_fold(object, |value, key| value.as_object()?.get(key));
        if let Some(value) = value {
            let nested = keys.iter().rev().fold(value.clone(), |inner, key| {
                Value::Object(std::iter::once((key.clone(), inner)).collect())
            });
            merge_patch(&mut essence, &nested);
        }
    }
    essence
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn a_digest_should_depend_on_its_field_only() {
        let a = canonical(&json!({"spec": {"size": 1, "image": "a"}}));
        let b = canonical(&json!({"spec": {"image": "b", "size": 1}}));
        let field = Some("spec.size".to_owned());
        assert_eq!(
            Named::digest(&a, field.as_ref()),
            Named::digest(&b, field.as_ref())
        );
        assert_ne!(Named::digest(&a, None), Named::digest(&b, None));
        let missing = Some("spec.replicas".to_owned());
        assert_eq!(
            Named::digest(&a, missing.as_ref()),
            format!("{:016x}", fnv1a("null"))
        );
    }

    #[test]
    fn a_write_should_split_into_its_status_and_the_rest() {
        let text = |v: serde_json::Value| canonical(&v);
        let both = text(json!({"status": {"phase": "Ready"}, "metadata": {"labels": {"a": "1"}}}));
        assert_eq!(
            Named::split_status(&both),
            (
                Some(text(json!({"status": {"phase": "Ready"}}))),
                Some(text(json!({"metadata": {"labels": {"a": "1"}}})))
            )
        );
        let status = text(json!({"status": null}));
        assert_eq!(Named::split_status(&status), (Some(status.clone()), None));
        let rest = text(json!({"spec": {"size": 2}}));
        assert_eq!(Named::split_status(&rest), (None, Some(rest.clone())));
    }

    #[test]
    fn a_write_should_apply_as_a_merge_patch() {
        let essence = canonical(&json!({"metadata": {"labels": {"a": "1", "b": "2"}}}));
        let write = canonical(&json!({"metadata": {"labels": {"a": null, "c": "3"}}}));
        assert_eq!(
            Named::apply(&essence, &write, &[]),
            canonical(&json!({"metadata": {"labels": {"b": "2", "c": "3"}}}))
        );
    }

    #[test]
    fn a_write_should_change_the_essence_only_in_what_an_essence_holds() {
        let essence = canonical(&json!({"spec": {"size": 1}}));
        let write = canonical(&json!({
            "status": {"tick": 4, "phase": "Ready"},
            "metadata": {"ownerReferences": [], "labels": {"a": "1"}}
        }));
        assert_eq!(
            Named::apply(&essence, &write, &["status.tick".to_owned()]),
            canonical(&json!({
                "spec": {"size": 1},
                "status": {"tick": 4},
                "metadata": {"labels": {"a": "1"}}
            }))
        );
        let labelled = canonical(&json!({"metadata": {"labels": {"a": "1"}}, "spec": {"size": 1}}));
        let unlabel = canonical(&json!({"metadata": {"labels": {"a": null}}}));
        assert_eq!(Named::apply(&labelled, &unlabel, &[]), essence);
    }

    #[test]
    fn composed_patches_should_keep_removals() {
        let mut patch = json!({"metadata": {"labels": {"a": "1", "b": null}}});
        compose(
            &mut patch,
            &json!({"metadata": {"labels": {"a": null, "c": "3"}}, "spec": 1}),
        );
        assert_eq!(
            patch,
            json!({"metadata": {"labels": {"a": null, "b": null, "c": "3"}}, "spec": 1})
        );
    }

    #[test]
    fn the_essence_should_keep_every_top_level_field_labels_own_annotations_and_watched_status() {
        let object = json!({
            "apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {
                "name": "n", "resourceVersion": "7",
                "labels": {"app.kubernetes.io/name": "x"},
                "annotations": {"note": "y", "steadfast.dev/diff-base": "{}"}
            },
            "data": {"size": "3"},
            "binaryData": {},
            "status": {"tick": 5, "other": 1, "a.b": {"c": 2}}
        });
        let watched = [
            "status.tick".to_owned(),
            "data.size".to_owned(),
            r#"status["a.b"].c"#.to_owned(),
        ];
        assert_eq!(
            essence_of(&object, &watched),
            json!({
                "data": {"size": "3"},
                "binaryData": {},
                "metadata": {"labels": {"app.kubernetes.io/name": "x"}, "annotations": {"note": "y"}},
                "status": {"tick": 5, "a.b": {"c": 2}}
            })
        );
    }

    #[test]
    fn a_path_should_name_keys_with_dots_in_brackets() {
        let object = json!({"metadata": {"labels": {"app.kubernetes.io/name": "web", "app": "x"}}});
        let path = r#"metadata.labels["app.kubernetes.io/name"]"#;
        assert_eq!(
            path_keys(path).unwrap(),
            ["metadata", "labels", "app.kubernetes.io/name"]
        );
        assert_eq!(at_path(&object, path), Some(&json!("web")));
        assert_eq!(at_path(&object, "metadata.labels.app"), Some(&json!("x")));
        assert_eq!(
            path_keys(r#"data["a"]["b.c"].d"#).unwrap(),
            ["data", "a", "b.c", "d"]
        );
        for (bad, why) in [
            ("", "a key is empty"),
            ("spec..size", "a key is empty"),
            ("spec.", "a dot is not followed by a key"),
            (r#"labels["a.b"#, "a bracket is not closed by \"]"),
            ("labels[a]", "a bracket must hold a quoted key: [\"key\"]"),
            (r#"labels.["a"]"#, "a dot is not followed by a key"),
            (
                r#"labels["a"]x"#,
                "a bracket must hold a quoted key: [\"key\"]",
            ),
            ("labels]", "a bare key holds a bracket or a quote"),
        ] {
            let error = path_keys(bad).unwrap_err();
            assert_eq!(error.why, why, "{bad}");
            assert!(
                error.to_string().contains("in brackets and quotes"),
                "{error}"
            );
        }
        assert_eq!(at_path(&object, "labels[a]"), None);
        let joined = joined(&joined("metadata", "labels"), "app.kubernetes.io/name");
        assert_eq!(joined, path);
    }

    #[test]
    fn a_field_path_should_stay_inside_the_essence() {
        for inside in [
            "data.size",
            "spec",
            "status.phase",
            r#"metadata.labels["a.b/c"]"#,
        ] {
            assert!(field_keys(inside).is_ok(), "{inside}");
        }
        for outside in ["metadata.name", "metadata", "kind", "apiVersion"] {
            let error = field_keys(outside).unwrap_err();
            assert!(
                error.why.contains("outside the essence"),
                "{outside}: {error}"
            );
        }
    }
}
