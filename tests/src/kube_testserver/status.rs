//! API errors, sent as `Status` objects with the reason and code the real API
//! server uses for the same failure.

use axum::http::StatusCode;
use serde_json::{json, Value};

/// A failed API request: what the client gets back as a `Status` object.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("{code} {reason}: {message}")]
pub struct ApiError {
    /// The HTTP status code, also the `code` of the `Status`.
    pub code: u16,
    /// The machine-readable `reason` (`NotFound`, `Conflict`, ...).
    pub reason: &'static str,
    /// What went wrong, in the words the real server uses where it has some.
    pub message: String,
    /// `details` of the `Status`: the object's name, group and kind.
    pub details: Option<Value>,
    /// Seconds a client should wait before retrying (429 and 5xx).
    pub retry_after: Option<u64>,
}

impl ApiError {
    fn new(code: u16, reason: &'static str, message: impl Into<String>) -> Self {
        Self {
            code,
            reason,
            message: message.into(),
            details: None,
            retry_after: None,
        }
    }

    fn with_details(mut self, resource: &str, group: &str, name: &str) -> Self {
        self.details = Some(json!({ "name": name, "group": group, "kind": resource }));
        self
    }

    /// 404: `<resource> "<name>" not found`.
    pub fn not_found(resource: &str, group: &str, name: &str) -> Self {
        let what = qualified(resource, group);
        Self::new(404, "NotFound", format!("{what} \"{name}\" not found"))
            .with_details(resource, group, name)
    }

    /// 404 for a path that serves nothing.
    pub fn no_route(path: &str) -> Self {
        Self::new(
            404,
            "NotFound",
            format!("the server could not find the requested resource ({path})"),
        )
    }

    /// 409 on create: the name is taken.
    pub fn already_exists(resource: &str, group: &str, name: &str) -> Self {
        let what = qualified(resource, group);
        Self::new(
            409,
            "AlreadyExists",
            format!("{what} \"{name}\" already exists"),
        )
        .with_details(resource, group, name)
    }

    /// 409 on a write whose resourceVersion (or uid) precondition is stale.
    pub fn conflict(resource: &str, group: &str, name: &str) -> Self {
        let what = qualified(resource, group);
        Self::new(
            409,
            "Conflict",
            format!(
                "Operation cannot be fulfilled on {what} \"{name}\": the object has been \
                 modified; please apply your changes to the latest version and try again"
            ),
        )
        .with_details(resource, group, name)
    }

    /// 400: the request cannot be understood.
    pub fn bad_request(message: impl Into<String>) -> Self {
        Self::new(400, "BadRequest", message)
    }

    /// 422 `Invalid`: the object (of `kind` in `group`) breaks the rules
    /// each cause names. As the real server's `NewInvalid`
    /// (`staging/src/k8s.io/apimachinery/pkg/api/errors/errors.go`): the
    /// message is `Kind.group "name" is invalid: ` and the causes (one as
    /// it is, several in brackets); `details` carries the kind (not the
    /// plural) and every cause, which `kubectl` prints.
    pub fn invalid(kind: &str, group: &str, name: &str, causes: Vec<Cause>) -> Self {
        let what = qualified(kind, group);
        let each: Vec<String> = causes
            .iter()
            .map(|c| format!("{}: {}", c.field, c.message))
            .collect();
        let all = match each.as_slice() {
            [one] => one.clone(),
            many => format!("[{}]", many.join(", ")),
        };
        let mut error = Self::new(
            422,
            "Invalid",
            format!("{what} \"{name}\" is invalid: {all}"),
        );
        let causes: Vec<Value> = causes
            .iter()
            .map(|c| json!({ "reason": c.reason, "message": c.message, "field": c.field }))
            .collect();
        error.details =
            Some(json!({ "name": name, "group": group, "kind": kind, "causes": causes }));
        error
    }

    /// 405: the verb is not served on this path.
    pub fn method_not_allowed(method: &str) -> Self {
        Self::new(
            405,
            "MethodNotAllowed",
            format!("the server does not allow this method on the requested resource ({method})"),
        )
    }

    /// 415: a patch or body type the server does not serve.
    pub fn unsupported_media_type(content_type: &str) -> Self {
        Self::new(
            415,
            "UnsupportedMediaType",
            format!(
                "the body of the request was in an unknown format ({content_type}) - accepted \
                 media types include: application/json, application/json-patch+json, \
                 application/merge-patch+json, application/apply-patch+yaml"
            ),
        )
    }

    /// 410 for a watch or a continue token older than the retained history.
    pub fn expired(message: impl Into<String>) -> Self {
        Self::new(410, "Expired", message)
    }

    /// 500: an injected fault, or what the real server answers with a 500.
    pub fn internal(message: impl Into<String>) -> Self {
        Self::new(500, "InternalError", message)
    }

    /// 429 with `Retry-After`, injected by a fault.
    pub fn too_many_requests(retry_after: u64) -> Self {
        let mut error = Self::new(
            429,
            "TooManyRequests",
            "the server has received too many requests and has asked us to try again later",
        );
        error.retry_after = Some(retry_after);
        error.details = Some(json!({ "retryAfterSeconds": retry_after }));
        error
    }

    /// 504 `Timeout` for a list at a resourceVersion the store has not
    /// reached after waiting, as the real server's
    /// `NewTooLargeResourceVersionError`
    /// (`staging/src/k8s.io/apiserver/pkg/storage/errors.go`) answers it.
    pub fn too_large_resource_version(requested: u64, current: u64) -> Self {
        let mut error = Self::new(
            504,
            "Timeout",
            format!("Timeout: Too large resource version: {requested}, current: {current}"),
        );
        error.retry_after = Some(1);
        error.details = Some(json!({
            "causes": [{ "reason": "ResourceVersionTooLarge", "message": "Too large resource version" }],
            "retryAfterSeconds": 1,
        }));
        error
    }

    /// The HTTP status code.
    pub fn status_code(&self) -> StatusCode {
        StatusCode::from_u16(self.code).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR)
    }

    /// The `Status` object sent as the body (or as a watch `ERROR` event's object).
    pub fn to_status(&self) -> Value {
        let mut status = json!({
            "kind": "Status",
            "apiVersion": "v1",
            "metadata": {},
            "status": "Failure",
            "message": self.message,
            "reason": self.reason,
            "code": self.code,
        });
        if let Some(details) = &self.details {
            status["details"] = details.clone();
        }
        status
    }
}

/// One field a 422 names: a `StatusCause` of its `Status`, worded as the
/// real server's field errors are
/// (`staging/src/k8s.io/apimachinery/pkg/util/validation/field/errors.go`).
#[derive(Debug, Clone, PartialEq)]
pub struct Cause {
    /// The cause type: `FieldValueInvalid`, `FieldValueRequired`, ...
    pub reason: &'static str,
    /// The field's path, such as `metadata.name`.
    pub field: String,
    /// What is wrong with it (the field error without its path).
    pub message: String,
}

impl Cause {
    fn new(reason: &'static str, field: &str, what: &str, detail: &str) -> Self {
        let message = if detail.is_empty() {
            what.to_owned()
        } else {
            format!("{what}: {detail}")
        };
        Self {
            reason,
            field: field.to_owned(),
            message,
        }
    }

    /// `Required value`, with `detail` if not empty.
    pub fn required(field: &str, detail: &str) -> Self {
        Self::new("FieldValueRequired", field, "Required value", detail)
    }

    /// `Invalid value: <value>: <detail>`; `value` as the server prints it
    /// (a string quoted).
    pub fn invalid(field: &str, value: &str, detail: &str) -> Self {
        Self::new(
            "FieldValueInvalid",
            field,
            &format!("Invalid value: {value}"),
            detail,
        )
    }

    /// `Forbidden: <detail>`.
    pub fn forbidden(field: &str, detail: &str) -> Self {
        Self::new("FieldValueForbidden", field, "Forbidden", detail)
    }

    /// `Unsupported value: <value>: supported values: "a", "b"`.
    pub fn not_supported(field: &str, value: &str, supported: &[&str]) -> Self {
        let supported: Vec<String> = supported.iter().map(|s| format!("{s:?}")).collect();
        Self::new(
            "FieldValueNotSupported",
            field,
            &format!("Unsupported value: {value}"),
            &format!("supported values: {}", supported.join(", ")),
        )
    }

    /// `Too long: may not be more than <limit> bytes`.
    pub fn too_long(field: &str, limit: usize) -> Self {
        Self::new(
            "FieldValueTooLong",
            field,
            &format!("Too long: may not be more than {limit} bytes"),
            "",
        )
    }
}

/// `configmaps` or `widgets.example.com` (or a kind, `Widget.example.com`),
/// as the real server names a resource in messages.
fn qualified(resource: &str, group: &str) -> String {
    if group.is_empty() {
        resource.to_owned()
    } else {
        format!("{resource}.{group}")
    }
}

/// The result of an API call.
pub type ApiResult<T> = Result<T, ApiError>;
