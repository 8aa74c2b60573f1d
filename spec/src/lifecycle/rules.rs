//! The rules the engine may follow, by name, so that a test can take one
//! away from the steadfast rules and show which property then fails.

use serde::{Deserialize, Serialize};

/// Which rules the engine follows.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum Variant {
    /// kopf's rules: a finished record stays finished whatever changes, the
    /// diff-base absorbs every change, a parent is invoked again every
    /// cycle and rebuilds its plan, patches carry no resourceVersion, and
    /// a hung handler is waited for. It waits for its own write to come
    /// back before it processes the object again (kopf 1.42's
    /// `consistency_timeout`).
    Kopf,
    /// Every [`Rule`].
    Steadfast,
}

/// One rule of the steadfast variant.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum Rule {
    /// A record is finished only on the digest its handler finished on; a
    /// record finished on another digest starts a new episode, and the
    /// diff-base advances only to an essence every active handler finished
    /// on. Without it, finished stays finished (kopf).
    DigestFinished,
    /// A handler's digest is taken on the essence after its own write, so
    /// its own write does not make it stale.
    DigestAfterOwnWrite,
    /// A parent runs once per digest: its run's plan is kept in its record
    /// and its sub-handlers run in later cycles. Without it, the parent is
    /// invoked again each cycle and rebuilds its plan (kopf).
    PlanOnce,
    /// A parent's run starts its plan afresh: records of sub-handlers from
    /// its earlier plan are removed.
    FreshPlan,
    /// Patches carry the resourceVersion they were computed from, so the
    /// API server refuses (409) a patch of an object that moved on.
    CheckedPatches,
    /// The outcome of a run whose patch was refused is kept, and written
    /// onto the next version on which the handler's digest is the same,
    /// instead of running the handler again.
    RebaseOnConflict,
    /// After its patch applied, the engine processes the object again only
    /// once it sees the version its patch made (or a fresh read).
    WaitForOwnWrite,
    /// A list that shows another version than the newest seen (it may be
    /// served from a cache, so older) is confirmed by a consistent read
    /// before anything is processed.
    ConfirmLists,
    /// A run that passes its deadline (the episode's start plus the
    /// handler's timeout) fails for good; the engine goes on without it.
    RunDeadline,
    /// A replica writes the object and runs its handlers only under a live
    /// claim of its own on it, taken by its checked patch (before the first
    /// run of an episode, or with the finalizer), renewed by every progress
    /// patch and released by the commit or a graceful stop; a run is
    /// cancelled at the claim's end. Without it, every replica runs every
    /// handler.
    Claims,
    /// A claim past its end plus the drift budget is taken over: its holder
    /// may be dead. Without it, a claim is waited on until it is released.
    TakeOver,
    /// While a run is under way, its claim is renewed once it has
    /// [`Claims::renew_before`] left, by a checked patch of the claim
    /// alone, so that a run within its timeout is not cut by its claim.
    /// Without it, a run must end within the claim taken before it.
    ///
    /// [`Claims::renew_before`]: super::handlers::Claims::renew_before
    RenewClaims,
    /// A create handler that succeeded is not run again for the same
    /// object: its record stands whatever changes after it, and a change
    /// since it ran is handled by the update handlers (in the creation's
    /// cycles too) and the field handlers. Without it, a create handler
    /// runs again on every essence the object takes before its creation
    /// is handled.
    CreateOnce,
    /// A claim under which a run was cancelled is not released until the
    /// run is known to have stopped (it returned, or its task ended): a
    /// cancel takes effect only at the run's next step, and a claim left
    /// to end by itself keeps other replicas off for its margin. Without
    /// it, the commit after a cancel releases the claim while the run may
    /// still go on.
    KeepClaimPastCancel,
}

impl crate::rule_set::Rule for Rule {
    const ALL: &'static [Rule] = &[
        Rule::DigestFinished,
        Rule::DigestAfterOwnWrite,
        Rule::PlanOnce,
        Rule::FreshPlan,
        Rule::CheckedPatches,
        Rule::RebaseOnConflict,
        Rule::WaitForOwnWrite,
        Rule::ConfirmLists,
        Rule::RunDeadline,
        Rule::Claims,
        Rule::TakeOver,
        Rule::RenewClaims,
        Rule::CreateOnce,
        Rule::KeepClaimPastCancel,
    ];
}

/// The rules the engine follows: a variant's, or one of them with a rule
/// taken away.
pub type Rules = crate::rule_set::RuleSet<Rule>;

impl From<Variant> for Rules {
    /// Steadfast follows every rule; kopf only waits for its own write.
    fn from(variant: Variant) -> Self {
        match variant {
            Variant::Steadfast => Rules::all(),
            Variant::Kopf => Rules::from(vec![Rule::WaitForOwnWrite]),
        }
    }
}
