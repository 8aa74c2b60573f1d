//! What the properties read beyond the world itself, kept from what the
//! world does (runs that return, patches the API server applies), never
//! from the engine's rules: which handler last finished on what, the plans
//! parents declared, and the events the `sometimes` look for.

use serde::{Deserialize, Serialize};

use super::small::{Digest, Essence, Key};
use super::{LifecycleModel, Run};
use crate::lifecycle::engine::Patch;
use crate::lifecycle::handlers::On;
use crate::lifecycle::rerun::Returns;

/// The ghost state.
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct Ghost {
    /// Each handler's and sub-handler's last run of this operator's that
    /// returned for good (success, permanent error, or a hang), with the
    /// essence it saw, its own write included.
    pub last: Vec<(Key, Essence)>,
    /// Runs that returned for good (or hung) whose outcome no applied
    /// patch of their start has recorded yet, the latest per handler and
    /// start, with the essence
    /// each saw and the plan it declared. They count once a patch records
    /// them; an operator that crashes loses them, and they count as never
    /// having happened (their side effects stay, which no engine can see;
    /// see README).
    pub pending: Vec<Pending>,
    /// Create handlers whose success an applied patch recorded.
    pub created: Vec<u8>,
    /// Each parent's last plan, with the digest of the run that declared it.
    pub plans: Vec<(Key, Digest, Vec<Key>)>,
    /// Sub-handlers of a parent's last plan that have not returned for good
    /// since that plan was declared.
    pub owed: Vec<Key>,
    /// Each handler's last run that returned: the operator start
    /// (incarnation) whose run it was, the digest it ran on, and whether a
    /// run of that start on that digest has succeeded since the handler
    /// last ran on another.
    pub returns: Returns<Key, Digest, ()>,
    /// The version at which each progress record last changed.
    pub touched: Vec<(Key, u32)>,
    /// Delete handlers that returned for good.
    pub deleted_by: Vec<u8>,
    /// The version a foreign write made, the last one.
    pub foreign_at: Option<u32>,
    /// The essences the edited field has had.
    pub history: Vec<Essence>,
    /// The diff-base once took an essence that `handled` does not hold of.
    pub early_commit: bool,
    /// A patch once overwrote a record that changed after its version.
    pub overwrote: bool,
    /// A handler once ran again on a digest it had succeeded on, in one
    /// start, without running on another digest in between.
    pub rerun: bool,
    /// A create handler once succeeded again after a success of it that
    /// was on record, or returned to a start still alive.
    pub created_twice: bool,
    /// The finalizer was once removed before every delete handler returned.
    pub early_release: bool,
    /// The replica start that took the claim of the object's epoch (the
    /// last one taken), if one was taken.
    pub taker: Option<u32>,
    /// A claim was once set with an epoch below the object's, or with the
    /// object's by another replica start than the one that took it.
    pub fence_broken: bool,
    /// A run was once cut before its timeout while its replica still held
    /// the object's claim, no renewal of it had failed, and one had been
    /// due before the cut.
    pub cut_short: bool,
    /// A patch was once refused because of a foreign write.
    pub foreign_refused: bool,
    /// A zombie run once returned.
    pub zombie_returned: bool,
    /// A hung run's deadline once passed.
    pub deadline_passed: bool,
    /// A run once returned after its deadline.
    pub late_returned: bool,
    /// The version a patch refused for good was computed from, the last
    /// time one was.
    pub refused: Option<u32>,
    /// A request was once throttled or not served.
    pub throttled: bool,
    /// A run once failed temporarily on its last attempt.
    pub exhausted: bool,
    /// A stopped operator was once started again.
    pub restarted: bool,
    /// A replica once died for good.
    pub died: bool,
    /// A claim of a replica start that is no more was once taken over.
    pub taken_over: bool,
    /// A claim of a live replica start was once taken over by another.
    pub taken_from_live: bool,
    /// A list once served a version older than the object's.
    pub stale_listed: bool,
    /// The watch once expired.
    pub expired: bool,
    /// A handler's run once wrote to the essence.
    pub wrote: bool,
    /// An edit once brought the essence back to an earlier one.
    pub returned_to_earlier: bool,
    /// A deletion was once requested while a handler ran.
    pub deleted_while_running: bool,
    /// The last patch applied was a status part, sent through the status
    /// subresource ahead of the rest of its patch.
    pub status_first: bool,
}

/// A run that returned for good, whose outcome no applied patch recorded
/// yet.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct Pending {
    /// The run.
    pub run: Run,
    /// The essence it saw, its own write included.
    pub seen: Essence,
    /// The plan it declared.
    pub plan: Vec<Key>,
    /// Whether it succeeded.
    pub success: bool,
}

impl Pending {
    /// `run`, hung or given up: it failed for good, and declared and wrote
    /// nothing.
    pub fn failed(run: Run) -> Self {
        Pending {
            run,
            seen: run.essence,
            plan: Vec::new(),
            success: false,
        }
    }
}

impl Ghost {
    /// The ghost of an object just created with `essence`.
    pub fn new(essence: Essence) -> Self {
        Ghost {
            history: vec![essence],
            ..Ghost::default()
        }
    }

    /// Whether `essence` is handled, by a definition from the registrations
    /// alone: every field handler's last run saw its field's value in
    /// `essence`; every create handler ran; the create handlers' last runs,
    /// or (if any are registered) the update handlers' last runs, all saw
    /// `essence`; and no sub-handler of a parent's last plan is owed.
    pub fn handled(&self, m: &LifecycleModel, essence: Essence) -> bool {
        let mut creates_saw_it = true;
        let mut updates_saw_it = true;
        let mut updates = false;
        for (h, spec) in m.config.handlers.iter().enumerate() {
            let last = self.last_of(Key::handler(h as u8));
            match spec.on {
                On::Field(field) => {
                    if last.map(|e| e.get(field)) != Some(essence.get(field)) {
                        return false;
                    }
                }
                On::Create => match last {
                    None => return false,
                    Some(seen) => creates_saw_it &= seen == essence,
                },
                On::Update => {
                    updates = true;
                    updates_saw_it &= last == Some(essence);
                }
                On::Delete | On::Resume => {}
            }
        }
        self.owed.is_empty() && (creates_saw_it || !updates || updates_saw_it)
    }

    fn last_of(&self, key: Key) -> Option<Essence> {
        self.last.iter().find(|(k, _)| *k == key).map(|(_, e)| *e)
    }

    /// A run of this operator's returned for good (or hung): it counts
    /// once a patch records it.
    pub fn pend(&mut self, m: &LifecycleModel, returned: Pending) {
        if returned.success && creates(m, returned.run.key) {
            let known = self.created.contains(&returned.run.key.handler)
                || self
                    .pending
                    .iter()
                    .any(|p| p.success && p.run.key == returned.run.key);
            self.created_twice |= known;
        }
        let (key, start) = (returned.run.key, returned.run.id.incarnation);
        self.pending
            .retain(|p| p.run.key != key || p.run.id.incarnation != start);
        self.pending.push(returned);
        self.pending.sort_by_key(|p| p.run.key);
    }

    /// `patch`, of operator start `author`, is applied: that start's runs
    /// whose records it writes count, and all of them if it `purged` every
    /// record (a commit).
    pub fn record(
        &mut self,
        m: &LifecycleModel,
        patch: &Patch<super::Small>,
        purged: bool,
        author: u32,
    ) {
        let (written, rest): (Vec<_>, Vec<_>) = std::mem::take(&mut self.pending)
            .into_iter()
            .partition(|p| {
                p.run.id.incarnation == author
                    && (purged || patch.records.iter().any(|(k, _)| *k == p.run.key))
            });
        self.pending = rest;
        for Pending {
            run,
            seen,
            plan,
            success,
        } in written
        {
            self.finished(m, run, seen);
            if run.key.sub.is_none() {
                // A parent's last run says what its plan is: a failed run
                // leaves none.
                self.planned(m, run, &plan);
            }
            if success && creates(m, run.key) && !self.created.contains(&run.key.handler) {
                self.created.push(run.key.handler);
                self.created.sort();
            }
        }
    }

    /// `run` of this operator's returned for good, having seen `seen`.
    fn finished(&mut self, m: &LifecycleModel, run: Run, seen: Essence) {
        match self.last.iter_mut().find(|(k, _)| *k == run.key) {
            Some(entry) => entry.1 = seen,
            None => self.last.push((run.key, seen)),
        }
        self.last.sort();
        self.owed.retain(|k| *k != run.key);
        if run.key.sub.is_none() && m.config.handlers[usize::from(run.key.handler)].on == On::Delete
        {
            if let Err(at) = self.deleted_by.binary_search(&run.key.handler) {
                self.deleted_by.insert(at, run.key.handler);
            }
        }
    }

    /// A parent's run declared `plan`: its sub-handlers are owed a run
    /// after it, but for those of the same plan on the same digest (a
    /// parent invoked again with nothing changed, as kopf does).
    fn planned(&mut self, m: &LifecycleModel, run: Run, plan: &[Key]) {
        let digest = m.digest(run.key, run.essence);
        let before = self.plans.iter().position(|(k, ..)| *k == run.key);
        let (same_digest, old) = match before {
            Some(i) => {
                let (_, d, old) = self.plans.remove(i);
                (d == digest, old)
            }
            None => (false, Vec::new()),
        };
        self.owed
            .retain(|k| k.handler != run.key.handler || (same_digest && plan.contains(k)));
        for sub in plan {
            let unchanged = same_digest && old.contains(sub);
            if !unchanged && !self.owed.contains(sub) {
                self.owed.push(*sub);
            }
        }
        self.owed.sort();
        if !plan.is_empty() {
            self.plans.push((run.key, digest, plan.to_vec()));
            self.plans.sort();
        }
    }

    /// `run` returned after running on `digest`, succeeding or not. A
    /// parent's run starts its sub-handlers' count afresh: they run as
    /// part of it.
    pub fn returned(&mut self, run: Run, digest: Digest, success: bool) {
        let again = self
            .returns
            .returned(run.key, run.id.incarnation, digest, success, ());
        self.rerun |= again.is_some();
    }

    /// A user's edit made the essence `after`.
    pub fn edited(&mut self, after: Essence) {
        if self.history.contains(&after) {
            self.returned_to_earlier = true;
        } else {
            self.history.push(after);
            self.history.sort();
        }
    }

    /// Every delete handler returned for good.
    pub fn deleted_by_all(&self, m: &LifecycleModel) -> bool {
        m.config
            .handlers
            .iter()
            .enumerate()
            .filter(|(_, spec)| spec.on == On::Delete)
            .all(|(h, _)| self.deleted_by.contains(&(h as u8)))
    }

    /// The operator start `incarnation` crashed or died: the outcomes it
    /// had not written are lost (another replica's are not).
    pub fn crashed(&mut self, incarnation: u32) {
        self.pending.retain(|p| p.run.id.incarnation != incarnation);
    }

    /// A claim of epoch `epoch` by `holder` is set on an object whose epoch
    /// is `current`: a renewal keeps the epoch of its taker, a take goes
    /// above it.
    pub fn fence(&mut self, current: u32, epoch: u32, holder: u32) {
        let renewal = epoch == current && self.taker == Some(holder);
        self.fence_broken |= epoch < current || (epoch == current && !renewal);
        self.taker = Some(holder);
    }

    /// `patch` is applied to the object at version `at`, making version
    /// `made`: it overwrites unseen progress if a record it sets changed
    /// after the version it was computed from.
    pub fn overwrite_check(&mut self, patch: &Patch<super::Small>, at: u32, made: u32) {
        if patch.expect != at {
            let expect = patch.expect;
            self.overwrote |= patch.records.iter().any(|(key, _)| {
                self.touched
                    .iter()
                    .any(|(k, changed)| k == key && *changed > expect)
            });
        }
        for (key, _) in &patch.records {
            match self.touched.iter_mut().find(|(k, _)| k == key) {
                Some(entry) => entry.1 = made,
                None => self.touched.push((*key, made)),
            }
        }
        self.touched.sort();
    }

    /// Calls `f` on every resourceVersion the ghost holds.
    pub fn visit_versions(&mut self, f: &mut impl FnMut(&mut u32)) {
        for (_, version) in &mut self.touched {
            f(version);
        }
        for version in self.foreign_at.iter_mut().chain(self.refused.iter_mut()) {
            f(version);
        }
    }
}

/// Whether `key` is a create handler (not one of its sub-handlers).
fn creates(m: &LifecycleModel, key: Key) -> bool {
    key.sub.is_none() && m.config.handlers[usize::from(key.handler)].on == On::Create
}
