//! Unit tests and property tests of the scheduler's and the controller's
//! transition functions, and of the etcd model.

use proptest::prelude::*;

use super::controller::{self, Watch, WatchId};
use super::etcd::{Etcd, Key, Refused, Value, MIN_TTL};
use super::model::Small;
use super::scheduler::{self, ClaimResult, Endpoint, LeaseState, Phase};
use super::trace::{ControllerHeader, Named, SchedulerHeader, SchedulerRecord};
use super::{Domain, ExecutionFailure, FailReason, KeyFault, Outcome, Rule, Rules, Variant};
use crate::trace::json::round_trip;
use crate::trace::{Header, Record, Run, Trace};

/// The watch a controller starts with.
const W0: WatchId = WatchId(0);

/// The roles as the model instantiates them.
type Scheduler = scheduler::Scheduler<Small>;
type Input = scheduler::Input<Small>;
type Effect = scheduler::Effect<Small>;
type Controller = controller::Controller<Small>;
type ControllerInput = controller::Input<Small>;
type ControllerEffect = controller::Effect<Small>;

/// A scheduler's setup: a TTL of 3 ticks, a margin of 1, woken every tick,
/// retrying a lease's requests every tick while suspended, queues retiring
/// after 2 idle ticks, a peer forwarded to presumed gone once its member
/// key is out of sight for 3.
fn config(rules: impl Into<Rules>) -> scheduler::Config<Small> {
    scheduler::Config {
        rules: rules.into(),
        ttl: 3,
        margin: 1,
        wake_every: 1,
        retry_every: 1,
        idle_after: 2,
        remember_for: None,
        execute_for: Some(4),
        presume_gone_after: 3,
    }
}

fn controller_config(rules: impl Into<Rules>) -> controller::Config<Small> {
    controller::Config {
        rules: rules.into(),
        wake_every: 1,
        seed: 0,
        presume_gone_after: 3,
    }
}

/// A watch's report that `action`'s endpoint key was deleted.
fn gone(action: u8) -> controller::Change<Small> {
    controller::Change::Endpoint {
        action,
        owner: None,
    }
}

/// A watch's report that `scheduler`'s member key was deleted.
fn left(scheduler: u8) -> controller::Change<Small> {
    controller::Change::Member {
        scheduler,
        incarnation: None,
    }
}

/// Scheduler 0 with `rules`, holding lease `lease` confirmed just now (so
/// valid for TTL 3 less the margin: 2 ticks) and a queue for action 0
/// whose key revision 2 created.
fn serving(rules: impl Into<Rules>, lease: u8) -> (Scheduler, scheduler::Config<Small>) {
    let config = config(rules);
    let mut s = Scheduler::new(0, 0);
    s.step(&config, 0, Input::Wake);
    s.step(&config, 0, Input::Granted { lease, ttl: 3 });
    let answer = Input::KeptAlive {
        lease,
        keepalive: 0,
        ttl: 3,
    };
    s.step(&config, 0, answer);
    s.step(&config, 0, Input::CreateQueue { action: 0 });
    let created = ClaimResult::Created { created: 2 };
    s.step(
        &config,
        0,
        Input::Claimed {
            action: 0,
            lease,
            result: created,
        },
    );
    assert_eq!(s.queue(&0).map(|q| q.lease), Some(lease));
    (s, config)
}

/// Activation `id` of action 0 from a controller.
fn activation(id: u8) -> Input {
    activation_of(id, 0)
}

/// Activation `id` of `action` from a controller.
fn activation_of(id: u8, action: u8) -> Input {
    sent_by(0, id, action)
}

/// The lookup of `action`'s key for activation `id`, which scheduler 1
/// (incarnation 0) owns.
fn owned_by_peer(id: u8, action: u8) -> Input {
    let owner = Endpoint {
        owner: 1,
        incarnation: 0,
        lease: 9,
        created: 3,
    };
    Input::Resolved {
        id,
        action,
        key: Some(owner),
    }
}

/// Activation `id` of `action` from controller `reply_to`.
fn sent_by(reply_to: u8, id: u8, action: u8) -> Input {
    Input::Activation {
        id,
        action,
        forwarded: false,
        incarnation: Some(0),
        left: None,
        reply_to,
        may_have_run: false,
    }
}

fn executes(effects: &[Effect], id: u8) -> bool {
    effects
        .iter()
        .any(|e| matches!(e, Effect::Execute { id: i, .. } if *i == id))
}

#[test]
fn etcd_should_raise_a_short_ttl_to_its_floor() {
    assert_eq!(Etcd::new(1).ttl, MIN_TTL);
    assert_eq!(Etcd::new(5).ttl, 5);
}

#[test]
fn etcd_should_expire_a_lease_and_its_keys_only_while_it_has_a_leader() {
    let mut etcd = Etcd::new(3);
    let lease = etcd.grant();
    etcd.create_if_absent(0, (0, 0), lease).unwrap();
    etcd.leader = false;
    etcd.tick();
    etcd.tick();
    assert!(etcd.is_live(lease), "no leader, no expiry");
    etcd.promote();
    etcd.tick();
    etcd.tick();
    assert!(etcd.is_live(lease), "promote restores the full TTL");
    etcd.tick();
    assert!(!etcd.is_live(lease));
    assert_eq!(etcd.get(0), None, "the key went with its lease");
    assert_eq!(etcd.keep_alive(lease), 0, "a missing lease answers TTL 0");
}

#[test]
fn etcd_should_refuse_a_second_key_and_a_dead_lease() {
    let mut etcd = Etcd::new(3);
    let lease = etcd.grant();
    let key = etcd.create_if_absent(0, (0, 0), lease).unwrap();
    assert_eq!(
        etcd.create_if_absent(0, (1, 0), lease),
        Err(Refused::Exists(key))
    );
    etcd.revoke(lease);
    assert_eq!(
        etcd.create_if_absent(0, (1, 0), lease),
        Err(Refused::LeaseNotFound)
    );
}

#[test]
fn etcd_should_rebind_a_member_key_put_under_a_new_lease() {
    // A scheduler restarted under a new lease before its old one expired:
    // the old lease's expiry must not take the member key with it.
    let mut etcd = Etcd::new(3);
    let old = etcd.grant();
    assert!(etcd.register((0, 0), old));
    let new = etcd.grant();
    assert!(etcd.register((0, 0), new));
    etcd.revoke(old);
    assert!(etcd.is_member(0));
    etcd.revoke(new);
    assert!(!etcd.is_member(0));
}

#[test]
fn etcd_should_delete_conditionally_only_the_key_a_revision_created() {
    let mut etcd = Etcd::new(3);
    let lease = etcd.grant();
    let first = etcd.create_if_absent(0, (0, 0), lease).unwrap();
    assert!(etcd.delete(0, Some(first.create_rev)));
    // The same owner under the same lease: another key all the same.
    let second = etcd.create_if_absent(0, (0, 0), lease).unwrap();
    assert!(!etcd.delete(0, Some(first.create_rev)));
    assert_eq!(etcd.get(0), Some(second));
    assert!(
        etcd.delete(0, None),
        "an unconditional delete takes any key"
    );
}

#[test]
fn etcd_should_delete_a_leases_keys_in_one_revision_and_one_watch_response() {
    // Measured on etcd 3.4.23: a lease holding three keys, revoked, gave one
    // watch response of three DELETE events at one revision.
    let mut etcd = Etcd::new(3);
    let lease = etcd.grant();
    assert!(etcd.register((0, 0), lease));
    for action in 0..3 {
        etcd.create_if_absent(action, (0, 0), lease).unwrap();
    }
    let before = etcd.rev;
    etcd.revoke(lease);
    assert_eq!(etcd.rev, before + 1, "one revision for every key");
    let response = etcd.next_response(before + 1, false).unwrap();
    let deleted: Vec<(Key, Option<Value>)> = response.iter().map(|c| (c.key, c.value)).collect();
    let endpoint = |action| (Key::Endpoint(action), None);
    let member = (Key::Member(0), None);
    assert_eq!(deleted, [endpoint(0), endpoint(1), endpoint(2), member]);
    assert!(response.iter().all(|c| c.rev == before + 1));
    assert!(!etcd.is_member(0));
    assert!(etcd.next_response(before + 2, false).unwrap().is_empty());
    let creations = etcd.next_response(1, false).unwrap();
    assert_eq!(creations.len(), 1, "a put is a response of its own");
    let caught_up = etcd.next_response(1, true).unwrap();
    let revisions: Vec<u32> = caught_up.iter().map(|c| c.rev).collect();
    assert_eq!(
        revisions.first().copied(),
        creations.first().map(|c| c.rev),
        "a watcher catching up gets the first revision it wants first"
    );
    assert_eq!(revisions.last(), Some(&(before + 1)), "and every later one");
    assert!(revisions.windows(2).all(|w| w[0] <= w[1]), "in order");
    assert!(
        !etcd.register((0, 0), lease),
        "no put under a lease etcd lost"
    );
}

#[test]
fn controller_should_apply_every_change_of_one_response() {
    for variant in [Variant::OpenWhisk, Variant::Steadfast] {
        let config = controller_config(variant);
        let mut c = Controller::new(Vec::new(), vec![(0, 0), (1, 0)], 1);
        c.watch = Watch::Listing;
        c.step(
            &config,
            ControllerInput::Listed {
                rev: 3,
                keys: vec![(0, 0), (1, 0)],
                members: vec![(0, 0), (1, 0)],
            },
        );
        c.step(
            &config,
            ControllerInput::WatchStarted {
                watch: WatchId(1),
                next: 4,
                term: 0,
            },
        );
        let deletions = ControllerInput::Changed {
            watch: WatchId(1),
            changes: vec![(4, gone(0)), (4, gone(1)), (4, left(0))],
            term: 0,
        };
        c.step(&config, deletions);
        assert_eq!(c.route(&0), None, "{variant:?}");
        assert_eq!(
            c.route(&1),
            None,
            "{variant:?}: the second event of the revision is not lost"
        );
        assert_eq!(c.members, [(1, 0)], "{variant:?}: nor the third");
        assert_eq!(
            c.watch,
            Watch::Active {
                id: WatchId(1),
                next: 5,
                probing: false
            }
        );
    }
}

#[test]
fn controller_should_take_a_response_spanning_revisions_from_the_one_it_wants() {
    let config = controller_config(Variant::Steadfast);
    let mut c = Controller::new(vec![(0, 0), (1, 0)], vec![(0, 0), (1, 0)], 3);
    let owner = |action, owner| controller::Change::Endpoint {
        action,
        owner: Some(owner),
    };
    // A watch resumed from revision 4 catches up on 2 to 6 in one response
    // (a restarted watch may repeat what it reported): revisions 2 and 3
    // are old, 4 to 6 new, and the last word on each key counts.
    let response = vec![
        (2, owner(0, 1)),
        (3, gone(1)),
        (4, owner(1, 1)),
        (5, left(0)),
        (6, owner(1, 0)),
    ];
    c.step(
        &config,
        ControllerInput::Changed {
            watch: W0,
            changes: response,
            term: 0,
        },
    );
    assert_eq!(c.route(&0), Some(&0), "revision 2 came before the cache");
    assert_eq!(c.route(&1), Some(&0), "revision 6 is the last word");
    assert_eq!(c.members, [(1, 0)]);
    assert_eq!(
        c.watch,
        Watch::Active {
            id: W0,
            next: 7,
            probing: false
        },
        "it wants the revision after the response's last"
    );
    // A response wholly before the revision it wants is an old one.
    let old = vec![(5, owner(0, 1)), (6, gone(0))];
    c.step(
        &config,
        ControllerInput::Changed {
            watch: W0,
            changes: old,
            term: 0,
        },
    );
    assert_eq!(c.route(&0), Some(&0));
    assert_eq!(c.route(&1), Some(&0));
}

/// An unreadable value (a foreign writer's) is forgotten, never guessed at,
/// and stops nothing: the changes after it in the response are taken in.
#[test]
fn controller_should_forget_an_unreadable_key_and_read_on() {
    use controller::{Change, Key};
    let config = controller_config(Variant::Steadfast);
    let mut c = Controller::new(vec![(0, 0), (1, 0)], vec![(0, 0), (1, 0)], 3);
    let unreadable = |key| Change::Unreadable {
        key,
        reason: "its value is not \"<scheduler name> <incarnation>\"".into(),
    };
    let response = vec![
        (4, unreadable(Key::Endpoint(0))),
        (5, unreadable(Key::Member(1))),
        (6, gone(1)),
    ];
    c.step(
        &config,
        ControllerInput::Changed {
            watch: W0,
            changes: response,
            term: 0,
        },
    );
    assert_eq!(c.route(&0), None, "the owner it named before is forgotten");
    assert_eq!(c.route(&1), None, "read on past the unreadable keys");
    assert_eq!(c.members, [(0, 0)], "no queue is placed on scheduler 1");
    assert_eq!(
        c.watch,
        Watch::Active {
            id: W0,
            next: 7,
            probing: false
        }
    );
    // A submission to the action is looked up, and waits while the lookup
    // fails (etcd does not answer); once it answers, it is routed.
    let looked = c.step(
        &config,
        ControllerInput::Submit {
            id: 0,
            action: 0,
            deadline: None,
        },
    );
    assert_eq!(looked, [ControllerEffect::Get { id: 0, action: 0 }]);
    let failed = ControllerInput::GetFailed { id: 0, action: 0 };
    assert_eq!(c.step(&config, failed), []);
    assert!(c
        .step(&config, ControllerInput::Wake)
        .contains(&ControllerEffect::Get { id: 0, action: 0 }));
    let got = ControllerInput::Got {
        id: 0,
        action: 0,
        owner: Some(0),
    };
    assert!(matches!(
        &c.step(&config, got)[..],
        [ControllerEffect::Send { id: 0, to: 0, .. }]
    ));
}

#[test]
fn lease_should_stay_valid_for_the_confirmed_ttl_from_the_keepalives_send_less_the_margin() {
    let (mut s, config) = serving(Variant::Steadfast, 7);
    // A keepalive sent at the wake-up and answered a tick later: valid for
    // TTL 3 - age 1 - margin 1 = 1 tick from the answer.
    let sent = s.step(&config, 1, Input::Wake);
    assert!(sent.contains(&Effect::KeepAlive {
        lease: 7,
        keepalive: 1
    }));
    s.step(&config, 1, kept_alive(1, 3));
    let LeaseState::Held { valid_for, .. } = s.lease else {
        panic!("the lease is held");
    };
    assert_eq!(valid_for, 1);
    assert!(executes(&s.step(&config, 0, activation(1)), 1));
    // A tick on, no longer valid: the activation waits.
    let suspended = s.step(&config, 1, activation(2));
    assert!(
        !executes(&suspended, 2),
        "served past the fence: {suspended:?}"
    );
    assert_eq!(s.waiting, [(2, 0)]);
    // A keepalive sent now and confirmed at once serves it.
    s.step(&config, 0, Input::Wake);
    let served = s.step(&config, 0, kept_alive(2, 3));
    assert!(executes(&served, 2));
}

#[test]
fn openwhisk_should_serve_from_its_queue_whatever_became_of_its_lease() {
    let (mut s, config) = serving(Variant::OpenWhisk, 7);
    assert!(executes(&s.step(&config, 5, activation(1)), 1));
}

/// etcd's answer to keepalive `keepalive` of lease 7: renewed for `ttl`.
fn kept_alive(keepalive: u64, ttl: u8) -> Input {
    Input::KeptAlive {
        lease: 7,
        keepalive,
        ttl,
    }
}

fn valid_for(s: &Scheduler) -> u8 {
    let LeaseState::Held { valid_for, .. } = s.lease else {
        panic!("the lease is held");
    };
    valid_for
}

#[test]
fn a_suspended_scheduler_should_retry_on_its_timer_and_count_each_answer_from_its_own_send() {
    let (mut s, config) = serving(Variant::Steadfast, 7);
    let keepalive = |keepalive| Effect::KeepAlive {
        lease: 7,
        keepalive,
    };
    // Valid for 2 more ticks: the retry timer is armed for then.
    let sent = s.step(&config, 0, Input::Wake);
    assert!(sent.contains(&keepalive(1)));
    assert!(sent.contains(&Effect::RetryIn { after: 2 }));
    // Keepalive 1 unanswered when the lease's validity runs out: another
    // is sent at once, and the timer armed for a retry span.
    let again = s.step(&config, 2, Input::Retry);
    assert_eq!(again, [keepalive(2), Effect::RetryIn { after: 1 }]);
    // Keepalive 1's answer comes late: it counts from its own send, two
    // ticks ago (TTL 3 - 2 - margin 1), not from keepalive 2's.
    s.step(&config, 0, kept_alive(1, 3));
    assert_eq!(valid_for(&s), 0);
    s.step(&config, 0, kept_alive(2, 3));
    assert_eq!(valid_for(&s), 2, "keepalive 2's answer: 3 - 0 - 1");
    // Answers to keepalives answered already change nothing.
    let before = s.clone();
    assert!(s.step(&config, 0, kept_alive(1, 3)).is_empty());
    assert!(s.step(&config, 0, kept_alive(2, 3)).is_empty());
    assert_eq!(s, before);
    // Serving again: the timer only waits for the validity to run out.
    assert_eq!(
        s.step(&config, 0, Input::Retry),
        [Effect::RetryIn { after: 2 }]
    );
}

#[test]
fn a_scheduler_without_a_lease_should_retry_its_grant_and_its_revoke_on_its_timer() {
    let config = config(Variant::Steadfast);
    let mut s = Scheduler::new(0, 0);
    let woken = s.step(&config, 0, Input::Wake);
    assert!(woken.contains(&Effect::Grant { ttl: 3 }));
    assert!(woken.contains(&Effect::RetryIn { after: 1 }));
    assert_eq!(
        s.step(&config, 1, Input::Retry),
        [Effect::Grant { ttl: 3 }, Effect::RetryIn { after: 1 }]
    );
    let (mut s, config) = serving(Variant::Steadfast, 7);
    s.step(&config, 0, Input::Wake);
    s.step(&config, 0, kept_alive(1, 0));
    assert_eq!(
        s.step(&config, 0, Input::Retry),
        [Effect::Revoke { lease: 7 }, Effect::RetryIn { after: 1 }]
    );
}

#[test]
fn the_models_renumbering_of_keepalives_should_keep_their_order_and_their_matches() {
    use super::model::{renumber, scenarios, Late};
    use stateright::Model;
    let mut w = scenarios::seed5286(Variant::Steadfast)
        .init_states()
        .remove(0);
    let LeaseState::Held {
        id,
        keepalives,
        next_keepalive,
        ..
    } = &mut w.schedulers[0].lease
    else {
        panic!("the cluster starts with every lease held");
    };
    let lease = *id;
    // Three keepalives unanswered; one of them and one answered already in
    // flight, and one of a lease given up.
    *keepalives = vec![(5, 2), (9, 1), (14, 0)];
    *next_keepalive = 15;
    let keepalive = |lease, keepalive| Effect::KeepAlive { lease, keepalive };
    w.outbox[0] = vec![keepalive(lease, 9), keepalive(lease + 1, 3)];
    w.late[0] = vec![Late {
        request: keepalive(lease, 12),
        orphaned: false,
    }];
    renumber(&mut w);
    // 5, 9, 12, 14 become 0, 1, 2, 3, and the next one 4.
    let LeaseState::Held {
        keepalives,
        next_keepalive,
        ..
    } = &w.schedulers[0].lease
    else {
        panic!("still held");
    };
    assert_eq!(*keepalives, [(0, 2), (1, 1), (3, 0)]);
    assert_eq!(*next_keepalive, 4);
    assert_eq!(w.outbox[0], [keepalive(lease, 1), keepalive(lease + 1, 0)]);
    assert_eq!(w.late[0][0].request, keepalive(lease, 2));
}

/// The worlds a walk of `model` meets taking the actions `choices` pick,
/// as they happen (`LeaseQueueModel::act`), without renumbering: their
/// keepalives and revisions are as a real etcd's, gaps and all.
fn unrenumbered_walk(
    model: &super::model::LeaseQueueModel,
    choices: &[u16],
) -> Vec<super::model::World> {
    use stateright::Model;
    let mut w = model.init_states().remove(0);
    let mut walk = vec![w.clone()];
    let mut actions = Vec::new();
    for choice in choices {
        actions.clear();
        model.actions(&w, &mut actions);
        let possible: Vec<_> = actions.iter().filter_map(|a| model.act(&w, *a)).collect();
        let Some(next) = possible.get(usize::from(*choice) % possible.len().max(1)) else {
            break;
        };
        w = next.clone();
        walk.push(w.clone());
    }
    walk
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(48))]

    /// The model explores renumbered worlds only: sound if a world
    /// renumbered behaves as the world itself does. Along walks through the
    /// scenarios with compactions, foreign writes, crashes, late requests,
    /// lost replies and slow watch openings, each world and its renumbering have the same actions,
    /// each leading to worlds that renumber alike, and the same verdict of
    /// every property.
    #[test]
    fn a_renumbered_world_should_behave_as_the_world_itself(
        scenario in 0..5usize,
        choices in prop::collection::vec(any::<u16>(), 60),
    ) {
        use super::model::{renumber, scenarios, World};
        use crate::temporal::{Formula, TemporalModel};
        use stateright::Model;
        let model = [
            scenarios::general,
            scenarios::etcd_faults,
            scenarios::lossy,
            scenarios::redelivery,
            scenarios::slow_watch,
        ][scenario](Variant::Steadfast);
        let renumbered = |w: &World| {
            let mut w = w.clone();
            renumber(&mut w);
            w
        };
        let properties = model.properties();
        let liveness = model.liveness();
        for w in unrenumbered_walk(&model, &choices) {
            let r = renumbered(&w);
            let (mut actions, mut renumbered_actions) = (Vec::new(), Vec::new());
            model.actions(&w, &mut actions);
            model.actions(&r, &mut renumbered_actions);
            prop_assert_eq!(&actions, &renumbered_actions);
            for action in actions {
                let next = model.act(&w, action).map(|n| renumbered(&n));
                prop_assert_eq!(next, model.next_state(&r, action), "after {:?}", action);
            }
            for property in &properties {
                prop_assert_eq!((property.condition)(&model, &w), (property.condition)(&model, &r),
                    "{}", property.name);
            }
            for property in &liveness {
                let predicates = match &property.formula {
                    Formula::LeadsTo { p, q } => vec![p, q],
                    Formula::EventuallyAlways { p } | Formula::InfinitelyOften { p } => vec![p],
                };
                for p in predicates {
                    prop_assert_eq!(p(&model, &w), p(&model, &r), "{}", property.name);
                }
            }
        }
    }
}

/// "executed at most once" excuses one execution more per crash or
/// departure of a scheduler that held the activation unacknowledged, and
/// per loss of the memory of its end while a caller may submit it again,
/// not every later one.
#[test]
fn each_fault_should_excuse_one_execution_more_and_no_other() {
    use super::model::scenarios;
    use stateright::Model;
    let model = scenarios::duplicate(Variant::Steadfast);
    let property = model
        .properties()
        .into_iter()
        .find(|p| p.name == "executed at most once")
        .unwrap();
    let mut w = model.init_states().remove(0);
    let mut holds = |executions, excuses, forgotten| {
        w.ghost.executions[0] = executions;
        w.ghost.excuses[0] = excuses;
        w.ghost.forgotten[0] = forgotten;
        (property.condition)(&model, &w)
    };
    assert!(holds(1, 0, 0));
    assert!(!holds(2, 0, 0), "a second run with no fault to explain it");
    assert!(holds(2, 1, 0));
    assert!(!holds(3, 1, 0), "one fault, two runs more");
    assert!(holds(3, 2, 0));
    assert!(holds(2, 0, 1), "a resubmission after its memory was lost");
    assert!(!holds(3, 0, 1), "one loss, two runs more");
    assert!(holds(3, 1, 1), "a crash and a loss");
    assert!(holds(3, 0, 2));
}

#[test]
fn the_world_should_place_a_new_queue_on_any_member_the_controller_knows() {
    use super::model::{scenarios, Action, Message, Placement};
    use stateright::Model;
    let placed = |placement| {
        let mut model = scenarios::departure(Variant::Steadfast);
        model.bounds.placement = placement;
        let w = model.init_states().remove(0);
        // The first activation (of action 0, through controller 0) is
        // looked up, and etcd has no key for it.
        let w = model.next_state(&w, Action::UserSubmit).unwrap();
        let mut actions = Vec::new();
        model.actions(&w, &mut actions);
        let answers: Vec<Action> = actions
            .into_iter()
            .filter(|a| matches!(a, Action::ControllerEtcd { .. }))
            .collect();
        answers
            .into_iter()
            .map(|answer| {
                let next = model.next_state(&w, answer).unwrap();
                let created = next.messages.iter().filter_map(|m| match m {
                    Message::CreateQueue { to, .. } => Some(*to),
                    Message::Activation { .. } => None,
                });
                (answer, created.collect::<Vec<u8>>())
            })
            .collect::<Vec<_>>()
    };
    let answer = |on| Action::ControllerEtcd {
        controller: 0,
        place_on: Some(on),
    };
    assert_eq!(
        placed(Placement::World),
        [(answer(0), vec![0]), (answer(1), vec![1])]
    );
    // The seeded rule: action 0 through controller 0 on scheduler 0.
    assert_eq!(placed(Placement::Seeded), [(answer(0), vec![0])]);
}

#[test]
fn openwhisk_should_take_a_ttl_of_zero_for_success() {
    let (mut s, config) = serving(Variant::OpenWhisk, 7);
    s.step(&config, 0, Input::Wake);
    assert_eq!(
        s.step(&config, 0, kept_alive(1, 0)),
        [Effect::RetryIn { after: 2 }]
    );
    assert_eq!(s.live_lease(), Some(&7));
}

#[test]
fn steadfast_should_treat_a_ttl_of_zero_as_loss_and_take_a_new_lease() {
    let (mut s, config) = serving(Variant::Steadfast, 7);
    s.step(&config, 0, Input::Wake);
    let effects = s.step(&config, 0, kept_alive(1, 0));
    let retry = Effect::RetryIn { after: 1 };
    assert_eq!(effects, [Effect::Revoke { lease: 7 }, retry.clone()]);
    assert!(s.queues.is_empty(), "stops serving at once");
    assert_eq!(
        s.step(&config, 0, Input::Revoked { lease: 7 }),
        [Effect::Grant { ttl: 3 }, retry]
    );
}

#[test]
fn a_scheduler_should_register_under_each_lease_until_etcd_confirms() {
    for variant in [Variant::OpenWhisk, Variant::Steadfast] {
        let config = config(variant);
        let mut s = Scheduler::new(0, 0);
        s.step(&config, 0, Input::Wake);
        let granted = s.step(&config, 0, Input::Granted { lease: 7, ttl: 3 });
        assert!(
            granted.contains(&Effect::Register {
                lease: 7,
                incarnation: 0
            }),
            "{granted:?}"
        );
        // Unanswered: put again at the next wake-up, and only until answered.
        assert!(s.step(&config, 1, Input::Wake).contains(&Effect::Register {
            lease: 7,
            incarnation: 0
        }));
        let stale = Input::Registered {
            lease: 6,
            found: true,
        };
        s.step(&config, 0, stale);
        assert!(s.step(&config, 1, Input::Wake).contains(&Effect::Register {
            lease: 7,
            incarnation: 0
        }));
        let answer = Input::Registered {
            lease: 7,
            found: true,
        };
        s.step(&config, 0, answer);
        let wake = s.step(&config, 1, Input::Wake);
        assert!(!wake.iter().any(|e| matches!(e, Effect::Register { .. })));
    }
}

#[test]
fn a_member_key_refused_for_want_of_the_lease_should_be_lease_loss_under_steadfast() {
    let refused = Input::Registered {
        lease: 7,
        found: false,
    };
    let (mut s, config) = serving(Variant::Steadfast, 7);
    assert_eq!(
        s.step(&config, 0, refused.clone()),
        [Effect::Revoke { lease: 7 }, Effect::RetryIn { after: 1 }]
    );
    assert!(s.queues.is_empty());
    let (mut s, config) = serving(Variant::OpenWhisk, 7);
    assert!(s.step(&config, 0, refused).is_empty());
    assert_eq!(s.live_lease(), Some(&7), "OpenWhisk puts it again");
}

#[test]
fn replies_nobody_waits_for_should_change_nothing() {
    let (mut s, config) = serving(Variant::Steadfast, 7);
    let before = s.clone();
    let stale = [
        Input::KeptAlive {
            lease: 6,
            keepalive: 1,
            ttl: 0,
        },
        kept_alive(0, 0),
        Input::Revoked { lease: 7 },
        Input::Claimed {
            action: 1,
            lease: 7,
            result: ClaimResult::LeaseNotFound,
        },
        Input::Resolved {
            id: 3,
            action: 0,
            key: None,
        },
        Input::Executed {
            id: 3,
            failure: None,
        },
    ];
    for input in stale {
        assert!(s.step(&config, 0, input.clone()).is_empty(), "{input:?}");
        assert_eq!(s, before, "{input:?}");
    }
    // A grant it no longer waits for is given back.
    let extra = s.step(&config, 0, Input::Granted { lease: 9, ttl: 3 });
    assert_eq!(extra, [Effect::Revoke { lease: 9 }]);
    assert_eq!(s.live_lease(), Some(&7));
}

#[test]
fn steadfast_should_execute_a_duplicate_once_and_acknowledge_at_settlement() {
    let (mut s, config) = serving(Variant::Steadfast, 7);
    assert_eq!(
        s.step(&config, 0, activation(1)),
        [Effect::Execute {
            id: 1,
            action: 0,
            lease: 7
        }],
        "no acknowledgement before it is settled"
    );
    assert!(
        s.step(&config, 0, activation(1)).is_empty(),
        "a copy while it runs"
    );
    let report = Effect::Report {
        id: 1,
        to: 0,
        outcome: Outcome::Executed,
    };
    assert_eq!(
        s.step(
            &config,
            0,
            Input::Executed {
                id: 1,
                failure: None
            }
        ),
        [
            report.clone(),
            Effect::Ack { id: 1 },
            Effect::RetryIn { after: 1 }
        ]
    );
    // The report is sent again until its controller confirms it.
    assert!(s.step(&config, 1, Input::Retry).contains(&report));
    s.step(
        &config,
        0,
        Input::ReportAcked {
            id: 1,
            from: Some(0),
        },
    );
    assert!(!s.step(&config, 0, Input::Retry).contains(&report));
    assert_eq!(
        s.step(&config, 0, activation(1))[..2],
        [report.clone(), Effect::Ack { id: 1 }],
        "a copy after it settled is acknowledged, and answered with its outcome"
    );
    s.step(
        &config,
        0,
        Input::ReportAcked {
            id: 1,
            from: Some(0),
        },
    );
    assert_eq!(s.step(&config, 0, Input::Forget { id: 1 }), []);
    assert!(executes(&s.step(&config, 0, activation(1)), 1));
}

#[test]
fn only_without_the_rule_should_an_acknowledgement_stop_a_controllers_resends() {
    let without = Rules::all().without(Rule::AckAtSettlement);
    for (rules, resent) in [(Rules::all(), true), (without, false)] {
        let config = controller_config(rules);
        let mut c = Controller::new(vec![(0, 1)], vec![(1, 0)], 2);
        let submit = ControllerInput::Submit {
            id: 5,
            action: 0,
            deadline: None,
        };
        c.step(&config, submit);
        c.step(&config, ControllerInput::Acked { id: 5, from: 1 });
        let woken = c.step(&config, ControllerInput::Wake);
        let sends = woken
            .iter()
            .any(|e| matches!(e, ControllerEffect::Send { id: 5, .. }));
        assert_eq!(sends, resent, "{rules:?}");
    }
}

#[test]
fn a_scheduler_should_forget_what_it_settled_once_its_memory_span_passed() {
    let (mut s, mut config) = serving(Variant::Steadfast, 7);
    config.remember_for = Some(2);
    assert!(executes(&s.step(&config, 0, activation(1)), 1));
    s.step(
        &config,
        0,
        Input::Executed {
            id: 1,
            failure: None,
        },
    );
    assert_eq!(
        s.step(&config, 1, activation(1))[1..],
        [Effect::Ack { id: 1 }],
        "a copy a tick after it settled is not taken in"
    );
    assert_eq!(s.settled, [(1, Outcome::Executed)]);
    // Two ticks after it settled, its memory is gone: a copy is new.
    let copy = s.step(&config, 1, activation(1));
    assert!(!copy.contains(&Effect::Ack { id: 1 }), "{copy:?}");
    assert!(s.holds(&1), "taken in again: {copy:?}");
    assert!(s.settled.is_empty());
    assert!(s.forgetting.is_empty());
    assert_eq!(s.clock, 2, "its own clock: the spans it was told of");
    // Without a span, nothing is forgotten and no clock runs.
    let (mut s, config) = serving(Variant::Steadfast, 7);
    s.step(&config, 0, activation(1));
    s.step(
        &config,
        0,
        Input::Executed {
            id: 1,
            failure: None,
        },
    );
    s.step(&config, 5, Input::Wake);
    assert_eq!(
        s.step(&config, 0, activation(1))[1..],
        [Effect::Ack { id: 1 }]
    );
    assert_eq!(s.clock, 0);
}

#[test]
fn openwhisk_should_acknowledge_on_receipt_and_execute_every_copy() {
    let (mut s, config) = serving(Variant::OpenWhisk, 7);
    let first = s.step(&config, 0, activation(1));
    assert_eq!(first[0], Effect::Ack { id: 1 });
    assert!(executes(&first, 1));
    s.step(
        &config,
        0,
        Input::Executed {
            id: 1,
            failure: None,
        },
    );
    assert!(executes(&s.step(&config, 0, activation(1)), 1));
}

#[test]
fn missing_key_should_fail_under_openwhisk_and_elect_under_steadfast() {
    let resolved = Input::Resolved {
        id: 1,
        action: 1,
        key: None,
    };
    let (mut s, config) = serving(Variant::OpenWhisk, 7);
    // The lookup is sent again a retry span later if unanswered.
    let retry = Effect::RetryIn { after: 1 };
    assert_eq!(
        s.step(&config, 0, activation_of(1, 1)),
        [
            Effect::Ack { id: 1 },
            Effect::Resolve { id: 1, action: 1 },
            retry
        ]
    );
    assert_eq!(
        s.step(&config, 0, resolved.clone()),
        [Effect::Report {
            id: 1,
            to: 0,
            outcome: Outcome::Failed(FailReason::NoQueueEndpoint)
        }]
    );
    let (mut s, config) = serving(Variant::Steadfast, 7);
    s.step(&config, 0, activation_of(1, 1));
    assert_eq!(
        s.step(&config, 0, resolved),
        [Effect::Claim {
            action: 1,
            lease: 7,
            incarnation: 0,
        }]
    );
    let won = s.step(
        &config,
        0,
        Input::Claimed {
            action: 1,
            lease: 7,
            result: ClaimResult::Created { created: 5 },
        },
    );
    assert!(executes(&won, 1));
}

/// A claim or a lookup that finds a value no steadfast node wrote under
/// the action's key answers the call as not routed, and keeps nothing of
/// it: a copy that comes after the key is put right is taken in anew.
/// Without the rule, the scheduler only claims again at its next retry.
#[test]
fn an_unreadable_key_should_answer_the_call_as_not_routed_and_keep_nothing() {
    let claimed_unreadable = Input::Claimed {
        action: 1,
        lease: 7,
        result: ClaimResult::Unreadable {
            why: KeyFault::ForeignValue,
            reason: "not \"<scheduler> <incarnation>\"".into(),
        },
    };
    // The caller is told why: each answer carries its own fault.
    let unrouted = |why| {
        [
            Effect::Report {
                id: 1,
                to: 0,
                outcome: Outcome::Unrouted {
                    may_have_run: false,
                    why,
                },
            },
            Effect::Ack { id: 1 },
        ]
    };
    let (mut s, config) = serving(Variant::Steadfast, 7);
    s.step(&config, 0, Input::CreateQueue { action: 1 });
    s.step(&config, 0, activation_of(1, 1));
    assert_eq!(
        s.step(&config, 0, claimed_unreadable.clone()),
        unrouted(KeyFault::ForeignValue)
    );
    assert!(s.electing.is_empty() && s.waiting.is_empty());
    assert_eq!(s.outcome_of(&1), None, "not remembered");
    // A copy again: looked up anew; the lookup finds the value too.
    assert!(s
        .step(&config, 0, activation_of(1, 1))
        .contains(&Effect::Resolve { id: 1, action: 1 }));
    let resolved_unreadable = Input::ResolvedUnreadable {
        id: 1,
        action: 1,
        why: KeyFault::AccessDenied,
        reason: "etcd refused this node: etcdserver: permission denied".into(),
    };
    assert_eq!(
        s.step(&config, 0, resolved_unreadable.clone()),
        unrouted(KeyFault::AccessDenied)
    );
    // Once the key is gone, a copy is elected for and runs.
    s.step(&config, 0, activation_of(1, 1));
    let absent = Input::Resolved {
        id: 1,
        action: 1,
        key: None,
    };
    assert!(s.step(&config, 0, absent).contains(&Effect::Claim {
        action: 1,
        lease: 7,
        incarnation: 0
    }));
    let created = Input::Claimed {
        action: 1,
        lease: 7,
        result: ClaimResult::Created { created: 9 },
    };
    assert!(executes(&s.step(&config, 0, created), 1));

    // Without the rule: nothing is answered; the claim, and the lookup,
    // are sent again.
    let (mut s, config) = serving(Rules::all().without(Rule::RefuseUnreadable), 7);
    s.step(&config, 0, Input::CreateQueue { action: 1 });
    s.step(&config, 0, activation_of(1, 1));
    assert_eq!(s.step(&config, 0, claimed_unreadable), []);
    assert!(s.step(&config, 0, Input::Retry).contains(&Effect::Claim {
        action: 1,
        lease: 7,
        incarnation: 0
    }));
    s.step(&config, 0, activation_of(2, 2));
    assert_eq!(s.step(&config, 0, resolved_unreadable_of(2)), []);
    assert!(s
        .step(&config, 0, Input::Retry)
        .contains(&Effect::Resolve { id: 2, action: 2 }));
}

/// The lookup of action 2's key for activation `id` found a value no
/// steadfast node wrote.
fn resolved_unreadable_of(id: u8) -> Input {
    Input::ResolvedUnreadable {
        id,
        action: 2,
        why: KeyFault::ForeignValue,
        reason: "empty".into(),
    }
}

/// A controller whose lookup finds a value no steadfast node wrote answers
/// the call as not routed (an earlier copy, lost with a scheduler that
/// stopped, may have run), forgets any route; without the rule, it looks
/// the key up again at its next wake-up.
#[test]
fn controller_should_answer_a_call_whose_key_is_unreadable_as_not_routed() {
    let config = controller_config(Variant::Steadfast);
    let mut c = Controller::new(Vec::new(), vec![(0, 0)], 3);
    let submit = ControllerInput::Submit {
        id: 0,
        action: 0,
        deadline: None,
    };
    assert_eq!(
        c.step(&config, submit.clone()),
        [ControllerEffect::Get { id: 0, action: 0 }]
    );
    let unreadable = ControllerInput::GotUnreadable {
        id: 0,
        action: 0,
        why: KeyFault::AccessDenied,
        reason: "etcd refused this node: etcdserver: permission denied".into(),
    };
    assert_eq!(
        c.step(&config, unreadable.clone()),
        [ControllerEffect::Resolve {
            id: 0,
            outcome: Outcome::Unrouted {
                may_have_run: false,
                why: KeyFault::AccessDenied,
            }
        }]
    );
    assert!(c.lookups.is_empty() && c.submitted.is_empty());
    // An answer that comes again changes nothing.
    assert_eq!(c.step(&config, unreadable.clone()), []);

    let config = controller_config(Rules::all().without(Rule::RefuseUnreadable));
    let mut c = Controller::new(Vec::new(), vec![(0, 0)], 3);
    c.step(&config, submit);
    assert_eq!(c.step(&config, unreadable), []);
    assert!(c
        .step(&config, ControllerInput::Wake)
        .contains(&ControllerEffect::Get { id: 0, action: 0 }));
}

#[test]
fn lost_election_should_forward_to_the_winner() {
    let (mut s, config) = serving(Variant::Steadfast, 7);
    s.step(&config, 0, Input::CreateQueue { action: 1 });
    s.step(&config, 0, activation_of(1, 1));
    let winner = Endpoint {
        owner: 1,
        incarnation: 0,
        lease: 3,
        created: 4,
    };
    let lost = s.step(
        &config,
        0,
        Input::Claimed {
            action: 1,
            lease: 7,
            result: ClaimResult::Exists(winner),
        },
    );
    // Acknowledged to its sender only once the winner takes it in.
    assert_eq!(
        lost,
        [Effect::Forward {
            id: 1,
            action: 1,
            to: 1,
            incarnation: 0,
            reply_to: 0,
            may_have_run: false,
        }]
    );
    assert!(s.queue(&1).is_none());
    // The forward is sent again until the winner acknowledges it.
    let forward = Effect::Forward {
        id: 1,
        action: 1,
        to: 1,
        incarnation: 0,
        reply_to: 0,
        may_have_run: false,
    };
    assert!(s.step(&config, 0, Input::Retry).contains(&forward));
    // The winner is gone: the forward bounces, and steadfast looks the key
    // up again at its next retry.
    let bounced = Input::Bounced {
        id: 1,
        to: 1,
        incarnation: Some(0),
    };
    let mut openwhisk = s.clone();
    let elsewhere = Input::Bounced {
        id: 1,
        to: 2,
        incarnation: Some(0),
    };
    let earlier = Input::Bounced {
        id: 1,
        to: 1,
        incarnation: None,
    };
    for other in [elsewhere, earlier] {
        assert!(
            s.step(&config, 0, other).is_empty(),
            "a bounce of a forward to another peer, or another run of it"
        );
        assert!(s.forwarding.iter().any(|f| f.id == 1));
    }
    assert!(s.step(&config, 0, bounced.clone()).is_empty());
    assert!(s.holds(&1) && s.forwarded.is_empty());
    let retried = s.step(&config, 0, Input::Retry);
    assert!(retried.contains(&Effect::Resolve { id: 1, action: 1 }));
    assert!(!retried.contains(&forward));
    assert!(
        s.step(&config, 0, bounced.clone()).is_empty(),
        "a bounce of a copy it holds again"
    );
    // Without the rule, it sends the forward to the same address again.
    let without = scheduler::Config {
        rules: config.rules.without(Rule::Reroute),
        ..config
    };
    assert!(openwhisk.step(&without, 0, bounced).is_empty());
    assert!(!openwhisk.holds(&1));
    assert!(openwhisk.step(&without, 0, Input::Retry).contains(&forward));
    // Once the peer acknowledges it, it is not sent again, and is
    // acknowledged to its sender.
    assert_eq!(
        openwhisk.step(
            &without,
            0,
            Input::ForwardAcked {
                id: 1,
                from: 1,
                reply_to: Some(0),
            }
        ),
        [Effect::Ack { id: 1 }]
    );
    assert!(!openwhisk.step(&without, 0, Input::Retry).contains(&forward));
}

#[test]
fn a_draining_scheduler_should_settle_what_it_holds_take_nothing_new_then_give_its_lease_back() {
    let (mut s, config) = serving(Variant::Steadfast, 7);
    assert!(executes(&s.step(&config, 0, activation(1)), 1));
    assert!(
        s.step(&config, 0, Input::Drain).is_empty(),
        "one runs still"
    );
    assert_eq!(s.phase, Phase::Draining);
    // New work is neither acknowledged nor taken in: its sender keeps
    // sending it, and routes it again once this scheduler stops listening.
    assert!(s.step(&config, 0, activation(2)).is_empty());
    assert!(s
        .step(&config, 0, Input::CreateQueue { action: 1 })
        .is_empty());
    assert!(!s.holds(&2) && s.electing.is_empty());
    // A copy of what it runs is ignored, as before.
    assert!(s.step(&config, 0, activation(1)).is_empty());
    // The last one settles: reported, acknowledged, and the lease goes.
    let settled = s.step(
        &config,
        0,
        Input::Executed {
            id: 1,
            failure: None,
        },
    );
    assert_eq!(
        settled,
        [
            Effect::Report {
                id: 1,
                to: 0,
                outcome: Outcome::Executed
            },
            Effect::Ack { id: 1 },
            Effect::Revoke { lease: 7 },
            Effect::RetryIn { after: 1 },
        ]
    );
    assert!(s.queues.is_empty());
    // Sent again until etcd confirms, and the report until its controller
    // does; then drained, and nothing more. It asks for no new lease.
    let asks_a_lease =
        |effects: &[Effect]| effects.iter().any(|e| matches!(e, Effect::Grant { .. }));
    let woken = s.step(&config, 1, Input::Wake);
    assert!(woken.contains(&Effect::Revoke { lease: 7 }) && !asks_a_lease(&woken));
    assert!(s.step(&config, 0, Input::Revoked { lease: 7 }).is_empty());
    assert!(!asks_a_lease(&s.step(&config, 0, Input::Retry)));
    assert_eq!(
        s.step(
            &config,
            0,
            Input::ReportAcked {
                id: 1,
                from: Some(0)
            }
        ),
        [Effect::Drained]
    );
    assert_eq!(s.phase, Phase::Drained);
    assert!(s.step(&config, 1, Input::Wake).is_empty());
    assert!(s.step(&config, 0, activation(3)).is_empty());
}

/// Whether `effects` report activation `id` with `outcome`.
fn reports(effects: &[Effect], id: u8, outcome: Outcome) -> bool {
    effects.contains(&Effect::Report { id, to: 0, outcome })
}

#[test]
fn an_execution_that_fails_should_be_reported_as_run_and_failed() {
    let (mut s, config) = serving(Variant::Steadfast, 7);
    assert!(executes(&s.step(&config, 0, activation(1)), 1));
    let failure = Some(ExecutionFailure::Panic);
    let ended = s.step(&config, 0, Input::Executed { id: 1, failure });
    let outcome = Outcome::ExecutionFailed(ExecutionFailure::Panic);
    assert!(reports(&ended, 1, outcome) && ended.contains(&Effect::Ack { id: 1 }));
    assert!(outcome.ran(), "it ran: it is not run again");
    // A copy delivered again is answered with its outcome: it does not run
    // twice.
    let again = s.step(&config, 0, activation(1));
    assert!(reports(&again, 1, outcome) && again.contains(&Effect::Ack { id: 1 }));
    assert!(!executes(&again, 1));
}

#[test]
fn an_execution_past_its_timeout_should_be_settled_as_failed_and_cancelled() {
    let (mut s, config) = serving(Variant::Steadfast, 7);
    assert_eq!(config.execute_for, Some(4));
    assert!(executes(&s.step(&config, 0, activation(1)), 1));
    for _ in 0..3 {
        let woken = s.step(&config, 1, Input::Wake);
        assert!(!woken.contains(&Effect::Cancel { id: 1 }), "{woken:?}");
    }
    // The fourth tick's wake-up finds it past its timeout.
    let woken = s.step(&config, 1, Input::Wake);
    let timeout = Outcome::ExecutionFailed(ExecutionFailure::Timeout);
    assert!(woken.contains(&Effect::Cancel { id: 1 }), "{woken:?}");
    assert!(reports(&woken, 1, timeout) && woken.contains(&Effect::Ack { id: 1 }));
    assert!(!s.holds(&1) && s.timeouts.is_empty());
    // Its result, if it comes after all, changes nothing.
    let late = s.step(
        &config,
        0,
        Input::Executed {
            id: 1,
            failure: None,
        },
    );
    assert!(!late
        .iter()
        .any(|e| matches!(e, Effect::Report { .. } | Effect::Ack { .. })));
}

#[test]
fn an_execution_should_run_for_ever_without_the_execution_timeout() {
    let (mut s, config) = serving(
        Rules::from(Variant::Steadfast).without(Rule::ExecutionTimeout),
        7,
    );
    assert!(executes(&s.step(&config, 0, activation(1)), 1));
    for _ in 0..10 {
        let woken = s.step(&config, 1, Input::Wake);
        assert!(!woken.iter().any(|e| matches!(e, Effect::Cancel { .. })));
    }
    assert!(s.holds(&1));
}

#[test]
fn a_drain_should_wait_for_a_hung_execution_no_longer_than_its_timeout() {
    let (mut s, config) = serving(Variant::Steadfast, 7);
    assert!(executes(&s.step(&config, 0, activation(1)), 1));
    s.step(&config, 0, Input::Drain);
    let mut revoked_after = None;
    for tick in 1..=6 {
        let woken = s.step(&config, 1, Input::Wake);
        if woken.contains(&Effect::Revoke { lease: 7 }) {
            revoked_after = Some(tick);
            break;
        }
    }
    assert_eq!(
        revoked_after,
        Some(4),
        "the lease goes once the timeout settles it"
    );
}

#[test]
fn a_scheduler_drained_without_a_lease_or_work_should_be_done_at_once() {
    let config = config(Variant::Steadfast);
    let mut s = Scheduler::new(0, 0);
    s.step(&config, 0, Input::Wake);
    assert_eq!(s.step(&config, 0, Input::Drain), [Effect::Drained]);
    assert!(
        s.step(&config, 0, Input::Granted { lease: 4, ttl: 3 })
            .is_empty(),
        "a grant answered after it left changes nothing"
    );
}

#[test]
fn a_controller_should_route_again_what_bounced_only_under_steadfast() {
    let bounced = ControllerInput::Bounced {
        id: 1,
        to: 1,
        incarnation: Some(0),
    };
    let get = ControllerEffect::Get { id: 1, action: 0 };
    let send = ControllerEffect::Send {
        id: 1,
        action: 0,
        to: 1,
        incarnation: Some(0),
        may_have_run: false,
    };
    for variant in [Variant::Steadfast, Variant::OpenWhisk] {
        let config = controller_config(variant);
        let mut c = Controller::new(vec![(0, 1)], vec![(0, 0), (1, 0)], 2);
        c.step(
            &config,
            ControllerInput::Submit {
                id: 1,
                action: 0,
                deadline: None,
            },
        );
        // A bounce from another scheduler than the one it was sent to.
        let elsewhere = ControllerInput::Bounced {
            id: 1,
            to: 0,
            incarnation: Some(0),
        };
        c.step(&config, elsewhere);
        assert!(c.step(&config, ControllerInput::Wake).contains(&send));
        assert!(
            c.step(&config, bounced.clone()).is_empty(),
            "looked up at the next wake-up, not at once"
        );
        let woken = c.step(&config, ControllerInput::Wake);
        match variant {
            Variant::Steadfast => assert!(woken.contains(&get) && !woken.contains(&send)),
            Variant::OpenWhisk => assert!(woken.contains(&send) && !woken.contains(&get)),
        }
    }
}

#[test]
fn a_forwarded_activation_should_be_taken_back_only_from_a_peer() {
    let (mut s, config) = serving(Variant::Steadfast, 7);
    let copy = |forwarded| Input::Activation {
        id: 1,
        action: 1,
        forwarded,
        incarnation: Some(0),
        left: None,
        reply_to: 0,
        may_have_run: false,
    };
    s.step(&config, 0, copy(false));
    let forward = Effect::Forward {
        id: 1,
        action: 1,
        to: 1,
        incarnation: 0,
        reply_to: 0,
        may_have_run: false,
    };
    assert_eq!(s.step(&config, 0, owned_by_peer(1, 1))[0], forward);
    // A copy from a controller: the peer has it, and has not taken it in
    // yet; once it has, acknowledged.
    let mut acked = s.clone();
    assert!(s.step(&config, 0, copy(false)).is_empty());
    assert_eq!(
        acked.step(
            &config,
            0,
            Input::ForwardAcked {
                id: 1,
                from: 1,
                reply_to: Some(0),
            }
        ),
        [Effect::Ack { id: 1 }]
    );
    // A controller's copy once the peer took it in (a caller asking again)
    // goes to that peer, for its controller, to answer from memory.
    // Without the rule, it is only acknowledged.
    let mut unanswered = acked.clone();
    let fewer = scheduler::Config {
        rules: config.rules.without(Rule::AnswerEveryCopy),
        ..config.clone()
    };
    assert_eq!(acked.step(&config, 0, copy(false))[0], forward);
    assert_eq!(
        unanswered.step(&fewer, 0, copy(false)),
        [Effect::Ack { id: 1 }]
    );
    // Sent back by the peer (which found this scheduler the owner): taken
    // in, and no longer forwarded.
    assert_eq!(
        s.step(&config, 0, copy(true)),
        [Effect::Resolve { id: 1, action: 1 },]
    );
    assert!(s.forwarding.is_empty());
}

#[test]
fn a_forward_to_a_peer_whose_member_key_stays_gone_should_be_taken_back() {
    let (mut s, config) = serving(Variant::Steadfast, 7);
    s.step(&config, 0, activation_of(1, 1));
    s.step(&config, 0, owned_by_peer(1, 1));
    let find = Effect::FindMember { scheduler: 1 };
    let resolve = Effect::Resolve { id: 1, action: 1 };
    let found = |incarnation, term| Input::MemberFound {
        scheduler: 1,
        incarnation,
        unreadable: None,
        term,
    };
    let forwarded = |s: &Scheduler| s.forwarding.iter().any(|f| f.id == 1 && f.to == 1);
    // Each wake-up looks the peer's member key up. Wake-ups etcd answered
    // nothing by do not count (etcd's time): the peer is not presumed gone
    // however many pass.
    for _ in 0..5 {
        assert!(s.step(&config, 0, Input::Wake).contains(&find));
    }
    assert!(forwarded(&s));
    // Out of sight at two answered wake-ups, then seen naming another
    // run of the peer (which refuses the copy, or answers it if it knows
    // the activation): the count starts again.
    let unseen = |s: &mut Scheduler, incarnation| {
        s.step(&config, 0, found(incarnation, 1));
        s.step(&config, 0, Input::Wake)
    };
    unseen(&mut s, None);
    unseen(&mut s, None);
    unseen(&mut s, Some(1));
    unseen(&mut s, None);
    assert!(!unseen(&mut s, None).contains(&resolve));
    assert!(forwarded(&s));
    // A new leader (a higher term) gives the peer's lease its full TTL
    // again: the count starts again too.
    let answered_in = |s: &mut Scheduler, term| {
        s.step(&config, 0, found(None, term));
        s.step(&config, 0, Input::Wake)
    };
    answered_in(&mut s, 2);
    // A key holding what no steadfast node wrote names no run of the peer:
    // out of sight too.
    let unreadable = Input::MemberFound {
        scheduler: 1,
        incarnation: None,
        unreadable: Some("its value names another scheduler".into()),
        term: 2,
    };
    s.step(&config, 0, unreadable);
    s.step(&config, 0, Input::Wake);
    assert!(forwarded(&s));
    // The third answered wake-up out of sight: presumed gone, the copy is
    // taken back as a bounce would: looked up again, as one that may have
    // run, and no longer looked for there.
    let woken = answered_in(&mut s, 2);
    assert!(woken.contains(&resolve) && !woken.contains(&find));
    assert!(!forwarded(&s) && s.may_have_run.contains(&1));
    // Without the rule, it waits on the peer for ever, and asks etcd
    // nothing.
    let (mut kept, _) = serving(Variant::Steadfast, 7);
    let without = scheduler::Config {
        rules: config.rules.without(Rule::PresumePeerGone),
        ..config.clone()
    };
    kept.step(&without, 0, activation_of(1, 1));
    kept.step(&without, 0, owned_by_peer(1, 1));
    for _ in 0..5 {
        kept.step(&without, 0, found(None, 1));
        assert!(!kept.step(&without, 0, Input::Wake).contains(&find));
    }
    assert!(forwarded(&kept));
}

#[test]
fn every_controller_a_copy_names_should_be_told_the_outcome() {
    let (mut s, config) = serving(Variant::Steadfast, 7);
    let report = |to| Effect::Report {
        id: 1,
        to,
        outcome: Outcome::Executed,
    };
    assert!(executes(&s.step(&config, 0, sent_by(0, 1, 0)), 1));
    // A copy through another controller while it runs: not run again, and
    // that controller is told too, at settlement.
    assert!(s.step(&config, 0, sent_by(1, 1, 0)).is_empty());
    let done = Input::Executed {
        id: 1,
        failure: None,
    };
    let ended = s.step(&config, 0, done.clone());
    assert!(
        ended.contains(&report(0)) && ended.contains(&report(1)),
        "{ended:?}"
    );
    // Each report is sent until its own controller confirms it.
    s.step(
        &config,
        0,
        Input::ReportAcked {
            id: 1,
            from: Some(1),
        },
    );
    let again = s.step(&config, 0, Input::Retry);
    assert!(again.contains(&report(0)) && !again.contains(&report(1)));
    // A copy through a third controller once it ended: answered from
    // memory, not run again.
    let late = s.step(&config, 0, sent_by(2, 1, 0));
    assert!(late.contains(&report(2)) && !executes(&late, 1), "{late:?}");
    // Without the rule, only the first controller is told.
    let fewer = scheduler::Config {
        rules: config.rules.without(Rule::AnswerEveryCopy),
        ..config.clone()
    };
    let (mut s, _) = serving(Variant::Steadfast, 7);
    s.step(&fewer, 0, sent_by(0, 1, 0));
    s.step(&fewer, 0, sent_by(1, 1, 0));
    let ended = s.step(&fewer, 0, done);
    assert!(
        ended.contains(&report(0)) && !ended.contains(&report(1)),
        "{ended:?}"
    );
    assert_eq!(s.step(&fewer, 0, sent_by(2, 1, 0)), [Effect::Ack { id: 1 }]);
}

#[test]
fn a_copy_through_another_controller_should_join_a_forward_under_way() {
    let (mut s, config) = serving(Variant::Steadfast, 7);
    s.step(&config, 0, activation_of(1, 1));
    s.step(&config, 0, owned_by_peer(1, 1));
    let forward = |reply_to| Effect::Forward {
        id: 1,
        action: 1,
        to: 1,
        incarnation: 0,
        reply_to,
        may_have_run: false,
    };
    assert_eq!(s.step(&config, 0, sent_by(1, 1, 1)), [forward(1)]);
    // Acknowledged once the peer took in both copies, each naming its
    // controller.
    let acked = |reply_to| Input::ForwardAcked {
        id: 1,
        from: 1,
        reply_to: Some(reply_to),
    };
    assert!(s.step(&config, 0, acked(0)).is_empty());
    let again = s.step(&config, 0, Input::Retry);
    assert!(again.contains(&forward(1)) && !again.contains(&forward(0)));
    assert_eq!(s.step(&config, 0, acked(1)), [Effect::Ack { id: 1 }]);
    assert!(s.forwarding.is_empty() && s.askers.is_empty());
    // Once the forward is over, a caller asking again through controller 2
    // is sent to the peer that took it in, to answer from memory ...
    let asked = Effect::Forward {
        id: 1,
        action: 1,
        to: 1,
        incarnation: 0,
        reply_to: 2,
        may_have_run: false,
    };
    assert_eq!(s.step(&config, 0, sent_by(2, 1, 1))[0], asked);
    assert!(s.forwarding[0].over);
    // ... and if the peer is gone, with what it knew, the caller is told it
    // ended, how no longer known: it is not run again.
    let gone = Input::Bounced {
        id: 1,
        to: 1,
        incarnation: Some(0),
    };
    let told = s.step(&config, 0, gone);
    let forgotten = Effect::Report {
        id: 1,
        to: 2,
        outcome: Outcome::Forgotten,
    };
    assert_eq!(told[..2], [forgotten, Effect::Ack { id: 1 }], "{told:?}");
    assert!(!s.holds(&1) && s.resolving.is_empty());
}

#[test]
fn a_queue_should_retire_only_after_idling_for_the_whole_span() {
    let (mut s, config) = serving(Variant::Steadfast, 7);
    // One tick idle, then work: the timer that fires a tick later finds
    // the queue busy within the span, and is armed for the rest of it.
    s.step(&config, 1, activation(1));
    assert_eq!(
        s.step(&config, 1, Input::Idle { action: 0 }),
        [Effect::IdleTimer {
            action: 0,
            after: 1
        }]
    );
    assert!(s.queue(&0).is_some());
    let retired = s.step(&config, 1, Input::Idle { action: 0 });
    assert!(matches!(retired[..], [Effect::Delete { action: 0, .. }]));
    assert!(s.queue(&0).is_none());
}

#[test]
fn retired_queue_should_be_claimed_again_only_after_its_delete() {
    let (mut s, config) = serving(Variant::Steadfast, 7);
    assert_eq!(
        s.step(&config, 2, Input::Idle { action: 0 }),
        [Effect::Delete {
            action: 0,
            created: Some(2)
        }]
    );
    // Work for it meanwhile waits for the delete to be answered.
    assert_eq!(
        s.step(&config, 0, Input::CreateQueue { action: 0 }),
        [Effect::RetryIn { after: 1 }]
    );
    assert_eq!(
        s.step(&config, 0, Input::Deleted { action: 0 }),
        [Effect::Claim {
            action: 0,
            lease: 7,
            incarnation: 0,
        }]
    );
    let (mut s, config) = serving(Variant::OpenWhisk, 7);
    assert_eq!(
        s.step(&config, 2, Input::Idle { action: 0 }),
        [Effect::Delete {
            action: 0,
            created: None
        }]
    );
}

#[test]
fn stalled_watch_should_resume_under_steadfast_and_restart_from_now_under_openwhisk() {
    for (variant, from) in [(Variant::Steadfast, Some(2)), (Variant::OpenWhisk, None)] {
        let config = controller_config(variant);
        let mut c = Controller::new(Vec::new(), vec![(0, 0), (1, 0)], 1);
        assert!(c
            .step(&config, ControllerInput::Wake)
            .contains(&ControllerEffect::RequestProgress { id: W0 }));
        // No progress by the next wake-up: the watch has stalled, and is
        // closed.
        let restart = c.step(&config, ControllerInput::Wake);
        let id = WatchId(1);
        for effect in [
            ControllerEffect::Unwatch { id: W0 },
            ControllerEffect::Watch { id, from },
        ] {
            assert!(restart.contains(&effect), "{variant:?}: {effect:?}");
        }
        assert_eq!(c.watch, Watch::Starting { from, since: id });
        c.step(
            &config,
            ControllerInput::WatchStarted {
                watch: id,
                next: 2,
                term: 0,
            },
        );
        assert_eq!(
            c.watch,
            Watch::Active {
                id,
                next: 2,
                probing: false
            }
        );
        // The stalled watch delivers after all: it is closed again, and
        // what it says is not taken in.
        let late = ControllerInput::Changed {
            watch: W0,
            changes: vec![(2, left(0))],
            term: 0,
        };
        assert_eq!(
            c.step(&config, late),
            [ControllerEffect::Unwatch { id: W0 }]
        );
        assert_eq!(c.members, [(0, 0), (1, 0)], "{variant:?}");
    }
}

/// etcd slower than a wake-up to open a watch: the controller asks for
/// another at each wake-up meanwhile. Under steadfast's rules the first
/// that starts is taken and the later ones are closed as they start; under
/// OpenWhisk's, only the last asked for counts.
#[test]
fn a_controller_should_take_the_first_watch_that_starts_of_those_it_asked_for() {
    for (variant, from) in [(Variant::Steadfast, Some(2)), (Variant::OpenWhisk, None)] {
        let config = controller_config(variant);
        let mut c = Controller::new(Vec::new(), vec![(0, 0), (1, 0)], 1);
        // Watch 0 stalls: watch 1 is asked for at the second wake-up, 2 at
        // the third.
        c.step(&config, ControllerInput::Wake);
        c.step(&config, ControllerInput::Wake);
        let woken = c.step(&config, ControllerInput::Wake);
        let (first, second) = (WatchId(1), WatchId(2));
        assert!(
            woken.contains(&ControllerEffect::Watch { id: second, from }),
            "{variant:?}: {woken:?}"
        );
        let started = |watch| ControllerInput::WatchStarted {
            watch,
            next: 4,
            term: 0,
        };
        let taken = c.step(&config, started(first));
        let late = c.step(&config, started(second));
        let (taken_one, closed) = match variant {
            Variant::Steadfast => (first, late),
            Variant::OpenWhisk => (second, taken),
        };
        assert_eq!(
            c.watch,
            Watch::Active {
                id: taken_one,
                next: 4,
                probing: false,
            },
            "{variant:?}"
        );
        let other = if taken_one == first { second } else { first };
        assert_eq!(
            closed,
            [ControllerEffect::Unwatch { id: other }],
            "{variant:?}"
        );
        // What the other watch reports is not taken in.
        let report = ControllerInput::Changed {
            watch: other,
            changes: vec![(4, left(0))],
            term: 0,
        };
        assert_eq!(
            c.step(&config, report),
            [ControllerEffect::Unwatch { id: other }]
        );
        assert_eq!(c.members, [(0, 0), (1, 0)], "{variant:?}");
    }
}

/// A member key gone, and the copy sent to its scheduler waiting: under
/// `EtcdTime` the controller counts the absence only at wake-ups by which
/// its watch answered, and from zero again once an answer names a new
/// leader's term, so a leader loss is not taken for the scheduler's
/// silence; without it every wake-up counts.
#[test]
fn a_members_absence_should_count_only_while_etcd_answers_and_restart_with_a_new_leader() {
    let rules = Rules::from(Variant::Steadfast);
    for (rules, presumed_at) in [(rules, 7), (rules.without(Rule::EtcdTime), 3)] {
        let config = controller_config(rules);
        let mut c = Controller::new(vec![(0, 0)], vec![(0, 0), (1, 0)], 1);
        let submit = ControllerInput::Submit {
            id: 0,
            action: 0,
            deadline: None,
        };
        c.step(&config, submit);
        // Scheduler 0's lease expired: its keys go, in leader term 1.
        let expired = ControllerInput::Changed {
            watch: W0,
            changes: vec![(2, gone(0)), (2, left(0))],
            term: 1,
        };
        c.step(&config, expired);
        let mut counts = Vec::new();
        for wake in 1..=8 {
            match wake {
                // etcd answers nothing: a leader loss. The watch stalls
                // at the second wake-up, and the next is asked for.
                2..=4 => {}
                // A new leader: the watch asked for at the fourth wake-up
                // starts in term 2.
                5 => {
                    let started = ControllerInput::WatchStarted {
                        watch: WatchId(2),
                        next: 3,
                        term: 2,
                    };
                    c.step(&config, started);
                }
                _ => {
                    let watch = match c.watch {
                        Watch::Active { id, .. } => id,
                        _ => W0,
                    };
                    let progress = ControllerInput::Progress {
                        watch,
                        rev: 2,
                        term: if wake < 5 { 1 } else { 2 },
                    };
                    c.step(&config, progress);
                }
            }
            let woken = c.step(&config, ControllerInput::Wake);
            let resent = woken
                .iter()
                .any(|e| matches!(e, ControllerEffect::Send { id: 0, to: 0, .. }));
            let looked_up = woken.contains(&ControllerEffect::Get { id: 0, action: 0 });
            assert_eq!(
                resent,
                wake < presumed_at,
                "{rules:?}, wake-up {wake}: {woken:?}"
            );
            assert_eq!(looked_up, wake >= presumed_at, "{rules:?}, wake-up {wake}");
            counts.push(c.sent.first().map(|s| s.unseen_for));
        }
        if rules.has(Rule::EtcdTime) {
            // Counted at the first wake-up (etcd had answered), held while
            // etcd answered nothing, restarted by term 2: 1, 2, 3 from
            // the fifth on, presumed gone at the eighth.
            let held = [1, 1, 1, 1, 1, 2];
            let expected: Vec<Option<u8>> = held.iter().map(|n| Some(*n)).collect();
            assert_eq!(counts[..6], expected[..], "{counts:?}");
        }
    }
}

#[test]
fn compacted_watch_should_relist_under_steadfast() {
    let config = controller_config(Variant::Steadfast);
    let mut c = Controller::new(Vec::new(), vec![(0, 0), (1, 0)], 1);
    assert_eq!(
        c.step(&config, ControllerInput::Compacted { watch: W0, rev: 9 }),
        [ControllerEffect::Unwatch { id: W0 }, ControllerEffect::List]
    );
    let listed = c.step(
        &config,
        ControllerInput::Listed {
            rev: 9,
            keys: vec![(0, 1)],
            members: vec![(1, 0)],
        },
    );
    let id = WatchId(1);
    let from = Some(10);
    assert_eq!(listed, [ControllerEffect::Watch { id, from }]);
    assert_eq!(c.route(&0), Some(&1));
    assert_eq!(c.members, [(1, 0)], "the listing replaces the members");
}

#[test]
fn a_controller_should_place_new_queues_only_on_live_members() {
    let missing = |id| ControllerInput::Got {
        id,
        action: 0,
        owner: None,
    };
    let mut config = controller_config(Variant::Steadfast);
    // Seed 1 puts action 0 first on scheduler 1 (`Small::placement`).
    config.seed = 1;
    let mut c = Controller::new(Vec::new(), vec![(0, 0), (1, 0)], 2);
    // Submits activation `id`, whose lookup finds no key.
    let place = |c: &mut Controller, config: &controller::Config<Small>, id| {
        c.step(
            config,
            ControllerInput::Submit {
                id,
                action: 0,
                deadline: None,
            },
        );
        c.step(config, missing(id))
    };
    let create = |to| ControllerEffect::CreateQueue { action: 0, to };
    assert_eq!(place(&mut c, &config, 1)[0], create(1));
    // Scheduler 1's lease goes, and its member key with it: the next queue
    // goes to scheduler 0.
    let changes = vec![(3, left(1))];
    c.step(
        &config,
        ControllerInput::Changed {
            watch: W0,
            changes,
            term: 0,
        },
    );
    assert_eq!(place(&mut c, &config, 2)[0], create(0));
    // No member left: steadfast parks the activation until one joins.
    c.step(
        &config,
        ControllerInput::Changed {
            watch: W0,
            changes: vec![(4, left(0))],
            term: 0,
        },
    );
    assert!(place(&mut c, &config, 3).is_empty());
    assert!(c
        .step(&config, ControllerInput::Wake)
        .contains(&ControllerEffect::Get { id: 3, action: 0 }));
    let joined = controller::Change::Member {
        scheduler: 1,
        incarnation: Some(0),
    };
    c.step(
        &config,
        ControllerInput::Changed {
            watch: W0,
            changes: vec![(5, joined)],
            term: 0,
        },
    );
    assert_eq!(c.step(&config, missing(3))[0], create(1));
    // OpenWhisk fails it: "no scheduler endpoint available".
    let config = controller_config(Variant::OpenWhisk);
    let mut c = Controller::new(Vec::new(), Vec::new(), 2);
    assert_eq!(
        place(&mut c, &config, 1),
        [ControllerEffect::Resolve {
            id: 1,
            outcome: Outcome::Failed(FailReason::NoSchedulerEndpoint)
        }]
    );
}

/// A steadfast controller whose cache routes action 0 to scheduler 1 (of
/// members 0 and 1), its setup, and its send of activation 1 there.
fn routing_to_scheduler_1() -> (Controller, controller::Config<Small>, ControllerEffect) {
    let config = controller_config(Variant::Steadfast);
    let c = Controller::new(vec![(0, 1)], vec![(0, 0), (1, 0)], 2);
    let send = ControllerEffect::Send {
        id: 1,
        action: 0,
        to: 1,
        incarnation: Some(0),
        may_have_run: false,
    };
    (c, config, send)
}

#[test]
fn a_controller_should_resend_until_the_outcome_and_resolve_each_submission_once() {
    let (mut c, config, send) = routing_to_scheduler_1();
    let submit = ControllerInput::Submit {
        id: 1,
        action: 0,
        deadline: None,
    };
    let sent = c.step(&config, submit.clone());
    assert_eq!(sent, std::slice::from_ref(&send));
    assert!(
        c.step(&config, submit).is_empty(),
        "a resubmission joins the pending one"
    );
    assert!(c.step(&config, ControllerInput::Wake).contains(&send));
    // No acknowledgement stops the resends (it may be a late one, of an
    // earlier submission of the id): the outcome does.
    c.step(&config, ControllerInput::Acked { id: 1, from: 1 });
    assert!(c.step(&config, ControllerInput::Wake).contains(&send));
    let reported = ControllerInput::Outcome {
        id: 1,
        outcome: Outcome::Executed,
        from: None,
    };
    assert_eq!(
        c.step(&config, reported.clone()),
        [ControllerEffect::Resolve {
            id: 1,
            outcome: Outcome::Executed
        }]
    );
    assert!(
        c.step(&config, reported).is_empty(),
        "a report delivered again"
    );
    // Resolved before any acknowledgement: nothing is sent again.
    c.step(
        &config,
        ControllerInput::Submit {
            id: 2,
            action: 0,
            deadline: None,
        },
    );
    let report = ControllerInput::Outcome {
        id: 2,
        outcome: Outcome::Executed,
        from: Some(1),
    };
    // The scheduler that reported it is told the report arrived, and again
    // for a report delivered again.
    let confirm = ControllerEffect::Confirm { id: 2, to: 1 };
    assert_eq!(
        c.step(&config, report.clone()),
        [
            confirm.clone(),
            ControllerEffect::Resolve {
                id: 2,
                outcome: Outcome::Executed
            }
        ]
    );
    assert!(c.sent.is_empty() && c.submitted.is_empty());
    assert_eq!(c.step(&config, report), [confirm]);
}

#[test]
fn a_controller_should_tell_the_caller_at_the_deadline_and_go_on_until_the_end() {
    let (mut c, config, send) = routing_to_scheduler_1();
    let submit = |deadline| ControllerInput::Submit {
        id: 1,
        action: 0,
        deadline,
    };
    let timer = ControllerEffect::DeadlineIn { id: 1, after: 3 };
    assert_eq!(c.step(&config, submit(Some(3))), [timer, send.clone()]);
    assert!(
        c.step(&config, submit(Some(1))).is_empty(),
        "one that joins shares the pending submission's deadline"
    );
    let due = ControllerInput::Deadline { id: 1 };
    assert_eq!(
        c.step(&config, due.clone()),
        [ControllerEffect::Overdue { id: 1 }]
    );
    // Still pending: sent until a scheduler settles it.
    assert!(c.step(&config, ControllerInput::Wake).contains(&send));
    let failed = Outcome::Failed(FailReason::PastDeadline);
    let reported = ControllerInput::Outcome {
        id: 1,
        outcome: failed,
        from: None,
    };
    assert_eq!(
        c.step(&config, reported),
        [ControllerEffect::Resolve {
            id: 1,
            outcome: failed
        }]
    );
    assert!(c.step(&config, due).is_empty(), "a deadline after the end");
}

/// Activation `id` of action 0 from a controller, `left` ticks before its
/// deadline.
fn activation_due(id: u8, left: u8) -> Input {
    Input::Activation {
        id,
        action: 0,
        forwarded: false,
        incarnation: Some(0),
        left: Some(left),
        reply_to: 0,
        may_have_run: false,
    }
}

#[test]
fn an_activation_past_its_deadline_should_never_start() {
    let failed = |id| Effect::Report {
        id,
        to: 0,
        outcome: Outcome::Failed(FailReason::PastDeadline),
    };
    // Past it as it arrives: failed at once, under either variant's rules.
    for variant in [Variant::Steadfast, Variant::OpenWhisk] {
        let (mut s, config) = serving(variant, 7);
        let arrived = s.step(&config, 0, activation_due(1, 0));
        assert!(!executes(&arrived, 1) && arrived.contains(&failed(1)));
    }
    // Past it while it waits for its lease's validity to be confirmed
    // again: steadfast fails it at the wake-up; checked only as it
    // arrived, it runs once the lease is confirmed.
    let steadfast = Rules::from(Variant::Steadfast);
    for rules in [steadfast, steadfast.without(Rule::Deadline)] {
        let (mut s, config) = serving(rules, 7);
        // Keepalive 1 goes out; the lease's validity has run out.
        s.step(&config, 2, Input::Wake);
        let arrived = s.step(&config, 0, activation_due(1, 1));
        assert!(!executes(&arrived, 1), "it waits for its lease");
        let woken = s.step(&config, 1, Input::Wake);
        let renewed = s.step(&config, 0, kept_alive(2, 3));
        if rules.has(Rule::Deadline) {
            assert!(woken.contains(&failed(1)), "{woken:?}");
            assert!(!executes(&renewed, 1) && s.deadlines.is_empty());
        } else {
            assert!(!woken.contains(&failed(1)), "{woken:?}");
            assert!(executes(&renewed, 1), "{renewed:?}");
        }
    }
}

#[test]
fn a_copy_that_may_have_run_should_end_ambiguous_past_its_deadline() {
    let reported = |outcome| Effect::Report {
        id: 1,
        to: 0,
        outcome,
    };
    let mut marked = activation_due(1, 0);
    if let Input::Activation { may_have_run, .. } = &mut marked {
        *may_have_run = true;
    }
    // Under the rule it is not run again, and its caller is not told it
    // never ran; without it, it is.
    let steadfast = Rules::from(Variant::Steadfast);
    for (rules, outcome) in [
        (steadfast, Outcome::Ambiguous(FailReason::PastDeadline)),
        (
            steadfast.without(Rule::MayHaveRun),
            Outcome::Failed(FailReason::PastDeadline),
        ),
    ] {
        let (mut s, config) = serving(rules, 7);
        let arrived = s.step(&config, 0, marked.clone());
        assert!(!executes(&arrived, 1), "{arrived:?}");
        assert!(arrived.contains(&reported(outcome)), "{arrived:?}");
        assert_eq!(s.outcome_of(&1), Some(outcome));
        assert!(s.may_have_run.is_empty(), "settled: nothing left to say");
    }
}

#[test]
fn unreachable_etcd_should_fail_under_openwhisk_and_park_under_steadfast() {
    let failed = ControllerInput::GetFailed { id: 1, action: 0 };
    let submit = ControllerInput::Submit {
        id: 1,
        action: 0,
        deadline: None,
    };
    let config = controller_config(Variant::OpenWhisk);
    let mut c = Controller::new(Vec::new(), vec![(0, 0), (1, 0)], 2);
    c.step(&config, submit.clone());
    assert_eq!(
        c.step(&config, failed.clone()),
        [ControllerEffect::Resolve {
            id: 1,
            outcome: Outcome::Failed(FailReason::NoSchedulerEndpoint)
        }]
    );
    let config = controller_config(Variant::Steadfast);
    let mut c = Controller::new(Vec::new(), vec![(0, 0), (1, 0)], 2);
    c.step(&config, submit);
    assert!(c.step(&config, failed).is_empty());
    assert!(c
        .step(&config, ControllerInput::Wake)
        .contains(&ControllerEffect::Get { id: 1, action: 0 }));
}

fn scheduler_inputs() -> impl Strategy<Value = Vec<(u8, Input)>> {
    let key = (0u8..3, 0u8..2, 1u8..5, 1u32..6).prop_map(|(owner, incarnation, lease, created)| {
        Endpoint {
            owner,
            incarnation,
            lease,
            created,
        }
    });
    let result = prop_oneof![
        (1u32..6).prop_map(|created| ClaimResult::Created { created }),
        key.clone().prop_map(ClaimResult::Exists),
        Just(ClaimResult::LeaseNotFound),
        Just(ClaimResult::Unreadable {
            why: KeyFault::ForeignValue,
            reason: "empty".into()
        }),
    ];
    let input = prop_oneof![
        Just(Input::Wake),
        (1u8..5, 0u64..4, 0u8..4).prop_map(|(lease, keepalive, ttl)| Input::KeptAlive {
            lease,
            keepalive,
            ttl
        }),
        Just(Input::Retry),
        (1u8..5).prop_map(|lease| Input::Granted { lease, ttl: 3 }),
        (1u8..5).prop_map(|lease| Input::Revoked { lease }),
        (1u8..5, any::<bool>()).prop_map(|(lease, found)| Input::Registered { lease, found }),
        (0u8..2, 1u8..5, result).prop_map(|(action, lease, result)| Input::Claimed {
            action,
            lease,
            result
        }),
        (0u8..2).prop_map(|action| Input::Deleted { action }),
        (0u8..4, 0u8..2, any::<bool>(), prop::option::of(0u8..3)).prop_map(
            |(id, action, forwarded, left)| Input::Activation {
                id,
                action,
                forwarded,
                incarnation: Some(0),
                left,
                reply_to: id % 2,
                may_have_run: false,
            }
        ),
        (0u8..4).prop_map(|id| Input::Executed { id, failure: None }),
        (0u8..4, 0u8..2, prop::option::of(key)).prop_map(|(id, action, key)| Input::Resolved {
            id,
            action,
            key
        }),
        (0u8..4).prop_map(resolved_unreadable_of),
        (0u8..2).prop_map(|action| Input::CreateQueue { action }),
        (0u8..2).prop_map(|action| Input::Idle { action }),
        (0u8..4, 0u8..3, prop::option::of(0u8..2)).prop_map(|(id, to, incarnation)| {
            Input::Bounced {
                id,
                to,
                incarnation,
            }
        }),
        (0u8..4, 0u8..3, 0u8..2).prop_map(|(id, from, reply_to)| Input::ForwardAcked {
            id,
            from,
            reply_to: Some(reply_to),
        }),
        (0u8..4, 0u8..2).prop_map(|(id, from)| Input::ReportAcked {
            id,
            from: Some(from)
        }),
        (0u8..4, 0u8..2).prop_map(|(id, to)| Input::ReportBounced { id, to }),
    ];
    // A drain now and then: about half the sequences never drain.
    let input = prop_oneof![60 => input, 1 => Just(Input::Drain)];
    prop::collection::vec((0u8..2, input), 0..40)
}

proptest! {
    #[test]
    fn steadfast_scheduler_should_serve_only_under_its_valid_lease_and_execute_once(
        inputs in scheduler_inputs(),
    ) {
        let config = config(Variant::Steadfast);
        let mut s = Scheduler::new(0, 0);
        let mut executed = Vec::new();
        let mut drained = false;
        for (elapsed, input) in inputs {
            let effects = s.step(&config, elapsed, input);
            prop_assert!(!drained || effects.is_empty(), "a step after it drained: {:?}", effects);
            for effect in effects {
                match effect {
                    Effect::Drained => {
                        prop_assert!(s.running.is_empty() && s.waiting.is_empty() && s.resolving.is_empty(),
                            "drained while it held work");
                        prop_assert_eq!(&s.lease, &LeaseState::Granting, "drained holding a lease");
                        drained = true;
                    }
                    Effect::Execute { id, lease, .. } => {
                        let LeaseState::Held { id: held, valid_for, .. } = s.lease else {
                            panic!("served without a lease");
                        };
                        prop_assert_eq!(lease, held, "served under a lease not held");
                        prop_assert!(valid_for > 0, "served past the fence");
                        prop_assert!(!executed.contains(&id), "executed {} twice", id);
                        executed.push(id);
                    }
                    Effect::Claim { lease, .. } => {
                        prop_assert_eq!(Some(&lease), s.live_lease(), "claimed under a lease not held");
                    }
                    Effect::Forward { to, .. } => prop_assert_ne!(to, 0, "forwarded to itself"),
                    _ => {}
                }
            }
            prop_assert!(s.queues.iter().all(|q| Some(&q.lease) == s.live_lease()));
            prop_assert!(s.queues.windows(2).all(|q| q[0].action < q[1].action), "one queue per action");
        }
    }
}

/// A change a controller's watch may report, of two actions' endpoint keys
/// and two schedulers' member keys, readable or not.
fn change() -> impl Strategy<Value = controller::Change<Small>> {
    use controller::Change;
    prop_oneof![
        (0u8..2, prop::option::of(0u8..2))
            .prop_map(|(action, owner)| Change::Endpoint { action, owner }),
        (0u8..2, prop::option::of(0u8..2)).prop_map(|(scheduler, incarnation)| {
            Change::Member {
                scheduler,
                incarnation,
            }
        }),
        (any::<bool>(), 0u8..2).prop_map(|(endpoint, of)| Change::Unreadable {
            key: if endpoint {
                controller::Key::Endpoint(of)
            } else {
                controller::Key::Member(of)
            },
            reason: "unreadable".into(),
        }),
    ]
}

/// One of the first watches a controller asks for.
fn watch() -> impl Strategy<Value = controller::WatchId> {
    (0u64..3).prop_map(controller::WatchId)
}

fn controller_inputs() -> impl Strategy<Value = Vec<ControllerInput>> {
    use controller::Input as C;
    let input = prop_oneof![
        Just(C::Wake),
        (0u8..4, 0u8..2).prop_map(|(id, action)| C::Submit {
            id,
            action,
            deadline: None
        }),
        (0u8..4, 0u8..2, prop::option::of(0u8..2)).prop_map(|(id, action, owner)| C::Got {
            id,
            action,
            owner
        }),
        (0u8..4, 0u8..2).prop_map(|(id, action)| C::GetFailed { id, action }),
        (0u8..4, 0u8..2, any::<bool>()).prop_map(|(id, action, denied)| C::GotUnreadable {
            id,
            action,
            why: if denied {
                KeyFault::AccessDenied
            } else {
                KeyFault::ForeignValue
            },
            reason: "empty".into()
        }),
        (0u8..4, 0u8..2).prop_map(|(id, from)| C::Acked { id, from }),
        (0u8..4, 0u8..2, prop::option::of(0u8..2)).prop_map(|(id, to, incarnation)| {
            C::Bounced {
                id,
                to,
                incarnation,
            }
        }),
        (0u8..4, any::<bool>(), prop::option::of(0u8..2)).prop_map(|(id, executed, from)| {
            C::Outcome {
                id,
                outcome: if executed {
                    Outcome::Executed
                } else {
                    Outcome::Failed(FailReason::NoQueueEndpoint)
                },
                from,
            }
        }),
        (watch(), 1u32..12).prop_map(|(watch, next)| C::WatchStarted {
            watch,
            next,
            term: 0
        }),
        (watch(), prop::collection::vec((1u32..12, change()), 1..4)).prop_map(
            |(watch, mut changes)| {
                changes.sort_by_key(|(rev, _)| *rev);
                C::Changed {
                    watch,
                    changes,
                    term: 0,
                }
            }
        ),
        (watch(), 1u32..12).prop_map(|(watch, rev)| C::Progress {
            watch,
            rev,
            term: 0
        }),
        (watch(), 1u32..12).prop_map(|(watch, rev)| C::Compacted { watch, rev }),
        (
            1u32..12,
            prop::collection::vec((0u8..2, 0u8..2), 0..2),
            prop::collection::vec((0u8..2, 0u8..2), 0..3)
        )
            .prop_map(|(rev, keys, members)| C::Listed { rev, keys, members }),
    ];
    prop::collection::vec(input, 0..40)
}

proptest! {
    #[test]
    fn controller_should_route_only_to_schedulers_and_resolve_each_submission_once(
        inputs in controller_inputs(),
        steadfast in any::<bool>(),
    ) {
        let variant = if steadfast { Variant::Steadfast } else { Variant::OpenWhisk };
        let config = controller_config(variant);
        let mut c = Controller::new(Vec::new(), vec![(0, 0), (1, 0)], 1);
        // The submissions not resolved yet, by the inputs alone.
        let mut pending = std::collections::BTreeSet::new();
        for input in inputs {
            let lookups_before = c.lookups.len();
            let failed = matches!(input, ControllerInput::GetFailed { .. });
            let reported = match &input {
                ControllerInput::Outcome { id, outcome, .. } => Some((*id, *outcome)),
                // The one answer steadfast decides itself: nobody can route
                // the call (an earlier copy, lost with a scheduler, may have
                // run).
                ControllerInput::GotUnreadable { id, why, .. } if steadfast => {
                    let may_have_run = c.may_have_run.contains(id);
                    Some((*id, Outcome::Unrouted { may_have_run, why: *why }))
                }
                _ => None,
            };
            if let ControllerInput::Submit { id, .. } = input {
                pending.insert(id);
            }
            let effects = c.step(&config, input);
            for effect in &effects {
                match *effect {
                    ControllerEffect::Send { to, .. } | ControllerEffect::CreateQueue { to, .. } => {
                        prop_assert!(to < 2, "routed to scheduler {}, which does not exist", to);
                    }
                    ControllerEffect::Resolve { id, outcome } => {
                        prop_assert!(pending.remove(&id), "resolved {} twice or unsubmitted", id);
                        match reported {
                            Some(report) => prop_assert_eq!(report, (id, outcome)),
                            None => prop_assert!(
                                variant == Variant::OpenWhisk,
                                "steadfast failed {} itself", id
                            ),
                        }
                    }
                    _ => {}
                }
            }
            let submitted: Vec<u8> = pending.iter().copied().collect();
            prop_assert_eq!(&c.submitted, &submitted, "every submission kept until resolved");
            prop_assert!(c.sent.iter().all(|s| pending.contains(&s.id)));
            prop_assert!(c.lookups.iter().all(|(id, _)| pending.contains(id)));
            prop_assert!(c.cache.windows(2).all(|e| e[0].0 < e[1].0), "one cache entry per action");
            prop_assert!(c.members.windows(2).all(|m| m[0] < m[1]), "members sorted, once each");
            if failed && steadfast {
                prop_assert_eq!(c.lookups.len(), lookups_before, "a failed lookup is kept");
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
        let config = config(variant);
        let mut s = Scheduler::new(0, 0);
        for (elapsed, input) in scheduler_in {
            prop_assert_eq!(&round_trip(&input), &input);
            for effect in s.step(&config, elapsed, input) {
                prop_assert_eq!(round_trip(&effect), effect);
            }
        }
        let config = controller_config(variant);
        let mut c = Controller::new(Vec::new(), vec![(0, 0), (1, 0)], 1);
        for input in controller_in {
            prop_assert_eq!(&round_trip(&input), &input);
            for effect in c.step(&config, input) {
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

/// A scheduler's setup as a runtime has it: a TTL of 10 s, a margin of
/// 1 s, woken every 3 s, queues retiring after a minute idle.
fn runtime_config() -> scheduler::Config<Named> {
    scheduler::Config {
        rules: Variant::Steadfast.into(),
        ttl: 10_000,
        margin: 1_000,
        wake_every: 3_000,
        retry_every: 250,
        idle_after: 60_000,
        remember_for: Some(600_000),
        execute_for: Some(60_000),
        presume_gone_after: 10_000,
    }
}

#[test]
fn roles_should_run_on_real_identifiers() {
    use scheduler::{Effect as E, Input as I};
    let name = |s: &str| s.to_string();
    let lease = 7_587_870_261_423_i64;
    let config = runtime_config();
    let mut s = scheduler::Scheduler::<Named>::new(name("scheduler-a:8081"), 3);
    assert_eq!(s.step(&config, 0, I::Wake)[0], E::Grant { ttl: 10_000 });
    s.step(&config, 12, I::Granted { lease, ttl: 10_000 });
    let answer = I::KeptAlive {
        lease,
        keepalive: 0,
        ttl: 10_000,
    };
    s.step(&config, 3, answer);
    let claim = s.step(
        &config,
        0,
        I::CreateQueue {
            action: name("hello"),
        },
    );
    assert_eq!(
        claim,
        [
            E::Claim {
                action: name("hello"),
                lease,
                incarnation: 3,
            },
            E::RetryIn { after: 250 }
        ]
    );
    let won = I::Claimed {
        action: name("hello"),
        lease,
        result: ClaimResult::Created { created: 1_042 },
    };
    s.step(&config, 5, won);
    let run = s.step(
        &config,
        40,
        I::Activation {
            id: name("act-1"),
            action: name("hello"),
            forwarded: false,
            incarnation: Some(3),
            left: None,
            reply_to: name("ctl-1"),
            may_have_run: false,
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
    // 9 s after the keepalive was sent, the fence (10 s - 1 s) holds work.
    let late = s.step(
        &config,
        8_952,
        I::Activation {
            id: name("act-2"),
            action: name("hello"),
            forwarded: false,
            incarnation: Some(3),
            left: None,
            reply_to: name("ctl-1"),
            may_have_run: false,
        },
    );
    assert!(late.is_empty(), "{late:?}");

    use controller::{Effect as CE, Input as CI};
    let schedulers = vec![(name("scheduler-a:8081"), 3), (name("scheduler-b:8081"), 5)];
    let config = controller::Config::<Named> {
        rules: Variant::Steadfast.into(),
        wake_every: 3_000,
        seed: 0,
        presume_gone_after: 30_000,
    };
    let mut c = controller::Controller::<Named>::new(Vec::new(), schedulers, 41);
    c.step(&config, CI::Compacted { watch: W0, rev: 99 });
    // scheduler-a has left since: only scheduler-b is a member.
    c.step(
        &config,
        CI::Listed {
            rev: 100,
            keys: vec![(name("hello"), name("scheduler-b:8081"))],
            members: vec![(name("scheduler-b:8081"), 5)],
        },
    );
    let routed = c.step(
        &config,
        CI::Submit {
            id: name("act-2"),
            action: name("hello"),
            deadline: None,
        },
    );
    assert_eq!(
        routed,
        [CE::Send {
            id: name("act-2"),
            action: name("hello"),
            to: name("scheduler-b:8081"),
            incarnation: Some(5),
            may_have_run: false,
        }]
    );
    let watch = WatchId(1);
    c.step(
        &config,
        CI::WatchStarted {
            watch,
            next: 101,
            term: 0,
        },
    );
    c.step(
        &config,
        CI::Changed {
            watch,
            changes: vec![(
                101,
                controller::Change::Endpoint {
                    action: name("hello"),
                    owner: None,
                },
            )],
            term: 0,
        },
    );
    assert_eq!(
        c.watch,
        Watch::Active {
            id: watch,
            next: 102,
            probing: false
        }
    );
    c.step(
        &config,
        CI::Submit {
            id: name("act-3"),
            action: name("hello"),
            deadline: None,
        },
    );
    let missing = c.step(
        &config,
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
                to: name("scheduler-b:8081"),
                incarnation: Some(5),
                may_have_run: false,
            },
        ]
    );
}

#[test]
fn a_runtimes_placement_should_spread_actions_and_move_none_but_to_a_joining_member() {
    let config = controller::Config::<Named> {
        rules: Variant::Steadfast.into(),
        wake_every: 3_000,
        seed: 0,
        presume_gone_after: 30_000,
    };
    let members = |n: usize| {
        (0..n)
            .map(|m| (format!("10.0.0.{m}:8081"), 0))
            .collect::<Vec<_>>()
    };
    let actions: Vec<String> = (0..60).map(|a| format!("action-{a}")).collect();
    let placed = |n| {
        let c = controller::Controller::<Named>::new(Vec::new(), members(n), 1);
        let on: Vec<String> = actions
            .iter()
            .map(|a| c.place(config.seed, a).unwrap())
            .collect();
        on
    };
    let three = placed(3);
    for (member, _) in members(3) {
        let count = three.iter().filter(|on| **on == member).count();
        assert!(count >= 10, "{member} has {count} of 60 actions");
    }
    // A fourth member joins: an action moves only to it.
    let four = placed(4);
    let moved = three.iter().zip(&four).filter(|(a, b)| a != b);
    assert!(moved.clone().all(|(_, to)| *to == members(4)[3].0));
    assert!(moved.count() >= 5, "the new member takes its share");
    // The same in every process and every build.
    assert_eq!(
        Named::placement(0, &"hello".into(), &"10.0.0.1:8081".into()),
        crate::stable_hash::mix(crate::stable_hash::fnv1a("0\x00hello\x0010.0.0.1:8081"))
    );
}

/// Runs `inputs` through a scheduler and returns its trace: the header and
/// one record per step.
fn record_scheduler(
    inputs: Vec<(u64, scheduler::Input<Named>)>,
) -> (SchedulerHeader, Vec<SchedulerRecord>) {
    let config = runtime_config();
    let id = "scheduler-a:8081".to_string();
    let incarnation = 3;
    let mut role = scheduler::Scheduler::<Named>::new(id.clone(), incarnation);
    let records = inputs
        .into_iter()
        .map(|(elapsed, input)| Record {
            at: 0,
            elapsed,
            from: None,
            effects: role.step(&config, elapsed, input.clone()),
            input,
        })
        .collect();
    let header = SchedulerHeader {
        id,
        incarnation,
        config,
    };
    (header, records)
}

fn a_scheduler_run() -> Vec<(u64, scheduler::Input<Named>)> {
    use scheduler::Input as I;
    let action = || "hello".to_string();
    vec![
        (0, I::Wake),
        (
            12,
            I::Granted {
                lease: 7,
                ttl: 10_000,
            },
        ),
        (
            3,
            I::KeptAlive {
                lease: 7,
                keepalive: 0,
                ttl: 10_000,
            },
        ),
        (0, I::CreateQueue { action: action() }),
        (
            5,
            I::Claimed {
                action: action(),
                lease: 7,
                result: ClaimResult::Created { created: 1_042 },
            },
        ),
        (
            40,
            I::Activation {
                id: "act-1".into(),
                action: action(),
                forwarded: false,
                incarnation: Some(3),
                left: None,
                reply_to: "ctl-1".into(),
                may_have_run: false,
            },
        ),
        (
            900,
            I::Executed {
                id: "act-1".into(),
                failure: None,
            },
        ),
        (2_000, I::Wake),
    ]
}

#[test]
fn a_recorded_run_should_replay_through_the_roles_step_from_json() {
    let (header, records) = record_scheduler(a_scheduler_run());
    // Written and read back as a driver's JSON lines would be.
    let mut text = serde_json::to_string(&Header::Scheduler(header)).unwrap();
    for record in &records {
        text += "\n";
        text += &serde_json::to_string(record).unwrap();
    }
    let trace = Trace::read(&text).unwrap();
    assert_eq!(trace.role(), "scheduler scheduler-a:8081");
    assert_eq!(trace.line(7), 9);
    assert_eq!(trace.replay(), Ok(8));
}

#[test]
fn a_step_the_driver_decided_should_be_reported_where_it_diverged() {
    let (header, mut records) = record_scheduler(a_scheduler_run());
    // The driver executed the activation although the role did not ask.
    let extra = scheduler::Effect::Execute {
        id: "act-9".into(),
        action: "hello".into(),
        lease: 7,
    };
    records[6].effects.push(extra);
    let divergence = header.replay(&records).unwrap_err();
    assert_eq!(divergence.step, 6);
    assert_eq!(divergence.recorded.len(), divergence.replayed.len() + 1);
}

#[test]
fn a_controller_trace_should_replay_and_not_pass_for_a_schedulers() {
    use controller::Input as CI;
    let config = controller::Config::<Named> {
        rules: Variant::Steadfast.into(),
        wake_every: 3_000,
        seed: 0,
        presume_gone_after: 30_000,
    };
    let members = vec![
        ("scheduler-a:8081".to_string(), 3),
        ("scheduler-b:8081".to_string(), 5),
    ];
    let keys = vec![("bye".to_string(), "scheduler-a:8081".to_string())];
    let mut role = controller::Controller::<Named>::new(keys.clone(), members.clone(), 41);
    let inputs = [
        CI::Submit {
            id: "act-1".into(),
            action: "hello".into(),
            deadline: None,
        },
        CI::Got {
            id: "act-1".into(),
            action: "hello".into(),
            owner: None,
        },
        CI::Wake,
    ];
    let records: Vec<_> = inputs
        .into_iter()
        .map(|input| Record {
            at: 0,
            elapsed: 0,
            from: None,
            effects: role.step(&config, input.clone()),
            input,
        })
        .collect();
    let header = ControllerHeader {
        address: "controller-a:8080".into(),
        keys,
        members,
        rev: 41,
        config,
    };
    assert_eq!(header.replay(&records), Ok(3));
    // A controller's steps under a scheduler's header are no trace.
    let (scheduler_header, _) = record_scheduler(Vec::new());
    let mut text = serde_json::to_string(&Header::Scheduler(scheduler_header)).unwrap();
    text += "\n\n";
    text += &serde_json::to_string(&records[0]).unwrap();
    let error = Trace::read(&text).unwrap_err().to_string();
    assert!(error.starts_with("3: not a scheduler record"), "{error}");
    let trace = Trace::from(Run::Controller(header, records));
    assert_eq!(trace.replay(), Ok(3));
}

#[test]
fn rules_should_be_written_by_name_and_read_back() {
    let openwhisk = Rules::from(Variant::OpenWhisk);
    assert_eq!(
        serde_json::to_string(&openwhisk).unwrap(),
        r#"["WholeResponses"]"#
    );
    let fewer = Rules::from(Variant::Steadfast).without(Rule::Park);
    let json = serde_json::to_string(&fewer).unwrap();
    assert!(!json.contains("Park") && json.contains("Relist"), "{json}");
    assert_eq!(round_trip(&fewer), fewer);
    let error = serde_json::from_str::<Rules>(r#"["Fnce"]"#).unwrap_err();
    assert!(
        error.to_string().contains("unknown variant `Fnce`"),
        "{error}"
    );
}

#[test]
fn a_scheduler_should_refuse_a_new_copy_addressed_to_another_run_of_it() {
    let addressed_to = |id, incarnation| Input::Activation {
        id,
        action: 0,
        forwarded: false,
        incarnation,
        left: None,
        reply_to: 0,
        may_have_run: false,
    };
    let (mut s, config) = serving(Variant::Steadfast, 7);
    // New to this run (incarnation 0), and addressed to another, or to none.
    for incarnation in [Some(1), None] {
        assert_eq!(
            s.step(&config, 0, addressed_to(1, incarnation)),
            [Effect::Refuse { id: 1, incarnation }]
        );
    }
    assert!(!s.holds(&1), "a refused copy is not taken in");
    // What this run holds, or settled, it answers as it would any copy,
    // whichever run the copy names: a refusal would have it routed again
    // while it runs here.
    assert!(executes(&s.step(&config, 0, activation(1)), 1));
    assert!(s.step(&config, 0, addressed_to(1, Some(1))).is_empty());
    s.step(
        &config,
        0,
        Input::Executed {
            id: 1,
            failure: None,
        },
    );
    assert_eq!(
        s.step(&config, 0, addressed_to(1, None))[1..],
        [Effect::Ack { id: 1 }]
    );
    // OpenWhisk takes in every copy.
    let (mut s, config) = serving(Variant::OpenWhisk, 7);
    assert!(executes(&s.step(&config, 0, addressed_to(2, Some(1))), 2));
}

#[test]
fn a_controller_should_address_each_send_to_the_run_its_member_key_names() {
    let config = controller_config(Variant::Steadfast);
    let mut c = Controller::new(vec![(0, 1)], vec![(0, 0), (1, 4)], 2);
    let send = |incarnation, may_have_run| ControllerEffect::Send {
        id: 1,
        action: 0,
        to: 1,
        incarnation,
        may_have_run,
    };
    let member = |rev, incarnation| ControllerInput::Changed {
        watch: W0,
        changes: vec![(
            rev,
            controller::Change::Member {
                scheduler: 1,
                incarnation,
            },
        )],
        term: 0,
    };
    let resends = |c: &mut Controller| -> Vec<ControllerEffect> {
        let woken = c.step(&config, ControllerInput::Wake);
        woken
            .into_iter()
            .filter(|e| matches!(e, ControllerEffect::Send { .. }))
            .collect()
    };
    assert_eq!(
        c.step(
            &config,
            ControllerInput::Submit {
                id: 1,
                action: 0,
                deadline: None
            }
        ),
        [send(Some(4), false)]
    );
    // Scheduler 1 restarted: its key names run 5, and the copy is sent
    // again to that run, marked as one that may have run (run 4 may have
    // run it before it stopped).
    c.step(&config, member(3, Some(5)));
    assert_eq!(c.incarnation(&1), Some(5));
    assert_eq!(resends(&mut c), [send(Some(5), true)]);
    // Its key gone (a lease lost), the controller still addresses the run
    // it last saw: that run may hold the activation.
    c.step(&config, member(4, None));
    assert_eq!(c.incarnation(&1), None);
    assert_eq!(resends(&mut c), [send(Some(5), true)]);
    // A refusal is a bounce: one of a copy to an earlier run changes
    // nothing (a copy to the run addressed now may be in flight); one of
    // the copy to that run has it looked up again at the next wake-up.
    let refused = |incarnation| ControllerInput::Bounced {
        id: 1,
        to: 1,
        incarnation,
    };
    c.step(&config, refused(Some(4)));
    assert_eq!(resends(&mut c), [send(Some(5), true)]);
    c.step(&config, refused(Some(5)));
    let woken = c.step(&config, ControllerInput::Wake);
    assert!(woken.contains(&ControllerEffect::Get { id: 1, action: 0 }));
}
