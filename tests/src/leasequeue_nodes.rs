//! Leasequeue nodes for runtime tests and benchmarks: schedulers each in a
//! tokio runtime of its own (killed as a process would be: every task
//! stops at once, nothing is said to etcd), an executor that counts what it
//! ran.
//!
//! ```no_run
//! # async fn demo(etcd: steadfast::leasequeue::etcd::EtcdOptions) {
//! use steadfast::leasequeue::SchedulerBuilder;
//! use steadfast_tests::leasequeue_nodes::{Ledger, SchedulerProcess};
//!
//! let ledger = Ledger::default();
//! let scheduler = SchedulerProcess::start(SchedulerBuilder::new(etcd), ledger.executor())
//!     .await
//!     .unwrap();
//! scheduler.kill();
//! # }
//! ```

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde_json::{json, Value};
use steadfast::leasequeue::etcd::{Etcd, EtcdError, EtcdOptions};
use steadfast::leasequeue::{Executor, Invocation, SchedulerBuilder, StartError};
use tokio::sync::oneshot;

/// Waits until every scheduler in `names` is a member (its member key is in
/// etcd), so that a controller started next lists them all.
///
/// # Errors
///
/// If etcd cannot be read, or the members are not all there within
/// `within`: the error names those missing.
pub async fn await_members(
    options: &EtcdOptions,
    names: &[&str],
    within: Duration,
) -> Result<(), String> {
    let mut etcd = Etcd::connect(options)
        .await
        .map_err(|e: EtcdError| e.to_string())?;
    let deadline = tokio::time::Instant::now() + within;
    loop {
        let listing = etcd.list().await.map_err(|e| e.to_string())?;
        let missing: Vec<&&str> = names.iter().filter(|n| !listing.is_member(n)).collect();
        if missing.is_empty() {
            return Ok(());
        }
        if tokio::time::Instant::now() >= deadline {
            return Err(format!("not members within {within:?}: {missing:?}"));
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// A scheduler running in a runtime (and a thread) of its own.
pub struct SchedulerProcess {
    address: String,
    incarnation: u64,
    metrics_address: Option<std::net::SocketAddr>,
    stop: Option<oneshot::Sender<Stop>>,
    thread: Option<std::thread::JoinHandle<()>>,
}

/// How a [`SchedulerProcess`] is stopped.
enum Stop {
    /// As SIGKILL would.
    Kill,
    /// Gracefully ([`steadfast::leasequeue::Scheduler::drain`]).
    Drain,
}

impl SchedulerProcess {
    /// Starts the scheduler `builder` sets up, running activations through
    /// `executor`.
    ///
    /// # Errors
    ///
    /// If the scheduler does not start.
    pub async fn start(
        builder: SchedulerBuilder,
        executor: impl Executor,
    ) -> Result<Self, StartError> {
        let (started, address) = oneshot::channel();
        let (stop, stopped) = oneshot::channel::<Stop>();
        let thread = std::thread::spawn(move || {
            let runtime = tokio::runtime::Builder::new_multi_thread()
                .worker_threads(1)
                .enable_all()
                .build()
                .expect("a tokio runtime for a scheduler");
            runtime.block_on(async move {
                match builder.start(executor).await {
                    Ok(scheduler) => {
                        let _ = started.send(Ok((
                            scheduler.address().to_owned(),
                            scheduler.incarnation(),
                            scheduler.metrics_address(),
                        )));
                        match stopped.await {
                            Ok(Stop::Drain) => scheduler.drain().await,
                            Ok(Stop::Kill) | Err(_) => scheduler.kill().await,
                        }
                    }
                    Err(error) => {
                        let _ = started.send(Err(error));
                    }
                }
            });
            // Every task of the scheduler stops where it is.
            runtime.shutdown_background();
        });
        let (address, incarnation, metrics_address) =
            address.await.expect("the scheduler's thread answers")?;
        Ok(SchedulerProcess {
            address,
            incarnation,
            metrics_address,
            stop: Some(stop),
            thread: Some(thread),
        })
    }

    /// Its address: its name in etcd.
    pub fn address(&self) -> &str {
        &self.address
    }

    /// This run of it ([`steadfast::leasequeue::Scheduler::incarnation`]).
    pub fn incarnation(&self) -> u64 {
        self.incarnation
    }

    /// Where its metrics and probes are served, if its builder asked.
    pub fn metrics_address(&self) -> Option<std::net::SocketAddr> {
        self.metrics_address
    }

    /// Kills it, as SIGKILL would a process: its lease is left to expire.
    pub fn kill(mut self) {
        self.stop_now();
    }

    /// Drains it ([`steadfast::leasequeue::Scheduler::drain`]) and returns
    /// once it has stopped.
    pub async fn drain(mut self) {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(Stop::Drain);
        }
        if let Some(thread) = self.thread.take() {
            let _ = tokio::task::spawn_blocking(move || thread.join()).await;
        }
    }

    fn stop_now(&mut self) {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(Stop::Kill);
        }
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

impl Drop for SchedulerProcess {
    fn drop(&mut self) {
        self.stop_now();
    }
}

/// What the executors of a test ran: per activation id, how many times.
#[derive(Clone, Default)]
pub struct Ledger {
    runs: Arc<Mutex<HashMap<String, usize>>>,
}

impl Ledger {
    /// An executor that records each run here, takes `work` to run, and
    /// returns `{"id", "action", "payload"}`.
    pub fn executor_taking(&self, work: Duration) -> impl Executor {
        let runs = Arc::clone(&self.runs);
        move |invocation: Invocation| {
            let runs = Arc::clone(&runs);
            async move {
                if !work.is_zero() {
                    tokio::time::sleep(work).await;
                }
                record(&runs, &invocation.id);
                json!({
                    "id": invocation.id,
                    "action": invocation.action,
                    "payload": invocation.payload,
                })
            }
        }
    }

    /// Records a run of activation `id`, for an executor of a test's own.
    pub fn ran(&self, id: &str) {
        record(&self.runs, id);
    }

    /// An executor that records each run here and returns at once.
    pub fn executor(&self) -> impl Executor {
        self.executor_taking(Duration::ZERO)
    }

    /// How many times activation `id` ran.
    pub fn runs(&self, id: &str) -> usize {
        self.runs.lock().unwrap().get(id).copied().unwrap_or(0)
    }

    /// Activations that ran more than once.
    pub fn ran_twice(&self) -> Vec<String> {
        let runs = self.runs.lock().unwrap();
        let mut twice: Vec<String> = runs
            .iter()
            .filter(|(_, n)| **n > 1)
            .map(|(id, _)| id.clone())
            .collect();
        twice.sort();
        twice
    }
}

fn record(runs: &Mutex<HashMap<String, usize>>, id: &str) {
    *runs.lock().unwrap().entry(id.to_owned()).or_default() += 1;
}

/// The id of the activation whose result `result` is (as
/// [`Ledger::executor`] returns it).
pub fn id_of(result: &Value) -> &str {
    result["id"].as_str().unwrap_or_default()
}
