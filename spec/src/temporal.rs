//! Temporal properties beyond stateright's [`Property`](stateright::Property):
//! weak and strong fairness of named action classes, and liveness under that
//! fairness.
//!
//! stateright's own `eventually` is judged only at terminal states, so a
//! behaviour that loops forever without reaching its goal passes it. The
//! declarations here are what `steadfast-checker` checks soundly instead: it
//! builds the reachable graph and looks for a *fair* cycle on which the
//! property fails.
//!
//! # Semantics
//!
//! A behaviour is an infinite path through the reachable graph in which, as
//! in TLA+, any state may repeat forever (stutter) unless fairness forbids
//! it, so progress comes only from declared fairness and a run that stops
//! short of its goal is a violation, not a pass. A step whose successor
//! equals its origin is a stutter step too: it changes nothing, so it never
//! counts as *taking* an action class (as `<A>_vars` in TLA+).
//!
//! [`Fairness::weak`] of a class `A` admits only behaviours in which `A` is not
//! enabled continuously from some point on without an `A`-step being taken:
//! `WF(A) ≜ ◇□ENABLED⟨A⟩ ⇒ □◇⟨A⟩`. [`Fairness::strong`] admits only those
//! in which `A` is not enabled infinitely often without being taken
//! infinitely often: `SF(A) ≜ □◇ENABLED⟨A⟩ ⇒ □◇⟨A⟩`.

use stateright::Model;

use crate::symmetry::{Interchangeable, Renaming};

/// A predicate over one state of a model, as in stateright's `Property`.
pub type StatePredicate<M> = fn(&M, &<M as Model>::State) -> bool;

/// How demanding the fairness of a class is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Strength {
    /// `WF`: the class cannot stay enabled continuously without being taken.
    Weak,
    /// `SF`: the class cannot be enabled infinitely often without being
    /// taken, even if it is disabled in between.
    Strong,
}

/// Fairness of a named class of actions.
///
/// The class is a predicate over the model's actions; an action of the class is
/// *enabled* in a state when it yields a successor different from that state.
pub struct Fairness<M: Model> {
    /// A short name for the class, shown in reports (for example `"operator"`).
    pub name: &'static str,
    /// Which actions belong to the class.
    pub class: fn(&M::Action) -> bool,
    /// Weak or strong.
    pub strength: Strength,
    /// The id whose class this is, as a set (its index in
    /// [`TemporalModel::interchangeable`]) and an id: a renaming of ids maps
    /// the `k`-th class declared for an id to the `k`-th declared for its new
    /// name. `None`: a class of no id, which every renaming keeps.
    pub member: Option<(usize, u8)>,
}

impl<M: Model> Fairness<M> {
    /// Weak fairness of the actions for which `class` holds: they cannot stay
    /// enabled forever without one of them being taken
    /// (`WF(A) ≜ ◇□ENABLED⟨A⟩ ⇒ □◇⟨A⟩`).
    pub fn weak(name: &'static str, class: fn(&M::Action) -> bool) -> Self {
        Fairness {
            name,
            class,
            strength: Strength::Weak,
            member: None,
        }
    }

    /// Strong fairness of the actions for which `class` holds: they cannot
    /// be enabled infinitely often without one of them being taken
    /// (`SF(A) ≜ □◇ENABLED⟨A⟩ ⇒ □◇⟨A⟩`). Declare it for a step that a
    /// driver retries whenever it becomes possible, such as a request that
    /// may be refused while a lock is held elsewhere.
    pub fn strong(name: &'static str, class: fn(&M::Action) -> bool) -> Self {
        Fairness {
            name,
            class,
            strength: Strength::Strong,
            member: None,
        }
    }

    /// The same class, declared as id `id`'s of the interchangeable set
    /// `set` (see [`Fairness::member`]).
    pub fn of(self, set: usize, id: u8) -> Self {
        Fairness {
            member: Some((set, id)),
            ..self
        }
    }
}

impl<M: Model> Clone for Fairness<M> {
    fn clone(&self) -> Self {
        Fairness {
            name: self.name,
            class: self.class,
            strength: self.strength,
            member: self.member,
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
    /// `□◇P`: `P` holds again and again, forever.
    InfinitelyOften {
        /// The condition that must keep coming back.
        p: StatePredicate<M>,
    },
}

impl<M: Model> Clone for Formula<M> {
    fn clone(&self) -> Self {
        match self {
            Formula::LeadsTo { p, q } => Formula::LeadsTo { p: *p, q: *q },
            Formula::EventuallyAlways { p } => Formula::EventuallyAlways { p: *p },
            Formula::InfinitelyOften { p } => Formula::InfinitelyOften { p: *p },
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

    /// `□◇P`: `p` holds infinitely often (a service that keeps serving, a
    /// lease that keeps being renewed).
    pub fn infinitely_often(name: &'static str, p: StatePredicate<M>) -> Self {
        Liveness {
            name,
            formula: Formula::InfinitelyOften { p },
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
    /// The fair action classes.
    fn fairness(&self) -> Vec<Fairness<Self>> {
        Vec::new()
    }

    /// The liveness properties, judged under [`TemporalModel::fairness`].
    fn liveness(&self) -> Vec<Liveness<Self>> {
        Vec::new()
    }

    /// The sets of ids the model treats alike (see [`crate::symmetry`]);
    /// none by default. A model that declares some also renames its states
    /// ([`TemporalModel::rename`]) and says whose each fairness class is
    /// ([`Fairness::of`]).
    fn interchangeable(&self) -> Vec<Interchangeable> {
        Vec::new()
    }

    /// `state` with its ids renamed by `renaming`: renaming a state must
    /// rename its successors, and renaming by one renaming then another
    /// must be renaming by the two composed. By default the state as it is,
    /// right for a model that declares no interchangeable ids.
    fn rename(&self, state: &Self::State, renaming: &Renaming) -> Self::State
    where
        Self::State: Clone,
    {
        let _ = renaming;
        state.clone()
    }

    /// A representative of `state`'s orbit, and the renaming that makes it
    /// of `state`, when the model can find one faster than by trying every
    /// renaming (sorting its processes by all they hold, say). Every state
    /// of an orbit must get the same representative. `None` (the default):
    /// the checker tries every renaming, which it does for at most 256. A
    /// model that gives forms must give one for every state: one it does not
    /// stands for itself (still sound, reduced less), and the checker's
    /// verification refuses a model that gives none for one of its first
    /// states.
    fn canonical(&self, state: &Self::State) -> Option<(Self::State, Renaming)> {
        let _ = state;
        None
    }
}
