//! The model's domain: a three-field essence of small numbers, handlers
//! numbered by registration, exact digests (no hashing, so digests of
//! different inputs never collide), numbered resourceVersions and ticks.

use std::fmt;

use serde::{Deserialize, Serialize};

use crate::lifecycle::domain::Domain;

/// The model's instantiation of the engine's [`Domain`].
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Small;

impl Domain for Small {
    type Handler = Key;
    type Field = Field;
    type Essence = Essence;
    type Digest = Digest;
    type Version = u32;
    type Write = (Field, u8);
    type Time = u8;
    type Duration = u8;
    type Message = Said;
    type Holder = u32;

    fn digest(essence: &Essence, field: Option<&Field>) -> Digest {
        match field {
            Some(&field) => Digest::Field(field, essence.get(field)),
            None => Digest::Whole(*essence),
        }
    }

    /// Every field is the essence's (`status.tick` is watched wherever a
    /// handler writes it).
    fn apply(essence: &Essence, &(field, value): &(Field, u8), _: &[Field]) -> Essence {
        essence.with(field, value)
    }

    /// A write of `status.tick` is the status subresource's.
    fn split_status(&write: &(Field, u8)) -> (Option<(Field, u8)>, Option<(Field, u8)>) {
        match write.0 {
            Field::Tick => (Some(write), None),
            Field::Spec | Field::Label => (None, Some(write)),
        }
    }

    fn after(time: u8, span: u8) -> u8 {
        time.saturating_add(span)
    }

    fn before(time: u8, span: u8) -> u8 {
        time.saturating_sub(span)
    }

    fn doubled(span: u8) -> u8 {
        span.saturating_mul(2)
    }
}

/// What a failed run says in the model: one value, since no decision reads
/// a message (a `()` would not survive JSON inside an `Option`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub enum Said {
    /// The run failed.
    Failed,
}

/// The model's outcomes are plain values, so its actions can be copied.
impl Copy for crate::lifecycle::engine::Outcome<Small> {}

/// Likewise its claims.
impl Copy for crate::lifecycle::object::Claim<Small> {}

/// A field of the essence.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub enum Field {
    /// `spec.size`: what users edit.
    Spec,
    /// `status.tick`: a status field that a field handler watches (kopf #641).
    Tick,
    /// `metadata.labels.size`: a label a handler writes.
    Label,
}

impl Field {
    /// Every field, in essence order.
    pub const ALL: [Field; 3] = [Field::Spec, Field::Tick, Field::Label];

    fn index(self) -> usize {
        self as usize
    }

    /// The field's path in the object.
    pub fn path(self) -> &'static str {
        match self {
            Field::Spec => "spec.size",
            Field::Tick => "status.tick",
            Field::Label => "labels.size",
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
    #[must_use]
    pub fn with(mut self, field: Field, value: u8) -> Self {
        self.0[field.index()] = value;
        self
    }
}

/// What a handler's run depends on, exactly: the whole essence, or one
/// field's value.
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub enum Digest {
    /// A handler of the whole object saw this essence.
    Whole(Essence),
    /// A field handler saw this value of its field.
    Field(Field, u8),
}

/// A handler or sub-handler: `handler` indexes the registered handlers;
/// `sub` numbers a sub-handler its parent declared.
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub struct Key {
    /// The registered handler.
    pub handler: u8,
    /// The sub-handler, for a parent's sub-handler.
    pub sub: Option<u8>,
}

impl crate::lifecycle::rerun::HandlerKey for Key {
    fn is_top(&self) -> bool {
        self.sub.is_none()
    }

    fn is_sub_of(&self, top: &Self) -> bool {
        self.handler == top.handler && self.sub.is_some()
    }
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

// Compact `Debug` forms, one line each, so that counterexamples read as the
// annotations would.

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
