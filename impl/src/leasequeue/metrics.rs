//! The schedulers' and controllers' metrics, served by a
//! [`crate::metrics::MetricsEndpoint`] given to their builders. What a
//! role's state shows (lease, fence, queues, running activations) is read
//! from the role after each step; what passes through the driver
//! (activations settled, messages sent again) is counted there.

use std::time::Instant;

use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::metrics::histogram::{exponential_buckets, Histogram};
use prometheus_client::registry::Registry;
use steadfast_spec::leasequeue::scheduler::{LeaseState, Scheduler};
use steadfast_spec::leasequeue::trace::Named;
use steadfast_spec::leasequeue::{ExecutionFailure, FailReason, KeyFault, Outcome};

/// How an activation ended (`executed`, `execution_failed`, `failed`,
/// `forgotten`, `ambiguous`, or on a scheduler `forwarded`), and why if it
/// did not finish.
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct Ended {
    outcome: &'static str,
    reason: &'static str,
}

impl Ended {
    fn of(outcome: Outcome) -> Self {
        let (outcome, reason) = match outcome {
            Outcome::Executed => ("executed", ""),
            Outcome::ExecutionFailed(failure) => {
                let reason = match failure {
                    ExecutionFailure::Error => "Error",
                    ExecutionFailure::Panic => "Panic",
                    ExecutionFailure::Timeout => "Timeout",
                };
                ("execution_failed", reason)
            }
            Outcome::Failed(reason) => ("failed", reason_label(reason)),
            Outcome::Forgotten => ("forgotten", ""),
            Outcome::Ambiguous(reason) => ("ambiguous", reason_label(reason)),
            Outcome::Unrouted { why, .. } => ("unrouted", fault_label(why)),
        };
        Ended { outcome, reason }
    }

    fn forwarded() -> Self {
        Ended {
            outcome: "forwarded",
            reason: "",
        }
    }
}

/// The label of a reason an activation did not run (labels are
/// `&'static str`).
fn reason_label(reason: FailReason) -> &'static str {
    match reason {
        FailReason::NoSchedulerEndpoint => "NoSchedulerEndpoint",
        FailReason::NoQueueEndpoint => "NoQueueEndpoint",
        FailReason::PastDeadline => "PastDeadline",
    }
}

/// The label of why an action's endpoint key could not be read.
fn fault_label(why: KeyFault) -> &'static str {
    match why {
        KeyFault::ForeignValue => "ForeignValue",
        KeyFault::AccessDenied => "AccessDenied",
    }
}

/// 10 ms to about 82 s, doubling.
fn recovery_seconds() -> Histogram {
    Histogram::new(exponential_buckets(0.01, 2.0, 14))
}

/// Every metric of one scheduler.
#[derive(Debug)]
pub(crate) struct SchedulerMetrics {
    activations: Family<Ended, Counter>,
    running: Gauge,
    queues: Gauge,
    lease_held: Gauge,
    fenced: Gauge,
    suspensions: Counter,
    recovery: Histogram,
    redeliveries: Counter,
    /// When the current suspension began, if it is suspended.
    suspended_since: Option<Instant>,
    /// Whether it ever could hand out work: waiting for its first lease is
    /// no suspension.
    acted: bool,
}

impl SchedulerMetrics {
    /// The metrics, and the registry that serves them.
    pub(crate) fn new() -> (Self, Registry) {
        let metrics = SchedulerMetrics {
            activations: Family::default(),
            running: Gauge::default(),
            queues: Gauge::default(),
            lease_held: Gauge::default(),
            fenced: Gauge::default(),
            suspensions: Counter::default(),
            recovery: recovery_seconds(),
            redeliveries: Counter::default(),
            suspended_since: None,
            acted: false,
        };
        let mut registry = Registry::with_prefix("steadfast_scheduler");
        registry.register(
            "activations",
            "Activations this scheduler settled: executed, forwarded to the owner, or failed (with the reason)",
            metrics.activations.clone(),
        );
        registry.register(
            "running",
            "Activations executing now",
            metrics.running.clone(),
        );
        registry.register(
            "queues_owned",
            "Action queues this scheduler owns",
            metrics.queues.clone(),
        );
        registry.register(
            "lease_held",
            "1 while the scheduler holds an etcd lease, else 0",
            metrics.lease_held.clone(),
        );
        registry.register(
            "fenced",
            "1 while the scheduler may hand out no work (no lease, or its validity ran out until etcd confirms it), else 0",
            metrics.fenced.clone(),
        );
        registry.register(
            "fence_suspensions",
            "Times the scheduler stopped handing out work for want of a valid lease",
            metrics.suspensions.clone(),
        );
        registry.register(
            "recovery_seconds",
            "How long each suspension lasted: from the lease's validity running out (an etcd outage) to work handed out again",
            metrics.recovery.clone(),
        );
        registry.register(
            "redeliveries",
            "Forwards and outcomes sent again for want of an acknowledgement",
            metrics.redeliveries.clone(),
        );
        (metrics, registry)
    }

    /// Reads what the role's state shows, after a step.
    pub(crate) fn observe(&mut self, role: &Scheduler<Named>) {
        let held = matches!(role.lease, LeaseState::Held { .. });
        let acting = role.valid_lease().is_some();
        self.lease_held.set(i64::from(held));
        self.fenced.set(i64::from(!acting));
        self.queues.set(count(role.queues.len()));
        self.running.set(count(role.running.len()));
        match (self.suspended_since, acting) {
            (None, false) if self.acted => {
                self.suspensions.inc();
                self.suspended_since = Some(Instant::now());
            }
            (Some(since), true) => {
                self.recovery.observe(since.elapsed().as_secs_f64());
                self.suspended_since = None;
            }
            _ => {}
        }
        self.acted |= acting;
    }

    /// An activation was settled as `outcome`.
    pub(crate) fn settled(&self, outcome: Outcome) {
        self.activations.get_or_create(&Ended::of(outcome)).inc();
    }

    /// An activation was forwarded to a peer, which took it in.
    pub(crate) fn forwarded(&self) {
        self.activations.get_or_create(&Ended::forwarded()).inc();
    }

    /// `count` messages were sent again.
    pub(crate) fn resent(&self, count: usize) {
        self.redeliveries
            .inc_by(u64::try_from(count).unwrap_or(u64::MAX));
    }
}

/// Every metric of one controller.
#[derive(Debug)]
pub(crate) struct ControllerMetrics {
    submissions: Family<Ended, Counter>,
    pending: Gauge,
    redeliveries: Counter,
    overdue: Counter,
}

impl ControllerMetrics {
    /// The metrics, and the registry that serves them.
    pub(crate) fn new() -> (Self, Registry) {
        let metrics = ControllerMetrics {
            submissions: Family::default(),
            pending: Gauge::default(),
            redeliveries: Counter::default(),
            overdue: Counter::default(),
        };
        let mut registry = Registry::with_prefix("steadfast_controller");
        registry.register(
            "activations",
            "Submissions ended: executed, or failed (with the reason)",
            metrics.submissions.clone(),
        );
        registry.register(
            "in_flight",
            "Submissions not ended yet",
            metrics.pending.clone(),
        );
        registry.register(
            "redeliveries",
            "Activations sent again for want of an acknowledgement",
            metrics.redeliveries.clone(),
        );
        registry.register(
            "overdue",
            "Submissions whose deadline passed with no outcome (they go on until they end)",
            metrics.overdue.clone(),
        );
        (metrics, registry)
    }

    /// A submission's deadline passed with no outcome.
    pub(crate) fn overdue(&self) {
        self.overdue.inc();
    }

    /// A submission ended as `outcome`; `pending` remain.
    pub(crate) fn ended(&self, outcome: Outcome, pending: usize) {
        self.submissions.get_or_create(&Ended::of(outcome)).inc();
        self.in_flight(pending);
    }

    /// `pending` submissions have not ended.
    pub(crate) fn in_flight(&self, pending: usize) {
        self.pending.set(count(pending));
    }

    /// `count` activations were sent again.
    pub(crate) fn resent(&self, count: usize) {
        self.redeliveries
            .inc_by(u64::try_from(count).unwrap_or(u64::MAX));
    }
}

fn count(n: usize) -> i64 {
    i64::try_from(n).unwrap_or(i64::MAX)
}
