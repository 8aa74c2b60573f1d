//! What controllers and schedulers say to each other over the network: one
//! JSON object per line over TCP.
//!
//! Every node (controller or scheduler) listens on an address, which is
//! also its name: a scheduler's endpoint keys hold it, and every message
//! that wants an answer says where to send it. Activations and outcomes are
//! delivered at least once: their sender sends them again until they are
//! acknowledged ([`Message::Ack`], [`Message::OutcomeAck`]); everything
//! else may be lost, and the roles' retries make up for it.
//!
//! Why JSON lines over TCP rather than gRPC: the messages are few, small and
//! one-way, and acknowledgements are messages of their own (a scheduler
//! acknowledges an activation when it settles, long after it arrived, and
//! not necessarily to the node that holds the connection); a line protocol
//! states that plainly, needs no generated code, and can be read and typed
//! by hand (`nc 127.0.0.1 PORT`).

use serde::{Deserialize, Serialize};
use serde_json::Value;
use steadfast_spec::leasequeue::{ExecutionFailure, FailReason, KeyFault};

/// One message between nodes.
///
/// ```
/// use steadfast::leasequeue::wire::Message;
///
/// let ack = Message::Ack {
///     id: "5f0c".into(),
///     from: "10.0.0.7:8081".into(),
///     reply_to: None,
/// };
/// let line = r#"{"kind":"ack","id":"5f0c","from":"10.0.0.7:8081"}"#;
/// assert_eq!(ack.to_line(), format!("{line}\n"));
/// assert_eq!(Message::from_line(line).unwrap(), ack);
/// ```
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Message {
    /// An activation, sent by a controller or forwarded by a scheduler;
    /// sent again until [`Message::Ack`] comes back.
    Activation {
        /// Its id, unique across controllers and their restarts.
        id: String,
        /// Its action.
        action: String,
        /// What the action is invoked with.
        payload: Value,
        /// A scheduler forwarded it (rather than a controller sending it).
        forwarded: bool,
        /// The sender: where the acknowledgement goes.
        from: String,
        /// The controller that submitted it: where the outcome goes.
        reply_to: String,
        /// The run of the receiving scheduler it is addressed to (the
        /// incarnation its member key, or for a forward its endpoint key,
        /// names); `null`: its sender saw none.
        incarnation: Option<u64>,
        /// Its deadline, in milliseconds since the Unix epoch: no scheduler
        /// starts it later (by its own clock); `null`: it has none.
        #[serde(default)]
        deadline: Option<u64>,
        /// An earlier copy reached a scheduler run that stopped without
        /// acknowledging it, and may have run it: failed past its deadline,
        /// it is [`Outcome::Ambiguous`] (absent: `false`).
        #[serde(default, skip_serializing_if = "std::ops::Not::not")]
        may_have_run: bool,
    },
    /// A controller asks a scheduler to create a queue for `action`.
    CreateQueue {
        /// The action.
        action: String,
        /// The controller that asks, by the address it listens on (`None`
        /// from a node of an earlier version, which did not say).
        #[serde(default)]
        from: Option<String>,
    },
    /// Activation `id` is settled by the node it was sent to (under
    /// OpenWhisk's rules: taken in): stop sending it.
    Ack {
        /// The activation.
        id: String,
        /// The scheduler that acknowledges it, by the address it advertises:
        /// only the one it was sent to stops its sender.
        from: String,
        /// The controller the acknowledged copy named: a scheduler that
        /// forwarded copies for several controllers stops sending only
        /// that one (`None` from a node of an earlier version, which did
        /// not say: every copy).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        reply_to: Option<String>,
    },
    /// The scheduler `from` refused this copy of activation `id`: it was
    /// addressed to another run of that scheduler (one before a restart).
    /// Its sender takes it as a bounce, and routes the activation again.
    Refused {
        /// The activation.
        id: String,
        /// The scheduler that refused it, by the address it advertises.
        from: String,
        /// The run of it the refused copy was addressed to: a refusal of
        /// a copy to another run than its sender now addresses changes
        /// nothing.
        incarnation: Option<u64>,
    },
    /// How activation `id` ended, for the controller that submitted it; sent
    /// again until [`Message::OutcomeAck`] comes back.
    Outcome {
        /// The activation.
        id: String,
        /// How it ended.
        outcome: Outcome,
        /// The scheduler that reports it: where the acknowledgement goes.
        from: String,
    },
    /// The outcome of `id` arrived: stop sending it.
    OutcomeAck {
        /// The activation.
        id: String,
        /// The controller that took the outcome in, by the address it
        /// listens on (`None` from a node of an earlier version, which did
        /// not say).
        #[serde(default)]
        from: Option<String>,
    },
}

/// How an activation ended.
///
/// ```
/// use steadfast::leasequeue::wire::Outcome;
/// use steadfast::leasequeue::FailReason;
///
/// let failed = Outcome::Failed { reason: FailReason::NoQueueEndpoint };
/// let json = serde_json::to_string(&failed).unwrap();
/// assert_eq!(json, r#"{"failed":{"reason":"NoQueueEndpoint"}}"#);
/// ```
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Outcome {
    /// It ran, and the action returned this.
    Executed {
        /// What the action returned.
        result: Value,
    },
    /// It started, and ended without a result.
    ExecutionFailed {
        /// Why: the executor's error or panic, or the execution timeout.
        failure: ExecutionFailure,
        /// The error's or the panic's message, or the failure's words.
        message: String,
    },
    /// It failed for good without running, for this reason.
    Failed {
        /// Why.
        reason: FailReason,
    },
    /// It ended before, and how is no longer known: the scheduler that
    /// settled it is gone, with what it knew.
    Forgotten {},
    /// It was not run again, for this reason, and whether it ran before is
    /// not known: an earlier copy reached a scheduler that stopped without
    /// acknowledging it.
    Ambiguous {
        /// Why it was not run again.
        reason: FailReason,
    },
    /// This call could not be routed: no owner can be read from its
    /// action's endpoint key.
    Unrouted {
        /// An earlier copy of it reached a scheduler that stopped without
        /// acknowledging it, and may have run it.
        may_have_run: bool,
        /// Why the key could not be read.
        why: KeyFault,
    },
}

impl Message {
    /// The message as one line of JSON, newline included.
    pub fn to_line(&self) -> String {
        let mut line = serde_json::to_string(self).expect("a message always serializes to JSON");
        line.push('\n');
        line
    }

    /// The message a line holds.
    ///
    /// # Errors
    ///
    /// If the line is not a message: its JSON error says where.
    pub fn from_line(line: &str) -> Result<Self, serde_json::Error> {
        serde_json::from_str(line)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_message_should_round_trip_through_a_line() {
        let messages = [
            Message::Activation {
                id: "a-1".into(),
                action: "hello".into(),
                payload: serde_json::json!({"name": "world"}),
                forwarded: true,
                from: "127.0.0.1:1".into(),
                reply_to: "127.0.0.1:2".into(),
                incarnation: Some(7),
                deadline: Some(1_796_000_000_000),
                may_have_run: true,
            },
            Message::CreateQueue {
                action: "hello".into(),
                from: Some("127.0.0.1:2".into()),
            },
            Message::Ack {
                id: "a-1".into(),
                from: "127.0.0.1:1".into(),
                reply_to: Some("127.0.0.1:2".into()),
            },
            Message::Refused {
                id: "a-1".into(),
                from: "127.0.0.1:1".into(),
                incarnation: Some(7),
            },
            Message::Outcome {
                id: "a-1".into(),
                outcome: Outcome::Failed {
                    reason: FailReason::NoQueueEndpoint,
                },
                from: "127.0.0.1:1".into(),
            },
            Message::Outcome {
                id: "a-1".into(),
                outcome: Outcome::Ambiguous {
                    reason: FailReason::PastDeadline,
                },
                from: "127.0.0.1:1".into(),
            },
            Message::Outcome {
                id: "a-1".into(),
                outcome: Outcome::Unrouted {
                    may_have_run: true,
                    why: KeyFault::AccessDenied,
                },
                from: "127.0.0.1:1".into(),
            },
            Message::OutcomeAck {
                id: "a-1".into(),
                from: Some("127.0.0.1:2".into()),
            },
        ];
        for message in messages {
            let line = message.to_line();
            assert_eq!(line.matches('\n').count(), 1, "{line}");
            assert_eq!(Message::from_line(line.trim_end()).unwrap(), message);
        }
    }

    #[test]
    fn a_line_that_is_no_message_should_say_why() {
        let error = Message::from_line(r#"{"kind":"activation","id":"x"}"#).unwrap_err();
        assert!(error.to_string().contains("missing field"), "{error}");
    }
}
