//! Activations sent on to the peer that owns their queue, until it
//! acknowledges them or the forward bounces.

use serde::{Deserialize, Serialize};

use crate::leasequeue::{Domain, Rule, Rules};

use super::{Config, Effect, Endpoint, Remembered, Scheduler};

/// An activation forwarded to a peer that has not acknowledged it yet.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub struct Forward<D: Domain> {
    /// The activation.
    pub id: D::Activation,
    /// Its action.
    pub action: D::Action,
    /// The peer it was forwarded to.
    pub to: D::Scheduler,
    /// The peer's incarnation it is addressed to.
    pub incarnation: D::Incarnation,
}

impl<D: Domain> Forward<D> {
    /// Its send, again.
    pub(super) fn effect(&self) -> Effect<D> {
        Effect::Forward {
            id: self.id.clone(),
            action: self.action.clone(),
            to: self.to.clone(),
            incarnation: self.incarnation,
        }
    }
}

impl<D: Domain> Scheduler<D> {
    /// Sends activation `id` on to `key`'s owner, addressed to the
    /// incarnation that created the key.
    pub(super) fn forward(
        &mut self,
        config: &Config<D>,
        id: D::Activation,
        action: D::Action,
        key: Endpoint<D>,
        out: &mut Vec<Effect<D>>,
    ) {
        if config.rules.has(Rule::Deduplicate) {
            self.remember(config, Remembered::Forwarded, id.clone());
        }
        let forward = Forward {
            id: id.clone(),
            action,
            to: key.owner,
            incarnation: key.incarnation,
        };
        out.push(forward.effect());
        match self.forwarding.binary_search_by(|f| f.id.cmp(&id)) {
            Ok(at) => self.forwarding[at] = forward,
            Err(at) => self.forwarding.insert(at, forward),
        }
    }

    /// Peer `from` took in activation `id`, which this scheduler forwarded
    /// to it: the activation is settled here, and acknowledged to its
    /// sender only now. (Acknowledged at the forward, it would be lost if
    /// this scheduler crashed and the peer left before taking it in: the
    /// forward bounces back to a run that knows nothing of it.)
    pub(super) fn forward_acked(
        &mut self,
        rules: Rules,
        id: D::Activation,
        from: D::Scheduler,
        out: &mut Vec<Effect<D>>,
    ) {
        let Some(at) = self
            .forwarding
            .iter()
            .position(|f| f.id == id && f.to == from)
        else {
            return;
        };
        self.forwarding.remove(at);
        self.drop_deadline(&id);
        self.acknowledge(rules, id, out);
    }

    /// A forward to `to` bounced: under [`Rule::Reroute`] it holds the
    /// activation again and looks its action's key up at its next wake-up
    /// or retry (the gone peer's key may have expired by then); without
    /// it, it sends the forward to the same address again.
    pub(super) fn bounced(
        &mut self,
        config: &Config<D>,
        id: D::Activation,
        to: D::Scheduler,
        incarnation: Option<D::Incarnation>,
    ) {
        if !config.rules.has(Rule::Reroute) {
            return;
        }
        let Some(at) = self
            .forwarding
            .iter()
            .position(|f| f.id == id && f.to == to && Some(f.incarnation) == incarnation)
        else {
            return;
        };
        let Forward { action, .. } = self.forwarding.remove(at);
        if let Ok(at) = self.forwarded.binary_search(&id) {
            self.forwarded.remove(at);
            self.forgetting
                .retain(|(_, memory, i)| (*memory, i) != (Remembered::Forwarded, &id));
        }
        self.resolving.push((id, action));
    }
}
