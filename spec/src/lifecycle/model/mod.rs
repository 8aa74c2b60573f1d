//! The stateright model of the engine's world: an API server holding one
//! object, an in-order watch that may expire (410) and lists that may be
//! stale, handler runs that fail, hang, return after their deadline or
//! outlive their operator, patches refused with 409, refused for good
//! (422), throttled (429, 5xx) or answered by silence, reads that fail,
//! other writers, operator crashes, user edits and a deletion, all from
//! finite budgets.
//!
//! Every action that touches the operator calls [`Engine::step`]; the model
//! adds only the world around it (what handlers' code does, what the API
//! server does), and ghost state that the properties read.

mod ghost;
mod reachable;
pub mod scenarios;
mod small;

use serde::{Deserialize, Serialize};
use stateright::{Model, Property};

pub use ghost::Ghost;
pub use small::{Digest, Essence, Field, Key, Said, Small};

use super::engine::{Effect, Engine, Input, Outcome, Patch, RunId};
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
    /// Whether users may delete the object.
    pub deletion: bool,
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
    /// A list's answer not yet delivered; the watch's events follow it.
    pub listing: Option<View>,
    /// Watch events not delivered yet, oldest first.
    pub watch: Vec<View>,
    /// Whether the watch has yet to report that the object is gone.
    pub gone_unseen: bool,
    /// The operator's engine.
    pub engine: Engine<Small>,
    /// The run in flight.
    pub running: Option<Run>,
    /// A run that hangs: it never returns.
    pub hung: Option<Run>,
    /// A run of a crashed operator, still going.
    pub zombie: Option<Run>,
    /// A run that passed its deadline, its return on its way.
    pub late: Option<Run>,
    /// The patch in flight.
    pub patch: Option<Patch<Small>>,
    /// Whether a consistent read is in flight.
    pub fetch: bool,
    /// The wake-up the engine asked for.
    pub wake: Option<u8>,
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
    /// The list's answer reaches the operator.
    WatchList,
    /// The watch delivers its oldest event.
    WatchDeliver,
    /// The watch reports that the object is gone.
    WatchGone,
    /// The watch expires (410 Gone); the operator lists again, and the list
    /// may be stale.
    WatchExpire {
        /// Whether the list serves the previous version.
        stale: bool,
    },
    /// The running handler returns.
    HandlerReturn(Outcome<Small>),
    /// The running handler hangs.
    HandlerHang,
    /// The running handler's deadline passes as it returns: its return
    /// reaches the operator after the deadline's tick.
    HandlerOverrun,
    /// A run that passed its deadline returns, its side effect done.
    LateReturn,
    /// A hung run's deadline passes.
    ClockDeadline,
    /// A crashed operator's run returns, its side effect done.
    ZombieReturn,
    /// The API server applies or refuses the patch in flight.
    ApiPatch,
    /// The patch's reply is lost, after the API server applied it or not.
    ApiPatchLost {
        /// Whether it was applied.
        applied: bool,
    },
    /// The API server refuses the patch for good (422).
    ApiPatchRefused,
    /// The API server throttles the patch (429), or fails it after applying
    /// it or not (5xx).
    ApiPatchThrottled {
        /// Whether it was applied.
        applied: bool,
    },
    /// The API server answers the consistent read.
    ApiFetch,
    /// The API server throttles or fails the consistent read.
    ApiFetchFailed,
    /// Time passes until the requested wake-up.
    ClockWake,
    /// The operator is told to stop (SIGTERM in a rolling update).
    OperatorStop,
    /// A stopped operator exits and its successor starts and lists the
    /// object.
    OperatorRestart,
    /// The operator crashes and restarts, losing its memory: a run in
    /// flight goes on as a zombie, the patch in flight lands or not, and
    /// the restarted operator lists the object (perhaps stale).
    OperatorCrash {
        /// Whether the patch in flight reached the API server first.
        patch_landed: bool,
        /// Whether the list serves the previous version.
        stale: bool,
    },
}

impl Action {
    fn is_watch(&self) -> bool {
        matches!(
            self,
            Action::WatchList | Action::WatchDeliver | Action::WatchGone
        )
    }

    fn is_handler(&self) -> bool {
        matches!(self, Action::HandlerReturn(_))
    }

    fn is_api(&self) -> bool {
        matches!(self, Action::ApiPatch | Action::ApiFetch)
    }

    fn is_clock(&self) -> bool {
        matches!(self, Action::ClockWake | Action::ClockDeadline)
    }

    fn is_restart(&self) -> bool {
        matches!(self, Action::OperatorRestart)
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

    /// Feeds the engine and carries out its effects.
    fn feed(&self, world: &mut World, input: Input<Small>) {
        for effect in world.engine.step(&self.config, input) {
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
                    world.running = Some(Run {
                        id: run,
                        key: handler,
                        parent,
                        essence,
                        retry,
                        deadline,
                    });
                }
                // A cancelled run stops; one whose return is on its way
                // already ([`Action::HandlerOverrun`]) cannot be stopped.
                Effect::Cancel { run } => {
                    world.hung = world.hung.filter(|r| r.id != run);
                    world.running = world.running.filter(|r| r.id != run);
                }
                Effect::Patch(patch) => world.patch = Some(patch),
                Effect::Fetch => world.fetch = true,
                Effect::WakeAt(at) => world.wake = Some(world.wake.map_or(at, |w| w.min(at))),
                // Nothing in the world answers what the engine tells people.
                Effect::Tell(_) => {}
            }
        }
    }

    /// Records a new version of the object for the watch to deliver.
    fn publish(world: &mut World, before: &View) {
        let Some(object) = &mut world.object else {
            return;
        };
        world.version += 1;
        object.version = world.version;
        world.previous = Some(before.clone());
        world.watch.push(object.clone());
    }

    /// The object is gone (deleted with no finalizer left on it).
    fn vanish(world: &mut World) {
        world.object = None;
        world.previous = None;
        world.version += 1;
        world.gone_unseen = true;
        world.watch.clear();
        world.listing = None;
    }

    fn initial_world(&self) -> World {
        let object = View {
            version: 1,
            essence: self.budget.initial,
            deleting: false,
            finalizer: false,
            progress: Default::default(),
            diff_base: None,
        };
        World {
            listing: Some(object.clone()),
            object: Some(object),
            previous: None,
            version: 1,
            watch: Vec::new(),
            gone_unseen: false,
            engine: Engine::new(0, 0),
            running: None,
            hung: None,
            zombie: None,
            late: None,
            patch: None,
            fetch: false,
            wake: None,
            now: 0,
            left: self.budget.faults,
            ghost: Ghost::new(self.budget.initial),
        }
    }

    /// Applies `patch` at the API server if its precondition holds, and
    /// says whether it did.
    fn apply(&self, world: &mut World, patch: &Patch<Small>) -> bool {
        let Some(object) = &mut world.object else {
            return false;
        };
        if patch.checked && object.version != patch.expect {
            return false;
        }
        let before = object.clone();
        world
            .ghost
            .overwrite_check(patch, object.version, world.version + 1);
        for (key, record) in &patch.records {
            object.progress.set(key, record.clone());
        }
        world.ghost.record(self, patch, object.progress.is_empty());
        for (field, value) in &patch.writes {
            object.essence = object.essence.with(*field, *value);
        }
        if let Some(base) = patch.diff_base {
            world.ghost.early_commit |= !world.ghost.handled(self, base);
            object.diff_base = Some(base);
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
        let incarnation = world.engine.incarnation;
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
        world.engine.runs = runs.len() as u32;
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
            || (alive && (l.edits > 0 || l.deletion || l.foreign_writes > 0 || l.expiries > 0))
    }
}

/// Calls `f` on every resourceVersion held anywhere in the world.
fn for_each_version(world: &mut World, f: &mut impl FnMut(&mut u32)) {
    f(&mut world.version);
    for view in world
        .object
        .iter_mut()
        .chain(world.previous.iter_mut())
        .chain(world.listing.iter_mut())
        .chain(world.watch.iter_mut())
    {
        f(&mut view.version);
    }
    if let Some(patch) = &mut world.patch {
        f(&mut patch.expect);
    }
    world.ghost.visit_versions(f);
    world.engine.visit_versions(f);
}

/// Calls `f` on every run name held anywhere in the world.
fn for_each_run(world: &mut World, f: &mut impl FnMut(&mut RunId)) {
    for run in world
        .running
        .iter_mut()
        .chain(world.hung.iter_mut())
        .chain(world.zombie.iter_mut())
        .chain(world.late.iter_mut())
    {
        f(&mut run.id);
    }
    world.engine.visit_runs(f);
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
        if let Some(object) = w.object.as_ref().filter(|o| !o.deleting) {
            if l.edits > 0 {
                actions.push(Action::UserEdit);
            }
            if l.deletion {
                actions.push(Action::UserDelete);
            }
            if l.foreign_writes > 0 {
                actions.push(Action::ForeignWrite);
            }
            if l.expiries > 0 && w.listing.is_none() {
                actions.push(Action::WatchExpire { stale: false });
                if l.stale_lists > 0 && w.previous.is_some() && object.version > 1 {
                    actions.push(Action::WatchExpire { stale: true });
                }
            }
        }
        if w.listing.is_some() {
            actions.push(Action::WatchList);
        } else if !w.watch.is_empty() {
            actions.push(Action::WatchDeliver);
        } else if w.gone_unseen {
            actions.push(Action::WatchGone);
        }
        if w.running.is_some() {
            actions.push(Action::HandlerReturn(Outcome::Success));
            if l.temporary_errors > 0 {
                actions.push(Action::HandlerReturn(Outcome::Temporary {
                    delay: 1,
                    message: Said::Failed,
                }));
            }
            if l.permanent_errors > 0 {
                actions.push(Action::HandlerReturn(Outcome::Permanent {
                    message: Said::Failed,
                }));
            }
            if l.hangs > 0 {
                actions.push(Action::HandlerHang);
            }
        }
        if w.hung.is_some_and(|r| r.deadline > w.now) {
            actions.push(Action::ClockDeadline);
        }
        if w.zombie.is_some() {
            actions.push(Action::ZombieReturn);
        }
        if w.running.is_some_and(|r| r.deadline > w.now) && l.overruns > 0 {
            actions.push(Action::HandlerOverrun);
        }
        if w.late.is_some() {
            actions.push(Action::LateReturn);
        }
        if w.patch.is_some() {
            actions.push(Action::ApiPatch);
            if l.lost_replies > 0 {
                actions.push(Action::ApiPatchLost { applied: true });
                actions.push(Action::ApiPatchLost { applied: false });
            }
            if l.refusals > 0 {
                actions.push(Action::ApiPatchRefused);
            }
            if l.throttles > 0 {
                actions.push(Action::ApiPatchThrottled { applied: true });
                actions.push(Action::ApiPatchThrottled { applied: false });
            }
        }
        if w.fetch {
            actions.push(Action::ApiFetch);
            if l.throttles > 0 {
                actions.push(Action::ApiFetchFailed);
            }
        }
        if w.wake.is_some() {
            actions.push(Action::ClockWake);
        }
        if l.stops > 0 && !w.engine.stopping {
            actions.push(Action::OperatorStop);
        }
        if w.engine.stopped() {
            actions.push(Action::OperatorRestart);
        }
        if l.crashes > 0 {
            let stale = [false, true];
            let stale = if l.stale_lists > 0 && w.previous.is_some() {
                &stale[..]
            } else {
                &stale[..1]
            };
            for &stale in stale {
                actions.push(Action::OperatorCrash {
                    patch_landed: false,
                    stale,
                });
                if w.patch.is_some() {
                    actions.push(Action::OperatorCrash {
                        patch_landed: true,
                        stale,
                    });
                }
            }
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
                w.ghost.deleted_while_running |= w.running.is_some();
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
            Action::WatchList => {
                let view = w.listing.take()?;
                w.ghost.stale_listed |=
                    w.object.as_ref().is_some_and(|o| o.version != view.version);
                self.feed(&mut w, Input::Listed(view));
            }
            Action::WatchDeliver => {
                if w.watch.is_empty() {
                    return None;
                }
                let view = w.watch.remove(0);
                self.feed(&mut w, Input::Observed(view));
            }
            Action::WatchGone => {
                w.gone_unseen = false;
                self.feed(&mut w, Input::Gone);
            }
            Action::WatchExpire { stale } => {
                w.left.expiries -= 1;
                w.ghost.expired = true;
                relist(&mut w, stale);
            }
            Action::HandlerReturn(outcome) => {
                let run = w.running.take()?;
                match outcome {
                    Outcome::Temporary { .. } => w.left.temporary_errors -= 1,
                    Outcome::Permanent { .. } => w.left.permanent_errors -= 1,
                    Outcome::Success | Outcome::GivenUp => {}
                }
                let (subs, write) = self.returned(&mut w, run, outcome, true);
                self.feed(
                    &mut w,
                    Input::HandlerDone {
                        run: run.id,
                        outcome,
                        subs,
                        write,
                    },
                );
            }
            Action::HandlerHang => {
                let run = w.running.take()?;
                w.left.hangs -= 1;
                // A run that hangs has done all it will: the ghost counts it
                // as failed for good.
                w.ghost
                    .returned(run, self.digest(run.key, run.essence), false);
                w.ghost.pend(run, run.essence, Vec::new());
                w.hung = Some(run);
            }
            Action::ClockDeadline => {
                let run = w.hung?;
                w.now = w.now.max(run.deadline);
                w.ghost.deadline_passed = true;
                let now = w.now;
                self.feed(&mut w, Input::Tick { now });
            }
            Action::ZombieReturn => {
                let run = w.zombie.take()?;
                w.ghost.zombie_returned = true;
                self.return_unawaited(&mut w, run);
            }
            Action::HandlerOverrun => {
                let run = w.running.take()?;
                w.left.overruns -= 1;
                w.now = w.now.max(run.deadline);
                w.late = Some(run);
                let now = w.now;
                self.feed(&mut w, Input::Tick { now });
                if !w.engine.awaits(run.id) {
                    // Given up at its deadline: the ghost counts it as
                    // failed for good, as a hung run.
                    w.ghost.pend(run, run.essence, Vec::new());
                }
            }
            Action::LateReturn => {
                let run = w.late.take()?;
                w.ghost.late_returned = true;
                self.return_unawaited(&mut w, run);
            }
            Action::ApiPatch => {
                let patch = w.patch.take()?;
                if self.apply(&mut w, &patch) {
                    let version = w.version;
                    self.feed(&mut w, Input::PatchApplied { version });
                } else {
                    w.ghost.foreign_refused |= w.ghost.foreign_at.is_some_and(|v| v > patch.expect);
                    self.feed(&mut w, Input::PatchConflict);
                }
            }
            Action::ApiPatchLost { applied } => {
                let patch = w.patch.take()?;
                w.left.lost_replies -= 1;
                if applied {
                    self.apply(&mut w, &patch);
                }
                self.feed(&mut w, Input::PatchUnknown);
            }
            Action::ApiPatchRefused => {
                let patch = w.patch.take()?;
                w.left.refusals -= 1;
                w.ghost.refused = Some(patch.expect);
                let message = Said::Failed;
                self.feed(&mut w, Input::PatchRefused { message });
            }
            Action::ApiPatchThrottled { applied } => {
                let patch = w.patch.take()?;
                w.left.throttles -= 1;
                w.ghost.throttled = true;
                if applied {
                    self.apply(&mut w, &patch);
                }
                let retry_after = None;
                self.feed(&mut w, Input::PatchThrottled { retry_after });
            }
            Action::ApiFetchFailed => {
                w.fetch = false;
                w.left.throttles -= 1;
                w.ghost.throttled = true;
                let retry_after = None;
                self.feed(&mut w, Input::FetchFailed { retry_after });
            }
            Action::ApiFetch => {
                w.fetch = false;
                let input = match &w.object {
                    Some(object) => Input::Fetched(object.clone()),
                    None => Input::Gone,
                };
                self.feed(&mut w, input);
            }
            Action::ClockWake => {
                let at = w.wake.take()?;
                w.now = w.now.max(at);
                let now = w.now;
                self.feed(&mut w, Input::Tick { now });
            }
            Action::OperatorStop => {
                w.left.stops -= 1;
                self.feed(&mut w, Input::Stop);
            }
            Action::OperatorRestart => {
                w.ghost.restarted = true;
                w.wake = None;
                let incarnation = w.engine.incarnation + 1;
                w.engine = Engine::new(incarnation, w.now);
                relist(&mut w, false);
            }
            Action::OperatorCrash {
                patch_landed,
                stale,
            } => {
                w.left.crashes -= 1;
                if patch_landed {
                    let patch = w.patch.take()?;
                    self.apply(&mut w, &patch);
                }
                if let Some(run) = w.running.take() {
                    w.zombie = Some(run);
                }
                w.ghost.crashed();
                w.hung = None;
                w.patch = None;
                w.fetch = false;
                w.wake = None;
                let incarnation = w.engine.incarnation + 1;
                w.engine = Engine::new(incarnation, w.now);
                relist(&mut w, stale);
            }
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
            // □(finalizer removed ⇒ ∀ delete handlers d: d ran to its end).
            Property::always(
                "finalizer kept until delete handlers finish",
                |_, w: &World| !w.ghost.early_release,
            ),
        ];
        properties.extend(reachable::sometimes(self, self.every_sometimes));
        properties
    }
}

/// The operator lists the object: the watch restarts from the list.
fn relist(w: &mut World, stale: bool) {
    let served = if stale {
        w.left.stale_lists -= 1;
        w.previous.clone()
    } else {
        w.object.clone()
    };
    w.watch.clear();
    match (&served, &w.object) {
        (Some(served), Some(object)) if served.version != object.version => {
            w.watch.push(object.clone());
        }
        _ => {}
    }
    w.gone_unseen = w.object.is_none();
    w.listing = served;
}

impl LifecycleModel {
    /// A run the engine no longer waits for returns with its side effect
    /// done (a crashed operator's, or one past its deadline): the engine is
    /// told, and ignores it unless it still waits for it after all.
    fn return_unawaited(&self, w: &mut World, run: Run) {
        let awaited = w.engine.awaits(run.id);
        let (subs, write) = self.returned(w, run, Outcome::Success, awaited);
        self.feed(
            w,
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
            Outcome::Temporary { .. } => last_attempt,
            Outcome::GivenUp => false,
        };
        w.ghost.exhausted |=
            current && last_attempt && matches!(outcome, Outcome::Temporary { .. });
        if current && ends {
            let seen = write.map_or(run.essence, |(f, v)| run.essence.with(f, v));
            w.ghost.pend(run, seen, subs.clone());
        }
        (subs, write)
    }
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
                && w.running.is_none()
                && w.patch.is_none()
        }
    }
}

impl TemporalModel for LifecycleModel {
    fn fairness(&self) -> Vec<Fairness<Self>> {
        vec![
            Fairness::weak("watch delivery", Action::is_watch),
            Fairness::weak("handler completion", Action::is_handler),
            Fairness::weak("API server", Action::is_api),
            Fairness::weak("clock", Action::is_clock),
            // The successor of a stopped operator starts.
            Fairness::weak("operator restart", Action::is_restart),
        ]
    }

    fn liveness(&self) -> Vec<Liveness<Self>> {
        vec![
            // ◇□settled: once the object stops changing, the diff-base comes
            // to equal its final essence, every handler and sub-handler it
            // concerns has finished on it, and handling rests (unless the
            // API server refused a patch of it for good, and nobody changed
            // it since: nothing can be written then).
            Liveness::eventually_always("handled on the final essence", settled),
            // deleting ~> ¬finalizer ∨ refused-for-good-and-unchanged.
            Liveness::leads_to(
                "deletion releases the finalizer",
                |_, w: &World| w.object.as_ref().is_some_and(|o| o.deleting),
                |_, w: &World| w.object.as_ref().is_none_or(|o| !o.finalizer) || rests_refused(w),
            ),
        ]
    }
}
