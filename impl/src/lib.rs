//! steadfast: the runtime that operators and schedulers embed.
//!
//! The runtime is a set of thin drivers: each turns real I/O (Kubernetes
//! watches and patches, etcd leases, keys and watches) into inputs of a state
//! machine from [`spec`], calls its transition function, and carries out the
//! effects it returns. Every protocol decision lives in [`spec`], where the
//! checker proves it.
//!
//! - [`leasequeue`]: schedulers and controllers on etcd (OpenWhisk's
//!   scheduler, without #5286).
//! - [`lifecycle`]: an operator's handlers on kube-rs (kopf's model,
//!   without #641).

#![deny(missing_docs)]

/// The protocols this runtime drives, re-exported so that users depend on one
/// crate.
pub use steadfast_spec as spec;

mod clock;
pub mod leasequeue;
pub mod lifecycle;
pub mod metrics;
mod trace;
