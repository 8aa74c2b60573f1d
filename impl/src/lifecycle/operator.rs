//! The operator: handlers registered by cause, and the loop that watches
//! the resource and gives each object a driver of its own.

use std::collections::{HashMap, HashSet};
use std::future::Future;
use std::path::PathBuf;
use std::pin::Pin;
use std::sync::Arc;
use std::time::Duration;

use futures::StreamExt;
use kube::api::Api;
use kube::runtime::watcher::{self, watcher};
use kube::runtime::WatchStreamExt;
use kube::{Resource, ResourceExt};
use serde::de::DeserializeOwned;
use serde::Serialize;
use steadfast_spec::lifecycle::named::{field_keys, BadPath};
use steadfast_spec::lifecycle::{Backoff, Claims, Config, HandlerSpec, On, Rules, Variant};
use tokio::sync::mpsc;
use tokio::task::JoinSet;
use tracing::Instrument;

use super::driver::{Driver, Event, Shared};
use super::events::Events;
use super::handler::Handler;
use super::metrics::Metrics;
use crate::metrics::{MetricsEndpoint, Readiness};

/// Why an operator cannot start.
///
/// ```
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() {
/// use k8s_openapi::api::core::v1::ConfigMap;
/// use kube::{Api, Client, Config};
/// use steadfast::lifecycle::{Context, Handler, HandlerError, Operator, OperatorError};
///
/// let client = Client::try_from(Config::new("http://127.0.0.1:1".parse().unwrap())).unwrap();
/// let noop = || Handler::new(|_: Context<ConfigMap>| async { Ok::<(), HandlerError>(()) });
/// let error = Operator::new(Api::<ConfigMap>::all(client.clone()))
///     .on_create("sync", noop())
///     .on_update("sync", noop())
///     .run()
///     .await
///     .unwrap_err();
/// assert!(matches!(error, OperatorError::DuplicateId(id) if id == "sync"));
///
/// // metadata.name never changes: a field handler on it would run once.
/// let error = Operator::new(Api::<ConfigMap>::all(client))
///     .on_field("metadata.name", "rename", noop())
///     .run()
///     .await
///     .unwrap_err();
/// assert!(matches!(error, OperatorError::BadField(_)));
/// assert!(error.to_string().contains("outside the essence"), "{error}");
/// # }
/// ```
#[derive(Debug, thiserror::Error)]
pub enum OperatorError {
    /// Two handlers share an id.
    #[error("two handlers are registered as {0:?}: give each its own id")]
    DuplicateId(String),
    /// A handler id that cannot be kept in an annotation, or holds `/`.
    #[error("handler id {id:?} cannot be used: {reason}")]
    BadId {
        /// The id.
        id: String,
        /// Why.
        reason: String,
    },
    /// A handler may not be tried even once.
    #[error("handler {0:?} has 0 retries: it must be allowed at least 1 attempt")]
    NoAttempts(String),
    /// A handler given no time: every run of it would be given up before
    /// it starts.
    #[error("handler {0:?} has a timeout of 0: give it the time its longest run may take")]
    NoTime(String),
    /// A field path that is not one, or names nothing a field handler
    /// could see change.
    #[error(transparent)]
    BadField(#[from] BadPath),
    /// The trace directory cannot be made.
    #[error("the trace directory {path} cannot be made: {source}")]
    Traces {
        /// The directory.
        path: PathBuf,
        /// Why.
        #[source]
        source: std::io::Error,
    },
    /// A claim that cannot keep replicas apart.
    #[error(
        "claims of {duration:?} with a clock drift of {drift:?} cannot work: a claim must last \
         longer than the drift, and at least 1 s"
    )]
    BadClaims {
        /// How long a claim lasts.
        duration: Duration,
        /// The drift budget.
        drift: Duration,
    },
    /// An empty replica identity.
    #[error("the replica identity is empty: give each replica a name of its own (its pod name)")]
    NoIdentity,
    /// The API server's discovery could not say whether the resource has a
    /// status subresource (where handlers' status writes must go).
    #[error("discovery of {kind} failed (is the CRD installed, and may the operator read /apis?): {source}")]
    Discovery {
        /// The resource's kind.
        kind: String,
        /// Why.
        #[source]
        source: kube::Error,
    },
}

/// An operator for resource `K`: register handlers by cause, then
/// [`Operator::run`].
///
/// Give it an [`Api`] on a client made by [`client`](super::client): the
/// engine decides when to ask the API server again after a 429 or a 5xx,
/// and a client that retries by itself (kube-rs's default one does, up to
/// 15 times) keeps those answers from it and from the traces.
///
/// ```no_run
/// use k8s_openapi::api::core::v1::ConfigMap;
/// use kube::{Api, Config};
/// use steadfast::lifecycle::{client, Context, Handler, HandlerError, Operator};
///
/// # async fn run() -> Result<(), Box<dyn std::error::Error>> {
/// let client = client(Config::infer().await?)?;
/// Operator::new(Api::<ConfigMap>::default_namespaced(client))
///     .on_field("data.size", "resize", Handler::new(|ctx: Context<ConfigMap>| async move {
///         println!("size is now {:?}", ctx.new_value("data.size"));
///         Ok::<(), HandlerError>(())
///     }))
///     .run()
///     .await?;
/// # Ok(())
/// # }
/// ```
pub struct Operator<K> {
    api: Api<K>,
    rules: Rules,
    handlers: Vec<(
        HandlerSpec<steadfast_spec::lifecycle::named::Named>,
        Handler<K>,
    )>,
    traces: Option<PathBuf>,
    incarnation: u32,
    /// The reporting controller of its Events; `None`: no Events.
    reporter: Option<String>,
    /// Where its metrics and probes are served, if anywhere.
    endpoint: Option<MetricsEndpoint>,
    /// What tells it to stop gracefully, if anything.
    shutdown: Option<Pin<Box<dyn Future<Output = ()> + Send>>>,
    /// How long a graceful stop may wait for runs and their patches.
    grace: Duration,
    /// The replica's name in its claims.
    identity: String,
    /// How long a claim lasts, and the clock drift allowed.
    claims: (Duration, Duration),
}

/// How long a replica's claim on an object lasts unless
/// [`Operator::claims`] says otherwise: a run must end within it.
pub const DEFAULT_CLAIM: Duration = Duration::from_secs(60);

/// How far replicas' clocks may drift apart unless [`Operator::claims`]
/// says otherwise (NTP keeps a cluster's within milliseconds).
pub const DEFAULT_DRIFT: Duration = Duration::from_secs(2);

/// `span` in the engine's milliseconds, saturating.
fn millis(span: Duration) -> u64 {
    u64::try_from(span.as_millis()).unwrap_or(u64::MAX)
}

/// This replica's default identity: the pod's name from `POD_NAME` (the
/// downward API), or the hostname (a pod's is its name) and a random
/// suffix, so that two processes on one host differ.
fn default_identity() -> String {
    if let Some(pod) = std::env::var("POD_NAME").ok().filter(|p| !p.is_empty()) {
        return pod;
    }
    let host = std::env::var("HOSTNAME")
        .ok()
        .or_else(|| std::fs::read_to_string("/etc/hostname").ok())
        .map(|h| h.trim().to_owned())
        .filter(|h| !h.is_empty())
        .unwrap_or_else(|| "steadfast".to_owned());
    let suffix = uuid::Uuid::new_v4().simple().to_string();
    format!("{host}-{}", &suffix[..8])
}

/// How long a graceful stop waits for runs to finish and their outcomes to
/// be written unless [`Operator::grace`] says otherwise: Kubernetes's own
/// default `terminationGracePeriodSeconds` is 30 s, so a little less.
pub const DEFAULT_GRACE: Duration = Duration::from_secs(25);

/// Resolves when the process is asked to stop: SIGTERM (what Kubernetes
/// sends a pod it stops, in a rolling update among others) or SIGINT
/// (Ctrl-C). For [`Operator::shutdown_on`].
///
/// # Panics
///
/// If the signal handlers cannot be installed (not on a Unix).
pub async fn terminated() {
    use tokio::signal::unix::{signal, SignalKind};
    let mut term = signal(SignalKind::terminate()).expect("a SIGTERM handler");
    let mut int = signal(SignalKind::interrupt()).expect("a SIGINT handler");
    tokio::select! {
        _ = term.recv() => {}
        _ = int.recv() => {}
    }
}

/// The reporting controller an operator's Events name unless
/// [`Operator::reporter`] says otherwise.
pub const DEFAULT_REPORTER: &str = "steadfast-operator";

/// The engine's wait (ms) after a throttled or failed request when the API
/// server gave no `Retry-After`: 200 ms, doubling to 30 s. (A client that
/// retries by itself, as kube-rs's default one does, waits first: see
/// [`client`](super::client).)
const BACKOFF: Backoff<steadfast_spec::lifecycle::named::Named> = Backoff {
    first: 200,
    most: 30_000,
};

impl<K> Operator<K>
where
    K: Resource + Clone + Serialize + DeserializeOwned + std::fmt::Debug + Send + Sync + 'static,
    K::DynamicType: Default,
{
    /// An operator of the objects `api` reaches, following steadfast's
    /// rules, recording no traces. `api`'s client is best made by
    /// [`client`](super::client), whose own retries are off.
    pub fn new(api: Api<K>) -> Self {
        Operator {
            api,
            rules: Rules::from(Variant::Steadfast),
            handlers: Vec::new(),
            traces: None,
            reporter: Some(DEFAULT_REPORTER.to_owned()),
            endpoint: None,
            shutdown: None,
            grace: DEFAULT_GRACE,
            identity: default_identity(),
            claims: (DEFAULT_CLAIM, DEFAULT_DRIFT),
            incarnation: u32::try_from(super::driver::now_ms() / 1000 % u64::from(u32::MAX))
                .unwrap_or(0),
        }
    }

    /// Follows `variant`'s rules (`Kopf` reproduces kopf's, #641 included).
    #[must_use]
    pub fn variant(mut self, variant: Variant) -> Self {
        self.rules = Rules::from(variant);
        self
    }

    /// Records each object's engine trace (JSON lines) in `dir`, one file
    /// per object and operator start, for `steadfast replay`.
    #[must_use]
    pub fn trace(mut self, dir: impl Into<PathBuf>) -> Self {
        self.traces = Some(dir.into());
        self
    }

    /// Names the controller that reports this operator's Kubernetes Events
    /// (default [`DEFAULT_REPORTER`]; the instance is the pod, from
    /// `POD_NAME`, or the hostname). Events tell a handler's failures
    /// (`HandlerRetrying`, `HandlerFailed`) and a patch the API server
    /// refused for good (`PatchRefused`); the operator then needs `create`
    /// and `patch` on `events.k8s.io` events.
    #[must_use]
    pub fn reporter(mut self, controller: &str) -> Self {
        self.reporter = Some(controller.to_owned());
        self
    }

    /// Serves the operator's metrics (`steadfast_lifecycle_*`: runs by
    /// handler and outcome, their duration, retries, failures for good,
    /// patches by answer, objects tracked) and its probes on `endpoint`;
    /// `/readyz` turns ready once the first list of the objects is in.
    #[must_use]
    pub fn metrics(mut self, endpoint: MetricsEndpoint) -> Self {
        self.endpoint = Some(endpoint);
        self
    }

    /// Stops gracefully when `signal` resolves (for a pod, [`terminated`]):
    /// no new run starts, runs in flight finish and their outcomes are
    /// written, then [`Operator::run`] returns, at most [`Operator::grace`]
    /// later. Its successor then has no run to repeat. Without it, the
    /// operator runs until its task is aborted, as a crash would end it.
    #[must_use]
    pub fn shutdown_on(mut self, signal: impl Future<Output = ()> + Send + 'static) -> Self {
        self.shutdown = Some(Box::pin(signal));
        self
    }

    /// How long a graceful stop waits (default [`DEFAULT_GRACE`]); runs
    /// still going then are abandoned as a crash would (their handlers
    /// are to be safe to run again).
    #[must_use]
    pub fn grace(mut self, grace: Duration) -> Self {
        self.grace = grace;
        self
    }

    /// Posts no Events (for an operator not allowed to).
    #[must_use]
    pub fn without_events(mut self) -> Self {
        self.reporter = None;
        self
    }

    /// Names this replica in its claims on objects (by default its pod's
    /// name, from `POD_NAME`, or the hostname and a random suffix). Replicas
    /// of an operator share its objects with no other setting: each runs
    /// an object's handlers only under a live claim of its own on it, kept
    /// in the object's `steadfast.dev/claim` annotation. Two replicas must
    /// not share a name.
    #[must_use]
    pub fn identity(mut self, identity: impl Into<String>) -> Self {
        self.identity = identity.into();
        self
    }

    /// How long a claim on an object lasts from the patch that takes or
    /// renews it (default [`DEFAULT_CLAIM`]), and how far replicas' clocks
    /// may drift apart (default [`DEFAULT_DRIFT`]). Every progress patch
    /// renews the claim, and while a run goes on the claim is renewed
    /// half-way through (a patch of the claim alone), so a run may take up
    /// to its handler's timeout; should a renewal not land by the claim's
    /// end (the API server unreachable for half a claim), the run is
    /// cancelled there. A replica that dies holds its objects for at most
    /// `duration + drift`; a graceful stop releases them at once.
    #[must_use]
    pub fn claims(mut self, duration: Duration, drift: Duration) -> Self {
        self.claims = (duration, drift);
        self
    }

    /// Names this start of the operator (by default, the second it
    /// started): runs of another start are told apart by it.
    #[must_use]
    pub fn incarnation(mut self, incarnation: u32) -> Self {
        self.incarnation = incarnation;
        self
    }

    fn on(mut self, on: On<String>, id: &str, handler: Handler<K>) -> Self {
        let spec = HandlerSpec {
            id: id.to_owned(),
            on,
            retries: handler.retries,
            timeout: millis(handler.timeout),
        };
        self.handlers.push((spec, handler));
        self
    }

    /// `handler`, as `id`, runs once when an object is first handled.
    #[must_use]
    pub fn on_create(self, id: &str, handler: Handler<K>) -> Self {
        self.on(On::Create, id, handler)
    }

    /// `handler`, as `id`, runs on every change of the essence after
    /// creation, on the newest essence.
    #[must_use]
    pub fn on_update(self, id: &str, handler: Handler<K>) -> Self {
        self.on(On::Update, id, handler)
    }

    /// `handler`, as `id`, runs when deletion is requested; a finalizer
    /// holds the object until it finishes.
    #[must_use]
    pub fn on_delete(self, id: &str, handler: Handler<K>) -> Self {
        self.on(On::Delete, id, handler)
    }

    /// `handler`, as `id`, runs when the operator starts and finds an
    /// object it has not handled in full since.
    #[must_use]
    pub fn on_resume(self, id: &str, handler: Handler<K>) -> Self {
        self.on(On::Resume, id, handler)
    }

    /// `handler`, as `id`, runs when the value at `field` changes, at
    /// creation too, and always on its newest value. `field` is a path in
    /// the essence: keys joined by dots (`spec.replicas`, `data.size`,
    /// `status.phase`, `metadata.labels.app`), a key with dots in brackets
    /// and quotes (`metadata.labels["app.kubernetes.io/name"]`); a path
    /// that is not one, or that is outside the essence (`metadata.name`),
    /// is refused by [`Operator::run`] ([`OperatorError::BadField`]).
    #[must_use]
    pub fn on_field(self, field: &str, id: &str, handler: Handler<K>) -> Self {
        self.on(On::Field(field.to_owned()), id, handler)
    }

    /// Checks the registrations and shares them among the drivers (whether
    /// the resource has a status subresource is for [`Operator::run`] to
    /// find out).
    fn shared(self, metrics: Metrics) -> Result<Shared<K>, OperatorError> {
        let mut handlers = HashMap::new();
        let mut specs = Vec::new();
        for (spec, handler) in self.handlers {
            let bad = |reason: &str| OperatorError::BadId {
                id: spec.id.clone(),
                reason: reason.to_owned(),
            };
            if spec.id.contains('/') {
                return Err(bad("'/' separates a parent from its sub-handlers"));
            }
            steadfast_spec::lifecycle::annotations::progress_key(&spec.id)
                .map_err(|e| bad(&e.to_string()))?;
            if handler.retries == 0 {
                return Err(OperatorError::NoAttempts(spec.id));
            }
            if spec.timeout == 0 {
                return Err(OperatorError::NoTime(spec.id));
            }
            if let On::Field(field) = &spec.on {
                field_keys(field)?;
            }
            if handlers.insert(spec.id.clone(), handler).is_some() {
                return Err(OperatorError::DuplicateId(spec.id));
            }
            specs.push(spec);
        }
        let (duration, drift) = self.claims;
        if duration <= drift || duration < Duration::from_secs(1) {
            return Err(OperatorError::BadClaims { duration, drift });
        }
        if self.identity.is_empty() {
            return Err(OperatorError::NoIdentity);
        }
        if let Some(path) = &self.traces {
            std::fs::create_dir_all(path).map_err(|source| OperatorError::Traces {
                path: path.clone(),
                source,
            })?;
        }
        let identity = self.identity;
        let events = self.reporter.map(|controller| {
            Events::new(
                self.api.clone().into_client(),
                &controller,
                Some(identity.clone()),
            )
        });
        Ok(Shared {
            api: self.api,
            config: Config {
                rules: self.rules,
                handlers: specs,
                backoff: BACKOFF,
                claims: Claims {
                    duration: millis(duration),
                    drift: millis(drift),
                    // Renewed half-way, so that a renewal has half a claim
                    // to land, and to be tried again.
                    renew_before: millis(duration / 2),
                },
                // Found out by `run`, from the API server's discovery.
                status_subresource: false,
            },
            identity,
            handlers,
            incarnation: self.incarnation,
            traces: self.traces,
            events,
            metrics,
        })
    }

    /// Watches the resource and handles its objects, each by an engine of
    /// its own, many at once, until dropped (aborting the task that runs it
    /// stops every run of it, as a crash would).
    ///
    /// # Errors
    ///
    /// Registrations that cannot work, said before anything runs.
    pub async fn run(mut self) -> Result<(), OperatorError> {
        let (metrics, registry) = Metrics::new();
        let readiness = Readiness::waiting("the first list of the objects");
        let _serving = self
            .endpoint
            .take()
            .map(|endpoint| endpoint.serve(registry, readiness.clone()));
        let client = self.api.clone().into_client();
        let mut shutdown = self.shutdown.take();
        let grace = self.grace;
        let mut shared = self.shared(metrics)?;
        shared.config.status_subresource = status_subresource::<K>(client).await?;
        let shared = Arc::new(shared);
        let mut drivers: HashMap<String, Route<K>> = HashMap::new();
        // The objects a list (re)started by the watch has shown so far: one
        // it does not show may be gone (deleted while the watch was away),
        // which its engine decides (Input::Unlisted).
        let mut listed: Option<HashSet<String>> = None;
        let mut tasks = JoinSet::new();
        let stream = watcher(shared.api.clone(), watcher::Config::default()).default_backoff();
        let mut stream = std::pin::pin!(stream);
        // When a graceful stop gives up waiting.
        let mut stopping: Option<tokio::time::Instant> = None;
        loop {
            let event = tokio::select! {
                () = async { shutdown.as_mut().expect("checked").await },
                    if shutdown.is_some() && stopping.is_none() =>
                {
                    tracing::info!(drivers = tasks.len(), ?grace, "stopping: no new run starts");
                    readiness.set(Some("the operator is stopping"));
                    stopping = Some(tokio::time::Instant::now() + grace);
                    for route in drivers.values() {
                        let _ = route.sender.send(Event::Stop);
                    }
                    if tasks.is_empty() {
                        break;
                    }
                    continue;
                }
                () = sleep_until(stopping), if stopping.is_some() => {
                    tracing::warn!(drivers = tasks.len(), "the grace period is over: runs still going are abandoned");
                    break;
                }
                event = stream.next() => match event {
                    Some(event) => event,
                    None => break,
                },
                Some(finished) = tasks.join_next(), if !tasks.is_empty() => {
                    // A driver finished (its object is gone, or it stopped):
                    // forgotten, unless a new object of the name has a
                    // driver already.
                    if let Ok(key) = finished {
                        if drivers.get(&key).is_some_and(|route| route.sender.is_closed()) {
                            drivers.remove(&key);
                        }
                    }
                    shared.metrics.objects(tasks.len());
                    if stopping.is_some() && tasks.is_empty() {
                        tracing::info!("stopped: every run finished and written");
                        break;
                    }
                    continue;
                }
            };
            let (object, event) = match event {
                Ok(watcher::Event::Apply(object)) => (object.clone(), Event::Observed(object)),
                Ok(watcher::Event::InitApply(object)) => {
                    if let Some(listed) = &mut listed {
                        listed.insert(key_of(&object));
                    }
                    (object.clone(), Event::Listed(object))
                }
                Ok(watcher::Event::Delete(object)) => (object, Event::Gone),
                Ok(watcher::Event::Init) => {
                    listed = Some(HashSet::new());
                    continue;
                }
                Ok(watcher::Event::InitDone) => {
                    let listed = listed.take().unwrap_or_default();
                    for (key, route) in &drivers {
                        if !listed.contains(key) {
                            let _ = route.sender.send(Event::Unlisted);
                        }
                    }
                    readiness.set(None);
                    continue;
                }
                Err(error) => {
                    tracing::warn!(%error, "the watch failed; it restarts");
                    tokio::time::sleep(Duration::from_millis(100)).await;
                    continue;
                }
            };
            let key = key_of(&object);
            let start = |event| {
                let (sender, receiver) = mpsc::unbounded_channel();
                let driver = Driver::new(shared.clone(), object.name_any(), &key);
                // A new channel takes its first event.
                let _ = sender.send(event);
                (sender, driver.run(key.clone(), receiver))
            };
            let uid = object.meta().uid.clone();
            let event = match drivers.get(&key) {
                Some(route) if route.uid == uid => match route.sender.send(event) {
                    Ok(()) => continue,
                    // Its driver finished (the object was gone): this is a
                    // new object of the same name.
                    Err(mpsc::error::SendError(event)) => event,
                },
                // The deletion of an object of the name that no driver
                // serves any more: nothing to tell.
                Some(_) if matches!(event, Event::Gone) => continue,
                Some(route) => {
                    // Another object of the same name (a new uid): the one
                    // the driver serves is gone, whether or not its
                    // deletion was seen.
                    let _ = route.sender.send(Event::Gone);
                    event
                }
                None => event,
            };
            if stopping.is_some() {
                // No new driver while stopping (not even for an object whose
                // driver has just stopped): the successor, or a peer, takes
                // it.
                continue;
            }
            let (sender, driver) = start(event);
            // Everything a driver logs names its object.
            tasks.spawn(driver.instrument(tracing::info_span!("object", %key)));
            drivers.insert(key, Route { uid, sender });
            shared.metrics.objects(tasks.len());
        }
        Ok(())
    }
}

/// Sleeps until `at`, or forever.
async fn sleep_until(at: Option<tokio::time::Instant>) {
    match at {
        Some(at) => tokio::time::sleep_until(at).await,
        None => std::future::pending().await,
    }
}

/// Whether `K` has a status subresource, as the API server's discovery
/// says: a handler's status write then goes through `/status`, since the
/// main resource ignores it.
async fn status_subresource<K>(client: kube::Client) -> Result<bool, OperatorError>
where
    K: Resource,
    K::DynamicType: Default,
{
    let dt = K::DynamicType::default();
    let gvk = kube::api::GroupVersionKind::gvk(&K::group(&dt), &K::version(&dt), &K::kind(&dt));
    let (_, capabilities) =
        kube::discovery::pinned_kind(&client, &gvk)
            .await
            .map_err(|source| OperatorError::Discovery {
                kind: K::kind(&dt).into_owned(),
                source,
            })?;
    Ok(capabilities
        .subresources
        .iter()
        .any(|(resource, _)| resource.plural == "status"))
}

/// Where the events of one object go: the driver of the object of this
/// uid (an object deleted and made again under its name has a new uid, and
/// a driver of its own).
struct Route<K> {
    uid: Option<String>,
    sender: mpsc::UnboundedSender<Event<K>>,
}

/// An object's key: `namespace/name`, or `name` for a cluster-scoped one.
fn key_of<K: Resource>(object: &K) -> String {
    match object.namespace() {
        Some(namespace) => format!("{namespace}/{}", object.name_any()),
        None => object.name_any(),
    }
}
