//! Activations sent on to the peer that owns their queue, until it
//! acknowledges them or the forward bounces.

use serde::{Deserialize, Serialize};

use crate::leasequeue::{Domain, Outcome, Rule, Rules};

use super::{contains_sorted, insert_sorted, Config, Effect, Endpoint, Remembered, Scheduler};

/// A copy of an activation forwarded to a peer that has not acknowledged
/// it yet: one for each controller owed the activation's outcome, all to
/// one peer.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub struct Forward<D: Domain> {
    /// The activation.
    pub id: D::Activation,
    /// The controller the copy names, which the peer tells the outcome.
    pub reply_to: D::Controller,
    /// Its action.
    pub action: D::Action,
    /// The peer it was forwarded to.
    pub to: D::Scheduler,
    /// The peer's incarnation it is addressed to.
    pub incarnation: D::Incarnation,
    /// The peer took the activation in before this copy was sent (a
    /// caller asked again): it answers from memory, and a bounce means it
    /// is gone, with what it knew.
    pub over: bool,
    /// It may have run before ([`Scheduler::may_have_run`]).
    pub may_have_run: bool,
    /// Under [`Rule::PresumePeerGone`], how long the peer has had no
    /// member key while the copy waited, counted at wake-ups (under
    /// [`Rule::EtcdTime`], those by which etcd had answered a lookup of it
    /// since the one before); zero while it has one, and without the rule.
    #[serde(default)]
    pub unseen_for: D::Duration,
    /// etcd answered a lookup of the peer's member key since the last
    /// wake-up, and the last such answer found none. (An answer that
    /// finds one restarts [`Forward::unseen_for`] at once, so that a peer
    /// in sight changes nothing.)
    #[serde(default)]
    pub missed: bool,
}

/// Where it forwarded an activation, remembered for
/// [`Config::remember_for`]: a controller's copy once the forward is over
/// goes to that peer, which answers it from memory.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub struct Forwarded<D: Domain> {
    /// The activation.
    pub id: D::Activation,
    /// Its action.
    pub action: D::Action,
    /// The peer it was forwarded to.
    pub to: D::Scheduler,
    /// The peer's incarnation it was addressed to.
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
            reply_to: self.reply_to.clone(),
            may_have_run: self.may_have_run,
        }
    }
}

impl<D: Domain> Scheduler<D> {
    /// Sends activation `id` on to `key`'s owner, addressed to the
    /// incarnation that created the key: a copy for each controller owed
    /// its outcome, which the owner tells.
    pub(super) fn forward(
        &mut self,
        config: &Config<D>,
        id: D::Activation,
        action: D::Action,
        key: Endpoint<D>,
        out: &mut Vec<Effect<D>>,
    ) {
        if config.rules.has(Rule::Deduplicate) {
            let memory = Forwarded {
                id: id.clone(),
                action: action.clone(),
                to: key.owner.clone(),
                incarnation: key.incarnation,
            };
            match self.forwarded.binary_search_by(|f| f.id.cmp(&id)) {
                Ok(at) => self.forwarded[at] = memory,
                Err(at) => self.forwarded.insert(at, memory),
            }
            self.remember(config, Remembered::Forwarded, id.clone());
        }
        self.unforward(&id);
        let may_have_run = contains_sorted(&self.may_have_run, &id);
        for reply_to in self.take_askers(&id) {
            let forward = Forward {
                id: id.clone(),
                reply_to,
                action: action.clone(),
                to: key.owner.clone(),
                incarnation: key.incarnation,
                over: false,
                may_have_run,
                unseen_for: D::Duration::default(),
                missed: false,
            };
            self.start_forward(forward, out);
        }
    }

    /// Where it forwarded activation `id`, if it remembers.
    pub fn forwarded_to(&self, id: &D::Activation) -> Option<&Forwarded<D>> {
        let at = self.forwarded.binary_search_by(|f| f.id.cmp(id)).ok()?;
        Some(&self.forwarded[at])
    }

    /// Under [`Rule::AnswerEveryCopy`], a controller's copy of activation
    /// `id`, which it forwarded, for controller `reply_to`: it joins the
    /// forward under way; once that is over, it goes to the peer that took
    /// the activation in, which answers it from memory.
    pub(super) fn ask_peer(
        &mut self,
        id: D::Activation,
        reply_to: D::Controller,
        out: &mut Vec<Effect<D>>,
    ) {
        if self.forward_copy(&id, reply_to.clone(), out) {
            return;
        }
        let Some(peer) = self.forwarded_to(&id).cloned() else {
            return;
        };
        let forward = Forward {
            id,
            reply_to,
            action: peer.action,
            to: peer.to,
            incarnation: peer.incarnation,
            over: true,
            may_have_run: false,
            unseen_for: D::Duration::default(),
            missed: false,
        };
        self.start_forward(forward, out);
    }

    /// A copy of activation `id` for controller `reply_to` joins its
    /// forward under way, to the same peer: the peer tells that controller
    /// too. Returns whether a forward of it is under way.
    fn forward_copy(
        &mut self,
        id: &D::Activation,
        reply_to: D::Controller,
        out: &mut Vec<Effect<D>>,
    ) -> bool {
        let Some(first) = self.forwarding.iter().find(|f| f.id == *id) else {
            return false;
        };
        if !self
            .forwarding
            .iter()
            .any(|f| f.id == *id && f.reply_to == reply_to)
        {
            let forward = Forward {
                reply_to,
                ..first.clone()
            };
            self.start_forward(forward, out);
        }
        true
    }

    /// Sends `forward`, and again until the peer acknowledges it.
    fn start_forward(&mut self, forward: Forward<D>, out: &mut Vec<Effect<D>>) {
        out.push(forward.effect());
        let key = (&forward.id, &forward.reply_to);
        if let Err(at) = self
            .forwarding
            .binary_search_by(|f| (&f.id, &f.reply_to).cmp(&key))
        {
            self.forwarding.insert(at, forward);
        }
    }

    /// Ends every forward of activation `id` under way: the controllers
    /// they were for are owed its outcome here again. Returns its action,
    /// if one was under way.
    pub(super) fn unforward(&mut self, id: &D::Activation) -> Option<D::Action> {
        let (ended, kept): (Vec<_>, _) = std::mem::take(&mut self.forwarding)
            .into_iter()
            .partition(|f| f.id == *id);
        self.forwarding = kept;
        let action = ended.first().map(|f| f.action.clone());
        for forward in ended {
            self.ask(forward.id, forward.reply_to);
        }
        action
    }

    /// Peer `from` took in activation `id`'s copy for controller
    /// `reply_to` (for every controller: `None`), which this scheduler
    /// forwarded to it. Once it took in every copy, the activation is
    /// settled here, and acknowledged to its senders only now.
    /// (Acknowledged at the forward, it would be lost if this scheduler
    /// crashed and the peer left before taking it in: the forward bounces
    /// back to a run that knows nothing of it.)
    pub(super) fn forward_acked(
        &mut self,
        rules: Rules,
        id: D::Activation,
        from: D::Scheduler,
        reply_to: Option<D::Controller>,
        out: &mut Vec<Effect<D>>,
    ) {
        let before = self.forwarding.len();
        self.forwarding.retain(|f| {
            f.id != id || f.to != from || reply_to.as_ref().is_some_and(|r| *r != f.reply_to)
        });
        if self.forwarding.len() == before || self.forwarding.iter().any(|f| f.id == id) {
            return;
        }
        self.done_waiting(&id);
        self.acknowledge(rules, id, out);
    }

    /// etcd answered a lookup of peer `scheduler`'s member key, in raft
    /// term `term`: under [`Rule::PresumePeerGone`], a key found restarts
    /// the count of each forward to the peer at once, and none found
    /// counts at the next wake-up ([`Scheduler::presume_peers_gone`]), if
    /// no later answer found one by then. A key naming another
    /// run than the forward's is a sighting too: that run is live at the
    /// address, and answers the copy if it knows the activation or refuses
    /// it, which comes back as a bounce (taken back while the copy was
    /// still on its way, it would run here and there). Under
    /// [`Rule::EtcdTime`], a higher term than any before restarts every
    /// count, as a new leader gives every lease its full TTL again.
    pub(super) fn member_found(
        &mut self,
        rules: Rules,
        scheduler: &D::Scheduler,
        incarnation: Option<D::Incarnation>,
        term: u64,
    ) {
        if !rules.has(Rule::PresumePeerGone) {
            return;
        }
        if term > self.term {
            self.term = term;
            if rules.has(Rule::EtcdTime) {
                for forward in &mut self.forwarding {
                    forward.unseen_for = D::Duration::default();
                }
            }
        }
        for forward in self.forwarding.iter_mut().filter(|f| f.to == *scheduler) {
            forward.missed = incarnation.is_none();
            if !forward.missed {
                forward.unseen_for = D::Duration::default();
            }
        }
    }

    /// At a wake-up, under [`Rule::PresumePeerGone`]: counts how long each
    /// forward's peer has been out of sight (under [`Rule::EtcdTime`],
    /// only if etcd answered a lookup of it since the wake-up before),
    /// takes back as bounced every forward whose peer has been so for
    /// [`Config::presume_gone_after`], and looks up the member key of
    /// every peer still forwarded to.
    pub(super) fn presume_peers_gone(&mut self, config: &Config<D>, out: &mut Vec<Effect<D>>) {
        let rules = config.rules;
        if !rules.has(Rule::PresumePeerGone) {
            return;
        }
        let mut gone = Vec::new();
        for forward in &mut self.forwarding {
            let missed = std::mem::take(&mut forward.missed);
            if missed || !rules.has(Rule::EtcdTime) {
                forward.unseen_for = forward.unseen_for + config.wake_every;
                if forward.unseen_for >= config.presume_gone_after {
                    // Without `Rule::Reroute` a bounce leaves the forward
                    // as it was: it is sent there again, counted afresh.
                    forward.unseen_for = D::Duration::default();
                    gone.push((forward.id.clone(), forward.to.clone(), forward.incarnation));
                }
            }
        }
        for (id, to, incarnation) in gone {
            self.bounced(config, id, to, Some(incarnation), out);
        }
        let mut peers: Vec<&D::Scheduler> = self.forwarding.iter().map(|f| &f.to).collect();
        peers.sort();
        peers.dedup();
        out.extend(peers.into_iter().map(|peer| Effect::FindMember {
            scheduler: peer.clone(),
        }));
    }

    /// A forward to `to` bounced: under [`Rule::Reroute`] it holds the
    /// activation again, owing its outcome to every controller its copies
    /// named, and looks its action's key up at its next wake-up or retry
    /// (the gone peer's key may have expired by then), marked under
    /// [`Rule::MayHaveRun`] as one that may have run; without it, it
    /// sends the forward to the same address again. A copy sent once the
    /// peer had taken the activation in ([`Forward::over`]) bounced with
    /// the peer's memory: its controller is told the activation ended, how
    /// no longer known ([`Outcome::Forgotten`]), and it is not run again.
    pub(super) fn bounced(
        &mut self,
        config: &Config<D>,
        id: D::Activation,
        to: D::Scheduler,
        incarnation: Option<D::Incarnation>,
        out: &mut Vec<Effect<D>>,
    ) {
        if !config.rules.has(Rule::Reroute) {
            return;
        }
        let bounced =
            |f: &&Forward<D>| f.id == id && f.to == to && Some(f.incarnation) == incarnation;
        let Some(over) = self.forwarding.iter().find(bounced).map(|f| f.over) else {
            return;
        };
        if over {
            let (ended, kept): (Vec<_>, _) = std::mem::take(&mut self.forwarding)
                .into_iter()
                .partition(|f| f.id == id);
            self.forwarding = kept;
            for forward in ended {
                self.report(id.clone(), forward.reply_to, Outcome::Forgotten, out);
            }
            return self.acknowledge(config.rules, id, out);
        }
        let Some(action) = self.unforward(&id) else {
            return;
        };
        // The peer run it was forwarded to stopped, and may have run it.
        if config.rules.has(Rule::MayHaveRun) {
            insert_sorted(&mut self.may_have_run, id.clone());
        }
        if let Ok(at) = self.forwarded.binary_search_by(|f| f.id.cmp(&id)) {
            self.forwarded.remove(at);
            self.forgetting
                .retain(|(_, memory, i)| (*memory, i) != (Remembered::Forwarded, &id));
        }
        self.resolving.push((id, action));
    }
}
