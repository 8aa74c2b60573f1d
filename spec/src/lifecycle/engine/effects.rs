//! What the engine asks of the world: runs, cancellations, one patch at a
//! time, reads, wake-ups, and verdicts for people.

use serde::{Deserialize, Serialize};

use super::inputs::RunId;
use crate::lifecycle::domain::Domain;
use crate::lifecycle::object::{Claim, Record};

/// One patch of the object, all or nothing.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(bound = "")]
pub struct Patch<D: Domain> {
    /// The resourceVersion the patch was computed from.
    pub expect: D::Version,
    /// Whether the patch carries `expect` as a precondition, so that the
    /// API server refuses it (409) if the object has moved on. kopf's merge
    /// patches carry none and apply to whatever the object has become.
    pub checked: bool,
    /// Progress records to set, or with `None` to remove.
    pub records: Vec<(D::Handler, Option<Record<D>>)>,
    /// A new diff-base, when the object is handled in full.
    pub diff_base: Option<D::Essence>,
    /// The handlers' own writes, in the order they ran.
    pub writes: Vec<D::Write>,
    /// Whether to add (`true`) or remove (`false`) the finalizer.
    pub finalizer: Option<bool>,
    /// What it does to the claim on the object ([`Rule::Claims`]); `None`
    /// leaves the claim as it is.
    pub claim: Option<ClaimChange<D>>,
    /// Whether it goes through the status subresource: it then holds the
    /// handlers' status writes alone ([`Config::status_subresource`]).
    ///
    /// [`Config::status_subresource`]: crate::lifecycle::handlers::Config::status_subresource
    #[serde(default)]
    pub to_status: bool,
}

impl<D: Domain> Patch<D> {
    pub(super) fn on(expect: D::Version) -> Self {
        Patch {
            expect,
            checked: false,
            records: Vec::new(),
            diff_base: None,
            writes: Vec::new(),
            finalizer: None,
            claim: None,
            to_status: false,
        }
    }

    /// The patch split for a status subresource: the handlers' status
    /// writes alone, to go through it, and the rest (`None` if empty); or
    /// the patch as it is, if it writes no status.
    pub(super) fn split_status(mut self) -> (Patch<D>, Option<Patch<D>>) {
        let (status, rest): (Vec<_>, Vec<_>) = self.writes.iter().map(D::split_status).unzip();
        let status: Vec<_> = status.into_iter().flatten().collect();
        if status.is_empty() {
            return (self, None);
        }
        self.writes = rest.into_iter().flatten().collect();
        let first = Patch {
            checked: self.checked,
            writes: status,
            to_status: true,
            ..Patch::on(self.expect.clone())
        };
        (first, (!self.is_empty()).then_some(self))
    }

    /// Whether it changes nothing.
    pub(super) fn is_empty(&self) -> bool {
        self.records.is_empty()
            && self.writes.is_empty()
            && self.finalizer.is_none()
            && self.diff_base.is_none()
            && self.claim.is_none()
    }
}

/// What a patch does to the claim on the object.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(bound = "")]
pub enum ClaimChange<D: Domain> {
    /// Takes or renews it: the engine's own, until a new end.
    Set(Claim<D>),
    /// Releases it: no replica works on the object.
    Release,
}

impl<D: Domain> ClaimChange<D> {
    /// The claim on the object once the patch is applied.
    pub fn after(&self) -> Option<Claim<D>> {
        match self {
            ClaimChange::Set(claim) => Some(claim.clone()),
            ClaimChange::Release => None,
        }
    }
}

/// What the engine asks of the world.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(bound = "")]
pub enum Effect<D: Domain> {
    /// Run this handler or sub-handler on this essence, then report its
    /// outcome with [`Input::HandlerDone`] naming `run`; report
    /// [`Input::Tick`] at `deadline` if it has not returned by then.
    Invoke {
        /// The run's name.
        run: RunId,
        /// The version of the object the run acts on: the handler is shown
        /// this version, not whichever the watch showed last.
        version: D::Version,
        /// Which handler or sub-handler.
        handler: D::Handler,
        /// A sub-handler's parent, whose run declared it.
        parent: Option<D::Handler>,
        /// What it must see.
        essence: D::Essence,
        /// The essence last handled in full (the "old" of its diff).
        old: Option<D::Essence>,
        /// Attempts before this one in the episode.
        retry: u8,
        /// The fencing epoch of the claim it runs under ([`Claim::epoch`];
        /// 0 without claims).
        ///
        /// [`Claim::epoch`]: crate::lifecycle::object::Claim::epoch
        epoch: u32,
        /// When the engine is to be told the time if the run has not
        /// returned: the episode's end, the claim's, or (under
        /// [`Rule::RenewClaims`]) when the claim is due for renewal; moved
        /// by [`Effect::Remind`].
        ///
        /// [`Rule::RenewClaims`]: crate::lifecycle::rules::Rule::RenewClaims
        deadline: D::Time,
    },
    /// Stop this run at once: it is past its deadline and the engine has
    /// given it up. Whatever it returns is ignored.
    Cancel {
        /// The run.
        run: RunId,
    },
    /// Send this patch, then report [`Input::PatchApplied`],
    /// [`Input::PatchConflict`], [`Input::PatchUnanswered`],
    /// [`Input::PatchRefused`] or [`Input::PatchThrottled`].
    Patch(Patch<D>),
    /// Report [`Input::Tick`](super::Input::Tick) at `at`, instead of the
    /// time said before, if `run` has not returned by then: the run's
    /// timer, which goes with it (so that no wake-up outlives the run).
    Remind {
        /// The run.
        run: RunId,
        /// When.
        at: D::Time,
    },
    /// Send this patch of the claim alone, renewing the claim of the run
    /// under way ([`Rule::RenewClaims`]), then report
    /// [`Input::Renewed`](super::Input::Renewed) if it applied and
    /// [`Input::RenewFailed`](super::Input::RenewFailed) otherwise. It may
    /// be in flight with a progress patch sent once the run returns.
    ///
    /// [`Rule::RenewClaims`]: crate::lifecycle::rules::Rule::RenewClaims
    Renew(Patch<D>),
    /// Set the mark that says, for people, that the object's annotations
    /// cannot be read (`message`, what is wrong with them), or clear it
    /// (`None`), by a patch of the mark alone checked against `expect`, so
    /// that it never lands on another version. Nothing answers it: a mark
    /// that did not land is set or cleared on the next version that needs
    /// it. It is the one write made without a claim, and it carries
    /// nothing the engine acts on.
    Mark {
        /// The version the mark is about.
        expect: D::Version,
        /// What is wrong, or `None` to clear the mark.
        message: Option<D::Message>,
    },
    /// Read the object consistently (a GET without a resourceVersion) and
    /// report [`Input::Fetched`], [`Input::Gone`] or [`Input::FetchFailed`].
    Fetch,
    /// Report [`Input::Tick`] at this time: a delayed handler is due, or a
    /// wait after a throttled request is over.
    WakeAt(D::Time),
    /// Tell people (a Kubernetes Event, a log line) what the engine
    /// concluded of a run; nothing answers it. Told once per run, when its
    /// outcome is first taken in (not when a carried outcome is written
    /// again).
    Tell(Verdict<D>),
}

/// What the engine concluded of one run, for people.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(bound = "")]
pub enum Verdict<D: Domain> {
    /// The run failed; the handler is tried again at `at`.
    Retrying {
        /// Which handler or sub-handler.
        handler: D::Handler,
        /// What the run said.
        message: D::Message,
        /// When the next attempt is due.
        at: D::Time,
    },
    /// The handler failed for good in this episode (a permanent error, its
    /// last attempt, or out of time).
    Failed {
        /// Which handler or sub-handler.
        handler: D::Handler,
        /// What its last failed run said; `None` if it was given up before
        /// any run failed.
        message: Option<D::Message>,
    },
    /// The API server refused a patch for good; nothing of the object is
    /// processed until it changes.
    PatchRefused {
        /// What the server said.
        message: D::Message,
    },
    /// The object's `steadfast.dev/` annotations cannot be read; nothing of
    /// it is processed until a version that can be read.
    Unreadable {
        /// What is wrong with them.
        message: D::Message,
    },
}
