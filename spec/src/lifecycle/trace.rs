//! Traces of an engine in the runtime's domain ([`Named`]): a header, then
//! one record per step, as JSON lines; and their replay through
//! [`Engine::step`] to the first step whose effects differ.

use serde::{Deserialize, Serialize};

use super::engine::{Effect, Engine, Input};
use super::handlers::Config;
use super::named::Named;

/// The first line of an engine's trace: the object and how its engine
/// started. Written with `"role": "engine"`, so that a reader tells it from
/// a leasequeue role's.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "role", rename = "engine")]
pub struct Header {
    /// The object, `namespace/name` (or `name` for a cluster-scoped one).
    pub object: String,
    /// The replica the engine belongs to, as its claims name it.
    pub identity: String,
    /// The operator start the engine belongs to.
    pub incarnation: u32,
    /// The time it started (ms since the epoch).
    pub started: u64,
    /// Its configuration.
    pub config: Config<Named>,
}

/// One step: what came in, and what `step` returned.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Record {
    /// When the step was taken: milliseconds since the Unix epoch by the
    /// recording machine's clock, so that the traces of several nodes can
    /// be merged in order, within their clocks' skew (0 in a trace written
    /// before steps were stamped).
    #[serde(default)]
    pub at: u64,
    /// The input.
    pub input: Input<Named>,
    /// The effects.
    pub effects: Vec<Effect<Named>>,
}

/// A recorded step whose effects `step` does not return.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Divergence {
    /// The step, counted from 0 after the header.
    pub step: usize,
    /// The effects the trace holds.
    pub recorded: Vec<Effect<Named>>,
    /// The effects `step` returns.
    pub replayed: Vec<Effect<Named>>,
}

impl Header {
    /// Runs `records` through a fresh engine set up as this header says:
    /// the number of steps if every one agrees, or the first divergence.
    pub fn replay(&self, records: &[Record]) -> Result<usize, Divergence> {
        let mut engine = Engine::new(self.identity.clone(), self.incarnation, self.started);
        for (step, record) in records.iter().enumerate() {
            let replayed = engine.step(&self.config, record.input.clone());
            if replayed != record.effects {
                return Err(Divergence {
                    step,
                    recorded: record.effects.clone(),
                    replayed,
                });
            }
        }
        Ok(records.len())
    }
}
