//! What the real server refuses in an object's `metadata` before it stores
//! it: values of the wrong JSON type (400, as its decoder does) and names,
//! labels and annotations that break ObjectMeta's rules (422).
//!
//! The rules and their words are the real server's:
//! `staging/src/k8s.io/apimachinery/pkg/api/validation/objectmeta.go`
//! (`ValidateObjectMeta`, `ValidateAnnotations`,
//! `TotalAnnotationSizeLimitB`), `.../apis/meta/v1/validation/validation.go`
//! (`ValidateLabels`) and `.../util/validation/validation.go`
//! (`IsDNS1123Subdomain`, `IsDNS1123Label`, `IsQualifiedName`,
//! `IsValidLabelValue`).

use serde_json::Value;

use super::status::{ApiError, ApiResult, Cause};

/// The most bytes all of an object's annotations (keys and values) may take.
pub const ANNOTATIONS_LIMIT: usize = 256 * 1024;

const DNS1123_LABEL_MAX: usize = 63;
const DNS1123_SUBDOMAIN_MAX: usize = 253;
const QUALIFIED_NAME_MAX: usize = 63;
const LABEL_VALUE_MAX: usize = 63;

/// How a type's object names are checked.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum NameRule {
    /// An RFC 1123 label (namespaces).
    Label,
    /// An RFC 1123 subdomain (most types, custom resources included).
    Subdomain,
}

/// Refuses, with 400 as the real server's decoder does, metadata whose
/// fields are not of their types: a number as an annotation value breaks
/// every typed client that would read the object back.
pub fn check_types(kind: &str, version: &str, object: &Value) -> ApiResult<()> {
    let metadata = &object["metadata"];
    let refuse = |field: &str, wanted: &str, found: &Value| {
        ApiError::bad_request(format!(
            "{kind} in version \"{version}\" cannot be handled as a {kind}: json: cannot \
             unmarshal {} into Go struct field ObjectMeta.metadata.{field} of type {wanted}",
            json_type(found)
        ))
    };
    for field in ["name", "generateName", "namespace"] {
        match &metadata[field] {
            Value::Null | Value::String(_) => {}
            other => return Err(refuse(field, "string", other)),
        }
    }
    for field in ["labels", "annotations"] {
        match &metadata[field] {
            Value::Null => {}
            Value::Object(map) => {
                if let Some(bad) = map.values().find(|v| !v.is_string()) {
                    return Err(refuse(field, "string", bad));
                }
            }
            other => return Err(refuse(field, "map[string]string", other)),
        }
    }
    match &metadata["finalizers"] {
        Value::Null => Ok(()),
        Value::Array(items) => match items.iter().find(|v| !v.is_string()) {
            Some(bad) => Err(refuse("finalizers", "string", bad)),
            None => Ok(()),
        },
        other => Err(refuse("finalizers", "[]string", other)),
    }
}

/// What is wrong with `object`'s name (checked by `rule`, when `name` is
/// set: names are checked at creation only, since they never change after),
/// labels and annotations.
pub fn meta_causes(object: &Value, name: Option<NameRule>) -> Vec<Cause> {
    let metadata = &object["metadata"];
    let mut causes = Vec::new();
    if let (Some(rule), Some(value)) = (name, metadata["name"].as_str()) {
        let problems = match rule {
            NameRule::Label => dns1123_label(value),
            NameRule::Subdomain => dns1123_subdomain(value),
        };
        causes.extend(
            problems
                .into_iter()
                .map(|p| Cause::invalid("metadata.name", &quoted(value), &p)),
        );
    }
    for (key, value) in strings(&metadata["labels"]) {
        causes.extend(
            qualified_name(key)
                .into_iter()
                .map(|p| Cause::invalid("metadata.labels", &quoted(key), &p)),
        );
        causes.extend(
            label_value(value)
                .into_iter()
                .map(|p| Cause::invalid("metadata.labels", &quoted(value), &p)),
        );
    }
    let mut size = 0;
    for (key, value) in strings(&metadata["annotations"]) {
        causes.extend(
            qualified_name(&key.to_ascii_lowercase())
                .into_iter()
                .map(|p| Cause::invalid("metadata.annotations", &quoted(key), &p)),
        );
        size += key.len() + value.len();
    }
    if size > ANNOTATIONS_LIMIT {
        causes.push(Cause::too_long("metadata.annotations", ANNOTATIONS_LIMIT));
    }
    causes
}

fn strings(map: &Value) -> impl Iterator<Item = (&str, &str)> {
    map.as_object()
        .into_iter()
        .flatten()
        .filter_map(|(k, v)| Some((k.as_str(), v.as_str()?)))
}

fn quoted(text: &str) -> String {
    format!("{text:?}")
}

fn json_type(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "bool",
        Value::Number(_) => "number",
        Value::String(_) => "string",
        Value::Array(_) => "array",
        Value::Object(_) => "object",
    }
}

fn max_len(text: &str, max: usize) -> Option<String> {
    (text.len() > max).then(|| format!("must be no more than {max} characters"))
}

fn is_label_part(part: &str) -> bool {
    let bytes = part.as_bytes();
    !bytes.is_empty()
        && bytes.len() <= DNS1123_LABEL_MAX
        && bytes
            .iter()
            .all(|&b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-')
        && bytes[0] != b'-'
        && bytes[bytes.len() - 1] != b'-'
}

/// `IsDNS1123Label`.
fn dns1123_label(text: &str) -> Vec<String> {
    let mut problems: Vec<String> = max_len(text, DNS1123_LABEL_MAX).into_iter().collect();
    if !is_label_part(text) {
        problems.push(
            "a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', \
             and must start and end with an alphanumeric character (e.g. 'my-name',  or '123-abc', \
             regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?')"
                .into(),
        );
    }
    problems
}

/// `IsDNS1123Subdomain`.
fn dns1123_subdomain(text: &str) -> Vec<String> {
    let mut problems: Vec<String> = max_len(text, DNS1123_SUBDOMAIN_MAX).into_iter().collect();
    if !text.split('.').all(is_label_part) {
        problems.push(
            "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, \
             '-' or '.', and must start and end with an alphanumeric character (e.g. \
             'example.com', regex used for validation is \
             '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')"
                .into(),
        );
    }
    problems
}

/// `([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]`, the shape of a qualified
/// name's name part and of a non-empty label value.
fn is_name_part(text: &str) -> bool {
    let bytes = text.as_bytes();
    !bytes.is_empty()
        && bytes
            .iter()
            .all(|&b| b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.'))
        && bytes[0].is_ascii_alphanumeric()
        && bytes[bytes.len() - 1].is_ascii_alphanumeric()
}

/// `IsQualifiedName`: an optional DNS subdomain prefix and `/`, then a name.
fn qualified_name(text: &str) -> Vec<String> {
    let (prefix, name) = match text.split_once('/') {
        Some((prefix, name)) => (Some(prefix), name),
        None => (None, text),
    };
    let mut problems = Vec::new();
    match prefix {
        Some("") => problems.push("prefix part must be non-empty".to_owned()),
        Some(prefix) => problems.extend(
            dns1123_subdomain(prefix)
                .into_iter()
                .map(|p| format!("prefix part {p}")),
        ),
        None => {}
    }
    if name.is_empty() {
        problems.push("name part must be non-empty".into());
    } else {
        if let Some(long) = max_len(name, QUALIFIED_NAME_MAX) {
            problems.push(format!("name part {long}"));
        }
        if !is_name_part(name) || name.contains('/') {
            problems.push(
                "name part must consist of alphanumeric characters, '-', '_' or '.', and must \
                 start and end with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or \
                 '123-abc', regex used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')"
                    .into(),
            );
        }
    }
    problems
}

/// `IsValidLabelValue`.
fn label_value(text: &str) -> Vec<String> {
    let mut problems: Vec<String> = max_len(text, LABEL_VALUE_MAX).into_iter().collect();
    if !text.is_empty() && !is_name_part(text) {
        problems.push(
            "a valid label must be an empty string or consist of alphanumeric characters, '-', \
             '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyValue',  \
             or 'my_value',  or '12345', regex used for validation is \
             '(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?')"
                .into(),
        );
    }
    problems
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn fields(object: Value, name: Option<NameRule>) -> Vec<(String, String)> {
        meta_causes(&object, name)
            .into_iter()
            .map(|c| (c.field, c.message))
            .collect()
    }

    #[test]
    fn names_should_follow_rfc_1123() {
        for good in ["a", "my-name", "123-abc", "example.com", "a.b-c.d"] {
            assert!(dns1123_subdomain(good).is_empty(), "{good}");
        }
        for bad in ["", "x_y", "-a", "a-", "A", "a..b", ".a", &"a".repeat(254)] {
            assert!(!dns1123_subdomain(bad).is_empty(), "{bad}");
        }
        assert!(dns1123_label("my-name").is_empty());
        assert!(!dns1123_label("a.b").is_empty(), "a label has no dots");
        assert!(!dns1123_label(&"a".repeat(64)).is_empty());
    }

    #[test]
    fn labels_and_annotation_keys_should_be_qualified_names() {
        for good in ["app", "example.com/app", "a_b.c-d", "A1"] {
            assert!(qualified_name(good).is_empty(), "{good}");
        }
        for bad in [
            "",
            "a!",
            "/a",
            "Example.com/a",
            "a/b/c",
            "-a",
            &"a".repeat(64),
        ] {
            assert!(!qualified_name(bad).is_empty(), "{bad}");
        }
        assert!(label_value("").is_empty() && label_value("v1.2_x").is_empty());
        assert!(!label_value("has spaces").is_empty());
    }

    #[test]
    fn metadata_should_be_refused_field_by_field() {
        let object = json!({ "metadata": {
            "name": "x_y",
            "labels": { "ok": "has spaces" },
            "annotations": { "bad!": "v", "Example.com/Fine": "v" },
        }});
        let causes = fields(object.clone(), Some(NameRule::Subdomain));
        let named: Vec<&str> = causes.iter().map(|(f, _)| f.as_str()).collect();
        assert_eq!(
            named,
            ["metadata.name", "metadata.labels", "metadata.annotations"],
            "{causes:?}"
        );
        assert!(causes[0]
            .1
            .starts_with("Invalid value: \"x_y\": a lowercase RFC 1123 subdomain"));
        assert_eq!(
            fields(object, None).len(),
            2,
            "a name is checked at creation only"
        );
        let big = json!({ "metadata": { "annotations": { "a": "x".repeat(ANNOTATIONS_LIMIT) } } });
        assert_eq!(
            fields(big, None),
            [(
                "metadata.annotations".to_owned(),
                "Too long: may not be more than 262144 bytes".to_owned()
            )]
        );
    }

    #[test]
    fn values_of_the_wrong_type_should_be_refused_as_the_decoder_refuses_them() {
        let number = json!({ "metadata": { "annotations": { "a": 1 } } });
        let error = check_types("ConfigMap", "v1", &number).unwrap_err();
        assert_eq!(error.code, 400);
        assert!(
            error.message.contains("cannot unmarshal number into Go struct field ObjectMeta.metadata.annotations of type string"),
            "{}",
            error.message
        );
        assert!(check_types("ConfigMap", "v1", &json!({ "metadata": { "labels": [] } })).is_err());
        assert!(check_types(
            "ConfigMap",
            "v1",
            &json!({ "metadata": { "finalizers": [1] } })
        )
        .is_err());
        assert!(check_types(
            "ConfigMap",
            "v1",
            &json!({ "metadata": { "labels": { "a": "b" } } })
        )
        .is_ok());
    }
}
