//! What the world tells the scheduler, and what it asks of the world.

use serde::{Deserialize, Serialize};

use crate::leasequeue::{Domain, ExecutionFailure, KeyFault, Outcome};

use super::Endpoint;

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
    /// No owner can be read from the key, for good: it holds a value no
    /// steadfast node wrote, or etcd refused this node access to it
    /// (`why`).
    Unreadable {
        /// Why no owner could be read.
        why: KeyFault,
        /// etcd's words, or what is wrong with the value.
        reason: String,
    },
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
    /// A lookup of `action`'s key for activation `id` could read no owner
    /// from it, for good: the key holds a value no steadfast node wrote,
    /// or etcd refused this node access to it (`why`).
    ResolvedUnreadable {
        /// The activation.
        id: D::Activation,
        /// Its action.
        action: D::Action,
        /// Why no owner could be read.
        why: KeyFault,
        /// etcd's words, or what is wrong with the value.
        reason: String,
    },
    /// A lookup of peer `scheduler`'s member key answered
    /// ([`Effect::FindMember`]).
    MemberFound {
        /// The peer.
        scheduler: D::Scheduler,
        /// The run its member key names; `None`: it has no member key, or
        /// one holding what no steadfast node wrote (`unreadable`), which
        /// names no run of it: either way the peer is out of sight.
        incarnation: Option<D::Incarnation>,
        /// What is wrong with the key's value, if no steadfast node wrote
        /// it. (Absent in a trace written before it existed: `None`.)
        #[serde(default, skip_serializing_if = "Option::is_none")]
        unreadable: Option<String>,
        /// The raft term of etcd's leader that answered: a higher one than
        /// any before restarts the count of every peer's absence (a new
        /// leader gives every lease its full TTL again).
        term: u64,
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
        /// The controller that sent this copy, or for a forwarded one, the
        /// controller the forward names: where its outcome goes. Under
        /// [`Rule::AnswerEveryCopy`] every controller a copy names is told
        /// the outcome (a caller may submit one id again, through any
        /// controller, before or after it ended); without it, only the
        /// first.
        ///
        /// [`Rule::AnswerEveryCopy`]: crate::leasequeue::Rule::AnswerEveryCopy
        reply_to: D::Controller,
        /// An earlier copy of it reached a scheduler run that stopped
        /// without acknowledging it, and may have run it
        /// ([`Rule::MayHaveRun`]): failed past its deadline, it is
        /// [`Outcome::Ambiguous`], not [`Outcome::Failed`].
        ///
        /// [`Rule::MayHaveRun`]: crate::leasequeue::Rule::MayHaveRun
        #[serde(default, skip_serializing_if = "std::ops::Not::not")]
        may_have_run: bool,
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
    /// forwarded to it for controller `reply_to`: it stops sending that
    /// copy. An acknowledgement from another peer than the one it was last
    /// forwarded to changes nothing.
    ForwardAcked {
        /// The activation.
        id: D::Activation,
        /// The peer.
        from: D::Scheduler,
        /// The controller the acknowledged copy named; `None`: the peer did
        /// not say (a node of an earlier version), and every copy forwarded
        /// to it is acknowledged.
        #[serde(default)]
        reply_to: Option<D::Controller>,
    },
    /// Controller `from` confirmed the report of activation `id`: it stops
    /// sending it there.
    ReportAcked {
        /// The activation.
        id: D::Activation,
        /// The controller; `None`: it did not say (a node of an earlier
        /// version), and every report of `id` is confirmed.
        #[serde(default)]
        from: Option<D::Controller>,
    },
    /// The report of activation `id` to controller `to` could not be sent:
    /// nothing listens at its address any more (the controller, and the
    /// submission with it, is gone). It is not sent there again.
    ReportBounced {
        /// The activation.
        id: D::Activation,
        /// The controller.
        to: D::Controller,
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
    ///
    /// [`Config::idle_after`]: super::Config::idle_after
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
    ///
    /// [`Config::remember_for`]: super::Config::remember_for
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
    /// [`Input::Resolved`] (or [`Input::ResolvedUnreadable`]).
    Resolve {
        /// The activation.
        id: D::Activation,
        /// Its action.
        action: D::Action,
    },
    /// Look up peer `scheduler`'s member key: it forwarded an activation
    /// there that the peer has not acknowledged. Answer with
    /// [`Input::MemberFound`].
    FindMember {
        /// The peer.
        scheduler: D::Scheduler,
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
    ///
    /// [`Config::execute_for`]: super::Config::execute_for
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
        /// The controller its outcome goes to ([`Input::Activation::reply_to`]).
        reply_to: D::Controller,
        /// It may have run before ([`Input::Activation::may_have_run`]);
        /// absent in a trace written before it existed: `false`.
        #[serde(default, skip_serializing_if = "std::ops::Not::not")]
        may_have_run: bool,
    },
    /// Tell controller `to` how activation `id` ended (again at every
    /// wake-up and retry until it confirms); it resolves its submission of
    /// `id` with it.
    Report {
        /// The activation.
        id: D::Activation,
        /// The controller: one that sent a copy of it (or had one
        /// forwarded).
        to: D::Controller,
        /// How it ended.
        outcome: Outcome,
    },
    /// Acknowledge every copy of activation `id` delivered and not
    /// acknowledged yet, each to the node that sent it (a controller, or a
    /// peer that forwarded it, naming the controller the copy named): it
    /// stops sending it.
    Ack {
        /// The activation.
        id: D::Activation,
    },
    /// Refuse the copy of activation `id` just delivered, to the node that
    /// sent it (a controller, or a peer that forwarded it), which takes it
    /// as a bounce: it was addressed to another incarnation
    /// ([`Rule::FenceCopies`]). It is not taken in.
    ///
    /// [`Rule::FenceCopies`]: crate::leasequeue::Rule::FenceCopies
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
