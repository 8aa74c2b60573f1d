//! The lifecycle engine for one object: a sans-I/O state machine.
//!
//! [`Engine::step`] takes what the world says (a version of the object seen
//! by a watch, a list or a read; a run's outcome; a patch's result; the
//! time) and returns what the engine asks of the world (run a handler on an
//! essence by a deadline, send one patch, read the object, wake at a time).
//! Each processing cycle follows kopf's: derive the reason from the
//! diff-base and the essence, keep the finalizer, pick one handler or
//! sub-handler to run, record its outcome, and commit the diff-base when
//! everything active is finished, all in one patch. The [`Rules`] decide
//! what "finished" means and how the engine meets the API server's faults.
//!
//! [`Rules`]: super::rules::Rules

use serde::{Deserialize, Serialize};

use super::domain::Domain;
use super::handlers::{Config, HandlerSpec, On, Reason};
use super::object::{Claim, Final, ObjectView, Progress, Record};
use super::rules::Rule;

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
    /// The last patch's outcome is unknown: it timed out, or the connection
    /// was lost; it may or may not have been applied.
    PatchUnknown,
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
    /// a lost connection).
    FetchFailed {
        /// How long the server asked the engine to wait (`Retry-After`).
        retry_after: Option<D::Duration>,
    },
    /// A version of the object whose `steadfast.dev/` annotations cannot be
    /// read: no handler may run on a guess of its progress.
    Unreadable {
        /// Its resourceVersion.
        version: D::Version,
        /// What is wrong with the annotations, for people.
        message: D::Message,
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
    /// No answer: a timeout, a lost connection.
    NoAnswer,
}

impl<D: Domain> Input<D> {
    /// Whether it is an answer the API server served: a read, or a patch
    /// applied or refused (a conflict included).
    fn served(&self) -> bool {
        matches!(
            self,
            Input::Fetched(_)
                | Input::PatchApplied { .. }
                | Input::PatchConflict
                | Input::PatchRefused { .. }
        )
    }
}

impl<D: Domain> Failure<D> {
    /// The input a patch answered so is: 409 or 404, a conflict; 400, 403
    /// or 422, refused for good; any other status, throttled or not
    /// served; no answer, unknown.
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
            Failure::NoAnswer => Input::PatchUnknown,
        }
    }

    /// The input a read answered so is: it failed, and is asked again
    /// after the server's `Retry-After` when the server throttled it (the
    /// classes of [`Failure::of_patch`]), or after the engine's own wait.
    pub fn of_fetch(self) -> Input<D> {
        let retry_after = match self.of_patch() {
            Input::PatchThrottled { retry_after } => retry_after,
            _ => None,
        };
        Input::FetchFailed { retry_after }
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
    /// The engine gave it up, out of time or attempts, before it ran or at
    /// its deadline: the engine's own verdict, which no run returns. The
    /// record keeps the last failure's message.
    GivenUp,
}

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
}

impl<D: Domain> Patch<D> {
    fn on(expect: D::Version) -> Self {
        Patch {
            expect,
            checked: false,
            records: Vec::new(),
            diff_base: None,
            writes: Vec::new(),
            finalizer: None,
            claim: None,
        }
    }

    /// Whether it changes nothing.
    fn is_empty(&self) -> bool {
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

/// Where the engine stands with the claim on a version of the object
/// ([`Rule::Claims`]).
enum Standing<D: Domain> {
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
        /// When the episode's time is up.
        deadline: D::Time,
    },
    /// Stop this run at once: it is past its deadline and the engine has
    /// given it up. Whatever it returns is ignored.
    Cancel {
        /// The run.
        run: RunId,
    },
    /// Send this patch, then report [`Input::PatchApplied`],
    /// [`Input::PatchConflict`], [`Input::PatchUnknown`],
    /// [`Input::PatchRefused`] or [`Input::PatchThrottled`].
    Patch(Patch<D>),
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

/// The outcome of a run, kept while its patch is in flight so that it can
/// be written onto a newer version if the patch is refused
/// ([`Rule::RebaseOnConflict`]).
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(bound = "")]
pub struct Carried<D: Domain> {
    /// The handler that ran.
    pub handler: D::Handler,
    /// What it depended on.
    pub digest: D::Digest,
    /// How it ended.
    pub outcome: Outcome<D>,
    /// What it declared.
    pub subs: Vec<D::Handler>,
    /// What it wrote.
    pub write: Option<D::Write>,
}

impl<D: Domain> Carried<D> {
    /// A run of `handler` on `digest` given up (out of time or attempts):
    /// a permanent failure that declared and wrote nothing.
    fn given_up(handler: D::Handler, digest: D::Digest) -> Self {
        Carried {
            handler,
            digest,
            outcome: Outcome::GivenUp,
            subs: Vec::new(),
            write: None,
        }
    }
}

/// The cycle being processed: the version it started from, the progress as
/// it will be written, and what the handlers run in it wrote.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(bound = "")]
pub struct Cycle<D: Domain> {
    view: ObjectView<D>,
    work: Progress<D>,
    writes: Vec<D::Write>,
    /// Parents that ran in this cycle (kopf runs a parent's sub-handlers
    /// within the parent's invocation).
    planned: Vec<D::Handler>,
}

/// Where the engine is in its cycle.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(bound = "")]
pub enum Phase<D: Domain> {
    /// Waiting for a version to process, or for a wake-up.
    Idle,
    /// A handler runs; its outcome continues the cycle.
    Running {
        /// The run.
        run: RunId,
        /// The handler that runs.
        handler: D::Handler,
        /// A sub-handler's parent.
        parent: Option<D::Handler>,
        /// When the run is abandoned.
        deadline: D::Time,
        /// The cycle it runs in.
        cycle: Cycle<D>,
    },
    /// A patch is in flight.
    Patching {
        /// The patch.
        patch: Patch<D>,
        /// The outcome of the run it records, if it records one.
        carried: Option<Carried<D>>,
        /// The versions the watch showed since it was sent: one of them
        /// may be the version it makes.
        seen: Vec<ObjectView<D>>,
    },
}

/// Which versions the engine will not process yet.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(bound = "")]
pub enum Hold<D: Domain> {
    /// None: the newest version seen is processed.
    None,
    /// Until the watch shows this version (the engine's own write, or a
    /// version it read): anything else it shows is older.
    Until(D::Version),
    /// Until a consistent read answers: a list showed a version other than
    /// the newest seen, which may be newer or stale.
    Fetching {
        /// The versions the list and the restarted watch showed meanwhile.
        seen: Vec<D::Version>,
        /// Whether the read was asked for (it is asked for once the engine
        /// is idle, so that it reads every write of the engine's).
        asked: bool,
    },
    /// Until the object changes from this version: a patch computed from
    /// it was refused for good, and would be again.
    Refused(D::Version),
}

/// A wait after the API server throttled a request or could not serve it:
/// nothing is asked of it before `until`.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(bound = "")]
pub struct Pause<D: Domain> {
    /// When the engine may ask again.
    pub until: D::Time,
    /// How long this wait is: the next one, if the next answer is the same,
    /// is twice as long (see [`super::handlers::Backoff`]).
    pub wait: D::Duration,
}

/// The engine's memory of one object. It is lost on a restart; everything
/// that must survive one is in the object's annotations.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(bound = "")]
pub struct Engine<D: Domain> {
    /// Where the engine is in its cycle.
    pub phase: Phase<D>,
    /// The newest version seen that is not known to be older than another
    /// seen: the one processed next.
    pub view: Option<ObjectView<D>>,
    /// The version the watch (or a list) showed last, kept or not.
    pub shown: Option<D::Version>,
    /// Which versions are not processed yet.
    pub hold: Hold<D>,
    /// Outcomes of runs whose patches were refused, one per handler, each
    /// to be written onto a version on which its handler's digest is the
    /// one it ran on (an object may change and change back).
    pub carried: Vec<Carried<D>>,
    /// Noticed when the operator started and not handled in full since:
    /// resume handlers apply.
    pub initial: bool,
    /// The wait after a throttled or failed request, until a request is
    /// served.
    pub pause: Option<Pause<D>>,
    /// What was told of the last version whose annotations could not be
    /// read, until one can be read (so that it is told once).
    pub unreadable: Option<D::Message>,
    /// Told to stop: no new run starts, and the engine's claim is released.
    pub stopping: bool,
    /// The replica it belongs to, as its claims name it.
    pub identity: D::Holder,
    /// The time last told.
    pub now: D::Time,
    /// This start of the operator.
    pub incarnation: u32,
    /// Runs started in this incarnation.
    pub runs: u32,
}

/// What a cycle should do next.
enum Next<D: Domain> {
    /// Run this handler, a sub-handler of `parent` if that is set.
    Run {
        handler: D::Handler,
        parent: Option<D::Handler>,
    },
    /// Nothing can run before this time.
    Wait(D::Time),
    /// Every active handler is finished.
    Done,
}

impl<D: Domain> Engine<D> {
    /// The engine of replica `identity` of an operator started at `now`,
    /// its `incarnation`th start (any number not used by an earlier start
    /// of this operator).
    pub fn new(identity: D::Holder, incarnation: u32, now: D::Time) -> Self {
        Engine {
            phase: Phase::Idle,
            view: None,
            shown: None,
            hold: Hold::None,
            carried: Vec::new(),
            initial: true,
            pause: None,
            unreadable: None,
            stopping: false,
            identity,
            now,
            incarnation,
            runs: 0,
        }
    }

    /// The inputs to feed, one by one, for `input` coming in at `now`: a
    /// [`Input::Tick`] first if the engine's time is behind, so that it
    /// decides on the time the input comes in (whether its claim is still
    /// live, among others), not on the last time it was told.
    pub fn timed(&self, now: D::Time, input: Input<D>) -> Vec<Input<D>> {
        if self.now < now && !matches!(input, Input::Tick { .. }) {
            vec![Input::Tick { now }, input]
        } else {
            vec![input]
        }
    }

    /// Feeds one input to the engine and returns what it asks for.
    pub fn step(&mut self, config: &Config<D>, input: Input<D>) -> Vec<Effect<D>> {
        let waits = config.rules.has(Rule::WaitForOwnWrite);
        if input.served() {
            // The API server serves again: the waits after throttled
            // requests are over.
            self.pause = None;
        }
        match input {
            Input::Observed(view) => self.observe(config, view),
            Input::Listed(view) => {
                let newest = self.view.as_ref().map(|v| v.version.clone());
                if let Hold::Fetching { .. } = self.hold {
                    return self.observe(config, view);
                }
                if config.rules.has(Rule::ConfirmLists) && newest.is_some_and(|v| v != view.version)
                {
                    // A list may be served from a cache: a version other
                    // than the newest seen may be older than it, or newer.
                    // Only a consistent read can tell.
                    self.hold = Hold::Fetching {
                        seen: Vec::new(),
                        asked: false,
                    };
                    self.see(view, false);
                    return self.cycle(config);
                }
                self.observe(config, view)
            }
            Input::Fetched(view) => {
                if let Hold::Fetching { seen, .. } = &self.hold {
                    // The watch restarted from a list, or lags: unless it has
                    // shown the version read here, it will, after older ones.
                    let shown =
                        seen.contains(&view.version) || self.shown.as_ref() == Some(&view.version);
                    self.hold = if shown {
                        Hold::None
                    } else {
                        Hold::Until(view.version.clone())
                    };
                }
                self.unreadable = None;
                self.view = Some(view);
                self.cycle(config)
            }
            Input::Gone => {
                self.view = None;
                self.shown = None;
                self.hold = Hold::None;
                self.carried.clear();
                // A run on an object that is gone has nothing left to do;
                // a patch or read in flight is answered, and comes to
                // nothing.
                match std::mem::replace(&mut self.phase, Phase::Idle) {
                    Phase::Running { run, .. } => vec![Effect::Cancel { run }],
                    other => {
                        self.phase = other;
                        Vec::new()
                    }
                }
            }
            Input::HandlerDone {
                run,
                outcome,
                subs,
                write,
            } => match std::mem::replace(&mut self.phase, Phase::Idle) {
                Phase::Running {
                    run: running,
                    handler,
                    parent,
                    cycle,
                    ..
                } if running == run => {
                    let done = Carried {
                        digest: self
                            .spec(config, &handler, parent.as_ref())
                            .digest(&cycle.view.essence),
                        handler,
                        outcome,
                        subs,
                        write,
                    };
                    self.finish_telling(config, parent, cycle, done)
                }
                other => {
                    // Not the run this engine waits for: one it abandoned,
                    // or one from before a restart.
                    self.phase = other;
                    Vec::new()
                }
            },
            Input::PatchApplied { version } => {
                let Phase::Patching { seen, .. } = std::mem::replace(&mut self.phase, Phase::Idle)
                else {
                    return Vec::new();
                };
                // The newest version the watch showed, if it showed the one
                // the patch made (it shows versions in order: whatever came
                // after is newer still, another writer's).
                let made = seen
                    .iter()
                    .any(|v| v.version == version)
                    .then(|| seen.last().cloned())
                    .flatten();
                if self.view.is_none() {
                    // The object went meanwhile: no version of it will come.
                    self.hold = Hold::None;
                    return Vec::new();
                }
                if let Hold::Fetching { .. } = self.hold {
                    // The read is asked for now, after the write.
                } else if let Some(newest) = made {
                    // The watch showed the version the patch made, and
                    // perhaps newer ones: the newest is processed.
                    self.view = Some(newest);
                    self.hold = Hold::None;
                } else if waits {
                    self.hold = Hold::Until(version);
                    return Vec::new();
                } else {
                    self.hold = Hold::None;
                }
                self.cycle(config)
            }
            Input::PatchConflict => self.refused(config),
            // A patch that may or may not have applied is met as a refused
            // one: the object is read, and the run's outcome written again
            // if it is not there.
            Input::PatchUnknown => self.refused(config),
            Input::PatchRefused { message } => self.refused_for_good(config, message),
            Input::PatchThrottled { retry_after } => {
                if !matches!(self.phase, Phase::Patching { .. }) {
                    return Vec::new();
                }
                // Met as a patch that may have applied, once the wait is
                // over: nothing is asked of the server before.
                let mut effects = self.back_off(config, retry_after);
                effects.extend(self.refused(config));
                effects
            }
            Input::FetchFailed { retry_after } => {
                let Hold::Fetching { asked, .. } = &mut self.hold else {
                    return Vec::new();
                };
                // Asked for again once the wait is over.
                *asked = false;
                self.back_off(config, retry_after)
            }
            Input::Unreadable { version, message } => {
                // Nothing of this version can be processed, nor of any
                // version before it; the next readable one is.
                self.shown = Some(version);
                self.view = None;
                self.hold = Hold::None;
                if self.unreadable.as_ref() == Some(&message) {
                    return Vec::new();
                }
                self.unreadable = Some(message.clone());
                vec![Effect::Tell(Verdict::Unreadable { message })]
            }
            Input::Stop => {
                self.stopping = true;
                // An idle engine releases its claim now.
                if self.processable() {
                    self.cycle(config)
                } else {
                    Vec::new()
                }
            }
            Input::Tick { now } => {
                self.now = self.now.max(now);
                match &self.phase {
                    Phase::Running { deadline, .. }
                        if config.rules.has(Rule::RunDeadline) && self.now >= *deadline =>
                    {
                        self.abandon(config)
                    }
                    Phase::Idle => match &self.pause {
                        // Woken early: the wait is asked for again.
                        Some(pause) if self.now < pause.until => vec![Effect::WakeAt(pause.until)],
                        _ if self.processable() || self.read_due() => self.cycle(config),
                        _ => Vec::new(),
                    },
                    Phase::Running { .. } | Phase::Patching { .. } => Vec::new(),
                }
            }
        }
    }

    /// Takes in a version a watch event or a list showed, and processes it
    /// unless it is held. A version held by [`Hold::Until`] or
    /// [`Hold::Fetching`] may be older than one seen: it is not kept.
    fn observe(&mut self, config: &Config<D>, view: ObjectView<D>) -> Vec<Effect<D>> {
        let (keep, process) = match &self.hold {
            Hold::None => (true, true),
            Hold::Until(version) => {
                let awaited = *version == view.version;
                (awaited, awaited)
            }
            Hold::Fetching { .. } => (false, false),
            Hold::Refused(version) => (true, *version != view.version),
        };
        self.see(view, keep);
        if !process {
            return Vec::new();
        }
        self.hold = Hold::None;
        self.cycle(config)
    }

    /// Takes in a version of the object, as the newest seen if `keep`; it
    /// may be the version the patch in flight made.
    fn see(&mut self, view: ObjectView<D>, keep: bool) {
        self.shown = Some(view.version.clone());
        self.unreadable = None;
        if let Phase::Patching { seen, .. } = &mut self.phase {
            seen.push(view.clone());
        }
        if let Hold::Fetching { seen, .. } = &mut self.hold {
            seen.push(view.version.clone());
        }
        if keep {
            self.view = Some(view);
        }
    }

    /// Whether the newest version seen may be processed.
    fn processable(&self) -> bool {
        match &self.hold {
            Hold::None => true,
            Hold::Until(_) | Hold::Fetching { .. } | Hold::Refused(_) => false,
        }
    }

    /// Whether a consistent read is to be asked for, and is not yet.
    fn read_due(&self) -> bool {
        matches!(self.hold, Hold::Fetching { asked: false, .. })
    }

    /// Waits before the next request: `retry_after` if the server said, a
    /// doubling wait otherwise.
    fn back_off(&mut self, config: &Config<D>, retry_after: Option<D::Duration>) -> Vec<Effect<D>> {
        let last = self.pause.as_ref().map(|p| p.wait);
        let wait = config.backoff.next(last, retry_after);
        let until = D::after(self.now, wait);
        self.pause = Some(Pause { until, wait });
        vec![Effect::WakeAt(until)]
    }

    /// The last patch was refused for good: it is told, the run's outcome
    /// is kept to be written onto a newer version, and nothing is processed
    /// until the object changes from the version the patch was computed
    /// from (a newer one seen already is processed now). It is not read
    /// again: a read would show the same version.
    fn refused_for_good(&mut self, config: &Config<D>, message: D::Message) -> Vec<Effect<D>> {
        if !matches!(self.phase, Phase::Patching { .. }) {
            return Vec::new();
        }
        if let Some(expect) = self.unapplied(config) {
            self.hold = Hold::Refused(expect);
        }
        let mut effects = vec![Effect::Tell(Verdict::PatchRefused { message })];
        effects.extend(self.cycle(config));
        effects
    }

    /// The last patch was refused, or its outcome is unknown: a newer
    /// version is processed (read, if the watch has shown none), with the
    /// run's outcome kept to be written again ([`Rule::RebaseOnConflict`]).
    fn refused(&mut self, config: &Config<D>) -> Vec<Effect<D>> {
        if !matches!(self.phase, Phase::Patching { .. }) {
            return Vec::new();
        }
        if self.unapplied(config).is_some() {
            // The object moved on from the newest version seen (or the
            // refusal was spurious): read it rather than wait for the watch.
            self.hold = Hold::Fetching {
                seen: Vec::new(),
                asked: false,
            };
        }
        self.cycle(config)
    }

    /// Ends the patch in flight, which did not apply (or may not have):
    /// its run's outcome is kept to be written onto a newer version
    /// ([`Rule::RebaseOnConflict`]). Returns the version the patch was
    /// computed from if it is still the newest seen and nothing holds the
    /// engine: nothing newer is known to process.
    fn unapplied(&mut self, config: &Config<D>) -> Option<D::Version> {
        let Phase::Patching { patch, carried, .. } =
            std::mem::replace(&mut self.phase, Phase::Idle)
        else {
            return None;
        };
        if let Some(carried) = carried.filter(|_| config.rules.has(Rule::RebaseOnConflict)) {
            self.carried.retain(|c| c.handler != carried.handler);
            self.carried.push(carried);
        }
        let newest = self
            .view
            .as_ref()
            .is_some_and(|v| v.version == patch.expect);
        (self.hold == Hold::None && newest).then_some(patch.expect)
    }

    /// The running handler passed its deadline: it is cancelled, and has
    /// failed for good.
    fn abandon(&mut self, config: &Config<D>) -> Vec<Effect<D>> {
        let Phase::Running {
            run,
            handler,
            parent,
            cycle,
            ..
        } = std::mem::replace(&mut self.phase, Phase::Idle)
        else {
            return Vec::new();
        };
        let digest = self
            .spec(config, &handler, parent.as_ref())
            .digest(&cycle.view.essence);
        let mut effects = vec![Effect::Cancel { run }];
        effects.extend(self.finish_telling(
            config,
            parent,
            cycle,
            Carried::given_up(handler, digest),
        ));
        effects
    }

    /// The registration that governs `handler`: its own, or its parent's.
    fn spec<'c>(
        &self,
        config: &'c Config<D>,
        handler: &D::Handler,
        parent: Option<&D::Handler>,
    ) -> &'c HandlerSpec<D> {
        let id = parent.unwrap_or(handler);
        config
            .handler(id)
            .expect("the engine runs only registered handlers and their sub-handlers")
    }

    /// Starts a cycle on the newest version, if the engine is idle.
    fn cycle(&mut self, config: &Config<D>) -> Vec<Effect<D>> {
        let paused = self.pause.as_ref().is_some_and(|p| self.now < p.until);
        if !matches!(self.phase, Phase::Idle) || paused || matches!(self.hold, Hold::Refused(_)) {
            // Busy, waiting out a throttle, or on a version refused for good.
            return Vec::new();
        }
        if let Hold::Fetching { asked, .. } = &mut self.hold {
            // Asked for while idle, so that it reads every write of ours.
            return if std::mem::replace(asked, true) {
                Vec::new()
            } else {
                vec![Effect::Fetch]
            };
        }
        let Some(view) = self.view.clone() else {
            return Vec::new();
        };
        if view.deleting && !view.finalizer {
            // Deletion is under way and nothing of ours holds it.
            return Vec::new();
        }
        if config.rules.has(Rule::Claims) && !self.holds(&view) {
            // The runs whose outcomes the engine carries ran under its own
            // claim; a version without it was written by another replica
            // since, whose progress supersedes them.
            self.carried.clear();
        }
        if let Standing::Theirs { over } = self.standing(config, &view) {
            // Another replica works on the object: nothing is done before
            // its claim is over.
            return over.map(Effect::WakeAt).into_iter().collect();
        }
        if config.holds_deletion() && !view.finalizer && !view.deleting {
            let mut patch = Patch::on(view.version.clone());
            patch.finalizer = Some(true);
            // The first write of an episode takes the claim with it.
            patch.claim = self.claim(config, &view, false);
            return self.send(config, patch, None);
        }
        let cycle = Cycle {
            work: view.progress.clone(),
            view,
            writes: Vec::new(),
            planned: Vec::new(),
        };
        self.proceed(config, cycle)
    }

    /// Runs the cycle's next handler, or ends the cycle.
    fn proceed(&mut self, config: &Config<D>, mut cycle: Cycle<D>) -> Vec<Effect<D>> {
        let essence = cycle.view.essence.clone();
        match self.next(config, &mut cycle, &essence) {
            Next::Run { handler, parent } => {
                let spec = self.spec(config, &handler, parent.as_ref());
                self.renew_if_stale(config, &mut cycle.work, &handler, &spec.digest(&essence));
                if let Some(at) = self.carried.iter().position(|c| c.handler == handler) {
                    let done = self.carried.remove(at);
                    if done.digest == spec.digest(&essence) {
                        // Its outcome on this very digest is known: written
                        // again instead of running it again.
                        return self.finish(config, parent, cycle, done);
                    }
                }
                if self.stopping {
                    // No new run: what the cycle has (a parent's outcome,
                    // under kopf) is written, the rest left to the next
                    // start.
                    return self.save(config, &cycle, None);
                }
                let record = match cycle.work.get(&handler) {
                    Some(record) => record.clone(),
                    None => {
                        let record = Record::fresh(self.now);
                        cycle.work.set(&handler, Some(record.clone()));
                        record
                    }
                };
                let mut deadline = D::after(record.started, spec.timeout);
                if self.now >= deadline || spec.out_of_attempts(record.retries) {
                    // Out of time or attempts before it could run (kopf
                    // checks both before each attempt; a parent it invokes
                    // again each cycle spends an attempt each time).
                    let given_up = Carried::given_up(handler, spec.digest(&essence));
                    return self.finish_telling(config, parent, cycle, given_up);
                }
                if config.rules.has(Rule::Claims) {
                    match self.standing(config, &cycle.view) {
                        // The run ends with the claim, by the engine's clock.
                        Standing::Mine { until } => deadline = deadline.min(until),
                        // Taken first, with the checked patch of the records
                        // (another's claim is not met here: `cycle` waits on
                        // it, and a cycle's version does not change).
                        Standing::Free | Standing::Theirs { .. } => {
                            return self.save_claiming(config, &cycle);
                        }
                    }
                }
                let run = RunId {
                    incarnation: self.incarnation,
                    seq: self.runs,
                };
                self.runs = self.runs.wrapping_add(1);
                let invoke = Effect::Invoke {
                    run,
                    version: cycle.view.version.clone(),
                    handler: handler.clone(),
                    parent: parent.clone(),
                    essence,
                    old: cycle.view.diff_base.clone(),
                    retry: record.retries,
                    deadline,
                };
                self.phase = Phase::Running {
                    run,
                    handler,
                    parent,
                    deadline,
                    cycle,
                };
                vec![invoke]
            }
            Next::Done => self.commit(config, &cycle, essence, None),
            Next::Wait(at) => {
                let mut effects = self.save(config, &cycle, None);
                effects.push(Effect::WakeAt(at));
                effects
            }
        }
    }

    /// [`Engine::finish`] for an outcome taken in for the first time: the
    /// verdict on it is told ([`Effect::Tell`]) before what follows.
    fn finish_telling(
        &mut self,
        config: &Config<D>,
        parent: Option<D::Handler>,
        cycle: Cycle<D>,
        done: Carried<D>,
    ) -> Vec<Effect<D>> {
        let spec = self.spec(config, &done.handler, parent.as_ref());
        let record = cycle.work.get(&done.handler);
        let attempts = record.map_or(0, |r| r.retries).saturating_add(1);
        let handler = done.handler.clone();
        let verdict = match &done.outcome {
            Outcome::Success => None,
            Outcome::Temporary { delay, message } if !spec.out_of_attempts(attempts) => {
                Some(Verdict::Retrying {
                    handler,
                    message: message.clone(),
                    at: D::after(self.now, *delay),
                })
            }
            Outcome::Temporary { message, .. } | Outcome::Permanent { message } => {
                Some(Verdict::Failed {
                    handler,
                    message: Some(message.clone()),
                })
            }
            Outcome::GivenUp => Some(Verdict::Failed {
                handler,
                message: record.and_then(|r| r.error.clone()),
            }),
        };
        let mut effects = self.finish(config, parent, cycle, done);
        if let Some(verdict) = verdict {
            effects.insert(0, Effect::Tell(verdict));
        }
        effects
    }

    /// Records a run's outcome, then goes on with the cycle: into a
    /// parent's plan (kopf), or to its patch.
    fn finish(
        &mut self,
        config: &Config<D>,
        parent: Option<D::Handler>,
        mut cycle: Cycle<D>,
        mut done: Carried<D>,
    ) -> Vec<Effect<D>> {
        let spec = self.spec(config, &done.handler, parent.as_ref());
        let ran_on = cycle.view.essence.clone();
        // Only a run that succeeded writes (or declares a plan).
        if done.outcome != Outcome::Success {
            done.write = None;
            done.subs.clear();
        }
        let written = match &done.write {
            Some(write) => D::apply(&ran_on, write),
            None => ran_on.clone(),
        };
        // With the rule, the handler's digest is taken after its own write,
        // so that the write does not make it stale.
        let judged = if config.rules.has(Rule::DigestAfterOwnWrite) {
            written.clone()
        } else {
            ran_on.clone()
        };
        let mut record = cycle
            .work
            .get(&done.handler)
            .cloned()
            .unwrap_or_else(|| Record::fresh(self.now));
        record.retries = record.retries.saturating_add(1);
        record.delayed_until = None;
        match &done.outcome {
            Outcome::Success => record.error = None,
            Outcome::Temporary { message, .. } | Outcome::Permanent { message } => {
                record.error = Some(message.clone());
            }
            Outcome::GivenUp => {}
        }
        match done.outcome {
            Outcome::Success if parent.is_none() => {
                // A top-level run declares its plan (a leaf's is empty).
                if config.rules.has(Rule::FreshPlan) {
                    for sub in &record.subs {
                        cycle.work.set(sub, None);
                    }
                    let plans = [&record.subs, &done.subs];
                    self.carried
                        .retain(|c| plans.iter().all(|plan| !plan.contains(&c.handler)));
                }
                record.subs = done.subs.clone();
                record.seen = Some(spec.digest(&judged));
                if done.subs.is_empty() {
                    record.outcome = Some(Final::Success);
                } else {
                    // A parent finishes with its plan.
                    record.outcome = None;
                    cycle.planned.push(done.handler.clone());
                }
            }
            Outcome::Success => {
                record.outcome = Some(Final::Success);
                record.seen = Some(spec.digest(&judged));
            }
            Outcome::Temporary { delay, .. } => {
                if spec.out_of_attempts(record.retries) {
                    record.outcome = Some(Final::Failure);
                    record.seen = Some(spec.digest(&ran_on));
                } else {
                    record.delayed_until = Some(D::after(self.now, delay));
                }
            }
            Outcome::Permanent { .. } | Outcome::GivenUp => {
                record.outcome = Some(Final::Failure);
                record.seen = Some(spec.digest(&ran_on));
            }
        }
        cycle.work.set(&done.handler, Some(record));
        cycle.writes.extend(done.write.clone());
        let next = self.next(config, &mut cycle, &judged);
        let effects = match next {
            Next::Run {
                parent: Some(ref p),
                ..
            } if !config.rules.has(Rule::PlanOnce) && *p == done.handler => {
                // kopf runs one sub-handler of the plan within the parent's
                // invocation.
                return self.proceed(config, cycle);
            }
            Next::Done => self.commit(config, &cycle, judged, Some(done)),
            Next::Run { .. } | Next::Wait(_) => self.save(config, &cycle, Some(done)),
        };
        if effects.is_empty() {
            // Nothing to write: the cycle ends here, and the newest version
            // (which may have changed while the handler ran, a deletion
            // among others) is processed now; no patch will prompt it.
            return self.cycle(config);
        }
        effects
    }

    /// Decides what the cycle does next, settling parents in the cycle's
    /// progress on the way.
    fn next(&self, config: &Config<D>, cycle: &mut Cycle<D>, essence: &D::Essence) -> Next<D> {
        let view = &cycle.view;
        let base = view.diff_base.as_ref();
        let reason = Reason::of(view.deleting, base, essence, self.initial);
        let work = &mut cycle.work;
        // kopf's default lifecycle, `asap`: the fewest retries first, ties
        // in registration order.
        let mut best: Option<(u8, D::Handler, Option<D::Handler>)> = None;
        let mut wake: Option<D::Time> = None;
        for spec in &config.handlers {
            let id = &spec.id;
            let digest = spec.digest(essence);
            // Under [`Rule::DigestFinished`], a handler whose record tells of
            // an episode not finished, or of a run on another digest, is
            // active too: its field may have changed and changed back
            // relative to the diff-base since it ran.
            let unsettled = config.rules.has(Rule::DigestFinished)
                && reason != Reason::Delete
                && spec.on != On::Delete
                && (work
                    .get(id)
                    .is_some_and(|r| r.outcome.is_none() || self.outdated(config, r, id, &digest))
                    || self.ran_since(id, &digest));
            if !spec.matches(reason, base, essence, self.initial) && !unsettled {
                continue;
            }
            if self.finished(config, work, id, &digest) {
                continue;
            }
            let record = work.get(id);
            let plan = record.map(|r| r.subs.clone()).unwrap_or_default();
            let runs_again = match record {
                None => true,
                Some(r) if r.subs.is_empty() => true,
                Some(r) if config.rules.has(Rule::PlanOnce) => {
                    r.seen.as_ref() != Some(&digest) || self.outdated(config, r, id, &digest)
                }
                Some(_) => !cycle.planned.contains(id),
            };
            let mut pending: Vec<(D::Handler, Option<D::Handler>)> = Vec::new();
            if runs_again {
                pending.push((id.clone(), None));
            } else {
                for sub in &plan {
                    if !self.finished(config, work, sub, &digest) {
                        pending.push((sub.clone(), Some(id.clone())));
                    }
                }
                if pending.is_empty() {
                    // Every sub-handler of its plan is done: so is the
                    // parent.
                    let failed = plan
                        .iter()
                        .any(|s| work.get(s).and_then(|r| r.outcome) == Some(Final::Failure));
                    if let Some(mut record) = work.get(id).cloned() {
                        record.outcome = Some(if failed {
                            Final::Failure
                        } else {
                            Final::Success
                        });
                        record.seen = Some(digest);
                        record.delayed_until = None;
                        work.set(id, Some(record));
                    }
                    continue;
                }
            }
            for (handler, parent) in pending {
                // An outdated record counts as the new episode it will be.
                let record = work
                    .get(&handler)
                    .filter(|r| r.seen.is_none() || !self.outdated(config, r, &handler, &digest));
                match record.and_then(|r| r.delayed_until) {
                    Some(due) if due > self.now => {
                        wake = Some(wake.map_or(due, |w| w.min(due)));
                    }
                    _ => {
                        let retries = record.map_or(0, |r| r.retries);
                        if best.as_ref().is_none_or(|(fewest, ..)| retries < *fewest) {
                            best = Some((retries, handler, parent));
                        }
                    }
                }
            }
        }
        match (best, wake) {
            (Some((_, handler, parent)), _) => Next::Run { handler, parent },
            (None, Some(at)) => Next::Wait(at),
            (None, None) => Next::Done,
        }
    }

    /// Whether `id` is finished for `digest`: kopf asks only for a final
    /// outcome; [`Rule::DigestFinished`] also asks that it was reached on
    /// this digest.
    fn finished(
        &self,
        config: &Config<D>,
        work: &Progress<D>,
        id: &D::Handler,
        digest: &D::Digest,
    ) -> bool {
        work.get(id).is_some_and(|record| {
            record.outcome.is_some() && !self.outdated(config, record, id, digest)
        })
    }

    /// Whether `id`'s record tells of a run on another digest than
    /// `digest` ([`Rule::DigestFinished`]), or a refused patch's outcome
    /// tells of a later run on another digest than the record's.
    fn outdated(
        &self,
        config: &Config<D>,
        record: &Record<D>,
        id: &D::Handler,
        digest: &D::Digest,
    ) -> bool {
        let moved = config.rules.has(Rule::DigestFinished)
            && record.seen.as_ref().is_some_and(|seen| seen != digest);
        moved || self.ran_since(id, digest)
    }

    /// Whether a refused patch's outcome tells of a run of `id` on another
    /// digest than `digest`.
    fn ran_since(&self, id: &D::Handler, digest: &D::Digest) -> bool {
        self.carried
            .iter()
            .any(|c| c.handler == *id && c.digest != *digest)
    }

    /// An outdated record that ended (or, for a parent, declared its plan)
    /// starts a new episode: fresh retries and start time (a parent keeps
    /// its plan, so that the plan can be purged).
    fn renew_if_stale(
        &self,
        config: &Config<D>,
        work: &mut Progress<D>,
        id: &D::Handler,
        digest: &D::Digest,
    ) {
        let Some(record) = work.get(id) else {
            return;
        };
        if record.seen.is_some() && self.outdated(config, record, id, digest) {
            let renewed = Record {
                subs: record.subs.clone(),
                ..Record::fresh(self.now)
            };
            work.set(id, Some(renewed));
        }
    }

    /// Ends a cycle in which everything active is finished: the diff-base
    /// becomes `essence`, every record is purged, and a deletion's finalizer
    /// is removed, all in one patch; `done` is the run whose outcome
    /// completed the cycle.
    fn commit(
        &mut self,
        config: &Config<D>,
        cycle: &Cycle<D>,
        essence: D::Essence,
        done: Option<Carried<D>>,
    ) -> Vec<Effect<D>> {
        let view = &cycle.view;
        self.initial = false;
        let mut patch = Patch::on(view.version.clone());
        patch.records = view
            .progress
            .iter()
            .map(|(k, _)| (k.clone(), None))
            .collect();
        patch.finalizer = (view.deleting && view.finalizer).then_some(false);
        patch.diff_base =
            (!view.deleting && view.diff_base.as_ref() != Some(&essence)).then_some(essence);
        patch.writes = cycle.writes.clone();
        patch.claim = self.claim(config, view, true);
        if patch.is_empty() {
            return Vec::new();
        }
        self.send(config, patch, done)
    }

    /// Writes the cycle's changed records and its handlers' writes, if any;
    /// `done` is the run whose outcome the patch records.
    fn save(
        &mut self,
        config: &Config<D>,
        cycle: &Cycle<D>,
        done: Option<Carried<D>>,
    ) -> Vec<Effect<D>> {
        let mut patch = self.progress_patch(cycle);
        // A progress patch renews the claim; a stopping engine's releases it.
        if self.stopping || !patch.is_empty() {
            patch.claim = self.claim(config, &cycle.view, self.stopping);
        }
        if patch.is_empty() {
            return Vec::new();
        }
        self.send(config, patch, done)
    }

    /// Takes the claim before a run, with the cycle's records.
    fn save_claiming(&mut self, config: &Config<D>, cycle: &Cycle<D>) -> Vec<Effect<D>> {
        let mut patch = self.progress_patch(cycle);
        patch.claim = self.claim(config, &cycle.view, false);
        self.send(config, patch, None)
    }

    /// The patch of the cycle's changed records and its handlers' writes.
    fn progress_patch(&self, cycle: &Cycle<D>) -> Patch<D> {
        let before = &cycle.view.progress;
        let mut patch = Patch::on(cycle.view.version.clone());
        patch.records = cycle
            .work
            .iter()
            .filter(|(k, r)| before.get(k) != Some(r))
            .map(|(k, r)| (k.clone(), Some(r.clone())))
            .collect();
        patch.records.extend(
            before
                .iter()
                .filter(|(k, _)| cycle.work.get(k).is_none())
                .map(|(k, _)| (k.clone(), None)),
        );
        patch.writes = cycle.writes.clone();
        patch
    }

    /// Whether `view`'s claim, live or not, is the engine's own.
    fn holds(&self, view: &ObjectView<D>) -> bool {
        view.claim
            .as_ref()
            .is_some_and(|claim| claim.holder == self.identity)
    }

    /// Where the engine stands with the claim on `view`.
    fn standing(&self, config: &Config<D>, view: &ObjectView<D>) -> Standing<D> {
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
    /// `release` none (if there is one to release).
    fn claim(
        &self,
        config: &Config<D>,
        view: &ObjectView<D>,
        release: bool,
    ) -> Option<ClaimChange<D>> {
        if !config.rules.has(Rule::Claims) {
            return None;
        }
        if release {
            return view.claim.as_ref().map(|_| ClaimChange::Release);
        }
        Some(ClaimChange::Set(Claim {
            holder: self.identity.clone(),
            until: D::after(self.now, config.claims.duration),
        }))
    }

    /// Sends `patch`, with the precondition if the rules ask for it.
    fn send(
        &mut self,
        config: &Config<D>,
        mut patch: Patch<D>,
        carried: Option<Carried<D>>,
    ) -> Vec<Effect<D>> {
        patch.checked = config.rules.has(Rule::CheckedPatches);
        self.phase = Phase::Patching {
            patch: patch.clone(),
            carried,
            seen: Vec::new(),
        };
        vec![Effect::Patch(patch)]
    }
}

impl<D: Domain> Engine<D> {
    /// Every resourceVersion the engine holds (so that a driver keeps the
    /// versions of the object it may be asked to act on, and no more).
    pub fn versions(&self) -> Vec<D::Version> {
        let mut versions = Vec::new();
        self.clone()
            .visit_versions(&mut |v| versions.push(v.clone()));
        versions
    }

    /// Whether a stopping engine is done: nothing in flight (no run, patch
    /// or read), no version of its own write or of a read still to come
    /// from the watch, and no wait after a throttled request to sit out.
    /// Every cycle it started has written what it could (an outcome a
    /// refused patch carried is written, or moot on a newer digest), so the
    /// operator may exit with no run to repeat at its next start.
    pub fn stopped(&self) -> bool {
        let settled = match &self.hold {
            Hold::None | Hold::Refused(_) => true,
            Hold::Until(_) | Hold::Fetching { .. } => false,
        };
        let waiting = self.pause.as_ref().is_some_and(|p| self.now < p.until);
        // Its claim is released, unless the API server refused that for good.
        let claimed = self.view.as_ref().is_some_and(|v| self.holds(v))
            && !matches!(self.hold, Hold::Refused(_));
        self.stopping && matches!(self.phase, Phase::Idle) && settled && !waiting && !claimed
    }

    /// Whether the engine waits for `run` to return.
    pub fn awaits(&self, run: RunId) -> bool {
        matches!(self.phase, Phase::Running { run: running, .. } if running == run)
    }

    /// Calls `f` on every resourceVersion the engine holds (for a model
    /// that renames versions).
    pub fn visit_versions(&mut self, f: &mut impl FnMut(&mut D::Version)) {
        if let Some(view) = &mut self.view {
            f(&mut view.version);
        }
        if let Some(version) = &mut self.shown {
            f(version);
        }
        match &mut self.hold {
            Hold::Until(version) | Hold::Refused(version) => f(version),
            Hold::Fetching { seen, .. } => seen.iter_mut().for_each(&mut *f),
            Hold::None => {}
        }
        match &mut self.phase {
            Phase::Running { cycle, .. } => f(&mut cycle.view.version),
            Phase::Patching { patch, seen, .. } => {
                f(&mut patch.expect);
                seen.iter_mut().for_each(|v| f(&mut v.version));
            }
            Phase::Idle => {}
        }
    }

    /// Calls `f` on the name of the run the engine waits for (for a model
    /// that renames runs).
    pub fn visit_runs(&mut self, f: &mut impl FnMut(&mut RunId)) {
        if let Phase::Running { run, .. } = &mut self.phase {
            f(run);
        }
    }
}
