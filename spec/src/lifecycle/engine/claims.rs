//! The claim on the object ([`Rule::Claims`], [`Rule::TakeOver`]): where
//! the engine stands with it, and what a patch does to it.

use super::{ClaimChange, Engine};
use crate::lifecycle::domain::Domain;
use crate::lifecycle::handlers::Config;
use crate::lifecycle::object::{Claim, ObjectView};
use crate::lifecycle::rules::Rule;

/// Where the engine stands with the claim on a version of the object
/// ([`Rule::Claims`]).
pub(super) enum Standing<D: Domain> {
    /// Its own claim, live by its clock: it may run a handler until `until`.
    Mine {
        /// The claim's end.
        until: D::Time,
    },
    /// No live claim of another's: it may take the object.
    Free,
    /// Another replica's claim, live or not known to be over: nothing of
    /// the object is done before `over` (never, without [`Rule::TakeOver`]).
    Theirs {
        /// When it may be taken over.
        over: Option<D::Time>,
    },
}

impl<D: Domain> Engine<D> {
    /// `run` has stopped: if the engine cancelled it, its claim may be
    /// released again.
    pub(super) fn stopped_run(&mut self, run: super::RunId) {
        if self.cancelled == Some(run) {
            self.cancelled = None;
        }
    }

    /// Whether `view`'s claim, live or not, is the engine's own.
    pub(super) fn holds(&self, view: &ObjectView<D>) -> bool {
        view.claim
            .as_ref()
            .is_some_and(|claim| claim.holder == self.identity)
    }

    /// Where the engine stands with the claim on `view`.
    pub(super) fn standing(&self, config: &Config<D>, view: &ObjectView<D>) -> Standing<D> {
        if !config.rules.has(Rule::Claims) {
            return Standing::Free;
        }
        match &view.claim {
            None => Standing::Free,
            Some(claim) if self.holds(view) => {
                if self.now < claim.until {
                    Standing::Mine { until: claim.until }
                } else {
                    Standing::Free
                }
            }
            Some(claim) => {
                let over = D::after(claim.until, config.claims.drift);
                let takes_over = config.rules.has(Rule::TakeOver);
                if takes_over && self.now >= over {
                    Standing::Free
                } else {
                    Standing::Theirs {
                        over: takes_over.then_some(over),
                    }
                }
            }
        }
    }

    /// The change of the claim a patch of `view` makes ([`Rule::Claims`]):
    /// the engine's own from now for the claim's duration, or with
    /// `release` none (if there is one to release, and no run cancelled
    /// under it may still go on: [`Rule::KeepClaimPastCancel`]).
    pub(super) fn claim(
        &self,
        config: &Config<D>,
        view: &ObjectView<D>,
        release: bool,
    ) -> Option<ClaimChange<D>> {
        if !config.rules.has(Rule::Claims) {
            return None;
        }
        if release {
            if self.cancelled.is_some() && config.rules.has(Rule::KeepClaimPastCancel) {
                // A cancelled run may still go on: the claim ends by itself.
                return None;
            }
            return view.claim.as_ref().map(|_| ClaimChange::Release);
        }
        // A claim of its own still live is renewed under its epoch; any
        // other is a new one, taken under the next epoch (the checked patch
        // that takes it makes sure no other was taken meanwhile).
        let epoch = match (self.standing(config, view), &view.claim) {
            (Standing::Mine { .. }, Some(claim)) => claim.epoch,
            _ => view.epoch.wrapping_add(1),
        };
        Some(ClaimChange::Set(Claim {
            holder: self.identity.clone(),
            until: D::after(self.now, config.claims.duration),
            epoch,
        }))
    }
}
