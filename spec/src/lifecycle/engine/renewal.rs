//! The claim of a run under way, renewed so that a run within its timeout
//! is not cut by its claim ([`Rule::RenewClaims`]).
//!
//! A run starts under a live claim of the engine's own. With the rule, the
//! run's timer ([`Effect::Invoke`]'s deadline, moved by [`Effect::Remind`])
//! is set [`Claims::renew_before`] the claim's end, and the engine then
//! sends [`Effect::Renew`]: a patch of the claim alone, checked
//! against the newest version seen, which must still carry the engine's
//! claim. Its answer ([`Input::Renewed`], [`Input::RenewFailed`]) is its
//! own input, so that it never passes for the answer to a progress patch;
//! a renewal that fails is sent again once a newer version is seen (the
//! object moved on: a 409) or after a wait: the server's `Retry-After`,
//! else the engine's backoff, doubled with each failure in a row. A run whose
//! claim was not renewed in time is cut at the claim's end, as without
//! the rule.
//!
//! [`Claims::renew_before`]: crate::lifecycle::handlers::Claims::renew_before
//! [`Input::Renewed`]: super::Input::Renewed
//! [`Input::RenewFailed`]: super::Input::RenewFailed

use serde::{Deserialize, Serialize};

use super::{Effect, Engine, Patch, Phase};
use crate::lifecycle::domain::Domain;
use crate::lifecycle::handlers::Config;
use crate::lifecycle::object::Claim;
use crate::lifecycle::rules::Rule;

/// Where the renewal of a run's claim stands.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(bound = "")]
pub enum Renewal<D: Domain> {
    /// To be sent at `at`, by the engine's clock.
    Due {
        /// When.
        at: D::Time,
    },
    /// In flight.
    Sent {
        /// The claim it sets.
        claim: Claim<D>,
        /// The version it was computed from.
        expect: D::Version,
        /// The wait after the failure it follows, if it follows one.
        after: Option<D::Duration>,
    },
    /// Not applied (or not known to be): sent again once a version other
    /// than `on` is seen, or at `retry`.
    Failed {
        /// The version it was computed from.
        on: D::Version,
        /// When it is sent again regardless.
        retry: D::Time,
        /// How long that wait is (the next one, after another failure, is
        /// twice as long).
        wait: D::Duration,
    },
}

impl<D: Domain> Engine<D> {
    /// The renewal of a run starting now under the engine's claim, which
    /// ends at `until`, if the rules renew and the run may outlast it.
    pub(super) fn renewal_of(
        &self,
        config: &Config<D>,
        until: D::Time,
        limit: D::Time,
    ) -> Option<Renewal<D>> {
        let renews = config.rules.has(Rule::Claims) && config.rules.has(Rule::RenewClaims);
        (renews && limit > until).then(|| Renewal::Due {
            at: D::before(until, config.claims.renew_before),
        })
    }

    /// Sends the renewal of the running run's claim if it is due, and
    /// moves the run's timer ([`Effect::Remind`]) to the next time the
    /// engine must be told of it: the renewal's, or the run's deadline.
    pub(super) fn renew_if_due(&mut self, config: &Config<D>) -> Vec<Effect<D>> {
        let now = self.now;
        // The newest version, if it carries the engine's claim, and the
        // claim a renewal of it sets.
        let newest = self
            .view
            .as_ref()
            .filter(|v| self.holds(v))
            .and_then(|v| Some((v.version.clone(), self.claim(config, v, false)?)));
        let Phase::Running {
            run,
            deadline,
            renewal,
            ..
        } = &mut self.phase
        else {
            return Vec::new();
        };
        let (run, deadline) = (*run, *deadline);
        let mut effects = Vec::new();
        let next = match (&*renewal, &newest) {
            // The run ends at the deadline its invocation was given.
            (None, _) => return effects,
            (Some(Renewal::Due { at }), Some(_)) if now < *at => Some(*at),
            (Some(Renewal::Failed { on, retry, .. }), Some((v, _))) if now < *retry && v == on => {
                Some(*retry)
            }
            (
                Some(sending @ (Renewal::Due { .. } | Renewal::Failed { .. })),
                Some((version, change)),
            ) => {
                let after = match sending {
                    Renewal::Failed { wait, .. } => Some(*wait),
                    _ => None,
                };
                let mut patch = Patch::on(version.clone());
                patch.checked = config.rules.has(Rule::CheckedPatches);
                *renewal = change.after().map(|claim| Renewal::Sent {
                    claim,
                    expect: version.clone(),
                    after,
                });
                patch.claim = Some(change.clone());
                effects.push(Effect::Renew(patch));
                None
            }
            // In flight; or the newest version carries no claim of the
            // engine's (another replica took it over): the run ends at
            // its deadline.
            (Some(Renewal::Sent { .. }), _) | (_, None) => None,
        };
        let at = next.map_or(deadline, |at| at.min(deadline));
        effects.push(Effect::Remind { run, at });
        effects
    }

    /// The renewal in flight applied and made `version`: the run may go on
    /// until the new claim's end (or its timeout), and the cycle goes on
    /// from `version` if it was computed from the one renewed.
    pub(super) fn renewed(&mut self, config: &Config<D>, version: D::Version) -> Vec<Effect<D>> {
        let Phase::Running {
            deadline,
            limit,
            renewal,
            cycle,
            ..
        } = &mut self.phase
        else {
            return Vec::new();
        };
        let Some(Renewal::Sent { claim, expect, .. }) = renewal.take() else {
            return Vec::new();
        };
        *deadline = (*limit).min(claim.until);
        *renewal = Some(Renewal::Due {
            at: D::before(claim.until, config.claims.renew_before),
        });
        if cycle.view.version == expect {
            cycle.view.version = version;
            cycle.view.claim = Some(claim);
        }
        self.renew_if_due(config)
    }

    /// The renewal in flight did not apply, or may not have; the server
    /// asked for `retry_after` if it said.
    pub(super) fn renewal_failed(
        &mut self,
        config: &Config<D>,
        retry_after: Option<D::Duration>,
    ) -> Vec<Effect<D>> {
        let now = self.now;
        let Phase::Running { renewal, .. } = &mut self.phase else {
            return Vec::new();
        };
        let Some(Renewal::Sent { expect, after, .. }) = renewal.take() else {
            return Vec::new();
        };
        let wait = config.backoff.next(after, retry_after);
        *renewal = Some(Renewal::Failed {
            on: expect,
            retry: D::after(now, wait),
            wait,
        });
        self.renew_if_due(config)
    }
}
