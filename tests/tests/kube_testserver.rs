//! Conformance of the Kubernetes API test server, with real clients: kube-rs
//! (`Api`, `watcher`, `reflector`, `Controller`, `finalizer`) and `kubectl`.
//!
//! With `STEADFAST_KUBE_TESTS=cluster` and a kubeconfig, the same tests run
//! against a real cluster (each in a namespace of its own), so that where the
//! test server and the real API server differ, a test shows it; the cases
//! that inject faults, or depend on the test server's settings (a one-second
//! bookmark interval, a short history), are skipped there with a message.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use futures::{StreamExt, TryStreamExt};
use k8s_openapi::api::core::v1::ConfigMap;
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kube::api::{
    Api, DeleteParams, ListParams, Patch, PatchParams, PostParams, WatchEvent, WatchParams,
};
use kube::runtime::controller::{Action, Controller};
use kube::runtime::{finalizer, reflector, watcher};
use kube::{CustomResource, Resource, ResourceExt};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::{json, Value};
use steadfast_tests::kube_target::KubeTarget;
use steadfast_tests::kube_testserver::{Fault, ServerConfig, TestServer, FAULTS_PATH};
use tokio::io::{AsyncReadExt, AsyncWriteExt};

/// The custom resource of these tests.
#[derive(CustomResource, Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[kube(
    group = "tests.steadfast.dev",
    version = "v1",
    kind = "Widget",
    namespaced,
    status = "WidgetStatus",
    shortname = "wd"
)]
pub struct WidgetSpec {
    /// Any number a test moves.
    pub replicas: i32,
}

/// What the test controllers write back.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct WidgetStatus {
    /// The replicas a controller saw.
    pub observed: Option<i32>,
}

/// The test controllers' context: the API and what the test reads back.
type ConflictContext = (Api<Widget>, Arc<Mutex<u32>>);
/// The finalizer test's context: the API and the names cleaned up.
type CleanupContext = (Api<Widget>, Arc<Mutex<Vec<String>>>);

/// Where a test runs: a fresh test server, or the configured cluster.
type Harness = KubeTarget;

/// The APIs these tests use, in the test's namespace.
trait Apis {
    fn configmaps(&self) -> Api<ConfigMap>;
    async fn widgets(&self) -> Api<Widget>;
}

impl Apis for KubeTarget {
    fn configmaps(&self) -> Api<ConfigMap> {
        Api::namespaced(self.client.clone(), &self.namespace)
    }

    async fn widgets(&self) -> Api<Widget> {
        self.install::<Widget>().await
    }
}

fn configmap(name: &str, labels: &[(&str, &str)], data: &[(&str, &str)]) -> ConfigMap {
    serde_json::from_value(json!({
        "metadata": { "name": name, "labels": labels.iter().cloned().collect::<BTreeMap<_, _>>() },
        "data": data.iter().cloned().collect::<BTreeMap<_, _>>(),
    }))
    .unwrap()
}

fn widget(name: &str, replicas: i32) -> Widget {
    Widget::new(name, WidgetSpec { replicas })
}

/// The `Status` of a refused call.
fn refusal<T: std::fmt::Debug>(result: kube::Result<T>) -> (u16, String) {
    match result {
        Err(kube::Error::Api(status)) => (status.code, status.reason),
        other => panic!("expected the API to refuse, got {other:?}"),
    }
}

fn rv<K: Resource>(object: &K) -> String {
    object
        .meta()
        .resource_version
        .clone()
        .expect("a stored object has a resourceVersion")
}

/// Polls `check` every 50 ms until it holds or 20 s pass.
async fn eventually<F, Fut>(what: &str, mut check: F)
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = bool>,
{
    let deadline = Instant::now() + Duration::from_secs(20);
    while !check().await {
        assert!(Instant::now() < deadline, "timed out waiting until {what}");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// The resourceVersion of a list made now: a watch from it sees what follows.
async fn list_version<K>(api: &Api<K>) -> String
where
    K: Resource + Clone + serde::de::DeserializeOwned + std::fmt::Debug,
{
    let list = api.list(&ListParams::default()).await.unwrap();
    list.metadata
        .resource_version
        .expect("a list has a resourceVersion")
}

/// A watch event as its type and object; `None` for a bookmark.
///
/// # Panics
///
/// On an `ERROR` event.
fn change<K>(event: WatchEvent<K>) -> Option<(&'static str, K)> {
    match event {
        WatchEvent::Added(object) => Some(("ADDED", object)),
        WatchEvent::Modified(object) => Some(("MODIFIED", object)),
        WatchEvent::Deleted(object) => Some(("DELETED", object)),
        WatchEvent::Bookmark(_) => None,
        WatchEvent::Error(status) => panic!("unexpected ERROR event: {status:?}"),
    }
}

/// The next `count` changes a watch reports, bookmarks skipped.
async fn next_changes<K>(
    events: &mut (impl futures::Stream<Item = kube::Result<WatchEvent<K>>> + Unpin),
    count: usize,
) -> Vec<(&'static str, K)> {
    let mut changes = Vec::new();
    while changes.len() < count {
        let event = tokio::time::timeout(Duration::from_secs(10), events.next())
            .await
            .expect("the watch reports a change within 10 s")
            .expect("the watch is still open")
            .expect("the watch stream does not fail");
        changes.extend(change(event));
    }
    changes
}

/// One HTTP/1.1 request on a fresh connection, as any out-of-process client
/// would send it: the status code, the headers (lower-case names) and the body.
async fn raw_http(
    server: &TestServer,
    method: &str,
    path: &str,
    body: &str,
) -> (u16, BTreeMap<String, String>, String) {
    let mut stream = tokio::net::TcpStream::connect(server.address())
        .await
        .unwrap();
    let request = format!(
        "{method} {path} HTTP/1.1\r\nHost: {}\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
        server.address(),
        body.len()
    );
    stream.write_all(request.as_bytes()).await.unwrap();
    let mut response = String::new();
    stream.read_to_string(&mut response).await.unwrap();
    let (head, body) = response.split_once("\r\n\r\n").expect("an HTTP response");
    let mut lines = head.lines();
    let code = lines
        .next()
        .unwrap()
        .split(' ')
        .nth(1)
        .unwrap()
        .parse()
        .unwrap();
    let headers = lines
        .filter_map(|l| l.split_once(':'))
        .map(|(k, v)| (k.trim().to_ascii_lowercase(), v.trim().to_owned()))
        .collect();
    (code, headers, body.to_owned())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn discovery_should_list_built_in_types_and_registered_crds() {
    let h = Harness::start().await;
    let version = h.client.apiserver_version().await.unwrap();
    assert_eq!(version.major, "1");
    h.widgets().await;
    let discovery = kube::discovery::Discovery::new(h.client.clone())
        .run()
        .await
        .unwrap();
    let core = discovery.get("").expect("the core group");
    let (configmaps, caps) = core
        .recommended_resources()
        .into_iter()
        .find(|(r, _)| r.plural == "configmaps")
        .expect("configmaps are served");
    assert_eq!(
        (configmaps.kind.as_str(), caps.scope),
        ("ConfigMap", kube::discovery::Scope::Namespaced)
    );
    let group = discovery
        .get("tests.steadfast.dev")
        .expect("the CRD's group is served once registered");
    let (widgets, caps) = group
        .recommended_resources()
        .into_iter()
        .find(|(r, _)| r.plural == "widgets")
        .unwrap();
    assert_eq!(widgets.kind, "Widget");
    assert!(
        caps.subresources.iter().any(|(s, _)| s.plural == "status"),
        "the status subresource is discovered"
    );
    h.finish().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn crud_should_follow_optimistic_concurrency() {
    let h = Harness::start().await;
    let api = h.configmaps();
    let created = api
        .create(&PostParams::default(), &configmap("a", &[], &[("k", "1")]))
        .await
        .unwrap();
    assert!(created.metadata.uid.is_some() && created.metadata.creation_timestamp.is_some());
    assert_eq!(
        refusal(
            api.create(&PostParams::default(), &configmap("a", &[], &[]))
                .await
        ),
        (409, "AlreadyExists".into())
    );
    assert_eq!(refusal(api.get("missing").await), (404, "NotFound".into()));

    let mut changed = created.clone();
    changed.data = Some([("k".to_owned(), "2".to_owned())].into());
    let replaced = api
        .replace("a", &PostParams::default(), &changed)
        .await
        .unwrap();
    assert_ne!(
        rv(&replaced),
        rv(&created),
        "a write takes a new resourceVersion"
    );
    let stale = api.replace("a", &PostParams::default(), &changed).await;
    assert_eq!(
        refusal(stale),
        (409, "Conflict".into()),
        "a stale resourceVersion is refused"
    );
    let unchanged = api
        .replace("a", &PostParams::default(), &replaced)
        .await
        .unwrap();
    assert_eq!(
        rv(&unchanged),
        rv(&replaced),
        "a write that changes nothing takes no resourceVersion"
    );

    let deleted = api.delete("a", &DeleteParams::default()).await.unwrap();
    assert!(
        deleted.is_right(),
        "deleting a built-in object at once answers with a Status"
    );
    assert_eq!(refusal(api.get("a").await).0, 404);
    h.finish().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn patches_should_apply_with_their_preconditions() {
    let h = Harness::start().await;
    let api = h.widgets().await;
    let w = api
        .create(&PostParams::default(), &widget("w", 1))
        .await
        .unwrap();
    assert_eq!(w.metadata.generation, Some(1));
    let pp = PatchParams::default();

    let labelled = api
        .patch(
            "w",
            &pp,
            &Patch::Merge(json!({ "metadata": { "labels": { "a": "b" } } })),
        )
        .await
        .unwrap();
    assert_eq!(
        labelled.metadata.generation,
        Some(1),
        "metadata changes leave the generation"
    );
    let scaled = api
        .patch(
            "w",
            &pp,
            &Patch::Merge(json!({ "spec": { "replicas": 2 } })),
        )
        .await
        .unwrap();
    assert_eq!(
        scaled.metadata.generation,
        Some(2),
        "spec changes bump the generation"
    );

    let stale = json!({ "metadata": { "resourceVersion": rv(&w) }, "spec": { "replicas": 3 } });
    assert_eq!(
        refusal(api.patch("w", &pp, &Patch::Merge(stale)).await),
        (409, "Conflict".into())
    );
    let current =
        json!({ "metadata": { "resourceVersion": rv(&scaled) }, "spec": { "replicas": 3 } });
    assert_eq!(
        api.patch("w", &pp, &Patch::Merge(current))
            .await
            .unwrap()
            .spec
            .replicas,
        3
    );

    let failing: json_patch::Patch = serde_json::from_value(json!([
        { "op": "test", "path": "/spec/replicas", "value": 1 },
        { "op": "replace", "path": "/spec/replicas", "value": 9 },
    ]))
    .unwrap();
    assert_eq!(
        refusal(api.patch("w", &pp, &Patch::<()>::Json(failing)).await),
        (422, "Invalid".into())
    );
    let holding: json_patch::Patch = serde_json::from_value(json!([
        { "op": "test", "path": "/spec/replicas", "value": 3 },
        { "op": "replace", "path": "/spec/replicas", "value": 4 },
    ]))
    .unwrap();
    assert_eq!(
        api.patch("w", &pp, &Patch::<()>::Json(holding))
            .await
            .unwrap()
            .spec
            .replicas,
        4
    );

    let apply = PatchParams::apply("steadfast-tests").force();
    let applied = json!({ "apiVersion": "tests.steadfast.dev/v1", "kind": "Widget", "metadata": { "name": "v" }, "spec": { "replicas": 5 } });
    let created = api
        .patch("v", &apply, &Patch::Apply(&applied))
        .await
        .unwrap();
    assert_eq!(created.spec.replicas, 5, "apply creates a missing object");
    let mut reapplied = applied.clone();
    reapplied["spec"]["replicas"] = json!(6);
    assert_eq!(
        api.patch("v", &apply, &Patch::Apply(&reapplied))
            .await
            .unwrap()
            .spec
            .replicas,
        6
    );

    let strategic = api
        .patch(
            "w",
            &pp,
            &Patch::Strategic(json!({ "spec": { "replicas": 1 } })),
        )
        .await;
    assert_eq!(
        refusal(strategic).0,
        415,
        "custom resources take no strategic merge patch"
    );
    h.finish().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn status_should_be_isolated_both_ways() {
    let h = Harness::start().await;
    let api = h.widgets().await;
    let mut with_status = widget("s", 1);
    with_status.status = Some(WidgetStatus { observed: Some(7) });
    let created = api
        .create(&PostParams::default(), &with_status)
        .await
        .unwrap();
    assert_eq!(created.status, None, "a create does not set status");

    let pp = PatchParams::default();
    let main = api
        .patch(
            "s",
            &pp,
            &Patch::Merge(json!({ "spec": { "replicas": 2 }, "status": { "observed": 5 } })),
        )
        .await
        .unwrap();
    assert_eq!(
        (main.spec.replicas, main.status.clone()),
        (2, None),
        "the main resource ignores status"
    );
    let status = api
        .patch_status(
            "s",
            &pp,
            &Patch::Merge(json!({ "spec": { "replicas": 9 }, "status": { "observed": 2 } })),
        )
        .await
        .unwrap();
    assert_eq!(
        status.spec.replicas, 2,
        "the status subresource ignores spec"
    );
    assert_eq!(status.status, Some(WidgetStatus { observed: Some(2) }));
    assert_eq!(
        status.metadata.generation, main.metadata.generation,
        "status writes leave the generation"
    );
    if let Some(server) = h.server("a foreign status writer") {
        let foreign = Fault::ForeignWrite {
            resource: "widgets.tests.steadfast.dev".into(),
            namespace: Some(h.namespace.clone()),
            name: "s".into(),
            labels: None,
            status: Some(json!({ "observed": 11 })),
        };
        server.inject(foreign).unwrap();
        let after = api.get("s").await.unwrap();
        assert_eq!(after.status, Some(WidgetStatus { observed: Some(11) }));
        assert_ne!(
            rv(&after),
            rv(&status),
            "a foreign write takes a resourceVersion"
        );
        let stale =
            json!({ "metadata": { "resourceVersion": rv(&status) }, "status": { "observed": 3 } });
        let refused = api.patch_status("s", &pp, &Patch::Merge(stale)).await;
        assert_eq!(
            refusal(refused).0,
            409,
            "our status write on the old version conflicts"
        );
    }
    h.finish().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn list_should_select_and_page() {
    let h = Harness::start().await;
    let api = h.configmaps();
    for i in 0..5 {
        let tier = if i % 2 == 0 { "a" } else { "b" };
        api.create(
            &PostParams::default(),
            &configmap(&format!("cm-{i}"), &[("tier", tier), ("set", "page")], &[]),
        )
        .await
        .unwrap();
    }
    let names = |list: kube::core::ObjectList<ConfigMap>| {
        list.items.iter().map(|c| c.name_any()).collect::<Vec<_>>()
    };
    let a = api
        .list(&ListParams::default().labels("tier=a"))
        .await
        .unwrap();
    assert_eq!(names(a), ["cm-0", "cm-2", "cm-4"]);
    let b = api
        .list(&ListParams::default().labels("set=page,tier notin (a)"))
        .await
        .unwrap();
    assert_eq!(names(b), ["cm-1", "cm-3"]);
    let one = api
        .list(&ListParams::default().fields("metadata.name=cm-3"))
        .await
        .unwrap();
    assert_eq!(names(one), ["cm-3"]);

    let mut seen = Vec::new();
    let mut token: Option<String> = None;
    let mut pages = 0;
    loop {
        let mut params = ListParams::default().labels("set=page").limit(2);
        if let Some(token) = &token {
            params = params.continue_token(token);
        }
        let page = api.list(&params).await.unwrap();
        pages += 1;
        assert!(page.items.len() <= 2);
        token = page.metadata.continue_.clone().filter(|t| !t.is_empty());
        seen.extend(names(page));
        if token.is_none() {
            break;
        }
    }
    assert_eq!((pages, seen.len()), (3, 5));
    assert_eq!(
        seen.iter().collect::<BTreeSet<_>>().len(),
        5,
        "no object is listed twice"
    );
    h.finish().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn deletion_should_wait_for_the_last_finalizer() {
    let h = Harness::start().await;
    let api = h.widgets().await;
    let from = list_version(&api).await;
    let mut events = api
        .watch(&WatchParams::default().disable_bookmarks(), &from)
        .await
        .unwrap()
        .boxed();

    let mut held = widget("f", 1);
    held.metadata.finalizers = Some(vec!["tests.steadfast.dev/hold".into()]);
    api.create(&PostParams::default(), &held).await.unwrap();
    let pending = api
        .delete("f", &DeleteParams::default())
        .await
        .unwrap()
        .left()
        .expect("the object stays while finalizers remain");
    assert!(pending.metadata.deletion_timestamp.is_some());
    assert!(api
        .get("f")
        .await
        .unwrap()
        .metadata
        .deletion_timestamp
        .is_some());

    let more = Patch::Merge(
        json!({ "metadata": { "finalizers": ["tests.steadfast.dev/hold", "tests.steadfast.dev/late"] } }),
    );
    assert_eq!(
        refusal(api.patch("f", &PatchParams::default(), &more).await),
        (422, "Invalid".into())
    );
    api.patch(
        "f",
        &PatchParams::default(),
        &Patch::Merge(json!({ "metadata": { "finalizers": null } })),
    )
    .await
    .unwrap();
    assert_eq!(
        refusal(api.get("f").await).0,
        404,
        "the last finalizer's removal deletes the object"
    );

    let kinds: Vec<_> = next_changes(&mut events, 3)
        .await
        .into_iter()
        .map(|(kind, w)| (kind, w.metadata.deletion_timestamp.is_some()))
        .collect();
    assert_eq!(
        kinds,
        [("ADDED", false), ("MODIFIED", true), ("DELETED", true)]
    );
    h.finish().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn watch_should_stream_in_order_from_a_resource_version_until_its_timeout() {
    let h = Harness::start().await;
    let api = h.configmaps();
    let from = list_version(&api).await;
    api.create(&PostParams::default(), &configmap("w", &[], &[("k", "1")]))
        .await
        .unwrap();
    api.patch(
        "w",
        &PatchParams::default(),
        &Patch::Merge(json!({ "data": { "k": "2" } })),
    )
    .await
    .unwrap();
    api.delete("w", &DeleteParams::default()).await.unwrap();

    let started = Instant::now();
    let stream = api
        .watch(&WatchParams::default().timeout(2), &from)
        .await
        .unwrap();
    let events: Vec<WatchEvent<ConfigMap>> =
        tokio::time::timeout(Duration::from_secs(20), stream.try_collect())
            .await
            .expect("the watch ends at its timeoutSeconds")
            .unwrap();
    assert!(
        started.elapsed() >= Duration::from_secs(2),
        "the watch lasted its timeoutSeconds"
    );
    let total = events.len();
    let changes: Vec<_> = events.into_iter().filter_map(change).collect();
    let bookmarks = total - changes.len();
    let kinds: Vec<_> = changes.iter().map(|(kind, _)| *kind).collect();
    let versions: Vec<u64> = changes
        .iter()
        .map(|(_, c)| rv(c).parse().unwrap())
        .collect();
    assert_eq!(kinds, ["ADDED", "MODIFIED", "DELETED"]);
    assert!(
        versions.windows(2).all(|w| w[0] < w[1]),
        "events come in resourceVersion order: {versions:?}"
    );
    if h.server("bookmarks within two seconds").is_some() {
        assert!(bookmarks >= 1, "a watch that allows bookmarks gets them");
    }
    h.finish().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn watch_from_before_the_history_should_get_410_gone() {
    let config = ServerConfig {
        history: 4,
        ..ServerConfig::default()
    };
    let h = Harness::start_with(config).await;
    if h.server("a watch past a four-event history").is_none() {
        return h.finish().await;
    }
    let api = h.configmaps();
    let first = api
        .create(&PostParams::default(), &configmap("h", &[], &[]))
        .await
        .unwrap();
    for i in 0..6 {
        api.patch(
            "h",
            &PatchParams::default(),
            &Patch::Merge(json!({ "data": { "i": i.to_string() } })),
        )
        .await
        .unwrap();
    }
    let mut stream = api
        .watch(&WatchParams::default(), &rv(&first))
        .await
        .unwrap()
        .boxed();
    match stream.next().await {
        Some(Ok(WatchEvent::Error(status))) => {
            assert_eq!((status.code, status.reason.as_str()), (410, "Expired"))
        }
        other => panic!("expected an ERROR event with 410 Expired, got {other:?}"),
    }
    assert!(
        stream.next().await.is_none(),
        "the watch ends after its 410"
    );
    h.finish().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn watcher_should_survive_an_injected_410_with_a_relist_and_no_lost_event() {
    let h = Harness::start().await;
    let Some(server) = h.server("an injected 410") else {
        return h.finish().await;
    };
    let api = h.configmaps();
    for i in 0..3 {
        api.create(
            &PostParams::default(),
            &configmap(&format!("r-{i}"), &[], &[("v", "0")]),
        )
        .await
        .unwrap();
    }
    let (reader, writer) = reflector::store::<ConfigMap>();
    let relists = Arc::new(Mutex::new(0));
    let counted = Arc::clone(&relists);
    let stream =
        reflector(writer, watcher(api.clone(), watcher::Config::default())).inspect(move |event| {
            if matches!(event, Ok(watcher::Event::Init)) {
                *counted.lock().unwrap() += 1;
            }
        });
    let driver = tokio::spawn(stream.for_each(|_| async {}));
    let view = |reader: &reflector::Store<ConfigMap>| -> BTreeMap<String, String> {
        reader
            .state()
            .iter()
            .map(|c| (c.name_any(), rv(c.as_ref())))
            .collect()
    };
    let truth = || async {
        api.list(&ListParams::default())
            .await
            .unwrap()
            .items
            .iter()
            .map(|c| (c.name_any(), rv(c)))
            .collect::<BTreeMap<_, _>>()
    };
    eventually("the reflector holds the first three", || async {
        view(&reader).len() == 4 - 1
    })
    .await;

    server.inject(Fault::ExpireWatches).unwrap();
    // Written while the watcher backs off and relists: none of these may be lost.
    api.create(&PostParams::default(), &configmap("r-3", &[], &[]))
        .await
        .unwrap();
    api.patch(
        "r-0",
        &PatchParams::default(),
        &Patch::Merge(json!({ "data": { "v": "1" } })),
    )
    .await
    .unwrap();
    api.delete("r-1", &DeleteParams::default()).await.unwrap();
    eventually("the watcher relisted", || async {
        *relists.lock().unwrap() >= 2
    })
    .await;
    eventually("the reflector matches the server", || async {
        view(&reader) == truth().await
    })
    .await;

    api.patch(
        "r-2",
        &PatchParams::default(),
        &Patch::Merge(json!({ "data": { "v": "2" } })),
    )
    .await
    .unwrap();
    eventually("a change after the relist arrives", || async {
        view(&reader) == truth().await
    })
    .await;
    assert_eq!(
        view(&reader).keys().collect::<Vec<_>>(),
        ["r-0", "r-2", "r-3"]
    );
    driver.abort();
    h.finish().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn controller_should_reconcile_through_conflicts() {
    let h = Harness::start().await;
    let api = h.widgets().await;
    let conflicts = Arc::new(Mutex::new(0u32));

    async fn reconcile(w: Arc<Widget>, ctx: Arc<ConflictContext>) -> Result<Action, kube::Error> {
        let (api, conflicts) = &*ctx;
        let status = json!({ "status": { "observed": w.spec.replicas } });
        match api
            .patch_status(
                &w.name_any(),
                &PatchParams::default(),
                &Patch::Merge(status),
            )
            .await
        {
            Ok(_) => Ok(Action::await_change()),
            Err(kube::Error::Api(s)) if s.code == 409 => {
                *conflicts.lock().unwrap() += 1;
                Err(kube::Error::Api(s))
            }
            Err(e) => Err(e),
        }
    }
    fn retry(_: Arc<Widget>, _: &kube::Error, _: Arc<ConflictContext>) -> Action {
        Action::requeue(Duration::from_millis(100))
    }
    let context = Arc::new((api.clone(), Arc::clone(&conflicts)));
    let controller = tokio::spawn(
        Controller::new(api.clone(), watcher::Config::default())
            .run(reconcile, retry, context)
            .for_each(|_| async {}),
    );

    if let Some(server) = h.server("injected conflicts") {
        // Armed before the object exists: a create is no write of an existing
        // object, so the controller's first two status writes take them.
        let fault = Fault::Conflicts {
            resource: "widgets.tests.steadfast.dev".into(),
            namespace: Some(h.namespace.clone()),
            name: "c".into(),
            count: 2,
            spare_status: false,
        };
        server.inject(fault).unwrap();
    }
    api.create(&PostParams::default(), &widget("c", 1))
        .await
        .unwrap();
    let observed = |n: i32| {
        let api = api.clone();
        async move { api.get("c").await.unwrap().status.and_then(|s| s.observed) == Some(n) }
    };
    eventually("the controller observed 1 replica", || observed(1)).await;
    api.patch(
        "c",
        &PatchParams::default(),
        &Patch::Merge(json!({ "spec": { "replicas": 4 } })),
    )
    .await
    .unwrap();
    eventually("the controller observed 4 replicas", || observed(4)).await;
    if h.server.is_some() {
        assert_eq!(
            *conflicts.lock().unwrap(),
            2,
            "the controller met both injected conflicts and retried"
        );
    }
    controller.abort();
    h.finish().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn finalizer_helper_should_clean_up_before_the_object_goes() {
    const FINALIZER: &str = "tests.steadfast.dev/cleanup";
    let h = Harness::start().await;
    let api = h.widgets().await;
    let cleaned = Arc::new(Mutex::new(Vec::<String>::new()));

    async fn reconcile(
        w: Arc<Widget>,
        ctx: Arc<CleanupContext>,
    ) -> Result<Action, finalizer::Error<kube::Error>> {
        let (api, cleaned) = &*ctx;
        finalizer::finalizer(api, FINALIZER, w, |event| async move {
            match event {
                finalizer::Event::Apply(_) => Ok(Action::await_change()),
                finalizer::Event::Cleanup(w) => {
                    cleaned.lock().unwrap().push(w.name_any());
                    Ok(Action::await_change())
                }
            }
        })
        .await
    }
    fn retry(_: Arc<Widget>, _: &finalizer::Error<kube::Error>, _: Arc<CleanupContext>) -> Action {
        Action::requeue(Duration::from_millis(100))
    }
    let context = Arc::new((api.clone(), Arc::clone(&cleaned)));
    let controller = tokio::spawn(
        Controller::new(api.clone(), watcher::Config::default())
            .run(reconcile, retry, context)
            .for_each(|_| async {}),
    );
    api.create(&PostParams::default(), &widget("fin", 1))
        .await
        .unwrap();
    eventually("the helper added its finalizer", || async {
        api.get("fin").await.unwrap().finalizers() == [FINALIZER]
    })
    .await;
    api.delete("fin", &DeleteParams::default()).await.unwrap();
    eventually("the object is gone", || async {
        matches!(api.get("fin").await, Err(kube::Error::Api(s)) if s.code == 404)
    })
    .await;
    assert_eq!(
        *cleaned.lock().unwrap(),
        ["fin"],
        "cleanup ran once, before the object went"
    );
    controller.abort();
    h.finish().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn faults_should_answer_as_injected() {
    let h = Harness::start().await;
    let Some(server) = h.server("fault injection") else {
        return h.finish().await;
    };
    let api = h.configmaps();
    api.create(&PostParams::default(), &configmap("x", &[], &[]))
        .await
        .unwrap();
    let touch = |v: &str| Patch::Merge(json!({ "data": { "v": v } }));
    let pp = PatchParams::default();

    server
        .inject(Fault::Conflicts {
            resource: "configmaps".into(),
            namespace: Some("default".into()),
            name: "x".into(),
            count: 2,
            spare_status: false,
        })
        .unwrap();
    assert_eq!(refusal(api.patch("x", &pp, &touch("1")).await).0, 409);
    assert_eq!(refusal(api.patch("x", &pp, &touch("1")).await).0, 409);
    api.patch("x", &pp, &touch("1"))
        .await
        .expect("only two writes are refused");

    server.inject(Fault::ServerErrors { count: 1 }).unwrap();
    assert_eq!(refusal(api.get("x").await), (500, "InternalError".into()));
    api.get("x").await.expect("one request fails");

    server
        .inject(Fault::TooManyRequests {
            count: 1,
            retry_after_seconds: 3,
        })
        .unwrap();
    let (code, headers, body) =
        raw_http(server, "GET", "/api/v1/namespaces/default/configmaps/x", "").await;
    assert_eq!(
        (code, headers.get("retry-after").map(String::as_str)),
        (429, Some("3"))
    );
    assert_eq!(
        serde_json::from_str::<Value>(&body).unwrap()["reason"],
        "TooManyRequests"
    );

    server.inject(Fault::Delay { millis: 300 }).unwrap();
    let started = Instant::now();
    api.get("x").await.unwrap();
    assert!(
        started.elapsed() >= Duration::from_millis(300),
        "the response was delayed"
    );
    server.inject(Fault::Delay { millis: 0 }).unwrap();

    server.inject(Fault::Pause).unwrap();
    let held = tokio::spawn({
        let api = api.clone();
        async move { api.get("x").await.map(|c| c.name_any()) }
    });
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert!(!held.is_finished(), "a paused server answers nothing");
    server.inject(Fault::Resume).unwrap();
    assert_eq!(held.await.unwrap().unwrap(), "x");

    let from = rv(&api.get("x").await.unwrap());
    let mut watch = api
        .watch(&WatchParams::default().disable_bookmarks(), &from)
        .await
        .unwrap()
        .boxed();
    server.inject(Fault::CloseWatches).unwrap();
    let ended = tokio::time::timeout(Duration::from_secs(10), watch.next())
        .await
        .expect("the watch ends");
    assert!(
        ended.is_none(),
        "a closed watch ends without an error: {ended:?}"
    );

    let before = api.get("x").await.unwrap();
    let labels = [("owner".to_owned(), json!("someone-else"))]
        .into_iter()
        .collect();
    server
        .inject(Fault::ForeignWrite {
            resource: "configmaps".into(),
            namespace: Some("default".into()),
            name: "x".into(),
            labels: Some(labels),
            status: None,
        })
        .unwrap();
    let after = api.get("x").await.unwrap();
    assert_eq!(
        after.labels().get("owner").map(String::as_str),
        Some("someone-else")
    );
    assert_eq!(
        refusal(api.replace("x", &PostParams::default(), &before).await).0,
        409,
        "our stale copy now conflicts"
    );

    // Another client deletes an object while the server is paused: done at
    // once, answered to nobody.
    api.create(&PostParams::default(), &configmap("doomed", &[], &[]))
        .await
        .unwrap();
    server.inject(Fault::Pause).unwrap();
    let last = server
        .inject(Fault::ForeignDelete {
            resource: "configmaps".into(),
            namespace: Some("default".into()),
            name: "doomed".into(),
        })
        .unwrap();
    assert_eq!(last["metadata"]["name"], "doomed");
    server.inject(Fault::Resume).unwrap();
    assert_eq!(refusal(api.get("doomed").await).0, 404, "deleted");

    let (code, _, _) = raw_http(
        server,
        "POST",
        FAULTS_PATH,
        r#"{"fault":"serverErrors","count":1}"#,
    )
    .await;
    assert_eq!(
        code, 200,
        "the control endpoint takes faults over plain HTTP"
    );
    assert_eq!(refusal(api.get("x").await).0, 500);
    let unplaced = Fault::Conflicts {
        resource: "configmaps".into(),
        namespace: None,
        name: "x".into(),
        count: 1,
        spare_status: false,
    };
    let error = server.inject(unplaced).unwrap_err();
    assert!(
        error.code == 400 && error.message.contains("namespaced"),
        "{error}"
    );
    let unknown = Fault::Conflicts {
        resource: "gadgetz".into(),
        namespace: None,
        name: "x".into(),
        count: 1,
        spare_status: false,
    };
    assert!(server
        .inject(unknown)
        .unwrap_err()
        .message
        .contains("gadgetz"));
    let (code, _, body) = raw_http(server, "POST", FAULTS_PATH, r#"{"fault":"meteor"}"#).await;
    assert_eq!(code, 400);
    assert!(
        body.contains("meteor"),
        "a bad fault is named in the error: {body}"
    );
    h.finish().await;
}

/// The next line `kubectl get -w` prints, trimmed.
async fn next_line(lines: &mut (impl tokio::io::AsyncBufRead + Unpin)) -> String {
    use tokio::io::AsyncBufReadExt;
    let mut line = String::new();
    tokio::time::timeout(Duration::from_secs(20), lines.read_line(&mut line))
        .await
        .expect("kubectl get -w prints")
        .unwrap();
    line.trim().to_owned()
}

/// `kubectl` with a kubeconfig for the harness's target and a cache of its own.
struct Kubectl {
    config: Option<tempfile::NamedTempFile>,
    cache: tempfile::TempDir,
    namespace: String,
}

impl Kubectl {
    fn command(&self, args: &[&str]) -> std::process::Command {
        let mut command = std::process::Command::new("kubectl");
        if let Some(config) = &self.config {
            command.arg("--kubeconfig").arg(config.path());
        }
        command
            .arg("--cache-dir")
            .arg(self.cache.path())
            .args(["--namespace", &self.namespace])
            .args(args);
        command
    }

    fn run(&self, args: &[&str], stdin: Option<&str>) -> (bool, String) {
        use std::io::Write;
        use std::process::Stdio;
        let mut child = self
            .command(args)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        if let Some(input) = stdin {
            child
                .stdin
                .take()
                .unwrap()
                .write_all(input.as_bytes())
                .unwrap();
        }
        drop(child.stdin.take());
        let output = child.wait_with_output().unwrap();
        let text = String::from_utf8_lossy(&output.stdout).into_owned()
            + &String::from_utf8_lossy(&output.stderr);
        (output.status.success(), text)
    }
}

impl Kubectl {
    /// `kubectl` for the harness's target; `None` (with a message naming
    /// `case`) where kubectl is not installed.
    fn for_harness(h: &Harness, case: &str) -> Option<Self> {
        if std::process::Command::new("kubectl")
            .arg("version")
            .arg("--client")
            .output()
            .is_err()
        {
            eprintln!("{case}: skipped, kubectl is not on PATH (scripts/test installs it)");
            return None;
        }
        let config = h.server.as_ref().map(|server| {
            let file = tempfile::NamedTempFile::new().unwrap();
            std::fs::write(file.path(), server.kubeconfig()).unwrap();
            file
        });
        Some(Self {
            config,
            cache: tempfile::tempdir().unwrap(),
            namespace: h.namespace.clone(),
        })
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kubectl_should_round_trip_a_custom_resource() {
    let h = Harness::start().await;
    let Some(kubectl) = Kubectl::for_harness(&h, "kubectl_should_round_trip_a_custom_resource")
    else {
        return h.finish().await;
    };
    // OpenAPI schemas are not served, so client-side validation is off.
    let crd = json!({
        "apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
        "metadata": { "name": "gadgets.tests.steadfast.dev" },
        "spec": {
            "group": "tests.steadfast.dev", "scope": "Namespaced",
            "names": { "plural": "gadgets", "singular": "gadget", "kind": "Gadget" },
            "versions": [{ "name": "v1", "served": true, "storage": true,
                "schema": { "openAPIV3Schema": { "type": "object", "x-kubernetes-preserve-unknown-fields": true } } }]
        }
    });
    let (ok, out) = kubectl.run(
        &["apply", "--validate=false", "-f", "-"],
        Some(&crd.to_string()),
    );
    assert!(
        ok && out
            .contains("customresourcedefinition.apiextensions.k8s.io/gadgets.tests.steadfast.dev"),
        "{out}"
    );
    let (ok, out) = kubectl.run(
        &[
            "wait",
            "--for=condition=Established",
            "crd/gadgets.tests.steadfast.dev",
            "--timeout=30s",
        ],
        None,
    );
    assert!(ok, "{out}");

    let gadget = json!({ "apiVersion": "tests.steadfast.dev/v1", "kind": "Gadget", "metadata": { "name": "g1" }, "spec": { "size": 1 } });
    let (ok, out) = kubectl.run(
        &["apply", "--validate=false", "-f", "-"],
        Some(&gadget.to_string()),
    );
    assert!(
        ok && out.contains("gadget.tests.steadfast.dev/g1 created"),
        "{out}"
    );

    let mut watch = tokio::process::Command::from(kubectl.command(&[
        "get",
        "gadgets",
        "-w",
        "-o",
        "jsonpath={.metadata.name}={.spec.size}{\"\\n\"}",
    ]))
    .stdout(std::process::Stdio::piped())
    .kill_on_drop(true)
    .spawn()
    .unwrap();
    let mut lines = tokio::io::BufReader::new(watch.stdout.take().unwrap());
    assert_eq!(next_line(&mut lines).await, "g1=1");
    let (ok, out) = kubectl.run(
        &[
            "patch",
            "gadget",
            "g1",
            "--type",
            "merge",
            "-p",
            r#"{"spec":{"size":2}}"#,
        ],
        None,
    );
    assert!(ok && out.contains("patched"), "{out}");
    assert_eq!(
        next_line(&mut lines).await,
        "g1=2",
        "kubectl get -w sees the patch"
    );
    let (ok, out) = kubectl.run(
        &["get", "gadget", "g1", "-o", "jsonpath={.spec.size}"],
        None,
    );
    assert_eq!((ok, out.trim()), (true, "2"));

    let (ok, out) = kubectl.run(&["delete", "gadget", "g1"], None);
    assert!(ok && out.contains("deleted"), "{out}");
    let (ok, out) = kubectl.run(&["get", "gadget", "g1"], None);
    assert!(
        !ok && out.contains("gadgets.tests.steadfast.dev \"g1\" not found"),
        "{out}"
    );
    watch.kill().await.unwrap();
    h.finish().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn watch_with_a_selector_should_see_objects_enter_and_leave_it() {
    let h = Harness::start().await;
    let api = h.configmaps();
    let from = list_version(&api).await;
    let params = WatchParams::default().labels("app=on").disable_bookmarks();
    let mut events = api.watch(&params, &from).await.unwrap().boxed();
    let relabel =
        |value: &'static str| Patch::Merge(json!({ "metadata": { "labels": { "app": value } } }));
    let pp = PatchParams::default();
    api.create(&PostParams::default(), &configmap("unlabelled", &[], &[]))
        .await
        .unwrap();
    api.create(
        &PostParams::default(),
        &configmap("s", &[("app", "on")], &[]),
    )
    .await
    .unwrap();
    api.patch("s", &pp, &relabel("off")).await.unwrap();
    api.patch("s", &pp, &relabel("off-still")).await.unwrap();
    api.patch("s", &pp, &relabel("on")).await.unwrap();
    api.delete("s", &DeleteParams::default()).await.unwrap();
    let seen: Vec<_> = next_changes(&mut events, 4)
        .await
        .into_iter()
        .map(|(kind, c)| format!("{kind} {}", c.name_any()))
        .collect();
    assert_eq!(
        seen,
        ["ADDED s", "DELETED s", "ADDED s", "DELETED s"],
        "leaving the selector reads as a deletion"
    );
    h.finish().await;
}

/// Installs (if missing) and waits for a CRD of `kind` in
/// `tests.steadfast.dev` with no status subresource and any fields kept;
/// returns the CRDs' API, its objects' API in the test's namespace, and the
/// resource.
async fn install_schemaless(
    h: &Harness,
    kind: &str,
) -> (
    Api<CustomResourceDefinition>,
    Api<kube::core::DynamicObject>,
    kube::core::ApiResource,
) {
    use kube::core::{ApiResource, GroupVersionKind};
    let singular = kind.to_ascii_lowercase();
    let plural = format!("{singular}s");
    let name = format!("{plural}.tests.steadfast.dev");
    let crds: Api<CustomResourceDefinition> = Api::all(h.client.clone());
    let crd: CustomResourceDefinition = serde_json::from_value(json!({
        "metadata": { "name": name },
        "spec": {
            "group": "tests.steadfast.dev", "scope": "Namespaced",
            "names": { "plural": plural, "singular": singular, "kind": kind },
            "versions": [{ "name": "v1", "served": true, "storage": true,
                "schema": { "openAPIV3Schema": { "type": "object", "x-kubernetes-preserve-unknown-fields": true } } }]
        }
    }))
    .unwrap();
    match crds.create(&PostParams::default(), &crd).await {
        Ok(_) => {}
        Err(kube::Error::Api(status)) if status.code == 409 => {}
        Err(error) => panic!("the {kind} CRD: {error}"),
    }
    let established = kube::runtime::wait::conditions::is_crd_established();
    let wait = kube::runtime::wait::await_condition(crds.clone(), &name, established);
    tokio::time::timeout(Duration::from_secs(30), wait)
        .await
        .expect("the CRD is established")
        .unwrap();
    let resource = ApiResource::from_gvk_with_plural(
        &GroupVersionKind::gvk("tests.steadfast.dev", "v1", kind),
        &plural,
    );
    let objects = Api::namespaced_with(h.client.clone(), &h.namespace, &resource);
    (crds, objects, resource)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn deleting_a_crd_should_stop_serving_its_type_and_remove_its_objects() {
    use kube::api::DynamicObject;
    let h = Harness::start().await;
    let (crds, gizmos, resource) = install_schemaless(&h, "Gizmo").await;
    let mut gizmo = DynamicObject::new("g", &resource);
    gizmo.data = json!({ "spec": { "size": 1 } });
    gizmos.create(&PostParams::default(), &gizmo).await.unwrap();
    assert_eq!(
        gizmos
            .list(&ListParams::default())
            .await
            .unwrap()
            .items
            .len(),
        1
    );

    let from = list_version(&gizmos).await;
    let mut watch = gizmos
        .watch(&WatchParams::default().disable_bookmarks(), &from)
        .await
        .unwrap()
        .boxed();
    crds.delete("gizmos.tests.steadfast.dev", &DeleteParams::default())
        .await
        .unwrap();
    let deleted = next_changes(&mut watch, 1).await;
    assert_eq!(
        (deleted[0].0, deleted[0].1.name_any()),
        ("DELETED", "g".to_string()),
        "its objects go with the CRD"
    );
    let ended = tokio::time::timeout(Duration::from_secs(10), watch.next())
        .await
        .expect("the watch ends");
    assert!(
        ended.is_none(),
        "a watch of a type whose CRD is gone ends: {ended:?}"
    );
    eventually("the type is no longer served", || async {
        matches!(gizmos.list(&ListParams::default()).await, Err(kube::Error::Api(s)) if s.code == 404)
    })
    .await;
    install_schemaless(&h, "Gizmo").await;
    eventually(
        "the type is served again, without the old objects",
        || async {
            matches!(gizmos.list(&ListParams::default()).await, Ok(list) if list.items.is_empty())
        },
    )
    .await;
    crds.delete("gizmos.tests.steadfast.dev", &DeleteParams::default())
        .await
        .unwrap();
    h.finish().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn dry_run_should_answer_without_changing_anything() {
    let h = Harness::start().await;
    let api = h.configmaps();
    let dry = PostParams {
        dry_run: true,
        ..PostParams::default()
    };
    let answered = api
        .create(&dry, &configmap("d", &[], &[("k", "1")]))
        .await
        .unwrap();
    assert_eq!(answered.name_any(), "d");
    assert_eq!(
        refusal(api.get("d").await).0,
        404,
        "a dry-run create stores nothing"
    );

    let stored = api
        .create(&PostParams::default(), &configmap("d", &[], &[("k", "1")]))
        .await
        .unwrap();
    let patched = api
        .patch(
            "d",
            &PatchParams::default().dry_run(),
            &Patch::Merge(json!({ "data": { "k": "2" } })),
        )
        .await
        .unwrap();
    assert_eq!(
        patched.data.unwrap()["k"],
        "2",
        "a dry-run patch answers with the patched object"
    );
    let after = api.get("d").await.unwrap();
    assert_eq!(
        after.data.as_ref().unwrap()["k"],
        "1",
        "a dry-run patch changes nothing"
    );
    assert_eq!(rv(&after), rv(&stored), "and takes no resourceVersion");
    let dry_delete = DeleteParams {
        dry_run: true,
        ..DeleteParams::default()
    };
    api.delete("d", &dry_delete).await.unwrap();
    assert_eq!(
        rv(&api.get("d").await.unwrap()),
        rv(&stored),
        "a dry-run delete leaves the object"
    );
    h.finish().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn writes_should_be_refused_as_the_api_server_refuses_them() {
    let h = Harness::start().await;
    let widgets = h.widgets().await;
    let stored = widgets
        .create(&PostParams::default(), &widget("r", 1))
        .await
        .unwrap();
    let mut unconditional = stored.clone();
    unconditional.metadata.resource_version = None;
    assert_eq!(
        refusal(
            widgets
                .replace("r", &PostParams::default(), &unconditional)
                .await
        ),
        (422, "Invalid".into()),
        "a custom resource takes no update without a resourceVersion"
    );
    assert_eq!(
        refusal(
            widgets
                .replace("other", &PostParams::default(), &stored)
                .await
        ),
        (400, "BadRequest".into()),
        "the body's name must be the URL's"
    );
    assert_eq!(
        refusal(widgets.create(&PostParams::default(), &stored).await).0,
        500,
        "a create carrying a resourceVersion"
    );

    let nowhere: Api<ConfigMap> = Api::namespaced(h.client.clone(), "no-such-namespace");
    assert_eq!(
        refusal(
            nowhere
                .create(&PostParams::default(), &configmap("n", &[], &[]))
                .await
        ),
        (404, "NotFound".into())
    );
    let configmaps = h.configmaps();
    assert_eq!(
        refusal(
            configmaps
                .list(&ListParams::default().labels("a in b"))
                .await
        )
        .0,
        400
    );
    assert_eq!(
        refusal(
            configmaps
                .list(&ListParams::default().fields("data.k=1"))
                .await
        )
        .0,
        400
    );
    h.finish().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn events_should_be_recorded_through_kube_runtime() {
    use k8s_openapi::api::events::v1::Event as K8sEvent;
    use kube::runtime::events::{Event, EventType, Recorder};
    let h = Harness::start().await;
    let api = h.configmaps();
    let subject = api
        .create(&PostParams::default(), &configmap("subject", &[], &[]))
        .await
        .unwrap();
    let recorder = Recorder::new(h.client.clone(), "steadfast-tests".into());
    let event = Event {
        type_: EventType::Normal,
        reason: "Tested".into(),
        note: Some("recorded by the conformance suite".into()),
        action: "Test".into(),
        secondary: None,
    };
    recorder
        .publish(&event, &subject.object_ref(&()))
        .await
        .unwrap();
    recorder
        .publish(&event, &subject.object_ref(&()))
        .await
        .expect("a repeat patches the event's series");
    let events: Api<K8sEvent> = Api::namespaced(h.client.clone(), &h.namespace);
    let listed = events.list(&ListParams::default()).await.unwrap();
    let ours: Vec<&K8sEvent> = listed
        .items
        .iter()
        .filter(|e| e.reason.as_deref() == Some("Tested"))
        .collect();
    assert_eq!(ours.len(), 1, "one event, with a series");
    assert_eq!(ours[0].series.as_ref().map(|s| s.count), Some(2));
    h.finish().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn streaming_list_watcher_should_get_initial_events_and_their_end() {
    let h = Harness::start().await;
    if h.server("streaming lists (the WatchList feature varies by cluster)")
        .is_none()
    {
        return h.finish().await;
    }
    let api = h.configmaps();
    api.create(&PostParams::default(), &configmap("i-0", &[], &[]))
        .await
        .unwrap();
    let mut stream = watcher(api.clone(), watcher::Config::default().streaming_lists()).boxed();
    let mut initial = Vec::new();
    loop {
        let event = tokio::time::timeout(Duration::from_secs(10), stream.next())
            .await
            .expect("an event")
            .unwrap()
            .unwrap();
        match event {
            watcher::Event::Init => {}
            watcher::Event::InitApply(c) => initial.push(c.name_any()),
            watcher::Event::InitDone => break,
            other => panic!("unexpected {other:?} before the initial events ended"),
        }
    }
    assert_eq!(initial, ["i-0"]);
    api.create(&PostParams::default(), &configmap("i-1", &[], &[]))
        .await
        .unwrap();
    let next = tokio::time::timeout(Duration::from_secs(10), stream.next())
        .await
        .expect("an event")
        .unwrap()
        .unwrap();
    assert!(matches!(next, watcher::Event::Apply(c) if c.name_any() == "i-1"));
    h.finish().await;
}

/// A request sent as is (no kind or version filled in by a typed client),
/// through the harness's client: the body it answers, or the refusal.
async fn raw_request(h: &Harness, method: &str, path: &str, body: Value) -> kube::Result<Value> {
    let request = axum::http::Request::builder()
        .method(method)
        .uri(path)
        .header("Content-Type", "application/json")
        .body(body.to_string().into_bytes())
        .unwrap();
    h.client.request::<Value>(request).await
}

/// The `Status` of a refused call, whole.
fn refused_status<T: std::fmt::Debug>(result: kube::Result<T>) -> kube::core::Status {
    match result {
        Err(kube::Error::Api(status)) => *status,
        other => panic!("expected the API to refuse, got {other:?}"),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_built_in_object_posted_without_kind_should_take_the_url_s() {
    // The real server decodes a built-in type's body with the URL's
    // GroupVersionKind as default (apiserver/pkg/endpoints/handlers/create.go);
    // Events are commonly sent this way. A custom resource's body is read by
    // the unstructured decoder, which needs `kind` (400).
    let h = Harness::start().await;
    let widgets = h.widgets().await;
    let namespace = &h.namespace;
    let created = raw_request(
        &h,
        "POST",
        &format!("/api/v1/namespaces/{namespace}/configmaps"),
        json!({ "metadata": { "name": "bare" }, "data": { "k": "v" } }),
    )
    .await
    .expect("a configmap without apiVersion and kind is created");
    assert_eq!(
        (created["apiVersion"].as_str(), created["kind"].as_str()),
        (Some("v1"), Some("ConfigMap"))
    );
    let stored = h.configmaps().get("bare").await.unwrap();
    assert_eq!(stored.data.unwrap()["k"], "v");
    let refused = raw_request(
        &h,
        "POST",
        &format!("/apis/tests.steadfast.dev/v1/namespaces/{namespace}/widgets"),
        json!({ "metadata": { "name": "bare" }, "spec": { "replicas": 1 } }),
    )
    .await;
    assert_eq!(
        refused_status(refused).code,
        400,
        "a custom resource names its kind"
    );
    assert!(widgets.get_opt("bare").await.unwrap().is_none());
    h.finish().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_status_change_should_bump_the_generation_only_where_status_is_a_subresource() {
    // The custom resource strategy's PrepareForUpdate
    // (apiextensions-apiserver/pkg/registry/customresource/strategy.go)
    // exempts only `metadata` from the generation, and `status` too where
    // the status subresource is enabled.
    use kube::core::DynamicObject;
    let h = Harness::start().await;
    let (_, gizmos, resource) = install_schemaless(&h, "Gauge").await;
    let mut gizmo = DynamicObject::new("g", &resource);
    gizmo.data = json!({ "spec": { "size": 1 } });
    let created = gizmos.create(&PostParams::default(), &gizmo).await.unwrap();
    assert_eq!(created.metadata.generation, Some(1));
    let merge = |body: Value| Patch::Merge(body);
    let labelled = gizmos
        .patch(
            "g",
            &PatchParams::default(),
            &merge(json!({ "metadata": { "labels": { "a": "b" } } })),
        )
        .await
        .unwrap();
    assert_eq!(
        labelled.metadata.generation,
        Some(1),
        "metadata leaves the generation"
    );
    let status = gizmos
        .patch(
            "g",
            &PatchParams::default(),
            &merge(json!({ "status": { "seen": 1 } })),
        )
        .await
        .unwrap();
    assert_eq!(status.data["status"]["seen"], 1);
    assert_eq!(
        status.metadata.generation,
        Some(2),
        "no status subresource: status counts"
    );

    let widgets = h.widgets().await;
    widgets
        .create(&PostParams::default(), &widget("w", 1))
        .await
        .unwrap();
    let written = widgets
        .patch_status(
            "w",
            &PatchParams::default(),
            &merge(json!({ "status": { "observed": 1 } })),
        )
        .await
        .unwrap();
    assert_eq!(
        written.metadata.generation,
        Some(1),
        "a status subresource's writes leave it"
    );
    h.finish().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn lists_should_serve_the_resource_version_they_ask_for() {
    // The API concepts page, "Semantics for get and list", and
    // ValidateListOptions (apimachinery/pkg/apis/meta/internalversion/validation).
    use kube::api::VersionMatch;
    let h = Harness::start().await;
    let api = h.configmaps();
    let first = api
        .create(
            &PostParams::default(),
            &configmap("at-a", &[], &[("k", "1")]),
        )
        .await
        .unwrap();
    let at_first = rv(&first);
    api.patch(
        "at-a",
        &PatchParams::default(),
        &Patch::Merge(json!({ "data": { "k": "2" } })),
    )
    .await
    .unwrap();
    let last = api
        .create(&PostParams::default(), &configmap("at-b", &[], &[]))
        .await
        .unwrap();
    let names = |list: &kube::core::ObjectList<ConfigMap>| -> Vec<(String, String)> {
        list.items
            .iter()
            .filter(|c| c.name_any().starts_with("at-"))
            .map(|c| {
                (
                    c.name_any(),
                    c.data
                        .clone()
                        .unwrap_or_default()
                        .get("k")
                        .cloned()
                        .unwrap_or_default(),
                )
            })
            .collect()
    };
    let exact = api
        .list(
            &ListParams::default()
                .at(&at_first)
                .matching(VersionMatch::Exact),
        )
        .await
        .unwrap();
    assert_eq!(
        exact.metadata.resource_version.as_deref(),
        Some(at_first.as_str())
    );
    assert_eq!(
        names(&exact),
        [("at-a".to_owned(), "1".to_owned())],
        "the state at that version"
    );
    let paged = api
        .list(
            &ListParams::default()
                .at(&at_first)
                .matching(VersionMatch::Exact)
                .limit(1),
        )
        .await
        .unwrap();
    assert_eq!(
        paged.metadata.resource_version.as_deref(),
        Some(at_first.as_str())
    );
    let newer = api
        .list(
            &ListParams::default()
                .at(&at_first)
                .matching(VersionMatch::NotOlderThan),
        )
        .await
        .unwrap();
    assert_eq!(
        names(&newer),
        [
            ("at-a".to_owned(), "2".to_owned()),
            ("at-b".to_owned(), String::new())
        ]
    );

    // kube-rs retries a 504 fifteen times by default: this client sees the
    // first answer.
    let mut config = match &h.server {
        Some(server) => kube::Config::new(server.url().parse().unwrap()),
        None => kube::Config::infer().await.unwrap(),
    };
    config.default_retry = false;
    let client = kube::Client::try_from(config).unwrap();
    let path = format!("/api/v1/namespaces/{}/configmaps", h.namespace);
    let get = |query: String| {
        let path = format!("{path}?{query}");
        let client = client.clone();
        async move {
            let request = axum::http::Request::get(path).body(Vec::new()).unwrap();
            client.request::<Value>(request).await
        }
    };
    let no_version = refused_status(get("resourceVersionMatch=Exact".into()).await);
    assert_eq!(
        (no_version.code, no_version.reason.as_str()),
        (422, "Invalid")
    );
    assert!(
        no_version
            .message
            .contains("resourceVersionMatch is forbidden unless resourceVersion is provided"),
        "{no_version:?}"
    );
    let zero = refused_status(get("resourceVersion=0&resourceVersionMatch=Exact".into()).await);
    assert_eq!(zero.code, 422);
    let watch = refused_status(
        get("watch=true&resourceVersionMatch=NotOlderThan&resourceVersion=1".into()).await,
    );
    assert_eq!(
        watch.code, 422,
        "a watch takes a match only with sendInitialEvents"
    );

    let ahead = rv(&last).parse::<u64>().unwrap() + 1_000_000;
    let started = Instant::now();
    let future = refused_status(
        get(format!(
            "resourceVersion={ahead}&resourceVersionMatch=NotOlderThan"
        ))
        .await,
    );
    assert_eq!(
        (future.code, future.reason.as_str()),
        (504, "Timeout"),
        "{future:?}"
    );
    assert!(
        future.message.contains("Too large resource version"),
        "{future:?}"
    );
    assert!(
        started.elapsed() >= Duration::from_secs(1),
        "the server waits for the version first"
    );

    if let Some(server) =
        h.server("a list at a compacted version (needs the test server's history)")
    {
        server.inject(Fault::ExpireWatches).unwrap();
        let gone = refusal(
            api.list(
                &ListParams::default()
                    .at(&at_first)
                    .matching(VersionMatch::Exact),
            )
            .await,
        );
        assert_eq!(gone.0, 410, "a compacted version is gone");
    }
    h.finish().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn object_meta_should_be_validated_as_the_api_server_validates_it() {
    // ValidateObjectMeta and ValidateAnnotations
    // (apimachinery/pkg/api/validation/objectmeta.go), ValidateLabels
    // (apimachinery/pkg/apis/meta/v1/validation), and the decoder's type
    // check of ObjectMeta (400).
    let h = Harness::start().await;
    let api = h.configmaps();
    let invalid = |result: kube::Result<ConfigMap>, field: &str| {
        let status = refused_status(result);
        assert_eq!(
            (status.code, status.reason.as_str()),
            (422, "Invalid"),
            "{status:?}"
        );
        let details = status.details.expect("an Invalid status has details");
        assert_eq!(
            details.kind, "ConfigMap",
            "details name the kind, not the plural"
        );
        assert!(
            details
                .causes
                .iter()
                .any(|c| c.field == field && c.message.starts_with("Invalid value")),
            "{field} among {:?}",
            details.causes
        );
    };
    let post = PostParams::default();
    invalid(
        api.create(&post, &configmap("x_y", &[], &[])).await,
        "metadata.name",
    );
    invalid(
        api.create(&post, &configmap("m", &[("app", "has spaces")], &[]))
            .await,
        "metadata.labels",
    );
    let mut annotated = configmap("m", &[], &[]);
    annotated.metadata.annotations = Some([("bad!".to_owned(), "v".to_owned())].into());
    invalid(api.create(&post, &annotated).await, "metadata.annotations");
    api.create(&post, &configmap("m", &[], &[])).await.unwrap();
    invalid(
        api.patch(
            "m",
            &PatchParams::default(),
            &Patch::Merge(json!({ "metadata": { "labels": { "a b": "c" } } })),
        )
        .await,
        "metadata.labels",
    );
    let number = raw_request(
        &h,
        "POST",
        &format!("/api/v1/namespaces/{}/configmaps", h.namespace),
        json!({ "apiVersion": "v1", "kind": "ConfigMap", "metadata": { "name": "n", "annotations": { "a": 1 } } }),
    )
    .await;
    assert_eq!(
        refused_status(number).code,
        400,
        "a number is no annotation value"
    );
    let listed = api
        .list(&ListParams::default())
        .await
        .expect("every stored object reads back typed");
    let names: BTreeSet<String> = listed.items.iter().map(ResourceExt::name_any).collect();
    assert!(names.contains("m") && !names.contains("x_y") && !names.contains("n"));
    h.finish().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kubectl_should_print_why_an_object_is_invalid() {
    // kubectl words a 422 from its `details` (kind, name, causes), as
    // k8s.io/kubectl/pkg/cmd/util/helpers.go's StandardErrorMessage does.
    let h = Harness::start().await;
    let Some(kubectl) = Kubectl::for_harness(&h, "kubectl_should_print_why_an_object_is_invalid")
    else {
        return h.finish().await;
    };
    // From a file: kubectl sends it as JSON (its imperative `create
    // configmap` speaks protobuf, which this server does not serve).
    let manifest =
        json!({ "apiVersion": "v1", "kind": "ConfigMap", "metadata": { "name": "x_y" } });
    let (ok, output) = kubectl.run(
        &["create", "--validate=false", "-f", "-"],
        Some(&manifest.to_string()),
    );
    assert!(!ok, "an invalid name is refused: {output}");
    assert!(
        output.contains("The ConfigMap \"x_y\" is invalid")
            && output.contains("metadata.name: Invalid value: \"x_y\""),
        "kubectl prints the kind and the cause: {output}"
    );
    h.finish().await;
}
