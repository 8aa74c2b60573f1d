//! What it hands out, and how that ends: a result, the executor's
//! error or panic, or a timeout (see "Executions" in the role's
//! documentation).

use crate::leasequeue::{Domain, ExecutionFailure, Outcome, Rule};

use super::{insert_sorted, Config, Effect, Scheduler};

impl<D: Domain> Scheduler<D> {
    /// Hands activation `id` out from `action`'s queue under `lease`; under
    /// [`Rule::Deadline`], fails it instead if its deadline has passed.
    pub(super) fn execute(
        &mut self,
        config: &Config<D>,
        id: D::Activation,
        action: D::Action,
        lease: D::Lease,
        out: &mut Vec<Effect<D>>,
    ) {
        if config.rules.has(Rule::Deadline) && self.past_deadline(&id) {
            return self.fail_past_deadline(config, id, out);
        }
        self.done_waiting(&id);
        if let Some(queue) = self.queues.iter_mut().find(|q| q.action == action) {
            queue.idle_for = D::Duration::default();
        }
        insert_sorted(&mut self.running, id.clone());
        if let (true, Some(limit)) = (config.rules.has(Rule::ExecutionTimeout), config.execute_for)
        {
            if let Err(at) = self.timeouts.binary_search_by(|(t, _)| t.cmp(&id)) {
                self.timeouts.insert(at, (id.clone(), limit));
            }
        }
        out.push(Effect::Execute { id, action, lease });
    }

    /// Activation `id`'s execution ended with `outcome`, if it is still
    /// running here (one that ran past its timeout was settled already).
    pub(super) fn executed(
        &mut self,
        config: &Config<D>,
        id: D::Activation,
        outcome: Outcome,
        out: &mut Vec<Effect<D>>,
    ) {
        let Ok(at) = self.running.binary_search(&id) else {
            return;
        };
        self.running.remove(at);
        if let Ok(at) = self.timeouts.binary_search_by(|(t, _)| t.cmp(&id)) {
            self.timeouts.remove(at);
        }
        self.settle(config, id, outcome, out);
    }

    /// Under [`Rule::ExecutionTimeout`], settles every execution that ran
    /// past its timeout as failed, and cancels it. Returns those it
    /// settled.
    pub(super) fn time_out(
        &mut self,
        config: &Config<D>,
        out: &mut Vec<Effect<D>>,
    ) -> Vec<D::Activation> {
        let zero = D::Duration::default();
        let past: Vec<D::Activation> = self
            .timeouts
            .iter()
            .filter(|(_, left)| *left == zero)
            .map(|(id, _)| id.clone())
            .collect();
        for id in &past {
            out.push(Effect::Cancel { id: id.clone() });
            let outcome = Outcome::ExecutionFailed(ExecutionFailure::Timeout);
            self.executed(config, id.clone(), outcome, out);
        }
        past
    }
}
