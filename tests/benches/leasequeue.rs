//! The leasequeue runtime on real etcd (Debian's etcd-server on loopback),
//! measured two ways:
//!
//! - **recovery**: lease TTL at etcd's floor (2 s), etcd frozen with
//!   SIGSTOP for 5 s, then SIGCONT; the time from etcd's first answer (a
//!   read polled every 10 ms) until one activation of every action,
//!   submitted at that moment, has completed (the time from SIGCONT is
//!   printed beside it). Repeated over OUTAGES outages: min, median, max.
//! - **quorum loss**: a 3-member cluster with two members frozen for 5 s,
//!   at TTL 3 s and 10 s: the same time, over OUTAGES outages each.
//! - **drain**: a third scheduler joins and takes queues of new actions,
//!   then is drained (`Scheduler::drain`) while a round of activations of
//!   those actions flows; how long `drain` took, and how long from its
//!   return until that round and then a round of the same actions (on the
//!   schedulers left) completed. Repeated OUTAGES times: min, median, max.
//! - **throughput**: one controller and two schedulers with warm endpoint
//!   caches, ACTIVATIONS activations of 4 actions with 64 in flight:
//!   activations per second and p50/p99 latency; beside a baseline of the
//!   same transport (JSON lines over loopback TCP, the runtime's own
//!   `network`) with a static route and no etcd: a sender that sends each
//!   activation to one receiver, which answers with its outcome and an
//!   acknowledgement at once.
//!
//! Run: `cargo bench -p steadfast-tests --bench leasequeue [-- OUTAGES [ACTIVATIONS]]`
//! (10 and 5000 by default).

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use futures::future::join_all;
use futures::stream::{self, StreamExt};
use serde_json::json;
use steadfast::leasequeue::etcd::EtcdOptions;
use steadfast::leasequeue::network::Network;
use steadfast::leasequeue::wire::{Message, Outcome};
use steadfast::leasequeue::{Controller, ControllerBuilder, SchedulerBuilder};
use steadfast_tests::etcd_server::{await_answer, EtcdCluster, EtcdServer};
use steadfast_tests::leasequeue_nodes::{await_members, Ledger, SchedulerProcess};
use tokio::sync::{mpsc, oneshot};

const ACTIONS: usize = 4;
const IN_FLIGHT: usize = 64;
const TTL: Duration = Duration::from_secs(2);
const OUTAGE: Duration = Duration::from_secs(5);

#[tokio::main(flavor = "multi_thread", worker_threads = 2)]
async fn main() {
    let args: Vec<String> = std::env::args()
        .skip(1)
        .filter(|a| a != "--bench")
        .collect();
    let number = |at: usize, default: usize| {
        args.get(at).map_or(default, |a| {
            a.parse()
                .unwrap_or_else(|_| panic!("{a:?} is not a count: OUTAGES [ACTIVATIONS]"))
        })
    };
    let (outages, activations) = (number(0, 10), number(1, 5000));

    let etcd = EtcdServer::start()
        .await
        .unwrap_or_else(|error| panic!("{error}"));
    let ledger = Ledger::default();
    let (s1, s2, controller) = nodes(&[etcd.endpoint()], TTL, &ledger).await;

    println!("throughput: {activations} activations of {ACTIONS} actions, {IN_FLIGHT} in flight");
    let sender = start_baseline().await;
    let baseline = throughput(activations, |n| {
        let sender = Arc::clone(&sender);
        async move { sender.submit(n).await }
    })
    .await;
    report("static route, no etcd", &baseline);
    let runtime = throughput(activations, |n| {
        let submission = controller.submit(format!("action-{}", n % ACTIONS), json!({ "n": n }));
        async move { submission.await.is_ok() }
    })
    .await;
    report("steadfast on etcd", &runtime);
    println!(
        "  ratio: {:.0}% of the baseline's activations per second",
        100.0 * runtime.per_second / baseline.per_second
    );

    println!("recovery: TTL {TTL:?}, etcd frozen for {OUTAGE:?}, {outages} outages");
    let mut client = etcd.client().await.unwrap();
    let mut recoveries = Vec::new();
    let mut replaced = 0;
    for outage in 0..outages {
        let before = leases(&mut client).await;
        etcd.pause().unwrap();
        tokio::time::sleep(OUTAGE).await;
        etcd.resume().unwrap();
        let thawed = Instant::now();
        await_answer(&mut client).await;
        let answered = Instant::now();
        round(&controller).await;
        let recovery = answered.elapsed();
        let after = leases(&mut client).await;
        let lost = before.iter().all(|lease| !after.contains(lease));
        replaced += usize::from(lost);
        println!(
            "  outage {}: {} ms after etcd's first answer ({} ms after SIGCONT); leases \
             {before:?} -> {after:?}",
            outage + 1,
            recovery.as_millis(),
            thawed.elapsed().as_millis()
        );
        recoveries.push(recovery);
        tokio::time::sleep(Duration::from_secs(2)).await;
    }
    println!("  every lease expired and was replaced in {replaced} of {outages} outages");
    summarize("after etcd's first answer", recoveries);

    println!("drain: TTL {TTL:?}, a third scheduler drained {outages} times");
    let mut drains = Vec::new();
    let mut replaced = Vec::new();
    for n in 0..outages {
        let (took, placed) = drain(&[etcd.endpoint()], &ledger, &controller, n).await;
        println!(
            "  drain {}: drained in {} ms; its actions ran on the others {} ms later",
            n + 1,
            took.as_millis(),
            placed.as_millis()
        );
        drains.push(took);
        replaced.push(placed);
    }
    summarize("drain", drains);
    summarize("its actions running elsewhere after the drain", replaced);
    drop((controller, s1, s2));

    for ttl in [Duration::from_secs(3), Duration::from_secs(10)] {
        quorum_loss(ttl, outages).await;
    }
}

/// Two schedulers and a controller on a 3-member cluster whose members 0
/// and 1 are frozen for [`OUTAGE`], `outages` times: how long after etcd's
/// first answer one activation of every action has completed.
async fn quorum_loss(ttl: Duration, outages: usize) {
    println!("quorum loss: TTL {ttl:?}, 2 of 3 members frozen for {OUTAGE:?}, {outages} outages");
    let etcd = EtcdCluster::start(3)
        .await
        .unwrap_or_else(|error| panic!("{error}"));
    let ledger = Ledger::default();
    let (s1, s2, controller) = nodes(&etcd.endpoints(), ttl, &ledger).await;
    let mut client = etcd.client().await.unwrap();
    let mut recoveries = Vec::new();
    for outage in 0..outages {
        for member in [0, 1] {
            etcd.pause(member).unwrap();
        }
        tokio::time::sleep(OUTAGE).await;
        for member in [0, 1] {
            etcd.resume(member).unwrap();
        }
        await_answer(&mut client).await;
        let answered = Instant::now();
        round(&controller).await;
        let recovery = answered.elapsed();
        println!(
            "  outage {}: {} ms after etcd's first answer",
            outage + 1,
            recovery.as_millis()
        );
        recoveries.push(recovery);
        tokio::time::sleep(Duration::from_secs(2)).await;
    }
    summarize("after etcd's first answer", recoveries);
    drop((controller, s1, s2));
}

/// A third scheduler joins the cluster at `endpoints`, and `controller`
/// places queues of 8 new actions (`drain-{n}-{a}`) among the three; it is
/// then drained while a round of them flows. Returns how long the drain
/// took, and how long from its return until a round of the same actions
/// completed on the schedulers left.
async fn drain(
    endpoints: &[String],
    ledger: &Ledger,
    controller: &Controller,
    n: usize,
) -> (Duration, Duration) {
    let options = EtcdOptions::new(endpoints.iter().cloned())
        .with_request_timeout(Duration::from_millis(500));
    let builder = SchedulerBuilder::new(options.clone()).ttl(TTL);
    let third = SchedulerProcess::start(builder, ledger.executor())
        .await
        .unwrap();
    await_members(&options, &[third.address()], Duration::from_secs(10))
        .await
        .unwrap_or_else(|error| panic!("{error}"));
    // The controller learns the new member from its watch.
    tokio::time::sleep(Duration::from_millis(500)).await;
    let actions: Vec<String> = (0..8).map(|a| format!("drain-{n}-{a}")).collect();
    let submit_round = || {
        let submissions = actions
            .iter()
            .map(|a| controller.submit(a.clone(), json!({})));
        async move {
            let results = tokio::time::timeout(Duration::from_secs(30), join_all(submissions))
                .await
                .expect("a round ends within 30 s");
            for result in results {
                result.expect("every activation of a round is executed");
            }
        }
    };
    submit_round().await;
    let draining = async {
        let asked = Instant::now();
        third.drain().await;
        (asked.elapsed(), Instant::now())
    };
    let ((), (took, drained)) = tokio::join!(submit_round(), draining);
    submit_round().await;
    (took, drained.elapsed())
}

/// Two schedulers of lease TTL `ttl` and a controller on the etcd at
/// `endpoints`, with a round of activations behind them (every action has
/// its queue).
async fn nodes(
    endpoints: &[String],
    ttl: Duration,
    ledger: &Ledger,
) -> (SchedulerProcess, SchedulerProcess, Controller) {
    let options = EtcdOptions::new(endpoints.iter().cloned())
        .with_request_timeout(Duration::from_millis(500));
    let builder = || SchedulerBuilder::new(options.clone()).ttl(ttl);
    let s1 = SchedulerProcess::start(builder(), ledger.executor())
        .await
        .unwrap();
    let s2 = SchedulerProcess::start(builder(), ledger.executor())
        .await
        .unwrap();
    let controller = ControllerBuilder::new(options)
        .wake_every(Duration::from_millis(300))
        .start()
        .await
        .unwrap();
    round(&controller).await;
    (s1, s2, controller)
}

/// Prints the least, the median and the most of `recoveries`, as `what`.
fn summarize(what: &str, mut recoveries: Vec<Duration>) {
    recoveries.sort();
    if let (Some(min), Some(max)) = (recoveries.first(), recoveries.last()) {
        println!(
            "  {what}: min {} ms, median {} ms, max {} ms",
            min.as_millis(),
            recoveries[recoveries.len() / 2].as_millis(),
            max.as_millis()
        );
    }
}

/// The leases etcd holds, sorted.
async fn leases(client: &mut etcd_client::Client) -> Vec<i64> {
    let listed = client.leases().await.expect("etcd lists its leases");
    let mut ids: Vec<i64> = listed.leases().iter().map(|l| l.id()).collect();
    ids.sort_unstable();
    ids
}

/// One activation of every action, submitted together; panics unless each
/// is executed within 30 s.
async fn round(controller: &Controller) {
    let submissions = (0..ACTIONS).map(|a| controller.submit(format!("action-{a}"), json!({})));
    let results = tokio::time::timeout(Duration::from_secs(30), join_all(submissions))
        .await
        .expect("a round ends within 30 s");
    for result in results {
        result.expect("every activation of a round is executed");
    }
}

/// What a throughput run measured.
struct Throughput {
    per_second: f64,
    p50: Duration,
    p99: Duration,
}

/// Runs `count` activations, `IN_FLIGHT` at a time, through `submit`
/// (which says whether the activation was executed).
async fn throughput<F, Fut>(count: usize, submit: F) -> Throughput
where
    F: Fn(usize) -> Fut,
    Fut: std::future::Future<Output = bool>,
{
    let started = Instant::now();
    let mut latencies: Vec<Duration> = stream::iter(0..count)
        .map(|n| {
            let submission = submit(n);
            async move {
                let at = Instant::now();
                assert!(submission.await, "activation {n} was executed");
                at.elapsed()
            }
        })
        .buffer_unordered(IN_FLIGHT)
        .collect()
        .await;
    let elapsed = started.elapsed();
    latencies.sort();
    let at = |q: f64| latencies[((latencies.len() as f64 * q) as usize).min(latencies.len() - 1)];
    Throughput {
        per_second: count as f64 / elapsed.as_secs_f64(),
        p50: at(0.5),
        p99: at(0.99),
    }
}

fn report(name: &str, run: &Throughput) {
    println!(
        "  {name}: {:.0} activations/s, p50 {:.2} ms, p99 {:.2} ms",
        run.per_second,
        run.p50.as_secs_f64() * 1000.0,
        run.p99.as_secs_f64() * 1000.0
    );
}

/// Sends each activation to the one receiver and waits for its outcome.
struct StaticSender {
    network: Network,
    to: String,
    waiting: Mutex<HashMap<String, oneshot::Sender<()>>>,
}

impl StaticSender {
    async fn submit(&self, n: usize) -> bool {
        let id = format!("baseline-{n}");
        let (done, outcome) = oneshot::channel();
        self.waiting.lock().unwrap().insert(id.clone(), done);
        let message = Message::Activation {
            id,
            action: format!("action-{}", n % ACTIONS),
            payload: json!({ "n": n }),
            forwarded: false,
            from: self.network.address().to_owned(),
            reply_to: self.network.address().to_owned(),
            // The receiver is no scheduler, and has no runs to tell apart.
            incarnation: None,
            deadline: None,
            may_have_run: false,
        };
        self.network.send(&self.to, &message);
        outcome.await.is_ok()
    }
}

/// The baseline: starts its receiver (in a runtime of its own, as the
/// schedulers are) and its sender, which acknowledges each outcome as a
/// controller does.
async fn start_baseline() -> Arc<StaticSender> {
    let (addressed, address) = oneshot::channel();
    std::thread::spawn(move || {
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(1)
            .enable_all()
            .build()
            .unwrap();
        runtime.block_on(async move {
            let (inbox, mut messages) = mpsc::unbounded_channel();
            let (network, serving) = Network::bind("127.0.0.1:0", inbox).await.unwrap();
            tokio::spawn(serving);
            let _ = addressed.send(network.address().to_owned());
            while let Some(message) = messages.recv().await {
                if let Message::Activation {
                    id,
                    payload,
                    from,
                    reply_to,
                    ..
                } = message
                {
                    let outcome = Message::Outcome {
                        id: id.clone(),
                        outcome: Outcome::Executed { result: payload },
                        from: network.address().to_owned(),
                    };
                    network.send(&reply_to, &outcome);
                    let ack = Message::Ack {
                        id,
                        from: network.address().to_owned(),
                        reply_to: Some(reply_to.clone()),
                    };
                    network.send(&from, &ack);
                }
            }
        });
    });
    let to = address.await.unwrap();
    let (inbox, mut messages) = mpsc::unbounded_channel();
    let (network, serving) = Network::bind("127.0.0.1:0", inbox).await.unwrap();
    tokio::spawn(serving);
    let sender = Arc::new(StaticSender {
        network,
        to,
        waiting: Mutex::new(HashMap::new()),
    });
    let receiving = Arc::clone(&sender);
    tokio::spawn(async move {
        while let Some(message) = messages.recv().await {
            if let Message::Outcome { id, from, .. } = message {
                let ack = Message::OutcomeAck {
                    id: id.clone(),
                    from: Some(receiving.network.address().to_owned()),
                };
                receiving.network.send(&from, &ack);
                if let Some(done) = receiving.waiting.lock().unwrap().remove(&id) {
                    let _ = done.send(());
                }
            }
        }
    });
    sender
}
