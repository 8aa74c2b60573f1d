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
use crate::leasequeue::{controller, scheduler};
use crate::trace::Trace;

pub(super) fn check(traces: &[Trace], options: &Options, out: &mut Vec<Violation>) {
    let sent = Sent::of(traces);
    for (trace, header, records) in schedulers(traces) {
        let me = &header.id;
        for (step, record) in records.iter().enumerate() {
            let Some(from) = &record.from else { continue };
            use scheduler::Input as I;
            let message = match &record.input {
                I::Activation {
                    id,
                    forwarded: false,
                    ..
                } => format!("activation {id} to {me}"),
                I::Activation { id, .. } => format!("forward of {id} to {me}"),
                I::ForwardAcked { id, .. } => format!("acknowledgement of {id}"),
                I::Bounced { id, .. } => format!("refusal of {id}"),
                I::CreateQueue { action } => format!("queue for {action} to {me}"),
                I::ReportAcked { id } => format!("receipt of the outcome of {id} from {me}"),
                _ => format!("{:?}", record.input),
            };
            sent.check(from, &message, record.at, At { trace, step }, options, out);
        }
    }
    for (trace, header, records) in controllers(traces) {
        for (step, record) in records.iter().enumerate() {
            let Some(from) = &record.from else { continue };
            use controller::Input as I;
            let message = match &record.input {
                I::Acked { id, .. } => format!("acknowledgement of {id}"),
                I::Bounced { id, .. } => format!("refusal of {id}"),
                I::Outcome { id, outcome } => format!("outcome of {id}: {outcome:?}"),
                _ => format!("{:?} to {}", record.input, header.address),
            };
            sent.check(from, &message, record.at, At { trace, step }, options, out);
        }
    }
}

/// Every message each node's traces show it sent, with the earliest stamp
/// of a step that sent it.
struct Sent {
    nodes: BTreeSet<String>,
    first: BTreeMap<(String, String), u64>,
}

impl Sent {
    fn of(traces: &[Trace]) -> Self {
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
                        E::Forward { id, to, .. } => format!("forward of {id} to {to}"),
                        E::Ack { id } => format!("acknowledgement of {id}"),
                        E::Refuse { id, .. } => format!("refusal of {id}"),
                        E::Report { id, outcome } => format!("outcome of {id}: {outcome:?}"),
                        _ => continue,
                    };
                    sent.add(&header.id, message, record.at);
                }
            }
        }
        for (_, header, records) in controllers(traces) {
            sent.nodes.insert(header.address.clone());
            for record in records {
                // The driver confirms every outcome it takes in.
                if let (controller::Input::Outcome { id, .. }, Some(from)) =
                    (&record.input, &record.from)
                {
                    let message = format!("receipt of the outcome of {id} from {from}");
                    sent.add(&header.address, message, record.at);
                }
                for effect in &record.effects {
                    use controller::Effect as E;
                    let message = match effect {
                        E::Send { id, to, .. } => format!("activation {id} to {to}"),
                        E::CreateQueue { action, to } => format!("queue for {action} to {to}"),
                        _ => continue,
                    };
                    sent.add(&header.address, message, record.at);
                }
            }
        }
        sent
    }

    fn add(&mut self, node: &str, message: String, at: u64) {
        let first = self.first.entry((node.to_owned(), message)).or_insert(at);
        *first = (*first).min(at);
    }

    /// Checks that `from` sent `message`, taken in at `at` (a stamp).
    fn check(
        &self,
        from: &str,
        message: &str,
        at: u64,
        place: At,
        options: &Options,
        out: &mut Vec<Violation>,
    ) {
        if !self.nodes.contains(from) {
            return;
        }
        let what = match self.first.get(&(from.to_owned(), message.to_owned())) {
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
