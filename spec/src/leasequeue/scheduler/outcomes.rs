//! How an activation ends here: reported to its controller,
//! acknowledged, and remembered for [`Config::remember_for`] so that a
//! copy delivered again is only acknowledged.

use serde::{Deserialize, Serialize};

use crate::leasequeue::{Domain, Outcome, Rule, Rules};

use super::{insert_sorted, Config, Effect, Scheduler};

/// Which memory of an activation a scheduler keeps for
/// [`Config::remember_for`].
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub enum Remembered {
    /// It settled the activation ([`Scheduler::settled`]).
    Settled,
    /// It forwarded the activation ([`Scheduler::forwarded`]).
    Forwarded,
}

impl<D: Domain> Scheduler<D> {
    /// Forgets at once that activation `id` was settled or forwarded, so
    /// that an activation of that id is new again ([`Input::Forget`]): for
    /// a model that reuses ids to stay finite.
    ///
    /// [`Input::Forget`]: super::Input::Forget
    pub(super) fn forget(&mut self, id: &D::Activation) {
        self.forwarding.retain(|f| f.id != *id);
        self.reporting.retain(|(r, _)| r != id);
        self.settled.retain(|s| s != id);
        self.forwarded.retain(|s| s != id);
        self.forgetting.retain(|(_, _, i)| i != id);
        self.drop_deadline(id);
    }

    /// Activation `id` ended here with `outcome`: reported to its
    /// controller, remembered, and acknowledged if it was not on receipt.
    pub(super) fn settle(
        &mut self,
        config: &Config<D>,
        id: D::Activation,
        outcome: Outcome,
        out: &mut Vec<Effect<D>>,
    ) {
        self.drop_deadline(&id);
        out.push(Effect::Report {
            id: id.clone(),
            outcome,
        });
        if let Err(at) = self.reporting.binary_search_by(|(r, _)| r.cmp(&id)) {
            self.reporting.insert(at, (id.clone(), outcome));
        }
        if config.rules.has(Rule::Deduplicate) {
            self.remember(config, Remembered::Settled, id.clone());
        }
        self.acknowledge(config.rules, id, out);
    }

    /// Remembers that it settled or forwarded activation `id`, until
    /// [`Config::remember_for`] has passed.
    pub(super) fn remember(&mut self, config: &Config<D>, memory: Remembered, id: D::Activation) {
        insert_sorted(self.memory(memory), id.clone());
        if let Some(span) = config.remember_for {
            self.forgetting.push_back((self.clock + span, memory, id));
        }
    }

    /// The sorted list that keeps `memory`.
    pub(super) fn memory(&mut self, memory: Remembered) -> &mut Vec<D::Activation> {
        match memory {
            Remembered::Settled => &mut self.settled,
            Remembered::Forwarded => &mut self.forwarded,
        }
    }

    pub(super) fn acknowledge(
        &mut self,
        rules: Rules,
        id: D::Activation,
        out: &mut Vec<Effect<D>>,
    ) {
        if rules.has(Rule::AckAtSettlement) {
            out.push(Effect::Ack { id });
        }
    }
}
