//! What the leasequeue model assumes of etcd and the network, checked
//! against Debian's etcd-server on loopback, and the fault injection the
//! runtime tests build on: SIGSTOP and SIGCONT, SIGKILL and restart, a proxy
//! that loses replies, a 3-member cluster losing its leader.

use std::time::Duration;

use etcd_client::{EventType, GetOptions, PutOptions, WatchOptions};
use steadfast_tests::etcd_server::{connect, EtcdCluster, EtcdServer};
use steadfast_tests::tcp_proxy::{Mode, TcpProxy};

/// The revision etcd is at now.
async fn revision(client: &mut etcd_client::Client) -> i64 {
    let response = client.get("none", None).await.unwrap();
    response.header().unwrap().revision()
}

/// The events of the next watch response that has any (the first response
/// only confirms the watch), as (type, key, revision).
async fn next_response(stream: &mut etcd_client::WatchStream) -> Vec<(EventType, String, i64)> {
    loop {
        let response = tokio::time::timeout(Duration::from_secs(10), stream.message())
            .await
            .expect("a watch response within 10 s")
            .unwrap()
            .expect("the watch is open");
        if response.events().is_empty() {
            continue;
        }
        return response
            .events()
            .iter()
            .map(|e| {
                let kv = e.kv().unwrap();
                (
                    e.event_type(),
                    kv.key_str().unwrap().to_string(),
                    kv.mod_revision(),
                )
            })
            .collect();
    }
}

/// Grants a lease of `ttl` seconds and binds three queue keys to it; returns
/// the lease and a watch on the keys from the next revision.
async fn three_keys_under_a_lease(
    client: &mut etcd_client::Client,
    ttl: i64,
) -> (i64, etcd_client::WatchStream) {
    let lease = client.lease_grant(ttl, None).await.unwrap().id();
    for action in ["a", "b", "c"] {
        let key = format!("queue/{action}/leader");
        let options = PutOptions::new().with_lease(lease);
        client.put(key, "scheduler-0", Some(options)).await.unwrap();
    }
    let from = revision(client).await + 1;
    let options = WatchOptions::new().with_prefix().with_start_revision(from);
    let stream = client.watch("queue/", Some(options)).await.unwrap();
    (lease, stream)
}

fn assert_one_revision_of_three_deletions(events: &[(EventType, String, i64)]) {
    let keys: Vec<&str> = events.iter().map(|(_, k, _)| k.as_str()).collect();
    assert_eq!(
        keys,
        ["queue/a/leader", "queue/b/leader", "queue/c/leader"],
        "{events:?}"
    );
    assert!(
        events.iter().all(|(t, _, _)| *t == EventType::Delete),
        "{events:?}"
    );
    assert!(
        events.iter().all(|(_, _, rev)| *rev == events[0].2),
        "one revision: {events:?}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_revoked_lease_should_delete_its_keys_in_one_revision_and_one_response() {
    // The model's etcd (spec/src/leasequeue/etcd.rs, `Etcd::revoke`) does
    // exactly this; the controller applies every event of the response.
    let etcd = EtcdServer::start().await.unwrap();
    let mut client = etcd.client().await.unwrap();
    let (lease, mut stream) = three_keys_under_a_lease(&mut client, 60).await;
    client.lease_revoke(lease).await.unwrap();
    assert_one_revision_of_three_deletions(&next_response(&mut stream).await);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_expired_lease_should_delete_its_keys_in_one_revision_and_one_response() {
    let etcd = EtcdServer::start().await.unwrap();
    let mut client = etcd.client().await.unwrap();
    // etcd's floor raises a 1 s TTL to its minimum (a few seconds).
    let (_lease, mut stream) = three_keys_under_a_lease(&mut client, 1).await;
    assert_one_revision_of_three_deletions(&next_response(&mut stream).await);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_lease_that_does_not_exist_should_be_reported_gone_not_kept_alive() {
    // etcd answers a keepalive of a missing lease with TTL 0, which
    // OpenWhisk took for success (#5286); etcd-client 0.21 turns that
    // answer into `LeaseKeepAliveError("lease not found")`, which the
    // runtime's adapter must report as the spec's TTL-0 answer, and the
    // lease's time to live is -1.
    let etcd = EtcdServer::start().await.unwrap();
    let mut client = etcd.client().await.unwrap();
    let lease = client.lease_grant(60, None).await.unwrap().id();
    client.lease_revoke(lease).await.unwrap();
    match client.lease_keep_alive(lease).await {
        Err(etcd_client::Error::LeaseKeepAliveError(message)) => {
            assert!(message.contains("lease not found"), "{message}");
        }
        Err(other) => panic!("a keepalive of a revoked lease failed otherwise: {other}"),
        Ok(_) => panic!("a keepalive of a revoked lease was taken for success"),
    }
    let left = client.lease_time_to_live(lease, None).await.unwrap();
    assert_eq!(left.ttl(), -1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_frozen_etcd_should_answer_nothing_until_it_is_thawed() {
    let etcd = EtcdServer::start().await.unwrap();
    let mut client = etcd.client().await.unwrap();
    client.put("k", "v", None).await.unwrap();
    etcd.pause().unwrap();
    let frozen = tokio::time::timeout(Duration::from_secs(1), client.get("k", None)).await;
    assert!(
        !matches!(frozen, Ok(Ok(_))),
        "a stopped etcd does not answer"
    );
    etcd.resume().unwrap();
    let thawed = client.get("k", None).await.unwrap();
    assert_eq!(thawed.kvs()[0].value_str().unwrap(), "v");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_killed_etcd_should_come_back_with_its_data() {
    let mut etcd = EtcdServer::start().await.unwrap();
    let mut client = etcd.client().await.unwrap();
    client.put("k", "v", None).await.unwrap();
    etcd.kill();
    assert!(
        client.get("k", None).await.is_err(),
        "a killed etcd does not answer"
    );
    etcd.restart().await.unwrap();
    let mut client = etcd.client().await.unwrap();
    let got = client.get("k", None).await.unwrap();
    assert_eq!(got.kvs()[0].value_str().unwrap(), "v");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_proxy_that_loses_replies_should_still_let_requests_apply() {
    let etcd = EtcdServer::start().await.unwrap();
    let upstream = etcd
        .endpoint()
        .trim_start_matches("http://")
        .parse()
        .unwrap();
    let proxy = TcpProxy::start(upstream).await.unwrap();
    let mut through = connect(&[format!("http://{}", proxy.address())])
        .await
        .unwrap();
    through.put("before", "1", None).await.unwrap();

    proxy.set(Mode::DropReplies);
    let lost = tokio::time::timeout(Duration::from_secs(3), through.put("during", "2", None)).await;
    assert!(!matches!(lost, Ok(Ok(_))), "the reply is lost");
    let mut direct = etcd.client().await.unwrap();
    let applied = direct.get("during", None).await.unwrap();
    assert_eq!(
        applied.kvs().len(),
        1,
        "the request was applied all the same"
    );

    proxy.set(Mode::Hold);
    let held = tokio::spawn(async move {
        let mut client = connect(&[format!("http://{}", proxy.address())]).await?;
        let got = client.get("before", None).await?;
        Ok::<_, Box<dyn std::error::Error + Send + Sync>>((proxy, got.kvs().len()))
    });
    tokio::time::sleep(Duration::from_millis(500)).await;
    assert!(!held.is_finished(), "a held network answers nothing");
    held.abort();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_cluster_should_elect_a_new_leader_when_its_leader_is_killed() {
    let mut cluster = EtcdCluster::start(3).await.unwrap();
    let mut client = cluster.client().await.unwrap();
    client.put("k", "v", None).await.unwrap();
    let first = cluster.leader().await.expect("a leader");
    cluster.kill(first);
    let mut next = None;
    for _ in 0..100 {
        next = cluster.leader().await;
        if next.is_some() {
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let next = next.expect("a new leader within 10 s");
    assert_ne!(next, first);
    let others: Vec<String> = cluster
        .endpoints()
        .into_iter()
        .enumerate()
        .filter(|(i, _)| *i != first)
        .map(|(_, e)| e)
        .collect();
    let mut survivors = connect(&others).await.unwrap();
    let got = survivors.get("k", Some(GetOptions::new())).await.unwrap();
    assert_eq!(
        got.kvs()[0].value_str().unwrap(),
        "v",
        "the data survives the leader"
    );
}
