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
//! # Time
//!
//! A tick is the keepalive period. At every tick every role is woken with
//! one tick elapsed (the model ignores the roles' `WakeIn`: waking every
//! tick is the earliest any timer could fire). Absent a fault, etcd answers
//! within a tick: the clock waits until every request it can answer has
//! been answered and every reply delivered. A delay fault lets one request
//! miss that bound and be applied later, after the requester's retries.

use serde::{Deserialize, Serialize};
use stateright::{Model, Property};

use super::controller::{self, Controller, Watch};
use super::etcd::{Etcd, Refused};
use super::scheduler::{self, ClaimResult, Scheduler};
use super::{Domain, FailReason, Rule, Rules, Variant};
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
    type Activation = u8;
    type Lease = u8;
    type Revision = u32;
    type Duration = u8;

    fn next_revision(rev: u32) -> u32 {
        rev + 1
    }

    fn saturating_sub(a: u8, b: u8) -> u8 {
        a.saturating_sub(b)
    }

    fn action_number(action: &u8) -> u64 {
        u64::from(*action)
    }
}

/// An endpoint key of the etcd model as the scheduler is told of it.
fn endpoint(key: super::etcd::Endpoint) -> scheduler::Endpoint<Small> {
    scheduler::Endpoint {
        owner: key.owner,
        lease: key.lease,
        created: key.create_rev,
    }
}

/// How far the scheduler's fence stays from etcd's expiry, in ticks: the
/// clock drift the steadfast scheduler assumes.
pub const MARGIN: u8 = 1;

/// Controller `c` as it starts, having listed no key at `rev`. Each
/// controller knows the schedulers in an order of its own (controller `c`
/// starts from scheduler `c`), so two controllers can place one new queue
/// on different schedulers.
pub fn controller_at_start(b: &Bounds, c: u8, rev: u32) -> Controller<Small> {
    let known = (0..b.schedulers).map(|s| (s + c) % b.schedulers.max(1));
    Controller::new(known.collect(), rev)
}

/// One client of etcd.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum Client {
    /// A scheduler.
    Scheduler(u8),
    /// A controller.
    Controller(u8),
}

/// The sizes and fault budgets of a scenario.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct Bounds {
    /// The rules.
    pub variant: Variant,
    /// How many schedulers.
    pub schedulers: u8,
    /// How many controllers.
    pub controllers: u8,
    /// How many actions.
    pub actions: u8,
    /// The lease TTL asked for, in ticks (etcd raises it to its floor).
    pub ttl: u8,
    /// How long the outage lasts, in ticks.
    pub outage_ticks: u8,
    /// Which clients the outage cuts off from etcd.
    pub outage_clients: Vec<Client>,
    /// Whether the outage strikes only once every action's endpoint key
    /// exists and every controller routes to it: a running system, as in
    /// #5286.
    pub outage_when_routed: bool,
    /// The activations users submit (before, during or after the faults),
    /// in order: each the controller it is submitted to and its action.
    pub submissions: Vec<(u8, u8)>,
    /// Whether a probe activation is submitted again and again once the
    /// faults are over.
    pub probe: bool,
    /// Scheduler crashes.
    pub crashes: u8,
    /// Compactions.
    pub compactions: u8,
    /// Idle queues retiring.
    pub retirements: u8,
    /// Times etcd loses its leader (and elects a new one).
    pub leader_losses: u8,
    /// Ticks by which etcd's clock may run ahead of the schedulers' (a
    /// scheduler's clock running slow). The steadfast fence keeps
    /// [`MARGIN`] in hand, so up to that is within what it assumes.
    pub drift: u8,
    /// Scheduler requests held up in the network past a tick: applied
    /// later, after the scheduler has sent them again.
    pub delays: u8,
    /// Scheduler requests applied by etcd whose reply is lost.
    pub lost_replies: u8,
    /// Messages to schedulers delivered twice.
    pub duplicates: u8,
    /// Messages to a scheduler delivered out of order.
    pub reorders: u8,
    /// Controller watches that stop delivering without an error.
    pub stalls: u8,
    /// Writes of keys outside the endpoint keys (OpenWhisk registers its
    /// schedulers and invokers in the same etcd): etcd's revision moves,
    /// and a watch on the endpoint keys sees a gap.
    pub foreign_writes: u8,
}

/// A message to a scheduler.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub enum Message {
    /// An activation for scheduler `to`.
    Activation {
        /// The scheduler.
        to: u8,
        /// The activation.
        id: u8,
        /// Its action.
        action: u8,
        /// Sent on by a peer scheduler rather than a controller.
        forwarded: bool,
    },
    /// A request that scheduler `to` create a queue for `action`.
    CreateQueue {
        /// The scheduler.
        to: u8,
        /// The action.
        action: u8,
    },
}

impl Message {
    /// The scheduler it is for.
    pub fn to(&self) -> u8 {
        match *self {
            Message::Activation { to, .. } | Message::CreateQueue { to, .. } => to,
        }
    }
}

/// Where an activation is, as its user sees it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize)]
pub enum ActivationState {
    /// Not submitted yet.
    Unsubmitted,
    /// Submitted, not ended.
    Pending,
    /// Executed.
    Executed,
    /// Failed, for this reason.
    Failed(FailReason),
}

/// What the properties need beyond the world itself.
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct Ghost {
    /// Per activation, executions since it was submitted.
    pub executions: Vec<u8>,
    /// Per activation, failures since it was submitted.
    pub failures: Vec<u8>,
    /// Per activation, the schedulers that executed it (a bit each).
    pub executors: Vec<u8>,
    /// Per activation, whether a scheduler that executed it crashed
    /// afterwards (and with it the memory that it had).
    pub excused: Vec<bool>,
    /// Work was once handed out under a lease etcd no longer held, or from a
    /// queue whose key was not its owner's.
    pub unfenced: bool,
    /// A scheduler once lost an election to another and forwarded work to
    /// the winner.
    pub contested: bool,
}

/// A scheduler request held up in the network.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize)]
pub struct Late {
    /// The request.
    pub request: scheduler::Effect<Small>,
    /// Its sender crashed since: the reply has nobody to reach.
    pub orphaned: bool,
}

/// The whole world.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize)]
pub struct World {
    /// etcd.
    pub etcd: Etcd,
    /// The schedulers.
    pub schedulers: Vec<Scheduler<Small>>,
    /// Per scheduler, its requests etcd has not applied yet, oldest first.
    pub outbox: Vec<Vec<scheduler::Effect<Small>>>,
    /// Per scheduler, requests held up in the network.
    pub late: Vec<Vec<Late>>,
    /// Per scheduler, activations it is executing.
    pub running: Vec<Vec<u8>>,
    /// Per scheduler, activations delivered to it and not acknowledged:
    /// delivered again after a crash.
    pub unacked: Vec<Vec<Message>>,
    /// The controllers.
    pub controllers: Vec<Controller<Small>>,
    /// Per controller, its etcd requests not yet answered, oldest first.
    pub requests: Vec<Vec<controller::Effect<Small>>>,
    /// Per controller, whether its watch stream is alive.
    pub streams: Vec<bool>,
    /// Per client (schedulers, then controllers), whether it is cut off.
    pub cut: Vec<bool>,
    /// Ticks of outage left (0: none under way).
    pub outage: u8,
    /// Outages left to start.
    pub outages_left: u8,
    /// Messages in flight, oldest first.
    pub messages: Vec<Message>,
    /// Per activation (the probe last), where it is.
    pub activations: Vec<ActivationState>,
    /// What is left of each fault budget.
    pub budget: Budget,
    /// What the properties read.
    pub ghost: Ghost,
}

/// What is left of the faults of a scenario.
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct Budget {
    /// Crashes.
    pub crashes: u8,
    /// Compactions.
    pub compactions: u8,
    /// Retirements.
    pub retirements: u8,
    /// Leader losses.
    pub leader_losses: u8,
    /// Ticks of drift.
    pub drift: u8,
    /// Delayed requests.
    pub delays: u8,
    /// Lost replies.
    pub lost_replies: u8,
    /// Duplicated messages.
    pub duplicates: u8,
    /// Reordered messages.
    pub reorders: u8,
    /// Stalled watches.
    pub stalls: u8,
    /// Writes outside the endpoint keys.
    pub foreign_writes: u8,
}

impl Budget {
    fn of(b: &Bounds) -> Self {
        Budget {
            crashes: b.crashes,
            compactions: b.compactions,
            retirements: b.retirements,
            leader_losses: b.leader_losses,
            drift: b.drift,
            delays: b.delays,
            lost_replies: b.lost_replies,
            duplicates: b.duplicates,
            reorders: b.reorders,
            stalls: b.stalls,
            foreign_writes: b.foreign_writes,
        }
    }

    fn exhausted(&self) -> bool {
        *self == Budget::default()
    }
}

/// A step of the world.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum Action {
    /// Users and faults do nothing now (a stutter step), so that "nothing
    /// more happens" is a behaviour while budgets remain.
    UserIdle,
    /// A user submits the next activation.
    UserSubmit,
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
    /// etcd answers a controller's oldest request.
    ControllerEtcd(u8),
    /// A controller's watch delivers its next response.
    WatchDeliver(u8),
    /// The oldest message for this scheduler arrives.
    Deliver(u8),
    /// The second oldest message for this scheduler arrives first.
    DeliverOutOfOrder(u8),
    /// The oldest message in flight is sent twice.
    DuplicateMessage,
    /// A scheduler's oldest request is held up in the network.
    DelayRequest(u8),
    /// etcd applies a scheduler's oldest request, and the reply is lost.
    LoseReply(u8),
    /// A controller's watch stops delivering, without an error.
    WatchStall(u8),
    /// etcd compacts its history.
    EtcdCompact,
    /// Another client writes a key outside the endpoint keys.
    EtcdForeignWrite,
    /// etcd loses its leader.
    EtcdLeaderLoss,
    /// etcd elects a leader, which extends every lease.
    EtcdLeaderElected,
    /// etcd's clock ticks once more than the schedulers' do: leases run
    /// down without a keepalive in between.
    EtcdClockAhead,
    /// A scheduler crashes and restarts with nothing.
    SchedulerCrash(u8),
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

    fn is_etcd_for_controller<const C: u8>(&self) -> bool {
        *self == Action::ControllerEtcd(C)
    }

    fn is_watch_of<const C: u8>(&self) -> bool {
        *self == Action::WatchDeliver(C)
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
    fn rules(&self) -> Rules {
        let rules = Rules::from(self.bounds.variant);
        self.without.map_or(rules, |rule| rules.without(rule))
    }

    fn scheduler_config(&self) -> scheduler::Config<Small> {
        scheduler::Config {
            rules: self.rules(),
            ttl: self.bounds.ttl,
            margin: MARGIN,
            wake_every: 1,
            idle_after: 1,
        }
    }

    fn controller_config(&self) -> controller::Config<Small> {
        controller::Config {
            rules: self.rules(),
            wake_every: 1,
        }
    }

    fn probe(&self) -> Option<u8> {
        self.bounds.probe.then_some(self.submitted())
    }

    /// How many activations users submit (the probe aside).
    fn submitted(&self) -> u8 {
        self.bounds.submissions.len() as u8
    }

    fn client_index(&self, client: Client) -> usize {
        match client {
            Client::Scheduler(s) => usize::from(s),
            Client::Controller(c) => usize::from(self.bounds.schedulers + c),
        }
    }

    fn cut(&self, w: &World, client: Client) -> bool {
        w.cut[self.client_index(client)]
    }

    /// Whether etcd answers `client` now.
    fn reachable(&self, w: &World, client: Client) -> bool {
        w.etcd.leader && !self.cut(w, client)
    }

    fn feed_scheduler(&self, w: &mut World, s: u8, elapsed: u8, input: scheduler::Input<Small>) {
        let i = usize::from(s);
        let lost = matches!(&input, scheduler::Input::Claimed {
            result: ClaimResult::Exists(key), ..
        } if key.owner != s);
        let effects = w.schedulers[i].step(&self.scheduler_config(), elapsed, input);
        for effect in effects {
            match effect {
                // The model wakes every role at every tick, and fires an
                // idle timer when it is due, within the retirement budget.
                scheduler::Effect::WakeIn { .. } | scheduler::Effect::IdleTimer { .. } => {}
                scheduler::Effect::Execute { id, action, lease } => {
                    let owned = w
                        .etcd
                        .get(action)
                        .is_some_and(|k| k.owner == s && k.lease == lease);
                    w.ghost.unfenced |= !(owned && w.etcd.is_live(lease));
                    w.ghost.executors[usize::from(id)] |= 1 << s;
                    w.running[i].push(id);
                    self.end(w, id, ActivationState::Executed);
                }
                scheduler::Effect::Forward { id, action, to } => {
                    w.ghost.contested |= lost;
                    w.messages.push(Message::Activation {
                        to,
                        id,
                        action,
                        forwarded: true,
                    });
                }
                scheduler::Effect::Fail { id, reason } => {
                    self.end(w, id, ActivationState::Failed(reason));
                }
                scheduler::Effect::Ack { id } => {
                    w.unacked[i]
                        .retain(|m| !matches!(m, Message::Activation { id: a, .. } if *a == id));
                }
                request => {
                    if let scheduler::Effect::KeepAlive { restart: true, .. } = request {
                        // A new stream: what was due on the old one is gone.
                        let keepalive = |r: &scheduler::Effect<Small>| {
                            matches!(r, scheduler::Effect::KeepAlive { .. })
                        };
                        w.outbox[i].retain(|r| !keepalive(r));
                        w.late[i].retain(|l| !keepalive(&l.request));
                    }
                    // A request to an unreachable etcd is lost (its caller's
                    // deadline passes); the scheduler sends it again.
                    if self.reachable(w, Client::Scheduler(s)) {
                        w.outbox[i].push(request);
                    }
                }
            }
        }
    }

    fn feed_controller(&self, w: &mut World, c: u8, input: controller::Input<Small>) {
        let effects = w.controllers[usize::from(c)].step(&self.controller_config(), input);
        for effect in effects {
            match effect {
                controller::Effect::WakeIn { .. } | controller::Effect::RequestProgress => {}
                controller::Effect::Send { id, action, to } => {
                    w.messages.push(Message::Activation {
                        to,
                        id,
                        action,
                        forwarded: false,
                    });
                }
                controller::Effect::CreateQueue { action, to } => {
                    w.messages.push(Message::CreateQueue { to, action });
                }
                controller::Effect::Fail { id, reason } => {
                    self.end(w, id, ActivationState::Failed(reason));
                }
                // A lookup of an unreachable etcd fails (its deadline);
                // a listing or a watch is lost and asked for again.
                request @ controller::Effect::Get { .. } => {
                    w.requests[usize::from(c)].push(request);
                }
                request => {
                    if self.reachable(w, Client::Controller(c)) {
                        w.requests[usize::from(c)].push(request);
                    }
                }
            }
        }
    }

    fn end(&self, w: &mut World, id: u8, state: ActivationState) {
        let i = usize::from(id);
        match state {
            ActivationState::Executed => w.ghost.executions[i] += 1,
            _ => w.ghost.failures[i] += 1,
        }
        if w.activations[i] == ActivationState::Pending {
            w.activations[i] = state;
        }
    }

    /// etcd applies one request of scheduler `s` and answers it.
    fn apply(
        &self,
        w: &mut World,
        s: u8,
        request: scheduler::Effect<Small>,
    ) -> Option<scheduler::Input<Small>> {
        use scheduler::{Effect as E, Input as I};
        Some(match request {
            E::Grant { .. } => I::Granted {
                lease: w.etcd.grant(),
                ttl: w.etcd.ttl,
            },
            E::KeepAlive { lease, .. } => I::KeptAlive {
                lease,
                ttl: w.etcd.keep_alive(lease),
            },
            E::Revoke { lease } => {
                w.etcd.revoke(lease);
                I::Revoked { lease }
            }
            E::Claim { action, lease } => {
                let result = match w.etcd.create_if_absent(action, s, lease) {
                    Ok(key) => ClaimResult::Created {
                        created: key.create_rev,
                    },
                    Err(Refused::Exists(key)) => ClaimResult::Exists(endpoint(key)),
                    Err(Refused::LeaseNotFound) => ClaimResult::LeaseNotFound,
                };
                I::Claimed {
                    action,
                    lease,
                    result,
                }
            }
            E::Delete { action, created } => {
                w.etcd.delete(action, created);
                I::Deleted { action }
            }
            E::Resolve { id, action } => I::Resolved {
                id,
                action,
                key: w.etcd.get(action).map(endpoint),
            },
            E::WakeIn { .. }
            | E::IdleTimer { .. }
            | E::Execute { .. }
            | E::Forward { .. }
            | E::Fail { .. }
            | E::Ack { .. } => return None,
        })
    }

    fn controller_etcd(&self, w: &mut World, c: u8) {
        let request = w.requests[usize::from(c)].remove(0);
        let reachable = self.reachable(w, Client::Controller(c));
        let input = match request {
            controller::Effect::Get { id, action } if !reachable => {
                controller::Input::GetFailed { id, action }
            }
            controller::Effect::Get { id, action } => controller::Input::Got {
                id,
                action,
                owner: w.etcd.get(action).map(|k| k.owner),
            },
            controller::Effect::List => controller::Input::Listed {
                rev: w.etcd.rev,
                keys: w.etcd.keys.iter().map(|k| (k.action, k.owner)).collect(),
            },
            controller::Effect::Watch { from } => {
                w.streams[usize::from(c)] = true;
                controller::Input::WatchStarted {
                    next: from.unwrap_or(w.etcd.rev + 1),
                }
            }
            _ => return,
        };
        self.feed_controller(w, c, input);
    }

    /// What controller `c`'s watch would deliver now, if anything.
    fn watch_response(&self, w: &World, c: u8) -> Option<controller::Input<Small>> {
        let Watch::Active { next, probing } = w.controllers[usize::from(c)].watch else {
            return None;
        };
        if !w.streams[usize::from(c)] || !self.reachable(w, Client::Controller(c)) {
            return None;
        }
        match w.etcd.next_response(next) {
            Err(_) => Some(controller::Input::Compacted { rev: w.etcd.rev }),
            Ok(response) if !response.is_empty() => Some(controller::Input::Changed {
                rev: response[0].rev,
                changes: response.iter().map(|c| (c.action, c.owner)).collect(),
            }),
            Ok(_) if probing => Some(controller::Input::Progress { rev: w.etcd.rev }),
            Ok(_) => None,
        }
    }

    /// Whether the network has done, within this tick, all it does absent
    /// a fault: every request etcd can answer answered, every watch
    /// response due delivered (but a progress notification, which the tick
    /// delivers).
    fn quiet(&self, w: &World) -> bool {
        w.outbox.iter().all(Vec::is_empty)
            && w.requests.iter().all(Vec::is_empty)
            && (0..self.bounds.controllers).all(|c| {
                matches!(
                    self.watch_response(w, c),
                    None | Some(controller::Input::Progress { .. })
                )
            })
    }

    /// Whether no fault that could come between a keepalive and its answer
    /// remains: from then on the model answers keepalives within the tick
    /// that sends them, as the network would before the next tick anyway,
    /// and saves the interleavings of those steps with every other.
    fn keepalives_prompt(w: &World) -> bool {
        let b = &w.budget;
        w.outage == 0
            && w.outages_left == 0
            && b.drift == 0
            && b.delays == 0
            && b.lost_replies == 0
            && b.leader_losses == 0
    }

    /// etcd answers scheduler `s`'s keepalive at once.
    fn keep_alive_now(&self, w: &mut World, s: u8) {
        let keepalive = w.outbox[usize::from(s)]
            .iter()
            .position(|r| matches!(r, scheduler::Effect::KeepAlive { .. }));
        if let Some(at) = keepalive {
            self.answer(w, s, at);
        }
    }

    /// etcd applies request `at` of scheduler `s`'s outbox, and the reply
    /// reaches it.
    fn answer(&self, w: &mut World, s: u8, at: usize) {
        let request = w.outbox[usize::from(s)].remove(at);
        if let Some(reply) = self.apply(w, s, request) {
            self.feed_scheduler(w, s, 0, reply);
        }
    }

    /// Whether no fault can happen any more.
    fn faults_over(w: &World) -> bool {
        w.outage == 0 && w.outages_left == 0 && w.budget.exhausted()
    }

    /// Whether the probe is settled everywhere, so a user may submit it
    /// again as a new activation.
    fn probe_idle(&self, w: &World, probe: u8) -> bool {
        let mentioned = |m: &Message| matches!(m, Message::Activation { id, .. } if *id == probe);
        w.activations[usize::from(probe)] != ActivationState::Pending
            && !w.messages.iter().any(mentioned)
            && w.unacked.iter().flatten().all(|m| !mentioned(m))
            && w.running.iter().flatten().all(|r| *r != probe)
    }

    /// The index of the message `Deliver(s)` (or the second one, out of
    /// order) takes.
    fn message_for(w: &World, s: u8, nth: usize) -> Option<usize> {
        w.messages
            .iter()
            .enumerate()
            .filter(|(_, m)| m.to() == s)
            .nth(nth)
            .map(|(i, _)| i)
    }

    fn deliver(&self, w: &mut World, at: usize) {
        let message = w.messages.remove(at);
        match message {
            Message::Activation {
                to,
                id,
                action,
                forwarded,
            } => {
                w.unacked[usize::from(to)].push(message);
                let input = scheduler::Input::Activation {
                    id,
                    action,
                    forwarded,
                };
                self.feed_scheduler(w, to, 0, input);
            }
            Message::CreateQueue { to, action } => {
                self.feed_scheduler(w, to, 0, scheduler::Input::CreateQueue { action })
            }
        }
    }

    /// Cuts `client` off: its requests and replies in flight are lost, its
    /// watch stream dies without a word.
    fn cut_off(&self, w: &mut World, client: Client) {
        let index = self.client_index(client);
        w.cut[index] = true;
        match client {
            Client::Scheduler(s) => w.outbox[usize::from(s)].clear(),
            Client::Controller(c) => {
                w.streams[usize::from(c)] = false;
                w.requests[usize::from(c)].retain(|r| matches!(r, controller::Effect::Get { .. }));
            }
        }
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
            schedulers: (0..b.schedulers).map(Scheduler::new).collect(),
            outbox: vec![Vec::new(); schedulers],
            late: vec![Vec::new(); schedulers],
            running: vec![Vec::new(); schedulers],
            unacked: vec![Vec::new(); schedulers],
            controllers: (0..b.controllers)
                .map(|c| controller_at_start(b, c, etcd.rev))
                .collect(),
            requests: vec![Vec::new(); usize::from(b.controllers)],
            streams: vec![true; usize::from(b.controllers)],
            cut: vec![false; schedulers + usize::from(b.controllers)],
            etcd,
            outage: 0,
            outages_left: u8::from(b.outage_ticks > 0),
            messages: Vec::new(),
            activations: vec![ActivationState::Unsubmitted; total],
            budget: Budget::of(b),
            ghost: Ghost {
                executions: vec![0; total],
                failures: vec![0; total],
                executors: vec![0; total],
                excused: vec![false; total],
                unfenced: false,
                contested: false,
            },
        };
        for s in 0..b.schedulers {
            self.feed_scheduler(&mut w, s, 0, scheduler::Input::Wake);
        }
        vec![w]
    }

    fn actions(&self, w: &World, actions: &mut Vec<Action>) {
        let b = &self.bounds;
        let next_submission =
            w.activations[..b.submissions.len()].contains(&ActivationState::Unsubmitted);
        if next_submission || w.outages_left > 0 || !w.budget.exhausted() {
            actions.push(Action::UserIdle);
        }
        if next_submission {
            actions.push(Action::UserSubmit);
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
        for s in 0..b.schedulers {
            let i = usize::from(s);
            let reachable = self.reachable(w, Client::Scheduler(s));
            if reachable && !w.outbox[i].is_empty() {
                actions.push(Action::SchedulerEtcd(s));
                if w.budget.delays > 0 {
                    actions.push(Action::DelayRequest(s));
                }
                if w.budget.lost_replies > 0 {
                    actions.push(Action::LoseReply(s));
                }
            }
            if w.etcd.leader && !w.late[i].is_empty() {
                actions.push(Action::SchedulerLate(s));
            }
            if !w.running[i].is_empty() {
                actions.push(Action::Finish(s));
            }
            if Self::message_for(w, s, 0).is_some() {
                actions.push(Action::Deliver(s));
            }
            if w.budget.reorders > 0 && Self::message_for(w, s, 1).is_some() {
                actions.push(Action::DeliverOutOfOrder(s));
            }
            if w.budget.crashes > 0 {
                actions.push(Action::SchedulerCrash(s));
            }
            if w.budget.retirements > 0 {
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
                actions.push(Action::ControllerEtcd(c));
            }
            if self.watch_response(w, c).is_some() {
                actions.push(Action::WatchDeliver(c));
            }
            if w.budget.stalls > 0 && w.streams[usize::from(c)] {
                actions.push(Action::WatchStall(c));
            }
        }
        if w.budget.duplicates > 0 && !w.messages.is_empty() {
            actions.push(Action::DuplicateMessage);
        }
        if w.budget.compactions > 0 {
            actions.push(Action::EtcdCompact);
        }
        if w.budget.foreign_writes > 0 && w.etcd.leader {
            actions.push(Action::EtcdForeignWrite);
        }
        if w.budget.leader_losses > 0 && w.etcd.leader {
            actions.push(Action::EtcdLeaderLoss);
        }
        if w.budget.drift > 0 && w.etcd.leader {
            actions.push(Action::EtcdClockAhead);
        }
        if !w.etcd.leader {
            actions.push(Action::EtcdLeaderElected);
        }
    }

    fn next_state(&self, w: &World, action: Action) -> Option<World> {
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
                let (c, action) = self.bounds.submissions[usize::from(id)];
                self.feed_controller(&mut w, c, controller::Input::Submit { id, action });
            }
            Action::UserProbe => {
                // A new activation; the model gives it the probe's id again,
                // so every memory of the old one is dropped.
                let id = self.probe()?;
                let i = usize::from(id);
                w.activations[i] = ActivationState::Pending;
                w.ghost.executions[i] = 0;
                w.ghost.failures[i] = 0;
                w.ghost.executors[i] = 0;
                w.ghost.excused[i] = false;
                for scheduler in &mut w.schedulers {
                    scheduler.forget(&id);
                }
                self.feed_controller(&mut w, 0, controller::Input::Submit { id, action: 0 });
            }
            Action::NetworkOutage => {
                w.outages_left -= 1;
                w.outage = self.bounds.outage_ticks;
                for client in &self.bounds.outage_clients {
                    self.cut_off(&mut w, *client);
                }
            }
            Action::ClockTick => {
                // Progress notifications due arrive within the tick.
                for c in 0..self.bounds.controllers {
                    if let Some(progress) = self.watch_response(&w, c) {
                        self.feed_controller(&mut w, c, progress);
                    }
                }
                w.etcd.tick();
                if w.outage > 0 {
                    w.outage -= 1;
                    if w.outage == 0 {
                        w.cut.iter_mut().for_each(|c| *c = false);
                    }
                }
                let prompt = Self::keepalives_prompt(&w);
                for s in 0..self.bounds.schedulers {
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
            Action::Finish(s) => {
                let id = w.running[usize::from(s)].remove(0);
                self.feed_scheduler(&mut w, s, 0, scheduler::Input::Executed { id });
            }
            Action::ControllerEtcd(c) => self.controller_etcd(&mut w, c),
            Action::WatchDeliver(c) => {
                let input = self.watch_response(&w, c)?;
                if let controller::Input::Compacted { .. } = input {
                    w.streams[usize::from(c)] = false;
                }
                self.feed_controller(&mut w, c, input);
            }
            Action::Deliver(s) => {
                let at = Self::message_for(&w, s, 0)?;
                self.deliver(&mut w, at);
            }
            Action::DeliverOutOfOrder(s) => {
                w.budget.reorders -= 1;
                let at = Self::message_for(&w, s, 1)?;
                self.deliver(&mut w, at);
            }
            Action::DuplicateMessage => {
                w.budget.duplicates -= 1;
                let copy = *w.messages.first()?;
                w.messages.push(copy);
            }
            Action::DelayRequest(s) => {
                w.budget.delays -= 1;
                let request = w.outbox[usize::from(s)].remove(0);
                w.late[usize::from(s)].push(Late {
                    request,
                    orphaned: false,
                });
            }
            Action::LoseReply(s) => {
                w.budget.lost_replies -= 1;
                let request = w.outbox[usize::from(s)].remove(0);
                self.apply(&mut w, s, request);
            }
            Action::WatchStall(c) => {
                w.budget.stalls -= 1;
                w.streams[usize::from(c)] = false;
            }
            Action::EtcdCompact => {
                w.budget.compactions -= 1;
                w.etcd.compact();
            }
            Action::EtcdForeignWrite => {
                w.budget.foreign_writes -= 1;
                w.etcd.rev += 1;
            }
            Action::EtcdLeaderLoss => {
                w.budget.leader_losses -= 1;
                w.etcd.leader = false;
                // Requests wait in vain and their callers' deadlines pass.
                w.outbox.iter_mut().for_each(Vec::clear);
                for requests in &mut w.requests {
                    requests.retain(|r| matches!(r, controller::Effect::Get { .. }));
                }
            }
            Action::EtcdClockAhead => {
                w.budget.drift -= 1;
                w.etcd.tick();
            }
            Action::EtcdLeaderElected => w.etcd.promote(),
            Action::SchedulerCrash(s) => {
                w.budget.crashes -= 1;
                let i = usize::from(s);
                // Whatever it executed, it no longer remembers.
                for (id, executors) in w.ghost.executors.iter().enumerate() {
                    if executors & (1 << s) != 0 {
                        w.ghost.excused[id] = true;
                    }
                }
                // What it had taken in and not acknowledged is delivered to
                // it again (its consumer restarts from the last commit).
                let mut redelivered = std::mem::take(&mut w.unacked[i]);
                redelivered.append(&mut w.messages);
                w.messages = redelivered;
                w.outbox[i].clear();
                w.running[i].clear();
                w.late[i].iter_mut().for_each(|l| l.orphaned = true);
                w.schedulers[i] = Scheduler::new(s);
                self.feed_scheduler(&mut w, s, 0, scheduler::Input::Wake);
            }
            Action::QueueIdle { scheduler, action } => {
                w.budget.retirements -= 1;
                self.feed_scheduler(&mut w, scheduler, 0, scheduler::Input::Idle { action });
            }
        }
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
            // □(∀a: executions(a) ≤ 1 ∨ excused(a)): a scheduler that crashed
            // after executing an activation may run it again.
            Property::always("executed at most once", |_, w: &World| {
                w.ghost
                    .executions
                    .iter()
                    .zip(&w.ghost.excused)
                    .all(|(n, excused)| *n <= 1 || *excused)
            }),
            // □(∀a: failures(a) = 0 ∨ (failures(a) = 1 ∧ executions(a) = 0)).
            Property::always("at most one outcome", |_, w: &World| {
                w.ghost
                    .failures
                    .iter()
                    .zip(&w.ghost.executions)
                    .all(|(f, e)| *f == 0 || (*f == 1 && *e == 0))
            }),
            // □¬unfenced: work is handed out only under the owner's live
            // lease.
            Property::always("work only under a live lease", |_, w: &World| {
                !w.ghost.unfenced
            }),
            Property::sometimes("an activation is executed", |_, w: &World| {
                w.activations.contains(&ActivationState::Executed)
            }),
            Property::sometimes("the faults come and go", |_, w: &World| {
                LeaseQueueModel::faults_over(w)
            }),
        ];
        properties.extend(super::reachable::sometimes(
            &self.bounds,
            self.every_sometimes,
        ));
        properties
    }
}

/// Every action's routing agrees with etcd: a key's owner holds the queue
/// under the key's live lease, nobody else holds one, and every cache points
/// to the owner; without a key, no queue and no cache entry.
fn routing_restored(w: &World) -> bool {
    let actions: Vec<u8> = w
        .etcd
        .keys
        .iter()
        .map(|k| k.action)
        .chain(
            w.schedulers
                .iter()
                .flat_map(|s| s.queues.iter().map(|q| q.action)),
        )
        .chain(
            w.controllers
                .iter()
                .flat_map(|c| c.cache.iter().map(|(a, _)| *a)),
        )
        .collect();
    actions.into_iter().all(|action| match w.etcd.get(action) {
        Some(key) => {
            w.etcd.is_live(key.lease)
                && w.schedulers.iter().all(|s| match s.queue(&action) {
                    Some(q) => s.id == key.owner && q.lease == key.lease,
                    None => s.id != key.owner,
                })
                && w.controllers
                    .iter()
                    .all(|c| c.route(&action) == Some(&key.owner))
        }
        None => {
            w.schedulers.iter().all(|s| s.queue(&action).is_none())
                && w.controllers.iter().all(|c| c.route(&action).is_none())
        }
    })
}

fn any_pending(w: &World) -> bool {
    w.activations.contains(&ActivationState::Pending)
}

fn probe_state(w: &World) -> Option<ActivationState> {
    w.activations.last().copied()
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
            // pending ~> ¬pending: every activation reaches its outcome.
            Liveness::leads_to(
                "activations end",
                |_, w: &World| any_pending(w),
                |_, w: &World| !any_pending(w),
            ),
            // pending ~> (∀a submitted: executed(a)): every activation is
            // executed in the end, none failed; failing everything ends
            // activations, but fails this.
            Liveness::leads_to(
                "every activation submitted is executed",
                |_, w: &World| any_pending(w),
                |_, w: &World| all_submitted_executed(w),
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

fn all_submitted_executed(w: &World) -> bool {
    w.activations
        .iter()
        .all(|a| matches!(a, ActivationState::Unsubmitted | ActivationState::Executed))
}

/// The scenarios that `steadfast check leasequeue` knows.
pub mod scenarios {
    use super::*;

    /// A scenario of the given sizes without any fault.
    fn quiet(variant: Variant, schedulers: u8, controllers: u8, actions: u8) -> Bounds {
        Bounds {
            variant,
            schedulers,
            controllers,
            actions,
            ttl: 1,
            outage_ticks: 0,
            outage_clients: Vec::new(),
            outage_when_routed: false,
            submissions: Vec::new(),
            probe: false,
            crashes: 0,
            compactions: 0,
            retirements: 0,
            leader_losses: 0,
            drift: 0,
            delays: 0,
            lost_replies: 0,
            duplicates: 0,
            reorders: 0,
            stalls: 0,
            foreign_writes: 0,
        }
    }

    fn model(bounds: Bounds) -> LeaseQueueModel {
        LeaseQueueModel {
            bounds,
            without: None,
            every_sometimes: false,
        }
    }

    /// OpenWhisk #5286: two schedulers, one controller, one action; a lease
    /// TTL of 1 (raised to etcd's floor of 3) against a 3-tick outage that
    /// strikes once the action's key exists and the controller routes to it,
    /// and cuts off the queue's owner and the controller; an activation before, the probe after, and the
    /// queue free to retire when idle.
    pub fn seed5286(variant: Variant) -> LeaseQueueModel {
        model(Bounds {
            outage_ticks: 3,
            outage_clients: vec![Client::Scheduler(0), Client::Controller(0)],
            outage_when_routed: true,
            submissions: vec![(0, 0)],
            probe: true,
            retirements: 1,
            ..quiet(variant, 2, 1, 1)
        })
    }

    /// `seed5286` with a lease TTL of 6, which outlasts the outage and the
    /// fence's margin (the reporter's workaround), and no idle retirement:
    /// what remains is the outage alone.
    pub fn long_ttl(variant: Variant) -> LeaseQueueModel {
        let mut model = seed5286(variant);
        model.bounds.ttl = 6;
        model.bounds.retirements = 0;
        model
    }

    /// Two schedulers, two controllers, two actions, one activation of
    /// each through a different controller (which both place on scheduler
    /// 0, so that its lease holds two keys); an outage of scheduler 0 and
    /// controller 0, a compaction and a queue retiring.
    pub fn general(variant: Variant) -> LeaseQueueModel {
        model(Bounds {
            outage_ticks: 2,
            outage_clients: vec![Client::Scheduler(0), Client::Controller(0)],
            submissions: vec![(0, 0), (1, 1)],
            compactions: 1,
            retirements: 1,
            ..quiet(variant, 2, 2, 2)
        })
    }

    /// Two controllers submit an activation of one action each; each
    /// places its queue on another scheduler, whose elections race for the
    /// key: the loser forwards to the winner. A queue retires, and a
    /// request is held up in the network.
    pub fn contest(variant: Variant) -> LeaseQueueModel {
        model(Bounds {
            submissions: vec![(0, 0), (1, 0)],
            retirements: 1,
            delays: 1,
            ..quiet(variant, 2, 2, 2)
        })
    }

    /// `general`'s sizes with requests and replies going astray: a request
    /// applied late (after its retry), a reply lost, and a queue retiring.
    pub fn lossy(variant: Variant) -> LeaseQueueModel {
        model(Bounds {
            submissions: vec![(0, 0), (1, 1)],
            retirements: 1,
            delays: 1,
            lost_replies: 1,
            ..quiet(variant, 2, 2, 2)
        })
    }

    /// `general`'s sizes with at-least-once delivery: a message delivered
    /// twice, one overtaking another, and a scheduler crash.
    pub fn redelivery(variant: Variant) -> LeaseQueueModel {
        model(Bounds {
            submissions: vec![(0, 0), (1, 1)],
            crashes: 1,
            duplicates: 1,
            reorders: 1,
            ..quiet(variant, 2, 2, 2)
        })
    }

    /// `general`'s sizes with etcd's own faults: a leader loss, a watch
    /// that stalls without an error, etcd's clock a tick ahead, and a write
    /// outside the endpoint keys (a gap in the revisions a watch sees).
    pub fn etcd_faults(variant: Variant) -> LeaseQueueModel {
        model(Bounds {
            submissions: vec![(0, 0), (1, 1)],
            leader_losses: 1,
            stalls: 1,
            drift: 1,
            foreign_writes: 1,
            ..quiet(variant, 2, 2, 2)
        })
    }

    /// `general` with a message sent twice besides: for benchmarks.
    pub fn bench(variant: Variant) -> LeaseQueueModel {
        let mut model = general(variant);
        model.bounds.duplicates = 1;
        model
    }

    /// `seed5286` with one request held up in the network: a retiring
    /// queue's delete can land after its key was claimed again.
    pub fn late_delete(variant: Variant) -> LeaseQueueModel {
        let mut model = seed5286(variant);
        model.bounds.delays = 1;
        model
    }

    /// Two schedulers, one controller, one action, one activation: a
    /// message sent twice and a scheduler crash, without an outage.
    pub fn duplicate(variant: Variant) -> LeaseQueueModel {
        model(Bounds {
            submissions: vec![(0, 0)],
            crashes: 1,
            duplicates: 1,
            ..quiet(variant, 2, 1, 1)
        })
    }

    /// `seed5286` with etcd's clock running one tick ahead of the
    /// schedulers' once: within the margin the steadfast fence keeps.
    pub fn drift(variant: Variant) -> LeaseQueueModel {
        let mut model = seed5286(variant);
        model.bounds.drift = 1;
        model
    }

    /// `seed5286` with etcd's clock two ticks ahead: beyond the fence's
    /// margin, so that even the steadfast scheduler serves under a lease
    /// etcd has already expired. It shows what the fence assumes.
    pub fn drift_beyond(variant: Variant) -> LeaseQueueModel {
        let mut model = seed5286(variant);
        model.bounds.drift = 2;
        model
    }
}
