//! `lifecycle`: the handler lifecycle of a Kubernetes operator, in the model
//! of kopf, and the fix for kopf #641.
//!
//! - [`domain`]: what the engine is generic over (ids, essences, digests,
//!   resourceVersions, time).
//! - [`object`]: the progress the engine keeps on the object.
//! - [`annotations`]: the format of that progress in the object's
//!   annotations, and what happens to annotations it cannot read.
//! - [`handlers`]: the registered handlers and the pure rules about them.
//! - [`rules`]: the rules of the two variants, by name.
//! - [`rerun`]: the rule "a handler succeeds once per digest per start",
//!   shared by the model's ghost and the replay of real traces.
//! - [`engine`]: the engine's transition function, shared by the model and
//!   the runtime.
//! - [`named`]: the runtime's domain (strings, canonical JSON, hashes,
//!   milliseconds).
//! - [`trace`]: an engine's trace in the runtime's domain, and its replay.
//! - [`model`]: the stateright model of the engine's world, its properties
//!   and fairness, and its scenarios.

pub mod annotations;
pub mod domain;
pub mod engine;
pub mod handlers;
pub mod model;
pub mod named;
pub mod object;
pub mod rerun;
pub mod rules;
pub mod trace;

#[cfg(test)]
mod tests;

pub use domain::{Domain, Value};
pub use engine::{
    ClaimChange, ClientError, Effect, Engine, Failure, Input, Outcome, Patch, RunId, Verdict,
};
pub use handlers::{Backoff, Claims, Config, HandlerSpec, On, Reason};
pub use object::{Claim, Final, ObjectView, Progress, Record};
pub use rules::{Rule, Rules, Variant};
