//! `leasequeue`: per-action queues owned by schedulers under etcd leases and
//! routed by controllers (OpenWhisk's new scheduler), and the fix for
//! OpenWhisk #5286.
//!
//! - [`Domain`]: the types the roles are written over.
//! - [`etcd`]: etcd as the protocol sees it.
//! - [`scheduler`] and [`controller`]: the two roles' transition functions.
//! - [`model`]: the stateright model of their world, its properties and
//!   fairness, and its scenarios.

pub mod controller;
pub mod etcd;
pub mod model;
pub mod scheduler;
pub mod trace;

#[cfg(test)]
mod tests;

use std::fmt::Debug;
use std::hash::Hash;

use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};

/// What an identifier must be: compared, ordered (roles keep sorted lists),
/// hashed, and written to and read from a trace.
pub trait Id:
    Clone + Debug + PartialEq + Eq + Ord + Hash + Send + Sync + Serialize + DeserializeOwned + 'static
{
}

impl<T> Id for T where
    T: Clone
        + Debug
        + PartialEq
        + Eq
        + Ord
        + Hash
        + Send
        + Sync
        + Serialize
        + DeserializeOwned
        + 'static
{
}

/// The types the scheduler and the controller are written over. The model
/// instantiates them with small numbers, so that its states stay few; a
/// runtime with real ones: action and activation names, scheduler
/// addresses, and etcd's own `i64` lease ids and revisions.
pub trait Domain:
    Clone + Copy + Debug + Default + PartialEq + Eq + PartialOrd + Ord + Hash + Send + Sync + 'static
{
    /// An action: the unit that has a queue and an endpoint key.
    type Action: Id;
    /// A scheduler.
    type Scheduler: Id;
    /// A controller, by where it listens: the outcome of what it sent goes
    /// there.
    type Controller: Id;
    /// An activation: one invocation of an action.
    type Activation: Id;
    /// An etcd lease.
    type Lease: Id;
    /// One run of a scheduler process, from its start to its stop or
    /// crash: a restarted scheduler is another incarnation of the same
    /// scheduler, and remembers nothing of the ones before it. Written in
    /// its member key and in the endpoint keys it creates, so that a copy
    /// of an activation is addressed to the incarnation it is meant for.
    type Incarnation: Id + Copy;
    /// An etcd revision.
    type Revision: Id + Copy;
    /// A span of time: the model counts ticks, a runtime milliseconds. The
    /// roles never read a clock; every input comes with the time elapsed
    /// since the one before, and they keep what is left of each deadline.
    type Duration: Id + Copy + Default + std::ops::Add<Output = Self::Duration>;

    /// The revision after `rev`.
    fn next_revision(rev: Self::Revision) -> Self::Revision;

    /// `a - b`, or zero when `b` is not less than `a`.
    fn saturating_sub(a: Self::Duration, b: Self::Duration) -> Self::Duration;

    /// The weight of `scheduler` for a new queue of `action`, the same in
    /// every process (a stable hash of `seed` and both names): a controller
    /// places the queue on the live member of highest weight (rendezvous
    /// hashing). A member that joins so takes only the actions it now
    /// weighs most for, and moves no other queue; one that leaves moves
    /// only its own.
    fn placement(seed: u64, action: &Self::Action, scheduler: &Self::Scheduler) -> u64;
}

/// Why a node cannot read the owner of an action's queue from its endpoint
/// key: etcd's answer, final until an operator acts.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub enum KeyFault {
    /// The key holds a value no steadfast node wrote (another system's
    /// under the same prefix, or one edited by hand): delete it or put it
    /// right.
    ForeignValue,
    /// etcd refuses the node access to the key (its user lacks the
    /// permission): grant it.
    AccessDenied,
}

impl KeyFault {
    /// What an operator does to put it right.
    pub fn remedy(self) -> &'static str {
        match self {
            KeyFault::ForeignValue => "delete the key or put it right",
            KeyFault::AccessDenied => "grant the nodes' etcd users access to the key",
        }
    }
}

impl std::fmt::Display for KeyFault {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            KeyFault::ForeignValue => "holds a value no steadfast node wrote",
            KeyFault::AccessDenied => "is one etcd refuses a node access to",
        })
    }
}

/// Why an activation failed for good: a named reason a caller can match on,
/// which reads as the words OpenWhisk's users see.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub enum FailReason {
    /// A controller could not reach etcd to route the activation, or knew
    /// no live scheduler to place its queue on (OpenWhisk: "no scheduler
    /// endpoint available").
    NoSchedulerEndpoint,
    /// A scheduler without a queue for the action found no endpoint key for
    /// it (#5286: "failed to get the queue endpoint").
    NoQueueEndpoint,
    /// Its deadline passed before a scheduler started it (OpenWhisk's
    /// `max-scheduling-time`): it did not run, and will not.
    PastDeadline,
}

impl FailReason {
    /// The words the user sees.
    pub fn message(self) -> &'static str {
        match self {
            FailReason::NoSchedulerEndpoint => "no scheduler endpoint available",
            FailReason::NoQueueEndpoint => "failed to get the queue endpoint",
            FailReason::PastDeadline => "not started by its deadline",
        }
    }
}

impl std::fmt::Display for FailReason {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.message())
    }
}

/// Why an execution that started did not finish with a result: the
/// activation ran (or began to), and ended without one.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub enum ExecutionFailure {
    /// The executor returned an error (a runtime carries its message
    /// alongside).
    Error,
    /// The executor panicked (a runtime carries the panic's message
    /// alongside).
    Panic,
    /// The execution ran past the scheduler's execution timeout
    /// (`scheduler::Config::execute_for`): the scheduler settled it and
    /// asked for it to be cancelled.
    Timeout,
}

impl ExecutionFailure {
    /// The words the user sees.
    pub fn message(self) -> &'static str {
        match self {
            ExecutionFailure::Error => "the executor returned an error",
            ExecutionFailure::Panic => "the executor panicked",
            ExecutionFailure::Timeout => "the execution ran past its timeout",
        }
    }
}

impl std::fmt::Display for ExecutionFailure {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.message())
    }
}

/// How an activation ended, as its caller is told: the scheduler that
/// settled it reports this to the controller it was submitted to, and the
/// controller resolves the submission with it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub enum Outcome {
    /// It was executed (a runtime carries what the action returned
    /// alongside).
    Executed,
    /// It started, and its execution ended without a result, for this
    /// reason: it is not run again.
    ExecutionFailed(ExecutionFailure),
    /// It failed for good without running, for this reason.
    Failed(FailReason),
    /// It ended before, and how is no longer known: a caller asked again,
    /// and the scheduler that settled it is gone, with what it knew. It is
    /// not run again.
    Forgotten,
    /// It was not run again, for this reason, and whether it ran is not
    /// known: an earlier copy reached a scheduler that stopped (crashed or
    /// left) without acknowledging it, and may have run it first
    /// ([`Rule::MayHaveRun`]).
    Ambiguous(FailReason),
    /// This call could not be routed, and did not run through it: no
    /// owner of its queue can be read from its action's endpoint key, for
    /// the reason `why` names ([`Rule::RefuseUnreadable`]). It says nothing
    /// of another call of the same id (whose queue owner nobody can find
    /// while the key is unreadable), so it is no outcome of the activation
    /// and is not remembered: once the key is put right (or access is
    /// granted), a call under the same id is routed, and runs it unless it
    /// ran.
    Unrouted {
        /// An earlier copy of this call reached a scheduler that stopped
        /// without acknowledging it, and may have run it
        /// ([`Rule::MayHaveRun`]).
        may_have_run: bool,
        /// Why the key could not be read.
        why: KeyFault,
    },
}

impl Outcome {
    /// Whether it says the activation ran (or began to).
    pub fn ran(self) -> bool {
        match self {
            Outcome::Executed | Outcome::ExecutionFailed(_) => true,
            Outcome::Failed(_)
            | Outcome::Forgotten
            | Outcome::Ambiguous(_)
            | Outcome::Unrouted { .. } => false,
        }
    }

    /// Whether it ends the activation for every caller, and is kept: all
    /// but [`Outcome::Unrouted`], which ends only the call it answers.
    pub fn ends_the_activation(self) -> bool {
        !matches!(self, Outcome::Unrouted { .. })
    }

    /// Whether it tells how the activation ended: not that it ended, how
    /// no longer known ([`Outcome::Forgotten`]), nor that a call was not
    /// routed ([`Outcome::Unrouted`]). Every caller told one is told the
    /// same.
    pub fn tells_how_it_ended(self) -> bool {
        self.ends_the_activation() && self != Outcome::Forgotten
    }
}

/// One rule the roles may follow, by name, so that a test can take one
/// away from the steadfast rules and show which property then fails.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum Rule {
    /// Work is handed out only while the lease is valid: the send time of
    /// the last keepalive etcd confirmed, plus the TTL it confirmed, less a
    /// margin for clock drift. Without it, a scheduler serves whenever it
    /// holds a queue.
    Fence,
    /// etcd saying the lease is gone (a keepalive answered with TTL 0, a
    /// claim refused for want of the lease) is lease loss, not success.
    TtlZeroIsLoss,
    /// A scheduler without a queue for an activation elects itself by
    /// create-if-absent, or forwards to the winner, instead of failing it.
    SelfElection,
    /// A retiring queue deletes its key only if it is still the key it
    /// created (compared on the key's create revision: a key deleted and
    /// created again, even by the same scheduler under the same lease, is
    /// another key).
    ConditionalDelete,
    /// A scheduler ignores an activation it already holds or has settled
    /// (delivery is at least once).
    Deduplicate,
    /// An activation is done with for its sender only once it ended: a
    /// scheduler acknowledges it only once it is settled (executed, failed,
    /// or forwarded and taken in by the peer), not on receipt, and a
    /// controller sends it again until it learns how it ended (or the copy
    /// bounces), whatever acknowledgements it hears: one held up in the
    /// network may be of an earlier submission of the same id. Without it,
    /// an acknowledgement on receipt, or a late one, stops the copy, and a
    /// crash then leaves its caller waiting for ever.
    AckAtSettlement,
    /// A controller that cannot reach etcd, or knows no live scheduler to
    /// place a new queue on, keeps the activation and looks it up again,
    /// instead of failing it.
    Park,
    /// A restarted watch resumes from the next revision it wanted.
    ResumeWatch,
    /// A watch whose revision was compacted away re-lists.
    Relist,
    /// A controller waiting for a watch to start takes the first that
    /// starts of those it asked for since (it asks for another at every
    /// wake-up). Without it, only the last one asked for counts: when etcd
    /// takes longer than a wake-up to open a watch, every opening arrives
    /// too late, and the controller never watches again.
    FirstWatch,
    /// A controller takes in every event of a watch response (a lease's
    /// loss deletes all its keys in one revision).
    WholeResponses,
    /// An activation that bounced (nothing listens at its scheduler's
    /// address any more: the scheduler is gone) is routed again, from a
    /// fresh lookup at the next wake-up, by the controller that sent it or
    /// the scheduler that forwarded it, instead of being sent to the same
    /// address again.
    Reroute,
    /// A scheduler takes in only a copy of an activation addressed to its
    /// own incarnation, and refuses (to the sender, as a bounce) one
    /// addressed to an earlier run of itself: it could have executed and
    /// acknowledged that activation before it crashed, and remembers
    /// nothing of it now.
    FenceCopies,
    /// A scheduler starts an activation only before its deadline, and fails
    /// one whose deadline passed while it waited (for a lease, an election
    /// or a lookup) with [`FailReason::PastDeadline`]. Without it, the
    /// deadline is checked only when the activation arrives, as OpenWhisk
    /// does, and one that waited past it runs all the same.
    Deadline,
    /// A scheduler gives an execution at most its execution timeout
    /// (`scheduler::Config::execute_for`): one still running then is
    /// settled as failed ([`ExecutionFailure::Timeout`]) and cancelled.
    /// Without it, an executor that hangs holds its activation, and a
    /// drain, for ever.
    ExecutionTimeout,
    /// A scheduler tells every controller a copy of an activation names
    /// how it ended: a caller may submit one id again, through any
    /// controller, before or after it ended. A copy of one it settled is
    /// answered with the outcome it keeps ([`Config::remember_for`]); one
    /// it holds adds its controller to those told at settlement; one it
    /// forwarded is forwarded too. Without it, only the first copy's
    /// controller is told, and the others wait for ever.
    ///
    /// [`Config::remember_for`]: scheduler::Config::remember_for
    AnswerEveryCopy,
    /// A copy of an activation sent again after an earlier copy was lost
    /// with a scheduler run that stopped without acknowledging it (the
    /// earlier copy bounced, or the scheduler's member key now names
    /// another run) is marked as one that may have run, by the controller
    /// or the scheduler that sends it; a scheduler that fails a marked
    /// copy, its deadline past, says it may have run
    /// ([`Outcome::Ambiguous`]). Without it, a caller may be told that an
    /// activation that ran before a crash never did.
    MayHaveRun,
    /// A controller presumes gone a scheduler whose member key it has not
    /// seen for [`controller::Config::presume_gone_after`] (its lease
    /// expired and it did not come back): every copy sent to it and not
    /// acknowledged is routed again, from a fresh lookup, as if it had
    /// bounced. Without it, a scheduler that vanished without refusing (a
    /// deleted pod's address black-holes) is sent the copies for ever.
    PresumeGone,
    /// Under [`Rule::PresumeGone`], a member key's absence is counted in
    /// etcd's time, as etcd counts a lease's: only at wake-ups by which
    /// etcd had answered the controller's watch since the wake-up before
    /// (while etcd answers it nothing, it may have no leader, and the
    /// scheduler cannot put its key back either), and from zero again
    /// once an answer carries a new leader's raft term (as a new leader
    /// gives every lease its full time again). Without it, an outage that
    /// expires a live scheduler's lease and a leader loss after it keep
    /// the key gone past the bound while the scheduler still runs an
    /// activation, which is then run again elsewhere.
    EtcdTime,
    /// A scheduler presumes gone a peer it forwarded an activation to that
    /// has not acknowledged it, once it has not seen the peer's member key
    /// for `scheduler::Config::presume_gone_after`: it looks the key up at
    /// every wake-up, counts its absence only at wake-ups by which etcd
    /// had answered a lookup since the one before, and from zero again
    /// once an answer carries a new leader's raft term (as
    /// [`Rule::EtcdTime`] counts a controller's). The forward is then
    /// taken back as if it had bounced. Without it, a forward to a peer
    /// that vanished without refusing (a deleted pod's address
    /// black-holes) is sent for ever, and its controller, which hears
    /// from the live forwarder, never routes it again.
    PresumePeerGone,
    /// An action whose endpoint key holds a value no steadfast node wrote
    /// (another system's, or one edited by hand) has no owner anyone can
    /// read: a controller whose lookup finds such a value, and a scheduler
    /// whose claim or lookup does, answer the call with
    /// [`Outcome::Unrouted`], not remembered, so that a call after the
    /// key is put right runs. Without it, they look the key up again at
    /// every wake-up, and a caller waits until someone deletes the key.
    RefuseUnreadable,
}

impl crate::rule_set::Rule for Rule {
    const ALL: &'static [Rule] = &[
        Rule::Fence,
        Rule::TtlZeroIsLoss,
        Rule::SelfElection,
        Rule::ConditionalDelete,
        Rule::Deduplicate,
        Rule::AckAtSettlement,
        Rule::Park,
        Rule::ResumeWatch,
        Rule::Relist,
        Rule::FirstWatch,
        Rule::WholeResponses,
        Rule::Reroute,
        Rule::FenceCopies,
        Rule::Deadline,
        Rule::ExecutionTimeout,
        Rule::AnswerEveryCopy,
        Rule::MayHaveRun,
        Rule::PresumeGone,
        Rule::EtcdTime,
        Rule::PresumePeerGone,
        Rule::RefuseUnreadable,
    ];
}

/// The rules the roles follow: a variant's, or one of them with a rule
/// taken away.
pub type Rules = crate::rule_set::RuleSet<Rule>;

impl From<Variant> for Rules {
    /// Steadfast follows every rule; OpenWhisk only takes in whole watch
    /// responses (its watch handler reads every event).
    fn from(variant: Variant) -> Self {
        match variant {
            Variant::Steadfast => Rules::all(),
            Variant::OpenWhisk => Rules::from(vec![Rule::WholeResponses]),
        }
    }
}

/// Which rules the roles follow.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum Variant {
    /// OpenWhisk's rules (#5286): the endpoint cache is fed only by watch
    /// events and never re-listed; a restarted watch starts from "now"; a
    /// scheduler without a queue fails an activation whose key is missing; a
    /// keepalive answer of TTL 0 counts as success; a queue serves whatever
    /// became of its lease; deletes are unconditional; activations are
    /// committed on receipt and not deduplicated; an activation's deadline
    /// is checked only when it arrives.
    OpenWhisk,
    /// Every [`Rule`]: work handed out only while the lease is valid by the
    /// scheduler's own clock; etcd's "no such lease" taken as loss, the old
    /// lease revoked and a new one granted; a scheduler without a queue
    /// elects itself by create-if-absent, or forwards to the winner; deletes
    /// conditioned on ownership; duplicates ignored and activations
    /// acknowledged at settlement, and sent until their outcome is known;
    /// controllers park what they cannot route,
    /// resume watches from the next revision, re-list after compaction,
    /// take the first watch that starts and take in whole watch responses; activations sent to a scheduler that
    /// is gone are routed again; a restarted scheduler refuses copies
    /// addressed to its run before the crash; nothing starts past its
    /// deadline; no execution runs past its timeout; every controller a
    /// copy of an activation names is told how it ended; an activation
    /// that may have run before a crash is never said not to have; a
    /// scheduler whose member key stays gone, counted in etcd's time, is
    /// presumed gone, by controllers and by the schedulers that forwarded
    /// to it; a call whose action's key is unreadable is answered so.
    Steadfast,
}

/// Whether the sorted `list` holds `item` (the lists a runtime lets grow,
/// such as the settled activations, are searched in logarithmic time).
pub(crate) fn contains_sorted<T: Ord>(list: &[T], item: &T) -> bool {
    list.binary_search(item).is_ok()
}

/// Adds `item` to the sorted `list` unless it is there already.
pub(crate) fn insert_sorted<T: Ord>(list: &mut Vec<T>, item: T) {
    if let Err(at) = list.binary_search(&item) {
        list.insert(at, item);
    }
}
