//! "every message was sent by the node it names": each message a node took
//! in (a step whose record names its sender, [`Record::from`]) was sent by
//! that node, in a step of its trace stamped no later than the taking in
//! (within the clocks' skew). A driver that makes a message up, or feeds
//! its role an outcome or an acknowledgement no node sent, breaks it.
//!
//! A sender with no trace among those given is not checked: the check says
//! what the traces show, and a node that recorded none shows nothing.
//!
//! [`Record::from`]: crate::trace::Record::from

use std::collections::{BTreeMap, BTreeSet};

use super::{controllers, schedulers, At, Options, Rule, Violation};
use crate::leasequeue::{controller, scheduler, Outcome};
use crate::trace::Trace;

pub(super) fn check(traces: &[&Trace], options: &Options, out: &mut Vec<Violation>) {
    let sent = Sent::of(traces);
    for (trace, header, records) in schedulers(traces) {
        let me = || header.id.clone();
        for (step, record) in records.iter().enumerate() {
            let Some(from) = &record.from else { continue };
            use scheduler::Input as I;
            let message = match &record.input {
                I::Activation {
                    id,
                    forwarded: false,
                    ..
                } => Message::Activation(id.clone(), me()),
                I::Activation { id, .. } => Message::Forward(id.clone(), me()),
                I::ForwardAcked { id, .. } => Message::Ack(id.clone()),
                I::Bounced { id, .. } => Message::Refusal(id.clone()),
                I::CreateQueue { action } => Message::Queue(action.clone(), me()),
                I::ReportAcked { id, .. } => Message::Receipt(id.clone(), me()),
                other => Message::Other(format!("{other:?} to {}", header.id)),
            };
            sent.check(from, &message, record.at, At { trace, step }, options, out);
        }
    }
    for (trace, header, records) in controllers(traces) {
        for (step, record) in records.iter().enumerate() {
            let Some(from) = &record.from else { continue };
            use controller::Input as I;
            let message = match &record.input {
                I::Acked { id, .. } => Message::Ack(id.clone()),
                I::Bounced { id, .. } => Message::Refusal(id.clone()),
                I::Outcome { id, outcome, .. } => Message::Outcome(id.clone(), *outcome),
                other => Message::Other(format!("{other:?} to {}", header.address)),
            };
            sent.check(from, &message, record.at, At { trace, step }, options, out);
        }
    }
}

/// A message between nodes, named alike by its sending and its taking in.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
enum Message {
    /// An activation from a controller to a scheduler.
    Activation(String, String),
    /// An activation forwarded to a scheduler.
    Forward(String, String),
    /// An acknowledgement of an activation.
    Ack(String),
    /// A refusal of a copy of an activation.
    Refusal(String),
    /// How an activation ended.
    Outcome(String, Outcome),
    /// A controller's confirmation that it took an outcome in, to the
    /// scheduler that reported it.
    Receipt(String, String),
    /// A controller's request of a queue for an action, to a scheduler.
    Queue(String, String),
    /// A message no node sends as such: never found sent.
    Other(String),
}

impl std::fmt::Display for Message {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Message::Activation(id, to) => write!(f, "activation {id} to {to}"),
            Message::Forward(id, to) => write!(f, "forward of {id} to {to}"),
            Message::Ack(id) => write!(f, "acknowledgement of {id}"),
            Message::Refusal(id) => write!(f, "refusal of {id}"),
            Message::Outcome(id, outcome) => write!(f, "outcome of {id}: {outcome:?}"),
            Message::Receipt(id, to) => write!(f, "receipt of the outcome of {id} from {to}"),
            Message::Queue(action, to) => write!(f, "queue for {action} to {to}"),
            Message::Other(what) => f.write_str(what),
        }
    }
}

/// Every message each node's traces show it sent, with the earliest stamp
/// of a step that sent it.
struct Sent {
    nodes: BTreeSet<String>,
    first: BTreeMap<(String, Message), u64>,
}

impl Sent {
    fn of(traces: &[&Trace]) -> Self {
        let mut sent = Sent {
            nodes: BTreeSet::new(),
            first: BTreeMap::new(),
        };
        for (_, header, records) in schedulers(traces) {
            sent.nodes.insert(header.id.clone());
            for record in records {
                for effect in &record.effects {
                    use scheduler::Effect as E;
                    let message = match effect {
                        E::Forward { id, to, .. } => Message::Forward(id.clone(), to.clone()),
                        E::Ack { id } => Message::Ack(id.clone()),
                        E::Refuse { id, .. } => Message::Refusal(id.clone()),
                        E::Report { id, outcome, .. } => Message::Outcome(id.clone(), *outcome),
                        _ => continue,
                    };
                    sent.add(&header.id, message, record.at);
                }
            }
        }
        for (_, header, records) in controllers(traces) {
            sent.nodes.insert(header.address.clone());
            for record in records {
                for effect in &record.effects {
                    use controller::Effect as E;
                    let message = match effect {
                        E::Confirm { id, to } => Message::Receipt(id.clone(), to.clone()),
                        E::Send { id, to, .. } => Message::Activation(id.clone(), to.clone()),
                        E::CreateQueue { action, to } => Message::Queue(action.clone(), to.clone()),
                        _ => continue,
                    };
                    sent.add(&header.address, message, record.at);
                }
            }
        }
        sent
    }

    fn add(&mut self, node: &str, message: Message, at: u64) {
        let first = self.first.entry((node.to_owned(), message)).or_insert(at);
        *first = (*first).min(at);
    }

    /// Checks that `from` sent `message`, taken in at `at` (a stamp).
    fn check(
        &self,
        from: &str,
        message: &Message,
        at: u64,
        place: At,
        options: &Options,
        out: &mut Vec<Violation>,
    ) {
        if !self.nodes.contains(from) {
            return;
        }
        let what = match self.first.get(&(from.to_owned(), message.clone())) {
            None => format!("took in the {message}, which {from} never sent"),
            // Unstamped traces (written before steps were stamped) are
            // ordered by nothing.
            Some(&sent) if at != 0 && sent != 0 && sent > at + options.skew => format!(
                "took in the {message} {} ms before {from} sent it",
                sent - at
            ),
            Some(_) => return,
        };
        out.push(Violation {
            rule: Rule::SentByItsSender,
            places: vec![place],
            what,
        });
    }
}
