//! A copy of an activation as it arrives: deduplicated, fenced by
//! incarnation (see "Incarnations" in the role's documentation), taken
//! in.

use crate::leasequeue::{Domain, FailReason, Outcome, Rule};

use super::{contains_sorted, Config, Effect, Phase, Scheduler};

/// How a copy of an activation arrived ([`Input::Activation`]).
///
/// [`Input::Activation`]: super::Input::Activation
pub(super) struct Arrival<D: Domain> {
    pub(super) forwarded: bool,
    pub(super) incarnation: Option<D::Incarnation>,
    pub(super) left: Option<D::Duration>,
}

impl<D: Domain> Scheduler<D> {
    pub(super) fn activation(
        &mut self,
        config: &Config<D>,
        id: D::Activation,
        action: D::Action,
        arrival: Arrival<D>,
        out: &mut Vec<Effect<D>>,
    ) {
        let Arrival {
            forwarded,
            incarnation,
            left,
        } = arrival;
        let rules = config.rules;
        if rules.has(Rule::Deduplicate) {
            let sent_on = contains_sorted(&self.forwarded, &id);
            if contains_sorted(&self.settled, &id) || (sent_on && !forwarded) {
                // What it forwarded is settled once the peer took it in.
                if !self.forwarding.iter().any(|f| f.id == id) {
                    out.push(Effect::Ack { id });
                }
                return;
            }
            if self.holds(&id) {
                return;
            }
        }
        // New to this run of it, and addressed to another: refused, not
        // ignored, so that its sender routes it again. (What this run holds
        // or settled is answered as above, to whichever run a copy names:
        // a refusal would have it routed again while it runs here.)
        if rules.has(Rule::FenceCopies) && incarnation != Some(self.incarnation) {
            out.push(Effect::Refuse { id, incarnation });
            return;
        }
        if rules.has(Rule::Deduplicate) {
            // Sent back by the peer it was forwarded to: its owner now (it
            // holds nothing it forwarded), and its forward is over.
            self.forwarded.retain(|f| *f != id);
            self.forwarding.retain(|f| f.id != id);
        }
        if self.phase == Phase::Draining {
            // Left unacknowledged: its sender keeps sending it, and routes
            // it again once this scheduler has stopped listening.
            return;
        }
        if !rules.has(Rule::AckAtSettlement) {
            // Committed on receipt: a crash from here on loses it.
            out.push(Effect::Ack { id: id.clone() });
        }
        match left {
            // Past its deadline as it arrives: it is not started (OpenWhisk
            // checks this much too).
            Some(left) if left == D::Duration::default() => {
                let outcome = Outcome::Failed(FailReason::PastDeadline);
                return self.settle(config, id, outcome, out);
            }
            Some(left) => match self.deadlines.binary_search_by(|(d, _)| d.cmp(&id)) {
                Ok(at) => self.deadlines[at].1 = left,
                Err(at) => self.deadlines.insert(at, (id.clone(), left)),
            },
            None => {}
        }
        self.take_in(config, id, action, out);
    }
}
