//! The lifecycle runtime: an operator with kopf's model of handlers
//! (create, update, delete, resume and field handlers; sub-handlers
//! declared by a handler's run; retries, delays and timeouts; progress kept
//! in `steadfast.dev/` annotations; a diff-base; a finalizer) on any
//! kube-rs resource, driven by the engine that `steadfast check lifecycle`
//! proves, so that an object that stops changing is handled on its final
//! state (kopf #641).
//!
//! - [`Operator`]: register handlers, then run; give it a [`client`], so
//!   that its engine alone decides when to ask the API server again.
//! - [`Handler`], [`Context`], [`HandlerError`]: what a handler is, gets
//!   and returns.
//!
//! Sub-handlers: a run declares them with [`Context::sub`]; their code is
//! the handler's [`Handler::sub_handlers`], told which one runs by
//! [`Context::sub_name`]. Declared names are kept in the parent's record, so
//! a restarted operator runs the rest of the plan without running the
//! parent again.

mod client;
mod driver;
mod events;
mod handler;
mod metrics;
mod object;
mod operator;

pub use client::client;
pub use handler::{Context, Handler, HandlerError, DEFAULT_RETRIES, DEFAULT_TIMEOUT};
pub use object::FINALIZER;
pub use operator::{
    terminated, Operator, OperatorError, DEFAULT_CLAIM, DEFAULT_DRIFT, DEFAULT_GRACE,
    DEFAULT_REPORTER,
};
pub use steadfast_spec::lifecycle::Variant;
