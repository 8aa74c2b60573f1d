//! Known-answer tests of the liveness engine: tiny graphs whose verdicts and
//! lassos are known by hand.

mod common;

use common::{run, run_with, Act, Tiny};
use stateright::{Checker, Model, Property};
use steadfast_checker::{
    check, CheckOptions, Evidence, PropertyKind, Report, Stuttering, Verdict, DEADLOCK_PROPERTY,
};
use steadfast_spec::{Strength, TemporalModel};

/// The states of a lasso: the prefix (ending where the cycle starts) and the
/// cycle (ending back there), with the cycle's actions (`None`: stutter).
fn lasso(report: &Report<Tiny>, name: &str) -> (Vec<u8>, Vec<u8>, Vec<Option<char>>) {
    let property = report.property(name).expect("the property exists");
    assert_eq!(property.verdict, Verdict::Violated, "{name}");
    let Some(Evidence::Lasso { prefix, cycle, .. }) = &property.evidence else {
        panic!("{name}: a liveness violation comes with a lasso");
    };
    (
        prefix.steps.iter().map(|s| s.state).collect(),
        cycle.iter().map(|s| s.state).collect(),
        cycle
            .iter()
            .map(|s| s.action.map(|(_, a)| a.class))
            .collect(),
    )
}

fn verdict<M: Model>(report: &Report<M>, name: &str) -> Verdict {
    report.property(name).expect("the property exists").verdict
}

/// 0 → 2 → 4 → 2 → …: never odd.
fn even_loop() -> Tiny {
    Tiny::new(&[(0, 'a', 2), (2, 'a', 4), (4, 'a', 2)])
        .fair(&['a'])
        .trigger(&[0])
        .goal(&[1, 3, 5])
}

#[test]
fn loop_that_never_reaches_the_goal_should_be_violated_with_the_loop_as_cycle() {
    let report = run(&even_loop());
    let (prefix, cycle, _) = lasso(&report, "goal follows trigger");
    assert_eq!(prefix, vec![0, 2]);
    assert_eq!(cycle, vec![4, 2]);
    assert_eq!(verdict(&report, "below 100"), Verdict::Holds);
}

/// stateright's own `eventually`, on the same loop, for both checkers.
#[derive(Clone)]
struct EventuallyOdd(Tiny);

impl Model for EventuallyOdd {
    type State = u8;
    type Action = Act;

    fn init_states(&self) -> Vec<u8> {
        self.0.init_states()
    }

    fn actions(&self, state: &u8, actions: &mut Vec<Act>) {
        self.0.actions(state, actions)
    }

    fn next_state(&self, state: &u8, action: Act) -> Option<u8> {
        self.0.next_state(state, action)
    }

    fn properties(&self) -> Vec<Property<Self>> {
        vec![Property::eventually("eventually odd", |_, s: &u8| {
            s % 2 == 1
        })]
    }
}

impl TemporalModel for EventuallyOdd {}

#[test]
fn stateright_eventually_should_pass_the_loop_which_is_why_this_engine_exists() {
    let model = EventuallyOdd(even_loop());
    let checker = model.clone().checker().spawn_bfs().join();
    assert!(checker.is_done());
    assert!(
        checker.discovery("eventually odd").is_none(),
        "stateright now finds the loop: its eventually may have become sound"
    );

    let report = run(&model);
    let property = report.property("eventually odd").unwrap();
    assert_eq!(property.kind, PropertyKind::Eventually);
    assert_eq!(property.verdict, Verdict::Violated);
}

/// 0 ⇄ 1 by `b`, and `a` from either to the goal 9.
fn spin_or_finish() -> Tiny {
    Tiny::new(&[(0, 'b', 1), (1, 'b', 0), (0, 'a', 9), (1, 'a', 9)])
        .trigger(&[0])
        .goal(&[9])
}

#[test]
fn goal_reached_only_under_weak_fairness_should_need_the_declaration() {
    let unfair = run(&spin_or_finish());
    let (prefix, cycle, classes) = lasso(&unfair, "goal follows trigger");
    assert_eq!(prefix, vec![0]);
    assert_eq!(cycle, vec![0], "without fairness it may simply stay");
    assert_eq!(classes, vec![None]);

    // Fair spinning is not enough: `a` stays enabled.
    let spinning = run(&spin_or_finish().fair(&['b']));
    let (prefix, cycle, classes) = lasso(&spinning, "goal follows trigger");
    assert_eq!(prefix, vec![0]);
    assert_eq!(cycle, vec![1, 0]);
    assert_eq!(classes, vec![Some('b'), Some('b')]);

    let fair = run(&spin_or_finish().fair(&['a']));
    assert_eq!(verdict(&fair, "goal follows trigger"), Verdict::Holds);
    assert_eq!(verdict(&fair, "settles in goal"), Verdict::Holds);
}

#[test]
fn action_enabled_only_intermittently_on_a_cycle_should_not_be_forced() {
    // `a` is enabled at 0 but not at 1: weak fairness lets the cycle skip it.
    let model = Tiny::new(&[(0, 'b', 1), (1, 'b', 0), (0, 'a', 9)])
        .fair(&['a'])
        .trigger(&[0])
        .goal(&[9]);
    let report = run(&model);
    let (prefix, cycle, _) = lasso(&report, "goal follows trigger");
    assert_eq!(prefix, vec![0]);
    assert_eq!(cycle, vec![1, 0]);
}

#[test]
fn terminal_state_where_the_goal_is_false_should_stutter_into_a_violation() {
    let model = Tiny::new(&[(0, 'a', 1)])
        .fair(&['a'])
        .trigger(&[0])
        .goal(&[5]);
    let report = run(&model);
    let (prefix, cycle, classes) = lasso(&report, "goal follows trigger");
    assert_eq!(prefix, vec![0, 1]);
    assert_eq!(cycle, vec![1]);
    assert_eq!(classes, vec![None], "the cycle is a stutter step");
}

#[test]
fn without_fairness_a_behaviour_should_stutter_short_of_its_goal_as_in_tla() {
    // 0 → 1 and nothing else: TLC refuses ◇(x = 1) without fairness, since
    // the behaviour may stay at 0 forever.
    let model = Tiny::new(&[(0, 'a', 1)]).trigger(&[0]).goal(&[1]);
    let report = run(&model);
    let (prefix, cycle, classes) = lasso(&report, "goal follows trigger");
    assert_eq!((prefix, cycle, classes), (vec![0], vec![0], vec![None]));
    assert_eq!(verdict(&report, "settles in goal"), Verdict::Violated);

    // The old rule, only a stuck state stutters, assumes the step is taken.
    let forced = run_with(&model, Stuttering::WhenStuck);
    assert_eq!(verdict(&forced, "goal follows trigger"), Verdict::Holds);
    // Under TLA+'s rule, only declared fairness makes it so.
    let fair = run(&model.fair(&['a']));
    assert_eq!(verdict(&fair, "goal follows trigger"), Verdict::Holds);
}

#[test]
fn deadlock_should_be_reported_on_request_with_the_path_to_it() {
    // 2 has no successor; 3 loops on itself, which is a successor.
    let model = Tiny::new(&[(0, 'a', 1), (1, 'a', 2), (0, 'b', 3), (3, 'b', 3)]);
    let unasked = run(&model);
    assert!(
        unasked.property(DEADLOCK_PROPERTY).is_none(),
        "off by default"
    );

    let options = CheckOptions {
        threads: 1,
        deadlock: true,
        ..CheckOptions::default()
    };
    let report = check(&model, &options).unwrap();
    let property = report.property(DEADLOCK_PROPERTY).unwrap();
    assert_eq!(
        (property.kind, property.verdict),
        (PropertyKind::Deadlock, Verdict::Violated)
    );
    let Some(Evidence::Path(path)) = &property.evidence else {
        panic!("a deadlock comes with the path to it");
    };
    let states: Vec<u8> = path.steps.iter().map(|s| s.state).collect();
    assert_eq!(states, [0, 1, 2]);

    let live = Tiny::new(&[(0, 'a', 1), (1, 'a', 0)]);
    let report = check(&live, &options).unwrap();
    assert_eq!(verdict(&report, DEADLOCK_PROPERTY), Verdict::Holds);
}

#[test]
fn leads_to_should_demand_a_response_to_every_trigger() {
    // P at 0 and 2; Q at 1 only. From 2 the run may go back to 1 or end at 3.
    let answered = Tiny::new(&[(0, 'a', 1), (1, 'a', 2), (2, 'a', 1)])
        .fair(&['a'])
        .trigger(&[0, 2])
        .goal(&[1]);
    assert_eq!(
        verdict(&run(&answered), "goal follows trigger"),
        Verdict::Holds
    );

    let second_unanswered = Tiny::new(&[(0, 'a', 1), (1, 'a', 2), (2, 'a', 3)])
        .fair(&['a'])
        .trigger(&[0, 2])
        .goal(&[1]);
    let report = run(&second_unanswered);
    let (prefix, cycle, _) = lasso(&report, "goal follows trigger");
    assert_eq!(prefix, vec![0, 1, 2, 3], "the first trigger was answered");
    assert_eq!(cycle, vec![3]);
}

#[test]
fn model_where_everything_holds_should_be_proven() {
    let model = Tiny::new(&[(0, 'b', 1), (1, 'a', 2), (2, 'a', 2), (0, 'a', 2)])
        .fair(&['a', 'b'])
        .trigger(&[0, 1])
        .goal(&[2]);
    let report = run(&model);
    assert!(report.stopped.is_none());
    assert!(report.all_hold(), "every verdict holds");
    assert_eq!(report.stats.unique_states, 3);
}

#[test]
fn bound_should_leave_verdicts_unknown_never_proven() {
    let model = spin_or_finish().fair(&['a']);
    let options = CheckOptions {
        threads: 1,
        max_states: Some(2),
        ..CheckOptions::default()
    };
    let report = check(&model, &options).unwrap();
    assert!(report.stopped.is_some());
    assert_eq!(verdict(&report, "goal follows trigger"), Verdict::Unknown);
    assert_eq!(verdict(&report, "below 100"), Verdict::Unknown);
}

#[test]
fn violation_found_before_a_bound_should_still_be_reported() {
    let model = Tiny::new(&[(0, 'b', 1), (1, 'b', 0), (1, 'a', 2), (2, 'a', 3)])
        .fair(&['b'])
        .trigger(&[0])
        .goal(&[9]);
    let options = CheckOptions {
        threads: 1,
        max_states: Some(3),
        ..CheckOptions::default()
    };
    let report = check(&model, &options).unwrap();
    assert!(report.stopped.is_some());
    let (_, cycle, _) = lasso(&report, "goal follows trigger");
    assert_eq!(cycle, vec![1, 0]);
}

#[test]
fn intermittently_enabled_action_should_be_forced_by_strong_fairness_only() {
    // `a` leaves the 0 ⇄ 1 loop for the goal, but is enabled at 0 only.
    let model = |strong: bool| {
        let tiny = Tiny::new(&[(0, 'b', 1), (1, 'b', 0), (0, 'a', 9)])
            .trigger(&[0])
            .goal(&[9]);
        if strong {
            tiny.fair(&['b']).strong(&['a'])
        } else {
            tiny.fair(&['a', 'b'])
        }
    };
    let weak = run(&model(false));
    let (prefix, cycle, classes) = lasso(&weak, "goal follows trigger");
    assert_eq!((prefix, cycle), (vec![0], vec![1, 0]));
    assert_eq!(classes, vec![Some('b'), Some('b')]);
    assert_eq!(verdict(&weak, "goal again and again"), Verdict::Violated);

    let strong = run(&model(true));
    assert_eq!(verdict(&strong, "goal follows trigger"), Verdict::Holds);
    assert_eq!(verdict(&strong, "settles in goal"), Verdict::Holds);
}

#[test]
fn infinitely_often_should_fail_on_a_fair_cycle_that_avoids_it() {
    // 0 ⇄ 1 visits the goal 1; 0 ⇄ 2 does not, and `a` is disabled at 2.
    let model = Tiny::new(&[(0, 'a', 1), (1, 'a', 0), (0, 'b', 2), (2, 'b', 0)])
        .fair(&['a', 'b'])
        .goal(&[1]);
    let report = run(&model);
    let (prefix, cycle, classes) = lasso(&report, "goal again and again");
    assert_eq!((prefix, cycle), (vec![0], vec![2, 0]));
    assert_eq!(classes, vec![Some('b'), Some('b')]);
    assert_eq!(
        verdict(&report, "settles in goal"),
        Verdict::Violated,
        "never settling is not the point: leaving is"
    );

    let strong = run(&model.fair(&['b']).strong(&['a']));
    assert_eq!(verdict(&strong, "goal again and again"), Verdict::Holds);
    assert_eq!(verdict(&strong, "settles in goal"), Verdict::Violated);
}

/// A relay of many stages, each moved on by a class of its own: the relay
/// ends only if every stage is fair.
#[derive(Clone)]
struct Relay {
    stages: usize,
    lazy: Option<usize>,
}

/// Whether `action` is the step of stage `10 * T + U`: fairness classes are
/// plain functions, so each stage needs one of its own.
fn is_stage<const T: usize, const U: usize>(action: &usize) -> bool {
    *action == 10 * T + U
}

macro_rules! stages {
    ($($t:literal)*; $units:tt) => {
        [$(stages!(@row $t $units)),*].concat()
    };
    (@row $t:literal [$($u:literal)*]) => {
        vec![$(is_stage::<$t, $u> as fn(&usize) -> bool),*]
    };
}

fn stage_classes() -> Vec<fn(&usize) -> bool> {
    stages!(0 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 19 20 21 22 23 24 25; [0 1 2 3 4 5 6 7 8 9])
}

impl Model for Relay {
    type State = usize;
    type Action = usize;

    fn init_states(&self) -> Vec<usize> {
        vec![0]
    }

    fn actions(&self, state: &usize, actions: &mut Vec<usize>) {
        if *state < self.stages {
            actions.push(*state);
        }
    }

    fn next_state(&self, state: &usize, _: usize) -> Option<usize> {
        Some(state + 1)
    }
}

impl TemporalModel for Relay {
    fn fairness(&self) -> Vec<steadfast_spec::Fairness<Self>> {
        stage_classes()
            .into_iter()
            .take(self.stages)
            .enumerate()
            .filter(|&(stage, _)| Some(stage) != self.lazy)
            .map(|(_, class)| steadfast_spec::Fairness::weak("stage", class))
            .collect()
    }

    fn liveness(&self) -> Vec<steadfast_spec::Liveness<Self>> {
        vec![steadfast_spec::Liveness::leads_to(
            "the relay ends",
            |_, s: &usize| *s == 0,
            |m: &Relay, s: &usize| *s == m.stages,
        )]
    }
}

#[test]
fn many_fairness_classes_should_each_count() {
    for stages in [40, 64, 65, 256] {
        let fair = Relay { stages, lazy: None };
        assert_eq!(fair.fairness().len(), stages);
        assert_eq!(
            verdict(&run(&fair), "the relay ends"),
            Verdict::Holds,
            "{stages}"
        );

        let lazy = Relay {
            stages,
            lazy: Some(stages - 3),
        };
        let report = run(&lazy);
        let property = report.property("the relay ends").unwrap();
        assert_eq!(property.verdict, Verdict::Violated, "{stages}");
        let Some(Evidence::Lasso { prefix, cycle, .. }) = &property.evidence else {
            panic!("a lasso");
        };
        assert_eq!(
            prefix.steps.last().unwrap().state,
            stages - 3,
            "it stops at the lazy stage"
        );
        assert_eq!(cycle.len(), 1, "and stays there");
    }
    let too_many = Relay {
        stages: 257,
        lazy: None,
    };
    assert!(stage_classes().len() >= 257);
    let error = check(&too_many, &CheckOptions::default()).err().unwrap();
    assert!(
        error.to_string().contains("257 fairness classes"),
        "{error}"
    );
}

/// Two-phase commit explored whole gives TLC's counts for Lamport's
/// `TwoPhase` (288 states for 3 RMs, 8,832 for 5), and each broken TM
/// breaks the property it exists for: `hasty` consistency, `no-abort` the
/// RMs' deciding (and not consistency), while the protocol proves both.
#[test]
fn two_phase_commit_should_match_tlc_and_fail_only_where_its_tm_is_broken() {
    use steadfast_spec::twophase::{TmVariant, TwoPhase};
    let whole = CheckOptions {
        symmetry: false,
        ..CheckOptions::default()
    };
    for (rms, states) in [(3, 288), (5, 8_832)] {
        let model = TwoPhase::new(rms, TmVariant::TwoPhase).unwrap();
        let report = check(&model, &whole).unwrap();
        assert_eq!(report.stats.unique_states, states, "{rms} RMs");
    }
    for (variant, consistent, decides) in [
        (TmVariant::TwoPhase, Verdict::Holds, Verdict::Holds),
        (TmVariant::Hasty, Verdict::Violated, Verdict::Violated),
        (TmVariant::NoAbort, Verdict::Holds, Verdict::Violated),
    ] {
        let report = check(&TwoPhase::new(3, variant).unwrap(), &whole).unwrap();
        assert_eq!(verdict(&report, "consistent"), consistent, "{variant:?}");
        assert_eq!(verdict(&report, "every RM decides"), decides, "{variant:?}");
        assert_eq!(
            verdict(&report, "some commit"),
            Verdict::Holds,
            "{variant:?}"
        );
    }
}

/// 0 → 2 ⇄ 4, and 2 → 1 by `b`: with `b` weakly fair the loop between 2
/// and 4 is fair (it finds `b` disabled at 4); with `b` strongly fair it is
/// not (`b` is enabled at 2 on every turn), and 1 is reached.
fn loop_beside_an_exit() -> Tiny {
    Tiny::new(&[(0, 'a', 2), (2, 'a', 4), (4, 'a', 2), (2, 'b', 1)])
        .trigger(&[0])
        .goal(&[1])
}

#[test]
fn a_lasso_should_say_which_classes_its_cycle_takes_and_finds_disabled() {
    let report = run(&loop_beside_an_exit().fair(&['a', 'b']));
    let property = report.property("goal follows trigger").unwrap();
    let Some(Evidence::Lasso {
        prefix,
        cycle,
        fairness,
        ..
    }) = &property.evidence
    else {
        panic!("a lasso");
    };
    assert_eq!(prefix.steps.last().unwrap().state, 2);
    assert_eq!(cycle.iter().map(|s| s.state).collect::<Vec<_>>(), [4, 2]);
    // The cycle's states are 2 (state 0) and 4 (state 1); both its steps
    // take `a`, and `b` is disabled at 4.
    let seen: Vec<(Strength, Vec<usize>, Vec<usize>)> = fairness
        .iter()
        .map(|class| (class.strength, class.taken.clone(), class.disabled.clone()))
        .collect();
    assert_eq!(
        seen,
        [
            (Strength::Weak, vec![1, 2], vec![]),
            (Strength::Weak, vec![], vec![1]),
        ]
    );
    assert!(fairness.iter().all(|class| class.fair(cycle.len())));

    let strong = run(&loop_beside_an_exit().fair(&['a']).strong(&['b']));
    assert_eq!(verdict(&strong, "goal follows trigger"), Verdict::Holds);

    // A strongly fair class never enabled on the cycle: disabled in every
    // state of it.
    let report = run(&even_loop().fair(&['a']).strong(&['b']));
    let property = report.property("goal follows trigger").unwrap();
    let Some(Evidence::Lasso {
        cycle, fairness, ..
    }) = &property.evidence
    else {
        panic!("a lasso");
    };
    assert_eq!(fairness[1].strength, Strength::Strong);
    assert_eq!(fairness[1].disabled, (0..cycle.len()).collect::<Vec<_>>());
    assert!(fairness[1].fair(cycle.len()));
    assert!(!fairness[1].fair(cycle.len() + 1));
}

/// 0 → 1 → 2 → 3 while exploring; once explored, it takes no more steps:
/// its steps depend on how often they were asked for, not on the state.
#[derive(Default)]
struct Forgetful {
    steps: std::sync::atomic::AtomicUsize,
}

impl Model for Forgetful {
    type State = u8;
    type Action = ();

    fn init_states(&self) -> Vec<u8> {
        vec![0]
    }

    fn actions(&self, state: &u8, actions: &mut Vec<()>) {
        if *state < 3 {
            actions.push(());
        }
    }

    fn next_state(&self, state: &u8, _: ()) -> Option<u8> {
        let taken = self
            .steps
            .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        (taken < 3).then_some(state + 1)
    }

    fn properties(&self) -> Vec<Property<Self>> {
        vec![Property::always("below 3", |_, s: &u8| *s < 3)]
    }
}

impl TemporalModel for Forgetful {}

#[test]
fn a_counterexample_whose_rebuilt_path_ends_elsewhere_should_be_refused() {
    for safety_only in [false, true] {
        let options = CheckOptions {
            threads: 1,
            safety_only,
            ..CheckOptions::default()
        };
        let Err(refused) = check(&Forgetful::default(), &options) else {
            panic!("a path that ends elsewhere was reported as a counterexample");
        };
        assert_eq!(
            refused,
            steadfast_checker::CheckError::Unrepeatable {
                property: "below 3"
            }
        );
        assert!(refused.to_string().contains("depend on the state alone"));
    }
}
