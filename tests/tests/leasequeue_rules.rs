//! Every rule of the steadfast variant taken away alone, to show what it is
//! needed for: the property that then fails, in a named scenario of the
//! model check (each scenario is one `steadfast check leasequeue` knows).

use steadfast_checker::Verdict;
use steadfast_spec::leasequeue::model::{scenarios, LeaseQueueModel};
use steadfast_spec::leasequeue::{Rule, Variant};
use steadfast_tests::{run, verdict};

/// Asserts that `property` holds in `scenario` under every rule, and is
/// violated there once `rule` alone is taken away.
fn assert_needed(rule: Rule, scenario: fn(Variant) -> LeaseQueueModel, property: &str) {
    let model = scenario(Variant::Steadfast);
    let without = model.clone().without(rule);
    steadfast_tests::assert_needed(&model, &without, &format!("{rule:?}"), property);
}

#[test]
fn work_must_be_fenced_by_the_leases_validity() {
    assert_needed(
        Rule::Fence,
        scenarios::seed5286,
        "work only under a live lease",
    );
}

#[test]
fn a_keepalive_answered_with_ttl_zero_must_count_as_lease_loss() {
    assert_needed(
        Rule::TtlZeroIsLoss,
        scenarios::seed5286,
        "work only under a live lease",
    );
}

#[test]
fn a_scheduler_without_a_queue_must_elect_itself() {
    assert_needed(
        Rule::SelfElection,
        scenarios::seed5286,
        "every activation submitted is executed",
    );
}

#[test]
fn a_retiring_queue_must_delete_only_the_key_it_created() {
    assert_needed(
        Rule::ConditionalDelete,
        scenarios::late_delete,
        "work only under a live lease",
    );
}

#[test]
fn a_scheduler_must_ignore_a_copy_of_an_activation_it_settled() {
    assert_needed(
        Rule::Deduplicate,
        scenarios::duplicate,
        "executed at most once",
    );
}

#[test]
fn an_activation_must_be_acknowledged_only_once_settled() {
    assert_needed(
        Rule::AckAtSettlement,
        scenarios::duplicate,
        "every submission resolves",
    );
    // An acknowledgement of the first submission, held up in the network,
    // arrives once the caller submitted the id again: taken for the
    // resubmission's, it stops that copy, the scheduler crashes, and the
    // caller waits for ever.
    assert_needed(
        Rule::AckAtSettlement,
        scenarios::late_answers,
        "every submission resolves",
    );
}

#[test]
fn a_controller_cut_off_from_etcd_must_park_activations() {
    assert_needed(
        Rule::Park,
        scenarios::general,
        "every activation submitted is executed",
    );
}

#[test]
fn a_controller_that_knows_no_live_member_must_park_activations() {
    assert_needed(
        Rule::Park,
        scenarios::no_members,
        "every activation submitted is executed",
    );
}

#[test]
fn a_restarted_watch_must_resume_where_it_stopped() {
    assert_needed(Rule::ResumeWatch, scenarios::seed5286, "routing restored");
}

#[test]
fn a_compacted_watch_must_relist() {
    assert_needed(Rule::Relist, scenarios::compaction, "routing restored");
}

/// etcd holds each watch opening past the next wake-up, at which the
/// controller asks for another: taking only the last one asked for, it
/// never takes any, and the key created meanwhile never reaches its cache.
#[test]
fn a_controller_must_take_the_first_watch_that_starts() {
    assert_needed(Rule::FirstWatch, scenarios::slow_watch, "routing restored");
}

#[test]
fn a_controller_must_take_in_every_event_of_a_watch_response() {
    // A scheduler that leaves takes its member key and its endpoint keys in
    // one revision: a watch response of several events.
    assert_needed(
        Rule::WholeResponses,
        scenarios::departure,
        "routing restored",
    );
}

#[test]
fn a_send_that_bounced_must_be_routed_again() {
    assert_needed(
        Rule::Reroute,
        scenarios::forward_loss,
        "every submission resolves",
    );
}

#[test]
fn a_restarted_scheduler_must_refuse_copies_addressed_to_its_run_before_the_crash() {
    // A copy of an activation executed and acknowledged, delivered again
    // once its scheduler crashed and restarted: taken in, it runs again.
    assert_needed(
        Rule::FenceCopies,
        scenarios::duplicate,
        "executed at most once",
    );
}

#[test]
fn an_activation_that_waited_past_its_deadline_must_not_start() {
    // An activation waits out the outage on its scheduler, whose lease's
    // validity ran out; its deadline passes; etcd answers again and the
    // queue serves. Checked only as it arrived, it starts all the same.
    assert_needed(
        Rule::Deadline,
        scenarios::deadline,
        "nothing starts past its deadline",
    );
}

#[test]
fn an_execution_must_not_run_past_its_timeout() {
    // An executor hangs: without the timeout its activation is held for
    // ever, and so is the drain of its scheduler.
    assert_needed(
        Rule::ExecutionTimeout,
        scenarios::executions,
        "every submission resolves",
    );
}

#[test]
fn every_controller_a_copy_names_must_be_told_the_outcome() {
    // A caller resubmits through the second controller: without the rule
    // only the first controller is told, and the second caller waits for
    // ever.
    assert_needed(
        Rule::AnswerEveryCopy,
        scenarios::retries,
        "every submission resolves",
    );
}

#[test]
fn a_copy_that_may_have_run_must_never_be_failed_as_not_run() {
    // A scheduler runs the activation and crashes before acknowledging it;
    // the copy sent again reaches a scheduler past the deadline. Without
    // the rule it fails as never started, though it ran.
    assert_needed(
        Rule::MayHaveRun,
        scenarios::crash_deadline,
        "at most one outcome",
    );
}

#[test]
fn a_scheduler_that_vanished_must_be_presumed_gone() {
    // Nothing sent to it is answered or refused: without the rule what was
    // sent to it is sent to it for ever.
    assert_needed(
        Rule::PresumeGone,
        scenarios::vanishing,
        "every submission resolves",
    );
    assert_needed(
        Rule::PresumeGone,
        scenarios::vanishing,
        "a departed member's actions get a live owner",
    );
}

#[test]
fn a_scheduler_must_presume_gone_a_peer_whose_member_key_stays_gone() {
    // A forward to a peer that vanished is neither acknowledged nor
    // refused; the controller hears from the live forwarder and waits.
    assert_needed(
        Rule::PresumePeerGone,
        scenarios::forward_vanish,
        "every submission resolves",
    );
}

#[test]
fn a_call_whose_actions_key_is_unreadable_must_be_answered_as_not_routed() {
    // A value no steadfast node wrote stays under the action's key until
    // someone deletes it, which nothing makes happen: a caller waiting for
    // the key to be put right may wait for ever.
    assert_needed(
        Rule::RefuseUnreadable,
        scenarios::foreign_value,
        "every submission resolves",
    );
}

#[test]
fn a_call_whose_actions_key_etcd_refuses_must_be_answered_as_not_routed() {
    // A permission withheld stays so until an operator grants it, which
    // nothing makes happen: a scheduler claiming again at every wake-up
    // holds its caller for ever.
    assert_needed(
        Rule::RefuseUnreadable,
        scenarios::access_denied,
        "every submission resolves",
    );
}

#[test]
fn a_controller_must_count_a_members_absence_only_while_etcd_answers_it() {
    // A leader loss after an outage keeps a live scheduler from putting its
    // member key back: without the rule the controller counts that time as
    // the scheduler's absence, presumes it gone, and what it runs is run
    // again elsewhere.
    assert_needed(
        Rule::EtcdTime,
        scenarios::presume_leaderless,
        "executed at most once",
    );
}

#[test]
fn a_live_scheduler_presumed_gone_too_soon_should_run_an_activation_twice() {
    // What the presumption assumes, made visible: a live scheduler cut off
    // from etcd is back with its member key within a tick in the model;
    // presumed gone after two ticks (`no-members`) nothing runs twice,
    // after one (`presume-early`) what it runs is routed again and runs
    // again elsewhere.
    let within = run(&scenarios::no_members(Variant::Steadfast));
    assert_eq!(verdict(&within, "executed at most once"), Verdict::Holds);
    let beyond = run(&scenarios::presume_early(Variant::Steadfast));
    assert_eq!(verdict(&beyond, "executed at most once"), Verdict::Violated);
}

#[test]
fn a_clock_drift_beyond_the_fences_margin_should_break_fencing() {
    // What the fence assumes, made visible: one tick of drift is within its
    // margin (`drift` holds), two are not.
    let within = run(&scenarios::drift(Variant::Steadfast));
    assert_eq!(
        verdict(&within, "work only under a live lease"),
        Verdict::Holds
    );
    let beyond = run(&scenarios::drift_beyond(Variant::Steadfast));
    assert_eq!(
        verdict(&beyond, "work only under a live lease"),
        Verdict::Violated
    );
}
