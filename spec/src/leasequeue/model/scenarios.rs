//! The scenarios that `steadfast check leasequeue` knows.

use super::{Bounds, Client, Faults, LeaseQueueModel, Placement, PRESUME_GONE_AFTER};
use crate::leasequeue::Variant;

/// A scenario of the given sizes without any fault.
fn quiet(variant: Variant, schedulers: u8, controllers: u8, actions: u8) -> Bounds {
    Bounds {
        variant,
        schedulers,
        controllers,
        actions,
        placement: Placement::World,
        ttl: 1,
        outage_ticks: 0,
        outage_clients: Vec::new(),
        outage_owners: Vec::new(),
        outage_when_routed: false,
        submissions: Vec::new(),
        retries: Vec::new(),
        probe: false,
        deadline: None,
        execute_for: None,
        presume_gone_after: PRESUME_GONE_AFTER,
        slow_watch_openings: false,
        faults: Faults::default(),
    }
}

fn model(bounds: Bounds) -> LeaseQueueModel {
    LeaseQueueModel {
        bounds,
        without: None,
        every_sometimes: false,
    }
}

/// OpenWhisk #5286: two schedulers, one controller, one action; a lease
/// TTL of 1 (raised to etcd's floor of 3) against a 3-tick outage that
/// strikes once the action's key exists and the controller routes to it,
/// and cuts off the queue's owner (whichever scheduler the world placed
/// it on) and the controller; an activation before, the probe after, and
/// the queue free to retire when idle.
pub fn seed5286(variant: Variant) -> LeaseQueueModel {
    model(Bounds {
        outage_ticks: 3,
        outage_clients: vec![Client::Controller(0)],
        outage_owners: vec![0],
        outage_when_routed: true,
        submissions: vec![(0, 0)],
        probe: true,
        faults: Faults {
            retirements: 1,
            ..Faults::default()
        },
        ..quiet(variant, 2, 1, 1)
    })
}

/// `seed5286` with a compaction at any time: the controller's watch,
/// cut off by the outage, may have to resume from a revision compacted
/// away, and etcd then cancels it.
pub fn compaction(variant: Variant) -> LeaseQueueModel {
    let mut model = seed5286(variant);
    model.bounds.faults.compactions = 1;
    model
}

/// `seed5286`'s sizes with the outage cutting off both schedulers, and
/// not the controller, at any time: both leases expire and their member
/// keys go, so the controller knows no live member to place the queue on
/// until one registers again (etcd always answers it: a parked activation
/// here is one that found no member, never one whose lookup failed).
pub fn no_members(variant: Variant) -> LeaseQueueModel {
    let mut model = seed5286(variant);
    model.bounds.outage_clients = vec![Client::Scheduler(0), Client::Scheduler(1)];
    model.bounds.outage_owners = Vec::new();
    model.bounds.outage_when_routed = false;
    model.bounds.faults.retirements = 0;
    model
}

/// `seed5286` with a lease TTL of 6, which outlasts the outage and the
/// fence's margin (the reporter's workaround), and no idle retirement:
/// what remains is the outage alone.
pub fn long_ttl(variant: Variant) -> LeaseQueueModel {
    let mut model = seed5286(variant);
    model.bounds.ttl = 6;
    model.bounds.faults.retirements = 0;
    model
}

/// Two schedulers, two controllers, two actions, one activation of
/// each through a different controller (which both place on scheduler
/// 0 by the seeded rule, [`Placement::Seeded`], so that its lease holds
/// two keys); an outage of scheduler 0 and controller 0, a compaction and
/// a queue retiring.
pub fn general(variant: Variant) -> LeaseQueueModel {
    model(Bounds {
        placement: Placement::Seeded,
        outage_ticks: 2,
        outage_clients: vec![Client::Scheduler(0), Client::Controller(0)],
        submissions: vec![(0, 0), (1, 1)],
        faults: Faults {
            compactions: 1,
            retirements: 1,
            ..Faults::default()
        },
        ..quiet(variant, 2, 2, 2)
    })
}

/// Two controllers submit an activation of one action each; where the
/// world places its queue on another scheduler for each, their elections
/// race for the key: the loser forwards to the winner. A queue retires, and a
/// request is held up in the network.
pub fn contest(variant: Variant) -> LeaseQueueModel {
    model(Bounds {
        submissions: vec![(0, 0), (1, 0)],
        faults: Faults {
            retirements: 1,
            delays: 1,
            ..Faults::default()
        },
        ..quiet(variant, 2, 2, 2)
    })
}

/// A forward meets a crash and a departure: two schedulers, two
/// controllers, one action, which each controller may place on another
/// scheduler (their elections race, and the loser forwards to the winner); the
/// forwarder may crash, and the winner leave for good, at any time.
pub fn forward_loss(variant: Variant) -> LeaseQueueModel {
    model(Bounds {
        submissions: vec![(0, 0), (1, 0)],
        faults: Faults {
            crashes: 1,
            departures: 1,
            ..Faults::default()
        },
        ..quiet(variant, 2, 2, 1)
    })
}

/// `general`'s sizes with requests and replies going astray: a request
/// applied late (after its retry), a reply lost, and a queue retiring.
/// Queues are placed by the seeded rule ([`Placement::Seeded`]).
pub fn lossy(variant: Variant) -> LeaseQueueModel {
    model(Bounds {
        placement: Placement::Seeded,
        submissions: vec![(0, 0), (1, 1)],
        faults: Faults {
            retirements: 1,
            delays: 1,
            lost_replies: 1,
            ..Faults::default()
        },
        ..quiet(variant, 2, 2, 2)
    })
}

/// `general`'s sizes with at-least-once delivery: a message delivered
/// twice, one overtaking another, and a scheduler crash. Queues are
/// placed by the seeded rule ([`Placement::Seeded`]).
pub fn redelivery(variant: Variant) -> LeaseQueueModel {
    model(Bounds {
        placement: Placement::Seeded,
        submissions: vec![(0, 0), (1, 1)],
        faults: Faults {
            crashes: 1,
            duplicates: 1,
            reorders: 1,
            ..Faults::default()
        },
        ..quiet(variant, 2, 2, 2)
    })
}

/// `general`'s sizes with etcd's own faults: a leader loss, a watch
/// that stalls without an error, etcd's clock a tick ahead, and a write
/// outside the endpoint keys (a gap in the revisions a watch sees).
/// Queues are placed by the seeded rule ([`Placement::Seeded`]).
pub fn etcd_faults(variant: Variant) -> LeaseQueueModel {
    model(Bounds {
        placement: Placement::Seeded,
        submissions: vec![(0, 0), (1, 1)],
        faults: Faults {
            leader_losses: 1,
            stalls: 1,
            drift: 1,
            foreign_writes: 1,
            ..Faults::default()
        },
        ..quiet(variant, 2, 2, 2)
    })
}

/// `general` with a scheduler crash and an etcd leader loss besides: too
/// big to complete on a 2-core machine in 10 minutes (docs/leasequeue.md).
pub fn general_crash(variant: Variant) -> LeaseQueueModel {
    let mut model = general(variant);
    model.bounds.faults.crashes = 1;
    model.bounds.faults.leader_losses = 1;
    model
}

/// Three schedulers, one controller, two actions, one activation of each:
/// a scheduler stops for good at any time, with what it holds, and its
/// actions must find a live owner among the other two.
pub fn three(variant: Variant) -> LeaseQueueModel {
    model(Bounds {
        submissions: vec![(0, 0), (0, 1)],
        faults: Faults {
            departures: 1,
            ..Faults::default()
        },
        ..quiet(variant, 3, 1, 2)
    })
}

/// Three schedulers, two controllers, two actions, an activation of each
/// through a different controller: a scheduler stops for good and one
/// crashes, each at any time. Too big for `cargo test`.
pub fn three_crash(variant: Variant) -> LeaseQueueModel {
    model(Bounds {
        submissions: vec![(0, 0), (1, 1)],
        faults: Faults {
            departures: 1,
            crashes: 1,
            ..Faults::default()
        },
        ..quiet(variant, 3, 2, 2)
    })
}

/// `general` with a message sent twice besides: for benchmarks.
pub fn bench(variant: Variant) -> LeaseQueueModel {
    let mut model = general(variant);
    model.bounds.faults.duplicates = 1;
    model
}

/// `seed5286` with one request held up in the network: a retiring
/// queue's delete can land after its key was claimed again.
pub fn late_delete(variant: Variant) -> LeaseQueueModel {
    let mut model = seed5286(variant);
    model.bounds.faults.delays = 1;
    model
}

/// Two schedulers, one controller, one action, one activation: a
/// message sent twice and a scheduler crash, without an outage.
pub fn duplicate(variant: Variant) -> LeaseQueueModel {
    model(Bounds {
        submissions: vec![(0, 0)],
        faults: Faults {
            crashes: 1,
            duplicates: 1,
            ..Faults::default()
        },
        ..quiet(variant, 2, 1, 1)
    })
}

/// Scale-out: two schedulers, one controller, two actions, but scheduler 1
/// starts only later and joins the running cluster. Before the join the
/// controller can place a queue only on scheduler 0, after it on either:
/// an activation of action 1 before the join goes to scheduler 0, and one
/// after it to whichever the key names by then (no queue moves).
pub fn join(variant: Variant) -> LeaseQueueModel {
    model(Bounds {
        submissions: vec![(0, 1), (0, 0), (0, 1)],
        faults: Faults {
            joins: 1,
            retirements: 1,
            ..Faults::default()
        },
        ..quiet(variant, 2, 1, 2)
    })
}

/// Scale-in by loss: two schedulers, one controller, two actions, one
/// activation of each (placed on either scheduler), and one scheduler
/// that stops for good at any time, with what it holds: its lease is left
/// to expire, and what the controller sends it bounces.
pub fn departure(variant: Variant) -> LeaseQueueModel {
    model(Bounds {
        submissions: vec![(0, 0), (0, 1)],
        faults: Faults {
            departures: 1,
            ..Faults::default()
        },
        ..quiet(variant, 2, 1, 2)
    })
}

/// Scale-in by drain: two schedulers, one controller, two actions, one
/// activation of each (placed on either scheduler), and one scheduler
/// told to drain at any time: it takes no new work, lets what it holds
/// settle, gives its lease back (its keys go at one revision) and stops;
/// what is sent to it from then on bounces.
pub fn drain(variant: Variant) -> LeaseQueueModel {
    model(Bounds {
        submissions: vec![(0, 0), (0, 1)],
        faults: Faults {
            drains: 1,
            ..Faults::default()
        },
        ..quiet(variant, 2, 1, 2)
    })
}

/// `seed5286` with a deadline two ticks after each submission (the probe
/// has none): an activation that waits out the outage on its scheduler
/// (whose lease's validity ran out) passes its deadline before it can
/// start.
pub fn deadline(variant: Variant) -> LeaseQueueModel {
    let mut model = seed5286(variant);
    model.bounds.deadline = Some(2);
    model
}

/// The executor's edges: 2 schedulers, 1 controller, 1 action, two
/// activations; an execution ends with the executor's error, one hangs,
/// and a scheduler drains. Executions time out after 2 ticks: what hangs
/// is settled as failed then, and a drain waits no longer.
pub fn executions(variant: Variant) -> LeaseQueueModel {
    model(Bounds {
        submissions: vec![(0, 0), (0, 0)],
        execute_for: Some(2),
        faults: Faults {
            execution_failures: 1,
            hangs: 1,
            drains: 1,
            ..Faults::default()
        },
        ..quiet(variant, 2, 1, 1)
    })
}

/// A caller's retries: 2 schedulers, 2 controllers, 1 action placed by the
/// world (so that the two controllers may place it on different
/// schedulers, and one forwards to the other); one activation, submitted
/// through controller 0, then submitted again under its id through
/// controller 0 and through controller 1, each at any time, before or
/// after it ended.
pub fn retries(variant: Variant) -> LeaseQueueModel {
    model(Bounds {
        submissions: vec![(0, 0)],
        retries: vec![(0, 0), (1, 0)],
        ..quiet(variant, 2, 2, 1)
    })
}

/// `retries` with a scheduler that may stop for good and one that may
/// crash, each at any time: a resubmission may reach a scheduler that
/// knows nothing of the run, or ask a peer that is gone.
pub fn retries_departure(variant: Variant) -> LeaseQueueModel {
    let mut model = retries(variant);
    model.bounds.faults.departures = 1;
    model.bounds.faults.crashes = 1;
    model
}

/// A deadline meets a crash: 2 schedulers, 1 controller, 1 action, one
/// activation whose caller waits 3 ticks; a scheduler may crash at any
/// time, after running it and before it was acknowledged, and the copy
/// routed again may reach a scheduler past the deadline.
pub fn crash_deadline(variant: Variant) -> LeaseQueueModel {
    model(Bounds {
        submissions: vec![(0, 0)],
        deadline: Some(3),
        faults: Faults {
            crashes: 1,
            ..Faults::default()
        },
        ..quiet(variant, 2, 1, 1)
    })
}

/// `seed5286` with etcd's clock running one tick ahead of the
/// schedulers' once: within the margin the steadfast fence keeps.
pub fn drift(variant: Variant) -> LeaseQueueModel {
    let mut model = seed5286(variant);
    model.bounds.faults.drift = 1;
    model
}

/// A forward meets a vanishing: `forward-loss`'s sizes, with the winner
/// of the race (or the loser) stopping for good at any time without a
/// word instead of a crash and a departure. A forward to a peer that
/// vanished is neither acknowledged nor refused, and its controller, which
/// hears from the live forwarder, never presumes the forwarder gone: the
/// forwarder must presume the peer gone (`Rule::PresumePeerGone`).
pub fn forward_vanish(variant: Variant) -> LeaseQueueModel {
    let mut model = forward_loss(variant);
    model.bounds.faults = Faults {
        vanishings: 1,
        ..Faults::default()
    };
    model
}

/// A value no steadfast node wrote: `forward-loss`'s sizes (two
/// schedulers, two controllers, one action placed by the world), with
/// another system putting a value of its own under the action's key, while
/// no scheduler holds it, at any time: a lookup or a claim may find it, and
/// it stays until someone deletes it, which nothing makes happen.
pub fn foreign_value(variant: Variant) -> LeaseQueueModel {
    let mut model = forward_loss(variant);
    model.bounds.faults = Faults {
        foreign_values: 1,
        ..Faults::default()
    };
    model
}

/// A permission withheld: `forward-loss`'s sizes, with etcd refusing one
/// scheduler's user every request on the action's key (which it does not
/// hold), from the start or at any time, until an operator grants it,
/// which nothing makes happen: its claim or lookup of the key is refused,
/// while the other scheduler may claim it.
pub fn access_denied(variant: Variant) -> LeaseQueueModel {
    let mut model = forward_loss(variant);
    model.bounds.faults = Faults {
        denials: 1,
        ..Faults::default()
    };
    model
}

/// The user's edges at once, for `steadfast check` (too big for `cargo
/// test`): `retries` (two schedulers, two controllers, one action placed
/// by the world, one activation submitted again through each controller),
/// with a scheduler that vanishes and one that crashes, an answer lost, an
/// execution that ends with the executor's error, a value no steadfast
/// node wrote under the action's key, and a caller that waits 4 ticks.
pub fn edges(variant: Variant) -> LeaseQueueModel {
    let mut model = retries(variant);
    model.bounds.deadline = Some(4);
    model.bounds.faults = Faults {
        vanishings: 1,
        crashes: 1,
        lost_answers: 1,
        execution_failures: 1,
        foreign_values: 1,
        ..Faults::default()
    };
    model
}

/// `seed5286` with etcd's clock two ticks ahead: beyond the fence's
/// margin, so that even the steadfast scheduler serves under a lease
/// etcd has already expired. It shows what the fence assumes.
pub fn drift_beyond(variant: Variant) -> LeaseQueueModel {
    let mut model = seed5286(variant);
    model.bounds.faults.drift = 2;
    model
}

/// A host vanishes: `departure`'s sizes, with a scheduler that stops for
/// good at any time without a word (a deleted pod whose address
/// black-holes): nothing sent to it is answered or refused, and its lease
/// is left to expire. What was sent to it moves only once the controller
/// presumes it gone.
pub fn vanishing(variant: Variant) -> LeaseQueueModel {
    model(Bounds {
        submissions: vec![(0, 0), (0, 1)],
        faults: Faults {
            vanishings: 1,
            ..Faults::default()
        },
        ..quiet(variant, 2, 1, 2)
    })
}

/// `no-members` with a controller that presumes a scheduler gone one tick
/// after its member key went, sooner than a live scheduler cut off from
/// etcd comes back: past the bound "executed at most once" rests on.
pub fn presume_early(variant: Variant) -> LeaseQueueModel {
    let mut model = no_members(variant);
    model.bounds.presume_gone_after = 1;
    model
}

/// A leader loss after an outage: 2 schedulers, 1 controller, 1 action,
/// one activation; a 2-tick outage cuts off scheduler 0 and the
/// controller, long enough for scheduler 0's lease to expire, and etcd may
/// then lose its leader, so that the scheduler cannot put its member key
/// back for as long as etcd has none, while it still runs what it was
/// sent. The controller must not take that time for the scheduler's
/// absence (`Rule::EtcdTime`).
pub fn presume_leaderless(variant: Variant) -> LeaseQueueModel {
    model(Bounds {
        outage_ticks: 2,
        outage_clients: vec![Client::Scheduler(0), Client::Controller(0)],
        submissions: vec![(0, 0)],
        faults: Faults {
            leader_losses: 1,
            ..Faults::default()
        },
        ..quiet(variant, 2, 1, 1)
    })
}

/// Answers go astray: 2 schedulers, 1 controller, 1 action, one
/// activation; the network loses one answer (an acknowledgement, a
/// refusal, a report or a confirmation: the world picks which), and a
/// scheduler may crash at any time, after an answer it sent was lost.
pub fn lost_answers(variant: Variant) -> LeaseQueueModel {
    model(Bounds {
        submissions: vec![(0, 0)],
        faults: Faults {
            crashes: 1,
            lost_answers: 1,
            ..Faults::default()
        },
        ..quiet(variant, 2, 1, 1)
    })
}

/// A late answer and a caller's retry: 2 schedulers, 1 controller, 1
/// action, one activation submitted again under its id through the same
/// controller, before or after it ended; the network holds one answer up
/// (the world picks which) and delivers it after what is sent meanwhile,
/// and a scheduler may crash at any time.
pub fn late_answers(variant: Variant) -> LeaseQueueModel {
    model(Bounds {
        submissions: vec![(0, 0)],
        retries: vec![(0, 0)],
        faults: Faults {
            crashes: 1,
            delayed_answers: 1,
            ..Faults::default()
        },
        ..quiet(variant, 2, 1, 1)
    })
}

/// Every fault of the network at once, with a caller's retry: `late-answers`
/// with, besides, an answer lost, one delivered twice and a message lost.
pub fn answers_astray(variant: Variant) -> LeaseQueueModel {
    let mut model = late_answers(variant);
    let faults = &mut model.bounds.faults;
    faults.lost_answers = 1;
    faults.duplicate_answers = 1;
    faults.lost_messages = 1;
    model
}

/// etcd slower than a wake-up to open a watch: 2 schedulers, 1 controller,
/// 2 actions, an activation of each; the controller's watch stalls, and
/// etcd holds each opening it asks for past the next tick (two at most at
/// a time), by when the controller has asked for another.
pub fn slow_watch(variant: Variant) -> LeaseQueueModel {
    model(Bounds {
        submissions: vec![(0, 0), (0, 1)],
        slow_watch_openings: true,
        faults: Faults {
            stalls: 1,
            ..Faults::default()
        },
        ..quiet(variant, 2, 1, 2)
    })
}
