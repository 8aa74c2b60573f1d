//! One object's engine, driven: watch events, run results, patch results,
//! reads and timers become inputs; invocations, cancellations, patches,
//! reads and wake-ups are carried out. The driver decides nothing about the
//! protocol: an API answer becomes the input of its class (conflict,
//! refused for good, throttled, unknown), and the engine decides what
//! follows. It keeps only what it needs to carry effects out (the versions
//! of the object the engine may act on, to hand to handlers; the newest
//! one's finalizers; the runs in flight, to cancel them).

use std::collections::HashMap;
use std::panic::AssertUnwindSafe;
use std::path::PathBuf;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use futures::FutureExt;
use k8s_openapi::api::core::v1::ObjectReference;
use kube::api::{Api, Patch as KubePatch, PatchParams};
use kube::Resource;
use serde::de::DeserializeOwned;
use serde::Serialize;
use serde_json::Value;
use steadfast_spec::lifecycle::named::{canonical, Named};
use steadfast_spec::lifecycle::trace::EngineHeader;
use steadfast_spec::lifecycle::{
    Config, Effect, Engine, Failure, Input, ObjectView, Outcome, RunId, Verdict,
};
use steadfast_spec::trace::{Header, Record};
use tokio::sync::{mpsc, watch};
use tokio::task::{AbortHandle, JoinSet};

use super::client::{client_error, words, Refused};
use super::events::{bounded, Events, Notice};
use super::handler::{Context, Handler, HandlerError, RunOutput};
use super::metrics::Metrics;
use super::object::{mark_patch, merge_patch_of, seen, unreadable};
pub(crate) use crate::clock::now_ms;
use crate::trace::Recorder;

/// What the operator's watch says of one object.
pub(crate) enum Event<K> {
    /// A watch event.
    Observed(K),
    /// A list's item.
    Listed(K),
    /// It is gone.
    Gone,
    /// A list (the watch's, restarted) did not show it.
    Unlisted,
    /// The operator is stopping gracefully.
    Stop,
}

/// What a task of the driver's comes back with.
enum Done<K> {
    /// An input for the engine: a run's or a patch's result.
    Input(Input<Named>),
    /// The object as a consistent read found it (`None`: it is gone).
    Read(Option<K>),
}

/// Everything the drivers of one operator share.
pub(crate) struct Shared<K> {
    pub(crate) api: Api<K>,
    pub(crate) config: Config<Named>,
    pub(crate) handlers: HashMap<String, Handler<K>>,
    pub(crate) incarnation: u32,
    /// The replica's name in its claims.
    pub(crate) identity: String,
    pub(crate) traces: Option<PathBuf>,
    /// Where handler failures and refused patches are told, if anywhere.
    pub(crate) events: Option<Events>,
    pub(crate) metrics: Metrics,
}

/// A run in flight, and how to stop it.
struct Running {
    run: RunId,
    /// When the engine is to be told that its time is up.
    deadline: u64,
    /// Its task.
    task: AbortHandle,
    /// What its context's [`Context::cancelled`] waits on.
    cancel: watch::Sender<bool>,
}

/// A request the API server did not serve, as the engine is told of it:
/// the code, the server's words and its `Retry-After` (ms: the header's,
/// read by [`client`](super::client), else the `Status`'s); or the
/// client's own error, of the kind it is, in its own words.
fn failure(error: &kube::Error) -> Failure<Named> {
    let refused = match error {
        kube::Error::Service(service) => service.downcast_ref::<Refused>(),
        _ => None,
    };
    let (status, header) = match (error, refused) {
        (_, Some(refused)) => (&refused.status, Some(refused.retry_after_ms)),
        (kube::Error::Api(status), None) => (status, None),
        _ => {
            return Failure::Client {
                error: client_error(error),
                message: bounded(&words(error)),
            }
        }
    };
    let said = status
        .details
        .as_ref()
        .map(|d| d.retry_after_seconds)
        .filter(|&seconds| seconds > 0)
        .map(|seconds| u64::from(seconds) * 1000);
    Failure::Status {
        code: status.code,
        message: bounded(&format!(
            "{} {}: {}",
            status.code, status.reason, status.message
        )),
        retry_after: header.filter(|&ms| ms > 0).or(said),
    }
}

/// One object's driver.
pub(crate) struct Driver<K> {
    shared: Arc<Shared<K>>,
    name: String,
    engine: Engine<Named>,
    /// The newest object seen, typed (what Events are about).
    latest: Option<Arc<K>>,
    /// Every version the engine holds, typed: a run is shown the one it
    /// acts on.
    versions: Vec<(String, Arc<K>)>,
    /// The finalizers on the newest object seen.
    finalizers: Vec<String>,
    /// The uid of the object it serves: a read that finds another object
    /// of the name finds this one gone.
    uid: Option<String>,
    /// Whether the object is gone: the driver ends once nothing of it is
    /// in flight.
    gone: bool,
    wake: Option<u64>,
    runs: Vec<Running>,
    /// Runs cancelled whose tasks have not ended yet: the engine is told
    /// when each does ([`Input::Stopped`]).
    cancelled: Vec<(tokio::task::Id, RunId)>,
    recorder: Option<Recorder>,
    tasks: JoinSet<Done<K>>,
}

impl<K> Driver<K>
where
    K: Resource + Clone + Serialize + DeserializeOwned + std::fmt::Debug + Send + Sync + 'static,
    K::DynamicType: Default,
{
    /// The driver of object `name` (`namespace/name` in traces).
    pub(crate) fn new(shared: Arc<Shared<K>>, name: String, key: &str) -> Self {
        let started = now_ms();
        let recorder = shared.traces.as_ref().and_then(|dir| {
            // One file per engine: per object, operator start and (for an
            // object deleted and made again) driver start.
            let file = format!(
                "{}.{}.{started}.jsonl",
                key.replace('/', "_"),
                shared.incarnation
            );
            let header = Header::Engine(EngineHeader {
                object: key.to_owned(),
                identity: shared.identity.clone(),
                incarnation: shared.incarnation,
                started,
                config: shared.config.clone(),
            });
            Recorder::create(&dir.join(file), &header)
                .map_err(|error| tracing::error!(%error, "no trace for {key}"))
                .ok()
        });
        Driver {
            engine: Engine::new(shared.identity.clone(), shared.incarnation, started),
            shared,
            name,
            latest: None,
            versions: Vec::new(),
            finalizers: Vec::new(),
            uid: None,
            gone: false,
            wake: None,
            runs: Vec::new(),
            cancelled: Vec::new(),
            recorder,
            tasks: JoinSet::new(),
        }
    }

    /// Runs until the object is gone with nothing of it in flight, the
    /// engine has stopped (a graceful stop), or the operator is gone
    /// (`events` closes); returns `key`, the object's.
    pub(crate) async fn run(
        mut self,
        key: String,
        mut events: mpsc::UnboundedReceiver<Event<K>>,
    ) -> String {
        loop {
            let next_timer = self.next_timer();
            let input = tokio::select! {
                event = events.recv() => match event {
                    Some(event) => match self.take_in(event) {
                        Some(input) => input,
                        None => continue,
                    },
                    None => return key,
                },
                Some(done) = self.tasks.join_next_with_id(), if !self.tasks.is_empty() => match done {
                    Ok((id, Done::Input(input))) => {
                        // A cancelled run that returned all the same has
                        // stopped too; the engine knows it by its run.
                        self.cancelled.retain(|(task, _)| *task != id);
                        input
                    }
                    // A read object is taken in as a watched one is.
                    Ok((_, Done::Read(Some(object)))) => self.read(object).map_or_else(|e| *e, Input::Fetched),
                    Ok((_, Done::Read(None))) => {
                        self.latest = None;
                        Input::Gone
                    }
                    // A run cancelled at its deadline has stopped.
                    Err(error) if error.is_cancelled() => {
                        let at = self.cancelled.iter().position(|(task, _)| *task == error.id());
                        match at {
                            Some(at) => Input::Stopped { run: self.cancelled.remove(at).1 },
                            None => continue,
                        }
                    }
                    Err(error) => {
                        tracing::error!(%error, "a task of {} failed", self.name);
                        continue;
                    }
                },
                () = sleep_until_ms(next_timer), if next_timer.is_some() => {
                    let now = now_ms();
                    self.wake = self.wake.filter(|&at| at > now);
                    Input::Tick { now }
                }
            };
            self.gone |= matches!(input, Input::Gone);
            let now = match &input {
                Input::Tick { now } => Some(*now),
                Input::HandlerDone { run: done, .. } => {
                    let done = *done;
                    self.runs.retain(|r| r.run != done);
                    None
                }
                _ => None,
            };
            self.step(input);
            if let Some(now) = now {
                // Told: the engine has cancelled the run, or (kopf) lets it
                // go on.
                self.runs.retain(|r| r.deadline > now);
            }
            if self.gone && self.tasks.is_empty() {
                // Nothing of the object is left to do; a new object of the
                // same name gets a driver of its own.
                return key;
            }
            if self.engine.stopped() {
                // Stopping, and nothing of it in flight or owed.
                return key;
            }
        }
    }

    fn next_timer(&self) -> Option<u64> {
        let deadlines = self.runs.iter().map(|r| r.deadline);
        self.wake.into_iter().chain(deadlines).min()
    }

    /// Turns a watch event into an input, keeping the newest object.
    fn take_in(&mut self, event: Event<K>) -> Option<Input<Named>> {
        let (object, listed) = match event {
            Event::Gone => {
                self.latest = None;
                return Some(Input::Gone);
            }
            Event::Stop => return Some(Input::Stop),
            Event::Unlisted => return Some(Input::Unlisted),
            Event::Observed(object) => (object, false),
            Event::Listed(object) => (object, true),
        };
        Some(match self.read(object) {
            Ok(view) if listed => Input::Listed(view),
            Ok(view) => Input::Observed(view),
            Err(unreadable) => *unreadable,
        })
    }

    /// What the engine sees of `object`, kept as a version a run may be
    /// shown; or, if its `steadfast.dev/` annotations cannot be read,
    /// [`Input::Unreadable`]; or, if it is another object of the name (a
    /// read found one made after the driver's was deleted), [`Input::Gone`].
    fn read(&mut self, object: K) -> Result<ObjectView<Named>, Box<Input<Named>>> {
        let uid = object.meta().uid.clone();
        if self.uid.is_some() && uid != self.uid {
            self.latest = None;
            return Err(Box::new(Input::Gone));
        }
        self.uid = uid;
        let json = serde_json::to_value(&object).unwrap_or(Value::Null);
        let object = Arc::new(object);
        self.latest = Some(object.clone());
        let seen = seen(&json, &self.shared.config.watched()).map_err(|errors| {
            Box::new(Input::Unreadable {
                version: object.meta().resource_version.clone().unwrap_or_default(),
                message: unreadable(&errors),
            })
        })?;
        self.finalizers = seen.finalizers;
        // A version listed and watched is one version.
        self.versions.retain(|(v, _)| *v != seen.view.version);
        self.versions.push((seen.view.version.clone(), object));
        Ok(seen.view)
    }

    /// Feeds the engine `input` at the current time ([`Engine::timed`]).
    fn step(&mut self, input: Input<Named>) {
        for input in self.engine.timed(now_ms(), input) {
            self.feed(input);
        }
    }

    /// Steps the engine with `input`, records the step and carries out the
    /// effects.
    fn feed(&mut self, input: Input<Named>) {
        let effects = self.engine.step(&self.shared.config, input.clone());
        Recorder::write(
            &mut self.recorder,
            &Record {
                at: now_ms(),
                elapsed: 0,
                from: None,
                input,
                effects: effects.clone(),
            },
        );
        for effect in effects {
            self.carry_out(effect);
        }
        let held = self.engine.versions();
        self.versions.retain(|(version, _)| held.contains(version));
    }

    fn carry_out(&mut self, effect: Effect<Named>) {
        match effect {
            invoke @ Effect::Invoke { .. } => self.invoke(invoke),
            Effect::Cancel { run } => {
                if let Some(at) = self.runs.iter().position(|r| r.run == run) {
                    let running = self.runs.remove(at);
                    let _ = running.cancel.send(true);
                    running.task.abort();
                    self.cancelled.push((running.task.id(), run));
                    tracing::warn!(
                        "a run of {} passed its deadline and is cancelled",
                        self.name
                    );
                }
            }
            Effect::Patch(patch) => self.send(&patch, std::convert::identity),
            Effect::Renew(patch) => self.send(&patch, Input::of_renewal),
            Effect::Remind { run, at } => {
                if let Some(running) = self.runs.iter_mut().find(|r| r.run == run) {
                    running.deadline = at;
                }
            }
            Effect::Fetch => {
                let api = self.shared.api.clone();
                let name = self.name.clone();
                self.tasks.spawn(async move {
                    match api.get_opt(&name).await {
                        Ok(object) => Done::Read(object),
                        Err(error) => {
                            tracing::warn!(%error, "reading {name} failed");
                            Done::Input(failure(&error).of_fetch())
                        }
                    }
                });
            }
            Effect::Mark { expect, message } => {
                // For people: nothing answers it (the engine sets or clears
                // the mark again on the next version that needs it).
                let api = self.shared.api.clone();
                let name = self.name.clone();
                let body = mark_patch(&expect, message.as_deref());
                tokio::spawn(async move {
                    let params = PatchParams::default();
                    if let Err(error) = api.patch(&name, &params, &KubePatch::Merge(&body)).await {
                        tracing::warn!(%error, "the error mark of {name} was not written");
                    }
                });
            }
            Effect::WakeAt(at) => {
                self.wake = Some(self.wake.map_or(at, |w| w.min(at)));
            }
            Effect::Tell(verdict) => self.tell(verdict),
        }
    }

    /// Sends an engine's patch (or a claim's renewal) and feeds the answer
    /// back as the input of its class, read by `class` from the patch's
    /// (identity, or [`Input::of_renewal`]).
    fn send(
        &mut self,
        patch: &steadfast_spec::lifecycle::Patch<Named>,
        class: fn(Input<Named>) -> Input<Named>,
    ) {
        let metrics = self.shared.metrics.clone();
        let api = self.shared.api.clone();
        let name = self.name.clone();
        let body = merge_patch_of(patch, &self.finalizers);
        let to_status = patch.to_status;
        self.tasks.spawn(async move {
            let body = match body {
                Ok(body) => body,
                Err(error) => {
                    let message = format!("a patch of {name} cannot be written: {error}");
                    return Done::Input(class(Input::PatchRefused { message }));
                }
            };
            let result = patch_object(&api, &name, &body, to_status).await;
            let input = class(match &result {
                Ok(object) => Input::PatchApplied {
                    version: object.meta().resource_version.clone().unwrap_or_default(),
                },
                Err(error) => failure(error).of_patch(),
            });
            let answer = match &input {
                Input::Renewed { .. } => "renewed",
                Input::RenewFailed { .. } => "renewal failed",
                Input::PatchApplied { .. } => "applied",
                Input::PatchConflict => "conflict",
                Input::PatchRefused { .. } => "refused",
                Input::PatchThrottled { .. } => "throttled",
                _ => "unanswered",
            };
            if let Err(error) = &result {
                tracing::warn!(%error, "a patch of {name} was answered {answer}");
            }
            metrics.patched(answer);
            Done::Input(input)
        });
    }

    /// Where Events go, and the object they are about, if both are known.
    fn notices(&self) -> Option<(Events, ObjectReference)> {
        let events = self.shared.events.clone()?;
        let object = self.latest.as_ref()?;
        Some((events, object.object_ref(&K::DynamicType::default())))
    }

    /// Logs the engine's verdict on a run and posts it as an Event.
    fn tell(&self, verdict: Verdict<Named>) {
        self.shared.metrics.told(&verdict);
        let notice = match verdict {
            Verdict::Retrying {
                handler,
                message,
                at,
            } => {
                let wait = Duration::from_millis(at.saturating_sub(now_ms()));
                tracing::warn!(%message, ?wait, "handler {handler} of {} failed; it is retried", self.name);
                Notice::Retrying { handler, message }
            }
            Verdict::Failed { handler, message } => {
                let message = message.unwrap_or_else(|| "out of time or attempts".into());
                tracing::error!(%message, "handler {handler} of {} failed for good", self.name);
                Notice::Failed { handler, message }
            }
            Verdict::PatchRefused { message } => {
                tracing::error!(%message, "the API server refused a patch of {} for good; nothing is written until it changes", self.name);
                Notice::Refused { message }
            }
            Verdict::Unreadable { message } => {
                tracing::error!(%message, "object {} is not handled: its steadfast.dev/ annotations cannot be read", self.name);
                Notice::Unreadable { message }
            }
        };
        if let Some((events, reference)) = self.notices() {
            events.post(reference, &notice);
        }
    }

    /// Starts the run `invoke` asks for on the version it acts on, to be
    /// told at its deadline.
    fn invoke(&mut self, invoke: Effect<Named>) {
        let Effect::Invoke {
            run,
            version,
            handler,
            parent,
            essence,
            old,
            retry,
            epoch,
            deadline,
        } = invoke
        else {
            return;
        };
        // Kept: the driver keeps every version the engine holds, and the
        // engine holds the one it acts on.
        let kept = self.versions.iter().find(|(v, _)| *v == version);
        let Some(object) = kept.map(|(_, object)| object).or(self.latest.as_ref()) else {
            return;
        };
        if kept.is_none() {
            tracing::error!(
                "steadfast bug: version {version} of {} was not kept; the run is shown the newest",
                self.name
            );
        }
        let object = object.clone();
        let registered = parent.as_ref().unwrap_or(&handler);
        let code = self
            .shared
            .handlers
            .get(registered)
            .and_then(|h| match &parent {
                None => Some(h.run.clone()),
                Some(_) => h.subs.clone(),
            });
        let out = Arc::new(Mutex::new(RunOutput::default()));
        let sub = parent.as_ref().map(|p| {
            handler
                .strip_prefix(&format!("{p}/"))
                .unwrap_or(&handler)
                .to_owned()
        });
        let (cancel, cancelled) = watch::channel(false);
        let ctx = Context {
            object,
            handler: handler.clone(),
            sub,
            essence: serde_json::from_str(&essence).unwrap_or(Value::Null),
            old: old.and_then(|o| serde_json::from_str(&o).ok()),
            retry,
            epoch,
            out: out.clone(),
            cancel: cancelled,
        };
        let metrics = self.shared.metrics.clone();
        let task = self.tasks.spawn(async move {
            let began = std::time::Instant::now();
            let result = match code {
                // A panic is caught here, so that the engine is told of it
                // as an outcome (it retries it) rather than left to wait
                // for the run's deadline.
                Some(code) => AssertUnwindSafe(async move { code(ctx).await })
                    .catch_unwind()
                    .await
                    .map_err(|panic| panic_message(panic.as_ref())),
                None => Ok(Err(HandlerError::permanent(format!(
                    "{handler} has no code: register sub-handlers with Handler::sub_handlers"
                )))),
            };
            let output = std::mem::take(&mut *out.lock().unwrap_or_else(PoisonError::into_inner));
            let (outcome, ended) = match &result {
                Ok(Ok(())) => (Outcome::Success, "success"),
                Ok(Err(HandlerError::Temporary { delay, message })) => (
                    Outcome::Temporary {
                        delay: u64::try_from(delay.as_millis()).unwrap_or(u64::MAX),
                        message: bounded(message),
                    },
                    "temporary",
                ),
                Ok(Err(HandlerError::Permanent { message })) => (
                    Outcome::Permanent {
                        message: bounded(message),
                    },
                    "permanent",
                ),
                Err(panic) => (
                    Outcome::Panicked {
                        message: bounded(&format!("the handler panicked: {panic}")),
                    },
                    "panicked",
                ),
            };
            metrics.ran(&handler, ended, began.elapsed().as_secs_f64());
            match &result {
                Ok(Err(error)) => tracing::info!(%error, "{handler} failed"),
                Err(panic) => tracing::warn!(%panic, "{handler} panicked"),
                Ok(Ok(())) => {}
            }
            Done::Input(Input::HandlerDone {
                run,
                outcome,
                subs: output
                    .subs
                    .iter()
                    .map(|s| format!("{handler}/{s}"))
                    .collect(),
                write: output.patch.map(|p| canonical(&p)),
            })
        });
        self.runs.push(Running {
            run,
            deadline,
            task,
            cancel,
        });
    }
}

/// Sends an engine's patch `body`, through the status subresource if
/// `to_status` (the engine's [`Patch::to_status`]).
///
/// [`Patch::to_status`]: steadfast_spec::lifecycle::Patch::to_status
async fn patch_object<K>(
    api: &Api<K>,
    name: &str,
    body: &Value,
    to_status: bool,
) -> Result<K, kube::Error>
where
    K: Resource + Clone + Serialize + DeserializeOwned + std::fmt::Debug,
{
    let params = PatchParams::default();
    let patch = KubePatch::Merge(body);
    if to_status {
        api.patch_status(name, &params, &patch).await
    } else {
        api.patch(name, &params, &patch).await
    }
}

/// What a panic said: its message if it was a string (as `panic!` makes
/// one), or that it said nothing readable.
fn panic_message(panic: &(dyn std::any::Any + Send)) -> String {
    panic
        .downcast_ref::<&str>()
        .map(|s| (*s).to_owned())
        .or_else(|| panic.downcast_ref::<String>().cloned())
        .unwrap_or_else(|| "a panic with no message".to_owned())
}

/// Sleeps until `at` (ms since the epoch), or forever.
async fn sleep_until_ms(at: Option<u64>) {
    match at {
        Some(at) => {
            let wait = at.saturating_sub(now_ms());
            tokio::time::sleep(Duration::from_millis(wait)).await;
        }
        None => std::future::pending().await,
    }
}
