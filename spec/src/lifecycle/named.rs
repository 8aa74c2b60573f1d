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

    /// The essence after the merge patch `write` (RFC 7386).
    fn apply(essence: &String, write: &String) -> String {
        let mut value = parse(essence);
        merge_patch(&mut value, &parse(write));
        canonical(&value)
    }

    fn after(time: u64, span: u64) -> u64 {
        time.saturating_add(span)
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

/// The value at a dotted `path` (`spec.replicas`, `metadata.labels.app`).
pub fn at_path<'v>(value: &'v Value, path: &str) -> Option<&'v Value> {
    path.split('.')
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

/// The essence of an object, as kopf takes it: `spec`, the labels and the
/// annotations (less steadfast's own and `kubectl`'s), and the `status`
/// fields that `watched` names (dotted paths under `status.`).
pub fn essence_of(object: &Value, watched: &[String]) -> Value {
    let mut essence = serde_json::Map::new();
    if let Some(spec) = object.get("spec") {
        essence.insert("spec".into(), spec.clone());
    }
    let metadata = object.get("metadata");
    let mut kept = serde_json::Map::new();
    if let Some(labels) = metadata.and_then(|m| m.get("labels")) {
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
    for path in watched.iter().filter(|p| p.starts_with("status.")) {
        if let Some(value) = at_path(object, path) {
            let nested = path.rsplit('.').fold(value.clone(), |inner, key| {
                Value::Object(std::iter::once((key.to_owned(), inner)).collect())
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
    fn a_write_should_apply_as_a_merge_patch() {
        let essence = canonical(&json!({"metadata": {"labels": {"a": "1", "b": "2"}}}));
        let write = canonical(&json!({"metadata": {"labels": {"a": null, "c": "3"}}}));
        assert_eq!(
            Named::apply(&essence, &write),
            canonical(&json!({"metadata": {"labels": {"b": "2", "c": "3"}}}))
        );
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
    fn the_essence_should_keep_spec_labels_own_annotations_and_watched_status() {
        let object = json!({
            "apiVersion": "x/v1", "kind": "K",
            "metadata": {
                "name": "n", "resourceVersion": "7",
                "labels": {"app": "x"},
                "annotations": {"note": "y", "steadfast.dev/diff-base": "{}"}
            },
            "spec": {"size": 3},
            "status": {"tick": 5, "other": 1}
        });
        let essence = essence_of(&object, &["status.tick".to_owned(), "spec.size".to_owned()]);
        assert_eq!(
            essence,
            json!({
                "spec": {"size": 3},
                "metadata": {"labels": {"app": "x"}, "annotations": {"note": "y"}},
                "status": {"tick": 5}
            })
        );
    }
}
