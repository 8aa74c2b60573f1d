//! `lifecycle`: the handler lifecycle of a Kubernetes operator, in the model
//! of kopf, and the fix for kopf #641.
//!
//! - [`object`]: the essence and the progress kept on the object.
//! - [`annotations`]: the format of that progress in the object's
//!   annotations, and what happens to annotations it cannot read.
//! - [`handlers`]: the registered handlers and the pure rules about them.
//! - [`engine`]: the engine's transition function, shared by the model and
//!   the runtime.
//! - [`model`]: the stateright model of the engine's world, its properties
//!   and fairness, and its scenarios.

pub mod annotations;
pub mod engine;
pub mod handlers;
pub mod model;
pub mod object;

#[cfg(test)]
mod tests;

pub use engine::{Effect, Engine, Input, Outcome, Patch};
pub use handlers::{Config, HandlerSpec, On, Reason, SelfWrite, SubPlan, Variant};
pub use object::{Digest, Essence, Field, Final, Key, ObjectView, Progress, Record};
