//! The controller: it routes each activation to the scheduler that owns its
//! action's queue, through an endpoint cache fed by a watch on the endpoint
//! keys. A sans-I/O state machine.

use serde::{Deserialize, Serialize};

use super::{Domain, FailReason, Rule, Rules};

/// The controller's watch on the endpoint keys.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum Watch<R> {
    /// Receiving changes from revision `next` on.
    Active {
        /// The next revision it wants.
        next: R,
    },
    /// Cut off from etcd; `next` is where it stopped.
    Broken {
        /// The next revision it wanted.
        next: R,
    },
    /// Its revisions were compacted away: re-listing the keys.
    Listing,
}

/// What the world tells the controller.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum Input<D: Domain> {
    /// A user submitted an activation.
    Submit {
        /// Its id.
        id: D::Activation,
        /// Its action.
        action: D::Action,
    },
    /// A lookup of `action`'s key answered.
    Got {
        /// The activation it is for.
        id: D::Activation,
        /// Its action.
        action: D::Action,
        /// The key's owner, if the key exists.
        owner: Option<D::Scheduler>,
    },
    /// A lookup could not reach etcd.
    GetFailed {
        /// The activation it is for.
        id: D::Activation,
        /// Its action.
        action: D::Action,
    },
    /// The watch reported every change of one revision, in one response
    /// (a lease's expiry deletes all its keys at one revision).
    Changed {
        /// The revision of the changes.
        rev: D::Revision,
        /// Per changed key: the action, and the new owner or `None` for a
        /// deletion.
        changes: Vec<(D::Action, Option<D::Scheduler>)>,
    },
    /// etcd became unreachable: the watch is cut.
    Disconnected,
    /// etcd is reachable again; its revision is `rev`.
    Reconnected {
        /// etcd's current revision.
        rev: D::Revision,
    },
    /// The watch's next revision was compacted away; etcd is at `rev`.
    Compacted {
        /// etcd's current revision.
        rev: D::Revision,
    },
    /// A listing of every endpoint key, at revision `rev`.
    Listed {
        /// The revision of the listing.
        rev: D::Revision,
        /// Every key: action and owner.
        keys: Vec<(D::Action, D::Scheduler)>,
    },
}

/// What the controller asks of the world.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum Effect<D: Domain> {
    /// Look up `action`'s key; answer with [`Input::Got`] or
    /// [`Input::GetFailed`].
    Get {
        /// The activation it is for.
        id: D::Activation,
        /// Its action.
        action: D::Action,
    },
    /// List every endpoint key; answer with [`Input::Listed`].
    List,
    /// Send activation `id` to scheduler `to`.
    Send {
        /// The activation.
        id: D::Activation,
        /// Its action.
        action: D::Action,
        /// The scheduler.
        to: D::Scheduler,
    },
    /// Ask scheduler `to` to create a queue for `action`.
    CreateQueue {
        /// The action.
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

/// One controller.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct Controller<D: Domain> {
    /// The endpoint cache: action and owner, sorted by action.
    pub cache: Vec<(D::Action, D::Scheduler)>,
    /// Its watch.
    pub watch: Watch<D::Revision>,
    /// Activations waiting for etcd to be reachable (steadfast).
    pub parked: Vec<(D::Activation, D::Action)>,
    /// The schedulers there are to create queues on.
    pub schedulers: Vec<D::Scheduler>,
}

impl<D: Domain> Controller<D> {
    /// A controller that listed the keys at `rev` (none yet) and watches from
    /// the next revision.
    pub fn new(schedulers: Vec<D::Scheduler>, rev: D::Revision) -> Self {
        Controller {
            cache: Vec::new(),
            watch: Watch::Active {
                next: D::next_revision(rev),
            },
            parked: Vec::new(),
            schedulers,
        }
    }

    /// Where the cache routes `action`.
    pub fn route(&self, action: &D::Action) -> Option<&D::Scheduler> {
        self.cache.iter().find(|(a, _)| a == action).map(|(_, s)| s)
    }

    /// The scheduler asked to create a queue for `action` when no key names
    /// one: the action's number modulo the schedulers, in the order this
    /// controller knows them (`None` when it knows none).
    fn home(&self, action: &D::Action) -> Option<D::Scheduler> {
        let known = self.schedulers.len() as u64;
        let index = D::action_number(action).checked_rem(known)?;
        self.schedulers.get(usize::try_from(index).ok()?).cloned()
    }

    fn remember(&mut self, action: D::Action, owner: Option<D::Scheduler>) {
        self.cache.retain(|(a, _)| *a != action);
        if let Some(owner) = owner {
            let at = self.cache.partition_point(|(a, _)| *a < action);
            self.cache.insert(at, (action, owner));
        }
    }

    /// Feeds one input, following `rules` (a [`super::Variant`]'s, or
    /// fewer).
    pub fn step(&mut self, rules: impl Into<Rules>, input: Input<D>) -> Vec<Effect<D>> {
        let rules = rules.into();
        match input {
            Input::Submit { id, action } => match self.route(&action).cloned() {
                Some(to) => vec![Effect::Send { id, action, to }],
                None => vec![Effect::Get { id, action }],
            },
            Input::Got { id, action, owner } => {
                self.remember(action.clone(), owner.clone());
                match owner {
                    Some(to) => vec![Effect::Send { id, action, to }],
                    // No key: the action's home scheduler is asked to create
                    // the queue, and sent the activation.
                    None => match self.home(&action) {
                        Some(to) => vec![
                            Effect::CreateQueue {
                                action: action.clone(),
                                to: to.clone(),
                            },
                            Effect::Send { id, action, to },
                        ],
                        None => vec![Effect::Fail {
                            id,
                            reason: FailReason::NoSchedulerEndpoint,
                        }],
                    },
                }
            }
            Input::GetFailed { id, action } => {
                if rules.has(Rule::Park) {
                    self.parked.push((id, action));
                    return Vec::new();
                }
                vec![Effect::Fail {
                    id,
                    reason: FailReason::NoSchedulerEndpoint,
                }]
            }
            Input::Changed { rev, changes } => {
                let Watch::Active { next } = self.watch else {
                    return Vec::new();
                };
                if rev < next {
                    return Vec::new();
                }
                self.watch = Watch::Active {
                    next: D::next_revision(rev),
                };
                // Without the rule, only the first event of the response.
                let taken = if rules.has(Rule::WholeResponses) {
                    changes.len()
                } else {
                    1
                };
                for (action, owner) in changes.into_iter().take(taken) {
                    self.remember(action, owner);
                }
                Vec::new()
            }
            Input::Disconnected => {
                if let Watch::Active { next } = self.watch {
                    self.watch = Watch::Broken { next };
                }
                Vec::new()
            }
            Input::Reconnected { rev } => {
                if let Watch::Broken { next } = self.watch {
                    self.watch = if rules.has(Rule::ResumeWatch) {
                        Watch::Active { next }
                    } else {
                        // A restarted watch starts from "now": changes
                        // during the gap are lost.
                        Watch::Active {
                            next: D::next_revision(rev),
                        }
                    };
                }
                std::mem::take(&mut self.parked)
                    .into_iter()
                    .map(|(id, action)| Effect::Get { id, action })
                    .collect()
            }
            Input::Compacted { rev } => {
                // steadfast re-lists, then watches from the listing on.
                if rules.has(Rule::Relist) {
                    self.watch = Watch::Listing;
                    return vec![Effect::List];
                }
                self.watch = Watch::Active {
                    next: D::next_revision(rev),
                };
                Vec::new()
            }
            Input::Listed { rev, keys } => {
                self.cache = keys;
                self.watch = Watch::Active {
                    next: D::next_revision(rev),
                };
                Vec::new()
            }
        }
    }
}
