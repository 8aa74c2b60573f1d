//! The models the `steadfast` command knows, each with its variants and
//! scenarios, behind one object-safe interface.

use std::fmt::Debug;
use std::net::SocketAddr;

use steadfast_spec::leasequeue::model::{scenarios as lq_scenarios, LeaseQueueModel};
use steadfast_spec::lifecycle::model::{scenarios, LifecycleModel};
use steadfast_spec::mutex::{Lock, LockVariant};
use steadfast_spec::twophase::{TmVariant, TwoPhase};
use steadfast_spec::TemporalModel;
use steadfast_spec::{leasequeue, lifecycle};

use crate::{
    census::Census, check_with_progress, CheckError, CheckOptions, CheckableState, Progress,
    RenderedReport,
};

/// A named choice of a model's rules (for example the legacy rules and the
/// fixed ones).
pub struct Variant<V> {
    /// The name given to `--variant`.
    pub name: &'static str,
    /// One line on what it is.
    pub about: &'static str,
    /// What the model is built from.
    pub value: V,
}

/// A named configuration of a model's environment and bounds.
pub struct Scenario<S> {
    /// The name given to `--scenario`.
    pub name: &'static str,
    /// One line on what it is.
    pub about: &'static str,
    /// Whether `steadfast check` runs it when no scenario is named; large
    /// benchmark scenarios are not.
    pub by_default: bool,
    /// What the model is built from.
    pub value: S,
}

/// A registered model, whatever its types.
pub trait Entry: Sync {
    /// The name given on the command line.
    fn name(&self) -> &'static str;
    /// One line on what it models.
    fn about(&self) -> &'static str;
    /// Variant names and descriptions; the first is the default.
    fn variants(&self) -> Vec<(&'static str, &'static str)>;
    /// Scenario names, descriptions, and whether each runs by default.
    fn scenarios(&self) -> Vec<(&'static str, &'static str, bool)>;
    /// Checks one variant in one scenario.
    ///
    /// # Errors
    ///
    /// [`RegistryError`] when a name is unknown or the model cannot be
    /// checked as declared.
    fn check(
        &self,
        variant: &str,
        scenario: &str,
        options: &CheckOptions,
        progress: Option<&(dyn Fn(&Progress) + Sync)>,
    ) -> Result<RenderedReport, RegistryError>;
    /// Serves stateright's Explorer for one variant in one scenario, calling
    /// `serving` with the address it really got (a port 0 asked for becomes
    /// a free port) once it is bound; returns only on error.
    ///
    /// # Errors
    ///
    /// [`RegistryError`] when a name is unknown or the address cannot be
    /// bound.
    fn explore(
        &self,
        variant: &str,
        scenario: &str,
        bind: SocketAddr,
        serving: &dyn Fn(SocketAddr),
    ) -> Result<(), RegistryError>;
    /// Takes the commutation census of one variant in one scenario, over
    /// its first `max_states` states (see [`crate::census`]).
    ///
    /// # Errors
    ///
    /// [`RegistryError`] when a name is unknown or the model cannot be
    /// built.
    fn census(
        &self,
        variant: &str,
        scenario: &str,
        max_states: u64,
    ) -> Result<Census, RegistryError>;
}

/// Why a registered model could not be checked or explored.
#[derive(Debug, thiserror::Error)]
pub enum RegistryError {
    /// No variant of that name.
    #[error("model {model} has no variant {given:?}; choose one of: {choices}")]
    UnknownVariant {
        /// The model.
        model: &'static str,
        /// What was asked for.
        given: String,
        /// The names that exist.
        choices: String,
    },
    /// No scenario of that name.
    #[error("model {model} has no scenario {given:?}; choose one of: {choices}")]
    UnknownScenario {
        /// The model.
        model: &'static str,
        /// What was asked for.
        given: String,
        /// The names that exist.
        choices: String,
    },
    /// The model could not be built for that variant and scenario.
    #[error("failed to build model {model}: {reason}")]
    Build {
        /// The model.
        model: &'static str,
        /// Why.
        reason: String,
    },
    /// The checker refused the model's declarations or the options.
    #[error("failed to check model {model}: {source}")]
    Check {
        /// The model.
        model: &'static str,
        /// Why.
        #[source]
        source: CheckError,
    },
    /// The Explorer's address could not be bound.
    #[error("failed to bind the Explorer to {addr}: {source}; pass another --bind address")]
    Bind {
        /// The address.
        addr: SocketAddr,
        /// Why.
        #[source]
        source: std::io::Error,
    },
}

/// A model with its variants and scenarios, and how to build it from one of
/// each.
pub struct ModelEntry<M, V: 'static, S: 'static> {
    /// The name given on the command line.
    pub name: &'static str,
    /// One line on what it models.
    pub about: &'static str,
    /// Its variants; the first is the default.
    pub variants: &'static [Variant<V>],
    /// Its scenarios.
    pub scenarios: &'static [Scenario<S>],
    /// Builds the model.
    pub build: fn(&V, &S) -> Result<M, String>,
}

impl<M, V: Sync, S: Sync> ModelEntry<M, V, S> {
    fn model(&self, variant: &str, scenario: &str) -> Result<M, RegistryError> {
        let v = self
            .variants
            .iter()
            .find(|v| v.name == variant)
            .ok_or_else(|| RegistryError::UnknownVariant {
                model: self.name,
                given: variant.to_string(),
                choices: names(self.variants.iter().map(|v| v.name)),
            })?;
        let s = self
            .scenarios
            .iter()
            .find(|s| s.name == scenario)
            .ok_or_else(|| RegistryError::UnknownScenario {
                model: self.name,
                given: scenario.to_string(),
                choices: names(self.scenarios.iter().map(|s| s.name)),
            })?;
        (self.build)(&v.value, &s.value).map_err(|reason| RegistryError::Build {
            model: self.name,
            reason,
        })
    }
}

fn names<'a>(names: impl Iterator<Item = &'a str>) -> String {
    names.collect::<Vec<_>>().join(", ")
}

impl<M, V, S> Entry for ModelEntry<M, V, S>
where
    M: TemporalModel + Send + Sync + 'static,
    M::State: CheckableState + Debug,
    M::Action: Clone + Debug + PartialEq + Send + Sync,
    V: Sync,
    S: Sync,
{
    fn name(&self) -> &'static str {
        self.name
    }

    fn about(&self) -> &'static str {
        self.about
    }

    fn variants(&self) -> Vec<(&'static str, &'static str)> {
        self.variants.iter().map(|v| (v.name, v.about)).collect()
    }

    fn scenarios(&self) -> Vec<(&'static str, &'static str, bool)> {
        self.scenarios
            .iter()
            .map(|s| (s.name, s.about, s.by_default))
            .collect()
    }

    fn check(
        &self,
        variant: &str,
        scenario: &str,
        options: &CheckOptions,
        progress: Option<&(dyn Fn(&Progress) + Sync)>,
    ) -> Result<RenderedReport, RegistryError> {
        let model = self.model(variant, scenario)?;
        let report = check_with_progress(&model, options, progress).map_err(|source| {
            RegistryError::Check {
                model: self.name,
                source,
            }
        })?;
        Ok(report.render())
    }

    fn explore(
        &self,
        variant: &str,
        scenario: &str,
        bind: SocketAddr,
        serving: &dyn Fn(SocketAddr),
    ) -> Result<(), RegistryError> {
        let model = self.model(variant, scenario)?;
        // stateright's server panics when it cannot bind, and does not say
        // which port it got: bind first, then hand it the address found.
        let bound = std::net::TcpListener::bind(bind)
            .and_then(|listener| listener.local_addr())
            .map_err(|source| RegistryError::Bind { addr: bind, source })?;
        serving(bound);
        model.checker().serve(bound);
        Ok(())
    }

    fn census(
        &self,
        variant: &str,
        scenario: &str,
        max_states: u64,
    ) -> Result<Census, RegistryError> {
        Ok(crate::census::census(
            &self.model(variant, scenario)?,
            max_states,
        ))
    }
}

/// The example lock's variants.
static LOCK_VARIANTS: [Variant<LockVariant>; 2] = [
    Variant {
        name: "filter",
        about: "the filter lock (Peterson's for two): exclusive and starvation-free",
        value: LockVariant::Filter,
    },
    Variant {
        name: "victim-only",
        about: "waits only on the victim flag: a lone contender waits forever",
        value: LockVariant::VictimOnly,
    },
];

/// The example lock's scenarios: how many processes contend.
static LOCK_SCENARIOS: [Scenario<LockScenario>; 3] = [
    Scenario {
        name: "peterson",
        about: "2 processes (Peterson's algorithm)",
        by_default: true,
        value: LockScenario {
            processes: 2,
            rounds: 0,
        },
    },
    Scenario {
        name: "three",
        about: "3 processes",
        by_default: true,
        value: LockScenario {
            processes: 3,
            rounds: 0,
        },
    },
    Scenario {
        name: "bench",
        about: "6 processes that enter once each, 2.8 million states: for benchmarks",
        by_default: false,
        value: LockScenario {
            processes: 6,
            rounds: 1,
        },
    },
];

/// A lock scenario: how many processes, and how often each may enter (0:
/// without limit).
pub struct LockScenario {
    processes: u8,
    rounds: u8,
}

fn build_lock(variant: &LockVariant, scenario: &LockScenario) -> Result<Lock, String> {
    Lock::new(scenario.processes, *variant)
        .map(|lock| lock.with_rounds(scenario.rounds))
        .map_err(|e| e.to_string())
}

static MUTEX: ModelEntry<Lock, LockVariant, LockScenario> = ModelEntry {
    name: "mutex",
    about: "an example: the filter lock, and a lock that keeps only its victim check",
    variants: &LOCK_VARIANTS,
    scenarios: &LOCK_SCENARIOS,
    build: build_lock,
};

/// The lifecycle protocol's variants: the fix first, kopf's rules second.
static LIFECYCLE_VARIANTS: [Variant<lifecycle::Variant>; 2] = [
    Variant {
        name: "steadfast",
        about: "per-handler digests; the diff-base advances only to an essence every handler saw",
        value: lifecycle::Variant::Steadfast,
    },
    Variant {
        name: "kopf",
        about: "kopf's rules: finished stays finished, the diff-base absorbs every change (#641)",
        value: lifecycle::Variant::Kopf,
    },
];

type LifecycleScenario = fn(lifecycle::Variant) -> LifecycleModel;

static LIFECYCLE_SCENARIOS: [Scenario<LifecycleScenario>; 25] = [
    Scenario {
        name: "seed641",
        about:
            "kopf #641: a field handler on status.tick, 3 sub-handlers on odd ticks, 2 tick changes",
        by_default: true,
        value: scenarios::seed641,
    },
    Scenario {
        name: "general",
        about: "create, field (2 sub-handlers on odd sizes), self-writing update, delete and \
                resume handlers; 2 edits that come back, a temporary and a permanent error, \
                a crash with a zombie run, a deletion",
        by_default: true,
        value: scenarios::general,
    },
    Scenario {
        name: "foreign",
        about: "another writer's status writes refuse the engine's patches (409)",
        by_default: true,
        value: scenarios::foreign,
    },
    Scenario {
        name: "stale",
        about: "a crash mid-run (a zombie), stale lists after the restart and after a watch expiry",
        by_default: true,
        value: scenarios::stale,
    },
    Scenario {
        name: "hang",
        about: "a handler hangs: a field handler, or the delete handler during a deletion",
        by_default: true,
        value: scenarios::hang,
    },
    Scenario {
        name: "panic",
        about: "a handler's code panics once around an edit, and is retried",
        by_default: true,
        value: scenarios::panic,
    },
    Scenario {
        name: "lost",
        about: "a patch's reply is lost, applied or not",
        by_default: true,
        value: scenarios::lost,
    },
    Scenario {
        name: "stamp",
        about: "a create handler whose own write is not idempotent",
        by_default: true,
        value: scenarios::stamp,
    },
    Scenario {
        name: "create",
        about: "create, field and update handlers, 2 edits during the creation: create acts \
                once",
        by_default: true,
        value: scenarios::create,
    },
    Scenario {
        name: "refused",
        about: "a patch refused for good (422) around an edit and a deletion",
        by_default: true,
        value: scenarios::refused,
    },
    Scenario {
        name: "throttled",
        about: "two requests throttled or failed (429, 5xx; a patch applied or not, or a read)",
        by_default: true,
        value: scenarios::throttled,
    },
    Scenario {
        name: "split",
        about: "a status subresource: a handler's status write goes first, alone, and the rest \
                of its patch after it (a crash or a lost reply between), around an edit",
        by_default: true,
        value: scenarios::split,
    },
    Scenario {
        name: "late",
        about: "a run returns just after its deadline, as it is cancelled",
        by_default: true,
        value: scenarios::late,
    },
    Scenario {
        name: "rolling",
        about:
            "a graceful stop mid-work (a rolling update of one replica) and the successor's start",
        by_default: true,
        value: scenarios::rolling,
    },
    Scenario {
        name: "exhausted",
        about: "a field and a delete handler of 2 attempts run out of them (3 temporary errors)",
        by_default: true,
        value: scenarios::exhausted,
    },
    Scenario {
        name: "replicas",
        about: "two replicas share an object with a field handler through an edit",
        by_default: true,
        value: scenarios::replicas,
    },
    Scenario {
        name: "takeover",
        about: "two replicas, one dies for good at any point; a field handler with 2 \
                sub-handlers and a delete handler, an edit and a deletion",
        by_default: true,
        value: scenarios::takeover,
    },
    Scenario {
        name: "rolling-replicas",
        about: "a rolling update of two replicas: one stops gracefully, its successor starts \
                while the other works",
        by_default: true,
        value: scenarios::rolling_replicas,
    },
    Scenario {
        name: "drift",
        about: "two replicas' clocks drift apart by the claims' budget (1 tick), a hung run",
        by_default: true,
        value: scenarios::drift,
    },
    Scenario {
        name: "long",
        about: "a run longer than its claim, which its replica renews; an edit, a lost reply",
        by_default: true,
        value: scenarios::long,
    },
    Scenario {
        name: "free",
        about: "time free (no timing assumption): two replicas, late timers and cancels, a \
                zombie, an edit, a deletion; the safety that checked writes carry, only",
        by_default: true,
        value: scenarios::free,
    },
    Scenario {
        name: "bounded",
        about: "two replicas whose runs stop at most 1 tick past their deadline (late timers, \
                late cancels, a zombie), within the claims' margin: no two runs overlap",
        by_default: true,
        value: scenarios::bounded,
    },
    Scenario {
        name: "bounded-beyond",
        about: "bounded with runs stopping 1 tick beyond the claims' margin: two runs overlap \
                (the bound shown), not by default",
        by_default: false,
        value: scenarios::bounded_beyond,
    },
    Scenario {
        name: "drift-beyond",
        about: "drift one tick beyond the claims' budget: two runs overlap (the assumption \
                shown), not by default",
        by_default: false,
        value: scenarios::drift_beyond,
    },
    Scenario {
        name: "bench",
        about: "general with 3 edits: for benchmarks",
        by_default: false,
        value: scenarios::bench,
    },
];

/// Builds a model whose scenarios are functions of its variant.
fn from_scenario<V: Copy, M>(variant: &V, scenario: &fn(V) -> M) -> Result<M, String> {
    Ok(scenario(*variant))
}

static LIFECYCLE: ModelEntry<LifecycleModel, lifecycle::Variant, LifecycleScenario> = ModelEntry {
    name: "lifecycle",
    about:
        "the handler lifecycle of a Kubernetes operator (kopf's model) and the fix for kopf #641",
    variants: &LIFECYCLE_VARIANTS,
    scenarios: &LIFECYCLE_SCENARIOS,
    build: from_scenario::<lifecycle::Variant, LifecycleModel>,
};

/// The leasequeue protocol's variants: the fix first, OpenWhisk's rules
/// second.
static LEASEQUEUE_VARIANTS: [Variant<leasequeue::Variant>; 2] = [
    Variant {
        name: "steadfast",
        about: "lease loss detected and keys re-registered; self-election; resumed watches",
        value: leasequeue::Variant::Steadfast,
    },
    Variant {
        name: "openwhisk",
        about: "OpenWhisk's rules: watch-fed cache, missing key fails the activation (#5286)",
        value: leasequeue::Variant::OpenWhisk,
    },
];

type LeaseQueueScenario = fn(leasequeue::Variant) -> LeaseQueueModel;

static LEASEQUEUE_SCENARIOS: [Scenario<LeaseQueueScenario>; 37] = [
    Scenario {
        name: "seed5286",
        about: "OpenWhisk #5286: 2 schedulers, 1 controller, 1 action, TTL 1 (3) against a 3-tick outage of a running system",
        by_default: true,
        value: lq_scenarios::seed5286,
    },
    Scenario {
        name: "long-ttl",
        about: "seed5286 with a TTL of 6, longer than the outage and the fence's margin (the reporter's workaround)",
        by_default: true,
        value: lq_scenarios::long_ttl,
    },
    Scenario {
        name: "drift",
        about: "seed5286 with etcd's clock running one tick ahead of the schedulers' once (within the fence's margin)",
        by_default: true,
        value: lq_scenarios::drift,
    },
    Scenario {
        name: "drift-beyond",
        about: "seed5286 with etcd's clock two ticks ahead: beyond the fence's margin, so fencing fails",
        by_default: false,
        value: lq_scenarios::drift_beyond,
    },
    Scenario {
        name: "deadline",
        about: "seed5286 with a deadline 2 ticks after each submission: an activation waits out the outage past it",
        by_default: true,
        value: lq_scenarios::deadline,
    },
    Scenario {
        name: "no-members",
        about: "seed5286's sizes with an outage of both schedulers: no live member to place a queue on",
        by_default: true,
        value: lq_scenarios::no_members,
    },
    Scenario {
        name: "late-delete",
        about: "seed5286 with a request held up in the network: a delete that lands after a re-claim",
        by_default: true,
        value: lq_scenarios::late_delete,
    },
    Scenario {
        name: "duplicate",
        about: "2 schedulers, 1 controller, 1 action; a message sent twice and a crash",
        by_default: true,
        value: lq_scenarios::duplicate,
    },
    Scenario {
        name: "join",
        about: "2 schedulers, 1 controller, 2 actions; scheduler 1 joins the running cluster, a queue retiring",
        by_default: true,
        value: lq_scenarios::join,
    },
    Scenario {
        name: "departure",
        about: "2 schedulers, 1 controller, 2 actions; a scheduler stops for good, with what it holds",
        by_default: true,
        value: lq_scenarios::departure,
    },
    Scenario {
        name: "drain",
        about: "2 schedulers, 1 controller, 2 actions; a scheduler drains: no new work, what it holds settles, its lease given back",
        by_default: true,
        value: lq_scenarios::drain,
    },
    Scenario {
        name: "executions",
        about: "2 schedulers, 1 controller, 1 action; an execution fails, one hangs past the 2-tick execution timeout, a scheduler drains",
        by_default: true,
        value: lq_scenarios::executions,
    },
    Scenario {
        name: "retries",
        about: "2 schedulers, 2 controllers, 1 action; one activation submitted again under its id through both controllers, before or after it ended",
        by_default: true,
        value: lq_scenarios::retries,
    },
    Scenario {
        name: "retries-departure",
        about: "retries, with a scheduler that stops for good and one that crashes, each at any time",
        by_default: true,
        value: lq_scenarios::retries_departure,
    },
    Scenario {
        name: "crash-deadline",
        about: "2 schedulers, 1 controller, 1 action with a 3-tick deadline; a scheduler crashes after running it, and its copy is routed again",
        by_default: true,
        value: lq_scenarios::crash_deadline,
    },
    Scenario {
        name: "lost-answers",
        about: "2 schedulers, 1 controller, 1 action; an answer lost (an acknowledgement, a refusal, a report or a confirmation) and a crash",
        by_default: true,
        value: lq_scenarios::lost_answers,
    },
    Scenario {
        name: "late-answers",
        about: "2 schedulers, 1 controller, 1 action; a retry under the id, an answer held up and delivered late, a crash",
        by_default: true,
        value: lq_scenarios::late_answers,
    },
    Scenario {
        name: "answers-astray",
        about: "late-answers with an answer lost, one delivered twice and a message lost besides",
        by_default: true,
        value: lq_scenarios::answers_astray,
    },
    Scenario {
        name: "vanishing",
        about: "2 schedulers, 1 controller, 2 actions; a scheduler stops for good without a word: what is sent to it is neither answered nor refused",
        by_default: true,
        value: lq_scenarios::vanishing,
    },
    Scenario {
        name: "slow-watch",
        about: "2 schedulers, 1 controller, 2 actions; a stalled watch, and etcd slower than a wake-up to open each watch the controller asks for",
        by_default: true,
        value: lq_scenarios::slow_watch,
    },
    Scenario {
        name: "forward-loss",
        about: "2 schedulers, 2 controllers, 1 action placed on both: a forward, a crash and a scheduler that leaves for good",
        by_default: true,
        value: lq_scenarios::forward_loss,
    },
    Scenario {
        name: "forward-vanish",
        about: "forward-loss with a scheduler that vanishes instead: a forward to it is neither acknowledged nor refused",
        by_default: true,
        value: lq_scenarios::forward_vanish,
    },
    Scenario {
        name: "foreign-value",
        about: "forward-loss's sizes with a value no steadfast node wrote put under the action's key, which stays until someone deletes it",
        by_default: true,
        value: lq_scenarios::foreign_value,
    },
    Scenario {
        name: "access-denied",
        about: "forward-loss's sizes with etcd refusing one scheduler's user the action's key until an operator grants it",
        by_default: true,
        value: lq_scenarios::access_denied,
    },
    Scenario {
        name: "compaction",
        about: "seed5286 with a compaction at any time: a watch cut off by the outage may resume from a revision compacted away",
        by_default: true,
        value: lq_scenarios::compaction,
    },
    Scenario {
        name: "general",
        about: "2 schedulers, 2 controllers, 2 actions placed by a fixed rule; an outage, a compaction, a queue retiring",
        by_default: true,
        value: lq_scenarios::general,
    },
    Scenario {
        name: "contest",
        about: "2 schedulers, 2 controllers, one action placed on both: a contested election; a queue retiring, a late request",
        by_default: true,
        value: lq_scenarios::contest,
    },
    Scenario {
        name: "lossy",
        about: "general's sizes; a request applied late, a reply lost, a queue retiring",
        by_default: true,
        value: lq_scenarios::lossy,
    },
    Scenario {
        name: "redelivery",
        about: "general's sizes; a message delivered twice, one reordered, a crash",
        by_default: true,
        value: lq_scenarios::redelivery,
    },
    Scenario {
        name: "etcd-faults",
        about: "general's sizes; an etcd leader loss, a stalled watch, etcd's clock a tick ahead, a write outside the endpoint keys",
        by_default: true,
        value: lq_scenarios::etcd_faults,
    },
    Scenario {
        name: "bench",
        about: "general with a message sent twice besides: for benchmarks",
        by_default: false,
        value: lq_scenarios::bench,
    },
    Scenario {
        name: "general-crash",
        about: "general with a scheduler crash and an etcd leader loss besides",
        by_default: false,
        value: lq_scenarios::general_crash,
    },
    Scenario {
        name: "presume-leaderless",
        about: "2 schedulers, 1 controller, 1 action; an outage expires a running scheduler's lease, then etcd loses its leader: the time without one is not the scheduler's absence",
        by_default: true,
        value: lq_scenarios::presume_leaderless,
    },
    Scenario {
        name: "presume-early",
        about: "no-members with a controller that presumes a scheduler gone a tick after its member key went: past the bound, executed at most once fails",
        by_default: false,
        value: lq_scenarios::presume_early,
    },
    Scenario {
        name: "edges",
        about: "retries with a vanishing, a crash, a lost answer, an executor's error, a foreign value under the action's key and a 4-tick deadline: the user's edges at once",
        by_default: false,
        value: lq_scenarios::edges,
    },
    Scenario {
        name: "three",
        about: "3 schedulers, 1 controller, 2 actions; a scheduler stops for good, with what it holds",
        by_default: false,
        value: lq_scenarios::three,
    },
    Scenario {
        name: "three-crash",
        about: "3 schedulers, 2 controllers, 2 actions; a scheduler stops for good, one crashes",
        by_default: false,
        value: lq_scenarios::three_crash,
    },
];

static LEASEQUEUE: ModelEntry<LeaseQueueModel, leasequeue::Variant, LeaseQueueScenario> =
    ModelEntry {
        name: "leasequeue",
        about: "per-action queues under etcd leases, routed by controllers (OpenWhisk #5286)",
        variants: &LEASEQUEUE_VARIANTS,
        scenarios: &LEASEQUEUE_SCENARIOS,
        build: from_scenario::<leasequeue::Variant, LeaseQueueModel>,
    };

/// Two-phase commit's transaction managers: the protocol first.
static TWO_PHASE_VARIANTS: [Variant<TmVariant>; 3] = [
    Variant {
        name: "two-phase",
        about: "commits once every RM is prepared, aborts at will before: consistent, and decides",
        value: TmVariant::TwoPhase,
    },
    Variant {
        name: "hasty",
        about: "commits once any RM is prepared: an RM that aborted on its own disagrees",
        value: TmVariant::Hasty,
    },
    Variant {
        name: "no-abort",
        about: "never aborts: after an RM aborts on its own, the prepared ones wait forever",
        value: TmVariant::NoAbort,
    },
];

/// How many resource managers take part.
static TWO_PHASE_SCENARIOS: [Scenario<u8>; 3] = [
    Scenario {
        name: "three",
        about: "3 resource managers",
        by_default: true,
        value: 3,
    },
    Scenario {
        name: "five",
        about: "5 resource managers",
        by_default: true,
        value: 5,
    },
    Scenario {
        name: "bench",
        about: "8 resource managers (1.7 million states whole): for benchmarks",
        by_default: false,
        value: 8,
    },
];

fn build_two_phase(variant: &TmVariant, rms: &u8) -> Result<TwoPhase, String> {
    TwoPhase::new(*rms, *variant).map_err(|e| e.to_string())
}

static TWO_PHASE: ModelEntry<TwoPhase, TmVariant, u8> = ModelEntry {
    name: "twophase",
    about: "an example: two-phase commit with interchangeable resource managers, fair one by one",
    variants: &TWO_PHASE_VARIANTS,
    scenarios: &TWO_PHASE_SCENARIOS,
    build: build_two_phase,
};

static REGISTRY: [&dyn Entry; 4] = [&LIFECYCLE, &LEASEQUEUE, &MUTEX, &TWO_PHASE];

/// Every model the `steadfast` command knows, in listing order.
pub fn registry() -> &'static [&'static dyn Entry] {
    &REGISTRY
}

/// The registered model named `name`.
pub fn find(name: &str) -> Option<&'static dyn Entry> {
    registry()
        .iter()
        .copied()
        .find(|entry| entry.name() == name)
}
