//! The controller: it routes each activation to the scheduler that owns its
//! action's queue, through an endpoint cache fed by a watch on the endpoint
//! keys, and places a new queue among the schedulers whose member keys the
//! same watch shows live. It sends each activation again at every wake-up
//! until it learns how the activation ended (under OpenWhisk's rules, until
//! the scheduler it was sent to acknowledges it), or the scheduler, gone,
//! refuses it or stays out of sight in etcd long enough to be presumed
//! gone: then it routes it again. It resolves each
//! submission exactly once: with the outcome a scheduler reports, or with
//! its own failure to route it. A caller that set a deadline is told at
//! the deadline if there is no outcome yet; the submission goes on until
//! it ends. A sans-I/O state machine.

use serde::{Deserialize, Serialize};

use super::{contains_sorted, insert_sorted, Domain, FailReason, KeyFault, Outcome, Rule, Rules};

/// How a controller is set up.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct Config<D: Domain> {
    /// The rules it follows: a [`super::Variant`]'s, or fewer.
    pub rules: Rules,
    /// How often it wakes up: to send again the activations whose outcome
    /// it waits for, to look up parked ones again, to ask its watch for
    /// progress, and to restart a watch that gave none.
    pub wake_every: D::Duration,
    /// Mixed into the placement weights ([`Domain::placement`]). Every
    /// controller of a deployment uses the same (a runtime's is 0), so
    /// that they place a new queue alike; the model gives each controller
    /// its own, so that its proof covers controllers that disagree, as they
    /// do while members join and leave.
    pub seed: u64,
    /// Under [`Rule::PresumeGone`], how long the member key of a scheduler
    /// holding copies unacknowledged may stay out of sight (counted at
    /// wake-ups, each [`Config::wake_every`] apart) before the scheduler
    /// is presumed gone and the copies are routed again; under
    /// [`Rule::EtcdTime`], only wake-ups by which etcd had answered the
    /// watch count. It must exceed the longest a live scheduler stays cut
    /// off from etcd past its lease's expiry while etcd answers the
    /// controller (it comes back with its member key then): a live
    /// scheduler presumed gone may run again what it was running. Absent
    /// in a trace written before it existed: zero.
    #[serde(default)]
    pub presume_gone_after: D::Duration,
}

/// One change of a key the controller watches.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub enum Change<D: Domain> {
    /// `action`'s endpoint key now names `owner` (`None`: it was deleted).
    Endpoint {
        /// The action.
        action: D::Action,
        /// Its new owner.
        owner: Option<D::Scheduler>,
    },
    /// `scheduler`'s member key was put, naming this incarnation of it,
    /// or deleted (`None`).
    Member {
        /// The scheduler, by the address it advertises.
        scheduler: D::Scheduler,
        /// The incarnation its key now names, if the key exists.
        incarnation: Option<D::Incarnation>,
    },
    /// `key` was put with a value no scheduler of this runtime writes (a
    /// foreign writer's, or a key edited by hand): `reason` says what is
    /// wrong with it. The controller forgets what it knew of the key, and
    /// never guesses: an action whose endpoint key is unreadable has no
    /// route (a lookup of it finds the same, [`Input::GotUnreadable`]:
    /// under [`Rule::RefuseUnreadable`] its calls are answered as not
    /// routed until the key is deleted or put readable); a scheduler whose
    /// member key is unreadable is no member it places queues on, and is
    /// out of its sight ([`Rule::PresumeGone`]). Every other key is read
    /// as before: one unreadable key stops no watch.
    Unreadable {
        /// The key.
        key: Key<D>,
        /// What is wrong with its value.
        reason: String,
    },
}

/// A key the controller reads, by what it names.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub enum Key<D: Domain> {
    /// The endpoint key of this action.
    Endpoint(D::Action),
    /// The member key of this scheduler.
    Member(D::Scheduler),
}

/// Names one of the watches a controller asks for. The role numbers them
/// in the order it asks (a controller starts with watch 0, which its
/// driver opens), and every answer of a watch names it, so that the role
/// takes answers only from the watch it listens to: a watch it gave up on
/// may still deliver (its answers in flight, or an opening that etcd
/// answered late).
#[derive(
    Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize,
)]
#[serde(transparent)]
pub struct WatchId(pub u64);

impl WatchId {
    /// The watch asked for after this one.
    fn next(self) -> WatchId {
        WatchId(self.0 + 1)
    }
}

/// The controller's watch on the endpoint and member keys.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum Watch<R> {
    /// Receiving changes from revision `next` on, from watch `id`.
    Active {
        /// The watch it listens to.
        id: WatchId,
        /// The next revision it wants.
        next: R,
        /// A progress request is out and nothing has arrived since: if it
        /// is still so at the next wake-up, the watch has stalled.
        probing: bool,
    },
    /// A watch has been asked for and has not started yet; another is
    /// asked for at every wake-up until one starts.
    Starting {
        /// The revision it starts from; `None`: from etcd's next one.
        from: Option<R>,
        /// The first watch asked for since it began starting: under
        /// [`Rule::FirstWatch`], any watch from this one on that starts
        /// is taken.
        since: WatchId,
    },
    /// Re-listing the keys; asked again at every wake-up.
    Listing,
}

/// What the world tells the controller.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum Input<D: Domain> {
    /// A wake-up it asked for (or the first one, which starts it).
    Wake,
    /// A user submitted an activation; one submitted again under an id
    /// not resolved yet joins the submission pending.
    Submit {
        /// Its id.
        id: D::Activation,
        /// Its action.
        action: D::Action,
        /// How long from now its caller waits for its end (`None`: until
        /// it ends). A scheduler starts it only before then. One that joins
        /// a pending submission shares that submission's deadline.
        #[serde(default)]
        deadline: Option<D::Duration>,
    },
    /// The deadline of submission `id` came ([`Effect::DeadlineIn`]).
    Deadline {
        /// The activation.
        id: D::Activation,
    },
    /// A lookup of `action`'s key for activation `id` answered.
    Got {
        /// The activation it is for.
        id: D::Activation,
        /// Its action.
        action: D::Action,
        /// The key's owner, if the key exists.
        owner: Option<D::Scheduler>,
    },
    /// A lookup of `action`'s key for activation `id` could read no owner
    /// from it, for good: the key holds a value no steadfast node wrote,
    /// or etcd refused this node access to it (`why`).
    GotUnreadable {
        /// The activation it is for.
        id: D::Activation,
        /// Its action.
        action: D::Action,
        /// Why no owner could be read.
        why: KeyFault,
        /// etcd's words, or what is wrong with the value.
        reason: String,
    },
    /// A lookup for activation `id` could not reach etcd.
    GetFailed {
        /// The activation it is for.
        id: D::Activation,
        /// Its action.
        action: D::Action,
    },
    /// Watch `watch`, asked for ([`Effect::Watch`]), started; its first
    /// revision is `next`. A watch the controller no longer waits for is
    /// closed ([`Effect::Unwatch`]).
    WatchStarted {
        /// The watch.
        watch: WatchId,
        /// The first revision it reports.
        next: D::Revision,
        /// The raft term etcd's answer carried ([`Controller::term`]).
        #[serde(default)]
        term: u64,
    },
    /// Watch `watch` reported one response: every change of one revision
    /// or more, each with its revision, oldest first. A lease's expiry
    /// deletes all its keys at one revision (the member key and the
    /// endpoint keys of a scheduler go together), and etcd sends all of a
    /// revision in one response; a watch catching up (started from a past
    /// revision) gets several revisions in one. Taken in only from the
    /// watch the controller listens to; another is closed.
    Changed {
        /// The watch.
        watch: WatchId,
        /// Every change of the response, each with its revision, in etcd's
        /// order.
        changes: Vec<(D::Revision, Change<D>)>,
        /// The raft term the response carried ([`Controller::term`]).
        #[serde(default)]
        term: u64,
    },
    /// Watch `watch` answered a progress request: nothing it has not
    /// reported happened up to `rev`.
    Progress {
        /// The watch.
        watch: WatchId,
        /// etcd's revision.
        rev: D::Revision,
        /// The raft term the answer carried ([`Controller::term`]).
        #[serde(default)]
        term: u64,
    },
    /// etcd cancelled watch `watch`: its next revision was compacted away;
    /// etcd is at `rev`.
    Compacted {
        /// The watch.
        watch: WatchId,
        /// etcd's current revision.
        rev: D::Revision,
    },
    /// Scheduler `from` acknowledged activation `id`: it settled it
    /// (executed or failed it, or forwarded it and the peer took it in),
    /// or, under OpenWhisk's rules, took it in. An acknowledgement from
    /// another scheduler than the one it was last sent to changes nothing,
    /// and under [`Rule::AckAtSettlement`] none does.
    Acked {
        /// The activation.
        id: D::Activation,
        /// The scheduler that acknowledges it.
        from: D::Scheduler,
    },
    /// Activation `id` could not be sent to `to`: nothing listens at its
    /// address any more (the scheduler is gone, for good or until it
    /// starts again there), or the scheduler there refused it (it is
    /// another incarnation than the copy was addressed to,
    /// [`Rule::FenceCopies`]).
    Bounced {
        /// The activation.
        id: D::Activation,
        /// The scheduler it was sent to.
        to: D::Scheduler,
        /// The run of `to` the copy was addressed to: a bounce of a copy
        /// to another run than the one now addressed changes nothing (a
        /// copy to that one may be in flight, and taken in).
        incarnation: Option<D::Incarnation>,
    },
    /// A scheduler reported how activation `id` ended (whichever scheduler
    /// settled it: the one it was sent to, or a peer that one forwarded it
    /// to). Reports are delivered at least once.
    Outcome {
        /// The activation.
        id: D::Activation,
        /// How it ended.
        outcome: Outcome,
        /// The scheduler that reported it, which is told the report
        /// arrived ([`Effect::Confirm`]); `None`: none to tell (absent in a
        /// trace written before it existed).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        from: Option<D::Scheduler>,
    },
    /// A listing of every endpoint and member key, at revision `rev`.
    Listed {
        /// The revision of the listing.
        rev: D::Revision,
        /// Every endpoint key it could read: action and owner (an
        /// unreadable one is left out, as [`Change::Unreadable`] forgets
        /// it).
        keys: Vec<(D::Action, D::Scheduler)>,
        /// Every member key it could read: its scheduler and the
        /// incarnation it names.
        members: Vec<(D::Scheduler, D::Incarnation)>,
    },
}

/// What the controller asks of the world.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum Effect<D: Domain> {
    /// Wake it up ([`Input::Wake`]) after this long.
    WakeIn {
        /// How long from now.
        after: D::Duration,
    },
    /// Look up `action`'s key; answer with [`Input::Got`] or
    /// [`Input::GetFailed`].
    Get {
        /// The activation it is for.
        id: D::Activation,
        /// Its action.
        action: D::Action,
    },
    /// List every endpoint and member key; answer with [`Input::Listed`].
    List,
    /// Open watch `id` on the endpoint and member keys from revision
    /// `from` (`None`: from etcd's next), with progress notifications;
    /// answer with [`Input::WatchStarted`], then with what it reports, each
    /// answer naming `id`. A watch whose opening fails is not answered: the
    /// role asks for another at its next wake-up.
    Watch {
        /// The watch: each asked for has a new one.
        id: WatchId,
        /// The first revision wanted.
        from: Option<D::Revision>,
    },
    /// Close watch `id` (or its opening, if it has not started): the
    /// controller takes nothing more from it. Answers of it already on
    /// their way may still arrive; they are ignored.
    Unwatch {
        /// The watch.
        id: WatchId,
    },
    /// Ask watch `id` for a progress notification; answer with
    /// [`Input::Progress`] (or changes).
    RequestProgress {
        /// The watch.
        id: WatchId,
    },
    /// Send activation `id` to scheduler `to` (again at every wake-up
    /// until the activation ends, [`Controller::sent`]).
    Send {
        /// The activation.
        id: D::Activation,
        /// Its action.
        action: D::Action,
        /// The scheduler.
        to: D::Scheduler,
        /// The incarnation of `to` its member key names, as the controller
        /// last saw it (`None`: it sees no member key of `to`).
        incarnation: Option<D::Incarnation>,
        /// An earlier copy may have run ([`Controller::may_have_run`]);
        /// absent in a trace written before it existed: `false`.
        #[serde(default, skip_serializing_if = "std::ops::Not::not")]
        may_have_run: bool,
    },
    /// Ask scheduler `to` to create a queue for `action`.
    CreateQueue {
        /// The action.
        action: D::Action,
        /// The scheduler.
        to: D::Scheduler,
    },
    /// Tell scheduler `to` that its report of activation `id` arrived: it
    /// stops sending it, whatever became of the submission (a report of
    /// one resolved already is confirmed too).
    Confirm {
        /// The activation.
        id: D::Activation,
        /// The scheduler that reported it.
        to: D::Scheduler,
    },
    /// End submission `id` with `outcome`: given once per submission.
    Resolve {
        /// The activation.
        id: D::Activation,
        /// How it ended.
        outcome: Outcome,
    },
    /// Tell the controller when submission `id`'s deadline comes: answer
    /// with [`Input::Deadline`] after this long.
    DeadlineIn {
        /// The activation.
        id: D::Activation,
        /// How long from now.
        after: D::Duration,
    },
    /// Tell the caller of submission `id` that it has no outcome by its
    /// deadline: it is running or ran, or it will never start (a scheduler
    /// fails what is past its deadline). The submission stays pending: it
    /// is sent until a scheduler settles it, and resolved then.
    Overdue {
        /// The activation.
        id: D::Activation,
    },
}

/// An activation sent to a scheduler, and sent again until it ends (under
/// OpenWhisk's rules, until that scheduler acknowledges it).
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub struct Sent<D: Domain> {
    /// The activation.
    pub id: D::Activation,
    /// Its action.
    pub action: D::Action,
    /// The scheduler it was sent to.
    pub to: D::Scheduler,
    /// The incarnation of `to` it was last addressed to: the one `to`'s
    /// member key named when last seen (while the key is gone, a lease
    /// lost, `to` may still be that incarnation, and hold the activation).
    pub incarnation: Option<D::Incarnation>,
    /// How long `to`'s member key has been out of the controller's sight
    /// while the copy waited, counted at its wake-ups under
    /// [`Rule::PresumeGone`] (under [`Rule::EtcdTime`], those by which
    /// its watch had answered since the one before); zero while it sees
    /// the key, and without the rule.
    pub unseen_for: D::Duration,
}

/// One controller.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct Controller<D: Domain> {
    /// The endpoint cache: action and owner, sorted by action.
    pub cache: Vec<(D::Action, D::Scheduler)>,
    /// Its watch.
    pub watch: Watch<D::Revision>,
    /// The last watch it asked for (at first, watch 0, which it starts
    /// with).
    pub last_watch: WatchId,
    /// Activations whose action's key it is looking up (a steadfast
    /// controller keeps those whose lookup failed, or found no member to
    /// place a queue on, here too), sent again at every wake-up until
    /// answered.
    pub lookups: Vec<(D::Activation, D::Action)>,
    /// The live members: the schedulers whose member keys exist, each with
    /// the incarnation its key names, sorted.
    pub members: Vec<(D::Scheduler, D::Incarnation)>,
    /// The submissions not resolved yet, sorted.
    pub submitted: Vec<D::Activation>,
    /// The activations sent whose outcome it waits for (under OpenWhisk's
    /// rules, not acknowledged yet), sorted: each sent again at every
    /// wake-up.
    pub sent: Vec<Sent<D>>,
    /// Under [`Rule::MayHaveRun`], the submissions of which a copy was lost
    /// with a scheduler run that stopped without acknowledging it (the
    /// copy bounced, or the scheduler's member key now names another run),
    /// sorted: that run may have executed it, and every copy sent from
    /// then on says so.
    pub may_have_run: Vec<D::Activation>,
    /// The highest raft term (the number of etcd's leader's term) its
    /// watch's answers carried; 0 before the first. Under
    /// [`Rule::EtcdTime`], a higher one restarts every
    /// [`Sent::unseen_for`], as a new leader restarts every lease.
    #[serde(default)]
    pub term: u64,
}

impl<D: Domain> Sent<D> {
    /// Its send; `may_have_run`: the activation may have run before.
    fn effect(&self, may_have_run: bool) -> Effect<D> {
        Effect::Send {
            id: self.id.clone(),
            action: self.action.clone(),
            to: self.to.clone(),
            incarnation: self.incarnation,
            may_have_run,
        }
    }
}

impl<D: Domain> Controller<D> {
    /// A controller that listed `keys` and `members` at `rev` and watches
    /// from the next revision, on watch 0: its driver opens that watch as
    /// it starts the role.
    pub fn new(
        keys: Vec<(D::Action, D::Scheduler)>,
        members: Vec<(D::Scheduler, D::Incarnation)>,
        rev: D::Revision,
    ) -> Self {
        let mut controller = Controller {
            cache: Vec::new(),
            watch: Watch::Active {
                id: WatchId::default(),
                next: D::next_revision(rev),
                probing: false,
            },
            last_watch: WatchId::default(),
            lookups: Vec::new(),
            members: Vec::new(),
            submitted: Vec::new(),
            sent: Vec::new(),
            may_have_run: Vec::new(),
            term: 0,
        };
        controller.adopt(keys, members);
        controller
    }

    /// Takes a listing for what it knows: cache and members, each sorted
    /// and without repeats.
    fn adopt(
        &mut self,
        mut keys: Vec<(D::Action, D::Scheduler)>,
        mut members: Vec<(D::Scheduler, D::Incarnation)>,
    ) {
        keys.sort_unstable();
        keys.dedup_by(|a, b| a.0 == b.0);
        members.sort_unstable();
        members.dedup_by(|a, b| a.0 == b.0);
        self.cache = keys;
        self.members = members;
    }

    /// Where the cache routes `action`.
    pub fn route(&self, action: &D::Action) -> Option<&D::Scheduler> {
        self.cache.iter().find(|(a, _)| a == action).map(|(_, s)| s)
    }

    /// The scheduler asked to create a queue for `action` when no key names
    /// one: the live member of highest [`Domain::placement`] weight, the
    /// lowest on a tie (`None` when it knows no live member).
    pub fn place(&self, seed: u64, action: &D::Action) -> Option<D::Scheduler> {
        self.members
            .iter()
            .map(|(m, _)| m)
            .max_by_key(|m| (D::placement(seed, action, m), std::cmp::Reverse(*m)))
            .cloned()
    }

    /// The incarnation of `scheduler` its member key names, if the
    /// controller sees one.
    pub fn incarnation(&self, scheduler: &D::Scheduler) -> Option<D::Incarnation> {
        incarnation_in::<D>(&self.members, scheduler)
    }

    /// Takes in one change; an unreadable key is forgotten, as if deleted.
    fn take_in(&mut self, change: Change<D>) {
        match change {
            Change::Endpoint { action, owner } => self.remember(action, owner),
            Change::Member {
                scheduler,
                incarnation,
            } => self.enroll(scheduler, incarnation),
            Change::Unreadable { key, .. } => match key {
                Key::Endpoint(action) => self.remember(action, None),
                Key::Member(scheduler) => self.enroll(scheduler, None),
            },
        }
    }

    /// Records `scheduler` as a member whose key names `incarnation`, or as
    /// none (`None`).
    fn enroll(&mut self, scheduler: D::Scheduler, incarnation: Option<D::Incarnation>) {
        let at = self.members.binary_search_by(|(m, _)| m.cmp(&scheduler));
        match (at, incarnation) {
            (Ok(at), Some(incarnation)) => self.members[at].1 = incarnation,
            (Ok(at), None) => {
                self.members.remove(at);
            }
            (Err(at), Some(incarnation)) => self.members.insert(at, (scheduler, incarnation)),
            (Err(_), None) => {}
        }
    }

    fn remember(&mut self, action: D::Action, owner: Option<D::Scheduler>) {
        self.cache.retain(|(a, _)| *a != action);
        if let Some(owner) = owner {
            let at = self.cache.partition_point(|(a, _)| *a < action);
            self.cache.insert(at, (action, owner));
        }
    }

    /// Sends activation `id` to `to`, again until it ends
    /// ([`Controller::sent`]).
    fn send(&mut self, id: D::Activation, action: D::Action, to: D::Scheduler) -> Effect<D> {
        let sent = Sent {
            incarnation: self.incarnation(&to),
            id,
            action,
            to,
            unseen_for: D::Duration::default(),
        };
        let effect = sent.effect(contains_sorted(&self.may_have_run, &sent.id));
        match self.sent.binary_search_by(|s| s.id.cmp(&sent.id)) {
            Ok(at) => self.sent[at] = sent,
            Err(at) => self.sent.insert(at, sent),
        }
        effect
    }

    /// Sends again every activation it waits for, each addressed to the
    /// incarnation its scheduler's member key names now, if the controller
    /// sees one, else to the one it was last sent to. Under
    /// [`Rule::MayHaveRun`], one last sent to another run of that
    /// scheduler may have run there. Under [`Rule::PresumeGone`], one whose
    /// scheduler's member key has been out of sight for
    /// [`Config::presume_gone_after`] is routed again instead; `current`:
    /// whether its watch has answered since the last wake-up (under
    /// [`Rule::EtcdTime`], only then does an absence count).
    fn resend(&mut self, config: &Config<D>, current: bool) -> Vec<Effect<D>> {
        let rules = config.rules;
        let mut effects = Vec::with_capacity(self.sent.len());
        let mut gone = Vec::new();
        for sent in &mut self.sent {
            let now = incarnation_in::<D>(&self.members, &sent.to);
            if let (Some(now), Some(before)) = (now, sent.incarnation) {
                if now != before && rules.has(Rule::MayHaveRun) {
                    insert_sorted(&mut self.may_have_run, sent.id.clone());
                }
            }
            sent.incarnation = now.or(sent.incarnation);
            if rules.has(Rule::PresumeGone) {
                let counts = current || !rules.has(Rule::EtcdTime);
                sent.unseen_for = match now {
                    Some(_) => D::Duration::default(),
                    None if counts => sent.unseen_for + config.wake_every,
                    None => sent.unseen_for,
                };
                if sent.unseen_for >= config.presume_gone_after {
                    gone.push(sent.id.clone());
                    continue;
                }
            }
            effects.push(sent.effect(contains_sorted(&self.may_have_run, &sent.id)));
        }
        for id in gone {
            if let Some(at) = self.sent.iter().position(|s| s.id == id) {
                self.reroute(rules, at);
            }
        }
        effects
    }

    /// Routes again, from a fresh lookup at the next wake-up, copy `at` of
    /// [`Controller::sent`], lost with the scheduler run it was sent to:
    /// under [`Rule::MayHaveRun`], that run may have run it.
    fn reroute(&mut self, rules: Rules, at: usize) {
        let Sent { id, action, .. } = self.sent.remove(at);
        if rules.has(Rule::MayHaveRun) {
            insert_sorted(&mut self.may_have_run, id.clone());
        }
        self.lookups.push((id, action));
    }

    /// Ends submission `id` with `outcome`, unless it ended already: it is
    /// neither sent nor looked up any more.
    fn resolve(&mut self, id: D::Activation, outcome: Outcome) -> Vec<Effect<D>> {
        let Ok(at) = self.submitted.binary_search(&id) else {
            return Vec::new();
        };
        self.submitted.remove(at);
        if let Ok(at) = self.may_have_run.binary_search(&id) {
            self.may_have_run.remove(at);
        }
        self.sent.retain(|s| s.id != id);
        self.lookups.retain(|(i, _)| *i != id);
        vec![Effect::Resolve { id, outcome }]
    }

    /// Takes activation `id` off the lookups; whether it was there.
    fn answered(&mut self, id: &D::Activation) -> bool {
        let before = self.lookups.len();
        self.lookups.retain(|(i, _)| i != id);
        self.lookups.len() != before
    }

    /// Feeds one input.
    pub fn step(&mut self, config: &Config<D>, input: Input<D>) -> Vec<Effect<D>> {
        let rules = config.rules;
        match input {
            Input::Wake => self.wake(config),
            Input::Submit {
                id,
                action,
                deadline,
            } => {
                let Err(at) = self.submitted.binary_search(&id) else {
                    return Vec::new();
                };
                self.submitted.insert(at, id.clone());
                let timer = deadline.map(|after| Effect::DeadlineIn {
                    id: id.clone(),
                    after,
                });
                let route = match self.route(&action).cloned() {
                    Some(to) => self.send(id, action, to),
                    None => {
                        self.lookups.push((id.clone(), action.clone()));
                        Effect::Get { id, action }
                    }
                };
                timer.into_iter().chain([route]).collect()
            }
            Input::Deadline { id } => match self.submitted.binary_search(&id) {
                Ok(_) => vec![Effect::Overdue { id }],
                Err(_) => Vec::new(),
            },
            // steadfast sends until the outcome comes: an acknowledgement
            // may be a late one, of an earlier submission of the id.
            Input::Acked { .. } if rules.has(Rule::AckAtSettlement) => Vec::new(),
            Input::Acked { id, from } => {
                self.sent.retain(|s| s.id != id || s.to != from);
                Vec::new()
            }
            Input::Outcome { id, outcome, from } => {
                let confirm = from.map(|to| Effect::Confirm { id: id.clone(), to });
                confirm
                    .into_iter()
                    .chain(self.resolve(id, outcome))
                    .collect()
            }
            // steadfast looks the action up again at its next wake-up (by
            // then the gone scheduler's keys may have expired and its
            // actions been placed anew); OpenWhisk sends to the same
            // address again.
            Input::Bounced {
                id,
                to,
                incarnation,
            } if rules.has(Rule::Reroute) => {
                let at = self
                    .sent
                    .iter()
                    .position(|s| (&s.id, &s.to, s.incarnation) == (&id, &to, incarnation));
                if let Some(at) = at {
                    self.reroute(rules, at);
                }
                Vec::new()
            }
            Input::Bounced { .. } => Vec::new(),
            Input::Got { id, action, owner } => {
                if !self.answered(&id) {
                    return Vec::new();
                }
                self.remember(action.clone(), owner.clone());
                match owner {
                    Some(to) => vec![self.send(id, action, to)],
                    // No key: the member it places the queue on is asked to
                    // create it, and sent the activation.
                    None => match self.place(config.seed, &action) {
                        Some(to) => vec![
                            Effect::CreateQueue {
                                action: action.clone(),
                                to: to.clone(),
                            },
                            self.send(id, action, to),
                        ],
                        // No live member: steadfast looks it up again at its
                        // next wake-up, by when one may have joined.
                        None if rules.has(Rule::Park) => {
                            self.lookups.push((id, action));
                            Vec::new()
                        }
                        None => self.resolve(id, Outcome::Failed(FailReason::NoSchedulerEndpoint)),
                    },
                }
            }
            // Nobody can find the queue's owner, nor whether this id ran
            // through another call: the call is answered as not routed.
            Input::GotUnreadable {
                id, action, why, ..
            } if rules.has(Rule::RefuseUnreadable) => {
                if !self.answered(&id) {
                    return Vec::new();
                }
                self.remember(action, None);
                let may_have_run = contains_sorted(&self.may_have_run, &id);
                self.resolve(id, Outcome::Unrouted { may_have_run, why })
            }
            // Without the rule, as if etcd had not answered.
            Input::GotUnreadable { id, action, .. } => {
                self.step(config, Input::GetFailed { id, action })
            }
            // steadfast keeps it and looks it up again at its next wake-up.
            Input::GetFailed { .. } if rules.has(Rule::Park) => Vec::new(),
            Input::GetFailed { id, .. } => {
                if !self.answered(&id) {
                    return Vec::new();
                }
                self.resolve(id, Outcome::Failed(FailReason::NoSchedulerEndpoint))
            }
            Input::WatchStarted { watch, next, term } => match self.watch {
                Watch::Starting { since, .. } if self.awaits(rules, since, watch) => {
                    self.watch = Watch::Active {
                        id: watch,
                        next,
                        probing: false,
                    };
                    self.heard_term(rules, term);
                    Vec::new()
                }
                // The watch it starts with, which its driver opened.
                Watch::Active { id, .. } if id == watch => {
                    self.heard_term(rules, term);
                    Vec::new()
                }
                _ => vec![Effect::Unwatch { id: watch }],
            },
            Input::Changed {
                watch,
                changes,
                term,
            } => {
                let Some(next) = self.listening(watch) else {
                    return vec![Effect::Unwatch { id: watch }];
                };
                self.heard_term(rules, term);
                // Nothing at or after the revision it wants: an old
                // response, seen already.
                let Some(&(last, _)) = changes.last().filter(|(rev, _)| *rev >= next) else {
                    return Vec::new();
                };
                self.watch = Watch::Active {
                    id: watch,
                    next: D::next_revision(last),
                    probing: false,
                };
                // Without the rule, only the first event of the response.
                let taken = if rules.has(Rule::WholeResponses) {
                    changes.len()
                } else {
                    1
                };
                let new = changes.into_iter().filter(|(rev, _)| *rev >= next);
                for (_, change) in new.take(taken) {
                    self.take_in(change);
                }
                Vec::new()
            }
            Input::Progress { watch, term, .. } => {
                let Some(next) = self.listening(watch) else {
                    return vec![Effect::Unwatch { id: watch }];
                };
                self.heard_term(rules, term);
                self.watch = Watch::Active {
                    id: watch,
                    next,
                    probing: false,
                };
                Vec::new()
            }
            Input::Compacted { watch, .. } => {
                // etcd cancelled it; it is closed either way.
                let unwatch = Effect::Unwatch { id: watch };
                if self.listening(watch).is_none() {
                    return vec![unwatch];
                }
                // steadfast re-lists, then watches from the listing on;
                // OpenWhisk watches again from "now".
                if rules.has(Rule::Relist) {
                    self.watch = Watch::Listing;
                    return vec![unwatch, Effect::List];
                }
                vec![unwatch, self.start_watch(None)]
            }
            Input::Listed { rev, keys, members } => {
                if self.watch != Watch::Listing {
                    return Vec::new();
                }
                self.adopt(keys, members);
                vec![self.start_watch(Some(D::next_revision(rev)))]
            }
        }
    }

    /// Takes in the raft term of an answer of the watch it listens to:
    /// under [`Rule::EtcdTime`], a new leader's restarts the count of every
    /// member key's absence. Until a leader was elected, no scheduler
    /// could put its key back (and etcd, for its part, gives every lease
    /// its full time again).
    fn heard_term(&mut self, rules: Rules, term: u64) {
        if term <= self.term {
            return;
        }
        self.term = term;
        if rules.has(Rule::EtcdTime) {
            for sent in &mut self.sent {
                sent.unseen_for = D::Duration::default();
            }
        }
    }

    /// The next revision it wants, if it listens to `watch`.
    fn listening(&self, watch: WatchId) -> Option<D::Revision> {
        match self.watch {
            Watch::Active { id, next, .. } if id == watch => Some(next),
            _ => None,
        }
    }

    /// Whether, starting a watch since `since`, it takes `watch` when that
    /// starts: under [`Rule::FirstWatch`], any it asked for since; without
    /// it, only the last it asked for.
    fn awaits(&self, rules: Rules, since: WatchId, watch: WatchId) -> bool {
        if rules.has(Rule::FirstWatch) {
            (since..=self.last_watch).contains(&watch)
        } else {
            watch == self.last_watch
        }
    }

    /// Asks for a new watch from `from`, and waits for it (or for any
    /// watch asked for later) to start.
    fn start_watch(&mut self, from: Option<D::Revision>) -> Effect<D> {
        let id = self.ask_watch();
        self.watch = Watch::Starting { from, since: id };
        Effect::Watch { id, from }
    }

    /// Names the next watch it asks for.
    fn ask_watch(&mut self) -> WatchId {
        self.last_watch = self.last_watch.next();
        self.last_watch
    }

    /// Sends again every activation it waits for, looks up every
    /// activation not answered yet, and keeps the watch going: a progress
    /// request, or a new watch when the last request got no answer (a watch
    /// can stall without an error).
    fn wake(&mut self, config: &Config<D>) -> Vec<Effect<D>> {
        let rules = config.rules;
        // What it sees of etcd is current: the watch answered since the
        // last wake-up (the progress request then, or a change), or
        // started since.
        let current = matches!(self.watch, Watch::Active { probing: false, .. });
        let sends = self.resend(config, current);
        let gets = self.lookups.iter().map(|(id, action)| Effect::Get {
            id: id.clone(),
            action: action.clone(),
        });
        let mut effects: Vec<Effect<D>> = sends.into_iter().chain(gets).collect();
        match self.watch {
            Watch::Active {
                id,
                next,
                probing: false,
            } => {
                self.watch = Watch::Active {
                    id,
                    next,
                    probing: true,
                };
                effects.push(Effect::RequestProgress { id });
            }
            // Stalled: steadfast resumes where it stopped; OpenWhisk starts
            // from "now", and changes during the gap are lost.
            Watch::Active {
                id,
                next,
                probing: true,
            } => {
                let from = rules.has(Rule::ResumeWatch).then_some(next);
                effects.push(Effect::Unwatch { id });
                effects.push(self.start_watch(from));
            }
            // Another is asked for: the opening may have failed. Those
            // asked for before may only be slow to start; under
            // `FirstWatch` they are still awaited.
            Watch::Starting { from, .. } => {
                let id = self.ask_watch();
                effects.push(Effect::Watch { id, from });
            }
            Watch::Listing => effects.push(Effect::List),
        }
        effects.push(Effect::WakeIn {
            after: config.wake_every,
        });
        effects
    }
}

/// The incarnation `members` (sorted) name for `scheduler`.
fn incarnation_in<D: Domain>(
    members: &[(D::Scheduler, D::Incarnation)],
    scheduler: &D::Scheduler,
) -> Option<D::Incarnation> {
    let at = members.binary_search_by(|(m, _)| m.cmp(scheduler));
    at.ok().map(|at| members[at].1)
}
