//! A tiny model for tests: a graph written out edge by edge, with the state
//! sets its properties talk about.

// Each test binary compiles this module and uses a part of it.
#![allow(dead_code)]

use stateright::{Model, Property};
use steadfast_checker::{check, CheckOptions, CheckableState, Report, Stuttering};
use steadfast_spec::{Fairness, Liveness, TemporalModel};

/// A step of a tiny graph: its class (a letter) and the state it leads to.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Act {
    pub class: char,
    pub to: u8,
}

/// A graph written out edge by edge, with the state sets that its
/// properties talk about.
#[derive(Clone, Debug, Default)]
pub struct Tiny {
    pub edges: Vec<(u8, char, u8)>,
    /// Weakly fair classes.
    pub fair: Vec<char>,
    /// Strongly fair classes.
    pub strong: Vec<char>,
    pub trigger: Vec<u8>,
    pub goal: Vec<u8>,
}

impl Tiny {
    pub fn new(edges: &[(u8, char, u8)]) -> Self {
        Tiny {
            edges: edges.to_vec(),
            ..Tiny::default()
        }
    }

    pub fn fair(mut self, classes: &[char]) -> Self {
        self.fair = classes.to_vec();
        self
    }

    pub fn strong(mut self, classes: &[char]) -> Self {
        self.strong = classes.to_vec();
        self
    }

    pub fn trigger(mut self, states: &[u8]) -> Self {
        self.trigger = states.to_vec();
        self
    }

    pub fn goal(mut self, states: &[u8]) -> Self {
        self.goal = states.to_vec();
        self
    }
}

impl Model for Tiny {
    type State = u8;
    type Action = Act;

    fn init_states(&self) -> Vec<u8> {
        vec![0]
    }

    fn actions(&self, state: &u8, actions: &mut Vec<Act>) {
        for &(from, class, to) in &self.edges {
            if from == *state {
                actions.push(Act { class, to });
            }
        }
    }

    fn next_state(&self, _: &u8, action: Act) -> Option<u8> {
        Some(action.to)
    }

    fn properties(&self) -> Vec<Property<Self>> {
        vec![Property::always("below 100", |_, s: &u8| *s < 100)]
    }
}

impl TemporalModel for Tiny {
    fn fairness(&self) -> Vec<Fairness<Self>> {
        let class: fn(char) -> fn(&Act) -> bool = |c| match c {
            'a' => |a: &Act| a.class == 'a',
            'b' => |a: &Act| a.class == 'b',
            other => panic!("the tests use classes a and b, not {other}"),
        };
        let weak = self.fair.iter().map(|&c| Fairness::weak("weak", class(c)));
        let strong = self
            .strong
            .iter()
            .map(|&c| Fairness::strong("strong", class(c)));
        weak.chain(strong).collect()
    }

    fn liveness(&self) -> Vec<Liveness<Self>> {
        vec![
            Liveness::leads_to(
                "goal follows trigger",
                |m: &Tiny, s: &u8| m.trigger.contains(s),
                |m: &Tiny, s: &u8| m.goal.contains(s),
            ),
            Liveness::eventually_always("settles in goal", |m: &Tiny, s: &u8| m.goal.contains(s)),
            Liveness::infinitely_often("goal again and again", |m: &Tiny, s: &u8| {
                m.goal.contains(s)
            }),
        ]
    }
}

/// Checks `model` on one thread with the default options.
pub fn run<M>(model: &M) -> Report<M>
where
    M: TemporalModel + Sync,
    M::State: CheckableState,
    M::Action: Clone,
{
    run_with(model, Stuttering::Anywhere)
}

/// Checks `model` on one thread under the given stuttering rule.
pub fn run_with<M>(model: &M, stuttering: Stuttering) -> Report<M>
where
    M: TemporalModel + Sync,
    M::State: CheckableState,
    M::Action: Clone,
{
    let options = CheckOptions {
        threads: 1,
        stuttering,
        ..CheckOptions::default()
    };
    check(model, &options).expect("the model is checkable")
}
