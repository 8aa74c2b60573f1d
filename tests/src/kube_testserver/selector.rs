//! Label and field selectors, parsed from list and watch query strings.

use serde_json::Value;

use super::status::{ApiError, ApiResult};

/// One requirement of a label selector.
#[derive(Debug, Clone, PartialEq)]
enum Requirement {
    /// `key=value` or `key==value`.
    Equals(String, String),
    /// `key!=value`: true also where the label is absent.
    NotEquals(String, String),
    /// `key in (a,b)`.
    In(String, Vec<String>),
    /// `key notin (a,b)`: true also where the label is absent.
    NotIn(String, Vec<String>),
    /// `key`.
    Exists(String),
    /// `!key`.
    DoesNotExist(String),
}

/// A label selector: every requirement must hold.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct LabelSelector(Vec<Requirement>);

impl LabelSelector {
    /// Parses the `labelSelector` syntax: comma-separated requirements, where
    /// commas inside `( )` belong to a set.
    pub fn parse(text: &str) -> ApiResult<Self> {
        let mut requirements = Vec::new();
        for term in split_terms(text) {
            let term = term.trim();
            if term.is_empty() {
                continue;
            }
            requirements.push(parse_requirement(term)?);
        }
        Ok(Self(requirements))
    }

    /// Whether an object's labels satisfy the selector.
    pub fn matches(&self, object: &Value) -> bool {
        let labels = &object["metadata"]["labels"];
        let label = |key: &str| labels.get(key).and_then(Value::as_str);
        self.0.iter().all(|requirement| match requirement {
            Requirement::Equals(key, value) => label(key) == Some(value),
            Requirement::NotEquals(key, value) => label(key) != Some(value),
            Requirement::In(key, values) => {
                label(key).is_some_and(|l| values.iter().any(|v| v == l))
            }
            Requirement::NotIn(key, values) => {
                !label(key).is_some_and(|l| values.iter().any(|v| v == l))
            }
            Requirement::Exists(key) => label(key).is_some(),
            Requirement::DoesNotExist(key) => label(key).is_none(),
        })
    }
}

/// Splits on commas outside parentheses.
fn split_terms(text: &str) -> Vec<&str> {
    let mut terms = Vec::new();
    let (mut depth, mut start) = (0usize, 0usize);
    for (i, c) in text.char_indices() {
        match c {
            '(' => depth += 1,
            ')' => depth = depth.saturating_sub(1),
            ',' if depth == 0 => {
                terms.push(&text[start..i]);
                start = i + 1;
            }
            _ => {}
        }
    }
    terms.push(&text[start..]);
    terms
}

fn parse_requirement(term: &str) -> ApiResult<Requirement> {
    let invalid = || {
        ApiError::bad_request(format!(
            "unable to parse requirement: invalid label selector term {term:?}: expected \
             key, !key, key=value, key==value, key!=value, key in (a,b) or key notin (a,b)"
        ))
    };
    if let Some(key) = term.strip_prefix('!') {
        return Ok(Requirement::DoesNotExist(
            label_key(key.trim()).ok_or_else(invalid)?,
        ));
    }
    if let Some((key, value)) = term.split_once("!=") {
        return Ok(Requirement::NotEquals(
            label_key(key).ok_or_else(invalid)?,
            value.trim().into(),
        ));
    }
    if let Some((key, value)) = term.split_once("==").or_else(|| term.split_once('=')) {
        return Ok(Requirement::Equals(
            label_key(key).ok_or_else(invalid)?,
            value.trim().into(),
        ));
    }
    let mut words = term.splitn(2, char::is_whitespace);
    let key = words.next().unwrap_or_default();
    let Some(rest) = words.next().map(str::trim) else {
        return Ok(Requirement::Exists(label_key(key).ok_or_else(invalid)?));
    };
    let key = label_key(key).ok_or_else(invalid)?;
    let (negated, set) = if let Some(set) = rest.strip_prefix("notin") {
        (true, set)
    } else if let Some(set) = rest.strip_prefix("in") {
        (false, set)
    } else {
        return Err(invalid());
    };
    let set = set.trim();
    let values = set
        .strip_prefix('(')
        .and_then(|s| s.strip_suffix(')'))
        .ok_or_else(invalid)?
        .split(',')
        .map(|v| v.trim().to_owned())
        .collect();
    Ok(if negated {
        Requirement::NotIn(key, values)
    } else {
        Requirement::In(key, values)
    })
}

/// A label key if `text` is one: non-empty, no spaces or operators.
fn label_key(text: &str) -> Option<String> {
    let key = text.trim();
    let valid = !key.is_empty()
        && key
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.' | '/'));
    valid.then(|| key.to_owned())
}

/// A field selector over `metadata.name` and `metadata.namespace`, the fields
/// every resource supports.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct FieldSelector(Vec<(FieldPath, bool, String)>);

/// A field a selector may name.
#[derive(Debug, Clone, Copy, PartialEq)]
enum FieldPath {
    Name,
    Namespace,
}

impl FieldSelector {
    /// Parses `metadata.name=x,metadata.namespace!=y` (`=`, `==` and `!=`).
    pub fn parse(text: &str) -> ApiResult<Self> {
        let mut terms = Vec::new();
        for term in text.split(',').map(str::trim).filter(|t| !t.is_empty()) {
            let (field, equal, value) = if let Some((f, v)) = term.split_once("!=") {
                (f, false, v)
            } else if let Some((f, v)) = term.split_once("==").or_else(|| term.split_once('=')) {
                (f, true, v)
            } else {
                return Err(ApiError::bad_request(format!(
                    "invalid field selector term {term:?}: expected field=value, field==value or field!=value"
                )));
            };
            let path = match field.trim() {
                "metadata.name" => FieldPath::Name,
                "metadata.namespace" => FieldPath::Namespace,
                other => {
                    return Err(ApiError::bad_request(format!(
                        "field label not supported: {other} (this server selects on \
                         metadata.name and metadata.namespace)"
                    )))
                }
            };
            terms.push((path, equal, value.trim().to_owned()));
        }
        Ok(Self(terms))
    }

    /// Whether an object's fields satisfy the selector.
    pub fn matches(&self, object: &Value) -> bool {
        self.0.iter().all(|(path, equal, value)| {
            let field = match path {
                FieldPath::Name => &object["metadata"]["name"],
                FieldPath::Namespace => &object["metadata"]["namespace"],
            };
            (field.as_str().unwrap_or_default() == value) == *equal
        })
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn labelled(labels: Value) -> Value {
        json!({ "metadata": { "name": "a", "namespace": "ns", "labels": labels } })
    }

    #[test]
    fn label_selector_should_follow_set_semantics() {
        let object = labelled(json!({ "app": "web", "tier": "front" }));
        let cases = [
            ("app=web", true),
            ("app==web,tier=front", true),
            ("app!=web", false),
            ("env!=prod", true),
            ("tier in (back, front)", true),
            ("tier notin (back,front)", false),
            ("env notin (prod)", true),
            ("app", true),
            ("!app", false),
            ("!env", true),
            ("app=web,tier in (back)", false),
            ("", true),
        ];
        for (selector, expected) in cases {
            let parsed = LabelSelector::parse(selector).unwrap();
            assert_eq!(parsed.matches(&object), expected, "{selector}");
        }
    }

    #[test]
    fn label_selector_should_refuse_garbage_with_a_clear_error() {
        for bad in ["a b c", "x in y", "=v", "a in (b"] {
            let error = LabelSelector::parse(bad).unwrap_err();
            assert_eq!(error.code, 400, "{bad}");
            assert!(
                error.message.contains("label selector"),
                "{}",
                error.message
            );
        }
    }

    #[test]
    fn field_selector_should_match_name_and_namespace_only() {
        let object = labelled(json!({}));
        assert!(FieldSelector::parse("metadata.name=a")
            .unwrap()
            .matches(&object));
        assert!(!FieldSelector::parse("metadata.name!=a")
            .unwrap()
            .matches(&object));
        assert!(
            FieldSelector::parse("metadata.namespace==ns,metadata.name=a")
                .unwrap()
                .matches(&object)
        );
        let error = FieldSelector::parse("spec.x=1").unwrap_err();
        assert!(error.message.contains("field label not supported: spec.x"));
    }
}
