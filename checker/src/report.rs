//! What a check found: per property a verdict and, where there is one, the
//! behaviour that shows it.

use std::time::Duration;

use stateright::Model;
use steadfast_spec::Strength;

/// A bound that stopped a check before the reachable graph was exhausted.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize)]
#[serde(tag = "bound", content = "limit", rename_all = "kebab-case")]
pub enum Bound {
    /// The state limit was reached.
    States(u32),
    /// The time limit ran out.
    Timeout(#[serde(serialize_with = "seconds")] Duration),
    /// The check was interrupted (Ctrl-C).
    Interrupted,
    /// The process's resident memory passed this many bytes (with the
    /// graph and the frontier on disk, when the check spills).
    Memory(u64),
    /// Spilling to disk failed, for this reason (the disk is full, say).
    Disk(#[serde(serialize_with = "io_error")] std::io::ErrorKind),
}

/// An I/O error's kind, as the words `std::io::ErrorKind` displays.
fn io_error<S: serde::Serializer>(kind: &std::io::ErrorKind, to: S) -> Result<S::Ok, S::Error> {
    to.collect_str(kind)
}

/// A duration as seconds, a number.
pub(crate) fn seconds<S: serde::Serializer>(duration: &Duration, to: S) -> Result<S::Ok, S::Error> {
    to.serialize_f64(duration.as_secs_f64())
}

impl std::fmt::Display for Bound {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Bound::States(n) => write!(f, "the state limit ({n} states)"),
            Bound::Timeout(t) => write!(f, "the time limit ({}s)", t.as_secs_f64()),
            Bound::Interrupted => write!(f, "an interruption (Ctrl-C)"),
            Bound::Memory(bytes) => write!(f, "the memory limit ({})", crate::memory::Size(*bytes)),
            Bound::Disk(kind) => write!(f, "the disk (spilling to it failed: {kind})"),
        }
    }
}

/// Which kind of property a result is for.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum PropertyKind {
    /// stateright `always`: true in every reachable state.
    Always,
    /// stateright `sometimes`: true in some reachable state.
    Sometimes,
    /// stateright `eventually`, judged soundly: every fair behaviour reaches
    /// it (`Init ~> P`).
    Eventually,
    /// `P ~> Q` under fairness.
    LeadsTo,
    /// `◇□P` under fairness.
    EventuallyAlways,
    /// `□◇P` under fairness.
    InfinitelyOften,
    /// No reachable state is without a successor (checked on request).
    Deadlock,
}

impl PropertyKind {
    /// The word used in reports.
    pub fn as_str(self) -> &'static str {
        match self {
            PropertyKind::Always => "always",
            PropertyKind::Sometimes => "sometimes",
            PropertyKind::Eventually => "eventually",
            PropertyKind::LeadsTo => "leads-to",
            PropertyKind::EventuallyAlways => "eventually-always",
            PropertyKind::InfinitelyOften => "infinitely-often",
            PropertyKind::Deadlock => "deadlock",
        }
    }

    /// Whether the property speaks of infinite behaviours.
    pub fn is_liveness(self) -> bool {
        match self {
            PropertyKind::Eventually
            | PropertyKind::LeadsTo
            | PropertyKind::EventuallyAlways
            | PropertyKind::InfinitelyOften => true,
            PropertyKind::Always | PropertyKind::Sometimes | PropertyKind::Deadlock => false,
        }
    }
}

/// The verdict on one property.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Verdict {
    /// Proven on the whole reachable graph.
    Holds,
    /// Refuted: the evidence is a real behaviour of the model (for a
    /// `sometimes` on a complete graph: no state satisfies it).
    Violated,
    /// Not decided: a bound stopped the search first.
    Unknown,
    /// Not searched for: the check was asked for safety only
    /// ([`crate::CheckOptions::safety_only`], `--safety`), so a liveness
    /// property is neither proven nor refuted.
    NotChecked,
}

/// One step of a path: the action taken and the state it led to.
pub struct Step<M: Model> {
    /// The action, with its index in the model's `actions()` of the previous
    /// state; `None` for the initial state and for a stutter step (the state
    /// repeats).
    pub action: Option<(usize, M::Action)>,
    /// The state after the step.
    pub state: M::State,
}

/// A finite path from an initial state.
pub struct Path<M: Model> {
    /// The initial state's index in `init_states()`.
    pub init_index: usize,
    /// The initial state first, then one step per transition.
    pub steps: Vec<Step<M>>,
}

/// What shows a verdict.
pub enum Evidence<M: Model> {
    /// A path to a state: the counterexample of an `always`, the example of a
    /// `sometimes`.
    Path(Path<M>),
    /// A fair behaviour violating a liveness property: `prefix`, whose last
    /// state is where the cycle starts, then `cycle` forever (its last state
    /// is that same state again).
    Lasso {
        /// From an initial state to the first state of the cycle.
        prefix: Path<M>,
        /// The steps of the cycle, back to its first state.
        cycle: Vec<Step<M>>,
        /// The index in `prefix.steps` of the state where the violation
        /// begins: for `P ~> Q` the state where `P` holds and no `Q`
        /// follows; otherwise the first state of the cycle.
        trigger: usize,
        /// Why the cycle is a fair behaviour: per fairness class, in the
        /// order the model declares them, where it takes the class and
        /// where it finds it disabled.
        fairness: Vec<ClassOnCycle>,
    },
}

/// How a lasso's cycle treats one fairness class. The cycle is fair to it
/// when it takes the class, or finds it disabled: somewhere for a weakly
/// fair class, in every state for a strongly fair one.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ClassOnCycle {
    /// The class's name, as the model declares it.
    pub name: &'static str,
    /// Weak or strong.
    pub strength: Strength,
    /// The steps of the cycle that take an action of the class, counted
    /// from 1 (a step to the same state takes no class).
    pub taken: Vec<usize>,
    /// The states of the cycle in which no action of the class is enabled,
    /// counted from 0, the state the cycle starts from; a cycle of `n`
    /// steps has `n` states (its last step returns to state 0).
    pub disabled: Vec<usize>,
}

impl ClassOnCycle {
    /// Whether a cycle of `states` states that treats the class so is fair
    /// to it.
    pub fn fair(&self, states: usize) -> bool {
        !self.taken.is_empty()
            || match self.strength {
                Strength::Weak => !self.disabled.is_empty(),
                Strength::Strong => self.disabled.len() == states,
            }
    }
}

/// The result for one property.
pub struct PropertyReport<M: Model> {
    /// The property's name.
    pub name: &'static str,
    /// What kind of property it is.
    pub kind: PropertyKind,
    /// Holds, violated, or unknown.
    pub verdict: Verdict,
    /// The behaviour behind the verdict, where there is one.
    pub evidence: Option<Evidence<M>>,
}

/// Counts about the explored graph.
#[derive(Clone, Copy, Debug, Default, PartialEq, serde::Serialize)]
pub struct Stats {
    /// Distinct states found.
    pub unique_states: u64,
    /// Transitions kept (0 when only safety was checked).
    pub edges: u64,
    /// Breadth-first levels expanded.
    pub depth: u32,
    /// Successor states computed, counting repeats.
    pub generated: u64,
    /// The chance that two distinct states shared a fingerprint, so that one
    /// of them went unexplored: TLC's optimistic estimate
    /// `n · (g − n) / 2⁶⁴` for `n` distinct states among `g` generated
    /// (each of the `g − n` repeats could have been a new state whose
    /// fingerprint met one of the `n`).
    pub collision_probability: f64,
    /// Time spent exploring (in JSON: seconds).
    #[serde(serialize_with = "seconds")]
    pub explore_time: Duration,
    /// Time spent on the liveness search (in JSON: seconds).
    #[serde(serialize_with = "seconds")]
    pub liveness_time: Duration,
    /// Bytes of the graph and the frontier written to disk, past the
    /// memory limit (0: none).
    pub spilled: u64,
}

/// Everything a check found.
pub struct Report<M: Model> {
    /// One entry per property: safety ones first, in `properties()` order,
    /// then liveness ones in `liveness()` order.
    pub properties: Vec<PropertyReport<M>>,
    /// The size of what was explored.
    pub stats: Stats,
    /// The bound that cut the check short, if one did.
    pub stopped: Option<Bound>,
}

impl<M: Model> Report<M> {
    /// Whether every property holds on the complete graph.
    pub fn all_hold(&self) -> bool {
        self.properties.iter().all(|p| p.verdict == Verdict::Holds)
    }

    /// The report for the property named `name`.
    pub fn property(&self, name: &str) -> Option<&PropertyReport<M>> {
        self.properties.iter().find(|p| p.name == name)
    }
}
