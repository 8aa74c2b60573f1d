//! Metrics and probes over HTTP, for Prometheus and the kubelet: a
//! [`MetricsEndpoint`] that a builder is handed serves
//!
//! - `GET /metrics`: the role's metrics in the OpenMetrics text format
//!   (through the `prometheus-client` crate, the one kube-rs's own examples
//!   use);
//! - `GET /healthz`: 200 while the role's task runs;
//! - `GET /readyz`: 200 once the role is ready (an operator: its first list
//!   of the objects is in; a scheduler: it holds a lease it may act under;
//!   a controller: its watch of the endpoint keys has caught up), else 503
//!   with what it waits for.
//!
//! ```no_run
//! # async fn demo() -> std::io::Result<()> {
//! use steadfast::metrics::MetricsEndpoint;
//!
//! let endpoint = MetricsEndpoint::bind("0.0.0.0:9090").await?;
//! println!("metrics on {}", endpoint.local_addr());
//! // SchedulerBuilder::metrics(endpoint), ControllerBuilder::metrics(endpoint)
//! // or Operator::metrics(endpoint)
//! # Ok(())
//! # }
//! ```

use std::net::SocketAddr;
use std::sync::{Arc, Mutex};

use axum::extract::State;
use axum::http::{header, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use axum::Router;
use prometheus_client::encoding::text::encode;
use prometheus_client::registry::Registry;
use tokio::net::{TcpListener, ToSocketAddrs};
use tokio::task::JoinHandle;

/// The content type of the OpenMetrics text format.
const OPENMETRICS: &str = "application/openmetrics-text; version=1.0.0; charset=utf-8";

/// A bound listener for one role's metrics and probes; it serves once the
/// role starts with it.
#[derive(Debug)]
pub struct MetricsEndpoint {
    listener: TcpListener,
}

impl MetricsEndpoint {
    /// Binds `address` (`127.0.0.1:0` picks a free port).
    ///
    /// # Errors
    ///
    /// The address cannot be bound.
    pub async fn bind(address: impl ToSocketAddrs) -> std::io::Result<Self> {
        Ok(MetricsEndpoint {
            listener: TcpListener::bind(address).await?,
        })
    }

    /// The address it listens on.
    pub fn local_addr(&self) -> SocketAddr {
        self.listener
            .local_addr()
            .expect("a bound listener has an address")
    }

    /// Serves `registry` and `readiness` until the returned task is aborted.
    pub(crate) fn serve(self, registry: Registry, readiness: Readiness) -> Serving {
        let state = Arc::new((registry, readiness));
        let router = Router::new()
            .route("/metrics", get(metrics))
            .route("/healthz", get(|| async { "ok" }))
            .route("/readyz", get(ready))
            .with_state(state);
        let listener = self.listener;
        Serving(tokio::spawn(async move {
            if let Err(error) = axum::serve(listener, router).await {
                tracing::error!(%error, "the metrics endpoint stopped");
            }
        }))
    }
}

/// The endpoint's task: stops serving when dropped.
#[derive(Debug)]
pub(crate) struct Serving(JoinHandle<()>);

impl Drop for Serving {
    fn drop(&mut self) {
        self.0.abort();
    }
}

/// Whether a role is ready, and if not, what it waits for.
#[derive(Clone, Debug)]
pub(crate) struct Readiness(Arc<Mutex<Option<&'static str>>>);

impl Readiness {
    /// Not ready: waiting for `what`.
    pub(crate) fn waiting(what: &'static str) -> Self {
        Readiness(Arc::new(Mutex::new(Some(what))))
    }

    /// Ready (`None`), or waiting for `what`.
    pub(crate) fn set(&self, waiting: Option<&'static str>) {
        *self.0.lock().unwrap_or_else(|p| p.into_inner()) = waiting;
    }

    fn waiting_for(&self) -> Option<&'static str> {
        *self.0.lock().unwrap_or_else(|p| p.into_inner())
    }
}

type Shared = Arc<(Registry, Readiness)>;

async fn metrics(State(state): State<Shared>) -> Response {
    let mut text = String::new();
    match encode(&mut text, &state.0) {
        Ok(()) => ([(header::CONTENT_TYPE, OPENMETRICS)], text).into_response(),
        Err(error) => (StatusCode::INTERNAL_SERVER_ERROR, error.to_string()).into_response(),
    }
}

async fn ready(State(state): State<Shared>) -> Response {
    match state.1.waiting_for() {
        None => "ok".into_response(),
        Some(what) => (
            StatusCode::SERVICE_UNAVAILABLE,
            format!("not ready: waiting for {what}"),
        )
            .into_response(),
    }
}
