//! Temporal properties beyond stateright's [`Property`](stateright::Property):
//! weak fairness of named action classes, and liveness under that fairness.
//!
//! stateright's own `eventually` is judged only at terminal states, so a
//! behaviour that loops forever without reaching its goal passes it. The
//! declarations here are what `steadfast-checker` checks soundly instead: it
//! builds the reachable graph and looks for a *fair* cycle on which the
//! property fails.
//!
//! # Semantics
//!
//! A behaviour is an infinite path through the reachable graph. A state in
//! which no action yields a successor stutters forever (it carries an implicit
//! self-loop), so a run that stops short of its goal is a violation, not a
//! pass. A step whose successor equals its origin is a stutter step too: it
//! changes nothing, so it never counts as *taking* an action class (as
//! `<A>_vars` in TLA+).
//!
//! [`Fairness::weak`] of a class `A` admits only behaviours in which `A` is not
//! enabled continuously from some point on without an `A`-step being taken:
//! `WF(A) ≜ ◇□ENABLED⟨A⟩ ⇒ □◇⟨A⟩`.

use stateright::Model;

/// A predicate over one state of a model, as in stateright's `Property`.
pub type StatePredicate<M> = fn(&M, &<M as Model>::State) -> bool;

/// Weak fairness of a named class of actions.
///
/// The class is a predicate over the model's actions; an action of the class is
/// *enabled* in a state when it yields a successor different from that state.
pub struct Fairness<M: Model> {
    /// A short name for the class, shown in reports (for example `"operator"`).
    pub name: &'static str,
    /// Which actions belong to the class.
    pub class: fn(&M::Action) -> bool,
}

impl<M: Model> Fairness<M> {
    /// Weak fairness of the actions for which `class` holds: they cannot stay
    /// enabled forever without one of them being taken.
    pub fn weak(name: &'static str, class: fn(&M::Action) -> bool) -> Self {
        Fairness { name, class }
    }
}

impl<M: Model> Clone for Fairness<M> {
    fn clone(&self) -> Self {
        Fairness {
            name: self.name,
            class: self.class,
        }
    }
}

/// The formula of a liveness property, over state predicates.
pub enum Formula<M: Model> {
    /// `P ~> Q`, that is `□(P ⇒ ◇Q)`: every time `P` holds, `Q` holds then or
    /// later.
    LeadsTo {
        /// The trigger.
        p: StatePredicate<M>,
        /// The response that must follow every trigger.
        q: StatePredicate<M>,
    },
    /// `◇□P`: from some point on, `P` holds for good.
    EventuallyAlways {
        /// The condition that must come to hold and stay.
        p: StatePredicate<M>,
    },
}

impl<M: Model> Clone for Formula<M> {
    fn clone(&self) -> Self {
        match self {
            Formula::LeadsTo { p, q } => Formula::LeadsTo { p: *p, q: *q },
            Formula::EventuallyAlways { p } => Formula::EventuallyAlways { p: *p },
        }
    }
}

/// A named liveness property, judged on fair behaviours only.
pub struct Liveness<M: Model> {
    /// The property's name, unique within its model.
    pub name: &'static str,
    /// What must hold.
    pub formula: Formula<M>,
}

impl<M: Model> Liveness<M> {
    /// `P ~> Q`: whenever `p` holds, `q` holds then or later.
    pub fn leads_to(name: &'static str, p: StatePredicate<M>, q: StatePredicate<M>) -> Self {
        Liveness {
            name,
            formula: Formula::LeadsTo { p, q },
        }
    }

    /// `◇□P`: eventually `p` holds and keeps holding.
    pub fn eventually_always(name: &'static str, p: StatePredicate<M>) -> Self {
        Liveness {
            name,
            formula: Formula::EventuallyAlways { p },
        }
    }
}

impl<M: Model> Clone for Liveness<M> {
    fn clone(&self) -> Self {
        Liveness {
            name: self.name,
            formula: self.formula.clone(),
        }
    }
}

/// A stateright model that also declares its fairness and liveness, beside
/// its `properties()`.
///
/// Both default to none, so any model can be checked; a model without
/// fairness admits every infinite path of its graph as a behaviour.
pub trait TemporalModel: Model {
    /// The weakly fair action classes.
    fn fairness(&self) -> Vec<Fairness<Self>> {
        Vec::new()
    }

    /// The liveness properties, judged under [`TemporalModel::fairness`].
    fn liveness(&self) -> Vec<Liveness<Self>> {
        Vec::new()
    }
}
