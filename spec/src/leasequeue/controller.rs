//! The controller: it routes each activation to the scheduler that owns its
//! action's queue, through an endpoint cache fed by a watch on the endpoint
//! keys. A sans-I/O state machine.

use serde::{Deserialize, Serialize};

use super::{Domain, FailReason, Rule, Rules};

/// How a controller is set up.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct Config<D: Domain> {
    /// The rules it follows: a [`super::Variant`]'s, or fewer.
    pub rules: Rules,
    /// How often it wakes up: to look up parked activations again, to ask
    /// its watch for progress, and to restart a watch that gave none.
    pub wake_every: D::Duration,
}

/// The controller's watch on the endpoint keys.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum Watch<R> {
    /// Receiving changes from revision `next` on.
    Active {
        /// The next revision it wants.
        next: R,
        /// A progress request is out and nothing has arrived since: if it
        /// is still so at the next wake-up, the watch has stalled.
        probing: bool,
    },
    /// A watch has been asked for and has not started yet; asked again at
    /// every wake-up.
    Starting {
        /// The revision it starts from; `None`: from etcd's next one.
        from: Option<R>,
    },
    /// Re-listing the keys; asked again at every wake-up.
    Listing,
}

/// What the world tells the controller.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum Input<D: Domain> {
    /// A wake-up it asked for (or the first one, which starts it).
    Wake,
    /// A user submitted an activation.
    Submit {
        /// Its id.
        id: D::Activation,
        /// Its action.
        action: D::Action,
    },
    /// A lookup of `action`'s key for activation `id` answered.
    Got {
        /// The activation it is for.
        id: D::Activation,
        /// Its action.
        action: D::Action,
        /// The key's owner, if the key exists.
        owner: Option<D::Scheduler>,
    },
    /// A lookup for activation `id` could not reach etcd.
    GetFailed {
        /// The activation it is for.
        id: D::Activation,
        /// Its action.
        action: D::Action,
    },
    /// The watch asked for started; its first revision is `next`.
    WatchStarted {
        /// The first revision it reports.
        next: D::Revision,
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
    /// The watch answered a progress request: nothing it has not reported
    /// happened up to `rev`.
    Progress {
        /// etcd's revision.
        rev: D::Revision,
    },
    /// etcd cancelled the watch: its next revision was compacted away;
    /// etcd is at `rev`.
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
    /// Wake it up ([`Input::Wake`]) after this long.
    WakeIn {
        /// How long from now.
        after: D::Duration,
    },
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
    /// Watch the endpoint keys from revision `from` (`None`: from etcd's
    /// next), with progress notifications, replacing any watch it had;
    /// answer with [`Input::WatchStarted`].
    Watch {
        /// The first revision wanted.
        from: Option<D::Revision>,
    },
    /// Ask the watch for a progress notification; answer with
    /// [`Input::Progress`] (or changes).
    RequestProgress,
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
    /// Activations whose action's key it is looking up (a steadfast
    /// controller keeps those whose lookup failed here too), sent again at
    /// every wake-up until answered.
    pub lookups: Vec<(D::Activation, D::Action)>,
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
                probing: false,
            },
            lookups: Vec::new(),
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
    pub fn home(&self, action: &D::Action) -> Option<D::Scheduler> {
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

    /// Takes activation `id` off the lookups; whether it was there.
    fn answered(&mut self, id: &D::Activation) -> bool {
        let before = self.lookups.len();
        self.lookups.retain(|(i, _)| i != id);
        self.lookups.len() != before
    }

    /// Feeds one input.
    pub fn step(&mut self, config: &Config<D>, input: Input<D>) -> Vec<Effect<D>> {
        let rules = config.rules;
        match input {
            Input::Wake => self.wake(rules, config.wake_every),
            Input::Submit { id, action } => match self.route(&action).cloned() {
                Some(to) => vec![Effect::Send { id, action, to }],
                None => {
                    self.lookups.push((id.clone(), action.clone()));
                    vec![Effect::Get { id, action }]
                }
            },
            Input::Got { id, action, owner } => {
                if !self.answered(&id) {
                    return Vec::new();
                }
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
            // steadfast keeps it and looks it up again at its next wake-up.
            Input::GetFailed { .. } if rules.has(Rule::Park) => Vec::new(),
            Input::GetFailed { id, .. } => {
                if !self.answered(&id) {
                    return Vec::new();
                }
                vec![Effect::Fail {
                    id,
                    reason: FailReason::NoSchedulerEndpoint,
                }]
            }
            Input::WatchStarted { next } => {
                if let Watch::Starting { .. } = self.watch {
                    self.watch = Watch::Active {
                        next,
                        probing: false,
                    };
                }
                Vec::new()
            }
            Input::Changed { rev, changes } => {
                let Watch::Active { next, .. } = self.watch else {
                    return Vec::new();
                };
                if rev < next {
                    return Vec::new();
                }
                self.watch = Watch::Active {
                    next: D::next_revision(rev),
                    probing: false,
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
            Input::Progress { .. } => {
                if let Watch::Active { next, .. } = self.watch {
                    self.watch = Watch::Active {
                        next,
                        probing: false,
                    };
                }
                Vec::new()
            }
            Input::Compacted { .. } => {
                if !matches!(self.watch, Watch::Active { .. }) {
                    return Vec::new();
                }
                // steadfast re-lists, then watches from the listing on;
                // OpenWhisk watches again from "now".
                if rules.has(Rule::Relist) {
                    self.watch = Watch::Listing;
                    return vec![Effect::List];
                }
                self.watch = Watch::Starting { from: None };
                vec![Effect::Watch { from: None }]
            }
            Input::Listed { rev, keys } => {
                if self.watch != Watch::Listing {
                    return Vec::new();
                }
                self.cache = keys;
                let from = Some(D::next_revision(rev));
                self.watch = Watch::Starting { from };
                vec![Effect::Watch { from }]
            }
        }
    }

    /// Looks up every activation not answered yet, and keeps the watch
    /// going: a progress request, or a new watch when the last request got
    /// no answer (a watch can stall without an error).
    fn wake(&mut self, rules: Rules, wake_every: D::Duration) -> Vec<Effect<D>> {
        let mut effects: Vec<Effect<D>> = self
            .lookups
            .iter()
            .map(|(id, action)| Effect::Get {
                id: id.clone(),
                action: action.clone(),
            })
            .collect();
        let watch = match self.watch {
            Watch::Active {
                next,
                probing: false,
            } => {
                self.watch = Watch::Active {
                    next,
                    probing: true,
                };
                Effect::RequestProgress
            }
            // Stalled: steadfast resumes where it stopped; OpenWhisk starts
            // from "now", and changes during the gap are lost.
            Watch::Active {
                next,
                probing: true,
            } => {
                let from = rules.has(Rule::ResumeWatch).then_some(next);
                self.watch = Watch::Starting { from };
                Effect::Watch { from }
            }
            Watch::Starting { from } => Effect::Watch { from },
            Watch::Listing => Effect::List,
        };
        effects.push(watch);
        effects.push(Effect::WakeIn { after: wake_every });
        effects
    }
}
