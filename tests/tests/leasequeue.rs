//! The leasequeue protocol checked at small bounds: OpenWhisk's rules show
//! #5286 as a lasso; steadfast's rules prove every property.

use steadfast_checker::{Evidence, Verdict};
use steadfast_spec::leasequeue::model::{scenarios, ActivationState, Message};
use steadfast_spec::leasequeue::{FailReason, Variant};
use steadfast_tests::{assert_all_hold, run};

#[test]
fn steadfast_should_prove_every_property_for_seed5286() {
    let report = run(&scenarios::seed5286(Variant::Steadfast));
    assert_all_hold(&report);
    assert_eq!(report.stats.unique_states, 11_516);
}

#[test]
fn steadfast_should_prove_every_property_for_a_small_general_scenario() {
    assert_all_hold(&run(&scenarios::general_small(Variant::Steadfast)));
}

#[test]
fn openwhisk_should_keep_routing_to_a_scheduler_without_queue_or_key() {
    let report = run(&scenarios::seed5286(Variant::OpenWhisk));
    let property = report.property("executed after recovery").unwrap();
    assert_eq!(property.verdict, Verdict::Violated);
    let Some(Evidence::Lasso { cycle, .. }) = &property.evidence else {
        panic!("a liveness violation comes with a lasso");
    };
    // Around the cycle the key stays absent and scheduler 0 has no queue...
    for step in cycle {
        assert_eq!(
            step.state.etcd.get(0),
            None,
            "the endpoint key stays absent"
        );
        assert!(
            step.state.schedulers[0].queue(&0).is_none(),
            "scheduler 0 has no queue"
        );
    }
    // ...the probe is routed to scheduler 0 and fails there, again and again.
    let routed = cycle.iter().any(|s| {
        s.state
            .messages
            .iter()
            .any(|m| matches!(m, Message::Activation { to: 0, .. }))
    });
    let failed = cycle.iter().any(|s| {
        s.state.activations.last() == Some(&ActivationState::Failed(FailReason::NoQueueEndpoint))
    });
    assert!(routed && failed);
}

#[test]
fn openwhisk_with_a_ttl_longer_than_the_outage_should_not_get_stuck() {
    let report = run(&scenarios::long_ttl(Variant::OpenWhisk));
    assert_eq!(
        report.property("executed after recovery").unwrap().verdict,
        Verdict::Holds
    );
}

#[test]
fn openwhisk_should_never_execute_a_probe_submitted_after_the_outage() {
    // `pending ~> executed` for the probe, which users keep submitting once
    // the faults are over: OpenWhisk fails it forever; a probe that stayed
    // pending forever would fail it too, where "executed after recovery"
    // (never failed from some point on) would let it pass.
    let name = "a probe submitted is executed";
    let broken = run(&scenarios::seed5286(Variant::OpenWhisk));
    assert_eq!(broken.property(name).unwrap().verdict, Verdict::Violated);
    let fixed = run(&scenarios::seed5286(Variant::Steadfast));
    assert_eq!(fixed.property(name).unwrap().verdict, Verdict::Holds);
}
