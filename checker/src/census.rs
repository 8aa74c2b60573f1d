//! A commutation census: for each pair of kinds of action that are enabled
//! together in a reachable state, how often the two commute (the diamond
//! test: each is still enabled after the other, and both orders end in the
//! same state), and how much a partial-order reduction could save at most.
//!
//! It is a study of what a reduction could buy, not a reduction: nothing
//! here changes what a check explores. Its bound on the saving is generous
//! on purpose. A reduction may explore a single step of a state only if that
//! step commutes with every other step enabled there (and more: with every
//! step the others could lead to, and, for liveness, never all around a
//! cycle); the census counts the states where the first, local condition
//! holds and the steps they would leave out, so a real reduction saves no
//! more than that.

use std::collections::{BTreeMap, VecDeque};
use std::fmt::Debug;
use std::hash::Hash;

use serde::Serialize;
use stateright::Model;

use crate::concrete::steps;
use crate::seen::Fingerprinter;

/// What the census found.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub struct Census {
    /// Reachable states examined.
    pub states: u64,
    /// Whether every reachable state was examined (no bound stopped it).
    pub complete: bool,
    /// Steps examined: per state, its actions that lead to another state
    /// inside the boundary.
    pub steps: u64,
    /// States with two steps or more, where a reduction could choose.
    pub branching: u64,
    /// Branching states where some step commutes with every other step
    /// enabled there: the only states a reduction to one step could reduce.
    pub reducible: u64,
    /// The steps those states would leave out if each explored only such a
    /// step: an upper bound on the steps a partial-order reduction saves.
    pub skippable: u64,
    /// Per pair of kinds of action (by name, in order; a kind may pair with
    /// itself), how often two steps of those kinds were enabled together
    /// and how often they commuted.
    pub pairs: Vec<PairCount>,
}

/// How often two kinds of action, enabled together, commuted.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub struct PairCount {
    /// The first kind, by name.
    pub first: String,
    /// The second kind (equal to or after the first).
    pub second: String,
    /// Pairs of steps of these kinds enabled together in a state.
    pub together: u64,
    /// Of those, the pairs that commute.
    pub commute: u64,
}

/// The kind of an action: its `Debug` form up to its fields (`Deliver(0)`
/// and `Deliver(1)` are both `Deliver`).
fn kind<A: Debug>(action: &A) -> String {
    let text = format!("{action:?}");
    let end = text.find(['(', ' ', '{']).unwrap_or(text.len());
    text[..end].to_string()
}

/// Where `action` leads from `state`, if it is one of the state's actions
/// and leads somewhere inside the boundary (to `state` itself included).
fn after<M: Model>(model: &M, state: &M::State, action: &M::Action) -> Option<M::State>
where
    M::Action: Clone + PartialEq,
{
    let mut actions = Vec::new();
    model.actions(state, &mut actions);
    if !actions.contains(action) {
        return None;
    }
    model
        .next_state(state, action.clone())
        .filter(|next| model.within_boundary(next))
}

/// Takes the census of `model`'s reachable states, breadth first, stopping
/// after `max_states` states.
pub fn census<M>(model: &M, max_states: u64) -> Census
where
    M: Model,
    M::State: Hash + PartialEq + Clone,
    M::Action: Debug + Clone + PartialEq,
{
    let fingerprinter = Fingerprinter::new();
    let mut seen = ahash::AHashSet::new();
    let mut queue = VecDeque::new();
    for state in model.init_states() {
        if seen.insert(fingerprinter.fingerprint(&state)) {
            queue.push_back(state);
        }
    }
    let mut census = Census::default();
    let mut pairs: BTreeMap<(String, String), (u64, u64)> = BTreeMap::new();
    while let Some(state) = queue.pop_front() {
        if census.states == max_states {
            return Census {
                pairs: counts(pairs),
                ..census
            };
        }
        census.states += 1;
        let steps = steps(model, &state);
        census.steps += steps.len() as u64;
        let kinds: Vec<String> = steps.iter().map(|(action, _)| kind(action)).collect();
        // commutes[i][j]: step i and step j commute.
        let mut commutes = vec![vec![true; steps.len()]; steps.len()];
        for i in 0..steps.len() {
            for j in i + 1..steps.len() {
                let (a, after_a) = &steps[i];
                let (b, after_b) = &steps[j];
                let ab = after(model, after_a, b);
                let diamond = ab.is_some() && ab == after(model, after_b, a);
                commutes[i][j] = diamond;
                commutes[j][i] = diamond;
                let key = if kinds[i] <= kinds[j] {
                    (kinds[i].clone(), kinds[j].clone())
                } else {
                    (kinds[j].clone(), kinds[i].clone())
                };
                let count = pairs.entry(key).or_default();
                count.0 += 1;
                count.1 += u64::from(diamond);
            }
        }
        if steps.len() > 1 {
            census.branching += 1;
            if commutes.iter().any(|row| row.iter().all(|&c| c)) {
                census.reducible += 1;
                census.skippable += steps.len() as u64 - 1;
            }
        }
        for (_, next) in steps {
            if seen.insert(fingerprinter.fingerprint(&next)) {
                queue.push_back(next);
            }
        }
    }
    Census {
        complete: true,
        pairs: counts(pairs),
        ..census
    }
}

fn counts(pairs: BTreeMap<(String, String), (u64, u64)>) -> Vec<PairCount> {
    pairs
        .into_iter()
        .map(|((first, second), (together, commute))| PairCount {
            first,
            second,
            together,
            commute,
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use steadfast_spec::mutex::{Lock, LockVariant};

    /// Two counters stepped independently commute everywhere; a reset that
    /// zeroes both commutes with neither.
    #[derive(Clone)]
    struct Counters;

    #[derive(Clone, Debug, PartialEq)]
    enum Step {
        Left,
        Right,
        Reset,
    }

    impl Model for Counters {
        type State = (u8, u8);
        type Action = Step;

        fn init_states(&self) -> Vec<(u8, u8)> {
            vec![(0, 0)]
        }

        fn actions(&self, &(l, r): &(u8, u8), actions: &mut Vec<Step>) {
            if l < 2 {
                actions.push(Step::Left);
            }
            if r < 2 {
                actions.push(Step::Right);
            }
            if l == 2 && r == 2 {
                actions.push(Step::Reset);
            }
        }

        fn next_state(&self, &(l, r): &(u8, u8), action: Step) -> Option<(u8, u8)> {
            Some(match action {
                Step::Left => (l + 1, r),
                Step::Right => (l, r + 1),
                Step::Reset => (0, 0),
            })
        }
    }

    #[test]
    fn independent_steps_should_commute_and_be_counted_by_kind() {
        let census = census(&Counters, 100);
        assert!(census.complete);
        assert_eq!(census.states, 9);
        // Left and Right are enabled together where both counters are
        // below 2: 4 states, and both orders meet every time.
        assert_eq!(
            census.pairs,
            [PairCount {
                first: "Left".into(),
                second: "Right".into(),
                together: 4,
                commute: 4,
            }]
        );
        assert_eq!(census.branching, 4);
        assert_eq!(census.reducible, 4);
        assert_eq!(census.skippable, 4);
    }

    #[test]
    fn a_lock_s_steps_should_not_all_commute() {
        let lock = Lock::new(2, LockVariant::Filter).unwrap();
        let census = census(&lock, u64::MAX);
        assert!(census.complete);
        let together: u64 = census.pairs.iter().map(|p| p.together).sum();
        let commute: u64 = census.pairs.iter().map(|p| p.commute).sum();
        assert!(commute < together, "{census:?}");
        assert!(census.reducible <= census.branching);

        let bounded = super::census(&lock, 5);
        assert!(!bounded.complete);
        assert_eq!(bounded.states, 5);
    }
}
