//! The leasequeue protocol model-checked: OpenWhisk's rules show #5286 as a
//! lasso that tells the report's story; steadfast's rules prove every
//! property in `seed5286`, in `general` and when a scheduler joins or
//! leaves, and
//! every path of interest is reached there.

use steadfast_checker::{Evidence, Report, Verdict};
use steadfast_spec::leasequeue::model::{scenarios, ActivationState, LeaseQueueModel, Message};
use steadfast_spec::leasequeue::{FailReason, Variant};
use steadfast_tests::{assert_all_hold, run, verdict};

/// Asserts that `report` checked each of `names`, and that it holds.
fn assert_reached(report: &Report<LeaseQueueModel>, names: &[&str]) {
    for name in names {
        let property = report
            .property(name)
            .unwrap_or_else(|| panic!("the scenario does not check {name:?}"));
        assert_eq!(property.verdict, Verdict::Holds, "{name}");
    }
}

#[test]
fn steadfast_should_prove_every_property_for_seed5286() {
    let report = run(&scenarios::seed5286(Variant::Steadfast));
    assert_all_hold(&report);
    assert_reached(
        &report,
        &[
            "a probe submitted is executed",
            "every activation submitted is executed",
            "the faults come and go",
            "a queue retires",
        ],
    );
}

#[test]
fn steadfast_should_prove_every_property_for_general_and_reach_its_paths() {
    let report = run(&scenarios::general(Variant::Steadfast));
    assert_all_hold(&report);
    assert_reached(
        &report,
        &[
            "a lease's loss deletes two keys at once",
            "a compaction cancels a watch",
            "a queue retires",
            "the faults come and go",
        ],
    );
}

#[test]
fn steadfast_should_prove_every_property_when_a_scheduler_joins() {
    let report = run(&scenarios::join(Variant::Steadfast));
    assert_all_hold(&report);
    assert_reached(
        &report,
        &[
            "a scheduler joins the cluster",
            "a queue is placed on a scheduler that joined",
            "a queue retires",
            "every activation submitted is executed",
        ],
    );
}

/// Asserts that in `scenario`, where a scheduler leaves, steadfast holds
/// every property and reaches each of `reached`, while OpenWhisk, which
/// sends what bounced to the address it left for ever, leaves a
/// submission unresolved, and something routed to the departed scheduler.
fn assert_routed_around_a_scheduler_that_left(
    scenario: fn(Variant) -> LeaseQueueModel,
    reached: &[&str],
) {
    let report = run(&scenario(Variant::Steadfast));
    assert_all_hold(&report);
    assert_reached(&report, reached);
    let report = run(&scenario(Variant::OpenWhisk));
    for property in [
        "every submission resolves",
        "a departed member's actions get a live owner",
    ] {
        assert_eq!(verdict(&report, property), Verdict::Violated, "{property}");
    }
}

#[test]
fn steadfast_should_route_again_what_a_scheduler_that_left_held() {
    assert_routed_around_a_scheduler_that_left(
        scenarios::departure,
        &[
            "a scheduler leaves for good",
            "a send to a scheduler that left bounces",
            "every submission resolves",
        ],
    );
}

/// Three schedulers, one stopping for good: its actions find a live owner
/// among the other two.
#[test]
fn with_three_schedulers_a_departed_ones_actions_should_find_a_live_owner() {
    assert_routed_around_a_scheduler_that_left(
        scenarios::three,
        &[
            "a scheduler leaves for good",
            "a send to a scheduler that left bounces",
            "a departed member's actions get a live owner",
        ],
    );
}

#[test]
fn a_draining_scheduler_should_settle_what_it_runs_and_what_reaches_it_should_run_elsewhere() {
    assert_routed_around_a_scheduler_that_left(
        scenarios::drain,
        &[
            "a scheduler is told to drain while it runs an activation",
            "a scheduler drains and leaves",
            "a send to a scheduler that left bounces",
            "every activation submitted is executed",
        ],
    );
}

/// A loser of an election forwards to the winner; the forwarder may crash,
/// and the winner leave for good. The forwarder acknowledges the
/// activation only once the winner took it in: acknowledged at the
/// forward, it was lost when the forwarder crashed and the forward bounced
/// back to a run that knew nothing of it (found in this scenario).
#[test]
fn a_forward_should_survive_its_forwarders_crash_and_its_peers_departure() {
    assert_routed_around_a_scheduler_that_left(
        scenarios::forward_loss,
        &[
            "a scheduler loses an election and forwards",
            "a scheduler crashes before acknowledging an activation that runs",
            "a scheduler leaves for good",
            "every submission resolves",
        ],
    );
}

/// The same race, with the winner (or the loser) vanishing instead: a
/// forward to it is neither acknowledged nor refused, and the forwarder,
/// whose controller hears from it and so never presumes it gone, takes the
/// copy back once it presumes its peer gone.
#[test]
fn a_forward_to_a_peer_that_vanished_should_be_taken_back_and_run() {
    assert_routed_around_a_scheduler_that_left(
        scenarios::forward_vanish,
        &[
            "a scheduler loses an election and forwards",
            "a send to a scheduler that vanished is lost",
            "a forward to a scheduler that vanished is taken back",
            "every submission resolves",
        ],
    );
}

/// Another system's value under the action's key, which stays until
/// someone deletes it: a controller's lookup, or a scheduler's claim,
/// finds it, and the call is answered as not routed, never guessed at;
/// once the key is deleted, routing is restored.
#[test]
fn a_call_whose_actions_key_is_unreadable_should_be_answered_as_not_routed() {
    let report = run(&scenarios::foreign_value(Variant::Steadfast));
    assert_all_hold(&report);
    assert_reached(
        &report,
        &[
            "a scheduler's claim finds a value no steadfast node wrote",
            "a call is answered as not routed",
            "every submission resolves",
            "routing restored",
        ],
    );
}

/// etcd refuses one scheduler's user the action's key, which may stay so:
/// its claim or lookup is refused, and the call it holds is answered as
/// not routed, while the other scheduler may claim the key and run it.
#[test]
fn a_call_on_a_scheduler_etcd_refuses_the_key_should_be_answered_as_not_routed() {
    let report = run(&scenarios::access_denied(Variant::Steadfast));
    assert_all_hold(&report);
    assert_reached(
        &report,
        &[
            "etcd refuses a scheduler's claim",
            "a call is answered as not routed",
            "an activation is executed",
            "every submission resolves",
        ],
    );
}

/// A caller asks again, through either controller, before or after the
/// activation ended, while a scheduler may leave for good and one crash:
/// every caller is told the one outcome, or, once the scheduler that knew
/// it is gone, that it ended, and nothing runs again but where the memory
/// of the run was lost.
#[test]
fn a_caller_asking_again_should_hear_the_one_outcome_or_that_it_ended() {
    assert_routed_around_a_scheduler_that_left(
        scenarios::retries_departure,
        &[
            "a copy of an activation that ended is answered with its outcome",
            "a resubmission through another controller resolves",
            "a caller is told an activation ended, how no longer known",
            "a scheduler leaves for good",
            "every submission resolves",
        ],
    );
}

/// An activation waits out an outage on its scheduler past its deadline:
/// steadfast fails it there, and its caller is told at the deadline that
/// there is no outcome yet; the submission still resolves.
#[test]
fn an_activation_past_its_deadline_should_fail_and_its_caller_hear_at_the_deadline() {
    let report = run(&scenarios::deadline(Variant::Steadfast));
    assert_all_hold(&report);
    assert_reached(
        &report,
        &[
            "nothing starts past its deadline",
            "an activation fails past its deadline",
            "a caller is told there is no outcome by its deadline",
            "every submission resolves",
        ],
    );
}

/// A scheduler runs an activation and crashes before acknowledging it;
/// the copy sent again reaches a scheduler past the deadline: its caller
/// is told that it was not run again and may have run, never that it did
/// not run.
#[test]
fn a_copy_past_its_deadline_that_may_have_run_should_end_ambiguous() {
    let report = run(&scenarios::crash_deadline(Variant::Steadfast));
    assert_all_hold(&report);
    assert_reached(
        &report,
        &[
            "at most one outcome",
            "a scheduler crashes before acknowledging an activation that runs",
            "a caller is told it is not known whether an activation ran",
            "every submission resolves",
        ],
    );
}

/// Answers between nodes go astray: an acknowledgement, a refusal, a
/// report or a confirmation lost, or held up and delivered after a
/// resubmission, then a crash. Every submission still resolves, and
/// nothing runs twice but what a crash excuses. OpenWhisk, which
/// acknowledges on receipt, loses activations there.
#[test]
fn answers_lost_or_late_should_leave_no_caller_waiting() {
    let lost = run(&scenarios::lost_answers(Variant::Steadfast));
    assert_all_hold(&lost);
    assert_reached(&lost, &["an answer is lost", "every submission resolves"]);
    let late = run(&scenarios::late_answers(Variant::Steadfast));
    assert_all_hold(&late);
    assert_reached(
        &late,
        &[
            "an answer is held up in the network",
            "a copy of an activation that ended is answered with its outcome",
            "every submission resolves",
        ],
    );
    let legacy = run(&scenarios::lost_answers(Variant::OpenWhisk));
    assert_eq!(
        verdict(&legacy, "every submission resolves"),
        Verdict::Violated
    );
}

/// A scheduler vanishes without a word: what was sent to it is lost, and
/// the controller routes it again once it presumes the scheduler gone.
/// OpenWhisk sends it there for ever.
#[test]
fn what_was_sent_to_a_scheduler_that_vanished_should_be_routed_again() {
    let report = run(&scenarios::vanishing(Variant::Steadfast));
    assert_all_hold(&report);
    assert_reached(
        &report,
        &[
            "a send to a scheduler that vanished is lost",
            "every submission resolves",
            "a departed member's actions get a live owner",
        ],
    );
    let legacy = run(&scenarios::vanishing(Variant::OpenWhisk));
    assert_eq!(
        verdict(&legacy, "every submission resolves"),
        Verdict::Violated
    );
}

#[test]
fn steadfast_should_win_or_forward_in_a_contested_election() {
    let report = run(&scenarios::contest(Variant::Steadfast));
    assert_all_hold(&report);
    assert_reached(
        &report,
        &[
            "a scheduler loses an election and forwards",
            "a queue retires",
            "a request is applied after its retry",
        ],
    );
}

#[test]
fn openwhisk_should_keep_routing_to_a_scheduler_whose_key_expired() {
    let report = run(&scenarios::seed5286(Variant::OpenWhisk));
    let property = report.property("a probe submitted is executed").unwrap();
    assert_eq!(property.verdict, Verdict::Violated);
    let Some(Evidence::Lasso { prefix, cycle, .. }) = &property.evidence else {
        panic!("a liveness violation comes with a lasso");
    };
    // The story of #5286, in the order the report tells it: the action's
    // key existed and the controller routed to its owner (the scheduler the
    // world placed it on)...
    let states: Vec<_> = prefix.steps.iter().map(|s| &s.state).collect();
    let (routed, owner) = states
        .iter()
        .enumerate()
        .find_map(|(i, w)| {
            let owner = w.etcd.get(0)?.owner;
            (w.controllers[0].route(&0) == Some(&owner)).then_some((i, owner))
        })
        .expect("the key existed and the controller routed to it");
    // ...then the key expired with its lease while etcd was unreachable...
    let expired = states[routed..]
        .iter()
        .position(|w| w.etcd.get(0).is_none())
        .expect("the key expired");
    assert!(
        states[routed + expired - 1].cut[usize::from(owner)],
        "the key expired during the outage"
    );
    // ...and around the cycle the controller never learns of it: it keeps
    // routing to the old owner, which has no queue and fails the probe.
    for step in cycle {
        let w = &step.state;
        assert_eq!(w.etcd.get(0), None, "the key stays absent");
        assert_eq!(
            w.controllers[0].route(&0),
            Some(&owner),
            "the cache is stale"
        );
        assert!(
            w.schedulers[usize::from(owner)].queue(&0).is_none(),
            "no queue"
        );
    }
    let sent = cycle.iter().any(|s| {
        s.state
            .messages
            .iter()
            .any(|m| matches!(m, Message::Activation { to, .. } if *to == owner))
    });
    let failed = cycle.iter().any(|s| {
        s.state.activations.last() == Some(&ActivationState::Failed(FailReason::NoQueueEndpoint))
    });
    assert!(
        sent && failed,
        "the probe is sent to the old owner and fails there"
    );
}

#[test]
fn openwhisk_with_a_ttl_longer_than_the_outage_should_not_get_stuck() {
    let report = run(&scenarios::long_ttl(Variant::OpenWhisk));
    assert_all_hold(&report);
}

#[test]
fn the_steadfast_scenarios_should_contain_every_fault_kind_and_hold() {
    // Each fault of the hostile environment, in a scenario of 2 schedulers,
    // 2 controllers and 2 actions, with the `sometimes` that shows it
    // happens.
    for (model, reached) in [
        (
            scenarios::lossy(Variant::Steadfast),
            &["a request is applied after its retry", "a reply is lost"][..],
        ),
        (
            scenarios::redelivery(Variant::Steadfast),
            &[
                "a message is sent twice",
                "a message overtakes another",
                "a scheduler crashes before acknowledging an activation that runs",
            ][..],
        ),
        (
            scenarios::etcd_faults(Variant::Steadfast),
            &[
                "etcd loses its leader",
                "a stalled watch is restarted",
                "etcd's clock runs ahead",
                "a watch skips a revision",
            ][..],
        ),
    ] {
        let b = &model.bounds;
        assert_eq!((b.schedulers, b.controllers, b.actions), (2, 2, 2));
        let report = run(&model);
        assert_all_hold(&report);
        assert_reached(&report, reached);
    }
}
