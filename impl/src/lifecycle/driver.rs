//! One object's engine, driven: watch events, run results, patch results,
//! reads and timers become inputs; invocations, patches, reads and wake-ups
//! are carried out. The driver decides nothing about the protocol; it
//! keeps only what it needs to carry effects out (the newest object, to
//! hand to handlers and to keep other finalizers; the deadlines of runs).

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use k8s_openapi::api::core::v1::ObjectReference;
use kube::api::{Api, Patch as KubePatch, PatchParams};
use kube::Resource;
use serde::de::DeserializeOwned;
use serde::Serialize;
use serde_json::Value;
use steadfast_spec::lifecycle::named::{canonical, Named};
use steadfast_spec::lifecycle::trace::{Header, Record};
use steadfast_spec::lifecycle::{Config, Effect, Engine, Input, Outcome, RunId, Verdict};
use tokio::sync::mpsc;
use tokio::task::JoinSet;

use super::events::{bounded, Events, Notice};
use super::handler::{Context, Handler, HandlerError, RunOutput};
use super::metrics::Metrics;
use super::object::{error_patch, merge_patch_of, seen};
use crate::trace::Recorder;

/// The wall clock, in ms since the epoch: times in progress records
/// survive restarts.
pub(crate) fn now_ms() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX))
}

/// What the operator's watch says of one object.
pub(crate) enum Event<K> {
    /// A watch event.
    Observed(K),
    /// A list's item.
    Listed(K),
    /// It is gone.
    Gone,
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
    /// Status fields the field handlers watch.
    pub(crate) watched: Vec<String>,
    pub(crate) incarnation: u32,
    pub(crate) traces: Option<PathBuf>,
    /// Where handler failures and refused patches are told, if anywhere.
    pub(crate) events: Option<Events>,
    pub(crate) metrics: Metrics,
}

/// One object's driver.
pub(crate) struct Driver<K> {
    shared: Arc<Shared<K>>,
    name: String,
    engine: Engine<Named>,
    /// The newest object seen, as JSON and typed.
    latest: Option<(Value, Arc<K>)>,
    /// The finalizers on the newest object seen.
    finalizers: Vec<String>,
    wake: Option<u64>,
    deadlines: Vec<(RunId, u64)>,
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
            let header = Header {
                object: key.to_owned(),
                incarnation: shared.incarnation,
                started,
                config: shared.config.clone(),
            };
            Recorder::create(&dir.join(file), &header)
                .map_err(|error| tracing::error!(%error, "no trace for {key}"))
                .ok()
        });
        Driver {
            engine: Engine::new(shared.incarnation, started),
            shared,
            name,
            latest: None,
            finalizers: Vec::new(),
            wake: None,
            deadlines: Vec::new(),
            recorder,
            tasks: JoinSet::new(),
        }
    }

    /// Runs until the object is gone with nothing of it in flight, or the
    /// operator stops (`events` closes); returns `key`, the object's.
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
                Some(done) = self.tasks.join_next(), if !self.tasks.is_empty() => match done {
                    Ok(Done::Input(input)) => input,
                    // A read object is taken in as a watched one is.
                    Ok(Done::Read(Some(object))) => match self.read(object) {
                        Some(view) => Input::Fetched(view),
                        None => continue,
                    },
                    Ok(Done::Read(None)) => {
                        self.latest = None;
                        Input::Gone
                    }
                    Err(error) => {
                        tracing::error!(%error, "a task of {} failed", self.name);
                        continue;
                    }
                },
                () = sleep_until_ms(next_timer), if next_timer.is_some() => {
                    let now = now_ms();
                    self.wake = self.wake.filter(|&at| at > now);
                    self.deadlines.retain(|&(_, at)| at > now);
                    Input::Tick { now }
                }
            };
            let gone = matches!(input, Input::Gone);
            self.step(input);
            if gone && self.tasks.is_empty() {
                // Nothing of the object is left to do; a new object of the
                // same name gets a driver of its own.
                return key;
            }
        }
    }

    fn next_timer(&self) -> Option<u64> {
        let deadlines = self.deadlines.iter().map(|&(_, at)| at);
        self.wake.into_iter().chain(deadlines).min()
    }

    /// Turns a watch event into an input, keeping the newest object.
    fn take_in(&mut self, event: Event<K>) -> Option<Input<Named>> {
        let (object, listed) = match event {
            Event::Gone => {
                self.latest = None;
                return Some(Input::Gone);
            }
            Event::Observed(object) => (object, false),
            Event::Listed(object) => (object, true),
        };
        let view = self.read(object)?;
        Some(if listed {
            Input::Listed(view)
        } else {
            Input::Observed(view)
        })
    }

    /// What the engine sees of `object`; annotations it cannot read are
    /// recorded on the object, and the version is not given to the engine.
    fn read(&mut self, object: K) -> Option<steadfast_spec::lifecycle::ObjectView<Named>> {
        let json = serde_json::to_value(&object).ok()?;
        match seen(&json, &self.shared.watched) {
            Ok(seen) => {
                self.finalizers = seen.finalizers;
                self.latest = Some((json, Arc::new(object)));
                Some(seen.view)
            }
            Err(errors) => {
                for error in &errors {
                    tracing::error!(%error, "object {} is not handled", self.name);
                }
                let api = self.shared.api.clone();
                let name = self.name.clone();
                let body = error_patch(&errors);
                tokio::spawn(async move {
                    let _ = api
                        .patch(&name, &PatchParams::default(), &KubePatch::Merge(&body))
                        .await;
                });
                None
            }
        }
    }

    /// Feeds the engine, records the step and carries out the effects.
    fn step(&mut self, input: Input<Named>) {
        let effects = self.engine.step(&self.shared.config, input.clone());
        Recorder::write(
            &mut self.recorder,
            &Record {
                input,
                effects: effects.clone(),
            },
        );
        for effect in effects {
            self.carry_out(effect);
        }
    }

    fn carry_out(&mut self, effect: Effect<Named>) {
        match effect {
            Effect::Invoke {
                run,
                handler,
                parent,
                essence,
                old,
                retry,
                deadline,
            } => {
                self.deadlines.push((run, deadline));
                self.invoke(run, handler, parent, &essence, old.as_deref(), retry);
            }
            Effect::Patch(patch) => {
                let events = self.notices();
                let metrics = self.shared.metrics.clone();
                let api = self.shared.api.clone();
                let name = self.name.clone();
                let body = merge_patch_of(&patch, &self.finalizers);
                self.tasks.spawn(async move {
                    let body = match body {
                        Ok(body) => body,
                        Err(error) => {
                            tracing::error!(%error, "a patch of {name} cannot be written");
                            return Done::Input(Input::PatchUnknown);
                        }
                    };
                    let (answer, input) = match api
                        .patch(&name, &PatchParams::default(), &KubePatch::Merge(&body))
                        .await
                    {
                        Ok(object) => (
                            "applied",
                            Input::PatchApplied {
                                version: object.meta().resource_version.clone().unwrap_or_default(),
                            },
                        ),
                        Err(kube::Error::Api(status)) if matches!(status.code, 404 | 409) => {
                            ("conflict", Input::PatchConflict)
                        }
                        Err(kube::Error::Api(status)) if matches!(status.code, 400 | 403 | 422) => {
                            tracing::error!(code = status.code, message = %status.message, "the API server refused a patch of {name}");
                            if let Some((events, reference)) = events {
                                let notice = Notice::Refused {
                                    code: status.code,
                                    message: status.message.clone(),
                                };
                                events.post(reference, &notice);
                            }
                            ("refused", Input::PatchUnknown)
                        }
                        Err(error) => {
                            tracing::warn!(%error, "a patch of {name} may or may not have applied");
                            ("unknown", Input::PatchUnknown)
                        }
                    };
                    metrics.patched(answer);
                    Done::Input(input)
                });
            }
            Effect::Fetch => {
                let api = self.shared.api.clone();
                let name = self.name.clone();
                self.tasks.spawn(async move {
                    loop {
                        match api.get_opt(&name).await {
                            Ok(object) => return Done::Read(object),
                            Err(error) => tracing::warn!(%error, "reading {name} again"),
                        }
                        tokio::time::sleep(Duration::from_millis(200)).await;
                    }
                });
            }
            Effect::WakeAt(at) => {
                self.wake = Some(self.wake.map_or(at, |w| w.min(at)));
            }
            Effect::Tell(verdict) => self.tell(verdict),
        }
    }

    /// Where Events go, and the object they are about, if both are known.
    fn notices(&self) -> Option<(Events, ObjectReference)> {
        let events = self.shared.events.clone()?;
        let (_, object) = self.latest.as_ref()?;
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
        };
        if let Some((events, reference)) = self.notices() {
            events.post(reference, &notice);
        }
    }

    /// Starts a run of `handler` (a sub-handler of `parent`) on `essence`.
    fn invoke(
        &mut self,
        run: RunId,
        handler: String,
        parent: Option<String>,
        essence: &str,
        old: Option<&str>,
        retry: u8,
    ) {
        let Some((_, object)) = &self.latest else {
            return;
        };
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
        let ctx = Context {
            object: object.clone(),
            handler: handler.clone(),
            sub,
            essence: serde_json::from_str(essence).unwrap_or(Value::Null),
            old: old.and_then(|o| serde_json::from_str(o).ok()),
            retry,
            out: out.clone(),
        };
        let metrics = self.shared.metrics.clone();
        self.tasks.spawn(async move {
            let began = std::time::Instant::now();
            let result = match code {
                Some(code) => code(ctx).await,
                None => Err(HandlerError::permanent(format!(
                    "{handler} has no code: register sub-handlers with Handler::sub_handlers"
                ))),
            };
            let output = std::mem::take(&mut *out.lock().expect("a run's output"));
            let outcome = match &result {
                Ok(()) => Outcome::Success,
                Err(HandlerError::Temporary { delay, message }) => Outcome::Temporary {
                    delay: u64::try_from(delay.as_millis()).unwrap_or(u64::MAX),
                    message: bounded(message),
                },
                Err(HandlerError::Permanent { message }) => Outcome::Permanent {
                    message: bounded(message),
                },
            };
            let ended = match &result {
                Ok(()) => "success",
                Err(HandlerError::Temporary { .. }) => "temporary",
                Err(HandlerError::Permanent { .. }) => "permanent",
            };
            metrics.ran(&handler, ended, began.elapsed().as_secs_f64());
            if let Err(error) = &result {
                tracing::info!(%error, "{handler} failed");
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
    }
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
