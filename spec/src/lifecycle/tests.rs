//! Unit tests and property tests of the engine's transition function.

use proptest::prelude::*;

use super::engine::{Effect, Engine, Input, Outcome, Patch, Phase};
use super::handlers::{Config, HandlerSpec, On, SubPlan, Variant};
use super::model::scenarios;
use super::object::{Essence, Field, Final, Key, ObjectView, Progress};
use crate::trace_json::round_trip;

fn view(rv: u32, tick: u8) -> ObjectView {
    ObjectView {
        rv,
        essence: Essence([0, tick, 0]),
        deleting: false,
        finalizer: false,
        progress: Progress::default(),
        diff_base: None,
    }
}

fn config(variant: Variant) -> Config {
    scenarios::seed641(variant).config
}

fn invoked(effects: &[Effect]) -> Option<(Key, Essence)> {
    effects.iter().find_map(|e| match e {
        Effect::Invoke { key, essence } => Some((*key, *essence)),
        _ => None,
    })
}

fn patch(effects: &[Effect]) -> Option<&Patch> {
    effects.iter().find_map(|e| match e {
        Effect::Patch(p) => Some(p),
        _ => None,
    })
}

/// Applies a patch to a view the way the API server would.
fn applied(mut v: ObjectView, p: &Patch) -> ObjectView {
    for (key, record) in &p.records {
        v.progress.set(*key, *record);
    }
    if let Some(base) = p.diff_base {
        v.diff_base = Some(base);
    }
    if let Some((field, value)) = p.write {
        v.essence = v.essence.with(field, value);
    }
    if let Some(finalizer) = p.finalizer {
        v.finalizer = finalizer;
    }
    v.rv += 1;
    v
}

/// Runs `key` to success from `v` and returns the next version.
fn run_once(engine: &mut Engine, config: &Config, v: ObjectView) -> (Key, ObjectView) {
    let effects = engine.step(config, Input::Observed(v.clone()));
    let (key, _) = invoked(&effects).expect("a handler runs");
    let effects = engine.step(
        config,
        Input::HandlerDone {
            key,
            outcome: Outcome::Success,
        },
    );
    let p = patch(&effects).expect("its outcome is written").clone();
    let next = applied(v, &p);
    engine.step(config, Input::PatchApplied { rv: next.rv });
    (key, next)
}

#[test]
fn engine_should_run_one_subhandler_per_cycle_on_the_observed_tick() {
    let config = config(Variant::Steadfast);
    let mut engine = Engine::new();
    let effects = engine.step(&config, Input::Observed(view(1, 1)));
    assert_eq!(
        effects,
        vec![Effect::Invoke {
            key: Key::sub(0, 0),
            essence: Essence([0, 1, 0])
        }]
    );
    assert!(matches!(engine.phase, Phase::Running { .. }));
}

/// What runs after sub-handler 0 succeeded on tick 1 and the tick then
/// changed twice, the watch showing only the last change.
fn run_after_two_ticks(variant: Variant) -> Option<(Key, Essence)> {
    let config = config(variant);
    let mut engine = Engine::new();
    let (first, v) = run_once(&mut engine, &config, view(1, 1));
    assert_eq!(first, Key::sub(0, 0));
    let mut edited = v;
    edited.rv += 2;
    edited.essence = edited.essence.with(Field::Tick, 3);
    invoked(&engine.step(&config, Input::Observed(edited)))
}

#[test]
fn steadfast_should_rerun_a_subhandler_that_ran_on_an_older_tick() {
    let next = run_after_two_ticks(Variant::Steadfast);
    assert_eq!(next, Some((Key::sub(0, 0), Essence([0, 3, 0]))));
}

#[test]
fn kopf_should_treat_a_subhandler_finished_on_an_older_tick_as_done() {
    let next = run_after_two_ticks(Variant::Kopf);
    assert_eq!(next, Some((Key::sub(0, 1), Essence([0, 3, 0]))));
}

#[test]
fn commit_should_purge_records_and_set_the_diff_base_in_one_patch() {
    let config = config(Variant::Steadfast);
    let mut engine = Engine::new();
    let mut v = view(1, 1);
    for _ in 0..2 {
        v = run_once(&mut engine, &config, v).1;
    }
    let effects = engine.step(&config, Input::Observed(v.clone()));
    let (key, _) = invoked(&effects).unwrap();
    let effects = engine.step(
        &config,
        Input::HandlerDone {
            key,
            outcome: Outcome::Success,
        },
    );
    let p = patch(&effects).expect("a commit");
    assert_eq!(p.expect_rv, v.rv);
    assert_eq!(p.diff_base, Some(Essence([0, 1, 0])));
    assert!(
        p.records.iter().all(|(_, r)| r.is_none()),
        "every record purged"
    );
    assert_eq!(p.records.len(), 2, "the two records already written");
}

#[test]
fn conflict_should_wait_for_a_newer_version() {
    let config = config(Variant::Steadfast);
    let mut engine = Engine::new();
    let effects = engine.step(&config, Input::Observed(view(5, 1)));
    let (key, _) = invoked(&effects).unwrap();
    engine.step(
        &config,
        Input::HandlerDone {
            key,
            outcome: Outcome::Success,
        },
    );
    assert!(
        engine.step(&config, Input::PatchConflict).is_empty(),
        "the same version is not retried"
    );
    assert!(engine.step(&config, Input::Observed(view(5, 1))).is_empty());
    let effects = engine.step(&config, Input::Observed(view(6, 1)));
    assert_eq!(
        invoked(&effects).map(|(k, _)| k),
        Some(Key::sub(0, 0)),
        "the lost outcome is redone"
    );
}

#[test]
fn temporary_error_should_delay_then_retry_and_fail_at_the_limit() {
    let mut config = config(Variant::Steadfast);
    config.retry_limit = 2;
    let mut engine = Engine::new();
    let v = view(1, 1);
    engine.step(&config, Input::Observed(v.clone()));
    let effects = engine.step(
        &config,
        Input::HandlerDone {
            key: Key::sub(0, 0),
            outcome: Outcome::Temporary { delay: 2 },
        },
    );
    let p = patch(&effects).unwrap().clone();
    let record = p.records[0].1.unwrap();
    assert_eq!(record.delayed_until, Some(2));
    let v = applied(v, &p);
    engine.step(&config, Input::PatchApplied { rv: v.rv });
    // The other sub-handlers go first; then only the delayed one is left.
    let effects = engine.step(&config, Input::Observed(v.clone()));
    assert_eq!(invoked(&effects).map(|(k, _)| k), Some(Key::sub(0, 1)));
    let effects = engine.step(
        &config,
        Input::HandlerDone {
            key: Key::sub(0, 1),
            outcome: Outcome::Temporary { delay: 2 },
        },
    );
    let v = applied(v, patch(&effects).unwrap());
    engine.step(&config, Input::PatchApplied { rv: v.rv });
    engine.step(&config, Input::Observed(v.clone()));
    let effects = engine.step(
        &config,
        Input::HandlerDone {
            key: Key::sub(0, 2),
            outcome: Outcome::Success,
        },
    );
    let v = applied(v, patch(&effects).unwrap());
    engine.step(&config, Input::PatchApplied { rv: v.rv });
    let effects = engine.step(&config, Input::Observed(v.clone()));
    assert_eq!(
        effects,
        vec![Effect::WakeAt(2)],
        "nothing is due before t=2"
    );
    let effects = engine.step(&config, Input::Tick { now: 2 });
    let (key, _) = invoked(&effects).unwrap();
    let effects = engine.step(
        &config,
        Input::HandlerDone {
            key,
            outcome: Outcome::Temporary { delay: 2 },
        },
    );
    let p = patch(&effects).unwrap();
    let record = p
        .records
        .iter()
        .find(|(k, _)| *k == key)
        .unwrap()
        .1
        .unwrap();
    assert_eq!(
        record.outcome,
        Some(Final::Failure),
        "the retry limit is reached"
    );
}

#[test]
fn delete_handler_should_put_the_finalizer_on_first() {
    let config = scenarios::general(Variant::Steadfast).config;
    let mut engine = Engine::new();
    let effects = engine.step(&config, Input::Observed(view(1, 0)));
    assert_eq!(
        effects,
        vec![Effect::Patch(Patch {
            expect_rv: 1,
            checked: true,
            finalizer: Some(true),
            ..Patch::default()
        })]
    );
}

#[test]
fn self_write_should_not_make_its_writer_stale_under_steadfast() {
    let config = Config {
        variant: Variant::Steadfast,
        handlers: vec![HandlerSpec {
            name: "label",
            on: On::Create,
            subs: SubPlan::None,
            writes: Some(super::handlers::SelfWrite {
                target: Field::Label,
                source: Field::Spec,
            }),
        }],
        retry_limit: 3,
        timeout: 8,
    };
    let mut engine = Engine::new();
    let mut v = view(1, 0);
    v.essence = Essence([4, 0, 0]);
    engine.step(&config, Input::Observed(v.clone()));
    let effects = engine.step(
        &config,
        Input::HandlerDone {
            key: Key::handler(0),
            outcome: Outcome::Success,
        },
    );
    let p = patch(&effects).unwrap();
    assert_eq!(p.write, Some((Field::Label, 4)));
    assert_eq!(
        p.diff_base,
        Some(Essence([4, 0, 4])),
        "committed on the essence after the write"
    );
}

/// Inputs a driver might feed, in any order, including nonsense ones.
fn inputs() -> impl Strategy<Value = Vec<Input>> {
    let observed = (
        1u32..12,
        0u8..4,
        0u8..3,
        any::<bool>(),
        any::<bool>(),
        prop::option::of(0u8..4),
    )
        .prop_map(|(rv, spec, tick, deleting, finalizer, base)| {
            Input::Observed(ObjectView {
                rv,
                essence: Essence([spec, tick, spec]),
                deleting,
                finalizer,
                progress: Progress::default(),
                diff_base: base.map(|b| Essence([b, tick, b])),
            })
        });
    let outcome = prop_oneof![
        Just(Outcome::Success),
        (1u8..3).prop_map(|delay| Outcome::Temporary { delay }),
        Just(Outcome::Permanent),
    ];
    let done = (0u8..3, prop::option::of(0u8..3), outcome).prop_map(|(handler, sub, outcome)| {
        Input::HandlerDone {
            key: Key { handler, sub },
            outcome,
        }
    });
    let input = prop_oneof![
        3 => observed,
        3 => done,
        1 => (1u32..14).prop_map(|rv| Input::PatchApplied { rv }),
        1 => Just(Input::PatchConflict),
        1 => (0u8..6).prop_map(|now| Input::Tick { now }),
        1 => Just(Input::Gone),
    ];
    prop::collection::vec(input, 0..40)
}

proptest! {
    #[test]
    fn engine_should_keep_its_invariants_under_any_inputs(
        inputs in inputs(),
        steadfast in any::<bool>(),
    ) {
        let variant = if steadfast { Variant::Steadfast } else { Variant::Kopf };
        let config = scenarios::general(variant).config;
        let mut engine = Engine::new();
        let mut observed: Vec<ObjectView> = Vec::new();
        for input in inputs {
            // A resourceVersion names one content: a repeated version shows
            // what it showed the first time.
            let input = match input {
                Input::Observed(v) => Input::Observed(
                    observed.iter().find(|o| o.rv == v.rv).cloned().unwrap_or(v),
                ),
                other => other,
            };
            let running = matches!(engine.phase, Phase::Running { .. });
            // A patch stays in flight unless this input reports its end.
            let patching = matches!(engine.phase, Phase::Patching { .. })
                && !matches!(input, Input::PatchApplied { .. } | Input::PatchConflict);
            if let Input::Observed(v) = &input {
                if !observed.contains(v) {
                    observed.push(v.clone());
                }
            }
            let effects = engine.step(&config, input);
            let invokes = effects.iter().filter(|e| matches!(e, Effect::Invoke { .. })).count();
            prop_assert!(invokes <= 1, "one run at a time");
            prop_assert!(invokes == 0 || !running, "no run starts while one is in flight");
            let patches: Vec<&Patch> = effects.iter().filter_map(|e| match e {
                Effect::Patch(p) => Some(p),
                _ => None,
            }).collect();
            prop_assert!(patches.len() <= 1, "one patch per step");
            prop_assert!(patches.is_empty() || !patching, "no patch while one is in flight");
            for p in patches {
                let source = observed.iter().find(|v| v.rv == p.expect_rv);
                prop_assert!(source.is_some(), "a patch expects a version the engine saw");
                let source = source.unwrap();
                for (key, record) in &p.records {
                    let Some(seen) = record.and_then(|r| r.seen) else { continue };
                    let possible = [source.essence, config.after_write(*key, source.essence)];
                    prop_assert!(
                        possible.iter().any(|&e| config.digest(*key, e) == seen),
                        "record {:?} claims {:?}, never observed", key, seen
                    );
                }
                if let Some(base) = p.diff_base {
                    let possible = [source.essence, p.write.map_or(source.essence, |(f, v)| source.essence.with(f, v))];
                    prop_assert!(possible.contains(&base), "the diff-base is an essence the engine handled");
                }
            }
        }
    }
}

proptest! {
    /// A runtime records every input and effect as JSON lines and replays
    /// them: each must read back as it was written.
    #[test]
    fn every_input_and_effect_should_round_trip_through_json(
        inputs in inputs(),
        steadfast in any::<bool>(),
    ) {
        let variant = if steadfast { Variant::Steadfast } else { Variant::Kopf };
        let config = scenarios::general(variant).config;
        let mut engine = Engine::new();
        for input in inputs {
            prop_assert_eq!(&round_trip(&input), &input);
            for effect in engine.step(&config, input) {
                prop_assert_eq!(round_trip(&effect), effect);
            }
        }
    }
}

#[test]
fn a_cycle_with_nothing_to_write_should_go_on_to_the_newest_version() {
    // A resume handler runs after a restart on an object handled in full;
    // its success leaves nothing to write. Meanwhile deletion was asked
    // for: the delete handler must run next, with no patch to prompt it.
    let config = scenarios::general(Variant::Steadfast).config;
    let resume = (0..config.handlers.len() as u8)
        .find(|&h| config.handlers[usize::from(h)].on == On::Resume)
        .map(Key::handler)
        .expect("general has a resume handler");
    let cleanup = (0..config.handlers.len() as u8)
        .find(|&h| config.handlers[usize::from(h)].on == On::Delete)
        .map(Key::handler)
        .expect("general has a delete handler");
    let essence = Essence([1, 0, 1]);
    let handled = ObjectView {
        rv: 5,
        essence,
        deleting: false,
        finalizer: true,
        progress: Progress::default(),
        diff_base: Some(essence),
    };
    let mut engine = Engine::new();
    let effects = engine.step(&config, Input::Observed(handled.clone()));
    assert_eq!(invoked(&effects), Some((resume, essence)));
    let deleting = ObjectView {
        rv: 6,
        deleting: true,
        ..handled
    };
    assert_eq!(engine.step(&config, Input::Observed(deleting)), []);
    let effects = engine.step(
        &config,
        Input::HandlerDone {
            key: resume,
            outcome: Outcome::Success,
        },
    );
    assert_eq!(invoked(&effects), Some((cleanup, essence)), "{effects:?}");
}
