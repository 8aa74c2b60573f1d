//! The operator's metrics: runs by handler and outcome, their duration,
//! retries and failures for good as the engine tells them, patches by the
//! API server's answer, and the objects tracked. Served by a
//! [`crate::metrics::MetricsEndpoint`] given to [`super::Operator::metrics`].

use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::metrics::histogram::{exponential_buckets, Histogram};
use prometheus_client::registry::Registry;
use steadfast_spec::lifecycle::named::Named;
use steadfast_spec::lifecycle::Verdict;

/// A handler's run and how it ended.
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct RunLabels {
    handler: String,
    outcome: &'static str,
}

/// A handler or sub-handler.
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct HandlerLabels {
    handler: String,
}

/// The class of the API server's answer to a patch.
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct AnswerLabels {
    answer: &'static str,
}

/// 5 ms to about 41 s, doubling.
fn run_seconds() -> Histogram {
    Histogram::new(exponential_buckets(0.005, 2.0, 14))
}

/// Every metric of one operator.
#[derive(Clone, Debug)]
pub(crate) struct Metrics {
    runs: Family<RunLabels, Counter>,
    duration: Family<HandlerLabels, Histogram, fn() -> Histogram>,
    retries: Family<HandlerLabels, Counter>,
    failures: Family<HandlerLabels, Counter>,
    patches: Family<AnswerLabels, Counter>,
    objects: Gauge,
}

impl Metrics {
    /// The metrics, and the registry that serves them.
    pub(crate) fn new() -> (Self, Registry) {
        let metrics = Metrics {
            runs: Family::default(),
            duration: Family::new_with_constructor(run_seconds),
            retries: Family::default(),
            failures: Family::default(),
            patches: Family::default(),
            objects: Gauge::default(),
        };
        let mut registry = Registry::with_prefix("steadfast_lifecycle");
        registry.register(
            "runs",
            "Runs of handlers and sub-handlers, by how they ended (success, temporary, permanent, panicked)",
            metrics.runs.clone(),
        );
        registry.register(
            "run_duration_seconds",
            "How long runs took, by handler",
            metrics.duration.clone(),
        );
        registry.register(
            "retries",
            "Runs that failed and that the engine tries again, by handler",
            metrics.retries.clone(),
        );
        registry.register(
            "failures",
            "Handlers the engine gave up for good (a permanent error, the last attempt, or out of time)",
            metrics.failures.clone(),
        );
        registry.register(
            "patches",
            "The engine's patches, by the API server's answer (applied, conflict, refused, throttled, unanswered)",
            metrics.patches.clone(),
        );
        registry.register(
            "objects",
            "Objects with a driver (watched and not yet gone)",
            metrics.objects.clone(),
        );
        (metrics, registry)
    }

    /// A run of `handler` ended as `outcome` after `seconds`.
    pub(crate) fn ran(&self, handler: &str, outcome: &'static str, seconds: f64) {
        let handler = handler.to_owned();
        self.duration
            .get_or_create(&HandlerLabels {
                handler: handler.clone(),
            })
            .observe(seconds);
        self.runs
            .get_or_create(&RunLabels { handler, outcome })
            .inc();
    }

    /// The engine's verdict on a run.
    pub(crate) fn told(&self, verdict: &Verdict<Named>) {
        let (family, handler) = match verdict {
            Verdict::Retrying { handler, .. } => (&self.retries, handler),
            Verdict::Failed { handler, .. } => (&self.failures, handler),
            // Counted with the patches' answers, or not of a run.
            Verdict::PatchRefused { .. } | Verdict::Unreadable { .. } => return,
        };
        family
            .get_or_create(&HandlerLabels {
                handler: handler.clone(),
            })
            .inc();
    }

    /// A patch was answered `answer`.
    pub(crate) fn patched(&self, answer: &'static str) {
        self.patches.get_or_create(&AnswerLabels { answer }).inc();
    }

    /// `count` objects have a driver.
    pub(crate) fn objects(&self, count: usize) {
        self.objects.set(i64::try_from(count).unwrap_or(i64::MAX));
    }
}
