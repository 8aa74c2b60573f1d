//! What an operator author writes: handlers, the context a run gets, and
//! how a run ends.

use std::future::Future;
use std::pin::Pin;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde_json::Value;
use steadfast_spec::lifecycle::named::{at_path, compose, joined};

/// A handler's code, boxed.
pub(crate) type HandlerFn<K> = Arc<
    dyn Fn(Context<K>) -> Pin<Box<dyn Future<Output = Result<(), HandlerError>> + Send>>
        + Send
        + Sync,
>;

/// A handler: its code, the code of the sub-handlers its runs declare, and
/// how long and how often it may try.
///
/// ```
/// use std::time::Duration;
/// use k8s_openapi::api::core::v1::ConfigMap;
/// use steadfast::lifecycle::{Context, Handler, HandlerError};
///
/// let handler = Handler::new(|ctx: Context<ConfigMap>| async move {
///     // Declare two steps; each runs, and is retried, on its own.
///     ctx.sub("create-bucket");
///     ctx.sub("grant-access");
///     Ok::<(), HandlerError>(())
/// })
/// .sub_handlers(|ctx: Context<ConfigMap>| async move {
///     match ctx.sub_name() {
///         Some("create-bucket") => Ok(()),
///         _ => Err(HandlerError::temporary("not yet", Duration::from_secs(5))),
///     }
/// })
/// .retries(5)
/// .timeout(Duration::from_secs(600));
/// # let _ = handler;
/// ```
pub struct Handler<K> {
    pub(crate) run: HandlerFn<K>,
    pub(crate) subs: Option<HandlerFn<K>>,
    pub(crate) retries: u8,
    pub(crate) timeout: Duration,
}

/// Attempts before a handler that keeps failing temporarily fails for good.
pub const DEFAULT_RETRIES: u8 = 10;
/// How long an episode of a handler may take before it fails for good.
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(3600);

fn boxed<K, F, Fut>(f: F) -> HandlerFn<K>
where
    F: Fn(Context<K>) -> Fut + Send + Sync + 'static,
    Fut: Future<Output = Result<(), HandlerError>> + Send + 'static,
{
    Arc::new(move |ctx| Box::pin(f(ctx)))
}

impl<K> Handler<K> {
    /// A handler running `f`, with [`DEFAULT_RETRIES`] and
    /// [`DEFAULT_TIMEOUT`].
    pub fn new<F, Fut>(f: F) -> Self
    where
        F: Fn(Context<K>) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<(), HandlerError>> + Send + 'static,
    {
        Handler {
            run: boxed(f),
            subs: None,
            retries: DEFAULT_RETRIES,
            timeout: DEFAULT_TIMEOUT,
        }
    }

    /// The code of the sub-handlers the handler's runs declare with
    /// [`Context::sub`]; [`Context::sub_name`] says which one runs. Each
    /// sub-handler has its own progress, retries and outcome; the handler
    /// is finished when all of those its last run declared are.
    #[must_use]
    pub fn sub_handlers<F, Fut>(mut self, f: F) -> Self
    where
        F: Fn(Context<K>) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<(), HandlerError>> + Send + 'static,
    {
        self.subs = Some(boxed(f));
        self
    }

    /// Attempts before it fails for good (at least 1).
    #[must_use]
    pub fn retries(mut self, retries: u8) -> Self {
        self.retries = retries;
        self
    }

    /// How long an episode (first attempt to last, retries and delays
    /// included) may take; a run still going then is abandoned and the
    /// handler fails for good.
    #[must_use]
    pub fn timeout(mut self, timeout: Duration) -> Self {
        self.timeout = timeout;
        self
    }
}

/// How a run failed.
///
/// ```
/// use std::time::Duration;
/// use steadfast::lifecycle::HandlerError;
///
/// let busy = HandlerError::temporary("the registry is busy", Duration::from_secs(10));
/// assert_eq!(busy.to_string(), "temporary error (retry in 10s): the registry is busy");
/// let bad = HandlerError::permanent("spec.size must be positive");
/// assert!(matches!(bad, HandlerError::Permanent { .. }));
/// ```
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum HandlerError {
    /// Try again after `delay` (until the handler's retries or timeout run
    /// out).
    #[error("temporary error (retry in {delay:?}): {message}")]
    Temporary {
        /// What went wrong.
        message: String,
        /// How long to wait.
        delay: Duration,
    },
    /// Do not try again on this state of the object.
    #[error("permanent error: {message}")]
    Permanent {
        /// What went wrong.
        message: String,
    },
}

impl HandlerError {
    /// A temporary error: retry after `delay`.
    pub fn temporary(message: impl Into<String>, delay: Duration) -> Self {
        HandlerError::Temporary {
            message: message.into(),
            delay,
        }
    }

    /// A permanent error.
    pub fn permanent(message: impl Into<String>) -> Self {
        HandlerError::Permanent {
            message: message.into(),
        }
    }
}

/// What a run gets: the object, the essence it must act on and the one
/// last handled in full, its attempt, and the means to write to the object
/// (through the engine's own patch, so that the write and the run's outcome
/// land together) and to declare sub-handlers.
///
/// Cloning gives another handle on the same run.
///
/// ```
/// use k8s_openapi::api::core::v1::ConfigMap;
/// use serde_json::json;
/// use steadfast::lifecycle::{Context, Handler, HandlerError};
///
/// let handler = Handler::new(|ctx: Context<ConfigMap>| async move {
///     for (path, old, new) in ctx.diff() {
///         println!("{path}: {old:?} -> {new:?}");
///     }
///     if ctx.new_value("data.mode") == Some(&json!("archive")) {
///         // Lands with this run's outcome, in the engine's own patch.
///         ctx.patch(json!({ "metadata": { "labels": { "archived": "true" } } }));
///     }
///     Ok::<(), HandlerError>(())
/// });
/// # let _ = handler;
/// ```
pub struct Context<K> {
    pub(crate) object: Arc<K>,
    pub(crate) handler: String,
    pub(crate) sub: Option<String>,
    pub(crate) essence: Value,
    pub(crate) old: Option<Value>,
    pub(crate) retry: u8,
    pub(crate) epoch: u32,
    pub(crate) out: Arc<Mutex<RunOutput>>,
    /// Becomes `true` when the engine cancels the run at its deadline.
    pub(crate) cancel: tokio::sync::watch::Receiver<bool>,
}

impl<K> Clone for Context<K> {
    fn clone(&self) -> Self {
        Context {
            object: self.object.clone(),
            handler: self.handler.clone(),
            sub: self.sub.clone(),
            essence: self.essence.clone(),
            old: self.old.clone(),
            retry: self.retry,
            epoch: self.epoch,
            out: self.out.clone(),
            cancel: self.cancel.clone(),
        }
    }
}

/// Adds the leaf changes between `old` and `new` under `path`.
fn diff_into(
    changes: &mut Vec<(String, Option<Value>, Option<Value>)>,
    path: String,
    old: Option<&Value>,
    new: Option<&Value>,
) {
    if old == new {
        return;
    }
    let join = |key: &str| joined(&path, key);
    match (old, new) {
        (Some(Value::Object(a)), Some(Value::Object(b))) => {
            let keys: std::collections::BTreeSet<&String> = a.keys().chain(b.keys()).collect();
            for key in keys {
                diff_into(changes, join(key), a.get(key), b.get(key));
            }
        }
        (None, Some(Value::Object(b))) => {
            for (key, value) in b {
                diff_into(changes, join(key), None, Some(value));
            }
        }
        (Some(Value::Object(a)), None) => {
            for (key, value) in a {
                diff_into(changes, join(key), Some(value), None);
            }
        }
        (old, new) => changes.push((path, old.cloned(), new.cloned())),
    }
}

/// What a run wrote and declared.
#[derive(Default)]
pub(crate) struct RunOutput {
    pub(crate) patch: Option<Value>,
    pub(crate) subs: Vec<String>,
}

impl<K> Context<K> {
    /// The newest version of the object the operator has seen.
    pub fn object(&self) -> &K {
        &self.object
    }

    /// The handler's id (`parent/child` for a sub-handler).
    pub fn handler(&self) -> &str {
        &self.handler
    }

    /// For a sub-handler, the name its parent declared it by.
    pub fn sub_name(&self) -> Option<&str> {
        self.sub.as_deref()
    }

    /// The essence this run must act on: every top-level field but
    /// `apiVersion`, `kind`, `metadata` and `status` (`spec`, `data`...),
    /// the labels, the annotations (less steadfast's and `kubectl`'s) and
    /// the watched status fields.
    pub fn essence(&self) -> &Value {
        &self.essence
    }

    /// The essence last handled in full (`None` before the first time).
    pub fn old(&self) -> Option<&Value> {
        self.old.as_ref()
    }

    /// The value at a path of [`Context::essence`] (`spec.size`,
    /// `metadata.labels["app.kubernetes.io/name"]`; see
    /// [`Operator::on_field`](super::Operator::on_field)).
    pub fn new_value(&self, path: &str) -> Option<&Value> {
        at_path(&self.essence, path)
    }

    /// The value at a path of [`Context::old`], as
    /// [`Context::new_value`] reads it.
    pub fn old_value(&self, path: &str) -> Option<&Value> {
        self.old.as_ref().and_then(|old| at_path(old, path))
    }

    /// What changed from [`Context::old`] to [`Context::essence`], leaf by
    /// leaf, in path order: `(path, old, new)`, `None` where a side has no
    /// value (everything is new at creation).
    pub fn diff(&self) -> Vec<(String, Option<Value>, Option<Value>)> {
        let mut changes = Vec::new();
        diff_into(
            &mut changes,
            String::new(),
            self.old.as_ref(),
            Some(&self.essence),
        );
        changes
    }

    /// Attempts before this one in the episode.
    pub fn retry(&self) -> u8 {
        self.retry
    }

    /// The fencing epoch of the claim the run works under: it grows with
    /// every claim taken on the object, by any replica, and stays the same
    /// while this replica renews its claim. A run that goes on after its
    /// claim was taken over (a paused pod, a cancel not yet heard) has a
    /// smaller epoch than every run after the take-over: tag the
    /// handler's own writes elsewhere with it, and have the store refuse a
    /// write whose epoch is below the greatest it has seen, so that such a
    /// run's late writes cannot land after its successor's. 0 without
    /// claims (the `Kopf` variant).
    ///
    /// ```no_run
    /// # use k8s_openapi::api::core::v1::ConfigMap;
    /// # use steadfast::lifecycle::{Context, Handler, HandlerError};
    /// // A store that keeps, per object, the greatest epoch it has seen.
    /// async fn put_if_current(key: &str, epoch: u32, value: &str) -> Result<(), String> {
    ///     # let _ = (key, epoch, value);
    ///     // e.g. UPDATE backups SET value = $3, epoch = $2
    ///     //      WHERE key = $1 AND epoch <= $2
    ///     Ok(())
    /// }
    ///
    /// let handler = Handler::new(|ctx: Context<ConfigMap>| async move {
    ///     put_if_current("backup/demo", ctx.epoch(), "started")
    ///         .await
    ///         .map_err(HandlerError::permanent)
    /// });
    /// # let _ = handler;
    /// ```
    pub fn epoch(&self) -> u32 {
        self.epoch
    }

    /// Resolves when the run is cancelled: its episode's deadline passed
    /// and the engine gave it up. The run's own future is dropped at that
    /// moment too, so this matters only to work the handler started
    /// elsewhere (a spawned task, a blocking thread), which should stop.
    pub async fn cancelled(&self) {
        let mut cancel = self.cancel.clone();
        // An error means the run is over, its driver gone: cancelled too.
        let _ = cancel.wait_for(|cancelled| *cancelled).await;
    }

    /// Whether the run has been cancelled (see [`Context::cancelled`]).
    pub fn is_cancelled(&self) -> bool {
        *self.cancel.borrow()
    }

    /// Adds a JSON merge patch to what the run writes to the object; it
    /// goes in the engine's patch with the run's outcome, only if the run
    /// succeeds.
    pub fn patch(&self, merge: Value) {
        let mut out = self.out.lock().expect("a run's output");
        compose(out.patch.get_or_insert(Value::Null), &merge);
    }

    /// Declares a sub-handler `name`, run by the handler's
    /// [`Handler::sub_handlers`] code with its own progress (its id is
    /// `handler/name`).
    pub fn sub(&self, name: impl Into<String>) {
        let mut out = self.out.lock().expect("a run's output");
        let name = name.into();
        if !out.subs.contains(&name) {
            out.subs.push(name);
        }
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn the_diff_should_list_changed_leaves_in_path_order() {
        let ctx = Context {
            object: Arc::new(()),
            handler: "h".into(),
            sub: None,
            essence: json!({"spec": {"size": 2, "image": "a"}, "metadata": {"labels": {"x": "1"}}}),
            old: Some(json!({"spec": {"size": 1, "image": "a", "gone": true}})),
            retry: 0,
            epoch: 0,
            out: Arc::default(),
            cancel: tokio::sync::watch::channel(false).1,
        };
        assert_eq!(
            ctx.diff(),
            vec![
                ("metadata.labels.x".to_owned(), None, Some(json!("1"))),
                ("spec.gone".to_owned(), Some(json!(true)), None),
                ("spec.size".to_owned(), Some(json!(1)), Some(json!(2))),
            ]
        );
    }
}
