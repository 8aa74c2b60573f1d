//! Unit tests and property tests of the scheduler's and the controller's
//! transition functions, and of the etcd model.

use proptest::prelude::*;

use super::controller::{self, Watch};
use super::etcd::{Etcd, Refused, MIN_TTL};
use super::model::Small;
use super::scheduler::{self, LeaseState};
use super::{FailReason, Variant};
use crate::trace_json::round_trip;

/// The roles as the model instantiates them.
type Scheduler = scheduler::Scheduler<Small>;
type Input = scheduler::Input<Small>;
type Effect = scheduler::Effect<Small>;
type Controller = controller::Controller<Small>;
type ControllerInput = controller::Input<Small>;

/// A scheduler of id 0 that holds lease `lease` and a queue for action 0.
fn serving(lease: u8) -> Scheduler {
    let mut s = Scheduler::new(0);
    s.step(Variant::Steadfast, 2, Input::Granted { lease });
    s.step(Variant::Steadfast, 2, Input::CreateQueue { action: 0 });
    s.step(
        Variant::Steadfast,
        2,
        Input::Claimed {
            action: 0,
            won: true,
            owner: Some(0),
        },
    );
    s
}

#[test]
fn etcd_should_raise_a_short_ttl_to_its_floor() {
    assert_eq!(Etcd::new(1).ttl, MIN_TTL);
    assert_eq!(Etcd::new(5).ttl, 5);
}

#[test]
fn etcd_should_expire_a_lease_and_its_keys_only_while_it_has_a_leader() {
    let mut etcd = Etcd::new(2);
    let lease = etcd.grant();
    etcd.create_if_absent(0, 0, lease).unwrap();
    etcd.leader = false;
    etcd.tick();
    etcd.tick();
    assert!(etcd.is_live(lease), "no leader, no expiry");
    etcd.promote();
    etcd.tick();
    assert!(etcd.is_live(lease), "promote restores the full TTL");
    etcd.tick();
    assert!(!etcd.is_live(lease));
    assert_eq!(etcd.get(0), None, "the key went with its lease");
    assert_eq!(etcd.keep_alive(lease), 0, "a missing lease answers TTL 0");
}

#[test]
fn etcd_should_refuse_a_second_key_and_a_dead_lease() {
    let mut etcd = Etcd::new(2);
    let lease = etcd.grant();
    etcd.create_if_absent(0, 0, lease).unwrap();
    assert_eq!(
        etcd.create_if_absent(0, 1, lease),
        Err(Refused::Exists { owner: 0, lease })
    );
    etcd.revoke(lease);
    assert_eq!(
        etcd.create_if_absent(0, 1, lease),
        Err(Refused::LeaseNotFound)
    );
}

#[test]
fn etcd_should_delete_conditionally_only_for_the_owner() {
    let mut etcd = Etcd::new(2);
    let lease = etcd.grant();
    etcd.create_if_absent(0, 0, lease).unwrap();
    assert!(!etcd.delete(0, Some((1, lease))));
    assert!(etcd.delete(0, Some((0, lease))));
}

#[test]
fn etcd_should_delete_a_leases_keys_in_one_revision_and_one_watch_response() {
    // Measured on etcd 3.4.23: a lease holding three keys, revoked, gave one
    // watch response of three DELETE events at one revision.
    let mut etcd = Etcd::new(2);
    let lease = etcd.grant();
    for action in 0..3 {
        etcd.create_if_absent(action, 0, lease).unwrap();
    }
    let before = etcd.rev;
    etcd.revoke(lease);
    assert_eq!(etcd.rev, before + 1, "one revision for every key");
    let response = etcd.next_response(before + 1).unwrap();
    let deleted: Vec<(u8, Option<u8>)> = response.iter().map(|c| (c.action, c.owner)).collect();
    assert_eq!(deleted, [(0, None), (1, None), (2, None)]);
    assert!(response.iter().all(|c| c.rev == before + 1));
    assert!(etcd.next_response(before + 2).unwrap().is_empty());
    let creations = etcd.next_response(1).unwrap();
    assert_eq!(creations.len(), 1, "a create is a response of its own");
}

#[test]
fn controller_should_apply_every_change_of_one_response() {
    for variant in [Variant::OpenWhisk, Variant::Steadfast] {
        let mut c = Controller::new(vec![0, 1], 1);
        c.step(
            variant,
            controller::Input::Listed {
                rev: 3,
                keys: vec![(0, 0), (1, 0)],
            },
        );
        let deletions = controller::Input::Changed {
            rev: 4,
            changes: vec![(0, None), (1, None)],
        };
        c.step(variant, deletions);
        assert_eq!(c.route(&0), None, "{variant:?}");
        assert_eq!(
            c.route(&1),
            None,
            "{variant:?}: the second event of the revision is not lost"
        );
        assert_eq!(c.watch, Watch::Active { next: 5 });
    }
}

#[test]
fn openwhisk_should_take_a_ttl_of_zero_for_success() {
    let mut s = serving(7);
    assert!(s
        .step(Variant::OpenWhisk, 2, Input::KeptAlive { ttl: 0 })
        .is_empty());
    assert_eq!(s.live_lease(), Some(&7));
}

#[test]
fn steadfast_should_treat_a_ttl_of_zero_as_loss_and_reclaim_its_keys() {
    let mut s = serving(7);
    let effects = s.step(Variant::Steadfast, 2, Input::KeptAlive { ttl: 0 });
    assert_eq!(effects, vec![Effect::Revoke { lease: 7 }]);
    assert!(s.queues.is_empty(), "no work without a live lease");
    assert_eq!(
        s.step(Variant::Steadfast, 2, Input::Revoked),
        vec![Effect::Grant]
    );
    let effects = s.step(Variant::Steadfast, 2, Input::Granted { lease: 8 });
    assert_eq!(
        effects,
        vec![Effect::Claim {
            action: 0,
            lease: 8
        }]
    );
}

#[test]
fn steadfast_should_stop_serving_before_etcd_can_expire_its_lease() {
    let mut s = serving(7);
    assert!(s.step(Variant::Steadfast, 3, Input::Unanswered).is_empty());
    assert_eq!(s.lease, LeaseState::Held { id: 7, silent: 1 });
    assert_eq!(
        s.step(Variant::Steadfast, 3, Input::Unanswered),
        vec![Effect::Revoke { lease: 7 }]
    );
}

#[test]
fn missing_key_should_fail_under_openwhisk_and_elect_under_steadfast() {
    let mut s = Scheduler::new(1);
    s.step(Variant::OpenWhisk, 2, Input::Granted { lease: 3 });
    let resolved = Input::Resolved {
        id: 4,
        action: 0,
        owner: None,
    };
    assert_eq!(
        s.step(Variant::OpenWhisk, 2, resolved.clone()),
        vec![Effect::Fail {
            id: 4,
            reason: FailReason::NoQueueEndpoint
        }]
    );
    let mut s = Scheduler::new(1);
    s.step(Variant::Steadfast, 2, Input::Granted { lease: 3 });
    assert_eq!(
        s.step(Variant::Steadfast, 2, resolved),
        vec![Effect::Claim {
            action: 0,
            lease: 3
        }]
    );
    let effects = s.step(
        Variant::Steadfast,
        2,
        Input::Claimed {
            action: 0,
            won: true,
            owner: Some(1),
        },
    );
    assert_eq!(
        effects,
        vec![Effect::Execute {
            id: 4,
            action: 0,
            lease: 3
        }]
    );
}

#[test]
fn lost_election_should_forward_to_the_winner() {
    let mut s = Scheduler::new(1);
    s.step(Variant::Steadfast, 2, Input::Granted { lease: 3 });
    s.step(
        Variant::Steadfast,
        2,
        Input::Resolved {
            id: 4,
            action: 0,
            owner: None,
        },
    );
    let effects = s.step(
        Variant::Steadfast,
        2,
        Input::Claimed {
            action: 0,
            won: false,
            owner: Some(0),
        },
    );
    assert_eq!(
        effects,
        vec![Effect::Forward {
            id: 4,
            action: 0,
            to: 0
        }]
    );
}

#[test]
fn idle_queue_should_delete_its_key_conditionally_only_under_steadfast() {
    let mut s = serving(7);
    let effects = s.step(Variant::Steadfast, 2, Input::Idle { action: 0 });
    assert_eq!(
        effects,
        vec![Effect::Delete {
            action: 0,
            owned_under: Some(7)
        }]
    );
    let mut s = serving(7);
    let effects = s.step(Variant::OpenWhisk, 2, Input::Idle { action: 0 });
    assert_eq!(
        effects,
        vec![Effect::Delete {
            action: 0,
            owned_under: None
        }]
    );
}

#[test]
fn restarted_watch_should_resume_under_steadfast_and_skip_under_openwhisk() {
    for (variant, expected) in [(Variant::Steadfast, 3), (Variant::OpenWhisk, 10)] {
        let mut c = Controller::new(vec![0, 1], 2);
        c.step(variant, controller::Input::Disconnected);
        c.step(variant, controller::Input::Reconnected { rev: 9 });
        assert_eq!(c.watch, Watch::Active { next: expected }, "{variant:?}");
    }
}

#[test]
fn compacted_watch_should_relist_under_steadfast() {
    let mut c = Controller::new(vec![0, 1], 2);
    assert_eq!(
        c.step(Variant::Steadfast, controller::Input::Compacted { rev: 9 }),
        vec![controller::Effect::List]
    );
    c.step(
        Variant::Steadfast,
        controller::Input::Listed {
            rev: 9,
            keys: vec![(0, 1)],
        },
    );
    assert_eq!(c.route(&0), Some(&1));
    assert_eq!(c.watch, Watch::Active { next: 10 });
}

#[test]
fn unreachable_etcd_should_fail_under_openwhisk_and_park_under_steadfast() {
    let failed = controller::Input::GetFailed { id: 1, action: 0 };
    let mut c = Controller::new(vec![0, 1], 2);
    assert!(matches!(
        c.step(Variant::OpenWhisk, failed.clone())[..],
        [controller::Effect::Fail { id: 1, .. }]
    ));
    let mut c = Controller::new(vec![0, 1], 2);
    assert!(c.step(Variant::Steadfast, failed).is_empty());
    c.step(Variant::Steadfast, controller::Input::Disconnected);
    assert_eq!(
        c.step(
            Variant::Steadfast,
            controller::Input::Reconnected { rev: 3 }
        ),
        vec![controller::Effect::Get { id: 1, action: 0 }]
    );
}

fn scheduler_inputs() -> impl Strategy<Value = Vec<Input>> {
    let input = prop_oneof![
        Just(Input::Tick),
        (0u8..4).prop_map(|ttl| Input::KeptAlive { ttl }),
        Just(Input::Unanswered),
        (1u8..5).prop_map(|lease| Input::Granted { lease }),
        Just(Input::Revoked),
        (0u8..2, any::<bool>(), prop::option::of(0u8..3))
            .prop_map(|(action, won, owner)| Input::Claimed { action, won, owner }),
        (0u8..4, 0u8..2).prop_map(|(id, action)| Input::Activation { id, action }),
        (0u8..4, 0u8..2, prop::option::of((0u8..3, 1u8..5)))
            .prop_map(|(id, action, owner)| Input::Resolved { id, action, owner }),
        (0u8..2).prop_map(|action| Input::CreateQueue { action }),
        (0u8..2).prop_map(|action| Input::Idle { action }),
    ];
    prop::collection::vec(input, 0..40)
}

proptest! {
    #[test]
    fn steadfast_scheduler_should_serve_only_under_its_live_lease(inputs in scheduler_inputs()) {
        let mut s = Scheduler::new(0);
        for input in inputs {
            for effect in s.step(Variant::Steadfast, 3, input) {
                match effect {
                    Effect::Execute { lease, .. } => {
                        prop_assert_eq!(Some(&lease), s.live_lease(), "served under a lease not held");
                    }
                    Effect::Claim { lease, .. } => {
                        prop_assert_eq!(Some(&lease), s.live_lease(), "claimed under a lease not held");
                    }
                    Effect::Forward { to, .. } => prop_assert_ne!(to, 0, "forwarded to itself"),
                    _ => {}
                }
            }
            prop_assert!(s.queues.iter().all(|q| Some(&q.lease) == s.live_lease()) || s.live_lease().is_none());
            prop_assert!(s.queues.windows(2).all(|q| q[0].action < q[1].action), "one queue per action");
        }
    }
}

fn controller_inputs() -> impl Strategy<Value = Vec<ControllerInput>> {
    use controller::Input as C;
    let input = prop_oneof![
        (0u8..4, 0u8..2).prop_map(|(id, action)| C::Submit { id, action }),
        (0u8..4, 0u8..2, prop::option::of(0u8..2)).prop_map(|(id, action, owner)| C::Got {
            id,
            action,
            owner
        }),
        (0u8..4, 0u8..2).prop_map(|(id, action)| C::GetFailed { id, action }),
        (
            1u32..12,
            prop::collection::vec((0u8..2, prop::option::of(0u8..2)), 1..3)
        )
            .prop_map(|(rev, changes)| C::Changed { rev, changes }),
        Just(C::Disconnected),
        (1u32..12).prop_map(|rev| C::Reconnected { rev }),
        (1u32..12).prop_map(|rev| C::Compacted { rev }),
        (1u32..12, prop::collection::vec((0u8..2, 0u8..2), 0..2)).prop_map(|(rev, mut keys)| {
            keys.sort_unstable();
            keys.dedup_by_key(|(a, _)| *a);
            C::Listed { rev, keys }
        }),
    ];
    prop::collection::vec(input, 0..40)
}

proptest! {
    #[test]
    fn controller_should_route_only_to_schedulers_and_never_lose_a_parked_activation(
        inputs in controller_inputs(),
        steadfast in any::<bool>(),
    ) {
        let variant = if steadfast { Variant::Steadfast } else { Variant::OpenWhisk };
        let mut c = Controller::new(vec![0, 1], 1);
        for input in inputs {
            let failed = matches!(input, controller::Input::GetFailed { .. });
            let parked_before = c.parked.len();
            let resuming = matches!(input, controller::Input::Reconnected { .. });
            let effects = c.step(variant, input);
            for effect in &effects {
                match *effect {
                    controller::Effect::Send { to, .. } | controller::Effect::CreateQueue { to, .. } => {
                        prop_assert!(to < 2, "routed to scheduler {}, which does not exist", to);
                    }
                    controller::Effect::Fail { .. } => prop_assert!(variant == Variant::OpenWhisk),
                    controller::Effect::Get { .. } | controller::Effect::List => {}
                }
            }
            prop_assert!(c.cache.windows(2).all(|e| e[0].0 < e[1].0), "one cache entry per action");
            if failed && variant == Variant::Steadfast {
                prop_assert_eq!(c.parked.len(), parked_before + 1, "a failed lookup is parked");
            }
            if resuming {
                let gets = effects.iter().filter(|e| matches!(e, controller::Effect::Get { .. })).count();
                prop_assert_eq!(gets, parked_before, "every parked activation is looked up again");
                prop_assert!(c.parked.is_empty());
            }
        }
    }
}

proptest! {
    #[test]
    fn every_input_and_effect_should_round_trip_through_json(
        scheduler_in in scheduler_inputs(),
        controller_in in controller_inputs(),
        steadfast in any::<bool>(),
    ) {
        let variant = if steadfast { Variant::Steadfast } else { Variant::OpenWhisk };
        let mut s = Scheduler::new(0);
        for input in scheduler_in {
            prop_assert_eq!(&round_trip(&input), &input);
            for effect in s.step(variant, 3, input) {
                prop_assert_eq!(round_trip(&effect), effect);
            }
        }
        let mut c = Controller::new(vec![0, 1], 1);
        for input in controller_in {
            prop_assert_eq!(&round_trip(&input), &input);
            for effect in c.step(variant, input) {
                prop_assert_eq!(round_trip(&effect), effect);
            }
        }
    }
}

#[test]
fn fail_reasons_should_read_as_openwhisk_words() {
    assert_eq!(
        FailReason::NoQueueEndpoint.to_string(),
        "failed to get the queue endpoint"
    );
    assert_eq!(
        FailReason::NoSchedulerEndpoint.to_string(),
        "no scheduler endpoint available"
    );
}

/// Identifiers as a runtime has them: names for actions, activations and
/// schedulers, etcd's `i64` lease ids and revisions.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
struct Real;

impl super::Domain for Real {
    type Action = String;
    type Scheduler = String;
    type Activation = String;
    type Lease = i64;
    type Revision = i64;

    fn next_revision(rev: i64) -> i64 {
        rev + 1
    }

    fn action_number(action: &String) -> u64 {
        action.len() as u64
    }
}

#[test]
fn roles_should_run_on_real_identifiers() {
    use scheduler::{Effect as E, Input as I};
    let name = |s: &str| s.to_string();
    let lease = 7_587_870_261_423_i64;
    let mut s = scheduler::Scheduler::<Real>::new(name("scheduler-a:8081"));
    s.step(Variant::Steadfast, 2, I::Granted { lease });
    let claim = s.step(
        Variant::Steadfast,
        2,
        I::CreateQueue {
            action: name("hello"),
        },
    );
    assert_eq!(
        claim,
        [E::Claim {
            action: name("hello"),
            lease
        }]
    );
    let won = I::Claimed {
        action: name("hello"),
        won: true,
        owner: None,
    };
    s.step(Variant::Steadfast, 2, won);
    let run = s.step(
        Variant::Steadfast,
        2,
        I::Activation {
            id: name("act-1"),
            action: name("hello"),
        },
    );
    let execute = E::Execute {
        id: name("act-1"),
        action: name("hello"),
        lease,
    };
    assert_eq!(run, std::slice::from_ref(&execute));
    assert_eq!(
        serde_json::to_string(&execute).unwrap(),
        r#"{"Execute":{"id":"act-1","action":"hello","lease":7587870261423}}"#
    );

    use controller::{Effect as CE, Input as CI};
    let schedulers = vec![name("scheduler-a:8081"), name("scheduler-b:8081")];
    let mut c = controller::Controller::<Real>::new(schedulers, 41);
    c.step(
        Variant::Steadfast,
        CI::Listed {
            rev: 100,
            keys: vec![(name("hello"), name("scheduler-b:8081"))],
        },
    );
    let routed = c.step(
        Variant::Steadfast,
        CI::Submit {
            id: name("act-2"),
            action: name("hello"),
        },
    );
    assert_eq!(
        routed,
        [CE::Send {
            id: name("act-2"),
            action: name("hello"),
            to: name("scheduler-b:8081")
        }]
    );
    c.step(
        Variant::Steadfast,
        CI::Changed {
            rev: 101,
            changes: vec![(name("hello"), None)],
        },
    );
    assert_eq!(c.watch, Watch::Active { next: 102 });
    let missing = c.step(
        Variant::Steadfast,
        CI::Got {
            id: name("act-3"),
            action: name("hello"),
            owner: None,
        },
    );
    assert_eq!(
        missing,
        [
            CE::CreateQueue {
                action: name("hello"),
                to: name("scheduler-b:8081")
            },
            CE::Send {
                id: name("act-3"),
                action: name("hello"),
                to: name("scheduler-b:8081")
            },
        ]
    );
}
