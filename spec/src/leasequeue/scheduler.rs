//! The scheduler: it holds one lease at a time, owns the queues whose
//! endpoint keys it registered under that lease, and executes or forwards
//! the activations it is sent. A sans-I/O state machine.

use serde::{Deserialize, Serialize};

use super::{FailReason, Variant};

/// A queue this scheduler owns, and the lease its key was registered under.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub struct Queue {
    /// The action.
    pub action: u8,
    /// The lease its endpoint key is bound to.
    pub lease: u8,
}

/// Where the scheduler's lease stands.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum LeaseState {
    /// No lease yet: one must be granted.
    None,
    /// The lease it keeps alive; `silent` ticks since etcd last confirmed it.
    Held {
        /// The lease id.
        id: u8,
        /// Ticks without a positive keepalive answer.
        silent: u8,
    },
    /// The lease is lost (or may be): it must be revoked, then replaced.
    Lost {
        /// The lost lease.
        id: u8,
    },
}

/// What etcd (or a peer) tells the scheduler.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum Input {
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
        lease: u8,
    },
    /// A lost lease was revoked (or found already gone).
    Revoked,
    /// A create-if-absent of `action`'s key under the current lease ended.
    Claimed {
        /// The action.
        action: u8,
        /// Whether the key is now this scheduler's.
        won: bool,
        /// The owner when it is someone else's.
        owner: Option<u8>,
    },
    /// An activation arrived (from a controller or a peer).
    Activation {
        /// Its id.
        id: u8,
        /// Its action.
        action: u8,
    },
    /// A lookup of `action`'s key for a waiting activation answered.
    Resolved {
        /// The activation.
        id: u8,
        /// Its action.
        action: u8,
        /// The key's owner and lease, if the key exists.
        owner: Option<(u8, u8)>,
    },
    /// A controller asks for a queue for `action`.
    CreateQueue {
        /// The action.
        action: u8,
    },
    /// The queue of `action` has been idle long enough to retire.
    Idle {
        /// The action.
        action: u8,
    },
}

/// What the scheduler asks of the world.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum Effect {
    /// Renew this lease; answer with [`Input::KeptAlive`] or
    /// [`Input::Unanswered`].
    KeepAlive {
        /// The lease.
        lease: u8,
    },
    /// Grant a lease; answer with [`Input::Granted`] once etcd is reachable.
    Grant,
    /// Revoke this lease; answer with [`Input::Revoked`] once etcd is
    /// reachable.
    Revoke {
        /// The lease.
        lease: u8,
    },
    /// Create `action`'s key for this scheduler under `lease`, if absent;
    /// answer with [`Input::Claimed`].
    Claim {
        /// The action.
        action: u8,
        /// The lease to bind it to.
        lease: u8,
    },
    /// Look up `action`'s key for activation `id`; answer with
    /// [`Input::Resolved`] once etcd is reachable.
    Resolve {
        /// The activation.
        id: u8,
        /// Its action.
        action: u8,
    },
    /// Delete `action`'s key; with `owned_under`, only if it is this
    /// scheduler's under that lease.
    Delete {
        /// The action.
        action: u8,
        /// The lease the key must be bound to, for a conditional delete.
        owned_under: Option<u8>,
    },
    /// Run activation `id` from the queue registered under `lease`.
    Execute {
        /// The activation.
        id: u8,
        /// Its action.
        action: u8,
        /// The lease the queue's key was registered under.
        lease: u8,
    },
    /// Send activation `id` on to scheduler `to`.
    Forward {
        /// The activation.
        id: u8,
        /// Its action.
        action: u8,
        /// The scheduler.
        to: u8,
    },
    /// Fail activation `id` for good.
    Fail {
        /// The activation.
        id: u8,
        /// Why.
        reason: FailReason,
    },
}

/// One scheduler.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct Scheduler {
    /// Its id.
    pub id: u8,
    /// Its lease.
    pub lease: LeaseState,
    /// The queues it owns, sorted.
    pub queues: Vec<Queue>,
    /// Actions whose keys it must re-register under its next lease.
    pub to_reclaim: Vec<u8>,
    /// Activations waiting for a claim of their action's key to end.
    pub waiting: Vec<(u8, u8)>,
    /// Actions whose key it is claiming right now.
    pub electing: Vec<u8>,
    /// Activations whose lookup found no key during an election of its own
    /// and are looked up once more (OpenWhisk's retries, which last about
    /// 8 s, outlast one election).
    pub retried: Vec<u8>,
}

impl Scheduler {
    /// A scheduler that has just started: its first step asks for a lease.
    pub fn new(id: u8) -> Self {
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
    pub fn live_lease(&self) -> Option<u8> {
        match self.lease {
            LeaseState::Held { id, .. } => Some(id),
            LeaseState::None | LeaseState::Lost { .. } => None,
        }
    }

    /// The queue of `action`, if it owns one.
    pub fn queue(&self, action: u8) -> Option<Queue> {
        self.queues.iter().copied().find(|q| q.action == action)
    }

    /// Feeds one input; `ttl` is the lease TTL the scheduler was configured
    /// with (after etcd's floor).
    pub fn step(&mut self, variant: Variant, ttl: u8, input: Input) -> Vec<Effect> {
        if let Input::Claimed { action, .. } = input {
            self.electing.retain(|a| *a != action);
        }
        let effects = self.decide(variant, ttl, input);
        for effect in &effects {
            if let Effect::Claim { action, .. } = effect {
                if !self.electing.contains(action) {
                    self.electing.push(*action);
                    self.electing.sort_unstable();
                }
            }
        }
        effects
    }

    fn decide(&mut self, variant: Variant, ttl: u8, input: Input) -> Vec<Effect> {
        match input {
            Input::Tick => match self.lease {
                LeaseState::Held { id, .. } => vec![Effect::KeepAlive { lease: id }],
                LeaseState::None => vec![Effect::Grant],
                LeaseState::Lost { id } => vec![Effect::Revoke { lease: id }],
            },
            Input::KeptAlive { ttl: left } => {
                let LeaseState::Held { id, .. } = self.lease else {
                    return Vec::new();
                };
                match (variant, left) {
                    // OpenWhisk maps the answer to its lease id: TTL 0 is
                    // taken as success.
                    (Variant::OpenWhisk, _) => {
                        self.lease = LeaseState::Held { id, silent: 0 };
                        Vec::new()
                    }
                    (Variant::Steadfast, 0) => self.lose_lease(id),
                    (Variant::Steadfast, _) => {
                        self.lease = LeaseState::Held { id, silent: 0 };
                        Vec::new()
                    }
                }
            }
            Input::Unanswered => {
                let LeaseState::Held { id, silent } = self.lease else {
                    return Vec::new();
                };
                match variant {
                    // OpenWhisk's keepalive future just waits for the
                    // stream to come back.
                    Variant::OpenWhisk => Vec::new(),
                    // Fencing: stop serving one tick before etcd could
                    // expire the lease.
                    Variant::Steadfast if silent + 2 >= ttl => self.lose_lease(id),
                    Variant::Steadfast => {
                        self.lease = LeaseState::Held {
                            id,
                            silent: silent + 1,
                        };
                        Vec::new()
                    }
                }
            }
            Input::Granted { lease } => {
                self.lease = LeaseState::Held {
                    id: lease,
                    silent: 0,
                };
                // Queues under any other lease are not served under this one.
                for queue in std::mem::take(&mut self.queues) {
                    if queue.lease == lease {
                        self.queues.push(queue);
                    } else if !self.to_reclaim.contains(&queue.action) {
                        self.to_reclaim.push(queue.action);
                    }
                }
                self.to_reclaim.sort_unstable();
                // Every key it owned is claimed again under the new lease.
                std::mem::take(&mut self.to_reclaim)
                    .into_iter()
                    .map(|action| Effect::Claim { action, lease })
                    .collect()
            }
            Input::Revoked => {
                self.lease = LeaseState::None;
                vec![Effect::Grant]
            }
            Input::Claimed { action, won, owner } => self.claimed(action, won, owner),
            Input::Activation { id, action } => self.activation(variant, id, action),
            Input::Resolved { id, action, owner } => self.resolved(variant, id, action, owner),
            Input::CreateQueue { action } => match (self.queue(action), self.live_lease()) {
                (Some(_), _) => Vec::new(),
                (None, Some(lease)) => vec![Effect::Claim { action, lease }],
                // No lease yet: the election waits for one.
                (None, None) => {
                    if !self.to_reclaim.contains(&action) {
                        self.to_reclaim.push(action);
                        self.to_reclaim.sort_unstable();
                    }
                    Vec::new()
                }
            },
            Input::Idle { action } => {
                let Some(queue) = self.queue(action) else {
                    return Vec::new();
                };
                self.queues.retain(|q| q.action != action);
                let owned_under = match variant {
                    Variant::OpenWhisk => None,
                    Variant::Steadfast => Some(queue.lease),
                };
                vec![Effect::Delete {
                    action,
                    owned_under,
                }]
            }
        }
    }

    /// The lease is (or may be) gone: stop serving every queue, remember
    /// them to re-register, and revoke the old lease before taking a new one.
    fn lose_lease(&mut self, id: u8) -> Vec<Effect> {
        self.lease = LeaseState::Lost { id };
        for queue in std::mem::take(&mut self.queues) {
            if !self.to_reclaim.contains(&queue.action) {
                self.to_reclaim.push(queue.action);
            }
        }
        self.to_reclaim.sort_unstable();
        vec![Effect::Revoke { lease: id }]
    }

    fn claimed(&mut self, action: u8, won: bool, owner: Option<u8>) -> Vec<Effect> {
        let waiting: Vec<u8> = self
            .waiting
            .iter()
            .filter(|(_, a)| *a == action)
            .map(|(id, _)| *id)
            .collect();
        self.waiting.retain(|(_, a)| *a != action);
        match (won, owner, self.live_lease()) {
            (true, _, Some(lease)) => {
                if self.queue(action).is_none() {
                    self.queues.push(Queue { action, lease });
                    self.queues.sort_unstable();
                }
                waiting
                    .into_iter()
                    .map(|id| Effect::Execute { id, action, lease })
                    .collect()
            }
            (false, Some(other), _) if other != self.id => waiting
                .into_iter()
                .map(|id| Effect::Forward {
                    id,
                    action,
                    to: other,
                })
                .collect(),
            // The claim failed for want of a live lease, or the key is ours
            // under an older lease: ask again once the lease is settled.
            _ => waiting
                .into_iter()
                .map(|id| Effect::Resolve { id, action })
                .collect(),
        }
    }

    fn activation(&mut self, variant: Variant, id: u8, action: u8) -> Vec<Effect> {
        let serving = match (variant, self.queue(action)) {
            // OpenWhisk serves from its queue whatever became of its lease.
            (Variant::OpenWhisk, Some(queue)) => Some(queue.lease),
            // steadfast serves only under the lease it believes live.
            (Variant::Steadfast, Some(queue)) => {
                self.live_lease().filter(|&lease| lease == queue.lease)
            }
            (_, None) => None,
        };
        match serving {
            Some(lease) => vec![Effect::Execute { id, action, lease }],
            None => vec![Effect::Resolve { id, action }],
        }
    }

    fn resolved(
        &mut self,
        variant: Variant,
        id: u8,
        action: u8,
        owner: Option<(u8, u8)>,
    ) -> Vec<Effect> {
        let was_retried = self.retried.contains(&id);
        self.retried.retain(|r| *r != id);
        if let (Some(queue), Some(lease)) = (self.queue(action), self.live_lease()) {
            if queue.lease == lease {
                return vec![Effect::Execute { id, action, lease }];
            }
        }
        match (variant, owner) {
            (_, Some((other, _))) if other != self.id => vec![Effect::Forward {
                id,
                action,
                to: other,
            }],
            // The key names this scheduler, which has no queue: OpenWhisk
            // recreates the queue without an election (#5332).
            (Variant::OpenWhisk, Some((_, lease))) => {
                self.queues.push(Queue { action, lease });
                self.queues.sort_unstable();
                vec![Effect::Execute { id, action, lease }]
            }
            // OpenWhisk retries its lookup for about 8 s, which outlasts an
            // election of its own; without one, the activation fails.
            (Variant::OpenWhisk, None) if self.electing.contains(&action) && !was_retried => {
                self.retried.push(id);
                self.retried.sort_unstable();
                vec![Effect::Resolve { id, action }]
            }
            (Variant::OpenWhisk, None) => vec![Effect::Fail {
                id,
                reason: FailReason::NoQueueEndpoint,
            }],
            // steadfast elects itself by create-if-absent and serves, or
            // forwards to whoever won; a key of its own under an older
            // lease is retaken the same way once that lease is revoked.
            (Variant::Steadfast, _) => match self.live_lease() {
                Some(lease) => {
                    self.waiting.push((id, action));
                    vec![Effect::Claim { action, lease }]
                }
                None => {
                    self.waiting.push((id, action));
                    if !self.to_reclaim.contains(&action) {
                        self.to_reclaim.push(action);
                        self.to_reclaim.sort_unstable();
                    }
                    Vec::new()
                }
            },
        }
    }
}
