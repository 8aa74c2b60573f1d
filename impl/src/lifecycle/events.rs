//! Kubernetes Events for people: what a handler's failure said, that a
//! handler failed for good, and that the API server refused a patch for
//! good, posted on the object through kube-runtime's `Recorder` (so that
//! `kubectl describe` and `kubectl events` show them; repeats become one
//! event's series). Posting is fire and forget: an Event that cannot be
//! posted is logged, and nothing the engine does waits for it.

use k8s_openapi::api::core::v1::ObjectReference;
use kube::runtime::events::{Event, EventType, Recorder, Reporter};
use kube::Client;

/// The most bytes of a message kept in a progress record or an Event's
/// note (the Events API refuses notes over 1 kB).
pub(crate) const MESSAGE_LIMIT: usize = 1024;

/// `message`, cut at a character boundary to at most [`MESSAGE_LIMIT`]
/// bytes (with `…` where it was cut).
pub(crate) fn bounded(message: &str) -> String {
    if message.len() <= MESSAGE_LIMIT {
        return message.to_owned();
    }
    let mut end = MESSAGE_LIMIT - '…'.len_utf8();
    while !message.is_char_boundary(end) {
        end -= 1;
    }
    format!("{}…", &message[..end])
}

/// What an Event tells.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Notice {
    /// A run failed and will be retried (if attempts and time remain).
    Retrying {
        /// The handler's id.
        handler: String,
        /// What it said.
        message: String,
    },
    /// A run failed for good.
    Failed {
        /// The handler's id.
        handler: String,
        /// What it said.
        message: String,
    },
    /// The API server refused the engine's patch for good (400, 403 or
    /// 422): nothing more is written until the object changes.
    Refused {
        /// The server's answer: its code, reason and message.
        message: String,
    },
    /// The object's `steadfast.dev/` annotations cannot be read: nothing
    /// runs until they are fixed or removed.
    Unreadable {
        /// What is wrong with them.
        message: String,
    },
}

impl Notice {
    fn event(&self) -> Event {
        let (type_, reason, action, note) = match self {
            Notice::Retrying { handler, message } => (
                EventType::Warning,
                "HandlerRetrying",
                "Handle",
                format!("handler {handler} failed and will be retried: {message}"),
            ),
            Notice::Failed { handler, message } => (
                EventType::Warning,
                "HandlerFailed",
                "Handle",
                format!("handler {handler} failed for good: {message}"),
            ),
            Notice::Refused { message } => (
                EventType::Warning,
                "PatchRefused",
                "RecordProgress",
                format!(
                    "the API server refused steadfast's patch ({message}); \
                     nothing is written until the object changes"
                ),
            ),
            Notice::Unreadable { message } => (
                EventType::Warning,
                "ProgressUnreadable",
                "ReadProgress",
                format!(
                    "steadfast.dev/ annotations cannot be read, no handler runs until they \
                     are fixed or removed: {message}"
                ),
            ),
        };
        Event {
            type_,
            reason: reason.into(),
            note: Some(bounded(&note)),
            action: action.into(),
            secondary: None,
        }
    }
}

/// Posts [`Notice`]s as Events, as the reporting controller it was made for.
#[derive(Clone)]
pub(crate) struct Events {
    recorder: Recorder,
}

impl Events {
    /// Events reported by `controller`, from `instance` (a pod's name).
    pub(crate) fn new(client: Client, controller: &str, instance: Option<String>) -> Self {
        let reporter = Reporter {
            controller: controller.to_owned(),
            instance,
        };
        Events {
            recorder: Recorder::new(client, reporter),
        }
    }

    /// Posts `notice` on the object `reference` names, in the background.
    pub(crate) fn post(&self, reference: ObjectReference, notice: &Notice) {
        let recorder = self.recorder.clone();
        let event = notice.event();
        tokio::spawn(async move {
            if let Err(error) = recorder.publish(&event, &reference).await {
                tracing::warn!(
                    %error,
                    object = reference.name.as_deref().unwrap_or_default(),
                    "an Event could not be posted (may the operator create events in events.k8s.io?)"
                );
            }
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn long_messages_should_be_cut_at_a_character_boundary() {
        assert_eq!(bounded("short"), "short");
        let long = "é".repeat(MESSAGE_LIMIT);
        let cut = bounded(&long);
        assert!(cut.len() <= MESSAGE_LIMIT, "{}", cut.len());
        assert!(cut.ends_with('…'));
    }

    #[test]
    fn every_notice_should_be_a_warning_naming_what_to_look_at() {
        let failed = Notice::Failed {
            handler: "create".into(),
            message: "no quota".into(),
        }
        .event();
        assert_eq!(failed.reason, "HandlerFailed");
        assert!(failed
            .note
            .unwrap()
            .contains("create failed for good: no quota"));
        let refused = Notice::Refused {
            message: "422 Invalid: too long".into(),
        }
        .event();
        assert!(matches!(refused.type_, EventType::Warning));
        assert!(refused.note.unwrap().contains("(422 Invalid: too long)"));
    }
}
