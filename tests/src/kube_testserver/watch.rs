//! Watches: a stream of JSON lines, one event each, from a resourceVersion
//! on, as the API server sends them.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use axum::body::{Body, Bytes};
use axum::http::{header, StatusCode};
use axum::response::{IntoResponse, Response};
use serde_json::{json, Value};
use tokio::sync::{mpsc, watch as signal};
use tokio::time::{sleep_until, Instant};
use tokio_stream::wrappers::ReceiverStream;
use tokio_stream::StreamExt;

use super::status::{ApiError, ApiResult, Cause};
use super::store::{EventKind, Filter, Scope};
use super::{Shared, WatchEnds};

/// How long a watch lasts when the client sets no `timeoutSeconds`
/// (the real server picks 30 to 60 minutes).
const DEFAULT_TIMEOUT: Duration = Duration::from_secs(1800);

/// What a watch request asked for.
struct Request {
    scope: Scope,
    filter: Filter,
    /// `None`: start with the current objects (as `ADDED`), then changes.
    from: Option<u64>,
    /// `sendInitialEvents`: the current objects first, then a bookmark
    /// marking their end.
    initial_events: bool,
    bookmarks: bool,
    timeout: Duration,
}

/// Starts a watch: parses the query, then streams events from a task until
/// the timeout, a fault, or the client hangs up.
pub(super) fn start(
    shared: Arc<Shared>,
    scope: Scope,
    filter: Filter,
    query: &HashMap<String, String>,
) -> ApiResult<Response> {
    check_options(query)?;
    let flag = |name: &str| matches!(query.get(name).map(String::as_str), Some("true" | "1"));
    let from = match query.get("resourceVersion").map(String::as_str) {
        None | Some("") | Some("0") => None,
        Some(text) => Some(text.parse().map_err(|_| {
            ApiError::bad_request(format!("invalid resource version {text:?}: resourceVersions are the strings this server handed out"))
        })?),
    };
    let timeout = match query.get("timeoutSeconds") {
        Some(text) => Duration::from_secs(text.parse().map_err(|_| {
            ApiError::bad_request(format!(
                "timeoutSeconds must be a whole number, not {text:?}"
            ))
        })?),
        None => DEFAULT_TIMEOUT,
    };
    let request = Request {
        scope,
        filter,
        from,
        initial_events: flag("sendInitialEvents"),
        bookmarks: flag("allowWatchBookmarks"),
        timeout,
    };
    let (lines, body) = mpsc::channel::<Bytes>(256);
    // Subscribed, and the ends so far read, before the response goes out:
    // a fault that ends watches, injected once the client has its watch,
    // ends this one (read in the task, a fault injected before it ran was
    // taken for one before the watch, and the watch never ended).
    let mut ends = shared.watch_ends.subscribe();
    let started = *ends.borrow_and_update();
    tokio::spawn(run(shared, request, (ends, started), lines));
    let body = Body::from_stream(ReceiverStream::new(body).map(Ok::<_, std::convert::Infallible>));
    Ok((
        StatusCode::OK,
        [(header::CONTENT_TYPE, "application/json")],
        body,
    )
        .into_response())
}

/// Refuses, with 422, the `resourceVersionMatch` a watch may not have, as
/// the real server's `validateWatchOptions`
/// (`staging/src/k8s.io/apimachinery/pkg/apis/meta/internalversion/validation/validation.go`):
/// `sendInitialEvents` needs `NotOlderThan`, and only it allows a match.
fn check_options(query: &HashMap<String, String>) -> ApiResult<()> {
    let field = "resourceVersionMatch";
    let matching = query
        .get(field)
        .map(String::as_str)
        .filter(|m| !m.is_empty());
    let initial_events = query.contains_key("sendInitialEvents");
    let mut causes = Vec::new();
    if initial_events && matching != Some("NotOlderThan") {
        causes.push(Cause::forbidden(
            field,
            "sendInitialEvents requires setting resourceVersionMatch to NotOlderThan",
        ));
    }
    if let Some(matching) = matching {
        if !initial_events {
            causes.push(Cause::forbidden(
                field,
                "resourceVersionMatch is forbidden for watch unless sendInitialEvents is provided",
            ));
        }
        if matching != "NotOlderThan" {
            causes.push(Cause::not_supported(
                field,
                &format!("{matching:?}"),
                &["NotOlderThan"],
            ));
        }
    }
    if causes.is_empty() {
        Ok(())
    } else {
        Err(ApiError::invalid("ListOptions", "meta.k8s.io", "", causes))
    }
}

/// Sends one event line; `false` once the client is gone.
async fn send(lines: &mpsc::Sender<Bytes>, kind: &str, object: Value) -> bool {
    let mut line = json!({ "type": kind, "object": object }).to_string();
    line.push('\n');
    lines.send(Bytes::from(line)).await.is_ok()
}

fn bookmark(scope: &Scope, revision: u64, initial_events_end: bool) -> Value {
    let mut metadata = json!({ "resourceVersion": revision.to_string() });
    if initial_events_end {
        metadata["annotations"] = json!({ "k8s.io/initial-events-end": "true" });
    }
    json!({ "kind": scope.resource.kind, "apiVersion": scope.resource.api_version(&scope.version), "metadata": metadata })
}

async fn run(
    shared: Arc<Shared>,
    request: Request,
    (mut ends, started): (signal::Receiver<WatchEnds>, WatchEnds),
    lines: mpsc::Sender<Bytes>,
) {
    let deadline = Instant::now() + request.timeout;
    let mut revisions = shared.revision.subscribe();
    let mut cursor = match request.from {
        Some(from) if !request.initial_events => from,
        _ => {
            let (objects, revision) = shared.store().snapshot(&request.scope, &request.filter);
            for object in objects {
                if !send(&lines, "ADDED", object).await {
                    return;
                }
            }
            if request.initial_events
                && !send(&lines, "BOOKMARK", bookmark(&request.scope, revision, true)).await
            {
                return;
            }
            revision
        }
    };
    let mut next_bookmark = Instant::now() + shared.bookmark_interval;
    loop {
        tokio::select! {
            () = shared.unpaused() => {}
            () = lines.closed() => return,
            () = sleep_until(deadline) => return,
        }
        revisions.borrow_and_update();
        let read = {
            let store = shared.store();
            let served = store
                .types()
                .iter()
                .any(|t| t.key == request.scope.resource.key);
            store
                .events_after(cursor, &request.scope, &request.filter)
                .map(|events| (events, store.revision(), served))
        };
        match read {
            Ok((events, revision, served)) => {
                for (kind, event) in events {
                    let name = match kind {
                        EventKind::Added => "ADDED",
                        EventKind::Modified => "MODIFIED",
                        EventKind::Deleted => "DELETED",
                    };
                    if !send(&lines, name, request.scope.present(event.object.clone())).await {
                        return;
                    }
                }
                cursor = cursor.max(revision);
                // The type's CRD is gone (its objects' deletions were just
                // sent): the real server ends such a watch.
                if !served {
                    return;
                }
            }
            Err(expired) => {
                let error = ApiError::expired(format!(
                    "too old resource version: {} ({})",
                    expired.requested, expired.oldest
                ));
                send(&lines, "ERROR", error.to_status()).await;
                return;
            }
        }
        tokio::select! {
            changed = revisions.changed() => if changed.is_err() { return },
            changed = ends.changed() => {
                let now = *ends.borrow_and_update();
                if changed.is_err() || now.closed != started.closed {
                    return;
                }
                if now.expired != started.expired {
                    let error = ApiError::expired(format!("too old resource version: {cursor} ({})", shared.store().revision()));
                    send(&lines, "ERROR", error.to_status()).await;
                    return;
                }
            }
            () = sleep_until(next_bookmark), if request.bookmarks => {
                next_bookmark = Instant::now() + shared.bookmark_interval;
                if !send(&lines, "BOOKMARK", bookmark(&request.scope, cursor, false)).await {
                    return;
                }
            }
            () = lines.closed() => return,
            () = sleep_until(deadline) => return,
        }
    }
}
