//! The leasequeue runtime: schedulers and controllers that run the spec's
//! roles against real etcd and talk to each other over TCP.
//!
//! - [`SchedulerBuilder`] starts a [`Scheduler`]: it keeps a lease, owns
//!   queues under it, and runs the activations it is handed through an
//!   [`Executor`].
//! - [`ControllerBuilder`] starts a [`Controller`]: it routes each
//!   [`Controller::submit`]ted activation to the scheduler that owns its
//!   action's queue, and resolves it exactly once.
//! - [`etcd`]: the etcd adapter, the etcd operations the roles' effects
//!   name, each under a deadline.
//! - [`wire`]: the messages between nodes, and [`network`]: how they travel
//!   (JSON lines over TCP, or over TLS with client certificates both ways:
//!   [`tls`]).
//!
//! Every protocol decision is the roles' (`steadfast_spec::leasequeue`);
//! the drivers turn real events into the roles' inputs and carry out their
//! effects. Each driver can record its trace for `steadfast replay`.

mod controller;
pub mod etcd;
mod executor;
mod metrics;
pub mod network;
mod node;
mod scheduler;
pub mod tls;
pub mod wire;

use std::time::Duration;

pub use crate::trace::TraceError;
pub use controller::{
    Controller, ControllerBuilder, Request, SubmitError, Submitted, MAX_ACTION_BYTES,
};
pub use executor::{ExecutionError, Executor, IntoExecution, Invocation};
pub use scheduler::{Scheduler, SchedulerBuilder};
pub use steadfast_spec::leasequeue::{ExecutionFailure, FailReason, Rule, Rules, Variant};

/// Why a scheduler or a controller could not start.
///
/// ```
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() {
/// use std::time::Duration;
/// use steadfast::leasequeue::etcd::EtcdOptions;
/// use steadfast::leasequeue::{Invocation, SchedulerBuilder, StartError};
///
/// let started = SchedulerBuilder::new(EtcdOptions::new(["http://127.0.0.1:2379"]))
///     .ttl(Duration::from_millis(500))
///     .start(|i: Invocation| async move { i.payload })
///     .await;
/// let Err(StartError::Config(why)) = started else { panic!() };
/// assert!(why.contains("whole seconds"), "{why}");
/// # }
/// ```
#[derive(Debug, thiserror::Error)]
pub enum StartError {
    /// A setting is out of range; the message says which and what to do.
    #[error("invalid setting: {0}")]
    Config(String),
    /// etcd could not be reached.
    #[error(transparent)]
    Etcd(#[from] etcd::EtcdError),
    /// The address to listen on could not be bound.
    #[error("failed to listen on {address}: {source}")]
    Listen {
        /// The address.
        address: String,
        /// Why.
        #[source]
        source: std::io::Error,
    },
    /// The trace file could not be written.
    #[error(transparent)]
    Trace(#[from] TraceError),
}

/// Binds the metrics endpoint at `address`, if one is asked for, and serves
/// `registry` on it with `readiness`.
async fn serve_metrics(
    address: Option<&str>,
    registry: prometheus_client::registry::Registry,
    readiness: &crate::metrics::Readiness,
) -> Result<Option<(std::net::SocketAddr, crate::metrics::Serving)>, StartError> {
    let Some(address) = address else {
        return Ok(None);
    };
    let endpoint = crate::metrics::MetricsEndpoint::bind(address)
        .await
        .map_err(|source| StartError::Listen {
            address: address.to_owned(),
            source,
        })?;
    let bound = endpoint.local_addr();
    Ok(Some((bound, endpoint.serve(registry, readiness.clone()))))
}

/// `duration` in whole milliseconds, the runtime's unit of time in the
/// roles.
fn millis(duration: Duration) -> u64 {
    u64::try_from(duration.as_millis()).unwrap_or(u64::MAX)
}
