//! From the graph back to the model: the paths and lassos found on the graph
//! are re-run through the model's own steps, so that every state shown is
//! one the model computed.
//!
//! Under symmetry the graph holds canonical states, and a path on it stands
//! for a behaviour of the model that passes through renamings of them. The
//! walk keeps both: the canonical state, to follow the graph's choices, and
//! the concrete one, found by taking the model's step whose successor is the
//! canonical step's renamed; a graph step without such a model step means
//! the model's renaming is broken, and is an error. A lasso is then
//! validated as a whole before it is shown: its cycle closes on the same
//! concrete state, it is fair, and it violates its property.

use serde::Serialize;
use stateright::Model;
use steadfast_spec::{Strength, TemporalModel};

use crate::classes::ClassSet;
use crate::graph::{Graph, Route};
use crate::liveness::{EdgeLasso, LabelFormula};
use crate::report::{ClassOnCycle, Evidence, Path, Step};
use crate::seen::Fingerprinter;
use crate::symmetry::{json_excerpt, Element, Group, IDENTITY};
use crate::CheckError;

/// The successor of `state` with the given ordinal (counting only actions
/// that yield a state inside the boundary), with its action's index; `None`
/// when `state` has no successor and so stutters.
fn successor<M>(model: &M, state: &M::State, ordinal: u32) -> Option<(usize, M::Action, M::State)>
where
    M: Model,
    M::Action: Clone,
{
    let mut actions = Vec::new();
    model.actions(state, &mut actions);
    let mut seen = 0;
    for (index, action) in actions.into_iter().enumerate() {
        let Some(next) = model.next_state(state, action.clone()) else {
            continue;
        };
        if !model.within_boundary(&next) {
            continue;
        }
        if seen == ordinal {
            return Some((index, action, next));
        }
        seen += 1;
    }
    None
}

/// The fairness classes `action` takes, by number.
fn classes_of<A>(classes: &[fn(&A) -> bool], action: &A) -> Vec<usize> {
    (0..classes.len()).filter(|&j| classes[j](action)).collect()
}

/// The steps of `state`: its actions that lead to another state inside the
/// boundary (the ones that enable a class), with those states.
pub(crate) fn steps<M: Model>(model: &M, state: &M::State) -> Vec<(M::Action, M::State)>
where
    M::State: PartialEq,
    M::Action: Clone,
{
    let mut actions = Vec::new();
    model.actions(state, &mut actions);
    actions
        .into_iter()
        .filter_map(|action| {
            let next = model.next_state(state, action.clone())?;
            (next != *state && model.within_boundary(&next)).then_some((action, next))
        })
        .collect()
}

/// The successors of `state` inside the boundary and other than itself (the
/// steps that enable a class), each with the classes its action takes.
pub(crate) fn successors<M: Model>(
    model: &M,
    state: &M::State,
    classes: &[fn(&M::Action) -> bool],
) -> Vec<(M::State, Vec<usize>)>
where
    M::State: PartialEq,
    M::Action: Clone,
{
    steps(model, state)
        .into_iter()
        .map(|(action, next)| (next, classes_of(classes, &action)))
        .collect()
}

/// The model's step from `state` to `to` that takes the classes `taking`
/// (two actions to one state may differ in the classes they take, and so
/// in what fairness they serve), with its action's index.
fn step_to<M>(
    model: &M,
    classes: &[fn(&M::Action) -> bool],
    state: &M::State,
    to: &M::State,
    taking: &[usize],
) -> Option<(usize, M::Action)>
where
    M: Model,
    M::State: PartialEq,
    M::Action: Clone,
{
    let mut actions = Vec::new();
    model.actions(state, &mut actions);
    actions.into_iter().enumerate().find(|(_, action)| {
        classes_of(classes, action) == taking
            && model
                .next_state(state, action.clone())
                .is_some_and(|next| next == *to && model.within_boundary(&next))
    })
}

/// A walk through the model along the graph's choices.
pub(crate) struct Walk<'a, M: Model> {
    model: &'a M,
    group: Option<&'a Group>,
    /// The fairness classes, to tell apart steps to one state.
    classes: &'a [fn(&M::Action) -> bool],
    fingerprinter: Fingerprinter,
    /// The state the graph knows (canonical under symmetry).
    canonical: M::State,
    /// The state of the behaviour shown: `canonical` renamed by `frame`.
    concrete: M::State,
    frame: Element,
}

impl<'a, M> Walk<'a, M>
where
    M: TemporalModel,
    M::State: Clone + std::hash::Hash + PartialEq + Serialize,
    M::Action: Clone,
{
    /// A walk from the initial state numbered `init` in `init_states()`.
    pub(crate) fn from_init(
        model: &'a M,
        group: Option<&'a Group>,
        classes: &'a [fn(&M::Action) -> bool],
        init: usize,
    ) -> Self {
        let concrete = model.init_states().swap_remove(init);
        let fingerprinter = Fingerprinter::new();
        let (canonical, frame) = match group {
            Some(group) => {
                let (canonical, _, g) = group.canonical(model, concrete.clone(), &fingerprinter);
                (canonical, group.inverse(g))
            }
            None => (concrete.clone(), IDENTITY),
        };
        Walk {
            model,
            group,
            classes,
            fingerprinter,
            canonical,
            concrete,
            frame,
        }
    }

    /// The state the behaviour is in.
    pub(crate) fn state(&self) -> &M::State {
        &self.concrete
    }

    /// Takes the graph's successor numbered `ordinal` of the canonical state;
    /// a state with none stutters.
    pub(crate) fn take(&mut self, ordinal: u32) -> Result<Step<M>, CheckError> {
        let Some((index, action, next)) = successor(self.model, &self.canonical, ordinal) else {
            return Ok(Step {
                action: None,
                state: self.concrete.clone(),
            });
        };
        let Some(group) = self.group else {
            self.canonical = next.clone();
            self.concrete = next.clone();
            return Ok(Step {
                action: Some((index, action)),
                state: next,
            });
        };
        let renamed = self.model.rename(&next, &group.renaming(self.frame));
        let mut taking: Vec<usize> = classes_of(self.classes, &action)
            .into_iter()
            .map(|j| group.class(self.frame, j))
            .collect();
        taking.sort_unstable();
        let Some(taken) = step_to(self.model, self.classes, &self.concrete, &renamed, &taking)
        else {
            return Err(CheckError::NotSymmetric {
                what: "a step of the state is not a step of its renaming".into(),
                renaming: group.describe(self.frame),
                state: json_excerpt(&self.canonical),
            });
        };
        let (canonical, _, g) = group.canonical(self.model, next, &self.fingerprinter);
        self.frame = group.compose(self.frame, group.inverse(g));
        self.canonical = canonical;
        self.concrete = renamed.clone();
        Ok(Step {
            action: Some(taken),
            state: renamed,
        })
    }

    /// Takes the successors `ordinals` in turn, appending the steps.
    fn take_all(&mut self, ordinals: &[u32], steps: &mut Vec<Step<M>>) -> Result<(), CheckError> {
        for &ordinal in ordinals {
            steps.push(self.take(ordinal)?);
        }
        Ok(())
    }
}

/// The path a route names, and the walk at its end.
pub(crate) fn walk<'a, M>(
    model: &'a M,
    group: Option<&'a Group>,
    classes: &'a [fn(&M::Action) -> bool],
    route: &Route,
) -> Result<(Path<M>, Walk<'a, M>), CheckError>
where
    M: TemporalModel,
    M::State: Clone + std::hash::Hash + PartialEq + Serialize,
    M::Action: Clone,
{
    let init_index = route.init as usize;
    let mut walk = Walk::from_init(model, group, classes, init_index);
    let mut steps = vec![Step {
        action: None,
        state: walk.state().clone(),
    }];
    walk.take_all(&route.ordinals, &mut steps)?;
    Ok((Path { init_index, steps }, walk))
}

/// The successor ordinals of a run of edges that leaves `from`.
fn ordinals<C: ClassSet>(graph: &Graph<C>, mut from: u32, edges: &[usize]) -> (Vec<u32>, u32) {
    let ordinals = edges
        .iter()
        .map(|&e| {
            let ordinal = graph.ordinal(from, e);
            from = graph.target(e);
            ordinal
        })
        .collect();
    (ordinals, from)
}

/// What a lasso is checked against once it is the model's.
pub(crate) struct Judge<'a, M: Model> {
    /// The property's name.
    pub(crate) property: &'static str,
    pub(crate) formula: LabelFormula,
    /// The predicates the formula's labels number.
    pub(crate) labels: &'a [fn(&M, &M::State) -> bool],
    pub(crate) classes: &'a [fn(&M::Action) -> bool],
    pub(crate) strengths: &'a [Strength],
    pub(crate) class_names: &'a [&'static str],
}

/// The lasso's states and actions; its trigger is the step `trigger` names,
/// or by default the step of its `start`. Under symmetry it is validated
/// against `judge` before it is returned.
pub(crate) fn materialize_lasso<M, C>(
    model: &M,
    group: Option<&Group>,
    graph: &Graph<C>,
    lasso: &EdgeLasso,
    trigger: Option<usize>,
    judge: &Judge<'_, M>,
) -> Result<Evidence<M>, CheckError>
where
    C: ClassSet,
    M: TemporalModel,
    M::State: Clone + std::hash::Hash + PartialEq + Serialize,
    M::Action: Clone,
{
    let mut route = graph.route_to(lasso.start);
    let trigger = trigger.unwrap_or(route.ordinals.len());
    let (bridge, entry) = ordinals(graph, lasso.start, &lasso.bridge);
    route.ordinals.extend(bridge);
    let (prefix, mut walk) = self::walk(model, group, judge.classes, &route)?;
    let (cycle_ordinals, _) = ordinals(graph, entry, &lasso.cycle);
    let mut cycle = Vec::new();
    if cycle_ordinals.is_empty() {
        // The behaviour stutters at the entry forever.
        cycle.push(Step {
            action: None,
            state: walk.state().clone(),
        });
    } else {
        walk.take_all(&cycle_ordinals, &mut cycle)?;
    }
    let entry = &prefix.steps[prefix.steps.len() - 1].state;
    let fairness = fairness_on_cycle(model, entry, &cycle, judge);
    let evidence = Evidence::Lasso {
        prefix,
        cycle,
        trigger,
        fairness,
    };
    if group.is_some() {
        validate(model, &evidence, judge).map_err(|why| CheckError::Unsound {
            property: judge.property,
            why,
        })?;
    }
    Ok(evidence)
}

/// How the cycle entered at `entry` treats each of the judge's classes: the
/// steps that take it and the states where it is disabled (no action of it
/// leads to another state inside the boundary).
fn fairness_on_cycle<M>(
    model: &M,
    entry: &M::State,
    cycle: &[Step<M>],
    judge: &Judge<'_, M>,
) -> Vec<ClassOnCycle>
where
    M: Model,
    M::State: PartialEq,
    M::Action: Clone,
{
    let mut taken = vec![Vec::new(); judge.classes.len()];
    // The cycle's states from the one it starts from; its last step returns
    // there.
    let mut states = vec![entry];
    let mut previous = entry;
    for (k, step) in cycle.iter().enumerate() {
        if let Some((_, action)) = &step.action {
            if step.state != *previous {
                for j in classes_of(judge.classes, action) {
                    taken[j].push(k + 1);
                }
            }
        }
        if k + 1 < cycle.len() {
            states.push(&step.state);
        }
        previous = &step.state;
    }
    let enabled: Vec<Vec<usize>> = states
        .iter()
        .map(|state| {
            successors(model, state, judge.classes)
                .into_iter()
                .flat_map(|(_, classes)| classes)
                .collect()
        })
        .collect();
    taken
        .into_iter()
        .enumerate()
        .map(|(j, taken)| ClassOnCycle {
            name: judge.class_names[j],
            strength: judge.strengths[j],
            taken,
            disabled: (0..states.len())
                .filter(|&i| !enabled[i].contains(&j))
                .collect(),
        })
        .collect()
}

/// Whether `evidence`, a lasso, is a fair behaviour of the model that
/// violates the formula; otherwise what it fails.
fn validate<M>(model: &M, evidence: &Evidence<M>, judge: &Judge<'_, M>) -> Result<(), String>
where
    M: Model,
    M::State: Clone + PartialEq,
    M::Action: Clone,
{
    let Evidence::Lasso {
        prefix,
        cycle,
        fairness,
        ..
    } = evidence
    else {
        return Ok(());
    };
    let entry = &prefix.steps[prefix.steps.len() - 1].state;
    let last = &cycle[cycle.len() - 1].state;
    if last != entry {
        return Err("does not close its cycle on the state it entered it by".into());
    }
    if let Some(class) = fairness.iter().find(|class| !class.fair(cycle.len())) {
        return Err(format!("is not fair to the class {:?}", class.name));
    }
    let states: Vec<&M::State> = std::iter::once(entry)
        .chain(cycle.iter().map(|step| &step.state))
        .collect();
    let label = |k: usize, state: &M::State| judge.labels[k](model, state);
    let violated = match judge.formula {
        LabelFormula::EventuallyAlways { p } => states.iter().any(|s| !label(p, s)),
        LabelFormula::InfinitelyOften { p } => states.iter().all(|s| !label(p, s)),
        LabelFormula::LeadsTo { p, q } => {
            let path: Vec<&M::State> = prefix.steps.iter().map(|s| &s.state).collect();
            let after_last_q = path.iter().rposition(|s| label(q, s)).map_or(0, |i| i + 1);
            let triggered = |i: usize| match p {
                Some(p) => label(p, path[i]),
                None => i == 0,
            };
            states.iter().all(|s| !label(q, s))
                && ((after_last_q..path.len()).any(triggered)
                    || p.is_some_and(|p| states.iter().any(|s| label(p, s))))
        }
    };
    if violated {
        Ok(())
    } else {
        Err("does not violate the property".into())
    }
}
