//! The entry point: explore a model, then judge each of its properties.

use std::hash::Hash;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use serde::de::DeserializeOwned;
use serde::Serialize;
use stateright::{Expectation, Model};
use steadfast_spec::{Formula, Strength, TemporalModel};

use crate::classes::{ClassSet, Wide, MAX_CLASSES};
use crate::concrete::{materialize_lasso, walk, Judge};
use crate::explore::{Exploration, Target};
use crate::liveness::{find_violations, FairSets, LabelFormula, Rules};
use crate::packed::{round_trips, worth_encoding};
use crate::report::{Evidence, PropertyKind, PropertyReport, Report, Stats, Verdict};
use crate::spill::{SpillDir, Spiller};
use crate::symmetry::{Group, NamedPredicate};

/// How far and how wide a check may go.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CheckOptions {
    /// Threads that explore the graph (at least 1). Unless a bound stops
    /// the check, they number the states, and so find the counterexamples,
    /// exactly as one thread does.
    pub threads: usize,
    /// Stop after this many distinct states; `None`: as many as the state
    /// numbering holds (2³² − 2).
    pub max_states: Option<u32>,
    /// Stop exploring after this long; `None`: no limit.
    pub timeout: Option<Duration>,
    /// Stop exploring once the process's resident memory passes this many
    /// bytes (with `spill`, once it passes it with the graph, the frontier
    /// and the seen set on disk), as a bound stops it, rather than be killed by the
    /// kernel; `None`: no limit. It is watched while the graph is explored,
    /// where a check's memory grows with its states.
    pub memory: Option<u64>,
    /// Where the graph, the frontier and the seen set go to disk past `memory`, so that
    /// the check goes on, more slowly; `None`: `memory` stops the check.
    pub spill: Option<Spilling>,
    /// Check only `always` and `sometimes` properties, keeping no edges.
    pub safety_only: bool,
    /// Which states may stutter forever.
    pub stuttering: Stuttering,
    /// Also report, as the verdict of a property named
    /// [`DEADLOCK_PROPERTY`], whether some reachable state has no successor.
    pub deadlock: bool,
    /// Stops the exploration when triggered, as a bound does (for Ctrl-C).
    pub interrupt: Option<Interrupt>,
    /// Explore one state per orbit of the renamings the model declares
    /// ([`TemporalModel::interchangeable`]), judging fairness exactly (see
    /// docs/checker.md, "Symmetry"); a model that declares none is checked
    /// as it is either way.
    pub symmetry: bool,
}

/// Where a check writes its graph and its frontier once its memory passes
/// [`CheckOptions::memory`] (see docs/checker.md, `--memory`).
///
/// Spilling starts when the process's resident memory first passes the
/// bound: from then on the graph's columns go to disk a segment at a time as
/// they fill, the states waiting to be expanded as each chunk of them is
/// found, and each chunk's edges as it is expanded, until its level is
/// recorded; the liveness search reads them back through a cache. Each time
/// memory passes the bound again once a whole level was spilled, the seen
/// set's entries go to disk too (merged with what went before, sorted by
/// fingerprint), leaving room in its tables, and lookups read the disk for
/// what the tables no longer hold. Once the entries would not make room
/// enough, what holds the memory cannot go to disk (the columns' last
/// segments, the chunks being expanded), and the check stops there as a
/// bound stops it; if a write fails (a full disk), it stops at [`crate::Bound::Disk`].
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Spilling {
    /// The directory of the spill files. They are anonymous temporary
    /// files: nothing is left there, however the check ends.
    pub dir: std::path::PathBuf,
    /// Spill from the first level on, whatever the memory, and the seen set
    /// after every level.
    pub from_start: bool,
}

/// A request, from another thread, to stop a check early. The check stops as
/// a bound stops it: what it found so far is reported, and the rest is
/// unknown.
#[derive(Clone, Debug, Default)]
pub struct Interrupt(Arc<AtomicBool>);

impl Interrupt {
    /// A signal not yet triggered.
    pub fn new() -> Self {
        Self::default()
    }

    /// Asks every check holding this signal to stop; returns whether it had
    /// been asked already.
    pub fn trigger(&self) -> bool {
        self.0.swap(true, Ordering::Relaxed)
    }

    /// Whether it was triggered.
    pub fn is_triggered(&self) -> bool {
        self.0.load(Ordering::Relaxed)
    }
}

impl PartialEq for Interrupt {
    /// The same signal.
    fn eq(&self, other: &Self) -> bool {
        Arc::ptr_eq(&self.0, &other.0)
    }
}

impl Eq for Interrupt {}

/// The most threads a check runs on: four per core of this machine. Beyond
/// the cores, threads only wait for one another's numbering turns (on two
/// cores, 10,000 threads ran 140 times slower than two), and every thread
/// holds buffers of its own.
pub fn max_threads() -> usize {
    4 * std::thread::available_parallelism().map_or(1, usize::from)
}

/// Which states a behaviour may stay in forever, repeating it (stuttering).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Stuttering {
    /// TLA+'s semantics: every state may stutter forever, unless a weakly
    /// fair class enabled there forbids it. Progress comes only from declared
    /// fairness, so a model needs no explicit idle step.
    #[default]
    Anywhere,
    /// Only a state without successors stutters; elsewhere some action is
    /// always taken, as if every behaviour were forced to move while it can.
    /// Kept for models written for that rule: it assumes progress that no
    /// fairness declaration states, so a liveness proof under it is weaker.
    WhenStuck,
}

/// The name of the verdict `CheckOptions::deadlock` adds: it holds when
/// every reachable state has a successor.
pub const DEADLOCK_PROPERTY: &str = "no deadlock";

impl Default for CheckOptions {
    /// Every available core, no bounds, every property.
    fn default() -> Self {
        CheckOptions {
            threads: std::thread::available_parallelism().map_or(1, usize::from),
            max_states: None,
            timeout: None,
            memory: None,
            spill: None,
            safety_only: false,
            stuttering: Stuttering::Anywhere,
            deadlock: false,
            interrupt: None,
            symmetry: true,
        }
    }
}

/// How far an exploration has got, as reported while it runs.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Progress {
    /// Distinct states found so far.
    pub states: u64,
    /// Breadth-first levels expanded so far.
    pub depth: u32,
    /// Time since the exploration began.
    pub elapsed: Duration,
}

impl Progress {
    /// Distinct states found per second so far.
    pub fn states_per_second(&self) -> f64 {
        self.states as f64 / self.elapsed.as_secs_f64().max(1e-9)
    }
}

/// A model or options that cannot be checked as given.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum CheckError {
    /// More fairness classes than an edge has room for.
    #[error(
        "the model declares {0} fairness classes; at most 256 are supported: split the model's \
         processes across scenarios"
    )]
    TooManyFairnessClasses(usize),
    /// Two properties share a name, so their verdicts could not be told apart.
    #[error("two properties are named {0:?}; give each property its own name")]
    DuplicateName(&'static str),
    /// A check needs a thread to run on.
    #[error("threads must be at least 1")]
    NoThreads,
    /// More threads than can help.
    #[error(
        "{given} threads are too many: at most {max}, four per core of this machine (beyond the \
         cores, threads only wait for one another)"
    )]
    TooManyThreads {
        /// What was asked for.
        given: usize,
        /// The most allowed here.
        max: usize,
    },
    /// A check needs room for at least one state.
    #[error("max states must be at least 1")]
    NoStates,
    /// The checker keeps states waiting to be expanded as their serde
    /// encoding, and a state of the model did not survive it.
    #[error(
        "{0}; the checker keeps states as their serde encoding (postcard's format): derive \
         Serialize and Deserialize on the whole state, without skipped fields, untagged enums \
         or flattened structs"
    )]
    Encoding(String),
    /// The edges take more distinct sets of fairness classes than an edge
    /// can name.
    #[error(
        "the model's actions take more than {0} distinct sets of fairness classes; declare fewer \
         classes, or classes that fewer actions share"
    )]
    TooManyClassSets(usize),
    /// The interchangeable sets a model declares have more renamings
    /// between them than the reduction takes.
    #[error(
        "the model's interchangeable ids have more than {most} renamings together{}; declare \
         smaller sets, or check without symmetry (--no-symmetry)",
        if *given_form { "" } else {
            ", the most tried one by one: give a canonical form (TemporalModel::canonical)"
        }
    )]
    TooManyRenamings {
        /// The most it takes.
        most: usize,
        /// Whether that is with a canonical form the model gives.
        given_form: bool,
    },
    /// A counterexample found on the reduced graph is not, once rebuilt
    /// through the model's steps, a fair behaviour violating its property:
    /// the model's renaming is not a symmetry of it.
    #[error(
        "the counterexample of {property:?} found on the graph reduced by symmetry {why} once \
         rebuilt through the model's steps: the model's rename is not a symmetry of it; fix \
         it, or check without symmetry (--no-symmetry)"
    )]
    Unsound {
        /// The property the counterexample was for.
        property: &'static str,
        /// What the rebuilt behaviour fails.
        why: String,
    },
    /// A path rebuilt through the model's steps, from the initial state by
    /// the successors the exploration took, does not end in the state it
    /// found for a property: the model's steps gave other results.
    #[error(
        "the path to what was found for {property:?}, rebuilt through the model's steps, ends in \
         a state where the property says otherwise: the model's init_states, actions or \
         next_state gave other results than during the exploration; make them depend on the \
         state alone"
    )]
    Unrepeatable {
        /// The property the path was for.
        property: &'static str,
    },
    /// The directory given to spill to cannot hold files.
    #[error(
        "cannot spill to {}: {reason}; give a directory that exists and is writable \
         (--spill-dir)",
        dir.display()
    )]
    SpillDir {
        /// The directory.
        dir: std::path::PathBuf,
        /// Why a file could not be made there.
        reason: String,
    },
    /// A fairness class that belongs to an interchangeable id has no
    /// counterpart for another id of its set.
    #[error("the model's fairness is not symmetric: {0}")]
    AsymmetricFairness(String),
    /// The model declares interchangeable ids, and a renaming of them
    /// changes what the model does: reducing by it would be unsound.
    #[error(
        "the model is not symmetric under the renaming {renaming}: {what}, in the state \
         {state}; fix the model's rename or its interchangeable sets, or check without symmetry \
         (--no-symmetry)"
    )]
    NotSymmetric {
        /// What the renaming changed.
        what: String,
        /// The renaming, as the sets' ids and their new names.
        renaming: String,
        /// The state, as JSON (cut short).
        state: String,
    },
}

impl From<crate::packed::EncodingError> for CheckError {
    fn from(error: crate::packed::EncodingError) -> Self {
        CheckError::Encoding(error.0)
    }
}

/// The most states a check numbers. The numbers above are markers: in the
/// exploration `u32::MAX` stands for "no state" and `u32::MAX - 1` for a
/// state refused at the limit; the fair-cycle search marks finished states
/// with the two as Tarjan indices, which run from 1 to the state count.
const STATE_NUMBERS: u32 = u32::MAX - 2;

/// How many states, from the initial ones, a model's declared symmetry is
/// verified on before a reduced check (see `Group::verify`).
const VERIFIED_STATES: usize = 2_000;

/// What the checker needs of a model's state: to clone, hash and compare
/// it, to share it between threads, and to keep it as its serde encoding
/// while it waits to be expanded (decoding must give the same state back;
/// see docs/checker.md, "How states are stored"). Every type with those
/// traits has it.
pub trait CheckableState:
    Clone + Hash + PartialEq + Send + Sync + Serialize + DeserializeOwned
{
}

impl<T> CheckableState for T where
    T: Clone + Hash + PartialEq + Send + Sync + Serialize + DeserializeOwned
{
}

/// Checks every property of `model`: safety ones on each reachable state,
/// liveness ones by a fair-cycle search over the reachable graph.
///
/// # Errors
///
/// [`CheckError`] when the options or the model's declarations cannot be
/// checked; never for what the check finds.
pub fn check<M>(model: &M, options: &CheckOptions) -> Result<Report<M>, CheckError>
where
    M: TemporalModel + Sync,
    M::State: CheckableState,
    M::Action: Clone,
{
    check_with_progress(model, options, None)
}

/// As [`check`], calling `progress` now and then while exploring.
///
/// # Errors
///
/// As [`check`].
pub fn check_with_progress<M>(
    model: &M,
    options: &CheckOptions,
    progress: Option<&(dyn Fn(&Progress) + Sync)>,
) -> Result<Report<M>, CheckError>
where
    M: TemporalModel + Sync,
    M::State: CheckableState,
    M::Action: Clone,
{
    let plan = Plan::new(model, options)?;
    if let Some(group) = &plan.group {
        group.verify(model, &plan.classes, &plan.predicates(), VERIFIED_STATES)?;
    }
    let initial = model.init_states();
    for state in &initial {
        round_trips(state)?;
    }
    let encode = worth_encoding(&initial)?;
    // The narrowest set of classes that holds them all: most models' set
    // operations are then one instruction.
    match plan.classes.len() {
        0..=32 => run::<M, u32>(model, options, &plan, encode, progress),
        33..=64 => run::<M, u64>(model, options, &plan, encode, progress),
        _ => run::<M, Wide>(model, options, &plan, encode, progress),
    }
}

/// Explores and judges, with fairness classes as sets of type `C`, keeping
/// the frontier's states encoded when `encode`.
fn run<M, C>(
    model: &M,
    options: &CheckOptions,
    plan: &Plan<M>,
    encode: bool,
    progress: Option<&(dyn Fn(&Progress) + Sync)>,
) -> Result<Report<M>, CheckError>
where
    M: TemporalModel + Sync,
    M::State: CheckableState,
    M::Action: Clone,
    C: ClassSet,
{
    // Fairness classes and labels serve only the liveness search.
    let (classes, labels) = if options.safety_only {
        (Vec::new(), Vec::new())
    } else {
        (plan.classes.clone(), plan.labels.clone())
    };
    let exploration = Exploration {
        model,
        symmetry: plan.group.as_ref(),
        classes,
        labels,
        targets: plan.targets(),
        keep_edges: !options.safety_only,
        encode,
        threads: options.threads,
        max_states: options
            .max_states
            .unwrap_or(STATE_NUMBERS)
            .min(STATE_NUMBERS),
        timeout: options.timeout,
        memory: options.memory.map(crate::memory::Watch::new),
        spill: match &options.spill {
            Some(spilling) => {
                let dir = SpillDir::new(&spilling.dir).map_err(|error| CheckError::SpillDir {
                    dir: spilling.dir.clone(),
                    reason: error.to_string(),
                })?;
                Some(Spiller::new(dir, spilling.from_start))
            }
            None => None,
        },
        interrupt: options.interrupt.clone(),
        progress,
    };
    let explored = exploration.run::<C>();
    let group = plan.group.as_deref();
    if let Some(error) = explored.failed {
        return Err(error);
    }
    let complete = explored.stopped.is_none();
    let graph = &explored.graph;

    // The properties a state found on the way decides: the safety ones, and
    // the deadlock check when asked for.
    let deadlock = options.deadlock.then_some((
        DEADLOCK_PROPERTY,
        PropertyKind::Deadlock,
        None,
        explored.deadlock,
    ));
    let found_on_the_way = plan
        .safety
        .iter()
        .zip(&explored.found)
        .map(|(p, &found)| (p.name, p.kind, Some(p.condition), found))
        .chain(deadlock);
    let mut properties = Vec::new();
    for (name, kind, condition, found) in found_on_the_way {
        // A state found is an example of a `sometimes`, a counterexample of
        // the others.
        let hit = if kind == PropertyKind::Sometimes {
            Verdict::Holds
        } else {
            Verdict::Violated
        };
        let evidence = match found {
            Some(u) => {
                let (path, end) = walk(model, group, &plan.classes, &graph.route_to(u))?;
                // The path is rebuilt from the initial state by the
                // successors' ordinals: it ends where the state was found
                // only if the model's steps are those of the exploration.
                let wanted = kind == PropertyKind::Sometimes;
                if condition.is_some_and(|holds| holds(model, end.state()) != wanted) {
                    return Err(CheckError::Unrepeatable { property: name });
                }
                Some(Evidence::Path(path))
            }
            None => None,
        };
        properties.push(PropertyReport {
            name,
            kind,
            verdict: verdict(found.is_some(), complete, hit),
            evidence,
        });
    }

    let liveness_started = Instant::now();
    let fairness = plan.strengths.iter().enumerate().fold(
        FairSets::default(),
        |sets: FairSets<C>, (j, strength)| match strength {
            Strength::Weak => FairSets {
                weak: sets.weak.with(j),
                ..sets
            },
            Strength::Strong => FairSets {
                strong: sets.strong.with(j),
                ..sets
            },
        },
    );
    let rules = Rules {
        fairness,
        stutters: options.stuttering == Stuttering::Anywhere,
    };
    let initial = graph.initial_states();
    let lassos = if options.safety_only {
        vec![None; plan.liveness.len()]
    } else {
        let formulas: Vec<LabelFormula> = plan.liveness.iter().map(|p| p.formula).collect();
        find_violations(graph, &formulas, rules, initial, options.threads)
    };
    for (k, (property, lasso)) in plan.liveness.iter().zip(&lassos).enumerate() {
        let searched = complete && !options.safety_only;
        // A behaviour already found for an earlier property that violates
        // this one too is shown instead of one of its own, so that the
        // counterexamples share their steps and are read once.
        let shared = lasso.as_ref().and_then(|_| {
            lassos[..k].iter().flatten().find_map(|earlier| {
                let at = earlier.violates(graph, plan.liveness[k].formula, initial)?;
                Some((earlier, at))
            })
        });
        let judge = Judge {
            property: property.name,
            formula: property.formula,
            labels: &plan.labels,
            classes: &plan.classes,
            strengths: &plan.strengths,
            class_names: &plan.class_names,
        };
        let evidence = match (shared, lasso) {
            (Some((earlier, at)), _) => Some(materialize_lasso(
                model,
                group,
                graph,
                earlier,
                Some(at),
                &judge,
            )?),
            (None, Some(lasso)) => {
                Some(materialize_lasso(model, group, graph, lasso, None, &judge)?)
            }
            (None, None) => None,
        };
        properties.push(PropertyReport {
            name: property.name,
            kind: property.kind,
            verdict: if options.safety_only {
                Verdict::NotChecked
            } else {
                verdict(lasso.is_some(), searched, Verdict::Violated)
            },
            evidence,
        });
    }

    Ok(Report {
        properties,
        stats: Stats {
            generated: explored.generated,
            collision_probability: collision_probability(
                u64::from(graph.len()),
                explored.generated,
            ),
            unique_states: u64::from(graph.len()),
            edges: graph.edge_count() as u64,
            depth: explored.depth,
            explore_time: explored.elapsed,
            liveness_time: liveness_started.elapsed(),
            spilled: explored.spilled,
        },
        stopped: explored.stopped,
    })
}

/// The verdict on a property that `hit` decides when its witness was found,
/// and the opposite decides when the whole graph was searched without one.
fn verdict(found: bool, searched_all: bool, hit: Verdict) -> Verdict {
    match (found, searched_all, hit) {
        (true, _, hit) => hit,
        (false, true, Verdict::Holds) => Verdict::Violated,
        (false, true, _) => Verdict::Holds,
        (false, false, _) => Verdict::Unknown,
    }
}

/// TLC's optimistic estimate of the chance that a fingerprint collision hid
/// a state: `n · (g − n) / 2⁶⁴` for `n` distinct states among `g` generated.
fn collision_probability(distinct: u64, generated: u64) -> f64 {
    distinct as f64 * generated.saturating_sub(distinct) as f64 / 2f64.powi(64)
}

/// A safety property as the exploration sees it.
struct SafetyPlan<M: Model> {
    name: &'static str,
    kind: PropertyKind,
    condition: fn(&M, &M::State) -> bool,
}

/// A liveness property as the fair-cycle search sees it.
struct LivenessPlan {
    name: &'static str,
    kind: PropertyKind,
    formula: LabelFormula,
}

/// The model's declarations, turned into what exploration and search use.
struct Plan<M: Model> {
    classes: Vec<fn(&M::Action) -> bool>,
    /// Per class, weak or strong.
    strengths: Vec<Strength>,
    class_names: Vec<&'static str>,
    /// The renamings states are reduced by, when asked for and declared.
    group: Option<Arc<Group>>,
    labels: Vec<fn(&M, &M::State) -> bool>,
    safety: Vec<SafetyPlan<M>>,
    liveness: Vec<LivenessPlan>,
}

impl<M: TemporalModel> Plan<M> {
    fn new(model: &M, options: &CheckOptions) -> Result<Self, CheckError> {
        if options.threads == 0 {
            return Err(CheckError::NoThreads);
        }
        if options.threads > max_threads() {
            return Err(CheckError::TooManyThreads {
                given: options.threads,
                max: max_threads(),
            });
        }
        if options.max_states == Some(0) {
            return Err(CheckError::NoStates);
        }
        let fairness = model.fairness();
        if fairness.len() > MAX_CLASSES {
            return Err(CheckError::TooManyFairnessClasses(fairness.len()));
        }
        let mut plan = Plan {
            classes: fairness.iter().map(|f| f.class).collect(),
            strengths: fairness.iter().map(|f| f.strength).collect(),
            class_names: fairness.iter().map(|f| f.name).collect(),
            group: None,
            labels: Vec::new(),
            safety: Vec::new(),
            liveness: Vec::new(),
        };
        for property in model.properties() {
            match property.expectation {
                Expectation::Always | Expectation::Sometimes => plan.safety.push(SafetyPlan {
                    name: property.name,
                    kind: if property.expectation == Expectation::Always {
                        PropertyKind::Always
                    } else {
                        PropertyKind::Sometimes
                    },
                    condition: property.condition,
                }),
                Expectation::Eventually => {
                    let q = plan.label(property.condition);
                    plan.liveness.push(LivenessPlan {
                        name: property.name,
                        kind: PropertyKind::Eventually,
                        formula: LabelFormula::LeadsTo { p: None, q },
                    });
                }
            }
        }
        for property in model.liveness() {
            let (kind, formula) = match property.formula {
                Formula::LeadsTo { p, q } => (
                    PropertyKind::LeadsTo,
                    LabelFormula::LeadsTo {
                        p: Some(plan.label(p)),
                        q: plan.label(q),
                    },
                ),
                Formula::EventuallyAlways { p } => (
                    PropertyKind::EventuallyAlways,
                    LabelFormula::EventuallyAlways { p: plan.label(p) },
                ),
                Formula::InfinitelyOften { p } => (
                    PropertyKind::InfinitelyOften,
                    LabelFormula::InfinitelyOften { p: plan.label(p) },
                ),
            };
            plan.liveness.push(LivenessPlan {
                name: property.name,
                kind,
                formula,
            });
        }
        let deadlock = options.deadlock.then_some(DEADLOCK_PROPERTY);
        let mut names: Vec<_> = plan
            .safety
            .iter()
            .map(|p| p.name)
            .chain(plan.liveness.iter().map(|p| p.name))
            .chain(deadlock)
            .collect();
        names.sort_unstable();
        if let Some(pair) = names.windows(2).find(|pair| pair[0] == pair[1]) {
            return Err(CheckError::DuplicateName(pair[0]));
        }
        if options.symmetry {
            plan.group = Group::of(model, &fairness)?.map(Arc::new);
        }
        Ok(plan)
    }

    /// Every predicate a verdict reads, with the name of a property that
    /// reads it.
    fn predicates(&self) -> Vec<NamedPredicate<M>> {
        let mut named: Vec<_> = self.safety.iter().map(|p| (p.name, p.condition)).collect();
        for property in &self.liveness {
            let labels = match property.formula {
                LabelFormula::LeadsTo { p, q } => vec![p, Some(q)],
                LabelFormula::EventuallyAlways { p } | LabelFormula::InfinitelyOften { p } => {
                    vec![Some(p)]
                }
            };
            named.extend(
                labels
                    .into_iter()
                    .flatten()
                    .map(|k| (property.name, self.labels[k])),
            );
        }
        named
    }

    /// The label bit for `predicate`, adding it if new.
    fn label(&mut self, predicate: fn(&M, &M::State) -> bool) -> usize {
        let index = self
            .labels
            .iter()
            .position(|&known| std::ptr::fn_addr_eq(known, predicate))
            .unwrap_or_else(|| {
                self.labels.push(predicate);
                self.labels.len() - 1
            });
        index
    }

    fn targets(&self) -> Vec<Target<M>> {
        self.safety
            .iter()
            .map(|p| Target {
                condition: p.condition,
                wanted: p.kind == PropertyKind::Sometimes,
            })
            .collect()
    }
}
