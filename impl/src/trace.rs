//! The trace a driver records: JSON lines, a header then one line per step
//! of its state machine, each flushed as it is written.

use std::fs::File;
use std::io::{BufWriter, Write};
use std::path::{Path, PathBuf};

use serde::Serialize;

/// Why a trace could not be written.
///
/// ```
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() {
/// use steadfast::leasequeue::etcd::EtcdOptions;
/// use steadfast::leasequeue::{ControllerBuilder, StartError};
///
/// let started = ControllerBuilder::new(EtcdOptions::new(["http://127.0.0.1:1"]))
///     .trace("/no/such/directory/trace.jsonl")
///     .start()
///     .await;
/// // etcd is not there either: whichever is found first is reported.
/// assert!(matches!(started, Err(StartError::Trace(_) | StartError::Etcd(_))));
/// # }
/// ```
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
    pub(crate) fn create(path: &Path, header: &impl Serialize) -> Result<Self, TraceError> {
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

    /// Writes one line (a step) to the trace in `slot`, if there is one; a
    /// failure is logged and recording stops (the run goes on).
    pub(crate) fn write(slot: &mut Option<Self>, line: &impl Serialize) {
        let Some(this) = slot else {
            return;
        };
        if let Err(source) = this.line(line) {
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
