//! The controller: it routes each activation to the scheduler that owns its
//! action's queue, through an endpoint cache fed by a watch on the endpoint
//! keys. A sans-I/O state machine.

use serde::{Deserialize, Serialize};

use super::{FailReason, Variant};

/// The controller's watch on the endpoint keys.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum Watch {
    /// Receiving changes from revision `next` on.
    Active {
        /// The next revision it wants.
        next: u32,
    },
    /// Cut off from etcd; `next` is where it stopped.
    Broken {
        /// The next revision it wanted.
        next: u32,
    },
    /// Its revisions were compacted away: re-listing the keys.
    Listing,
}

/// What the world tells the controller.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum Input {
    /// A user submitted an activation.
    Submit {
        /// Its id.
        id: u8,
        /// Its action.
        action: u8,
    },
    /// A lookup of `action`'s key answered.
    Got {
        /// The activation it is for.
        id: u8,
        /// Its action.
        action: u8,
        /// The key's owner, if the key exists.
        owner: Option<u8>,
    },
    /// A lookup could not reach etcd.
    GetFailed {
        /// The activation it is for.
        id: u8,
        /// Its action.
        action: u8,
    },
    /// The watch reported every change of one revision, in one response
    /// (a lease's expiry deletes all its keys at one revision).
    Changed {
        /// The revision of the changes.
        rev: u32,
        /// Per changed key: the action, and the new owner or `None` for a
        /// deletion.
        changes: Vec<(u8, Option<u8>)>,
    },
    /// etcd became unreachable: the watch is cut.
    Disconnected,
    /// etcd is reachable again; its revision is `rev`.
    Reconnected {
        /// etcd's current revision.
        rev: u32,
    },
    /// The watch's next revision was compacted away; etcd is at `rev`.
    Compacted {
        /// etcd's current revision.
        rev: u32,
    },
    /// A listing of every endpoint key, at revision `rev`.
    Listed {
        /// The revision of the listing.
        rev: u32,
        /// Every key: action and owner.
        keys: Vec<(u8, u8)>,
    },
}

/// What the controller asks of the world.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum Effect {
    /// Look up `action`'s key; answer with [`Input::Got`] or
    /// [`Input::GetFailed`].
    Get {
        /// The activation it is for.
        id: u8,
        /// Its action.
        action: u8,
    },
    /// List every endpoint key; answer with [`Input::Listed`].
    List,
    /// Send activation `id` to scheduler `to`.
    Send {
        /// The activation.
        id: u8,
        /// Its action.
        action: u8,
        /// The scheduler.
        to: u8,
    },
    /// Ask scheduler `to` to create a queue for `action`.
    CreateQueue {
        /// The action.
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

/// One controller.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct Controller {
    /// The endpoint cache: action and owner, sorted by action.
    pub cache: Vec<(u8, u8)>,
    /// Its watch.
    pub watch: Watch,
    /// Activations waiting for etcd to be reachable (steadfast).
    pub parked: Vec<(u8, u8)>,
    /// How many schedulers there are to create queues on.
    pub schedulers: u8,
}

impl Controller {
    /// A controller that listed the keys at `rev` (none yet) and watches from
    /// the next revision.
    pub fn new(schedulers: u8, rev: u32) -> Self {
        Controller {
            cache: Vec::new(),
            watch: Watch::Active { next: rev + 1 },
            parked: Vec::new(),
            schedulers,
        }
    }

    /// Where the cache routes `action`.
    pub fn route(&self, action: u8) -> Option<u8> {
        self.cache
            .iter()
            .find(|(a, _)| *a == action)
            .map(|(_, s)| *s)
    }

    fn remember(&mut self, action: u8, owner: Option<u8>) {
        self.cache.retain(|(a, _)| *a != action);
        if let Some(owner) = owner {
            let at = self.cache.partition_point(|(a, _)| *a < action);
            self.cache.insert(at, (action, owner));
        }
    }

    /// Feeds one input.
    pub fn step(&mut self, variant: Variant, input: Input) -> Vec<Effect> {
        match input {
            Input::Submit { id, action } => match self.route(action) {
                Some(to) => vec![Effect::Send { id, action, to }],
                None => vec![Effect::Get { id, action }],
            },
            Input::Got { id, action, owner } => {
                self.remember(action, owner);
                match owner {
                    Some(to) => vec![Effect::Send { id, action, to }],
                    None => {
                        // The least-loaded scheduler, as far as the
                        // controller can tell: one chosen by the action.
                        let to = action % self.schedulers.max(1);
                        vec![
                            Effect::CreateQueue { action, to },
                            Effect::Send { id, action, to },
                        ]
                    }
                }
            }
            Input::GetFailed { id, action } => match variant {
                Variant::OpenWhisk => vec![Effect::Fail {
                    id,
                    reason: FailReason::NoSchedulerEndpoint,
                }],
                Variant::Steadfast => {
                    self.parked.push((id, action));
                    Vec::new()
                }
            },
            Input::Changed { rev, changes } => {
                let Watch::Active { next } = self.watch else {
                    return Vec::new();
                };
                if rev < next {
                    return Vec::new();
                }
                self.watch = Watch::Active { next: rev + 1 };
                for (action, owner) in changes {
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
                    self.watch = match variant {
                        // A restarted watch starts from "now": changes
                        // during the gap are lost.
                        Variant::OpenWhisk => Watch::Active { next: rev + 1 },
                        // steadfast resumes where it stopped.
                        Variant::Steadfast => Watch::Active { next },
                    };
                }
                std::mem::take(&mut self.parked)
                    .into_iter()
                    .map(|(id, action)| Effect::Get { id, action })
                    .collect()
            }
            Input::Compacted { rev } => match variant {
                Variant::OpenWhisk => {
                    self.watch = Watch::Active { next: rev + 1 };
                    Vec::new()
                }
                // steadfast re-lists, then watches from the listing on.
                Variant::Steadfast => {
                    self.watch = Watch::Listing;
                    vec![Effect::List]
                }
            },
            Input::Listed { rev, keys } => {
                self.cache = keys;
                self.watch = Watch::Active { next: rev + 1 };
                Vec::new()
            }
        }
    }
}
