//! The handlers an operator registers, and the pure rules that say which of
//! them a change concerns and what each one depends on.

use serde::{Deserialize, Serialize};

use super::object::{Digest, Essence, Field, Key};

/// Which rules the engine follows.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum Variant {
    /// kopf's rules: a finished record stays finished whatever changes; the
    /// diff-base takes the essence of the cycle in which the last handler
    /// finishes; a parent's plan is rebuilt from the newest object.
    Kopf,
    /// A record is finished only on the digest it ran on; the diff-base
    /// advances only to an essence every active handler finished on.
    Steadfast,
}

/// What a handler reacts to.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum On {
    /// The object's creation (its first full handling).
    Create,
    /// Any change of the essence after creation.
    Update,
    /// A requested deletion; such a handler puts a finalizer on the object.
    Delete,
    /// The operator (re)starting and finding the object not fully handled.
    Resume,
    /// A change of one field, at creation or later.
    Field(Field),
}

/// The sub-handlers a parent registers when it runs, as a function of the
/// essence it sees.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum SubPlan {
    /// No sub-handlers: the handler does the work itself.
    None,
    /// Always this many sub-handlers.
    Fixed(u8),
    /// This many sub-handlers when the field's value is odd, none otherwise
    /// (the reproduction of kopf #641).
    WhenOdd(Field, u8),
}

/// A handler's own write to the essence, idempotent: `target := input[source]`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct SelfWrite {
    /// The field the handler writes.
    pub target: Field,
    /// The field whose value it copies.
    pub source: Field,
}

/// One registered handler.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize)]
pub struct HandlerSpec {
    /// Its name, for reports.
    pub name: &'static str,
    /// What it reacts to.
    pub on: On,
    /// The sub-handlers it registers.
    pub subs: SubPlan,
    /// Its own write to the essence, if it makes one (leaf handlers only).
    pub writes: Option<SelfWrite>,
}

/// Everything the engine is configured with.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize)]
pub struct Config {
    /// The rules.
    pub variant: Variant,
    /// The registered handlers; a [`Key`]'s `handler` indexes them.
    pub handlers: Vec<HandlerSpec>,
    /// Attempts after which a handler that keeps failing temporarily fails
    /// for good.
    pub retry_limit: u8,
    /// Time after an episode's start after which a handler fails for good.
    pub timeout: u8,
}

/// Why a processing cycle runs, as kopf derives it from the object.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum Reason {
    /// There is no diff-base yet.
    Create,
    /// The essence differs from the diff-base.
    Update,
    /// Deletion was requested.
    Delete,
    /// Nothing changed, but the operator has not handled the object fully
    /// since it started.
    Resume,
    /// Nothing to do.
    Noop,
}

impl Reason {
    /// The reason for an object with this diff-base and essence.
    pub fn of(deleting: bool, base: Option<Essence>, essence: Essence, initial: bool) -> Self {
        match (deleting, base) {
            (true, _) => Reason::Delete,
            (false, None) => Reason::Create,
            (false, Some(base)) if base != essence => Reason::Update,
            (false, Some(_)) if initial => Reason::Resume,
            (false, Some(_)) => Reason::Noop,
        }
    }
}

impl Config {
    /// The handler of `key`.
    pub fn spec(&self, key: Key) -> &HandlerSpec {
        &self.handlers[usize::from(key.handler)]
    }

    /// Whether handler `h` is active for a cycle with this reason, diff-base
    /// and essence.
    pub fn matches(
        &self,
        h: u8,
        reason: Reason,
        base: Option<Essence>,
        essence: Essence,
        initial: bool,
    ) -> bool {
        let on = self.handlers[usize::from(h)].on;
        let resume = on == On::Resume && initial && reason != Reason::Delete;
        resume
            || match (reason, on) {
                (Reason::Create, On::Create | On::Field(_)) => true,
                (Reason::Update, On::Update) => true,
                (Reason::Update, On::Field(field)) => {
                    base.is_none_or(|base| base.get(field) != essence.get(field))
                }
                (Reason::Delete, On::Delete) => true,
                (Reason::Resume, On::Resume) => true,
                _ => false,
            }
    }

    /// What a run of `key` depends on, given the essence it sees: its field
    /// for a field handler and its sub-handlers, the whole essence otherwise.
    pub fn digest(&self, key: Key, essence: Essence) -> Digest {
        match self.spec(key).on {
            On::Field(field) => Digest::Field(field, essence.get(field)),
            On::Create | On::Update | On::Delete | On::Resume => Digest::Whole(essence),
        }
    }

    /// How many sub-handlers handler `h` registers when it sees `essence`.
    pub fn plan(&self, h: u8, essence: Essence) -> u8 {
        match self.handlers[usize::from(h)].subs {
            SubPlan::None => 0,
            SubPlan::Fixed(n) => n,
            SubPlan::WhenOdd(field, n) => {
                if essence.get(field) % 2 == 1 {
                    n
                } else {
                    0
                }
            }
        }
    }

    /// Whether handler `h` registers sub-handlers at all.
    pub fn is_parent(&self, h: u8) -> bool {
        self.handlers[usize::from(h)].subs != SubPlan::None
    }

    /// The essence after `key`'s own write, when it ran on `essence`.
    pub fn after_write(&self, key: Key, essence: Essence) -> Essence {
        match (key.sub, self.spec(key).writes) {
            (None, Some(write)) => essence.with(write.target, essence.get(write.source)),
            _ => essence,
        }
    }
}
