//! The leasequeue runtime's etcd adapter against Debian's etcd-server on
//! loopback: every operation the roles' effects name, with its answers in
//! the spec's terms, and a deadline on each when etcd is frozen.

use std::time::{Duration, Instant};

use steadfast::leasequeue::etcd::{
    Claim, Etcd, EtcdError, EtcdOptions, EtcdTls, Holder, Listing, Watched,
};
use steadfast::spec::leasequeue::controller::{Change, Key};
use steadfast::spec::leasequeue::KeyFault;
use steadfast_tests::etcd_server::{EtcdServer, User};

async fn adapter(etcd: &EtcdServer) -> Etcd {
    let options =
        EtcdOptions::new([etcd.endpoint()]).with_request_timeout(Duration::from_millis(800));
    Etcd::connect(&options).await.expect("the adapter connects")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn claims_should_be_won_once_held_otherwise_and_refused_without_a_lease() {
    let server = EtcdServer::start().await.unwrap();
    let mut etcd = adapter(&server).await;
    let (a, b) = (
        etcd.grant(60).await.unwrap().id,
        etcd.grant(60).await.unwrap().id,
    );
    let Claim::Created { created } = etcd.claim("hello", "scheduler-a", 7, a).await.unwrap() else {
        panic!("the first claim wins");
    };
    assert!(created > 0);
    let holder = Holder {
        owner: "scheduler-a".into(),
        incarnation: 7,
        lease: a,
        created,
    };
    assert_eq!(
        etcd.claim("hello", "scheduler-b", 7, b).await.unwrap(),
        Claim::Exists(holder.clone()),
        "create-if-absent: the first claim keeps the key"
    );
    assert_eq!(etcd.lookup("hello").await.unwrap(), Some(holder));
    etcd.revoke(b).await.unwrap();
    etcd.revoke(b)
        .await
        .expect("revoking a lease already gone is no error");
    assert_eq!(
        etcd.claim("other", "scheduler-b", 7, b).await.unwrap(),
        Claim::LeaseNotFound
    );
    assert_eq!(etcd.lookup("other").await.unwrap(), None);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn deletes_should_be_conditioned_on_the_keys_create_revision() {
    let server = EtcdServer::start().await.unwrap();
    let mut etcd = adapter(&server).await;
    let (mine, theirs) = (
        etcd.grant(60).await.unwrap().id,
        etcd.grant(60).await.unwrap().id,
    );
    let created = |claim: Claim| match claim {
        Claim::Created { created } => created,
        other => panic!("{other:?}"),
    };
    let first = created(etcd.claim("hello", "scheduler-a", 7, mine).await.unwrap());
    assert!(etcd.delete_created("hello", first).await.unwrap());
    // Created again by the same scheduler under the same lease: another
    // key, which a late copy of the first delete must not take.
    let second = created(etcd.claim("hello", "scheduler-a", 7, mine).await.unwrap());
    assert!(second > first);
    assert!(
        !etcd.delete_created("hello", first).await.unwrap(),
        "a key created since: kept"
    );
    assert_eq!(
        etcd.lookup("hello").await.unwrap().map(|h| h.created),
        Some(second)
    );
    assert!(etcd.delete_created("hello", second).await.unwrap());
    assert!(etcd.lookup("hello").await.unwrap().is_none());
    etcd.claim("hello", "scheduler-b", 7, theirs).await.unwrap();
    assert!(
        etcd.delete("hello").await.unwrap(),
        "OpenWhisk's delete takes any key, another scheduler's too"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn keepalives_should_say_when_the_lease_is_gone() {
    let server = EtcdServer::start().await.unwrap();
    let mut etcd = adapter(&server).await;
    let lease = etcd.grant(60).await.unwrap().id;
    assert!(etcd.keep_alive(lease).await.unwrap());
    etcd.revoke(lease).await.unwrap();
    assert!(
        !etcd.keep_alive(lease).await.unwrap(),
        "TTL 0 is no success (#5286)"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_listing_and_a_watch_should_report_a_lease_loss_in_one_revision() {
    let server = EtcdServer::start().await.unwrap();
    let mut etcd = adapter(&server).await;
    let lease = etcd.grant(60).await.unwrap().id;
    assert!(etcd.register("scheduler-a", 7, lease).await.unwrap());
    etcd.claim("b", "scheduler-a", 7, lease).await.unwrap();
    etcd.claim("a", "scheduler-a", 7, lease).await.unwrap();
    // Another system's key between the two kinds, under the same prefix:
    // neither listed nor reported.
    let mut raw = etcd_client::Client::connect([server.endpoint()], None)
        .await
        .unwrap();
    raw.put("steadfast/rollout/state", "x", None).await.unwrap();
    let Listing {
        revision,
        keys,
        members,
        unreadable,
    } = etcd.list().await.unwrap();
    assert!(unreadable.is_empty(), "{unreadable:?}");
    assert_eq!(
        keys,
        [
            ("a".into(), "scheduler-a".into()),
            ("b".into(), "scheduler-a".into())
        ]
    );
    assert_eq!(members, [("scheduler-a".into(), 7)]);

    let mut watch = etcd.watch(revision + 1).await.unwrap();
    assert_eq!(
        watch.next(Duration::from_millis(300)).await.unwrap(),
        None,
        "a quiet watch reports nothing"
    );
    etcd.revoke(lease).await.unwrap();
    let report = watch.next(Duration::from_secs(5)).await.unwrap();
    let Some(Watched::Changes { changes, term }) = report else {
        panic!("expected the deletions, got {report:?}");
    };
    assert!(watch.term() > 0, "etcd's creation names its leader's term");
    assert_eq!(term, watch.term(), "the leader did not change");
    assert!(
        changes.iter().all(|(rev, _)| *rev == revision + 1),
        "one revision: {changes:?}"
    );
    let mut changes: Vec<_> = changes.into_iter().map(|(_, change)| change).collect();
    changes.sort();
    let gone = |action: &str| Change::Endpoint {
        action: action.into(),
        owner: None,
    };
    let left = Change::Member {
        scheduler: "scheduler-a".into(),
        incarnation: None,
    };
    assert_eq!(
        changes,
        [gone("a"), gone("b"), left],
        "every key of the lease, one report"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_member_key_should_follow_the_lease_it_was_last_put_under() {
    let server = EtcdServer::start().await.unwrap();
    let mut etcd = adapter(&server).await;
    let (old, new) = (
        etcd.grant(60).await.unwrap().id,
        etcd.grant(60).await.unwrap().id,
    );
    let revision = etcd.list().await.unwrap().revision;
    let mut watch = etcd.watch(revision + 1).await.unwrap();
    assert!(etcd.register("scheduler-a", 7, old).await.unwrap());
    let joined = Change::Member {
        scheduler: "scheduler-a".into(),
        incarnation: Some(7),
    };
    let report = watch.next(Duration::from_secs(5)).await.unwrap();
    assert_eq!(
        report,
        Some(Watched::Changes {
            changes: vec![(revision + 1, joined)],
            term: watch.term(),
        })
    );
    // Restarted under a new lease, a new run of it: the old lease's end
    // leaves it a member, and its key names the new run.
    assert!(etcd.register("scheduler-a", 8, new).await.unwrap());
    etcd.revoke(old).await.unwrap();
    assert_eq!(
        etcd.list().await.unwrap().members,
        [("scheduler-a".into(), 8)]
    );
    etcd.revoke(new).await.unwrap();
    assert!(etcd.list().await.unwrap().members.is_empty());
    assert!(
        !etcd.register("scheduler-a", 7, new).await.unwrap(),
        "no member key under a lease etcd no longer has"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_watch_catching_up_should_label_each_change_with_its_own_revision() {
    let server = EtcdServer::start().await.unwrap();
    let mut etcd = adapter(&server).await;
    let lease = etcd.grant(60).await.unwrap().id;
    let revision = etcd.list().await.unwrap().revision;
    for action in ["a", "b", "c"] {
        let claim = etcd.claim(action, "scheduler-a", 7, lease).await.unwrap();
        assert!(matches!(claim, Claim::Created { .. }), "{claim:?}");
    }
    // Started from a past revision, the watch is behind: etcd sends it
    // what it missed in batches, here all three revisions in one response.
    let mut watch = etcd.watch(revision + 1).await.unwrap();
    let mut seen: Vec<Vec<(i64, Change<_>)>> = Vec::new();
    while seen.iter().map(Vec::len).sum::<usize>() < 3 {
        match watch.next(Duration::from_secs(5)).await.unwrap() {
            Some(Watched::Changes { changes, .. }) => seen.push(changes),
            other => panic!("expected the claims, got {other:?}"),
        }
    }
    let endpoint = |action: &str| Change::Endpoint {
        action: action.into(),
        owner: Some("scheduler-a".into()),
    };
    let expected = [
        (revision + 1, endpoint("a")),
        (revision + 2, endpoint("b")),
        (revision + 3, endpoint("c")),
    ];
    assert_eq!(seen.concat(), expected, "each change at its own revision");
    assert_eq!(seen.len(), 1, "one response spanning three revisions");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_watch_from_a_compacted_revision_should_say_so() {
    let server = EtcdServer::start().await.unwrap();
    let mut etcd = adapter(&server).await;
    let lease = etcd.grant(60).await.unwrap().id;
    let old = etcd.list().await.unwrap().revision;
    for action in ["a", "b", "c"] {
        etcd.claim(action, "scheduler-a", 7, lease).await.unwrap();
    }
    let now = etcd.list().await.unwrap().revision;
    let mut raw = server.client().await.unwrap();
    raw.compact(now, None).await.unwrap();
    let mut watch = etcd.watch(old + 1).await.unwrap();
    assert_eq!(
        watch.next(Duration::from_secs(5)).await.unwrap(),
        Some(Watched::Compacted {
            compact_revision: now
        })
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_frozen_etcd_should_cost_a_call_its_deadline_and_no_more() {
    let server = EtcdServer::start().await.unwrap();
    let mut etcd = adapter(&server).await;
    let lease = etcd.grant(60).await.unwrap().id;
    server.pause().unwrap();
    let started = Instant::now();
    let frozen = etcd.claim("hello", "scheduler-a", 7, lease).await;
    let waited = started.elapsed();
    server.resume().unwrap();
    assert!(
        matches!(
            frozen,
            Err(EtcdError::Timeout { .. }) | Err(EtcdError::Request { .. })
        ),
        "{frozen:?}"
    );
    assert!(
        waited < Duration::from_secs(3),
        "the call gave up after its deadline, not {waited:?}"
    );
    // The request may have reached etcd's socket before the freeze took
    // it: once thawed, etcd can apply it although its caller gave up (seen
    // here in one run of three), so a claim that timed out may have won.
    // The retry must then read the key as its own: the spec's "applied with
    // the reply lost".
    let retried = etcd.claim("hello", "scheduler-a", 7, lease).await.unwrap();
    assert!(
        match &retried {
            Claim::Created { .. } => true,
            Claim::Exists(holder) => holder.owner == "scheduler-a" && holder.lease == lease,
            Claim::LeaseNotFound | Claim::Unreadable { .. } => false,
        },
        "{retried:?}"
    );
}

/// A value this runtime did not write is never guessed at: a lookup
/// refuses it, a claim and a member's lookup report it; a listing and a watch report it apart, with what is wrong,
/// and read every other key on. A key under the queue prefix of no
/// endpoint's form names nothing, and is skipped.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_key_this_runtime_did_not_write_should_be_reported_not_guessed() {
    let server = EtcdServer::start().await.unwrap();
    let mut etcd = adapter(&server).await;
    let mut raw = server.client().await.unwrap();
    raw.put(etcd.key("hello"), vec![0xff, 0xfe], None)
        .await
        .unwrap();
    let error = etcd.lookup("hello").await.unwrap_err();
    assert!(matches!(error, EtcdError::Corrupt { .. }), "{error}");
    assert!(
        error.to_string().contains("steadfast/queue/hello/leader"),
        "{error}"
    );

    let lease = etcd.grant(60).await.unwrap().id;
    let claimed = etcd.claim("hello", "scheduler-a", 7, lease).await.unwrap();
    assert!(
        matches!(&claimed, Claim::Unreadable { why: KeyFault::ForeignValue, reason } if !reason.is_empty()),
        "{claimed:?}"
    );
    assert!(etcd.register("scheduler-a", 7, lease).await.unwrap());
    etcd.claim("a", "scheduler-a", 7, lease).await.unwrap();
    raw.put("steadfast/queue/notes", "hello", None)
        .await
        .unwrap();
    raw.put(etcd.member_key("scheduler-b"), "scheduler-c 1", None)
        .await
        .unwrap();
    let seen = etcd.member("scheduler-b").await.unwrap();
    assert_eq!(seen.incarnation, None, "{seen:?}");
    assert!(
        seen.unreadable
            .as_deref()
            .is_some_and(|why| why.contains("scheduler-c")),
        "{seen:?}"
    );
    let seen = etcd.member("scheduler-a").await.unwrap();
    assert_eq!((seen.incarnation, seen.unreadable), (Some(7), None));
    let listing = etcd.list().await.unwrap();
    assert_eq!(listing.keys, [("a".into(), "scheduler-a".into())]);
    assert_eq!(listing.members, [("scheduler-a".into(), 7)]);
    let reasons: Vec<_> = listing.unreadable.iter().map(|(_, why)| why).collect();
    let keys: Vec<_> = listing.unreadable.iter().map(|(key, _)| key).collect();
    assert_eq!(
        keys,
        [
            &Key::Endpoint("hello".into()),
            &Key::Member("scheduler-b".into())
        ]
    );
    assert!(reasons[0].contains("is not \"<scheduler name> <incarnation>\""));
    assert!(reasons[1].contains("another scheduler (\"scheduler-c\")"));

    // The watch reads on past an unreadable value.
    let mut watch = etcd.watch(listing.revision + 1).await.unwrap();
    raw.put(etcd.key("a"), "", None).await.unwrap();
    raw.put("steadfast/queue/notes", "again", None)
        .await
        .unwrap();
    etcd.delete("a").await.unwrap();
    let mut seen = Vec::new();
    while seen.len() < 2 {
        match watch.next(Duration::from_secs(5)).await.unwrap() {
            Some(Watched::Changes { changes, .. }) => {
                seen.extend(changes.into_iter().map(|(_, change)| change))
            }
            other => panic!("expected the changes, got {other:?}"),
        }
    }
    let [Change::Unreadable { key, reason }, gone] = &seen[..] else {
        panic!("{seen:?}");
    };
    assert_eq!(key, &Key::Endpoint("a".into()));
    assert!(reason.contains("its value \"\""), "{reason}");
    assert_eq!(
        gone,
        &Change::Endpoint {
            action: "a".into(),
            owner: None
        }
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tls_and_a_user_should_be_honoured() {
    let server = EtcdServer::start_tls().await.unwrap();
    let endpoint = server.endpoint();
    assert!(endpoint.starts_with("https://"), "{endpoint}");
    let ca = server.ca_pem().unwrap().to_vec();
    let tls = || EtcdOptions::new([endpoint.clone()]).with_tls(EtcdTls::new(ca.clone()));

    let mut etcd = Etcd::connect(&tls())
        .await
        .expect("TLS with the CA connects");
    let lease = etcd.grant(60).await.unwrap().id;
    assert!(matches!(
        etcd.claim("hello", "scheduler-a", 7, lease).await.unwrap(),
        Claim::Created { .. }
    ));

    // Authentication on: only the user with its password gets in.
    server.enable_auth(&[]).await.unwrap();
    let mut etcd = Etcd::connect(&tls().with_user("root", "root"))
        .await
        .expect("the user connects");
    assert!(etcd.lookup("hello").await.unwrap().is_some());
    let wrong = Etcd::connect(&tls().with_user("root", "wrong")).await;
    assert!(
        matches!(wrong, Err(EtcdError::Connect { .. })),
        "a wrong password is refused at connect"
    );
}

/// etcd refusing this node a key (its user lacks the permission) is told
/// apart from a failure that may pass: a lookup or a claim of the key
/// reports it unreadable for good, with etcd's words and what to grant,
/// while the keys the user may use work as before.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_key_etcd_refuses_this_node_should_be_reported_unreadable_for_good() {
    let server = EtcdServer::start().await.unwrap();
    let tenant = User {
        name: "tenant",
        password: "tenant-secret",
        reads: &["steadfast/scheduler/"],
        writes: &["steadfast/queue/open/"],
    };
    server.enable_auth(&[tenant]).await.unwrap();
    let options = EtcdOptions::new([server.endpoint()])
        .with_request_timeout(Duration::from_millis(800))
        .with_user("tenant", "tenant-secret");
    let mut etcd = Etcd::connect(&options).await.expect("the user connects");
    let lease = etcd.grant(60).await.unwrap().id;
    assert!(matches!(
        etcd.claim("open", "scheduler-a", 7, lease).await.unwrap(),
        Claim::Created { .. }
    ));
    assert!(etcd.lookup("open").await.unwrap().is_some());

    let refused = etcd.lookup("closed").await.unwrap_err();
    assert!(matches!(refused, EtcdError::Refused { .. }), "{refused:?}");
    let message = refused.to_string();
    assert!(message.contains("grant this node's etcd user"), "{message}");
    let (why, reason) = refused.unreadable().expect("a refusal is for good");
    assert_eq!(why, KeyFault::AccessDenied);
    assert!(reason.contains("permission denied"), "{reason}");
    match etcd.claim("closed", "scheduler-a", 7, lease).await.unwrap() {
        Claim::Unreadable { why, reason } => {
            assert_eq!(why, KeyFault::AccessDenied);
            assert!(reason.contains("permission denied"), "{reason}");
        }
        other => panic!("expected the claim refused for good, got {other:?}"),
    }
    // What etcd allows goes on.
    assert!(etcd.keep_alive(lease).await.unwrap());
    assert!(etcd
        .member("scheduler-a")
        .await
        .unwrap()
        .incarnation
        .is_none());
}

#[tokio::test]
async fn options_that_cannot_work_should_say_what_to_fix() {
    let cases = [
        (EtcdOptions::new(Vec::<String>::new()), "no endpoint"),
        (EtcdOptions::new(["127.0.0.1:2379"]), "is not a URL"),
        (EtcdOptions::new(["https://127.0.0.1:2379"]), "with_tls"),
        (
            EtcdOptions::new(["http://127.0.0.1:2379"]).with_tls(EtcdTls::new(Vec::new())),
            "write https://",
        ),
    ];
    for (options, says) in cases {
        match Etcd::connect(&options).await {
            Err(error @ EtcdError::Options(_)) => {
                assert!(error.to_string().contains(says), "{error}")
            }
            Err(error) => panic!("{options:?}: {error}"),
            Ok(_) => panic!("{options:?} connected"),
        }
    }
}
