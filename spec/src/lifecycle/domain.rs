//! What the engine is generic over: the types of a domain, and the two
//! computations on them that the engine needs and may not decide.

use std::fmt::Debug;
use std::hash::Hash;

use serde::de::DeserializeOwned;
use serde::Serialize;

/// A value the engine keeps, compares, orders (for sorted lookups) and
/// writes into traces.
pub trait Value:
    Clone
    + Debug
    + PartialEq
    + Eq
    + PartialOrd
    + Ord
    + Hash
    + Serialize
    + DeserializeOwned
    + Send
    + Sync
    + 'static
{
}

impl<T> Value for T where
    T: Clone
        + Debug
        + PartialEq
        + Eq
        + PartialOrd
        + Ord
        + Hash
        + Serialize
        + DeserializeOwned
        + Send
        + Sync
        + 'static
{
}

/// The types the engine works in. The model instantiates them with small
/// exact values ([`super::model::Small`]); a runtime with strings, hashes of
/// canonical JSON, opaque resourceVersions and milliseconds.
pub trait Domain: Clone + Debug + PartialEq + Eq + Hash + Send + Sync + 'static {
    /// A handler's or sub-handler's id (kopf-style `parent/child` strings
    /// in a runtime). A sub-handler's id is whatever its parent's run
    /// declared.
    type Handler: Value;
    /// A field of the object that a field handler watches (a path).
    type Field: Value;
    /// The essence of the object: what handlers react to (every top-level
    /// field but the object's identity, metadata and status; labels,
    /// annotations other than steadfast's, watched status fields).
    type Essence: Value;
    /// What one handler's run depended on: equal digests, equal inputs.
    type Digest: Value;
    /// A resourceVersion. Opaque: the engine only compares versions for
    /// equality (their order is the API server's business).
    type Version: Value;
    /// A handler's own write to the object, carried in the engine's patch.
    type Write: Value;
    /// A point in time; times in records survive restarts, so a runtime
    /// uses wall-clock milliseconds.
    type Time: Value + Copy;
    /// A span of time.
    type Duration: Value + Copy;
    /// What a failed run said, kept in its record for people (a runtime's
    /// is the error's text; the model's is one value, since no decision reads it).
    type Message: Value;
    /// Who holds a claim on the object: an operator replica's identity (a
    /// runtime's is its pod name; the model's, its replica's start).
    type Holder: Value;

    /// The digest of `field` of `essence`, or of the whole essence.
    fn digest(essence: &Self::Essence, field: Option<&Self::Field>) -> Self::Digest;

    /// The essence after `write`, as the object's will read: only what an
    /// essence holds of the write counts (of `status`, the fields that
    /// `watched`, the field handlers' fields, name).
    fn apply(
        essence: &Self::Essence,
        write: &Self::Write,
        watched: &[Self::Field],
    ) -> Self::Essence;

    /// `write` split into its part for the status subresource and the
    /// rest, each `None` if empty: a resource with a status subresource
    /// takes the first only through it, and ignores it elsewhere
    /// ([`super::handlers::Config::status_subresource`]).
    fn split_status(write: &Self::Write) -> (Option<Self::Write>, Option<Self::Write>);

    /// `time + span`, saturating.
    fn after(time: Self::Time, span: Self::Duration) -> Self::Time;

    /// `time - span`, saturating.
    fn before(time: Self::Time, span: Self::Duration) -> Self::Time;

    /// `span + span`, saturating.
    fn doubled(span: Self::Duration) -> Self::Duration;
}
