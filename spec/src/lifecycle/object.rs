//! The object as the engine sees it: its essence, and the progress the
//! engine keeps on it in `steadfast.dev/` annotations.

use std::fmt;

use serde::{Deserialize, Serialize};

/// A field of the essence (the part of the object handlers react to: spec,
/// labels, annotations and the status fields handlers watch).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub enum Field {
    /// `spec.size`: what users edit.
    Spec,
    /// `status.tick`: a status field that a field handler watches (kopf #641).
    Tick,
    /// `metadata.labels.size`: a label a handler writes from the spec.
    Label,
}

impl Field {
    /// Every field, in essence order.
    pub const ALL: [Field; 3] = [Field::Spec, Field::Tick, Field::Label];

    fn index(self) -> usize {
        match self {
            Field::Spec => 0,
            Field::Tick => 1,
            Field::Label => 2,
        }
    }
}

/// The essence of an object: the values of its [`Field`]s.
#[derive(Clone, Copy, Default, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub struct Essence(pub [u8; 3]);

impl Essence {
    /// The value of one field.
    pub fn get(&self, field: Field) -> u8 {
        self.0[field.index()]
    }

    /// The essence with one field set.
    pub fn with(mut self, field: Field, value: u8) -> Self {
        self.0[field.index()] = value;
        self
    }
}

/// What a handler's run depends on, exactly (no hashing, so digests of
/// different inputs never collide): the whole essence, or one field's value.
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub enum Digest {
    /// A handler of the whole object saw this essence.
    Whole(Essence),
    /// A field handler saw this value of its field.
    Field(Field, u8),
}

/// A handler or sub-handler of the object: `handler` indexes the registered
/// handlers; `sub` is the index of a sub-handler in its parent's plan.
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub struct Key {
    /// The registered handler.
    pub handler: u8,
    /// The sub-handler, for a parent's sub-handler.
    pub sub: Option<u8>,
}

impl Key {
    /// A top-level handler.
    pub fn handler(handler: u8) -> Self {
        Key { handler, sub: None }
    }

    /// Sub-handler `sub` of `handler`.
    pub fn sub(handler: u8, sub: u8) -> Self {
        Key {
            handler,
            sub: Some(sub),
        }
    }
}

/// How a handler ended for good.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum Final {
    /// It succeeded.
    Success,
    /// It failed permanently (a permanent error, its retry limit, or its
    /// timeout).
    Failure,
}

/// The progress of one handler or sub-handler, kept in an annotation.
#[derive(Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct Record {
    /// Attempts so far in this episode.
    pub retries: u8,
    /// Its final outcome, once it has one.
    pub outcome: Option<Final>,
    /// Not to be retried before this time (after a temporary error).
    pub delayed_until: Option<u8>,
    /// What its last final run depended on (its digest). kopf keeps no such
    /// thing; the `Steadfast` variant judges "finished" by it.
    pub seen: Option<Digest>,
    /// When the episode began, for the timeout.
    pub started: u8,
}

impl Record {
    /// A record for a handler about to run for the first time at `now`.
    pub fn fresh(now: u8) -> Self {
        Record {
            retries: 0,
            outcome: None,
            delayed_until: None,
            seen: None,
            started: now,
        }
    }
}

/// Every progress record on the object, sorted by key.
#[derive(Clone, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct Progress(pub Vec<(Key, Record)>);

impl Progress {
    /// The record of `key`.
    pub fn get(&self, key: Key) -> Option<&Record> {
        self.0
            .binary_search_by_key(&key, |(k, _)| *k)
            .ok()
            .map(|i| &self.0[i].1)
    }

    /// Sets or, with `None`, removes the record of `key`.
    pub fn set(&mut self, key: Key, record: Option<Record>) {
        match (self.0.binary_search_by_key(&key, |(k, _)| *k), record) {
            (Ok(i), Some(record)) => self.0[i].1 = record,
            (Ok(i), None) => {
                self.0.remove(i);
            }
            (Err(i), Some(record)) => self.0.insert(i, (key, record)),
            (Err(_), None) => {}
        }
    }

    /// The records, in key order.
    pub fn iter(&self) -> impl Iterator<Item = &(Key, Record)> {
        self.0.iter()
    }
}

/// The object as one watch event or list shows it.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct ObjectView {
    /// Its resourceVersion; patches are conditioned on it.
    pub rv: u32,
    /// Its essence.
    pub essence: Essence,
    /// Whether deletion was requested (`metadata.deletionTimestamp`).
    pub deleting: bool,
    /// Whether the `steadfast.dev/finalizer` finalizer is on it.
    pub finalizer: bool,
    /// The progress annotations.
    pub progress: Progress,
    /// The diff-base annotation: the essence last handled in full.
    pub diff_base: Option<Essence>,
}

// Compact `Debug` forms, one line each, so that counterexamples read as the
// annotations would: `h0/s1: success on tick=3, 1 attempt`.

impl Field {
    /// The field's path in the object.
    pub fn path(self) -> &'static str {
        match self {
            Field::Spec => "spec.size",
            Field::Tick => "status.tick",
            Field::Label => "labels.size",
        }
    }
}

impl fmt::Debug for Essence {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{{spec.size={} status.tick={} labels.size={}}}",
            self.0[0], self.0[1], self.0[2]
        )
    }
}

impl fmt::Debug for Digest {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Digest::Whole(essence) => write!(f, "{essence:?}"),
            Digest::Field(field, value) => write!(f, "{}={value}", field.path()),
        }
    }
}

impl fmt::Debug for Key {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.sub {
            None => write!(f, "h{}", self.handler),
            Some(sub) => write!(f, "h{}/s{sub}", self.handler),
        }
    }
}

impl fmt::Debug for Record {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.outcome {
            Some(Final::Success) => write!(f, "success")?,
            Some(Final::Failure) => write!(f, "failure")?,
            None => write!(f, "pending")?,
        }
        if let Some(seen) = self.seen {
            write!(f, " on {seen:?}")?;
        }
        write!(f, ", {} attempt(s) since t={}", self.retries, self.started)?;
        if let Some(due) = self.delayed_until {
            write!(f, ", delayed until t={due}")?;
        }
        Ok(())
    }
}

impl fmt::Debug for Progress {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_map()
            .entries(self.0.iter().map(|(k, r)| (k, r)))
            .finish()
    }
}

impl ObjectView {
    /// The version in one line: resourceVersion, essence, deletion and
    /// finalizer, and how many progress records it carries.
    pub fn line(&self) -> String {
        let mut line = format!("rv={} {:?}", self.rv, self.essence);
        if self.deleting {
            line.push_str(" deleting");
        }
        if self.finalizer {
            line.push_str(" finalizer");
        }
        if !self.progress.0.is_empty() {
            line.push_str(&format!(" ({} records)", self.progress.0.len()));
        }
        line
    }
}
