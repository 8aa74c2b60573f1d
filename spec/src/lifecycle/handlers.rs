//! The handlers an operator registers, and the pure rules that say which of
//! them a change concerns and what each one depends on.

use serde::{Deserialize, Serialize};

use super::domain::Domain;
use super::rules::Rules;

/// What a handler reacts to.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub enum On<F> {
    /// The object's creation (its first full handling).
    Create,
    /// Any change of the essence after creation.
    Update,
    /// A requested deletion; such a handler puts a finalizer on the object.
    Delete,
    /// The operator (re)starting and finding the object not fully handled.
    Resume,
    /// A change of one field, at creation or later.
    Field(F),
}

/// One registered (top-level) handler. Its sub-handlers, declared by its
/// runs, share its cause, retry limit and timeout.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(bound = "")]
pub struct HandlerSpec<D: Domain> {
    /// Its id.
    pub id: D::Handler,
    /// What it reacts to.
    pub on: On<D::Field>,
    /// Attempts after which a handler that keeps failing temporarily fails
    /// for good.
    pub retries: u8,
    /// How long an episode (its first attempt to its last) may take; a run
    /// still going at the episode's start plus this is abandoned and the
    /// handler has failed for good.
    pub timeout: D::Duration,
}

/// Everything the engine is configured with.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(bound = "")]
pub struct Config<D: Domain> {
    /// The rules.
    pub rules: Rules,
    /// The registered handlers, in the order ties are broken in.
    pub handlers: Vec<HandlerSpec<D>>,
    /// How long the engine waits before it asks the API server again after
    /// a throttled or failed request, when the server did not say.
    pub backoff: Backoff<D>,
    /// How replicas share the object ([`super::rules::Rule::Claims`]).
    pub claims: Claims<D>,
    /// Whether the resource has a status subresource: the handlers' status
    /// writes then go through it, in a write of their own before the rest
    /// of a patch ([`Domain::split_status`]).
    #[serde(default)]
    pub status_subresource: bool,
}

impl<D: Domain> Config<D> {
    /// The fields the field handlers watch.
    pub fn watched(&self) -> Vec<D::Field> {
        self.handlers
            .iter()
            .filter_map(|h| match &h.on {
                On::Field(field) => Some(field.clone()),
                _ => None,
            })
            .collect()
    }
}

/// How long a replica's claim on an object lasts, how far replicas'
/// clocks may drift apart, and when a run's claim is renewed.
///
/// A holder runs a handler only before its claim's end by its own clock,
/// and cancels the run there; another replica takes the claim over only
/// once its own clock passes the end plus `drift`. So two replicas never
/// run the object's handlers at once while no two clocks differ by more
/// than `drift`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(bound = "")]
pub struct Claims<D: Domain> {
    /// How long a claim lasts from the patch that takes or renews it.
    pub duration: D::Duration,
    /// The most that two replicas' clocks may differ by.
    pub drift: D::Duration,
    /// How long before its end a run's claim is renewed
    /// ([`super::rules::Rule::RenewClaims`]); less than `duration`, and
    /// more than a patch takes to land.
    pub renew_before: D::Duration,
}

/// The engine's wait after a request the API server throttled or could not
/// serve (429, 5xx, a lost connection) and did not say how long to wait:
/// `first`, doubled after each such answer in a row, at most `most`. A
/// `Retry-After` the server gives is honoured instead.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(bound = "")]
pub struct Backoff<D: Domain> {
    /// The first wait.
    pub first: D::Duration,
    /// The longest wait.
    pub most: D::Duration,
}

impl<D: Domain> Backoff<D> {
    /// The wait after one more failure in a row, `last` being the previous
    /// wait (`None` after a success), unless the server said `told`.
    pub fn next(&self, last: Option<D::Duration>, told: Option<D::Duration>) -> D::Duration {
        told.unwrap_or_else(|| match last {
            None => self.first,
            Some(last) => D::doubled(last).min(self.most),
        })
    }

    /// The wait before the next attempt of a run that failed without
    /// saying how long to wait (it panicked), `attempts` having failed
    /// before it in the episode: `first`, doubled per earlier attempt, at
    /// most `most`.
    pub fn after_attempts(&self, attempts: u8) -> D::Duration {
        (0..attempts).fold(self.first, |wait, _| D::doubled(wait).min(self.most))
    }
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
    pub fn of<E: PartialEq>(deleting: bool, base: Option<&E>, essence: &E, initial: bool) -> Self {
        match (deleting, base) {
            (true, _) => Reason::Delete,
            (false, None) => Reason::Create,
            (false, Some(base)) if base != essence => Reason::Update,
            (false, Some(_)) if initial => Reason::Resume,
            (false, Some(_)) => Reason::Noop,
        }
    }
}

impl<D: Domain> Config<D> {
    /// The registration of the top-level handler `id`.
    pub fn handler(&self, id: &D::Handler) -> Option<&HandlerSpec<D>> {
        self.handlers.iter().find(|h| h.id == *id)
    }

    /// Whether any handler reacts to deletion (and so holds the object by
    /// a finalizer).
    pub fn holds_deletion(&self) -> bool {
        self.handlers.iter().any(|h| h.on == On::Delete)
    }
}

impl<D: Domain> HandlerSpec<D> {
    /// Whether `attempts` made in an episode leave no more: the handler has
    /// failed for good if the last of them failed.
    pub fn out_of_attempts(&self, attempts: u8) -> bool {
        attempts >= self.retries
    }

    /// Whether the handler is active for a cycle with this reason,
    /// diff-base and essence.
    pub fn matches(
        &self,
        reason: Reason,
        base: Option<&D::Essence>,
        essence: &D::Essence,
        initial: bool,
    ) -> bool {
        let resume = self.on == On::Resume && initial && reason != Reason::Delete;
        resume
            || match (reason, &self.on) {
                (Reason::Create, On::Create | On::Field(_)) => true,
                (Reason::Update, On::Update) => true,
                (Reason::Update, On::Field(field)) => base.is_none_or(|base| {
                    D::digest(base, Some(field)) != D::digest(essence, Some(field))
                }),
                (Reason::Delete, On::Delete) => true,
                _ => false,
            }
    }

    /// What a run of this handler (or of one of its sub-handlers) depends
    /// on, given the essence it sees: its field for a field handler, the
    /// whole essence otherwise.
    pub fn digest(&self, essence: &D::Essence) -> D::Digest {
        match &self.on {
            On::Field(field) => D::digest(essence, Some(field)),
            On::Create | On::Update | On::Delete | On::Resume => D::digest(essence, None),
        }
    }
}
