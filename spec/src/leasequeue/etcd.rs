//! etcd as the protocol sees it: endpoint and member keys bound to leases,
//! revisions, a change log for watches, compaction, and leases that run down
//! only while a leader exists.

use serde::{Deserialize, Serialize};

/// The smallest lease TTL the model grants, in ticks: a tick is the
/// keepalive period, and etcd-client keeps a lease alive every third of its
/// TTL. A shorter requested TTL is raised to it, as etcd raises one below
/// its own floor (1.5 × the election timeout).
pub const MIN_TTL: u8 = 3;

/// The endpoint key of one action's queue: `queue/<action>/leader`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct Endpoint {
    /// The action.
    pub action: u8,
    /// The scheduler that owns the queue (the key's value).
    pub owner: u8,
    /// The owner's incarnation that created it (the key's value).
    pub incarnation: u8,
    /// The lease the key is bound to.
    pub lease: u8,
    /// The revision that created the key.
    pub create_rev: u32,
}

/// The member key of one scheduler: `scheduler/<id>`, holding the address it
/// advertises (in the model, its id) and its incarnation.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct Member {
    /// The scheduler.
    pub scheduler: u8,
    /// The incarnation that put the key.
    pub incarnation: u8,
    /// The lease the key is bound to.
    pub lease: u8,
}

/// A key the roles watch.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum Key {
    /// The endpoint key of this action.
    Endpoint(u8),
    /// The member key of this scheduler.
    Member(u8),
}

/// An endpoint key holding a value no steadfast node wrote (another
/// system's, or one edited by hand): no owner can be read from it, and it
/// is bound to no lease, so only a delete removes it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct Foreign {
    /// The action.
    pub action: u8,
    /// The revision that created the key.
    pub create_rev: u32,
}

/// What a watcher reads from a key's new value.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum Value {
    /// An endpoint's owner; a member's incarnation (its address being its
    /// id, which the key names).
    Readable(u8),
    /// Nothing: no steadfast node wrote it ([`Foreign`]).
    Unreadable,
}

/// A granted lease.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct Lease {
    /// Its id.
    pub id: u8,
    /// Ticks left before it expires, unless kept alive.
    pub remaining: u8,
}

/// One change of a key, as a watch reports it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct Change {
    /// The revision of the change.
    pub rev: u32,
    /// The key that changed.
    pub key: Key,
    /// The new value as a watcher reads it, or `None` for a deletion.
    pub value: Option<Value>,
}

/// Why a create-if-absent did not create the key.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum Refused {
    /// The key exists.
    Exists(Endpoint),
    /// The lease named in the request does not exist (it expired).
    LeaseNotFound,
    /// The key exists, and holds a value no steadfast node wrote.
    Unreadable,
}

/// The etcd cluster.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct Etcd {
    /// The current revision.
    pub rev: u32,
    /// The endpoint keys a steadfast node wrote, sorted by action.
    pub keys: Vec<Endpoint>,
    /// The endpoint keys holding a value no steadfast node wrote, sorted
    /// by action: never an action of [`Etcd::keys`].
    #[serde(default)]
    pub foreign: Vec<Foreign>,
    /// The endpoint keys etcd refuses a scheduler every request on, as
    /// (scheduler, action), sorted: its user lacks the permission. Never a
    /// key that scheduler holds.
    #[serde(default)]
    pub denied: Vec<(u8, u8)>,
    /// The member keys, sorted by scheduler.
    pub members: Vec<Member>,
    /// The live leases, sorted by id.
    pub leases: Vec<Lease>,
    /// The changes after `compacted`, oldest first.
    pub log: Vec<Change>,
    /// Revisions up to this one are compacted away.
    pub compacted: u32,
    /// Whether a leader exists; leases run down only then.
    pub leader: bool,
    /// The raft term: how many leaders were elected after the first.
    pub term: u8,
    /// The TTL every lease is granted with (at least [`MIN_TTL`]).
    pub ttl: u8,
    /// The id the next lease gets.
    pub next_lease: u8,
}

impl Etcd {
    /// An empty cluster granting leases of `ttl` ticks, raised to
    /// [`MIN_TTL`].
    pub fn new(ttl: u8) -> Self {
        Etcd {
            rev: 1,
            keys: Vec::new(),
            foreign: Vec::new(),
            denied: Vec::new(),
            members: Vec::new(),
            leases: Vec::new(),
            log: Vec::new(),
            compacted: 0,
            leader: true,
            term: 0,
            ttl: ttl.max(MIN_TTL),
            next_lease: 1,
        }
    }

    /// The endpoint key of `action`, if it has one a steadfast node wrote.
    pub fn get(&self, action: u8) -> Option<Endpoint> {
        self.keys.iter().copied().find(|k| k.action == action)
    }

    /// Whether `action`'s endpoint key holds a value no steadfast node
    /// wrote.
    pub fn is_foreign(&self, action: u8) -> bool {
        self.foreign.iter().any(|f| f.action == action)
    }

    /// Another system puts a value of its own under `action`'s endpoint
    /// key, which no scheduler holds (the model leaves out a value put
    /// over a held key: its holder would not notice).
    pub fn put_foreign(&mut self, action: u8) {
        assert!(self.get(action).is_none(), "a held key is not overwritten");
        self.rev += 1;
        self.foreign.retain(|f| f.action != action);
        let at = self.foreign.partition_point(|f| f.action < action);
        let create_rev = self.rev;
        self.foreign.insert(at, Foreign { action, create_rev });
        self.record(Key::Endpoint(action), Some(Value::Unreadable));
    }

    /// Whether etcd refuses `scheduler` every request on `action`'s
    /// endpoint key.
    pub fn is_denied(&self, scheduler: u8, action: u8) -> bool {
        self.denied.binary_search(&(scheduler, action)).is_ok()
    }

    /// An operator takes from `scheduler`'s user the permission on
    /// `action`'s endpoint key, which it does not hold (permissions are
    /// not in the key space: no revision, no watch event).
    pub fn deny(&mut self, scheduler: u8, action: u8) {
        assert!(
            self.get(action).is_none_or(|k| k.owner != scheduler),
            "a held key is not denied to its holder"
        );
        if let Err(at) = self.denied.binary_search(&(scheduler, action)) {
            self.denied.insert(at, (scheduler, action));
        }
    }

    /// An operator grants `scheduler`'s user the permission on `action`'s
    /// endpoint key.
    pub fn allow(&mut self, scheduler: u8, action: u8) {
        self.denied.retain(|d| *d != (scheduler, action));
    }

    /// Whether lease `id` is live.
    pub fn is_live(&self, id: u8) -> bool {
        self.leases.iter().any(|l| l.id == id)
    }

    /// Grants a lease of the cluster's TTL.
    pub fn grant(&mut self) -> u8 {
        let id = self.next_lease;
        self.next_lease += 1;
        self.leases.push(Lease {
            id,
            remaining: self.ttl,
        });
        id
    }

    /// Renews lease `id` and returns its TTL: 0 when the lease does not
    /// exist (etcd answers so, without an error).
    pub fn keep_alive(&mut self, id: u8) -> u8 {
        let ttl = self.ttl;
        match self.leases.iter_mut().find(|l| l.id == id) {
            Some(lease) => {
                lease.remaining = ttl;
                ttl
            }
            None => 0,
        }
    }

    /// Creates `action`'s key for incarnation `incarnation` of `owner`
    /// under `lease`, if it is absent.
    pub fn create_if_absent(
        &mut self,
        action: u8,
        (owner, incarnation): (u8, u8),
        lease: u8,
    ) -> Result<Endpoint, Refused> {
        if let Some(key) = self.get(action) {
            return Err(Refused::Exists(key));
        }
        if self.is_foreign(action) {
            return Err(Refused::Unreadable);
        }
        if !self.is_live(lease) {
            return Err(Refused::LeaseNotFound);
        }
        self.rev += 1;
        let key = Endpoint {
            action,
            owner,
            incarnation,
            lease,
            create_rev: self.rev,
        };
        let at = self.keys.partition_point(|k| k.action < action);
        self.keys.insert(at, key);
        self.record(Key::Endpoint(action), Some(Value::Readable(owner)));
        Ok(key)
    }

    /// Deletes `action`'s key, whatever it holds; with `created`, only if
    /// that revision created it. Returns whether a key was deleted.
    pub fn delete(&mut self, action: u8, created: Option<u32>) -> bool {
        let foreign = self.foreign.iter().find(|f| f.action == action);
        let Some(create_rev) = self
            .get(action)
            .map(|k| k.create_rev)
            .or(foreign.map(|f| f.create_rev))
        else {
            return false;
        };
        if created.is_some_and(|rev| create_rev != rev) {
            return false;
        }
        self.keys.retain(|k| k.action != action);
        self.foreign.retain(|f| f.action != action);
        self.rev += 1;
        self.record(Key::Endpoint(action), None);
        true
    }

    /// Puts `scheduler`'s member key, naming `incarnation`, under `lease`,
    /// replacing any it had (bound to another lease, the key now goes with
    /// this one). Returns whether the lease exists: etcd refuses a put
    /// under a lease it does not have.
    pub fn register(&mut self, (scheduler, incarnation): (u8, u8), lease: u8) -> bool {
        if !self.is_live(lease) {
            return false;
        }
        self.rev += 1;
        self.members.retain(|m| m.scheduler != scheduler);
        let at = self.members.partition_point(|m| m.scheduler < scheduler);
        self.members.insert(
            at,
            Member {
                scheduler,
                incarnation,
                lease,
            },
        );
        self.record(Key::Member(scheduler), Some(Value::Readable(incarnation)));
        true
    }

    /// Whether `scheduler`'s member key exists.
    pub fn is_member(&self, scheduler: u8) -> bool {
        self.incarnation_of(scheduler).is_some()
    }

    /// The run `scheduler`'s member key names, if it has one.
    pub fn incarnation_of(&self, scheduler: u8) -> Option<u8> {
        let member = self.members.iter().find(|m| m.scheduler == scheduler)?;
        Some(member.incarnation)
    }

    /// Revokes lease `id`, deleting every key bound to it in one revision,
    /// as etcd does: a watch sees one response with a DELETE event per key,
    /// all at that revision (endpoint keys first, then the member key).
    pub fn revoke(&mut self, id: u8) {
        self.leases.retain(|l| l.id != id);
        let endpoints = self.keys.iter().filter(|k| k.lease == id);
        let members = self.members.iter().filter(|m| m.lease == id);
        let bound: Vec<Key> = endpoints
            .map(|k| Key::Endpoint(k.action))
            .chain(members.map(|m| Key::Member(m.scheduler)))
            .collect();
        if bound.is_empty() {
            return;
        }
        self.keys.retain(|k| k.lease != id);
        self.members.retain(|m| m.lease != id);
        self.rev += 1;
        for key in bound {
            self.record(key, None);
        }
    }

    /// One tick of time: while a leader exists, every lease runs down, and
    /// those that run out are revoked.
    pub fn tick(&mut self) {
        if !self.leader {
            return;
        }
        for lease in &mut self.leases {
            lease.remaining = lease.remaining.saturating_sub(1);
        }
        let expired: Vec<u8> = self
            .leases
            .iter()
            .filter(|l| l.remaining == 0)
            .map(|l| l.id)
            .collect();
        for id in expired {
            self.revoke(id);
        }
    }

    /// A new leader takes over: every lease gets its full TTL again
    /// (etcd's `Promote`).
    pub fn promote(&mut self) {
        self.leader = true;
        self.term += 1;
        let ttl = self.ttl;
        for lease in &mut self.leases {
            lease.remaining = ttl;
        }
    }

    /// Compacts away every revision so far.
    pub fn compact(&mut self) {
        self.compacted = self.rev;
        self.log.clear();
    }

    /// The next watch response for a watch positioned at `from` (the next
    /// revision it wants), oldest change first; empty when there is none
    /// yet. A watcher in step with etcd gets one revision a response: every
    /// change of the first revision at or after `from` that has any.
    /// One catching up (`batched`) gets every change from `from` on in one
    /// response, as etcd sends an unsynced watcher what it missed.
    /// `Err(Compacted)` when `from` is compacted away.
    pub fn next_response(&self, from: u32, batched: bool) -> Result<Vec<Change>, Compacted> {
        if from <= self.compacted {
            return Err(Compacted);
        }
        let Some(first) = self.log.iter().find(|c| c.rev >= from) else {
            return Ok(Vec::new());
        };
        Ok(self
            .log
            .iter()
            .copied()
            .filter(|c| c.rev == first.rev || (batched && c.rev > first.rev))
            .collect())
    }

    fn record(&mut self, key: Key, value: Option<Value>) {
        self.log.push(Change {
            rev: self.rev,
            key,
            value,
        });
    }
}

/// A watch asked for revisions that compaction removed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Compacted;
