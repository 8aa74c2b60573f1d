//! The patch types the server accepts, by `Content-Type`.

use serde_json::Value;

use super::status::{ApiError, ApiResult};

/// How a PATCH body is applied.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PatchKind {
    /// `application/merge-patch+json`: RFC 7386.
    Merge,
    /// `application/strategic-merge-patch+json`, served for built-in types
    /// only, and applied as a JSON merge patch (the built-in types served
    /// here have no list that a strategic merge would merge by key).
    Strategic,
    /// `application/json-patch+json`: RFC 6902, `test` included.
    Json,
    /// `application/apply-patch+yaml`: server-side apply of a JSON (hence
    /// YAML) body, merged in as a merge patch; a missing object is created.
    /// Field ownership is not tracked.
    Apply,
}

impl PatchKind {
    /// The kind a `Content-Type` names (parameters such as `charset` ignored).
    pub fn from_content_type(content_type: &str) -> ApiResult<Self> {
        let media = content_type.split(';').next().unwrap_or_default().trim();
        match media {
            "application/merge-patch+json" => Ok(Self::Merge),
            "application/strategic-merge-patch+json" => Ok(Self::Strategic),
            "application/json-patch+json" => Ok(Self::Json),
            "application/apply-patch+yaml" | "application/apply-patch+json" => Ok(Self::Apply),
            other => Err(ApiError::unsupported_media_type(other)),
        }
    }
}

/// Applies `patch` to `object`.
///
/// # Errors
///
/// 400 for a body that is no patch of its kind; 422 for a JSON patch whose
/// operation fails (a `test` that does not hold, a path that is absent).
pub fn apply(kind: PatchKind, mut object: Value, patch: Value) -> ApiResult<Value> {
    match kind {
        PatchKind::Merge | PatchKind::Strategic | PatchKind::Apply => {
            if !patch.is_object() {
                return Err(ApiError::bad_request("a merge patch must be a JSON object"));
            }
            json_patch::merge(&mut object, &patch);
        }
        PatchKind::Json => {
            let operations: json_patch::Patch = serde_json::from_value(patch)
                .map_err(|e| ApiError::bad_request(format!("invalid JSON patch: {e}")))?;
            for operation in operations.0 {
                // As the API server's JSON patch does, a `test` for `null`
                // holds where the path is absent (kube-runtime's finalizer
                // helper relies on it).
                if let json_patch::PatchOperation::Test(test) = &operation {
                    if test.value.is_null() && object.pointer(test.path.as_str()).is_none() {
                        continue;
                    }
                }
                json_patch::patch(&mut object, &[operation]).map_err(|e| ApiError {
                    code: 422,
                    reason: "Invalid",
                    message: format!(
                        "the server rejected our request due to an error in our request: {e}"
                    ),
                    details: None,
                    retry_after: None,
                })?;
            }
        }
    }
    Ok(object)
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn merge_patch_should_remove_nulls_and_replace_lists() {
        let object = json!({ "a": 1, "b": { "c": 2, "d": 3 }, "l": [1, 2] });
        let patched = apply(
            PatchKind::Merge,
            object,
            json!({ "b": { "c": null }, "l": [3] }),
        )
        .unwrap();
        assert_eq!(patched, json!({ "a": 1, "b": { "d": 3 }, "l": [3] }));
    }

    #[test]
    fn json_patch_test_should_refuse_with_422() {
        let object = json!({ "metadata": { "resourceVersion": "5" } });
        let failed = json!([{ "op": "test", "path": "/metadata/resourceVersion", "value": "4" }]);
        let error = apply(PatchKind::Json, object.clone(), failed).unwrap_err();
        assert_eq!((error.code, error.reason), (422, "Invalid"));
        let held = json!([
            { "op": "test", "path": "/metadata/resourceVersion", "value": "5" },
            { "op": "add", "path": "/spec", "value": { "x": 1 } },
        ]);
        assert_eq!(
            apply(PatchKind::Json, object.clone(), held).unwrap()["spec"]["x"],
            1
        );
        let absent = json!([
            { "op": "test", "path": "/metadata/finalizers", "value": null },
            { "op": "add", "path": "/metadata/finalizers", "value": ["f"] },
        ]);
        assert_eq!(
            apply(PatchKind::Json, object, absent).unwrap()["metadata"]["finalizers"],
            json!(["f"])
        );
    }

    #[test]
    fn unknown_content_type_should_be_415() {
        let error = PatchKind::from_content_type("text/plain").unwrap_err();
        assert_eq!((error.code, error.reason), (415, "UnsupportedMediaType"));
        assert_eq!(
            PatchKind::from_content_type("application/merge-patch+json; charset=utf-8").unwrap(),
            PatchKind::Merge
        );
    }
}
