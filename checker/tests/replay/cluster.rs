//! A test double of the leasequeue runtime: a controller and schedulers,
//! the spec's own roles, driven as the runtime's drivers drive them over
//! an in-memory etcd and network, each step recorded as a driver records
//! it. A faithful run's traces pass `steadfast replay`; each of
//! [`Misdeed`] is one thing a driver that decides outside its role does,
//! and its traces must not.

use std::collections::{BTreeMap, BTreeSet, VecDeque};
use std::path::{Path, PathBuf};

use steadfast_spec::leasequeue::controller::{self, Change, Controller, WatchId};
use steadfast_spec::leasequeue::scheduler::{self, ClaimResult, Endpoint, Scheduler};
use steadfast_spec::leasequeue::trace::{
    ControllerHeader, ControllerRecord, Named, SchedulerHeader, SchedulerRecord,
};
use steadfast_spec::leasequeue::{Outcome, Variant};
use steadfast_spec::trace::{Header, Record};

/// The controller's address.
pub const CONTROLLER: &str = "127.0.0.1:7100";

/// Scheduler `n`'s address.
pub fn scheduler_address(n: usize) -> String {
    format!("127.0.0.1:{}", 7001 + n)
}

/// One thing a driver does outside its role.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Misdeed {
    /// None: a thin driver.
    None,
    /// The controller's driver resolves a submission itself, feeding its
    /// role a failure as if the scheduler had reported it.
    ResolvesItself,
    /// The controller's driver drops the watch response that shows the
    /// first endpoint key created.
    DropsWatchAnswer,
    /// The schedulers' driver runs each activation twice.
    RunsTwice,
    /// The controller's driver feeds its role an acknowledgement of the
    /// first activation it sends as if from another scheduler than the one
    /// it sent it to, which never had it.
    ForgesAck,
}

/// An input on its way to a node, and the node that sent it.
enum Delivery {
    Scheduler(usize, Option<String>, scheduler::Input<Named>),
    Controller(Option<String>, controller::Input<Named>),
}

/// etcd as the drivers see it: keys, members, leases, revisions.
#[derive(Default)]
struct Etcd {
    rev: i64,
    next_lease: i64,
    keys: BTreeMap<String, Endpoint<Named>>,
    watching: bool,
}

/// The run.
pub struct Cluster {
    misdeed: Misdeed,
    /// The wall clock: each step takes a millisecond.
    now: u64,
    etcd: Etcd,
    controller: (ControllerHeader, Controller<Named>, Vec<ControllerRecord>),
    schedulers: Vec<(SchedulerHeader, Scheduler<Named>, Vec<SchedulerRecord>)>,
    /// Per node (the controller is `None`), the timers its role armed.
    armed: BTreeMap<Option<usize>, BTreeSet<String>>,
    queue: VecDeque<Delivery>,
    /// Messages to schedulers held up in the network, while it holds them.
    held: Option<Vec<Delivery>>,
    /// How each submission was resolved.
    pub resolved: BTreeMap<String, Outcome>,
    /// The activations executed, each time.
    pub executed: Vec<String>,
    dropped: bool,
}

impl Cluster {
    /// `schedulers` schedulers of `variant` and a controller, started:
    /// every scheduler holds a lease and is a member.
    pub fn start(variant: Variant, schedulers: usize, misdeed: Misdeed) -> Self {
        let controller_config = controller::Config::<Named> {
            rules: variant.into(),
            wake_every: 3_000,
            seed: 0,
            presume_gone_after: 30_000,
        };
        let controller = ControllerHeader {
            address: CONTROLLER.into(),
            keys: Vec::new(),
            members: Vec::new(),
            rev: 1,
            config: controller_config,
        };
        let role = Controller::new(Vec::new(), Vec::new(), 1);
        let schedulers = (0..schedulers)
            .map(|n| {
                let header = SchedulerHeader {
                    id: scheduler_address(n),
                    incarnation: 3,
                    config: scheduler::Config::<Named> {
                        rules: variant.into(),
                        ttl: 2_000,
                        margin: 500,
                        wake_every: 600,
                        retry_every: 250,
                        idle_after: 60_000,
                        remember_for: Some(600_000),
                        execute_for: Some(60_000),
                        presume_gone_after: 10_000,
                    },
                };
                let role = Scheduler::new(header.id.clone(), 3);
                (header, role, Vec::new())
            })
            .collect();
        let mut cluster = Cluster {
            misdeed,
            now: 1_800_000_000_000,
            etcd: Etcd {
                rev: 1,
                next_lease: 100,
                ..Etcd::default()
            },
            controller: (controller, role, Vec::new()),
            schedulers,
            armed: BTreeMap::new(),
            queue: VecDeque::new(),
            held: None,
            resolved: BTreeMap::new(),
            executed: Vec::new(),
            dropped: false,
        };
        cluster
            .queue
            .push_back(Delivery::Controller(None, controller::Input::Wake));
        cluster.queue.push_back(Delivery::Controller(
            None,
            controller::Input::WatchStarted {
                watch: WatchId::default(),
                next: 2,
                term: 0,
            },
        ));
        cluster.etcd.watching = true;
        for n in 0..cluster.schedulers.len() {
            cluster
                .queue
                .push_back(Delivery::Scheduler(n, None, scheduler::Input::Wake));
        }
        cluster.settle();
        // Registered: the next wake-up claims nothing yet; a second one
        // lets every scheduler finish joining.
        cluster.tick();
        cluster
    }

    /// A user submits activation `id` of `action`.
    pub fn submit(&mut self, id: &str, action: &str) {
        self.queue.push_back(Delivery::Controller(
            None,
            controller::Input::Submit {
                id: id.into(),
                action: action.into(),
                deadline: None,
            },
        ));
        self.settle();
    }

    /// Every armed timer fires, and what follows settles.
    pub fn tick(&mut self) {
        for (node, timers) in std::mem::take(&mut self.armed) {
            for timer in timers {
                match (node, timer.as_str()) {
                    (None, "wake") => self
                        .queue
                        .push_back(Delivery::Controller(None, controller::Input::Wake)),
                    (None, _) => {
                        let id = timer.trim_start_matches("deadline ").to_string();
                        self.queue.push_back(Delivery::Controller(
                            None,
                            controller::Input::Deadline { id },
                        ));
                    }
                    (Some(n), "wake") => {
                        self.queue
                            .push_back(Delivery::Scheduler(n, None, scheduler::Input::Wake))
                    }
                    (Some(n), "retry") => {
                        self.queue
                            .push_back(Delivery::Scheduler(n, None, scheduler::Input::Retry))
                    }
                    // Idle timers stay armed: the runs are short.
                    (Some(n), _) => {
                        self.armed.entry(Some(n)).or_default().insert(timer);
                    }
                }
            }
        }
        self.settle();
    }

    /// The network holds up every message to a scheduler from now until
    /// [`Cluster::release`].
    pub fn hold(&mut self) {
        self.held.get_or_insert_with(Vec::new);
    }

    /// The network delivers what it held up, and what follows settles.
    pub fn release(&mut self) {
        self.queue.extend(self.held.take().unwrap_or_default());
        self.settle();
    }

    /// Delivers every input on its way, and what their effects cause.
    fn settle(&mut self) {
        while let Some(delivery) = self.queue.pop_front() {
            if let (Some(held), Delivery::Scheduler(_, Some(_), _)) = (&mut self.held, &delivery) {
                held.push(delivery);
                continue;
            }
            self.now += 1;
            match delivery {
                Delivery::Scheduler(n, from, input) => self.step_scheduler(n, from, input),
                Delivery::Controller(from, input) => self.step_controller(from, input),
            }
        }
    }

    fn step_scheduler(&mut self, n: usize, from: Option<String>, input: scheduler::Input<Named>) {
        let (header, role, records) = &mut self.schedulers[n];
        let effects = role.step(&header.config, 1, input.clone());
        records.push(Record {
            at: self.now,
            elapsed: 1,
            from,
            input,
            effects: effects.clone(),
        });
        let me = header.id.clone();
        for effect in effects {
            self.scheduler_effect(n, &me, effect);
        }
    }

    fn scheduler_effect(&mut self, n: usize, me: &str, effect: scheduler::Effect<Named>) {
        use scheduler::Effect as E;
        use scheduler::Input as I;
        let back = |input| Delivery::Scheduler(n, None, input);
        match effect {
            E::WakeIn { .. } => self.arm(Some(n), "wake".into()),
            E::RetryIn { .. } => self.arm(Some(n), "retry".into()),
            E::IdleTimer { action, .. } => self.arm(Some(n), format!("idle {action}")),
            E::Grant { ttl } => {
                self.etcd.next_lease += 1;
                let lease = self.etcd.next_lease;
                self.queue.push_back(back(I::Granted { lease, ttl }));
            }
            E::KeepAlive { lease, keepalive } => self.queue.push_back(back(I::KeptAlive {
                lease,
                keepalive,
                ttl: 2_000,
            })),
            E::Register { lease, incarnation } => {
                self.change(Change::Member {
                    scheduler: me.into(),
                    incarnation: Some(incarnation),
                });
                self.queue
                    .push_back(back(I::Registered { lease, found: true }));
            }
            E::Revoke { lease } => self.queue.push_back(back(I::Revoked { lease })),
            E::Claim {
                action,
                lease,
                incarnation,
            } => {
                let result = match self.etcd.keys.get(&action) {
                    Some(key) => ClaimResult::Exists(key.clone()),
                    None => {
                        let created = self.change(Change::Endpoint {
                            action: action.clone(),
                            owner: Some(me.into()),
                        });
                        let key = Endpoint {
                            owner: me.into(),
                            incarnation,
                            lease,
                            created,
                        };
                        self.etcd.keys.insert(action.clone(), key);
                        ClaimResult::Created { created }
                    }
                };
                self.queue.push_back(back(I::Claimed {
                    action,
                    lease,
                    result,
                }));
            }
            E::Delete { action, .. } => {
                if self.etcd.keys.remove(&action).is_some() {
                    self.change(Change::Endpoint {
                        action: action.clone(),
                        owner: None,
                    });
                }
                self.queue.push_back(back(I::Deleted { action }));
            }
            E::Resolve { id, action } => {
                let key = self.etcd.keys.get(&action).cloned();
                self.queue.push_back(back(I::Resolved { id, action, key }));
            }
            // Every scheduler of the run is a member, as it started.
            E::FindMember { scheduler } => {
                let incarnation = self
                    .schedulers
                    .iter()
                    .find(|(h, ..)| h.id == scheduler)
                    .map(|(h, ..)| h.incarnation);
                self.queue.push_back(back(I::MemberFound {
                    scheduler,
                    incarnation,
                    unreadable: None,
                    term: 1,
                }));
            }
            E::Execute { id, .. } => {
                let times = if self.misdeed == Misdeed::RunsTwice {
                    2
                } else {
                    1
                };
                for _ in 0..times {
                    self.executed.push(id.clone());
                    self.queue.push_back(back(I::Executed {
                        id: id.clone(),
                        failure: None,
                    }));
                }
            }
            E::Forward {
                id,
                action,
                to,
                incarnation,
                reply_to,
                may_have_run,
            } => {
                let peer = self.schedulers.iter().position(|(h, ..)| h.id == to);
                if let Some(peer) = peer {
                    self.queue.push_back(Delivery::Scheduler(
                        peer,
                        Some(me.into()),
                        I::Activation {
                            id,
                            action,
                            forwarded: true,
                            incarnation: Some(incarnation),
                            left: None,
                            reply_to,
                            may_have_run,
                        },
                    ));
                }
            }
            E::Report { id, outcome, .. } => self.queue.push_back(Delivery::Controller(
                Some(me.into()),
                controller::Input::Outcome {
                    id,
                    outcome,
                    from: Some(me.into()),
                },
            )),
            E::Ack { id } => self.queue.push_back(Delivery::Controller(
                Some(me.into()),
                controller::Input::Acked {
                    id,
                    from: me.into(),
                },
            )),
            E::Refuse { .. } | E::Cancel { .. } | E::Drained => {}
        }
    }

    fn step_controller(&mut self, from: Option<String>, input: controller::Input<Named>) {
        let (header, role, records) = &mut self.controller;
        let effects = role.step(&header.config, input.clone());
        records.push(Record {
            at: self.now,
            elapsed: 0,
            from: from.clone(),
            input: input.clone(),
            effects: effects.clone(),
        });
        for effect in effects {
            self.controller_effect(effect);
        }
    }

    fn controller_effect(&mut self, effect: controller::Effect<Named>) {
        use controller::Effect as E;
        use controller::Input as I;
        let back = |input| Delivery::Controller(None, input);
        match effect {
            E::WakeIn { .. } => self.arm(None, "wake".into()),
            E::DeadlineIn { id, .. } => self.arm(None, format!("deadline {id}")),
            E::Get { id, action } => {
                let owner = self.etcd.keys.get(&action).map(|k| k.owner.clone());
                self.queue.push_back(back(I::Got { id, action, owner }));
            }
            E::List => {
                let keys = self
                    .etcd
                    .keys
                    .iter()
                    .map(|(a, k)| (a.clone(), k.owner.clone()))
                    .collect();
                let members = self
                    .schedulers
                    .iter()
                    .map(|(h, ..)| (h.id.clone(), h.incarnation))
                    .collect();
                let rev = self.etcd.rev;
                self.queue.push_back(back(I::Listed { rev, keys, members }));
            }
            E::Watch { id, from } => {
                let next = from.unwrap_or(self.etcd.rev + 1);
                self.queue.push_back(back(I::WatchStarted {
                    watch: id,
                    next,
                    term: 0,
                }));
            }
            E::RequestProgress { id } => {
                let rev = self.etcd.rev;
                self.queue.push_back(back(I::Progress {
                    watch: id,
                    rev,
                    term: 0,
                }));
            }
            E::Unwatch { .. } => {}
            E::Send {
                id,
                action,
                to,
                incarnation,
                may_have_run,
            } => {
                let Some(n) = self.schedulers.iter().position(|(h, ..)| h.id == to) else {
                    return;
                };
                self.queue.push_back(Delivery::Scheduler(
                    n,
                    Some(CONTROLLER.into()),
                    scheduler::Input::Activation {
                        id: id.clone(),
                        action,
                        forwarded: false,
                        incarnation,
                        left: None,
                        reply_to: CONTROLLER.into(),
                        may_have_run,
                    },
                ));
                match self.misdeed {
                    Misdeed::ResolvesItself => {
                        // It gives up waiting, and says the scheduler
                        // failed it.
                        self.misdeed = Misdeed::None;
                        self.queue.push_back(Delivery::Controller(
                            Some(to),
                            I::Outcome {
                                id,
                                outcome: Outcome::Failed(
                                    steadfast_spec::leasequeue::FailReason::NoQueueEndpoint,
                                ),
                                from: None,
                            },
                        ));
                    }
                    Misdeed::ForgesAck => {
                        self.misdeed = Misdeed::None;
                        let other = self
                            .schedulers
                            .iter()
                            .map(|(h, ..)| h.id.clone())
                            .find(|id| *id != to)
                            .expect("a second scheduler");
                        self.queue.push_back(Delivery::Controller(
                            Some(other.clone()),
                            I::Acked { id, from: other },
                        ));
                    }
                    _ => {}
                }
            }
            E::CreateQueue { action, to } => {
                if let Some(n) = self.schedulers.iter().position(|(h, ..)| h.id == to) {
                    self.queue.push_back(Delivery::Scheduler(
                        n,
                        Some(CONTROLLER.into()),
                        scheduler::Input::CreateQueue { action },
                    ));
                }
            }
            E::Resolve { id, outcome } => {
                self.resolved.insert(id, outcome);
            }
            E::Overdue { .. } => {}
            E::Confirm { id, to } => {
                if let Some(n) = self.schedulers.iter().position(|(h, ..)| h.id == to) {
                    self.queue.push_back(Delivery::Scheduler(
                        n,
                        Some(CONTROLLER.into()),
                        scheduler::Input::ReportAcked {
                            id,
                            from: Some(CONTROLLER.into()),
                        },
                    ));
                }
            }
        }
    }

    fn arm(&mut self, node: Option<usize>, timer: String) {
        self.armed.entry(node).or_default().insert(timer);
    }

    /// etcd makes `change` at its next revision, which the controller's
    /// watch reports; returns the revision.
    fn change(&mut self, change: Change<Named>) -> i64 {
        self.etcd.rev += 1;
        let rev = self.etcd.rev;
        let endpoint = matches!(change, Change::Endpoint { owner: Some(_), .. });
        if self.misdeed == Misdeed::DropsWatchAnswer && endpoint && !self.dropped {
            self.dropped = true;
            return rev;
        }
        if self.etcd.watching {
            self.queue.push_back(Delivery::Controller(
                None,
                controller::Input::Changed {
                    watch: self.controller.1.last_watch,
                    changes: vec![(rev, change)],
                    term: 0,
                },
            ));
        }
        rev
    }

    /// Writes every node's trace into `dir` (`controller.jsonl`,
    /// `scheduler-N.jsonl`); returns the files.
    pub fn write(&self, dir: &Path) -> Vec<PathBuf> {
        std::fs::create_dir_all(dir).unwrap();
        let mut files = Vec::new();
        let (header, _, records) = &self.controller;
        files.push(write(
            &dir.join("controller.jsonl"),
            &Header::Controller(header.clone()),
            records,
        ));
        for (n, (header, _, records)) in self.schedulers.iter().enumerate() {
            files.push(write(
                &dir.join(format!("scheduler-{n}.jsonl")),
                &Header::Scheduler(header.clone()),
                records,
            ));
        }
        files
    }
}

/// Writes `header` and `records` to `path` as JSON lines.
pub fn write<R: serde::Serialize>(path: &Path, header: &Header, records: &[R]) -> PathBuf {
    let mut lines = vec![serde_json::to_string(header).unwrap()];
    lines.extend(records.iter().map(|r| serde_json::to_string(r).unwrap()));
    std::fs::write(path, lines.join("\n") + "\n").unwrap();
    path.to_owned()
}
