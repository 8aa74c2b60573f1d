//! The lifecycle runtime against the Kubernetes API test server: kopf #641
//! shown under kopf's rules and fixed under steadfast's, an operator killed
//! mid-handler, injected faults; every engine's trace replayed through the
//! spec with no divergence.

use std::collections::BTreeMap;
use std::path::Path;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use kube::api::{Api, DeleteParams, Patch, PatchParams, PostParams};
use kube::CustomResource;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::json;
use steadfast::lifecycle::{Context, Handler, HandlerError, Operator, Variant};
use steadfast_tests::kube_target::KubeTarget;
use steadfast_tests::kube_testserver::Fault;
use steadfast_tests::tcp_proxy::{Mode, TcpProxy};
use tokio::sync::Notify;

/// The custom resource of these tests: a spec size, and a status tick that
/// another writer moves (as in kopf #641).
#[derive(CustomResource, Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[kube(
    group = "lifecycle.steadfast.dev",
    version = "v1",
    kind = "Ticker",
    namespaced,
    status = "TickerStatus"
)]
pub struct TickerSpec {
    /// What users edit.
    pub size: i32,
}

/// The status another writer moves.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct TickerStatus {
    /// The tick.
    pub tick: i32,
}

/// A test server (or, with `STEADFAST_KUBE_TESTS=cluster`, a namespace of
/// the cluster) with the Ticker CRD established.
async fn tickers() -> (KubeTarget, Api<Ticker>) {
    let target = KubeTarget::start().await;
    let api = target.install::<Ticker>().await;
    (target, api)
}

/// One run of a sub-handler, as the handler itself logged it.
#[derive(Clone, Debug)]
struct Run {
    /// The operator replica that ran it.
    replica: &'static str,
    /// The object.
    object: String,
    /// The sub-handler.
    name: String,
    /// The tick it saw.
    tick: i64,
    /// The fencing epoch of the claim it ran under.
    epoch: u32,
    /// When it started and returned.
    span: (Instant, Instant),
}

/// Runs of the sub-handlers, in the order they returned.
type Runs = Arc<Mutex<Vec<Run>>>;

/// The runs as (sub-handler, the tick it saw).
fn ticks_of(runs: &Runs) -> Vec<(String, i64)> {
    let runs = runs.lock().unwrap();
    runs.iter().map(|r| (r.name.clone(), r.tick)).collect()
}

/// kopf #641's parent: on `status.tick`, three sub-handlers when the tick
/// is odd; each sub-handler takes `work` and reports the tick it saw, as
/// run by `replica`. `started` is notified when a sub-handler starts.
fn tick_handler(
    replica: &'static str,
    runs: Runs,
    started: Arc<Notify>,
    work: Duration,
) -> Handler<Ticker> {
    Handler::new(|ctx: Context<Ticker>| async move {
        let tick = ctx
            .new_value("status.tick")
            .and_then(|t| t.as_i64())
            .unwrap_or(0);
        if tick % 2 == 1 {
            for name in ["sub0", "sub1", "sub2"] {
                ctx.sub(name);
            }
        }
        Ok::<(), HandlerError>(())
    })
    .sub_handlers(move |ctx: Context<Ticker>| {
        let runs = runs.clone();
        let started = started.clone();
        async move {
            let start = Instant::now();
            started.notify_one();
            let tick = ctx
                .new_value("status.tick")
                .and_then(|t| t.as_i64())
                .unwrap_or(0);
            tokio::time::sleep(work).await;
            let name = ctx.sub_name().unwrap_or_default().to_owned();
            runs.lock().unwrap().push(Run {
                replica,
                object: ctx.object().metadata.name.clone().unwrap_or_default(),
                name,
                tick,
                epoch: ctx.epoch(),
                span: (start, Instant::now()),
            });
            Ok(())
        }
    })
}

/// Sets the status tick, as another controller would.
async fn set_tick(api: &Api<Ticker>, name: &str, tick: i32) {
    api.patch_status(
        name,
        &PatchParams::default(),
        &Patch::Merge(json!({ "status": { "tick": tick } })),
    )
    .await
    .expect("the status is written");
}

/// Creates a ticker with tick 1.
async fn create(api: &Api<Ticker>, name: &str) {
    let mut ticker = Ticker::new(name, TickerSpec { size: 1 });
    ticker.status = Some(TickerStatus { tick: 1 });
    api.create(&PostParams::default(), &ticker).await.unwrap();
    // A create drops the status: set it through its subresource.
    set_tick(api, name, 1).await;
}

/// Waits until `runs` has not grown for `quiet`, at most `limit`.
async fn settle(runs: &Runs, quiet: Duration, limit: Duration) {
    let deadline = tokio::time::Instant::now() + limit;
    let mut seen = usize::MAX;
    while tokio::time::Instant::now() < deadline {
        let now = runs.lock().unwrap().len();
        if now == seen {
            return;
        }
        seen = now;
        tokio::time::sleep(quiet).await;
    }
    panic!("handlers still running after {limit:?}");
}

/// The tick each sub-handler saw last.
fn last_ticks(runs: &Runs) -> Vec<(String, i64)> {
    let mut last: Vec<(String, i64)> = Vec::new();
    for (name, tick) in ticks_of(runs) {
        match last.iter_mut().find(|(n, _)| *n == name) {
            Some(entry) => entry.1 = tick,
            None => last.push((name, tick)),
        }
    }
    last.sort();
    last
}

/// Replays every trace in `dir` as `steadfast replay` does (see
/// [`steadfast_tests::replay_all`]). Returns how many steps were replayed.
fn replay_all(dir: &Path, holds: bool) -> usize {
    steadfast_tests::replay_all(dir, holds)
        .iter()
        .map(|(_, steps)| steps)
        .sum()
}

/// A test server with the Ticker CRD, a trace directory, the record of
/// sub-handler runs and a signal of their starts.
async fn story_bed() -> (
    KubeTarget,
    Api<Ticker>,
    tempfile::TempDir,
    Runs,
    Arc<Notify>,
) {
    let (target, api) = tickers().await;
    let traces = tempfile::tempdir().unwrap();
    (target, api, traces, Arc::default(), Arc::new(Notify::new()))
}

/// Replays every trace of `traces` (each agrees, and no safety property is
/// violated along them), then stops the test server.
async fn replayed_and_finished(target: KubeTarget, traces: &tempfile::TempDir) {
    assert!(replay_all(traces.path(), true) > 0);
    target.finish().await;
}

/// Waits (at most 10 s) until `name` has a diff-base: handled in full once;
/// `what` says what that shows, should it not come.
async fn handled_in_full(api: &Api<Ticker>, name: &str, what: &str) {
    let what = format!("handled in full ({what})");
    annotations_once(api, name, &what, |a| {
        a.contains_key("steadfast.dev/diff-base")
    })
    .await;
}

/// The annotations of `name`, once `ready` holds of them (at most 10 s);
/// `what` says what that shows, should it not come.
async fn annotations_once(
    api: &Api<Ticker>,
    name: &str,
    what: &str,
    ready: impl Fn(&BTreeMap<String, String>) -> bool,
) -> BTreeMap<String, String> {
    let found = async {
        loop {
            let object = api.get(name).await.unwrap();
            let annotations = object.metadata.annotations.unwrap_or_default();
            if ready(&annotations) {
                return annotations;
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    };
    tokio::time::timeout(Duration::from_secs(10), found)
        .await
        .unwrap_or_else(|_| panic!("{name}: not {what} within 10 s"))
}

/// Runs #641's story under `variant`: the tick moves from 1 to 2 to 3
/// while the first sub-handler works. Returns each sub-handler's last tick,
/// and every run.
async fn story_641(variant: Variant) -> (Vec<(String, i64)>, Vec<(String, i64)>) {
    let (target, api, traces, runs, started) = story_bed().await;
    let work = Duration::from_millis(300);
    let operator = Operator::new(api.clone())
        .variant(variant)
        .trace(traces.path())
        .on_field(
            "status.tick",
            "tick",
            tick_handler("operator", runs.clone(), started.clone(), work),
        );
    let running = tokio::spawn(operator.run());
    create(&api, "t").await;
    // While the first sub-handler works on tick 1, the tick moves twice.
    started.notified().await;
    set_tick(&api, "t", 2).await;
    set_tick(&api, "t", 3).await;
    settle(&runs, Duration::from_secs(2), Duration::from_secs(30)).await;
    running.abort();
    steadfast_tests::keep_traces(traces.path(), &format!("lifecycle-641-{variant:?}-"));
    let steps = replay_all(traces.path(), variant == Variant::Steadfast);
    assert!(steps > 0, "the engine's steps were recorded");
    target.finish().await;
    let last = last_ticks(&runs);
    let every = ticks_of(&runs);
    eprintln!("{variant:?}: every run {every:?}; last ticks {last:?}");
    (last, every)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kopf_should_leave_a_subhandler_on_an_older_tick() {
    let (last, _) = story_641(Variant::Kopf).await;
    assert_eq!(last.len(), 3, "{last:?}");
    assert!(
        last.iter().any(|(_, tick)| *tick != 3),
        "some sub-handler never ran on the final tick: {last:?}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn steadfast_should_run_every_subhandler_on_the_final_tick_and_rest() {
    let (last, runs) = story_641(Variant::Steadfast).await;
    for name in ["sub0", "sub1", "sub2"] {
        let on_final = runs.iter().filter(|(n, t)| n == name && *t == 3).count();
        assert_eq!(on_final, 1, "{name} ran once on the final tick: {runs:?}");
    }
    let expected: Vec<(String, i64)> = ["sub0", "sub1", "sub2"]
        .iter()
        .map(|s| ((*s).to_owned(), 3))
        .collect();
    assert_eq!(last, expected);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn deletion_should_wait_for_the_delete_handler() {
    let (target, api) = tickers().await;
    let traces = tempfile::tempdir().unwrap();
    let cleaned = Arc::new(Notify::new());
    let done = cleaned.clone();
    let operator = Operator::new(api.clone()).trace(traces.path()).on_delete(
        "cleanup",
        Handler::new(move |_ctx: Context<Ticker>| {
            let done = done.clone();
            async move {
                tokio::time::sleep(Duration::from_millis(200)).await;
                done.notify_one();
                Ok::<(), HandlerError>(())
            }
        }),
    );
    let running = tokio::spawn(operator.run());
    create(&api, "d").await;
    // The finalizer goes on first.
    let finalized = async {
        loop {
            let object = api.get("d").await.unwrap();
            if object
                .metadata
                .finalizers
                .iter()
                .flatten()
                .any(|f| f == steadfast::lifecycle::FINALIZER)
            {
                return;
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    };
    tokio::time::timeout(Duration::from_secs(10), finalized)
        .await
        .expect("the finalizer is put on");
    api.delete("d", &DeleteParams::default()).await.unwrap();
    tokio::time::timeout(Duration::from_secs(10), cleaned.notified())
        .await
        .expect("the delete handler runs");
    let gone = async {
        while api.get_opt("d").await.unwrap().is_some() {
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    };
    tokio::time::timeout(Duration::from_secs(10), gone)
        .await
        .expect("the object goes");
    running.abort();
    replayed_and_finished(target, &traces).await;
}

/// Runs of an operator's handlers: (handler id, the essence it saw).
type Seen = Arc<Mutex<Vec<(String, serde_json::Value)>>>;

/// An operator with a handler of each kind on tickers: a create handler; a
/// field handler on `spec.size` whose runs declare sub-handlers `a` and
/// `b`, each taking `work`; an update handler that writes the size into a
/// label; a delete handler. Every run is recorded in `seen`.
fn every_kind(api: &Api<Ticker>, seen: &Seen, work: Duration) -> Operator<Ticker> {
    let record = |seen: &Seen, ctx: &Context<Ticker>| {
        seen.lock()
            .unwrap()
            .push((ctx.handler().to_owned(), ctx.essence().clone()));
    };
    let (s1, s2, s3, s4, s5) = (
        seen.clone(),
        seen.clone(),
        seen.clone(),
        seen.clone(),
        seen.clone(),
    );
    Operator::new(api.clone())
        .on_create(
            "create",
            Handler::new(move |ctx: Context<Ticker>| {
                record(&s1, &ctx);
                async { Ok::<(), HandlerError>(()) }
            }),
        )
        .on_field(
            "spec.size",
            "size",
            Handler::new(move |ctx: Context<Ticker>| {
                record(&s2, &ctx);
                ctx.sub("a");
                ctx.sub("b");
                async { Ok::<(), HandlerError>(()) }
            })
            .sub_handlers(move |ctx: Context<Ticker>| {
                let seen = s3.clone();
                async move {
                    tokio::time::sleep(work).await;
                    record(&seen, &ctx);
                    Ok(())
                }
            }),
        )
        .on_update(
            "label",
            Handler::new(move |ctx: Context<Ticker>| {
                record(&s4, &ctx);
                let size = ctx.new_value("spec.size").cloned().unwrap_or_default();
                ctx.patch(json!({ "metadata": { "labels": { "size": size.to_string() } } }));
                async { Ok::<(), HandlerError>(()) }
            }),
        )
        .on_delete(
            "cleanup",
            Handler::new(move |ctx: Context<Ticker>| {
                record(&s5, &ctx);
                async { Ok::<(), HandlerError>(()) }
            }),
        )
}

/// A test server, a ticker API, a trace directory and the record of runs.
struct Bed {
    target: KubeTarget,
    api: Api<Ticker>,
    traces: tempfile::TempDir,
    seen: Seen,
}

impl Bed {
    async fn new() -> Self {
        let (target, api) = tickers().await;
        Bed {
            target,
            api,
            traces: tempfile::tempdir().unwrap(),
            seen: Arc::default(),
        }
    }

    /// Starts an operator of every kind of handler, as start `incarnation`
    /// of one replica (a pod whose container restarts keeps its name, and
    /// so its claims).
    fn start(&self, incarnation: u32, work: Duration) -> tokio::task::JoinHandle<()> {
        let operator = every_kind(&self.api, &self.seen, work)
            .identity("operator-0")
            .incarnation(incarnation)
            .trace(self.traces.path());
        tokio::spawn(async move {
            operator.run().await.expect("the operator runs");
        })
    }

    /// Waits until the object `name` is handled in full and rests: no
    /// progress records, its diff-base is its essence, and no run for
    /// `quiet`.
    async fn rested(&self, name: &str) -> Ticker {
        let deadline = tokio::time::Instant::now() + Duration::from_secs(30);
        loop {
            assert!(
                tokio::time::Instant::now() < deadline,
                "{name} never rested: {:?}",
                self.seen
            );
            let before = self.seen.lock().unwrap().len();
            tokio::time::sleep(Duration::from_millis(700)).await;
            let object = self.api.get(name).await.unwrap();
            let annotations = object.metadata.annotations.clone().unwrap_or_default();
            let progress = annotations
                .keys()
                .any(|k| k.starts_with("steadfast.dev/progress."));
            let quiet = self.seen.lock().unwrap().len() == before;
            if !progress && quiet && annotations.contains_key("steadfast.dev/diff-base") {
                return object;
            }
        }
    }

    /// How many runs of `handler` saw `size`.
    fn runs_on(&self, handler: &str, size: i64) -> usize {
        self.seen
            .lock()
            .unwrap()
            .iter()
            .filter(|(h, e)| h == handler && e["spec"]["size"] == size)
            .count()
    }

    /// Replays every trace, keeps them if asked, and stops the server.
    async fn finish(self, prefix: &str) {
        steadfast_tests::keep_traces(self.traces.path(), prefix);
        assert!(replay_all(self.traces.path(), true) > 0);
        self.target.finish().await;
    }
}

/// Every handler of `every_kind` ran on size `size`, exactly `times` times
/// each (the update handler only if `updated`).
fn assert_handled_once(bed: &Bed, size: i64, updated: bool) {
    let mut handlers = vec!["size", "size/a", "size/b"];
    if updated {
        handlers.push("label");
    }
    for handler in handlers {
        assert_eq!(
            bed.runs_on(handler, size),
            1,
            "{handler} on {size}: {:?}",
            bed.seen
        );
    }
}

/// The resource name of tickers, for faults.
const TICKERS: &str = "tickers.lifecycle.steadfast.dev";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_operator_killed_mid_handler_should_resume_from_the_annotations() {
    let bed = Bed::new().await;
    let first = bed.start(1, Duration::from_millis(600));
    create(&bed.api, "k").await;
    // Kill it while sub-handler `a` works (after the parent's plan is
    // written).
    let started = async {
        loop {
            let object = bed.api.get("k").await.unwrap();
            let annotations = object.metadata.annotations.unwrap_or_default();
            if annotations.keys().any(|k| k.contains("progress.size.")) {
                return;
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    };
    tokio::time::timeout(Duration::from_secs(10), started)
        .await
        .expect("the plan is written");
    tokio::time::sleep(Duration::from_millis(100)).await;
    first.abort();
    let _ = first.await;
    let second = bed.start(2, Duration::from_millis(50));
    bed.rested("k").await;
    second.abort();
    // The parent's plan survived the crash: it did not run again; each
    // sub-handler finished once (the killed run of `a` never returned).
    assert_handled_once(&bed, 1, false);
    assert_eq!(bed.runs_on("create", 1), 1, "{:?}", bed.seen);
    bed.finish("lifecycle-killed-").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_storm_of_conflicts_should_neither_lose_nor_repeat_a_run() {
    let bed = Bed::new().await;
    let Some(server) = bed.target.server("a storm of conflicts") else {
        return;
    };
    let operator = bed.start(1, Duration::from_millis(50));
    create(&bed.api, "c").await;
    let conflicts = Fault::Conflicts {
        resource: TICKERS.into(),
        namespace: Some(bed.target.namespace.clone()),
        name: "c".into(),
        count: 6,
        spare_status: false,
    };
    server.inject(conflicts).unwrap();
    bed.rested("c").await;
    operator.abort();
    steadfast_tests::keep_traces(bed.traces.path(), "lifecycle-conflicts-");
    assert_handled_once(&bed, 1, false);
    bed.finish("lifecycle-conflicts-").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_expired_watch_and_a_paused_server_should_be_ridden_out() {
    let bed = Bed::new().await;
    let Some(server) = bed.target.server("an expired watch and a paused server") else {
        return;
    };
    let operator = bed.start(1, Duration::from_millis(200));
    create(&bed.api, "e").await;
    tokio::time::sleep(Duration::from_millis(300)).await;
    server.inject(Fault::ExpireWatches).unwrap();
    server.inject(Fault::Pause).unwrap();
    tokio::time::sleep(Duration::from_millis(800)).await;
    server.inject(Fault::Resume).unwrap();
    bed.rested("e").await;
    operator.abort();
    assert_handled_once(&bed, 1, false);
    bed.finish("lifecycle-expired-").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_foreign_writer_and_an_edit_should_end_in_the_final_essence_handled() {
    let bed = Bed::new().await;
    let operator = bed.start(1, Duration::from_millis(150));
    create(&bed.api, "f").await;
    bed.rested("f").await;
    // An edit, and meanwhile another controller labels the object.
    bed.api
        .patch(
            "f",
            &PatchParams::default(),
            &Patch::Merge(json!({ "spec": { "size": 2 } })),
        )
        .await
        .unwrap();
    tokio::time::sleep(Duration::from_millis(100)).await;
    // Another writer's merge patch, with no precondition.
    let foreign = json!({ "metadata": { "labels": { "team": "blue" } } });
    bed.api
        .patch("f", &PatchParams::default(), &Patch::Merge(&foreign))
        .await
        .unwrap();
    let object = bed.rested("f").await;
    operator.abort();
    let labels = object.metadata.labels.unwrap_or_default();
    assert_eq!(
        labels.get("size").map(String::as_str),
        Some("2"),
        "the update handler's write"
    );
    assert_eq!(labels.get("team").map(String::as_str), Some("blue"));
    // The size handler and its plan ran on size 2 once; the update
    // handler's last run saw the foreign label.
    assert_handled_once(&bed, 2, false);
    let last_label_run = bed
        .seen
        .lock()
        .unwrap()
        .iter()
        .rev()
        .find(|(h, _)| h == "label")
        .cloned()
        .expect("the update handler ran");
    assert_eq!(last_label_run.1["metadata"]["labels"]["team"], "blue");
    bed.finish("lifecycle-foreign-").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_handler_that_hangs_should_be_given_up_at_its_timeout() {
    let (target, api) = tickers().await;
    let traces = tempfile::tempdir().unwrap();
    let operator = Operator::new(api.clone()).trace(traces.path()).on_field(
        "spec.size",
        "stuck",
        Handler::new(|_ctx: Context<Ticker>| async {
            tokio::time::sleep(Duration::from_secs(3600)).await;
            Ok::<(), HandlerError>(())
        })
        .timeout(Duration::from_millis(500)),
    );
    let running = tokio::spawn(operator.run());
    create(&api, "h").await;
    handled_in_full(
        &api,
        "h",
        "the hung handler is given up and the object handled",
    )
    .await;
    running.abort();
    replayed_and_finished(target, &traces).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn deletion_while_handlers_run_should_run_the_delete_handler_then_a_new_object_start_afresh()
{
    let bed = Bed::new().await;
    let operator = bed.start(1, Duration::from_millis(300));
    create(&bed.api, "x").await;
    tokio::time::sleep(Duration::from_millis(400)).await;
    bed.api.delete("x", &DeleteParams::default()).await.unwrap();
    let gone = async {
        while bed.api.get_opt("x").await.unwrap().is_some() {
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    };
    tokio::time::timeout(Duration::from_secs(15), gone)
        .await
        .expect("the object goes");
    assert_eq!(bed.runs_on("cleanup", 1), 1, "{:?}", bed.seen);
    // A new object of the same name is a new object: handled afresh.
    create(&bed.api, "x").await;
    bed.rested("x").await;
    operator.abort();
    assert_eq!(bed.runs_on("create", 1), 2, "{:?}", bed.seen);
    bed.finish("lifecycle-deleted-").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn many_objects_should_each_be_handled_once() {
    let bed = Bed::new().await;
    let operator = bed.start(1, Duration::from_millis(20));
    let names: Vec<String> = (0..12).map(|i| format!("m{i}")).collect();
    for name in &names {
        create(&bed.api, name).await;
    }
    for name in &names {
        bed.rested(name).await;
    }
    operator.abort();
    for handler in ["create", "size", "size/a", "size/b"] {
        let runs = bed
            .seen
            .lock()
            .unwrap()
            .iter()
            .filter(|(h, _)| h == handler)
            .count();
        assert_eq!(runs, names.len(), "{handler}");
    }
    bed.finish("lifecycle-many-").await;
}

/// The first Event of `reason` on object `name` whose note says `words`,
/// once one is posted (polled).
async fn event_told(
    target: &KubeTarget,
    name: &str,
    reason: &str,
    words: &str,
) -> k8s_openapi::api::events::v1::Event {
    use k8s_openapi::api::events::v1::Event as K8sEvent;
    use kube::api::ListParams;
    let events: Api<K8sEvent> = Api::namespaced(target.client.clone(), &target.namespace);
    loop {
        let listed = events.list(&ListParams::default()).await.unwrap();
        let found = listed.items.into_iter().find(|e| {
            e.reason.as_deref() == Some(reason)
                && e.regarding.as_ref().and_then(|r| r.name.as_deref()) == Some(name)
                && e.note.as_deref().is_some_and(|n| n.contains(words))
        });
        if let Some(event) = found {
            return event;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// A handler that counts its attempts in `attempts` and ends the `n`th as
/// `outcome(n)` says (1 for the first).
fn counted(
    attempts: &Arc<Mutex<u32>>,
    outcome: fn(u32) -> Result<(), HandlerError>,
) -> Handler<Ticker> {
    let attempts = attempts.clone();
    Handler::new(move |_ctx: Context<Ticker>| {
        let attempt = {
            let mut attempts = attempts.lock().unwrap();
            *attempts += 1;
            *attempts
        };
        async move { outcome(attempt) }
    })
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_handler_that_panics_once_should_be_retried_and_succeed() {
    let (target, api) = tickers().await;
    let traces = tempfile::tempdir().unwrap();
    let attempts = Arc::new(Mutex::new(0));
    let operator = Operator::new(api.clone()).trace(traces.path()).on_field(
        "spec.size",
        "fragile",
        counted(&attempts, |attempt| {
            assert!(attempt > 1, "the first attempt trips over a bug");
            Ok(())
        }),
    );
    let running = tokio::spawn(operator.run());
    create(&api, "p").await;
    handled_in_full(&api, "p", "the panicked handler is retried and succeeds").await;
    let retrying = tokio::time::timeout(
        Duration::from_secs(10),
        event_told(
            &target,
            "p",
            "HandlerRetrying",
            "the handler panicked: the first attempt trips over a bug",
        ),
    )
    .await
    .expect("a HandlerRetrying event that says the handler panicked");
    assert_eq!(retrying.type_.as_deref(), Some("Warning"));
    assert_eq!(*attempts.lock().unwrap(), 2, "retried once, then done");
    running.abort();
    replayed_and_finished(target, &traces).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_handler_failure_should_be_told_in_an_event_and_kept_in_its_record() {
    use steadfast_spec::lifecycle::annotations::progress_key;
    let (target, api) = tickers().await;
    let traces = tempfile::tempdir().unwrap();
    let attempts = Arc::new(Mutex::new(0));
    let operator = Operator::new(api.clone()).trace(traces.path()).on_field(
        "spec.size",
        "flaky",
        counted(&attempts, |attempt| {
            Err(if attempt == 1 {
                HandlerError::temporary("the registry is busy", Duration::from_secs(2))
            } else {
                HandlerError::permanent("spec.size must be even")
            })
        }),
    );
    let running = tokio::spawn(operator.run());
    create(&api, "f").await;
    let key = progress_key("flaky").unwrap();
    let kept = async {
        loop {
            let object = api.get("f").await.unwrap();
            let annotations = object.metadata.annotations.unwrap_or_default();
            if let Some(record) = annotations.get(&key) {
                let record: serde_json::Value = serde_json::from_str(record).unwrap();
                if record["error"] == "the registry is busy" {
                    return record;
                }
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    };
    let record = tokio::time::timeout(Duration::from_secs(10), kept)
        .await
        .expect("the failure's message is kept in the handler's progress record");
    assert!(record["delayedUntil"].is_u64(), "{record}");
    let told = |reason, words| event_told(&target, "f", reason, words);
    let retrying = tokio::time::timeout(
        Duration::from_secs(10),
        told("HandlerRetrying", "the registry is busy"),
    )
    .await
    .expect("a HandlerRetrying event on the object");
    assert_eq!(retrying.type_.as_deref(), Some("Warning"));
    assert_eq!(
        retrying.reporting_controller.as_deref(),
        Some(steadfast::lifecycle::DEFAULT_REPORTER)
    );
    tokio::time::timeout(
        Duration::from_secs(10),
        told("HandlerFailed", "spec.size must be even"),
    )
    .await
    .expect("a HandlerFailed event once the engine gives the handler up");
    assert_eq!(
        *attempts.lock().unwrap(),
        2,
        "a permanent failure is not retried"
    );
    running.abort();
    replayed_and_finished(target, &traces).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_operator_s_metrics_should_move_as_it_works_and_its_probe_turn_ready() {
    use steadfast::metrics::MetricsEndpoint;
    use steadfast_tests::scrape::{get, sample};
    let (target, api) = tickers().await;
    let endpoint = MetricsEndpoint::bind("127.0.0.1:0").await.unwrap();
    let address = endpoint.local_addr();
    let operator = Operator::new(api.clone()).metrics(endpoint).on_field(
        "spec.size",
        "size",
        Handler::new(|_ctx: Context<Ticker>| async { Ok::<(), HandlerError>(()) }),
    );
    let running = tokio::spawn(operator.run());
    let ready = async {
        while get(address, "/readyz").await.0 != 200 {
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    };
    tokio::time::timeout(Duration::from_secs(10), ready)
        .await
        .expect("/readyz turns ready once the first list is in");
    assert_eq!(get(address, "/healthz").await.0, 200);
    let (code, before) = get(address, "/metrics").await;
    assert_eq!(code, 200);
    let runs = r#"steadfast_lifecycle_runs_total{handler="size",outcome="success"}"#;
    assert_eq!(sample(&before, runs), None, "nothing ran yet:\n{before}");
    create(&api, "m").await;
    // `create` sets the status after the object exists, so the run's commit
    // may meet a 409 and land on the next patch: wait for an applied one.
    let applied = r#"steadfast_lifecycle_patches_total{answer="applied"}"#;
    let moved = async {
        loop {
            let (_, text) = get(address, "/metrics").await;
            if sample(&text, runs).is_some() && sample(&text, applied) >= Some(1.0) {
                return text;
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    };
    let after = tokio::time::timeout(Duration::from_secs(10), moved)
        .await
        .expect("the run is counted and its outcome written");
    assert_eq!(sample(&after, runs), Some(1.0), "one run:\n{after}");
    assert_eq!(
        sample(&after, "steadfast_lifecycle_objects"),
        Some(1.0),
        "{after}"
    );
    assert!(
        sample(
            &after,
            r#"steadfast_lifecycle_run_duration_seconds_count{handler="size"}"#
        ) == Some(1.0),
        "{after}"
    );
    api.delete("m", &DeleteParams::default()).await.unwrap();
    let forgotten = async {
        loop {
            let (_, text) = get(address, "/metrics").await;
            if sample(&text, "steadfast_lifecycle_objects") == Some(0.0) {
                return;
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    };
    tokio::time::timeout(Duration::from_secs(10), forgotten)
        .await
        .expect("a deleted object's driver ends and is no longer counted");
    running.abort();
    target.finish().await;
}

/// The inputs of every engine's trace in `dir` that are of `kind` (an
/// [`Input`](steadfast_spec::lifecycle::Input) variant's name), as JSON.
fn inputs_of(dir: &Path, kind: &str) -> Vec<serde_json::Value> {
    let mut found = Vec::new();
    for entry in std::fs::read_dir(dir).unwrap() {
        let text = std::fs::read_to_string(entry.unwrap().path()).unwrap();
        // The engines are still writing: a last line without its newline is
        // a record not finished yet.
        let complete = text
            .split_inclusive('\n')
            .filter(|line| line.ends_with('\n'));
        for line in complete {
            let record: serde_json::Value = serde_json::from_str(line).unwrap();
            if let Some(input) = record["input"].get(kind) {
                found.push(input.clone());
            } else if record["input"] == kind {
                // A unit variant (`Gone`) is written as its name.
                found.push(serde_json::Value::Null);
            }
        }
    }
    found
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_patch_refused_for_good_should_be_told_and_not_sent_again_until_the_object_changes() {
    let (target, api) = tickers().await;
    let traces = tempfile::tempdir().unwrap();
    // Its write makes the annotations larger than the API server allows
    // (256 KiB): the engine's patch is answered 422, however often sent.
    let operator = Operator::new(api.clone()).trace(traces.path()).on_field(
        "spec.size",
        "bloat",
        Handler::new(|ctx: Context<Ticker>| async move {
            let huge = "x".repeat(300 * 1024);
            ctx.patch(json!({ "metadata": { "annotations": { "example.com/huge": huge } } }));
            Ok::<(), HandlerError>(())
        }),
    );
    let running = tokio::spawn(operator.run());
    create(&api, "r").await;
    let refusals = || inputs_of(traces.path(), "PatchRefused");
    let first = async {
        while refusals().is_empty() {
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    };
    tokio::time::timeout(Duration::from_secs(10), first)
        .await
        .expect("the patch is refused");
    // `create` sets the status after the object is made: a change of its
    // own, which may come after the first refusal and be tried once more.
    tokio::time::sleep(Duration::from_millis(500)).await;
    let settled = refusals();
    assert!(settled.len() <= 2, "{settled:?}");
    assert!(
        settled[0]["message"]
            .as_str()
            .unwrap()
            .starts_with("422 Invalid"),
        "{settled:?}"
    );
    // 10 s of an object that refuses the patch and does not change: not
    // sent again.
    tokio::time::sleep(Duration::from_secs(10)).await;
    assert_eq!(refusals().len(), settled.len(), "sent again unchanged");
    eprintln!(
        "the patch was answered 422 {} time(s), then not sent again for 10 s",
        settled.len()
    );
    // The object changes: the handler runs on it, and its patch is tried
    // (and refused) once more.
    api.patch(
        "r",
        &PatchParams::default(),
        &Patch::Merge(json!({ "spec": { "size": 2 } })),
    )
    .await
    .unwrap();
    let again = async {
        while refusals().len() <= settled.len() {
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    };
    tokio::time::timeout(Duration::from_secs(10), again)
        .await
        .expect("a change of the object is tried again");
    tokio::time::sleep(Duration::from_secs(1)).await;
    assert_eq!(refusals().len(), settled.len() + 1);
    running.abort();
    replayed_and_finished(target, &traces).await;
}

/// A handler that counts its runs in `runs`, tells `began` of each, and
/// returns once `go` is notified.
fn held(runs: &Arc<Mutex<u32>>, began: &Arc<Notify>, go: &Arc<Notify>) -> Handler<Ticker> {
    let (runs, began, go) = (runs.clone(), began.clone(), go.clone());
    Handler::new(move |_ctx: Context<Ticker>| {
        let (runs, began, go) = (runs.clone(), began.clone(), go.clone());
        async move {
            *runs.lock().unwrap() += 1;
            began.notify_one();
            go.notified().await;
            Ok::<(), HandlerError>(())
        }
    })
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_burst_of_429_should_be_waited_out_as_the_server_says() {
    let (target, api) = tickers().await;
    let Some(server) = target.server("a burst of 429") else {
        return;
    };
    // The operator's client, which hands the server's first answer and its
    // Retry-After header to the engine: kube-rs's default one would wait
    // out the 429s by itself before the engine hears.
    let config = kube::Config::new(server.url().parse().unwrap());
    let quiet: Api<Ticker> = Api::namespaced(
        steadfast::lifecycle::client(config).unwrap(),
        &target.namespace,
    );
    let traces = tempfile::tempdir().unwrap();
    let (started, release) = (Arc::new(Notify::new()), Arc::new(Notify::new()));
    let operator = Operator::new(quiet).trace(traces.path()).on_field(
        "spec.size",
        "slow",
        held(&Arc::default(), &started, &release),
    );
    let running = tokio::spawn(operator.run());
    create(&api, "t").await;
    started.notified().await;
    // The claim was taken before the run.
    let before = inputs_of(traces.path(), "PatchApplied").len();
    // The next requests (the engine's patch, and whatever else the operator
    // asks meanwhile, its watch among them) are told to wait a second.
    server
        .inject(Fault::TooManyRequests {
            count: 3,
            retry_after_seconds: 1,
        })
        .unwrap();
    let returned = tokio::time::Instant::now();
    release.notify_one();
    // Watched in the traces, not by asking the server (which would take
    // the 429 itself).
    let written = async {
        while inputs_of(traces.path(), "PatchApplied").len() == before {
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    };
    tokio::time::timeout(Duration::from_secs(10), written)
        .await
        .expect("written once the server serves again");
    let waited = returned.elapsed();
    let mut throttled = inputs_of(traces.path(), "PatchThrottled");
    throttled.extend(inputs_of(traces.path(), "FetchFailed"));
    assert!(!throttled.is_empty(), "the engine heard the 429");
    assert!(
        throttled.iter().all(|t| t["retry_after"] == json!(1000)),
        "{throttled:?}"
    );
    assert!(waited >= Duration::from_millis(950), "{waited:?}");
    running.abort();
    replayed_and_finished(target, &traces).await;
}

/// The network between the operator and the API server fails while a run
/// is under way: the engine's patch, and the reads after it, get no answer.
/// The engine hears each as the client's error, of its kind and in its
/// words; it waits before each next request, and once the network is back
/// the run's outcome is written, the handler having run once.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_patch_whose_connection_is_cut_should_be_heard_as_unanswered_and_written_once_back() {
    let (target, api) = tickers().await;
    let Some(server) = target.server("a cut connection") else {
        return;
    };
    let proxy = TcpProxy::start(server.address()).await.unwrap();
    let config = kube::Config::new(format!("http://{}", proxy.address()).parse().unwrap());
    let cut: Api<Ticker> = Api::namespaced(
        steadfast::lifecycle::client(config).unwrap(),
        &target.namespace,
    );
    let traces = tempfile::tempdir().unwrap();
    let runs = Arc::new(Mutex::new(0));
    let (started, release) = (Arc::new(Notify::new()), Arc::new(Notify::new()));
    let operator = Operator::new(cut).trace(traces.path()).on_field(
        "spec.size",
        "slow",
        held(&runs, &started, &release),
    );
    let running = tokio::spawn(operator.run());
    create(&api, "t").await;
    started.notified().await;
    proxy.set(Mode::Cut);
    release.notify_one();
    let unanswered = || inputs_of(traces.path(), "PatchUnanswered");
    let heard = async {
        while unanswered().is_empty() {
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    };
    tokio::time::timeout(Duration::from_secs(10), heard)
        .await
        .expect("the engine hears that its patch got no answer");
    // Two seconds without a network: the engine reads after a wait that
    // doubles from 200 ms (at 0.2, 0.6 and 1.4 s; the next at 3 s), not at
    // once (a read at once would make a fourth by 1.4 s) and not on and on.
    tokio::time::sleep(Duration::from_secs(2)).await;
    let failed_reads = inputs_of(traces.path(), "FetchFailed");
    proxy.set(Mode::Forward);
    let heard = unanswered();
    assert_eq!(heard.len(), 1, "{heard:?}");
    assert_eq!(heard[0]["error"], "NoAnswer", "{heard:?}");
    assert!(
        heard[0]["message"].as_str().is_some_and(|m| !m.is_empty()),
        "the client's words are kept: {heard:?}"
    );
    assert!(
        (2..=3).contains(&failed_reads.len()),
        "reads asked again after a wait: {failed_reads:?}"
    );
    assert!(
        failed_reads
            .iter()
            .all(|read| read["retry_after"].is_null() && read["message"].is_string()),
        "{failed_reads:?}"
    );
    handled_in_full(&api, "t", "written once the network is back").await;
    assert_eq!(*runs.lock().unwrap(), 1, "the handler ran once");
    eprintln!(
        "a cut network: the patch heard as {} ({}), {} read(s) failed in 2 s, the outcome written once back",
        heard[0]["error"],
        heard[0]["message"],
        failed_reads.len()
    );
    running.abort();
    replayed_and_finished(target, &traces).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_run_past_its_deadline_should_be_cancelled() {
    let (target, api) = tickers().await;
    let traces = tempfile::tempdir().unwrap();
    let ticks = Arc::new(Mutex::new(0u32));
    let told = Arc::new(Mutex::new(false));
    let (counted, heard) = (ticks.clone(), told.clone());
    let operator = Operator::new(api.clone()).trace(traces.path()).on_field(
        "spec.size",
        "endless",
        Handler::new(move |ctx: Context<Ticker>| {
            let (counted, heard) = (counted.clone(), heard.clone());
            async move {
                // Work of its own elsewhere, stopped by the signal.
                let signal = ctx.clone();
                tokio::spawn(async move {
                    signal.cancelled().await;
                    *heard.lock().unwrap() = true;
                });
                loop {
                    *counted.lock().unwrap() += 1;
                    tokio::time::sleep(Duration::from_millis(20)).await;
                }
            }
        })
        .timeout(Duration::from_millis(400)),
    );
    let running = tokio::spawn(operator.run());
    create(&api, "c").await;
    handled_in_full(&api, "c", "given up at its deadline").await;
    let at_cancel = *ticks.lock().unwrap();
    assert!(at_cancel > 0);
    tokio::time::sleep(Duration::from_millis(500)).await;
    assert_eq!(*ticks.lock().unwrap(), at_cancel, "the run stopped");
    assert!(
        *told.lock().unwrap(),
        "the context told the handler's own work"
    );
    running.abort();
    replayed_and_finished(target, &traces).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_object_deleted_while_the_watch_was_away_should_end_its_driver() {
    let (target, api) = tickers().await;
    let Some(server) = target.server("a deletion during a watch gap") else {
        return;
    };
    let traces = tempfile::tempdir().unwrap();
    let operator = Operator::new(api.clone()).trace(traces.path()).on_field(
        "spec.size",
        "sync",
        Handler::new(|_ctx: Context<Ticker>| async { Ok::<(), HandlerError>(()) }),
    );
    let running = tokio::spawn(operator.run());
    create(&api, "g").await;
    handled_in_full(&api, "g", "handled before the gap").await;
    // The watch is kept away (its reconnect held), the object is deleted,
    // and the history it would resume from is forgotten: it must relist,
    // and no event of the deletion will come.
    server.inject(Fault::Pause).unwrap();
    server.inject(Fault::CloseWatches).unwrap();
    tokio::time::sleep(Duration::from_millis(200)).await;
    server
        .inject(Fault::ForeignDelete {
            resource: "tickers.lifecycle.steadfast.dev".into(),
            namespace: Some(target.namespace.clone()),
            name: "g".into(),
        })
        .unwrap();
    server.inject(Fault::ExpireWatches).unwrap();
    server.inject(Fault::Resume).unwrap();
    let ended = async {
        while inputs_of(traces.path(), "Gone").is_empty() {
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    };
    tokio::time::timeout(Duration::from_secs(10), ended)
        .await
        .expect("the relist, which misses the object, ends its driver");
    // The engine was told of the relist and read the object before it gave
    // the object up.
    assert!(!inputs_of(traces.path(), "Unlisted").is_empty());
    running.abort();
    replayed_and_finished(target, &traces).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn unreadable_annotations_should_be_marked_and_the_mark_cleared_once_fixed() {
    let (target, api) = tickers().await;
    let traces = tempfile::tempdir().unwrap();
    let runs = Arc::new(Mutex::new(0));
    let operator = Operator::new(api.clone()).trace(traces.path()).on_field(
        "spec.size",
        "sync",
        counted(&runs, |_| Ok(())),
    );
    // Made with an annotation under steadfast's prefix that no version of
    // it writes: nothing may run on a guess of its progress.
    let mut ticker = Ticker::new("u", TickerSpec { size: 1 });
    ticker.metadata.annotations =
        Some([("steadfast.dev/surprise".to_owned(), "x".to_owned())].into());
    api.create(&PostParams::default(), &ticker).await.unwrap();
    let running = tokio::spawn(operator.run());
    let marked = annotations_once(&api, "u", "marked", |a| {
        a.contains_key("steadfast.dev/error")
    })
    .await;
    assert!(
        marked["steadfast.dev/error"].contains("steadfast.dev/surprise"),
        "{marked:?}"
    );
    assert_eq!(
        *runs.lock().unwrap(),
        0,
        "nothing runs on unreadable progress"
    );
    // Fixed by its user: handled, and the mark cleared by the engine.
    api.patch(
        "u",
        &PatchParams::default(),
        &Patch::Merge(json!({ "metadata": { "annotations": { "steadfast.dev/surprise": null } } })),
    )
    .await
    .unwrap();
    handled_in_full(&api, "u", "handled once readable").await;
    annotations_once(&api, "u", "the mark cleared", |a| {
        !a.contains_key("steadfast.dev/error")
    })
    .await;
    assert_eq!(*runs.lock().unwrap(), 1);
    running.abort();
    replayed_and_finished(target, &traces).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_status_write_should_land_through_the_status_subresource() {
    let (target, api) = tickers().await;
    let traces = tempfile::tempdir().unwrap();
    // The Ticker CRD has a status subresource: a status in a patch of the
    // main resource would be dropped by the API server.
    let operator = Operator::new(api.clone()).trace(traces.path()).on_field(
        "spec.size",
        "report",
        Handler::new(|ctx: Context<Ticker>| async move {
            ctx.patch(
                json!({ "status": { "tick": 42 }, "metadata": { "labels": { "seen": "yes" } } }),
            );
            Ok::<(), HandlerError>(())
        }),
    );
    let running = tokio::spawn(operator.run());
    create(&api, "s").await;
    handled_in_full(&api, "s", "the handler's write lands with its outcome").await;
    let object = api.get("s").await.unwrap();
    assert_eq!(object.status.map(|s| s.tick), Some(42));
    assert_eq!(
        object
            .metadata
            .labels
            .unwrap_or_default()
            .get("seen")
            .map(String::as_str),
        Some("yes"),
        "the rest of the write lands on the main resource"
    );
    running.abort();
    replayed_and_finished(target, &traces).await;
}

/// How many patches were refused with 409 after a run returned, in the
/// traces in `dir` (each of one engine, in order).
fn conflicts_after_the_run(dir: &Path) -> usize {
    let mut conflicts = 0;
    for path in steadfast_tests::traces_in(dir) {
        let text = std::fs::read_to_string(path).unwrap();
        let inputs = text
            .lines()
            .filter_map(|line| serde_json::from_str::<serde_json::Value>(line).ok())
            .map(|record| record["input"].clone());
        conflicts += inputs
            .skip_while(|input| input.get("HandlerDone").is_none())
            .filter(|input| input == "PatchConflict")
            .count();
    }
    conflicts
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_failure_between_the_status_write_and_the_rest_should_write_the_outcome_again_not_run_it()
{
    let (target, api) = tickers().await;
    let Some(server) = target.server("a failure between the status write and the rest") else {
        return;
    };
    let traces = tempfile::tempdir().unwrap();
    let runs = Arc::new(Mutex::new(0));
    let (began, go) = (Arc::new(Notify::new()), Arc::new(Notify::new()));
    let operator = Operator::new(api.clone()).trace(traces.path()).on_field(
        "spec.size",
        "report",
        Handler::new({
            let (runs, began, go) = (runs.clone(), began.clone(), go.clone());
            move |ctx: Context<Ticker>| {
                *runs.lock().unwrap() += 1;
                let (began, go) = (began.clone(), go.clone());
                async move {
                    began.notify_one();
                    go.notified().await;
                    ctx.patch(json!({
                        "status": { "tick": 42 },
                        "metadata": { "labels": { "seen": "yes" } }
                    }));
                    Ok::<(), HandlerError>(())
                }
            }
        }),
    );
    // Created (its status set) before the operator starts, so that no
    // write of the test's comes between the engine's.
    create(&api, "s").await;
    let running = tokio::spawn(operator.run());
    began.notified().await;
    // The claim was taken before the run. The next write of the object
    // itself is refused, its status subresource's served: the run's patch
    // lands its status, and its rest (the record) is refused.
    server
        .inject(Fault::Conflicts {
            resource: TICKERS.into(),
            namespace: Some(target.namespace.clone()),
            name: "s".into(),
            count: 1,
            spare_status: true,
        })
        .unwrap();
    go.notify_one();
    handled_in_full(&api, "s", "the outcome written again").await;
    let object = api.get("s").await.unwrap();
    assert_eq!(object.status.map(|s| s.tick), Some(42));
    let labels = object.metadata.labels.unwrap_or_default();
    assert_eq!(labels.get("seen").map(String::as_str), Some("yes"));
    assert_eq!(
        conflicts_after_the_run(traces.path()),
        1,
        "the rest refused once"
    );
    assert_eq!(*runs.lock().unwrap(), 1, "the handler is not run again");
    running.abort();
    replayed_and_finished(target, &traces).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_update_handler_that_writes_status_should_run_once_per_edit() {
    let (target, api) = tickers().await;
    let traces = tempfile::tempdir().unwrap();
    let runs = Arc::new(Mutex::new(0));
    let operator = Operator::new(api.clone()).trace(traces.path()).on_update(
        "report",
        Handler::new({
            let runs = runs.clone();
            move |ctx: Context<Ticker>| {
                *runs.lock().unwrap() += 1;
                // No field handler watches `status.tick`: it is not in the
                // essence, and its write must not look like a change.
                ctx.patch(json!({ "status": { "tick": 42 } }));
                async { Ok::<(), HandlerError>(()) }
            }
        }),
    );
    create(&api, "u").await;
    let running = tokio::spawn(operator.run());
    handled_in_full(&api, "u", "created").await;
    let edit = json!({ "spec": { "size": 2 } });
    api.patch("u", &PatchParams::default(), &Patch::Merge(&edit))
        .await
        .unwrap();
    let annotations = annotations_once(&api, "u", "the edit handled", |a| {
        a.get("steadfast.dev/diff-base")
            .is_some_and(|base| base.contains(r#""size":2"#))
    })
    .await;
    assert!(
        !annotations["steadfast.dev/diff-base"].contains("status"),
        "the diff-base is the essence, without the unwatched status"
    );
    // A handler that took its own write for a change would run on and on.
    tokio::time::sleep(Duration::from_secs(1)).await;
    assert_eq!(*runs.lock().unwrap(), 1, "the update handler runs once");
    assert_eq!(api.get("u").await.unwrap().status.map(|s| s.tick), Some(42));
    running.abort();
    replayed_and_finished(target, &traces).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_graceful_stop_should_finish_the_run_write_it_and_leave_nothing_to_repeat() {
    let (target, api, traces, runs, started) = story_bed().await;
    let operator = |runs: Runs, started: Arc<Notify>, incarnation| {
        Operator::new(api.clone())
            .trace(traces.path())
            .incarnation(incarnation)
            .on_field(
                "status.tick",
                "tick",
                tick_handler("operator", runs, started, Duration::from_millis(600)),
            )
    };
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    let first = operator(runs.clone(), started.clone(), 1).shutdown_on(async {
        let _ = stopped.await;
    });
    let running = tokio::spawn(first.run());
    create(&api, "stop").await;
    // The first sub-handler is running: stop now.
    started.notified().await;
    let asked = tokio::time::Instant::now();
    stop.send(()).unwrap();
    tokio::time::timeout(Duration::from_secs(10), running)
        .await
        .expect("it stops within its grace")
        .unwrap()
        .expect("a clean stop");
    assert!(
        asked.elapsed() >= Duration::from_millis(300),
        "it let the run finish"
    );
    assert_eq!(
        last_ticks(&runs),
        [("sub0".to_owned(), 1)],
        "the run in flight finished, and no other started"
    );
    // Its successor goes on from the annotations: the finished sub-handler
    // is not run again.
    let successor = tokio::spawn(operator(runs.clone(), started, 2).run());
    settle(&runs, Duration::from_millis(1500), Duration::from_secs(20)).await;
    let names: Vec<String> = ticks_of(&runs).into_iter().map(|(n, _)| n).collect();
    assert_eq!(names, ["sub0", "sub1", "sub2"], "each sub-handler ran once");
    successor.abort();
    replayed_and_finished(target, &traces).await;
}

/// Asserts that no two logged runs of one object overlap in time, whichever
/// replicas ran them (from the handlers' own logs).
/// Runs of an object ran under claims whose epochs never go back, in the
/// order they started: a store fencing on them takes every run's writes.
fn assert_fenced(runs: &Runs) {
    let mut spans = runs.lock().unwrap().clone();
    spans.sort_by_key(|r| (r.object.clone(), r.span.0));
    for pair in spans.windows(2) {
        let (a, b) = (&pair[0], &pair[1]);
        assert!(a.epoch >= 1, "a run under a claim has an epoch: {a:?}");
        assert!(
            a.object != b.object || a.epoch <= b.epoch,
            "a later run of {} has a smaller epoch: {a:?} then {b:?}",
            a.object
        );
    }
}

fn assert_no_overlap(runs: &Runs) {
    let mut spans = runs.lock().unwrap().clone();
    spans.sort_by_key(|r| (r.object.clone(), r.span.0));
    for pair in spans.windows(2) {
        let (a, b) = (&pair[0], &pair[1]);
        assert!(
            a.object != b.object || a.span.1 <= b.span.0,
            "two runs of {} overlap: {a:?} and {b:?}",
            a.object
        );
    }
}

/// Replica `name` (start `incarnation`) of an operator of #641's handler,
/// on a client of its own, with claims of `claim` and a drift of a tenth
/// of it.
async fn tick_replica(
    target: &KubeTarget,
    name: &'static str,
    incarnation: u32,
    (runs, started): (&Runs, &Arc<Notify>),
    claim: Duration,
    traces: &Path,
) -> Operator<Ticker> {
    let api = Api::namespaced(target.another_client().await, &target.namespace);
    let work = Duration::from_millis(300);
    Operator::new(api)
        .identity(name)
        .incarnation(incarnation)
        .claims(claim, claim / 10)
        .trace(traces)
        .on_field(
            "status.tick",
            "tick",
            tick_handler(name, runs.clone(), started.clone(), work),
        )
}

/// Which replicas ran what, for the test's output.
fn by_replica(runs: &Runs) -> Vec<(&'static str, String, i64)> {
    let runs = runs.lock().unwrap();
    runs.iter()
        .map(|r| (r.replica, r.name.clone(), r.tick))
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_replicas_should_run_every_subhandler_once_on_the_final_tick_and_never_at_once() {
    let (target, api, traces, runs, started) = story_bed().await;
    let shared = (&runs, &started);
    let claim = steadfast::lifecycle::DEFAULT_CLAIM;
    let a = tick_replica(&target, "replica-a", 1, shared, claim, traces.path()).await;
    let b = tick_replica(&target, "replica-b", 2, shared, claim, traces.path()).await;
    let (a, b) = (tokio::spawn(a.run()), tokio::spawn(b.run()));
    create(&api, "t").await;
    // While the first sub-handler works on tick 1, the tick moves twice.
    started.notified().await;
    set_tick(&api, "t", 2).await;
    set_tick(&api, "t", 3).await;
    settle(&runs, Duration::from_secs(2), Duration::from_secs(30)).await;
    a.abort();
    b.abort();
    eprintln!("runs by replica: {:?}", by_replica(&runs));
    let every = ticks_of(&runs);
    for name in ["sub0", "sub1", "sub2"] {
        let on_final = every.iter().filter(|(n, t)| n == name && *t == 3).count();
        assert_eq!(on_final, 1, "{name} ran once on the final tick: {every:?}");
    }
    let finals: Vec<(String, i64)> = ["sub0", "sub1", "sub2"]
        .iter()
        .map(|s| ((*s).to_owned(), 3))
        .collect();
    assert_eq!(last_ticks(&runs), finals);
    assert_no_overlap(&runs);
    assert_fenced(&runs);
    replayed_and_finished(target, &traces).await;
}

/// The holder of the claim on `name` and its fencing epoch, as the
/// annotations say.
async fn claim_holder(api: &Api<Ticker>, name: &str) -> Option<(String, u32)> {
    let object = api.get(name).await.unwrap();
    let mut annotations = object.metadata.annotations.unwrap_or_default();
    let claim = annotations.remove("steadfast.dev/claim")?;
    let claim: serde_json::Value = serde_json::from_str(&claim).unwrap();
    let epoch = annotations.remove("steadfast.dev/epoch")?.parse().unwrap();
    Some((claim["holder"].as_str()?.to_owned(), epoch))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_replica_killed_mid_run_should_have_its_object_taken_over_within_the_claim() {
    let (target, api, traces, runs, started) = story_bed().await;
    let shared = (&runs, &started);
    let claim = Duration::from_secs(2);
    let a = tick_replica(&target, "replica-a", 1, shared, claim, traces.path()).await;
    let b = tick_replica(&target, "replica-b", 2, shared, claim, traces.path()).await;
    let mut replicas = vec![
        ("replica-a", tokio::spawn(a.run())),
        ("replica-b", tokio::spawn(b.run())),
    ];
    create(&api, "k").await;
    // The first sub-handler runs under its replica's claim: kill that one.
    started.notified().await;
    let (holder, killed_epoch) = claim_holder(&api, "k").await.expect("the run's claim");
    let at = replicas
        .iter()
        .position(|(name, _)| *name == holder)
        .unwrap();
    let (killed, task) = replicas.remove(at);
    task.abort();
    let killed_at = Instant::now();
    handled_in_full(&api, "k", "the survivor takes the object over").await;
    let takeover = killed_at.elapsed();
    settle(&runs, Duration::from_millis(700), Duration::from_secs(10)).await;
    let (_, survivor) = replicas.pop().unwrap();
    survivor.abort();
    eprintln!(
        "{killed} killed mid-run: handled in full {takeover:?} later; runs by replica: {:?}",
        by_replica(&runs)
    );
    // The claim's end (at most its duration away), the drift, then the
    // three sub-handlers' work at most, and the patches between.
    let work = Duration::from_millis(300) * 3;
    assert!(
        takeover <= claim + claim / 10 + work + Duration::from_secs(2),
        "{takeover:?}"
    );
    // The killed run never returned; every sub-handler returned once, the
    // survivor's runs after the kill.
    let names: Vec<String> = ticks_of(&runs).into_iter().map(|(n, _)| n).collect();
    let mut sorted = names.clone();
    sorted.sort();
    assert_eq!(sorted, ["sub0", "sub1", "sub2"], "{names:?}");
    assert_no_overlap(&runs);
    // The take-over took a new epoch: the killed run's writes, tagged
    // with its own, would be fenced off.
    let epochs: Vec<u32> = runs.lock().unwrap().iter().map(|r| r.epoch).collect();
    assert!(
        epochs.iter().all(|&e| e > killed_epoch),
        "{killed_epoch} then {epochs:?}"
    );
    assert_fenced(&runs);
    replayed_and_finished(target, &traces).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_rolling_update_should_run_no_handler_twice() {
    let (target, api, traces, runs, started) = story_bed().await;
    let shared = (&runs, &started);
    let claim = steadfast::lifecycle::DEFAULT_CLAIM;
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    let old = tick_replica(&target, "old-pod", 1, shared, claim, traces.path())
        .await
        .shutdown_on(async {
            let _ = stopped.await;
        });
    let old = tokio::spawn(old.run());
    let objects = ["r0", "r1", "r2"];
    for name in objects {
        create(&api, name).await;
    }
    // The old pod works; the new one starts beside it, then the old one is
    // told to stop (SIGTERM), finishes its run and releases its claims.
    started.notified().await;
    let new = tick_replica(&target, "new-pod", 2, shared, claim, traces.path()).await;
    let new = tokio::spawn(new.run());
    tokio::time::sleep(Duration::from_millis(400)).await;
    stop.send(()).unwrap();
    tokio::time::timeout(Duration::from_secs(10), old)
        .await
        .expect("the old pod stops within its grace")
        .unwrap()
        .expect("a clean stop");
    for name in objects {
        handled_in_full(&api, name, "the new pod takes over at once").await;
    }
    settle(&runs, Duration::from_millis(1500), Duration::from_secs(20)).await;
    new.abort();
    let logged = runs.lock().unwrap().clone();
    eprintln!("runs by replica: {:?}", by_replica(&runs));
    for name in objects {
        let mut subs: Vec<&str> = logged
            .iter()
            .filter(|r| r.object == name)
            .map(|r| r.name.as_str())
            .collect();
        subs.sort_unstable();
        assert_eq!(subs, ["sub0", "sub1", "sub2"], "{name}: each ran once");
    }
    assert!(
        logged.iter().any(|r| r.replica == "new-pod"),
        "the new pod took work over"
    );
    assert_no_overlap(&runs);
    replayed_and_finished(target, &traces).await;
}

/// A field handler on `field` of a ConfigMap made as `made`, then edited by
/// the merge patch `edit`: the values the handler saw, in order, once it
/// has run twice (at most 10 s), with every trace replayed.
async fn configmap_field_runs(
    field: &str,
    made: serde_json::Value,
    edit: serde_json::Value,
) -> Vec<Option<serde_json::Value>> {
    use k8s_openapi::api::core::v1::ConfigMap;
    let target = KubeTarget::start().await;
    let api: Api<ConfigMap> = Api::namespaced(target.client.clone(), &target.namespace);
    let traces = tempfile::tempdir().unwrap();
    let seen = Arc::new(Mutex::new(Vec::new()));
    let (log, path) = (seen.clone(), field.to_owned());
    let operator = Operator::new(api.clone()).trace(traces.path()).on_field(
        field,
        "watch",
        Handler::new(move |ctx: Context<ConfigMap>| {
            log.lock().unwrap().push(ctx.new_value(&path).cloned());
            async { Ok::<(), HandlerError>(()) }
        }),
    );
    let running = tokio::spawn(operator.run());
    let object: ConfigMap = serde_json::from_value(made).unwrap();
    api.create(&PostParams::default(), &object).await.unwrap();
    let ran = |times: usize| {
        let seen = seen.clone();
        async move {
            while seen.lock().unwrap().len() < times {
                tokio::time::sleep(Duration::from_millis(20)).await;
            }
        }
    };
    tokio::time::timeout(Duration::from_secs(10), ran(1))
        .await
        .expect("the field handler runs at creation");
    api.patch("cm", &PatchParams::default(), &Patch::Merge(&edit))
        .await
        .unwrap();
    tokio::time::timeout(Duration::from_secs(10), ran(2))
        .await
        .unwrap_or_else(|_| panic!("the field handler on {field} runs on the edit: {seen:?}"));
    // Settled: nothing runs again.
    tokio::time::sleep(Duration::from_millis(300)).await;
    running.abort();
    let seen = seen.lock().unwrap().clone();
    replayed_and_finished(target, &traces).await;
    seen
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_field_handler_on_a_configmap_s_data_should_fire_on_an_edit() {
    let made = json!({"metadata": {"name": "cm"}, "data": {"size": "1"}});
    let seen = configmap_field_runs("data.size", made, json!({"data": {"size": "2"}})).await;
    assert_eq!(seen, [Some(json!("1")), Some(json!("2"))]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_field_handler_on_a_label_key_with_dots_should_fire_on_an_edit() {
    let made = json!({"metadata": {"name": "cm", "labels": {"app.kubernetes.io/name": "web", "app": "x"}}});
    let edit = json!({"metadata": {"labels": {"app.kubernetes.io/name": "api"}}});
    let field = r#"metadata.labels["app.kubernetes.io/name"]"#;
    let seen = configmap_field_runs(field, made, edit).await;
    assert_eq!(seen, [Some(json!("web")), Some(json!("api"))]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_run_longer_than_its_claim_should_finish_once_with_a_second_replica_waiting() {
    let (target, api) = tickers().await;
    let traces = tempfile::tempdir().unwrap();
    // Runs started, and runs that got to their end (not cancelled).
    let runs: Arc<Mutex<Vec<&'static str>>> = Arc::new(Mutex::new(Vec::new()));
    let ended: Arc<Mutex<Vec<&'static str>>> = Arc::new(Mutex::new(Vec::new()));
    let mut replicas = Vec::new();
    for (incarnation, name) in [(1, "a"), (2, "b")] {
        let (runs, ended) = (runs.clone(), ended.clone());
        let api = Api::namespaced(target.another_client().await, &target.namespace);
        let operator = Operator::new(api)
            .identity(name)
            .incarnation(incarnation)
            .claims(Duration::from_secs(2), Duration::from_millis(200))
            .trace(traces.path())
            .on_field(
                "spec.size",
                "slow",
                Handler::new(move |_ctx: Context<Ticker>| {
                    runs.lock().unwrap().push(name);
                    let ended = ended.clone();
                    async move {
                        tokio::time::sleep(Duration::from_secs(4)).await;
                        ended.lock().unwrap().push(name);
                        Ok::<(), HandlerError>(())
                    }
                })
                .timeout(Duration::from_secs(60)),
            );
        replicas.push(tokio::spawn(operator.run()));
    }
    create(&api, "l").await;
    handled_in_full(&api, "l", "the 4 s run outlasts its 2 s claim and finishes").await;
    for replica in replicas {
        replica.abort();
    }
    assert_eq!(
        runs.lock().unwrap().len(),
        1,
        "run once: {:?}",
        runs.lock().unwrap()
    );
    assert!(
        !inputs_of(traces.path(), "Renewed").is_empty(),
        "the claim was renewed while the run went on"
    );
    replayed_and_finished(target, &traces).await;
}

/// The sizes handlers saw: the handler, the object, the size.
type Sizes = Arc<Mutex<Vec<(&'static str, String, i64)>>>;

/// A handler `id` that logs the size it sees into `seen` when it starts,
/// then works for `work`.
fn size_logger(id: &'static str, seen: &Sizes, work: Duration) -> Handler<Ticker> {
    let seen = seen.clone();
    Handler::new(move |ctx: Context<Ticker>| {
        let size = ctx.new_value("spec.size").and_then(|v| v.as_i64());
        let name = ctx.object().metadata.name.clone().unwrap_or_default();
        seen.lock()
            .unwrap()
            .push((id, name, size.expect("a ticker has a size")));
        async move {
            tokio::time::sleep(work).await;
            Ok::<(), HandlerError>(())
        }
    })
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn objects_edited_during_their_creation_should_be_created_once_and_updated_to_the_edit() {
    let (target, api) = tickers().await;
    let traces = tempfile::tempdir().unwrap();
    let seen: Sizes = Arc::default();
    let mut replicas = Vec::new();
    for (incarnation, name) in [(1, "a"), (2, "b")] {
        let api = Api::namespaced(target.another_client().await, &target.namespace);
        let operator = Operator::new(api)
            .identity(name)
            .incarnation(incarnation)
            .trace(traces.path())
            .on_create(
                "make",
                size_logger("make", &seen, Duration::from_millis(400)),
            )
            .on_update("follow", size_logger("follow", &seen, Duration::ZERO));
        replicas.push(tokio::spawn(operator.run()));
    }
    let names: Vec<String> = (0..8).map(|i| format!("c{i}")).collect();
    for name in &names {
        create(&api, name).await;
    }
    // Each object is edited while its create handler runs.
    for name in &names {
        let started = async {
            while !seen.lock().unwrap().iter().any(|(_, n, _)| n == name) {
                tokio::time::sleep(Duration::from_millis(10)).await;
            }
        };
        tokio::time::timeout(Duration::from_secs(20), started)
            .await
            .unwrap_or_else(|_| panic!("{name}'s create handler does not start"));
        let edit = json!({"spec": {"size": 2}});
        api.patch(name, &PatchParams::default(), &Patch::Merge(&edit))
            .await
            .unwrap();
    }
    for name in &names {
        handled_in_full(&api, name, "its creation and its edit are handled").await;
    }
    for replica in replicas {
        replica.abort();
    }
    let seen = seen.lock().unwrap().clone();
    eprintln!("runs: {seen:?}");
    for name in &names {
        let runs = |id: &str| -> Vec<i64> {
            seen.iter()
                .filter(|(h, n, _)| *h == id && n == name)
                .map(|(_, _, size)| *size)
                .collect()
        };
        assert_eq!(
            runs("make"),
            [1],
            "{name}: created once, on the size it was made with"
        );
        assert_eq!(
            runs("follow").last(),
            Some(&2),
            "{name}: the update handler saw the edit"
        );
        let object = api.get(name).await.unwrap();
        let base = &object.metadata.annotations.unwrap()["steadfast.dev/diff-base"];
        let base: serde_json::Value = serde_json::from_str(base).unwrap();
        assert_eq!(
            base["spec"]["size"], 2,
            "{name}: handled on its final essence"
        );
    }
    replayed_and_finished(target, &traces).await;
}
