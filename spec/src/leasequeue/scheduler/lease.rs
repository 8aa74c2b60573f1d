//! Its lease: granted, kept alive, lost and revoked (see "Fencing" in
//! the role's documentation).

use serde::{Deserialize, Serialize};

use crate::leasequeue::{Domain, Rule};

use super::{Config, Effect, Scheduler};

/// Where the scheduler's lease stands.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum LeaseState<D: Domain> {
    /// No lease: a grant is asked for at every wake-up until one arrives.
    Granting,
    /// The lease it keeps alive.
    Held {
        /// The lease id.
        id: D::Lease,
        /// The TTL etcd granted it with.
        ttl: D::Duration,
        /// How long it may still hand out work under it (zero: suspended
        /// until etcd confirms the lease again).
        valid_for: D::Duration,
        /// The keepalives sent under it and not answered yet, oldest
        /// first: each its number and how long ago it was sent (less than
        /// the TTL: one older is dropped, its answer worth nothing).
        keepalives: Vec<(u64, D::Duration)>,
        /// The number of the next keepalive.
        next_keepalive: u64,
        /// Whether etcd confirmed its member key under this lease: until
        /// then the key is put again at every wake-up.
        registered: bool,
    },
    /// The lease is gone: it is revoked at every wake-up until etcd
    /// confirms, then replaced.
    Revoking {
        /// The lost lease.
        id: D::Lease,
    },
}

impl<D: Domain> Scheduler<D> {
    /// Sends keepalive number `next_keepalive` of the lease it holds, if
    /// it holds one.
    pub(super) fn send_keepalive(&mut self, out: &mut Vec<Effect<D>>) {
        let LeaseState::Held {
            id,
            keepalives,
            next_keepalive,
            ..
        } = &mut self.lease
        else {
            return;
        };
        let keepalive = *next_keepalive;
        *next_keepalive += 1;
        keepalives.push((keepalive, D::Duration::default()));
        out.push(Effect::KeepAlive {
            lease: id.clone(),
            keepalive,
        });
    }

    pub(super) fn granted(
        &mut self,
        config: &Config<D>,
        lease: D::Lease,
        ttl: D::Duration,
        out: &mut Vec<Effect<D>>,
    ) {
        if self.lease != LeaseState::Granting {
            // A grant it no longer waits for (a retried request answered
            // twice): give the extra lease back.
            out.push(Effect::Revoke { lease });
            return;
        }
        // Valid only once a keepalive sent from now on is confirmed: when
        // etcd granted it is not known.
        self.lease = LeaseState::Held {
            id: lease.clone(),
            ttl,
            valid_for: D::Duration::default(),
            keepalives: Vec::new(),
            next_keepalive: 0,
            registered: false,
        };
        self.send_keepalive(out);
        out.push(Effect::Register {
            lease: lease.clone(),
            incarnation: self.incarnation,
        });
        self.claim_electing(&lease, out);
        self.arm_retry(config, out);
    }

    /// Claims, under `lease`, every key it wants and is not deleting.
    pub(super) fn claim_electing(&self, lease: &D::Lease, out: &mut Vec<Effect<D>>) {
        for action in &self.electing {
            if !self.retiring.iter().any(|(a, _)| a == action) {
                out.push(Effect::Claim {
                    action: action.clone(),
                    lease: lease.clone(),
                    incarnation: self.incarnation,
                });
            }
        }
    }

    pub(super) fn kept_alive(
        &mut self,
        config: &Config<D>,
        lease: D::Lease,
        keepalive: u64,
        renewed: D::Duration,
        out: &mut Vec<Effect<D>>,
    ) {
        let LeaseState::Held {
            id,
            ttl,
            valid_for,
            keepalives,
            ..
        } = &mut self.lease
        else {
            return;
        };
        if *id != lease {
            return;
        }
        // An answer to a keepalive answered already, or dropped (one sent
        // later was answered), says nothing new.
        let Some(&(_, age)) = keepalives.iter().find(|(k, _)| *k == keepalive) else {
            return;
        };
        keepalives.retain(|(k, _)| *k > keepalive);
        let renewed = if renewed != D::Duration::default() {
            renewed
        } else if config.rules.has(Rule::TtlZeroIsLoss) {
            self.lose_lease(config, out);
            return;
        } else {
            // OpenWhisk maps the answer to its lease and takes it for a
            // renewal of the TTL it was granted.
            *ttl
        };
        *valid_for = D::saturating_sub(renewed, age + config.margin);
        self.arm_retry(config, out);
        self.serve_waiting(config, out);
    }

    /// etcd answered a put of its member key: a member from now on, or, the
    /// lease gone, as a keepalive answered with TTL 0 says.
    pub(super) fn registered(
        &mut self,
        config: &Config<D>,
        lease: D::Lease,
        found: bool,
        out: &mut Vec<Effect<D>>,
    ) {
        let LeaseState::Held { id, registered, .. } = &mut self.lease else {
            return;
        };
        if *id != lease {
            return;
        }
        if found {
            *registered = true;
        } else if config.rules.has(Rule::TtlZeroIsLoss) {
            self.lose_lease(config, out);
        }
        // OpenWhisk puts the key again at the next wake-up.
    }

    /// The lease is gone: stop serving every queue and revoke it before
    /// taking a new one; waiting activations are looked up again.
    pub(super) fn lose_lease(&mut self, config: &Config<D>, out: &mut Vec<Effect<D>>) {
        let Some(id) = self.live_lease().cloned() else {
            return;
        };
        self.lease = LeaseState::Revoking { id: id.clone() };
        self.queues.clear();
        out.push(Effect::Revoke { lease: id });
        self.arm_retry(config, out);
        self.serve_waiting(config, out);
    }

    /// etcd revoked `lease`: if it is the one it was giving up, it asks
    /// for a new one, unless it is leaving.
    pub(super) fn revoked(
        &mut self,
        config: &Config<D>,
        lease: D::Lease,
        out: &mut Vec<Effect<D>>,
    ) {
        if matches!(&self.lease, LeaseState::Revoking { id } if *id == lease) {
            self.lease = LeaseState::Granting;
            if !self.leaving() {
                out.push(Effect::Grant { ttl: config.ttl });
                self.arm_retry(config, out);
            }
        }
    }
}
