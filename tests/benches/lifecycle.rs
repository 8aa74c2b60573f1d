//! The lifecycle runtime on the Kubernetes API test server: OBJECTS
//! objects, each with a create handler, a field handler on `spec.size`
//! whose runs declare 3 sub-handlers, and an update handler; all created at
//! once, then all edited once. Measured:
//!
//! - objects handled per second, for the creation and for the edit (from
//!   the first request until every object is handled in full: no progress
//!   annotation left, the diff-base written);
//! - from a run's return to the next run's start on the same object (one
//!   patch recording the outcome, and the watch event of the version it
//!   made): min, median, p90, max;
//! - the engine's patches per object (from the operators' own
//!   `steadfast_lifecycle_patches_total`, every answer), and how many of
//!   them were refused with 409;
//!
//! each with one operator replica, then with two sharing the objects
//! through claims (each on a client of its own), on a fresh test server.
//!
//! Run: `cargo bench -p steadfast-tests --bench lifecycle [-- OBJECTS]` (50
//! by default).

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kube::api::{Api, ListParams, Patch, PatchParams, PostParams};
use kube::{Client, Config, CustomResource, CustomResourceExt};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::json;
use steadfast::lifecycle::{Context, Handler, HandlerError, Operator};
use steadfast::metrics::MetricsEndpoint;
use steadfast_tests::kube_testserver::TestServer;
use steadfast_tests::scrape::{get, sample};

/// The benchmark's resource.
#[derive(CustomResource, Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[kube(
    group = "bench.steadfast.dev",
    version = "v1",
    kind = "Load",
    namespaced
)]
pub struct LoadSpec {
    /// What the edit changes.
    pub size: i64,
}

/// Per object: when its last run returned, and the gaps to the next start.
#[derive(Default)]
struct Clock {
    returned: HashMap<String, Instant>,
    gaps: Vec<Duration>,
}

type Shared = Arc<Mutex<Clock>>;

fn name(ctx: &Context<Load>) -> String {
    ctx.object().metadata.name.clone().unwrap_or_default()
}

fn started(clock: &Shared, ctx: &Context<Load>) {
    let mut clock = clock.lock().unwrap();
    if let Some(at) = clock.returned.remove(&name(ctx)) {
        clock.gaps.push(at.elapsed());
    }
}

fn returned(clock: &Shared, ctx: &Context<Load>) {
    clock
        .lock()
        .unwrap()
        .returned
        .insert(name(ctx), Instant::now());
}

/// A handler that notes when it starts and returns, declaring `subs`.
fn timed(clock: &Shared, subs: &'static [&'static str]) -> Handler<Load> {
    let (a, b) = (clock.clone(), clock.clone());
    Handler::new(move |ctx: Context<Load>| {
        started(&a, &ctx);
        for sub in subs {
            ctx.sub(*sub);
        }
        returned(&a, &ctx);
        async { Ok::<(), HandlerError>(()) }
    })
    .sub_handlers(move |ctx: Context<Load>| {
        started(&b, &ctx);
        returned(&b, &ctx);
        async { Ok(()) }
    })
}

/// Waits until every object is handled in full.
async fn all_handled(api: &Api<Load>, objects: usize) {
    loop {
        let list = api.list(&ListParams::default()).await.unwrap();
        let done = list
            .items
            .iter()
            .filter(|o| {
                let annotations = o.metadata.annotations.clone().unwrap_or_default();
                !annotations
                    .keys()
                    .any(|k| k.starts_with("steadfast.dev/progress."))
                    && annotations.contains_key("steadfast.dev/diff-base")
                    && o.metadata.labels.is_some() == (o.spec.size == 2)
            })
            .count();
        if done == objects {
            return;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

fn percentile(sorted: &[Duration], p: usize) -> Duration {
    sorted[(sorted.len() - 1) * p / 100]
}

/// Replica `replica` of the benchmark's operator, on a client of its own,
/// serving its metrics on `endpoint`.
fn replica(
    server: &TestServer,
    replica: usize,
    clock: &Shared,
    endpoint: MetricsEndpoint,
) -> Operator<Load> {
    let client = Client::try_from(Config::new(server.url().parse().unwrap())).unwrap();
    let api: Api<Load> = Api::namespaced(client, "default");
    let label = clock.clone();
    Operator::new(api)
        .identity(format!("bench-{replica}"))
        .incarnation(u32::try_from(replica).unwrap())
        .metrics(endpoint)
        .on_create("create", timed(clock, &[]))
        .on_field("spec.size", "size", timed(clock, &["a", "b", "c"]))
        .on_update(
            "update",
            Handler::new(move |ctx: Context<Load>| {
                started(&label, &ctx);
                ctx.patch(json!({ "metadata": { "labels": { "edited": "yes" } } }));
                returned(&label, &ctx);
                async { Ok::<(), HandlerError>(()) }
            }),
        )
}

/// What one run of the benchmark measured.
struct Figures {
    created: Duration,
    edited: Duration,
    gaps: Vec<Duration>,
    patches: f64,
    conflicts: f64,
}

/// Creates then edits `objects` objects under `replicas` replicas.
async fn measure(objects: usize, replicas: usize) -> Figures {
    let server = TestServer::start().await.unwrap();
    let client = Client::try_from(Config::new(server.url().parse().unwrap())).unwrap();
    let crds: Api<CustomResourceDefinition> = Api::all(client.clone());
    crds.create(&PostParams::default(), &Load::crd())
        .await
        .unwrap();
    let established = kube::runtime::wait::conditions::is_crd_established();
    kube::runtime::wait::await_condition(crds, Load::crd_name(), established)
        .await
        .unwrap();
    let api: Api<Load> = Api::namespaced(client, "default");
    let clock: Shared = Arc::default();
    let mut addresses = Vec::new();
    let mut running = Vec::new();
    for r in 0..replicas {
        let endpoint = MetricsEndpoint::bind("127.0.0.1:0").await.unwrap();
        addresses.push(endpoint.local_addr());
        running.push(tokio::spawn(replica(&server, r, &clock, endpoint).run()));
    }

    let begin = Instant::now();
    for i in 0..objects {
        let load = Load::new(&format!("load-{i}"), LoadSpec { size: 1 });
        api.create(&PostParams::default(), &load).await.unwrap();
    }
    all_handled(&api, objects).await;
    let created = begin.elapsed();
    clock.lock().unwrap().returned.clear();

    let begin = Instant::now();
    let edit = json!({ "spec": { "size": 2 } });
    for i in 0..objects {
        api.patch(
            &format!("load-{i}"),
            &PatchParams::default(),
            &Patch::Merge(&edit),
        )
        .await
        .unwrap();
    }
    all_handled(&api, objects).await;
    let edited = begin.elapsed();
    let (mut patches, mut conflicts) = (0.0, 0.0);
    for address in addresses {
        let (_, text) = get(address, "/metrics").await;
        for answer in ["applied", "conflict", "refused", "throttled", "unknown"] {
            let series = format!("steadfast_lifecycle_patches_total{{answer=\"{answer}\"}}");
            let count = sample(&text, &series).unwrap_or(0.0);
            patches += count;
            if answer == "conflict" {
                conflicts += count;
            }
        }
    }
    for task in running {
        task.abort();
    }
    server.shutdown().await;
    let mut gaps = std::mem::take(&mut clock.lock().unwrap().gaps);
    gaps.sort();
    Figures {
        created,
        edited,
        gaps,
        patches,
        conflicts,
    }
}

#[tokio::main(flavor = "multi_thread", worker_threads = 2)]
async fn main() {
    let objects: usize = std::env::args()
        .skip(1)
        .find(|a| !a.starts_with('-'))
        .map_or(50, |a| a.parse().expect("OBJECTS is a number"));
    println!("{objects} objects, 3 handlers and 3 sub-handlers each, on 2 cores:");
    for replicas in [1, 2] {
        let f = measure(objects, replicas).await;
        let per_second = |d: Duration| objects as f64 / d.as_secs_f64();
        let gaps = &f.gaps;
        println!(
            "{replicas} replica(s): creation handled in {:.2?} ({:.1} objects/s), \
             edit in {:.2?} ({:.1} objects/s); {:.1} patches per object ({:.1} refused \
             with 409); a run's return to the next run's start, {} gaps: min {:.1?}, \
             median {:.1?}, p90 {:.1?}, max {:.1?}",
            f.created,
            per_second(f.created),
            f.edited,
            per_second(f.edited),
            f.patches / objects as f64,
            f.conflicts / objects as f64,
            gaps.len(),
            gaps[0],
            percentile(gaps, 50),
            percentile(gaps, 90),
            gaps[gaps.len() - 1]
        );
    }
}
