//! Every rule of the lifecycle's steadfast variant taken away alone, to show
//! what it is needed for: the property that then fails, in a named scenario
//! of the model check (each scenario is one `steadfast check lifecycle`
//! knows).

use steadfast_spec::lifecycle::model::{scenarios, LifecycleModel};
use steadfast_spec::lifecycle::{Rule, Variant};

/// Asserts that `property` holds in `scenario` under every rule, and is
/// violated there once `rule` alone is taken away.
fn assert_needed(rule: Rule, scenario: fn(Variant) -> LifecycleModel, property: &str) {
    let model = scenario(Variant::Steadfast);
    let without = model.clone().without(rule);
    steadfast_tests::assert_needed(&model, &without, &format!("{rule:?}"), property);
}

#[test]
fn a_record_must_be_finished_only_on_the_digest_it_ran_on() {
    assert_needed(
        Rule::DigestFinished,
        scenarios::general,
        "handled on the final essence",
    );
}

#[test]
fn a_handlers_digest_must_be_taken_after_its_own_write() {
    assert_needed(
        Rule::DigestAfterOwnWrite,
        scenarios::general,
        "diff-base only on handled essences",
    );
}

#[test]
fn a_parent_must_run_once_per_digest() {
    assert_needed(
        Rule::PlanOnce,
        scenarios::seed641,
        "a handler succeeds once per digest per start",
    );
}

#[test]
fn a_parents_run_must_start_its_plan_afresh() {
    assert_needed(
        Rule::FreshPlan,
        scenarios::general,
        "handled on the final essence",
    );
}

#[test]
fn patches_must_carry_their_resource_version() {
    assert_needed(
        Rule::CheckedPatches,
        scenarios::stale,
        "no progress overwritten unseen",
    );
}

#[test]
fn a_refused_patchs_outcome_must_be_written_again() {
    assert_needed(
        Rule::RebaseOnConflict,
        scenarios::foreign,
        "a handler succeeds once per digest per start",
    );
}

#[test]
fn the_engine_must_wait_for_its_own_write() {
    assert_needed(
        Rule::WaitForOwnWrite,
        scenarios::seed641,
        "a handler succeeds once per digest per start",
    );
}

#[test]
fn a_list_showing_another_version_must_be_confirmed() {
    assert_needed(
        Rule::ConfirmLists,
        scenarios::stale,
        "a handler succeeds once per digest per start",
    );
}

#[test]
fn a_run_past_its_deadline_must_be_given_up() {
    assert_needed(
        Rule::RunDeadline,
        scenarios::hang,
        "deletion releases the finalizer",
    );
}

#[test]
fn a_replica_must_run_only_under_its_own_claim() {
    assert_needed(
        Rule::Claims,
        scenarios::replicas,
        "no two runs of the object's handlers overlap",
    );
}

#[test]
fn a_claim_that_is_over_must_be_taken_over() {
    assert_needed(
        Rule::TakeOver,
        scenarios::takeover,
        "a dead replica's objects are taken over",
    );
}

#[test]
fn a_runs_claim_must_be_renewed_while_it_runs() {
    assert_needed(
        Rule::RenewClaims,
        scenarios::long,
        "a run is cut before its timeout only if its claim could not be renewed",
    );
}

#[test]
fn a_create_handler_that_succeeded_must_not_run_again() {
    assert_needed(
        Rule::CreateOnce,
        scenarios::create,
        "create succeeds at most once per object",
    );
}

#[test]
fn a_claim_must_be_kept_while_a_cancelled_run_may_go_on() {
    assert_needed(
        Rule::KeepClaimPastCancel,
        scenarios::bounded,
        "no two runs of the object's handlers overlap",
    );
}
