//! The stateright model of the engine's world: an API server holding one
//! object, a watch that may skip versions, handler runs, patches refused with
//! 409, operator crashes, user edits and a deletion, all from finite budgets.
//!
//! Every action that touches the operator calls [`Engine::step`]; the model
//! adds only the world around it, and ghost state that the properties read.

use serde::{Deserialize, Serialize};
use stateright::{Model, Property};

use super::engine::{Effect, Engine, Input, Outcome, Patch};
use super::handlers::{Config, HandlerSpec, On, SelfWrite, SubPlan, Variant};
use super::object::{Digest, Essence, Field, Final, Key, ObjectView};
use crate::temporal::{Fairness, Liveness, TemporalModel};

/// The world's bounds: what users and faults may do, and how often.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct Budget {
    /// The essence the object is created with.
    pub initial: Essence,
    /// The field users edit (each edit adds 1 to it).
    pub edited: Field,
    /// How many edits users make.
    pub edits: u8,
    /// How many handler runs may end in a temporary error.
    pub temporary_errors: u8,
    /// How many handler runs may end in a permanent error.
    pub permanent_errors: u8,
    /// How many times the operator may crash.
    pub crashes: u8,
    /// Whether users may delete the object.
    pub deletion: bool,
}

/// The lifecycle of one object under one configuration and budget.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct LifecycleModel {
    /// The engine's configuration.
    pub config: Config,
    /// The world's bounds.
    pub budget: Budget,
}

/// A handler run in flight.
#[derive(Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct Run {
    /// Which handler.
    pub key: Key,
    /// What it was given.
    pub essence: Essence,
}

impl std::fmt::Debug for Run {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{:?} on {:?}", self.key, self.essence)
    }
}

/// What the properties need to know beyond the world itself.
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct Ghost {
    /// Handlers and sub-handlers that a change concerned and that have not
    /// finished (succeeded or failed permanently) on the current essence.
    pub owed: Vec<Key>,
    /// Every essence the object has had.
    pub history: Vec<Essence>,
    /// Recorded permanent failures: the handler and the digest it failed on.
    pub failed: Vec<(Key, Digest)>,
    /// Delete handlers that finished.
    pub deleted_by: Vec<u8>,
    /// The handler whose outcome the engine is about to write, with the
    /// write it made.
    pub writer: Option<Key>,
    /// The diff-base was once set to an essence on which an active handler
    /// had not finished.
    pub early_commit: bool,
    /// The finalizer was once removed before every delete handler finished.
    pub early_release: bool,
    /// Two runs of handlers were once in flight at once.
    pub overlap: bool,
    /// A handler was once run again on a digest it had failed on for good.
    pub rerun_failed: bool,
    /// A patch was once refused.
    pub conflicted: bool,
}

/// The whole world.
#[derive(Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct World {
    /// The object, until it is gone.
    pub object: Option<ObjectView>,
    /// The object's resourceVersion (kept after it is gone).
    pub rv: u32,
    /// Versions the watch has not delivered yet, oldest first.
    pub watch: Vec<ObjectView>,
    /// Whether the watch has yet to report that the object is gone.
    pub gone_unseen: bool,
    /// The operator's engine.
    pub engine: Engine,
    /// The handler run in flight.
    pub running: Option<Run>,
    /// The patch in flight.
    pub patch: Option<Patch>,
    /// The wake-up the engine asked for.
    pub wake: Option<u8>,
    /// The time.
    pub now: u8,
    /// Edits left.
    pub edits: u8,
    /// Temporary errors left.
    pub temporary_errors: u8,
    /// Permanent errors left.
    pub permanent_errors: u8,
    /// Crashes left.
    pub crashes: u8,
    /// Whether a deletion is still possible.
    pub deletion: bool,
    /// What the properties read.
    pub ghost: Ghost,
}

impl std::fmt::Debug for World {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let backlog: Vec<String> = self.watch.iter().map(ObjectView::line).collect();
        f.debug_struct("World")
            .field("object", &self.object)
            .field("watch_backlog", &backlog)
            .field("gone_unseen", &self.gone_unseen)
            .field("engine", &self.engine)
            .field("running", &self.running)
            .field("patch", &self.patch)
            .field("wake", &self.wake)
            .field("now", &self.now)
            .field("edits_left", &self.edits)
            .field("temporary_errors_left", &self.temporary_errors)
            .field("permanent_errors_left", &self.permanent_errors)
            .field("crashes_left", &self.crashes)
            .field("deletion_left", &self.deletion)
            .field("ghost", &self.ghost)
            .finish()
    }
}

/// A step of the world.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum Action {
    /// Users and faults do nothing now (a stutter step): without it, a
    /// behaviour could not stay in a state where only a budgeted disturbance
    /// is possible, and "the user never deletes the object" would not be a
    /// behaviour at all.
    UserIdle,
    /// A user edits the essence.
    UserEdit,
    /// A user asks for the object's deletion.
    UserDelete,
    /// The watch delivers the version at this index of the backlog,
    /// skipping those before it.
    WatchDeliver(u8),
    /// The watch reports that the object is gone.
    WatchGone,
    /// The running handler returns.
    HandlerReturn(Outcome),
    /// The API server applies or refuses the patch in flight.
    ApiPatch,
    /// Time passes until the requested wake-up.
    ClockWake,
    /// The operator crashes and restarts, losing its memory; a run in flight
    /// dies with it, and the patch in flight lands or not.
    OperatorCrash {
        /// Whether the patch in flight reached the API server first.
        patch_landed: bool,
    },
}

impl Action {
    fn is_watch(&self) -> bool {
        matches!(self, Action::WatchDeliver(_) | Action::WatchGone)
    }

    fn is_handler(&self) -> bool {
        matches!(self, Action::HandlerReturn(_))
    }

    fn is_api(&self) -> bool {
        matches!(self, Action::ApiPatch)
    }

    fn is_clock(&self) -> bool {
        matches!(self, Action::ClockWake)
    }
}

impl LifecycleModel {
    /// The handler's digest and plan rules come from the configuration.
    fn feed(&self, world: &mut World, input: Input) {
        let effects = world.engine.step(&self.config, input);
        for effect in effects {
            match effect {
                Effect::Invoke { key, essence } => {
                    let digest = self.config.digest(key, essence);
                    world.ghost.rerun_failed |= world.ghost.failed.contains(&(key, digest));
                    world.ghost.overlap |= world.running.is_some();
                    world.running = Some(Run { key, essence });
                }
                Effect::Patch(patch) => world.patch = Some(patch),
                Effect::WakeAt(at) => world.wake = Some(world.wake.map_or(at, |w| w.min(at))),
            }
        }
    }

    /// Records a new version of the object: the watch will deliver it, and
    /// the ghost learns what changed.
    fn publish(&self, world: &mut World, before: Essence, creating: bool, writer: Option<Key>) {
        let Some(object) = &mut world.object else {
            return;
        };
        world.rv += 1;
        object.rv = world.rv;
        let after = object.essence;
        world.watch.push(object.clone());
        if !world.ghost.history.contains(&after) {
            world.ghost.history.push(after);
        }
        if before != after {
            self.owe(&mut world.ghost, before, after, creating, writer);
        }
    }

    /// Marks what a change from `before` to `after` concerns as owed.
    fn owe(
        &self,
        ghost: &mut Ghost,
        before: Essence,
        after: Essence,
        creating: bool,
        writer: Option<Key>,
    ) {
        for (h, spec) in self.config.handlers.iter().enumerate() {
            let h = h as u8;
            let key = Key::handler(h);
            let concerned = match spec.on {
                On::Create => creating,
                On::Update => !creating,
                On::Field(field) => before.get(field) != after.get(field),
                On::Delete | On::Resume => false,
            };
            if !concerned {
                continue;
            }
            if self.config.is_parent(h) {
                ghost.owed.retain(|k| k.handler != h);
                for s in 0..self.config.plan(h, after) {
                    insert(&mut ghost.owed, Key::sub(h, s));
                }
            } else if Some(key) != writer {
                insert(&mut ghost.owed, key);
            }
        }
    }

    fn initial_world(&self) -> World {
        let b = &self.budget;
        let object = ObjectView {
            rv: 1,
            essence: b.initial,
            deleting: false,
            finalizer: false,
            progress: Default::default(),
            diff_base: None,
        };
        let mut ghost = Ghost {
            history: vec![b.initial],
            ..Ghost::default()
        };
        // Creation concerns create handlers, field handlers and the plans of
        // parents among them.
        for (h, spec) in self.config.handlers.iter().enumerate() {
            let h = h as u8;
            if !matches!(spec.on, On::Create | On::Field(_)) {
                continue;
            }
            if self.config.is_parent(h) {
                for s in 0..self.config.plan(h, b.initial) {
                    insert(&mut ghost.owed, Key::sub(h, s));
                }
            } else {
                insert(&mut ghost.owed, Key::handler(h));
            }
        }
        World {
            watch: vec![object.clone()],
            object: Some(object),
            rv: 1,
            gone_unseen: false,
            engine: Engine::new(),
            running: None,
            patch: None,
            wake: None,
            now: 0,
            edits: b.edits,
            temporary_errors: b.temporary_errors,
            permanent_errors: b.permanent_errors,
            crashes: b.crashes,
            deletion: b.deletion,
            ghost,
        }
    }

    /// Applies the patch in flight at the API server, or refuses it.
    fn api_patch(&self, world: &mut World) {
        let Some(patch) = world.patch.take() else {
            return;
        };
        let writer = world.ghost.writer.take();
        let applies = world
            .object
            .as_ref()
            .is_some_and(|o| !patch.checked || o.rv == patch.expect_rv);
        if !applies {
            world.ghost.conflicted = true;
            self.feed(world, Input::PatchConflict);
            return;
        }
        let Some(object) = &mut world.object else {
            return;
        };
        let before = object.essence;
        let creating = object.diff_base.is_none();
        let owed_before = world.ghost.owed.clone();
        for (key, record) in &patch.records {
            object.progress.set(*key, *record);
            if let Some(record) = record {
                if record.outcome == Some(Final::Failure) {
                    if let Some(digest) = record.seen {
                        insert(&mut world.ghost.failed, (*key, digest));
                    }
                }
            }
        }
        if let Some((field, value)) = patch.write {
            object.essence = object.essence.with(field, value);
        }
        if let Some(base) = patch.diff_base {
            object.diff_base = Some(base);
        }
        let mut gone = false;
        match patch.finalizer {
            Some(true) => object.finalizer = true,
            Some(false) => {
                object.finalizer = false;
                let every_delete_handler_done = self
                    .config
                    .handlers
                    .iter()
                    .enumerate()
                    .filter(|(_, spec)| spec.on == On::Delete)
                    .all(|(h, _)| world.ghost.deleted_by.contains(&(h as u8)));
                world.ghost.early_release |= !every_delete_handler_done;
                gone = object.deleting;
            }
            None => {}
        }
        if gone {
            world.object = None;
            world.rv += 1;
            world.gone_unseen = true;
            world.watch.clear();
        } else {
            self.publish(world, before, creating, writer);
            if let Some(base) = patch.diff_base {
                // Which owed set speaks of `base`: the one before this
                // patch's own write, or the one after it.
                let owed = if base == before {
                    &owed_before
                } else {
                    &world.ghost.owed
                };
                world.ghost.early_commit |= !owed.is_empty();
            }
        }
        let rv = world.rv;
        self.feed(world, Input::PatchApplied { rv });
    }

    /// Renames resourceVersions to their ranks, so that states differing only
    /// in how many writes happened are one state. Only the order of versions
    /// matters to the engine and the API server, and the object's version
    /// stays the largest, so behaviour is unchanged.
    fn normalise(world: &mut World) {
        let mut seen = Vec::new();
        for_each_rv(world, &mut |rv| seen.push(*rv));
        seen.sort_unstable();
        seen.dedup();
        for_each_rv(world, &mut |rv| {
            *rv = seen.binary_search(rv).unwrap_or(0) as u32 + 1;
        });
    }
}

/// Calls `f` on every resourceVersion held anywhere in the world.
fn for_each_rv(world: &mut World, f: &mut impl FnMut(&mut u32)) {
    f(&mut world.rv);
    if let Some(object) = &mut world.object {
        f(&mut object.rv);
    }
    for view in &mut world.watch {
        f(&mut view.rv);
    }
    if let Some(patch) = &mut world.patch {
        f(&mut patch.expect_rv);
    }
    world.engine.visit_versions(f);
}

fn insert<T: Ord>(set: &mut Vec<T>, item: T) {
    if let Err(at) = set.binary_search(&item) {
        set.insert(at, item);
    }
}

impl Model for LifecycleModel {
    type State = World;
    type Action = Action;

    fn init_states(&self) -> Vec<World> {
        vec![self.initial_world()]
    }

    fn actions(&self, w: &World, actions: &mut Vec<Action>) {
        let disturbable = w.crashes > 0
            || w.object
                .as_ref()
                .is_some_and(|o| !o.deleting && (w.edits > 0 || w.deletion));
        if disturbable {
            actions.push(Action::UserIdle);
        }
        if let Some(object) = &w.object {
            if w.edits > 0 && !object.deleting {
                actions.push(Action::UserEdit);
            }
            if w.deletion && !object.deleting {
                actions.push(Action::UserDelete);
            }
        }
        for i in 0..w.watch.len() {
            actions.push(Action::WatchDeliver(i as u8));
        }
        if w.gone_unseen {
            actions.push(Action::WatchGone);
        }
        if w.running.is_some() {
            actions.push(Action::HandlerReturn(Outcome::Success));
            if w.temporary_errors > 0 {
                actions.push(Action::HandlerReturn(Outcome::Temporary { delay: 1 }));
            }
            if w.permanent_errors > 0 {
                actions.push(Action::HandlerReturn(Outcome::Permanent));
            }
        }
        if w.patch.is_some() {
            actions.push(Action::ApiPatch);
        }
        if w.wake.is_some() {
            actions.push(Action::ClockWake);
        }
        if w.crashes > 0 {
            actions.push(Action::OperatorCrash {
                patch_landed: false,
            });
            if w.patch.is_some() {
                actions.push(Action::OperatorCrash { patch_landed: true });
            }
        }
    }

    fn next_state(&self, w: &World, action: Action) -> Option<World> {
        let mut w = w.clone();
        match action {
            Action::UserIdle => return Some(w),
            Action::UserEdit => {
                let object = w.object.as_mut()?;
                let before = object.essence;
                let creating = object.diff_base.is_none();
                let field = self.budget.edited;
                object.essence = before.with(field, before.get(field).wrapping_add(1));
                w.edits -= 1;
                self.publish(&mut w, before, creating, None);
            }
            Action::UserDelete => {
                let object = w.object.as_mut()?;
                w.deletion = false;
                if object.finalizer {
                    object.deleting = true;
                    let before = object.essence;
                    self.publish(&mut w, before, false, None);
                } else {
                    w.object = None;
                    w.rv += 1;
                    w.gone_unseen = true;
                    w.watch.clear();
                }
            }
            Action::WatchDeliver(i) => {
                let mut backlog = std::mem::take(&mut w.watch);
                let rest = backlog.split_off(usize::from(i) + 1);
                let view = backlog.pop()?;
                w.watch = rest;
                self.feed(&mut w, Input::Observed(view));
            }
            Action::WatchGone => {
                w.gone_unseen = false;
                self.feed(&mut w, Input::Gone);
            }
            Action::HandlerReturn(outcome) => {
                let run = w.running.take()?;
                match outcome {
                    Outcome::Temporary { .. } => w.temporary_errors -= 1,
                    Outcome::Permanent => w.permanent_errors -= 1,
                    Outcome::Success => {}
                }
                let current = w.object.as_ref().map(|o| o.essence);
                let finished = matches!(outcome, Outcome::Success | Outcome::Permanent);
                if finished {
                    let spec = self.config.spec(run.key);
                    if spec.on == On::Delete {
                        insert(&mut w.ghost.deleted_by, run.key.handler);
                    }
                    let on_current = current.is_some_and(|e| {
                        self.config.digest(run.key, e) == self.config.digest(run.key, run.essence)
                    });
                    if on_current {
                        w.ghost.owed.retain(|k| *k != run.key);
                    }
                }
                if outcome == Outcome::Success && self.config.spec(run.key).writes.is_some() {
                    w.ghost.writer = Some(run.key);
                }
                self.feed(
                    &mut w,
                    Input::HandlerDone {
                        key: run.key,
                        outcome,
                    },
                );
            }
            Action::ApiPatch => self.api_patch(&mut w),
            Action::ClockWake => {
                let at = w.wake.take()?;
                w.now = w.now.max(at);
                let now = w.now;
                self.feed(&mut w, Input::Tick { now });
            }
            Action::OperatorCrash { patch_landed } => {
                w.crashes -= 1;
                if patch_landed {
                    self.api_patch(&mut w);
                }
                w.engine = Engine::new();
                w.running = None;
                w.patch = None;
                w.wake = None;
                w.ghost.writer = None;
                // A resume handler's episode is one operator start: the
                // restarted operator runs it again, whatever it came to.
                let config = &self.config;
                w.ghost
                    .failed
                    .retain(|(key, _)| config.spec(*key).on != On::Resume);
                // The restarted operator lists the object afresh, and reads
                // the clock before anything else.
                w.watch = w.object.iter().cloned().collect();
                w.gone_unseen = w.object.is_none();
                let now = w.now;
                self.feed(&mut w, Input::Tick { now });
            }
        }
        Self::normalise(&mut w);
        Some(w)
    }

    fn properties(&self) -> Vec<Property<Self>> {
        let mut properties = vec![
            // □¬early_commit: the diff-base only ever takes an essence on
            // which every handler active for it had finished.
            Property::always("diff-base only on handled essences", |_, w: &World| {
                !w.ghost.early_commit
            }),
            // □(∀ records r: r.seen ∈ {digest_r(e) : e ∈ history}).
            Property::always("recorded digests were observed", |m: &Self, w: &World| {
                let Some(object) = &w.object else {
                    return true;
                };
                object.progress.iter().all(|(key, record)| {
                    record.seen.is_none_or(|d| {
                        w.ghost
                            .history
                            .iter()
                            .any(|&e| m.config.digest(*key, e) == d)
                    })
                })
            }),
            // □¬overlap: at most one handler run in flight.
            Property::always("runs never overlap", |_, w: &World| !w.ghost.overlap),
            // □¬early_release: the finalizer goes only after every delete
            // handler finished.
            Property::always(
                "finalizer kept until delete handlers finish",
                |_, w: &World| !w.ghost.early_release,
            ),
            // □¬rerun_failed: a handler that failed for good on a digest
            // does not run on it again (a resume handler's failure lasts
            // until the operator restarts: it runs once per start).
            Property::always(
                "failed handlers not rerun on the same digest",
                |_, w: &World| !w.ghost.rerun_failed,
            ),
            Property::sometimes("the diff-base is committed", |_, w: &World| {
                w.object.as_ref().is_some_and(|o| o.diff_base.is_some())
            }),
            Property::sometimes("a sub-handler runs", |_, w: &World| {
                w.running.is_some_and(|r| r.key.sub.is_some())
            }),
        ];
        // Where users may delete the object and a delete handler holds it
        // by a finalizer, that path is reached: without it, "finalizer
        // kept until delete handlers finish" and "deletion releases the
        // finalizer" could hold for want of a deletion.
        let holds_deletion = self.config.handlers.iter().any(|h| h.on == On::Delete);
        if self.budget.deletion && holds_deletion {
            properties.push(Property::sometimes(
                "a delete handler runs while the finalizer holds the object",
                |m: &Self, w: &World| {
                    let held = w.object.as_ref().is_some_and(|o| o.deleting && o.finalizer);
                    held && w
                        .running
                        .is_some_and(|r| m.config.spec(r.key).on == On::Delete)
                },
            ));
        }
        if self.budget.permanent_errors > 0 {
            properties.push(Property::sometimes(
                "a handler fails for good",
                |_, w: &World| {
                    w.object.as_ref().is_some_and(|o| {
                        o.progress
                            .iter()
                            .any(|(_, r)| r.outcome == Some(Final::Failure))
                    })
                },
            ));
        }
        if self.config.handlers.iter().any(|h| h.on == On::Resume) {
            properties.push(Property::sometimes(
                "a resume handler runs",
                |m: &Self, w: &World| {
                    w.running
                        .is_some_and(|r| m.config.spec(r.key).on == On::Resume)
                },
            ));
        }
        properties
    }
}

/// The object is handled in full, and nothing is in flight: the diff-base is
/// the essence, and nothing a change concerned is still owed.
fn settled(w: &World) -> bool {
    match &w.object {
        None => true,
        Some(object) => {
            !object.deleting
                && object.diff_base == Some(object.essence)
                && w.ghost.owed.is_empty()
                && w.running.is_none()
                && w.patch.is_none()
        }
    }
}

fn deleting(w: &World) -> bool {
    w.object.as_ref().is_some_and(|o| o.deleting)
}

fn released(w: &World) -> bool {
    w.object.as_ref().is_none_or(|o| !o.finalizer)
}

impl TemporalModel for LifecycleModel {
    fn fairness(&self) -> Vec<Fairness<Self>> {
        vec![
            Fairness::weak("watch delivery", Action::is_watch),
            Fairness::weak("handler completion", Action::is_handler),
            Fairness::weak("API server", Action::is_api),
            Fairness::weak("clock", Action::is_clock),
        ]
    }

    fn liveness(&self) -> Vec<Liveness<Self>> {
        vec![
            // ◇□settled: once the object stops changing, the diff-base comes
            // to equal its final essence, every handler and sub-handler that
            // a change concerned has finished on it, and handling rests.
            Liveness::eventually_always("handled on the final essence", |_, w: &World| settled(w)),
            // deleting ~> ¬finalizer.
            Liveness::leads_to(
                "deletion releases the finalizer",
                |_, w: &World| deleting(w),
                |_, w: &World| released(w),
            ),
        ]
    }
}

/// The configurations and budgets that `steadfast check lifecycle` knows.
pub mod scenarios {
    use super::*;

    /// kopf #641 scaled down: a field handler on `status.tick` whose three
    /// sub-handlers are planned when the tick is odd; the tick is created odd
    /// and changes twice while the sub-handlers work.
    pub fn seed641(variant: Variant) -> LifecycleModel {
        LifecycleModel {
            config: Config {
                variant,
                handlers: vec![HandlerSpec {
                    name: "tick",
                    on: On::Field(Field::Tick),
                    subs: SubPlan::WhenOdd(Field::Tick, 3),
                    writes: None,
                }],
                retry_limit: 3,
                timeout: 8,
            },
            budget: Budget {
                initial: Essence([0, 1, 0]),
                edited: Field::Tick,
                edits: 2,
                temporary_errors: 0,
                permanent_errors: 0,
                crashes: 0,
                deletion: false,
            },
        }
    }

    /// A field handler with two sub-handlers, an update handler that writes
    /// a label from the spec (an idempotent self-write), a delete handler
    /// and a resume handler; two edits, a temporary and a permanent error, a
    /// crash and a deletion.
    pub fn general(variant: Variant) -> LifecycleModel {
        LifecycleModel {
            config: Config {
                variant,
                handlers: vec![
                    HandlerSpec {
                        name: "size",
                        on: On::Field(Field::Spec),
                        subs: SubPlan::Fixed(2),
                        writes: None,
                    },
                    HandlerSpec {
                        name: "label",
                        on: On::Update,
                        subs: SubPlan::None,
                        writes: Some(SelfWrite {
                            target: Field::Label,
                            source: Field::Spec,
                        }),
                    },
                    HandlerSpec {
                        name: "cleanup",
                        on: On::Delete,
                        subs: SubPlan::None,
                        writes: None,
                    },
                    HandlerSpec {
                        name: "warm-up",
                        on: On::Resume,
                        subs: SubPlan::None,
                        writes: None,
                    },
                ],
                retry_limit: 3,
                timeout: 8,
            },
            budget: Budget {
                initial: Essence([1, 0, 1]),
                edited: Field::Spec,
                edits: 2,
                temporary_errors: 1,
                permanent_errors: 1,
                crashes: 1,
                deletion: true,
            },
        }
    }

    /// `general` with smaller budgets, for `cargo test`.
    pub fn general_small(variant: Variant) -> LifecycleModel {
        let mut model = general(variant);
        model.budget.edits = 1;
        model.budget.crashes = 0;
        model
    }

    /// `general` with larger budgets, for benchmarks.
    pub fn bench(variant: Variant) -> LifecycleModel {
        let mut model = general(variant);
        model.budget.edits = 3;
        model
    }
}
