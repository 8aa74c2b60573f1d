//! A run's outcome taken in: its record, its verdict for people, and the
//! outcome carried while the patch that records it is in flight
//! ([`Rule::RebaseOnConflict`]).

use serde::{Deserialize, Serialize};

use super::cycle::{Cycle, Next};
use super::{Effect, Engine, Outcome, Phase, Verdict};
use crate::lifecycle::domain::Domain;
use crate::lifecycle::handlers::Config;
use crate::lifecycle::object::{Final, ObjectView, Record};
use crate::lifecycle::rules::Rule;

/// The outcome of a run, kept while its patch is in flight so that it can
/// be written onto a newer version if the patch is refused
/// ([`Rule::RebaseOnConflict`]).
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(bound = "")]
pub struct Carried<D: Domain> {
    /// The handler that ran.
    pub handler: D::Handler,
    /// What it depended on.
    pub digest: D::Digest,
    /// How it ended.
    pub outcome: Outcome<D>,
    /// What it declared.
    pub subs: Vec<D::Handler>,
    /// What it wrote.
    pub write: Option<D::Write>,
    /// The diff-base of the version it ran on.
    pub base: Option<D::Essence>,
    /// Its handler's record on the version it ran on.
    pub record: Option<Record<D>>,
}

impl<D: Domain> Carried<D> {
    /// A run of `handler` on `digest` of `view`, that ended with
    /// `outcome`, declaring `subs` and writing `write`.
    pub(super) fn ran(
        view: &ObjectView<D>,
        handler: D::Handler,
        digest: D::Digest,
        outcome: Outcome<D>,
        subs: Vec<D::Handler>,
        write: Option<D::Write>,
    ) -> Self {
        Carried {
            base: view.diff_base.clone(),
            record: view.progress.get(&handler).cloned(),
            handler,
            digest,
            outcome,
            subs,
            write,
        }
    }

    /// A run of `handler` on `digest` of `view` given up (out of time or
    /// attempts): a permanent failure that declared and wrote nothing.
    pub(super) fn given_up(view: &ObjectView<D>, handler: D::Handler, digest: D::Digest) -> Self {
        Carried::ran(view, handler, digest, Outcome::GivenUp, Vec::new(), None)
    }

    /// Whether `view` shows what the run's outcome was taken against: the
    /// same diff-base, and the same record of its handler. Otherwise
    /// someone (another replica, whose claim outlived this engine's) has
    /// handled the object since, and the outcome is superseded.
    pub(super) fn current_on(&self, view: &ObjectView<D>) -> bool {
        view.diff_base == self.base && view.progress.get(&self.handler) == self.record.as_ref()
    }
}

impl<D: Domain> Engine<D> {
    /// The running handler passed its deadline: it is cancelled, and has
    /// failed for good.
    pub(super) fn abandon(&mut self, config: &Config<D>) -> Vec<Effect<D>> {
        let Phase::Running {
            run,
            handler,
            parent,
            cycle,
            ..
        } = std::mem::replace(&mut self.phase, Phase::Idle)
        else {
            return Vec::new();
        };
        let digest = self
            .spec(config, &handler, parent.as_ref())
            .digest(&cycle.view.essence);
        self.cancelled = Some(run);
        let given_up = Carried::given_up(&cycle.view, handler, digest);
        let mut effects = vec![Effect::Cancel { run }];
        effects.extend(self.finish_telling(config, parent, cycle, given_up));
        effects
    }

    /// [`Engine::finish`] for an outcome taken in for the first time: the
    /// verdict on it is told ([`Effect::Tell`]) before what follows.
    pub(super) fn finish_telling(
        &mut self,
        config: &Config<D>,
        parent: Option<D::Handler>,
        cycle: Cycle<D>,
        done: Carried<D>,
    ) -> Vec<Effect<D>> {
        let spec = self.spec(config, &done.handler, parent.as_ref());
        let record = cycle.work.get(&done.handler);
        let earlier = record.map_or(0, |r| r.retries);
        let handler = done.handler.clone();
        let verdict = match (&done.outcome, done.outcome.message()) {
            (Outcome::Success, _) => None,
            (_, None) => Some(Verdict::Failed {
                handler,
                message: record.and_then(|r| r.error.clone()),
            }),
            (outcome, Some(message)) => Some(match outcome.retry_wait(&config.backoff, earlier) {
                Some(wait) if !spec.out_of_attempts(earlier.saturating_add(1)) => {
                    Verdict::Retrying {
                        handler,
                        message: message.clone(),
                        at: D::after(self.now, wait),
                    }
                }
                _ => Verdict::Failed {
                    handler,
                    message: Some(message.clone()),
                },
            }),
        };
        let mut effects = self.finish(config, parent, cycle, done);
        if let Some(verdict) = verdict {
            effects.insert(0, Effect::Tell(verdict));
        }
        effects
    }

    /// Records a run's outcome, then goes on with the cycle: into a
    /// parent's plan (kopf), or to its patch.
    pub(super) fn finish(
        &mut self,
        config: &Config<D>,
        parent: Option<D::Handler>,
        mut cycle: Cycle<D>,
        mut done: Carried<D>,
    ) -> Vec<Effect<D>> {
        let spec = self.spec(config, &done.handler, parent.as_ref());
        let ran_on = cycle.view.essence.clone();
        // Only a run that succeeded writes (or declares a plan).
        if done.outcome != Outcome::Success {
            done.write = None;
            done.subs.clear();
        }
        let written = match &done.write {
            Some(write) => D::apply(&ran_on, write, &config.watched()),
            None => ran_on.clone(),
        };
        // With the rule, the handler's digest is taken after its own write,
        // so that the write does not make it stale.
        let judged = if config.rules.has(Rule::DigestAfterOwnWrite) {
            written.clone()
        } else {
            ran_on.clone()
        };
        // A create handler's success carried from a run on another digest
        // ([`Rule::CreateOnce`]) is recorded on the digest it ran on, so
        // that the change since is the update handlers' to handle.
        let seen = if done.digest == spec.digest(&ran_on) {
            spec.digest(&judged)
        } else {
            done.digest.clone()
        };
        let mut record = cycle
            .work
            .get(&done.handler)
            .cloned()
            .unwrap_or_else(|| Record::fresh(self.now));
        let wait = done.outcome.retry_wait(&config.backoff, record.retries);
        record.retries = record.retries.saturating_add(1);
        record.delayed_until = None;
        match (&done.outcome, done.outcome.message()) {
            (Outcome::Success, _) => record.error = None,
            (_, Some(message)) => record.error = Some(message.clone()),
            // Given up: the record keeps the last failure's message.
            (_, None) => {}
        }
        match done.outcome {
            Outcome::Success if parent.is_none() => {
                // A top-level run declares its plan (a leaf's is empty).
                if config.rules.has(Rule::FreshPlan) {
                    for sub in &record.subs {
                        cycle.work.set(sub, None);
                    }
                    let plans = [&record.subs, &done.subs];
                    self.carried
                        .retain(|c| plans.iter().all(|plan| !plan.contains(&c.handler)));
                }
                record.subs = done.subs.clone();
                record.seen = Some(seen);
                if done.subs.is_empty() {
                    record.outcome = Some(Final::Success);
                } else {
                    // A parent finishes with its plan.
                    record.outcome = None;
                    cycle.planned.push(done.handler.clone());
                }
            }
            Outcome::Success => {
                record.outcome = Some(Final::Success);
                record.seen = Some(seen);
            }
            _ if wait.is_some() && !spec.out_of_attempts(record.retries) => {
                record.delayed_until = wait.map(|wait| D::after(self.now, wait));
            }
            // A permanent failure, given up, or a temporary one on the
            // last attempt.
            Outcome::Temporary { .. }
            | Outcome::Panicked { .. }
            | Outcome::Permanent { .. }
            | Outcome::GivenUp => {
                record.outcome = Some(Final::Failure);
                record.seen = Some(spec.digest(&ran_on));
            }
        }
        cycle.work.set(&done.handler, Some(record));
        // An outcome carried from an earlier run is superseded by this one.
        self.carried.retain(|c| c.handler != done.handler);
        cycle.writes.extend(done.write.clone());
        let next = self.next(config, &mut cycle, &judged);
        let effects = match next {
            Next::Run {
                parent: Some(ref p),
                ..
            } if !config.rules.has(Rule::PlanOnce) && *p == done.handler => {
                // kopf runs one sub-handler of the plan within the parent's
                // invocation.
                return self.proceed(config, cycle);
            }
            Next::Done => self.commit(config, &cycle, judged, Some(done)),
            Next::Run { .. } | Next::Wait(_) => self.save(config, &cycle, Some(done)),
        };
        if effects.is_empty() {
            // Nothing to write: the cycle ends here, and the newest version
            // (which may have changed while the handler ran, a deletion
            // among others) is processed now; no patch will prompt it.
            return self.cycle(config);
        }
        effects
    }
}
