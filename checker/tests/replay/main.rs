//! `steadfast replay` as a user runs it on traces: each role's steps through
//! its `step`, the rules every trace keeps together, and exit codes; and
//! replay failing, naming the file, the line and the rule, on the traces of
//! drivers that decide something outside their roles ([`cluster`]).

mod cluster;

use std::path::PathBuf;
use std::process::{Command, Output};

use steadfast_spec::leasequeue::scheduler::{self, ClaimResult, Input, Scheduler};
use steadfast_spec::leasequeue::trace::{Named, SchedulerHeader};
use steadfast_spec::leasequeue::{Outcome, Variant};
use steadfast_spec::lifecycle;
use steadfast_spec::trace::{Header, Record};

fn replay(files: &[PathBuf]) -> Output {
    replay_with(files, &[])
}

fn replay_with(files: &[PathBuf], options: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_steadfast"))
        .arg("replay")
        .args(options)
        .args(files)
        .output()
        .expect("the steadfast binary runs")
}

fn text(output: &Output) -> String {
    String::from_utf8_lossy(&output.stdout).into_owned() + &String::from_utf8_lossy(&output.stderr)
}

/// A file of this test's own under the target directory.
fn file(name: &str, contents: &str) -> PathBuf {
    let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("replay-tests");
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join(name);
    std::fs::write(&path, contents).unwrap();
    path
}

/// The trace of scheduler `id`, run by the spec's own role: it takes lease
/// `lease`, wins the key of action `hello` at revision `created`, runs
/// activation `a-1` to its end, and hears its controller confirm the
/// report (a run that ended unconfirmed could be sent, and run, again).
fn scheduler_trace(id: &str, lease: i64, created: i64) -> String {
    let config = scheduler::Config::<Named> {
        rules: Variant::Steadfast.into(),
        ttl: 2000,
        margin: 500,
        wake_every: 600,
        retry_every: 250,
        idle_after: 60_000,
        remember_for: Some(600_000),
        execute_for: Some(60_000),
        presume_gone_after: 10_000,
    };
    let action = || "hello".to_string();
    let inputs = [
        Input::Wake,
        Input::Granted { lease, ttl: 2000 },
        Input::KeptAlive {
            lease,
            keepalive: 0,
            ttl: 2000,
        },
        Input::CreateQueue { action: action() },
        Input::Claimed {
            action: action(),
            lease,
            result: ClaimResult::Created { created },
        },
        Input::Activation {
            id: "a-1".into(),
            action: action(),
            forwarded: false,
            incarnation: Some(3),
            left: None,
            reply_to: "127.0.0.1:7100".into(),
            may_have_run: false,
        },
        Input::Executed {
            id: "a-1".into(),
            failure: None,
        },
        Input::ReportAcked {
            id: "a-1".into(),
            from: Some("127.0.0.1:7100".into()),
        },
    ];
    let header = Header::Scheduler(SchedulerHeader {
        id: id.into(),
        incarnation: 3,
        config: config.clone(),
    });
    let mut lines = vec![serde_json::to_string(&header).unwrap()];
    let mut role = Scheduler::<Named>::new(id.into(), 3);
    for input in inputs {
        let effects = role.step(&config, 5, input.clone());
        let record = Record {
            at: 0,
            elapsed: 5,
            from: None,
            input,
            effects,
        };
        lines.push(serde_json::to_string(&record).unwrap());
    }
    lines.join("\n") + "\n"
}

#[test]
fn a_faithful_trace_should_replay_with_exit_0() {
    let path = file("faithful.jsonl", &scheduler_trace("127.0.0.1:7001", 1, 10));
    let output = replay(&[path]);
    assert_eq!(output.status.code(), Some(0), "{}", text(&output));
    let text = text(&output);
    assert!(
        text.contains("scheduler 127.0.0.1:7001: 8 steps agree"),
        "{text}"
    );
    for property in [
        "executed at most once: holds",
        "at most one outcome: holds",
        "one owner per key: holds",
    ] {
        assert!(text.contains(property), "{property} missing from:\n{text}");
    }
}

#[test]
fn an_edited_effect_should_exit_1_naming_its_step() {
    let trace = scheduler_trace("127.0.0.1:7001", 1, 10);
    assert!(trace.contains(r#"{"Execute":{"id":"a-1""#), "{trace}");
    // The driver ran another activation than the role handed out.
    let edited = trace.replacen(r#"{"Execute":{"id":"a-1""#, r#"{"Execute":{"id":"a-2""#, 1);
    let output = replay(&[file("edited.jsonl", &edited)]);
    assert_eq!(output.status.code(), Some(1), "{}", text(&output));
    let text = text(&output);
    assert!(text.contains("step 5 (line 7) diverges"), "{text}");
    assert!(
        text.contains(r#"recorded: [{"Execute":{"id":"a-2""#),
        "{text}"
    );
}

#[test]
fn two_schedulers_settling_one_activation_should_violate_at_most_once() {
    // Each trace replays faithfully; together they say that two schedulers
    // ran and acknowledged a-1, from the same key.
    let one = file("one.jsonl", &scheduler_trace("127.0.0.1:7001", 1, 10));
    let two = file("two.jsonl", &scheduler_trace("127.0.0.1:7002", 2, 10));
    let output = replay(&[one, two]);
    assert_eq!(output.status.code(), Some(1), "{}", text(&output));
    let text = text(&output);
    assert_eq!(text.matches("8 steps agree").count(), 2, "{text}");
    assert!(text.contains("executed at most once: VIOLATED"), "{text}");
    assert!(text.contains("at most one outcome: VIOLATED"), "{text}");
    assert!(text.contains("one owner per key: VIOLATED"), "{text}");
    assert!(
        text.contains("schedulers 127.0.0.1:7001 and 127.0.0.1:7002 all served action hello"),
        "{text}"
    );
}

#[test]
fn keys_of_different_revisions_should_not_count_as_shared() {
    let one = file("rev-one.jsonl", &scheduler_trace("127.0.0.1:7001", 1, 10));
    let two = file("rev-two.jsonl", &scheduler_trace("127.0.0.1:7002", 2, 20));
    let text = text(&replay(&[one, two]));
    assert!(text.contains("one owner per key: holds"), "{text}");
}

#[test]
fn unreadable_traces_should_exit_2_naming_the_file_and_line() {
    let missing = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("no-such-trace.jsonl");
    let output = replay(std::slice::from_ref(&missing));
    assert_eq!(output.status.code(), Some(2));
    assert!(
        text(&output).contains("no-such-trace.jsonl"),
        "{}",
        text(&output)
    );

    let empty = file("empty.jsonl", "\n");
    let output = replay(&[empty]);
    assert_eq!(output.status.code(), Some(2));
    assert!(text(&output).contains("empty"), "{}", text(&output));

    let trace = scheduler_trace("127.0.0.1:7001", 1, 10);
    let broken: Vec<&str> = trace.lines().collect();
    let cut = format!("{}\n{}\n{{\"elapsed\":", broken[0], broken[1]);
    let output = replay(&[file("cut.jsonl", &cut)]);
    assert_eq!(output.status.code(), Some(2));
    let text = text(&output);
    assert!(
        text.contains("cut.jsonl:3: not a scheduler record"),
        "{text}"
    );
    assert!(!text.contains("panicked"), "{text}");
}

#[test]
fn replay_should_need_a_file() {
    let output = replay(&[]);
    assert_eq!(output.status.code(), Some(2));
    assert!(text(&output).contains("FILES"), "{}", text(&output));
}

/// The trace of a lifecycle engine under `variant`, driven as a runtime
/// would: a field handler `tick` on `status.tick` whose runs declare
/// sub-handlers `a` and `b`; every run succeeds; every patch applies and
/// the watch shows the version it made. With `invent`, the driver answers
/// the first patch with a resourceVersion of its own making: the one the
/// patch was computed from.
fn engine_trace(variant: lifecycle::Variant, invent: bool) -> String {
    use lifecycle::named::Named as Kube;
    use lifecycle::{
        Backoff, Claims, Config, Effect, Engine, HandlerSpec, Input, ObjectView, On, Outcome,
    };
    let config = Config::<Kube> {
        rules: variant.into(),
        handlers: vec![HandlerSpec {
            id: "tick".into(),
            on: On::Field("status.tick".into()),
            retries: 3,
            timeout: 60_000,
        }],
        backoff: Backoff {
            first: 200,
            most: 30_000,
        },
        claims: Claims {
            duration: 60_000,
            drift: 2_000,
            renew_before: 30_000,
        },
        status_subresource: false,
    };
    let header = Header::Engine(lifecycle::trace::EngineHeader {
        object: "default/t".into(),
        identity: "op-0".into(),
        incarnation: 1,
        started: 0,
        config: config.clone(),
    });
    let mut view = ObjectView::<Kube> {
        version: "1".into(),
        essence: r#"{"status":{"tick":1}}"#.into(),
        deleting: false,
        finalizer: false,
        progress: Default::default(),
        diff_base: None,
        claim: None,
        epoch: 0,
        marked: false,
    };
    let mut engine = Engine::new("op-0".into(), 1, 0);
    let mut invented = !invent;
    let mut lines = vec![serde_json::to_string(&header).unwrap()];
    let mut inputs = vec![Input::Listed(view.clone())];
    while let Some(input) = inputs.pop() {
        let effects = engine.step(&config, input.clone());
        let record = Record {
            at: 0,
            elapsed: 0,
            from: None,
            input,
            effects: effects.clone(),
        };
        lines.push(serde_json::to_string(&record).unwrap());
        for effect in effects {
            match effect {
                Effect::Invoke { run, parent, .. } => inputs.push(Input::HandlerDone {
                    run,
                    outcome: Outcome::Success,
                    subs: if parent.is_none() {
                        vec!["tick/a".into(), "tick/b".into()]
                    } else {
                        Vec::new()
                    },
                    write: None,
                }),
                Effect::Patch(patch) => {
                    for (key, record) in patch.records {
                        view.progress.set(&key, record);
                    }
                    view.diff_base = patch.diff_base.or(view.diff_base.take());
                    if let Some(change) = patch.claim {
                        view.claim = change.after();
                        view.epoch = view.claim.as_ref().map_or(view.epoch, |c| c.epoch);
                    }
                    view.version = (view.version.parse::<u32>().unwrap() + 1).to_string();
                    // Last in, first out: the reply, then the watch event.
                    inputs.push(Input::Observed(view.clone()));
                    let version = if std::mem::replace(&mut invented, true) {
                        view.version.clone()
                    } else {
                        "1".to_string()
                    };
                    inputs.push(Input::PatchApplied { version });
                }
                // Runs return at once: no claim of a run is renewed.
                Effect::Fetch
                | Effect::WakeAt(_)
                | Effect::Tell(_)
                | Effect::Cancel { .. }
                | Effect::Renew(_)
                | Effect::Mark { .. }
                | Effect::Remind { .. } => {}
            }
        }
    }
    lines.join("\n") + "\n"
}

#[test]
fn lifecycle_engine_traces_should_replay_and_show_kopfs_rerun_of_a_parent() {
    let trace = engine_trace(lifecycle::Variant::Steadfast, false);
    let output = replay(&[file("engine-steadfast.jsonl", &trace)]);
    let shown = text(&output);
    assert_eq!(output.status.code(), Some(0), "{shown}");
    assert!(shown.contains("engine of default/t (start 1):"), "{shown}");
    let rule = "a handler succeeds once per digest per start";
    assert!(shown.contains(&format!("{rule}: holds")), "{shown}");
    // kopf invokes the parent again each cycle, on the same digest.
    let trace = engine_trace(lifecycle::Variant::Kopf, false);
    let output = replay(&[file("engine-kopf.jsonl", &trace)]);
    let shown = text(&output);
    assert_eq!(output.status.code(), Some(1), "{shown}");
    assert!(shown.contains(&format!("{rule}: VIOLATED")), "{shown}");
    assert!(shown.contains("handler tick ran again"), "{shown}");
}

/// The line (from 1) of `path` holding `needle` the `nth` time (from 0).
fn line_of(path: &std::path::Path, needle: &str, nth: usize) -> usize {
    let text = std::fs::read_to_string(path).unwrap();
    text.lines()
        .enumerate()
        .filter(|(_, line)| line.contains(needle))
        .nth(nth)
        .map(|(index, _)| index + 1)
        .unwrap_or_else(|| panic!("{needle} is not in {}", path.display()))
}

/// A run of the [`cluster`] double: two schedulers of `variant`, driven
/// with `misdeed`, each submission settled as it comes; its traces, in a
/// directory named `name`.
fn cluster_run(name: &str, variant: Variant, misdeed: Misdeed) -> (Cluster, Vec<PathBuf>) {
    let mut cluster = Cluster::start(variant, 2, misdeed);
    for (id, action) in [("a-1", "hello"), ("a-2", "bye"), ("a-3", "hello")] {
        cluster.submit(id, action);
        cluster.tick();
    }
    cluster.tick();
    let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR"))
        .join("replay-clusters")
        .join(name);
    let files = cluster.write(&dir);
    (cluster, files)
}

use cluster::{Cluster, Misdeed};

#[test]
fn a_thin_drivers_traces_should_keep_every_rule() {
    for variant in [Variant::Steadfast, Variant::OpenWhisk] {
        let (cluster, files) = cluster_run(&format!("thin-{variant:?}"), variant, Misdeed::None);
        assert_eq!(cluster.executed, ["a-1", "a-2", "a-3"], "{variant:?}");
        assert_eq!(cluster.resolved.len(), 3, "{:?}", cluster.resolved);
        let output = replay(&files);
        let text = text(&output);
        assert_eq!(output.status.code(), Some(0), "{variant:?}: {text}");
        assert!(!text.contains("VIOLATED"), "{text}");
    }
}

/// A copy of an activation delivered twice (the controller sent it again
/// before the scheduler's acknowledgement came back): OpenWhisk's
/// scheduler runs each copy, steadfast's the first.
#[test]
fn an_openwhisk_scheduler_running_a_copy_twice_should_be_caught() {
    for (variant, twice) in [(Variant::OpenWhisk, true), (Variant::Steadfast, false)] {
        let mut cluster = Cluster::start(variant, 1, Misdeed::None);
        cluster.hold();
        cluster.submit("a-1", "hello");
        cluster.tick();
        cluster.release();
        cluster.tick();
        let runs = cluster.executed.iter().filter(|id| *id == "a-1").count();
        assert_eq!(runs, if twice { 2 } else { 1 }, "{variant:?}");
        let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR"))
            .join("replay-clusters")
            .join(format!("copy-{variant:?}"));
        let files = cluster.write(&dir);
        let output = replay(&files);
        let text = text(&output);
        assert_eq!(
            output.status.code(),
            Some(if twice { 1 } else { 0 }),
            "{text}"
        );
        assert_eq!(
            text.contains("executed at most once: VIOLATED"),
            twice,
            "{text}"
        );
        assert!(
            !text.contains("every answer answers a request: VIOLATED"),
            "{text}"
        );
        if twice {
            assert!(
                text.contains("activation a-1 was executed 2 times"),
                "{text}"
            );
        }
        // The world's rules hold: the driver is thin; the variant breaks
        // the property, as its model does.
        let world = replay_with(&files, &["--world-only"]);
        assert_eq!(world.status.code(), Some(0), "{}", self::text(&world));
    }
}

/// Replays `files` and asserts that it fails (exit 1) although every step
/// agrees, on `rule`, saying `says`, at each of `places` (a file and the
/// line of a step that shows it).
fn assert_fails(files: &[PathBuf], rule: &str, says: &str, places: &[(&PathBuf, usize)]) {
    let output = replay(files);
    let text = text(&output);
    assert_eq!(output.status.code(), Some(1), "{text}");
    assert!(!text.contains("diverges"), "{text}");
    assert!(text.contains(&format!("{rule}: VIOLATED")), "{text}");
    assert!(text.contains(says), "{says} is not in:\n{text}");
    for (file, line) in places {
        let place = format!("{}:{line} ", file.display());
        assert!(text.contains(&place), "{place} is not in:\n{text}");
    }
}

/// The file of `files` holding `needle` the `nth` time, and that line.
fn find(files: &[PathBuf], needle: &str, nth: usize) -> (PathBuf, usize) {
    files
        .iter()
        .find(|f| std::fs::read_to_string(f).unwrap().matches(needle).count() > nth)
        .map(|f| (f.clone(), line_of(f, needle, nth)))
        .unwrap_or_else(|| panic!("{needle} is in no trace"))
}

#[test]
fn an_engine_driver_that_invents_a_resource_version_should_fail_replay() {
    // The driver answers the first patch with the version it was computed
    // from: the engine agrees with every step, the API server could not.
    let path = file(
        "engine-invents.jsonl",
        &engine_trace(lifecycle::Variant::Steadfast, true),
    );
    let listed = line_of(&path, r#""Listed""#, 0);
    let invented = line_of(&path, r#""PatchApplied":{"version":"1"}"#, 0);
    assert_fails(
        std::slice::from_ref(&path),
        "kube: each write makes a newer resourceVersion",
        "a write made version 1, not newer than 1, seen before it was sent",
        &[(&path, listed), (&path, invented)],
    );
}

#[test]
fn a_controller_that_resolves_a_submission_itself_should_fail_replay() {
    let (cluster, files) = cluster_run(
        "resolves-itself",
        Variant::Steadfast,
        Misdeed::ResolvesItself,
    );
    assert!(matches!(cluster.resolved["a-1"], Outcome::Failed(_)));
    let line = line_of(&files[0], r#""Failed":"NoQueueEndpoint""#, 0);
    assert_fails(
        &files,
        "every message was sent by the node it names",
        "took in the outcome of a-1: Failed(NoQueueEndpoint), which 127.0.0.1:700",
        &[(&files[0], line)],
    );
}

#[test]
fn a_controller_that_drops_a_watch_answer_should_fail_replay() {
    let (_, files) = cluster_run("drops-watch", Variant::Steadfast, Misdeed::DropsWatchAnswer);
    // The claim whose key the watch never showed, and the watch.
    let (claimed, line) = find(&files, r#""Created""#, 0);
    let watch = line_of(&files[0], "WatchStarted", 0);
    assert_fails(
        &files,
        "etcd: a watch delivers every revision in order",
        "a watch reported revisions 2 to 5 without 127.0.0.1:700",
        &[(&claimed, line), (&files[0], watch)],
    );
}

#[test]
fn a_scheduler_that_runs_an_activation_twice_should_fail_replay() {
    let (cluster, files) = cluster_run("runs-twice", Variant::Steadfast, Misdeed::RunsTwice);
    assert_eq!(cluster.executed.len(), 6, "{:?}", cluster.executed);
    let (ran, second) = find(&files, r#""Executed":{"id":"a-1"}"#, 1);
    assert_fails(
        &files,
        "every answer answers a request",
        "the execution of a-1 was answered, but not asked for",
        &[(&ran, second)],
    );
}

#[test]
fn a_controller_that_forges_a_schedulers_ack_should_fail_replay() {
    let (_, files) = cluster_run("forges-ack", Variant::Steadfast, Misdeed::ForgesAck);
    let line = line_of(&files[0], r#""Acked":{"id":"a-1""#, 0);
    assert_fails(
        &files,
        "every message was sent by the node it names",
        "took in the acknowledgement of a-1, which 127.0.0.1:700",
        &[(&files[0], line)],
    );
}
