//! The object as the engine sees it: its essence, and the progress the
//! engine keeps on it in `steadfast.dev/` annotations.

use serde::{Deserialize, Serialize};

use super::domain::Domain;

/// How a handler ended for good.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub enum Final {
    /// It succeeded.
    Success,
    /// It failed permanently (a permanent error, its retry limit, or its
    /// timeout).
    Failure,
}

/// The progress of one handler or sub-handler, kept in an annotation.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(bound = "")]
pub struct Record<D: Domain> {
    /// Attempts so far in this episode.
    pub retries: u8,
    /// Its final outcome, once it has one.
    pub outcome: Option<Final>,
    /// Not to be retried before this time (after a temporary error).
    pub delayed_until: Option<D::Time>,
    /// What its last final run depended on (its digest); for a parent,
    /// what the run that declared its plan depended on.
    pub seen: Option<D::Digest>,
    /// When the episode began, for the timeout.
    pub started: D::Time,
    /// For a parent: the sub-handlers its last run declared.
    pub subs: Vec<D::Handler>,
    /// What the last failed run of this episode said; `None` once a run
    /// succeeds.
    pub error: Option<D::Message>,
}

impl<D: Domain> Record<D> {
    /// A record for a handler about to run for the first time at `now`.
    pub fn fresh(now: D::Time) -> Self {
        Record {
            retries: 0,
            outcome: None,
            delayed_until: None,
            seen: None,
            started: now,
            subs: Vec::new(),
            error: None,
        }
    }
}

/// Every progress record on the object, sorted by handler id.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(bound = "")]
pub struct Progress<D: Domain>(pub Vec<(D::Handler, Record<D>)>);

impl<D: Domain> Default for Progress<D> {
    fn default() -> Self {
        Progress(Vec::new())
    }
}

impl<D: Domain> Progress<D> {
    /// The record of `id`.
    pub fn get(&self, id: &D::Handler) -> Option<&Record<D>> {
        self.0
            .binary_search_by(|(k, _)| k.cmp(id))
            .ok()
            .map(|i| &self.0[i].1)
    }

    /// Sets or, with `None`, removes the record of `id`.
    pub fn set(&mut self, id: &D::Handler, record: Option<Record<D>>) {
        match (self.0.binary_search_by(|(k, _)| k.cmp(id)), record) {
            (Ok(i), Some(record)) => self.0[i].1 = record,
            (Ok(i), None) => {
                self.0.remove(i);
            }
            (Err(i), Some(record)) => self.0.insert(i, (id.clone(), record)),
            (Err(_), None) => {}
        }
    }

    /// The records, in id order.
    pub fn iter(&self) -> impl Iterator<Item = &(D::Handler, Record<D>)> {
        self.0.iter()
    }

    /// Whether there are none.
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }
}

/// A replica's claim on the object, kept in an annotation: only its holder
/// runs the object's handlers or writes its progress while it lasts.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(bound = "")]
pub struct Claim<D: Domain> {
    /// The replica that holds it.
    pub holder: D::Holder,
    /// When it ends, by the holder's clock. Another replica takes it as
    /// ended only once its own clock passes `until` plus the drift budget
    /// ([`super::handlers::Claims`]).
    pub until: D::Time,
    /// Its fencing epoch: one more than the epoch of the claim taken before
    /// it on the object, kept while its holder renews it. A handler's own
    /// writes elsewhere, tagged with it, can be refused once a greater one
    /// was seen (`Context::epoch` in the runtime).
    pub epoch: u32,
}

/// The object as one watch event, list or read shows it.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(bound = "")]
pub struct ObjectView<D: Domain> {
    /// Its resourceVersion; patches are conditioned on it.
    pub version: D::Version,
    /// Its essence.
    pub essence: D::Essence,
    /// Whether deletion was requested (`metadata.deletionTimestamp`).
    pub deleting: bool,
    /// Whether the `steadfast.dev/finalizer` finalizer is on it.
    pub finalizer: bool,
    /// The progress annotations.
    pub progress: Progress<D>,
    /// The diff-base annotation: the essence last handled in full.
    pub diff_base: Option<D::Essence>,
    /// The claim annotation: which replica works on the object, until when.
    pub claim: Option<Claim<D>>,
    /// The epoch of the last claim taken on the object (0 if none ever
    /// was), kept after it is released, so that the next one taken is
    /// greater.
    #[serde(default)]
    pub epoch: u32,
    /// Whether it carries the mark that says, for people, that its
    /// annotations could not be read ([`Effect::Mark`]); a version that can
    /// be read has it cleared.
    ///
    /// [`Effect::Mark`]: super::engine::Effect::Mark
    #[serde(default)]
    pub marked: bool,
}
