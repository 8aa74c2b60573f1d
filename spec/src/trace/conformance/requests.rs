//! "every answer answers a request": each input a driver fed its role that
//! answers something (an etcd reply, a finished execution, a timer, a
//! bounce) answers a request the role made in an earlier step, and no
//! request is answered twice. A driver that runs an activation twice, or
//! makes up an etcd reply, breaks it; one that drops a reply does not (a
//! reply may be lost), which the etcd rules catch where the traces show it.

use std::collections::{BTreeMap, BTreeSet};

use super::{controllers, schedulers, At, Rule, Violation};
use crate::leasequeue::{controller, scheduler};
use crate::trace::{Record, Trace};

pub(super) fn check(traces: &[Trace], out: &mut Vec<Violation>) {
    for (trace, _, records) in schedulers(traces) {
        walk(
            trace,
            records,
            Asked::default(),
            scheduler_request,
            scheduler_answer,
            out,
        );
    }
    for (trace, _, records) in controllers(traces) {
        // A controller starts watching from after the listing its header
        // holds: its driver opens that watch before the first step.
        let mut asked = Asked::default();
        asked.ask("the watch".into());
        walk(
            trace,
            records,
            asked,
            controller_request,
            controller_answer,
            out,
        );
    }
}

/// What a request asks, by how its answer names it.
enum Request {
    /// An answer is owed for each one made.
    Each(String),
    /// A timer: armed again, it replaces itself; it fires once.
    Timer(String),
    /// A message sent, which may bounce, once per send or less.
    Sent(String),
}

/// What an input answers.
enum Answer {
    /// Not an answer (a message, a submission, the first wake-up).
    None,
    /// The answer to one [`Request::Each`].
    Each(String),
    /// The firing of a [`Request::Timer`].
    Timer(String),
    /// A bounce of a [`Request::Sent`].
    Bounce(String),
}

/// The requests a role has made and not had answered.
#[derive(Default)]
struct Asked {
    owed: BTreeMap<String, usize>,
    armed: BTreeSet<String>,
    sent: BTreeSet<String>,
}

impl Asked {
    fn ask(&mut self, what: String) {
        *self.owed.entry(what).or_default() += 1;
    }

    /// Takes `answer` in: whether a request was waiting for it.
    fn answer(&mut self, answer: Answer) -> Result<(), String> {
        match answer {
            Answer::None => Ok(()),
            Answer::Each(what) => match self.owed.get_mut(&what) {
                Some(n) if *n > 0 => {
                    *n -= 1;
                    Ok(())
                }
                _ => Err(format!(
                    "{what} was answered, but not asked for (or answered before)"
                )),
            },
            Answer::Timer(what) => {
                if self.armed.remove(&what) {
                    Ok(())
                } else {
                    Err(format!("{what} fired, but was not armed"))
                }
            }
            Answer::Bounce(what) => {
                if self.sent.contains(&what) {
                    Ok(())
                } else {
                    Err(format!("{what} bounced, but was never sent"))
                }
            }
        }
    }
}

/// Walks one role's records, its requests asked by `request` and its
/// answers by `answer`.
fn walk<I, E>(
    trace: usize,
    records: &[Record<I, E>],
    mut asked: Asked,
    request: impl Fn(&E) -> Option<Request>,
    answer: impl Fn(&I, bool) -> Answer,
    out: &mut Vec<Violation>,
) {
    for (step, record) in records.iter().enumerate() {
        // A message from another node is no answer: the network rule reads
        // it.
        let answered = match record.from {
            Some(_) => Ok(()),
            None => asked.answer(answer(&record.input, step == 0)),
        };
        if let Err(what) = answered {
            out.push(Violation {
                rule: Rule::AnswersAnswerRequests,
                places: vec![At { trace, step }],
                what,
            });
        }
        for effect in &record.effects {
            match request(effect) {
                Some(Request::Each(what)) => asked.ask(what),
                Some(Request::Timer(what)) => {
                    asked.armed.insert(what);
                }
                Some(Request::Sent(what)) => {
                    asked.sent.insert(what);
                }
                None => {}
            }
        }
    }
}

fn scheduler_request(
    effect: &scheduler::Effect<crate::leasequeue::trace::Named>,
) -> Option<Request> {
    use scheduler::Effect as E;
    Some(match effect {
        E::WakeIn { .. } => Request::Timer("the wake-up".into()),
        E::RetryIn { .. } => Request::Timer("the retry timer".into()),
        E::IdleTimer { action, .. } => Request::Timer(format!("the idle timer of {action}")),
        E::Grant { .. } => Request::Each("a lease grant".into()),
        E::KeepAlive { lease, keepalive } => {
            Request::Each(format!("keepalive {keepalive} of lease {lease}"))
        }
        E::Register { lease, .. } => Request::Each(format!("the member key under lease {lease}")),
        E::Revoke { lease } => Request::Each(format!("the revoke of lease {lease}")),
        E::Claim { action, lease, .. } => {
            Request::Each(format!("the claim of {action} under lease {lease}"))
        }
        E::Delete { action, .. } => Request::Each(format!("the delete of {action}'s key")),
        E::Resolve { id, action } => Request::Each(format!("the lookup of {action} for {id}")),
        E::Execute { id, .. } => Request::Each(format!("the execution of {id}")),
        E::Forward { id, to, .. } => Request::Sent(format!("activation {id} to {to}")),
        E::Report { id, .. } => Request::Sent(format!("the outcome of {id}")),
        E::Ack { .. } | E::Refuse { .. } | E::Drained => return None,
    })
}

fn scheduler_answer(
    input: &scheduler::Input<crate::leasequeue::trace::Named>,
    first: bool,
) -> Answer {
    use scheduler::Input as I;
    match input {
        I::Wake if first => Answer::None,
        I::Wake => Answer::Timer("the wake-up".into()),
        I::Retry => Answer::Timer("the retry timer".into()),
        I::Idle { action } => Answer::Timer(format!("the idle timer of {action}")),
        I::Granted { .. } => Answer::Each("a lease grant".into()),
        I::KeptAlive {
            lease, keepalive, ..
        } => Answer::Each(format!("keepalive {keepalive} of lease {lease}")),
        I::Registered { lease, .. } => Answer::Each(format!("the member key under lease {lease}")),
        I::Revoked { lease } => Answer::Each(format!("the revoke of lease {lease}")),
        I::Claimed { action, lease, .. } => {
            Answer::Each(format!("the claim of {action} under lease {lease}"))
        }
        I::Deleted { action } => Answer::Each(format!("the delete of {action}'s key")),
        I::Resolved { id, action, .. } => Answer::Each(format!("the lookup of {action} for {id}")),
        I::Executed { id } => Answer::Each(format!("the execution of {id}")),
        I::Bounced { id, to, .. } => Answer::Bounce(format!("activation {id} to {to}")),
        I::ReportBounced { id } => Answer::Bounce(format!("the outcome of {id}")),
        I::Activation { .. }
        | I::ForwardAcked { .. }
        | I::ReportAcked { .. }
        | I::CreateQueue { .. }
        | I::Drain
        | I::Forget { .. } => Answer::None,
    }
}

fn controller_request(
    effect: &controller::Effect<crate::leasequeue::trace::Named>,
) -> Option<Request> {
    use controller::Effect as E;
    Some(match effect {
        E::WakeIn { .. } => Request::Timer("the wake-up".into()),
        E::DeadlineIn { id, .. } => Request::Timer(format!("the deadline of {id}")),
        E::Get { id, action } => Request::Each(format!("the lookup of {action} for {id}")),
        E::List => Request::Each("a listing".into()),
        E::Watch { .. } => Request::Each("the watch".into()),
        E::Send { id, to, .. } => Request::Sent(format!("activation {id} to {to}")),
        E::RequestProgress | E::CreateQueue { .. } | E::Resolve { .. } | E::Overdue { .. } => {
            return None
        }
    })
}

fn controller_answer(
    input: &controller::Input<crate::leasequeue::trace::Named>,
    first: bool,
) -> Answer {
    use controller::Input as I;
    match input {
        I::Wake if first => Answer::None,
        I::Wake => Answer::Timer("the wake-up".into()),
        I::Deadline { id } => Answer::Timer(format!("the deadline of {id}")),
        I::Got { id, action, .. } | I::GetFailed { id, action } => {
            Answer::Each(format!("the lookup of {action} for {id}"))
        }
        I::Listed { .. } => Answer::Each("a listing".into()),
        I::WatchStarted { .. } => Answer::Each("the watch".into()),
        I::Bounced { id, to, .. } => Answer::Bounce(format!("activation {id} to {to}")),
        I::Submit { .. }
        | I::Changed { .. }
        | I::Progress { .. }
        | I::Compacted { .. }
        | I::Acked { .. }
        | I::Outcome { .. } => Answer::None,
    }
}
