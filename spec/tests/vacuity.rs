//! Every property can fail: for each, a deliberately broken configuration
//! (a variant, a rule taken away, or a scenario that gives it no chance)
//! in which the checker finds it violated, by name.

mod vacuity {

    use steadfast_checker::{check, CheckOptions, CheckableState, Verdict};
    use steadfast_spec::TemporalModel;

    /// Asserts that checking `model` finds `property` violated.
    fn assert_violated<M>(model: &M, property: &str)
    where
        M: TemporalModel + Sync,
        M::State: CheckableState,
        M::Action: Clone,
    {
        let report = check(model, &CheckOptions::default()).expect("checkable");
        let verdict = report
            .property(property)
            .unwrap_or_else(|| panic!("the model has no property {property:?}"))
            .verdict;
        assert_eq!(verdict, Verdict::Violated, "{property}");
    }
    mod leasequeue {
        use super::assert_violated;
        use steadfast_spec::leasequeue::model::{scenarios, LeaseQueueModel};
        use steadfast_spec::leasequeue::{Rule, Variant};

        fn steadfast(scenario: fn(Variant) -> LeaseQueueModel) -> LeaseQueueModel {
            scenario(Variant::Steadfast)
        }

        /// `duplicate` with nothing submitted: no message is ever sent.
        fn idle() -> LeaseQueueModel {
            let mut model = steadfast(scenarios::duplicate);
            model.bounds.submissions.clear();
            model
        }

        #[test]
        fn one_server_per_action_fails_under_openwhisk_in_a_contest() {
            assert_violated(
                &scenarios::contest(Variant::OpenWhisk),
                "one scheduler serves an action under a live lease",
            );
        }

        #[test]
        fn executed_at_most_once_fails_without_deduplication() {
            let model = steadfast(scenarios::duplicate).without(Rule::Deduplicate);
            assert_violated(&model, "executed at most once");
        }

        #[test]
        fn at_most_one_outcome_fails_under_openwhisk_with_a_duplicate() {
            assert_violated(
                &scenarios::duplicate(Variant::OpenWhisk),
                "at most one outcome",
            );
        }

        #[test]
        fn fencing_fails_without_the_fence() {
            let model = steadfast(scenarios::seed5286).without(Rule::Fence);
            assert_violated(&model, "work only under a live lease");
        }

        #[test]
        fn every_submission_resolves_fails_when_acknowledged_on_receipt() {
            let model = steadfast(scenarios::duplicate).without(Rule::AckAtSettlement);
            assert_violated(&model, "every submission resolves");
        }

        #[test]
        fn every_activation_executed_fails_without_self_election() {
            let model = steadfast(scenarios::seed5286).without(Rule::SelfElection);
            assert_violated(&model, "every activation submitted is executed");
        }

        #[test]
        fn routing_restored_fails_when_a_watch_restarts_from_now() {
            let model = steadfast(scenarios::seed5286).without(Rule::ResumeWatch);
            assert_violated(&model, "routing restored");
        }

        #[test]
        fn a_probe_executed_fails_under_openwhisk_in_seed5286() {
            assert_violated(
                &scenarios::seed5286(Variant::OpenWhisk),
                "a probe submitted is executed",
            );
        }

        #[test]
        fn an_activation_executed_fails_when_nothing_is_submitted() {
            assert_violated(&idle(), "an activation is executed");
        }

        #[test]
        fn the_faults_go_fails_when_a_fault_can_never_happen() {
            // No message is ever sent, so the duplicate is never spent.
            assert_violated(&idle(), "the faults come and go");
        }

        #[test]
        fn a_watch_catching_up_fails_when_no_key_changes() {
            let model = idle().with_every_sometimes();
            assert_violated(&model, "a watch catches up on several revisions at once");
        }

        /// One test per `sometimes` of a fault or a path: violated in
        /// `seed5286` checked with every `sometimes`, which has one
        /// controller and one action, and of the faults only an outage and
        /// a queue retiring.
        macro_rules! unreachable_in_seed5286 {
            ($($test:ident: $property:literal,)*) => {$(
                #[test]
                fn $test() {
                    let model = steadfast(scenarios::seed5286).with_every_sometimes();
                    assert_violated(&model, $property);
                }
            )*};
        }

        unreachable_in_seed5286! {
            two_keys_at_once_fails_with_one_action: "a lease's loss deletes two keys at once",
            a_cancelled_watch_fails_without_compaction: "a compaction cancels a watch",
            a_late_request_fails_without_delays: "a request is applied after its retry",
            a_lost_reply_fails_without_losses: "a reply is lost",
            a_duplicate_fails_without_duplicates: "a message is sent twice",
            an_overtaking_message_fails_without_reorders: "a message overtakes another",
            a_restarted_stall_fails_without_stalls: "a stalled watch is restarted",
            a_crash_after_execution_fails_without_crashes: "a scheduler crashes before acknowledging an activation that runs",
            a_refused_copy_fails_without_crashes: "a scheduler refuses a copy addressed to its run before a crash",
            a_clock_ahead_fails_without_drift: "etcd's clock runs ahead",
            a_leader_loss_fails_without_one: "etcd loses its leader",
            a_leaderless_wait_fails_without_a_leader_loss: "a copy waits on a scheduler whose key is gone while etcd has no leader",
            a_skipped_revision_fails_without_foreign_writes: "a watch skips a revision",
            an_unreadable_claim_fails_without_foreign_values: "a scheduler's claim finds a value no steadfast node wrote",
            an_unrouted_call_fails_without_foreign_values: "a call is answered as not routed",
            a_refused_claim_fails_without_denials: "etcd refuses a scheduler's claim",
            a_join_fails_without_joins: "a scheduler joins the cluster",
            a_departure_fails_without_departures: "a scheduler leaves for good",
            a_bounce_fails_without_departures: "a send to a scheduler that left bounces",
            a_drain_fails_without_drains: "a scheduler drains and leaves",
            a_busy_drain_fails_without_drains: "a scheduler is told to drain while it runs an activation",
            a_placement_on_a_joiner_fails_without_joins: "a queue is placed on a scheduler that joined",
            a_failure_past_a_deadline_fails_without_deadlines: "an activation fails past its deadline",
            an_overdue_caller_fails_without_deadlines: "a caller is told there is no outcome by its deadline",
            an_executor_error_fails_without_one: "an execution ends with the executor's error",
            a_timeout_fails_without_hangs: "a hung execution times out",
            a_retry_elsewhere_fails_without_retries: "a resubmission through another controller resolves",
            a_forgotten_end_fails_without_retries: "a caller is told an activation ended, how no longer known",
            an_ambiguous_end_fails_without_crashes: "a caller is told it is not known whether an activation ran",
            a_lost_send_fails_without_vanishings: "a send to a scheduler that vanished is lost",
            a_take_back_fails_without_vanishings: "a forward to a scheduler that vanished is taken back",
            a_lost_message_fails_without_losses: "a message is lost",
            a_lost_answer_fails_without_losses: "an answer is lost",
            a_held_answer_fails_without_delays: "an answer is held up in the network",
        }

        /// Without the rule a copy that may have run fails as never run.
        #[test]
        fn an_ambiguous_end_fails_without_marking_what_may_have_run() {
            let model = steadfast(scenarios::crash_deadline)
                .without(Rule::MayHaveRun)
                .with_every_sometimes();
            assert_violated(
                &model,
                "a caller is told it is not known whether an activation ran",
            );
        }

        #[test]
        fn at_most_one_outcome_fails_under_openwhisk_when_a_crash_meets_a_deadline() {
            assert_violated(
                &scenarios::crash_deadline(Variant::OpenWhisk),
                "at most one outcome",
            );
        }

        /// Without the rule a copy of what ended is only acknowledged.
        #[test]
        fn an_answer_from_memory_fails_without_answering_every_copy() {
            let model = steadfast(scenarios::retries)
                .without(Rule::AnswerEveryCopy)
                .with_every_sometimes();
            assert_violated(
                &model,
                "a copy of an activation that ended is answered with its outcome",
            );
        }

        /// A resubmission is deduplicated by the scheduler that settled it,
        /// not excused: one that runs every copy runs it twice.
        #[test]
        fn executed_at_most_once_fails_without_deduplication_when_a_caller_retries() {
            let model = steadfast(scenarios::retries).without(Rule::Deduplicate);
            assert_violated(&model, "executed at most once");
        }

        #[test]
        fn every_submission_resolves_fails_without_answering_every_copy() {
            let model = steadfast(scenarios::retries).without(Rule::AnswerEveryCopy);
            assert_violated(&model, "every submission resolves");
        }

        /// Without the rule a hung execution holds its activation for ever.
        #[test]
        fn a_timed_out_execution_fails_without_the_execution_timeout() {
            let model = steadfast(scenarios::executions)
                .without(Rule::ExecutionTimeout)
                .with_every_sometimes();
            assert_violated(&model, "a hung execution times out");
        }

        /// Without the rule what was sent to a scheduler that vanished is
        /// sent to it for ever.
        #[test]
        fn a_live_owner_fails_when_a_vanished_scheduler_is_never_presumed_gone() {
            let model = steadfast(scenarios::vanishing).without(Rule::PresumeGone);
            assert_violated(&model, "a departed member's actions get a live owner");
        }

        #[test]
        fn nothing_starts_past_its_deadline_fails_when_checked_only_on_arrival() {
            let model = steadfast(scenarios::deadline).without(Rule::Deadline);
            assert_violated(&model, "nothing starts past its deadline");
        }

        /// In `seed5286` a member leaves and one controller can place the
        /// probe anew while the old owner elects itself: an election is
        /// lost there. With a lease that outlasts the outage, no member
        /// leaves: nothing is placed anew, and with one controller no two
        /// schedulers are asked for one queue.
        #[test]
        fn a_lost_election_and_a_new_placement_fail_when_no_member_leaves() {
            let model = steadfast(scenarios::long_ttl).with_every_sometimes();
            assert_violated(&model, "a scheduler loses an election and forwards");
            assert_violated(&model, "a queue is placed while a member's key is gone");
        }

        /// Without the rule a restarted scheduler takes in every copy.
        #[test]
        fn a_refused_copy_fails_without_fencing_copies() {
            let model = steadfast(scenarios::duplicate)
                .without(Rule::FenceCopies)
                .with_every_sometimes();
            assert_violated(
                &model,
                "a scheduler refuses a copy addressed to its run before a crash",
            );
        }

        #[test]
        fn a_retiring_queue_fails_without_retirements() {
            let model = steadfast(scenarios::duplicate).with_every_sometimes();
            assert_violated(&model, "a queue retires");
        }
    }

    mod lifecycle {
        use super::assert_violated;
        use steadfast_spec::lifecycle::model::scenarios;
        use steadfast_spec::lifecycle::{Rule, Variant};

        #[test]
        fn diff_base_only_on_handled_essences_fails_under_kopf() {
            assert_violated(
                &scenarios::seed641(Variant::Kopf),
                "diff-base only on handled essences",
            );
        }

        #[test]
        fn no_progress_overwritten_fails_without_checked_patches_and_a_stale_list() {
            let model = scenarios::stale(Variant::Steadfast).without(Rule::CheckedPatches);
            assert_violated(&model, "no progress overwritten unseen");
        }

        #[test]
        fn once_per_digest_fails_when_the_engine_reads_its_own_stale_version() {
            let model = scenarios::seed641(Variant::Steadfast).without(Rule::WaitForOwnWrite);
            assert_violated(&model, "a handler succeeds once per digest per start");
        }

        #[test]
        fn create_once_fails_when_create_runs_again_on_an_edit_made_during_the_creation() {
            let model = scenarios::create(Variant::Steadfast).without(Rule::CreateOnce);
            assert_violated(&model, "create succeeds at most once per object");
        }

        /// Two replicas that take the claim from the same version with
        /// patches that do not carry it both land: two takers of one epoch.
        #[test]
        fn growing_epochs_fail_without_checked_patches_and_two_replicas() {
            let model = scenarios::replicas(Variant::Steadfast).without(Rule::CheckedPatches);
            assert_violated(&model, "claims taken have growing epochs");
        }

        #[test]
        fn the_finalizer_kept_fails_for_a_delete_handler_given_no_time() {
            // The engine gives up on a handler out of time before running it
            // (as kopf does): with no time at all, the delete handler never
            // runs and the finalizer goes.
            let mut model = scenarios::hang(Variant::Steadfast);
            model.config.handlers[1].timeout = 0;
            assert_violated(&model, "finalizer kept until delete handlers finish");
        }

        #[test]
        fn handled_on_the_final_essence_fails_under_kopf() {
            assert_violated(
                &scenarios::seed641(Variant::Kopf),
                "handled on the final essence",
            );
        }

        /// A patch refused for good excuses an object only until it
        /// changes: with a refusal budgeted, kopf's #641 is still found.
        #[test]
        fn handled_on_the_final_essence_fails_under_kopf_despite_a_refusal() {
            let mut model = scenarios::seed641(Variant::Kopf);
            model.budget.faults.refusals = 1;
            assert_violated(&model, "handled on the final essence");
        }

        /// Two replicas with nothing to keep them apart (no claims) both
        /// run the handler.
        #[test]
        fn no_overlap_fails_with_two_replicas_and_no_claims() {
            assert_violated(
                &scenarios::replicas(Variant::Steadfast).without(Rule::Claims),
                "no two runs of the object's handlers overlap",
            );
        }

        /// Clocks that drift apart by more than the claims' budget let a
        /// replica take over a claim its holder still runs under.
        #[test]
        fn no_overlap_fails_when_clocks_drift_beyond_the_budget() {
            assert_violated(
                &scenarios::drift_beyond(Variant::Steadfast),
                "no two runs of the object's handlers overlap",
            );
        }

        /// A replica that waits for a claim to be released, and never takes
        /// over one that is over, waits forever for a dead holder.
        #[test]
        fn takeover_fails_when_claims_are_only_ever_released() {
            assert_violated(
                &scenarios::takeover(Variant::Steadfast).without(Rule::TakeOver),
                "a dead replica's objects are taken over",
            );
        }

        /// Runs that stop as late as the claims' margin let a replica take
        /// over a claim whose holder's run still goes on.
        #[test]
        fn no_overlap_fails_when_runs_stop_as_late_as_the_margin() {
            assert_violated(
                &scenarios::bounded_beyond(Variant::Steadfast),
                "no two runs of the object's handlers overlap",
            );
        }

        #[test]
        fn deletion_releases_the_finalizer_fails_when_a_hung_run_is_waited_for() {
            let model = scenarios::hang(Variant::Steadfast).without(Rule::RunDeadline);
            assert_violated(&model, "deletion releases the finalizer");
        }

        /// One test per `sometimes` of a fault or a path: violated in
        /// `stamp` checked with every `sometimes`, which has one create
        /// handler and no fault.
        macro_rules! unreachable_in_stamp {
            ($($test:ident: $property:literal,)*) => {$(
                #[test]
                fn $test() {
                    let model = scenarios::stamp(Variant::Steadfast).with_every_sometimes();
                    assert_violated(&model, $property);
                }
            )*};
        }

        unreachable_in_stamp! {
            a_sub_handler_fails_without_a_parent: "a sub-handler runs",
            a_delete_handler_fails_without_one: "a delete handler runs while the finalizer holds the object",
            a_failure_fails_without_errors: "a handler fails for good",
            an_update_during_creation_fails_without_one: "an update handler runs on a change made during the creation",
            a_resume_handler_fails_without_one: "a resume handler runs",
            a_return_to_an_earlier_essence_fails_without_edits: "an edit brings the essence back to an earlier one",
            a_deletion_mid_run_fails_without_deletion: "a deletion is requested while a handler runs",
            a_foreign_refusal_fails_without_foreign_writes: "another writer's change refuses a patch",
            a_zombie_fails_without_crashes: "a run of a crashed operator returns after the restart",
            a_deadline_fails_without_hangs: "a hung run passes its deadline",
            a_stale_list_fails_without_one: "a stale list is served",
            an_expiry_fails_without_one: "the watch expires and the operator lists again",
            a_lost_reply_fails_without_one: "a patch's reply is lost",
            a_status_alone_fails_without_a_status_subresource: "a status write lands without the rest of its patch",
            a_late_return_fails_without_overruns: "a run returns after its deadline",
            a_refusal_fails_without_one: "a patch is refused for good",
            a_throttle_fails_without_one: "a throttled request is asked again after the wait",
            running_out_of_attempts_fails_without_errors: "a handler runs out of attempts",
            a_retried_panic_fails_without_panics: "a handler that panicked runs again",
            a_failed_renewal_fails_without_long_runs: "a renewal of a running run's claim fails",
            a_successor_fails_without_stops: "a stopped operator's successor starts",
            a_takeover_fails_without_deaths: "a dead replica's claim is taken over",
            a_live_takeover_fails_with_one_replica: "a live replica's claim is taken over",
            a_drifting_clock_fails_without_skew: "a replica's clock runs ahead while another's run is under way",
        }

        /// The two paths `stamp` reaches, violated in `lost`: one field
        /// handler that writes nothing.
        #[test]
        fn create_and_self_write_fail_without_them() {
            let model = scenarios::lost(Variant::Steadfast).with_every_sometimes();
            assert_violated(&model, "a create handler runs");
            assert_violated(&model, "a handler's own write changes the essence");
        }
    }
}
