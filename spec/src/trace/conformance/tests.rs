//! Each rule of [`super::check`], kept by a small faithful run and broken
//! by the same run with one thing changed: what a driver outside its role,
//! or a world unlike etcd or the API server, would show. The traces are
//! written by hand; the checks read them as recorded, without replaying.

use super::{check, Options, Rule};
use crate::leasequeue::controller::{self, Change, WatchId};
use crate::leasequeue::scheduler::{self, ClaimResult, Endpoint};
use crate::leasequeue::trace::{ControllerHeader, Named, SchedulerHeader};
use crate::leasequeue::{FailReason, Outcome, Variant};
use crate::lifecycle::named::Named as Kube;
use crate::lifecycle::trace::EngineHeader;
use crate::lifecycle::{self, ObjectView, Patch, RunId};
use crate::trace::{Record, Run, Trace};

use controller::{Effect as CE, Input as CI};
use scheduler::{Effect as SE, Input as SI};

const A: &str = "127.0.0.1:7001";
const B: &str = "127.0.0.1:7002";
const C: &str = "127.0.0.1:7100";

/// A step: its stamp, its sender, its input and its effects.
fn step<I, E>(at: u64, from: Option<&str>, input: I, effects: Vec<E>) -> Record<I, E> {
    Record {
        at,
        elapsed: 1,
        from: from.map(str::to_owned),
        input,
        effects,
    }
}

fn scheduler_trace(id: &str, records: Vec<Record<SI<Named>, SE<Named>>>) -> Trace {
    let header = SchedulerHeader {
        id: id.into(),
        incarnation: 1,
        config: scheduler::Config {
            rules: Variant::Steadfast.into(),
            ttl: 2_000,
            margin: 500,
            wake_every: 600,
            retry_every: 250,
            idle_after: 60_000,
            remember_for: Some(600_000),
            execute_for: Some(60_000),
            presume_gone_after: 10_000,
        },
    };
    Trace::from(Run::Scheduler(header, records))
}

fn controller_trace(records: Vec<Record<CI<Named>, CE<Named>>>) -> Trace {
    let header = ControllerHeader {
        address: C.into(),
        keys: Vec::new(),
        members: Vec::new(),
        rev: 1,
        config: controller::Config {
            rules: Variant::Steadfast.into(),
            wake_every: 3_000,
            seed: 0,
            presume_gone_after: 30_000,
        },
    };
    Trace::from(Run::Controller(header, records))
}

fn engine_trace(
    identity: &str,
    records: Vec<Record<lifecycle::Input<Kube>, lifecycle::Effect<Kube>>>,
) -> Trace {
    let header = EngineHeader {
        object: "default/t".into(),
        identity: identity.into(),
        incarnation: 1,
        started: 0,
        config: lifecycle::Config {
            rules: lifecycle::Variant::Steadfast.into(),
            handlers: Vec::new(),
            backoff: lifecycle::Backoff {
                first: 200,
                most: 30_000,
            },
            claims: lifecycle::Claims {
                duration: 60_000,
                drift: 2_000,
                renew_before: 30_000,
            },
            status_subresource: false,
        },
    };
    Trace::from(Run::Engine(header, records))
}

/// The rules `traces` break, each once.
fn broken(traces: &[Trace]) -> Vec<Rule> {
    let mut rules: Vec<Rule> = check(traces, &Options::default())
        .into_iter()
        .map(|v| v.rule)
        .collect();
    rules.dedup();
    rules
}

/// A scheduler takes activation `a-1` in from the controller at `at` and
/// runs it; `ack`: and reports and acknowledges it, and the controller
/// confirms the report.
fn runs_a1(at: u64, ack: bool) -> Vec<Record<SI<Named>, SE<Named>>> {
    let execute = SE::Execute {
        id: "a-1".into(),
        action: "hello".into(),
        lease: 7,
    };
    let mut records = vec![
        step(at, None, SI::Wake, vec![SE::WakeIn { after: 600 }]),
        step(
            at + 1,
            Some(C),
            SI::Activation {
                id: "a-1".into(),
                action: "hello".into(),
                forwarded: false,
                incarnation: Some(1),
                left: None,
                reply_to: C.into(),
                may_have_run: false,
            },
            vec![execute],
        ),
    ];
    if ack {
        records.push(step(
            at + 2,
            None,
            SI::Executed {
                id: "a-1".into(),
                failure: None,
            },
            vec![
                SE::Report {
                    id: "a-1".into(),
                    to: C.into(),
                    outcome: Outcome::Executed,
                },
                SE::Ack { id: "a-1".into() },
            ],
        ));
        let confirmed = SI::ReportAcked {
            id: "a-1".into(),
            from: Some(C.into()),
        };
        records.push(step(at + 3, None, confirmed, vec![]));
    }
    records
}

/// The controller sends `a-1` to both schedulers.
fn sends_a1() -> Trace {
    let send = |to: &str| CE::Send {
        id: "a-1".into(),
        action: "hello".into(),
        to: to.into(),
        incarnation: Some(1),
        may_have_run: false,
    };
    controller_trace(vec![step(
        100,
        None,
        CI::Submit {
            id: "a-1".into(),
            action: "hello".into(),
            deadline: None,
        },
        vec![send(A), send(B)],
    )])
}

#[test]
fn an_activation_run_twice_should_break_executed_at_most_once_unless_excused() {
    let twice = [
        sends_a1(),
        scheduler_trace(A, runs_a1(200, true)),
        scheduler_trace(B, runs_a1(300, true)),
    ];
    assert_eq!(
        broken(&twice),
        [Rule::ExecutedAtMostOnce, Rule::AtMostOneOutcome]
    );
    // A stopped holding it unacknowledged: its sender sent it again.
    let excused = [
        sends_a1(),
        scheduler_trace(A, runs_a1(200, false)),
        scheduler_trace(B, runs_a1(300, true)),
    ];
    assert_eq!(broken(&excused), []);
    // A stopped once it reported and acknowledged it, the report not
    // confirmed (lost, or late): its controller sends it until it learns
    // how it ended.
    let mut unconfirmed = runs_a1(200, true);
    unconfirmed.pop();
    let excused = [
        sends_a1(),
        scheduler_trace(A, unconfirmed),
        scheduler_trace(B, runs_a1(300, true)),
    ];
    assert_eq!(broken(&excused), []);
    // One stop excuses one execution more, not every later one: a third
    // run is one too many.
    let thrice = [
        sends_a1(),
        scheduler_trace(A, runs_a1(200, false)),
        scheduler_trace(B, runs_a1(300, true)),
        scheduler_trace("127.0.0.1:7003", runs_a1(400, true)),
    ];
    assert!(
        broken(&thrice).contains(&Rule::ExecutedAtMostOnce),
        "{:?}",
        broken(&thrice)
    );
}

/// The controller takes `a-1` in, submitted at `at`, and a scheduler's
/// report of it a step later: it resolves it with `outcome`.
fn submitted_and_told(at: u64, outcome: Outcome) -> Vec<Record<CI<Named>, CE<Named>>> {
    let submit = CI::Submit {
        id: "a-1".into(),
        action: "hello".into(),
        deadline: None,
    };
    let get = CE::Get {
        id: "a-1".into(),
        action: "hello".into(),
    };
    vec![step(at, None, submit, vec![get]), told(at + 1, outcome)]
}

/// A scheduler's report of `a-1` with `outcome`, taken in at `at`.
fn told(at: u64, outcome: Outcome) -> Record<CI<Named>, CE<Named>> {
    let id = || "a-1".to_owned();
    let input = CI::Outcome {
        id: id(),
        outcome,
        from: None,
    };
    step(at, None, input, vec![CE::Resolve { id: id(), outcome }])
}

#[test]
fn a_submission_resolved_twice_or_told_another_end_should_break_at_most_one_outcome() {
    // Submitted again after it ended, and told the same end again: each
    // call resolves once.
    let mut again = submitted_and_told(100, Outcome::Executed);
    again.extend(submitted_and_told(200, Outcome::Executed));
    assert_eq!(broken(&[controller_trace(again.clone())]), []);
    // A call resolved twice.
    let mut twice = again.clone();
    twice.push(told(300, Outcome::Executed));
    assert_eq!(broken(&[controller_trace(twice)]), [Rule::AtMostOneOutcome]);
    // A resubmission told another end than the first.
    let mut other = submitted_and_told(100, Outcome::Executed);
    other.extend(submitted_and_told(
        200,
        Outcome::Failed(FailReason::NoQueueEndpoint),
    ));
    assert_eq!(broken(&[controller_trace(other)]), [Rule::AtMostOneOutcome]);
}

#[test]
fn an_activation_that_failed_after_it_ran_should_break_at_most_one_outcome() {
    let mut records = runs_a1(200, false);
    records.push(step(
        203,
        None,
        SI::Wake,
        vec![SE::Report {
            id: "a-1".into(),
            to: C.into(),
            outcome: Outcome::Failed(FailReason::PastDeadline),
        }],
    ));
    assert_eq!(
        broken(&[sends_a1(), scheduler_trace(A, records)]),
        [Rule::AtMostOneOutcome]
    );
}

#[test]
fn an_answer_nothing_asked_for_should_break_answers_answer_requests() {
    let keepalive = |keepalive| SE::KeepAlive {
        lease: 7,
        keepalive,
    };
    let kept = |keepalive| SI::KeptAlive {
        lease: 7,
        keepalive,
        ttl: 2_000,
    };
    let asked = vec![
        step(1, None, SI::Wake, vec![keepalive(0)]),
        step(2, None, kept(0), vec![]),
    ];
    assert_eq!(broken(&[scheduler_trace(A, asked.clone())]), []);
    let mut again = asked;
    again.push(step(3, None, kept(0), vec![]));
    again.push(step(4, None, SI::Retry, vec![]));
    let violations = check(&[scheduler_trace(A, again)], &Options::default());
    let what: Vec<_> = violations.iter().map(|v| v.what.as_str()).collect();
    assert_eq!(
        what,
        [
            "keepalive 0 of lease 7 was answered, but not asked for (or answered before)",
            "the retry timer fired, but was not armed",
        ]
    );
    assert!(violations
        .iter()
        .all(|v| v.rule == Rule::AnswersAnswerRequests));
}

#[test]
fn a_message_taken_in_before_it_was_sent_should_break_sent_by_its_sender() {
    let taken_at = |at| scheduler_trace(A, runs_a1(at, true));
    // Sent at 100: taken in at 201 is after, at 50 within the skew.
    assert_eq!(broken(&[sends_a1(), taken_at(200)]), []);
    assert_eq!(broken(&[sends_a1(), taken_at(50)]), []);
    let early = check(&[sends_a1(), taken_at(0)], &Options { skew: 0 });
    assert_eq!(early.len(), 1, "{early:?}");
    assert_eq!(early[0].rule, Rule::SentByItsSender);
    assert_eq!(
        early[0].what,
        "took in the activation a-1 to 127.0.0.1:7001 99 ms before 127.0.0.1:7100 sent it"
    );
}

/// The watch a controller starts with.
const W0: WatchId = WatchId(0);

/// Watch `watch` started, reporting from revision 2.
fn started(watch: WatchId) -> CI<Named> {
    CI::WatchStarted {
        watch,
        next: 2,
        term: 0,
    }
}

/// A controller's watch from revision 2, reporting `changes`, one
/// response each.
fn watching(changes: Vec<(i64, Change<Named>)>) -> Vec<Record<CI<Named>, CE<Named>>> {
    let mut records = vec![
        step(1, None, CI::Wake, vec![]),
        step(2, None, started(W0), vec![]),
    ];
    for (n, change) in changes.into_iter().enumerate() {
        records.push(step(
            3 + n as u64,
            None,
            CI::Changed {
                watch: W0,
                changes: vec![change],
                term: 0,
            },
            vec![],
        ));
    }
    records
}

fn put(rev: i64, action: &str, owner: &str) -> (i64, Change<Named>) {
    let change = Change::Endpoint {
        action: action.into(),
        owner: Some(owner.into()),
    };
    (rev, change)
}

fn delete(rev: i64, action: &str) -> (i64, Change<Named>) {
    let change = Change::Endpoint {
        action: action.into(),
        owner: None,
    };
    (rev, change)
}

#[test]
fn revisions_that_go_back_should_break_revisions_increase_and_watch_order() {
    let listing = |rev| CI::Listed {
        rev,
        keys: Vec::new(),
        members: Vec::new(),
    };
    let lists = |second| {
        controller_trace(vec![
            step(1, None, CI::Wake, vec![CE::List]),
            step(2, None, listing(10), vec![CE::List]),
            step(3, None, listing(second), vec![]),
        ])
    };
    assert_eq!(broken(&[lists(12)]), []);
    assert_eq!(broken(&[lists(5)]), [Rule::RevisionsIncrease]);
    let back = watching(vec![put(4, "hello", A), delete(3, "bye")]);
    assert_eq!(broken(&[controller_trace(back)]), [Rule::WatchWithoutGaps]);
}

/// A scheduler, asked for a queue for `action` at `at`, claims its key
/// under `lease`, and etcd answers with `result`.
fn claimed(
    at: u64,
    action: &str,
    lease: i64,
    result: ClaimResult<Named>,
) -> [Record<SI<Named>, SE<Named>>; 2] {
    let claim = SE::Claim {
        action: action.into(),
        lease,
        incarnation: 1,
    };
    let answer = SI::Claimed {
        action: action.into(),
        lease,
        result,
    };
    let asked = SI::CreateQueue {
        action: action.into(),
    };
    [
        step(at, None, asked, vec![claim]),
        step(at + 1, None, answer, vec![]),
    ]
}

/// Scheduler `owner` claims `action` under `lease`: etcd answers it
/// created the key at `created`.
fn claims(owner: &str, action: &str, lease: i64, created: i64) -> Trace {
    let answer = ClaimResult::Created { created };
    scheduler_trace(owner, claimed(10, action, lease, answer).into())
}

#[test]
fn a_key_created_twice_should_break_created_once_between_deletes() {
    // Two answers name one key with two owners.
    let exists = ClaimResult::Exists(Endpoint {
        owner: B.into(),
        incarnation: 1,
        lease: 9,
        created: 4,
    });
    let lookup = scheduler_trace(B, claimed(20, "hello", 9, exists).into());
    let watch = controller_trace(watching(vec![put(4, "hello", A)]));
    assert_eq!(broken(&[claims(A, "hello", 7, 4), watch.clone()]), []);
    assert_eq!(
        broken(&[claims(A, "hello", 7, 4), lookup, watch]),
        [Rule::CreatedOnceBetweenDeletes]
    );
    // A watch shows the key created again with no delete between.
    let again = watching(vec![put(4, "hello", A), put(6, "hello", B)]);
    assert_eq!(
        broken(&[controller_trace(again)]),
        [Rule::CreatedOnceBetweenDeletes]
    );
}

#[test]
fn a_leases_keys_going_apart_should_break_lease_keys_go_together() {
    let owner = |deletes| {
        let mut records = vec![];
        for (n, (action, created)) in [("hello", 4), ("bye", 5)].into_iter().enumerate() {
            let answer = ClaimResult::Created { created };
            records.extend(claimed(10 + 2 * n as u64, action, 7, answer));
        }
        let mut trace = scheduler_trace(A, records);
        if let Run::Scheduler(_, records) = &mut trace.run {
            records.extend(deletes);
        }
        trace
    };
    let changes = |hello: i64, bye: i64| {
        let mut changes = vec![put(4, "hello", A), put(5, "bye", A)];
        if hello == bye {
            changes.push(delete(hello, "hello"));
            let records = watching(changes);
            // Both in one response, as an expiry deletes them.
            let mut records = records;
            if let CI::Changed { changes, .. } = &mut records.last_mut().unwrap().input {
                changes.push(delete(bye, "bye"));
            }
            return controller_trace(records);
        }
        changes.push(delete(hello, "hello"));
        changes.push(delete(bye, "bye"));
        controller_trace(watching(changes))
    };
    assert_eq!(broken(&[owner(vec![]), changes(9, 9)]), []);
    assert_eq!(
        broken(&[owner(vec![]), changes(8, 9)]),
        [Rule::LeaseKeysGoTogether]
    );
    // One deleted by its owner's request, the other by the expiry.
    let idle = step(
        20,
        None,
        SI::Drain,
        vec![SE::Delete {
            action: "hello".into(),
            created: Some(4),
        }],
    );
    assert_eq!(broken(&[owner(vec![idle]), changes(8, 9)]), []);
}

#[test]
fn a_watch_that_skips_a_created_key_should_break_watch_without_gaps() {
    let progress = |rev| {
        step(
            9,
            None,
            CI::Progress {
                watch: W0,
                rev,
                term: 0,
            },
            vec![],
        )
    };
    let mut shown = watching(vec![put(4, "hello", A)]);
    shown.push(progress(6));
    assert_eq!(
        broken(&[claims(A, "hello", 7, 4), controller_trace(shown)]),
        []
    );
    let mut skipped = watching(vec![]);
    skipped.push(progress(6));
    assert_eq!(
        broken(&[claims(A, "hello", 7, 4), controller_trace(skipped.clone())]),
        [Rule::WatchWithoutGaps]
    );
    // A watch that reported a compaction is excused what it skipped.
    let compacted = CI::Compacted { watch: W0, rev: 8 };
    skipped.push(step(10, None, compacted, vec![]));
    assert_eq!(
        broken(&[claims(A, "hello", 7, 4), controller_trace(skipped)]),
        []
    );
}

/// A watch the controller gave up on may still report: each watch is read
/// on its own, so two watches reporting one creation are no key created
/// twice, and a gap in either is still a gap.
#[test]
fn each_watch_should_be_read_on_its_own() {
    let second = WatchId(1);
    let changed = |watch, changes| CI::Changed {
        watch,
        changes,
        term: 0,
    };
    let records = |last: Vec<(i64, Change<Named>)>| {
        let from = Some(2);
        let closed = || vec![CE::Unwatch { id: second }];
        vec![
            step(1, None, CI::Wake, vec![CE::Watch { id: second, from }]),
            step(2, None, started(W0), vec![]),
            step(3, None, started(second), closed()),
            step(4, None, changed(W0, vec![put(4, "hello", A)]), vec![]),
            step(5, None, changed(second, last), closed()),
        ]
    };
    let both = records(vec![put(4, "hello", A)]);
    assert_eq!(
        broken(&[claims(A, "hello", 7, 4), controller_trace(both)]),
        []
    );
    let backwards = records(vec![put(4, "hello", A), delete(3, "hello")]);
    assert_eq!(
        broken(&[claims(A, "hello", 7, 4), controller_trace(backwards)]),
        [Rule::WatchWithoutGaps]
    );
}

#[test]
fn a_keepalive_of_a_gone_lease_succeeding_should_break_keepalive_of_live_lease() {
    let send = |keepalive| SE::KeepAlive {
        lease: 7,
        keepalive,
    };
    let kept = |keepalive, ttl| SI::KeptAlive {
        lease: 7,
        keepalive,
        ttl,
    };
    // Keepalive 1 was sent before the lease was known gone: etcd may
    // have renewed it before it expired.
    let wake = || SE::WakeIn { after: 600 };
    let crossed = vec![
        step(1, None, SI::Wake, vec![send(0), wake()]),
        step(2, None, SI::Wake, vec![send(1)]),
        step(3, None, kept(0, 0), vec![]),
        step(4, None, kept(1, 2_000), vec![]),
    ];
    assert_eq!(broken(&[scheduler_trace(A, crossed)]), []);
    let after = vec![
        step(1, None, SI::Wake, vec![send(0), wake()]),
        step(2, None, kept(0, 0), vec![]),
        step(3, None, SI::Wake, vec![send(1)]),
        step(4, None, kept(1, 2_000), vec![]),
    ];
    assert_eq!(
        broken(&[scheduler_trace(A, after)]),
        [Rule::KeepAliveOfLiveLease]
    );
}

fn view(version: &str) -> ObjectView<Kube> {
    ObjectView {
        version: version.into(),
        essence: "{}".into(),
        deleting: false,
        finalizer: false,
        progress: Default::default(),
        diff_base: None,
        claim: None,
        epoch: 0,
        marked: false,
    }
}

fn patch(expect: &str, checked: bool) -> lifecycle::Effect<Kube> {
    lifecycle::Effect::Patch(Patch {
        expect: expect.into(),
        checked,
        records: Vec::new(),
        diff_base: None,
        writes: Vec::new(),
        finalizer: None,
        claim: None,
        to_status: false,
    })
}

type EngineStep = Record<lifecycle::Input<Kube>, lifecycle::Effect<Kube>>;

/// An engine lists version 3, patches it, and is told the patch made
/// `made`; then the watch shows `shown`, in order.
fn patches(made: &str, shown: &[&str]) -> Vec<EngineStep> {
    use lifecycle::Input as I;
    let mut records = vec![
        step(1, None, I::Listed(view("3")), vec![patch("3", true)]),
        step(
            2,
            None,
            I::PatchApplied {
                version: made.into(),
            },
            vec![],
        ),
    ];
    for (n, version) in shown.iter().enumerate() {
        records.push(step(3 + n as u64, None, I::Observed(view(version)), vec![]));
    }
    records
}

#[test]
fn versions_a_write_or_the_watch_could_not_show_should_break_the_kube_rules() {
    assert_eq!(
        broken(&[engine_trace("op-0", patches("5", &["4", "5", "6"]))]),
        []
    );
    // The watch shows it next.
    assert_eq!(
        broken(&[engine_trace("op-0", patches("5", &["5", "6"]))]),
        []
    );
    assert_eq!(
        broken(&[engine_trace("op-0", patches("2", &["4"]))]),
        [Rule::WriteMakesNewerVersion]
    );
    assert_eq!(
        broken(&[engine_trace("op-0", patches("3", &["4"]))]),
        [Rule::WriteMakesNewerVersion]
    );
    // A status part alone may change nothing: it is answered with the
    // version it expected, and makes none.
    let mut unchanged = patches("3", &["4"]);
    for record in &mut unchanged {
        for effect in &mut record.effects {
            if let lifecycle::Effect::Patch(patch) = effect {
                patch.to_status = true;
            }
        }
    }
    assert_eq!(broken(&[engine_trace("op-0", unchanged)]), []);
    assert_eq!(
        broken(&[engine_trace("op-0", patches("5", &["4", "6"]))]),
        [Rule::PatchedVersionShown]
    );
    assert_eq!(
        broken(&[engine_trace("op-0", patches("5", &["5", "7", "6"]))]),
        [Rule::VersionsInOrder]
    );
    // Two engines each say a write of theirs made version 5.
    assert_eq!(
        broken(&[
            engine_trace("op-0", patches("5", &["5"])),
            engine_trace("op-1", patches("5", &["5"])),
        ]),
        [Rule::WriteMakesNewerVersion]
    );
}

#[test]
fn a_conflict_with_no_newer_version_should_break_conflict_after_newer_version() {
    use lifecycle::Input as I;
    let conflict = |checked, then: &str| {
        vec![
            step(1, None, I::Listed(view("3")), vec![patch("3", checked)]),
            step(2, None, I::PatchConflict, vec![lifecycle::Effect::Fetch]),
            step(3, None, I::Fetched(view(then)), vec![]),
        ]
    };
    assert_eq!(broken(&[engine_trace("op-0", conflict(true, "4"))]), []);
    assert_eq!(
        broken(&[engine_trace("op-0", conflict(true, "3"))]),
        [Rule::ConflictAfterNewerVersion]
    );
    // Another replica's trace shows the newer version.
    assert_eq!(
        broken(&[
            engine_trace("op-0", conflict(true, "3")),
            engine_trace("op-1", patches("4", &["4"])),
        ]),
        []
    );
    // A patch without a precondition is never refused as a conflict.
    assert_eq!(
        broken(&[engine_trace("op-0", conflict(false, "4"))]),
        [Rule::ConflictAfterNewerVersion]
    );
}

#[test]
fn overlapping_runs_of_two_replicas_should_break_one_replica_at_a_time() {
    use lifecycle::{Effect as E, Input as I};
    let run = |seq, from: u64, to: u64| {
        let id = RunId {
            incarnation: 1,
            seq,
        };
        vec![
            step(
                from,
                None,
                I::Observed(view("3")),
                vec![E::Invoke {
                    run: id,
                    version: "3".into(),
                    handler: "tick".into(),
                    parent: None,
                    essence: "{}".into(),
                    old: None,
                    retry: 0,
                    epoch: 0,
                    deadline: 60_000,
                }],
            ),
            step(
                to,
                None,
                I::HandlerDone {
                    run: id,
                    outcome: lifecycle::Outcome::Success,
                    subs: Vec::new(),
                    write: None,
                },
                vec![],
            ),
        ]
    };
    let apart = [
        engine_trace("op-0", run(1, 10_000, 12_000)),
        engine_trace("op-1", run(1, 13_000, 15_000)),
    ];
    assert_eq!(broken(&apart), []);
    let overlapping = [
        engine_trace("op-0", run(1, 10_000, 14_000)),
        engine_trace("op-1", run(1, 12_000, 15_000)),
    ];
    assert_eq!(broken(&overlapping), [Rule::OneReplicaAtATime]);
}
