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
//! # Callers
//!
//! A caller may submit one id again, through any controller, before or
//! after it ended. Every copy names the controller it came from
//! ([`Input::Activation::reply_to`]), and under [`Rule::AnswerEveryCopy`]
//! the scheduler owes the outcome to every controller a copy named
//! ([`Scheduler::askers`]): a copy of one it holds adds its controller, a
//! copy of one it settled is answered with the outcome it keeps
//! ([`Scheduler::settled`]), and a controller's copy of one it forwarded
//! joins the forward (one [`Forward`] per controller, to the same peer)
//! or, once that is over, goes to the peer that took it in, which answers
//! from memory; if that peer is gone, the caller is told it ended
//! ([`Outcome::Forgotten`]).
//! What it keeps lasts [`Config::remember_for`], and as long as this run
//! of it: a copy that finds no memory of its activation is a new one.
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
//! Under [`Rule::MayHaveRun`], a copy sent again after an earlier one was
//! lost with a scheduler run that stopped says so
//! ([`Input::Activation::may_have_run`]); one such that fails past its
//! deadline ends as [`Outcome::Ambiguous`]: not run again, and whether it
//! ran before is not known.
//!
//! # Keys no steadfast node wrote
//!
//! A claim or a lookup may find under an action's key a value no steadfast
//! node wrote, or etcd may refuse the scheduler access to the key
//! ([`ClaimResult::Unreadable`], [`Input::ResolvedUnreadable`]): the
//! scheduler cannot read the queue's owner from it. Under
//! [`Rule::RefuseUnreadable`] the scheduler answers the calls waiting on it
//! with [`Outcome::Unrouted`], which it does not remember: a copy that
//! comes once the key is deleted is taken in anew.
//!
//! [`Rule::RefuseUnreadable`]: super::Rule::RefuseUnreadable
//! [`Outcome::Unrouted`]: super::Outcome::Unrouted
//! [`ExecutionFailure::Timeout`]: super::ExecutionFailure::Timeout
//! [`FailReason::PastDeadline`]: super::FailReason::PastDeadline
//! [`Rule::AnswerEveryCopy`]: super::Rule::AnswerEveryCopy
//! [`Outcome::Forgotten`]: super::Outcome::Forgotten
//! [`Rule::Deadline`]: super::Rule::Deadline
//! [`Rule::ExecutionTimeout`]: super::Rule::ExecutionTimeout
//! [`Rule::FenceCopies`]: super::Rule::FenceCopies
//! [`Rule::MayHaveRun`]: super::Rule::MayHaveRun
//! [`Outcome::Ambiguous`]: super::Outcome::Ambiguous

mod arrivals;
mod deadlines;
mod executions;
mod forwarding;
mod io;
mod lease;
mod leaving;
mod outcomes;
mod queues;

pub use forwarding::{Forward, Forwarded};
pub use io::{ClaimResult, Effect, Input};
pub use lease::LeaseState;
pub use leaving::Phase;
pub use outcomes::Remembered;
pub use queues::{Endpoint, Queue};

use serde::{Deserialize, Serialize};

use crate::leasequeue::{contains_sorted, insert_sorted, Domain, Outcome, Rules};

use arrivals::Arrival;

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
    ///
    /// [`ExecutionFailure::Timeout`]: super::ExecutionFailure::Timeout
    /// [`Rule::ExecutionTimeout`]: super::Rule::ExecutionTimeout
    #[serde(default)]
    pub execute_for: Option<D::Duration>,
    /// Under [`Rule::PresumePeerGone`], how long the member key of a peer
    /// it forwarded an activation to may stay out of its sight, counted in
    /// etcd's time, before the forward is taken back as bounced. It should
    /// outlast the longest a live peer's key can stay gone (its lease's
    /// TTL, an election, and the time it takes to register again), or an
    /// activation it runs may run again elsewhere. (Absent in a trace
    /// written before it existed: zero.)
    ///
    /// [`Rule::PresumePeerGone`]: super::Rule::PresumePeerGone
    #[serde(default)]
    pub presume_gone_after: D::Duration,
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
    /// The controllers owed the outcome of each activation it holds
    /// (waiting, looked up or running), sorted: the one its first copy
    /// named, and under [`Rule::AnswerEveryCopy`] every other a copy named.
    ///
    /// [`Rule::AnswerEveryCopy`]: super::Rule::AnswerEveryCopy
    pub askers: Vec<(D::Activation, D::Controller)>,
    /// Under [`Rule::ExecutionTimeout`], how long each running activation
    /// may still run, sorted by id (zero: past its timeout); counted down
    /// as time passes, dropped when it settles.
    ///
    /// [`Rule::ExecutionTimeout`]: super::Rule::ExecutionTimeout
    pub timeouts: Vec<(D::Activation, D::Duration)>,
    /// How long until the deadline of each activation it holds or forwards
    /// that has one, sorted by id (zero: past it); counted down as time
    /// passes, dropped when the activation starts or settles here.
    pub deadlines: Vec<(D::Activation, D::Duration)>,
    /// Activations it forwarded and the peer has not acknowledged, one
    /// copy for each controller owed the outcome, sorted by activation and
    /// controller: sent again at every wake-up and retry.
    pub forwarding: Vec<Forward<D>>,
    /// Outcomes it reported and their controllers have not confirmed,
    /// sorted: sent again at every wake-up and retry.
    pub reporting: Vec<(D::Activation, D::Controller, Outcome)>,
    /// Activations it settled and how each ended, sorted by activation, so
    /// that a copy delivered again is only acknowledged, or answered with
    /// its outcome ([`Rule::AnswerEveryCopy`]).
    ///
    /// [`Rule::AnswerEveryCopy`]: super::Rule::AnswerEveryCopy
    pub settled: Vec<(D::Activation, Outcome)>,
    /// Activations it forwarded and where, sorted by activation, so that a
    /// copy from a controller goes to the peer (or without
    /// [`Rule::AnswerEveryCopy`] is only acknowledged), while one a peer
    /// sends back is taken in.
    ///
    /// [`Rule::AnswerEveryCopy`]: super::Rule::AnswerEveryCopy
    pub forwarded: Vec<Forwarded<D>>,
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
    /// Under [`Rule::MayHaveRun`], the activations it holds or forwards
    /// that may have run before, sorted: a copy said so, or a forward of
    /// it bounced off a peer that stopped. Dropped when it settles here.
    ///
    /// [`Rule::MayHaveRun`]: super::Rule::MayHaveRun
    pub may_have_run: Vec<D::Activation>,
    /// Under [`Rule::PresumePeerGone`], the highest raft term (the number
    /// of etcd's leader's term) a lookup of a peer's member key carried;
    /// 0 before the first.
    ///
    /// [`Rule::PresumePeerGone`]: super::Rule::PresumePeerGone
    #[serde(default)]
    pub term: u64,
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
            askers: Vec::new(),
            timeouts: Vec::new(),
            deadlines: Vec::new(),
            forwarding: Vec::new(),
            reporting: Vec::new(),
            settled: Vec::new(),
            forwarded: Vec::new(),
            clock: D::Duration::default(),
            forgetting: std::collections::VecDeque::new(),
            retried: Vec::new(),
            may_have_run: Vec::new(),
            term: 0,
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
    ///
    /// [`Rule::Fence`]: super::Rule::Fence
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
    /// it, a forward or a report of it is not acknowledged yet, or it
    /// remembers how it ended (a later copy is answered with that). A
    /// runtime keeps what the activation carries (its payload, its result)
    /// while this is so.
    pub fn mentions(&self, id: &D::Activation) -> bool {
        self.holds(id)
            || self.forwarding.iter().any(|f| f.id == *id)
            || self.reporting.iter().any(|(r, _, _)| r == id)
            || self.outcome_of(id).is_some()
    }

    /// Whether it holds no activation at all.
    fn holds_none(&self) -> bool {
        self.waiting.is_empty() && self.resolving.is_empty() && self.running.is_empty()
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
            Input::Revoked { lease } => self.revoked(config, lease, &mut out),
            Input::Claimed {
                action,
                lease,
                result,
            } => self.claimed(config, action, lease, result, &mut out),
            Input::Deleted { action } => self.deleted(action, &mut out),
            Input::Resolved { id, action, key } => self.resolved(config, id, action, key, &mut out),
            Input::ResolvedUnreadable {
                id, action, why, ..
            } => self.resolved_unreadable(config, id, action, why, &mut out),
            Input::MemberFound {
                scheduler,
                incarnation,
                term,
                ..
            } => self.member_found(config.rules, &scheduler, incarnation, term),
            Input::Activation {
                id,
                action,
                forwarded,
                incarnation,
                left,
                reply_to,
                may_have_run,
            } => {
                let arrival = Arrival {
                    reply_to,
                    forwarded,
                    incarnation,
                    left,
                    may_have_run,
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
            } => self.bounced(config, id, to, incarnation, &mut out),
            Input::ForwardAcked { id, from, reply_to } => {
                self.forward_acked(config.rules, id, from, reply_to, &mut out)
            }
            Input::ReportAcked { id, from } => {
                self.reporting
                    .retain(|(r, to, _)| *r != id || from.as_ref().is_some_and(|f| f != to));
            }
            Input::ReportBounced { id, to } => {
                self.reporting.retain(|(r, c, _)| (r, c) != (&id, &to))
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
                self.drop_memory(memory, &id);
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
        self.presume_peers_gone(config, out);
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
            .filter(|(id, _, _)| !settled_now.contains(id));
        out.extend(reports.map(|(id, to, outcome)| Effect::Report {
            id: id.clone(),
            to: to.clone(),
            outcome: *outcome,
        }));
    }
}
