//! The stateright model of schedulers and controllers around etcd: an
//! explicit discrete clock, leases that run down only while etcd has a
//! leader, per-client connectivity cut by an outage for a number of ticks,
//! watches that resume, restart or fall behind a compaction, scheduler
//! crashes, queues that retire when idle, and bounded activations.
//!
//! Every action that touches a role calls its `step`; the model adds only
//! the world around them, and ghost state that the properties read.

use serde::{Deserialize, Serialize};
use stateright::{Model, Property};

use super::controller::{self, Controller, Watch};
use super::etcd::{Etcd, Refused};
use super::scheduler::{self, Scheduler};
use super::{Domain, FailReason, Rule, Rules, Variant};
use crate::temporal::{Fairness, Liveness, TemporalModel};

/// The model's domain: small numbers for every identifier, so that its
/// states stay few.
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

    fn next_revision(rev: u32) -> u32 {
        rev + 1
    }

    fn action_number(action: &u8) -> u64 {
        u64::from(*action)
    }
}

/// One client of etcd.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum Client {
    /// A scheduler.
    Scheduler(u8),
    /// A controller.
    Controller(u8),
}

/// The sizes and bounds of a scenario.
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
    /// The lease TTL asked for, in ticks (etcd raises it to 2).
    pub ttl: u8,
    /// How long the outage lasts, in ticks.
    pub outage_ticks: u8,
    /// Which clients the outage cuts off from etcd.
    pub outage_clients: Vec<Client>,
    /// Activations users submit (before, during or after the outage).
    pub activations: u8,
    /// Whether a probe activation is submitted again and again once the
    /// outage is over.
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
    /// scheduler's clock running slow): leases run down that much more
    /// between two keepalives. The steadfast fence keeps one tick in hand,
    /// so 1 is within what it assumes and 2 is not.
    pub drift: u8,
}

/// A message between roles.
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
    },
    /// A request that scheduler `to` create a queue for `action`.
    CreateQueue {
        /// The scheduler.
        to: u8,
        /// The action.
        action: u8,
    },
}

/// Where an activation is.
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
    /// Per activation, terminal outcomes since it was submitted.
    pub outcomes: Vec<u8>,
    /// Work was once handed out under a lease etcd no longer held, or from a
    /// queue whose key was not its owner's.
    pub unfenced: bool,
}

/// The whole world.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize)]
pub struct World {
    /// etcd.
    pub etcd: Etcd,
    /// The schedulers.
    pub schedulers: Vec<Scheduler<Small>>,
    /// Per scheduler, its etcd requests not yet answered, oldest first.
    pub outbox: Vec<Vec<scheduler::Effect<Small>>>,
    /// The controllers.
    pub controllers: Vec<Controller<Small>>,
    /// Per controller, its etcd requests not yet answered, oldest first.
    pub requests: Vec<Vec<controller::Effect<Small>>>,
    /// Per client (schedulers, then controllers), whether it is cut off.
    pub cut: Vec<bool>,
    /// Ticks of outage left (0: none under way).
    pub outage: u8,
    /// Outages left to start.
    pub outages_left: u8,
    /// Messages in flight, oldest first; each scheduler receives its own in
    /// order.
    pub messages: Vec<Message>,
    /// Per activation (the probe last), where it is.
    pub activations: Vec<ActivationState>,
    /// Crashes left.
    pub crashes: u8,
    /// Compactions left.
    pub compactions: u8,
    /// Retirements left.
    pub retirements: u8,
    /// Leader losses left.
    pub leader_losses: u8,
    /// Ticks etcd's clock may still run ahead.
    pub drift: u8,
    /// What the properties read.
    pub ghost: Ghost,
}

/// A step of the world.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum Action {
    /// Users and faults do nothing now (a stutter step), so that "nothing
    /// more happens" is a behaviour while budgets remain.
    UserIdle,
    /// A user submits the next activation.
    UserSubmit,
    /// A user submits the probe activation again (after the outage); users
    /// keep doing so (weak fairness), so a queue that stays broken shows.
    UserProbe,
    /// The outage begins.
    NetworkOutage,
    /// A tick of time; every scheduler sends its keepalive (the keepalive
    /// period is taken to be well under a tick).
    ClockTick,
    /// etcd answers a scheduler's oldest request.
    SchedulerEtcd(u8),
    /// etcd answers a controller's oldest request.
    ControllerEtcd(u8),
    /// A controller's watch delivers the next change.
    WatchDeliver(u8),
    /// The oldest message for this scheduler arrives.
    Deliver(u8),
    /// etcd compacts its history.
    EtcdCompact,
    /// etcd loses its leader.
    EtcdLeaderLoss,
    /// etcd elects a leader, which extends every lease.
    EtcdLeaderElected,
    /// etcd's clock ticks once more than the schedulers' do: leases run
    /// down without a keepalive in between.
    EtcdClockAhead,
    /// A scheduler crashes and restarts with nothing.
    SchedulerCrash(u8),
    /// A scheduler's queue retires, idle.
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
        *self == Action::SchedulerEtcd(S)
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
}

impl LeaseQueueModel {
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

    fn probe(&self) -> Option<u8> {
        self.bounds.probe.then_some(self.bounds.activations)
    }

    fn action_of(&self, id: u8) -> u8 {
        if Some(id) == self.probe() {
            0
        } else {
            id % self.bounds.actions
        }
    }

    fn cut(&self, w: &World, client: Client) -> bool {
        let index = match client {
            Client::Scheduler(s) => usize::from(s),
            Client::Controller(c) => usize::from(self.bounds.schedulers + c),
        };
        w.cut[index]
    }

    fn feed_scheduler(&self, w: &mut World, s: u8, input: scheduler::Input<Small>) {
        let ttl = w.etcd.ttl;
        let effects = w.schedulers[usize::from(s)].step(self.rules(), ttl, input);
        for effect in effects {
            match effect {
                scheduler::Effect::KeepAlive { lease } => {
                    let answer = if self.cut(w, Client::Scheduler(s)) || !w.etcd.leader {
                        scheduler::Input::Unanswered
                    } else {
                        scheduler::Input::KeptAlive {
                            ttl: w.etcd.keep_alive(lease),
                        }
                    };
                    self.feed_scheduler(w, s, answer);
                }
                scheduler::Effect::Execute { id, action, lease } => {
                    let owned = w
                        .etcd
                        .get(action)
                        .is_some_and(|k| k.owner == s && k.lease == lease);
                    w.ghost.unfenced |= !(owned && w.etcd.is_live(lease));
                    self.end(w, id, ActivationState::Executed);
                }
                scheduler::Effect::Forward { id, action, to } => {
                    w.messages.push(Message::Activation { to, id, action });
                }
                scheduler::Effect::Fail { id, reason } => {
                    self.end(w, id, ActivationState::Failed(reason));
                }
                request => {
                    let outbox = &mut w.outbox[usize::from(s)];
                    if !outbox.contains(&request) {
                        outbox.push(request);
                    }
                }
            }
        }
    }

    fn feed_controller(&self, w: &mut World, c: u8, input: controller::Input<Small>) {
        let effects = w.controllers[usize::from(c)].step(self.rules(), input);
        for effect in effects {
            match effect {
                controller::Effect::Send { id, action, to } => {
                    w.messages.push(Message::Activation { to, id, action });
                }
                controller::Effect::CreateQueue { action, to } => {
                    w.messages.push(Message::CreateQueue { to, action });
                }
                controller::Effect::Fail { id, reason } => {
                    self.end(w, id, ActivationState::Failed(reason));
                }
                request => {
                    let requests = &mut w.requests[usize::from(c)];
                    if !requests.contains(&request) {
                        requests.push(request);
                    }
                }
            }
        }
    }

    fn end(&self, w: &mut World, id: u8, state: ActivationState) {
        let i = usize::from(id);
        w.activations[i] = state;
        if state == ActivationState::Executed {
            w.ghost.executions[i] += 1;
        }
        w.ghost.outcomes[i] += 1;
    }

    fn scheduler_etcd(&self, w: &mut World, s: u8) {
        let request = w.outbox[usize::from(s)].remove(0);
        let input = match request {
            scheduler::Effect::Grant => scheduler::Input::Granted {
                lease: w.etcd.grant(),
            },
            scheduler::Effect::Revoke { lease } => {
                w.etcd.revoke(lease);
                scheduler::Input::Revoked
            }
            scheduler::Effect::Claim { action, lease } => {
                match w.etcd.create_if_absent(action, s, lease) {
                    Ok(_) => scheduler::Input::Claimed {
                        action,
                        won: true,
                        owner: Some(s),
                    },
                    Err(Refused::Exists { owner, lease: held }) => scheduler::Input::Claimed {
                        action,
                        won: owner == s && held == lease,
                        owner: Some(owner),
                    },
                    Err(Refused::LeaseNotFound) => scheduler::Input::Claimed {
                        action,
                        won: false,
                        owner: None,
                    },
                }
            }
            scheduler::Effect::Resolve { id, action } => scheduler::Input::Resolved {
                id,
                action,
                owner: w.etcd.get(action).map(|k| (k.owner, k.lease)),
            },
            scheduler::Effect::Delete {
                action,
                owned_under,
            } => {
                w.etcd.delete(action, owned_under.map(|lease| (s, lease)));
                return;
            }
            scheduler::Effect::KeepAlive { .. }
            | scheduler::Effect::Execute { .. }
            | scheduler::Effect::Forward { .. }
            | scheduler::Effect::Fail { .. } => return,
        };
        self.feed_scheduler(w, s, input);
    }

    fn controller_etcd(&self, w: &mut World, c: u8) {
        let request = w.requests[usize::from(c)].remove(0);
        let cut = self.cut(w, Client::Controller(c)) || !w.etcd.leader;
        let input = match (request, cut) {
            (controller::Effect::Get { id, action }, true) => {
                controller::Input::GetFailed { id, action }
            }
            (controller::Effect::Get { id, action }, false) => controller::Input::Got {
                id,
                action,
                owner: w.etcd.get(action).map(|k| k.owner),
            },
            (controller::Effect::List, _) => controller::Input::Listed {
                rev: w.etcd.rev,
                keys: w.etcd.keys.iter().map(|k| (k.action, k.owner)).collect(),
            },
            _ => return,
        };
        self.feed_controller(w, c, input);
    }

    /// Whether the outage is over and cannot happen again.
    fn recovered_for_good(w: &World) -> bool {
        w.outage == 0 && w.outages_left == 0
    }
}

impl Message {
    /// The scheduler it is for.
    pub fn to(&self) -> u8 {
        match *self {
            Message::Activation { to, .. } | Message::CreateQueue { to, .. } => to,
        }
    }
}

impl Model for LeaseQueueModel {
    type State = World;
    type Action = Action;

    fn init_states(&self) -> Vec<World> {
        let b = &self.bounds;
        let etcd = Etcd::new(b.ttl);
        let total = usize::from(b.activations) + usize::from(b.probe);
        vec![World {
            schedulers: (0..b.schedulers).map(Scheduler::new).collect(),
            outbox: vec![Vec::new(); usize::from(b.schedulers)],
            // Each controller knows the schedulers in an order of its own
            // (controller c starts from scheduler c), so two controllers
            // can place one new queue on different schedulers, whose
            // elections then race for its key.
            controllers: (0..b.controllers)
                .map(|c| {
                    let known = (0..b.schedulers).map(|s| (s + c) % b.schedulers.max(1));
                    Controller::new(known.collect(), etcd.rev)
                })
                .collect(),
            requests: vec![Vec::new(); usize::from(b.controllers)],
            cut: vec![false; usize::from(b.schedulers + b.controllers)],
            etcd,
            outage: 0,
            outages_left: u8::from(b.outage_ticks > 0),
            messages: Vec::new(),
            activations: vec![ActivationState::Unsubmitted; total],
            crashes: b.crashes,
            compactions: b.compactions,
            retirements: b.retirements,
            leader_losses: b.leader_losses,
            drift: b.drift,
            ghost: Ghost {
                executions: vec![0; total],
                outcomes: vec![0; total],
                ..Ghost::default()
            },
        }]
    }

    fn actions(&self, w: &World, actions: &mut Vec<Action>) {
        let next_submission = w.activations[..usize::from(self.bounds.activations)]
            .contains(&ActivationState::Unsubmitted);
        let disturbable = next_submission
            || w.outages_left > 0
            || w.crashes > 0
            || w.compactions > 0
            || w.retirements > 0
            || w.leader_losses > 0
            || w.drift > 0;
        if disturbable {
            actions.push(Action::UserIdle);
        }
        if next_submission {
            actions.push(Action::UserSubmit);
        }
        if let Some(probe) = self.probe() {
            let state = w.activations[usize::from(probe)];
            if Self::recovered_for_good(w) && state != ActivationState::Pending {
                actions.push(Action::UserProbe);
            }
        }
        if w.outages_left > 0 && w.outage == 0 {
            actions.push(Action::NetworkOutage);
        }
        actions.push(Action::ClockTick);
        for s in 0..self.bounds.schedulers {
            // Every request goes through etcd's leader.
            if !w.outbox[usize::from(s)].is_empty()
                && !self.cut(w, Client::Scheduler(s))
                && w.etcd.leader
            {
                actions.push(Action::SchedulerEtcd(s));
            }
        }
        for c in 0..self.bounds.controllers {
            let requests = &w.requests[usize::from(c)];
            let cut = self.cut(w, Client::Controller(c));
            // A lookup fails at once when etcd is unreachable; a listing
            // waits for it.
            let answerable = requests
                .first()
                .is_some_and(|r| !cut || matches!(r, controller::Effect::Get { .. }));
            if answerable {
                actions.push(Action::ControllerEtcd(c));
            }
            if let Watch::Active { next } = w.controllers[usize::from(c)].watch {
                if !cut && w.etcd.next_response(next).map_or(true, |r| !r.is_empty()) {
                    actions.push(Action::WatchDeliver(c));
                }
            }
        }
        for s in 0..self.bounds.schedulers {
            if w.messages.iter().any(|m| m.to() == s) {
                actions.push(Action::Deliver(s));
            }
        }
        if w.compactions > 0 {
            actions.push(Action::EtcdCompact);
        }
        if w.leader_losses > 0 && w.etcd.leader {
            actions.push(Action::EtcdLeaderLoss);
        }
        if w.drift > 0 && w.etcd.leader {
            actions.push(Action::EtcdClockAhead);
        }
        if !w.etcd.leader {
            actions.push(Action::EtcdLeaderElected);
        }
        for s in 0..self.bounds.schedulers {
            if w.crashes > 0 {
                actions.push(Action::SchedulerCrash(s));
            }
            if w.retirements > 0 {
                for queue in &w.schedulers[usize::from(s)].queues {
                    actions.push(Action::QueueIdle {
                        scheduler: s,
                        action: queue.action,
                    });
                }
            }
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
                let c = id % self.bounds.controllers;
                let action = self.action_of(id);
                self.feed_controller(&mut w, c, controller::Input::Submit { id, action });
            }
            Action::UserProbe => {
                let id = self.probe()?;
                let i = usize::from(id);
                w.activations[i] = ActivationState::Pending;
                w.ghost.executions[i] = 0;
                w.ghost.outcomes[i] = 0;
                self.feed_controller(&mut w, 0, controller::Input::Submit { id, action: 0 });
            }
            Action::NetworkOutage => {
                w.outages_left -= 1;
                w.outage = self.bounds.outage_ticks;
                for client in &self.bounds.outage_clients {
                    match *client {
                        Client::Scheduler(s) => w.cut[usize::from(s)] = true,
                        Client::Controller(c) => {
                            w.cut[usize::from(self.bounds.schedulers + c)] = true;
                            self.feed_controller(&mut w, c, controller::Input::Disconnected);
                        }
                    }
                }
            }
            Action::ClockTick => {
                w.etcd.tick();
                if w.outage > 0 {
                    w.outage -= 1;
                    if w.outage == 0 {
                        w.cut.iter_mut().for_each(|c| *c = false);
                        for c in 0..self.bounds.controllers {
                            let rev = w.etcd.rev;
                            self.feed_controller(&mut w, c, controller::Input::Reconnected { rev });
                        }
                    }
                }
                for s in 0..self.bounds.schedulers {
                    self.feed_scheduler(&mut w, s, scheduler::Input::Tick);
                }
            }
            Action::SchedulerEtcd(s) => self.scheduler_etcd(&mut w, s),
            Action::ControllerEtcd(c) => self.controller_etcd(&mut w, c),
            Action::WatchDeliver(c) => {
                let Watch::Active { next } = w.controllers[usize::from(c)].watch else {
                    return None;
                };
                let input = match w.etcd.next_response(next) {
                    Ok(response) => controller::Input::Changed {
                        rev: response.first()?.rev,
                        changes: response.iter().map(|c| (c.action, c.owner)).collect(),
                    },
                    Err(_) => controller::Input::Compacted { rev: w.etcd.rev },
                };
                self.feed_controller(&mut w, c, input);
            }
            Action::Deliver(s) => {
                let i = w.messages.iter().position(|m| m.to() == s)?;
                let message = w.messages.remove(i);
                match message {
                    Message::Activation { to, id, action } => {
                        self.feed_scheduler(&mut w, to, scheduler::Input::Activation { id, action })
                    }
                    Message::CreateQueue { to, action } => {
                        self.feed_scheduler(&mut w, to, scheduler::Input::CreateQueue { action })
                    }
                }
            }
            Action::EtcdCompact => {
                w.compactions -= 1;
                w.etcd.compact();
            }
            Action::EtcdLeaderLoss => {
                w.leader_losses -= 1;
                w.etcd.leader = false;
            }
            Action::EtcdClockAhead => {
                w.drift -= 1;
                w.etcd.tick();
            }
            Action::EtcdLeaderElected => {
                w.etcd.promote();
                // Controllers whose requests failed for want of a leader
                // can reach etcd again.
                for c in 0..self.bounds.controllers {
                    if !self.cut(&w, Client::Controller(c)) {
                        let rev = w.etcd.rev;
                        self.feed_controller(&mut w, c, controller::Input::Reconnected { rev });
                    }
                }
            }
            Action::SchedulerCrash(s) => {
                w.crashes -= 1;
                // Activations it had taken in but not settled are delivered
                // to it again (its queue's consumer restarts from the last
                // committed offset).
                let crashed = &w.schedulers[usize::from(s)];
                let mut held: Vec<(u8, u8)> = crashed.waiting.clone();
                for request in &w.outbox[usize::from(s)] {
                    if let scheduler::Effect::Resolve { id, action } = *request {
                        held.push((id, action));
                    }
                }
                held.sort_unstable();
                held.dedup();
                for (id, action) in held {
                    w.messages.push(Message::Activation { to: s, id, action });
                }
                w.schedulers[usize::from(s)] = Scheduler::new(s);
                w.outbox[usize::from(s)].clear();
            }
            Action::QueueIdle { scheduler, action } => {
                w.retirements -= 1;
                self.feed_scheduler(&mut w, scheduler, scheduler::Input::Idle { action });
            }
        }
        Some(w)
    }

    fn properties(&self) -> Vec<Property<Self>> {
        let mut properties = vec![
            // □(the endpoint keys are strictly ordered by action): etcd never
            // holds two endpoint keys for one action.
            Property::always("one endpoint key per action", |_, w: &World| {
                w.etcd.keys.windows(2).all(|k| k[0].action < k[1].action)
            }),
            // □(∀a: executions(a) ≤ 1).
            Property::always("executed at most once", |_, w: &World| {
                w.ghost.executions.iter().all(|n| *n <= 1)
            }),
            // □(∀a: outcomes(a) ≤ 1).
            Property::always("at most one outcome", |_, w: &World| {
                w.ghost.outcomes.iter().all(|n| *n <= 1)
            }),
            // □¬unfenced: work is handed out only under the owner's live
            // lease.
            Property::always("work only under a live lease", |_, w: &World| {
                !w.ghost.unfenced
            }),
            Property::sometimes("an activation is executed", |_, w: &World| {
                w.activations.contains(&ActivationState::Executed)
            }),
            Property::sometimes("the outage comes and goes", |_, w: &World| {
                LeaseQueueModel::recovered_for_good(w)
            }),
        ];
        if self.bounds.controllers > 1 && self.bounds.actions > 1 {
            // Controllers that know the schedulers in different orders put
            // two actions' queues on one scheduler; its lease's loss then
            // deletes both keys in one revision, which every controller
            // must take in whole.
            properties.push(Property::sometimes(
                "a lease's loss deletes two keys at once",
                |_, w: &World| {
                    let log = &w.etcd.log;
                    log.iter().enumerate().any(|(i, c)| {
                        c.owner.is_none()
                            && log[i + 1..]
                                .iter()
                                .any(|o| o.owner.is_none() && o.rev == c.rev)
                    })
                },
            ));
        }
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

impl TemporalModel for LeaseQueueModel {
    fn fairness(&self) -> Vec<Fairness<Self>> {
        // One class per role and channel: fairness of a class shared by
        // several would let one of them starve while another moves.
        let schedulers: [[Fairness<Self>; 2]; MAX_ROLES as usize] = [
            [
                Fairness::weak(
                    "etcd answers scheduler 0",
                    Action::is_etcd_for_scheduler::<0>,
                ),
                Fairness::weak("messages reach scheduler 0", Action::is_delivery_to::<0>),
            ],
            [
                Fairness::weak(
                    "etcd answers scheduler 1",
                    Action::is_etcd_for_scheduler::<1>,
                ),
                Fairness::weak("messages reach scheduler 1", Action::is_delivery_to::<1>),
            ],
            [
                Fairness::weak(
                    "etcd answers scheduler 2",
                    Action::is_etcd_for_scheduler::<2>,
                ),
                Fairness::weak("messages reach scheduler 2", Action::is_delivery_to::<2>),
            ],
        ];
        let controllers: [[Fairness<Self>; 2]; MAX_ROLES as usize] = [
            [
                Fairness::weak(
                    "etcd answers controller 0",
                    Action::is_etcd_for_controller::<0>,
                ),
                Fairness::weak("controller 0's watch", Action::is_watch_of::<0>),
            ],
            [
                Fairness::weak(
                    "etcd answers controller 1",
                    Action::is_etcd_for_controller::<1>,
                ),
                Fairness::weak("controller 1's watch", Action::is_watch_of::<1>),
            ],
            [
                Fairness::weak(
                    "etcd answers controller 2",
                    Action::is_etcd_for_controller::<2>,
                ),
                Fairness::weak("controller 2's watch", Action::is_watch_of::<2>),
            ],
        ];
        let mut classes = vec![
            Fairness::weak("clock", Action::is_clock),
            // Users keep submitting once the outage is over.
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
            // ◇□routing_restored: once connectivity is back for good, each
            // action's key, queue and caches agree.
            Liveness::eventually_always("routing restored", |_, w: &World| routing_restored(w)),
        ];
        if self.bounds.probe {
            // ◇□¬failed(probe): the probe is submitted again and again after
            // the outage, and from some point on it never fails again (a
            // failure in a race right after recovery is allowed; failing
            // forever is #5286).
            properties.push(Liveness::eventually_always(
                "executed after recovery",
                |_, w: &World| !matches!(probe_state(w), Some(ActivationState::Failed(_))),
            ));
            // pending(probe) ~> executed(probe): once the faults are over, a
            // probe submitted is executed. A probe left pending forever
            // passes "executed after recovery"; it fails this.
            properties.push(Liveness::leads_to(
                "a probe submitted is executed",
                |_, w: &World| probe_state(w) == Some(ActivationState::Pending),
                |_, w: &World| probe_state(w) == Some(ActivationState::Executed),
            ));
        }
        properties
    }
}

/// The scenarios that `steadfast check leasequeue` knows.
pub mod scenarios {
    use super::*;

    /// OpenWhisk #5286: two schedulers, one controller, one action; a lease
    /// TTL of 1 (raised to 2) against a 3-tick outage that cuts off the
    /// queue's owner and the controller; an activation before, the probe
    /// after, and the queue free to retire when idle.
    pub fn seed5286(variant: Variant) -> LeaseQueueModel {
        LeaseQueueModel {
            bounds: Bounds {
                variant,
                schedulers: 2,
                controllers: 1,
                actions: 1,
                ttl: 1,
                outage_ticks: 3,
                outage_clients: vec![Client::Scheduler(0), Client::Controller(0)],
                activations: 1,
                probe: true,
                crashes: 0,
                compactions: 0,
                retirements: 1,
                leader_losses: 0,
                drift: 0,
            },
            without: None,
        }
    }

    /// `seed5286` with a lease TTL of 5, longer than the outage (the
    /// reporter's workaround), and no idle retirement: what remains is the
    /// outage alone.
    pub fn long_ttl(variant: Variant) -> LeaseQueueModel {
        let mut model = seed5286(variant);
        model.bounds.ttl = 5;
        model.bounds.retirements = 0;
        model
    }

    /// Two schedulers, two controllers, two actions; an outage of one
    /// scheduler and one controller, a scheduler crash and a compaction.
    pub fn general(variant: Variant) -> LeaseQueueModel {
        LeaseQueueModel {
            bounds: Bounds {
                variant,
                schedulers: 2,
                controllers: 2,
                actions: 2,
                ttl: 1,
                outage_ticks: 2,
                outage_clients: vec![Client::Scheduler(0), Client::Controller(0)],
                activations: 2,
                probe: false,
                crashes: 1,
                compactions: 1,
                retirements: 0,
                leader_losses: 0,
                drift: 0,
            },
            without: None,
        }
    }

    /// `general` with an etcd leader loss in place of the crash: for
    /// benchmarks.
    pub fn bench(variant: Variant) -> LeaseQueueModel {
        let mut model = general(variant);
        model.bounds.crashes = 0;
        model.bounds.leader_losses = 1;
        model
    }

    /// `seed5286` with etcd's clock running one tick ahead of the
    /// schedulers' once: within the margin the steadfast fence keeps, and
    /// what makes a keepalive answered with TTL 0 reach a scheduler that
    /// believes its lease live.
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

    /// `general` without the crash and the compaction, for `cargo test`.
    pub fn general_small(variant: Variant) -> LeaseQueueModel {
        let mut model = general(variant);
        model.bounds.crashes = 0;
        model.bounds.compactions = 0;
        model
    }
}
