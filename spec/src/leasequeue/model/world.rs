//! The world around the roles: what the network does with their effects,
//! the messages in flight, and what users see of their activations.

use serde::{Deserialize, Serialize};

use super::{Ghost, LeaseQueueModel, Small};
use crate::leasequeue::controller::{self, Controller, WatchId};
use crate::leasequeue::etcd::Etcd;
use crate::leasequeue::scheduler::{self, ClaimResult, LeaseState, Scheduler};
use crate::leasequeue::{ExecutionFailure, FailReason, KeyFault, Outcome, Rule, Variant};

/// One client of etcd.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum Client {
    /// A scheduler.
    Scheduler(u8),
    /// A controller.
    Controller(u8),
}

/// Who decides which member a controller places a new queue on.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum Placement {
    /// The world, at each placement, among the members the controller
    /// knows: the proof holds for every placement policy.
    World,
    /// One rule per controller: controller `c` places action `a` on
    /// scheduler `a + c` while it knows that member, else on the lowest
    /// it knows, so that two controllers can place one queue on different
    /// members. One of the world's choices, kept for `general` and the
    /// scenarios that add faults to its sizes, where the world's choice
    /// would multiply the states 4.7 to 6.8 times (docs/leasequeue.md).
    Seeded,
}

impl Placement {
    /// Where [`Placement::Seeded`] has controller `c` place `action`'s
    /// queue among `members` (sorted): on scheduler `action + c` if it is
    /// one, else on the lowest.
    pub fn seeded(c: u8, action: u8, mut members: impl Iterator<Item = u8> + Clone) -> Option<u8> {
        let first = members.clone().find(|m| *m == action + c);
        first.or_else(|| members.next())
    }
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
    /// Who places new queues.
    pub placement: Placement,
    /// The lease TTL asked for, in ticks (etcd raises it to its floor).
    pub ttl: u8,
    /// How long the outage lasts, in ticks.
    pub outage_ticks: u8,
    /// Which clients the outage cuts off from etcd.
    pub outage_clients: Vec<Client>,
    /// The actions whose queue's owner (the scheduler its key names as the
    /// outage strikes) the outage cuts off too: where the world placed
    /// the queue, its owner is the one cut off.
    pub outage_owners: Vec<u8>,
    /// Whether the outage strikes only once every action's endpoint key
    /// exists and every controller routes to it: a running system, as in
    /// #5286.
    pub outage_when_routed: bool,
    /// The activations users submit (before, during or after the faults),
    /// in order: each the controller it is submitted to and its action.
    pub submissions: Vec<(u8, u8)>,
    /// The resubmissions users make, in order: each the controller it is
    /// made through and the activation it repeats (by its index in
    /// `submissions`), at any time once that one was submitted, before or
    /// after it ended. A caller that did not hear back, or a second
    /// caller with the same idempotency key, does so.
    #[serde(default)]
    pub retries: Vec<(u8, u8)>,
    /// Whether a probe activation is submitted again and again once the
    /// faults are over.
    pub probe: bool,
    /// Ticks from its submission to each activation's deadline (the
    /// probe's aside, which has none); `None`: no deadlines.
    pub deadline: Option<u8>,
    /// The schedulers' execution timeout, in ticks
    /// (`scheduler::Config::execute_for`); `None`: executions run as long
    /// as they take.
    pub execute_for: Option<u8>,
    /// How long, in ticks, a controller waits with copies sent to a
    /// scheduler whose member key it no longer sees before it presumes
    /// that scheduler gone (`controller::Config::presume_gone_after`).
    /// The proof of "executed at most once" rests on it exceeding the
    /// longest a live scheduler's member key stays gone; `presume-early`
    /// shows what breaks below that.
    #[serde(default = "default_presume_gone_after")]
    pub presume_gone_after: u8,
    /// Whether etcd may take longer than a tick to open a watch: a
    /// controller's opening may be held until after its next wake-ups
    /// (two at most), so that it asks for another meanwhile.
    #[serde(default)]
    pub slow_watch_openings: bool,
    /// The faults that may strike, each up to its budget.
    pub faults: Faults,
}

/// The `presume_gone_after` of a scenario written before it existed.
fn default_presume_gone_after() -> u8 {
    PRESUME_GONE_AFTER
}

/// The ticks a controller waits, in every scenario but `presume-early`,
/// before it presumes gone a scheduler whose member key it no longer sees.
pub const PRESUME_GONE_AFTER: u8 = 2;

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
        /// The peer scheduler that forwarded it; `None`: a controller sent
        /// it.
        forwarder: Option<u8>,
        /// The incarnation of `to` it is addressed to (`None`: its sender
        /// knew none).
        incarnation: Option<u8>,
        /// The controller that sent it, or that the forward names: where
        /// its outcome goes.
        reply_to: u8,
        /// An earlier copy may have run
        /// ([`scheduler::Input::Activation::may_have_run`]).
        may_have_run: bool,
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

/// An answer from one node to another: like every message between nodes,
/// it may be lost, held up (and overtaken) or delivered twice, each within
/// the scenario's budget ([`Faults::lost_answers`],
/// [`Faults::delayed_answers`], [`Faults::duplicate_answers`]).
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum Answer {
    /// Scheduler `from` acknowledges `copy`, which was delivered to it:
    /// its sender (a controller, or the peer that forwarded it) hears it.
    Ack {
        /// The scheduler.
        from: u8,
        /// The copy it acknowledges.
        copy: Message,
    },
    /// A scheduler refused `copy`: it goes back to its sender as a bounce.
    Refusal {
        /// The copy refused.
        copy: Message,
    },
    /// A scheduler reports an outcome to controller `to`.
    Report {
        /// The controller.
        to: u8,
        /// The report, as the controller takes it in.
        input: controller::Input<Small>,
    },
    /// A controller confirms a report to scheduler `to`.
    Confirm {
        /// The scheduler.
        to: u8,
        /// The confirmation, as the scheduler takes it in.
        input: scheduler::Input<Small>,
    },
}

/// Which kind of [`Answer`] a fault of the network strikes.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum AnswerKind {
    /// An acknowledgement.
    Ack,
    /// A refusal.
    Refusal,
    /// A report.
    Report,
    /// A confirmation.
    Confirm,
}

impl Answer {
    /// Its kind.
    pub fn kind(&self) -> AnswerKind {
        match self {
            Answer::Ack { .. } => AnswerKind::Ack,
            Answer::Refusal { .. } => AnswerKind::Refusal,
            Answer::Report { .. } => AnswerKind::Report,
            Answer::Confirm { .. } => AnswerKind::Confirm,
        }
    }
}

/// What the network does to the next answer of a kind
/// ([`Action::AnswerFault`](super::Action::AnswerFault)).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum AnswerFault {
    /// It is lost.
    Lose,
    /// It is held up, and arrives later ([`World::answers`]), after what
    /// is sent meanwhile.
    Delay,
    /// It arrives, and a copy of it arrives again later.
    Duplicate,
}

/// Where an activation is, as its user sees it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum ActivationState {
    /// Not submitted yet.
    Unsubmitted,
    /// Submitted, not resolved.
    Pending,
    /// Resolved as executed.
    Executed,
    /// Resolved as started, and ended without a result, for this reason.
    ExecutionFailed(ExecutionFailure),
    /// Resolved as failed, for this reason.
    Failed(FailReason),
    /// Resolved as ended before, how no longer known
    /// ([`Outcome::Forgotten`]).
    Forgotten,
    /// Resolved as not run again for this reason, whether it ran before not
    /// known ([`Outcome::Ambiguous`]).
    Ambiguous(FailReason),
    /// The call was answered as not routed: its action's key held a value
    /// no steadfast node wrote ([`Outcome::Unrouted`]). No outcome of the
    /// activation.
    Unrouted,
}

impl ActivationState {
    /// The state of a call resolved with `outcome`.
    pub fn of(outcome: Outcome) -> Self {
        match outcome {
            Outcome::Executed => ActivationState::Executed,
            Outcome::ExecutionFailed(why) => ActivationState::ExecutionFailed(why),
            Outcome::Failed(reason) => ActivationState::Failed(reason),
            Outcome::Forgotten => ActivationState::Forgotten,
            Outcome::Ambiguous(reason) => ActivationState::Ambiguous(reason),
            Outcome::Unrouted { .. } => ActivationState::Unrouted,
        }
    }

    /// Whether a caller was told how it ended.
    pub fn resolved(self) -> bool {
        !matches!(
            self,
            ActivationState::Unsubmitted | ActivationState::Pending
        )
    }

    /// Whether a caller was told an outcome of the activation: not that
    /// it ended before, how no longer known, nor that the call was not
    /// routed.
    pub fn tells_an_outcome(self) -> bool {
        self.resolved() && !matches!(self, ActivationState::Forgotten | ActivationState::Unrouted)
    }
}

/// A watch stream of a controller that etcd delivers on: one it opened,
/// and that nothing has closed (the controller, a cancellation or a
/// stall) since.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub struct Stream {
    /// The watch the controller asked for.
    pub watch: WatchId,
    /// The next revision it reports: each stream keeps its own place,
    /// whatever the controller wants.
    pub next: u32,
    /// A progress request on it waits for its answer.
    pub progress_asked: bool,
}

/// A scheduler request held up in the network.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct Late {
    /// The request.
    pub request: scheduler::Effect<Small>,
    /// Its sender crashed since: the reply has nobody to reach.
    pub orphaned: bool,
}

/// The whole world.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
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
    /// Per scheduler, the copies of activations delivered to it that
    /// their sender (a controller, or the peer that forwarded them) still
    /// sends it, each once: not acknowledged to the sender, nor ended for
    /// it (`LeaseQueueModel::drop_acknowledged`, after every step).
    pub unacked: Vec<Vec<Message>>,
    /// The controllers.
    pub controllers: Vec<Controller<Small>>,
    /// Per controller, its etcd requests not yet answered, oldest first.
    pub requests: Vec<Vec<controller::Effect<Small>>>,
    /// Per controller, the watch streams etcd delivers on, by watch. One
    /// the controller gave up on is closed as it answers: an opening that
    /// etcd answered late starts, and is closed in the same step.
    pub streams: Vec<Vec<Stream>>,
    /// Per controller, the watches it asked for that etcd is slow to open
    /// ([`Bounds::slow_watch_openings`]), oldest first.
    pub openings: Vec<Vec<(WatchId, Option<u32>)>>,
    /// Per client (schedulers, then controllers), whether it is cut off.
    pub cut: Vec<bool>,
    /// Ticks of outage left (0: none under way).
    pub outage: u8,
    /// Outages left to start.
    pub outages_left: u8,
    /// Messages to schedulers in flight, oldest first.
    pub messages: Vec<Message>,
    /// Answers held up in the network, oldest first
    /// ([`AnswerFault::Delay`], [`AnswerFault::Duplicate`]).
    pub answers: Vec<Answer>,
    /// The fault the network holds in store for the next answer of a
    /// kind: struck when one is sent.
    pub armed: Option<(AnswerFault, AnswerKind)>,
    /// Per scheduler, whether it left for good ([`Faults::departures`],
    /// [`Faults::drains`], [`Faults::vanishings`]).
    pub gone: Vec<bool>,
    /// Per scheduler, whether it vanished ([`Faults::vanishings`]): what is
    /// sent to it is neither answered nor refused.
    pub silent: Vec<bool>,
    /// Per activation (the probe last), where it is.
    pub activations: Vec<ActivationState>,
    /// Per resubmission ([`Bounds::retries`]), where it is, as the caller
    /// who made it sees it.
    pub retries: Vec<ActivationState>,
    /// Per activation, ticks until its deadline (zero: past it); `None`:
    /// it has none, or is not submitted yet.
    pub due: Vec<Option<u8>>,
    /// What is left of each fault budget.
    pub left: Faults,
    /// What the properties read.
    pub ghost: Ghost,
}

/// A scenario's faults, each a budget: in [`Bounds`] how many may strike,
/// in a [`World`] how many are left. One type for both, so that a fault
/// added here is budgeted, spent and shown alike.
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct Faults {
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
    /// [`MARGIN`](super::MARGIN) in hand, so up to that is within what it assumes.
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
    /// Messages to schedulers (an activation, a request to create a
    /// queue) lost in flight.
    #[serde(default)]
    pub lost_messages: u8,
    /// Answers between nodes ([`Answer`]: an acknowledgement, a refusal,
    /// a report, a confirmation) lost in flight.
    #[serde(default)]
    pub lost_answers: u8,
    /// Answers held up in the network, delivered later, after others.
    #[serde(default)]
    pub delayed_answers: u8,
    /// Answers delivered twice, the second time later.
    #[serde(default)]
    pub duplicate_answers: u8,
    /// Controller watches that stop delivering without an error.
    pub stalls: u8,
    /// Writes of keys outside the endpoint keys (OpenWhisk registers its
    /// schedulers and invokers in the same etcd): etcd's revision moves,
    /// and a watch on the endpoint keys sees a gap.
    pub foreign_writes: u8,
    /// Values no steadfast node wrote, put under an endpoint key no
    /// scheduler holds (another system's, or a key edited by hand): no
    /// owner can be read from it, and it stays until someone deletes it
    /// ([`Action::EtcdPutRight`], which nothing makes happen).
    ///
    /// [`Action::EtcdPutRight`]: super::Action::EtcdPutRight
    #[serde(default)]
    pub foreign_values: u8,
    /// Permissions an operator takes away, or never granted: etcd refuses
    /// a scheduler's user every request on an action's endpoint key, which
    /// the scheduler does not hold, until an operator grants it
    /// ([`Action::EtcdGrantAccess`], which nothing makes happen).
    ///
    /// [`Action::EtcdGrantAccess`]: super::Action::EtcdGrantAccess
    #[serde(default)]
    pub denials: u8,
    /// Schedulers that stop for good (a node lost, a scale-down without
    /// draining): what they ran and did not acknowledge is lost with them,
    /// their lease is left to expire, and messages to them bounce. One
    /// leaves only while another runs.
    pub departures: u8,
    /// Schedulers that stop for good without a word (a deleted pod whose
    /// address black-holes): what they ran and did not acknowledge is lost
    /// with them, their lease is left to expire, and what is sent to them
    /// is lost, neither answered nor refused. One vanishes only while
    /// another runs.
    #[serde(default)]
    pub vanishings: u8,
    /// Schedulers told to drain (a scale-down, a rolling update): each
    /// takes no new work, lets what it holds settle, gives its lease back
    /// and stops; messages to it bounce from then on. One drains only while
    /// another serves.
    pub drains: u8,
    /// Schedulers that join a running cluster (a scale-out): the last
    /// `joins` schedulers are not running when the world starts, and each
    /// may start once, the lowest first. In a [`World`], those not started
    /// yet.
    pub joins: u8,
    /// Executions that end with the executor's error (or panic: the
    /// scheduler takes either alike) instead of a result.
    pub execution_failures: u8,
    /// Executions that hang: they never end by themselves.
    pub hangs: u8,
}

impl Faults {
    /// Whether none is left.
    pub fn exhausted(&self) -> bool {
        *self == Faults::default()
    }
}

impl LeaseQueueModel {
    /// The schedulers that have started: all but the joiners yet to start
    /// ([`Faults::joins`]).
    pub(super) fn started(&self, w: &World) -> std::ops::Range<u8> {
        0..self.bounds.schedulers - w.left.joins
    }

    /// The schedulers running now: started, and not gone.
    pub(super) fn up(&self, w: &World) -> Vec<u8> {
        self.started(w)
            .filter(|s| !w.gone[usize::from(*s)])
            .collect()
    }

    /// Whether controller `c` knows fewer members than schedulers run.
    fn member_missing(&self, w: &World, c: u8) -> bool {
        w.controllers[usize::from(c)].members.len() < self.up(w).len()
    }

    pub(super) fn client_index(&self, client: Client) -> usize {
        match client {
            Client::Scheduler(s) => usize::from(s),
            Client::Controller(c) => usize::from(self.bounds.schedulers + c),
        }
    }

    pub(super) fn cut(&self, w: &World, client: Client) -> bool {
        w.cut[self.client_index(client)]
    }

    /// Whether etcd answers `client` now.
    pub(super) fn reachable(&self, w: &World, client: Client) -> bool {
        w.etcd.leader && !self.cut(w, client)
    }

    pub(super) fn feed_scheduler(
        &self,
        w: &mut World,
        s: u8,
        elapsed: u8,
        input: scheduler::Input<Small>,
    ) {
        let i = usize::from(s);
        let lost = matches!(&input, scheduler::Input::Claimed {
            result: ClaimResult::Exists(key), ..
        } if key.owner != s);
        if let scheduler::Input::Claimed {
            result: ClaimResult::Unreadable { why, .. },
            ..
        } = &input
        {
            match why {
                KeyFault::ForeignValue => w.ghost.claim_unreadable = true,
                KeyFault::AccessDenied => w.ghost.claim_denied = true,
            }
        }
        // A copy of an activation it settled, which it answers from memory.
        let from_memory = match &input {
            scheduler::Input::Activation { id, .. } if w.schedulers[i].outcome_of(id).is_some() => {
                Some(*id)
            }
            _ => None,
        };
        let settled_before = from_memory.is_some();
        // The reports it sends already (again at every wake-up and retry):
        // a failure counts once, as it is settled, not at each report of
        // it, nor at an answer from memory.
        let reporting: Vec<(u8, u8)> = (w.schedulers[i].reporting.iter())
            .map(|(id, to, _)| (*id, *to))
            .collect();
        let mut failed_now = Vec::new();
        // Its forwards to peers that vanished: one that ends here is taken
        // back, as nothing answers from there.
        let to_vanished = |w: &World| -> Vec<(u8, u8)> {
            let forwards = w.schedulers[i].forwarding.iter();
            let vanished = forwards.filter(|f| w.silent[usize::from(f.to)]);
            vanished.map(|f| (f.id, f.to)).collect()
        };
        let vanished_before = to_vanished(w);
        let effects = w.schedulers[i].step(&self.scheduler_config(), elapsed, input);
        w.ghost.taken_back |= vanished_before.len() > to_vanished(w).len();
        for effect in effects {
            match effect {
                // The model wakes every role at every tick, and fires an
                // idle timer when it is due, within the retirement budget. A
                // retry timer is never due before the next tick, whose
                // wake-up sends all a retry would (`retry_every` is a tick).
                scheduler::Effect::WakeIn { .. }
                | scheduler::Effect::RetryIn { .. }
                | scheduler::Effect::IdleTimer { .. } => {}
                // A cancellation may never land: the execution may still
                // end (or hang on), and its end changes nothing.
                scheduler::Effect::Cancel { .. } => {}
                // Its process stops: everything it took in has settled.
                scheduler::Effect::Drained => {
                    w.ghost.drained = true;
                    self.leave(w, s);
                }
                scheduler::Effect::Execute { id, action, lease } => {
                    w.ghost.late_start |= w.due[usize::from(id)] == Some(0);
                    let owned = w
                        .etcd
                        .get(action)
                        .is_some_and(|k| k.owner == s && k.lease == lease);
                    w.ghost.unfenced |= !(owned && w.etcd.is_live(lease));
                    let n = usize::from(id);
                    let most = w.ghost.excuses[n] + w.ghost.forgotten[n] + 2;
                    w.ghost.executions[n] = (w.ghost.executions[n] + 1).min(most);
                    // A second execution of one running here (a design
                    // that runs every copy) finishes with the first.
                    push_once(&mut w.running[i], id);
                }
                scheduler::Effect::Forward {
                    id,
                    action,
                    to,
                    incarnation,
                    reply_to,
                    may_have_run,
                } => {
                    w.ghost.contested |= lost;
                    let message = Message::Activation {
                        to,
                        id,
                        action,
                        forwarder: Some(s),
                        incarnation: Some(incarnation),
                        reply_to,
                        may_have_run,
                    };
                    self.offer(w, message);
                }
                scheduler::Effect::Report { id, to, outcome } => {
                    let settled_now = !reporting.contains(&(id, to)) && from_memory != Some(id);
                    if matches!(outcome, Outcome::Failed(_))
                        && settled_now
                        && !failed_now.contains(&id)
                    {
                        failed_now.push(id);
                        count(&mut w.ghost.failures[usize::from(id)]);
                    }
                    w.ghost.answered_from_memory |= settled_before;
                    let from = Some(s);
                    let input = controller::Input::Outcome { id, outcome, from };
                    self.send_answer(w, Answer::Report { to, input });
                }
                // Whoever sent a copy delivered here is told: the
                // controller, or the peer that forwarded it. It counts as
                // acknowledged once its sender hears it.
                scheduler::Effect::Ack { id } => {
                    let copies = w.unacked[i]
                        .iter()
                        .filter(|m| matches!(m, Message::Activation { id: a, .. } if *a == id));
                    let copies: Vec<Message> = copies.copied().collect();
                    for copy in copies {
                        self.send_answer(w, Answer::Ack { from: s, copy });
                    }
                }
                // The copy just delivered goes back to its sender as a
                // bounce: not taken in, it is not held here.
                scheduler::Effect::Refuse { id, incarnation } => {
                    let refused = take_delivered(w, s, |a, to| (a, to) == (id, incarnation));
                    // Addressed to a run of it (not to none: its sender
                    // saw no member key of it).
                    w.ghost.refused |= incarnation.is_some() && !refused.is_empty();
                    for copy in refused {
                        self.send_answer(w, Answer::Refusal { copy });
                    }
                }
                request @ (scheduler::Effect::Grant { .. }
                | scheduler::Effect::KeepAlive { .. }
                | scheduler::Effect::Register { .. }
                | scheduler::Effect::Revoke { .. }
                | scheduler::Effect::Claim { .. }
                | scheduler::Effect::Delete { .. }
                | scheduler::Effect::Resolve { .. }
                | scheduler::Effect::FindMember { .. }) => {
                    // A request to an unreachable etcd is lost (its caller's
                    // deadline passes); the scheduler sends it again.
                    if self.reachable(w, Client::Scheduler(s)) {
                        w.outbox[i].push(request);
                    }
                }
            }
        }
    }

    /// Feeds controller `c` an input that places no queue.
    pub(super) fn feed_controller(&self, w: &mut World, c: u8, input: controller::Input<Small>) {
        self.feed_controller_placing(w, c, input, None);
    }

    /// Feeds controller `c` an input; a queue it places goes on
    /// `place_on`, the world's choice.
    pub(super) fn feed_controller_placing(
        &self,
        w: &mut World,
        c: u8,
        input: controller::Input<Small>,
        place_on: Option<u8>,
    ) {
        let config = self.controller_config(place_on);
        let reported = matches!(input, controller::Input::Outcome { .. });
        let effects = w.controllers[usize::from(c)].step(&config, input);
        for effect in effects {
            match effect {
                // The world counts each activation's ticks to its deadline,
                // and tells its controller when it comes.
                controller::Effect::WakeIn { .. } | controller::Effect::DeadlineIn { .. } => {}
                controller::Effect::Overdue { .. } => w.ghost.overdue = true,
                controller::Effect::Confirm { id, to } => {
                    let input = scheduler::Input::ReportAcked { id, from: Some(c) };
                    self.send_answer(w, Answer::Confirm { to, input });
                }
                // etcd 3.4 answers a progress request only on a watcher in
                // step with it (one catching up gets none), and never on a
                // stream that is gone.
                controller::Effect::RequestProgress { id } => {
                    if let Some(at) = Self::stream(w, c, id) {
                        let in_step = self.in_step(w, c, at);
                        w.streams[usize::from(c)][at].progress_asked |= in_step;
                    }
                }
                controller::Effect::Unwatch { id } => {
                    if let Some(at) = Self::stream(w, c, id) {
                        w.streams[usize::from(c)].remove(at);
                    }
                }
                controller::Effect::Send {
                    id,
                    action,
                    to,
                    incarnation,
                    may_have_run,
                } => {
                    let message = Message::Activation {
                        to,
                        id,
                        action,
                        forwarder: None,
                        incarnation,
                        reply_to: c,
                        may_have_run,
                    };
                    self.offer(w, message);
                }
                controller::Effect::CreateQueue { action, to } => {
                    assert_eq!(Some(to), place_on, "the world chose where to place");
                    w.ghost.placed_member_missing |= self.member_missing(w, c);
                    self.send(w, Message::CreateQueue { to, action });
                }
                controller::Effect::Resolve { id, outcome } => {
                    // A failure the controller decided itself counts as one.
                    if let (Outcome::Failed(_), false) = (outcome, reported) {
                        count(&mut w.ghost.failures[usize::from(id)]);
                    }
                    self.resolve(w, c, id, outcome);
                }
                // A lookup of an unreachable etcd fails (its deadline);
                // a listing or a watch is lost and asked for again.
                request @ controller::Effect::Get { .. } => {
                    w.requests[usize::from(c)].push(request);
                }
                request @ (controller::Effect::List | controller::Effect::Watch { .. }) => {
                    if self.reachable(w, Client::Controller(c)) {
                        w.requests[usize::from(c)].push(request);
                    }
                }
            }
        }
    }

    /// Sends `answer` through the network: it arrives at once, unless the
    /// fault armed for its kind strikes it.
    fn send_answer(&self, w: &mut World, answer: Answer) {
        let Some((fault, _)) = w.armed.filter(|(_, kind)| *kind == answer.kind()) else {
            return self.hear(w, answer);
        };
        w.armed = None;
        match fault {
            AnswerFault::Lose => {}
            AnswerFault::Delay => w.answers.push(answer),
            AnswerFault::Duplicate => {
                w.answers.push(answer.clone());
                self.hear(w, answer);
            }
        }
    }

    /// `answer` reaches its receiver. One for a scheduler that is gone
    /// reaches nobody.
    pub(super) fn hear(&self, w: &mut World, answer: Answer) {
        match answer {
            Answer::Ack { from, copy } => {
                let Message::Activation {
                    id,
                    forwarder,
                    reply_to,
                    ..
                } = copy
                else {
                    return;
                };
                match forwarder {
                    None => {
                        let input = controller::Input::Acked { id, from };
                        self.feed_controller(w, reply_to, input);
                    }
                    Some(peer) if !w.gone[usize::from(peer)] => {
                        let input = scheduler::Input::ForwardAcked {
                            id,
                            from,
                            reply_to: Some(reply_to),
                        };
                        self.feed_scheduler(w, peer, 0, input);
                    }
                    Some(_) => {}
                }
            }
            Answer::Refusal { copy } => self.bounce(w, copy),
            Answer::Report { to, input } => self.feed_controller(w, to, input),
            Answer::Confirm { to, input } => {
                if !w.gone[usize::from(to)] {
                    self.feed_scheduler(w, to, 0, input);
                }
            }
        }
    }

    /// Controller `c` resolved its submission of `id` with `outcome`:
    /// every caller waiting on it there sees it end. One resolved with no
    /// caller waiting counts as a second resolution of every call it
    /// could be for.
    fn resolve(&self, w: &mut World, c: u8, id: u8, outcome: Outcome) {
        let i = usize::from(id);
        let ended = ActivationState::of(outcome);
        let original = self.submitter(id) == c;
        let retries: Vec<usize> = (self.bounds.retries.iter().enumerate())
            .filter(|(_, r)| **r == (c, id))
            .map(|(r, _)| r)
            .collect();
        let mut waited = false;
        if original && w.activations[i] == ActivationState::Pending {
            w.activations[i] = ended;
            count(&mut w.ghost.resolutions[i]);
            waited = true;
        }
        for &r in &retries {
            if w.retries[r] == ActivationState::Pending {
                w.retries[r] = ended;
                count(&mut w.ghost.retry_resolutions[r]);
                waited = true;
            }
        }
        if !waited {
            if original {
                count(&mut w.ghost.resolutions[i]);
            }
            for r in retries {
                count(&mut w.ghost.retry_resolutions[r]);
            }
        }
    }

    /// Counts, once as it happens, each loss of the memory of an
    /// activation that ran or failed and may still be submitted again: no
    /// running scheduler runs it, or remembers settling it while it owns
    /// the action's queue. The loss is made good once one does again.
    pub(super) fn mark_forgotten(&self, w: &mut World) {
        let retried = self.bounds.retries.iter().zip(&w.retries);
        let mut may_come: Vec<u8> = retried
            .filter(|(_, state)| {
                matches!(
                    state,
                    ActivationState::Unsubmitted | ActivationState::Pending
                )
            })
            .map(|((_, id), _)| *id)
            .collect();
        may_come.sort_unstable();
        may_come.dedup();
        for id in self.bounds.retries.iter().map(|(_, id)| *id) {
            let i = usize::from(id);
            let settled = w.ghost.executions[i] > 0 || w.ghost.failures[i] > 0;
            let lost = may_come.contains(&id) && settled && !self.remembered(w, id);
            if lost && !w.ghost.memory_lost[i] {
                count(&mut w.ghost.forgotten[i]);
            }
            w.ghost.memory_lost[i] = lost;
        }
    }

    /// Keeps in what was delivered to each scheduler only the copies
    /// their sender still sends it (it has not heard the acknowledgement,
    /// nor how the activation ended): a crash of the scheduler lets those
    /// run once more.
    pub(super) fn drop_acknowledged(w: &mut World) {
        let World {
            unacked,
            controllers,
            schedulers,
            gone,
            ..
        } = w;
        for (s, copies) in unacked.iter_mut().enumerate() {
            let s = s as u8;
            copies.retain(|copy| match *copy {
                Message::Activation {
                    id,
                    forwarder: None,
                    reply_to,
                    ..
                } => (controllers[usize::from(reply_to)].sent.iter())
                    .any(|sent| (sent.id, sent.to) == (id, s)),
                Message::Activation {
                    id,
                    forwarder: Some(peer),
                    reply_to,
                    ..
                } => {
                    let forwarding = &schedulers[usize::from(peer)].forwarding;
                    !gone[usize::from(peer)]
                        && forwarding
                            .iter()
                            .any(|f| (f.id, f.to, f.reply_to) == (id, s, reply_to))
                }
                Message::CreateQueue { .. } => false,
            });
        }
    }

    /// Whether a running scheduler runs activation `id`, or remembers
    /// settling it while it owns the action's queue: where a resubmission
    /// is routed, it is answered. (One that holds a resubmission waiting
    /// for a queue knows nothing of the run.)
    fn remembered(&self, w: &World, id: u8) -> bool {
        let action = self.bounds.submissions[usize::from(id)].1;
        let owner = w.etcd.get(action).map(|k| k.owner);
        self.up(w).into_iter().any(|s| {
            let scheduler = &w.schedulers[usize::from(s)];
            scheduler.running.contains(&id)
                || (scheduler.outcome_of(&id).is_some() && owner == Some(s))
        })
    }

    /// The controller activation `id` was submitted to (the probe's is
    /// controller 0).
    pub(super) fn submitter(&self, id: u8) -> u8 {
        let submissions = &self.bounds.submissions;
        submissions.get(usize::from(id)).map_or(0, |(c, _)| *c)
    }

    /// Whether no fault can happen any more.
    pub(super) fn faults_over(w: &World) -> bool {
        w.outage == 0
            && w.outages_left == 0
            && w.left.exhausted()
            && w.etcd.foreign.is_empty()
            && w.etcd.denied.is_empty()
            && w.armed.is_none()
            && w.answers.is_empty()
    }

    /// Whether the probe is settled everywhere, so a user may submit it
    /// again as a new activation.
    pub(super) fn probe_idle(&self, w: &World, probe: u8) -> bool {
        let mentioned = |m: &Message| matches!(m, Message::Activation { id, .. } if *id == probe);
        w.activations[usize::from(probe)] != ActivationState::Pending
            && !w.messages.iter().any(mentioned)
            && w.schedulers
                .iter()
                .all(|s| s.forwarding.iter().all(|f| f.id != probe))
            && w.unacked.iter().flatten().all(|m| !mentioned(m))
            && w.running.iter().flatten().all(|r| *r != probe)
    }

    /// The index of the message `Deliver(s)` (or the second one, out of
    /// order) takes.
    pub(super) fn message_for(w: &World, s: u8, nth: usize) -> Option<usize> {
        w.messages
            .iter()
            .enumerate()
            .filter(|(_, m)| m.to() == s)
            .nth(nth)
            .map(|(i, _)| i)
    }

    pub(super) fn deliver(&self, w: &mut World, at: usize) {
        let message = w.messages.remove(at);
        match message {
            Message::Activation {
                to,
                id,
                action,
                forwarder,
                incarnation,
                reply_to,
                may_have_run,
            } => {
                push_once(&mut w.unacked[usize::from(to)], message);
                let input = scheduler::Input::Activation {
                    id,
                    action,
                    forwarded: forwarder.is_some(),
                    incarnation,
                    left: w.due[usize::from(id)],
                    reply_to,
                    may_have_run,
                };
                self.feed_scheduler(w, to, 0, input);
            }
            Message::CreateQueue { to, action } => {
                self.feed_scheduler(w, to, 0, scheduler::Input::CreateQueue { action })
            }
        }
    }

    /// Sends an activation, unless its scheduler holds it and ignores
    /// copies of what it holds (whichever incarnation they are addressed
    /// to), or owes their controller its outcome already: that copy would
    /// change nothing, and is left out. A copy sent again while one is in
    /// flight merges with it (two copies delivered are the duplicates
    /// fault's).
    fn offer(&self, w: &mut World, message: Message) {
        let rules = self.rules();
        let ignored = match message {
            Message::Activation {
                to, id, reply_to, ..
            } => {
                let scheduler = &w.schedulers[usize::from(to)];
                rules.has(Rule::Deduplicate)
                    && scheduler.holds(&id)
                    && (!rules.has(Rule::AnswerEveryCopy) || scheduler.asked_by(&id, &reply_to))
            }
            Message::CreateQueue { .. } => false,
        };
        if !ignored {
            self.send(w, message);
        }
    }

    /// Puts `message` in flight (merged with an equal one in flight), or,
    /// its scheduler gone, bounces it back to its sender at once: nothing
    /// listens at the address.
    pub(super) fn send(&self, w: &mut World, message: Message) {
        let to = usize::from(message.to());
        if !w.gone[to] {
            push_once(&mut w.messages, message);
            return;
        }
        let activation = matches!(message, Message::Activation { .. });
        if w.silent[to] {
            // Nothing answers at the address, and nothing refuses.
            w.ghost.swallowed |= activation;
            return;
        }
        w.ghost.bounced |= activation;
        self.bounce(w, message);
    }

    /// Hands an activation that was not taken in back to its sender: a
    /// controller, or the peer that forwarded it.
    fn bounce(&self, w: &mut World, message: Message) {
        let Message::Activation {
            to,
            id,
            forwarder,
            incarnation,
            reply_to,
            ..
        } = message
        else {
            return;
        };
        match forwarder {
            // A peer gone too hears nothing.
            Some(peer) if w.gone[usize::from(peer)] => {}
            Some(peer) => {
                let input = scheduler::Input::Bounced {
                    id,
                    to,
                    incarnation,
                };
                self.feed_scheduler(w, peer, 0, input);
            }
            None => {
                let input = controller::Input::Bounced {
                    id,
                    to,
                    incarnation,
                };
                self.feed_controller(w, reply_to, input);
            }
        }
    }

    /// A tick passed: every deadline still ahead comes a tick nearer, and
    /// the controller of each activation whose deadline comes now is told
    /// (its timer fires).
    pub(super) fn count_down_deadlines(&self, w: &mut World) {
        for id in 0..w.due.len() as u8 {
            let Some(left) = w.due[usize::from(id)].filter(|left| *left > 0) else {
                continue;
            };
            w.due[usize::from(id)] = Some(left - 1);
            if left == 1 {
                let input = controller::Input::Deadline { id };
                self.feed_controller(w, self.submitter(id), input);
            }
        }
    }

    /// Scheduler `s` stops (a crash, or for good) remembering nothing:
    /// every activation delivered to it that it did not acknowledge may run
    /// once more, since its sender sends it again, whoever ran it (`s`, or
    /// the peer it forwarded it to, whose acknowledgement went to `s`). One it
    /// acknowledged is not sent again, and a copy of it still in flight is
    /// addressed to this incarnation, which a later one refuses
    /// ([`Rule::FenceCopies`]).
    pub(super) fn excuse_unacknowledged(w: &mut World, s: u8) {
        let mut held: Vec<u8> = w.unacked[usize::from(s)]
            .iter()
            .filter_map(|message| match message {
                Message::Activation { id, .. } => Some(*id),
                Message::CreateQueue { .. } => None,
            })
            .collect();
        // Copies of one activation from two senders: one fault, one
        // execution more.
        held.sort_unstable();
        held.dedup();
        for id in held {
            w.ghost.excuses[usize::from(id)] += 1;
        }
    }

    /// Scheduler `s` is gone for good, holding nothing (what it held is
    /// dealt with by its caller): its requests held up in the network may
    /// still apply, to no one's reply; what is in flight to it bounces back
    /// to its sender, and what was delivered and not acknowledged its
    /// sender sends again, and that bounces.
    pub(super) fn leave(&self, w: &mut World, s: u8) {
        let i = usize::from(s);
        w.gone[i] = true;
        w.schedulers[i] = Scheduler::new(s, w.schedulers[i].incarnation);
        w.outbox[i].clear();
        w.running[i].clear();
        w.unacked[i].clear();
        w.late[i].iter_mut().for_each(|l| l.orphaned = true);
        let (bounced, kept): (Vec<Message>, _) = std::mem::take(&mut w.messages)
            .into_iter()
            .partition(|m| m.to() == s);
        w.messages = kept;
        for message in bounced {
            self.send(w, message);
        }
    }

    /// Cuts `client` off: its requests and replies in flight are lost, its
    /// watch stream dies without a word.
    pub(super) fn cut_off(&self, w: &mut World, client: Client) {
        let index = self.client_index(client);
        w.cut[index] = true;
        match client {
            Client::Scheduler(s) => w.outbox[usize::from(s)].clear(),
            Client::Controller(c) => {
                w.streams[usize::from(c)].clear();
                w.openings[usize::from(c)].clear();
                w.requests[usize::from(c)].retain(|r| matches!(r, controller::Effect::Get { .. }));
            }
        }
    }
}

/// Takes out of what was delivered to scheduler `s` and not acknowledged
/// the activations `picked` chooses by id and the run they were addressed
/// to: those it acknowledges, or refuses, now.
fn take_delivered(w: &mut World, s: u8, picked: impl Fn(u8, Option<u8>) -> bool) -> Vec<Message> {
    let unacked = &mut w.unacked[usize::from(s)];
    let (taken, kept) = std::mem::take(unacked).into_iter().partition(|m| match *m {
        Message::Activation {
            id, incarnation, ..
        } => picked(id, incarnation),
        Message::CreateQueue { .. } => false,
    });
    *unacked = kept;
    taken
}

/// Counts one more in a ghost count, up to 2: the properties tell apart
/// none, one and more, and a design that runs an activation at every copy
/// would otherwise count without end.
fn count(n: &mut u8) {
    *n = (*n + 1).min(2);
}

/// Adds `item` to the end of `list` unless an equal one is there: a
/// message sent again while a copy is in flight, or delivered again while
/// one waits for its acknowledgement, is the same message (a copy
/// delivered twice is the duplicates fault's).
fn push_once<T: PartialEq>(list: &mut Vec<T>, item: T) {
    if !list.contains(&item) {
        list.push(item);
    }
}

/// Renumbers what the world numbers without end (each scheduler's
/// keepalives, etcd's revisions) so that worlds the same to every role are
/// one state: every role and etcd only compare those numbers and take the
/// next one, so the world renumbered has the same steps, to worlds that
/// renumber alike, and the same properties.
pub(crate) fn renumber(w: &mut World) {
    renumber_keepalives(w);
    renumber_revisions(w);
    renumber_watches(w);
}

/// Renumbers each controller's watches, in the role, in etcd and in
/// flight, by their order (0, 1, ...). The role only compares watch
/// numbers (an answer's with the one it listens to, or with those it asked
/// for since it began starting) and counts on from the last, so the world
/// renumbered behaves as before; without it the count of watches ever
/// asked for would make the states infinite. A starting controller's first
/// watch is moved up to the first of its watches still on their way (or
/// its last, if none is): no answer can name one between, so the role
/// takes the same answers.
fn renumber_watches(w: &mut World) {
    for (c, controller) in w.controllers.iter_mut().enumerate() {
        let mut in_world: Vec<&mut WatchId> = Vec::new();
        in_world.extend(w.streams[c].iter_mut().map(|s| &mut s.watch));
        in_world.extend(w.openings[c].iter_mut().map(|(id, _)| id));
        for request in &mut w.requests[c] {
            if let controller::Effect::Watch { id, .. } = request {
                in_world.push(id);
            }
        }
        let last = controller.last_watch;
        let mut ids: Vec<&mut WatchId> = vec![&mut controller.last_watch];
        match &mut controller.watch {
            controller::Watch::Active { id, .. } => ids.push(id),
            controller::Watch::Starting { since, .. } => {
                let on_their_way = in_world.iter().map(|id| **id).filter(|id| *id >= *since);
                *since = on_their_way.chain([last]).min().unwrap_or(last);
                ids.push(since);
            }
            controller::Watch::Listing => {}
        }
        ids.extend(in_world);
        let mut numbers: Vec<u64> = ids.iter().map(|id| id.0).collect();
        numbers.sort_unstable();
        numbers.dedup();
        for id in ids {
            id.0 = numbers.partition_point(|n| *n < id.0) as u64;
        }
    }
}

/// Renumbers each scheduler's keepalives, in the role and in flight, by
/// their order (0, 1, ...), and its next keepalive after them. The role
/// only compares keepalive numbers (an answer's with those it waits for,
/// and which was sent first), so the world renumbered behaves as before;
/// without it the count of keepalives ever sent, which grows at every tick,
/// would make the states infinite. A keepalive in flight for a lease the
/// scheduler no longer holds is answered to no effect: it gets 0.
fn renumber_keepalives(w: &mut World) {
    for i in 0..w.schedulers.len() {
        let held = w.schedulers[i].live_lease().copied();
        let mut numbers: Vec<u64> = Vec::new();
        if let LeaseState::Held { keepalives, .. } = &w.schedulers[i].lease {
            numbers.extend(keepalives.iter().map(|(k, _)| *k));
        }
        let in_flight = w.outbox[i]
            .iter_mut()
            .chain(w.late[i].iter_mut().map(|l| &mut l.request));
        let mut others = Vec::new();
        for request in in_flight {
            if let scheduler::Effect::KeepAlive { lease, keepalive } = request {
                if Some(*lease) == held {
                    numbers.push(*keepalive);
                    others.push(keepalive);
                } else {
                    *keepalive = 0;
                }
            }
        }
        numbers.sort_unstable();
        numbers.dedup();
        let rank = |k: u64| numbers.partition_point(|n| *n < k) as u64;
        for keepalive in others {
            *keepalive = rank(*keepalive);
        }
        if let LeaseState::Held {
            keepalives,
            next_keepalive,
            ..
        } = &mut w.schedulers[i].lease
        {
            for (k, _) in keepalives.iter_mut() {
                *k = rank(*k);
            }
            *next_keepalive = numbers.len() as u64;
        }
    }
}

/// Renumbers every revision the world holds (etcd's, its keys' and its
/// log's, the compacted one, the controllers' watches and watch requests,
/// the schedulers' queues, retirements and deletes in flight), keeping 0,
/// their order and which follow one another, and closing every larger gap
/// to 2. The roles and etcd only compare revisions and take the next
/// one, so the world renumbered behaves as before: without it the count of
/// writes so far, which depends on the order things happened in, would
/// tell apart worlds that are the same to every role.
fn renumber_revisions(w: &mut World) {
    let mut revisions = revisions_mut(w);
    let mut numbers: Vec<u32> = revisions.iter().map(|r| **r).collect();
    numbers.push(0);
    numbers.sort_unstable();
    numbers.dedup();
    let mut renumbered = Vec::with_capacity(numbers.len());
    let mut last = (0, 0);
    for n in numbers.iter().copied() {
        let new = last.1 + (n - last.0).min(2);
        renumbered.push(new);
        last = (n, new);
    }
    for r in revisions.iter_mut() {
        **r = renumbered[numbers.partition_point(|n| *n < **r)];
    }
}

/// Every revision the world holds.
fn revisions_mut(w: &mut World) -> Vec<&mut u32> {
    let etcd = &mut w.etcd;
    let mut revisions = vec![&mut etcd.rev, &mut etcd.compacted];
    revisions.extend(etcd.keys.iter_mut().map(|k| &mut k.create_rev));
    revisions.extend(etcd.log.iter_mut().map(|c| &mut c.rev));
    for c in w.controllers.iter_mut() {
        match &mut c.watch {
            controller::Watch::Active { next, .. } => revisions.push(next),
            controller::Watch::Starting {
                from: Some(from), ..
            } => revisions.push(from),
            controller::Watch::Starting { from: None, .. } | controller::Watch::Listing => {}
        }
    }
    revisions.extend(w.streams.iter_mut().flatten().map(|s| &mut s.next));
    for request in w.requests.iter_mut().flatten() {
        if let controller::Effect::Watch {
            from: Some(from), ..
        } = request
        {
            revisions.push(from);
        }
    }
    let openings = w.openings.iter_mut().flatten();
    revisions.extend(openings.filter_map(|(_, from)| from.as_mut()));
    for s in w.schedulers.iter_mut() {
        revisions.extend(s.queues.iter_mut().map(|q| &mut q.created));
        revisions.extend(s.retiring.iter_mut().filter_map(|(_, r)| r.as_mut()));
    }
    let in_flight = w
        .outbox
        .iter_mut()
        .flatten()
        .chain(w.late.iter_mut().flatten().map(|l| &mut l.request));
    for request in in_flight {
        if let scheduler::Effect::Delete {
            created: Some(created),
            ..
        } = request
        {
            revisions.push(created);
        }
    }
    revisions
}
