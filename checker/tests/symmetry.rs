//! Symmetry reduction against the full graph, on random symmetric models
//! with fairness per process, and on declarations that are not symmetries.
//!
//! The reference is the engine without reduction, which
//! `random_graphs.rs` checks against brute force. A reduced check must give
//! every verdict the full one gives, and each lasso it shows is rebuilt
//! through the model's steps and validated (fair, closed, violating) before
//! it is returned, or the check fails.

use proptest::prelude::*;
use stateright::{Model, Property};
use steadfast_checker::{check, CheckError, CheckOptions, Evidence, Report, Verdict};
use steadfast_spec::mutex::{Lock, LockAction, LockState, LockVariant};
use steadfast_spec::twophase::{TmVariant, TwoPhase, TwoPhaseAction, TwoPhaseState};
use steadfast_spec::{Fairness, Interchangeable, Liveness, Renaming, TemporalModel};

/// The most processes of a [`Ring`].
const MOST: usize = 3;

/// What a rule asks of the shared owner before it runs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Guard {
    Always,
    /// No process owns it.
    Free,
    /// The process itself owns it.
    Mine,
}

/// What a rule does to the shared owner.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Effect {
    Keep,
    Take,
    Release,
}

/// A step of a process's program: from a local state, under a guard, to a
/// local state, with an effect, in class `a` (0) or `b` (1).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Rule {
    from: u8,
    guard: Guard,
    to: u8,
    effect: Effect,
    class: u8,
}

/// Processes running one random program over a shared owner variable,
/// which names a process: every renaming of the processes is a symmetry,
/// of the processes other than 0 when `fix_zero` (and the properties then
/// read process 0).
#[derive(Clone, Debug)]
struct Ring {
    processes: u8,
    rules: Vec<Rule>,
    /// Per class (`a`, `b`): unfair (' '), weak ('w') or strong ('s').
    strengths: [char; 2],
    trigger: u8,
    goal: u8,
    fix_zero: bool,
}

#[derive(Clone, Debug, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
struct RingState {
    local: [u8; MOST],
    /// A process, or `NOBODY`.
    owner: u8,
}

const NOBODY: u8 = u8::MAX;

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
struct Step {
    process: u8,
    rule: u8,
    class: u8,
}

impl Ring {
    /// Whether process 0 (when fixed) or some process is at `local`.
    fn at(&self, s: &RingState, local: u8) -> bool {
        if self.fix_zero {
            s.local[0] == local
        } else {
            s.local[..usize::from(self.processes)].contains(&local)
        }
    }
}

impl Model for Ring {
    type State = RingState;
    type Action = Step;

    fn init_states(&self) -> Vec<RingState> {
        vec![RingState {
            local: [0; MOST],
            owner: NOBODY,
        }]
    }

    fn actions(&self, s: &RingState, actions: &mut Vec<Step>) {
        for process in 0..self.processes {
            for (k, rule) in self.rules.iter().enumerate() {
                let guard = match rule.guard {
                    Guard::Always => true,
                    Guard::Free => s.owner == NOBODY,
                    Guard::Mine => s.owner == process,
                };
                if s.local[usize::from(process)] == rule.from && guard {
                    actions.push(Step {
                        process,
                        rule: k as u8,
                        class: rule.class,
                    });
                }
            }
        }
    }

    fn next_state(&self, s: &RingState, step: Step) -> Option<RingState> {
        let rule = self.rules[usize::from(step.rule)];
        let mut next = s.clone();
        next.local[usize::from(step.process)] = rule.to;
        match rule.effect {
            Effect::Keep => {}
            Effect::Take => next.owner = step.process,
            Effect::Release => next.owner = NOBODY,
        }
        Some(next)
    }

    fn properties(&self) -> Vec<Property<Self>> {
        vec![Property::always(
            "one owner at most",
            |m: &Ring, s: &RingState| s.owner == NOBODY || s.owner < m.processes,
        )]
    }
}

/// A fairness class's name and its actions.
type NamedClass = (&'static str, fn(&Step) -> bool);

/// Whether `step` is in class `L` of process `P`.
fn class_of<const P: u8, const L: u8>(step: &Step) -> bool {
    step.process == P && step.class == L
}

impl TemporalModel for Ring {
    fn fairness(&self) -> Vec<Fairness<Self>> {
        let classes: [[NamedClass; 2]; MOST] = [
            [("a of 0", class_of::<0, 0>), ("b of 0", class_of::<0, 1>)],
            [("a of 1", class_of::<1, 0>), ("b of 1", class_of::<1, 1>)],
            [("a of 2", class_of::<2, 0>), ("b of 2", class_of::<2, 1>)],
        ];
        let mut fairness = Vec::new();
        for (process, pair) in classes.iter().enumerate().take(usize::from(self.processes)) {
            for (letter, &(name, class)) in pair.iter().enumerate() {
                let declared = match self.strengths[letter] {
                    'w' => Fairness::weak(name, class),
                    's' => Fairness::strong(name, class),
                    _ => continue,
                };
                let first = u8::from(self.fix_zero);
                fairness.push(if process as u8 >= first {
                    declared.of(0, process as u8)
                } else {
                    declared
                });
            }
        }
        fairness
    }

    fn liveness(&self) -> Vec<Liveness<Self>> {
        vec![
            Liveness::leads_to(
                "goal follows trigger",
                |m: &Ring, s: &RingState| m.at(s, m.trigger),
                |m: &Ring, s: &RingState| m.at(s, m.goal),
            ),
            Liveness::eventually_always("settles in goal", |m: &Ring, s: &RingState| {
                m.at(s, m.goal)
            }),
            Liveness::infinitely_often("goal again and again", |m: &Ring, s: &RingState| {
                m.at(s, m.goal)
            }),
        ]
    }

    fn interchangeable(&self) -> Vec<Interchangeable> {
        vec![Interchangeable::new(
            "process",
            u8::from(self.fix_zero)..self.processes,
        )]
    }

    fn rename(&self, s: &RingState, renaming: &Renaming) -> RingState {
        let mut renamed = s.clone();
        for process in 0..self.processes {
            renamed.local[usize::from(renaming.id(0, process))] = s.local[usize::from(process)];
        }
        renamed.owner = renaming.id(0, s.owner);
        renamed
    }
}

fn options(symmetry: bool) -> CheckOptions {
    CheckOptions {
        threads: 1,
        symmetry,
        ..CheckOptions::default()
    }
}

fn verdicts<M: Model>(report: &Report<M>) -> Vec<(&'static str, Verdict)> {
    report
        .properties
        .iter()
        .map(|p| (p.name, p.verdict))
        .collect()
}

fn rings() -> impl Strategy<Value = Ring> {
    let locals = 3u8;
    let guard = prop::sample::select(vec![Guard::Always, Guard::Free, Guard::Mine]);
    let effect = prop::sample::select(vec![Effect::Keep, Effect::Take, Effect::Release]);
    let rule = (0..locals, guard, 0..locals, effect, 0u8..2).prop_map(
        |(from, guard, to, effect, class)| Rule {
            from,
            guard,
            to,
            effect,
            class,
        },
    );
    let strength = prop::sample::select(vec![' ', 'w', 's']);
    (
        2u8..=3,
        prop::collection::vec(rule, 1..=4),
        [strength.clone(), strength],
        0..locals,
        0..locals,
        any::<bool>(),
    )
        .prop_map(
            |(processes, rules, strengths, trigger, goal, fix_zero)| Ring {
                processes,
                rules,
                strengths,
                trigger,
                goal,
                fix_zero: fix_zero && processes == 3,
            },
        )
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(2000))]

    #[test]
    fn reduction_should_give_every_verdict_the_full_graph_gives(ring in rings()) {
        let full = check(&ring, &options(false)).unwrap();
        let reduced = check(&ring, &options(true)).unwrap();
        prop_assert_eq!(verdicts(&reduced), verdicts(&full), "{:?}", ring);
        prop_assert!(reduced.stats.unique_states <= full.stats.unique_states);
        for property in &reduced.properties {
            if let Some(Evidence::Lasso { prefix, cycle, .. }) = &property.evidence {
                // Shown from the model's own initial state.
                prop_assert_eq!(&prefix.steps[0].state, &ring.init_states()[0]);
                prop_assert_eq!(&cycle.last().unwrap().state, &prefix.steps.last().unwrap().state);
            }
        }
    }
}

#[test]
fn the_lock_should_keep_its_verdicts_reduced_and_shrink() {
    for (processes, variant) in [
        (3, LockVariant::Filter),
        (4, LockVariant::Filter),
        (3, LockVariant::VictimOnly),
        (4, LockVariant::VictimOnly),
    ] {
        let lock = Lock::new(processes, variant).unwrap();
        let full = check(&lock, &options(false)).unwrap();
        let reduced = check(&lock, &options(true)).unwrap();
        assert_eq!(
            verdicts(&reduced),
            verdicts(&full),
            "{processes} {variant:?}"
        );
        // Two or six renamings: the graph shrinks by nearly that much.
        assert!(
            reduced.stats.unique_states * 10 < full.stats.unique_states * 6,
            "{processes} {variant:?}: {} of {}",
            reduced.stats.unique_states,
            full.stats.unique_states
        );
    }
}

/// The lock with a renaming that is not a symmetry of it, in one of three
/// ways.
struct Broken {
    lock: Lock,
    how: Breakage,
}

#[derive(Clone, Copy, Debug)]
enum Breakage {
    /// The victims keep their old names.
    VictimsNotRenamed,
    /// Process 0, which the liveness property names, is declared
    /// interchangeable too.
    NamedProcessRenamed,
    /// Process 2 is declared with no fairness class, processes 1 and 3 with
    /// one.
    FairnessMissing,
}

impl Model for Broken {
    type State = LockState;
    type Action = LockAction;

    fn init_states(&self) -> Vec<LockState> {
        self.lock.init_states()
    }

    fn actions(&self, s: &LockState, actions: &mut Vec<LockAction>) {
        self.lock.actions(s, actions);
    }

    fn next_state(&self, s: &LockState, action: LockAction) -> Option<LockState> {
        self.lock.next_state(s, action)
    }

    fn properties(&self) -> Vec<Property<Self>> {
        Vec::new()
    }
}

impl TemporalModel for Broken {
    fn fairness(&self) -> Vec<Fairness<Self>> {
        let mut classes = vec![
            Fairness::weak("process 1", LockAction::is_lock_step_of::<1>).of(0, 1),
            Fairness::weak("process 2", LockAction::is_lock_step_of::<2>).of(0, 2),
            Fairness::weak("process 3", LockAction::is_lock_step_of::<3>).of(0, 3),
        ];
        match self.how {
            Breakage::FairnessMissing => {
                classes.remove(1);
            }
            Breakage::NamedProcessRenamed => {
                classes.push(Fairness::weak("process 0", LockAction::is_lock_step_of::<0>).of(0, 0))
            }
            Breakage::VictimsNotRenamed => classes.push(Fairness::weak(
                "process 0",
                LockAction::is_lock_step_of::<0>,
            )),
        }
        classes
    }

    fn liveness(&self) -> Vec<Liveness<Self>> {
        vec![Liveness::leads_to(
            "process 0 enters",
            |_, s: &LockState| s.pc[0].is_trying(),
            |_, s: &LockState| s.pc[0].is_critical(),
        )]
    }

    fn interchangeable(&self) -> Vec<Interchangeable> {
        let first = match self.how {
            Breakage::NamedProcessRenamed => 0,
            _ => 1,
        };
        vec![Interchangeable::new("process", first..4)]
    }

    fn rename(&self, s: &LockState, renaming: &Renaming) -> LockState {
        let mut renamed = self.lock.rename(s, renaming);
        if let Breakage::VictimsNotRenamed = self.how {
            renamed.victim = s.victim;
        }
        renamed
    }
}

#[test]
fn a_renaming_that_is_not_a_symmetry_should_be_refused_naming_what_it_breaks() {
    let lock = Lock::new(4, LockVariant::Filter).unwrap();
    for (how, expected) in [
        (
            Breakage::VictimsNotRenamed,
            "the renamed state's steps are not the state's steps renamed",
        ),
        (
            Breakage::NamedProcessRenamed,
            "\"process 0 enters\" changes its value",
        ),
        (Breakage::FairnessMissing, "has no such class"),
    ] {
        let broken = Broken {
            lock: lock.clone(),
            how,
        };
        let error = check(&broken, &options(true)).err();
        let text = error.as_ref().map(ToString::to_string).unwrap_or_default();
        assert!(text.contains(expected), "{how:?}: {text}");
        assert!(
            matches!(
                error,
                Some(CheckError::NotSymmetric { .. } | CheckError::AsymmetricFairness(_))
            ),
            "{how:?}"
        );
        // Without reduction, the same model is checked as it is.
        assert!(check(&broken, &options(false)).is_ok(), "{how:?}");
    }
}

#[test]
fn two_phase_commit_should_keep_its_verdicts_under_its_own_canonical_form() {
    for rms in 2..=6 {
        for variant in [TmVariant::TwoPhase, TmVariant::Hasty, TmVariant::NoAbort] {
            let model = TwoPhase::new(rms, variant).unwrap();
            let full = check(&model, &options(false)).unwrap();
            let reduced = check(&model, &options(true)).unwrap();
            assert_eq!(verdicts(&reduced), verdicts(&full), "{rms} {variant:?}");
            assert!(
                reduced.stats.unique_states < full.stats.unique_states,
                "{rms} {variant:?}"
            );
        }
    }
}

/// Two-phase commit whose canonical form sorts the RMs by their state
/// alone: two RMs in one state whose votes differ are left in the order
/// they came, so two renamings of a state get different forms.
struct CoarseForm(TwoPhase);

impl Model for CoarseForm {
    type State = TwoPhaseState;
    type Action = TwoPhaseAction;

    fn init_states(&self) -> Vec<TwoPhaseState> {
        self.0.init_states()
    }

    fn actions(&self, s: &TwoPhaseState, actions: &mut Vec<TwoPhaseAction>) {
        self.0.actions(s, actions);
    }

    fn next_state(&self, s: &TwoPhaseState, action: TwoPhaseAction) -> Option<TwoPhaseState> {
        self.0.next_state(s, action)
    }
}

impl TemporalModel for CoarseForm {
    fn interchangeable(&self) -> Vec<Interchangeable> {
        self.0.interchangeable()
    }

    fn rename(&self, s: &TwoPhaseState, renaming: &Renaming) -> TwoPhaseState {
        self.0.rename(s, renaming)
    }

    fn canonical(&self, s: &TwoPhaseState) -> Option<(TwoPhaseState, Renaming)> {
        let rms = self.0.interchangeable()[0].ids.len();
        let mut order: Vec<u8> = (0..rms as u8).collect();
        order.sort_by_key(|&i| s.rm[usize::from(i)]);
        let mut images = vec![0; rms];
        for (place, &i) in order.iter().enumerate() {
            images[usize::from(i)] = place as u8;
        }
        let renaming = Renaming::from_images(&self.0.interchangeable(), vec![images])?;
        Some((self.rename(s, &renaming), renaming))
    }
}

#[test]
fn a_canonical_form_that_tells_renamings_apart_should_be_refused() {
    let coarse = CoarseForm(TwoPhase::new(3, TmVariant::TwoPhase).unwrap());
    let text = check(&coarse, &options(true))
        .err()
        .map(|e| e.to_string())
        .unwrap_or_default();
    assert!(
        text.contains("the renamed state has another canonical form than the state"),
        "{text}"
    );
    assert!(check(&coarse, &options(false)).is_ok());
}
