//! The lifecycle engine for one object: a sans-I/O state machine.
//!
//! [`Engine::step`] takes what the world says (an observed version of the
//! object, a handler's outcome, a patch's result, the time) and returns what
//! the engine asks of the world (run a handler on an essence, send one
//! resourceVersion-checked patch, wake at a time). Each processing cycle
//! follows kopf's: derive the reason from the diff-base and the essence, keep
//! the finalizer, pick one handler or sub-handler to run, then record its
//! outcome, and commit the diff-base when everything active is finished, all
//! in one patch. The [`Variant`] decides what "finished" means.

use serde::{Deserialize, Serialize};

use super::handlers::{Config, On, Reason, Variant};
use super::object::{Essence, Field, Final, Key, ObjectView, Progress, Record};

/// What the world tells the engine.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum Input {
    /// A watch event or a list showed this version of the object.
    Observed(ObjectView),
    /// The object no longer exists.
    Gone,
    /// The handler or sub-handler last invoked has returned.
    HandlerDone {
        /// Which one.
        key: Key,
        /// How it ended.
        outcome: Outcome,
    },
    /// The last patch was applied and made this resourceVersion.
    PatchApplied {
        /// The object's new resourceVersion.
        rv: u32,
    },
    /// The last patch was refused: its resourceVersion was stale (409).
    PatchConflict,
    /// The time is now `now` (a requested wake-up, or any later time).
    Tick {
        /// The current time.
        now: u8,
    },
}

/// How one run of a handler ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum Outcome {
    /// It did its work.
    Success,
    /// It failed, and may be retried after `delay`.
    Temporary {
        /// How long to wait before the next attempt.
        delay: u8,
    },
    /// It failed for good.
    Permanent,
}

/// One patch of the object, all or nothing.
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct Patch {
    /// The resourceVersion the patch was computed from.
    pub expect_rv: u32,
    /// Whether the patch carries `expect_rv` as a precondition, so that the
    /// API server refuses it (409) if the object has moved on. steadfast's
    /// patches do; kopf's merge patches carry no resourceVersion and apply
    /// to whatever the object has become.
    pub checked: bool,
    /// Progress records to set, or with `None` to remove.
    pub records: Vec<(Key, Option<Record>)>,
    /// A new diff-base, when the object is handled in full.
    pub diff_base: Option<Essence>,
    /// A handler's own write to the essence.
    pub write: Option<(Field, u8)>,
    /// Whether to add (`true`) or remove (`false`) the finalizer.
    pub finalizer: Option<bool>,
}

/// What the engine asks of the world.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum Effect {
    /// Run this handler or sub-handler on this essence, then report its
    /// outcome with [`Input::HandlerDone`].
    Invoke {
        /// Which one.
        key: Key,
        /// What it must see.
        essence: Essence,
    },
    /// Send this patch, then report [`Input::PatchApplied`] or
    /// [`Input::PatchConflict`].
    Patch(Patch),
    /// Report [`Input::Tick`] at this time: a delayed handler is due.
    WakeAt(u8),
}

/// The cycle being processed: the version it started from and the progress
/// as it will be written.
#[derive(Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct Cycle {
    view: ObjectView,
    work: Progress,
}

impl std::fmt::Debug for Cycle {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Cycle")
            .field("from_rv", &self.view.rv)
            .field("progress", &self.work)
            .finish()
    }
}

/// Where the engine is in its cycle.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum Phase {
    /// Waiting for a version to process, or for a wake-up.
    Idle,
    /// A handler runs; its outcome completes the cycle.
    Running {
        /// The handler that runs.
        key: Key,
        /// The cycle it runs in.
        cycle: Cycle,
    },
    /// A patch computed from version `rv` is in flight.
    Patching {
        /// The version the patch expects.
        rv: u32,
    },
}

impl Phase {
    /// Whether the engine waits for nothing of its own.
    pub fn is_idle(&self) -> bool {
        matches!(self, Phase::Idle)
    }
}

impl Engine {
    /// Calls `f` on every resourceVersion the engine holds (for a model that
    /// renames versions).
    pub fn visit_versions(&mut self, f: &mut impl FnMut(&mut u32)) {
        f(&mut self.awaiting);
        if let Some(view) = &mut self.view {
            f(&mut view.rv);
        }
        match &mut self.phase {
            Phase::Running { cycle, .. } => f(&mut cycle.view.rv),
            Phase::Patching { rv } => f(rv),
            Phase::Idle => {}
        }
    }
}

/// The engine's memory of one object. It is lost on a restart; everything
/// that must survive one is in the object's annotations.
#[derive(Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct Engine {
    /// Where the engine is in its cycle.
    pub phase: Phase,
    /// The newest version observed.
    pub view: Option<ObjectView>,
    /// Versions older than this are not processed: they predate the
    /// engine's own last patch, or a refused patch's version.
    pub awaiting: u32,
    /// Noticed when the operator started and not handled in full since:
    /// resume handlers apply.
    pub initial: bool,
    /// The time last told.
    pub now: u8,
}

impl std::fmt::Debug for Engine {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Engine")
            .field("phase", &self.phase)
            .field("view", &self.view.as_ref().map(ObjectView::line))
            .field("awaiting_rv", &self.awaiting)
            .field("initial", &self.initial)
            .field("now", &self.now)
            .finish()
    }
}

impl Default for Engine {
    fn default() -> Self {
        Engine::new()
    }
}

/// What a cycle should do next.
enum Next {
    /// Run this handler.
    Run(Key),
    /// Nothing can run before this time.
    Wait(u8),
    /// Every active handler is finished.
    Done,
}

impl Engine {
    /// The engine of a freshly started operator.
    pub fn new() -> Self {
        Engine {
            phase: Phase::Idle,
            view: None,
            awaiting: 0,
            initial: true,
            now: 0,
        }
    }

    /// Feeds one input to the engine and returns what it asks for.
    pub fn step(&mut self, config: &Config, input: Input) -> Vec<Effect> {
        match input {
            Input::Observed(view) => {
                if view.rv < self.awaiting {
                    return Vec::new();
                }
                self.view = Some(view);
                self.cycle(config)
            }
            Input::Gone => {
                self.view = None;
                Vec::new()
            }
            Input::HandlerDone { key, outcome } => {
                match std::mem::replace(&mut self.phase, Phase::Idle) {
                    Phase::Running {
                        key: running,
                        cycle,
                    } if running == key => self.finish(config, key, cycle, outcome),
                    other => {
                        // Not the run this engine started (one from before a
                        // restart): nothing to record.
                        self.phase = other;
                        Vec::new()
                    }
                }
            }
            Input::PatchApplied { rv } => {
                let Phase::Patching { .. } = self.phase else {
                    return Vec::new();
                };
                self.phase = Phase::Idle;
                self.awaiting = self.awaiting.max(rv);
                self.cycle(config)
            }
            Input::PatchConflict => {
                let Phase::Patching { rv } = self.phase else {
                    return Vec::new();
                };
                self.phase = Phase::Idle;
                // The object has moved on; only a newer version can help.
                self.awaiting = self.awaiting.max(rv + 1);
                self.cycle(config)
            }
            Input::Tick { now } => {
                self.now = self.now.max(now);
                self.cycle(config)
            }
        }
    }

    /// Starts a cycle on the newest version, if the engine is idle and the
    /// version is one to process.
    fn cycle(&mut self, config: &Config) -> Vec<Effect> {
        if !self.phase.is_idle() {
            return Vec::new();
        }
        let Some(view) = self.view.clone().filter(|v| v.rv >= self.awaiting) else {
            return Vec::new();
        };
        if view.deleting && !view.finalizer {
            // Deletion is under way and nothing of ours holds it.
            return Vec::new();
        }
        let wants_finalizer = config.handlers.iter().any(|h| h.on == On::Delete);
        if wants_finalizer && !view.finalizer && !view.deleting {
            return self.send(
                config,
                Patch {
                    expect_rv: view.rv,
                    finalizer: Some(true),
                    ..Patch::default()
                },
            );
        }
        let mut cycle = Cycle {
            work: view.progress.clone(),
            view,
        };
        let essence = cycle.view.essence;
        match self.next(config, &mut cycle.work, &cycle.view, essence) {
            Next::Run(key) => {
                if cycle.work.get(key).is_none() {
                    cycle.work.set(key, Some(Record::fresh(self.now)));
                }
                self.phase = Phase::Running { key, cycle };
                vec![Effect::Invoke { key, essence }]
            }
            Next::Done => self.commit(config, &cycle, essence, None),
            Next::Wait(at) => {
                let mut effects = self.save(config, &cycle, None);
                effects.push(Effect::WakeAt(at));
                effects
            }
        }
    }

    /// Records a handler's outcome, and commits if that finished everything.
    fn finish(
        &mut self,
        config: &Config,
        key: Key,
        mut cycle: Cycle,
        outcome: Outcome,
    ) -> Vec<Effect> {
        let ran_on = cycle.view.essence;
        let mut record = cycle
            .work
            .get(key)
            .copied()
            .unwrap_or(Record::fresh(self.now));
        record.retries = record.retries.saturating_add(1);
        record.delayed_until = None;
        let mut written = ran_on;
        match outcome {
            Outcome::Success => {
                written = config.after_write(key, ran_on);
                record.outcome = Some(Final::Success);
                // steadfast takes the digest after the handler's own write,
                // so that the write does not make the handler stale.
                let seen_on = match config.variant {
                    Variant::Kopf => ran_on,
                    Variant::Steadfast => written,
                };
                record.seen = Some(config.digest(key, seen_on));
            }
            Outcome::Temporary { delay } => {
                let due = self.now.saturating_add(delay);
                let expired = due >= record.started.saturating_add(config.timeout);
                if record.retries >= config.retry_limit || expired {
                    record.outcome = Some(Final::Failure);
                    record.seen = Some(config.digest(key, ran_on));
                } else {
                    record.delayed_until = Some(due);
                }
            }
            Outcome::Permanent => {
                record.outcome = Some(Final::Failure);
                record.seen = Some(config.digest(key, ran_on));
            }
        }
        cycle.work.set(key, Some(record));
        let write = (written != ran_on).then(|| {
            let field = Field::ALL
                .into_iter()
                .find(|&f| written.get(f) != ran_on.get(f))
                .unwrap_or(Field::Spec);
            (field, written.get(field))
        });
        // kopf judges the cycle on the body it started from; steadfast on the
        // essence this very patch will leave.
        let judged = match config.variant {
            Variant::Kopf => ran_on,
            Variant::Steadfast => written,
        };
        let view = cycle.view.clone();
        let effects = match self.next(config, &mut cycle.work, &view, judged) {
            Next::Done => self.commit(config, &cycle, judged, write),
            Next::Run(_) | Next::Wait(_) => self.save(config, &cycle, write),
        };
        if effects.is_empty() {
            // Nothing to write: the cycle ends here, and the newest version
            // (which may have changed while the handler ran, a deletion
            // among others) is processed now; no patch will prompt it.
            return self.cycle(config);
        }
        effects
    }

    /// Decides what the cycle does next, settling parents and resetting
    /// stale records in `work` on the way.
    fn next(
        &self,
        config: &Config,
        work: &mut Progress,
        view: &ObjectView,
        essence: Essence,
    ) -> Next {
        let reason = Reason::of(view.deleting, view.diff_base, essence, self.initial);
        let mut candidates: Vec<(u8, Key)> = Vec::new();
        let mut wake: Option<u8> = None;
        for h in 0..config.handlers.len() as u8 {
            if !config.matches(h, reason, view.diff_base, essence, self.initial) {
                continue;
            }
            let key = Key::handler(h);
            if self.is_finished(config, work, key, essence) {
                continue;
            }
            let pending: Vec<Key> = if config.is_parent(h) {
                let planned = config.plan(h, essence);
                if config.variant == Variant::Steadfast {
                    // Sub-handlers dropped from the plan are purged.
                    let dropped: Vec<Key> = work
                        .iter()
                        .map(|(k, _)| *k)
                        .filter(|k| k.handler == h && k.sub.is_some_and(|s| s >= planned))
                        .collect();
                    for k in dropped {
                        work.set(k, None);
                    }
                }
                let subs: Vec<Key> = (0..planned)
                    .map(|s| Key::sub(h, s))
                    .filter(|&k| !self.is_finished(config, work, k, essence))
                    .collect();
                if subs.is_empty() {
                    // Every planned sub-handler is done: so is the parent.
                    let mut record = work.get(key).copied().unwrap_or(Record::fresh(self.now));
                    record.outcome = Some(Final::Success);
                    record.seen = Some(config.digest(key, essence));
                    record.delayed_until = None;
                    work.set(key, Some(record));
                    continue;
                }
                subs
            } else {
                vec![key]
            };
            for k in pending {
                self.reset_if_stale(config, work, k, essence);
                let record = work.get(k);
                match record.and_then(|r| r.delayed_until) {
                    Some(due) if due > self.now => {
                        wake = Some(wake.map_or(due, |w| w.min(due)));
                    }
                    _ => candidates.push((record.map_or(0, |r| r.retries), k)),
                }
            }
        }
        // kopf's default lifecycle, `asap`: the fewest retries first.
        match (candidates.into_iter().min(), wake) {
            (Some((_, key)), _) => Next::Run(key),
            (None, Some(at)) => Next::Wait(at),
            (None, None) => Next::Done,
        }
    }

    /// Whether `key` is finished for `essence`: kopf asks only for a final
    /// outcome; steadfast also asks that it was reached on this digest.
    fn is_finished(&self, config: &Config, work: &Progress, key: Key, essence: Essence) -> bool {
        let Some(record) = work.get(key) else {
            return false;
        };
        match config.variant {
            Variant::Kopf => record.outcome.is_some(),
            Variant::Steadfast => {
                record.outcome.is_some() && record.seen == Some(config.digest(key, essence))
            }
        }
    }

    /// Under steadfast, a final record on another digest starts a new
    /// episode: fresh retries and start time.
    fn reset_if_stale(&self, config: &Config, work: &mut Progress, key: Key, essence: Essence) {
        if config.variant != Variant::Steadfast {
            return;
        }
        if let Some(record) = work.get(key) {
            if record.outcome.is_some() && record.seen != Some(config.digest(key, essence)) {
                work.set(key, Some(Record::fresh(self.now)));
            }
        }
    }

    /// Ends a cycle in which everything active is finished: the diff-base
    /// becomes `essence`, every record is purged, and a deletion's finalizer
    /// is removed, all in one patch.
    fn commit(
        &mut self,
        config: &Config,
        cycle: &Cycle,
        essence: Essence,
        write: Option<(Field, u8)>,
    ) -> Vec<Effect> {
        let view = &cycle.view;
        self.initial = false;
        let records: Vec<(Key, Option<Record>)> =
            view.progress.iter().map(|(k, _)| (*k, None)).collect();
        let finalizer = (view.deleting && view.finalizer).then_some(false);
        let diff_base = (!view.deleting && view.diff_base != Some(essence)).then_some(essence);
        if records.is_empty() && write.is_none() && finalizer.is_none() && diff_base.is_none() {
            return Vec::new();
        }
        self.send(
            config,
            Patch {
                expect_rv: view.rv,
                records,
                diff_base,
                write,
                finalizer,
                checked: false,
            },
        )
    }

    /// Writes the cycle's changed records (and a handler's write), if any.
    fn save(&mut self, config: &Config, cycle: &Cycle, write: Option<(Field, u8)>) -> Vec<Effect> {
        let before = &cycle.view.progress;
        let mut records: Vec<(Key, Option<Record>)> = cycle
            .work
            .iter()
            .filter(|(k, r)| before.get(*k) != Some(r))
            .map(|(k, r)| (*k, Some(*r)))
            .collect();
        records.extend(
            before
                .iter()
                .filter(|(k, _)| cycle.work.get(*k).is_none())
                .map(|(k, _)| (*k, None)),
        );
        if records.is_empty() && write.is_none() {
            return Vec::new();
        }
        self.send(
            config,
            Patch {
                expect_rv: cycle.view.rv,
                records,
                write,
                ..Patch::default()
            },
        )
    }

    /// Sends `patch`, with the variant's precondition.
    fn send(&mut self, config: &Config, mut patch: Patch) -> Vec<Effect> {
        patch.checked = config.variant == Variant::Steadfast;
        self.phase = Phase::Patching {
            rv: patch.expect_rv,
        };
        vec![Effect::Patch(patch)]
    }
}
