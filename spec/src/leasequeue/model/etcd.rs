//! etcd's answers in the model: requests applied, replies fed back,
//! watches delivering, and when the network has done all it must within a
//! tick.

use super::{Client, LeaseQueueModel, Placement, Small, Stream, World};
use crate::leasequeue::controller::{self, WatchId};
use crate::leasequeue::etcd::{Change, Endpoint, Key, Refused, Value};
use crate::leasequeue::scheduler::{self, ClaimResult};
use crate::leasequeue::KeyFault;

/// What is wrong with a value no steadfast node wrote, as the model's
/// etcd answers it.
pub(super) const FOREIGN: &str = "a value no steadfast node wrote";

/// etcd's words when it refuses a scheduler a key, as the model's etcd
/// answers it.
pub(super) const DENIED: &str = "etcdserver: permission denied";

/// A change of the etcd model as a controller's watch reports it.
fn change(change: &Change) -> controller::Change<Small> {
    let read = match change.value {
        Some(Value::Unreadable) => {
            let key = match change.key {
                Key::Endpoint(action) => controller::Key::Endpoint(action),
                Key::Member(scheduler) => controller::Key::Member(scheduler),
            };
            let reason = FOREIGN.into();
            return controller::Change::Unreadable { key, reason };
        }
        Some(Value::Readable(value)) => Some(value),
        None => None,
    };
    match change.key {
        Key::Endpoint(action) => controller::Change::Endpoint {
            action,
            owner: read,
        },
        Key::Member(scheduler) => controller::Change::Member {
            scheduler,
            incarnation: read,
        },
    }
}

/// An endpoint key of the etcd model as the scheduler is told of it.
fn endpoint(key: Endpoint) -> scheduler::Endpoint<Small> {
    scheduler::Endpoint {
        owner: key.owner,
        incarnation: key.incarnation,
        lease: key.lease,
        created: key.create_rev,
    }
}

impl LeaseQueueModel {
    /// etcd applies one request of scheduler `s` and answers it.
    pub(super) fn apply(
        &self,
        w: &mut World,
        s: u8,
        request: scheduler::Effect<Small>,
    ) -> Option<scheduler::Input<Small>> {
        use scheduler::{Effect as E, Input as I};
        let denied = |action: &u8| w.etcd.is_denied(s, *action);
        Some(match request {
            // etcd refuses every request on the key: a claim or a lookup is
            // answered so; the runtime's driver logs a refused delete and
            // feeds the role nothing.
            E::Claim { action, lease, .. } if denied(&action) => I::Claimed {
                action,
                lease,
                result: ClaimResult::Unreadable {
                    why: KeyFault::AccessDenied,
                    reason: DENIED.into(),
                },
            },
            E::Resolve { id, action } if denied(&action) => I::ResolvedUnreadable {
                id,
                action,
                why: KeyFault::AccessDenied,
                reason: DENIED.into(),
            },
            E::Delete { action, .. } if denied(&action) => return None,
            E::Grant { .. } => I::Granted {
                lease: w.etcd.grant(),
                ttl: w.etcd.ttl,
            },
            E::KeepAlive { lease, keepalive } => I::KeptAlive {
                lease,
                keepalive,
                ttl: w.etcd.keep_alive(lease),
            },
            E::Register { lease, incarnation } => I::Registered {
                lease,
                found: w.etcd.register((s, incarnation), lease),
            },
            E::Revoke { lease } => {
                w.etcd.revoke(lease);
                I::Revoked { lease }
            }
            E::Claim {
                action,
                lease,
                incarnation,
            } => {
                let result = match w.etcd.create_if_absent(action, (s, incarnation), lease) {
                    Ok(key) => ClaimResult::Created {
                        created: key.create_rev,
                    },
                    Err(Refused::Exists(key)) => ClaimResult::Exists(endpoint(key)),
                    Err(Refused::LeaseNotFound) => ClaimResult::LeaseNotFound,
                    Err(Refused::Unreadable) => ClaimResult::Unreadable {
                        why: KeyFault::ForeignValue,
                        reason: FOREIGN.into(),
                    },
                };
                I::Claimed {
                    action,
                    lease,
                    result,
                }
            }
            E::Delete { action, created } => {
                w.etcd.delete(action, created);
                I::Deleted { action }
            }
            E::Resolve { id, action } if w.etcd.is_foreign(action) => I::ResolvedUnreadable {
                id,
                action,
                why: KeyFault::ForeignValue,
                reason: FOREIGN.into(),
            },
            E::Resolve { id, action } => I::Resolved {
                id,
                action,
                key: w.etcd.get(action).map(endpoint),
            },
            E::FindMember { scheduler } => I::MemberFound {
                scheduler,
                incarnation: w.etcd.incarnation_of(scheduler),
                unreadable: None,
                term: w.etcd.term.into(),
            },
            E::WakeIn { .. }
            | E::RetryIn { .. }
            | E::IdleTimer { .. }
            | E::Execute { .. }
            | E::Cancel { .. }
            | E::Forward { .. }
            | E::Report { .. }
            | E::Ack { .. }
            | E::Refuse { .. }
            | E::Drained => return None,
        })
    }

    /// The choices of where controller `c` places a new queue as etcd
    /// answers its oldest request, if the answer is a lookup, still waited
    /// for, that finds no key: each member it knows ([`Placement::World`]),
    /// or the one the seeded rule picks ([`Placement::Seeded`]). Else the
    /// one `None`.
    pub(super) fn placements(&self, w: &World, c: u8) -> Vec<Option<u8>> {
        let controller = &w.controllers[usize::from(c)];
        let placing = match w.requests[usize::from(c)].first() {
            Some(controller::Effect::Get { id, action })
                if self.reachable(w, Client::Controller(c))
                    && w.etcd.get(*action).is_none()
                    && !w.etcd.is_foreign(*action)
                    && controller.lookups.iter().any(|(i, _)| i == id) =>
            {
                Some(*action)
            }
            _ => None,
        };
        let members = controller.members.iter().map(|(m, _)| *m);
        match (placing, self.bounds.placement) {
            (Some(_), Placement::World) if !controller.members.is_empty() => {
                members.map(Some).collect()
            }
            (Some(action), Placement::Seeded) => vec![Placement::seeded(c, action, members)],
            _ => vec![None],
        }
    }

    /// etcd answers controller `c`'s oldest request; a queue it places
    /// goes on `place_on` ([`Self::placements`]).
    pub(super) fn controller_etcd(&self, w: &mut World, c: u8, place_on: Option<u8>) {
        let request = w.requests[usize::from(c)].remove(0);
        let reachable = self.reachable(w, Client::Controller(c));
        let input = match request {
            controller::Effect::Get { id, action } if !reachable => {
                controller::Input::GetFailed { id, action }
            }
            controller::Effect::Get { id, action } if w.etcd.is_foreign(action) => {
                controller::Input::GotUnreadable {
                    id,
                    action,
                    why: KeyFault::ForeignValue,
                    reason: FOREIGN.into(),
                }
            }
            controller::Effect::Get { id, action } => controller::Input::Got {
                id,
                action,
                owner: w.etcd.get(action).map(|k| k.owner),
            },
            controller::Effect::List => controller::Input::Listed {
                rev: w.etcd.rev,
                keys: w.etcd.keys.iter().map(|k| (k.action, k.owner)).collect(),
                members: w
                    .etcd
                    .members
                    .iter()
                    .map(|m| (m.scheduler, m.incarnation))
                    .collect(),
            },
            controller::Effect::Watch { id, from } => Self::open(w, c, id, from),
            // Not requests to etcd: they never wait for it.
            controller::Effect::WakeIn { .. }
            | controller::Effect::RequestProgress { .. }
            | controller::Effect::Unwatch { .. }
            | controller::Effect::Send { .. }
            | controller::Effect::CreateQueue { .. }
            | controller::Effect::Resolve { .. }
            | controller::Effect::DeadlineIn { .. }
            | controller::Effect::Overdue { .. }
            | controller::Effect::Confirm { .. } => return,
        };
        self.feed_controller_placing(w, c, input, place_on);
    }

    /// etcd opens watch `id` of controller `c` from revision `from`
    /// (`None`: its next one); the answer to the controller.
    pub(super) fn open(
        w: &mut World,
        c: u8,
        id: WatchId,
        from: Option<u32>,
    ) -> controller::Input<Small> {
        let next = from.unwrap_or(w.etcd.rev + 1);
        let streams = &mut w.streams[usize::from(c)];
        let at = streams.partition_point(|s| s.watch < id);
        let stream = Stream {
            watch: id,
            next,
            progress_asked: false,
        };
        streams.insert(at, stream);
        controller::Input::WatchStarted {
            watch: id,
            next,
            term: w.etcd.term.into(),
        }
    }

    /// Where watch `id` of controller `c` is among its streams, if etcd
    /// still delivers on it.
    pub(super) fn stream(w: &World, c: u8, id: WatchId) -> Option<usize> {
        w.streams[usize::from(c)]
            .binary_search_by(|s| s.watch.cmp(&id))
            .ok()
    }

    /// What stream `at` of controller `c` would deliver now, if anything:
    /// the next revision's changes from where the stream is (`batched`:
    /// every change it has not reported), else the answer to a progress
    /// request on it.
    pub(super) fn watch_response(
        &self,
        w: &World,
        c: u8,
        at: usize,
        batched: bool,
    ) -> Option<controller::Input<Small>> {
        let stream = w.streams[usize::from(c)].get(at)?;
        if !self.reachable(w, Client::Controller(c)) {
            return None;
        }
        let watch = stream.watch;
        let term = w.etcd.term.into();
        match w.etcd.next_response(stream.next, batched) {
            Err(_) => Some(controller::Input::Compacted {
                watch,
                rev: w.etcd.rev,
            }),
            Ok(response) if !response.is_empty() => Some(controller::Input::Changed {
                watch,
                changes: response.iter().map(|c| (c.rev, change(c))).collect(),
                term,
            }),
            Ok(_) if stream.progress_asked => Some(controller::Input::Progress {
                watch,
                rev: w.etcd.rev,
                term,
            }),
            Ok(_) => None,
        }
    }

    /// Stream `at` of controller `c` delivers `response`
    /// ([`Self::watch_response`]): it moves past the changes it reported,
    /// or, a compaction reported, etcd cancels it. A progress request
    /// stays owed until the tick answers it.
    pub(super) fn delivered(w: &mut World, c: u8, at: usize, response: &controller::Input<Small>) {
        let streams = &mut w.streams[usize::from(c)];
        match response {
            controller::Input::Changed { changes, .. } => {
                let last = changes.last().map_or(streams[at].next, |(rev, _)| rev + 1);
                streams[at].next = last;
            }
            controller::Input::Compacted { .. } => {
                streams.remove(at);
            }
            _ => {}
        }
    }

    /// Whether stream `at` of controller `c` has more than one revision to
    /// report: etcd may then send them all in one response
    /// ([`super::Action::WatchCatchUp`]).
    pub(super) fn catches_up(&self, w: &World, c: u8, at: usize) -> bool {
        let one = self.watch_response(w, c, at, false);
        one.is_some() && self.watch_response(w, c, at, true) != one
    }

    /// Whether stream `at` of controller `c` is in step with etcd: it has
    /// no change, and no compaction, to report.
    pub(super) fn in_step(&self, w: &World, c: u8, at: usize) -> bool {
        !matches!(
            self.watch_response(w, c, at, false),
            Some(controller::Input::Changed { .. } | controller::Input::Compacted { .. })
        )
    }

    /// Whether the network has done, within this tick, all it does absent
    /// a fault: every request etcd can answer answered, every watch
    /// response due delivered (but a progress notification, which the tick
    /// delivers).
    pub(super) fn quiet(&self, w: &World) -> bool {
        w.outbox.iter().all(Vec::is_empty)
            && w.requests.iter().all(Vec::is_empty)
            && (0..self.bounds.controllers)
                .all(|c| (0..w.streams[usize::from(c)].len()).all(|at| self.in_step(w, c, at)))
    }

    /// Whether no fault that could come between a keepalive and its answer
    /// remains: from then on the model answers keepalives within the tick
    /// that sends them, as the network would before the next tick anyway,
    /// and saves the interleavings of those steps with every other.
    pub(super) fn keepalives_prompt(w: &World) -> bool {
        let b = &w.left;
        w.outage == 0
            && w.outages_left == 0
            && b.drift == 0
            && b.delays == 0
            && b.lost_replies == 0
            && b.leader_losses == 0
    }

    /// etcd answers scheduler `s`'s keepalive at once.
    pub(super) fn keep_alive_now(&self, w: &mut World, s: u8) {
        let keepalive = w.outbox[usize::from(s)]
            .iter()
            .position(|r| matches!(r, scheduler::Effect::KeepAlive { .. }));
        if let Some(at) = keepalive {
            self.answer(w, s, at);
        }
    }

    /// etcd applies request `at` of scheduler `s`'s outbox, and the reply
    /// reaches it.
    pub(super) fn answer(&self, w: &mut World, s: u8, at: usize) {
        let request = w.outbox[usize::from(s)].remove(at);
        if let Some(reply) = self.apply(w, s, request) {
            self.feed_scheduler(w, s, 0, reply);
        }
    }
}
