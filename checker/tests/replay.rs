//! `steadfast replay` as a user runs it on traces: each role's steps through
//! its `step`, the cross-role properties, and exit codes.

use std::path::PathBuf;
use std::process::{Command, Output};

use steadfast_spec::leasequeue::scheduler::{self, ClaimResult, Input, Scheduler};
use steadfast_spec::leasequeue::trace::{Header, Named, Record};
use steadfast_spec::leasequeue::Variant;
use steadfast_spec::lifecycle;

fn replay(files: &[PathBuf]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_steadfast"))
        .arg("replay")
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
/// `lease`, wins the key of action `hello` at revision `created`, and runs
/// activation `a-1` to its end.
fn scheduler_trace(id: &str, lease: i64, created: i64) -> String {
    let config = scheduler::Config::<Named> {
        rules: Variant::Steadfast.into(),
        ttl: 2000,
        margin: 500,
        wake_every: 600,
        retry_every: 250,
        idle_after: 60_000,
        remember_for: Some(600_000),
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
        },
        Input::Executed { id: "a-1".into() },
    ];
    let header = Header::Scheduler {
        id: id.into(),
        incarnation: 3,
        config: config.clone(),
    };
    let mut lines = vec![serde_json::to_string(&header).unwrap()];
    let mut role = Scheduler::<Named>::new(id.into(), 3);
    for input in inputs {
        let effects = role.step(&config, 5, input.clone());
        let record = Record {
            at: 0,
            elapsed: 5,
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
        text.contains("scheduler 127.0.0.1:7001: 7 steps agree"),
        "{text}"
    );
    for property in [
        "executed at most once: holds",
        "one end per activation: holds",
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
    assert_eq!(text.matches("7 steps agree").count(), 2, "{text}");
    assert!(text.contains("executed at most once: VIOLATED"), "{text}");
    assert!(text.contains("one end per activation: VIOLATED"), "{text}");
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
/// the watch shows the version it made.
fn engine_trace(variant: lifecycle::Variant) -> String {
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
        },
    };
    let header = lifecycle::trace::Header {
        object: "default/t".into(),
        identity: "op-0".into(),
        incarnation: 1,
        started: 0,
        config: config.clone(),
    };
    let mut view = ObjectView::<Kube> {
        version: "1".into(),
        essence: r#"{"status":{"tick":1}}"#.into(),
        deleting: false,
        finalizer: false,
        progress: Default::default(),
        diff_base: None,
        claim: None,
    };
    let mut engine = Engine::new("op-0".into(), 1, 0);
    let mut lines = vec![serde_json::to_string(&header).unwrap()];
    let mut inputs = vec![Input::Listed(view.clone())];
    while let Some(input) = inputs.pop() {
        let effects = engine.step(&config, input.clone());
        let record = lifecycle::trace::Record {
            at: 0,
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
                    }
                    view.version = (view.version.parse::<u32>().unwrap() + 1).to_string();
                    // Last in, first out: the reply, then the watch event.
                    inputs.push(Input::Observed(view.clone()));
                    inputs.push(Input::PatchApplied {
                        version: view.version.clone(),
                    });
                }
                Effect::Fetch | Effect::WakeAt(_) | Effect::Tell(_) | Effect::Cancel { .. } => {}
            }
        }
    }
    lines.join("\n") + "\n"
}

#[test]
fn lifecycle_engine_traces_should_replay_and_show_kopfs_rerun_of_a_parent() {
    let steadfast = file(
        "engine-steadfast.jsonl",
        &engine_trace(lifecycle::Variant::Steadfast),
    );
    let output = replay(&[steadfast]);
    assert_eq!(output.status.code(), Some(0), "{}", text(&output));
    assert!(
        text(&output).contains("engine of default/t (start 1):"),
        "{}",
        text(&output)
    );
    assert!(
        text(&output).contains("a handler succeeds once per digest per start: holds"),
        "{}",
        text(&output)
    );
    // kopf invokes the parent again each cycle, on the same digest.
    let kopf = file("engine-kopf.jsonl", &engine_trace(lifecycle::Variant::Kopf));
    let output = replay(&[kopf]);
    assert_eq!(output.status.code(), Some(1), "{}", text(&output));
    assert!(
        text(&output).contains("a handler succeeds once per digest per start: VIOLATED"),
        "{}",
        text(&output)
    );
    assert!(
        text(&output).contains("handler tick ran again"),
        "{}",
        text(&output)
    );
}
