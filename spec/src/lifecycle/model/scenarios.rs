//! The configurations and budgets that `steadfast check lifecycle` knows:
//! `seed641` and `general`, and one small scenario per fault of the API
//! server that a rule of the steadfast variant answers.

use super::small::{Essence, Field, Key, Small};
use super::{Budget, Code, Faults, LifecycleModel, SubPlan, Timing, Writes};
use crate::lifecycle::handlers::{Backoff, Claims, Config, HandlerSpec, On};
use crate::lifecycle::rules::{Rules, Variant};

/// Retries of every handler in the scenarios.
const RETRIES: u8 = 3;
/// Ticks an episode may take in the scenarios.
const TIMEOUT: u8 = 8;

/// A claim lasts 3 ticks (a run, its patch and the next run's fit in it),
/// clocks may drift apart by 1 tick, and a run's claim is renewed with 1
/// tick left.
const CLAIMS: Claims<Small> = Claims {
    duration: 3,
    drift: 1,
    renew_before: 1,
};

/// Handler `index`, reacting to `on`.
fn handler(index: u8, on: On<Field>) -> HandlerSpec<Small> {
    HandlerSpec {
        id: Key::handler(index),
        on,
        retries: RETRIES,
        timeout: TIMEOUT,
    }
}

/// A model of `handlers` (what each reacts to, and what its code does) in
/// a world of `budget`.
fn model(variant: Variant, handlers: Vec<(On<Field>, Code)>, budget: Budget) -> LifecycleModel {
    let (specs, code) = handlers
        .into_iter()
        .enumerate()
        .map(|(i, (on, code))| (handler(i as u8, on), code))
        .unzip();
    LifecycleModel {
        config: Config {
            rules: Rules::from(variant),
            handlers: specs,
            // One tick: the model's time is precious, and doubling waits
            // change only how long, not whether, the engine asks again.
            backoff: Backoff { first: 1, most: 1 },
            claims: CLAIMS,
            status_subresource: false,
        },
        code,
        budget,
        every_sometimes: false,
        replicas: 1,
    }
}

/// A budget that edits `spec.size` of an object created as `{1, 0, 1}`.
fn edits_of_spec(faults: Faults) -> Budget {
    Budget {
        initial: Essence([1, 0, 1]),
        edited: Field::Spec,
        modulo: None,
        faults,
        timing: Timing::Timely,
    }
}

/// One field handler on `spec.size` with plain code.
fn sync() -> (On<Field>, Code) {
    (On::Field(Field::Spec), Code::PLAIN)
}

/// kopf #641 scaled down: a field handler on `status.tick` whose three
/// sub-handlers are declared when the tick is odd; the tick is created odd
/// and changes twice while the sub-handlers work.
pub fn seed641(variant: Variant) -> LifecycleModel {
    let tick = Code {
        subs: SubPlan::WhenOdd(Field::Tick, 3),
        writes: None,
    };
    let budget = Budget {
        initial: Essence([0, 1, 0]),
        edited: Field::Tick,
        modulo: None,
        faults: Faults {
            edits: 2,
            ..Faults::default()
        },
        timing: Timing::Timely,
    };
    model(variant, vec![(On::Field(Field::Tick), tick)], budget)
}

/// Every kind of handler: a create handler; a field handler on `spec.size`
/// that declares two sub-handlers when the size is odd; an update handler
/// that copies the size into a label (an idempotent write of its own); a
/// delete handler; a resume handler. The size is edited twice modulo 2 (it
/// returns to its first value), with a permanent error, a crash (its run
/// goes on as a zombie) and a deletion.
pub fn general(variant: Variant) -> LifecycleModel {
    let size = Code {
        subs: SubPlan::WhenOdd(Field::Spec, 2),
        writes: None,
    };
    let label = Code {
        subs: SubPlan::None,
        writes: Some(Writes::Copy {
            target: Field::Label,
            source: Field::Spec,
        }),
    };
    let mut budget = edits_of_spec(Faults {
        edits: 2,
        permanent_errors: 1,
        crashes: 1,
        deletion: true,
        ..Faults::default()
    });
    budget.modulo = Some(2);
    model(
        variant,
        vec![
            (On::Create, Code::PLAIN),
            (On::Field(Field::Spec), size),
            (On::Update, label),
            (On::Delete, Code::PLAIN),
            (On::Resume, Code::PLAIN),
        ],
        budget,
    )
}

/// `general` with a temporary error too (delays, and time), for
/// benchmarks.
pub fn bench(variant: Variant) -> LifecycleModel {
    let mut model = general(variant);
    model.budget.faults.temporary_errors = 1;
    model
}

/// Another client writes the object's status twice while a field handler
/// with two sub-handlers works through an edit: the engine's patches are
/// refused (409).
pub fn foreign(variant: Variant) -> LifecycleModel {
    let size = Code {
        subs: SubPlan::Fixed(2),
        writes: None,
    };
    let budget = edits_of_spec(Faults {
        edits: 1,
        foreign_writes: 2,
        ..Faults::default()
    });
    model(variant, vec![(On::Field(Field::Spec), size)], budget)
}

/// The operator crashes while a sub-handler runs (the run returns after
/// the restart), and the restarted operator's list may be stale; the watch
/// may expire later and its list may be stale too.
pub fn stale(variant: Variant) -> LifecycleModel {
    let size = Code {
        subs: SubPlan::Fixed(2),
        writes: None,
    };
    let budget = edits_of_spec(Faults {
        edits: 1,
        crashes: 1,
        stale_lists: 1,
        expiries: 1,
        ..Faults::default()
    });
    model(variant, vec![(On::Field(Field::Spec), size)], budget)
}

/// A handler hangs, or fails once and is retried after a delay: a field
/// handler, or the delete handler during a deletion.
pub fn hang(variant: Variant) -> LifecycleModel {
    let budget = edits_of_spec(Faults {
        hangs: 1,
        temporary_errors: 1,
        deletion: true,
        ..Faults::default()
    });
    model(variant, vec![sync(), (On::Delete, Code::PLAIN)], budget)
}

/// A handler's code panics once around an edit: the engine retries it
/// after its own wait, as it would a temporary error.
pub fn panic(variant: Variant) -> LifecycleModel {
    let budget = edits_of_spec(Faults {
        edits: 1,
        panics: 1,
        ..Faults::default()
    });
    model(variant, vec![sync()], budget)
}

/// A patch's reply is lost, whether the API server applied the patch or
/// not, around one edit.
pub fn lost(variant: Variant) -> LifecycleModel {
    let budget = edits_of_spec(Faults {
        edits: 1,
        lost_replies: 1,
        ..Faults::default()
    });
    model(variant, vec![sync()], budget)
}

/// A create handler that writes a label that is not idempotent (it flips
/// it, as a counter or a timestamp would change): its own write changes
/// the essence it depends on.
pub fn stamp(variant: Variant) -> LifecycleModel {
    let stamp = Code {
        subs: SubPlan::None,
        writes: Some(Writes::Toggle(Field::Label)),
    };
    model(
        variant,
        vec![(On::Create, stamp)],
        edits_of_spec(Faults::default()),
    )
}

/// A create handler, a field handler and an update handler, with two
/// edits that may land while the object's creation is handled: the create
/// handler acts once, and the update and field handlers handle what
/// changed since it ran.
pub fn create(variant: Variant) -> LifecycleModel {
    let budget = edits_of_spec(Faults {
        edits: 2,
        ..Faults::default()
    });
    model(
        variant,
        vec![(On::Create, Code::PLAIN), sync(), (On::Update, Code::PLAIN)],
        budget,
    )
}

/// The API server refuses a patch for good (as a 422 for annotations over
/// its limit would), around an edit and a deletion: the engine tells it and
/// rests until the object changes.
pub fn refused(variant: Variant) -> LifecycleModel {
    let budget = edits_of_spec(Faults {
        edits: 1,
        refusals: 1,
        deletion: true,
        ..Faults::default()
    });
    model(variant, vec![sync(), (On::Delete, Code::PLAIN)], budget)
}

/// The API server throttles a patch or fails it (applied or not), or fails
/// a read, twice in all, around an edit: the engine waits, then asks again.
pub fn throttled(variant: Variant) -> LifecycleModel {
    let budget = edits_of_spec(Faults {
        edits: 1,
        throttles: 2,
        ..Faults::default()
    });
    model(variant, vec![sync()], budget)
}

/// The resource has a status subresource: a field handler on `spec.size`
/// copies it into `status.tick`, which another field handler watches. The
/// status goes first, alone, through the subresource, and the rest of the
/// patch (the record) after it; a crash or a lost reply may come between,
/// around an edit.
pub fn split(variant: Variant) -> LifecycleModel {
    let copy = Code {
        subs: SubPlan::None,
        writes: Some(Writes::Copy {
            target: Field::Tick,
            source: Field::Spec,
        }),
    };
    let budget = edits_of_spec(Faults {
        edits: 1,
        crashes: 1,
        lost_replies: 1,
        ..Faults::default()
    });
    let handlers = vec![
        (On::Field(Field::Spec), copy),
        (On::Field(Field::Tick), Code::PLAIN),
    ];
    let mut model = model(variant, handlers, budget);
    model.config.status_subresource = true;
    model
}

/// A run returns just after its deadline passed (the engine cancels it at
/// the deadline, but its return is on its way), around an edit.
pub fn late(variant: Variant) -> LifecycleModel {
    let budget = edits_of_spec(Faults {
        edits: 1,
        overruns: 1,
        ..Faults::default()
    });
    model(variant, vec![sync()], budget)
}

/// A field handler and a delete handler of two attempts each fail
/// temporarily until they run out of them, around an edit and a deletion:
/// each fails for good, and the delete handler's failure lets the
/// finalizer go (kopf's behaviour: a handler that failed for good is done).
pub fn exhausted(variant: Variant) -> LifecycleModel {
    let mut model = model(
        variant,
        vec![sync(), (On::Delete, Code::PLAIN)],
        edits_of_spec(Faults {
            edits: 1,
            temporary_errors: 3,
            deletion: true,
            ..Faults::default()
        }),
    );
    for spec in &mut model.config.handlers {
        spec.retries = 2;
    }
    model
}

/// The operator is stopped gracefully (a rolling update of one replica)
/// while a field handler with two sub-handlers works through an edit: it
/// starts no new run, writes what ran, and its successor goes on.
pub fn rolling(variant: Variant) -> LifecycleModel {
    let size = Code {
        subs: SubPlan::Fixed(2),
        writes: None,
    };
    let budget = edits_of_spec(Faults {
        edits: 1,
        stops: 1,
        ..Faults::default()
    });
    model(variant, vec![(On::Field(Field::Spec), size)], budget)
}

/// `handlers` in a world of `faults` (edits of `spec.size`) watched by two
/// replicas of the operator. Their episodes have no timeout: replicas that
/// wait for each other's claims spend ticks, and a timeout of a few ticks
/// would give a handler up before it ran (in production a claim lasts
/// seconds and a timeout an hour); a run still ends with its claim.
fn two_replicas(
    variant: Variant,
    handlers: Vec<(On<Field>, Code)>,
    faults: Faults,
) -> LifecycleModel {
    let mut model = model(variant, handlers, edits_of_spec(faults));
    model.replicas = 2;
    for spec in &mut model.config.handlers {
        spec.timeout = u8::MAX;
    }
    model
}

/// Two replicas of the operator watch an object with one field handler
/// through an edit: under claims, one at a time runs it; kopf, with no
/// claims, runs it in both.
pub fn replicas(variant: Variant) -> LifecycleModel {
    let faults = Faults {
        edits: 1,
        ..Faults::default()
    };
    two_replicas(variant, vec![sync()], faults)
}

/// Two replicas share an object with a field handler of a sub-handler and
/// a delete handler, through an edit and a deletion; one of them dies for
/// good (a lost node) at any point, its claim on the object perhaps live:
/// the other takes the object over once the claim is over.
pub fn takeover(variant: Variant) -> LifecycleModel {
    let size = Code {
        subs: SubPlan::Fixed(1),
        writes: None,
    };
    let faults = Faults {
        edits: 1,
        deaths: 1,
        deletion: true,
        ..Faults::default()
    };
    two_replicas(
        variant,
        vec![(On::Field(Field::Spec), size), (On::Delete, Code::PLAIN)],
        faults,
    )
}

/// A rolling update of two replicas: one is stopped gracefully while the
/// other runs, and its successor (a new pod, a new identity) starts while
/// the other still works, around an edit of a field handler with a
/// sub-handler.
pub fn rolling_replicas(variant: Variant) -> LifecycleModel {
    let size = Code {
        subs: SubPlan::Fixed(1),
        writes: None,
    };
    let faults = Faults {
        edits: 1,
        stops: 1,
        ..Faults::default()
    };
    two_replicas(variant, vec![(On::Field(Field::Spec), size)], faults)
}

/// Two replicas whose clocks drift apart by the claims' drift budget (one
/// tick), around an edit and a hung run (so that a claim expires under
/// a holder still running): no two runs overlap.
pub fn drift(variant: Variant) -> LifecycleModel {
    let faults = Faults {
        edits: 1,
        hangs: 1,
        skew: CLAIMS.drift,
        ..Faults::default()
    };
    let mut model = two_replicas(variant, vec![sync()], faults);
    // The hung run's claim is not renewed (one due at its end is cut
    // first): the claim ends under a holder whose run goes on, which is
    // the point here; renewals are checked in `long`, and they would
    // multiply the states of two drifting clocks.
    model.config.claims.renew_before = 0;
    model
}

/// A field handler of one attempt runs longer than a claim (time passes
/// while it runs, [`Faults::long_runs`]), around an edit and a lost reply
/// (of a patch or a renewal): its replica renews the claim while the run
/// goes on, sends a renewal that failed again, and the run ends by its
/// return or its timeout.
pub fn long(variant: Variant) -> LifecycleModel {
    let mut model = model(
        variant,
        vec![sync()],
        edits_of_spec(Faults {
            edits: 1,
            lost_replies: 1,
            long_runs: true,
            ..Faults::default()
        }),
    );
    for spec in &mut model.config.handlers {
        spec.retries = 1;
    }
    model
}

/// [`drift`] with clocks drifting one tick beyond the budget: a replica
/// takes over a claim its holder still runs under, and two runs overlap.
/// It shows the assumption, and is not checked by default.
pub fn drift_beyond(variant: Variant) -> LifecycleModel {
    let mut model = drift(variant);
    model.budget.faults.skew = CLAIMS.drift + 1;
    model
}

/// Where time stops in the scenarios without timing assumption: room for
/// a claim, its take-over, and the next episode's claim.
const HORIZON: u8 = 8;

/// Two replicas of a field handler under `timing`, through an edit and a
/// crash (a zombie); a run's timer is its claim's end (no renewal), so
/// that a run's lateness is measured from it.
fn untimed(variant: Variant, timing: Timing) -> LifecycleModel {
    let faults = Faults {
        edits: 1,
        crashes: 1,
        ..Faults::default()
    };
    let mut model = two_replicas(variant, vec![sync()], faults);
    model.budget.timing = timing;
    model.config.claims.renew_before = 0;
    model
}

/// [`untimed`] with no timing assumption ([`Timing::Free`]): time passes
/// at any moment, timers fire late, a cancelled run goes on to its next
/// step, a crashed start's run goes on as a zombie, and claims lapse under
/// slow holders. The properties that checked writes carry hold; runs may
/// overlap, so that one is not checked, nor liveness.
pub fn free(variant: Variant) -> LifecycleModel {
    untimed(variant, Timing::Free { horizon: HORIZON })
}

/// How late a run stops after its deadline in [`bounded`].
const LATE: u8 = 1;

/// [`untimed`] with runs that stop at most [`LATE`] ticks after their
/// deadline ([`Timing::Bounded`]): the claims' margin (two ticks) exceeds
/// that lateness plus the clocks' drift (none), so no two runs overlap.
pub fn bounded(variant: Variant) -> LifecycleModel {
    let timing = Timing::Bounded {
        late: LATE,
        horizon: HORIZON,
    };
    let mut model = untimed(variant, timing);
    model.config.claims.drift = LATE + 1;
    model
}

/// [`bounded`] with runs that stop as late as the claims' margin: a
/// replica takes over a claim whose holder's run still goes on, and two
/// runs overlap. It shows the bound, and is not checked by default.
pub fn bounded_beyond(variant: Variant) -> LifecycleModel {
    let mut model = bounded(variant);
    model.budget.timing = Timing::Bounded {
        late: LATE + 1,
        horizon: HORIZON,
    };
    model
}
