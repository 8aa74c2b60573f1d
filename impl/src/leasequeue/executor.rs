//! What a scheduler runs: the user's [`Executor`], the [`Invocation`] it is
//! handed, and the executions under way, each a task of its own whose end
//! (a result, an error, a panic) comes back to the driver as the role's
//! input. The role decides what each end means, and when to give up on
//! one ([`Effect::Cancel`](steadfast_spec::leasequeue::scheduler::Effect::Cancel)).

use std::collections::HashMap;
use std::future::Future;
use std::panic::AssertUnwindSafe;
use std::sync::Arc;
use std::time::Duration;

use futures::FutureExt;
use serde_json::Value;
use steadfast_spec::leasequeue::ExecutionFailure;
use tokio::task::{AbortHandle, JoinSet};
use tokio_util::sync::CancellationToken;
use tracing::Instrument;

/// One activation to run: what an [`Executor`] is handed.
///
/// ```
/// use std::time::Duration;
/// use steadfast::leasequeue::Invocation;
/// use tokio_util::sync::CancellationToken;
///
/// let invocation = Invocation {
///     id: "5f0c".into(),
///     action: "greet".into(),
///     payload: serde_json::json!({"name": "ada"}),
///     time_left: Some(Duration::from_secs(60)),
///     cancelled: CancellationToken::new(),
/// };
/// assert_eq!(invocation.payload["name"], "ada");
/// ```
#[derive(Clone, Debug)]
pub struct Invocation {
    /// Its id.
    pub id: String,
    /// Its action.
    pub action: String,
    /// What it was submitted with.
    pub payload: Value,
    /// How long it may run: past this the scheduler settles it as failed
    /// ([`ExecutionFailure::Timeout`]) and cancels it
    /// ([`SchedulerBuilder::execution_timeout`](super::SchedulerBuilder::execution_timeout)).
    /// `None`: as long as it takes.
    pub time_left: Option<Duration>,
    /// Cancelled once the scheduler has given up on this execution (it ran
    /// past its timeout): stop, and let go of what it holds. The task
    /// running the executor's future is aborted at its next `.await` as
    /// well; the token is for what it started beside it (a blocking
    /// thread, a child process, a task of its own).
    pub cancelled: CancellationToken,
}

/// Why an execution ended without a result: the executor's own error,
/// returned as the `Err` of a `Result` ([`IntoExecution`]).
///
/// ```
/// use steadfast::leasequeue::ExecutionError;
///
/// let error = ExecutionError::new("the image is not a PNG");
/// assert_eq!(error.to_string(), "the image is not a PNG");
/// ```
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("{message}")]
pub struct ExecutionError {
    message: String,
}

impl ExecutionError {
    /// An error that says `message`: what the caller sees
    /// ([`SubmitError::ExecutionFailed`](super::SubmitError::ExecutionFailed)).
    pub fn new(message: impl Into<String>) -> Self {
        ExecutionError {
            message: message.into(),
        }
    }
}

/// What an executor's future may return: a result ([`Value`]), or a
/// `Result` whose `Err` says why the execution produced none (any error
/// that displays: its words reach the caller as
/// [`SubmitError::ExecutionFailed`](super::SubmitError::ExecutionFailed)).
/// An action's own error may be a result too: it is the caller's choice
/// whether it ran and failed or ran and answered.
pub trait IntoExecution {
    /// The result, or the error's words.
    fn into_execution(self) -> Result<Value, ExecutionError>;
}

impl IntoExecution for Value {
    fn into_execution(self) -> Result<Value, ExecutionError> {
        Ok(self)
    }
}

impl<E: std::fmt::Display> IntoExecution for Result<Value, E> {
    fn into_execution(self) -> Result<Value, ExecutionError> {
        self.map_err(|error| ExecutionError::new(error.to_string()))
    }
}

/// Runs activations: what the user's scheduler does with the work it is
/// handed. It ends with the activation's result, or with an error; a
/// panic is caught and ends it as a failure
/// ([`ExecutionFailure::Panic`]), as does running past the execution
/// timeout ([`ExecutionFailure::Timeout`]). Either way the activation ran:
/// it is not run again.
///
/// A closure `Fn(Invocation) -> impl Future<Output = R>` is one, where `R`
/// is a [`Value`] or a `Result<Value, E>` ([`IntoExecution`]):
///
/// ```
/// use steadfast::leasequeue::{Executor, Invocation};
///
/// fn takes(_: impl Executor) {}
/// takes(|invocation: Invocation| async move { invocation.payload });
/// takes(|invocation: Invocation| async move {
///     match invocation.payload.get("size") {
///         Some(size) => Ok(size.clone()),
///         None => Err("no size given"),
///     }
/// });
/// ```
pub trait Executor: Send + Sync + 'static {
    /// Runs `invocation` to its end.
    fn execute(
        &self,
        invocation: Invocation,
    ) -> impl Future<Output = Result<Value, ExecutionError>> + Send;
}

impl<F, Fut> Executor for F
where
    F: Fn(Invocation) -> Fut + Send + Sync + 'static,
    Fut: Future + Send,
    Fut::Output: IntoExecution,
{
    fn execute(
        &self,
        invocation: Invocation,
    ) -> impl Future<Output = Result<Value, ExecutionError>> + Send {
        self(invocation).map(IntoExecution::into_execution)
    }
}

/// How an execution ended, as the driver feeds it to the role: its result,
/// or why it has none and the words that say so.
pub(super) type Ended = Result<Value, (ExecutionFailure, String)>;

/// An execution under way: how to stop it.
struct Running {
    task: AbortHandle,
    cancelled: CancellationToken,
}

/// The executions under way, owned by the driver so that they stop with
/// it, as a crash stops them.
pub(super) struct Executions<E> {
    executor: Arc<E>,
    tasks: JoinSet<()>,
    running: HashMap<String, Running>,
}

impl<E: Executor> Executions<E> {
    pub(super) fn new(executor: E) -> Self {
        Executions {
            executor: Arc::new(executor),
            tasks: JoinSet::new(),
            running: HashMap::new(),
        }
    }

    /// Runs `invocation` as a task of its own; `ended` is called with how
    /// it ended (a panic caught as a failure), unless it was cancelled
    /// first.
    pub(super) fn start(
        &mut self,
        invocation: Invocation,
        ended: impl FnOnce(String, Ended) + Send + 'static,
    ) {
        let executor = Arc::clone(&self.executor);
        let id = invocation.id.clone();
        let cancelled = invocation.cancelled.clone();
        // Everything the executor logs names its activation.
        let span = tracing::info_span!("activation", %id, action = %invocation.action);
        let run = {
            let id = id.clone();
            async move {
                let run = AssertUnwindSafe(executor.execute(invocation)).catch_unwind();
                let end = match run.await {
                    Ok(Ok(result)) => Ok(result),
                    Ok(Err(error)) => Err((ExecutionFailure::Error, error.to_string())),
                    Err(panic) => Err((ExecutionFailure::Panic, panic_message(panic.as_ref()))),
                };
                ended(id, end);
            }
        };
        let task = self.tasks.spawn(run.instrument(span));
        self.running.insert(id, Running { task, cancelled });
    }

    /// Execution `id` ended: nothing of it is kept.
    pub(super) fn finished(&mut self, id: &str) {
        self.running.remove(id);
    }

    /// Stops execution `id`: its token is cancelled and its task aborted;
    /// whatever it would have returned is dropped.
    pub(super) fn cancel(&mut self, id: &str) {
        if let Some(running) = self.running.remove(id) {
            running.cancelled.cancel();
            running.task.abort();
        }
    }

    /// Waits for the next task to end (one whose end has been told, or one
    /// aborted); never resolves while none runs.
    pub(super) async fn reap(&mut self) {
        if self.tasks.join_next().await.is_none() {
            std::future::pending::<()>().await;
        }
    }
}

/// The words of a caught panic: its message when it is a string.
fn panic_message(panic: &(dyn std::any::Any + Send)) -> String {
    let words = panic
        .downcast_ref::<&str>()
        .map(|s| (*s).to_owned())
        .or_else(|| panic.downcast_ref::<String>().cloned());
    words.map_or_else(
        || "the executor panicked".to_owned(),
        |words| format!("the executor panicked: {words}"),
    )
}
