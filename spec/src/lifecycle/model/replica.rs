//! One replica of the operator in the model: what it holds (its engine,
//! its watch, what is in flight between it and the API server), the steps
//! it and the world around it may take, and how each changes the world.

use serde::{Deserialize, Serialize};

use super::{LifecycleModel, Pending, Run, Said, Timing, View, World};
use crate::lifecycle::domain::Domain;
use crate::lifecycle::engine::{ClientError, Engine, Input, Outcome, Patch, Phase, Renewal};
use crate::lifecycle::model::small::Small;

/// One replica of the operator: its engine, and what is in flight between
/// it and the rest of the world.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct Replica {
    /// A list's answer not yet delivered; the watch's events follow it.
    pub listing: Option<View>,
    /// Watch events not delivered yet, oldest first.
    pub watch: Vec<View>,
    /// Whether the watch has yet to report that the object is gone.
    pub gone_unseen: bool,
    /// Its engine.
    pub engine: Engine<Small>,
    /// The run in flight.
    pub running: Option<Run>,
    /// A run that hangs: it never returns.
    pub hung: Option<Run>,
    /// A run of a crashed start of it, still going.
    pub zombie: Option<Run>,
    /// A run that passed its deadline, its return on its way.
    pub late: Option<Run>,
    /// The patch in flight.
    pub patch: Option<Patch<Small>>,
    /// The renewal of a run's claim in flight.
    pub renewal: Option<Patch<Small>>,
    /// Whether a consistent read is in flight.
    pub fetch: bool,
    /// The wake-up the engine asked for, by its clock.
    pub wake: Option<u8>,
    /// How far its clock runs ahead of the world's.
    pub ahead: u8,
    /// Whether it died for good (its node is gone): it takes no step again.
    pub dead: bool,
}

impl Replica {
    /// A replica started (its `incarnation`th start) at `now`, its first
    /// list of the object (`listing`) on its way.
    pub(super) fn new(incarnation: u32, now: u8, listing: Option<View>) -> Self {
        Replica {
            listing,
            watch: Vec::new(),
            gone_unseen: false,
            // A start's claims are its own: a replica that starts again
            // does not take its crashed start's claim for its own.
            engine: Engine::new(incarnation, incarnation, now),
            running: None,
            hung: None,
            zombie: None,
            late: None,
            patch: None,
            renewal: None,
            fetch: false,
            wake: None,
            ahead: 0,
            dead: false,
        }
    }

    /// Its clock's time when the world's is `now`.
    pub(super) fn clock(&self, now: u8) -> u8 {
        now.saturating_add(self.ahead)
    }

    /// The deadline of the run it waits for (running or hung), by its
    /// clock.
    fn deadline(&self) -> Option<u8> {
        self.running.or(self.hung).map(|r| r.deadline)
    }

    /// Whether a run of the object's handlers goes on at it: one it runs,
    /// a hung one not cancelled yet, a crashed start's zombie, or one that
    /// passed its deadline and has yet to stop.
    pub(super) fn busy(&self) -> bool {
        self.runs().next().is_some()
    }

    /// The runs that go on at it, of its current start or an earlier one.
    fn runs(&self) -> impl Iterator<Item = &Run> {
        [&self.running, &self.hung, &self.zombie, &self.late]
            .into_iter()
            .flatten()
    }

    /// Whether nothing of it is in flight at the API server or in a run.
    pub(super) fn quiet(&self) -> bool {
        self.running.is_none() && self.patch.is_none()
    }

    /// Whether it has a step of its own to take before time may pass the
    /// end of its claim: a watch event or list to take in, a run under
    /// way, a request in flight.
    fn working(&self) -> bool {
        self.listing.is_some()
            || !self.watch.is_empty()
            || self.gone_unseen
            || self.running.is_some()
            || self.patch.is_some()
            || self.renewal.is_some()
            || self.fetch
    }

    /// Whether a write of it is in flight: a patch, or a renewal.
    fn writing(&self) -> bool {
        self.patch.is_some() || self.renewal.is_some()
    }
}

/// A step of one replica, or of the world around it (its watch, its runs,
/// the API server's answers to it, its clock, its crash).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum Step {
    /// The list's answer reaches the operator.
    WatchList,
    /// The watch delivers its oldest event.
    WatchDeliver,
    /// The watch reports that the object is gone.
    WatchGone,
    /// The watch expires (410 Gone); the operator lists again, and the list
    /// may be stale.
    WatchExpire {
        /// Whether the list serves the previous version.
        stale: bool,
    },
    /// The running handler returns.
    HandlerReturn(Outcome<Small>),
    /// The running handler hangs.
    HandlerHang,
    /// The running handler's deadline passes as it returns (time jumps to
    /// the time the engine gives it up, its timer late): its return reaches
    /// the operator after the deadline's tick.
    HandlerOverrun,
    /// A run that passed its deadline returns, its side effect done.
    LateReturn,
    /// A hung run's timer fires (its deadline passes, or its claim is due
    /// for renewal); with long runs ([`super::Faults::long_runs`]), a
    /// running one's too.
    ClockDeadline,
    /// A crashed operator's run returns, its side effect done.
    ZombieReturn,
    /// The API server applies or refuses the patch in flight.
    ApiPatch,
    /// The patch's reply is lost, after the API server applied it or not.
    ApiPatchLost {
        /// Whether it was applied.
        applied: bool,
    },
    /// The API server refuses the patch for good (422).
    ApiPatchRefused,
    /// The API server throttles the patch (429), or fails it after applying
    /// it or not (5xx).
    ApiPatchThrottled {
        /// Whether it was applied.
        applied: bool,
    },
    /// The API server applies or refuses the renewal of a run's claim.
    ApiRenew,
    /// The renewal's reply is lost, after the API server applied it or not.
    ApiRenewLost {
        /// Whether it was applied.
        applied: bool,
    },
    /// The API server answers the consistent read.
    ApiFetch,
    /// The API server throttles or fails the consistent read.
    ApiFetchFailed,
    /// Time passes until the requested wake-up.
    ClockWake,
    /// The operator is told to stop (SIGTERM in a rolling update).
    OperatorStop,
    /// A stopped operator exits and its successor starts and lists the
    /// object.
    OperatorRestart,
    /// The operator crashes and restarts, losing its memory: a run in
    /// flight goes on as a zombie, the patch in flight lands or not, and
    /// the restarted operator lists the object (perhaps stale).
    OperatorCrash {
        /// Whether the patch in flight reached the API server first.
        patch_landed: bool,
        /// Whether the list serves the previous version.
        stale: bool,
    },
    /// The replica dies for good (its node is lost) while another lives:
    /// its runs stop with it, and the patch in flight lands or not.
    ReplicaDie {
        /// Whether the patch in flight reached the API server first.
        patch_landed: bool,
    },
    /// Its clock jumps one tick ahead of the world's.
    ClockSkew,
}

impl Step {
    pub(super) fn is_watch(&self) -> bool {
        matches!(self, Step::WatchList | Step::WatchDeliver | Step::WatchGone)
    }

    pub(super) fn is_handler(&self) -> bool {
        matches!(
            self,
            Step::HandlerReturn(_) | Step::ZombieReturn | Step::LateReturn
        )
    }

    pub(super) fn is_api(&self) -> bool {
        matches!(self, Step::ApiPatch | Step::ApiRenew | Step::ApiFetch)
    }

    pub(super) fn is_clock(&self) -> bool {
        matches!(self, Step::ClockWake | Step::ClockDeadline)
    }

    pub(super) fn is_restart(&self) -> bool {
        matches!(self, Step::OperatorRestart)
    }
}

/// Whether the world's time may pass until `replica`'s clock reads `at`.
/// Not past the end of a live replica's claim on the object while that
/// replica is working: the model's timing assumption, that a claim lasts
/// longer than a watch delivery, an API request or a run, except where a
/// fault (a hang, an overrun, a drifting clock) is budgeted. A run ends
/// before its claim is due for renewal
/// ([`Rule::RenewClaims`](crate::lifecycle::rules::Rule::RenewClaims)),
/// unless the scenario has long runs ([`Faults::long_runs`]): then a run
/// lasts any time, and time passes its holder's renewal only once the
/// holder is woken for it.
///
/// [`Faults::long_runs`]: super::Faults::long_runs
///
/// Without timely schedules ([`Timing`]), time may pass at any moment but
/// never past a run's deadline plus the bound on lateness, by its
/// replica's clock; with them, a run that outlives its start or its
/// deadline (a zombie, a late return) returns before its deadline passes.
fn may_pass(m: &LifecycleModel, w: &World, replica: &Replica, at: u8) -> bool {
    let to = w.now.max(at.saturating_sub(replica.ahead));
    if to > m.budget.timing.horizon() {
        return false;
    }
    let lateness = m.budget.timing.lateness();
    let runs_stop = w.replicas.iter().all(|q| {
        let clock = q.clock(to);
        let stopped = |run: &Run, late: u8| clock <= run.deadline.saturating_add(late);
        match lateness {
            Some(late) => q.runs().all(|run| stopped(run, late)),
            None => [&q.zombie, &q.late]
                .into_iter()
                .flatten()
                .all(|run| stopped(run, 0)),
        }
    });
    if lateness.is_some() || !runs_stop {
        return runs_stop;
    }
    let Some(claim) = w.object.as_ref().and_then(|o| o.claim) else {
        return true;
    };
    let renewal = Small::before(claim.until, m.config.claims.renew_before);
    w.replicas
        .iter()
        .filter(|h| !h.dead && h.engine.incarnation == claim.holder)
        .all(|h| {
            let clock = h.clock(to);
            let claim_ended = h.working() && clock >= claim.until;
            let runs_short = h.running.is_some() && !m.budget.faults.long_runs;
            let renewal_reached = runs_short && clock >= renewal;
            // A run's timer fires on time.
            let woken_late = h.running.is_some_and(|r| clock > r.deadline);
            !(claim_ended || renewal_reached || woken_late)
        })
}

/// Replica `r` lists the object: its watch restarts from the list.
fn relist(w: &mut World, r: usize, stale: bool) {
    let served = if stale {
        w.left.stale_lists -= 1;
        w.previous.clone()
    } else {
        w.object.clone()
    };
    let replica = &mut w.replicas[r];
    replica.watch.clear();
    match (&served, &w.object) {
        (Some(served), Some(object)) if served.version != object.version => {
            replica.watch.push(object.clone());
        }
        _ => {}
    }
    replica.gone_unseen = w.object.is_none();
    replica.listing = served;
}

impl LifecycleModel {
    /// The steps replica `replica` of world `w` may take.
    pub(super) fn steps(&self, w: &World, replica: &Replica, steps: &mut Vec<Step>) {
        let l = &w.left;
        if replica.dead {
            return;
        }
        let others_live = w.replicas.iter().filter(|r| !r.dead).count() > 1;
        if l.deaths > 0 && others_live {
            steps.push(Step::ReplicaDie {
                patch_landed: false,
            });
            if replica.writing() {
                steps.push(Step::ReplicaDie { patch_landed: true });
            }
        }
        if l.skew > 0 {
            steps.push(Step::ClockSkew);
        }
        if let Some(object) = w.object.as_ref().filter(|o| !o.deleting) {
            if l.expiries > 0 && replica.listing.is_none() {
                steps.push(Step::WatchExpire { stale: false });
                if l.stale_lists > 0 && w.previous.is_some() && object.version > 1 {
                    steps.push(Step::WatchExpire { stale: true });
                }
            }
        }
        if replica.listing.is_some() {
            steps.push(Step::WatchList);
        } else if !replica.watch.is_empty() {
            steps.push(Step::WatchDeliver);
        } else if replica.gone_unseen {
            steps.push(Step::WatchGone);
        }
        if replica.running.is_some() {
            steps.push(Step::HandlerReturn(Outcome::Success));
            if l.temporary_errors > 0 {
                steps.push(Step::HandlerReturn(Outcome::Temporary {
                    delay: 1,
                    message: Said::Failed,
                }));
            }
            if l.permanent_errors > 0 {
                steps.push(Step::HandlerReturn(Outcome::Permanent {
                    message: Said::Failed,
                }));
            }
            if l.panics > 0 {
                steps.push(Step::HandlerReturn(Outcome::Panicked {
                    message: Said::Failed,
                }));
            }
            if l.hangs > 0 {
                steps.push(Step::HandlerHang);
            }
        }
        let untimed = self.budget.timing != Timing::Timely;
        if replica.hung.is_some() || (replica.running.is_some() && (l.long_runs || untimed)) {
            steps.push(Step::ClockDeadline);
        }
        if replica.zombie.is_some() {
            steps.push(Step::ZombieReturn);
        }
        let clock = replica.clock(w.now);
        let cut = replica.running.and_then(|r| replica.engine.cuts(r.id));
        if cut.is_some_and(|d| d > clock) && l.overruns > 0 {
            steps.push(Step::HandlerOverrun);
        }
        if replica.late.is_some() {
            steps.push(Step::LateReturn);
        }
        if replica.patch.is_some() {
            steps.push(Step::ApiPatch);
            if l.lost_replies > 0 {
                steps.push(Step::ApiPatchLost { applied: true });
                steps.push(Step::ApiPatchLost { applied: false });
            }
            if l.refusals > 0 {
                steps.push(Step::ApiPatchRefused);
            }
            if l.throttles > 0 {
                steps.push(Step::ApiPatchThrottled { applied: true });
                steps.push(Step::ApiPatchThrottled { applied: false });
            }
        }
        if replica.renewal.is_some() {
            steps.push(Step::ApiRenew);
            if l.lost_replies > 0 {
                steps.push(Step::ApiRenewLost { applied: true });
                steps.push(Step::ApiRenewLost { applied: false });
            }
        }
        if replica.fetch {
            steps.push(Step::ApiFetch);
            if l.throttles > 0 {
                steps.push(Step::ApiFetchFailed);
            }
        }
        if replica
            .wake
            .is_some_and(|at| may_pass(self, w, replica, at))
        {
            steps.push(Step::ClockWake);
        }
        if l.stops > 0 && !replica.engine.stopping {
            steps.push(Step::OperatorStop);
        }
        if replica.engine.stopped() {
            steps.push(Step::OperatorRestart);
        }
        if l.crashes > 0 {
            let stale = [false, true];
            let stale = if l.stale_lists > 0 && w.previous.is_some() {
                &stale[..]
            } else {
                &stale[..1]
            };
            for &stale in stale {
                steps.push(Step::OperatorCrash {
                    patch_landed: false,
                    stale,
                });
                if replica.writing() {
                    steps.push(Step::OperatorCrash {
                        patch_landed: true,
                        stale,
                    });
                }
            }
        }
    }

    /// Replica `r` of `w` takes `step`; `None` if it cannot.
    pub(super) fn step(&self, w: &mut World, r: usize, step: Step) -> Option<()> {
        match step {
            Step::WatchList => {
                let view = w.replicas[r].listing.take()?;
                w.ghost.stale_listed |=
                    w.object.as_ref().is_some_and(|o| o.version != view.version);
                self.feed(w, r, Input::Listed(view));
            }
            Step::WatchDeliver => {
                let watch = &mut w.replicas[r].watch;
                if watch.is_empty() {
                    return None;
                }
                let view = watch.remove(0);
                self.feed(w, r, Input::Observed(view));
            }
            Step::WatchGone => {
                w.replicas[r].gone_unseen = false;
                self.feed(w, r, Input::Gone);
            }
            Step::WatchExpire { stale } => {
                w.left.expiries -= 1;
                w.ghost.expired = true;
                relist(w, r, stale);
            }
            Step::HandlerReturn(outcome) => {
                let run = w.replicas[r].running.take()?;
                match outcome {
                    Outcome::Temporary { .. } => w.left.temporary_errors -= 1,
                    Outcome::Permanent { .. } => w.left.permanent_errors -= 1,
                    Outcome::Panicked { .. } => w.left.panics -= 1,
                    Outcome::Success | Outcome::GivenUp => {}
                }
                let (subs, write) = self.returned(w, run, outcome, true);
                self.feed(
                    w,
                    r,
                    Input::HandlerDone {
                        run: run.id,
                        outcome,
                        subs,
                        write,
                    },
                );
            }
            Step::HandlerHang => {
                let run = w.replicas[r].running.take()?;
                w.left.hangs -= 1;
                // A run that hangs has done all it will: the ghost counts it
                // as failed for good.
                w.ghost
                    .returned(run, self.digest(run.key, run.essence), false);
                w.ghost.pend(self, Pending::failed(run));
                w.replicas[r].hung = Some(run);
            }
            Step::ClockDeadline => {
                let deadline = w.replicas[r].deadline()?;
                let ahead = w.replicas[r].ahead;
                if deadline.saturating_sub(ahead) > self.budget.timing.horizon() {
                    return None;
                }
                w.ghost.deadline_passed |= w.replicas[r].hung.is_some();
                self.advance(w, r, deadline);
            }
            Step::ZombieReturn => {
                let run = w.replicas[r].zombie.take()?;
                w.ghost.zombie_returned = true;
                self.return_unawaited(w, r, run);
            }
            Step::HandlerOverrun => {
                let run = w.replicas[r].running.take()?;
                let cut = w.replicas[r].engine.cuts(run.id)?;
                w.left.overruns -= 1;
                w.replicas[r].late = Some(run);
                self.advance(w, r, cut);
                if !w.replicas[r].engine.awaits(run.id) {
                    // Given up at its deadline: the ghost counts it as
                    // failed for good, as a hung run.
                    w.ghost.pend(self, Pending::failed(run));
                }
            }
            Step::LateReturn => {
                let run = w.replicas[r].late.take()?;
                w.ghost.late_returned = true;
                self.return_unawaited(w, r, run);
            }
            Step::ApiPatch => {
                let patch = w.replicas[r].patch.take()?;
                if self.apply(w, r, &patch) {
                    let version = w.version;
                    self.feed(w, r, Input::PatchApplied { version });
                } else {
                    w.ghost.foreign_refused |= w.ghost.foreign_at.is_some_and(|v| v > patch.expect);
                    self.feed(w, r, Input::PatchConflict);
                }
            }
            // A renewal's answers are a patch's, classed as the runtime
            // classes them.
            Step::ApiRenew => {
                let patch = w.replicas[r].renewal.take()?;
                let answer = if self.apply(w, r, &patch) {
                    Input::PatchApplied { version: w.version }
                } else {
                    Input::PatchConflict
                };
                self.feed(w, r, answer.of_renewal());
            }
            Step::ApiRenewLost { applied } => {
                let patch = w.replicas[r].renewal.take()?;
                w.left.lost_replies -= 1;
                if applied {
                    self.apply(w, r, &patch);
                }
                self.feed(w, r, lost_reply().of_renewal());
            }
            Step::ApiPatchLost { applied } => {
                let patch = w.replicas[r].patch.take()?;
                w.left.lost_replies -= 1;
                if applied {
                    self.apply(w, r, &patch);
                }
                self.feed(w, r, lost_reply());
            }
            Step::ApiPatchRefused => {
                let patch = w.replicas[r].patch.take()?;
                w.left.refusals -= 1;
                w.ghost.refused = Some(patch.expect);
                let message = Said::Failed;
                self.feed(w, r, Input::PatchRefused { message });
            }
            Step::ApiPatchThrottled { applied } => {
                let patch = w.replicas[r].patch.take()?;
                w.left.throttles -= 1;
                w.ghost.throttled = true;
                if applied {
                    self.apply(w, r, &patch);
                }
                let retry_after = None;
                self.feed(w, r, Input::PatchThrottled { retry_after });
            }
            Step::ApiFetchFailed => {
                w.replicas[r].fetch = false;
                w.left.throttles -= 1;
                w.ghost.throttled = true;
                let input = Input::FetchFailed {
                    retry_after: None,
                    message: Said::Failed,
                };
                self.feed(w, r, input);
            }
            Step::ApiFetch => {
                w.replicas[r].fetch = false;
                let input = match &w.object {
                    Some(object) => Input::Fetched(object.clone()),
                    None => Input::Gone,
                };
                self.feed(w, r, input);
            }
            Step::ClockWake => {
                let at = w.replicas[r].wake.take()?;
                self.advance(w, r, at);
            }
            Step::ClockSkew => {
                w.left.skew -= 1;
                w.replicas[r].ahead += 1;
                let at = w.replicas[r].clock(w.now);
                self.advance(w, r, at);
            }
            Step::ReplicaDie { patch_landed } => {
                w.left.deaths -= 1;
                if patch_landed {
                    self.land_writes(w, r);
                }
                w.ghost.crashed(w.replicas[r].engine.incarnation);
                w.ghost.died = true;
                let replica = &mut w.replicas[r];
                *replica = Replica {
                    dead: true,
                    zombie: replica.zombie,
                    late: replica.late,
                    ..Replica::new(replica.engine.incarnation, w.now, None)
                };
            }
            Step::OperatorStop => {
                w.left.stops -= 1;
                self.feed(w, r, Input::Stop);
            }
            Step::OperatorRestart => {
                w.ghost.restarted = true;
                self.restart(w, r);
                relist(w, r, false);
            }
            Step::OperatorCrash {
                patch_landed,
                stale,
            } => {
                w.left.crashes -= 1;
                if patch_landed {
                    self.land_writes(w, r);
                }
                // A run in flight goes on as a zombie (an older one, if
                // none is in flight, goes on still).
                let replica = &mut w.replicas[r];
                replica.zombie = replica.running.take().or(replica.zombie);
                w.ghost.crashed(replica.engine.incarnation);
                self.restart(w, r);
                relist(w, r, stale);
            }
        }
        Some(())
    }

    /// Time passes until replica `r`'s clock reads `at` (if it reads less),
    /// and `r` is told. Under timely schedules, the deadline of every other
    /// replica's run that the new time passes fires too: its timer ends
    /// the run there (otherwise, it fires by a step of its own, late).
    fn advance(&self, w: &mut World, r: usize, at: u8) {
        let ahead = w.replicas[r].ahead;
        w.now = w.now.max(at.saturating_sub(ahead));
        self.tick(w, r);
        if self.budget.timing != Timing::Timely {
            return;
        }
        for q in 0..w.replicas.len() {
            let now = w.replicas[q].clock(w.now);
            if q != r && w.replicas[q].deadline().is_some_and(|d| d <= now) {
                self.tick(w, q);
            }
        }
    }

    /// Replica `r` is told the time by its clock (a run it cancels then,
    /// at its deadline or its claim's end, the ghost counts as failed for
    /// good: see `carry_out`).
    fn tick(&self, w: &mut World, r: usize) {
        let now = w.replicas[r].clock(w.now);
        // The run the engine waits for: when its time is up, and whether
        // its claim could not be renewed by now: a renewal went unapplied,
        // or is due no earlier than now (its timer was late).
        let awaited = match &w.replicas[r].engine.phase {
            Phase::Running {
                run,
                limit,
                renewal,
                ..
            } => Some((
                *run,
                *limit,
                match renewal {
                    Some(Renewal::Sent { .. } | Renewal::Failed { .. }) => true,
                    Some(Renewal::Due { at }) => *at <= now,
                    None => false,
                },
            )),
            _ => None,
        };
        self.feed(w, r, Input::Tick { now });
        if let Some((run, limit, unrenewed)) = awaited {
            let cut = !w.replicas[r].engine.awaits(run);
            let holder = w.replicas[r].engine.incarnation;
            let held = w
                .object
                .as_ref()
                .is_some_and(|o| o.claim.is_some_and(|c| c.holder == holder));
            w.ghost.cut_short |= cut && now < limit && held && !unrenewed;
        }
    }

    /// The writes replica `r` has in flight reach the API server as it
    /// crashes or dies: its patch, then its renewal, each applied if its
    /// precondition holds.
    fn land_writes(&self, w: &mut World, r: usize) {
        let replica = &mut w.replicas[r];
        let writes: Vec<_> = replica
            .patch
            .take()
            .into_iter()
            .chain(replica.renewal.take())
            .collect();
        for patch in &writes {
            self.apply(w, r, patch);
        }
    }

    /// Replica `r` starts again, remembering nothing: its next start's
    /// engine (incarnations of replicas never coincide), nothing in flight
    /// but the runs that outlive it (a zombie, a late return).
    fn restart(&self, w: &mut World, r: usize) {
        let old = &w.replicas[r];
        let incarnation = old.engine.incarnation + u32::from(self.replicas);
        w.replicas[r] = Replica {
            zombie: old.zombie,
            late: old.late,
            ahead: old.ahead,
            ..Replica::new(incarnation, old.clock(w.now), None)
        };
    }
}

/// What a replica is told of a request whose answer was lost.
fn lost_reply() -> Input<Small> {
    Input::PatchUnanswered {
        error: ClientError::NoAnswer,
        message: Said::Failed,
    }
}
