//! What the traces of every node show together, checked against the
//! protocols' properties and against the model's world.
//!
//! A replay through `step` shows that each role agrees with itself. It
//! cannot see a driver that decides something outside its role: one that
//! runs an activation twice, makes up a message or an answer, or drops
//! one. [`check`] reads the traces of every node of a run together and
//! reports each [`Violation`] of a [`Rule`]:
//!
//! - the protocols' safety properties, as the models state them, counted
//!   from what the traces show ([`Rule::is_property`]): a legacy variant
//!   may break these, as its model does;
//! - the world's rules: every answer a driver fed its role answers a
//!   request the role made, every message was sent by the node it names,
//!   and every etcd or Kubernetes API answer is one the environment model
//!   could give for the history the traces reveal. A thin driver over a
//!   real etcd or API server never breaks these, whatever the variant.
//!
//! Traces are merged by their wall-clock stamps ([`Record::at`]), which
//! the nodes' clocks may skew by up to [`Options::skew`].
//!
//! [`Record::at`]: crate::trace::Record::at

mod activations;
mod etcd;
mod handlers;
mod kube;
mod network;
mod requests;
#[cfg(test)]
mod tests;

use super::{Run, Trace};
use crate::leasequeue::trace::{
    ControllerHeader, ControllerRecord, SchedulerHeader, SchedulerRecord,
};
use crate::lifecycle::trace::{EngineHeader, EngineRecord};

/// A place in the traces: a trace, by its index in what [`check`] was
/// given, and a step of it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct At {
    /// The trace.
    pub trace: usize,
    /// The step, counted from 0 after the header.
    pub step: usize,
}

/// A rule the traces of a run must keep.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Rule {
    /// No activation runs twice, unless a scheduler it was delivered to
    /// stopped before acknowledging it, or forgot it.
    ExecutedAtMostOnce,
    /// An activation ends once: it fails only if it never ran, its callers
    /// are told the same end, and its submission resolves at most once.
    AtMostOneOutcome,
    /// No two schedulers serve an action from queues on the same key.
    OneOwnerPerKey,
    /// A handler succeeds once per digest per operator start.
    HandlerSucceedsOnce,
    /// No two replicas run handlers of one object at the same time.
    OneReplicaAtATime,
    /// Every answer a driver fed its role answers a request it made.
    AnswersAnswerRequests,
    /// Every message a node took in was sent by the node it names.
    SentByItsSender,
    /// etcd's revisions increase.
    RevisionsIncrease,
    /// A key is created at most once between its deletes.
    CreatedOnceBetweenDeletes,
    /// A lease's revoke or expiry removes all its keys at one revision.
    LeaseKeysGoTogether,
    /// A watch delivers every revision of its keys, in order, unless it
    /// reported a compaction.
    WatchWithoutGaps,
    /// A keepalive succeeds only for a lease not known to be gone.
    KeepAliveOfLiveLease,
    /// Each write of an object makes a newer resourceVersion.
    WriteMakesNewerVersion,
    /// The version a patch made is the one the watch shows next.
    PatchedVersionShown,
    /// A 409 comes only after a newer version existed.
    ConflictAfterNewerVersion,
    /// A watch shows an object's versions in order.
    VersionsInOrder,
}

impl Rule {
    /// Every rule, in the order reports list them.
    pub const ALL: [Rule; 16] = [
        Rule::ExecutedAtMostOnce,
        Rule::AtMostOneOutcome,
        Rule::OneOwnerPerKey,
        Rule::HandlerSucceedsOnce,
        Rule::OneReplicaAtATime,
        Rule::AnswersAnswerRequests,
        Rule::SentByItsSender,
        Rule::RevisionsIncrease,
        Rule::CreatedOnceBetweenDeletes,
        Rule::LeaseKeysGoTogether,
        Rule::WatchWithoutGaps,
        Rule::KeepAliveOfLiveLease,
        Rule::WriteMakesNewerVersion,
        Rule::PatchedVersionShown,
        Rule::ConflictAfterNewerVersion,
        Rule::VersionsInOrder,
    ];

    /// Its name, as reports and the models' properties say it.
    pub fn name(self) -> &'static str {
        match self {
            Rule::ExecutedAtMostOnce => "executed at most once",
            Rule::AtMostOneOutcome => "at most one outcome",
            Rule::OneOwnerPerKey => "one owner per key",
            Rule::HandlerSucceedsOnce => "a handler succeeds once per digest per start",
            Rule::OneReplicaAtATime => "one replica runs an object's handlers at a time",
            Rule::AnswersAnswerRequests => "every answer answers a request",
            Rule::SentByItsSender => "every message was sent by the node it names",
            Rule::RevisionsIncrease => "etcd: revisions increase",
            Rule::CreatedOnceBetweenDeletes => "etcd: a key is created once between deletes",
            Rule::LeaseKeysGoTogether => "etcd: a lease's keys go at one revision",
            Rule::WatchWithoutGaps => "etcd: a watch delivers every revision in order",
            Rule::KeepAliveOfLiveLease => "etcd: a keepalive succeeds only for a live lease",
            Rule::WriteMakesNewerVersion => "kube: each write makes a newer resourceVersion",
            Rule::PatchedVersionShown => "kube: the version a patch made is the one shown",
            Rule::ConflictAfterNewerVersion => "kube: a 409 comes only after a newer version",
            Rule::VersionsInOrder => "kube: a watch shows versions in order",
        }
    }

    /// Whether it is a property of a protocol (which a legacy variant may
    /// break, as its model does), rather than a rule of the world that a
    /// thin driver over a real etcd or API server always keeps.
    pub fn is_property(self) -> bool {
        matches!(
            self,
            Rule::ExecutedAtMostOnce
                | Rule::AtMostOneOutcome
                | Rule::OneOwnerPerKey
                | Rule::HandlerSucceedsOnce
                | Rule::OneReplicaAtATime
        )
    }
}

impl std::fmt::Display for Rule {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

/// A rule broken: where, and what the traces show.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Violation {
    /// The rule.
    pub rule: Rule,
    /// The steps that break it, the one that breaks it last.
    pub places: Vec<At>,
    /// What the traces show, in words.
    pub what: String,
}

/// How traces are read together.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Options {
    /// How far apart the nodes' clocks may be, in milliseconds: a message
    /// may be stamped as taken in up to this long before it was sent.
    pub skew: u64,
}

impl Default for Options {
    /// One second: the nodes of one machine, or of a cluster whose clocks
    /// NTP keeps within a few milliseconds, with room to spare.
    fn default() -> Self {
        Options { skew: 1_000 }
    }
}

/// Every violation of every [`Rule`] that `traces`, the traces of the
/// nodes of one run, show together. [`At::trace`] counts them in the order
/// given.
pub fn check<'a>(traces: impl IntoIterator<Item = &'a Trace>, options: &Options) -> Vec<Violation> {
    let traces: Vec<&Trace> = traces.into_iter().collect();
    let traces = traces.as_slice();
    let mut violations = Vec::new();
    activations::check(traces, &mut violations);
    handlers::check(traces, options, &mut violations);
    requests::check(traces, &mut violations);
    network::check(traces, options, &mut violations);
    etcd::check(traces, &mut violations);
    kube::check(traces, &mut violations);
    violations.sort_by(|a, b| (a.rule, &a.places).cmp(&(b.rule, &b.places)));
    violations
}

/// The traces of one kind of role, each with its index, header and
/// records, as `pick` finds them.
fn of<'a, H: 'a, R: 'a>(
    traces: &'a [&'a Trace],
    pick: impl Fn(&'a Run) -> Option<(&'a H, &'a Vec<R>)> + 'a,
) -> impl Iterator<Item = (usize, &'a H, &'a [R])> + 'a {
    let found = move |(index, trace): (usize, &&'a Trace)| {
        pick(trace.run()).map(|(header, records)| (index, header, records.as_slice()))
    };
    traces.iter().enumerate().filter_map(found)
}

/// The schedulers' traces.
fn schedulers<'a>(
    traces: &'a [&'a Trace],
) -> impl Iterator<Item = (usize, &'a SchedulerHeader, &'a [SchedulerRecord])> + 'a {
    of(traces, |run| match run {
        Run::Scheduler(header, records) => Some((header, records)),
        _ => None,
    })
}

/// The controllers' traces.
fn controllers<'a>(
    traces: &'a [&'a Trace],
) -> impl Iterator<Item = (usize, &'a ControllerHeader, &'a [ControllerRecord])> + 'a {
    of(traces, |run| match run {
        Run::Controller(header, records) => Some((header, records)),
        _ => None,
    })
}

/// The engines' traces.
fn engines<'a>(
    traces: &'a [&'a Trace],
) -> impl Iterator<Item = (usize, &'a EngineHeader, &'a [EngineRecord])> + 'a {
    of(traces, |run| match run {
        Run::Engine(header, records) => Some((header, records)),
        _ => None,
    })
}
