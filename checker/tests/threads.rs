//! Exploring on several threads finds the same graph and the same verdicts
//! as on one; levels here are wide enough to be split between threads.

use steadfast_checker::{check, CheckOptions, Verdict};
use steadfast_spec::mutex::{Lock, LockVariant};

/// Without symmetry, so that the levels are wide.
fn options(threads: usize) -> CheckOptions {
    CheckOptions {
        threads,
        symmetry: false,
        ..CheckOptions::default()
    }
}

#[test]
fn threads_should_not_change_the_graph_or_the_verdicts() {
    for (variant, states, edges) in [
        (LockVariant::Filter, 14_844, 51_008),
        (LockVariant::VictimOnly, 2_181, 5_904),
    ] {
        let model = Lock::new(4, variant).unwrap();
        let one = check(&model, &options(1)).unwrap();
        let two = check(&model, &options(2)).unwrap();
        for report in [&one, &two] {
            assert_eq!(report.stats.unique_states, states, "{variant:?}");
            assert_eq!(report.stats.edges, edges, "{variant:?}");
            assert!(report.stopped.is_none());
        }
        let verdicts = |r: &steadfast_checker::Report<Lock>| -> Vec<Verdict> {
            r.properties.iter().map(|p| p.verdict).collect()
        };
        assert_eq!(verdicts(&one), verdicts(&two), "{variant:?}");
    }
}

#[test]
fn state_limit_should_stop_every_thread_count_with_unknown_verdicts() {
    let model = Lock::new(4, LockVariant::Filter).unwrap();
    for threads in [1, 2] {
        let options = CheckOptions {
            max_states: Some(5_000),
            ..options(threads)
        };
        let report = check(&model, &options).unwrap();
        assert!(report.stopped.is_some());
        assert!(report.stats.unique_states <= 5_000);
        assert!(report
            .properties
            .iter()
            .all(|p| p.verdict != Verdict::Violated));
        assert_eq!(
            report.property("a trying process enters").unwrap().verdict,
            Verdict::Unknown
        );
    }
}

/// A cube of side 40 walked one axis at a time up to its far corner, where
/// the walk stops: levels of the walk are wide enough to be split between
/// threads. Its code can be made to panic at one state.
struct Cube {
    breaks_at: Option<[u8; 3]>,
}

impl stateright::Model for Cube {
    type State = [u8; 3];
    type Action = usize;

    fn init_states(&self) -> Vec<[u8; 3]> {
        vec![[0; 3]]
    }

    fn actions(&self, state: &[u8; 3], actions: &mut Vec<usize>) {
        actions.extend((0..3).filter(|&axis| state[axis] < 39));
    }

    fn next_state(&self, state: &[u8; 3], axis: usize) -> Option<[u8; 3]> {
        assert!(
            Some(*state) != self.breaks_at,
            "the model broke at the centre"
        );
        let mut next = *state;
        next[axis] += 1;
        Some(next)
    }

    fn properties(&self) -> Vec<stateright::Property<Self>> {
        vec![
            stateright::Property::always("off the middle plane", |_, s: &[u8; 3]| {
                s.iter().map(|&c| u32::from(c)).sum::<u32>() != 60
            }),
            stateright::Property::sometimes("on the diagonal", |_, s: &[u8; 3]| {
                s[0] == s[1] && s[1] == s[2] && s[0] > 20
            }),
        ]
    }
}

impl steadfast_spec::TemporalModel for Cube {
    fn fairness(&self) -> Vec<steadfast_spec::Fairness<Self>> {
        // Each axis moves on its own, fairly: under TLA+'s stuttering a
        // walk may otherwise stop anywhere.
        vec![
            steadfast_spec::Fairness::weak("x", |&axis: &usize| axis == 0),
            steadfast_spec::Fairness::weak("y", |&axis: &usize| axis == 1),
            steadfast_spec::Fairness::weak("z", |&axis: &usize| axis == 2),
        ]
    }

    fn liveness(&self) -> Vec<steadfast_spec::Liveness<Self>> {
        vec![
            steadfast_spec::Liveness::eventually_always(
                "short of the far wall",
                |_, s: &[u8; 3]| s[0] < 39 || s[1] < 30,
            ),
            // Every walk ends in the far corner, where it stops.
            steadfast_spec::Liveness::leads_to(
                "the walk ends in the corner",
                |_, s: &[u8; 3]| *s == [0; 3],
                |_, s: &[u8; 3]| *s == [39; 3],
            ),
        ]
    }
}

#[test]
fn two_threads_should_find_the_same_evidence_as_one() {
    let cube = Cube { breaks_at: None };
    let one = check(&cube, &options(1)).unwrap().render();
    let two = check(&cube, &options(2)).unwrap().render();
    assert_eq!(one.stats.unique_states, 64_000);
    let verdicts: Vec<Verdict> = one.properties.iter().map(|p| p.verdict).collect();
    assert_eq!(
        verdicts,
        [
            Verdict::Violated,
            Verdict::Holds,
            Verdict::Violated,
            Verdict::Holds
        ]
    );
    // The same numbering gives the same shortest paths and lassos, step
    // for step, and the liveness searches run side by side report in
    // order.
    assert_eq!(one.properties, two.properties);
}

#[test]
fn a_panic_in_the_model_should_reach_the_caller_on_every_thread_count() {
    let cube = Cube {
        breaks_at: Some([20, 20, 20]),
    };
    for threads in [1, 2] {
        let panic = std::panic::catch_unwind(|| check(&cube, &options(threads)))
            .err()
            .unwrap_or_else(|| panic!("{threads} thread(s): the check returned"));
        let message = panic
            .downcast_ref::<String>()
            .map(String::as_str)
            .or_else(|| panic.downcast_ref::<&str>().copied());
        assert_eq!(message, Some("the model broke at the centre"), "{threads}");
    }
}
