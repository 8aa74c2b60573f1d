//! The format of the progress the engine keeps on an object: annotations
//! under `steadfast.dev/`, their values JSON.
//!
//! - `steadfast.dev/diff-base`: the essence last handled in full, as JSON.
//! - `steadfast.dev/progress.<name>`: one handler's or sub-handler's
//!   [`ProgressRecord`]. The name is the handler id made fit for an
//!   annotation name (at most 63 characters of `[A-Za-z0-9._-]`, ending
//!   alphanumeric): up to 36 characters of the id with every other
//!   character turned into `-`, a `.`, and 16 hex digits of a hash of the
//!   whole id ([`progress_key`]). The record itself names the handler in
//!   full, so that what is read back is never a guess.
//! - `steadfast.dev/claim`: the replica working on the object and until
//!   when, a [`ClaimRecord`]; absent when no replica works on it.
//! - `steadfast.dev/epoch`: the fencing epoch of the last claim taken on
//!   the object, a decimal number that grows by one with every claim taken
//!   and stays when the claim is released; absent before the first (0).
//! - `steadfast.dev/error`: written by the runtime, for people, when the
//!   annotations cannot be read; [`decode`] skips it.
//!
//! Times are milliseconds since the Unix epoch; a digest is the hex of a
//! stable hash of the canonical JSON of what the handler depends on.
//!
//! **Corrupted or foreign annotations.** [`decode`] never guesses: an
//! annotation under the prefix that it does not know, a value that is not
//! the JSON of a record, or a record stored under another handler's key is
//! an [`AnnotationError`] naming the key and what is wrong. The runtime
//! records the errors on the object (`steadfast.dev/error`) and runs no
//! handler of it until they are fixed or removed.
//!
//! ```
//! use std::collections::BTreeMap;
//! use steadfast_spec::lifecycle::annotations::{
//!     decode, encode, ClaimRecord, Progress, ProgressRecord,
//! };
//! use steadfast_spec::lifecycle::Final;
//!
//! let progress = Progress {
//!     diff_base: Some(serde_json::json!({"spec": {"size": 3}})),
//!     records: vec![ProgressRecord {
//!         handler: "create_fn/child-1".into(),
//!         retries: 1,
//!         outcome: Some(Final::Success),
//!         seen: Some("9f86d081884c7d65".into()),
//!         started: 1_764_590_400_000,
//!         delayed_until: None,
//!         subs: Vec::new(),
//!         error: None,
//!     }],
//!     claim: Some(ClaimRecord {
//!         holder: "backup-operator-7d9f-x2x9p".into(),
//!         until: 1_764_590_430_000,
//!     }),
//!     epoch: 3,
//! };
//! let annotations: BTreeMap<String, String> = encode(&progress).unwrap();
//! assert!(annotations.contains_key("steadfast.dev/diff-base"));
//! assert_eq!(decode(&annotations).unwrap(), progress);
//! ```

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use super::object::Final;
use crate::stable_hash::fnv1a;

/// The prefix of every annotation the engine writes.
pub const PREFIX: &str = "steadfast.dev/";
/// The diff-base annotation.
pub const DIFF_BASE: &str = "steadfast.dev/diff-base";
/// The error annotation, for people.
pub const ERROR: &str = "steadfast.dev/error";
/// The claim annotation.
pub const CLAIM: &str = "steadfast.dev/claim";
/// The fencing epoch annotation.
pub const EPOCH: &str = "steadfast.dev/epoch";
/// What every progress annotation's key starts with.
pub const PROGRESS: &str = "steadfast.dev/progress.";

/// How many characters of a handler id a progress key keeps.
const ID_CHARS: usize = 36;

/// The progress of one handler or sub-handler, as its annotation holds it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct ProgressRecord {
    /// The handler's id, kopf-style: `parent/child` for a sub-handler.
    pub handler: String,
    /// Attempts so far in this episode.
    pub retries: u32,
    /// Its final outcome, once it has one.
    pub outcome: Option<Final>,
    /// The digest of what its last final run depended on.
    pub seen: Option<String>,
    /// When the episode began (ms since the epoch), for the timeout.
    pub started: u64,
    /// Not to be retried before this time (ms since the epoch).
    pub delayed_until: Option<u64>,
    /// For a parent: the ids of the sub-handlers its last run declared.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub subs: Vec<String>,
    /// What the last failed run of this episode said, for people
    /// (`kubectl describe` shows it); absent once a run succeeds.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
}

/// A replica's claim on the object, as its annotation holds it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ClaimRecord {
    /// The replica's identity (its pod name, by default).
    pub holder: String,
    /// When the claim ends by the holder's clock (ms since the epoch).
    pub until: u64,
}

/// Everything the engine keeps on an object.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Progress {
    /// The essence last handled in full.
    pub diff_base: Option<serde_json::Value>,
    /// Every record, sorted by handler id.
    pub records: Vec<ProgressRecord>,
    /// The claim on the object, if a replica holds one.
    pub claim: Option<ClaimRecord>,
    /// The fencing epoch of the last claim taken (0: none ever was).
    pub epoch: u32,
}

/// An annotation that cannot be read, or progress that cannot be written.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum AnnotationError {
    /// A key under `steadfast.dev/` that this format does not define
    /// (another tool's, or a typo).
    #[error("annotation {key} is under steadfast.dev/ but is none of steadfast's; remove it")]
    Foreign {
        /// The key.
        key: String,
    },
    /// The value is not what the key says it holds.
    #[error("annotation {key} is corrupt: {reason}; fix or remove it")]
    Corrupt {
        /// The key.
        key: String,
        /// What is wrong.
        reason: String,
    },
    /// A handler id cannot be written.
    #[error("handler id {handler:?} cannot be kept in an annotation: {reason}")]
    BadHandlerId {
        /// The id.
        handler: String,
        /// Why.
        reason: String,
    },
    /// Two handler ids would share one annotation.
    #[error("handlers {first:?} and {second:?} would share the annotation {key}; rename one")]
    Collision {
        /// The key.
        key: String,
        /// One id.
        first: String,
        /// The other.
        second: String,
    },
}

/// The annotation key of `handler`'s progress.
///
/// # Errors
///
/// [`AnnotationError::BadHandlerId`] for an empty id, or one with a
/// control character.
pub fn progress_key(handler: &str) -> Result<String, AnnotationError> {
    let bad = |reason: &str| AnnotationError::BadHandlerId {
        handler: handler.to_owned(),
        reason: reason.to_owned(),
    };
    if handler.is_empty() {
        return Err(bad("it is empty"));
    }
    if handler.chars().any(char::is_control) {
        return Err(bad("it holds a control character"));
    }
    let readable: String = handler
        .chars()
        .take(ID_CHARS)
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '_' || c == '-' {
                c
            } else {
                '-'
            }
        })
        .collect();
    Ok(format!("{PROGRESS}{readable}.{:016x}", fnv1a(handler)))
}

/// The annotations that hold `progress`: every key under the prefix that
/// the engine owns (an annotation of it that is absent here is to be
/// removed).
///
/// # Errors
///
/// A handler id that cannot be written, or two that would share a key.
pub fn encode(progress: &Progress) -> Result<BTreeMap<String, String>, AnnotationError> {
    let mut annotations = BTreeMap::new();
    if let Some(base) = &progress.diff_base {
        annotations.insert(DIFF_BASE.to_owned(), base.to_string());
    }
    if let Some(claim) = &progress.claim {
        annotations.insert(CLAIM.to_owned(), claim_value(claim));
    }
    if progress.epoch > 0 {
        annotations.insert(EPOCH.to_owned(), progress.epoch.to_string());
    }
    let mut owners: BTreeMap<String, &str> = BTreeMap::new();
    for record in &progress.records {
        let key = progress_key(&record.handler)?;
        if let Some(first) = owners.insert(key.clone(), &record.handler) {
            return Err(AnnotationError::Collision {
                key,
                first: first.to_owned(),
                second: record.handler.clone(),
            });
        }
        let value = serde_json::to_string(record).map_err(|error| AnnotationError::Corrupt {
            key: key.clone(),
            reason: error.to_string(),
        })?;
        annotations.insert(key, value);
    }
    Ok(annotations)
}

/// The progress the annotations of an object hold (those outside the
/// prefix are not looked at).
///
/// # Errors
///
/// Every annotation under the prefix that cannot be read, each naming its
/// key: nothing is guessed, and no partial progress is returned.
pub fn decode(annotations: &BTreeMap<String, String>) -> Result<Progress, Vec<AnnotationError>> {
    let mut progress = Progress::default();
    let mut errors = Vec::new();
    let corrupt = |key: &str, reason: String| AnnotationError::Corrupt {
        key: key.to_owned(),
        reason,
    };
    for (key, value) in annotations.range(PREFIX.to_owned()..) {
        if !key.starts_with(PREFIX) {
            break;
        }
        if key == ERROR {
            continue;
        }
        if key == DIFF_BASE {
            match serde_json::from_str(value) {
                Ok(base) => progress.diff_base = Some(base),
                Err(error) => errors.push(corrupt(key, format!("not JSON: {error}"))),
            }
            continue;
        }
        if key == CLAIM {
            match serde_json::from_str(value) {
                Ok(claim) => progress.claim = Some(claim),
                Err(error) => errors.push(corrupt(key, format!("not a claim: {error}"))),
            }
            continue;
        }
        if key == EPOCH {
            match value.parse() {
                Ok(epoch) => progress.epoch = epoch,
                Err(error) => errors.push(corrupt(key, format!("not an epoch: {error}"))),
            }
            continue;
        }
        if !key.starts_with(PROGRESS) {
            errors.push(AnnotationError::Foreign { key: key.clone() });
            continue;
        }
        let record: ProgressRecord = match serde_json::from_str(value) {
            Ok(record) => record,
            Err(error) => {
                errors.push(corrupt(key, format!("not a progress record: {error}")));
                continue;
            }
        };
        match progress_key(&record.handler) {
            Ok(own) if own == *key => progress.records.push(record),
            Ok(own) => errors.push(corrupt(
                key,
                format!(
                    "it holds the record of handler {:?}, whose key is {own}",
                    record.handler
                ),
            )),
            Err(error) => errors.push(corrupt(key, error.to_string())),
        }
    }
    if !errors.is_empty() {
        return Err(errors);
    }
    progress.records.sort_by(|a, b| a.handler.cmp(&b.handler));
    Ok(progress)
}

/// The value of the claim annotation that holds `claim`.
pub fn claim_value(claim: &ClaimRecord) -> String {
    serde_json::to_string(claim).expect("a claim serializes")
}

/// The error annotation that tells people why the annotations could not
/// be read: its key, and its value (one line per error).
pub fn error_annotation(errors: &[AnnotationError]) -> (String, String) {
    let lines: Vec<String> = errors.iter().map(ToString::to_string).collect();
    (ERROR.to_owned(), lines.join("\n"))
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use super::*;

    fn record(handler: &str) -> ProgressRecord {
        ProgressRecord {
            handler: handler.into(),
            retries: 2,
            outcome: None,
            seen: None,
            started: 1_000,
            delayed_until: Some(4_000),
            subs: vec![format!("{handler}/child")],
            error: Some("the registry is busy".into()),
        }
    }

    /// Whether `key` is a valid annotation key: a DNS-subdomain prefix, a
    /// slash, and a name of at most 63 characters of `[A-Za-z0-9._-]`
    /// that begins and ends alphanumeric.
    fn valid_key(key: &str) -> bool {
        let Some(name) = key.strip_prefix(PREFIX) else {
            return false;
        };
        let alnum = |c: Option<char>| c.is_some_and(|c| c.is_ascii_alphanumeric());
        name.len() <= 63
            && alnum(name.chars().next())
            && alnum(name.chars().last())
            && name
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-'))
    }

    fn handler_id() -> impl Strategy<Value = String> {
        prop_oneof![
            "[a-z_][a-z0-9_]{0,20}(/[a-z_][a-z0-9_]{0,20}){0,2}",
            "[^\\p{Cc}]{1,80}",
        ]
    }

    fn progress_record() -> impl Strategy<Value = ProgressRecord> {
        let outcome = prop::option::of(prop_oneof![Just(Final::Success), Just(Final::Failure)]);
        (
            handler_id(),
            any::<u32>(),
            outcome,
            prop::option::of("[0-9a-f]{16}"),
            any::<u64>(),
            prop::option::of(any::<u64>()),
            prop::collection::vec(handler_id(), 0..3),
            prop::option::of("[^\\p{Cc}]{0,40}"),
        )
            .prop_map(
                |(handler, retries, outcome, seen, started, delayed_until, subs, error)| {
                    ProgressRecord {
                        handler,
                        retries,
                        outcome,
                        seen,
                        started,
                        delayed_until,
                        subs,
                        error,
                    }
                },
            )
    }

    proptest! {
        #[test]
        fn every_handler_id_should_get_a_valid_key_of_its_own(a in handler_id(), b in handler_id()) {
            let (key_a, key_b) = (progress_key(&a).unwrap(), progress_key(&b).unwrap());
            prop_assert!(valid_key(&key_a), "{}", key_a);
            prop_assert_eq!(a == b, key_a == key_b);
        }

        #[test]
        fn progress_should_round_trip_through_annotations(
            records in prop::collection::btree_map(handler_id(), progress_record(), 0..6),
            base in prop::option::of(any::<u8>()),
            claim in prop::option::of((handler_id(), any::<u64>())),
            epoch in any::<u32>(),
        ) {
            let records: Vec<ProgressRecord> = records
                .into_iter()
                .map(|(handler, record)| ProgressRecord { handler, ..record })
                .collect();
            let progress = Progress {
                diff_base: base.map(|size| serde_json::json!({"spec": {"size": size}})),
                records,
                claim: claim.map(|(holder, until)| ClaimRecord { holder, until }),
                epoch,
            };
            let mut annotations = encode(&progress).unwrap();
            for key in annotations.keys() {
                prop_assert!(
                    key == DIFF_BASE || key == CLAIM || key == EPOCH || valid_key(key),
                    "{}",
                    key
                );
            }
            // Annotations that are not steadfast's are left alone.
            annotations.insert("kopf.zalando.org/last-handled-configuration".into(), "{".into());
            annotations.insert("a/b".into(), "x".into());
            annotations.insert("zzz".into(), "y".into());
            prop_assert_eq!(decode(&annotations).unwrap(), progress);
        }
    }

    #[test]
    fn a_corrupt_value_should_be_named_and_nothing_guessed() {
        let progress = Progress {
            diff_base: None,
            records: vec![record("create_fn"), record("create_fn/child")],
            claim: None,
            epoch: 0,
        };
        let mut annotations = encode(&progress).unwrap();
        let key = progress_key("create_fn").unwrap();
        annotations.insert(
            key.clone(),
            r#"{"handler":"create_fn","retries":"two"}"#.into(),
        );
        annotations.insert(DIFF_BASE.into(), "{not json".into());
        // A claim with a field it does not know: no replica may guess who
        // holds the object.
        annotations.insert(
            CLAIM.into(),
            r#"{"holder":"op-0","until":5,"lease":"x"}"#.into(),
        );
        let errors = decode(&annotations).unwrap_err();
        assert_eq!(errors.len(), 3, "{errors:?}");
        let text: Vec<String> = errors.iter().map(ToString::to_string).collect();
        assert!(
            text[0].contains(CLAIM) && text[0].contains("not a claim"),
            "{text:?}"
        );
        assert!(
            text[1].contains(DIFF_BASE) && text[1].contains("not JSON"),
            "{text:?}"
        );
        assert!(
            text[2].contains(&key) && text[2].contains("expected u32"),
            "{text:?}"
        );
        let (error_key, value) = error_annotation(&errors);
        assert_eq!(error_key, ERROR);
        assert_eq!(value.lines().count(), 3);
        // The error annotation itself is not progress, and not foreign.
        let mut written = encode(&progress).unwrap();
        written.insert(error_key, value);
        assert_eq!(decode(&written).unwrap(), progress);
    }

    #[test]
    fn foreign_and_misplaced_annotations_should_be_refused() {
        let mut annotations = encode(&Progress {
            diff_base: None,
            records: vec![record("update_fn")],
            claim: None,
            epoch: 0,
        })
        .unwrap();
        annotations.insert("steadfast.dev/finalizer-note".into(), "hi".into());
        // Another handler's record under update_fn's key.
        let key = progress_key("update_fn").unwrap();
        let moved = serde_json::to_string(&record("delete_fn")).unwrap();
        annotations.insert(key.clone(), moved);
        let errors = decode(&annotations).unwrap_err();
        assert_eq!(
            errors[0],
            AnnotationError::Foreign {
                key: "steadfast.dev/finalizer-note".into()
            }
        );
        assert!(
            matches!(&errors[1], AnnotationError::Corrupt { key: k, reason } if *k == key && reason.contains("delete_fn")),
            "{errors:?}"
        );
        // Unknown fields are corruption too, not ignored.
        let mut extra = encode(&Progress::default()).unwrap();
        extra.insert(key, r#"{"handler":"update_fn","retries":0,"outcome":null,"seen":null,"started":0,"delayedUntil":null,"note":1}"#.into());
        assert!(decode(&extra).unwrap_err()[0]
            .to_string()
            .contains("unknown field"));
    }

    #[test]
    fn ids_that_cannot_be_written_should_say_why() {
        assert!(progress_key("").unwrap_err().to_string().contains("empty"));
        assert!(progress_key("a\nb")
            .unwrap_err()
            .to_string()
            .contains("control"));
        let long = "x".repeat(500);
        assert!(valid_key(&progress_key(&long).unwrap()));
    }
}
