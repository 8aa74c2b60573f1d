//! The scheduler's driver: it runs the spec's
//! [`scheduler::Scheduler`](steadfast_spec::leasequeue::scheduler::Scheduler)
//! against etcd and the network, and runs activations through the
//! [`Executor`] the user supplies.
//!
//! One loop: a real event (an etcd answer, a message, a timer, an
//! activation that finished) becomes the role's input, `step` returns the
//! effects, and the driver carries them out: etcd calls and executions as
//! tasks of their own whose results come back as events, messages through
//! the network, timers as the effects ask. The driver decides nothing the
//! role does not; it only correlates (which payload an activation carries,
//! who is owed an acknowledgement).

use std::collections::HashMap;
use std::future::Future;
use std::path::PathBuf;
use std::time::Duration;

use serde_json::Value;
use steadfast_spec::leasequeue::controller::Key;
use steadfast_spec::leasequeue::scheduler::{self, ClaimResult, Config, Effect, Input, Phase};
use steadfast_spec::leasequeue::trace::{Named, SchedulerHeader};
use steadfast_spec::leasequeue::{Outcome, Rules, Variant};
use tokio::sync::{mpsc, oneshot};
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;

use super::etcd::{Etcd, EtcdOptions};
use super::executor::{Ended, Executions, Executor, Invocation};
use super::metrics::SchedulerMetrics;
use super::network::Network;
use super::node::{self, sleep_until, warn_unreadable, Clock, Timers};
use super::tls::NodeTls;
use super::wire::{self, Message};
use super::{millis, StartError};
use crate::metrics::{Readiness, Serving};
use crate::trace::Recorder;
use steadfast_spec::trace::{Header, Record};

/// Sets a scheduler up; [`SchedulerBuilder::start`] runs it.
///
/// ```no_run
/// # async fn demo() -> Result<(), steadfast::leasequeue::StartError> {
/// use std::time::Duration;
/// use steadfast::leasequeue::etcd::EtcdOptions;
/// use steadfast::leasequeue::{Invocation, SchedulerBuilder};
///
/// let scheduler = SchedulerBuilder::new(EtcdOptions::new(["http://127.0.0.1:2379"]))
///     .ttl(Duration::from_secs(10))
///     .listen("127.0.0.1:0")
///     .start(|invocation: Invocation| async move {
///         serde_json::json!({ "hello": invocation.payload })
///     })
///     .await?;
/// println!("serving queues at {}", scheduler.address());
/// # Ok(())
/// # }
/// ```
#[derive(Clone, Debug)]
pub struct SchedulerBuilder {
    etcd: EtcdOptions,
    rules: Rules,
    ttl: Duration,
    margin: Duration,
    wake_every: Option<Duration>,
    retry_every: Option<Duration>,
    idle_after: Duration,
    execution_timeout: Option<Duration>,
    presume_gone_after: Duration,
    listen: String,
    advertise: Option<String>,
    tls: Option<NodeTls>,
    dedupe_window: Duration,
    trace: Option<PathBuf>,
    metrics: Option<String>,
}

impl SchedulerBuilder {
    /// A scheduler on the etcd `etcd` names, following the steadfast
    /// rules, with a lease TTL of 10 s, a fencing margin of 500 ms, a
    /// wake-up every third of the TTL, its lease's requests retried every
    /// 250 ms while it cannot serve, queues retired after 60 s without work,
    /// executions given up after 60 s, a peer presumed gone after its
    /// member key stayed gone 10 s, listening on a free port of 127.0.0.1.
    pub fn new(etcd: EtcdOptions) -> Self {
        SchedulerBuilder {
            etcd,
            rules: Variant::Steadfast.into(),
            ttl: Duration::from_secs(10),
            margin: Duration::from_millis(500),
            wake_every: None,
            retry_every: None,
            idle_after: Duration::from_secs(60),
            execution_timeout: Some(Duration::from_secs(60)),
            presume_gone_after: Duration::from_secs(10),
            listen: "127.0.0.1:0".into(),
            advertise: None,
            tls: None,
            dedupe_window: Duration::from_secs(600),
            trace: None,
            metrics: None,
        }
    }

    /// Follows `variant`'s rules (OpenWhisk's reproduces #5286).
    #[must_use]
    pub fn variant(self, variant: Variant) -> Self {
        self.rules(variant.into())
    }

    /// Follows exactly `rules`.
    #[must_use]
    pub fn rules(mut self, rules: Rules) -> Self {
        self.rules = rules;
        self
    }

    /// The lease TTL asked of etcd, in whole seconds (etcd raises one below
    /// its floor, 1.5 × its election timeout).
    #[must_use]
    pub fn ttl(mut self, ttl: Duration) -> Self {
        self.ttl = ttl;
        self
    }

    /// How much earlier than etcd could expire the lease it stops handing
    /// out work: the most etcd's clock may run ahead over one TTL.
    #[must_use]
    pub fn margin(mut self, margin: Duration) -> Self {
        self.margin = margin;
        self
    }

    /// How often it wakes up to keep its lease alive and retry what is
    /// unanswered (a third of the TTL unless set).
    #[must_use]
    pub fn wake_every(mut self, every: Duration) -> Self {
        self.wake_every = Some(every);
        self
    }

    /// How soon its lease's requests (a grant, a keepalive, a revoke) are
    /// sent again while it cannot serve, and forwards and outcomes not
    /// acknowledged yet are sent again (250 ms, or `wake_every` if shorter,
    /// unless set): after an etcd outage it serves again within about this
    /// long of etcd answering, whatever the TTL.
    #[must_use]
    pub fn retry_every(mut self, every: Duration) -> Self {
        self.retry_every = Some(every);
        self
    }

    /// How long a queue stays without work before it retires.
    #[must_use]
    pub fn idle_after(mut self, after: Duration) -> Self {
        self.idle_after = after;
        self
    }

    /// How long an execution may run (60 s by default, OpenWhisk's default
    /// action time limit): one still running then is settled as failed
    /// ([`ExecutionFailure::Timeout`](super::ExecutionFailure::Timeout),
    /// within a wake-up), its caller told so, and it is cancelled
    /// ([`Invocation::cancelled`], and its task aborted). A hung executor
    /// so holds neither its caller nor a drain for longer. `None`: as long
    /// as it takes, for executors that bound themselves.
    #[must_use]
    pub fn execution_timeout(mut self, timeout: Option<Duration>) -> Self {
        self.execution_timeout = timeout;
        self
    }

    /// How long the member key of a peer it forwarded an activation to may
    /// stay gone (the peer's lease expired) while the peer has not
    /// acknowledged it, before the peer is presumed gone and the
    /// activation taken back and routed again, from a fresh lookup: a peer
    /// whose address black-holes (a deleted pod) never refuses it. 10 s by
    /// default, counted at each wake-up by which etcd answered a lookup of
    /// the key, and from zero again under a new etcd leader.
    ///
    /// A peer cut off from etcd comes back with its member key as soon as
    /// it reaches etcd again; one cut off longer than this while it runs
    /// the activation may see it run a second time elsewhere. Set it
    /// above the longest such cut you want to ride out, as the
    /// controllers' [`ControllerBuilder::presume_gone_after`].
    ///
    /// [`ControllerBuilder::presume_gone_after`]: super::ControllerBuilder::presume_gone_after
    #[must_use]
    pub fn presume_gone_after(mut self, after: Duration) -> Self {
        self.presume_gone_after = after;
        self
    }

    /// The address to listen on (`host:port`, port 0 for a free one). The
    /// address bound is the scheduler's name unless
    /// [`SchedulerBuilder::advertise`] names another: its endpoint keys
    /// hold it, so it must be one controllers and peers can reach.
    #[must_use]
    pub fn listen(mut self, address: impl Into<String>) -> Self {
        self.listen = address.into();
        self
    }

    /// The address its peers reach it at, when it is not the one it listens
    /// on (a proxy, a NAT, a Kubernetes Service or pod IP in front of
    /// `0.0.0.0:PORT`): `host:port`, the scheduler's name. Its endpoint
    /// keys hold it, and controllers and peers send to it. By default, the
    /// address bound.
    #[must_use]
    pub fn advertise(mut self, address: impl Into<String>) -> Self {
        self.advertise = Some(address.into());
        self
    }

    /// Talks to its peers over TLS with `tls`: it accepts only peers whose
    /// client certificate `tls`'s CA signed (others are refused, with a
    /// warning naming them), and sends only to peers whose certificate
    /// names the host it dials. Every scheduler and controller of a
    /// deployment must use TLS alike. Plain TCP by default.
    #[must_use]
    pub fn tls(mut self, tls: NodeTls) -> Self {
        self.tls = Some(tls);
        self
    }

    /// How long it remembers an activation it settled or forwarded, so
    /// that a copy delivered again is only acknowledged (10 min by default;
    /// the role's [`Config::remember_for`], counted by the role's own
    /// clock from the settlement). A copy that arrives later than this (a
    /// sender whose acknowledgements were lost for that long) runs again; a
    /// longer window costs memory per activation.
    #[must_use]
    pub fn dedupe_window(mut self, window: Duration) -> Self {
        self.dedupe_window = window;
        self
    }

    /// Records its trace to `path` (JSON lines, for `steadfast replay`).
    #[must_use]
    pub fn trace(mut self, path: impl Into<PathBuf>) -> Self {
        self.trace = Some(path.into());
        self
    }

    /// Serves the scheduler's metrics (`steadfast_scheduler_*`: activations
    /// by outcome and reason, running, queues owned, lease held, fenced,
    /// fence suspensions and how long each lasted, redeliveries) and its
    /// probes on `address` (`127.0.0.1:0` picks a free port; see
    /// [`Scheduler::metrics_address`]). `/readyz` is ready while it holds
    /// a lease it may hand out work under.
    pub fn metrics(mut self, address: impl Into<String>) -> Self {
        self.metrics = Some(address.into());
        self
    }

    fn config(&self) -> Result<Config<Named>, StartError> {
        let ttl = millis(self.ttl);
        if ttl < 1000 {
            return Err(StartError::Config(format!(
                "the lease TTL is {:?}; etcd counts TTLs in whole seconds: set ttl to 1 s or more",
                self.ttl
            )));
        }
        let wake_every = self.wake_every.map_or(ttl / 3, millis);
        if wake_every == 0 || wake_every >= ttl {
            return Err(StartError::Config(format!(
                "wake_every is {wake_every} ms for a TTL of {ttl} ms: the lease would expire \
                 between keepalives; set it above 0 and below the TTL (a third of it by default)"
            )));
        }
        let retry_every = self.retry_every.map_or(wake_every.min(250), millis);
        if retry_every == 0 || retry_every > wake_every {
            return Err(StartError::Config(format!(
                "retry_every is {retry_every} ms for a wake-up every {wake_every} ms: set it \
                 above 0 and not above wake_every (250 ms by default)"
            )));
        }
        let margin = millis(self.margin);
        if margin >= ttl {
            return Err(StartError::Config(format!(
                "the margin is {margin} ms for a TTL of {ttl} ms: no work could ever be handed \
                 out; set it below the TTL"
            )));
        }
        if self.execution_timeout.is_some_and(|t| t.is_zero()) {
            return Err(StartError::Config(
                "execution_timeout is zero: every execution would be given up as it starts; \
                 set how long one may run (60 s by default), or None for no limit"
                    .into(),
            ));
        }
        if self.presume_gone_after.is_zero() {
            return Err(StartError::Config(
                "presume_gone_after is zero: set how long a peer's member key may stay gone \
                 before what was forwarded to it is taken back, such as 10 s"
                    .into(),
            ));
        }
        if self.dedupe_window.is_zero() {
            return Err(StartError::Config(
                "dedupe_window is zero: a copy of an activation delivered again would run \
                 again; set how long settled activations are remembered (10 min by default)"
                    .into(),
            ));
        }
        Ok(Config {
            rules: self.rules,
            ttl,
            margin,
            wake_every,
            retry_every,
            idle_after: millis(self.idle_after),
            remember_for: Some(millis(self.dedupe_window)),
            execute_for: self.execution_timeout.map(millis),
            presume_gone_after: millis(self.presume_gone_after),
        })
    }

    /// Connects to etcd, listens, and starts the scheduler: it takes a lease
    /// and serves until the returned handle is dropped or killed.
    ///
    /// # Errors
    ///
    /// A setting out of range, etcd unreachable, the address not bindable,
    /// the trace not writable.
    pub async fn start<E: Executor>(self, executor: E) -> Result<Scheduler, StartError> {
        let config = self.config()?;
        let etcd = Etcd::connect(&self.etcd).await?;
        // This run of the scheduler: one no earlier run of it had (64
        // random bits).
        let incarnation = uuid::Uuid::new_v4().as_u64_pair().0;
        let opened = node::open(
            &self.listen,
            self.advertise.as_deref(),
            self.tls.clone(),
            self.trace.as_deref(),
            |address| {
                Header::Scheduler(SchedulerHeader {
                    id: address.to_owned(),
                    incarnation,
                    config: config.clone(),
                })
            },
        )
        .await?;
        let address = opened.network.address().to_owned();
        let (metrics, registry) = SchedulerMetrics::new();
        let readiness = Readiness::waiting(WAITING);
        let serving = super::serve_metrics(self.metrics.as_deref(), registry, &readiness).await?;
        let metrics_address = serving.as_ref().map(|(bound, _)| *bound);
        let (events, inputs) = mpsc::unbounded_channel();
        let (drain, drain_asked) = oneshot::channel();
        let driver = Driver {
            role: scheduler::Scheduler::new(address.clone(), incarnation),
            metrics,
            readiness,
            _serving: serving.map(|(_, serving)| serving),
            config,
            etcd,
            network: opened.network,
            executions: Executions::new(executor),
            clock: Clock::new(),
            timers: Timers::new(),
            events,
            held: HashMap::new(),
            senders: HashMap::new(),
            delivered_by: None,
            ttls: HashMap::new(),
            recorder: opened.recorder,
            leaving: None,
        };
        let channels = Channels {
            inputs,
            messages: opened.messages,
            bounced: opened.bounced,
            drain_asked,
        };
        let task = tokio::spawn(driver.run(opened.serving, channels));
        tracing::info!(%address, "scheduler started");
        Ok(Scheduler {
            address,
            incarnation,
            metrics_address,
            drain: Some(drain),
            task,
        })
    }
}

/// A running scheduler. Dropping it (or [`Scheduler::kill`]) stops it at
/// once, as a crash would: the executions it started stop where they are,
/// its lease is left to expire, and what it held unacknowledged is
/// delivered again by its senders (to the scheduler that starts on its
/// address next). [`Scheduler::drain`] stops it gracefully.
///
/// ```no_run
/// # async fn demo(builder: steadfast::leasequeue::SchedulerBuilder) -> Result<(), steadfast::leasequeue::StartError> {
/// use steadfast::leasequeue::Invocation;
///
/// let scheduler = builder.start(|i: Invocation| async move { i.payload }).await?;
/// let address = scheduler.address().to_owned();
/// scheduler.kill().await; // as a crash: its lease is left to expire
/// // A scheduler may start on `address` again at once.
/// # Ok(())
/// # }
/// ```
pub struct Scheduler {
    address: String,
    incarnation: u64,
    metrics_address: Option<std::net::SocketAddr>,
    /// Asks the driver to drain; it answers once it has.
    drain: Option<oneshot::Sender<oneshot::Sender<()>>>,
    task: JoinHandle<()>,
}

impl Scheduler {
    /// Its address, which is its name in etcd.
    pub fn address(&self) -> &str {
        &self.address
    }

    /// This run of it: a number it picked at start, written in its member
    /// key and its endpoint keys. A copy of an activation addressed to
    /// another run of this scheduler (one before a restart) is refused
    /// ([`super::wire::Message::Refused`]).
    pub fn incarnation(&self) -> u64 {
        self.incarnation
    }

    /// Where its metrics and probes are served, if
    /// [`SchedulerBuilder::metrics`] asked for them.
    pub fn metrics_address(&self) -> Option<std::net::SocketAddr> {
        self.metrics_address
    }

    /// Leaves the cluster gracefully (a scale-down, a rolling update) and
    /// returns once it has stopped:
    ///
    /// - it takes no new work: an activation sent to it from now on is not
    ///   acknowledged, so its sender sends it again, and once this
    ///   scheduler has stopped listening, routes it elsewhere;
    /// - what it holds already settles as it would have (runs, or is
    ///   forwarded to the action's owner), and its outcomes are reported;
    /// - then it revokes its lease, so that its member key and every
    ///   endpoint key go at one revision and controllers place its actions
    ///   on the members left at once;
    /// - once every outcome and forward it sent is acknowledged, it stops
    ///   listening and returns (the role says when: `Effect::Drained`).
    ///
    /// `/readyz` answers "draining" from the start. Draining waits on etcd
    /// (the revoke) and on the controllers it reports to; to bound it, race
    /// it against a timer: dropping the future stops the scheduler as
    /// [`Scheduler::kill`] does.
    ///
    /// ```no_run
    /// # async fn demo(scheduler: steadfast::leasequeue::Scheduler) {
    /// use std::time::Duration;
    ///
    /// let drained = tokio::time::timeout(Duration::from_secs(60), scheduler.drain()).await;
    /// if drained.is_err() {
    ///     eprintln!("not drained within a minute: stopped as a crash would");
    /// }
    /// # }
    /// ```
    pub async fn drain(mut self) {
        let (done, drained) = oneshot::channel();
        if let Some(drain) = self.drain.take() {
            let _ = drain.send(done);
        }
        // The driver answers once drained; it ends without answering only
        // if its listener failed, when there is nothing left to drain.
        let _ = drained.await;
        let _ = (&mut self.task).await;
    }

    /// Stops it at once, as a crash would, its executions with it, and
    /// returns once its port is free: a scheduler may start on its address
    /// again.
    pub async fn kill(mut self) {
        self.task.abort();
        // Cancelled, as asked; nothing else can end it.
        let _ = (&mut self.task).await;
    }
}

impl Drop for Scheduler {
    fn drop(&mut self) {
        self.task.abort();
    }
}

/// What the driver's loop reacts to, besides messages and timers.
enum Event {
    /// An etcd answer, as the role's input.
    Input(Input<Named>),
    /// A keepalive answered: `alive` unless etcd has no such lease.
    KeptAlive {
        lease: i64,
        /// The keepalive's number.
        keepalive: u64,
        alive: bool,
    },
    /// An activation's execution ended: with its result, or without one.
    Executed { id: String, ended: Ended },
}

/// The driver's timers.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
enum Timer {
    Wake,
    Retry,
    Idle(String),
}

/// An activation the scheduler was sent and may still have to run,
/// forward, fail or report: what its messages carry.
struct Held {
    action: String,
    payload: Value,
    /// Its deadline, as the first copy carried it: a forward carries it on.
    deadline: Option<u64>,
    /// How its execution ended, once it has: its report carries the
    /// result, or the words of the failure.
    ended: Option<Ended>,
    /// The peer it was last forwarded to, if any.
    forwarded_to: Option<String>,
    /// Whether its outcome was reported already (a report now is sent
    /// again).
    reported: bool,
}

impl Held {
    fn new(action: String, payload: Value, deadline: Option<u64>) -> Self {
        Held {
            action,
            payload,
            deadline,
            ended: None,
            forwarded_to: None,
            reported: false,
        }
    }
}

/// What `/readyz` says a scheduler waits for.
const WAITING: &str = "a valid lease";

/// What `/readyz` says of a scheduler that drains: it will not be ready
/// again.
const DRAINING: &str = "nothing: draining";

/// Where the driver's events come from, besides its timers.
struct Channels {
    inputs: mpsc::UnboundedReceiver<Event>,
    messages: mpsc::UnboundedReceiver<Message>,
    bounced: mpsc::UnboundedReceiver<(String, Message)>,
    /// [`Scheduler::drain`] asking, with where to say it is done.
    drain_asked: oneshot::Receiver<oneshot::Sender<()>>,
}

struct Driver<E> {
    role: scheduler::Scheduler<Named>,
    metrics: SchedulerMetrics,
    readiness: Readiness,
    /// The metrics endpoint, which stops with the driver.
    _serving: Option<Serving>,
    config: Config<Named>,
    etcd: Etcd,
    network: Network,
    /// The executions under way: owned by the driver, so that they stop
    /// with it, as a crash stops them.
    executions: Executions<E>,
    clock: Clock,
    timers: Timers<Timer>,
    events: mpsc::UnboundedSender<Event>,
    /// The payload of every activation the role may still hand out,
    /// forward, fail or report, and how it ended.
    held: HashMap<String, Held>,
    /// Per activation, the nodes that sent a copy of it and are owed an
    /// acknowledgement, each with the controller its copy named.
    senders: HashMap<String, Vec<(String, String)>>,
    /// While the role takes in a message: the node that sent it, recorded
    /// with the step, and where a refusal of an activation
    /// ([`Effect::Refuse`]) goes.
    delivered_by: Option<String>,
    /// The TTL etcd granted each lease with, in milliseconds: what a
    /// keepalive renews it to.
    ttls: HashMap<i64, u64>,
    recorder: Option<Recorder>,
    /// Once asked to drain: where to say it is done.
    leaving: Option<oneshot::Sender<()>>,
}

impl<E: Executor> Driver<E> {
    /// Runs until the task is aborted, or until it has drained, `serving`
    /// (the network's listener) alongside, so that the port is free once
    /// the task is gone.
    async fn run(mut self, serving: impl Future<Output = ()>, mut channels: Channels) {
        tokio::pin!(serving);
        self.feed(Input::Wake);
        loop {
            if self.role.phase == Phase::Drained {
                tracing::info!(address = %self.network.address(), "scheduler drained");
                if let Some(done) = self.leaving.take() {
                    let _ = done.send(());
                }
                return;
            }
            tokio::select! {
                () = &mut serving => return,
                Ok(done) = &mut channels.drain_asked, if self.leaving.is_none() => {
                    tracing::info!(address = %self.network.address(), "scheduler draining");
                    self.leaving = Some(done);
                    self.feed(Input::Drain);
                }
                Some(event) = channels.inputs.recv() => self.event(event),
                Some(message) = channels.messages.recv() => self.message(message),
                Some((to, message)) = channels.bounced.recv() => self.bounced(to, message),
                // A finished execution has said so with an event already.
                () = self.executions.reap() => {}
                () = sleep_until(self.timers.next()) => {
                    for timer in self.timers.take_due() {
                        self.timer(timer);
                    }
                }
            }
        }
    }

    fn event(&mut self, event: Event) {
        match event {
            Event::Input(input) => {
                match &input {
                    Input::Granted { lease, ttl } => {
                        self.ttls.insert(*lease, *ttl);
                    }
                    Input::Revoked { lease } => {
                        self.ttls.remove(lease);
                    }
                    _ => {}
                }
                self.feed(input);
            }
            Event::KeptAlive {
                lease,
                keepalive,
                alive,
            } => {
                let ttl = if alive {
                    self.ttls.get(&lease).copied().unwrap_or(0)
                } else {
                    0
                };
                self.feed(Input::KeptAlive {
                    lease,
                    keepalive,
                    ttl,
                });
            }
            Event::Executed { id, ended } => {
                self.executions.finished(&id);
                let failure = ended.as_ref().err().map(|(failure, _)| *failure);
                if let Some(held) = self.held.get_mut(&id) {
                    held.ended = Some(ended);
                }
                self.feed(Input::Executed { id, failure });
            }
        }
    }

    fn message(&mut self, message: Message) {
        match message {
            Message::Activation {
                id,
                action,
                payload,
                forwarded,
                from,
                reply_to,
                incarnation,
                deadline,
                may_have_run,
            } => {
                let senders = self.senders.entry(id.clone()).or_default();
                let sender = (from.clone(), reply_to.clone());
                if !senders.contains(&sender) {
                    senders.push(sender);
                }
                self.held
                    .entry(id.clone())
                    .or_insert_with(|| Held::new(action.clone(), payload, deadline));
                // The role counts down what is left by its own time.
                let now = crate::clock::now_ms();
                let input = Input::Activation {
                    id,
                    action,
                    forwarded,
                    incarnation,
                    left: deadline.map(|deadline| deadline.saturating_sub(now)),
                    reply_to,
                    may_have_run,
                };
                self.receive(Some(from), input);
            }
            Message::Refused {
                id,
                from,
                incarnation,
            } => self.receive(
                Some(from.clone()),
                Input::Bounced {
                    id,
                    to: from,
                    incarnation,
                },
            ),
            Message::CreateQueue { action, from } => {
                self.receive(from, Input::CreateQueue { action });
            }
            Message::Ack { id, from, reply_to } => {
                let input = Input::ForwardAcked {
                    id,
                    from: from.clone(),
                    reply_to,
                };
                self.receive(Some(from), input);
            }
            Message::OutcomeAck { id, from } => {
                let input = Input::ReportAcked {
                    id,
                    from: from.clone(),
                };
                self.receive(from, input);
            }
            Message::Outcome { id, .. } => {
                tracing::warn!(%id, "a scheduler was sent an outcome; dropped");
            }
        }
    }

    /// A message it sent to `to` bounced: nothing listens at that address.
    /// The role decides what becomes of a forward or a report that did.
    fn bounced(&mut self, to: String, message: Message) {
        match message {
            Message::Activation {
                id,
                forwarded: true,
                incarnation,
                ..
            } => self.feed(Input::Bounced {
                id,
                to,
                incarnation,
            }),
            Message::Outcome { id, .. } => self.feed(Input::ReportBounced { id, to }),
            Message::Activation { .. }
            | Message::CreateQueue { .. }
            | Message::Ack { .. }
            | Message::Refused { .. }
            | Message::OutcomeAck { .. } => {}
        }
    }

    fn timer(&mut self, timer: Timer) {
        match timer {
            Timer::Wake => {
                self.feed(Input::Wake);
                self.forget_released();
            }
            Timer::Retry => self.feed(Input::Retry),
            Timer::Idle(action) => self.feed(Input::Idle { action }),
        }
    }

    /// Drops what the driver keeps of activations the role will name no
    /// more ([`scheduler::Scheduler::mentions`]).
    fn forget_released(&mut self) {
        let role = &self.role;
        self.held.retain(|id, _| role.mentions(id));
    }

    /// One step of the role on an input no node sent.
    fn feed(&mut self, input: Input<Named>) {
        self.receive(None, input);
    }

    /// One step of the role on `input`, which node `from` sent (if any),
    /// recorded, and its effects carried out; while it runs, a refusal
    /// ([`Effect::Refuse`]) goes to `from`.
    fn receive(&mut self, from: Option<String>, input: Input<Named>) {
        self.delivered_by = from;
        let elapsed = self.clock.elapsed_ms();
        let effects = self.role.step(&self.config, elapsed, input.clone());
        tracing::trace!(?input, ?effects, "scheduler step");
        Recorder::write(
            &mut self.recorder,
            &Record {
                at: crate::clock::now_ms(),
                elapsed,
                from: self.delivered_by.clone(),
                input: &input,
                effects: effects.iter().collect::<Vec<_>>(),
            },
        );
        for effect in effects {
            self.perform(effect);
        }
        self.delivered_by = None;
        self.metrics.observe(&self.role);
        let waiting = match self.role.phase {
            Phase::Serving => self.role.valid_lease().is_none().then_some(WAITING),
            Phase::Draining | Phase::Drained => Some(DRAINING),
        };
        self.readiness.set(waiting);
    }

    /// Runs `call` against etcd as a task of its own; its answer, if it
    /// gives one, comes back as an event.
    fn ask<F, Fut>(&self, call: F)
    where
        F: FnOnce(Etcd) -> Fut + Send + 'static,
        Fut: Future<Output = Option<Event>> + Send,
    {
        node::ask(&self.etcd, &self.events, call);
    }

    fn perform(&mut self, effect: Effect<Named>) {
        match effect {
            Effect::WakeIn { after } => self.timers.set(Timer::Wake, after),
            Effect::IdleTimer { action, after } => self.timers.set(Timer::Idle(action), after),
            Effect::Grant { ttl } => self.ask(move |mut etcd| async move {
                let seconds = i64::try_from(ttl.div_ceil(1000)).unwrap_or(i64::MAX);
                let granted = etcd.grant(seconds).await;
                let granted = logged("grant a lease", granted)?;
                let ttl = u64::try_from(granted.ttl).unwrap_or(0) * 1000;
                Some(Event::Input(Input::Granted {
                    lease: granted.id,
                    ttl,
                }))
            }),
            Effect::KeepAlive { lease, keepalive } => self.ask(move |mut etcd| async move {
                let alive = logged("keep the lease alive", etcd.keep_alive(lease).await)?;
                Some(Event::KeptAlive {
                    lease,
                    keepalive,
                    alive,
                })
            }),
            Effect::RetryIn { after } => self.timers.set(Timer::Retry, after),
            Effect::Register { lease, incarnation } => {
                let name = self.network.address().to_owned();
                self.ask(move |mut etcd| async move {
                    let registered = etcd.register(&name, incarnation, lease).await;
                    let found = logged("put the member key", registered)?;
                    Some(Event::Input(Input::Registered { lease, found }))
                });
            }
            Effect::Revoke { lease } => self.ask(move |mut etcd| async move {
                logged("revoke a lease", etcd.revoke(lease).await)?;
                Some(Event::Input(Input::Revoked { lease }))
            }),
            Effect::Claim {
                action,
                lease,
                incarnation,
            } => {
                let owner = self.network.address().to_owned();
                self.ask(move |mut etcd| async move {
                    let claimed = etcd.claim(&action, &owner, incarnation, lease).await;
                    let result = logged("claim an endpoint key", claimed)?;
                    if let ClaimResult::Unreadable { reason, .. } = &result {
                        warn_unreadable(&Key::Endpoint(action.clone()), reason);
                    }
                    Some(Event::Input(Input::Claimed {
                        action,
                        lease,
                        result,
                    }))
                });
            }
            Effect::Delete { action, created } => self.ask(move |mut etcd| async move {
                let deleted = match created {
                    Some(created) => etcd.delete_created(&action, created).await,
                    None => etcd.delete(&action).await,
                };
                logged("delete an endpoint key", deleted)?;
                Some(Event::Input(Input::Deleted { action }))
            }),
            Effect::Resolve { id, action } => self.ask(move |mut etcd| async move {
                let input = match etcd.lookup(&action).await {
                    Ok(key) => Input::Resolved { id, action, key },
                    Err(error) => match error.unreadable() {
                        Some((why, reason)) => {
                            warn_unreadable(&Key::Endpoint(action.clone()), &reason);
                            Input::ResolvedUnreadable {
                                id,
                                action,
                                why,
                                reason,
                            }
                        }
                        None => return logged("look up an endpoint key", Err(error)),
                    },
                };
                Some(Event::Input(input))
            }),
            Effect::FindMember { scheduler } => self.ask(move |mut etcd| async move {
                let seen = logged("look up a peer's member key", etcd.member(&scheduler).await)?;
                if let Some(reason) = &seen.unreadable {
                    warn_unreadable(&Key::Member(scheduler.clone()), reason);
                }
                Some(Event::Input(Input::MemberFound {
                    scheduler,
                    incarnation: seen.incarnation,
                    unreadable: seen.unreadable,
                    term: seen.term,
                }))
            }),
            Effect::Execute { id, .. } => self.execute(id),
            Effect::Cancel { id } => {
                tracing::warn!(%id, "an execution ran past its timeout: cancelled");
                self.executions.cancel(&id);
            }
            Effect::Forward {
                id,
                action,
                to,
                incarnation,
                reply_to,
                may_have_run,
            } => {
                let from = self.network.address().to_owned();
                let Some(held) = self.held_or_log(&id) else {
                    return;
                };
                let again = held.forwarded_to.replace(to.clone()).as_ref() == Some(&to);
                let message = Message::Activation {
                    id,
                    action,
                    payload: held.payload.clone(),
                    forwarded: true,
                    from,
                    reply_to,
                    incarnation: Some(incarnation),
                    deadline: held.deadline,
                    may_have_run,
                };
                if again {
                    self.metrics.resent(1);
                } else {
                    self.metrics.forwarded();
                }
                self.network.send(&to, &message);
            }
            Effect::Report { id, to, outcome } => self.report(id, to, outcome),
            // The loop stops once what it sent is acknowledged.
            Effect::Drained => {}
            Effect::Ack { id } => {
                let from = self.network.address().to_owned();
                for (sender, reply_to) in self.senders.remove(&id).unwrap_or_default() {
                    let ack = Message::Ack {
                        id: id.clone(),
                        from: from.clone(),
                        reply_to: Some(reply_to),
                    };
                    self.network.send(&sender, &ack);
                }
            }
            Effect::Refuse { id, incarnation } => {
                let Some(sender) = self.delivered_by.clone() else {
                    tracing::error!(%id, "the role refused a copy it was not delivered");
                    return;
                };
                if let Some(senders) = self.senders.get_mut(&id) {
                    senders.retain(|(s, _)| *s != sender);
                    if senders.is_empty() {
                        self.senders.remove(&id);
                    }
                }
                tracing::info!(%id, %sender, "refused a copy addressed to an earlier run \
                    of this scheduler: its sender routes it again");
                let from = self.network.address().to_owned();
                let refused = Message::Refused {
                    id,
                    from,
                    incarnation,
                };
                self.network.send(&sender, &refused);
            }
        }
    }

    /// Runs activation `id` through the executor as a task of its own.
    fn execute(&mut self, id: String) {
        let Some(held) = self.held_or_log(&id) else {
            return;
        };
        let invocation = Invocation {
            id,
            action: held.action.clone(),
            payload: held.payload.clone(),
            time_left: self.config.execute_for.map(Duration::from_millis),
            cancelled: CancellationToken::new(),
        };
        let events = self.events.clone();
        self.executions.start(invocation, move |id, ended| {
            let _ = events.send(Event::Executed { id, ended });
        });
    }

    /// What activation `id` was sent with; the role never names one it was
    /// not sent, so a miss is a bug, logged.
    fn held_or_log(&mut self, id: &str) -> Option<&mut Held> {
        let held = self.held.get_mut(id);
        if held.is_none() {
            tracing::error!(%id, "the role named an activation the driver holds no payload for");
        }
        held
    }

    /// Tells the controller that submitted activation `id` how it ended
    /// (with what the action returned, if it ran).
    fn report(&mut self, id: String, to: String, outcome: Outcome) {
        let from = self.network.address().to_owned();
        let Some(held) = self.held_or_log(&id) else {
            return;
        };
        let first = !std::mem::replace(&mut held.reported, true);
        let carried = match outcome {
            Outcome::Executed => {
                let result = match &held.ended {
                    Some(Ok(result)) => result.clone(),
                    _ => {
                        tracing::error!(%id, "the role reported an execution that did not \
                            finish; its result is lost");
                        Value::Null
                    }
                };
                wire::Outcome::Executed { result }
            }
            Outcome::ExecutionFailed(failure) => {
                let message = match &held.ended {
                    Some(Err((_, message))) => message.clone(),
                    _ => failure.message().to_owned(),
                };
                if first {
                    tracing::warn!(%id, %failure, %message, "activation ran and failed");
                }
                wire::Outcome::ExecutionFailed { failure, message }
            }
            Outcome::Failed(reason) => {
                if first {
                    tracing::warn!(%id, %reason, "activation failed");
                }
                wire::Outcome::Failed { reason }
            }
            Outcome::Forgotten => {
                if first {
                    tracing::warn!(%id, "asked again for an activation whose scheduler is gone \
                        with its outcome: answered that it ended");
                }
                wire::Outcome::Forgotten {}
            }
            Outcome::Ambiguous(reason) => {
                if first {
                    tracing::warn!(%id, %reason, "activation not run again, and an earlier \
                        copy may have run at a scheduler that stopped");
                }
                wire::Outcome::Ambiguous { reason }
            }
            Outcome::Unrouted { may_have_run, why } => {
                if first {
                    tracing::warn!(%id, %why, "activation not routed: no owner can be read \
                        from its action's endpoint key");
                }
                wire::Outcome::Unrouted { may_have_run, why }
            }
        };
        if first {
            self.metrics.settled(outcome);
        } else {
            self.metrics.resent(1);
        }
        let message = Message::Outcome {
            id,
            outcome: carried,
            from,
        };
        self.network.send(&to, &message);
    }
}

/// The value of an etcd call, or `None` with the error logged: an
/// unanswered request, which the role sends again at its next wake-up.
fn logged<T>(what: &str, result: Result<T, super::etcd::EtcdError>) -> Option<T> {
    result
        .map_err(|error| tracing::warn!(%error, "failed to {what}"))
        .ok()
}
