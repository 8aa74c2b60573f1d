//! The lifecycle protocol model-checked: kopf's rules show #641 as a lasso;
//! steadfast's rules prove every property in `seed641`, `general` and each
//! fault's scenario.

use steadfast_checker::{Evidence, Verdict};
use steadfast_spec::lifecycle::model::{scenarios, Field, LifecycleModel, Timing, World};
use steadfast_spec::lifecycle::Variant;
use steadfast_tests::{assert_all_hold, run, verdict};

/// A scenario: the model of a variant.
type Scenario = fn(Variant) -> LifecycleModel;

/// Every scenario `steadfast check lifecycle` checks by default.
const SCENARIOS: [(&str, Scenario); 21] = [
    ("seed641", scenarios::seed641),
    ("general", scenarios::general),
    ("foreign", scenarios::foreign),
    ("stale", scenarios::stale),
    ("hang", scenarios::hang),
    ("panic", scenarios::panic),
    ("lost", scenarios::lost),
    ("stamp", scenarios::stamp),
    ("create", scenarios::create),
    ("refused", scenarios::refused),
    ("throttled", scenarios::throttled),
    ("split", scenarios::split),
    ("late", scenarios::late),
    ("exhausted", scenarios::exhausted),
    ("rolling", scenarios::rolling),
    ("replicas", scenarios::replicas),
    ("takeover", scenarios::takeover),
    ("rolling-replicas", scenarios::rolling_replicas),
    ("drift", scenarios::drift),
    ("long", scenarios::long),
    ("bounded", scenarios::bounded),
];

/// `free` with time stopping at 5 (a claim and its take-over), so that
/// `cargo test` checks the world without timing assumption within seconds
/// (`steadfast check` checks `free` itself, to 8): the properties that
/// checked writes carry hold there, and the overlap is not asked.
#[test]
fn steadfast_should_keep_its_checked_writes_safe_with_time_free() {
    let mut model = scenarios::free(Variant::Steadfast);
    model.budget.timing = Timing::Free { horizon: 5 };
    let report = run(&model);
    assert_all_hold(&report);
    for asked in [
        "a handler succeeds once per digest per start",
        "no progress overwritten unseen",
        "diff-base only on handled essences",
    ] {
        assert!(report.property(asked).is_some(), "{asked}");
    }
    let overlap = "no two runs of the object's handlers overlap";
    assert!(report.property(overlap).is_none());
    assert!(report.property("handled on the final essence").is_none());
}

#[test]
fn steadfast_should_prove_every_property_in_every_scenario() {
    for (name, scenario) in SCENARIOS {
        let report = run(&scenario(Variant::Steadfast));
        assert!(!report.properties.is_empty(), "{name}");
        assert_all_hold(&report);
    }
}

#[test]
fn general_should_reach_every_path_it_promises() {
    let report = run(&scenarios::general(Variant::Steadfast));
    for path in [
        "a sub-handler runs",
        "a delete handler runs while the finalizer holds the object",
        "a handler fails for good",
        "a resume handler runs",
        "a create handler runs",
        "a handler's own write changes the essence",
        "an edit brings the essence back to an earlier one",
        "a deletion is requested while a handler runs",
        "a run of a crashed operator returns after the restart",
    ] {
        assert_eq!(verdict(&report, path), Verdict::Holds, "{path}");
    }
    // A path the budget gives no chance is not promised.
    assert!(report.property("a patch's reply is lost").is_none());
}

#[test]
fn kopf_should_leave_a_subhandler_on_an_older_tick_forever() {
    let report = run(&scenarios::seed641(Variant::Kopf));
    let property = report.property("handled on the final essence").unwrap();
    assert_eq!(property.verdict, Verdict::Violated);
    let Some(Evidence::Lasso { prefix, cycle, .. }) = &property.evidence else {
        panic!("a liveness violation comes with a lasso");
    };
    let last: &World = &prefix.steps.last().unwrap().state;
    let object = last.object.as_ref().expect("the object still exists");
    let final_tick = object.essence.get(Field::Tick);
    assert_eq!(
        object.diff_base,
        Some(object.essence),
        "kopf committed the final essence"
    );
    let stale = last
        .ghost
        .owed
        .first()
        .expect("a sub-handler of the last plan is owed");
    // That sub-handler did run, but only on an older tick.
    let runs: Vec<u8> = prefix
        .steps
        .iter()
        .filter_map(|s| s.state.replicas[0].running)
        .filter(|r| r.key == *stale)
        .map(|r| r.essence.get(Field::Tick))
        .collect();
    assert!(
        !runs.is_empty() && runs.iter().all(|&tick| tick < final_tick),
        "{runs:?}"
    );
    // And the cycle changes nothing: nobody will ever run it again.
    assert!(cycle.iter().all(|s| s.state.replicas[0].running.is_none()));
}

#[test]
fn kopf_should_commit_a_diff_base_some_handler_never_saw() {
    for scenario in [scenarios::seed641, scenarios::general] {
        let report = run(&scenario(Variant::Kopf));
        assert_eq!(
            verdict(&report, "diff-base only on handled essences"),
            Verdict::Violated
        );
    }
}

#[test]
fn kopf_should_run_a_parent_again_on_the_same_digest() {
    let report = run(&scenarios::seed641(Variant::Kopf));
    assert_eq!(
        verdict(&report, "a handler succeeds once per digest per start"),
        Verdict::Violated
    );
}

#[test]
fn kopf_should_wait_forever_for_a_hung_delete_handler() {
    let report = run(&scenarios::hang(Variant::Kopf));
    assert_eq!(
        verdict(&report, "deletion releases the finalizer"),
        Verdict::Violated
    );
}
