//! The stateright model of the engine's world: an API server holding one
//! object, an in-order watch that may expire (410) and lists that may be
//! stale, handler runs that fail, hang, return after their deadline or
//! outlive their operator, patches refused with 409, refused for good
//! (422), throttled (429, 5xx) or answered by silence, reads that fail,
//! other writers, operator crashes, user edits and a deletion, all from
//! finite budgets.
//!
//! Every action that touches the operator calls
//! [`Engine::step`](super::engine::Engine::step); the model adds only the
//! world around it (what handlers' code does, what the API server does),
//! and ghost state that the properties read.

mod ghost;
mod reachable;
mod replica;
pub mod scenarios;
mod small;

use serde::{Deserialize, Serialize};
use stateright::{Model, Property};

pub use ghost::{Ghost, Pending};
pub use replica::{Replica, Step};
pub use small::{Digest, Essence, Field, Key, Said, Small};

use super::domain::Domain;
use super::engine::{Effect, Input, Outcome, Patch, RunId};
use super::handlers::Config;
use super::object::ObjectView;
use super::rules::Rule;
use crate::temporal::{Fairness, Liveness, TemporalModel};

/// A version of the object, in the model's domain.
pub type View = ObjectView<Small>;

/// The sub-handlers a parent's code declares when it runs, as a function of
/// the essence it sees.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum SubPlan {
    /// No sub-handlers: the handler does the work itself.
    None,
    /// Always this many sub-handlers.
    Fixed(u8),
    /// This many sub-handlers when the field's value is odd, none otherwise
    /// (the reproduction of kopf #641).
    WhenOdd(Field, u8),
}

/// A handler's own write to the object.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum Writes {
    /// `target := source`: idempotent.
    Copy {
        /// The field written.
        target: Field,
        /// The field copied.
        source: Field,
    },
    /// `target := 1 - target`: not idempotent (a counter, a timestamp).
    Toggle(Field),
}

/// What one registered handler's code does when it runs: the world's side
/// of a handler, which the engine does not know.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct Code {
    /// The sub-handlers it declares (top-level handlers only).
    pub subs: SubPlan,
    /// Its own write, if it makes one (top-level handlers only).
    pub writes: Option<Writes>,
}

impl Code {
    /// Code that declares nothing and writes nothing.
    pub const PLAIN: Code = Code {
        subs: SubPlan::None,
        writes: None,
    };

    /// The sub-handlers of `handler` declared by a run on `essence`.
    pub fn plan(&self, handler: u8, essence: Essence) -> Vec<Key> {
        let n = match self.subs {
            SubPlan::None => 0,
            SubPlan::Fixed(n) => n,
            SubPlan::WhenOdd(field, n) if essence.get(field) % 2 == 1 => n,
            SubPlan::WhenOdd(..) => 0,
        };
        (0..n).map(|s| Key::sub(handler, s)).collect()
    }

    /// The write of a run on `essence`, if it changes anything.
    pub fn write(&self, essence: Essence) -> Option<(Field, u8)> {
        let (field, value) = match self.writes? {
            Writes::Copy { target, source } => (target, essence.get(source)),
            Writes::Toggle(target) => (target, u8::from(essence.get(target) == 0)),
        };
        (essence.get(field) != value).then_some((field, value))
    }
}

/// How many times each fault may happen.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct Faults {
    /// User edits of the edited field.
    pub edits: u8,
    /// Handler runs that end in a temporary error.
    pub temporary_errors: u8,
    /// Handler runs that end in a permanent error.
    pub permanent_errors: u8,
    /// Handler runs whose code panics.
    pub panics: u8,
    /// Handler runs that hang (never return).
    pub hangs: u8,
    /// Operator crashes (a run in flight goes on as a zombie).
    pub crashes: u8,
    /// Graceful stops of the operator (a rolling update): it is told to
    /// stop, and started again once it has.
    pub stops: u8,
    /// Lists served stale (an older version than the newest).
    pub stale_lists: u8,
    /// Watch expiries (410 Gone), each followed by a list.
    pub expiries: u8,
    /// Writes by another client to parts of the object no handler reads
    /// (status, other labels): only the resourceVersion moves.
    pub foreign_writes: u8,
    /// Patches whose reply is lost (applied or not).
    pub lost_replies: u8,
    /// Patches refused for good (400, 403, 422): never applied.
    pub refusals: u8,
    /// Requests throttled or not served (429, 5xx): a patch (applied or
    /// not) or a read.
    pub throttles: u8,
    /// Runs that return after their deadline passed (the engine cancels
    /// them, but the return is already on its way).
    pub overruns: u8,
    /// Replicas that die for good (a lost node), while another lives.
    pub deaths: u8,
    /// Ticks by which replicas' clocks may jump ahead of the world's, in
    /// all (clock drift; within [`Claims::drift`] it is safe).
    ///
    /// [`Claims::drift`]: crate::lifecycle::handlers::Claims::drift
    pub skew: u8,
    /// Whether users may delete the object.
    pub deletion: bool,
    /// Whether a run may last longer than its claim: time passes while it
    /// runs (see `may_pass` in `replica.rs`).
    pub long_runs: bool,
}

/// The world's bounds.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct Budget {
    /// The essence the object is created with.
    pub initial: Essence,
    /// The field users edit (each edit adds 1 to it).
    pub edited: Field,
    /// With `Some(n)`, the edited field counts modulo `n`, so that it
    /// returns to earlier values.
    pub modulo: Option<u8>,
    /// What may go wrong.
    pub faults: Faults,
    /// What the world promises of time.
    pub timing: Timing,
}

/// What the world promises of time: the safety properties that checked
/// writes carry are checked without a promise ([`Timing::Free`]); the
/// one that needs bounds, under them ([`Timing::Bounded`]); liveness under
/// the timing assumption ([`Timing::Timely`]).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum Timing {
    /// Timely schedules (see `may_pass` in `replica.rs`): time does not
    /// pass the end of a live holder's claim while it has a step to take,
    /// a run's timer fires on time, a cancel stops its run at once, and a
    /// run that outlives its start (a zombie, a late return) returns
    /// before its deadline passes. Liveness is judged here.
    #[default]
    Timely,
    /// No timing assumption but one bound: time passes at any moment, and
    /// timers fire late on any replica; a run whose timer fired, or that
    /// is cancelled (a cancel takes effect at the run's next step, so it
    /// goes on, and may return with its side effect done), or whose start
    /// crashed, stops at most `late` ticks after its deadline by its
    /// replica's clock. Claims keep runs apart while their margin
    /// ([`Claims::drift`]) covers `late` plus the clocks' drift.
    ///
    /// [`Claims::drift`]: crate::lifecycle::handlers::Claims::drift
    Bounded {
        /// The most, in ticks, by which a run outlasts its deadline.
        late: u8,
        /// The world's time stops here: the check covers every behaviour
        /// up to it (with no timing assumption, replicas waiting on each
        /// other's claims would let time grow without end).
        horizon: u8,
    },
    /// No timing assumption at all: [`Timing::Bounded`] with no bound.
    Free {
        /// As [`Timing::Bounded`]'s.
        horizon: u8,
    },
}

impl Timing {
    /// How late a run may stop after its deadline, unless timely.
    pub fn lateness(self) -> Option<u8> {
        match self {
            Timing::Timely => None,
            Timing::Bounded { late, .. } => Some(late),
            Timing::Free { .. } => Some(u8::MAX),
        }
    }

    /// The time the world's time stops at.
    pub fn horizon(self) -> u8 {
        match self {
            Timing::Timely => u8::MAX,
            Timing::Bounded { horizon, .. } | Timing::Free { horizon } => horizon,
        }
    }
}

/// The lifecycle of one object under one configuration and budget.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct LifecycleModel {
    /// The engine's configuration; handler `i`'s id is `Key::handler(i)`.
    pub config: Config<Small>,
    /// What each registered handler's code does.
    pub code: Vec<Code>,
    /// The world's bounds.
    pub budget: Budget,
    /// Check every `sometimes`, also those the budget gives no chance.
    pub every_sometimes: bool,
    /// How many replicas of the operator watch the object.
    pub replicas: u8,
}

/// A handler run in flight.
#[derive(Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct Run {
    /// Its name.
    pub id: RunId,
    /// Which handler.
    pub key: Key,
    /// A sub-handler's parent.
    pub parent: Option<Key>,
    /// What it was given.
    pub essence: Essence,
    /// Attempts before it in its episode.
    pub retry: u8,
    /// When the engine gives up on it.
    pub deadline: u8,
}

impl std::fmt::Debug for Run {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "{:?} on {:?} (run {}.{}, deadline t={})",
            self.key, self.essence, self.id.incarnation, self.id.seq, self.deadline
        )
    }
}

/// The whole world.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct World {
    /// The object, until it is gone.
    pub object: Option<View>,
    /// The version before the object's current one: what a stale list
    /// serves.
    pub previous: Option<View>,
    /// The object's resourceVersion (kept after it is gone).
    pub version: u32,
    /// The operator's replicas.
    pub replicas: Vec<Replica>,
    /// The time.
    pub now: u8,
    /// Faults left.
    pub left: Faults,
    /// What the properties read.
    pub ghost: Ghost,
}

/// A step of the world.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum Action {
    /// Users and faults do nothing now (a stutter step): without it, a
    /// behaviour could not stay in a state where only a budgeted disturbance
    /// is possible.
    UserIdle,
    /// A user edits the essence.
    UserEdit,
    /// A user asks for the object's deletion.
    UserDelete,
    /// Another client writes a part of the object no handler reads.
    ForeignWrite,
    /// Replica `.0` takes a step.
    Replica(u8, Step),
}

impl Action {
    /// Its step, if it is one of replica `replica`'s.
    fn step_of(&self, replica: u8) -> Option<Step> {
        match self {
            Action::Replica(r, step) if *r == replica => Some(*step),
            _ => None,
        }
    }
}

impl LifecycleModel {
    /// The same model checking every `sometimes`, also those its budget
    /// gives no chance.
    #[must_use]
    pub fn with_every_sometimes(mut self) -> Self {
        self.every_sometimes = true;
        self
    }

    /// The same model with `rule` taken away from its rules.
    #[must_use]
    pub fn without(mut self, rule: Rule) -> Self {
        self.config.rules = self.config.rules.without(rule);
        self
    }

    /// Feeds replica `r`'s engine, at its replica's clock's time
    /// ([`Engine::timed`], as a driver does), and carries out its effects.
    ///
    /// [`Engine::timed`]: crate::lifecycle::engine::Engine::timed
    fn feed(&self, world: &mut World, r: usize, input: Input<Small>) {
        let now = world.replicas[r].clock(world.now);
        for input in world.replicas[r].engine.timed(now, input) {
            self.carry_out(world, r, input);
        }
    }

    /// Steps replica `r`'s engine with `input` and carries out its effects.
    fn carry_out(&self, world: &mut World, r: usize, input: Input<Small>) {
        let replica = &mut world.replicas[r];
        let mut cancelled = None;
        for effect in replica.engine.step(&self.config, input) {
            match effect {
                Effect::Invoke {
                    run,
                    handler,
                    parent,
                    essence,
                    retry,
                    deadline,
                    ..
                } => {
                    replica.running = Some(Run {
                        id: run,
                        key: handler,
                        parent,
                        essence,
                        retry,
                        deadline,
                    });
                }
                // A cancelled run stops; one whose return is on its way
                // already ([`Step::HandlerOverrun`]) cannot be stopped.
                // Without timely schedules, a cancel takes effect at the
                // run's next step: it goes on as a late run (one at a time;
                // a second stops at once), which may return with its side
                // effect done.
                Effect::Cancel { run } => {
                    replica.hung = replica.hung.filter(|r| r.id != run);
                    if let Some(run) = replica.running.filter(|r| r.id == run) {
                        replica.running = None;
                        cancelled = Some(run);
                        let untimed = self.budget.timing != Timing::Timely;
                        if untimed && replica.late.is_none() {
                            replica.late = Some(run);
                        }
                    }
                }
                Effect::Patch(patch) => replica.patch = Some(patch),
                Effect::Renew(patch) => replica.renewal = Some(patch),
                Effect::Remind { run, at } => {
                    for timed in [&mut replica.running, &mut replica.hung] {
                        if let Some(timed) = timed.as_mut().filter(|t| t.id == run) {
                            timed.deadline = at;
                        }
                    }
                }
                Effect::Fetch => replica.fetch = true,
                Effect::WakeAt(at) => {
                    replica.wake = Some(replica.wake.map_or(at, |w| w.min(at)));
                }
                // Nothing in the world answers what the engine tells people
                // (no annotation of the model's is unreadable: no mark).
                Effect::Tell(_) | Effect::Mark { .. } => {}
            }
        }
        if let Some(run) = cancelled {
            // The engine has given the run up: the ghost counts it as
            // failed for good, as a hung one (what it does after, late, is
            // counted when it returns).
            world
                .ghost
                .returned(run, self.digest(run.key, run.essence), false);
            world.ghost.pend(self, Pending::failed(run));
        }
    }

    /// Records a new version of the object for every watch to deliver.
    fn publish(world: &mut World, before: &View) {
        let Some(object) = &mut world.object else {
            return;
        };
        world.version += 1;
        object.version = world.version;
        world.previous = Some(before.clone());
        for replica in world.replicas.iter_mut().filter(|r| !r.dead) {
            replica.watch.push(object.clone());
        }
    }

    /// The object is gone (deleted with no finalizer left on it).
    fn vanish(world: &mut World) {
        world.object = None;
        world.previous = None;
        world.version += 1;
        for replica in world.replicas.iter_mut().filter(|r| !r.dead) {
            replica.gone_unseen = true;
            replica.watch.clear();
            replica.listing = None;
        }
    }

    fn initial_world(&self) -> World {
        let object = View {
            version: 1,
            essence: self.budget.initial,
            deleting: false,
            finalizer: false,
            progress: Default::default(),
            diff_base: None,
            claim: None,
            epoch: 0,
            marked: false,
        };
        World {
            replicas: (0..self.replicas)
                .map(|r| Replica::new(u32::from(r), 0, Some(object.clone())))
                .collect(),
            object: Some(object),
            previous: None,
            version: 1,
            now: 0,
            left: self.budget.faults,
            ghost: Ghost::new(self.budget.initial),
        }
    }

    /// Applies `patch`, replica `r`'s, at the API server if its
    /// precondition holds, and says whether it did.
    fn apply(&self, world: &mut World, r: usize, patch: &Patch<Small>) -> bool {
        let author = world.replicas[r].engine.incarnation;
        let Some(object) = &mut world.object else {
            return false;
        };
        if patch.checked && object.version != patch.expect {
            return false;
        }
        let before = object.clone();
        world.ghost.status_first = patch.to_status;
        if patch.to_status {
            // The status subresource takes the status alone.
            for write in &patch.writes {
                if let (Some((field, value)), _) = Small::split_status(write) {
                    object.essence = object.essence.with(field, value);
                }
            }
            Self::publish(world, &before);
            return true;
        }
        world
            .ghost
            .overwrite_check(patch, object.version, world.version + 1);
        for (key, record) in &patch.records {
            object.progress.set(key, record.clone());
        }
        let purged = object.progress.is_empty();
        world.ghost.record(self, patch, purged, author);
        for write in &patch.writes {
            // With a status subresource, the main resource ignores status.
            let part = if self.config.status_subresource {
                Small::split_status(write).1
            } else {
                Some(*write)
            };
            if let Some((field, value)) = part {
                object.essence = object.essence.with(field, value);
            }
        }
        if let Some(base) = patch.diff_base {
            world.ghost.early_commit |= !world.ghost.handled(self, base);
            object.diff_base = Some(base);
        }
        if let Some(claim) = patch.claim.as_ref().map(|c| c.after()) {
            let orphaned = object
                .claim
                .is_some_and(|c| !live_holder(&world.replicas, c.holder));
            world.ghost.taken_over |= orphaned && claim.is_some();
            let from_live = object
                .claim
                .is_some_and(|c| c.holder != author && live_holder(&world.replicas, c.holder));
            world.ghost.taken_from_live |= from_live && claim.is_some();
            if let Some(claim) = &claim {
                world.ghost.fence(object.epoch, claim.epoch, claim.holder);
                object.epoch = claim.epoch;
            }
            object.claim = claim;
        }
        match patch.finalizer {
            Some(true) => object.finalizer = true,
            Some(false) => {
                object.finalizer = false;
                world.ghost.early_release |= !world.ghost.deleted_by_all(self);
            }
            None => {}
        }
        if object.deleting && !object.finalizer {
            Self::vanish(world);
        } else {
            Self::publish(world, &before);
        }
        true
    }

    /// Renames resourceVersions to their ranks and run numbers of this
    /// incarnation likewise, so that states differing only in how many
    /// writes or runs happened are one state. Only the equality of versions
    /// matters to the engine and their order to the API server and the
    /// ghost, so behaviour is unchanged.
    fn normalise(world: &mut World) {
        let mut seen = Vec::new();
        for_each_version(world, &mut |v| seen.push(*v));
        seen.sort_unstable();
        seen.dedup();
        for_each_version(world, &mut |v| {
            *v = seen.binary_search(v).unwrap_or(0) as u32 + 1;
        });
        for r in 0..world.replicas.len() {
            let incarnation = world.replicas[r].engine.incarnation;
            let mut runs: Vec<u32> = Vec::new();
            for_each_run(world, &mut |id| {
                if id.incarnation == incarnation {
                    runs.push(id.seq);
                }
            });
            runs.sort_unstable();
            runs.dedup();
            for_each_run(world, &mut |id| {
                if id.incarnation == incarnation {
                    id.seq = runs.binary_search(&id.seq).unwrap_or(0) as u32;
                }
            });
            world.replicas[r].engine.runs = runs.len() as u32;
        }
    }

    /// The engine's digest of `key`'s run on `essence`.
    fn digest(&self, key: Key, essence: Essence) -> Digest {
        self.config.handlers[usize::from(key.handler)].digest(&essence)
    }

    /// What the budget still allows users and faults to do.
    fn disturbable(&self, w: &World) -> bool {
        let l = &w.left;
        let object = w.object.as_ref();
        let alive = object.is_some_and(|o| !o.deleting);
        l.crashes > 0
            || l.stops > 0
            || l.deaths > 0
            || l.skew > 0
            || (alive && (l.edits > 0 || l.deletion || l.foreign_writes > 0 || l.expiries > 0))
    }
}

/// Calls `f` on every resourceVersion held anywhere in the world.
fn for_each_version(world: &mut World, f: &mut impl FnMut(&mut u32)) {
    f(&mut world.version);
    for view in world.object.iter_mut().chain(world.previous.iter_mut()) {
        f(&mut view.version);
    }
    world.ghost.visit_versions(f);
    for replica in &mut world.replicas {
        for view in replica.listing.iter_mut().chain(replica.watch.iter_mut()) {
            f(&mut view.version);
        }
        for patch in replica.patch.iter_mut().chain(replica.renewal.iter_mut()) {
            f(&mut patch.expect);
        }
        replica.engine.visit_versions(f);
    }
}

/// Calls `f` on every run name held anywhere in the world.
fn for_each_run(world: &mut World, f: &mut impl FnMut(&mut RunId)) {
    for replica in &mut world.replicas {
        for run in replica
            .running
            .iter_mut()
            .chain(replica.hung.iter_mut())
            .chain(replica.zombie.iter_mut())
            .chain(replica.late.iter_mut())
        {
            f(&mut run.id);
        }
        replica.engine.visit_runs(f);
    }
}

impl Model for LifecycleModel {
    type State = World;
    type Action = Action;

    fn init_states(&self) -> Vec<World> {
        vec![self.initial_world()]
    }

    fn actions(&self, w: &World, actions: &mut Vec<Action>) {
        let l = &w.left;
        if self.disturbable(w) {
            actions.push(Action::UserIdle);
        }
        let alive = w.object.as_ref().filter(|o| !o.deleting);
        if alive.is_some() {
            if l.edits > 0 {
                actions.push(Action::UserEdit);
            }
            if l.deletion {
                actions.push(Action::UserDelete);
            }
            if l.foreign_writes > 0 {
                actions.push(Action::ForeignWrite);
            }
        }
        for (r, replica) in w.replicas.iter().enumerate() {
            let mut steps = Vec::new();
            self.steps(w, replica, &mut steps);
            let r = r as u8;
            actions.extend(steps.into_iter().map(|step| Action::Replica(r, step)));
        }
    }

    fn next_state(&self, w: &World, action: Action) -> Option<World> {
        let mut w = w.clone();
        match action {
            Action::UserIdle => return Some(w),
            Action::UserEdit => {
                let object = w.object.as_mut()?;
                let before = object.clone();
                let field = self.budget.edited;
                let value = before.essence.get(field).wrapping_add(1);
                let value = self.budget.modulo.map_or(value, |m| value % m);
                object.essence = before.essence.with(field, value);
                w.left.edits -= 1;
                w.ghost.edited(object.essence);
                Self::publish(&mut w, &before);
            }
            Action::UserDelete => {
                let object = w.object.as_mut()?;
                w.left.deletion = false;
                w.ghost.deleted_while_running |= w.replicas.iter().any(|r| r.running.is_some());
                if object.finalizer {
                    let before = object.clone();
                    object.deleting = true;
                    Self::publish(&mut w, &before);
                } else {
                    Self::vanish(&mut w);
                }
            }
            Action::ForeignWrite => {
                let before = w.object.clone()?;
                w.left.foreign_writes -= 1;
                w.ghost.foreign_at = Some(w.version + 1);
                Self::publish(&mut w, &before);
            }
            Action::Replica(r, step) => self.step(&mut w, usize::from(r), step)?,
        }
        Self::normalise(&mut w);
        Some(w)
    }

    fn properties(&self) -> Vec<Property<Self>> {
        let mut properties = vec![
            // □(diff-base := e ⇒ handled(e)): the diff-base only ever takes
            // an essence that every handler it concerns finished on, as
            // `handled` defines from the registrations alone.
            Property::always("diff-base only on handled essences", |_, w: &World| {
                !w.ghost.early_commit
            }),
            // □(∀ patch p applied, ∀ record r ∈ p: changed(r) ≤ p.expect): a
            // patch never overwrites a progress record that changed after
            // the version it was computed from, so no progress is lost.
            Property::always("no progress overwritten unseen", |_, w: &World| {
                !w.ghost.overwrote
            }),
            // □(∀ runs r of h returning: ¬(last return of h was a success
            // by r's operator start on r's digest, with no run of h on
            // another digest since)): a handler, idempotent or not, is not
            // run again on a digest it succeeded on, but by a new start of
            // the operator (so at most 1 + crashes successes per digest,
            // counting runs that outlive a crash).
            Property::always(
                "a handler succeeds once per digest per start",
                |_, w: &World| !w.ghost.rerun,
            ),
            // □(a create handler's run of a live start returns success ⇒
            // no success of it is on record, or returned to a live start):
            // a create handler acts once per object, but for a success
            // lost with the start it returned to.
            Property::always("create succeeds at most once per object", |_, w: &World| {
                !w.ghost.created_twice
            }),
            // □(a run of replica i is cut at time t < its episode's end ⇒
            // the object's claim is not i's, or a renewal of i's claim
            // during the run failed or went unanswered, or was due no
            // earlier than t, its timer late): a run within its timeout is
            // not cut by a claim its replica could renew.
            Property::always(
                "a run is cut before its timeout only if its claim could not be renewed",
                |_, w: &World| !w.ghost.cut_short,
            ),
            // □(∀ claim c set on the object: c.epoch > epoch ∨ (c.epoch =
            // epoch ∧ c.holder = taker(epoch))): every claim taken has a
            // greater epoch than every claim taken before it, and an epoch
            // is its taker's alone, so a store that refuses writes tagged
            // below the greatest epoch it has seen fences off a run whose
            // claim was taken over. Checked writes carry it, with time free.
            Property::always("claims taken have growing epochs", |_, w: &World| {
                !w.ghost.fence_broken
            }),
            // □(finalizer removed ⇒ ∀ delete handlers d: d ran to its end).
            Property::always(
                "finalizer kept until delete handlers finish",
                |_, w: &World| !w.ghost.early_release,
            ),
        ];
        if !matches!(self.budget.timing, Timing::Free { .. }) {
            // □(|{r ∈ replicas : a run of the object's handlers goes on at
            // r}| ≤ 1): runs of two replicas never overlap; a hung run
            // counts until it is cancelled, a zombie or a late run until it
            // returns. It needs bounds on time (no lease keeps apart a run
            // that goes on past its claim), so it is not checked with time
            // free.
            properties.push(Property::always(
                "no two runs of the object's handlers overlap",
                |_, w: &World| w.replicas.iter().filter(|r| r.busy()).count() <= 1,
            ));
        }
        properties.extend(reachable::sometimes(self, self.every_sometimes));
        properties
    }
}

impl LifecycleModel {
    /// A run the engine no longer waits for returns with its side effect
    /// done (a crashed operator's, or one past its deadline): the engine is
    /// told, and ignores it unless it still waits for it after all.
    fn return_unawaited(&self, w: &mut World, r: usize, run: Run) {
        let awaited = w.replicas[r].engine.awaits(run.id);
        let (subs, write) = self.returned(w, run, Outcome::Success, awaited);
        self.feed(
            w,
            r,
            Input::HandlerDone {
                run: run.id,
                outcome: Outcome::Success,
                subs,
                write,
            },
        );
    }

    /// What a run's code did when it returned: the ghost learns of it, and
    /// the engine is told what it declared and wrote. `current` says
    /// whether the run is the operator's own (not a zombie's).
    fn returned(
        &self,
        w: &mut World,
        run: Run,
        outcome: Outcome<Small>,
        current: bool,
    ) -> (Vec<Key>, Option<(Field, u8)>) {
        let code = &self.code[usize::from(run.key.handler)];
        let top = run.key.sub.is_none();
        let (subs, write) = match outcome {
            Outcome::Success if top => (
                code.plan(run.key.handler, run.essence),
                code.write(run.essence),
            ),
            _ => (Vec::new(), None),
        };
        let digest = self.digest(run.key, run.essence);
        w.ghost.returned(run, digest, outcome == Outcome::Success);
        w.ghost.wrote |= write.is_some();
        // A temporary error on the last attempt ends the episode too.
        let spec = &self.config.handlers[usize::from(run.key.handler)];
        let last_attempt = spec.out_of_attempts(run.retry.saturating_add(1));
        let ends = match outcome {
            Outcome::Success | Outcome::Permanent { .. } => true,
            Outcome::Temporary { .. } | Outcome::Panicked { .. } => last_attempt,
            Outcome::GivenUp => false,
        };
        let for_now = matches!(
            outcome,
            Outcome::Temporary { .. } | Outcome::Panicked { .. }
        );
        w.ghost.exhausted |= current && last_attempt && for_now;
        if current && ends {
            let pending = Pending {
                run,
                seen: write.map_or(run.essence, |(f, v)| run.essence.with(f, v)),
                plan: subs.clone(),
                success: outcome == Outcome::Success,
            };
            w.ghost.pend(self, pending);
        }
        (subs, write)
    }
}

/// Whether `holder` is the identity of a live replica's current start.
fn live_holder(replicas: &[Replica], holder: u32) -> bool {
    replicas
        .iter()
        .any(|r| !r.dead && r.engine.incarnation == holder)
}

/// The object is claimed by a replica start that is no more (it crashed,
/// died, or stopped without releasing its claim).
fn orphaned(w: &World) -> bool {
    w.object
        .as_ref()
        .and_then(|o| o.claim)
        .is_some_and(|c| !live_holder(&w.replicas, c.holder))
}

/// The API server refused a patch for good and the object has not changed
/// since the version the patch was computed from: nothing can be written,
/// and the engine rightly rests until someone changes the object.
fn rests_refused(w: &World) -> bool {
    w.object
        .as_ref()
        .is_some_and(|o| w.ghost.refused == Some(o.version))
}

/// The object is handled in full and nothing is in flight: the diff-base
/// is the essence, `handled` holds of it, and handling rests; or a patch
/// of it was refused for good and it has not changed since.
fn settled(m: &LifecycleModel, w: &World) -> bool {
    if rests_refused(w) {
        return true;
    }
    match &w.object {
        None => true,
        Some(object) => {
            !object.deleting
                && object.diff_base == Some(object.essence)
                && w.ghost.handled(m, object.essence)
                && w.replicas.iter().all(Replica::quiet)
        }
    }
}

/// A fairness class: its name and its actions.
type Class = (&'static str, fn(&Action) -> bool);

/// The fairness classes of replicas 0 and 1 (the model has at most two).
const FAIRNESS: [[Class; 5]; 2] = [
    [
        ("watch delivery", |a| {
            a.step_of(0).is_some_and(|s| s.is_watch())
        }),
        ("handler completion", |a| {
            a.step_of(0).is_some_and(|s| s.is_handler())
        }),
        ("API server", |a| a.step_of(0).is_some_and(|s| s.is_api())),
        ("clock", |a| a.step_of(0).is_some_and(|s| s.is_clock())),
        ("operator restart", |a| {
            a.step_of(0).is_some_and(|s| s.is_restart())
        }),
    ],
    [
        ("watch delivery (replica 1)", |a| {
            a.step_of(1).is_some_and(|s| s.is_watch())
        }),
        ("handler completion (replica 1)", |a| {
            a.step_of(1).is_some_and(|s| s.is_handler())
        }),
        ("API server (replica 1)", |a| {
            a.step_of(1).is_some_and(|s| s.is_api())
        }),
        ("clock (replica 1)", |a| {
            a.step_of(1).is_some_and(|s| s.is_clock())
        }),
        ("operator restart (replica 1)", |a| {
            a.step_of(1).is_some_and(|s| s.is_restart())
        }),
    ],
];

impl TemporalModel for LifecycleModel {
    /// Weak fairness per replica (a class shared by replicas would let
    /// one starve): its watch delivers, its runs return, the API server
    /// answers it, its timers fire, and a stopped one's successor starts.
    fn fairness(&self) -> Vec<Fairness<Self>> {
        FAIRNESS
            .iter()
            .take(usize::from(self.replicas))
            .flatten()
            .map(|&(name, class)| Fairness::weak(name, class))
            .collect()
    }

    /// Judged under timely schedules only: without them, no run need
    /// ever end before its claim does.
    fn liveness(&self) -> Vec<Liveness<Self>> {
        if self.budget.timing != Timing::Timely {
            return Vec::new();
        }
        vec![
            // ◇□settled: once the object stops changing, the diff-base comes
            // to equal its final essence, every handler and sub-handler it
            // concerns has finished on it, and handling rests (unless the
            // API server refused a patch of it for good, and nobody changed
            // it since: nothing can be written then).
            Liveness::eventually_always("handled on the final essence", settled),
            // deleting ~> ¬finalizer ∨ refused-for-good-and-unchanged.
            // orphaned ~> ¬orphaned: a claim whose holder is no more (a
            // crashed start, a dead replica) is taken over or released, so
            // its object is not left to wait for a holder that will never
            // come back (or the object is gone).
            Liveness::leads_to(
                "a dead replica's objects are taken over",
                |_, w: &World| orphaned(w),
                |_, w: &World| !orphaned(w),
            ),
            Liveness::leads_to(
                "deletion releases the finalizer",
                |_, w: &World| w.object.as_ref().is_some_and(|o| o.deleting),
                |_, w: &World| w.object.as_ref().is_none_or(|o| !o.finalizer) || rests_refused(w),
            ),
        ]
    }
}
