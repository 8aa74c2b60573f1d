//! The engine's writes and how it meets their answers: the cycle's patch,
//! a refusal, an unknown outcome, a throttle and its wait.

use serde::{Deserialize, Serialize};

use super::cycle::Cycle;
use super::outcomes::Carried;
use super::{Effect, Engine, Hold, Patch, Phase, Verdict};
use crate::lifecycle::domain::Domain;
use crate::lifecycle::handlers::Config;
use crate::lifecycle::rules::Rule;

/// A wait after the API server throttled a request or could not serve it:
/// nothing is asked of it before `until`.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(bound = "")]
pub struct Pause<D: Domain> {
    /// When the engine may ask again.
    pub until: D::Time,
    /// How long this wait is: the next one, if the next answer is the same,
    /// is twice as long (see [`super::handlers::Backoff`]).
    pub wait: D::Duration,
}

impl<D: Domain> Engine<D> {
    /// Waits before the next request: `retry_after` if the server said, a
    /// doubling wait otherwise.
    pub(super) fn back_off(
        &mut self,
        config: &Config<D>,
        retry_after: Option<D::Duration>,
    ) -> Vec<Effect<D>> {
        let last = self.pause.as_ref().map(|p| p.wait);
        let wait = config.backoff.next(last, retry_after);
        let until = D::after(self.now, wait);
        self.pause = Some(Pause { until, wait });
        vec![Effect::WakeAt(until)]
    }

    /// The last patch was refused for good: it is told, the run's outcome
    /// is kept to be written onto a newer version, and nothing is processed
    /// until the object changes from the version the patch was computed
    /// from (a newer one seen already is processed now). It is not read
    /// again: a read would show the same version.
    pub(super) fn refused_for_good(
        &mut self,
        config: &Config<D>,
        message: D::Message,
    ) -> Vec<Effect<D>> {
        if !matches!(self.phase, Phase::Patching { .. }) {
            return Vec::new();
        }
        if let Some(expect) = self.unapplied(config) {
            self.hold = Hold::Refused(expect);
        }
        let mut effects = vec![Effect::Tell(Verdict::PatchRefused { message })];
        effects.extend(self.cycle(config));
        effects
    }

    /// The last patch was refused, or its outcome is unknown: a newer
    /// version is processed (read, if the watch has shown none), with the
    /// run's outcome kept to be written again ([`Rule::RebaseOnConflict`]).
    pub(super) fn refused(&mut self, config: &Config<D>) -> Vec<Effect<D>> {
        if !matches!(self.phase, Phase::Patching { .. }) {
            return Vec::new();
        }
        if self.unapplied(config).is_some() {
            // The object moved on from the newest version seen (or the
            // refusal was spurious): read it rather than wait for the watch.
            self.hold = Hold::fetching();
        }
        self.cycle(config)
    }

    /// The last patch was throttled, or got no answer: it may have
    /// applied. The engine waits `retry_after`, or its own backoff, and
    /// then meets it as a refused one ([`Engine::refused`]).
    pub(super) fn unanswered(
        &mut self,
        config: &Config<D>,
        retry_after: Option<D::Duration>,
    ) -> Vec<Effect<D>> {
        if !matches!(self.phase, Phase::Patching { .. }) {
            return Vec::new();
        }
        let mut effects = self.back_off(config, retry_after);
        effects.extend(self.refused(config));
        effects
    }

    /// Ends the patch in flight, which did not apply (or may not have):
    /// its run's outcome is kept to be written onto a newer version
    /// ([`Rule::RebaseOnConflict`]). Returns the version the patch was
    /// computed from if it is still the newest seen and nothing holds the
    /// engine: nothing newer is known to process.
    pub(super) fn unapplied(&mut self, config: &Config<D>) -> Option<D::Version> {
        let Phase::Patching { patch, carried, .. } =
            std::mem::replace(&mut self.phase, Phase::Idle)
        else {
            return None;
        };
        if let Some(carried) = carried.filter(|_| config.rules.has(Rule::RebaseOnConflict)) {
            self.carried.retain(|c| c.handler != carried.handler);
            self.carried.push(carried);
        }
        let newest = self
            .view
            .as_ref()
            .is_some_and(|v| v.version == patch.expect);
        (self.hold == Hold::None && newest).then_some(patch.expect)
    }

    /// Ends a cycle in which everything active is finished: the diff-base
    /// becomes `essence`, every record is purged, and a deletion's finalizer
    /// is removed, all in one patch; `done` is the run whose outcome
    /// completed the cycle.
    pub(super) fn commit(
        &mut self,
        config: &Config<D>,
        cycle: &Cycle<D>,
        essence: D::Essence,
        done: Option<Carried<D>>,
    ) -> Vec<Effect<D>> {
        let view = &cycle.view;
        self.initial = false;
        let mut patch = Patch::on(view.version.clone());
        patch.records = view
            .progress
            .iter()
            .map(|(k, _)| (k.clone(), None))
            .collect();
        patch.finalizer = (view.deleting && view.finalizer).then_some(false);
        patch.diff_base =
            (!view.deleting && view.diff_base.as_ref() != Some(&essence)).then_some(essence);
        patch.writes = cycle.writes.clone();
        patch.claim = self.claim(config, view, true);
        if patch.is_empty() {
            return Vec::new();
        }
        self.send(config, patch, done)
    }

    /// Writes the cycle's changed records and its handlers' writes, if any;
    /// `done` is the run whose outcome the patch records.
    pub(super) fn save(
        &mut self,
        config: &Config<D>,
        cycle: &Cycle<D>,
        done: Option<Carried<D>>,
    ) -> Vec<Effect<D>> {
        let mut patch = self.progress_patch(cycle);
        // A progress patch renews the claim; a stopping engine's releases it.
        if self.stopping || !patch.is_empty() {
            patch.claim = self.claim(config, &cycle.view, self.stopping);
        }
        if patch.is_empty() {
            return Vec::new();
        }
        self.send(config, patch, done)
    }

    /// Takes the claim before a run, with the cycle's records.
    pub(super) fn save_claiming(&mut self, config: &Config<D>, cycle: &Cycle<D>) -> Vec<Effect<D>> {
        let mut patch = self.progress_patch(cycle);
        patch.claim = self.claim(config, &cycle.view, false);
        self.send(config, patch, None)
    }

    /// The patch of the cycle's changed records and its handlers' writes.
    pub(super) fn progress_patch(&self, cycle: &Cycle<D>) -> Patch<D> {
        let before = &cycle.view.progress;
        let mut patch = Patch::on(cycle.view.version.clone());
        patch.records = cycle
            .work
            .iter()
            .filter(|(k, r)| before.get(k) != Some(r))
            .map(|(k, r)| (k.clone(), Some(r.clone())))
            .collect();
        patch.records.extend(
            before
                .iter()
                .filter(|(k, _)| cycle.work.get(k).is_none())
                .map(|(k, _)| (k.clone(), None)),
        );
        patch.writes = cycle.writes.clone();
        patch
    }

    /// Sends `patch`, with the precondition if the rules ask for it.
    ///
    /// With a status subresource, which takes nothing but the status (and
    /// the main resource ignores it), the handlers' status writes go first,
    /// alone, through it; the rest follows once they applied
    /// ([`Engine::send_rest`]). A failure between them leaves the status
    /// written and the rest not: the engine meets it as any patch that did
    /// not apply, and writes the run's outcome (its status write with it)
    /// again.
    pub(super) fn send(
        &mut self,
        config: &Config<D>,
        mut patch: Patch<D>,
        carried: Option<Carried<D>>,
    ) -> Vec<Effect<D>> {
        patch.checked = config.rules.has(Rule::CheckedPatches);
        let (patch, rest) = if config.status_subresource {
            patch.split_status()
        } else {
            (patch, None)
        };
        self.phase = Phase::Patching {
            patch: patch.clone(),
            rest,
            carried,
            seen: Vec::new(),
        };
        vec![Effect::Patch(patch)]
    }

    /// The status part of a split patch applied and made `version`: the
    /// rest is sent, on that version (so that it applies only if no other
    /// writer came between). `None` if no rest is waiting. The engine keeps
    /// the version the patch was computed from: if the rest does not apply,
    /// a version seen since is newer, and if none is, the object is read.
    pub(super) fn send_rest(&mut self, version: &D::Version) -> Option<Vec<Effect<D>>> {
        let Phase::Patching { patch, rest, .. } = &mut self.phase else {
            return None;
        };
        *patch = rest.take()?;
        let sent = Patch {
            expect: version.clone(),
            ..patch.clone()
        };
        Some(vec![Effect::Patch(sent)])
    }
}
