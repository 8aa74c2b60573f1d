//! "every answer answers a request": each input a driver fed its role that
//! answers something (an etcd reply, a finished execution, a timer, a
//! bounce) answers a request the role made in an earlier step, and no
//! request is answered twice. A driver that runs an activation twice, or
//! makes up an etcd reply, breaks it; one that drops a reply does not (a
//! reply may be lost), which the etcd rules catch where the traces show it.

use std::collections::{BTreeMap, BTreeSet};

use super::{controllers, schedulers, At, Rule, Violation};
use crate::leasequeue::trace::Named;
use crate::leasequeue::{controller, scheduler};
use crate::trace::{Record, Trace};

pub(super) fn check(traces: &[&Trace], out: &mut Vec<Violation>) {
    for (trace, _, records) in schedulers(traces) {
        let ledger = Ledger::default();
        walk(
            trace,
            records,
            ledger,
            scheduler_request,
            scheduler_answer,
            out,
        );
    }
    for (trace, _, records) in controllers(traces) {
        // A controller starts watching from after the listing its header
        // holds: its driver opens that watch, watch 0, before the first
        // step.
        let mut ledger = Ledger::default();
        ledger.asked(Asks::Watch(controller::WatchId::default()));
        walk(
            trace,
            records,
            ledger,
            controller_request,
            controller_answer,
            out,
        );
    }
}

/// What a request asks for, named alike by the request and its answer.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
enum Asks {
    WakeUp,
    Retry,
    Idle(String),
    Deadline(String),
    Grant,
    KeepAlive(i64, u64),
    Member(i64),
    Peer(String),
    Revoke(i64),
    Claim(String, i64),
    Delete(String),
    Lookup(String, String),
    Execution(String),
    Listing,
    Watch(controller::WatchId),
    Activation(String, String),
    Outcome(String),
}

/// How a request is answered.
enum Kind {
    /// Once per request made.
    Each,
    /// A timer: armed again, it replaces itself; it fires once.
    Timer,
    /// A message sent, which may bounce (once per send or less).
    Sent,
}

impl Asks {
    fn kind(&self) -> Kind {
        match self {
            Asks::WakeUp | Asks::Retry | Asks::Idle(_) | Asks::Deadline(_) => Kind::Timer,
            Asks::Activation(..) | Asks::Outcome(_) => Kind::Sent,
            _ => Kind::Each,
        }
    }
}

impl std::fmt::Display for Asks {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Asks::WakeUp => write!(f, "the wake-up"),
            Asks::Retry => write!(f, "the retry timer"),
            Asks::Idle(action) => write!(f, "the idle timer of {action}"),
            Asks::Deadline(id) => write!(f, "the deadline of {id}"),
            Asks::Grant => write!(f, "a lease grant"),
            Asks::KeepAlive(lease, keepalive) => {
                write!(f, "keepalive {keepalive} of lease {lease}")
            }
            Asks::Member(lease) => write!(f, "the member key under lease {lease}"),
            Asks::Peer(scheduler) => write!(f, "the lookup of {scheduler}'s member key"),
            Asks::Revoke(lease) => write!(f, "the revoke of lease {lease}"),
            Asks::Claim(action, lease) => write!(f, "the claim of {action} under lease {lease}"),
            Asks::Delete(action) => write!(f, "the delete of {action}'s key"),
            Asks::Lookup(action, id) => write!(f, "the lookup of {action} for {id}"),
            Asks::Execution(id) => write!(f, "the execution of {id}"),
            Asks::Listing => write!(f, "a listing"),
            Asks::Watch(id) => write!(f, "watch {}", id.0),
            Asks::Activation(id, to) => write!(f, "activation {id} to {to}"),
            Asks::Outcome(id) => write!(f, "the outcome of {id}"),
        }
    }
}

/// The requests a role has made and not had answered.
#[derive(Default)]
struct Ledger {
    owed: BTreeMap<Asks, usize>,
    armed: BTreeSet<Asks>,
    sent: BTreeSet<Asks>,
}

impl Ledger {
    /// The role asked for `what`.
    fn asked(&mut self, what: Asks) {
        match what.kind() {
            Kind::Each => *self.owed.entry(what).or_default() += 1,
            Kind::Timer => {
                self.armed.insert(what);
            }
            Kind::Sent => {
                self.sent.insert(what);
            }
        }
    }

    /// An input answered `what`: whether a request was waiting for it.
    fn answered(&mut self, what: Asks) -> Result<(), String> {
        let waiting = match what.kind() {
            Kind::Each => match self.owed.get_mut(&what) {
                Some(n) if *n > 0 => {
                    *n -= 1;
                    true
                }
                _ => false,
            },
            Kind::Timer => self.armed.remove(&what),
            Kind::Sent => self.sent.contains(&what),
        };
        if waiting {
            return Ok(());
        }
        Err(match what.kind() {
            Kind::Each => format!("{what} was answered, but not asked for (or answered before)"),
            Kind::Timer => format!("{what} fired, but was not armed"),
            Kind::Sent => format!("{what} bounced, but was never sent"),
        })
    }
}

/// Walks one role's records, what its effects ask for read by `request`,
/// what its inputs answer by `answer` (told whether it is the first step).
fn walk<I, E>(
    trace: usize,
    records: &[Record<I, E>],
    mut ledger: Ledger,
    request: impl Fn(&E) -> Option<Asks>,
    answer: impl Fn(&I, bool) -> Option<Asks>,
    out: &mut Vec<Violation>,
) {
    for (step, record) in records.iter().enumerate() {
        // A message from another node is no answer: the network rule reads
        // it.
        let answered = match (&record.from, answer(&record.input, step == 0)) {
            (None, Some(what)) => ledger.answered(what),
            _ => Ok(()),
        };
        if let Err(what) = answered {
            out.push(Violation {
                rule: Rule::AnswersAnswerRequests,
                places: vec![At { trace, step }],
                what,
            });
        }
        record
            .effects
            .iter()
            .filter_map(&request)
            .for_each(|what| ledger.asked(what));
    }
}

fn scheduler_request(effect: &scheduler::Effect<Named>) -> Option<Asks> {
    use scheduler::Effect as E;
    Some(match effect {
        E::WakeIn { .. } => Asks::WakeUp,
        E::RetryIn { .. } => Asks::Retry,
        E::IdleTimer { action, .. } => Asks::Idle(action.clone()),
        E::Grant { .. } => Asks::Grant,
        E::KeepAlive { lease, keepalive } => Asks::KeepAlive(*lease, *keepalive),
        E::Register { lease, .. } => Asks::Member(*lease),
        E::Revoke { lease } => Asks::Revoke(*lease),
        E::Claim { action, lease, .. } => Asks::Claim(action.clone(), *lease),
        E::Delete { action, .. } => Asks::Delete(action.clone()),
        E::Resolve { id, action } => Asks::Lookup(action.clone(), id.clone()),
        E::FindMember { scheduler } => Asks::Peer(scheduler.clone()),
        E::Execute { id, .. } => Asks::Execution(id.clone()),
        E::Forward { id, to, .. } => Asks::Activation(id.clone(), to.clone()),
        E::Report { id, .. } => Asks::Outcome(id.clone()),
        E::Ack { .. } | E::Refuse { .. } | E::Cancel { .. } | E::Drained => return None,
    })
}

fn scheduler_answer(input: &scheduler::Input<Named>, first: bool) -> Option<Asks> {
    use scheduler::Input as I;
    Some(match input {
        // The first wake-up starts the role.
        I::Wake if first => return None,
        I::Wake => Asks::WakeUp,
        I::Retry => Asks::Retry,
        I::Idle { action } => Asks::Idle(action.clone()),
        I::Granted { .. } => Asks::Grant,
        I::KeptAlive {
            lease, keepalive, ..
        } => Asks::KeepAlive(*lease, *keepalive),
        I::Registered { lease, .. } => Asks::Member(*lease),
        I::Revoked { lease } => Asks::Revoke(*lease),
        I::Claimed { action, lease, .. } => Asks::Claim(action.clone(), *lease),
        I::Deleted { action } => Asks::Delete(action.clone()),
        I::Resolved { id, action, .. } | I::ResolvedUnreadable { id, action, .. } => {
            Asks::Lookup(action.clone(), id.clone())
        }
        I::MemberFound { scheduler, .. } => Asks::Peer(scheduler.clone()),
        I::Executed { id, .. } => Asks::Execution(id.clone()),
        I::Bounced { id, to, .. } => Asks::Activation(id.clone(), to.clone()),
        I::ReportBounced { id, .. } => Asks::Outcome(id.clone()),
        I::Activation { .. }
        | I::ForwardAcked { .. }
        | I::ReportAcked { .. }
        | I::CreateQueue { .. }
        | I::Drain
        | I::Forget { .. } => return None,
    })
}

fn controller_request(effect: &controller::Effect<Named>) -> Option<Asks> {
    use controller::Effect as E;
    Some(match effect {
        E::WakeIn { .. } => Asks::WakeUp,
        E::DeadlineIn { id, .. } => Asks::Deadline(id.clone()),
        E::Get { id, action } => Asks::Lookup(action.clone(), id.clone()),
        E::List => Asks::Listing,
        E::Watch { id, .. } => Asks::Watch(*id),
        E::Send { id, to, .. } => Asks::Activation(id.clone(), to.clone()),
        E::RequestProgress { .. }
        | E::Unwatch { .. }
        | E::CreateQueue { .. }
        | E::Resolve { .. }
        | E::Overdue { .. }
        | E::Confirm { .. } => return None,
    })
}

fn controller_answer(input: &controller::Input<Named>, first: bool) -> Option<Asks> {
    use controller::Input as I;
    Some(match input {
        I::Wake if first => return None,
        I::Wake => Asks::WakeUp,
        I::Deadline { id } => Asks::Deadline(id.clone()),
        I::Got { id, action, .. }
        | I::GotUnreadable { id, action, .. }
        | I::GetFailed { id, action } => Asks::Lookup(action.clone(), id.clone()),
        I::Listed { .. } => Asks::Listing,
        I::WatchStarted { watch, .. } => Asks::Watch(*watch),
        I::Bounced { id, to, .. } => Asks::Activation(id.clone(), to.clone()),
        I::Submit { .. }
        | I::Changed { .. }
        | I::Progress { .. }
        | I::Compacted { .. }
        | I::Acked { .. }
        | I::Outcome { .. } => return None,
    })
}
