//! Unit tests and property tests of the engine's transition function, in
//! the model's domain.

use proptest::prelude::*;

use super::domain::Domain;
use super::engine::{
    ClaimChange, ClientError, Effect, Engine, Failure, Input, Outcome, Patch, Phase, Renewal,
    RunId, Verdict,
};
use super::handlers::{Backoff, Config, On};
use super::model::{scenarios, Essence, Field, Key, Said, Small};
use super::object::{Claim, Final, ObjectView, Progress};
use super::rules::{Rule, Variant};
use crate::trace::json::round_trip;

type View = ObjectView<Small>;

/// A version of the object, claimed for good by engine 0 (so that the
/// tests of one engine need not take the claim first; the claim's own tests
/// start from [`unclaimed`]).
fn view(version: u32, essence: Essence) -> View {
    ObjectView {
        claim: Some(Claim {
            holder: 0,
            until: u8::MAX,
            epoch: 1,
        }),
        epoch: 1,
        ..unclaimed(version, essence)
    }
}

/// A version of the object that no replica claims.
fn unclaimed(version: u32, essence: Essence) -> View {
    ObjectView {
        version,
        essence,
        deleting: false,
        finalizer: false,
        progress: Progress::default(),
        diff_base: None,
        claim: None,
        epoch: 0,
        marked: false,
    }
}

fn seed641() -> Config<Small> {
    scenarios::seed641(Variant::Steadfast).config
}

fn invoked(effects: &[Effect<Small>]) -> Option<(RunId, Key, Essence)> {
    effects.iter().find_map(|e| match e {
        Effect::Invoke {
            run,
            handler,
            essence,
            ..
        } => Some((*run, *handler, *essence)),
        _ => None,
    })
}

fn patch(effects: &[Effect<Small>]) -> Option<&Patch<Small>> {
    effects.iter().find_map(|e| match e {
        Effect::Patch(p) => Some(p),
        _ => None,
    })
}

/// Applies a patch to a view the way the API server would.
fn applied(mut v: View, p: &Patch<Small>) -> View {
    for (key, record) in &p.records {
        v.progress.set(key, record.clone());
    }
    if let Some(base) = p.diff_base {
        v.diff_base = Some(base);
    }
    for (field, value) in &p.writes {
        v.essence = v.essence.with(*field, *value);
    }
    if let Some(finalizer) = p.finalizer {
        v.finalizer = finalizer;
    }
    if let Some(claim) = &p.claim {
        v.claim = claim.after();
        v.epoch = v.claim.as_ref().map_or(v.epoch, |c| c.epoch);
    }
    v.version += 1;
    v
}

fn done(run: RunId, outcome: Outcome<Small>, subs: Vec<Key>) -> Input<Small> {
    Input::HandlerDone {
        run,
        outcome,
        subs,
        write: None,
    }
}

/// The engine that ran the `tick` parent of seed641 on tick 1 and saw its
/// plan written: returns it with the version its patch made.
fn planned() -> (Engine<Small>, View) {
    let config = seed641();
    let mut engine = Engine::new(0, 0, 0);
    let first = view(1, Essence([0, 1, 0]));
    let effects = engine.step(&config, Input::Listed(first.clone()));
    let (run, key, essence) = invoked(&effects).expect("the parent runs first");
    assert_eq!((key, essence), (Key::handler(0), Essence([0, 1, 0])));
    let plan = vec![Key::sub(0, 0), Key::sub(0, 1), Key::sub(0, 2)];
    let effects = engine.step(&config, done(run, Outcome::Success, plan.clone()));
    let p = patch(&effects).expect("the plan is written").clone();
    let record = p.records[0].1.clone().expect("the parent's record");
    assert_eq!(record.subs, plan);
    assert_eq!(record.outcome, None, "a parent finishes with its plan");
    let next = applied(first, &p);
    assert_eq!(
        engine.step(&config, Input::PatchApplied { version: 2 }),
        [],
        "nothing runs before the engine sees its own write"
    );
    (engine, next)
}

#[test]
fn a_parent_should_run_once_then_its_subhandlers_one_per_cycle() {
    let (mut engine, next) = planned();
    let effects = engine.step(&seed641(), Input::Observed(next));
    let (_, key, _) = invoked(&effects).expect("a sub-handler runs");
    assert_eq!(key, Key::sub(0, 0));
}

#[test]
fn a_refused_patchs_outcome_should_be_written_again_without_a_second_run() {
    let config = seed641();
    let (mut engine, next) = planned();
    let effects = engine.step(&config, Input::Observed(next.clone()));
    let (run, _, _) = invoked(&effects).unwrap();
    let effects = engine.step(&config, done(run, Outcome::Success, Vec::new()));
    assert!(patch(&effects).unwrap().checked);
    // Another writer moved the object on (status only): 409.
    let moved = View { version: 3, ..next };
    assert_eq!(engine.step(&config, Input::Observed(moved.clone())), []);
    let effects = engine.step(&config, Input::PatchConflict);
    assert_eq!(invoked(&effects), None, "{effects:?}");
    let p = patch(&effects).expect("the outcome goes onto the newer version");
    assert_eq!(p.expect, 3);
    let (key, record) = &p.records[0];
    assert_eq!(*key, Key::sub(0, 0));
    assert_eq!(record.as_ref().unwrap().outcome, Some(Final::Success));
}

#[test]
fn a_patch_whose_outcome_is_unknown_should_be_checked_by_a_read_and_written_again() {
    let config = seed641();
    let mut engine = Engine::new(0, 0, 0);
    let first = view(1, Essence([0, 1, 0]));
    let effects = engine.step(&config, Input::Listed(first.clone()));
    let (run, _, _) = invoked(&effects).unwrap();
    let effects = engine.step(&config, done(run, Outcome::Success, vec![Key::sub(0, 0)]));
    let sent = patch(&effects).unwrap().clone();
    // The engine waits its backoff before it asks the server again.
    let lost = Input::PatchUnanswered {
        error: ClientError::NoAnswer,
        message: Said::Failed,
    };
    let wait = config.backoff.next(None, None);
    assert_eq!(engine.step(&config, lost), [Effect::WakeAt(wait)]);
    assert_eq!(
        engine.step(&config, Input::Tick { now: wait }),
        [Effect::Fetch]
    );
    // It had not applied: the same outcome goes onto the same version (its
    // episode and claim starting at the time it is written), and the parent
    // does not run again.
    let effects = engine.step(&config, Input::Fetched(first));
    assert_eq!(invoked(&effects), None);
    let again = patch(&effects).unwrap();
    assert_eq!(again.expect, sent.expect);
    let plan = |p: &Patch<Small>| {
        p.records
            .iter()
            .map(|(key, record)| {
                let record = record.as_ref().unwrap();
                (*key, record.outcome, record.subs.clone(), record.retries)
            })
            .collect::<Vec<_>>()
    };
    assert_eq!(plan(again), plan(&sent));
}

#[test]
fn a_status_write_should_go_first_alone_and_the_rest_on_the_version_it_made() {
    let config = scenarios::split(Variant::Steadfast).config;
    let mut engine = Engine::new(0, 0, 0);
    let first = view(1, Essence([1, 0, 1]));
    let effects = engine.step(&config, Input::Listed(first.clone()));
    let (run, key, _) = invoked(&effects).expect("the copy runs");
    assert_eq!(key, Key::handler(0));
    let copied = Input::HandlerDone {
        run,
        outcome: Outcome::Success,
        subs: Vec::new(),
        write: Some((Field::Tick, 1)),
    };
    let effects = engine.step(&config, copied);
    let status = patch(&effects).expect("the status goes first").clone();
    assert!(status.to_status && status.checked);
    assert_eq!(
        (status.expect, status.writes.clone()),
        (1, vec![(Field::Tick, 1)])
    );
    assert!(status.records.is_empty() && status.claim.is_none());
    let effects = engine.step(&config, Input::PatchApplied { version: 2 });
    let rest = patch(&effects).expect("the rest follows").clone();
    assert!(!rest.to_status && rest.writes.is_empty());
    assert_eq!(rest.expect, 2, "on the version the status write made");
    assert_eq!(rest.records[0].0, Key::handler(0));
    // The rest fails (another writer came between) before the watch shows
    // the status written: the object is read, and the outcome written
    // again, its status write first again.
    assert_eq!(engine.step(&config, Input::PatchConflict), [Effect::Fetch]);
    let written = View {
        version: 3,
        essence: Essence([1, 1, 1]),
        ..first
    };
    let effects = engine.step(&config, Input::Fetched(written));
    assert_eq!(invoked(&effects), None, "the copy does not run again");
    let again = patch(&effects).expect("the outcome is written again");
    assert!(again.to_status);
    assert_eq!(
        (again.expect, again.writes.clone()),
        (3, vec![(Field::Tick, 1)])
    );
}

#[test]
fn a_hung_run_should_fail_for_good_at_its_deadline_and_its_late_return_be_ignored() {
    let config = seed641();
    let mut engine = Engine::new(0, 0, 0);
    let effects = engine.step(&config, Input::Listed(view(1, Essence([0, 1, 0]))));
    let Some(Effect::Invoke { run, deadline, .. }) = effects.first().cloned() else {
        panic!("{effects:?}");
    };
    assert_eq!(engine.step(&config, Input::Tick { now: deadline - 1 }), []);
    // Failed for good, it is finished: the object is handled in full.
    let effects = engine.step(&config, Input::Tick { now: deadline });
    let p = patch(&effects).expect("a commit");
    assert_eq!(p.diff_base, Some(Essence([0, 1, 0])), "{effects:?}");
    // The run returns at last: the engine has moved on.
    assert_eq!(
        engine.step(&config, done(run, Outcome::Success, Vec::new())),
        []
    );
}

#[test]
fn a_run_past_its_deadline_should_be_cancelled() {
    let config = seed641();
    let mut engine = Engine::new(0, 0, 0);
    let effects = engine.step(&config, Input::Listed(view(1, Essence([0, 1, 0]))));
    let Some(Effect::Invoke {
        run,
        deadline,
        version,
        ..
    }) = effects.first().cloned()
    else {
        panic!("{effects:?}");
    };
    assert_eq!(version, 1, "the run acts on the version listed");
    let effects = engine.step(&config, Input::Tick { now: deadline });
    assert_eq!(
        effects.first(),
        Some(&Effect::Cancel { run }),
        "{effects:?}"
    );
}

/// The handlers a patch records, with their plans (a record written again
/// onto another version starts its clock anew).
fn keys_and_plans(p: &Patch<Small>) -> Vec<(Key, Option<Vec<Key>>)> {
    p.records
        .iter()
        .map(|(k, r)| (*k, r.as_ref().map(|r| r.subs.clone())))
        .collect()
}

/// The engine after `first`'s parent ran and its patch is in flight.
fn patching(config: &Config<Small>, first: &View) -> (Engine<Small>, Patch<Small>) {
    let mut engine = Engine::new(0, 0, 0);
    let effects = engine.step(config, Input::Listed(first.clone()));
    let (run, _, _) = invoked(&effects).unwrap();
    let effects = engine.step(config, done(run, Outcome::Success, vec![Key::sub(0, 0)]));
    let sent = patch(&effects).unwrap().clone();
    (engine, sent)
}

#[test]
fn a_patch_refused_for_good_should_be_told_and_not_sent_again_until_the_object_changes() {
    let config = seed641();
    let first = view(1, Essence([0, 1, 0]));
    let (mut engine, sent) = patching(&config, &first);
    let effects = engine.step(
        &config,
        Input::PatchRefused {
            message: Said::Failed,
        },
    );
    assert_eq!(
        effects,
        [Effect::Tell(Verdict::PatchRefused {
            message: Said::Failed
        })],
        "told, and neither read nor sent again"
    );
    // The same version, listed again or at any time later: nothing.
    assert_eq!(engine.step(&config, Input::Observed(first.clone())), []);
    assert_eq!(engine.step(&config, Input::Tick { now: 5 }), []);
    // Someone changes the object: the run's outcome goes onto it, without
    // running the handler again.
    let changed = View {
        version: 2,
        ..first
    };
    let effects = engine.step(&config, Input::Observed(changed));
    assert_eq!(invoked(&effects), None, "{effects:?}");
    let p = patch(&effects).expect("the outcome is written again");
    assert_eq!(p.expect, 2);
    assert_eq!(keys_and_plans(p), keys_and_plans(&sent));
}

#[test]
fn a_throttled_patch_should_wait_as_told_then_read_and_write_again() {
    let config = seed641();
    let first = view(1, Essence([0, 1, 0]));
    let (mut engine, sent) = patching(&config, &first);
    let throttled = Input::PatchThrottled {
        retry_after: Some(2),
    };
    assert_eq!(engine.step(&config, throttled), [Effect::WakeAt(2)]);
    // Nothing is asked of the server before the wait is over, whatever
    // the watch shows meanwhile.
    assert_eq!(engine.step(&config, Input::Observed(first.clone())), []);
    assert_eq!(
        engine.step(&config, Input::Tick { now: 1 }),
        [Effect::WakeAt(2)]
    );
    assert_eq!(
        engine.step(&config, Input::Tick { now: 2 }),
        [Effect::Fetch]
    );
    // The read fails, unavailable: a wait of the engine's own, doubled.
    let failed = Input::FetchFailed {
        retry_after: None,
        message: Said::Failed,
    };
    let first_wait = config.backoff.next(Some(2), None);
    assert_eq!(
        engine.step(&config, failed),
        [Effect::WakeAt(2 + first_wait)]
    );
    assert_eq!(
        engine.step(
            &config,
            Input::Tick {
                now: 2 + first_wait
            }
        ),
        [Effect::Fetch]
    );
    let effects = engine.step(&config, Input::Fetched(first));
    assert_eq!(invoked(&effects), None);
    let p = patch(&effects).expect("the outcome is written again");
    assert_eq!(keys_and_plans(p), keys_and_plans(&sent));
    assert_eq!(engine.pause, None, "a served read ends the waits");
}

#[test]
fn unreadable_annotations_should_be_told_and_marked_once_and_nothing_run_until_readable() {
    let config = seed641();
    let mut engine = Engine::new(0, 0, 0);
    let unreadable = |version| Input::Unreadable {
        version,
        message: Said::Failed,
    };
    let told = [
        Effect::Mark {
            expect: 1,
            message: Some(Said::Failed),
        },
        Effect::Tell(Verdict::Unreadable {
            message: Said::Failed,
        }),
    ];
    assert_eq!(engine.step(&config, unreadable(1)), told);
    // The version the mark made says the same: nothing more is written.
    assert_eq!(engine.step(&config, unreadable(2)), [], "told once");
    assert_eq!(engine.step(&config, Input::Tick { now: 3 }), []);
    // Fixed, and still marked: the mark is cleared, once per version.
    let fixed = ObjectView {
        marked: true,
        ..view(3, Essence([0, 1, 0]))
    };
    let effects = engine.step(&config, Input::Observed(fixed.clone()));
    assert!(invoked(&effects).is_some(), "{effects:?}");
    let unmark = Effect::Mark {
        expect: 3,
        message: None,
    };
    assert!(effects.contains(&unmark), "{effects:?}");
    let again = engine.step(&config, Input::Tick { now: 4 });
    assert!(!again.contains(&unmark), "asked once: {again:?}");
}

#[test]
fn an_object_a_relist_does_not_show_should_be_read_before_it_is_given_up() {
    let config = seed641();
    let mut engine = Engine::new(0, 0, 0);
    let effects = engine.step(&config, Input::Listed(view(1, Essence([0, 1, 0]))));
    let (run, _, _) = invoked(&effects).unwrap();
    // The run goes on; the read is asked once it has returned and its
    // outcome is written (without the relist, the engine would wait for
    // the watch to show its write).
    assert_eq!(engine.step(&config, Input::Unlisted), []);
    let effects = engine.step(&config, done(run, Outcome::Success, vec![]));
    assert!(patch(&effects).is_some(), "{effects:?}");
    let effects = engine.step(&config, Input::PatchApplied { version: 2 });
    assert_eq!(effects, [Effect::Fetch]);
    // The list was older than the object: it goes on.
    let mut older = engine.clone();
    older.step(&config, Input::Fetched(view(2, Essence([0, 1, 0]))));
    assert_eq!(older.view.map(|v| v.version), Some(2));
    // Gone indeed: the read says so.
    engine.step(&config, Input::Gone);
    assert_eq!(engine.view, None);
}

#[test]
fn a_stopping_engine_should_finish_its_run_write_it_and_start_no_other() {
    let config = seed641();
    let mut engine = Engine::new(0, 0, 0);
    let first = view(1, Essence([0, 1, 0]));
    let effects = engine.step(&config, Input::Listed(first.clone()));
    let (run, _, _) = invoked(&effects).unwrap();
    assert_eq!(engine.step(&config, Input::Stop), []);
    assert!(!engine.stopped(), "a run is in flight");
    let effects = engine.step(&config, done(run, Outcome::Success, vec![Key::sub(0, 0)]));
    let p = patch(&effects)
        .expect("the run's outcome is written")
        .clone();
    assert!(!engine.stopped(), "its patch is in flight");
    assert_eq!(engine.step(&config, Input::PatchApplied { version: 2 }), []);
    // Its own write shows: the sub-handler would run next, but does not.
    let effects = engine.step(&config, Input::Observed(applied(first, &p)));
    assert_eq!(invoked(&effects), None, "{effects:?}");
    assert!(engine.stopped());
}

#[test]
fn api_answers_should_come_to_the_engine_by_class() {
    let status = |code| Failure::<Small>::Status {
        code,
        message: Said::Failed,
        retry_after: Some(2),
    };
    for code in [404, 409] {
        assert_eq!(status(code).of_patch(), Input::PatchConflict);
    }
    for code in [400, 403, 422] {
        let refused = Input::PatchRefused {
            message: Said::Failed,
        };
        assert_eq!(status(code).of_patch(), refused);
        let no_wait = Input::FetchFailed {
            retry_after: None,
            message: Said::Failed,
        };
        assert_eq!(status(code).of_fetch(), no_wait);
    }
    for code in [429, 500, 503, 504, 401] {
        let throttled = Input::PatchThrottled {
            retry_after: Some(2),
        };
        assert_eq!(status(code).of_patch(), throttled);
        let told = Input::FetchFailed {
            retry_after: Some(2),
            message: Said::Failed,
        };
        assert_eq!(status(code).of_fetch(), told);
    }
    for error in [
        ClientError::Unsent,
        ClientError::NoAnswer,
        ClientError::Undecodable,
    ] {
        let failure = Failure::<Small>::Client {
            error,
            message: Said::Failed,
        };
        let unanswered = Input::PatchUnanswered {
            error,
            message: Said::Failed,
        };
        assert_eq!(failure.clone().of_patch(), unanswered);
        let no_wait = Input::FetchFailed {
            retry_after: None,
            message: Said::Failed,
        };
        assert_eq!(failure.of_fetch(), no_wait);
    }
}

#[test]
fn a_completion_of_an_earlier_start_should_be_ignored() {
    let config = seed641();
    let mut engine = Engine::new(0, 1, 0);
    let effects = engine.step(&config, Input::Listed(view(1, Essence([0, 1, 0]))));
    let (run, _, _) = invoked(&effects).unwrap();
    let zombie = RunId {
        incarnation: 0,
        ..run
    };
    assert_eq!(
        engine.step(&config, done(zombie, Outcome::Success, Vec::new())),
        []
    );
    assert!(patch(&engine.step(
        &config,
        done(
            run,
            Outcome::Permanent {
                message: Said::Failed
            },
            Vec::new()
        )
    ))
    .is_some());
}

fn told(effects: &[Effect<Small>]) -> Vec<&Verdict<Small>> {
    effects
        .iter()
        .filter_map(|e| match e {
            Effect::Tell(verdict) => Some(verdict),
            _ => None,
        })
        .collect()
}

#[test]
fn a_failure_should_be_told_once_and_kept_in_the_record_until_a_success() {
    let config = seed641();
    let mut engine = Engine::new(0, 0, 0);
    let first = view(1, Essence([0, 1, 0]));
    let (run, handler, _) = invoked(&engine.step(&config, Input::Listed(first.clone()))).unwrap();
    let temporary = Outcome::Temporary {
        delay: 2,
        message: Said::Failed,
    };
    let effects = engine.step(&config, done(run, temporary, Vec::new()));
    assert_eq!(
        told(&effects),
        [&Verdict::Retrying {
            handler,
            message: Said::Failed,
            at: 2
        }]
    );
    let p = patch(&effects).expect("the delay is recorded").clone();
    let record = p.records[0].1.clone().expect("a record");
    assert_eq!(record.error, Some(Said::Failed), "the message is kept");
    // The patch is refused and the outcome written again on the newer
    // version: the verdict is not told again.
    let effects = engine.step(&config, Input::PatchConflict);
    assert!(told(&effects).is_empty(), "{effects:?}");
    let effects = engine.step(&config, Input::Fetched(view(2, Essence([0, 1, 0]))));
    assert!(told(&effects).is_empty(), "{effects:?}");
    let written = patch(&effects).expect("the outcome written again");
    let after = applied(view(2, Essence([0, 1, 0])), written);
    engine.step(
        &config,
        Input::PatchApplied {
            version: after.version,
        },
    );
    engine.step(&config, Input::Observed(after));
    let (run, _, _) =
        invoked(&engine.step(&config, Input::Tick { now: 2 })).expect("retried when due");
    let effects = engine.step(&config, done(run, Outcome::Success, Vec::new()));
    assert!(told(&effects).is_empty(), "a success is not told");
    let records = &patch(&effects).expect("a patch").records;
    assert!(
        records
            .iter()
            .all(|(_, r)| r.as_ref().is_none_or(|r| r.error.is_none())),
        "a success clears the message: {records:?}"
    );
}

#[test]
fn a_panic_should_be_retried_after_the_engines_wait_doubled_per_attempt() {
    let mut config = seed641();
    config.backoff.first = 1;
    config.backoff.most = 3;
    config.handlers[0].retries = 4;
    config.claims.duration = 100;
    let panicked = Outcome::Panicked {
        message: Said::Failed,
    };
    let mut engine = Engine::new(0, 0, 0);
    let mut current = view(1, Essence([0, 1, 0]));
    let (mut run, handler, _) =
        invoked(&engine.step(&config, Input::Listed(current.clone()))).unwrap();
    let mut now = 0;
    // Waits of 1, 2, then 3 (the most) after each panic in a row.
    for wait in [1, 2, 3] {
        let effects = engine.step(&config, done(run, panicked, Vec::new()));
        assert_eq!(
            told(&effects),
            [&Verdict::Retrying {
                handler,
                message: Said::Failed,
                at: now + wait
            }],
            "{effects:?}"
        );
        let p = patch(&effects).expect("the wait is recorded").clone();
        let record = p.records[0].1.clone().expect("a record");
        assert_eq!(record.error, Some(Said::Failed), "the panic is kept");
        assert_eq!(record.delayed_until, Some(now + wait));
        current = applied(
            View {
                version: current.version + 1,
                ..current
            },
            &p,
        );
        engine.step(
            &config,
            Input::PatchApplied {
                version: current.version,
            },
        );
        engine.step(&config, Input::Observed(current.clone()));
        now += wait;
        let effects = engine.step(&config, Input::Tick { now });
        run = invoked(&effects).expect("retried when due").0;
    }
}

#[test]
fn a_permanent_failure_should_be_told_with_its_message() {
    let config = seed641();
    let mut engine = Engine::new(0, 0, 0);
    let (run, handler, _) =
        invoked(&engine.step(&config, Input::Listed(view(1, Essence([0, 1, 0]))))).unwrap();
    let effects = engine.step(
        &config,
        done(
            run,
            Outcome::Permanent {
                message: Said::Failed,
            },
            Vec::new(),
        ),
    );
    assert_eq!(
        told(&effects),
        [&Verdict::Failed {
            handler,
            message: Some(Said::Failed)
        }]
    );
}

#[test]
fn a_reply_after_the_watch_showed_the_own_write_and_a_newer_one_should_process_the_newer() {
    // Seen in a runtime test: the watch showed the patch's own version,
    // then another writer's, before the patch's reply came.
    let config = seed641();
    let mut engine = Engine::new(0, 0, 0);
    let first = view(1, Essence([0, 0, 0]));
    let (run, _, _) = invoked(&engine.step(&config, Input::Observed(first.clone()))).unwrap();
    let effects = engine.step(&config, done(run, Outcome::Success, Vec::new()));
    let own = applied(first, patch(&effects).expect("the outcome's patch"));
    assert_eq!(engine.step(&config, Input::Observed(own.clone())), []);
    let foreign = View {
        version: own.version + 1,
        essence: own.essence.with(Field::Tick, 1),
        ..own.clone()
    };
    assert_eq!(engine.step(&config, Input::Observed(foreign)), []);
    let effects = engine.step(
        &config,
        Input::PatchApplied {
            version: own.version,
        },
    );
    // The commit released the claim: the newer version's run takes it
    // first.
    let taking = patch(&effects).expect("the newer version is processed");
    assert_eq!(taking.expect, own.version + 1, "{effects:?}");
    assert_eq!(
        claim_of(taking),
        Some(Some(Claim {
            holder: 0,
            until: 3,
            epoch: 2,
        }))
    );
}

#[test]
fn a_list_showing_another_version_should_be_confirmed_by_a_read() {
    let (mut engine, next) = planned();
    let config = seed641();
    let effects = engine.step(&config, Input::Observed(next.clone()));
    let (run, _, _) = invoked(&effects).unwrap();
    let effects = engine.step(&config, done(run, Outcome::Success, Vec::new()));
    let written = applied(next, patch(&effects).unwrap());
    let version = written.version;
    assert_eq!(engine.step(&config, Input::PatchApplied { version }), []);
    // The watch expired; the list is served from a cache, older than the
    // versions the engine saw and wrote.
    let stale = view(1, Essence([0, 1, 0]));
    assert_eq!(engine.step(&config, Input::Listed(stale)), [Effect::Fetch]);
    let effects = engine.step(&config, Input::Fetched(written));
    let (_, key, _) = invoked(&effects).expect("the read version is processed");
    assert_eq!(key, Key::sub(0, 1));
}

#[test]
fn a_cycle_with_nothing_to_write_should_go_on_to_the_newest_version() {
    // A resume handler runs after a restart on an object handled in full;
    // its success leaves nothing to write. Meanwhile deletion was asked
    // for: the delete handler must run next, with no patch to prompt it.
    // (With claims, the commit would release the claim: there is a patch.)
    let config = scenarios::general(Variant::Steadfast)
        .without(Rule::Claims)
        .config;
    let find = |on: On<Field>| {
        config
            .handlers
            .iter()
            .find(|h| h.on == on)
            .map(|h| h.id)
            .unwrap()
    };
    let essence = Essence([1, 0, 1]);
    let handled = View {
        finalizer: true,
        diff_base: Some(essence),
        ..view(5, essence)
    };
    let mut engine = Engine::new(0, 0, 0);
    let effects = engine.step(&config, Input::Listed(handled.clone()));
    let (run, key, _) = invoked(&effects).unwrap();
    assert_eq!(key, find(On::Resume));
    let deleting = View {
        version: 6,
        deleting: true,
        ..handled
    };
    assert_eq!(engine.step(&config, Input::Observed(deleting)), []);
    let effects = engine.step(&config, done(run, Outcome::Success, Vec::new()));
    let (_, key, _) = invoked(&effects).expect("the delete handler runs");
    assert_eq!(key, find(On::Delete), "{effects:?}");
}

fn inputs() -> impl Strategy<Value = Vec<Input<Small>>> {
    let essence = (0u8..3, 0u8..3, 0u8..2).prop_map(|(a, b, c)| Essence([a, b, c]));
    let object = (
        1u32..8,
        essence.clone(),
        any::<bool>(),
        any::<bool>(),
        prop::option::of(essence),
        any::<bool>(),
    )
        .prop_map(
            |(version, essence, deleting, finalizer, diff_base, marked)| ObjectView {
                version,
                essence,
                deleting,
                finalizer,
                progress: Progress::default(),
                diff_base,
                claim: None,
                epoch: 0,
                marked,
            },
        );
    let outcome = prop_oneof![
        Just(Outcome::Success),
        (1u8..3).prop_map(|delay| Outcome::Temporary {
            delay,
            message: Said::Failed
        }),
        Just(Outcome::Permanent {
            message: Said::Failed
        }),
    ];
    let key = (0u8..5, prop::option::of(0u8..2)).prop_map(|(handler, sub)| Key { handler, sub });
    let done = (
        0u32..2,
        0u32..4,
        outcome,
        prop::collection::vec(key, 0..3),
        any::<bool>(),
    )
        .prop_map(
            |(incarnation, seq, outcome, subs, writes)| Input::HandlerDone {
                run: RunId { incarnation, seq },
                outcome,
                subs: subs.into_iter().filter(|k| k.sub.is_some()).collect(),
                write: writes.then_some((Field::Label, 1)),
            },
        );
    let input = prop_oneof![
        3 => object.clone().prop_map(Input::Observed),
        1 => object.clone().prop_map(Input::Listed),
        1 => object.prop_map(Input::Fetched),
        3 => done,
        1 => (1u32..9).prop_map(|version| Input::PatchApplied { version }),
        1 => Just(Input::PatchConflict),
        1 => Just(Input::PatchUnanswered { error: ClientError::NoAnswer, message: Said::Failed }),
        1 => Just(Input::PatchRefused { message: Said::Failed }),
        1 => prop::option::of(1u8..3).prop_map(|retry_after| Input::PatchThrottled { retry_after }),
        1 => prop::option::of(1u8..3)
            .prop_map(|retry_after| Input::FetchFailed { retry_after, message: Said::Failed }),
        1 => prop::option::of(1u8..3).prop_map(|retry_after| Input::RenewFailed { retry_after }),
        1 => (1u32..9).prop_map(|version| Input::Unreadable { version, message: Said::Failed }),
        1 => Just(Input::Stop),
        1 => (0u32..3).prop_map(|seq| Input::Stopped { run: RunId { incarnation: 0, seq } }),
        1 => (0u8..12).prop_map(|now| Input::Tick { now }),
        1 => Just(Input::Gone),
        1 => Just(Input::Unlisted),
    ];
    prop::collection::vec(input, 0..40)
}

proptest! {
    /// Whatever the world says, in any order: one run at a time, one patch
    /// in flight, and every input and effect reads back from JSON as it was
    /// written (a runtime records them as JSON lines and replays them).
    #[test]
    fn engine_should_keep_one_run_and_one_patch_and_round_trip_under_any_inputs(
        inputs in inputs(),
        steadfast in any::<bool>(),
    ) {
        let variant = if steadfast { Variant::Steadfast } else { Variant::Kopf };
        let config = scenarios::general(variant).config;
        let mut engine = Engine::new(0, 1, 0);
        let mut running = false;
        let mut patching = false;
        for input in inputs {
            prop_assert_eq!(&round_trip(&input), &input);
            let ends_patch = matches!(
                input,
                Input::PatchApplied { .. }
                    | Input::PatchConflict
                    | Input::PatchUnanswered { .. }
                    | Input::PatchRefused { .. }
                    | Input::PatchThrottled { .. }
            );
            let ends_run = matches!(input, Input::HandlerDone { .. } | Input::Tick { .. });
            let effects = engine.step(&config, input);
            for effect in &effects {
                prop_assert_eq!(&round_trip(effect), effect);
            }
            let invokes = effects.iter().filter(|e| matches!(e, Effect::Invoke { .. })).count();
            let patches = effects.iter().filter(|e| matches!(e, Effect::Patch(_))).count();
            prop_assert!(invokes + patches <= 1, "one request per step: {:?}", effects);
            prop_assert!(invokes == 0 || !running || ends_run, "no run while one is in flight");
            prop_assert!(patches == 0 || !patching || ends_patch, "no patch while one is in flight");
            running = matches!(engine.phase, super::engine::Phase::Running { .. });
            patching = matches!(engine.phase, super::engine::Phase::Patching { .. });
        }
    }
}

#[test]
fn a_failed_run_should_neither_write_nor_declare() {
    let config = seed641();
    let mut engine = Engine::new(0, 0, 0);
    let effects = engine.step(&config, Input::Listed(view(1, Essence([0, 1, 0]))));
    let (run, _, _) = invoked(&effects).unwrap();
    let failed = Input::HandlerDone {
        run,
        outcome: Outcome::Temporary {
            delay: 1,
            message: Said::Failed,
        },
        subs: vec![Key::sub(0, 0)],
        write: Some((Field::Label, 1)),
    };
    let effects = engine.step(&config, failed);
    let p = patch(&effects).expect("the attempt is recorded");
    assert!(p.writes.is_empty(), "{p:?}");
    let (_, record) = &p.records[0];
    assert!(record.as_ref().unwrap().subs.is_empty());
}

/// The claim on the object once `p` applies, if `p` changes it.
fn claim_of(p: &Patch<Small>) -> Option<Option<Claim<Small>>> {
    p.claim.as_ref().map(ClaimChange::after)
}

/// `config` with `rule` taken away.
fn without(config: &Config<Small>, rule: Rule) -> Config<Small> {
    Config {
        rules: config.rules.without(rule),
        ..config.clone()
    }
}

#[test]
fn a_replica_should_run_only_under_its_own_claim_and_take_over_one_that_is_over() {
    // Claims last 3 ticks; clocks may drift by 1; a run's claim is not
    // renewed (see the next test).
    let config = without(
        &scenarios::replicas(Variant::Steadfast).config,
        Rule::RenewClaims,
    );
    let mut a = Engine::new(0, 0, 0);
    let mut b = Engine::new(1, 1, 0);
    let first = unclaimed(1, Essence([1, 0, 1]));
    // The first run of the episode is preceded by the claim, in one
    // checked patch with its record.
    let effects = a.step(&config, Input::Observed(first.clone()));
    assert_eq!(invoked(&effects), None, "{effects:?}");
    let taking = patch(&effects).expect("the claim is taken first").clone();
    assert!(taking.checked);
    let mine = Claim {
        holder: 0,
        until: 3,
        epoch: 1,
    };
    assert_eq!(claim_of(&taking), Some(Some(mine)));
    let claimed = applied(first, &taking);
    let version = claimed.version;
    assert_eq!(a.step(&config, Input::PatchApplied { version }), []);
    let effects = a.step(&config, Input::Observed(claimed.clone()));
    let Some(Effect::Invoke { run, deadline, .. }) = effects.first().cloned() else {
        panic!("{effects:?}");
    };
    assert_eq!(deadline, mine.until, "a run ends with its claim");
    // Another replica does nothing of the object until the claim is over
    // by its clock: its end plus the drift.
    assert_eq!(
        b.step(&config, Input::Observed(claimed.clone())),
        [Effect::WakeAt(4)]
    );
    assert_eq!(b.step(&config, Input::Tick { now: 3 }), [Effect::WakeAt(4)]);
    // The holder's clock reaches the claim's end first: its run is cancelled.
    let effects = a.step(&config, Input::Tick { now: 3 });
    assert_eq!(
        effects.first(),
        Some(&Effect::Cancel { run }),
        "{effects:?}"
    );
    // Then the other replica takes the object over.
    let effects = b.step(&config, Input::Tick { now: 4 });
    let taken = patch(&effects).expect("the claim is taken over");
    assert_eq!(taken.expect, claimed.version);
    assert_eq!(
        claim_of(taken),
        Some(Some(Claim {
            holder: 1,
            until: 7,
            epoch: 2,
        }))
    );
    // Without the rule to take over, a claim that is over is waited on
    // until it is released.
    let patient = without(&config, Rule::TakeOver);
    let mut c = Engine::new(2, 2, 0);
    assert_eq!(c.step(&patient, Input::Observed(claimed)), []);
    assert_eq!(c.step(&patient, Input::Tick { now: 100 }), []);
}

#[test]
fn a_claim_should_cost_one_patch_per_episode_and_be_released_at_commit() {
    let claiming = scenarios::replicas(Variant::Steadfast).config;
    let plain = without(&claiming, Rule::Claims);
    let mut counts = Vec::new();
    for config in [&claiming, &plain] {
        let mut engine = Engine::new(0, 0, 0);
        let mut object = unclaimed(1, Essence([1, 0, 1]));
        let mut effects = engine.step(config, Input::Observed(object.clone()));
        let mut patches = Vec::new();
        loop {
            if let Some((run, _, _)) = invoked(&effects) {
                effects = engine.step(config, done(run, Outcome::Success, Vec::new()));
            } else if let Some(p) = patch(&effects).cloned() {
                object = applied(object, &p);
                patches.push(p);
                let version = object.version;
                engine.step(config, Input::PatchApplied { version });
                effects = engine.step(config, Input::Observed(object.clone()));
            } else {
                break;
            }
        }
        assert_eq!(object.diff_base, Some(object.essence), "{patches:?}");
        assert_eq!(object.claim, None, "the commit released the claim");
        counts.push(patches.len());
    }
    assert_eq!(counts, [2, 1], "the claim costs one patch in the episode");
}

#[test]
fn a_stopping_engine_should_release_its_claim() {
    let config = scenarios::replicas(Variant::Steadfast).config;
    let mut engine = Engine::new(0, 0, 0);
    let first = unclaimed(1, Essence([1, 0, 1]));
    let effects = engine.step(&config, Input::Observed(first.clone()));
    let claimed = applied(first, patch(&effects).unwrap());
    let version = claimed.version;
    engine.step(&config, Input::PatchApplied { version });
    let effects = engine.step(&config, Input::Observed(claimed.clone()));
    let (run, _, _) = invoked(&effects).unwrap();
    // A temporary failure: the handler is due again in 2 ticks, and the
    // engine waits under its renewed claim.
    let failed = Outcome::Temporary {
        delay: 2,
        message: Said::Failed,
    };
    let effects = engine.step(&config, done(run, failed, Vec::new()));
    let saved = applied(claimed, patch(&effects).unwrap());
    let version = saved.version;
    engine.step(&config, Input::PatchApplied { version });
    let effects = engine.step(&config, Input::Observed(saved.clone()));
    assert_eq!(effects, [Effect::WakeAt(2)]);
    // Told to stop, it gives the claim back at once, so that a peer need
    // not wait for it to end.
    let effects = engine.step(&config, Input::Stop);
    let releasing = patch(&effects).expect("the claim is released");
    assert_eq!(claim_of(releasing), Some(None));
    assert!(releasing.records.is_empty());
    assert!(!engine.stopped(), "not before the release is seen");
    let released = applied(saved, releasing);
    let version = released.version;
    engine.step(&config, Input::PatchApplied { version });
    let effects = engine.step(&config, Input::Observed(released));
    assert_eq!(patch(&effects), None, "{effects:?}");
    assert!(engine.stopped());
}

#[test]
fn a_running_runs_claim_should_be_renewed_and_the_run_cut_only_when_a_renewal_does_not_land() {
    // Claims last 3 ticks and are renewed with 1 left; the episode has 8;
    // waits double from 1 tick up to 4.
    let mut config = scenarios::replicas(Variant::Steadfast).config;
    config.backoff = Backoff { first: 1, most: 4 };
    let mut a = Engine::new(0, 0, 0);
    let first = unclaimed(1, Essence([1, 0, 1]));
    let taking = patch(&a.step(&config, Input::Observed(first.clone())))
        .expect("the claim is taken first")
        .clone();
    let claimed = applied(first, &taking);
    let version = claimed.version;
    a.step(&config, Input::PatchApplied { version });
    let effects = a.step(&config, Input::Observed(claimed.clone()));
    let Some(Effect::Invoke { run, deadline, .. }) = effects.first().cloned() else {
        panic!("{effects:?}");
    };
    assert_eq!(deadline, 2, "the run's timer is the renewal's time");
    // Due: a checked patch of the claim alone, on the newest version.
    let effects = a.step(&config, Input::Tick { now: 2 });
    let [Effect::Renew(renewal), Effect::Remind {
        run: reminded,
        at: 3,
    }] = &effects[..]
    else {
        panic!("{effects:?}");
    };
    assert_eq!(*reminded, run);
    assert!(renewal.checked && renewal.records.is_empty() && renewal.expect == version);
    let renewed = applied(claimed.clone(), renewal);
    assert_eq!(
        claim_of(renewal),
        Some(Some(Claim {
            holder: 0,
            until: 5,
            epoch: 1,
        }))
    );
    assert_eq!(
        a.step(
            &config,
            Input::Renewed {
                version: renewed.version
            }
        ),
        [Effect::Remind { run, at: 4 }]
    );
    // The run's outcome is written on the version the renewal made.
    let mut b = a.clone();
    let effects = b.step(&config, done(run, Outcome::Success, Vec::new()));
    assert_eq!(
        patch(&effects).expect("the outcome").expect,
        renewed.version
    );
    // A renewal that does not land is sent again after the engine's wait,
    // and the run is cut at the claim's end if none lands by then.
    let effects = a.step(&config, Input::Tick { now: 4 });
    assert!(matches!(effects[0], Effect::Renew(_)), "{effects:?}");
    let failed_after = |engine: &Engine<Small>| match &engine.phase {
        Phase::Running {
            renewal: Some(Renewal::Failed { retry, wait, .. }),
            ..
        } => Some((*retry, *wait)),
        _ => None,
    };
    // Throttled: sent again when the server said.
    let mut throttled = a.clone();
    let retry_after = Some(3);
    throttled.step(&config, Input::RenewFailed { retry_after });
    assert_eq!(failed_after(&throttled), Some((7, 3)));
    assert_eq!(
        a.step(&config, Input::RenewFailed { retry_after: None }),
        [Effect::Remind { run, at: 5 }]
    );
    assert_eq!(failed_after(&a), Some((5, 1)));
    // Sent again at once on a newer version; failing again, it waits twice
    // as long.
    let mut again = a.clone();
    let newer = View {
        version: renewed.version + 1,
        ..renewed.clone()
    };
    let effects = again.step(&config, Input::Observed(newer));
    assert!(matches!(effects[0], Effect::Renew(_)), "{effects:?}");
    again.step(&config, Input::RenewFailed { retry_after: None });
    assert_eq!(failed_after(&again), Some((6, 2)));
    assert_eq!(
        a.step(&config, Input::Tick { now: 5 })[0],
        Effect::Cancel { run }
    );
}

/// The first invocation among `effects`: its handler and the diff-base it
/// was shown as the old essence.
fn invoked_with_old(effects: &[Effect<Small>]) -> Option<(Key, Option<Essence>)> {
    effects.iter().find_map(|e| match e {
        Effect::Invoke { handler, old, .. } => Some((*handler, *old)),
        _ => None,
    })
}

#[test]
fn a_create_handler_that_succeeded_should_not_run_again_and_the_update_handler_take_the_change() {
    // A create handler (h0), a field handler on spec.size (h1) and an
    // update handler (h2).
    let config = scenarios::create(Variant::Steadfast).config;
    let created = Essence([1, 0, 1]);
    let edited = Essence([3, 0, 1]);
    let mut engine = Engine::new(0, 0, 0);
    let first = view(1, created);
    let (run, key, _) = invoked(&engine.step(&config, Input::Listed(first.clone()))).unwrap();
    assert_eq!(key, Key::handler(0), "create runs first");
    // The object is edited while create runs: its patch is refused.
    let second = View {
        version: 2,
        essence: edited,
        ..first
    };
    assert_eq!(engine.step(&config, Input::Observed(second.clone())), []);
    let effects = engine.step(&config, done(run, Outcome::Success, Vec::new()));
    assert_eq!(patch(&effects).unwrap().expect, 1);
    let effects = engine.step(&config, Input::PatchConflict);
    assert_eq!(invoked(&effects), None, "create does not run again");
    let p = patch(&effects).expect("create's success goes onto the edited version");
    let record = p.records[0].1.clone().unwrap();
    assert_eq!(
        (p.records[0].0, record.outcome, record.seen),
        (
            Key::handler(0),
            Some(Final::Success),
            Some(Small::digest(&created, None))
        ),
        "recorded on the essence create saw"
    );
    // The field handler, then the update handler, run on the edit.
    let mut current = applied(second, p);
    let mut ran = Vec::new();
    loop {
        engine.step(
            &config,
            Input::PatchApplied {
                version: current.version,
            },
        );
        let effects = engine.step(&config, Input::Observed(current.clone()));
        match invoked_with_old(&effects) {
            Some((key, old)) => {
                let (run, _, essence) = invoked(&effects).unwrap();
                assert_eq!(essence, edited);
                ran.push((key, old));
                let effects = engine.step(&config, done(run, Outcome::Success, Vec::new()));
                current = applied(current, patch(&effects).unwrap());
            }
            None => break,
        }
        if current.diff_base.is_some() {
            break;
        }
    }
    assert_eq!(
        ran,
        [(Key::handler(1), None), (Key::handler(2), None)],
        "the field and update handlers take the edit; create never runs again"
    );
    assert_eq!(current.diff_base, Some(edited), "the creation is handled");
    assert!(
        current.progress.iter().next().is_none(),
        "and its records purged"
    );
}

#[test]
fn a_claim_should_be_left_to_end_by_itself_while_a_cancelled_run_may_go_on() {
    // seed641's handler, its episode given 2 ticks, under a claim of 3.
    let mut config = scenarios::seed641(Variant::Steadfast).config;
    config.handlers[0].timeout = 2;
    let release_after_cancel = |config: &Config<Small>| {
        let mut engine = Engine::new(0, 0, 0);
        let first = unclaimed(1, Essence([0, 1, 0]));
        let effects = engine.step(config, Input::Listed(first.clone()));
        let claimed = applied(first, patch(&effects).expect("the claim is taken"));
        engine.step(config, Input::PatchApplied { version: 2 });
        let (run, ..) = invoked(&engine.step(config, Input::Observed(claimed))).unwrap();
        let effects = engine.step(config, Input::Tick { now: 2 });
        assert_eq!(effects.first(), Some(&Effect::Cancel { run }));
        // The commit that gives the handler up.
        let commit = patch(&effects).expect("the handler is given up").clone();
        assert!(commit.diff_base.is_some(), "{commit:?}");
        claim_of(&commit)
    };
    assert_eq!(
        release_after_cancel(&config),
        None,
        "the claim is left to end by itself"
    );
    let without = without(&config, Rule::KeepClaimPastCancel);
    assert_eq!(
        release_after_cancel(&without),
        Some(None),
        "released at once"
    );
}
