//! The stateright model of schedulers and controllers around etcd: an
//! explicit discrete clock, leases that run down only while etcd has a
//! leader, per-client connectivity cut by an outage, requests and their
//! replies as separate steps, and every fault of the real world as a
//! budget: replies lost, requests held up past the requester's retries,
//! messages delivered twice or out of order, watches that stall without an
//! error, compaction, leader loss, clock drift, scheduler crashes (also
//! between executing an activation and acknowledging it), and queues that
//! retire when idle.
//!
//! Every action that touches a role calls its `step`; the model adds only
//! the world around them, and ghost state that the properties read.
//!
//! The world starts from a running cluster: every scheduler holds a lease
//! and is a member (its member key put under the lease), and every
//! controller has listed the members. From there a lease lost takes its
//! scheduler's member key with its endpoint keys, and the controllers place
//! new queues among the members left.
//!
//! # Time
//!
//! A tick is the keepalive period. At every tick every role is woken with
//! one tick elapsed: every period of the roles is one tick here, so that is
//! exactly when the `WakeIn` each role armed is due, and the wake-up sends
//! all a retry timer (never due before it) would (docs/leasequeue.md, "Why
//! waking every role at every tick honours their timers"). Absent a fault, etcd answers
//! within a tick: the clock waits until every request it can answer has
//! been answered and every reply delivered. A delay fault lets one request
//! miss that bound and be applied later, after the requester's retries.

mod etcd;
mod ghost;
mod reachable;
pub mod scenarios;
mod world;

use serde::{Deserialize, Serialize};
use stateright::{Model, Property};

pub use ghost::Ghost;
use ghost::{
    all_submitted_executed, any_pending, probe_state, routed_to_departed, routing_restored,
};
pub(crate) use world::renumber;
pub use world::{
    ActivationState, Answer, AnswerFault, AnswerKind, Bounds, Client, Faults, Late, Message,
    Placement, Stream, World, PRESUME_GONE_AFTER,
};

use super::controller::{self, Controller, WatchId};
use super::etcd::Etcd;
use super::scheduler::{self, Phase, Scheduler};
use super::{Domain, ExecutionFailure, Rule, Rules};
use crate::temporal::{Fairness, Liveness, TemporalModel};

/// The model's domain: small numbers for every identifier and ticks for
/// time, so that its states stay few.
#[derive(
    Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize,
)]
pub struct Small;

impl Domain for Small {
    type Action = u8;
    type Scheduler = u8;
    type Controller = u8;
    type Activation = u8;
    type Lease = u8;
    type Incarnation = u8;
    type Revision = u32;
    type Duration = u8;

    fn next_revision(rev: u32) -> u32 {
        rev + 1
    }

    fn saturating_sub(a: u8, b: u8) -> u8 {
        a.saturating_sub(b)
    }

    /// Weight 1 for the scheduler numbered `seed`, 0 for every other: the
    /// model passes the member the world chose as the seed
    /// ([`Action::ControllerEtcd`]), so that a controller places a new
    /// queue on any member it knows, standing for every placement policy.
    fn placement(seed: u64, _action: &u8, scheduler: &u8) -> u64 {
        u64::from(u64::from(*scheduler) == seed)
    }
}

/// How far the scheduler's fence stays from etcd's expiry, in ticks: the
/// clock drift the steadfast scheduler assumes.
pub const MARGIN: u8 = 1;

/// A step of the world.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum Action {
    /// Users and faults do nothing now (a stutter step), so that "nothing
    /// more happens" is a behaviour while budgets remain.
    UserIdle,
    /// A user submits the next activation.
    UserSubmit,
    /// A user submits an activation again, under its id, through the
    /// controller the next resubmission names ([`Bounds::retries`]).
    UserRetry,
    /// A user submits the probe activation again (after the faults); users
    /// keep doing so (weak fairness), so a queue that stays broken shows.
    UserProbe,
    /// The outage begins.
    NetworkOutage,
    /// A tick of time: leases run down and every role wakes up.
    ClockTick,
    /// etcd applies a scheduler's oldest request, and the reply reaches it.
    SchedulerEtcd(u8),
    /// etcd applies the oldest request held up in the network; the reply
    /// reaches its scheduler late, after its retries.
    SchedulerLate(u8),
    /// The oldest execution on a scheduler finishes.
    Finish(u8),
    /// The oldest execution on a scheduler ends with the executor's error.
    FinishFailed(u8),
    /// The oldest execution on a scheduler hangs: it never ends.
    ExecutionHang(u8),
    /// etcd answers a controller's oldest request.
    ControllerEtcd {
        /// The controller.
        controller: u8,
        /// Where it places the action's queue if the answer is a lookup
        /// that finds no key: under [`Placement::World`] the world chooses
        /// among the members the controller knows, so that the proof holds
        /// for every placement policy (DESIGN.md, "Membership and
        /// replicas"). `None` where the answer places nothing.
        place_on: Option<u8>,
    },
    /// A controller's watch delivers its next response: one revision.
    WatchDeliver {
        /// The controller.
        controller: u8,
        /// Which of its streams ([`World::streams`]), oldest first.
        stream: u8,
    },
    /// A controller's watch, catching up, delivers every revision it has
    /// not reported in one response (etcd batches them for a watcher that
    /// fell behind, as one resumed from a past revision is).
    WatchCatchUp {
        /// The controller.
        controller: u8,
        /// Which of its streams ([`World::streams`]), oldest first.
        stream: u8,
    },
    /// etcd is slow to open the watch a controller asked for last: the
    /// opening is held until after a tick ([`Bounds::slow_watch_openings`]).
    HoldOpening(u8),
    /// etcd opens the oldest watch it was slow to open for a controller.
    OpenHeld(u8),
    /// The oldest message for this scheduler arrives.
    Deliver(u8),
    /// The second oldest message for this scheduler arrives first.
    DeliverOutOfOrder(u8),
    /// The oldest message in flight is sent twice.
    DuplicateMessage,
    /// The oldest message for this scheduler is lost.
    LoseMessage(u8),
    /// The network holds a fault in store for the next answer of a kind
    /// ([`World::armed`]).
    AnswerFault {
        /// What it does to the answer.
        fault: AnswerFault,
        /// The kind of answer it strikes.
        kind: AnswerKind,
    },
    /// The oldest answer held up in the network arrives.
    DeliverAnswer,
    /// A scheduler's oldest request is held up in the network.
    DelayRequest(u8),
    /// etcd applies a scheduler's oldest request, and the reply is lost.
    LoseReply(u8),
    /// A controller's watch stops delivering, without an error.
    WatchStall {
        /// The controller.
        controller: u8,
        /// Which of its streams ([`World::streams`]), oldest first.
        stream: u8,
    },
    /// etcd compacts its history.
    EtcdCompact,
    /// Another client writes a key outside the endpoint keys.
    EtcdForeignWrite,
    /// Another client puts a value of its own under the endpoint key of
    /// this action, which no scheduler holds ([`Faults::foreign_values`]).
    EtcdForeignValue(u8),
    /// Someone deletes the endpoint key of this action, which holds a
    /// value no steadfast node wrote (an operator puts it right). Nothing
    /// makes anyone do so.
    EtcdPutRight(u8),
    /// An operator takes from a scheduler's user the permission on an
    /// action's endpoint key, which it does not hold ([`Faults::denials`]).
    EtcdDenyAccess {
        /// The scheduler.
        scheduler: u8,
        /// The action.
        action: u8,
    },
    /// An operator grants a scheduler's user the permission on an
    /// action's endpoint key back. Nothing makes anyone do so.
    EtcdGrantAccess {
        /// The scheduler.
        scheduler: u8,
        /// The action.
        action: u8,
    },
    /// etcd loses its leader.
    EtcdLeaderLoss,
    /// etcd elects a leader, which extends every lease.
    EtcdLeaderElected,
    /// etcd's clock ticks once more than the schedulers' do: leases run
    /// down without a keepalive in between.
    EtcdClockAhead,
    /// A scheduler crashes and restarts with nothing.
    SchedulerCrash(u8),
    /// The next scheduler not running yet starts, and joins the cluster.
    SchedulerJoin,
    /// A scheduler stops for good.
    SchedulerDepart(u8),
    /// A scheduler stops for good without a word: its address black-holes.
    SchedulerVanish(u8),
    /// A scheduler is told to drain.
    SchedulerDrain(u8),
    /// The idle timer of a scheduler's queue fires.
    QueueIdle {
        /// The scheduler.
        scheduler: u8,
        /// The action.
        action: u8,
    },
}

impl Action {
    fn is_clock(&self) -> bool {
        matches!(self, Action::ClockTick)
    }

    fn is_probe(&self) -> bool {
        matches!(self, Action::UserProbe)
    }

    fn is_election(&self) -> bool {
        matches!(self, Action::EtcdLeaderElected)
    }

    fn is_etcd_for_scheduler<const S: u8>(&self) -> bool {
        matches!(self, Action::SchedulerEtcd(s) | Action::SchedulerLate(s) if *s == S)
    }

    fn is_finish_on<const S: u8>(&self) -> bool {
        *self == Action::Finish(S)
    }

    fn is_delivery_to<const S: u8>(&self) -> bool {
        *self == Action::Deliver(S)
    }

    fn is_answer_delivery(&self) -> bool {
        *self == Action::DeliverAnswer
    }

    fn is_etcd_for_controller<const C: u8>(&self) -> bool {
        match self {
            Action::ControllerEtcd { controller, .. } => *controller == C,
            Action::OpenHeld(controller) => *controller == C,
            _ => false,
        }
    }

    fn is_watch_of<const C: u8>(&self) -> bool {
        matches!(self, Action::WatchDeliver { controller, .. } if *controller == C)
    }
}

/// The most schedulers and controllers a scenario may have (one fairness
/// class per role and channel, each a plain function).
pub const MAX_ROLES: u8 = 3;

/// The model of one scenario.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct LeaseQueueModel {
    /// Its sizes and bounds.
    pub bounds: Bounds,
    /// A rule of the variant taken away, to show what it is needed for.
    pub without: Option<Rule>,
    /// Check every `sometimes`, also those the bounds give no chance: to
    /// show that each can fail.
    pub every_sometimes: bool,
}

impl LeaseQueueModel {
    /// The same model checking every `sometimes`, also those its bounds
    /// give no chance.
    #[must_use]
    pub fn with_every_sometimes(mut self) -> Self {
        self.every_sometimes = true;
        self
    }

    /// The same model with `rule` taken away from the variant's rules.
    #[must_use]
    pub fn without(mut self, rule: Rule) -> Self {
        self.without = Some(rule);
        self
    }

    /// The rules the roles follow.
    pub(super) fn rules(&self) -> Rules {
        let rules = Rules::from(self.bounds.variant);
        self.without.map_or(rules, |rule| rules.without(rule))
    }

    fn scheduler_config(&self) -> scheduler::Config<Small> {
        scheduler::Config {
            rules: self.rules(),
            ttl: self.bounds.ttl,
            margin: MARGIN,
            wake_every: 1,
            retry_every: 1,
            idle_after: 1,
            // The model's scenarios are short: a scheduler remembers what
            // it settled for as long as it runs (docs/leasequeue.md,
            // "Assumptions").
            remember_for: None,
            execute_for: self.bounds.execute_for,
            presume_gone_after: self.bounds.presume_gone_after,
        }
    }

    /// A controller's configuration; `place_on`: the member chosen for a
    /// new queue, if the step places one (with `None` no member weighs
    /// more than another; `feed_controller_placing` asserts that such a
    /// step places nothing).
    fn controller_config(&self, place_on: Option<u8>) -> controller::Config<Small> {
        controller::Config {
            rules: self.rules(),
            wake_every: 1,
            seed: place_on.map_or(u64::MAX, u64::from),
            presume_gone_after: self.bounds.presume_gone_after,
        }
    }

    /// The world after `action`, as it happened: [`Model::next_state`]
    /// renumbers its keepalives and revisions after it ([`renumber`]).
    /// `None`: `action` is not possible in `w`.
    pub(crate) fn act(&self, w: &World, action: Action) -> Option<World> {
        let mut w = w.clone();
        match action {
            Action::UserIdle => {}
            Action::UserSubmit => {
                let id = w
                    .activations
                    .iter()
                    .position(|a| *a == ActivationState::Unsubmitted)?
                    as u8;
                w.activations[usize::from(id)] = ActivationState::Pending;
                w.due[usize::from(id)] = self.bounds.deadline;
                let (c, action) = self.bounds.submissions[usize::from(id)];
                let deadline = self.bounds.deadline;
                let submit = controller::Input::Submit {
                    id,
                    action,
                    deadline,
                };
                self.feed_controller(&mut w, c, submit);
            }
            Action::UserRetry => {
                let r = w
                    .retries
                    .iter()
                    .position(|a| *a == ActivationState::Unsubmitted)?;
                w.retries[r] = ActivationState::Pending;
                let (c, id) = self.bounds.retries[r];
                let action = self.bounds.submissions[usize::from(id)].1;
                let submit = controller::Input::Submit {
                    id,
                    action,
                    deadline: None,
                };
                self.feed_controller(&mut w, c, submit);
            }
            Action::UserProbe => {
                // A new activation; the model gives it the probe's id again,
                // so every memory of the old one is dropped.
                let id = self.probe()?;
                let i = usize::from(id);
                w.activations[i] = ActivationState::Pending;
                w.ghost.executions[i] = 0;
                w.ghost.failures[i] = 0;
                w.ghost.resolutions[i] = 0;
                w.ghost.excuses[i] = 0;
                for s in self.up(&w) {
                    self.feed_scheduler(&mut w, s, 0, scheduler::Input::Forget { id });
                }
                let submit = controller::Input::Submit {
                    id,
                    action: 0,
                    deadline: None,
                };
                self.feed_controller(&mut w, 0, submit);
            }
            Action::NetworkOutage => {
                w.outages_left -= 1;
                w.outage = self.bounds.outage_ticks;
                let owners = self.bounds.outage_owners.iter();
                let owners = owners.filter_map(|a| w.etcd.get(*a).map(|k| k.owner));
                let owners: Vec<Client> = owners.map(Client::Scheduler).collect();
                for client in self.bounds.outage_clients.iter().chain(&owners) {
                    self.cut_off(&mut w, *client);
                }
            }
            Action::ClockTick => {
                // Progress notifications due arrive within the tick.
                for c in 0..self.bounds.controllers {
                    let watches: Vec<WatchId> =
                        w.streams[usize::from(c)].iter().map(|s| s.watch).collect();
                    for watch in watches {
                        let Some(at) = Self::stream(&w, c, watch) else {
                            continue;
                        };
                        let due = self.watch_response(&w, c, at, false);
                        if let Some(progress @ controller::Input::Progress { .. }) = due {
                            w.streams[usize::from(c)][at].progress_asked = false;
                            self.feed_controller(&mut w, c, progress);
                        }
                    }
                }
                w.etcd.tick();
                if w.outage > 0 {
                    w.outage -= 1;
                    if w.outage == 0 {
                        w.cut.iter_mut().for_each(|c| *c = false);
                    }
                }
                self.count_down_deadlines(&mut w);
                let prompt = Self::keepalives_prompt(&w);
                for s in self.up(&w) {
                    self.feed_scheduler(&mut w, s, 1, scheduler::Input::Wake);
                    if prompt {
                        self.keep_alive_now(&mut w, s);
                    }
                }
                for c in 0..self.bounds.controllers {
                    self.feed_controller(&mut w, c, controller::Input::Wake);
                }
            }
            Action::SchedulerEtcd(s) => self.answer(&mut w, s, 0),
            Action::SchedulerLate(s) => {
                let late = w.late[usize::from(s)].remove(0);
                let reply = self.apply(&mut w, s, late.request);
                if let (Some(reply), false) = (reply, late.orphaned) {
                    if self.reachable(&w, Client::Scheduler(s)) {
                        self.feed_scheduler(&mut w, s, 0, reply);
                    }
                }
            }
            Action::Finish(s) | Action::FinishFailed(s) => {
                let failure = (action == Action::FinishFailed(s)).then(|| {
                    w.left.execution_failures -= 1;
                    ExecutionFailure::Error
                });
                let id = w.running[usize::from(s)].remove(0);
                let input = scheduler::Input::Executed { id, failure };
                self.feed_scheduler(&mut w, s, 0, input);
            }
            Action::ExecutionHang(s) => {
                w.left.hangs -= 1;
                w.running[usize::from(s)].remove(0);
            }
            Action::ControllerEtcd {
                controller,
                place_on,
            } => self.controller_etcd(&mut w, controller, place_on),
            Action::WatchDeliver {
                controller: c,
                stream,
            }
            | Action::WatchCatchUp {
                controller: c,
                stream,
            } => {
                let batched = matches!(action, Action::WatchCatchUp { .. });
                let at = usize::from(stream);
                let input = self.watch_response(&w, c, at, batched)?;
                Self::delivered(&mut w, c, at, &input);
                self.feed_controller(&mut w, c, input);
            }
            Action::HoldOpening(c) => {
                let requests = &mut w.requests[usize::from(c)];
                let at = requests
                    .iter()
                    .rposition(|r| matches!(r, controller::Effect::Watch { .. }))?;
                if let controller::Effect::Watch { id, from } = requests.remove(at) {
                    w.openings[usize::from(c)].push((id, from));
                }
            }
            Action::OpenHeld(c) => {
                let (id, from) = w.openings[usize::from(c)].remove(0);
                let input = Self::open(&mut w, c, id, from);
                self.feed_controller(&mut w, c, input);
            }
            Action::Deliver(s) => {
                let at = Self::message_for(&w, s, 0)?;
                self.deliver(&mut w, at);
            }
            Action::DeliverOutOfOrder(s) => {
                w.left.reorders -= 1;
                let at = Self::message_for(&w, s, 1)?;
                self.deliver(&mut w, at);
            }
            Action::LoseMessage(s) => {
                w.left.lost_messages -= 1;
                let at = Self::message_for(&w, s, 0)?;
                w.messages.remove(at);
            }
            Action::AnswerFault { fault, kind } => {
                let left = match fault {
                    AnswerFault::Lose => &mut w.left.lost_answers,
                    AnswerFault::Delay => &mut w.left.delayed_answers,
                    AnswerFault::Duplicate => &mut w.left.duplicate_answers,
                };
                *left -= 1;
                w.armed = Some((fault, kind));
            }
            Action::DeliverAnswer => {
                let answer = w.answers.remove(0);
                self.hear(&mut w, answer);
            }
            Action::DuplicateMessage => {
                w.left.duplicates -= 1;
                let copy = *w.messages.first()?;
                w.messages.push(copy);
            }
            Action::DelayRequest(s) => {
                w.left.delays -= 1;
                let request = w.outbox[usize::from(s)].remove(0);
                w.late[usize::from(s)].push(Late {
                    request,
                    orphaned: false,
                });
            }
            Action::LoseReply(s) => {
                w.left.lost_replies -= 1;
                let request = w.outbox[usize::from(s)].remove(0);
                self.apply(&mut w, s, request);
            }
            Action::WatchStall {
                controller: c,
                stream,
            } => {
                w.left.stalls -= 1;
                w.streams[usize::from(c)].remove(usize::from(stream));
            }
            Action::EtcdCompact => {
                w.left.compactions -= 1;
                w.etcd.compact();
            }
            Action::EtcdForeignWrite => {
                w.left.foreign_writes -= 1;
                w.etcd.rev += 1;
            }
            Action::EtcdForeignValue(action) => {
                w.left.foreign_values -= 1;
                w.etcd.put_foreign(action);
            }
            Action::EtcdPutRight(action) => {
                w.etcd.delete(action, None);
            }
            Action::EtcdDenyAccess { scheduler, action } => {
                w.left.denials -= 1;
                w.etcd.deny(scheduler, action);
            }
            Action::EtcdGrantAccess { scheduler, action } => {
                w.etcd.allow(scheduler, action);
            }
            Action::EtcdLeaderLoss => {
                w.left.leader_losses -= 1;
                w.etcd.leader = false;
                // Requests wait in vain and their callers' deadlines pass.
                w.outbox.iter_mut().for_each(Vec::clear);
                for requests in &mut w.requests {
                    requests.retain(|r| matches!(r, controller::Effect::Get { .. }));
                }
                w.openings.iter_mut().for_each(Vec::clear);
            }
            Action::EtcdClockAhead => {
                w.left.drift -= 1;
                w.etcd.tick();
            }
            Action::EtcdLeaderElected => w.etcd.promote(),
            Action::SchedulerCrash(s) => {
                w.left.crashes -= 1;
                let i = usize::from(s);
                // What was delivered to it and not acknowledged, its sender
                // (a controller, or a peer that forwarded it) sends again,
                // to the next incarnation, which remembers nothing of it.
                Self::excuse_unacknowledged(&mut w, s);
                w.unacked[i].clear();
                w.outbox[i].clear();
                w.running[i].clear();
                w.late[i].iter_mut().for_each(|l| l.orphaned = true);
                let incarnation = w.schedulers[i].incarnation + 1;
                w.schedulers[i] = Scheduler::new(s, incarnation);
                self.feed_scheduler(&mut w, s, 0, scheduler::Input::Wake);
            }
            Action::SchedulerDepart(s) => {
                w.left.departures -= 1;
                // What it ran and did not acknowledge may run again
                // elsewhere: its sender routes it again.
                Self::excuse_unacknowledged(&mut w, s);
                self.leave(&mut w, s);
            }
            Action::SchedulerVanish(s) => {
                w.left.vanishings -= 1;
                // As a departure, but what is sent to it is lost: its
                // sender hears nothing, and routes it again only once it
                // presumes it gone.
                Self::excuse_unacknowledged(&mut w, s);
                w.silent[usize::from(s)] = true;
                self.leave(&mut w, s);
            }
            Action::SchedulerDrain(s) => {
                w.left.drains -= 1;
                w.ghost.drained_busy |= !w.running[usize::from(s)].is_empty();
                self.feed_scheduler(&mut w, s, 0, scheduler::Input::Drain);
            }
            Action::SchedulerJoin => {
                let s = self.started(&w).end;
                w.left.joins -= 1;
                self.feed_scheduler(&mut w, s, 0, scheduler::Input::Wake);
            }
            Action::QueueIdle { scheduler, action } => {
                w.left.retirements -= 1;
                self.feed_scheduler(&mut w, scheduler, 0, scheduler::Input::Idle { action });
            }
        }
        Self::drop_acknowledged(&mut w);
        self.mark_forgotten(&mut w);
        Some(w)
    }

    /// Whether every caller of activation `id` told how it ended was
    /// told the same (or that it ended, how no longer known).
    fn one_outcome(&self, w: &World, id: u8) -> bool {
        let retried = self.bounds.retries.iter().zip(&w.retries);
        let mut told = retried
            .filter(|((_, r), _)| *r == id)
            .map(|(_, state)| *state)
            .chain([w.activations[usize::from(id)]])
            .filter(|state| state.tells_an_outcome());
        let first = told.next();
        told.all(|state| Some(state) == first)
    }

    fn probe(&self) -> Option<u8> {
        self.bounds.probe.then_some(self.submitted())
    }

    /// How many activations users submit (the probe aside).
    fn submitted(&self) -> u8 {
        self.bounds.submissions.len() as u8
    }
}

impl Model for LeaseQueueModel {
    type State = World;
    type Action = Action;

    fn init_states(&self) -> Vec<World> {
        let b = &self.bounds;
        let etcd = Etcd::new(b.ttl);
        let total = b.submissions.len() + usize::from(b.probe);
        let schedulers = usize::from(b.schedulers);
        let mut w = World {
            schedulers: (0..b.schedulers).map(|s| Scheduler::new(s, 0)).collect(),
            outbox: vec![Vec::new(); schedulers],
            late: vec![Vec::new(); schedulers],
            running: vec![Vec::new(); schedulers],
            unacked: vec![Vec::new(); schedulers],
            controllers: Vec::new(),
            requests: vec![Vec::new(); usize::from(b.controllers)],
            streams: vec![Vec::new(); usize::from(b.controllers)],
            openings: vec![Vec::new(); usize::from(b.controllers)],
            cut: vec![false; schedulers + usize::from(b.controllers)],
            etcd,
            outage: 0,
            outages_left: u8::from(b.outage_ticks > 0),
            messages: Vec::new(),
            answers: Vec::new(),
            armed: None,
            gone: vec![false; schedulers],
            silent: vec![false; schedulers],
            activations: vec![ActivationState::Unsubmitted; total],
            retries: vec![ActivationState::Unsubmitted; b.retries.len()],
            due: vec![None; total],
            left: b.faults.clone(),
            ghost: Ghost {
                executions: vec![0; total],
                failures: vec![0; total],
                resolutions: vec![0; total],
                retry_resolutions: vec![0; b.retries.len()],
                excuses: vec![0; total],
                forgotten: vec![0; total],
                memory_lost: vec![false; total],
                unfenced: false,
                contested: false,
                bounced: false,
                swallowed: false,
                taken_back: false,
                claim_unreadable: false,
                claim_denied: false,
                refused: false,
                drained: false,
                drained_busy: false,
                placed_member_missing: false,
                late_start: false,
                overdue: false,
                answered_from_memory: false,
            },
        };
        // The cluster has started: every scheduler (but those that join
        // later) holds a lease and is a member (etcd answered their
        // requests in turn), and then every controller listed the keys.
        for s in self.started(&w) {
            self.feed_scheduler(&mut w, s, 0, scheduler::Input::Wake);
        }
        while let Some(s) = (0..b.schedulers).find(|s| !w.outbox[usize::from(*s)].is_empty()) {
            self.answer(&mut w, s, 0);
        }
        let members: Vec<(u8, u8)> = w
            .etcd
            .members
            .iter()
            .map(|m| (m.scheduler, m.incarnation))
            .collect();
        w.controllers = (0..b.controllers)
            .map(|_| Controller::new(Vec::new(), members.clone(), w.etcd.rev))
            .collect();
        // Each controller's driver opens watch 0 as it starts it.
        for c in 0..b.controllers {
            Self::open(&mut w, c, WatchId::default(), None);
        }
        renumber(&mut w);
        vec![w]
    }

    fn actions(&self, w: &World, actions: &mut Vec<Action>) {
        let b = &self.bounds;
        let next_submission =
            w.activations[..b.submissions.len()].contains(&ActivationState::Unsubmitted);
        let retry_left = w.retries.contains(&ActivationState::Unsubmitted);
        if next_submission || retry_left || w.outages_left > 0 || !w.left.exhausted() {
            actions.push(Action::UserIdle);
        }
        if next_submission {
            actions.push(Action::UserSubmit);
        }
        let next_retry = w
            .retries
            .iter()
            .position(|a| *a == ActivationState::Unsubmitted);
        if let Some(r) = next_retry {
            let (_, id) = b.retries[r];
            if w.activations[usize::from(id)] != ActivationState::Unsubmitted {
                actions.push(Action::UserRetry);
            }
        }
        if let Some(probe) = self.probe() {
            if Self::faults_over(w) && self.probe_idle(w, probe) {
                actions.push(Action::UserProbe);
            }
        }
        let routed = || {
            (0..b.actions).all(|a| {
                w.etcd.get(a).is_some_and(|key| {
                    w.controllers
                        .iter()
                        .all(|c| c.route(&a) == Some(&key.owner))
                })
            })
        };
        if w.outages_left > 0 && w.outage == 0 && (!b.outage_when_routed || routed()) {
            actions.push(Action::NetworkOutage);
        }
        if self.quiet(w) {
            actions.push(Action::ClockTick);
        }
        if w.left.joins > 0 {
            actions.push(Action::SchedulerJoin);
        }
        // A request held up in the network applies even once its sender
        // is gone.
        for s in self.started(w) {
            if w.etcd.leader && !w.late[usize::from(s)].is_empty() {
                actions.push(Action::SchedulerLate(s));
            }
        }
        let up = self.up(w);
        if w.left.departures > 0 && up.len() > 1 {
            actions.extend(up.iter().map(|s| Action::SchedulerDepart(*s)));
        }
        if w.left.vanishings > 0 && up.len() > 1 {
            actions.extend(up.iter().map(|s| Action::SchedulerVanish(*s)));
        }
        let serving: Vec<u8> = up
            .iter()
            .copied()
            .filter(|s| w.schedulers[usize::from(*s)].phase == Phase::Serving)
            .collect();
        if w.left.drains > 0 && serving.len() > 1 {
            actions.extend(serving.iter().map(|s| Action::SchedulerDrain(*s)));
        }
        for s in up {
            let i = usize::from(s);
            let reachable = self.reachable(w, Client::Scheduler(s));
            if reachable && !w.outbox[i].is_empty() {
                actions.push(Action::SchedulerEtcd(s));
                if w.left.delays > 0 {
                    actions.push(Action::DelayRequest(s));
                }
                if w.left.lost_replies > 0 {
                    actions.push(Action::LoseReply(s));
                }
            }
            if !w.running[i].is_empty() {
                actions.push(Action::Finish(s));
                if w.left.execution_failures > 0 {
                    actions.push(Action::FinishFailed(s));
                }
                if w.left.hangs > 0 {
                    actions.push(Action::ExecutionHang(s));
                }
            }
            if Self::message_for(w, s, 0).is_some() {
                actions.push(Action::Deliver(s));
            }
            if w.left.reorders > 0 && Self::message_for(w, s, 1).is_some() {
                actions.push(Action::DeliverOutOfOrder(s));
            }
            if w.left.lost_messages > 0 && Self::message_for(w, s, 0).is_some() {
                actions.push(Action::LoseMessage(s));
            }
            if w.left.crashes > 0 {
                actions.push(Action::SchedulerCrash(s));
            }
            if w.left.retirements > 0 {
                let config = self.scheduler_config();
                for queue in &w.schedulers[i].queues {
                    // The timer the scheduler armed is due.
                    if queue.idle_timer_due(&config) {
                        actions.push(Action::QueueIdle {
                            scheduler: s,
                            action: queue.action,
                        });
                    }
                }
            }
        }
        for c in 0..b.controllers {
            if !w.requests[usize::from(c)].is_empty() {
                let choices = self.placements(w, c);
                actions.extend(choices.into_iter().map(|place_on| Action::ControllerEtcd {
                    controller: c,
                    place_on,
                }));
            }
            let requests = &w.requests[usize::from(c)];
            let openings = &w.openings[usize::from(c)];
            if b.slow_watch_openings && openings.len() < 2 {
                let asked =
                    |r: &controller::Effect<Small>| matches!(r, controller::Effect::Watch { .. });
                if requests.iter().any(asked) {
                    actions.push(Action::HoldOpening(c));
                }
            }
            if !openings.is_empty() && self.reachable(w, Client::Controller(c)) {
                actions.push(Action::OpenHeld(c));
            }
            for at in 0..w.streams[usize::from(c)].len() {
                let (controller, stream) = (c, at as u8);
                if self.watch_response(w, c, at, false).is_some() {
                    actions.push(Action::WatchDeliver { controller, stream });
                }
                if self.catches_up(w, c, at) {
                    actions.push(Action::WatchCatchUp { controller, stream });
                }
                if w.left.stalls > 0 {
                    actions.push(Action::WatchStall { controller, stream });
                }
            }
        }
        if w.left.duplicates > 0 && !w.messages.is_empty() {
            actions.push(Action::DuplicateMessage);
        }
        if !w.answers.is_empty() {
            actions.push(Action::DeliverAnswer);
        }
        if w.armed.is_none() {
            let budgets = [
                (AnswerFault::Lose, w.left.lost_answers),
                (AnswerFault::Delay, w.left.delayed_answers),
                (AnswerFault::Duplicate, w.left.duplicate_answers),
            ];
            let kinds = [
                AnswerKind::Ack,
                AnswerKind::Refusal,
                AnswerKind::Report,
                AnswerKind::Confirm,
            ];
            for (fault, _) in budgets.into_iter().filter(|(_, left)| *left > 0) {
                actions.extend(kinds.map(|kind| Action::AnswerFault { fault, kind }));
            }
        }
        if w.left.compactions > 0 {
            actions.push(Action::EtcdCompact);
        }
        if w.left.foreign_writes > 0 && w.etcd.leader {
            actions.push(Action::EtcdForeignWrite);
        }
        if w.left.foreign_values > 0 && w.etcd.leader {
            let unheld = (0..self.bounds.actions).filter(|a| w.etcd.get(*a).is_none());
            actions.extend(unheld.map(Action::EtcdForeignValue));
        }
        if w.etcd.leader {
            let foreign = w
                .etcd
                .foreign
                .iter()
                .map(|f| Action::EtcdPutRight(f.action));
            actions.extend(foreign);
            let granted = w
                .etcd
                .denied
                .iter()
                .map(|&(scheduler, action)| Action::EtcdGrantAccess { scheduler, action });
            actions.extend(granted);
        }
        if w.left.denials > 0 && w.etcd.leader {
            for scheduler in self.up(w) {
                let deniable = (0..self.bounds.actions).filter(|a| {
                    !w.etcd.is_denied(scheduler, *a)
                        && w.etcd.get(*a).is_none_or(|k| k.owner != scheduler)
                });
                actions.extend(deniable.map(|action| Action::EtcdDenyAccess { scheduler, action }));
            }
        }
        if w.left.leader_losses > 0 && w.etcd.leader {
            actions.push(Action::EtcdLeaderLoss);
        }
        if w.left.drift > 0 && w.etcd.leader {
            actions.push(Action::EtcdClockAhead);
        }
        if !w.etcd.leader {
            actions.push(Action::EtcdLeaderElected);
        }
    }

    fn next_state(&self, w: &World, action: Action) -> Option<World> {
        let mut w = self.act(w, action)?;
        renumber(&mut w);
        Some(w)
    }

    fn properties(&self) -> Vec<Property<Self>> {
        let mut properties = vec![
            // □(∀a: |{s : s serves a under a lease etcd holds}| ≤ 1).
            Property::always(
                "one scheduler serves an action under a live lease",
                |m: &LeaseQueueModel, w: &World| {
                    (0..m.bounds.actions).all(|action| {
                        let serving = w
                            .schedulers
                            .iter()
                            .filter(|s| s.queue(&action).is_some_and(|q| w.etcd.is_live(q.lease)));
                        serving.count() <= 1
                    })
                },
            ),
            // □(∀a: executions(a) ≤ 1 + excuses(a) + forgotten(a)): each
            // crash or departure of a scheduler holding an activation
            // unacknowledged lets it run once more (its sender sends it
            // again, whoever ran it), and each loss of the memory of its
            // end, while a caller may still submit it again, lets a
            // resubmission run it once more.
            Property::always("executed at most once", |_, w: &World| {
                let g = &w.ghost;
                (g.executions.iter().zip(&g.excuses).zip(&g.forgotten))
                    .all(|((n, excuses), forgotten)| *n <= 1 + excuses + forgotten)
            }),
            // □(∀c: resolutions(c) ≤ 1 ∧ ∀a: forgotten(a) > 0 ∨ ((failures(a) = 0
            // ∨ executions(a) = 0) ∧ ∀c, c' calls of a resolved: outcome(c) =
            // outcome(c'))): each call (a submission, or a resubmission)
            // resolves at most once; an activation fails only if it never
            // ran; and every caller of it is told the same outcome. (Two
            // schedulers may each fail one that never ran, each reached by
            // another call past its deadline: every caller hears the same.)
            Property::always("at most one outcome", |m: &LeaseQueueModel, w: &World| {
                let g = &w.ghost;
                let once = g
                    .resolutions
                    .iter()
                    .chain(&g.retry_resolutions)
                    .all(|r| *r <= 1);
                once && (0..m.submitted()).all(|id| {
                    let i = usize::from(id);
                    let failed_unrun = g.failures[i] == 0 || g.executions[i] == 0;
                    g.forgotten[i] > 0 || (failed_unrun && m.one_outcome(w, id))
                })
            }),
            // □¬unfenced: work is handed out only under the owner's live
            // lease.
            Property::always("work only under a live lease", |_, w: &World| {
                !w.ghost.unfenced
            }),
            // □¬late_start: no activation starts at or past its deadline.
            Property::always("nothing starts past its deadline", |_, w: &World| {
                !w.ghost.late_start
            }),
            Property::sometimes("an activation is executed", |_, w: &World| {
                w.activations.contains(&ActivationState::Executed)
            }),
            Property::sometimes("the faults come and go", |_, w: &World| {
                LeaseQueueModel::faults_over(w)
            }),
        ];
        properties.extend(reachable::sometimes(&self.bounds, self.every_sometimes));
        properties
    }
}

/// The fairness classes of scheduler `S`: etcd answers its requests, its
/// executions finish, its messages reach it.
fn scheduler_fairness<const S: u8>(names: [&'static str; 3]) -> [Fairness<LeaseQueueModel>; 3] {
    [
        Fairness::weak(names[0], Action::is_etcd_for_scheduler::<S>),
        Fairness::weak(names[1], Action::is_finish_on::<S>),
        Fairness::weak(names[2], Action::is_delivery_to::<S>),
    ]
}

/// The fairness classes of controller `C`: etcd answers it, its watch
/// delivers.
fn controller_fairness<const C: u8>(names: [&'static str; 2]) -> [Fairness<LeaseQueueModel>; 2] {
    [
        Fairness::weak(names[0], Action::is_etcd_for_controller::<C>),
        Fairness::weak(names[1], Action::is_watch_of::<C>),
    ]
}

impl TemporalModel for LeaseQueueModel {
    fn fairness(&self) -> Vec<Fairness<Self>> {
        // One class per role and channel: fairness of a class shared by
        // several would let one of them starve while another moves.
        let schedulers = [
            scheduler_fairness::<0>([
                "etcd answers scheduler 0",
                "executions finish on scheduler 0",
                "messages reach scheduler 0",
            ]),
            scheduler_fairness::<1>([
                "etcd answers scheduler 1",
                "executions finish on scheduler 1",
                "messages reach scheduler 1",
            ]),
            scheduler_fairness::<2>([
                "etcd answers scheduler 2",
                "executions finish on scheduler 2",
                "messages reach scheduler 2",
            ]),
        ];
        let controllers = [
            controller_fairness::<0>(["etcd answers controller 0", "controller 0's watch"]),
            controller_fairness::<1>(["etcd answers controller 1", "controller 1's watch"]),
            controller_fairness::<2>(["etcd answers controller 2", "controller 2's watch"]),
        ];
        let mut classes = vec![
            Fairness::weak("clock", Action::is_clock),
            // Users keep submitting once the faults are over.
            Fairness::weak("probe resubmission", Action::is_probe),
            // A leaderless etcd elects a leader in the end.
            Fairness::weak("etcd election", Action::is_election),
            // What the network holds up arrives in the end.
            Fairness::weak("answers arrive", Action::is_answer_delivery),
        ];
        classes.extend(
            schedulers
                .into_iter()
                .take(usize::from(self.bounds.schedulers))
                .flatten(),
        );
        classes.extend(
            controllers
                .into_iter()
                .take(usize::from(self.bounds.controllers))
                .flatten(),
        );
        classes
    }

    fn liveness(&self) -> Vec<Liveness<Self>> {
        let mut properties = vec![
            // pending ~> ¬pending: every submission is resolved, with its
            // outcome, by the controller it was submitted to.
            Liveness::leads_to(
                "every submission resolves",
                |_, w: &World| any_pending(w),
                |_, w: &World| !any_pending(w),
            ),
            // pending ~> (∀a submitted: executed(a) ∨ failed(a,
            // past deadline)): every activation is executed in the end, or
            // failed only because its deadline passed; failing everything
            // ends activations, but fails this.
            Liveness::leads_to(
                "every activation submitted is executed",
                |_, w: &World| any_pending(w),
                |_, w: &World| all_submitted_executed(w),
            ),
            // routed_to_departed ~> ¬routed_to_departed: once a scheduler
            // has left for good, nothing stays routed to it: its keys go
            // with its lease, every cache drops them, what was sent or
            // forwarded to it is routed again, and its actions' next
            // activations are placed among the live members.
            Liveness::leads_to(
                "a departed member's actions get a live owner",
                |_, w: &World| routed_to_departed(w),
                |_, w: &World| !routed_to_departed(w),
            ),
            // ◇□routing_restored: once the faults are over, each action's
            // key, queue and caches agree.
            Liveness::eventually_always("routing restored", |_, w: &World| routing_restored(w)),
        ];
        if self.bounds.probe {
            // pending(probe) ~> executed(probe): once the faults are over, a
            // probe submitted is executed (#5286: it fails, again and again).
            properties.push(Liveness::leads_to(
                "a probe submitted is executed",
                |_, w: &World| probe_state(w) == Some(ActivationState::Pending),
                |_, w: &World| probe_state(w) == Some(ActivationState::Executed),
            ));
        }
        properties
    }
}
