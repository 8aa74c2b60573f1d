//! A processing cycle: which handler runs next on the newest version, and
//! when a record counts as finished ([`Rule::DigestFinished`],
//! [`Rule::PlanOnce`], [`Rule::CreateOnce`]).

use serde::{Deserialize, Serialize};

use super::claims::Standing;
use super::inputs::RunId;
use super::outcomes::Carried;
use super::renewal::Renewal;
use super::{Effect, Engine, Hold, Patch, Phase};
use crate::lifecycle::domain::Domain;
use crate::lifecycle::handlers::{Config, HandlerSpec, On, Reason};
use crate::lifecycle::object::{Final, ObjectView, Progress, Record};
use crate::lifecycle::rules::Rule;

/// The cycle being processed: the version it started from, the progress as
/// it will be written, and what the handlers run in it wrote.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(bound = "")]
pub struct Cycle<D: Domain> {
    pub(super) view: ObjectView<D>,
    pub(super) work: Progress<D>,
    pub(super) writes: Vec<D::Write>,
    /// Parents that ran in this cycle (kopf runs a parent's sub-handlers
    /// within the parent's invocation).
    pub(super) planned: Vec<D::Handler>,
}

/// What a cycle should do next.
pub(super) enum Next<D: Domain> {
    /// Run this handler, a sub-handler of `parent` if that is set.
    Run {
        handler: D::Handler,
        parent: Option<D::Handler>,
    },
    /// Nothing can run before this time.
    Wait(D::Time),
    /// Every active handler is finished.
    Done,
}

impl<D: Domain> Engine<D> {
    /// The registration that governs `handler`: its own, or its parent's.
    pub(super) fn spec<'c>(
        &self,
        config: &'c Config<D>,
        handler: &D::Handler,
        parent: Option<&D::Handler>,
    ) -> &'c HandlerSpec<D> {
        let id = parent.unwrap_or(handler);
        config
            .handler(id)
            .expect("the engine runs only registered handlers and their sub-handlers")
    }

    /// Starts a cycle on the newest version, if the engine is idle.
    pub(super) fn cycle(&mut self, config: &Config<D>) -> Vec<Effect<D>> {
        let paused = self.pause.as_ref().is_some_and(|p| self.now < p.until);
        if !matches!(self.phase, Phase::Idle) || paused || matches!(self.hold, Hold::Refused(_)) {
            // Busy, waiting out a throttle, or on a version refused for good.
            return Vec::new();
        }
        if let Hold::Fetching { asked, .. } = &mut self.hold {
            // Asked for while idle, so that it reads every write of ours.
            return if std::mem::replace(asked, true) {
                Vec::new()
            } else {
                vec![Effect::Fetch]
            };
        }
        let Some(view) = self.view.clone() else {
            return Vec::new();
        };
        if view.deleting && !view.finalizer {
            // Deletion is under way and nothing of ours holds it.
            return Vec::new();
        }
        // An outcome carried is superseded once the object shows that
        // someone else handled it since (a claim lapses under a slow
        // holder, and another replica takes it over).
        self.carried.retain(|c| c.current_on(&view));
        if let Standing::Theirs { over } = self.standing(config, &view) {
            // Another replica works on the object: nothing is done before
            // its claim is over.
            return over.map(Effect::WakeAt).into_iter().collect();
        }
        if config.holds_deletion() && !view.finalizer && !view.deleting {
            let mut patch = Patch::on(view.version.clone());
            patch.finalizer = Some(true);
            // The first write of an episode takes the claim with it.
            patch.claim = self.claim(config, &view, false);
            return self.send(config, patch, None);
        }
        let cycle = Cycle {
            work: view.progress.clone(),
            view,
            writes: Vec::new(),
            planned: Vec::new(),
        };
        self.proceed(config, cycle)
    }

    /// Runs the cycle's next handler, or ends the cycle.
    pub(super) fn proceed(&mut self, config: &Config<D>, mut cycle: Cycle<D>) -> Vec<Effect<D>> {
        let essence = cycle.view.essence.clone();
        match self.next(config, &mut cycle, &essence) {
            Next::Run { handler, parent } => {
                let spec = self.spec(config, &handler, parent.as_ref());
                let digest = spec.digest(&essence);
                self.renew_if_stale(config, spec, &mut cycle.work, &handler, &digest);
                let known = self.carried.iter().position(|c| {
                    c.handler == handler && (c.digest == digest || created_by(config, spec, c))
                });
                if let Some(at) = known {
                    // Its outcome on this very digest is known (or a
                    // create handler's success, on any): written again
                    // instead of running it again.
                    let done = self.carried.remove(at);
                    return self.finish(config, parent, cycle, done);
                }
                // An outcome on another digest is kept until the handler's
                // next outcome is recorded: until then, its record tells of
                // an episode that ended, and a new one starts.
                if self.stopping {
                    // No new run: what the cycle has (a parent's outcome,
                    // under kopf) is written, the rest left to the next
                    // start.
                    return self.save(config, &cycle, None);
                }
                let record = match cycle.work.get(&handler) {
                    Some(record) => record.clone(),
                    None => {
                        let record = Record::fresh(self.now);
                        cycle.work.set(&handler, Some(record.clone()));
                        record
                    }
                };
                let limit = D::after(record.started, spec.timeout);
                let mut deadline = limit;
                let mut renewal = None;
                if self.now >= deadline || spec.out_of_attempts(record.retries) {
                    // Out of time or attempts before it could run (kopf
                    // checks both before each attempt; a parent it invokes
                    // again each cycle spends an attempt each time).
                    let given_up = Carried::given_up(&cycle.view, handler, digest);
                    return self.finish_telling(config, parent, cycle, given_up);
                }
                if config.rules.has(Rule::Claims) {
                    match self.standing(config, &cycle.view) {
                        // The run ends with the claim, by the engine's clock.
                        Standing::Mine { until } => {
                            deadline = deadline.min(until);
                            renewal = self.renewal_of(config, until, limit);
                        }
                        // Taken first, with the checked patch of the records
                        // (another's claim is not met here: `cycle` waits on
                        // it, and a cycle's version does not change).
                        Standing::Free | Standing::Theirs { .. } => {
                            return self.save_claiming(config, &cycle);
                        }
                    }
                }
                let run = RunId {
                    incarnation: self.incarnation,
                    seq: self.runs,
                };
                self.runs = self.runs.wrapping_add(1);
                let invoke = Effect::Invoke {
                    run,
                    version: cycle.view.version.clone(),
                    handler: handler.clone(),
                    parent: parent.clone(),
                    essence,
                    old: cycle.view.diff_base.clone(),
                    retry: record.retries,
                    epoch: cycle.view.claim.as_ref().map_or(0, |c| c.epoch),
                    // A claim that is renewed does not end the run: the
                    // engine is told the time when the renewal is due.
                    deadline: match &renewal {
                        Some(Renewal::Due { at }) => (*at).min(deadline),
                        _ => deadline,
                    },
                };
                self.phase = Phase::Running {
                    run,
                    handler,
                    parent,
                    deadline,
                    limit,
                    renewal,
                    cycle,
                };
                vec![invoke]
            }
            Next::Done => self.commit(config, &cycle, essence, None),
            Next::Wait(at) => {
                let mut effects = self.save(config, &cycle, None);
                effects.push(Effect::WakeAt(at));
                effects
            }
        }
    }

    /// Decides what the cycle does next, settling parents in the cycle's
    /// progress on the way.
    pub(super) fn next(
        &self,
        config: &Config<D>,
        cycle: &mut Cycle<D>,
        essence: &D::Essence,
    ) -> Next<D> {
        let view = &cycle.view;
        let base = view.diff_base.as_ref();
        let reason = Reason::of(view.deleting, base, essence, self.initial);
        let work = &mut cycle.work;
        // Under [`Rule::CreateOnce`], a change since a create handler
        // succeeded is the update handlers' to handle, in the creation's
        // cycles too (there is no diff-base to show it yet).
        let changed_since_created = reason == Reason::Create
            && config.handlers.iter().any(|spec| {
                work.get(&spec.id).is_some_and(|r| {
                    created(config, spec, r) && r.seen != Some(spec.digest(essence))
                })
            });
        // kopf's default lifecycle, `asap`: the fewest retries first, ties
        // in registration order.
        let mut best: Option<(u8, D::Handler, Option<D::Handler>)> = None;
        let mut wake: Option<D::Time> = None;
        for spec in &config.handlers {
            let id = &spec.id;
            let digest = spec.digest(essence);
            // Under [`Rule::DigestFinished`], a handler whose record tells of
            // an episode not finished, or of a run on another digest, is
            // active too: its field may have changed and changed back
            // relative to the diff-base since it ran.
            let unsettled = config.rules.has(Rule::DigestFinished)
                && reason != Reason::Delete
                && spec.on != On::Delete
                && (work.get(id).is_some_and(|r| {
                    r.outcome.is_none() || self.outdated(config, spec, r, id, &digest)
                }) || self.ran_since(id, &digest));
            let updates_creation = changed_since_created && spec.on == On::Update;
            if !spec.matches(reason, base, essence, self.initial) && !unsettled && !updates_creation
            {
                continue;
            }
            if self.finished(config, spec, work, id, &digest) {
                continue;
            }
            let record = work.get(id);
            let plan = record.map(|r| r.subs.clone()).unwrap_or_default();
            let runs_again = match record {
                None => true,
                Some(r) if r.subs.is_empty() => true,
                Some(r) if created(config, spec, r) => false,
                Some(r) if config.rules.has(Rule::PlanOnce) => {
                    r.seen.as_ref() != Some(&digest) || self.outdated(config, spec, r, id, &digest)
                }
                Some(_) => !cycle.planned.contains(id),
            };
            let mut pending: Vec<(D::Handler, Option<D::Handler>)> = Vec::new();
            if runs_again {
                pending.push((id.clone(), None));
            } else {
                for sub in &plan {
                    if !self.finished(config, spec, work, sub, &digest) {
                        pending.push((sub.clone(), Some(id.clone())));
                    }
                }
                if pending.is_empty() {
                    // Every sub-handler of its plan is done: so is the
                    // parent.
                    let failed = plan
                        .iter()
                        .any(|s| work.get(s).and_then(|r| r.outcome) == Some(Final::Failure));
                    if let Some(mut record) = work.get(id).cloned() {
                        record.outcome = Some(if failed {
                            Final::Failure
                        } else {
                            Final::Success
                        });
                        record.seen = Some(digest);
                        record.delayed_until = None;
                        work.set(id, Some(record));
                    }
                    continue;
                }
            }
            for (handler, parent) in pending {
                // An outdated record counts as the new episode it will be.
                let record = work.get(&handler).filter(|r| {
                    r.seen.is_none() || !self.outdated(config, spec, r, &handler, &digest)
                });
                match record.and_then(|r| r.delayed_until) {
                    Some(due) if due > self.now => {
                        wake = Some(wake.map_or(due, |w| w.min(due)));
                    }
                    _ => {
                        let retries = record.map_or(0, |r| r.retries);
                        if best.as_ref().is_none_or(|(fewest, ..)| retries < *fewest) {
                            best = Some((retries, handler, parent));
                        }
                    }
                }
            }
        }
        match (best, wake) {
            (Some((_, handler, parent)), _) => Next::Run { handler, parent },
            (None, Some(at)) => Next::Wait(at),
            (None, None) => Next::Done,
        }
    }

    /// Whether `id`, governed by `spec` (its own registration or its
    /// parent's), is finished for `digest`: kopf asks only for a final
    /// outcome; [`Rule::DigestFinished`] also asks that it was reached on
    /// this digest.
    pub(super) fn finished(
        &self,
        config: &Config<D>,
        spec: &HandlerSpec<D>,
        work: &Progress<D>,
        id: &D::Handler,
        digest: &D::Digest,
    ) -> bool {
        work.get(id).is_some_and(|record| {
            record.outcome.is_some() && !self.outdated(config, spec, record, id, digest)
        })
    }

    /// Whether `id`'s record tells of a run on another digest than
    /// `digest` ([`Rule::DigestFinished`]), or a refused patch's outcome
    /// tells of a later run on another digest than the record's; a create
    /// handler's success is never outdated ([`Rule::CreateOnce`]).
    pub(super) fn outdated(
        &self,
        config: &Config<D>,
        spec: &HandlerSpec<D>,
        record: &Record<D>,
        id: &D::Handler,
        digest: &D::Digest,
    ) -> bool {
        if created(config, spec, record) {
            return false;
        }
        let moved = config.rules.has(Rule::DigestFinished)
            && record.seen.as_ref().is_some_and(|seen| seen != digest);
        moved || self.ran_since(id, digest)
    }

    /// Whether a refused patch's outcome tells of a run of `id` on another
    /// digest than `digest`.
    pub(super) fn ran_since(&self, id: &D::Handler, digest: &D::Digest) -> bool {
        self.carried
            .iter()
            .any(|c| c.handler == *id && c.digest != *digest)
    }

    /// An outdated record that ended (or, for a parent, declared its plan),
    /// or one whose run on another digest ended with an outcome a refused
    /// patch carries, starts a new episode: fresh retries and start time (a
    /// parent keeps its plan, so that the plan can be purged).
    pub(super) fn renew_if_stale(
        &self,
        config: &Config<D>,
        spec: &HandlerSpec<D>,
        work: &mut Progress<D>,
        id: &D::Handler,
        digest: &D::Digest,
    ) {
        let Some(record) = work.get(id) else {
            return;
        };
        let ended = record.seen.is_some() || self.ran_since(id, digest);
        if ended && self.outdated(config, spec, record, id, digest) {
            let renewed = Record {
                subs: record.subs.clone(),
                ..Record::fresh(self.now)
            };
            work.set(id, Some(renewed));
        }
    }
}

/// Whether `spec` registers a create handler whose success stands
/// ([`Rule::CreateOnce`]).
fn creates_once<D: Domain>(config: &Config<D>, spec: &HandlerSpec<D>) -> bool {
    config.rules.has(Rule::CreateOnce) && spec.on == On::Create
}

/// Whether `record`, of a handler `spec` governs, tells of a create
/// handler's success (a leaf's, a sub-handler's, or a parent's run
/// that declared its plan), which stands whatever changes after it
/// ([`Rule::CreateOnce`]): a create handler acts once per object.
fn created<D: Domain>(config: &Config<D>, spec: &HandlerSpec<D>, record: &Record<D>) -> bool {
    creates_once(config, spec) && record.seen.is_some() && record.outcome != Some(Final::Failure)
}

/// Whether `carried` is a create handler's success, which is written
/// onto any digest rather than run again ([`Rule::CreateOnce`]).
fn created_by<D: Domain>(config: &Config<D>, spec: &HandlerSpec<D>, carried: &Carried<D>) -> bool {
    creates_once(config, spec) && carried.outcome == super::Outcome::Success
}
