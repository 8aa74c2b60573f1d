//! The leasequeue runtime on Debian's etcd-server on loopback: schedulers
//! (each in a runtime of its own) and controllers talking over loopback
//! TCP, with real faults; every test replays the traces its nodes recorded
//! through the spec's roles.

use std::path::Path;
use std::time::Duration;

use futures::future::join_all;
use serde_json::json;
use steadfast::leasequeue::etcd::EtcdOptions;
use steadfast::leasequeue::{Controller, ControllerBuilder, SchedulerBuilder, Variant};
use steadfast_tests::etcd_server::EtcdServer;
use steadfast_tests::leasequeue_nodes::{id_of, replay_all, Ledger, SchedulerProcess};

/// Lease TTL at etcd's floor (1.5 × the default 1 s election timeout).
const TTL: Duration = Duration::from_secs(2);

fn options(etcd: &EtcdServer) -> EtcdOptions {
    EtcdOptions::new([etcd.endpoint()]).with_request_timeout(Duration::from_millis(500))
}

fn scheduler(etcd: &EtcdServer, variant: Variant, traces: &Path, name: &str) -> SchedulerBuilder {
    SchedulerBuilder::new(options(etcd))
        .variant(variant)
        .ttl(TTL)
        .redeliver_every(Duration::from_millis(300))
        .trace(traces.join(format!("{name}.jsonl")))
}

async fn controller(
    etcd: &EtcdServer,
    variant: Variant,
    schedulers: &[&SchedulerProcess],
    traces: &Path,
    name: &str,
) -> Controller {
    ControllerBuilder::new(options(etcd))
        .variant(variant)
        .schedulers(schedulers.iter().map(|s| s.address().to_owned()))
        .wake_every(Duration::from_millis(300))
        .redeliver_every(Duration::from_millis(300))
        .trace(traces.join(format!("{name}.jsonl")))
        .start()
        .await
        .expect("the controller starts")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_activation_should_run_once_across_two_schedulers_and_two_controllers() {
    let etcd = EtcdServer::start().await.unwrap();
    let traces = tempfile::tempdir().unwrap();
    let ledger = Ledger::default();
    let dir = traces.path();
    let s1 = SchedulerProcess::start(
        scheduler(&etcd, Variant::Steadfast, dir, "scheduler-1"),
        ledger.executor_taking(Duration::from_millis(20)),
    )
    .await
    .unwrap();
    let s2 = SchedulerProcess::start(
        scheduler(&etcd, Variant::Steadfast, dir, "scheduler-2"),
        ledger.executor_taking(Duration::from_millis(20)),
    )
    .await
    .unwrap();
    let both = [&s1, &s2];
    let c1 = controller(&etcd, Variant::Steadfast, &both, dir, "controller-1").await;
    let c2 = controller(&etcd, Variant::Steadfast, &both, dir, "controller-2").await;

    let submissions: Vec<_> = (0..40)
        .map(|n| {
            let via = if n % 2 == 0 { &c1 } else { &c2 };
            via.submit(format!("action-{}", n % 5), json!({ "n": n }))
        })
        .collect();
    let results = tokio::time::timeout(Duration::from_secs(30), join_all(submissions))
        .await
        .expect("every activation ends within 30 s");
    for (n, result) in results.iter().enumerate() {
        let result = result
            .as_ref()
            .unwrap_or_else(|e| panic!("activation {n}: {e}"));
        assert_eq!(result["payload"]["n"], json!(n), "{result}");
        assert_eq!(result["action"], json!(format!("action-{}", n % 5)));
        assert_eq!(ledger.runs(id_of(result)), 1, "{result} ran once");
    }
    assert!(ledger.ran_twice().is_empty());
    drop((c1, c2, s1, s2));
    let replayed = replay_all(dir);
    assert_eq!(replayed.len(), 4, "{replayed:?}");
    assert!(replayed.iter().all(|(_, steps)| *steps > 0), "{replayed:?}");
}
