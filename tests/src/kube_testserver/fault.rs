//! Faults a test injects: from Rust through [`super::TestServer::inject`], or
//! over HTTP by POSTing the same JSON to [`super::FAULTS_PATH`].

use std::time::Duration;

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

/// One fault, as a Rust value or as JSON (`{"fault": "conflicts", ...}`).
///
/// Objects are named by `resource` as `kubectl` names a type (`configmaps`,
/// `widgets.example.com`), `namespace` (absent for a cluster-scoped object)
/// and `name`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(
    tag = "fault",
    rename_all = "camelCase",
    rename_all_fields = "camelCase",
    deny_unknown_fields
)]
pub enum Fault {
    /// Refuse the next `count` writes (update, patch, status, delete) of one
    /// object with 409 Conflict, as if another writer got there first.
    Conflicts {
        /// The object's type.
        resource: String,
        /// Its namespace.
        #[serde(default)]
        namespace: Option<String>,
        /// Its name.
        name: String,
        /// How many writes to refuse.
        count: u32,
        /// Whether writes through the `status` subresource are spared:
        /// only writes of the object itself are refused, so that a client
        /// that writes the status first and the rest after fails between
        /// the two.
        #[serde(default)]
        spare_status: bool,
    },
    /// End every open watch with an `ERROR` event carrying a 410 Expired
    /// `Status`, and forget the event history, so that a client must relist.
    ExpireWatches,
    /// Close every open watch without an error, as a restarting server does.
    CloseWatches,
    /// Answer the next `count` API requests with 500 InternalError.
    ServerErrors {
        /// How many requests.
        count: u32,
    },
    /// Answer the next `count` API requests with 429 TooManyRequests and a
    /// `Retry-After` header.
    TooManyRequests {
        /// How many requests.
        count: u32,
        /// The `Retry-After` value.
        retry_after_seconds: u64,
    },
    /// Delay every API response by `millis` (0 ends the delay).
    Delay {
        /// The delay.
        millis: u64,
    },
    /// Hold every API request, and every watch event, until `Resume`.
    Pause,
    /// Release what `Pause` holds.
    Resume,
    /// Another controller writes to the object: a merge of `labels` (a
    /// `null` value removes a label) and of `status`, with no precondition.
    ForeignWrite {
        /// The object's type.
        resource: String,
        /// Its namespace.
        #[serde(default)]
        namespace: Option<String>,
        /// Its name.
        name: String,
        /// Labels to set (`null` removes one).
        #[serde(default)]
        labels: Option<Map<String, Value>>,
        /// Status fields to merge in.
        #[serde(default)]
        status: Option<Value>,
    },
    /// Another client deletes the object, as `DELETE` with no options
    /// would, even while the server is paused (so that a watch kept away by
    /// `Pause` and `CloseWatches` can miss it).
    ForeignDelete {
        /// The object's type.
        resource: String,
        /// Its namespace.
        #[serde(default)]
        namespace: Option<String>,
        /// Its name.
        name: String,
    },
}

/// The request-level faults in force.
#[derive(Debug, Default)]
pub(super) struct Injected {
    /// Requests still to answer with 500.
    pub server_errors: u32,
    /// Requests still to answer with 429, and the `Retry-After` to send.
    pub too_many_requests: (u32, u64),
    /// How long to hold each response.
    pub delay: Duration,
}

impl Injected {
    /// The error the next request gets, if a fault says so; counts it off.
    pub fn take_error(&mut self) -> Option<super::status::ApiError> {
        if self.server_errors > 0 {
            self.server_errors -= 1;
            return Some(super::status::ApiError::internal(
                "injected fault: the server failed this request",
            ));
        }
        let (count, retry_after) = &mut self.too_many_requests;
        if *count > 0 {
            *count -= 1;
            return Some(super::status::ApiError::too_many_requests(*retry_after));
        }
        None
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn faults_should_read_from_the_json_the_control_endpoint_takes() {
        let fault: Fault = serde_json::from_value(json!({
            "fault": "tooManyRequests", "count": 2, "retryAfterSeconds": 1
        }))
        .unwrap();
        assert_eq!(
            fault,
            Fault::TooManyRequests {
                count: 2,
                retry_after_seconds: 1
            }
        );
        let round = serde_json::to_value(&fault).unwrap();
        assert_eq!(serde_json::from_value::<Fault>(round).unwrap(), fault);
        let conflicts = json!({
            "fault": "conflicts", "resource": "configmaps", "name": "c", "count": 1
        });
        let spared =
            |fault: Fault| matches!(fault, Fault::Conflicts { spare_status, .. } if spare_status);
        assert!(!spared(serde_json::from_value(conflicts.clone()).unwrap()));
        let mut main_only = conflicts;
        main_only["spareStatus"] = json!(true);
        assert!(spared(serde_json::from_value(main_only).unwrap()));
        let typo = serde_json::from_value::<Fault>(json!({ "fault": "serverErrors", "cont": 1 }));
        assert!(typo.unwrap_err().to_string().contains("cont"));
    }
}
