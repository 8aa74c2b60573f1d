//! The scheduler: it holds one lease at a time, owns the queues whose
//! endpoint keys it registered under that lease, and executes or forwards
//! the activations it is sent. A sans-I/O state machine.

use serde::{Deserialize, Serialize};

use super::{Domain, FailReason, Rule, Rules};

/// A queue this scheduler owns, and the lease its key was registered under.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub struct Queue<D: Domain> {
    /// The action.
    pub action: D::Action,
    /// The lease its endpoint key is bound to.
    pub lease: D::Lease,
}

/// Where the scheduler's lease stands.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum LeaseState<D: Domain> {
    /// No lease yet: one must be granted.
    None,
    /// The lease it keeps alive; `silent` ticks since etcd last confirmed it.
    Held {
        /// The lease id.
        id: D::Lease,
        /// Ticks without a positive keepalive answer.
        silent: u8,
    },
    /// The lease is lost (or may be): it must be revoked, then replaced.
    Lost {
        /// The lost lease.
        id: D::Lease,
    },
}

/// What etcd (or a peer) tells the scheduler.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum Input<D: Domain> {
    /// A tick of time passed: a keepalive is due.
    Tick,
    /// etcd answered a keepalive with this TTL (0: no such lease).
    KeptAlive {
        /// The TTL left.
        ttl: u8,
    },
    /// A keepalive got no answer (etcd unreachable).
    Unanswered,
    /// A lease was granted.
    Granted {
        /// Its id.
        lease: D::Lease,
    },
    /// A lost lease was revoked (or found already gone).
    Revoked,
    /// A create-if-absent of `action`'s key under the current lease ended.
    Claimed {
        /// The action.
        action: D::Action,
        /// Whether the key is now this scheduler's.
        won: bool,
        /// The owner when it is someone else's.
        owner: Option<D::Scheduler>,
    },
    /// An activation arrived (from a controller or a peer).
    Activation {
        /// Its id.
        id: D::Activation,
        /// Its action.
        action: D::Action,
    },
    /// A lookup of `action`'s key for a waiting activation answered.
    Resolved {
        /// The activation.
        id: D::Activation,
        /// Its action.
        action: D::Action,
        /// The key's owner and lease, if the key exists.
        owner: Option<(D::Scheduler, D::Lease)>,
    },
    /// A controller asks for a queue for `action`.
    CreateQueue {
        /// The action.
        action: D::Action,
    },
    /// The queue of `action` has been idle long enough to retire.
    Idle {
        /// The action.
        action: D::Action,
    },
}

/// What the scheduler asks of the world.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum Effect<D: Domain> {
    /// Renew this lease; answer with [`Input::KeptAlive`] or
    /// [`Input::Unanswered`].
    KeepAlive {
        /// The lease.
        lease: D::Lease,
    },
    /// Grant a lease; answer with [`Input::Granted`] once etcd is reachable.
    Grant,
    /// Revoke this lease; answer with [`Input::Revoked`] once etcd is
    /// reachable.
    Revoke {
        /// The lease.
        lease: D::Lease,
    },
    /// Create `action`'s key for this scheduler under `lease`, if absent;
    /// answer with [`Input::Claimed`].
    Claim {
        /// The action.
        action: D::Action,
        /// The lease to bind it to.
        lease: D::Lease,
    },
    /// Look up `action`'s key for activation `id`; answer with
    /// [`Input::Resolved`] once etcd is reachable.
    Resolve {
        /// The activation.
        id: D::Activation,
        /// Its action.
        action: D::Action,
    },
    /// Delete `action`'s key; with `owned_under`, only if it is this
    /// scheduler's under that lease.
    Delete {
        /// The action.
        action: D::Action,
        /// The lease the key must be bound to, for a conditional delete.
        owned_under: Option<D::Lease>,
    },
    /// Run activation `id` from the queue registered under `lease`.
    Execute {
        /// The activation.
        id: D::Activation,
        /// Its action.
        action: D::Action,
        /// The lease the queue's key was registered under.
        lease: D::Lease,
    },
    /// Send activation `id` on to scheduler `to`.
    Forward {
        /// The activation.
        id: D::Activation,
        /// Its action.
        action: D::Action,
        /// The scheduler.
        to: D::Scheduler,
    },
    /// Fail activation `id` for good.
    Fail {
        /// The activation.
        id: D::Activation,
        /// Why.
        reason: FailReason,
    },
}

/// One scheduler.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct Scheduler<D: Domain> {
    /// Its id.
    pub id: D::Scheduler,
    /// Its lease.
    pub lease: LeaseState<D>,
    /// The queues it owns, sorted.
    pub queues: Vec<Queue<D>>,
    /// Actions whose keys it must re-register under its next lease.
    pub to_reclaim: Vec<D::Action>,
    /// Activations waiting for a claim of their action's key to end.
    pub waiting: Vec<(D::Activation, D::Action)>,
    /// Actions whose key it is claiming right now.
    pub electing: Vec<D::Action>,
    /// Activations whose lookup found no key during an election of its own
    /// and are looked up once more (OpenWhisk's retries, which last about
    /// 8 s, outlast one election).
    pub retried: Vec<D::Activation>,
}

impl<D: Domain> Scheduler<D> {
    /// A scheduler that has just started: its first step asks for a lease.
    pub fn new(id: D::Scheduler) -> Self {
        Scheduler {
            id,
            lease: LeaseState::None,
            queues: Vec::new(),
            to_reclaim: Vec::new(),
            waiting: Vec::new(),
            electing: Vec::new(),
            retried: Vec::new(),
        }
    }

    /// The lease it believes live, if any.
    pub fn live_lease(&self) -> Option<&D::Lease> {
        match &self.lease {
            LeaseState::Held { id, .. } => Some(id),
            LeaseState::None | LeaseState::Lost { .. } => None,
        }
    }

    /// The queue of `action`, if it owns one.
    pub fn queue(&self, action: &D::Action) -> Option<&Queue<D>> {
        self.queues.iter().find(|q| q.action == *action)
    }

    /// Feeds one input, following `rules` (a [`super::Variant`]'s, or
    /// fewer); `ttl` is the lease TTL the scheduler was configured with
    /// (after etcd's floor), in ticks.
    pub fn step(&mut self, rules: impl Into<Rules>, ttl: u8, input: Input<D>) -> Vec<Effect<D>> {
        let rules = rules.into();
        if let Input::Claimed { action, .. } = &input {
            self.electing.retain(|a| a != action);
        }
        let effects = self.decide(rules, ttl, input);
        for effect in &effects {
            if let Effect::Claim { action, .. } = effect {
                insert_sorted(&mut self.electing, action.clone());
            }
        }
        effects
    }

    fn decide(&mut self, rules: Rules, ttl: u8, input: Input<D>) -> Vec<Effect<D>> {
        match input {
            Input::Tick => match &self.lease {
                LeaseState::Held { id, .. } => vec![Effect::KeepAlive { lease: id.clone() }],
                LeaseState::None => vec![Effect::Grant],
                LeaseState::Lost { id } => vec![Effect::Revoke { lease: id.clone() }],
            },
            Input::KeptAlive { ttl: left } => {
                let LeaseState::Held { id, .. } = &self.lease else {
                    return Vec::new();
                };
                let id = id.clone();
                // Without the rule (OpenWhisk), the answer is mapped to the
                // lease id and TTL 0 is taken for success.
                if left == 0 && rules.has(Rule::TtlZeroIsLoss) {
                    return self.lose_lease(rules, id);
                }
                self.lease = LeaseState::Held { id, silent: 0 };
                Vec::new()
            }
            Input::Unanswered => {
                let LeaseState::Held { id, silent } = &self.lease else {
                    return Vec::new();
                };
                let (id, silent) = (id.clone(), *silent);
                // Without the rule (OpenWhisk), the keepalive just waits
                // for the stream to come back.
                if !rules.has(Rule::SilenceIsLoss) {
                    return Vec::new();
                }
                // Fencing: stop serving one tick before etcd could expire
                // the lease.
                if silent + 2 >= ttl {
                    return self.lose_lease(rules, id);
                }
                self.lease = LeaseState::Held {
                    id,
                    silent: silent + 1,
                };
                Vec::new()
            }
            Input::Granted { lease } => {
                self.lease = LeaseState::Held {
                    id: lease.clone(),
                    silent: 0,
                };
                // Queues under any other lease are not served under this one.
                for queue in std::mem::take(&mut self.queues) {
                    if queue.lease == lease {
                        self.queues.push(queue);
                    } else {
                        insert_sorted(&mut self.to_reclaim, queue.action);
                    }
                }
                // Every key it owned is claimed again under the new lease.
                std::mem::take(&mut self.to_reclaim)
                    .into_iter()
                    .map(|action| Effect::Claim {
                        action,
                        lease: lease.clone(),
                    })
                    .collect()
            }
            Input::Revoked => {
                self.lease = LeaseState::None;
                vec![Effect::Grant]
            }
            Input::Claimed { action, won, owner } => self.claimed(action, won, owner),
            Input::Activation { id, action } => self.activation(rules, id, action),
            Input::Resolved { id, action, owner } => self.resolved(rules, id, action, owner),
            Input::CreateQueue { action } => {
                if self.queue(&action).is_some() {
                    return Vec::new();
                }
                match self.live_lease().cloned() {
                    Some(lease) => vec![Effect::Claim { action, lease }],
                    // No lease yet: the election waits for one.
                    None => {
                        insert_sorted(&mut self.to_reclaim, action);
                        Vec::new()
                    }
                }
            }
            Input::Idle { action } => {
                let Some(queue) = self.queue(&action).cloned() else {
                    return Vec::new();
                };
                self.queues.retain(|q| q.action != action);
                let owned_under = rules.has(Rule::ConditionalDelete).then_some(queue.lease);
                vec![Effect::Delete {
                    action,
                    owned_under,
                }]
            }
        }
    }

    /// The lease is (or may be) gone: stop serving every queue, remember
    /// them to re-register, and revoke the old lease before taking a new one.
    fn lose_lease(&mut self, rules: Rules, id: D::Lease) -> Vec<Effect<D>> {
        self.lease = LeaseState::Lost { id: id.clone() };
        for queue in std::mem::take(&mut self.queues) {
            if rules.has(Rule::Reregister) {
                insert_sorted(&mut self.to_reclaim, queue.action);
            }
        }
        vec![Effect::Revoke { lease: id }]
    }

    fn claimed(
        &mut self,
        action: D::Action,
        won: bool,
        owner: Option<D::Scheduler>,
    ) -> Vec<Effect<D>> {
        let waiting: Vec<D::Activation> = self
            .waiting
            .iter()
            .filter(|(_, a)| *a == action)
            .map(|(id, _)| id.clone())
            .collect();
        self.waiting.retain(|(_, a)| *a != action);
        match (won, owner, self.live_lease().cloned()) {
            (true, _, Some(lease)) => {
                if self.queue(&action).is_none() {
                    self.queues.push(Queue {
                        action: action.clone(),
                        lease: lease.clone(),
                    });
                    self.queues.sort_unstable();
                }
                waiting
                    .into_iter()
                    .map(|id| Effect::Execute {
                        id,
                        action: action.clone(),
                        lease: lease.clone(),
                    })
                    .collect()
            }
            (false, Some(other), _) if other != self.id => waiting
                .into_iter()
                .map(|id| Effect::Forward {
                    id,
                    action: action.clone(),
                    to: other.clone(),
                })
                .collect(),
            // The claim failed for want of a live lease, or the key is ours
            // under an older lease: ask again once the lease is settled.
            _ => waiting
                .into_iter()
                .map(|id| Effect::Resolve {
                    id,
                    action: action.clone(),
                })
                .collect(),
        }
    }

    fn activation(&mut self, rules: Rules, id: D::Activation, action: D::Action) -> Vec<Effect<D>> {
        let serving = match self.queue(&action) {
            // steadfast serves only under the lease it believes live.
            Some(queue) if rules.has(Rule::ServeUnderLiveLease) => self
                .live_lease()
                .filter(|&lease| *lease == queue.lease)
                .cloned(),
            // OpenWhisk serves from its queue whatever became of its lease.
            Some(queue) => Some(queue.lease.clone()),
            None => None,
        };
        match serving {
            Some(lease) => vec![Effect::Execute { id, action, lease }],
            None => vec![Effect::Resolve { id, action }],
        }
    }

    fn resolved(
        &mut self,
        rules: Rules,
        id: D::Activation,
        action: D::Action,
        owner: Option<(D::Scheduler, D::Lease)>,
    ) -> Vec<Effect<D>> {
        let was_retried = self.retried.contains(&id);
        self.retried.retain(|r| *r != id);
        if let (Some(queue), Some(lease)) = (self.queue(&action), self.live_lease()) {
            if queue.lease == *lease {
                let lease = lease.clone();
                return vec![Effect::Execute { id, action, lease }];
            }
        }
        match (rules.has(Rule::SelfElection), owner) {
            (_, Some((other, _))) if other != self.id => vec![Effect::Forward {
                id,
                action,
                to: other,
            }],
            // The key names this scheduler, which has no queue: OpenWhisk
            // recreates the queue without an election (#5332).
            (false, Some((_, lease))) => {
                self.queues.push(Queue {
                    action: action.clone(),
                    lease: lease.clone(),
                });
                self.queues.sort_unstable();
                vec![Effect::Execute { id, action, lease }]
            }
            // OpenWhisk retries its lookup for about 8 s, which outlasts an
            // election of its own; without one, the activation fails.
            (false, None) if self.electing.contains(&action) && !was_retried => {
                insert_sorted(&mut self.retried, id.clone());
                vec![Effect::Resolve { id, action }]
            }
            (false, None) => vec![Effect::Fail {
                id,
                reason: FailReason::NoQueueEndpoint,
            }],
            // steadfast elects itself by create-if-absent and serves, or
            // forwards to whoever won; a key of its own under an older
            // lease is retaken the same way once that lease is revoked.
            (true, _) => {
                self.waiting.push((id, action.clone()));
                match self.live_lease().cloned() {
                    Some(lease) => vec![Effect::Claim { action, lease }],
                    None => {
                        insert_sorted(&mut self.to_reclaim, action);
                        Vec::new()
                    }
                }
            }
        }
    }
}

/// Adds `item` to the sorted `list` unless it is there already.
fn insert_sorted<T: Ord>(list: &mut Vec<T>, item: T) {
    if let Err(at) = list.binary_search(&item) {
        list.insert(at, item);
    }
}
