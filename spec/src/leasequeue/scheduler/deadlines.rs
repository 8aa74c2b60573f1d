//! Deadlines: counted down, and what waits past one fails (see
//! "Deadlines" in the role's documentation).

use crate::leasequeue::{Domain, FailReason, Outcome, Rule};

use super::{contains_sorted, Config, Effect, Phase, Scheduler};

impl<D: Domain> Scheduler<D> {
    /// Whether activation `id`'s deadline has passed.
    pub(super) fn past_deadline(&self, id: &D::Activation) -> bool {
        passed::<D>(&self.deadlines, id)
    }

    /// Settles activation `id`, past its deadline, without running it: as
    /// failed, or, if it may have run before ([`Scheduler::may_have_run`]),
    /// as ambiguous.
    pub(super) fn fail_past_deadline(
        &mut self,
        config: &Config<D>,
        id: D::Activation,
        out: &mut Vec<Effect<D>>,
    ) {
        let reason = FailReason::PastDeadline;
        let outcome = if contains_sorted(&self.may_have_run, &id) {
            Outcome::Ambiguous(reason)
        } else {
            Outcome::Failed(reason)
        };
        self.settle(config, id, outcome, out);
    }

    /// Activation `id` started or settled here (or the peer it was
    /// forwarded to took it in): neither its deadline nor whether it may
    /// have run before counts here any more.
    pub(super) fn done_waiting(&mut self, id: &D::Activation) {
        if let Ok(at) = self.deadlines.binary_search_by(|(d, _)| d.cmp(id)) {
            self.deadlines.remove(at);
        }
        if let Ok(at) = self.may_have_run.binary_search(id) {
            self.may_have_run.remove(at);
        }
    }

    /// Under [`Rule::Deadline`], fails every activation that waits (on its
    /// queue, an election or a lookup) past its deadline: it would never
    /// start. Returns those it failed.
    pub(super) fn expire(
        &mut self,
        config: &Config<D>,
        out: &mut Vec<Effect<D>>,
    ) -> Vec<D::Activation> {
        let zero = D::Duration::default();
        if !config.rules.has(Rule::Deadline) || self.deadlines.iter().all(|(_, l)| *l != zero) {
            return Vec::new();
        }
        let mut expired = Vec::new();
        for list in [&mut self.waiting, &mut self.resolving] {
            let (past, kept): (Vec<_>, _) = std::mem::take(list)
                .into_iter()
                .partition(|(id, _)| passed::<D>(&self.deadlines, id));
            *list = kept;
            expired.extend(past.into_iter().map(|(id, _)| id));
        }
        for id in &expired {
            self.retried.retain(|r| r != id);
            self.fail_past_deadline(config, id.clone(), out);
        }
        if self.phase == Phase::Draining {
            self.drop_unwanted_elections();
        }
        expired
    }
}

/// Whether `deadlines` (sorted by activation) say activation `id`'s
/// deadline has passed.
fn passed<D: Domain>(deadlines: &[(D::Activation, D::Duration)], id: &D::Activation) -> bool {
    let at = deadlines.binary_search_by(|(d, _)| d.cmp(id));
    at.is_ok_and(|at| deadlines[at].1 == D::Duration::default())
}
