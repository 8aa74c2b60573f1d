//! A Kubernetes API server for tests: real HTTP, the API's semantics where
//! controllers depend on them, and faults on demand.
//!
//! The server keeps objects in memory and serves them as the API server does:
//! uids, creation timestamps, generations, one global resourceVersion counter
//! (opaque strings to clients), optimistic concurrency with 409 Conflict,
//! merge, JSON and apply patches, the `status` subresource isolated both ways,
//! graceful deletion with finalizers, and watches from a resourceVersion over
//! a bounded history, past which a watch gets 410 Gone. CustomResourceDefinitions
//! register new types. Every error is a `Status` with the real `reason` and
//! `code`.
//!
//! ```no_run
//! # async fn demo() -> std::io::Result<()> {
//! use steadfast_tests::kube_testserver::{Fault, TestServer};
//!
//! let server = TestServer::start().await?;
//! println!("point a client at {}", server.url());
//! server.inject(Fault::ExpireWatches).expect("a valid fault");
//! server.shutdown().await;
//! # Ok(())
//! # }
//! ```
//!
//! What is deliberately not served: authentication, authorization and
//! admission; OpenAPI schemas and validation; field ownership (`managedFields`);
//! strategic merge patch beyond a JSON merge; conversion between versions
//! other than renaming `apiVersion`; garbage collection by owner references;
//! namespace deletion cascading to its objects; list pages at a consistent
//! snapshot.

mod fault;
mod http;
mod patch;
mod resource;
mod selector;
mod status;
mod store;
mod validation;
mod watch;

use std::net::SocketAddr;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use serde_json::{json, Value};
use tokio::sync::{oneshot, watch as signal};

pub use fault::Fault;
pub use status::ApiError;

use fault::Injected;
use store::{Deletion, Store};

/// The path of the control endpoint: POST a [`Fault`] as JSON.
pub const FAULTS_PATH: &str = "/steadfast/faults";

/// How the server is set up.
#[derive(Debug, Clone)]
pub struct ServerConfig {
    /// Where to listen; `127.0.0.1:0` (a free port) by default.
    pub bind: SocketAddr,
    /// How many events the history keeps; a watch from a revision older than
    /// the oldest kept gets 410 Gone. 1,000 by default.
    pub history: usize,
    /// How often a watch that asked for bookmarks gets one. 1 s by default
    /// (the real server sends one about every minute).
    pub bookmark_interval: Duration,
}

impl Default for ServerConfig {
    fn default() -> Self {
        Self {
            bind: SocketAddr::from(([127, 0, 0, 1], 0)),
            history: 1_000,
            bookmark_interval: Duration::from_secs(1),
        }
    }
}

/// What watches are told when a fault ends them; each counter only grows.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
struct WatchEnds {
    /// Bumped to close every open watch quietly.
    closed: u64,
    /// Bumped to end every open watch with 410 Expired.
    expired: u64,
}

/// State shared by every connection.
struct Shared {
    store: Mutex<Store>,
    /// The store's revision, sent after every write so that watches wake.
    revision: signal::Sender<u64>,
    injected: Mutex<Injected>,
    paused: signal::Sender<bool>,
    watch_ends: signal::Sender<WatchEnds>,
    bookmark_interval: Duration,
    address: SocketAddr,
}

impl Shared {
    fn store(&self) -> MutexGuard<'_, Store> {
        self.store
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    /// Runs `write` on the store, then wakes the watches.
    fn write<T>(&self, write: impl FnOnce(&mut Store) -> T) -> T {
        let mut store = self.store();
        let result = write(&mut store);
        self.revision.send_replace(store.revision());
        result
    }

    /// Runs `write` on the store; with `dry_run`, on a copy of it that is
    /// then thrown away, so that the request is checked and answered as if it
    /// were made, and changes nothing (`dryRun=All`).
    fn write_unless_dry<T>(&self, dry_run: bool, write: impl FnOnce(&mut Store) -> T) -> T {
        if dry_run {
            let mut copy = self.store().clone();
            write(&mut copy)
        } else {
            self.write(write)
        }
    }

    fn injected(&self) -> MutexGuard<'_, Injected> {
        self.injected
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    fn end_watches(&self, end: impl FnOnce(&mut WatchEnds)) {
        self.watch_ends.send_modify(end);
    }

    /// Carries out one fault.
    fn inject(&self, fault: Fault) -> Result<Value, ApiError> {
        match fault {
            Fault::Conflicts {
                resource,
                namespace,
                name,
                count,
                spare_status,
            } => self.write(|store| {
                let scope = store.scope_of(&resource, namespace)?;
                store.refuse_writes(scope.key(&name), count, spare_status);
                Ok(json!({}))
            }),
            Fault::ExpireWatches => {
                self.write(Store::compact_all);
                self.end_watches(|ends| ends.expired += 1);
                Ok(json!({}))
            }
            Fault::CloseWatches => {
                self.end_watches(|ends| ends.closed += 1);
                Ok(json!({}))
            }
            Fault::ServerErrors { count } => {
                self.injected().server_errors = count;
                Ok(json!({}))
            }
            Fault::TooManyRequests {
                count,
                retry_after_seconds,
            } => {
                self.injected().too_many_requests = (count, retry_after_seconds);
                Ok(json!({}))
            }
            Fault::Delay { millis } => {
                self.injected().delay = Duration::from_millis(millis);
                Ok(json!({}))
            }
            Fault::Pause => {
                self.paused.send_replace(true);
                Ok(json!({}))
            }
            Fault::Resume => {
                self.paused.send_replace(false);
                Ok(json!({}))
            }
            Fault::ForeignWrite {
                resource,
                namespace,
                name,
                labels,
                status,
            } => self.write(|store| {
                let scope = store.scope_of(&resource, namespace)?;
                let mut body = json!({});
                if let Some(labels) = labels {
                    body["metadata"] = json!({ "labels": labels });
                }
                if let Some(status) = status {
                    body["status"] = status;
                }
                store.foreign_write(&scope, &name, body)
            }),
            Fault::ForeignDelete {
                resource,
                namespace,
                name,
            } => self.write(|store| {
                let scope = store.scope_of(&resource, namespace)?;
                Ok(match store.delete(&scope, &name, &json!({}))? {
                    Deletion::Pending(object) | Deletion::Deleted(object) => object,
                })
            }),
        }
    }

    /// Waits while the server is paused.
    async fn unpaused(&self) {
        let mut paused = self.paused.subscribe();
        // The sender lives as long as `self`, so waiting cannot fail.
        let _ = paused.wait_for(|paused| !paused).await;
    }
}

/// A running test server. Dropping it stops it.
pub struct TestServer {
    shared: Arc<Shared>,
    shutdown: Option<oneshot::Sender<()>>,
    task: Option<tokio::task::JoinHandle<()>>,
}

impl TestServer {
    /// Starts a server with the default [`ServerConfig`]: a free port on
    /// 127.0.0.1.
    ///
    /// # Errors
    ///
    /// If the address cannot be bound.
    pub async fn start() -> std::io::Result<Self> {
        Self::start_with(ServerConfig::default()).await
    }

    /// Starts a server as `config` says.
    ///
    /// # Errors
    ///
    /// If `config.bind` cannot be bound.
    pub async fn start_with(config: ServerConfig) -> std::io::Result<Self> {
        let listener = tokio::net::TcpListener::bind(config.bind).await?;
        let address = listener.local_addr()?;
        let store = Store::new(config.history);
        let shared = Arc::new(Shared {
            revision: signal::Sender::new(store.revision()),
            store: Mutex::new(store),
            injected: Mutex::new(Injected::default()),
            paused: signal::Sender::new(false),
            watch_ends: signal::Sender::new(WatchEnds::default()),
            bookmark_interval: config.bookmark_interval,
            address,
        });
        let (shutdown, stopped) = oneshot::channel::<()>();
        let app = http::router(Arc::clone(&shared));
        let task = tokio::spawn(async move {
            let serving = axum::serve(listener, app).with_graceful_shutdown(async {
                let _ = stopped.await;
            });
            if let Err(error) = serving.await {
                eprintln!("kube-testserver: serving failed: {error}");
            }
        });
        Ok(Self {
            shared,
            shutdown: Some(shutdown),
            task: Some(task),
        })
    }

    /// The address it listens on.
    pub fn address(&self) -> SocketAddr {
        self.shared.address
    }

    /// Its base URL, `http://127.0.0.1:<port>`.
    pub fn url(&self) -> String {
        format!("http://{}", self.shared.address)
    }

    /// The current revision: the resourceVersion of the newest change.
    pub fn revision(&self) -> u64 {
        self.shared.store().revision()
    }

    /// Injects a fault (see [`Fault`]). Returns the object a foreign write
    /// produced, or a foreign delete's last state, `{}` otherwise.
    ///
    /// # Errors
    ///
    /// A `Status`-shaped error if the fault names an unknown type or object.
    pub fn inject(&self, fault: Fault) -> Result<Value, ApiError> {
        self.shared.inject(fault)
    }

    /// A kubeconfig (YAML) whose current context points at this server, for
    /// `kubectl --kubeconfig` and `kube::Config`.
    pub fn kubeconfig(&self) -> String {
        kubeconfig(&self.url())
    }

    /// Stops serving: every open watch is closed, then the listener.
    pub async fn shutdown(mut self) {
        self.stop();
        if let Some(task) = self.task.take() {
            let _ = task.await;
        }
    }

    fn stop(&mut self) {
        self.shared.end_watches(|ends| ends.closed += 1);
        self.shared.paused.send_replace(false);
        if let Some(shutdown) = self.shutdown.take() {
            let _ = shutdown.send(());
        }
    }
}

impl Drop for TestServer {
    fn drop(&mut self) {
        self.stop();
    }
}

/// A kubeconfig whose one context points at `url`, with no credentials.
pub fn kubeconfig(url: &str) -> String {
    format!(
        "apiVersion: v1\nkind: Config\nclusters:\n- name: steadfast-testserver\n  cluster:\n    server: {url}\n\
         contexts:\n- name: steadfast-testserver\n  context:\n    cluster: steadfast-testserver\n    \
         user: steadfast-testserver\n    namespace: default\ncurrent-context: steadfast-testserver\n\
         users:\n- name: steadfast-testserver\n  user: {{}}\n"
    )
}
