//! The HTTP face of the server: URLs parsed into requests on the store,
//! discovery documents, and responses as the API server shapes them.

use std::collections::HashMap;
use std::sync::Arc;

use axum::body::Bytes;
use axum::extract::{Query, State};
use axum::http::{header, HeaderMap, Method, StatusCode, Uri};
use axum::response::{IntoResponse, Response};
use axum::Router;
use serde_json::{json, Value};

use super::patch::PatchKind;
use super::resource::group_version;
use super::selector::{FieldSelector, LabelSelector};
use super::status::{ApiError, ApiResult};
use super::store::{Deletion, Filter, ListAt, Scope, Subresource};
use super::{watch, Fault, Shared, FAULTS_PATH};

/// How long a list at a resourceVersion the store has not reached waits for
/// it before 504 (the watch cache's `blockTimeout`,
/// `staging/src/k8s.io/apiserver/pkg/storage/cacher/watch_cache.go`).
const TOO_LARGE_WAIT: std::time::Duration = std::time::Duration::from_secs(3);

/// The version this server reports, and the API it follows.
pub const KUBERNETES_VERSION: (&str, &str) = ("1", "33");

/// Every path goes to one handler, which parses it as the API server would.
pub(super) fn router(shared: Arc<Shared>) -> Router {
    Router::new().fallback(handle).with_state(shared)
}

async fn handle(
    State(shared): State<Arc<Shared>>,
    method: Method,
    uri: Uri,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    if uri.path() == FAULTS_PATH {
        return match control(&shared, &method, &body) {
            Ok(value) => respond(value, StatusCode::OK),
            Err(error) => error_response(&error),
        };
    }
    shared.unpaused().await;
    let (delay, injected_error) = {
        let mut injected = shared.injected();
        (injected.delay, injected.take_error())
    };
    if !delay.is_zero() {
        tokio::time::sleep(delay).await;
    }
    if let Some(error) = injected_error {
        return error_response(&error);
    }
    match serve(&shared, &method, &uri, &headers, body).await {
        Ok(response) => response,
        Err(error) => error_response(&error),
    }
}

fn control(shared: &Shared, method: &Method, body: &[u8]) -> ApiResult<Value> {
    if method != Method::POST {
        return Err(ApiError::method_not_allowed(method.as_str()));
    }
    let fault: Fault = serde_json::from_slice(body).map_err(|e| {
        ApiError::bad_request(format!(
            "not a fault: {e}; see the Fault type for the JSON it takes"
        ))
    })?;
    shared.inject(fault)
}

/// What a path addresses.
enum Route {
    Version,
    ApiVersions,
    GroupList,
    Group(String),
    ResourceList {
        group: String,
        version: String,
    },
    Collection {
        scope: Scope,
    },
    Object {
        scope: Scope,
        name: String,
        subresource: Subresource,
    },
}

fn route(shared: &Shared, path: &str) -> ApiResult<Route> {
    let segments: Vec<&str> = path
        .trim_matches('/')
        .split('/')
        .filter(|s| !s.is_empty())
        .collect();
    let (group, version, rest) = match segments.as_slice() {
        ["version"] => return Ok(Route::Version),
        ["api"] => return Ok(Route::ApiVersions),
        ["apis"] => return Ok(Route::GroupList),
        ["apis", group] => return Ok(Route::Group((*group).to_owned())),
        ["api", version, rest @ ..] => ("", *version, rest),
        ["apis", group, version, rest @ ..] => (*group, *version, rest),
        _ => return Err(ApiError::no_route(path)),
    };
    if rest.is_empty() {
        let served = shared
            .store()
            .types()
            .iter()
            .any(|t| t.key.group == group && t.serves(version));
        return if served {
            Ok(Route::ResourceList {
                group: group.to_owned(),
                version: version.to_owned(),
            })
        } else {
            Err(ApiError::no_route(path))
        };
    }
    let (namespace, rest) = match rest {
        ["namespaces", namespace, plural, tail @ ..]
            if !(*plural == "status" && tail.is_empty()) =>
        {
            (Some((*namespace).to_owned()), &rest[2..])
        }
        _ => (None, rest),
    };
    let resource = shared.store().resolve(group, version, rest[0])?;
    if namespace.is_some() && !resource.namespaced {
        return Err(ApiError::no_route(path));
    }
    let scope = Scope {
        resource,
        version: version.to_owned(),
        namespace,
    };
    match rest {
        [_] => Ok(Route::Collection { scope }),
        [_, name] | [_, name, "status"]
            if scope.namespace.is_some() || !scope.resource.namespaced =>
        {
            let subresource = if rest.len() == 3 {
                if !scope.resource.has_status(&scope.version) {
                    return Err(ApiError::no_route(path));
                }
                Subresource::Status
            } else {
                Subresource::Main
            };
            Ok(Route::Object {
                scope,
                name: (*name).to_owned(),
                subresource,
            })
        }
        _ => Err(ApiError::no_route(path)),
    }
}

/// One API request's parts, as the handlers of collections and objects need them.
struct Call<'a> {
    shared: &'a Arc<Shared>,
    method: &'a Method,
    query: HashMap<String, String>,
    headers: &'a HeaderMap,
    body: Bytes,
}

impl Call<'_> {
    /// The body as JSON, if its `Content-Type` says it is.
    fn json(&self) -> ApiResult<Value> {
        parse_json(&self.body, self.headers)
    }

    /// Whether the request asks for `dryRun=All`.
    fn dry_run(&self) -> ApiResult<bool> {
        dry_run(&self.query)
    }
}

async fn serve(
    shared: &Arc<Shared>,
    method: &Method,
    uri: &Uri,
    headers: &HeaderMap,
    body: Bytes,
) -> ApiResult<Response> {
    let query: HashMap<String, String> = Query::try_from_uri(uri)
        .map(|Query(q)| q)
        .unwrap_or_default();
    let call = Call {
        shared,
        method,
        query,
        headers,
        body,
    };
    let get_only = |value: Value| {
        if method == Method::GET {
            Ok(respond(value, StatusCode::OK))
        } else {
            Err(ApiError::method_not_allowed(method.as_str()))
        }
    };
    match route(shared, uri.path())? {
        Route::Version => get_only(version()),
        Route::ApiVersions => get_only(json!({
            "kind": "APIVersions",
            "versions": ["v1"],
            "serverAddressByClientCIDRs": [{ "clientCIDR": "0.0.0.0/0", "serverAddress": shared.address.to_string() }],
        })),
        Route::GroupList => get_only(group_list(shared, None)),
        Route::Group(group) => {
            let groups = group_list(shared, Some(&group));
            match groups["groups"].get(0) {
                Some(found) => {
                    let mut found = found.clone();
                    found["kind"] = json!("APIGroup");
                    found["apiVersion"] = json!("v1");
                    get_only(found)
                }
                None => Err(ApiError::no_route(uri.path())),
            }
        }
        Route::ResourceList { group, version } => {
            let store = shared.store();
            let resources: Vec<Value> = store
                .types()
                .iter()
                .filter(|t| t.key.group == group && t.serves(&version))
                .flat_map(|t| t.discovery(&version))
                .collect();
            get_only(json!({
                "kind": "APIResourceList",
                "apiVersion": "v1",
                "groupVersion": group_version(&group, &version),
                "resources": resources,
            }))
        }
        Route::Collection { scope } => collection(&call, scope).await,
        Route::Object {
            scope,
            name,
            subresource,
        } => object(&call, scope, &name, subresource),
    }
}

/// Waits until the store has reached `revision`, at most [`TOO_LARGE_WAIT`];
/// then 504, as the real server answers a list from the future.
async fn reach(shared: &Shared, revision: u64) -> ApiResult<()> {
    let mut revisions = shared.revision.subscribe();
    let reached = tokio::time::timeout(TOO_LARGE_WAIT, revisions.wait_for(|&now| now >= revision))
        .await
        .is_ok_and(|waited| waited.is_ok());
    if reached {
        Ok(())
    } else {
        Err(ApiError::too_large_resource_version(
            revision,
            shared.store().revision(),
        ))
    }
}

/// Whether a write request asks for `dryRun=All`.
fn dry_run(query: &HashMap<String, String>) -> ApiResult<bool> {
    match query.get("dryRun").map(String::as_str) {
        None | Some("") => Ok(false),
        Some("All") => Ok(true),
        Some(other) => Err(ApiError::bad_request(format!(
            "invalid dry run value {other:?}: the only accepted value is \"All\""
        ))),
    }
}

async fn collection(call: &Call<'_>, scope: Scope) -> ApiResult<Response> {
    let query = &call.query;
    match *call.method {
        Method::GET => {
            let selector = |name: &str| query.get(name).map_or("", String::as_str);
            let filter = Filter {
                labels: LabelSelector::parse(selector("labelSelector"))?,
                fields: FieldSelector::parse(selector("fieldSelector"))?,
            };
            let matching = query.get("resourceVersionMatch").map(String::as_str);
            if matches!(query.get("watch").map(String::as_str), Some("true" | "1")) {
                return watch::start(Arc::clone(call.shared), scope, filter, query);
            }
            let limit = match query.get("limit") {
                Some(limit) => Some(limit.parse().map_err(|_| {
                    ApiError::bad_request(format!("limit must be a number, not {limit:?}"))
                })?),
                None => None,
            };
            let continue_token = query.get("continue").map(String::as_str);
            let at = ListAt::parse(
                query.get("resourceVersion").map(String::as_str),
                matching,
                continue_token,
            )?;
            if let Some(minimum) = at.minimum() {
                reach(call.shared, minimum).await?;
            }
            let list = call
                .shared
                .store()
                .list(&scope, &filter, at, limit, continue_token)?;
            Ok(respond(list, StatusCode::OK))
        }
        Method::POST if scope.namespace.is_some() || !scope.resource.namespaced => {
            let object = call.json()?;
            let created = call
                .shared
                .write_unless_dry(call.dry_run()?, |store| store.create(&scope, object))?;
            Ok(respond(created, StatusCode::CREATED))
        }
        _ => Err(ApiError::method_not_allowed(call.method.as_str())),
    }
}

fn object(
    call: &Call<'_>,
    scope: Scope,
    name: &str,
    subresource: Subresource,
) -> ApiResult<Response> {
    let shared = call.shared;
    let (object, code) = match *call.method {
        Method::GET => (shared.store().get(&scope, name)?, StatusCode::OK),
        Method::PUT => {
            let object = call.json()?;
            let updated = shared.write_unless_dry(call.dry_run()?, |store| {
                store.update(&scope, name, object, subresource)
            })?;
            (updated, StatusCode::OK)
        }
        Method::PATCH => {
            let content_type = call
                .headers
                .get(header::CONTENT_TYPE)
                .and_then(|v| v.to_str().ok())
                .unwrap_or("");
            let kind = PatchKind::from_content_type(content_type)?;
            if kind == PatchKind::Strategic && scope.resource.custom {
                return Err(ApiError::unsupported_media_type(content_type));
            }
            if kind == PatchKind::Apply
                && call.query.get("fieldManager").is_none_or(String::is_empty)
            {
                return Err(ApiError::bad_request(
                    "PatchOptions.meta.k8s.io \"\" is invalid: fieldManager: Required value: is required for apply patch",
                ));
            }
            let patch = serde_json::from_slice(&call.body).map_err(|e| {
                ApiError::bad_request(format!(
                    "the patch body is not JSON ({e}); this server reads apply configurations written as JSON only"
                ))
            })?;
            let (patched, created) = shared.write_unless_dry(call.dry_run()?, |store| {
                store.patch(&scope, name, kind, patch, subresource)
            })?;
            (
                patched,
                if created {
                    StatusCode::CREATED
                } else {
                    StatusCode::OK
                },
            )
        }
        Method::DELETE if subresource == Subresource::Main => {
            let options = if call.body.is_empty() {
                json!({})
            } else {
                call.json()?
            };
            // kube-rs and client-go send a delete's dryRun in its DeleteOptions.
            let dry_run = call.dry_run()?
                || options["dryRun"]
                    .as_array()
                    .is_some_and(|d| d.contains(&json!("All")));
            match shared.write_unless_dry(dry_run, |store| store.delete(&scope, name, &options))? {
                Deletion::Pending(object) => (object, StatusCode::OK),
                Deletion::Deleted(object) if scope.resource.custom => (object, StatusCode::OK),
                Deletion::Deleted(object) => (deleted_status(&scope, &object), StatusCode::OK),
            }
        }
        _ => return Err(ApiError::method_not_allowed(call.method.as_str())),
    };
    Ok(respond(object, code))
}

/// What the real server answers for an immediate delete of a built-in object.
fn deleted_status(scope: &Scope, object: &Value) -> Value {
    json!({
        "kind": "Status",
        "apiVersion": "v1",
        "metadata": {},
        "status": "Success",
        "details": {
            "name": object["metadata"]["name"],
            "group": scope.resource.key.group,
            "kind": scope.resource.key.plural,
            "uid": object["metadata"]["uid"],
        },
    })
}

fn parse_json(body: &[u8], headers: &HeaderMap) -> ApiResult<Value> {
    let content_type = headers
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .unwrap_or("application/json");
    let media = content_type.split(';').next().unwrap_or_default().trim();
    if !matches!(media, "application/json" | "*/*" | "") {
        return Err(ApiError::unsupported_media_type(media));
    }
    serde_json::from_slice(body)
        .map_err(|e| ApiError::bad_request(format!("the request body is not valid JSON: {e}")))
}

fn version() -> Value {
    let (major, minor) = KUBERNETES_VERSION;
    json!({
        "major": major,
        "minor": minor,
        "gitVersion": format!("v{major}.{minor}.0-steadfast-testserver"),
        "gitCommit": "",
        "gitTreeState": "clean",
        "buildDate": "2026-01-01T00:00:00Z",
        "goVersion": "",
        "compiler": "rustc",
        "platform": format!("{}/{}", std::env::consts::OS, std::env::consts::ARCH),
    })
}

/// The `APIGroupList` of every named group (or of `only` that one).
fn group_list(shared: &Shared, only: Option<&str>) -> Value {
    let store = shared.store();
    let mut groups: Vec<(String, Vec<String>)> = Vec::new();
    for t in store.types().iter().filter(|t| !t.key.group.is_empty()) {
        if only.is_some_and(|only| only != t.key.group) {
            continue;
        }
        let versions: Vec<String> = t.versions.iter().map(|v| v.name.clone()).collect();
        match groups.iter_mut().find(|(group, _)| *group == t.key.group) {
            Some((_, known)) => {
                for version in versions {
                    if !known.contains(&version) {
                        known.push(version);
                    }
                }
            }
            None => groups.push((t.key.group.clone(), versions)),
        }
    }
    let groups: Vec<Value> = groups
        .into_iter()
        .map(|(group, versions)| {
            let entries: Vec<Value> = versions
                .iter()
                .map(|v| json!({ "groupVersion": group_version(&group, v), "version": v }))
                .collect();
            json!({ "name": group, "versions": entries, "preferredVersion": entries[0] })
        })
        .collect();
    json!({ "kind": "APIGroupList", "apiVersion": "v1", "groups": groups })
}

fn respond(value: Value, code: StatusCode) -> Response {
    (
        code,
        [(header::CONTENT_TYPE, "application/json")],
        value.to_string(),
    )
        .into_response()
}

/// An error as the API server sends it: a `Status` body, and `Retry-After`
/// where the error has one.
pub(super) fn error_response(error: &ApiError) -> Response {
    let mut response = (
        error.status_code(),
        [(header::CONTENT_TYPE, "application/json")],
        error.to_status().to_string(),
    )
        .into_response();
    if let Some(seconds) = error.retry_after {
        response
            .headers_mut()
            .insert(header::RETRY_AFTER, seconds.into());
    }
    response
}
