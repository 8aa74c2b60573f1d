//! The controller's driver: it runs the spec's
//! [`controller::Controller`](steadfast_spec::leasequeue::controller::Controller)
//! against etcd and the network, and hands each submission the end the role
//! resolves it with. The role decides what is sent again, to whom, and how
//! a submission ends; the driver carries payloads and results alongside.

use std::collections::HashMap;
use std::future::Future;
use std::path::PathBuf;
use std::time::Duration;

use serde_json::Value;
use steadfast_spec::leasequeue::controller::{
    self, Change, Config, Effect, Input, Key, Watch, WatchId,
};
use steadfast_spec::leasequeue::trace::{ControllerHeader, Named};
use steadfast_spec::leasequeue::{ExecutionFailure, FailReason, KeyFault, Outcome, Rules, Variant};
use tokio::sync::{mpsc, oneshot};
use tokio::task::JoinHandle;

use super::etcd::{EndpointWatch, Etcd, EtcdOptions, Watched};
use super::metrics::ControllerMetrics;
use super::network::Network;
use super::node::{self, sleep_until, warn_unreadable, Timers};
use super::tls::NodeTls;
use super::wire::{self, Message};
use super::{millis, StartError};
use crate::metrics::{Readiness, Serving};
use crate::trace::Recorder;
use steadfast_spec::trace::{Header, Record};

/// Why a submission did not return a result.
///
/// ```no_run
/// # async fn demo(controller: steadfast::leasequeue::Controller) {
/// use steadfast::leasequeue::{FailReason, SubmitError};
///
/// match controller.submit("greet", serde_json::json!({})).await {
///     Ok(result) => println!("greet returned {result}"),
///     Err(SubmitError::Failed { reason: FailReason::NoQueueEndpoint, .. }) => {
///         println!("no queue for greet: submit again later")
///     }
///     Err(error) => println!("{error}"),
/// }
/// # }
/// ```
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum SubmitError {
    /// The activation started, and its execution ended without a result:
    /// the executor returned an error or panicked, or it ran past the
    /// scheduler's execution timeout. It is not run again.
    #[error("activation {id} ran and failed: {failure}: {message}")]
    ExecutionFailed {
        /// The activation.
        id: String,
        /// Why, as the spec names it.
        failure: ExecutionFailure,
        /// The executor's error or the panic's message (the failure's words
        /// for a timeout).
        message: String,
    },
    /// The activation failed for good without running, for the spec's
    /// named reason.
    #[error("activation {id} failed: {reason}")]
    Failed {
        /// The activation.
        id: String,
        /// Why.
        reason: FailReason,
    },
    /// The controller stopped before the activation ended: whether it ran
    /// is not known.
    #[error("the controller stopped before activation {id} ended")]
    Stopped {
        /// The activation.
        id: String,
    },
    /// The id given to [`Controller::submit_as`] cannot name an activation;
    /// nothing was submitted.
    #[error(
        "activation id {id:?} cannot be used: {reason}; give a non-empty id, unique per activation"
    )]
    InvalidId {
        /// The id given.
        id: String,
        /// Why it cannot be used.
        reason: &'static str,
    },
    /// The action named cannot be one: its endpoint key
    /// (`<prefix>queue/<action>/leader`) must read back as the action it
    /// was written for, in every controller. Nothing was submitted or
    /// written.
    #[error(
        "action {action:?} cannot be used: {reason}; give a name of 1 to {MAX_ACTION_BYTES} \
         bytes without control characters"
    )]
    InvalidAction {
        /// The activation.
        id: String,
        /// The action given.
        action: String,
        /// Why it cannot be used.
        reason: &'static str,
    },
    /// The deadline given ([`Request::deadline`]) is zero: nothing could
    /// start by it. Nothing was submitted.
    #[error("activation {id} has a deadline of zero: give the time it may wait, such as 20 s")]
    InvalidDeadline {
        /// The activation.
        id: String,
    },
    /// The deadline passed with no outcome: the activation ran or runs
    /// (its outcome had not come back), or it had not started and no
    /// scheduler will start it now (it fails, as `PastDeadline`). It is
    /// not given up: its end is logged, and counted in the metrics, when
    /// it comes. Submitted again under its id while it is pending, a
    /// handle waits for that end.
    #[error("activation {id} has no outcome by its deadline: it ran or runs, or will not start")]
    Overdue {
        /// The activation.
        id: String,
    },
    /// Submitted again after it ended, and the scheduler that knew how is
    /// gone, with what it knew: it ended before (ran, or failed), and is
    /// not run again. Keep the first submission's outcome where it
    /// matters; within the schedulers' dedupe window a resubmission is
    /// otherwise answered with it.
    #[error("activation {id} ended before, and how is no longer known: it is not run again")]
    Forgotten {
        /// The activation.
        id: String,
    },
    /// It was not run again, for the spec's named reason (its deadline
    /// passed), and whether it ran is not known: an earlier copy reached a
    /// scheduler that crashed or left without acknowledging it, and may
    /// have run it first. Where running twice would matter, check for its
    /// effects before submitting it again under a new id.
    #[error(
        "activation {id} was not run again ({reason}), and may have run on a scheduler that \
         stopped before reporting it"
    )]
    Ambiguous {
        /// The activation.
        id: String,
        /// Why it was not run again.
        reason: FailReason,
    },
    /// This call was not routed, and did not run through it: no owner of
    /// its action's queue can be read from the action's endpoint key
    /// (`<prefix>queue/<action>/leader`), for the reason `why` names. The
    /// key holds a value no steadfast node wrote (another system's under
    /// the same prefix, or one edited by hand: delete it, or give this
    /// runtime a prefix of its own, [`EtcdOptions::prefix`]), or etcd
    /// refuses a node access to it (grant the nodes' etcd users read and
    /// write access under the prefix). A warning naming the key and etcd's
    /// words is logged. It says nothing of another submission of the same
    /// id, which nobody can route either while the key stays so. Once it
    /// is put right, submit it again: it runs, unless it ran.
    ///
    /// [`EtcdOptions::prefix`]: super::etcd::EtcdOptions::prefix
    #[error(
        "activation {id} was not routed: the endpoint key of action {action:?} {why} (see the \
         warning logged with it){}; {} and submit it again",
        may_have_run_words(*may_have_run),
        why.remedy()
    )]
    Unrouted {
        /// The activation.
        id: String,
        /// Its action.
        action: String,
        /// An earlier copy of it reached a scheduler that stopped without
        /// acknowledging it, and may have run it.
        may_have_run: bool,
        /// Why no owner could be read from the key.
        why: KeyFault,
    },
}

/// The words [`SubmitError::Unrouted`] adds when an earlier copy may have
/// run.
fn may_have_run_words(may_have_run: bool) -> &'static str {
    if may_have_run {
        "; an earlier copy reached a scheduler that stopped, and may have run it"
    } else {
        ""
    }
}

/// An activation to submit with [`Controller::submit_with`]: its action and
/// payload, and optionally its id and a deadline.
///
/// ```no_run
/// # async fn demo(controller: steadfast::leasequeue::Controller) {
/// use std::time::Duration;
/// use steadfast::leasequeue::{Request, SubmitError};
///
/// let request = Request::new("greet", serde_json::json!({ "n": 1 }))
///     .id("greeting-1")
///     .deadline(Duration::from_secs(20));
/// match controller.submit_with(request).await {
///     Ok(result) => println!("{result}"),
///     Err(SubmitError::Overdue { id }) => println!("{id}: no outcome yet"),
///     Err(error) => println!("{error}"),
/// }
/// # }
/// ```
#[derive(Clone, Debug, PartialEq)]
pub struct Request {
    id: Option<String>,
    action: String,
    payload: Value,
    deadline: Option<Duration>,
}

impl Request {
    /// An activation of `action` with `payload`, under a fresh id, without
    /// a deadline.
    pub fn new(action: impl Into<String>, payload: Value) -> Self {
        Request {
            id: None,
            action: action.into(),
            payload,
            deadline: None,
        }
    }

    /// Under the caller's `id`, as [`Controller::submit_as`] says.
    #[must_use]
    pub fn id(mut self, id: impl Into<String>) -> Self {
        self.id = Some(id.into());
        self
    }

    /// With a deadline `within` from now (OpenWhisk's
    /// `max-scheduling-time`): no scheduler starts the activation later, by
    /// its own clock (it fails it, as
    /// [`FailReason::PastDeadline`]), and the handle ends by then, with
    /// [`SubmitError::Overdue`] if no outcome has come. Deadlines are
    /// written in wall-clock time: the nodes' clocks must agree to within
    /// what a deadline may be late by.
    #[must_use]
    pub fn deadline(mut self, within: Duration) -> Self {
        self.deadline = Some(within);
        self
    }
}

/// Sets a controller up; [`ControllerBuilder::start`] runs it.
///
/// ```no_run
/// # async fn demo() -> Result<(), Box<dyn std::error::Error>> {
/// use steadfast::leasequeue::etcd::EtcdOptions;
/// use steadfast::leasequeue::ControllerBuilder;
///
/// // It learns the schedulers from their member keys in etcd.
/// let controller = ControllerBuilder::new(EtcdOptions::new(["http://127.0.0.1:2379"]))
///     .start()
///     .await?;
/// let result = controller.submit("hello", serde_json::json!({"name": "world"})).await?;
/// println!("hello returned {result}");
/// # Ok(())
/// # }
/// ```
#[derive(Clone, Debug)]
pub struct ControllerBuilder {
    etcd: EtcdOptions,
    rules: Rules,
    wake_every: Duration,
    presume_gone_after: Duration,
    listen: String,
    advertise: Option<String>,
    tls: Option<NodeTls>,
    trace: Option<PathBuf>,
    metrics: Option<String>,
}

impl ControllerBuilder {
    /// A controller on the etcd `etcd` names, following the steadfast
    /// rules, waking up every second, presuming gone a scheduler whose
    /// member key stays gone 10 s, listening on a free port of
    /// 127.0.0.1. It places new queues among the schedulers whose member
    /// keys it finds in etcd (rendezvous hashing over their names, the same
    /// in every controller).
    pub fn new(etcd: EtcdOptions) -> Self {
        ControllerBuilder {
            etcd,
            rules: Variant::Steadfast.into(),
            wake_every: Duration::from_secs(1),
            presume_gone_after: Duration::from_secs(10),
            listen: "127.0.0.1:0".into(),
            advertise: None,
            tls: None,
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

    /// How often it wakes up: to send again the activations whose outcome
    /// it waits for, to look up parked ones again, and to check that
    /// its watch still answers.
    #[must_use]
    pub fn wake_every(mut self, every: Duration) -> Self {
        self.wake_every = every;
        self
    }

    /// How long a scheduler's member key may stay gone (its lease expired)
    /// while activations sent to it wait unacknowledged, before the
    /// scheduler is presumed gone and they are routed again, from a fresh
    /// lookup: a scheduler whose address black-holes (a deleted pod) never
    /// refuses them. 10 s by default, checked at each wake-up.
    ///
    /// A scheduler cut off from etcd comes back with its member key as
    /// soon as it reaches etcd again; one cut off longer than this while
    /// it runs an activation may see that activation routed again and run
    /// a second time elsewhere. Set it above the longest such cut you
    /// want to ride out.
    #[must_use]
    pub fn presume_gone_after(mut self, after: Duration) -> Self {
        self.presume_gone_after = after;
        self
    }

    /// The address to listen on for acknowledgements and outcomes
    /// (`host:port`, port 0 for a free one); schedulers must reach it.
    #[must_use]
    pub fn listen(mut self, address: impl Into<String>) -> Self {
        self.listen = address.into();
        self
    }

    /// The address schedulers reach it at, when it is not the one it
    /// listens on (a proxy, a NAT, a Kubernetes Service or pod IP in front
    /// of `0.0.0.0:PORT`): `host:port`, where acknowledgements and outcomes
    /// are sent. By default, the address bound.
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

    /// Records its trace to `path` (JSON lines, for `steadfast replay`).
    #[must_use]
    pub fn trace(mut self, path: impl Into<PathBuf>) -> Self {
        self.trace = Some(path.into());
        self
    }

    /// Serves the controller's metrics (`steadfast_controller_*`:
    /// submissions ended by outcome and reason, in flight, redeliveries)
    /// and its probes on `address` (`127.0.0.1:0` picks a free port; see
    /// [`Controller::metrics_address`]). `/readyz` is ready once its watch
    /// of the endpoint keys is open from its first reading of them.
    pub fn metrics(mut self, address: impl Into<String>) -> Self {
        self.metrics = Some(address.into());
        self
    }

    /// Connects to etcd, lists the endpoint and member keys, listens, and
    /// starts the controller.
    ///
    /// # Errors
    ///
    /// A period or a presumption span of zero, etcd unreachable, the address not bindable, the
    /// trace not writable.
    pub async fn start(self) -> Result<Controller, StartError> {
        if self.wake_every.is_zero() {
            return Err(StartError::Config(
                "wake_every is zero: set how often the controller wakes up, such as 1 s".into(),
            ));
        }
        if self.presume_gone_after.is_zero() {
            return Err(StartError::Config(
                "presume_gone_after is zero: set how long a scheduler's member key may stay \
                 gone before what was sent to it is routed again, such as 10 s"
                    .into(),
            ));
        }
        let config = Config {
            rules: self.rules,
            wake_every: millis(self.wake_every),
            seed: 0,
            presume_gone_after: millis(self.presume_gone_after),
        };
        let mut etcd = Etcd::connect(&self.etcd).await?;
        let listing = etcd.list().await?;
        for (key, reason) in &listing.unreadable {
            warn_unreadable(key, reason);
        }
        let rev = listing.revision;
        let opened = node::open(
            &self.listen,
            self.advertise.as_deref(),
            self.tls.clone(),
            self.trace.as_deref(),
            |address| {
                Header::Controller(ControllerHeader {
                    address: address.to_owned(),
                    keys: listing.keys.clone(),
                    members: listing.members.clone(),
                    rev,
                    config: config.clone(),
                })
            },
        )
        .await?;
        let address = opened.network.address().to_owned();
        let (metrics, registry) = ControllerMetrics::new();
        let readiness = Readiness::waiting(WAITING);
        let serving = super::serve_metrics(self.metrics.as_deref(), registry, &readiness).await?;
        let metrics_address = serving.as_ref().map(|(bound, _)| *bound);
        let (events, inputs) = mpsc::unbounded_channel();
        let (submit, submissions) = mpsc::unbounded_channel();
        let driver = Driver {
            role: controller::Controller::new(listing.keys, listing.members, rev),
            metrics,
            readiness,
            _serving: serving.map(|(_, serving)| serving),
            config,
            etcd,
            network: opened.network,
            timers: Timers::new(),
            events,
            pending: HashMap::new(),
            watches: HashMap::new(),
            recorder: opened.recorder,
            arriving: None,
        };
        let task = tokio::spawn(driver.run(
            opened.serving,
            rev + 1,
            inputs,
            opened.messages,
            opened.bounced,
            submissions,
        ));
        tracing::info!(%address, "controller started");
        Ok(Controller {
            address,
            metrics_address,
            submit,
            task,
        })
    }
}

/// A running controller. Dropping it stops it; submissions still pending
/// end with [`SubmitError::Stopped`].
///
/// ```no_run
/// # async fn demo(controller: steadfast::leasequeue::Controller) {
/// // Submissions run side by side; each future resolves exactly once.
/// let pending: Vec<_> = (0..10)
///     .map(|n| controller.submit("greet", serde_json::json!({ "n": n })))
///     .collect();
/// for submission in pending {
///     println!("{:?}", submission.await);
/// }
/// # }
/// ```
pub struct Controller {
    address: String,
    metrics_address: Option<std::net::SocketAddr>,
    submit: mpsc::UnboundedSender<Submission>,
    task: JoinHandle<()>,
}

impl Controller {
    /// Its address, where outcomes come back.
    pub fn address(&self) -> &str {
        &self.address
    }

    /// Where its metrics and probes are served, if
    /// [`ControllerBuilder::metrics`] asked for them.
    pub fn metrics_address(&self) -> Option<std::net::SocketAddr> {
        self.metrics_address
    }

    /// Submits an activation of `action` with `payload`. The handle names
    /// the activation at once ([`Submitted::id`]), for logs and
    /// correlation, and, awaited, resolves exactly once: with what the
    /// action returned, or with why it failed for good. An activation that
    /// cannot be routed yet (etcd unreachable) waits, under the steadfast
    /// rules, until it can.
    pub fn submit(&self, action: impl Into<String>, payload: Value) -> Submitted {
        self.submit_with(Request::new(action, payload))
    }

    /// Submits an activation of `action` with `payload` under the caller's
    /// `id` (an idempotency key: a request id, a job name), as
    /// [`Controller::submit`] does otherwise. Submitted again under an id
    /// that is still pending, it joins that submission, whose action and
    /// payload run: both handles end alike, and it runs once. Once the
    /// submission has ended, the id is free for a new one (a scheduler that
    /// ran it ignores copies of it for its dedupe window). An empty id ends
    /// the handle at once with [`SubmitError::InvalidId`], and an action
    /// name that cannot be one (empty, longer than [`MAX_ACTION_BYTES`],
    /// or holding a control character) with
    /// [`SubmitError::InvalidAction`]: nothing is sent or written.
    ///
    /// ```no_run
    /// # async fn demo(controller: steadfast::leasequeue::Controller) {
    /// let payload = serde_json::json!({ "invoice": 42 });
    /// let first = controller.submit_as("invoice-42", "bill", payload.clone());
    /// // A retry of the caller's own, while the first is pending, joins it.
    /// let retry = controller.submit_as("invoice-42", "bill", payload);
    /// assert_eq!(first.await, retry.await);
    /// # }
    /// ```
    pub fn submit_as(
        &self,
        id: impl Into<String>,
        action: impl Into<String>,
        payload: Value,
    ) -> Submitted {
        self.submit_with(Request::new(action, payload).id(id))
    }

    /// Submits `request`: as [`Controller::submit`], or
    /// [`Controller::submit_as`] when it names an id, and with its
    /// deadline, if it has one ([`Request::deadline`]). A submission that
    /// joins a pending one shares that one's deadline.
    pub fn submit_with(&self, request: Request) -> Submitted {
        let Request {
            id,
            action,
            payload,
            deadline,
        } = request;
        let id = id.unwrap_or_else(|| uuid::Uuid::new_v4().to_string());
        let (reply, outcome) = oneshot::channel();
        let invalid = if id.is_empty() {
            Some(SubmitError::InvalidId {
                id: id.clone(),
                reason: "it is empty",
            })
        } else if let Some(reason) = action_problem(&action) {
            Some(SubmitError::InvalidAction {
                id: id.clone(),
                action: action.clone(),
                reason,
            })
        } else if deadline.is_some_and(|d| d.is_zero()) {
            Some(SubmitError::InvalidDeadline { id: id.clone() })
        } else {
            None
        };
        if let Some(invalid) = invalid {
            let _ = reply.send(Err(invalid));
            return Submitted { id, outcome };
        }
        // Sent to a stopped controller, the submission comes back in the
        // error and is dropped with its `reply`: the handle then ends with
        // `Stopped`, as it does when the controller stops later.
        let _ = self.submit.send(Submission {
            id: id.clone(),
            action,
            payload,
            within: deadline.map(millis),
            deadline: deadline.map(|within| crate::clock::now_ms().saturating_add(millis(within))),
            replies: vec![reply],
            sent: false,
        });
        Submitted { id, outcome }
    }
}

/// The most bytes an action's name may have (OpenWhisk's limit on an
/// entity's name).
pub const MAX_ACTION_BYTES: usize = 256;

/// Why `action` cannot name an action, if it cannot: an empty name makes
/// the key `queue//leader`, which no controller reads back as an action;
/// a control character makes keys, logs and metrics unreadable; a name is
/// bounded so that keys and messages stay small.
fn action_problem(action: &str) -> Option<&'static str> {
    if action.is_empty() {
        Some("it is empty")
    } else if action.len() > MAX_ACTION_BYTES {
        Some("it is too long")
    } else if action.chars().any(char::is_control) {
        Some("it holds a control character")
    } else {
        None
    }
}

/// An activation submitted ([`Controller::submit`]): its id now, its end
/// when awaited.
///
/// ```no_run
/// # async fn demo(controller: steadfast::leasequeue::Controller) {
/// let submitted = controller.submit("greet", serde_json::json!({ "n": 1 }));
/// println!("submitted {}", submitted.id());
/// match submitted.await {
///     Ok(result) => println!("{result}"),
///     Err(error) => println!("{error}"),
/// }
/// # }
/// ```
#[derive(Debug)]
#[must_use = "an activation's end is known only by awaiting its handle"]
pub struct Submitted {
    id: String,
    outcome: oneshot::Receiver<Result<Value, SubmitError>>,
}

impl Submitted {
    /// The activation's id.
    pub fn id(&self) -> &str {
        &self.id
    }
}

impl Future for Submitted {
    type Output = Result<Value, SubmitError>;

    fn poll(
        self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<Self::Output> {
        let this = self.get_mut();
        std::pin::Pin::new(&mut this.outcome).poll(cx).map(|ended| {
            ended.unwrap_or_else(|_| {
                Err(SubmitError::Stopped {
                    id: this.id.clone(),
                })
            })
        })
    }
}

impl Drop for Controller {
    fn drop(&mut self) {
        self.task.abort();
    }
}

/// An activation submitted and not ended yet.
struct Submission {
    id: String,
    action: String,
    payload: Value,
    /// How long its caller waits, in milliseconds, if it set a deadline.
    within: Option<u64>,
    /// Its deadline on the wire: milliseconds since the Unix epoch.
    deadline: Option<u64>,
    /// Every handle submitted under its id while it was pending.
    replies: Vec<oneshot::Sender<Result<Value, SubmitError>>>,
    /// Whether it was sent to a scheduler already: a send after that is a
    /// redelivery.
    sent: bool,
}

/// What the driver's loop reacts to, besides messages, submissions and
/// timers.
enum Event {
    /// An etcd answer, as the role's input.
    Input(Input<Named>),
    /// Watch `id`, asked for by the role, has started.
    WatchOpened {
        id: WatchId,
        next: i64,
        stream: Box<EndpointWatch>,
    },
}

/// The driver's timers: the role's wake-up, and each submission's
/// deadline.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
enum Timer {
    Wake,
    Deadline(String),
}

/// What `/readyz` says a controller waits for.
const WAITING: &str = "its watch of the endpoint and member keys";

struct Driver {
    role: controller::Controller<Named>,
    metrics: ControllerMetrics,
    readiness: Readiness,
    /// The metrics endpoint, which stops with the driver.
    _serving: Option<Serving>,
    config: Config<Named>,
    etcd: Etcd,
    network: Network,
    timers: Timers<Timer>,
    events: mpsc::UnboundedSender<Event>,
    /// Submissions not ended yet, by id.
    pending: HashMap<String, Submission>,
    /// The watches open, by the role's name for each: a watch's sender
    /// asks it for progress, and dropping it closes the watch. Which of
    /// them the role listens to is the role's to say: every report of
    /// each is fed to it.
    watches: HashMap<WatchId, mpsc::UnboundedSender<()>>,
    recorder: Option<Recorder>,
    /// While an outcome is fed to the role: its activation, and what the
    /// action returned, for the submission the role resolves with it.
    arriving: Option<(String, wire::Outcome)>,
}

impl Driver {
    /// Runs until the task is aborted, `serving` (the network's listener)
    /// alongside.
    async fn run(
        mut self,
        serving: impl Future<Output = ()>,
        from: i64,
        mut inputs: mpsc::UnboundedReceiver<Event>,
        mut messages: mpsc::UnboundedReceiver<Message>,
        mut bounced: mpsc::UnboundedReceiver<(String, Message)>,
        mut submissions: mpsc::UnboundedReceiver<Submission>,
    ) {
        tokio::pin!(serving);
        // The role starts with watch 0, from after its first listing.
        self.open_watch(WatchId::default(), Some(from));
        self.feed(Input::Wake);
        loop {
            tokio::select! {
                () = &mut serving => return,
                Some(event) = inputs.recv() => self.event(event),
                Some(message) = messages.recv() => self.message(message),
                // An activation sent where nothing listens any more; a
                // queue asked of such a scheduler is asked again elsewhere
                // once the role routes the activation again.
                Some((to, message)) = bounced.recv() => {
                    if let Message::Activation { id, incarnation, .. } = message {
                        self.feed(Input::Bounced { id, to, incarnation });
                    }
                }
                Some(submission) = submissions.recv() => self.submitted(submission),
                () = sleep_until(self.timers.next()) => {
                    for timer in self.timers.take_due() {
                        match timer {
                            Timer::Wake => self.feed(Input::Wake),
                            Timer::Deadline(id) => self.feed(Input::Deadline { id }),
                        }
                    }
                }
            }
        }
    }

    fn event(&mut self, event: Event) {
        match event {
            Event::Input(input) => self.feed(input),
            Event::WatchOpened { id, next, stream } => {
                let (progress, requests) = mpsc::unbounded_channel();
                self.watches.insert(id, progress);
                let term = stream.term();
                tokio::spawn(pump(id, *stream, requests, self.events.clone()));
                self.feed(Input::WatchStarted {
                    watch: id,
                    next,
                    term,
                });
            }
        }
    }

    fn message(&mut self, message: Message) {
        match message {
            Message::Ack { id, from, .. } => {
                self.receive(Some(from.clone()), Input::Acked { id, from })
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
            Message::Outcome { id, outcome, from } => {
                let role_outcome = match &outcome {
                    wire::Outcome::Executed { .. } => Outcome::Executed,
                    wire::Outcome::ExecutionFailed { failure, .. } => {
                        Outcome::ExecutionFailed(*failure)
                    }
                    wire::Outcome::Failed { reason } => Outcome::Failed(*reason),
                    wire::Outcome::Forgotten {} => Outcome::Forgotten,
                    wire::Outcome::Ambiguous { reason } => Outcome::Ambiguous(*reason),
                    wire::Outcome::Unrouted { may_have_run, why } => Outcome::Unrouted {
                        may_have_run: *may_have_run,
                        why: *why,
                    },
                };
                self.arriving = Some((id.clone(), outcome));
                let input = Input::Outcome {
                    id,
                    outcome: role_outcome,
                    from: Some(from.clone()),
                };
                self.receive(Some(from), input);
                self.arriving = None;
            }
            Message::Activation { id, .. } | Message::OutcomeAck { id, .. } => {
                tracing::warn!(%id, "a controller was sent a scheduler's message; dropped");
            }
            Message::CreateQueue { action, .. } => {
                tracing::warn!(%action, "a controller was asked to create a queue; dropped");
            }
        }
    }

    /// Takes a submission to the role; one under an id still pending joins
    /// it (the role ignores it; its handle ends with the first).
    fn submitted(&mut self, mut submission: Submission) {
        let input = Input::Submit {
            id: submission.id.clone(),
            action: submission.action.clone(),
            deadline: submission.within,
        };
        match self.pending.get_mut(&submission.id) {
            Some(pending) => {
                if (&pending.action, &pending.payload) != (&submission.action, &submission.payload)
                {
                    tracing::warn!(
                        id = %submission.id,
                        "resubmitted under a pending id with another action or payload: \
                         it joins the pending submission, whose action and payload run"
                    );
                }
                pending.replies.append(&mut submission.replies);
            }
            None => {
                self.pending.insert(submission.id.clone(), submission);
                self.metrics.in_flight(self.pending.len());
            }
        }
        self.feed(input);
    }

    /// Ends submission `id` as the role resolved it (`outcome`), handing
    /// `result` to every handle submitted under it, unless it ended already
    /// (an outcome delivered again). One whose handles were told it was
    /// overdue has its end logged.
    fn end(&mut self, id: &str, outcome: Outcome, result: Result<Value, SubmitError>) {
        if let Some(submission) = self.pending.remove(id) {
            self.metrics.ended(outcome, self.pending.len());
            if submission.replies.is_empty() {
                tracing::info!(%id, ?outcome, "an activation overdue ended");
            }
            for reply in submission.replies {
                let _ = reply.send(result.clone());
            }
        }
    }

    /// One step of the role on an input no node sent.
    fn feed(&mut self, input: Input<Named>) {
        self.receive(None, input);
    }

    /// One step of the role on `input`, which node `from` sent (if any),
    /// recorded, and its effects carried out.
    fn receive(&mut self, from: Option<String>, input: Input<Named>) {
        let effects = self.role.step(&self.config, input.clone());
        tracing::trace!(?input, ?effects, "controller step");
        Recorder::write(
            &mut self.recorder,
            &Record {
                at: crate::clock::now_ms(),
                elapsed: 0,
                from,
                input: &input,
                effects: effects.iter().collect::<Vec<_>>(),
            },
        );
        for effect in effects {
            self.perform(effect);
        }
        // Ready while the watch the role listens to is open.
        let listening = match self.role.watch {
            Watch::Active { id, .. } => self.watches.contains_key(&id),
            Watch::Starting { .. } | Watch::Listing => false,
        };
        self.readiness.set((!listening).then_some(WAITING));
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

    /// Opens watch `id` from `from` (`None`: from etcd's next revision);
    /// it is fed to the role once it starts.
    fn open_watch(&mut self, id: WatchId, from: Option<i64>) {
        self.ask(move |mut etcd| async move {
            let next = match from {
                Some(from) => from,
                None => etcd.revision().await.ok()? + 1,
            };
            match etcd.watch(next).await {
                Ok(stream) => Some(Event::WatchOpened {
                    id,
                    next,
                    stream: Box::new(stream),
                }),
                Err(error) => {
                    tracing::warn!(%error, "failed to start a watch");
                    None
                }
            }
        });
    }

    fn perform(&mut self, effect: Effect<Named>) {
        match effect {
            Effect::WakeIn { after } => self.timers.set(Timer::Wake, after),
            Effect::DeadlineIn { id, after } => self.timers.set(Timer::Deadline(id), after),
            // Every handle waiting now ends; the submission goes on.
            Effect::Confirm { id, to } => {
                let ack = Message::OutcomeAck {
                    id,
                    from: Some(self.network.address().to_owned()),
                };
                self.network.send(&to, &ack);
            }
            Effect::Overdue { id } => {
                let Some(submission) = self.pending.get_mut(&id) else {
                    return;
                };
                tracing::warn!(%id, "no outcome by the activation's deadline");
                self.metrics.overdue();
                for reply in submission.replies.drain(..) {
                    let _ = reply.send(Err(SubmitError::Overdue { id: id.clone() }));
                }
            }
            Effect::Get { id, action } => self.ask(move |mut etcd| async move {
                let input = match etcd.lookup(&action).await {
                    Ok(key) => Input::Got {
                        id,
                        action,
                        owner: key.map(|key| key.owner),
                    },
                    Err(error) => match error.unreadable() {
                        Some((why, reason)) => {
                            warn_unreadable(&Key::Endpoint(action.clone()), &reason);
                            Input::GotUnreadable {
                                id,
                                action,
                                why,
                                reason,
                            }
                        }
                        None => {
                            tracing::warn!(%error, %action, "failed to look up an endpoint key");
                            Input::GetFailed { id, action }
                        }
                    },
                };
                Some(Event::Input(input))
            }),
            Effect::List => self.ask(|mut etcd| async move {
                match etcd.list().await {
                    Ok(listing) => {
                        for (key, reason) in &listing.unreadable {
                            warn_unreadable(key, reason);
                        }
                        Some(Event::Input(Input::Listed {
                            rev: listing.revision,
                            keys: listing.keys,
                            members: listing.members,
                        }))
                    }
                    Err(error) => {
                        tracing::warn!(%error, "failed to list the endpoint and member keys");
                        None
                    }
                }
            }),
            Effect::Watch { id, from } => self.open_watch(id, from),
            Effect::Unwatch { id } => {
                self.watches.remove(&id);
            }
            Effect::RequestProgress { id } => {
                if let Some(progress) = self.watches.get(&id) {
                    let _ = progress.send(());
                }
            }
            Effect::Send {
                id,
                action,
                to,
                incarnation,
                may_have_run,
            } => {
                let Some(submission) = self.pending.get_mut(&id) else {
                    tracing::error!(%id, "the role sent an activation nobody submitted");
                    return;
                };
                if std::mem::replace(&mut submission.sent, true) {
                    self.metrics.resent(1);
                }
                let address = self.network.address().to_owned();
                let message = Message::Activation {
                    id,
                    action,
                    payload: submission.payload.clone(),
                    forwarded: false,
                    from: address.clone(),
                    reply_to: address,
                    incarnation,
                    deadline: submission.deadline,
                    may_have_run,
                };
                self.network.send(&to, &message);
            }
            Effect::CreateQueue { action, to } => {
                let from = Some(self.network.address().to_owned());
                self.network
                    .send(&to, &Message::CreateQueue { action, from });
            }
            Effect::Resolve { id, outcome } => {
                // What the report that resolves it carried alongside.
                let arrived = match self.arriving.take() {
                    Some((arrived, carried)) if arrived == id => Some(carried),
                    _ => None,
                };
                let result = match outcome {
                    Outcome::Executed => match arrived {
                        Some(wire::Outcome::Executed { result }) => Ok(result),
                        _ => {
                            tracing::error!(%id, "the role resolved an activation as executed \
                                without its report; its result is lost");
                            Ok(Value::Null)
                        }
                    },
                    Outcome::ExecutionFailed(failure) => {
                        let message = match arrived {
                            Some(wire::Outcome::ExecutionFailed { message, .. }) => message,
                            _ => failure.message().to_owned(),
                        };
                        tracing::warn!(%id, %failure, %message, "activation ran and failed");
                        Err(SubmitError::ExecutionFailed {
                            id: id.clone(),
                            failure,
                            message,
                        })
                    }
                    Outcome::Failed(reason) => {
                        tracing::warn!(%id, %reason, "activation failed");
                        Err(SubmitError::Failed {
                            id: id.clone(),
                            reason,
                        })
                    }
                    Outcome::Forgotten => {
                        tracing::warn!(%id, "activation ended before; how is no longer known");
                        Err(SubmitError::Forgotten { id: id.clone() })
                    }
                    Outcome::Ambiguous(reason) => {
                        tracing::warn!(%id, %reason, "activation not run again; it may have run \
                            on a scheduler that stopped");
                        Err(SubmitError::Ambiguous {
                            id: id.clone(),
                            reason,
                        })
                    }
                    Outcome::Unrouted { may_have_run, why } => {
                        let action = self.pending.get(&id).map(|s| s.action.clone());
                        let action = action.unwrap_or_default();
                        tracing::warn!(%id, %action, %why, "activation not routed: no owner \
                            can be read from its action's endpoint key");
                        Err(SubmitError::Unrouted {
                            id: id.clone(),
                            action,
                            may_have_run,
                            why,
                        })
                    }
                };
                self.end(&id, outcome, result);
            }
        }
    }
}

/// Reads watch `id` into the driver's events, and asks it for progress
/// when the driver does; ends when the watch breaks or the driver closes
/// it.
async fn pump(
    id: WatchId,
    mut watch: EndpointWatch,
    mut progress: mpsc::UnboundedReceiver<()>,
    events: mpsc::UnboundedSender<Event>,
) {
    loop {
        let report = tokio::select! {
            request = progress.recv() => {
                if request.is_none() {
                    return;
                }
                if let Err(error) = watch.request_progress().await {
                    tracing::debug!(%error, "failed to ask the watch for progress");
                }
                continue;
            }
            report = watch.next(Duration::from_secs(3600)) => report,
        };
        let input = match report {
            Ok(None) => continue,
            Ok(Some(Watched::Changes { changes, term })) => {
                for (_, change) in &changes {
                    if let Change::Unreadable { key, reason } = change {
                        warn_unreadable(key, reason);
                    }
                }
                Input::Changed {
                    watch: id,
                    changes,
                    term,
                }
            }
            Ok(Some(Watched::Compacted { compact_revision })) => Input::Compacted {
                watch: id,
                rev: compact_revision,
            },
            Ok(Some(Watched::Progress { revision, term })) => Input::Progress {
                watch: id,
                rev: revision,
                term,
            },
            Err(error) => {
                tracing::warn!(%error, "the watch broke");
                return;
            }
        };
        if events.send(Event::Input(input)).is_err() {
            return;
        }
    }
}
