//! How an activation ends here: reported to every controller owed its
//! outcome, acknowledged, and remembered for [`Config::remember_for`] so
//! that a copy delivered again is only acknowledged, or answered with it.

use serde::{Deserialize, Serialize};

use crate::leasequeue::{Domain, KeyFault, Outcome, Rule, Rules};

use super::{contains_sorted, insert_sorted, Config, Effect, Scheduler};

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
    /// How activation `id` ended here, if it remembers settling it.
    pub fn outcome_of(&self, id: &D::Activation) -> Option<Outcome> {
        let at = self.settled.binary_search_by(|(s, _)| s.cmp(id)).ok()?;
        Some(self.settled[at].1)
    }

    /// Forgets at once that activation `id` was settled or forwarded, so
    /// that an activation of that id is new again ([`Input::Forget`]): for
    /// a model that reuses ids to stay finite.
    ///
    /// [`Input::Forget`]: super::Input::Forget
    pub(super) fn forget(&mut self, id: &D::Activation) {
        self.forwarding.retain(|f| f.id != *id);
        self.reporting.retain(|(r, _, _)| r != id);
        self.settled.retain(|(s, _)| s != id);
        self.forwarded.retain(|f| f.id != *id);
        self.forgetting.retain(|(_, _, i)| i != id);
        self.done_waiting(id);
    }

    /// Owes controller `to` the outcome of activation `id`, which it holds
    /// or forwards.
    pub(super) fn ask(&mut self, id: D::Activation, to: D::Controller) {
        insert_sorted(&mut self.askers, (id, to));
    }

    /// Whether it owes controller `to` the outcome of activation `id`.
    pub fn asked_by(&self, id: &D::Activation, to: &D::Controller) -> bool {
        self.askers.iter().any(|(a, c)| (a, c) == (id, to))
    }

    /// Takes out the controllers owed activation `id`'s outcome.
    pub(super) fn take_askers(&mut self, id: &D::Activation) -> Vec<D::Controller> {
        let (taken, kept): (Vec<_>, _) = std::mem::take(&mut self.askers)
            .into_iter()
            .partition(|(a, _)| a == id);
        self.askers = kept;
        taken.into_iter().map(|(_, to)| to).collect()
    }

    /// Activation `id` ended here with `outcome`: reported to every
    /// controller owed it, remembered (unless it ends only this call,
    /// [`Outcome::ends_the_activation`]), and acknowledged if it was not
    /// on receipt.
    pub(super) fn settle(
        &mut self,
        config: &Config<D>,
        id: D::Activation,
        outcome: Outcome,
        out: &mut Vec<Effect<D>>,
    ) {
        self.done_waiting(&id);
        // A controller stays owed while a copy is still held here: a
        // design that runs every copy (without `Deduplicate`) reports each
        // run.
        let owed = self.askers.iter().filter(|(a, _)| *a == id);
        let askers: Vec<D::Controller> = owed.map(|(_, to)| to.clone()).collect();
        if !self.holds(&id) {
            self.askers.retain(|(a, _)| *a != id);
        }
        for to in askers {
            self.report(id.clone(), to, outcome, out);
        }
        if config.rules.has(Rule::Deduplicate) && outcome.ends_the_activation() {
            match self.settled.binary_search_by(|(s, _)| s.cmp(&id)) {
                Ok(at) => self.settled[at].1 = outcome,
                Err(at) => self.settled.insert(at, (id.clone(), outcome)),
            }
            self.remember(config, Remembered::Settled, id.clone());
        }
        self.acknowledge(config.rules, id, out);
    }

    /// Answers every controller owed activation `id` that this call could
    /// not be routed ([`Outcome::Unrouted`]): no owner can be read from its
    /// action's key, for the reason `why` names. It is not remembered, so
    /// a copy that comes after the key is put right is taken in anew.
    pub(super) fn unroute(
        &mut self,
        config: &Config<D>,
        id: D::Activation,
        why: KeyFault,
        out: &mut Vec<Effect<D>>,
    ) {
        let may_have_run = contains_sorted(&self.may_have_run, &id);
        self.settle(config, id, Outcome::Unrouted { may_have_run, why }, out);
    }

    /// Tells controller `to` that activation `id` ended with `outcome`,
    /// again at every wake-up and retry until it confirms.
    pub(super) fn report(
        &mut self,
        id: D::Activation,
        to: D::Controller,
        outcome: Outcome,
        out: &mut Vec<Effect<D>>,
    ) {
        out.push(Effect::Report {
            id: id.clone(),
            to: to.clone(),
            outcome,
        });
        let key = (&id, &to);
        if let Err(at) = self
            .reporting
            .binary_search_by(|(r, c, _)| (r, c).cmp(&key))
        {
            self.reporting.insert(at, (id, to, outcome));
        }
    }

    /// Marks `id`, which it has just put in `memory`'s list, to be taken
    /// out of it once [`Config::remember_for`] has passed.
    pub(super) fn remember(&mut self, config: &Config<D>, memory: Remembered, id: D::Activation) {
        if let Some(span) = config.remember_for {
            self.forgetting.push_back((self.clock + span, memory, id));
        }
    }

    /// Takes activation `id` out of `memory`'s list: its span is over.
    pub(super) fn drop_memory(&mut self, memory: Remembered, id: &D::Activation) {
        match memory {
            Remembered::Settled => {
                if let Ok(at) = self.settled.binary_search_by(|(s, _)| s.cmp(id)) {
                    self.settled.remove(at);
                }
            }
            Remembered::Forwarded => {
                if let Ok(at) = self.forwarded.binary_search_by(|f| f.id.cmp(id)) {
                    self.forwarded.remove(at);
                }
            }
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
