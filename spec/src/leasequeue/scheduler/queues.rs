//! Its queues: electing itself by create-if-absent, looking an
//! action's key up, handing out from a servable queue, and retiring an
//! idle one.

use serde::{Deserialize, Serialize};

use crate::leasequeue::{Domain, FailReason, KeyFault, Outcome, Rule, Rules};

use super::{contains_sorted, insert_sorted, ClaimResult, Config, Effect, Scheduler};

/// A queue this scheduler owns, and the key it was registered with.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub struct Queue<D: Domain> {
    /// The action.
    pub action: D::Action,
    /// The lease its endpoint key is bound to.
    pub lease: D::Lease,
    /// The revision that created its endpoint key: a key deleted and
    /// created again, even by this scheduler under this lease, has another.
    pub created: D::Revision,
    /// How long since its last hand-out (or since it opened), up to
    /// [`Config::idle_after`].
    pub idle_for: D::Duration,
}

impl<D: Domain> Queue<D> {
    /// Whether its idle timer is due: it handed out nothing for
    /// [`Config::idle_after`].
    pub fn idle_timer_due(&self, config: &Config<D>) -> bool {
        self.idle_for >= config.idle_after
    }
}

/// An endpoint key as etcd holds it.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct Endpoint<D: Domain> {
    /// The scheduler that owns the queue (the key's value).
    pub owner: D::Scheduler,
    /// The owner's incarnation that created the key (the key's value).
    pub incarnation: D::Incarnation,
    /// The lease the key is bound to.
    pub lease: D::Lease,
    /// The revision that created the key.
    pub created: D::Revision,
}

impl<D: Domain> Scheduler<D> {
    /// The lease it would hand out `action`'s work under now, if any.
    pub(super) fn servable(&self, rules: Rules, action: &D::Action) -> Option<D::Lease> {
        let queue = self.queue(action)?;
        if !rules.has(Rule::Fence) {
            // OpenWhisk serves from its queue whatever became of its lease.
            return Some(queue.lease.clone());
        }
        self.valid_lease().filter(|id| **id == queue.lease).cloned()
    }

    /// Hands out every waiting activation whose queue is servable now; one
    /// whose action has neither a queue nor an election is looked up again.
    pub(super) fn serve_waiting(&mut self, config: &Config<D>, out: &mut Vec<Effect<D>>) {
        for (id, action) in std::mem::take(&mut self.waiting) {
            self.take_in(config, id, action, out);
        }
    }

    /// Hands activation `id` out if its queue is servable now; keeps it
    /// waiting while its action has a queue or an election; else looks up
    /// its action's key.
    pub(super) fn take_in(
        &mut self,
        config: &Config<D>,
        id: D::Activation,
        action: D::Action,
        out: &mut Vec<Effect<D>>,
    ) {
        if let Some(lease) = self.servable(config.rules, &action) {
            self.execute(config, id, action, lease, out);
        } else if self.queue(&action).is_some() || self.electing.contains(&action) {
            self.waiting.push((id, action));
        } else {
            self.resolve(id, action, out);
        }
    }

    pub(super) fn resolve(
        &mut self,
        id: D::Activation,
        action: D::Action,
        out: &mut Vec<Effect<D>>,
    ) {
        self.resolving.push((id.clone(), action.clone()));
        out.push(Effect::Resolve { id, action });
    }

    /// Wants `action`'s key: claims it now if it holds a lease and is not
    /// deleting the key, else at the next chance.
    pub(super) fn elect(&mut self, action: D::Action, out: &mut Vec<Effect<D>>) {
        if self.electing.contains(&action) {
            return;
        }
        insert_sorted(&mut self.electing, action.clone());
        if self.retiring.iter().any(|(a, _)| *a == action) {
            return;
        }
        if let Some(lease) = self.live_lease().cloned() {
            let incarnation = self.incarnation;
            out.push(Effect::Claim {
                action,
                lease,
                incarnation,
            });
        }
    }

    pub(super) fn claimed(
        &mut self,
        config: &Config<D>,
        action: D::Action,
        lease: D::Lease,
        result: ClaimResult<D>,
        out: &mut Vec<Effect<D>>,
    ) {
        if self.live_lease() != Some(&lease) {
            return;
        }
        let electing = self.electing.contains(&action);
        if !electing || self.retiring.iter().any(|(a, _)| *a == action) {
            // A claim sent again, or held up in the network, answered
            // after the queue retired: a key it created is not wanted (it
            // would be kept alive with no queue behind it), and a key it
            // found is being deleted (the claim is sent again once the
            // delete is done).
            if let (ClaimResult::Created { created }, false) = (result, electing) {
                self.delete_key(config.rules, action, created, out);
            }
            return;
        }
        match result {
            ClaimResult::Unreadable { why, .. } if config.rules.has(Rule::RefuseUnreadable) => {
                self.electing.retain(|a| *a != action);
                for (id, _) in extract(&mut self.waiting, &action) {
                    self.unroute(config, id, why, out);
                }
            }
            // Without the rule, it claims again at the next wake-up.
            ClaimResult::Unreadable { .. } => {}
            ClaimResult::Exists(key) if key.owner == self.id && key.lease != lease => {
                // Its own key under an older lease, which is being revoked:
                // claim again at the next wake-up.
            }
            ClaimResult::LeaseNotFound if config.rules.has(Rule::TtlZeroIsLoss) => {
                self.lose_lease(config, out);
            }
            // OpenWhisk claims again at the next wake-up.
            ClaimResult::LeaseNotFound => {}
            ClaimResult::Exists(key) if key.owner != self.id => {
                self.electing.retain(|a| *a != action);
                for (id, _) in extract(&mut self.waiting, &action) {
                    self.forward(config, id, action.clone(), key.clone(), out);
                }
            }
            ClaimResult::Created { created } | ClaimResult::Exists(Endpoint { created, .. }) => {
                self.electing.retain(|a| *a != action);
                self.open_queue(config, action, lease, created, out);
                self.serve_waiting(config, out);
            }
        }
    }

    pub(super) fn resolved(
        &mut self,
        config: &Config<D>,
        id: D::Activation,
        action: D::Action,
        key: Option<Endpoint<D>>,
        out: &mut Vec<Effect<D>>,
    ) {
        let Some(was_retried) = self.lookup_answered(&id) else {
            return;
        };
        let rules = config.rules;
        if let Some(lease) = self.servable(rules, &action) {
            return self.execute(config, id, action, lease, out);
        }
        match (rules.has(Rule::SelfElection), key) {
            (_, Some(key)) if key.owner != self.id => self.forward(config, id, action, key, out),
            // The key names this scheduler, which has no queue: OpenWhisk
            // recreates the queue without an election (#5332).
            (false, Some(key)) => {
                self.open_queue(config, action.clone(), key.lease.clone(), key.created, out);
                self.execute(config, id, action, key.lease, out);
            }
            // OpenWhisk retries its lookup for about 8 s, which outlasts an
            // election of its own; without one, the activation fails.
            (false, None) if self.electing.contains(&action) && !was_retried => {
                insert_sorted(&mut self.retried, id.clone());
                self.resolve(id, action, out);
            }
            (false, None) => {
                let outcome = Outcome::Failed(FailReason::NoQueueEndpoint);
                self.settle(config, id, outcome, out);
            }
            // steadfast elects itself by create-if-absent and serves, or
            // forwards to whoever won; a key of its own under an older
            // lease, or one it is deleting, is retaken the same way once
            // that lease is revoked or the delete is done.
            (true, _) => {
                self.waiting.push((id, action.clone()));
                self.elect(action, out);
            }
        }
    }

    /// The lookup of `action`'s key for activation `id` could read no
    /// owner from it, for good (`why`). Under [`Rule::RefuseUnreadable`],
    /// unless it can serve the action itself, it answers the call as not
    /// routed; without the rule, it looks the key up again at its next
    /// wake-up.
    pub(super) fn resolved_unreadable(
        &mut self,
        config: &Config<D>,
        id: D::Activation,
        action: D::Action,
        why: KeyFault,
        out: &mut Vec<Effect<D>>,
    ) {
        if !config.rules.has(Rule::RefuseUnreadable) || self.lookup_answered(&id).is_none() {
            return;
        }
        match self.servable(config.rules, &action) {
            Some(lease) => self.execute(config, id, action, lease, out),
            None => self.unroute(config, id, why, out),
        }
    }

    /// Takes activation `id` off the lookups, if it was looked up: whether
    /// its lookup had been sent again once already (OpenWhisk's retry).
    fn lookup_answered(&mut self, id: &D::Activation) -> Option<bool> {
        let at = self.resolving.iter().position(|(i, _)| i == id)?;
        self.resolving.remove(at);
        let was_retried = contains_sorted(&self.retried, id);
        self.retried.retain(|r| r != id);
        Some(was_retried)
    }

    /// Retires the queue of `action` if it handed out nothing for
    /// [`Config::idle_after`] and no work waits on it; else arms its idle
    /// timer again for the rest of the span.
    pub(super) fn retire(
        &mut self,
        config: &Config<D>,
        action: D::Action,
        out: &mut Vec<Effect<D>>,
    ) {
        let Some(queue) = self.queue(&action).cloned() else {
            return;
        };
        let busy = self.waiting.iter().any(|(_, a)| *a == action);
        if busy || !queue.idle_timer_due(config) {
            let after = D::saturating_sub(config.idle_after, queue.idle_for);
            out.push(Effect::IdleTimer { action, after });
            return;
        }
        self.queues.retain(|q| q.action != action);
        self.delete_key(config.rules, action, queue.created, out);
    }

    /// Deletes the key of `action` that revision `created` created: only
    /// that key under [`Rule::ConditionalDelete`], whatever key is there
    /// without it.
    pub(super) fn delete_key(
        &mut self,
        rules: Rules,
        action: D::Action,
        created: D::Revision,
        out: &mut Vec<Effect<D>>,
    ) {
        let created = rules.has(Rule::ConditionalDelete).then_some(created);
        self.retiring.retain(|(a, _)| *a != action);
        self.retiring.push((action.clone(), created));
        self.retiring.sort_unstable();
        out.push(Effect::Delete { action, created });
    }

    /// The delete of `action`'s key ended: a claim of it that waited on
    /// the delete is sent now.
    pub(super) fn deleted(&mut self, action: D::Action, out: &mut Vec<Effect<D>>) {
        self.retiring.retain(|(a, _)| *a != action);
        if let (true, Some(lease)) = (self.electing.contains(&action), self.live_lease()) {
            let lease = lease.clone();
            let incarnation = self.incarnation;
            out.push(Effect::Claim {
                action,
                lease,
                incarnation,
            });
        }
    }

    /// Owns a queue for `action` from now on, unless it does already, and
    /// arms its idle timer.
    pub(super) fn open_queue(
        &mut self,
        config: &Config<D>,
        action: D::Action,
        lease: D::Lease,
        created: D::Revision,
        out: &mut Vec<Effect<D>>,
    ) {
        if self.queue(&action).is_some() {
            return;
        }
        self.queues.push(Queue {
            action: action.clone(),
            lease,
            created,
            idle_for: D::Duration::default(),
        });
        self.queues.sort_unstable();
        out.push(Effect::IdleTimer {
            action,
            after: config.idle_after,
        });
    }
}

/// Takes out of `list` every entry for `action`.
fn extract<A: PartialEq, T>(list: &mut Vec<(T, A)>, action: &A) -> Vec<(T, A)> {
    let (taken, kept) = std::mem::take(list)
        .into_iter()
        .partition(|(_, a)| a == action);
    *list = kept;
    taken
}
