//! What the world tells the engine: a version of the object, a run's
//! return, a request's answer (classified here, not by the driver), the
//! time.

use serde::{Deserialize, Serialize};

use crate::lifecycle::domain::Domain;
use crate::lifecycle::handlers::Backoff;
use crate::lifecycle::object::ObjectView;

/// Names one run of a handler: the engine's incarnation (a number the
/// driver gives each start of the operator) and the run's sequence number
/// in it. A completion of another run (one that timed out, or a run of an
/// earlier incarnation) is recognised and ignored.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub struct RunId {
    /// The operator start that made the run.
    pub incarnation: u32,
    /// The run's number within it.
    pub seq: u32,
}

/// What the world tells the engine.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(bound = "")]
pub enum Input<D: Domain> {
    /// A watch event showed this version of the object.
    Observed(ObjectView<D>),
    /// A list (at start, or after the watch expired with 410 Gone) showed
    /// this version; a list may be served from a cache, so it may be older
    /// than a version seen before.
    Listed(ObjectView<D>),
    /// The answer to [`Effect::Fetch`]: a consistent read, no older than
    /// any version written before it was asked for.
    Fetched(ObjectView<D>),
    /// The object no longer exists.
    Gone,
    /// A list (the watch's, restarted) did not show the object: it may be
    /// gone, deleted while the watch was away, or the list may be older
    /// than the object (served from a cache). A consistent read, once the
    /// run in flight has returned and been written, tells which.
    Unlisted,
    /// A run has returned.
    HandlerDone {
        /// Which run.
        run: RunId,
        /// How it ended.
        outcome: Outcome<D>,
        /// The sub-handlers it declared (a parent's plan); empty for a leaf.
        /// Taken only from a run that succeeded.
        subs: Vec<D::Handler>,
        /// Its own write to the object, to go in the engine's patch. Taken
        /// only from a run that succeeded.
        write: Option<D::Write>,
    },
    /// The last patch was applied and made this resourceVersion.
    PatchApplied {
        /// The object's new resourceVersion.
        version: D::Version,
    },
    /// The last patch was refused: the resourceVersion it was conditioned
    /// on is not the object's (409), or the object is gone (404).
    PatchConflict,
    /// The last patch got no answer the client could read: it was not sent
    /// (no connection, a TLS handshake or credentials that failed), its
    /// answer was lost (a timeout, a connection lost), or its answer could
    /// not be decoded. It may or may not have been applied.
    PatchUnanswered {
        /// Which of these, as the client tells it.
        error: ClientError,
        /// What the client said, for people.
        message: D::Message,
    },
    /// The last patch was refused for good (400, 403, 422): as computed, it
    /// will never apply (annotations over the API server's limit, a
    /// finalizer added to an object being deleted, a webhook's veto, a
    /// missing permission).
    PatchRefused {
        /// What the API server said.
        message: D::Message,
    },
    /// The API server throttled the last patch or could not serve it (429,
    /// 5xx); it may or may not have been applied.
    PatchThrottled {
        /// How long the server asked the engine to wait (`Retry-After`).
        retry_after: Option<D::Duration>,
    },
    /// The consistent read asked for by [`Effect::Fetch`] failed (429, 5xx,
    /// a lost connection, an answer that could not be decoded).
    FetchFailed {
        /// How long the server asked the engine to wait (`Retry-After`).
        retry_after: Option<D::Duration>,
        /// What the server or the client said, for people.
        message: D::Message,
    },
    /// A version of the object whose `steadfast.dev/` annotations cannot be
    /// read: no handler may run on a guess of its progress.
    Unreadable {
        /// Its resourceVersion.
        version: D::Version,
        /// What is wrong with the annotations, for people.
        message: D::Message,
    },
    /// The renewal of a running run's claim ([`Effect::Renew`]) applied
    /// and made this resourceVersion.
    ///
    /// [`Effect::Renew`]: super::Effect::Renew
    Renewed {
        /// The object's new resourceVersion.
        version: D::Version,
    },
    /// The renewal of a running run's claim did not apply, or may not have
    /// (a conflict, a refusal, a throttle, no answer): it is sent again, at
    /// once on a newer version, else after a wait that doubles with each
    /// failure in a row, or the one the server asked for.
    RenewFailed {
        /// How long the server asked the engine to wait (`Retry-After`).
        retry_after: Option<D::Duration>,
    },
    /// A run the engine cancelled has stopped (its task ended without
    /// returning): its claim may be released
    /// ([`Rule::KeepClaimPastCancel`](crate::lifecycle::rules::Rule::KeepClaimPastCancel)).
    /// A cancelled run that returns says so too.
    Stopped {
        /// Which run.
        run: RunId,
    },
    /// The operator is stopping (a graceful shutdown, a rolling update):
    /// no new run starts; a run in flight returns and its outcome is
    /// written, as is any outcome owed. See [`Engine::stopped`].
    Stop,
    /// The time is now `now` (a requested wake-up, a run's deadline, or any
    /// later time).
    Tick {
        /// The current time.
        now: D::Time,
    },
}

/// A request the API server did not serve, as a driver reads it off the
/// wire. Which answer means what to the engine is decided here, by
/// [`Failure::of_patch`] and [`Failure::of_fetch`], not by the driver.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(bound = "")]
pub enum Failure<D: Domain> {
    /// An error status.
    Status {
        /// Its HTTP code.
        code: u16,
        /// What the server said, for people.
        message: D::Message,
        /// How long the server asked the client to wait (`Retry-After`).
        retry_after: Option<D::Duration>,
    },
    /// No answer the client could read.
    Client {
        /// Why, as the client tells it.
        error: ClientError,
        /// What the client said, for people.
        message: D::Message,
    },
}

/// Why a request got no answer the client could read. Each is met the same
/// way (the request may have been applied: the engine waits its backoff and
/// reads); the kind is kept in the trace, and in what people are told.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum ClientError {
    /// The request was not sent: no connection could be made, the TLS
    /// handshake failed, the credentials could not be had, or the request
    /// could not be built.
    Unsent,
    /// The request was sent and its answer was lost: a timeout, a
    /// connection closed or reset.
    NoAnswer,
    /// An answer came and could not be decoded: not the API's JSON, not the
    /// object's type.
    Undecodable,
}

impl<D: Domain> Input<D> {
    /// Whether it is an answer the API server served: a read, or a patch
    /// applied or refused (a conflict included).
    pub(super) fn served(&self) -> bool {
        matches!(
            self,
            Input::Fetched(_)
                | Input::PatchApplied { .. }
                | Input::PatchConflict
                | Input::PatchRefused { .. }
        )
    }
}

impl<D: Domain> Input<D> {
    /// The input a patch's answer is when the patch was a renewal of a
    /// running run's claim ([`Effect::Renew`](super::Effect::Renew)):
    /// [`Input::Renewed`] if it applied, [`Input::RenewFailed`] otherwise
    /// (whatever the reason, the renewal is sent again).
    pub fn of_renewal(self) -> Input<D> {
        match self {
            Input::PatchApplied { version } => Input::Renewed { version },
            Input::PatchThrottled { retry_after } => Input::RenewFailed { retry_after },
            _ => Input::RenewFailed { retry_after: None },
        }
    }
}

impl<D: Domain> Failure<D> {
    /// The input a patch answered so is: 409 or 404, a conflict; 400, 403
    /// or 422, refused for good; any other status, throttled or not
    /// served; no answer the client could read, unanswered.
    pub fn of_patch(self) -> Input<D> {
        match self {
            Failure::Status {
                code: 404 | 409, ..
            } => Input::PatchConflict,
            Failure::Status {
                code: 400 | 403 | 422,
                message,
                ..
            } => Input::PatchRefused { message },
            Failure::Status { retry_after, .. } => Input::PatchThrottled { retry_after },
            Failure::Client { error, message } => Input::PatchUnanswered { error, message },
        }
    }

    /// The input a read answered so is: it failed, and is asked again
    /// after the server's `Retry-After` when the server throttled it (the
    /// classes of [`Failure::of_patch`]), or after the engine's own wait.
    pub fn of_fetch(self) -> Input<D> {
        let (Failure::Status { message, .. } | Failure::Client { message, .. }) = &self;
        let message = message.clone();
        let retry_after = match self.of_patch() {
            Input::PatchThrottled { retry_after } => retry_after,
            _ => None,
        };
        Input::FetchFailed {
            retry_after,
            message,
        }
    }
}

/// How one run of a handler ended.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(bound = "")]
pub enum Outcome<D: Domain> {
    /// It did its work.
    Success,
    /// It failed, and may be retried after `delay`.
    Temporary {
        /// How long to wait before the next attempt.
        delay: D::Duration,
        /// What it said, kept in its record.
        message: D::Message,
    },
    /// It failed for good.
    Permanent {
        /// What it said, kept in its record.
        message: D::Message,
    },
    /// Its code panicked (or failed in a way it did not classify): a
    /// temporary failure, retried while attempts remain. It said nothing
    /// of how long to wait, so the engine waits its own
    /// [`Backoff`], doubled with each
    /// attempt of the episode.
    Panicked {
        /// What the panic said, kept in its record.
        message: D::Message,
    },
    /// The engine gave it up, out of time or attempts, before it ran or at
    /// its deadline: the engine's own verdict, which no run returns. The
    /// record keeps the last failure's message.
    GivenUp,
}

impl<D: Domain> Outcome<D> {
    /// What a failed run said; `None` for a success, or a run given up.
    pub fn message(&self) -> Option<&D::Message> {
        match self {
            Outcome::Temporary { message, .. }
            | Outcome::Permanent { message }
            | Outcome::Panicked { message } => Some(message),
            Outcome::Success | Outcome::GivenUp => None,
        }
    }

    /// How long to wait before the next attempt after a run that failed
    /// for now, `earlier` attempts of the episode having failed before it:
    /// the delay it asked for, or after a panic the engine's `backoff`
    /// ([`Backoff::after_attempts`]). `None` if it did not fail for now.
    pub fn retry_wait(&self, backoff: &Backoff<D>, earlier: u8) -> Option<D::Duration> {
        match self {
            Outcome::Temporary { delay, .. } => Some(*delay),
            Outcome::Panicked { .. } => Some(backoff.after_attempts(earlier)),
            Outcome::Success | Outcome::Permanent { .. } | Outcome::GivenUp => None,
        }
    }
}
