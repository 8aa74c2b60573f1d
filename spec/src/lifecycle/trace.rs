//! A lifecycle engine's trace (the format is [`crate::trace`]'s): one
//! object, in one operator start, in the runtime's domain ([`Named`]); and
//! its replay through [`Engine::step`].

use serde::{Deserialize, Serialize};

use super::engine::{Effect, Engine, Input};
use super::handlers::Config;
use super::named::Named;
use crate::trace::{self, Divergence, Record};

/// How an engine started: the header of its trace.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct EngineHeader {
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

/// An engine's step as recorded (its steps take no time: `elapsed` is 0).
pub type EngineRecord = Record<Input<Named>, Effect<Named>>;

impl EngineHeader {
    /// Runs `records` through a fresh engine set up as this header says.
    ///
    /// # Errors
    ///
    /// The first step whose effects differ.
    pub fn replay(&self, records: &[EngineRecord]) -> Result<usize, Divergence<Effect<Named>>> {
        let mut engine = Engine::new(self.identity.clone(), self.incarnation, self.started);
        trace::replay(records, |r| engine.step(&self.config, r.input.clone()))
    }
}
