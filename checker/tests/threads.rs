//! Exploring on several threads finds the same graph and the same verdicts
//! as on one; levels here are wide enough to be split between threads.

use steadfast_checker::{check, CheckOptions, Verdict};
use steadfast_spec::mutex::{Lock, LockVariant};

fn options(threads: usize) -> CheckOptions {
    CheckOptions {
        threads,
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
            threads,
            max_states: Some(5_000),
            ..CheckOptions::default()
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

/// A cube of side 40 walked one axis at a time, whose code panics at one
/// state: levels of the walk are wide enough to be split between threads.
struct Breaks;

impl stateright::Model for Breaks {
    type State = [u8; 3];
    type Action = usize;

    fn init_states(&self) -> Vec<[u8; 3]> {
        vec![[0; 3]]
    }

    fn actions(&self, state: &[u8; 3], actions: &mut Vec<usize>) {
        actions.extend((0..3).filter(|&axis| state[axis] < 39));
    }

    fn next_state(&self, state: &[u8; 3], axis: usize) -> Option<[u8; 3]> {
        assert!(*state != [20, 20, 20], "the model broke at the centre");
        let mut next = *state;
        next[axis] += 1;
        Some(next)
    }
}

impl steadfast_spec::TemporalModel for Breaks {
    fn fairness(&self) -> Vec<steadfast_spec::Fairness<Self>> {
        Vec::new()
    }

    fn liveness(&self) -> Vec<steadfast_spec::Liveness<Self>> {
        Vec::new()
    }
}

#[test]
fn a_panic_in_the_model_should_reach_the_caller_on_every_thread_count() {
    for threads in [1, 2] {
        let panic = std::panic::catch_unwind(|| check(&Breaks, &options(threads)))
            .err()
            .unwrap_or_else(|| panic!("{threads} thread(s): the check returned"));
        let message = panic
            .downcast_ref::<String>()
            .map(String::as_str)
            .or_else(|| panic.downcast_ref::<&str>().copied());
        assert_eq!(message, Some("the model broke at the centre"), "{threads}");
    }
}
