//! The scheduler: it holds one lease at a time, is a member while its
//! member key exists under that lease, owns the queues whose endpoint keys
//! it registered under it, and executes or forwards the activations it is
//! sent. A sans-I/O state machine.
//!
//! # Time and correlation
//!
//! The scheduler never reads a clock: every input comes with the time
//! elapsed since the one before, and it keeps what is left of each span
//! (how long its lease stays valid, how long each keepalive has waited). It
//! asks to be woken with [`Effect::WakeIn`]; at every wake-up it sends again
//! each request not yet answered, so a lost or late reply costs a retry,
//! never a decision taken for it by the world. While it cannot serve (no
//! lease, a lease lost, or one not confirmed), or activations wait on a
//! claim or a lookup, it also retries those requests on a timer of its own
//! ([`Config::retry_every`], short), so that it serves again soon after
//! etcd answers again, whatever the TTL. What it sends a peer or a
//! controller (a forward, a report) it sends again at every wake-up and
//! retry until that node acknowledges it. Every reply names what it
//! answers (the lease, the keepalive, the action's key, the activation),
//! and a reply the scheduler no longer waits for changes nothing.
//!
//! # Fencing
//!
//! Its lease is valid, by its own clock, until the send time of the last
//! keepalive etcd confirmed plus the TTL etcd confirmed, less
//! [`Config::margin`]. Keepalives are numbered, and an answer counts from
//! the send time of the keepalive it answers, however late it comes: etcd
//! renewed the lease after that send, never before it. Before every
//! hand-out ([`Effect::Execute`]) it checks
//! that the queue's lease is the one it holds and that it is still valid. As
//! long as etcd's clock runs at most `margin` ahead of the scheduler's over
//! one TTL, etcd never expires a lease the scheduler still serves under.
//!
//! # Leaving
//!
//! A scheduler told to drain ([`Input::Drain`]) takes no new work: a new
//! activation is neither acknowledged nor taken in, so its sender keeps
//! sending it, and once this scheduler has stopped listening, routes it
//! again. What it holds already (waiting, looked up, running) settles as it
//! would have. Then it revokes its lease, so that its member key and every
//! endpoint key go at one revision and controllers place its actions anew,
//! and says it is done ([`Effect::Drained`]).
//!
//! # Incarnations
//!
//! Each run of a scheduler process is an incarnation of it, named in its
//! member key and in every endpoint key it creates, and every copy of an
//! activation is addressed to an incarnation. Under [`Rule::FenceCopies`]
//! it takes in only copies addressed to its own, and refuses the others
//! ([`Effect::Refuse`]): a copy addressed to an earlier run may be of an
//! activation that run executed and acknowledged before it crashed, which
//! this one cannot know. The sender takes the refusal as a bounce, and
//! routes the activation again.
//!
//! # Executions
//!
//! What it hands out ([`Effect::Execute`]) ends with a result, or with the
//! executor's error or panic ([`Input::Executed`]): each an outcome it
//! reports, none a silence. Under [`Rule::ExecutionTimeout`] an execution
//! still running [`Config::execute_for`] after it started is settled as
//! failed ([`ExecutionFailure::Timeout`]) at the next wake-up or retry and
//! cancelled ([`Effect::Cancel`]), so that an executor that hangs holds
//! neither its caller nor a drain for longer than that.
//!
//! # Deadlines
//!
//! A copy of an activation may come with the time left to its deadline
//! ([`Input::Activation::left`]), which the scheduler counts down with its
//! own time ([`Scheduler::deadlines`]). One past its deadline as it arrives
//! fails at once ([`FailReason::PastDeadline`]); under [`Rule::Deadline`],
//! one that waited past it (for its lease's validity, an election or a
//! lookup) fails at the next wake-up or retry, and no hand-out starts one:
//! after its deadline an activation has started, or never will.

use serde::{Deserialize, Serialize};

use super::{Domain, ExecutionFailure, FailReason, Outcome, Rule, Rules};

/// How a scheduler is set up.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct Config<D: Domain> {
    /// The rules it follows: a [`super::Variant`]'s, or fewer.
    pub rules: Rules,
    /// The lease TTL it asks etcd for.
    pub ttl: D::Duration,
    /// How much earlier than etcd could expire its lease it stops handing
    /// out work under it: the most etcd's clock may run ahead of the
    /// scheduler's over one TTL.
    pub margin: D::Duration,
    /// How often it wakes up: to keep its lease alive and to send again
    /// every request not yet answered.
    pub wake_every: D::Duration,
    /// How soon its lease's requests (grant, keepalive, revoke) are sent
    /// again while it cannot serve, and the claims and lookups activations
    /// wait on (not more than [`Config::wake_every`]).
    pub retry_every: D::Duration,
    /// How long a queue stays without a hand-out before it retires.
    pub idle_after: D::Duration,
    /// How long it remembers an activation it settled or forwarded, so
    /// that a copy delivered again within that span is only acknowledged
    /// (one delivered later runs again); `None`: for as long as it runs.
    /// A longer span costs memory per activation. (Absent in a trace
    /// written before it existed: `None`, the runtime then told the role
    /// what to forget with [`Input::Forget`].)
    #[serde(default)]
    pub remember_for: Option<D::Duration>,
    /// Under [`Rule::ExecutionTimeout`], how long an execution may run: one
    /// still running then is settled as failed
    /// ([`ExecutionFailure::Timeout`]) at the next wake-up or retry, and
    /// cancelled ([`Effect::Cancel`]); `None`: as long as it takes. (Absent
    /// in a trace written before it existed: `None`.)
    #[serde(default)]
    pub execute_for: Option<D::Duration>,
}

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

/// Which memory of an activation a scheduler keeps for
/// [`Config::remember_for`].
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub enum Remembered {
    /// It settled the activation ([`Scheduler::settled`]).
    Settled,
    /// It forwarded the activation ([`Scheduler::forwarded`]).
    Forwarded,
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

/// Where the scheduler's lease stands.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum LeaseState<D: Domain> {
    /// No lease: a grant is asked for at every wake-up until one arrives.
    Granting,
    /// The lease it keeps alive.
    Held {
        /// The lease id.
        id: D::Lease,
        /// The TTL etcd granted it with.
        ttl: D::Duration,
        /// How long it may still hand out work under it (zero: suspended
        /// until etcd confirms the lease again).
        valid_for: D::Duration,
        /// The keepalives sent under it and not answered yet, oldest
        /// first: each its number and how long ago it was sent (less than
        /// the TTL: one older is dropped, its answer worth nothing).
        keepalives: Vec<(u64, D::Duration)>,
        /// The number of the next keepalive.
        next_keepalive: u64,
        /// Whether etcd confirmed its member key under this lease: until
        /// then the key is put again at every wake-up.
        registered: bool,
    },
    /// The lease is gone: it is revoked at every wake-up until etcd
    /// confirms, then replaced.
    Revoking {
        /// The lost lease.
        id: D::Lease,
    },
}

/// What etcd found when asked to create an endpoint key if absent.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum ClaimResult<D: Domain> {
    /// The key was created, for this scheduler under the lease asked, at
    /// this revision.
    Created {
        /// The revision that created it.
        created: D::Revision,
    },
    /// The key exists already.
    Exists(Endpoint<D>),
    /// The lease named in the request does not exist.
    LeaseNotFound,
}

/// What the world tells the scheduler.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum Input<D: Domain> {
    /// A wake-up it asked for (or the first one, which starts it).
    Wake,
    /// etcd granted a lease.
    Granted {
        /// Its id.
        lease: D::Lease,
        /// Its TTL.
        ttl: D::Duration,
    },
    /// etcd answered keepalive number `keepalive` of `lease`.
    KeptAlive {
        /// The lease.
        lease: D::Lease,
        /// The keepalive's number ([`Effect::KeepAlive`]).
        keepalive: u64,
        /// The TTL it was renewed for; zero when etcd has no such lease.
        ttl: D::Duration,
    },
    /// The retry timer fired ([`Effect::RetryIn`]).
    Retry,
    /// A put of its member key under `lease` ended.
    Registered {
        /// The lease the request named.
        lease: D::Lease,
        /// Whether etcd had the lease (and put the key); `false`: the lease
        /// is gone.
        found: bool,
    },
    /// etcd revoked `lease`, or found it gone already.
    Revoked {
        /// The lease.
        lease: D::Lease,
    },
    /// A create-if-absent of `action`'s key under `lease` ended.
    Claimed {
        /// The action.
        action: D::Action,
        /// The lease the request named.
        lease: D::Lease,
        /// What etcd found.
        result: ClaimResult<D>,
    },
    /// A delete of `action`'s key ended (whether or not it deleted one).
    Deleted {
        /// The action.
        action: D::Action,
    },
    /// A lookup of `action`'s key for activation `id` answered.
    Resolved {
        /// The activation.
        id: D::Activation,
        /// Its action.
        action: D::Action,
        /// The key, if it exists.
        key: Option<Endpoint<D>>,
    },
    /// An activation arrived; it may be a copy of one that arrived before.
    Activation {
        /// Its id.
        id: D::Activation,
        /// Its action.
        action: D::Action,
        /// A peer scheduler sent it on ([`Effect::Forward`]), rather than a
        /// controller: one this scheduler forwarded may come back so.
        forwarded: bool,
        /// The incarnation of this scheduler it was addressed to; `None`:
        /// its sender knew none (no member key of this scheduler).
        incarnation: Option<D::Incarnation>,
        /// How long until its deadline, as it arrives (zero: past it);
        /// `None`: it has none. A runtime reckons it from the deadline the
        /// message carries and its own clock.
        left: Option<D::Duration>,
    },
    /// Activation `id`, which it forwarded to `to`, could not be sent on:
    /// nothing listens at the peer's address any more (the peer is gone),
    /// or the peer refused it ([`Effect::Refuse`]: it is a later
    /// incarnation than the one the forward was addressed to). A bounce of
    /// a forward to another peer than the last changes nothing.
    Bounced {
        /// The activation.
        id: D::Activation,
        /// The peer it was forwarded to.
        to: D::Scheduler,
        /// The run of `to` the forward was addressed to: a bounce of a
        /// forward to another run than the last changes nothing.
        incarnation: Option<D::Incarnation>,
    },
    /// Peer `from` acknowledged activation `id`, which this scheduler
    /// forwarded to it: it stops sending it. An acknowledgement from
    /// another peer than the one it was last forwarded to changes nothing.
    ForwardAcked {
        /// The activation.
        id: D::Activation,
        /// The peer.
        from: D::Scheduler,
    },
    /// The controller that submitted activation `id` confirmed its report:
    /// it stops sending it.
    ReportAcked {
        /// The activation.
        id: D::Activation,
    },
    /// The report of activation `id` could not be sent: nothing listens at
    /// its controller's address any more (the controller, and the
    /// submission with it, is gone). It is not sent again.
    ReportBounced {
        /// The activation.
        id: D::Activation,
    },
    /// An activation it handed out finished executing: with a result, or
    /// with the executor's error or panic.
    Executed {
        /// The activation.
        id: D::Activation,
        /// Why it ended without a result; `None`: it returned one. (Absent
        /// in a trace written before it existed, and from one that returned
        /// a result: `None`.)
        #[serde(default, skip_serializing_if = "Option::is_none")]
        failure: Option<ExecutionFailure>,
    },
    /// A controller asks for a queue for `action`.
    CreateQueue {
        /// The action.
        action: D::Action,
    },
    /// The idle timer of `action`'s queue fired ([`Effect::IdleTimer`]):
    /// the queue retires unless it handed out work within
    /// [`Config::idle_after`].
    Idle {
        /// The action.
        action: D::Action,
    },
    /// Leave the cluster: take no new work, let what it holds settle, then
    /// give the lease back ([`Effect::Drained`] once it has).
    Drain,
    /// Activation `id` is to be forgotten now, as if its
    /// [`Config::remember_for`] had passed: the model reuses an id for a
    /// new activation so. Nothing follows.
    Forget {
        /// The activation.
        id: D::Activation,
    },
}

/// What the scheduler asks of the world.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum Effect<D: Domain> {
    /// Wake it up ([`Input::Wake`]) after this long.
    WakeIn {
        /// How long from now.
        after: D::Duration,
    },
    /// Grant a lease of this TTL; answer with [`Input::Granted`].
    Grant {
        /// The TTL asked for.
        ttl: D::Duration,
    },
    /// Renew this lease; answer with [`Input::KeptAlive`], naming the
    /// keepalive, whenever etcd answers (a runtime need not cancel one
    /// sent before: its answer counts from its own send).
    KeepAlive {
        /// The lease.
        lease: D::Lease,
        /// The keepalive's number.
        keepalive: u64,
    },
    /// Arm the retry timer: answer with [`Input::Retry`] after this long (a
    /// timer armed again replaces the last).
    RetryIn {
        /// How long from now.
        after: D::Duration,
    },
    /// Put this scheduler's member key (`scheduler/<id>`, holding the
    /// address it advertises and `incarnation`) under `lease`; answer with
    /// [`Input::Registered`].
    Register {
        /// The lease to bind it to.
        lease: D::Lease,
        /// Its incarnation, written in the key's value.
        incarnation: D::Incarnation,
    },
    /// Revoke this lease; answer with [`Input::Revoked`].
    Revoke {
        /// The lease.
        lease: D::Lease,
    },
    /// Create `action`'s key for this scheduler (its value naming the
    /// scheduler and `incarnation`) under `lease`, if absent; answer with
    /// [`Input::Claimed`].
    Claim {
        /// The action.
        action: D::Action,
        /// The lease to bind it to.
        lease: D::Lease,
        /// Its incarnation, written in the key's value.
        incarnation: D::Incarnation,
    },
    /// Delete `action`'s key; with `created`, only if it is the key that
    /// revision created. Answer with [`Input::Deleted`].
    Delete {
        /// The action.
        action: D::Action,
        /// The key's create revision, for a conditional delete.
        created: Option<D::Revision>,
    },
    /// Look up `action`'s key for activation `id`; answer with
    /// [`Input::Resolved`].
    Resolve {
        /// The activation.
        id: D::Activation,
        /// Its action.
        action: D::Action,
    },
    /// Run activation `id` from the queue registered under `lease`; answer
    /// with [`Input::Executed`].
    Execute {
        /// The activation.
        id: D::Activation,
        /// Its action.
        action: D::Action,
        /// The lease the queue's key was registered under.
        lease: D::Lease,
    },
    /// Stop running activation `id`: it ran past [`Config::execute_for`]
    /// and is settled as failed. Whatever it returns from now on changes
    /// nothing ([`Input::Executed`] of an activation not running).
    Cancel {
        /// The activation.
        id: D::Activation,
    },
    /// Send activation `id` on to scheduler `to`, as forwarded (again at
    /// every wake-up and retry until `to` acknowledges it).
    Forward {
        /// The activation.
        id: D::Activation,
        /// Its action.
        action: D::Action,
        /// The scheduler.
        to: D::Scheduler,
        /// The incarnation of `to` it is addressed to (the one its key
        /// names).
        incarnation: D::Incarnation,
    },
    /// Tell the controller that submitted activation `id` how it ended
    /// (again at every wake-up and retry until that controller confirms
    /// it); the controller resolves the submission with it.
    Report {
        /// The activation.
        id: D::Activation,
        /// How it ended.
        outcome: Outcome,
    },
    /// Acknowledge activation `id` to the node it came from (a controller,
    /// or a peer that forwarded it): it stops sending it.
    Ack {
        /// The activation.
        id: D::Activation,
    },
    /// Refuse the copy of activation `id` just delivered, to the node that
    /// sent it (a controller, or a peer that forwarded it), which takes it
    /// as a bounce: it was addressed to another incarnation
    /// ([`Rule::FenceCopies`]). It is not taken in.
    Refuse {
        /// The activation.
        id: D::Activation,
        /// The run the copy was addressed to.
        incarnation: Option<D::Incarnation>,
    },
    /// Arm the idle timer of `action`'s queue: answer with [`Input::Idle`]
    /// after this long (a timer armed again replaces the last).
    IdleTimer {
        /// The action.
        action: D::Action,
        /// How long from now.
        after: D::Duration,
    },
    /// It drained ([`Input::Drain`]): everything it took in has settled,
    /// every forward and report it sent is acknowledged, and its lease is
    /// given back. Its runtime stops; every later input changes nothing.
    Drained,
}

/// Whether a scheduler serves or is leaving ([`Input::Drain`]).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum Phase {
    /// Taking work.
    #[default]
    Serving,
    /// Taking no new work; what it holds settles, then its lease goes.
    Draining,
    /// Done: nothing held, the lease given back.
    Drained,
}

/// One scheduler.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct Scheduler<D: Domain> {
    /// Its id.
    pub id: D::Scheduler,
    /// This run of it: a crash and restart makes another.
    pub incarnation: D::Incarnation,
    /// Its lease.
    pub lease: LeaseState<D>,
    /// Whether it serves, or is leaving.
    pub phase: Phase,
    /// The queues it owns, sorted.
    pub queues: Vec<Queue<D>>,
    /// Actions whose key it wants to claim, sorted; the claim is sent (again)
    /// at every wake-up while it holds a lease, until etcd answers it.
    pub electing: Vec<D::Action>,
    /// Keys it is deleting, and the create revision each delete is
    /// conditioned on, sorted; sent again at every wake-up until etcd
    /// answers.
    pub retiring: Vec<(D::Action, Option<D::Revision>)>,
    /// Activations waiting for their action's queue: an election under way,
    /// or a lease whose validity has run out.
    pub waiting: Vec<(D::Activation, D::Action)>,
    /// Activations whose action's key it is looking up, sent again at every
    /// wake-up until etcd answers.
    pub resolving: Vec<(D::Activation, D::Action)>,
    /// Activations it handed out that have not finished.
    pub running: Vec<D::Activation>,
    /// Under [`Rule::ExecutionTimeout`], how long each running activation
    /// may still run, sorted by id (zero: past its timeout); counted down
    /// as time passes, dropped when it settles.
    pub timeouts: Vec<(D::Activation, D::Duration)>,
    /// How long until the deadline of each activation it holds or forwards
    /// that has one, sorted by id (zero: past it); counted down as time
    /// passes, dropped when the activation starts or settles here.
    pub deadlines: Vec<(D::Activation, D::Duration)>,
    /// Activations it forwarded and the peer has not acknowledged, sorted
    /// by id: sent again at every wake-up and retry.
    pub forwarding: Vec<Forward<D>>,
    /// Outcomes it reported and their controllers have not confirmed,
    /// sorted: sent again at every wake-up and retry.
    pub reporting: Vec<(D::Activation, Outcome)>,
    /// Activations it settled, sorted, so that a copy delivered again is
    /// only acknowledged.
    pub settled: Vec<D::Activation>,
    /// Activations it forwarded, sorted, so that a copy from a controller
    /// is only acknowledged, while one a peer sends back is taken in.
    pub forwarded: Vec<D::Activation>,
    /// Under [`Config::remember_for`], the time it has run, by its own
    /// clock (the sum of the spans it was told of); zero without it.
    pub clock: D::Duration,
    /// Under [`Config::remember_for`], what it remembers in `settled` and
    /// `forwarded`, oldest first, each with when (by `clock`) it is
    /// forgotten. A mark made again within the span, such as an activation
    /// forwarded twice, is forgotten with the first.
    pub forgetting: std::collections::VecDeque<(D::Duration, Remembered, D::Activation)>,
    /// Activations whose lookup found no key during an election of its own
    /// and are looked up once more (OpenWhisk's retries, which last about
    /// 8 s, outlast one election).
    pub retried: Vec<D::Activation>,
}

/// How a copy of an activation arrived ([`Input::Activation`]).
struct Arrival<D: Domain> {
    forwarded: bool,
    incarnation: Option<D::Incarnation>,
    left: Option<D::Duration>,
}

/// An activation forwarded to a peer that has not acknowledged it yet.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub struct Forward<D: Domain> {
    /// The activation.
    pub id: D::Activation,
    /// Its action.
    pub action: D::Action,
    /// The peer it was forwarded to.
    pub to: D::Scheduler,
    /// The peer's incarnation it is addressed to.
    pub incarnation: D::Incarnation,
}

impl<D: Domain> Forward<D> {
    /// Its send, again.
    fn effect(&self) -> Effect<D> {
        Effect::Forward {
            id: self.id.clone(),
            action: self.action.clone(),
            to: self.to.clone(),
            incarnation: self.incarnation,
        }
    }
}

impl<D: Domain> Scheduler<D> {
    /// Incarnation `incarnation` of scheduler `id`, just started: its first
    /// [`Input::Wake`] asks for a lease. A runtime picks an incarnation no
    /// earlier run of `id` had.
    pub fn new(id: D::Scheduler, incarnation: D::Incarnation) -> Self {
        Scheduler {
            id,
            incarnation,
            lease: LeaseState::Granting,
            phase: Phase::Serving,
            queues: Vec::new(),
            electing: Vec::new(),
            retiring: Vec::new(),
            waiting: Vec::new(),
            resolving: Vec::new(),
            running: Vec::new(),
            timeouts: Vec::new(),
            deadlines: Vec::new(),
            forwarding: Vec::new(),
            reporting: Vec::new(),
            settled: Vec::new(),
            forwarded: Vec::new(),
            clock: D::Duration::default(),
            forgetting: std::collections::VecDeque::new(),
            retried: Vec::new(),
        }
    }

    /// The lease it holds, valid or not.
    pub fn live_lease(&self) -> Option<&D::Lease> {
        match &self.lease {
            LeaseState::Held { id, .. } => Some(id),
            LeaseState::Granting | LeaseState::Revoking { .. } => None,
        }
    }

    /// The lease it may hand out work under now: held, and still valid on
    /// its own clock (the fence's judgement, [`Rule::Fence`]).
    pub fn valid_lease(&self) -> Option<&D::Lease> {
        match &self.lease {
            LeaseState::Held { id, valid_for, .. } if *valid_for != D::Duration::default() => {
                Some(id)
            }
            _ => None,
        }
    }

    /// The queue of `action`, if it owns one.
    pub fn queue(&self, action: &D::Action) -> Option<&Queue<D>> {
        self.queues.iter().find(|q| q.action == *action)
    }

    /// Whether it holds activation `id`: waiting for a queue, looking up
    /// its key, or running it (a copy of it is then ignored).
    pub fn holds(&self, id: &D::Activation) -> bool {
        let listed = |list: &[(D::Activation, D::Action)]| list.iter().any(|(i, _)| i == id);
        listed(&self.waiting) || listed(&self.resolving) || contains_sorted(&self.running, id)
    }

    /// Whether it may still name activation `id` in an effect: it holds
    /// it, or a forward or a report of it is not acknowledged yet. A
    /// runtime keeps what the activation carries (its payload, its result)
    /// while this is so.
    pub fn mentions(&self, id: &D::Activation) -> bool {
        self.holds(id)
            || self.forwarding.iter().any(|f| f.id == *id)
            || self.reporting.binary_search_by(|(r, _)| r.cmp(id)).is_ok()
    }

    /// Whether it holds no activation at all.
    fn holds_none(&self) -> bool {
        self.waiting.is_empty() && self.resolving.is_empty() && self.running.is_empty()
    }

    /// Forgets at once that activation `id` was settled or forwarded, so
    /// that an activation of that id is new again ([`Input::Forget`]): for
    /// a model that reuses ids to stay finite.
    fn forget(&mut self, id: &D::Activation) {
        self.forwarding.retain(|f| f.id != *id);
        self.reporting.retain(|(r, _)| r != id);
        self.settled.retain(|s| s != id);
        self.forwarded.retain(|s| s != id);
        self.forgetting.retain(|(_, _, i)| i != id);
        self.drop_deadline(id);
    }

    /// Feeds one input that came `elapsed` after the one before.
    pub fn step(
        &mut self,
        config: &Config<D>,
        elapsed: D::Duration,
        input: Input<D>,
    ) -> Vec<Effect<D>> {
        if self.phase == Phase::Drained {
            return Vec::new();
        }
        self.advance(config, elapsed);
        let owed = self.owes();
        let timed = matches!(input, Input::Wake | Input::Retry);
        let mut out = Vec::new();
        match input {
            Input::Wake => self.wake(config, &mut out),
            Input::Granted { lease, ttl } => self.granted(config, lease, ttl, &mut out),
            Input::KeptAlive {
                lease,
                keepalive,
                ttl,
            } => self.kept_alive(config, lease, keepalive, ttl, &mut out),
            Input::Retry => self.retry(config, &mut out),
            Input::Registered { lease, found } => self.registered(config, lease, found, &mut out),
            Input::Revoked { lease } => {
                if matches!(&self.lease, LeaseState::Revoking { id } if *id == lease) {
                    self.lease = LeaseState::Granting;
                    if !self.leaving() {
                        out.push(Effect::Grant { ttl: config.ttl });
                        self.arm_retry(config, &mut out);
                    }
                }
            }
            Input::Claimed {
                action,
                lease,
                result,
            } => self.claimed(config, action, lease, result, &mut out),
            Input::Deleted { action } => {
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
            Input::Resolved { id, action, key } => self.resolved(config, id, action, key, &mut out),
            Input::Activation {
                id,
                action,
                forwarded,
                incarnation,
                left,
            } => {
                let arrival = Arrival {
                    forwarded,
                    incarnation,
                    left,
                };
                self.activation(config, id, action, arrival, &mut out)
            }
            Input::Executed { id, failure } => {
                let outcome = failure.map_or(Outcome::Executed, Outcome::ExecutionFailed);
                self.executed(config, id, outcome, &mut out);
            }
            Input::CreateQueue { action } => {
                if self.queue(&action).is_none() && self.phase == Phase::Serving {
                    self.elect(action, &mut out);
                }
            }
            Input::Idle { action } => self.retire(config, action, &mut out),
            Input::Bounced {
                id,
                to,
                incarnation,
            } => self.bounced(config, id, to, incarnation),
            Input::ForwardAcked { id, from } => {
                self.forward_acked(config.rules, id, from, &mut out)
            }
            Input::ReportAcked { id } | Input::ReportBounced { id } => {
                if let Ok(at) = self.reporting.binary_search_by(|(r, _)| r.cmp(&id)) {
                    self.reporting.remove(at);
                }
            }
            Input::Drain => self.drain(),
            Input::Forget { id } => self.forget(&id),
        }
        let released = self.phase == Phase::Draining && self.release(&mut out);
        // Activations now wait on a request, or its lease's revoke is under
        // way: retried a span from now.
        if released || (self.owes() && !owed && !timed) {
            self.arm_retry(config, &mut out);
        }
        out
    }

    /// Time passed: the lease's validity runs down, the keepalives age
    /// (those as old as the TTL are dropped: their answers are worth
    /// nothing), queues stay idle longer.
    fn advance(&mut self, config: &Config<D>, elapsed: D::Duration) {
        if config.remember_for.is_some() {
            self.clock = self.clock + elapsed;
            while let Some((at, memory, id)) = self.forgetting.front().cloned() {
                if at > self.clock {
                    break;
                }
                self.forgetting.pop_front();
                let list = self.memory(memory);
                if let Ok(at) = list.binary_search(&id) {
                    list.remove(at);
                }
            }
        }
        for queue in &mut self.queues {
            queue.idle_for = (queue.idle_for + elapsed).min(config.idle_after);
        }
        for (_, left) in self.deadlines.iter_mut().chain(&mut self.timeouts) {
            *left = D::saturating_sub(*left, elapsed);
        }
        if let LeaseState::Held {
            ttl,
            valid_for,
            keepalives,
            ..
        } = &mut self.lease
        {
            *valid_for = D::saturating_sub(*valid_for, elapsed);
            for (_, age) in keepalives.iter_mut() {
                *age = *age + elapsed;
            }
            keepalives.retain(|(_, age)| age < ttl);
        }
    }

    /// Sends every request not answered yet, and a keepalive.
    fn wake(&mut self, config: &Config<D>, out: &mut Vec<Effect<D>>) {
        let mut expired = self.expire(config, out);
        expired.extend(self.time_out(config, out));
        self.send_keepalive(out);
        match &self.lease {
            // Leaving, it wants no new lease.
            LeaseState::Granting if self.leaving() => {}
            LeaseState::Granting => out.push(Effect::Grant { ttl: config.ttl }),
            LeaseState::Revoking { id } => out.push(Effect::Revoke { lease: id.clone() }),
            LeaseState::Held { id, registered, .. } => {
                if !*registered {
                    out.push(Effect::Register {
                        lease: id.clone(),
                        incarnation: self.incarnation,
                    });
                }
                let lease = id.clone();
                self.claim_electing(&lease, out);
            }
        }
        for (action, created) in &self.retiring {
            out.push(Effect::Delete {
                action: action.clone(),
                created: *created,
            });
        }
        self.resend(&expired, out);
        out.push(Effect::WakeIn {
            after: config.wake_every,
        });
        self.arm_retry(config, out);
    }

    /// Whether activations wait on its requests (a claim or a lookup not
    /// answered yet), or on a peer or a controller acknowledging what it
    /// sent them.
    fn owes(&self) -> bool {
        !self.electing.is_empty()
            || !self.resolving.is_empty()
            || !self.forwarding.is_empty()
            || !self.reporting.is_empty()
    }

    /// Arms the retry timer: for [`Config::retry_every`] from now while it
    /// cannot serve or activations wait on its requests, else for when the
    /// lease's validity runs out.
    fn arm_retry(&self, config: &Config<D>, out: &mut Vec<Effect<D>>) {
        let after = match &self.lease {
            LeaseState::Held { valid_for, .. }
                if *valid_for != D::Duration::default() && !self.owes() =>
            {
                *valid_for
            }
            _ => config.retry_every,
        };
        out.push(Effect::RetryIn { after });
    }

    /// The retry timer fired: while it cannot serve, its lease's request is
    /// sent again (a grant, a revoke, or a new keepalive); the claims,
    /// lookups, forwards and reports activations wait on are sent again;
    /// the timer is armed again either way.
    fn retry(&mut self, config: &Config<D>, out: &mut Vec<Effect<D>>) {
        let mut expired = self.expire(config, out);
        expired.extend(self.time_out(config, out));
        if self.valid_lease().is_none() {
            match &self.lease {
                LeaseState::Granting if self.leaving() => {}
                LeaseState::Granting => out.push(Effect::Grant { ttl: config.ttl }),
                LeaseState::Revoking { id } => out.push(Effect::Revoke { lease: id.clone() }),
                LeaseState::Held { .. } => {}
            }
            self.send_keepalive(out);
        }
        if let Some(lease) = self.live_lease().cloned() {
            self.claim_electing(&lease, out);
        }
        self.resend(&expired, out);
        self.arm_retry(config, out);
    }

    /// Looks up again every key it is looking up, and sends again every
    /// forward and report not acknowledged yet (but the reports of
    /// `settled_now`, sent in this step already).
    fn resend(&self, settled_now: &[D::Activation], out: &mut Vec<Effect<D>>) {
        for (id, action) in &self.resolving {
            out.push(Effect::Resolve {
                id: id.clone(),
                action: action.clone(),
            });
        }
        out.extend(self.forwarding.iter().map(Forward::effect));
        let reports = self
            .reporting
            .iter()
            .filter(|(id, _)| !settled_now.contains(id));
        out.extend(reports.map(|(id, outcome)| Effect::Report {
            id: id.clone(),
            outcome: *outcome,
        }));
    }

    /// Sends keepalive number `next_keepalive` of the lease it holds, if
    /// it holds one.
    fn send_keepalive(&mut self, out: &mut Vec<Effect<D>>) {
        let LeaseState::Held {
            id,
            keepalives,
            next_keepalive,
            ..
        } = &mut self.lease
        else {
            return;
        };
        let keepalive = *next_keepalive;
        *next_keepalive += 1;
        keepalives.push((keepalive, D::Duration::default()));
        out.push(Effect::KeepAlive {
            lease: id.clone(),
            keepalive,
        });
    }

    fn granted(
        &mut self,
        config: &Config<D>,
        lease: D::Lease,
        ttl: D::Duration,
        out: &mut Vec<Effect<D>>,
    ) {
        if self.lease != LeaseState::Granting {
            // A grant it no longer waits for (a retried request answered
            // twice): give the extra lease back.
            out.push(Effect::Revoke { lease });
            return;
        }
        // Valid only once a keepalive sent from now on is confirmed: when
        // etcd granted it is not known.
        self.lease = LeaseState::Held {
            id: lease.clone(),
            ttl,
            valid_for: D::Duration::default(),
            keepalives: Vec::new(),
            next_keepalive: 0,
            registered: false,
        };
        self.send_keepalive(out);
        out.push(Effect::Register {
            lease: lease.clone(),
            incarnation: self.incarnation,
        });
        self.claim_electing(&lease, out);
        self.arm_retry(config, out);
    }

    /// Claims, under `lease`, every key it wants and is not deleting.
    fn claim_electing(&self, lease: &D::Lease, out: &mut Vec<Effect<D>>) {
        for action in &self.electing {
            if !self.retiring.iter().any(|(a, _)| a == action) {
                out.push(Effect::Claim {
                    action: action.clone(),
                    lease: lease.clone(),
                    incarnation: self.incarnation,
                });
            }
        }
    }

    fn kept_alive(
        &mut self,
        config: &Config<D>,
        lease: D::Lease,
        keepalive: u64,
        renewed: D::Duration,
        out: &mut Vec<Effect<D>>,
    ) {
        let LeaseState::Held {
            id,
            ttl,
            valid_for,
            keepalives,
            ..
        } = &mut self.lease
        else {
            return;
        };
        if *id != lease {
            return;
        }
        // An answer to a keepalive answered already, or dropped (one sent
        // later was answered), says nothing new.
        let Some(&(_, age)) = keepalives.iter().find(|(k, _)| *k == keepalive) else {
            return;
        };
        keepalives.retain(|(k, _)| *k > keepalive);
        let renewed = if renewed != D::Duration::default() {
            renewed
        } else if config.rules.has(Rule::TtlZeroIsLoss) {
            self.lose_lease(config, out);
            return;
        } else {
            // OpenWhisk maps the answer to its lease and takes it for a
            // renewal of the TTL it was granted.
            *ttl
        };
        *valid_for = D::saturating_sub(renewed, age + config.margin);
        self.arm_retry(config, out);
        self.serve_waiting(config, out);
    }

    /// etcd answered a put of its member key: a member from now on, or, the
    /// lease gone, as a keepalive answered with TTL 0 says.
    fn registered(
        &mut self,
        config: &Config<D>,
        lease: D::Lease,
        found: bool,
        out: &mut Vec<Effect<D>>,
    ) {
        let LeaseState::Held { id, registered, .. } = &mut self.lease else {
            return;
        };
        if *id != lease {
            return;
        }
        if found {
            *registered = true;
        } else if config.rules.has(Rule::TtlZeroIsLoss) {
            self.lose_lease(config, out);
        }
        // OpenWhisk puts the key again at the next wake-up.
    }

    /// The lease is gone: stop serving every queue and revoke it before
    /// taking a new one; waiting activations are looked up again.
    fn lose_lease(&mut self, config: &Config<D>, out: &mut Vec<Effect<D>>) {
        let Some(id) = self.live_lease().cloned() else {
            return;
        };
        self.lease = LeaseState::Revoking { id: id.clone() };
        self.queues.clear();
        out.push(Effect::Revoke { lease: id });
        self.arm_retry(config, out);
        self.serve_waiting(config, out);
    }

    /// The lease it would hand out `action`'s work under now, if any.
    fn servable(&self, rules: Rules, action: &D::Action) -> Option<D::Lease> {
        let queue = self.queue(action)?;
        if !rules.has(Rule::Fence) {
            // OpenWhisk serves from its queue whatever became of its lease.
            return Some(queue.lease.clone());
        }
        self.valid_lease().filter(|id| **id == queue.lease).cloned()
    }

    /// Hands out every waiting activation whose queue is servable now; one
    /// whose action has neither a queue nor an election is looked up again.
    fn serve_waiting(&mut self, config: &Config<D>, out: &mut Vec<Effect<D>>) {
        for (id, action) in std::mem::take(&mut self.waiting) {
            self.take_in(config, id, action, out);
        }
    }

    /// Hands activation `id` out if its queue is servable now; keeps it
    /// waiting while its action has a queue or an election; else looks up
    /// its action's key.
    fn take_in(
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

    /// Hands activation `id` out from `action`'s queue under `lease`; under
    /// [`Rule::Deadline`], fails it instead if its deadline has passed.
    fn execute(
        &mut self,
        config: &Config<D>,
        id: D::Activation,
        action: D::Action,
        lease: D::Lease,
        out: &mut Vec<Effect<D>>,
    ) {
        if config.rules.has(Rule::Deadline) && self.past_deadline(&id) {
            return self.settle(config, id, Outcome::Failed(FailReason::PastDeadline), out);
        }
        self.drop_deadline(&id);
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
    fn executed(
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
    fn time_out(&mut self, config: &Config<D>, out: &mut Vec<Effect<D>>) -> Vec<D::Activation> {
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

    fn resolve(&mut self, id: D::Activation, action: D::Action, out: &mut Vec<Effect<D>>) {
        self.resolving.push((id.clone(), action.clone()));
        out.push(Effect::Resolve { id, action });
    }

    /// Wants `action`'s key: claims it now if it holds a lease and is not
    /// deleting the key, else at the next chance.
    fn elect(&mut self, action: D::Action, out: &mut Vec<Effect<D>>) {
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

    /// Activation `id` ended here with `outcome`: reported to its
    /// controller, remembered, and acknowledged if it was not on receipt.
    fn settle(
        &mut self,
        config: &Config<D>,
        id: D::Activation,
        outcome: Outcome,
        out: &mut Vec<Effect<D>>,
    ) {
        self.drop_deadline(&id);
        out.push(Effect::Report {
            id: id.clone(),
            outcome,
        });
        if let Err(at) = self.reporting.binary_search_by(|(r, _)| r.cmp(&id)) {
            self.reporting.insert(at, (id.clone(), outcome));
        }
        if config.rules.has(Rule::Deduplicate) {
            self.remember(config, Remembered::Settled, id.clone());
        }
        self.acknowledge(config.rules, id, out);
    }

    /// Remembers that it settled or forwarded activation `id`, until
    /// [`Config::remember_for`] has passed.
    fn remember(&mut self, config: &Config<D>, memory: Remembered, id: D::Activation) {
        insert_sorted(self.memory(memory), id.clone());
        if let Some(span) = config.remember_for {
            self.forgetting.push_back((self.clock + span, memory, id));
        }
    }

    /// The sorted list that keeps `memory`.
    fn memory(&mut self, memory: Remembered) -> &mut Vec<D::Activation> {
        match memory {
            Remembered::Settled => &mut self.settled,
            Remembered::Forwarded => &mut self.forwarded,
        }
    }

    fn acknowledge(&mut self, rules: Rules, id: D::Activation, out: &mut Vec<Effect<D>>) {
        if rules.has(Rule::AckAtSettlement) {
            out.push(Effect::Ack { id });
        }
    }

    /// Sends activation `id` on to `key`'s owner, addressed to the
    /// incarnation that created the key.
    fn forward(
        &mut self,
        config: &Config<D>,
        id: D::Activation,
        action: D::Action,
        key: Endpoint<D>,
        out: &mut Vec<Effect<D>>,
    ) {
        if config.rules.has(Rule::Deduplicate) {
            self.remember(config, Remembered::Forwarded, id.clone());
        }
        let forward = Forward {
            id: id.clone(),
            action,
            to: key.owner,
            incarnation: key.incarnation,
        };
        out.push(forward.effect());
        match self.forwarding.binary_search_by(|f| f.id.cmp(&id)) {
            Ok(at) => self.forwarding[at] = forward,
            Err(at) => self.forwarding.insert(at, forward),
        }
    }

    /// Peer `from` took in activation `id`, which this scheduler forwarded
    /// to it: the activation is settled here, and acknowledged to its
    /// sender only now. (Acknowledged at the forward, it would be lost if
    /// this scheduler crashed and the peer left before taking it in: the
    /// forward bounces back to a run that knows nothing of it.)
    fn forward_acked(
        &mut self,
        rules: Rules,
        id: D::Activation,
        from: D::Scheduler,
        out: &mut Vec<Effect<D>>,
    ) {
        let Some(at) = self
            .forwarding
            .iter()
            .position(|f| f.id == id && f.to == from)
        else {
            return;
        };
        self.forwarding.remove(at);
        self.drop_deadline(&id);
        self.acknowledge(rules, id, out);
    }

    fn claimed(
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

    fn activation(
        &mut self,
        config: &Config<D>,
        id: D::Activation,
        action: D::Action,
        arrival: Arrival<D>,
        out: &mut Vec<Effect<D>>,
    ) {
        let Arrival {
            forwarded,
            incarnation,
            left,
        } = arrival;
        let rules = config.rules;
        if rules.has(Rule::Deduplicate) {
            let sent_on = contains_sorted(&self.forwarded, &id);
            if contains_sorted(&self.settled, &id) || (sent_on && !forwarded) {
                // What it forwarded is settled once the peer took it in.
                if !self.forwarding.iter().any(|f| f.id == id) {
                    out.push(Effect::Ack { id });
                }
                return;
            }
            if self.holds(&id) {
                return;
            }
        }
        // New to this run of it, and addressed to another: refused, not
        // ignored, so that its sender routes it again. (What this run holds
        // or settled is answered as above, to whichever run a copy names:
        // a refusal would have it routed again while it runs here.)
        if rules.has(Rule::FenceCopies) && incarnation != Some(self.incarnation) {
            out.push(Effect::Refuse { id, incarnation });
            return;
        }
        if rules.has(Rule::Deduplicate) {
            // Sent back by the peer it was forwarded to: its owner now (it
            // holds nothing it forwarded), and its forward is over.
            self.forwarded.retain(|f| *f != id);
            self.forwarding.retain(|f| f.id != id);
        }
        if self.phase == Phase::Draining {
            // Left unacknowledged: its sender keeps sending it, and routes
            // it again once this scheduler has stopped listening.
            return;
        }
        if !rules.has(Rule::AckAtSettlement) {
            // Committed on receipt: a crash from here on loses it.
            out.push(Effect::Ack { id: id.clone() });
        }
        match left {
            // Past its deadline as it arrives: it is not started (OpenWhisk
            // checks this much too).
            Some(left) if left == D::Duration::default() => {
                let outcome = Outcome::Failed(FailReason::PastDeadline);
                return self.settle(config, id, outcome, out);
            }
            Some(left) => match self.deadlines.binary_search_by(|(d, _)| d.cmp(&id)) {
                Ok(at) => self.deadlines[at].1 = left,
                Err(at) => self.deadlines.insert(at, (id.clone(), left)),
            },
            None => {}
        }
        self.take_in(config, id, action, out);
    }

    /// Whether activation `id`'s deadline has passed.
    fn past_deadline(&self, id: &D::Activation) -> bool {
        passed::<D>(&self.deadlines, id)
    }

    fn drop_deadline(&mut self, id: &D::Activation) {
        if let Ok(at) = self.deadlines.binary_search_by(|(d, _)| d.cmp(id)) {
            self.deadlines.remove(at);
        }
    }

    /// Under [`Rule::Deadline`], fails every activation that waits (on its
    /// queue, an election or a lookup) past its deadline: it would never
    /// start. Returns those it failed.
    fn expire(&mut self, config: &Config<D>, out: &mut Vec<Effect<D>>) -> Vec<D::Activation> {
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
            let outcome = Outcome::Failed(FailReason::PastDeadline);
            self.settle(config, id.clone(), outcome, out);
        }
        if self.phase == Phase::Draining {
            self.drop_unwanted_elections();
        }
        expired
    }

    /// A forward to `to` bounced: under [`Rule::Reroute`] it holds the
    /// activation again and looks its action's key up at its next wake-up
    /// or retry (the gone peer's key may have expired by then); without
    /// it, it sends the forward to the same address again.
    fn bounced(
        &mut self,
        config: &Config<D>,
        id: D::Activation,
        to: D::Scheduler,
        incarnation: Option<D::Incarnation>,
    ) {
        if !config.rules.has(Rule::Reroute) {
            return;
        }
        let Some(at) = self
            .forwarding
            .iter()
            .position(|f| f.id == id && f.to == to && Some(f.incarnation) == incarnation)
        else {
            return;
        };
        let Forward { action, .. } = self.forwarding.remove(at);
        if let Ok(at) = self.forwarded.binary_search(&id) {
            self.forwarded.remove(at);
            self.forgetting
                .retain(|(_, memory, i)| (*memory, i) != (Remembered::Forwarded, &id));
        }
        self.resolving.push((id, action));
    }

    /// Takes no new work from now on. Elections no activation waits on
    /// (asked for by a controller) are dropped: the queue would not serve.
    fn drain(&mut self) {
        if self.phase != Phase::Serving {
            return;
        }
        self.phase = Phase::Draining;
        self.drop_unwanted_elections();
    }

    /// Draining, it drops every election no activation waits on.
    fn drop_unwanted_elections(&mut self) {
        let waiting = &self.waiting;
        self.electing
            .retain(|action| waiting.iter().any(|(_, a)| a == action));
    }

    /// Whether it is draining and holds nothing more: its lease is to go.
    fn leaving(&self) -> bool {
        self.phase == Phase::Draining && self.holds_none()
    }

    /// Draining, and everything it took in settled: revokes its lease (all
    /// its keys go with it at one revision), and once etcd has confirmed
    /// (or if it held none) and every forward and report it sent is
    /// acknowledged, it has drained.
    /// Returns whether it began to revoke its lease.
    fn release(&mut self, out: &mut Vec<Effect<D>>) -> bool {
        if !self.leaving() {
            return false;
        }
        match &self.lease {
            LeaseState::Held { id, .. } => {
                let id = id.clone();
                self.queues.clear();
                self.electing.clear();
                self.lease = LeaseState::Revoking { id: id.clone() };
                out.push(Effect::Revoke { lease: id });
                return true;
            }
            // Its lost lease's revoke is under way: drained once confirmed.
            LeaseState::Revoking { .. } => {}
            // What it sent would be lost with it.
            LeaseState::Granting if !self.forwarding.is_empty() || !self.reporting.is_empty() => {}
            LeaseState::Granting => {
                self.phase = Phase::Drained;
                out.push(Effect::Drained);
            }
        }
        false
    }

    fn resolved(
        &mut self,
        config: &Config<D>,
        id: D::Activation,
        action: D::Action,
        key: Option<Endpoint<D>>,
        out: &mut Vec<Effect<D>>,
    ) {
        let Some(at) = self.resolving.iter().position(|(i, _)| *i == id) else {
            return;
        };
        self.resolving.remove(at);
        let rules = config.rules;
        let was_retried = contains_sorted(&self.retried, &id);
        self.retried.retain(|r| *r != id);
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

    /// Retires the queue of `action` if it handed out nothing for
    /// [`Config::idle_after`] and no work waits on it; else arms its idle
    /// timer again for the rest of the span.
    fn retire(&mut self, config: &Config<D>, action: D::Action, out: &mut Vec<Effect<D>>) {
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
    fn delete_key(
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

    /// Owns a queue for `action` from now on, unless it does already, and
    /// arms its idle timer.
    fn open_queue(
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

/// Whether `deadlines` (sorted by activation) say activation `id`'s
/// deadline has passed.
fn passed<D: Domain>(deadlines: &[(D::Activation, D::Duration)], id: &D::Activation) -> bool {
    let at = deadlines.binary_search_by(|(d, _)| d.cmp(id));
    at.is_ok_and(|at| deadlines[at].1 == D::Duration::default())
}

/// Takes out of `list` every entry for `action`.
fn extract<A: PartialEq, T>(list: &mut Vec<(T, A)>, action: &A) -> Vec<(T, A)> {
    let (taken, kept) = std::mem::take(list)
        .into_iter()
        .partition(|(_, a)| a == action);
    *list = kept;
    taken
}

/// Whether the sorted `list` holds `item` (the lists a runtime lets grow,
/// such as the settled activations, are searched in logarithmic time).
fn contains_sorted<T: Ord>(list: &[T], item: &T) -> bool {
    list.binary_search(item).is_ok()
}

/// Adds `item` to the sorted `list` unless it is there already.
fn insert_sorted<T: Ord>(list: &mut Vec<T>, item: T) {
    if let Err(at) = list.binary_search(&item) {
        list.insert(at, item);
    }
}
