//! The `steadfast` command as a user runs it: output and exit codes.

use std::process::{Command, Output};

fn steadfast(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_steadfast"))
        .args(args)
        .output()
        .expect("the steadfast binary runs")
}

fn stdout(output: &Output) -> String {
    String::from_utf8_lossy(&output.stdout).into_owned()
}

fn stderr(output: &Output) -> String {
    String::from_utf8_lossy(&output.stderr).into_owned()
}

#[test]
fn list_should_name_models_variants_and_scenarios() {
    let output = steadfast(&["list"]);
    assert!(output.status.success());
    let text = stdout(&output);
    for word in ["mutex", "filter", "victim-only", "peterson", "bench"] {
        assert!(text.contains(word), "{word} missing from:\n{text}");
    }
}

#[test]
fn check_should_exit_0_when_everything_holds() {
    let output = steadfast(&["check", "mutex", "--scenario", "peterson"]);
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    let text = stdout(&output);
    assert!(
        text.contains("a trying process enters  leads-to           holds"),
        "{text}"
    );
    assert!(
        stderr(&output).contains("34 states"),
        "progress and totals go to stderr"
    );
}

#[test]
fn check_should_exit_1_and_print_the_lasso_when_violated() {
    let output = steadfast(&[
        "check",
        "mutex",
        "--variant",
        "victim-only",
        "--scenario",
        "peterson",
    ]);
    assert_eq!(output.status.code(), Some(1));
    let text = stdout(&output);
    assert!(text.contains("VIOLATED"), "{text}");
    assert!(text.contains("step 3  ProcYield(0)"), "{text}");
    assert!(
        text.contains("pc[0]: Yield(1) -> Wait(1)"),
        "only changes are shown:\n{text}"
    );
    assert!(text.contains("-- cycle:"), "{text}");
    // The lone contender waits forever while the other process stays idle:
    // the shortest fair cycle is a stutter.
    assert!(text.contains("step 4  (stutter)"), "{text}");
    assert!(
        text.contains("http://127.0.0.1:3000/#/steps/0/1/0/0 "),
        "{text}"
    );
}

#[test]
fn check_should_exit_2_for_unknown_names() {
    for args in [
        &["check", "nosuch"][..],
        &["check", "mutex", "--variant", "nosuch"][..],
        &["check", "mutex", "--scenario", "nosuch"][..],
        &["check", "--variant", "filter"][..],
        &["check", "mutex", "--threads", "0"][..],
        &["check", "mutex", "--timeout", "-1"][..],
    ] {
        let output = steadfast(args);
        assert_eq!(
            output.status.code(),
            Some(2),
            "{args:?}: {}",
            stderr(&output)
        );
        assert!(
            stderr(&output).contains("error"),
            "{args:?}: {}",
            stderr(&output)
        );
    }
    let output = steadfast(&["check", "mutex", "--variant", "nosuch"]);
    assert!(
        stderr(&output).contains("filter, victim-only"),
        "choices are named"
    );
}

#[test]
fn check_should_exit_3_when_a_bound_stops_it() {
    let output = steadfast(&[
        "check",
        "mutex",
        "--scenario",
        "three",
        "--max-states",
        "50",
    ]);
    assert_eq!(output.status.code(), Some(3), "{}", stdout(&output));
    assert!(stdout(&output).contains("INCOMPLETE"));
}

#[test]
fn check_should_print_json_when_asked() {
    let output = steadfast(&["check", "mutex", "--variant", "victim-only", "--json"]);
    assert_eq!(output.status.code(), Some(1));
    let value: serde_json::Value = serde_json::from_slice(&output.stdout).expect("valid JSON");
    let runs = value.as_array().expect("one entry per run");
    assert_eq!(runs.len(), 2, "both default scenarios");
    let property = &runs[0]["report"]["properties"][3];
    assert_eq!(property["name"], "a trying process enters");
    assert_eq!(property["verdict"], "violated");
    assert_eq!(property["evidence"]["cycle_start"], 3);
}

#[test]
fn check_should_honour_a_timeout_on_several_threads() {
    let output = steadfast(&[
        "check",
        "mutex",
        "--scenario",
        "bench",
        "--timeout",
        "0.3",
        "--threads",
        "2",
    ]);
    assert_eq!(output.status.code(), Some(3), "{}", stdout(&output));
    let text = stdout(&output);
    assert!(
        text.contains("INCOMPLETE: stopped by the time limit (0.3s)"),
        "{text}"
    );
    assert!(text.contains("unknown"), "{text}");
}

#[test]
fn check_should_give_the_same_answers_on_one_thread_and_two() {
    let one = steadfast(&[
        "check",
        "mutex",
        "--variant",
        "victim-only",
        "--threads",
        "1",
        "--json",
    ]);
    let two = steadfast(&[
        "check",
        "mutex",
        "--variant",
        "victim-only",
        "--threads",
        "2",
        "--json",
    ]);
    let parse = |o: &Output| -> serde_json::Value { serde_json::from_slice(&o.stdout).unwrap() };
    let (one, two) = (parse(&one), parse(&two));
    for run in 0..2 {
        for field in ["unique_states", "edges", "depth"] {
            assert_eq!(
                one[run]["report"]["stats"][field],
                two[run]["report"]["stats"][field]
            );
        }
        for property in 0..4 {
            assert_eq!(
                one[run]["report"]["properties"][property]["verdict"],
                two[run]["report"]["properties"][property]["verdict"]
            );
        }
    }
}
