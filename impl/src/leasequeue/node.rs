//! What the scheduler's and the controller's drivers share: the time between
//! steps, timers the roles arm, messages sent until acknowledged, and the
//! trace a driver records.

use std::collections::HashMap;
use std::fs::File;
use std::hash::Hash;
use std::io::{BufWriter, Write};
use std::path::{Path, PathBuf};
use std::time::Duration;

use serde::Serialize;
use steadfast_spec::leasequeue::trace::{Header, Record};
use tokio::time::Instant;

use super::network::Network;
use super::wire::Message;

/// Milliseconds between steps: what the scheduler's `step` takes as
/// `elapsed`.
pub(crate) struct Clock {
    last: Instant,
}

impl Clock {
    pub(crate) fn new() -> Self {
        Clock {
            last: Instant::now(),
        }
    }

    /// Milliseconds since the last call (whole ones: the rest carries over).
    pub(crate) fn elapsed_ms(&mut self) -> u64 {
        let now = Instant::now();
        let elapsed = now - self.last;
        let ms = u64::try_from(elapsed.as_millis()).unwrap_or(u64::MAX);
        self.last += Duration::from_millis(ms);
        ms
    }
}

/// Timers by key: arming one again replaces it.
pub(crate) struct Timers<K> {
    due: HashMap<K, Instant>,
}

impl<K: Clone + Eq + Hash> Timers<K> {
    pub(crate) fn new() -> Self {
        Timers {
            due: HashMap::new(),
        }
    }

    /// Arms `key` to fire `after_ms` from now.
    pub(crate) fn set(&mut self, key: K, after_ms: u64) {
        self.due
            .insert(key, Instant::now() + Duration::from_millis(after_ms));
    }

    /// When the next timer fires, if one is armed.
    pub(crate) fn next(&self) -> Option<Instant> {
        self.due.values().min().copied()
    }

    /// Takes every timer due by now, earliest first.
    pub(crate) fn take_due(&mut self) -> Vec<K> {
        let now = Instant::now();
        let mut due: Vec<(Instant, K)> = self
            .due
            .iter()
            .filter(|(_, at)| **at <= now)
            .map(|(key, at)| (*at, key.clone()))
            .collect();
        due.sort_by_key(|(at, _)| *at);
        for (_, key) in &due {
            self.due.remove(key);
        }
        due.into_iter().map(|(_, key)| key).collect()
    }
}

/// Sleeps until `at`, or forever when it is `None`.
pub(crate) async fn sleep_until(at: Option<Instant>) {
    match at {
        Some(at) => tokio::time::sleep_until(at).await,
        None => std::future::pending().await,
    }
}

/// Messages sent again until acknowledged, by activation id.
pub(crate) struct Unacked {
    pending: HashMap<String, (String, Message)>,
}

impl Unacked {
    pub(crate) fn new() -> Self {
        Unacked {
            pending: HashMap::new(),
        }
    }

    /// Sends `message` about activation `id` to `to` now, and again at every
    /// [`Unacked::resend`] until [`Unacked::acked`].
    pub(crate) fn send(&mut self, network: &Network, id: String, to: String, message: Message) {
        network.send(&to, &message);
        self.pending.insert(id, (to, message));
    }

    /// The message about `id` arrived.
    pub(crate) fn acked(&mut self, id: &str) {
        self.pending.remove(id);
    }

    /// Sends every message not acknowledged yet again.
    pub(crate) fn resend(&self, network: &Network) {
        for (to, message) in self.pending.values() {
            network.send(to, message);
        }
    }
}

/// Why a trace could not be written.
#[derive(Debug, thiserror::Error)]
#[error("failed to write the trace {path}: {source}")]
pub struct TraceError {
    /// The file.
    pub path: PathBuf,
    /// Why.
    #[source]
    pub source: std::io::Error,
}

/// A role's trace, as JSON lines: its header, then one record per step,
/// each flushed as it is written so that a killed process leaves every
/// step it took.
pub(crate) struct Recorder {
    path: PathBuf,
    file: BufWriter<File>,
}

impl Recorder {
    /// Creates (or truncates) `path` and writes `header`.
    pub(crate) fn create(path: &Path, header: &Header) -> Result<Self, TraceError> {
        let error = |source| TraceError {
            path: path.to_owned(),
            source,
        };
        let file = File::create(path).map_err(error)?;
        let mut recorder = Recorder {
            path: path.to_owned(),
            file: BufWriter::new(file),
        };
        recorder.line(header).map_err(error)?;
        Ok(recorder)
    }

    /// Writes one step to the trace in `slot`, if there is one; a failure
    /// is logged and recording stops (the run goes on).
    pub(crate) fn record<I: Serialize, E: Serialize>(
        slot: &mut Option<Self>,
        elapsed: u64,
        input: &I,
        effects: &[E],
    ) {
        let Some(this) = slot else {
            return;
        };
        let record = Record {
            elapsed,
            input,
            effects: effects.iter().collect(),
        };
        if let Err(source) = this.line(&record) {
            let error = TraceError {
                path: this.path.clone(),
                source,
            };
            tracing::error!(%error, "trace recording stopped");
            *slot = None;
        }
    }

    fn line(&mut self, value: &impl Serialize) -> std::io::Result<()> {
        serde_json::to_writer(&mut self.file, value)?;
        self.file.write_all(b"\n")?;
        self.file.flush()
    }
}
