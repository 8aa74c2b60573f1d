//! The lifecycle protocol checked at small bounds: kopf's rules show #641 as
//! a lasso; steadfast's rules prove every property.

use steadfast_checker::{Evidence, Verdict};
use steadfast_spec::lifecycle::model::{scenarios, World};
use steadfast_spec::lifecycle::{Field, Variant};
use steadfast_tests::{assert_all_hold, run};

#[test]
fn steadfast_should_prove_every_property_for_seed641() {
    let report = run(&scenarios::seed641(Variant::Steadfast));
    assert_all_hold(&report);
    assert_eq!(report.stats.unique_states, 190);
}

#[test]
fn steadfast_should_prove_every_property_for_a_small_general_scenario() {
    let report = run(&scenarios::general_small(Variant::Steadfast));
    assert_all_hold(&report);
    // Deletion is reached, so the finalizer's properties are not vacuous.
    let deletion = "a delete handler runs while the finalizer holds the object";
    for path in [
        deletion,
        "a handler fails for good",
        "a resume handler runs",
    ] {
        assert_eq!(
            report.property(path).unwrap().verdict,
            Verdict::Holds,
            "{path}"
        );
    }
    // Without a deletion in the budget the path is not promised.
    let seed = run(&scenarios::seed641(Variant::Steadfast));
    assert!(seed.property(deletion).is_none());
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
        .iter()
        .find(|k| k.sub.is_some())
        .expect("a sub-handler is owed");
    // That sub-handler did run, but on an older tick.
    let runs: Vec<u8> = prefix
        .steps
        .iter()
        .filter_map(|s| s.state.running)
        .filter(|r| r.key == *stale)
        .map(|r| r.essence.get(Field::Tick))
        .collect();
    assert!(
        !runs.is_empty() && runs.iter().all(|&tick| tick < final_tick),
        "{runs:?}"
    );
    // And the cycle changes nothing: nobody will ever run it again.
    assert!(cycle.iter().all(|s| s.state.running.is_none()));
}

#[test]
fn kopf_should_commit_a_diff_base_some_handler_never_saw() {
    let report = run(&scenarios::general_small(Variant::Kopf));
    let property = report
        .property("diff-base only on handled essences")
        .unwrap();
    assert_eq!(property.verdict, Verdict::Violated);
}
