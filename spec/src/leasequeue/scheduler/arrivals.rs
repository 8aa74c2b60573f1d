//! A copy of an activation as it arrives: deduplicated, fenced by
//! incarnation (see "Incarnations" in the role's documentation), taken
//! in.

use crate::leasequeue::{Domain, Rule};

use super::{insert_sorted, Config, Effect, Phase, Scheduler};

/// How a copy of an activation arrived ([`Input::Activation`]).
///
/// [`Input::Activation`]: super::Input::Activation
pub(super) struct Arrival<D: Domain> {
    pub(super) forwarded: bool,
    pub(super) incarnation: Option<D::Incarnation>,
    pub(super) left: Option<D::Duration>,
    pub(super) reply_to: D::Controller,
    pub(super) may_have_run: bool,
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
            reply_to,
            may_have_run,
        } = arrival;
        let rules = config.rules;
        let answer = rules.has(Rule::AnswerEveryCopy);
        if rules.has(Rule::Deduplicate) {
            if let Some(outcome) = self.outcome_of(&id) {
                // Settled here: acknowledged, and its controller told how
                // it ended.
                if answer {
                    self.report(id.clone(), reply_to, outcome, out);
                }
                out.push(Effect::Ack { id });
                return;
            }
            if self.forwarded_to(&id).is_some() && !forwarded {
                // A controller's copy of one it forwarded, which the peer
                // settles: it joins the forward under way, or once that is
                // over goes to the peer, which answers it from memory.
                if answer {
                    self.ask_peer(id, reply_to, out);
                } else if !self.forwarding.iter().any(|f| f.id == id) {
                    // What it forwarded is settled once the peer took it in.
                    out.push(Effect::Ack { id });
                }
                return;
            }
            if self.holds(&id) {
                if answer {
                    self.ask(id, reply_to);
                }
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
            self.forwarded.retain(|f| f.id != id);
            self.unforward(&id);
        }
        if self.phase == Phase::Draining {
            // Left unacknowledged: its sender keeps sending it, and routes
            // it again once this scheduler has stopped listening. It owes
            // nobody its outcome.
            self.take_askers(&id);
            return;
        }
        if !rules.has(Rule::AckAtSettlement) {
            // Committed on receipt: a crash from here on loses it.
            out.push(Effect::Ack { id: id.clone() });
        }
        self.ask(id.clone(), reply_to);
        if may_have_run && rules.has(Rule::MayHaveRun) {
            insert_sorted(&mut self.may_have_run, id.clone());
        }
        match left {
            // Past its deadline as it arrives: it is not started (OpenWhisk
            // checks this much too).
            Some(left) if left == D::Duration::default() => {
                return self.fail_past_deadline(config, id, out);
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
