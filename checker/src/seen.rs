//! The set of visited states: fingerprints mapped to dense state numbers,
//! shared by the exploring threads.

mod sorted_run;
mod unnumbered;

use std::hash::Hash;
use std::io;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Mutex, TryLockError};

use crate::memory::filled;
use crate::spill::SpillDir;
use sorted_run::{Entry, SortedRun};
pub(crate) use unnumbered::Unnumbered;

/// A 64-bit digest of a state. Two distinct states with one fingerprint are
/// taken as one, as in stateright; at 64 bits that is vanishingly rare for
/// the graphs this checker can hold.
pub(crate) type Fingerprint = u64;

/// The fixed-seed hasher behind [`fingerprint`], so digests are stable across
/// runs and threads.
#[derive(Clone)]
pub(crate) struct Fingerprinter(ahash::RandomState);

impl Fingerprinter {
    pub(crate) fn new() -> Self {
        Fingerprinter(ahash::RandomState::with_seeds(
            0x243f_6a88_85a3_08d3,
            0x1319_8a2e_0370_7344,
            0xa409_3822_299f_31d0,
            0x082e_fa98_ec4e_6c89,
        ))
    }

    pub(crate) fn fingerprint<T: Hash>(&self, value: &T) -> Fingerprint {
        self.0.hash_one(value)
    }
}

/// One shard of a seen set: an open-addressing table with linear probing
/// whose slots hold a fingerprint (and, in [`Seen`], its state number side
/// by side, so that a lookup touches one cache line, not a control byte and
/// then a bucket); and, once the shard has spilled, the entries it sent to
/// disk.
///
/// A fingerprint is in the table or on disk, never in both: it is looked
/// for on disk before the table takes it, under the shard's lock, and
/// only entries that [stay](Slot::stays) nowhere else go to disk.
struct Shard<S> {
    slots: Vec<S>,
    len: usize,
    disk: Option<SortedRun>,
    /// Scratch space for reading a block of `disk`.
    block: Vec<u8>,
}

impl<S> Default for Shard<S> {
    fn default() -> Self {
        Shard {
            slots: Vec::new(),
            len: 0,
            disk: None,
            block: Vec::new(),
        }
    }
}

/// What a shard's table keeps of a fingerprint.
trait Slot: Copy {
    /// The empty slot.
    const EMPTY: Self;

    /// Its fingerprint; 0 in the empty slot (a state whose fingerprint is
    /// 0 is stored as 1, see [`key_of`]).
    fn fp(&self) -> Fingerprint;

    /// Whether it stays in the table when the shard spills: a claim whose
    /// number is still to be written in.
    fn stays(&self) -> bool;

    /// What the shard's run on disk keeps of it.
    fn entry(&self) -> Entry;
}

/// A fingerprint and its state number, in 12 bytes: the fingerprint is kept
/// as two halves, so that a slot is aligned to 4 bytes and packs without
/// padding. (On leasequeue `bench`, 16-byte slots in tables that doubled
/// came to 42 bytes a state, by the tables' sizes.)
#[derive(Clone, Copy)]
struct Numbered {
    /// The fingerprint's low and high halves.
    fp: [u32; 2],
    /// The state number, or [`REFUSED`], or [`claimed`] by a batch.
    id: u32,
}

impl Numbered {
    fn new(fp: Fingerprint, id: u32) -> Self {
        Numbered {
            fp: [fp as u32, (fp >> 32) as u32],
            id,
        }
    }
}

impl Slot for Numbered {
    const EMPTY: Self = Numbered { fp: [0, 0], id: 0 };

    fn fp(&self) -> Fingerprint {
        u64::from(self.fp[0]) | u64::from(self.fp[1]) << 32
    }

    fn stays(&self) -> bool {
        claimer(self.id).is_some()
    }

    fn entry(&self) -> Entry {
        (self.fp(), self.id)
    }
}

/// A bare fingerprint, in 8 bytes: what [`Unnumbered`] keeps.
impl Slot for Fingerprint {
    const EMPTY: Self = 0;

    fn fp(&self) -> Fingerprint {
        *self
    }

    fn stays(&self) -> bool {
        false
    }

    fn entry(&self) -> Entry {
        (*self, 0)
    }
}
/// How many low bits of a batch's turn a claimed slot keeps: turns of
/// batches in flight at once lie closer together than twice the number of
/// threads, far less than half of 2^16 apart.
const TURN_BITS: u32 = 16;

/// The first of the numbers that mark a fingerprint a batch has claimed and
/// not yet numbered: [`claimed`]`(turn)` is `PENDING` plus the low
/// [`TURN_BITS`] bits of the claiming batch's turn (0 for a batch without a
/// turn).
const PENDING: u32 = u32::MAX - ((1 << TURN_BITS) - 1);

/// The number of a fingerprint that came after every number up to the limit
/// was taken.
const REFUSED: u32 = PENDING - 1;

/// The number that marks a fingerprint claimed by the batch with `turn`.
fn claimed(turn: u32) -> u32 {
    PENDING | (turn & ((1 << TURN_BITS) - 1))
}

/// The turn (its low bits) of the batch that claimed a slot numbered `id`,
/// if one did.
fn claimer(id: u32) -> Option<u32> {
    id.checked_sub(PENDING)
}

impl<S: Slot> Shard<S> {
    /// Where `fp` would sit with no other entry in the way: the table's
    /// size need not be a power of two, so the low half of the fingerprint
    /// is scaled to it rather than masked.
    fn home(&self, fp: Fingerprint) -> usize {
        (((fp & 0xffff_ffff) * self.slots.len() as u64) >> 32) as usize
    }

    /// The slot holding `fp`, or the empty slot where it belongs.
    fn probe(&self, fp: Fingerprint) -> usize {
        let mut index = self.home(fp);
        loop {
            let key = self.slots[index].fp();
            if key == fp || key == 0 {
                return index;
            }
            index += 1;
            if index == self.slots.len() {
                index = 0;
            }
        }
    }

    /// What the shard's run on disk keeps of `fp` (in [`Seen`], its
    /// number), if it went there.
    fn on_disk(&mut self, fp: Fingerprint) -> Option<u32> {
        let disk = self.disk.as_ref()?;
        disk.get(fp, &mut self.block).unwrap_or_else(|error| {
            panic!("the seen set spilled to disk could not be read back: {error}")
        })
    }

    /// Sends every entry to disk, merged with those already there, and
    /// keeps in the table, emptied, only those that [stay](Slot::stays)
    /// (in [`Seen`], fingerprints batches have claimed and not numbered
    /// yet: their batches write the numbers in later); returns the bytes
    /// written. On an error the shard is as it was.
    fn spill(&mut self, dir: &SpillDir) -> io::Result<u64> {
        let (claims, mut going): (Vec<S>, Vec<S>) = self
            .slots
            .iter()
            .filter(|slot| slot.fp() != 0)
            .partition(|slot| slot.stays());
        if going.is_empty() {
            return Ok(0);
        }
        going.sort_unstable_by_key(S::fp);
        let entries: Vec<Entry> = going.iter().map(S::entry).collect();
        drop(going);
        let (run, written) = SortedRun::merge(self.disk.as_ref(), &entries, dir)?;
        self.disk = Some(run);
        // The table keeps its size: what it takes in from now on fills the
        // memory it holds before the process asks for more (memory given
        // back to the allocator would stay the process's all the same).
        self.slots.fill(S::EMPTY);
        self.len = 0;
        for slot in claims {
            let index = self.probe(slot.fp());
            self.slots[index] = slot;
            self.len += 1;
        }
        Ok(written)
    }

    /// Makes room for `more` entries, growing the table by half (from 1,024
    /// slots) as often as it takes to keep the load at most 3/4. Growing by
    /// half rather than doubling keeps the load above 1/2, where doubling
    /// let it fall to 3/8: the shards fill evenly, so they all grow at once.
    fn reserve(&mut self, more: usize) {
        while (self.len + more) * 4 > self.slots.len() * 3 {
            let size = (self.slots.len() / 2 * 3).max(1024);
            let old = std::mem::replace(&mut self.slots, filled(size, S::EMPTY));
            for slot in old.into_iter().filter(|slot| slot.fp() != 0) {
                let index = self.probe(slot.fp());
                self.slots[index] = slot;
            }
        }
    }
}

impl Shard<Numbered> {
    /// The number `fp` has in the table or on disk, if the shard holds it.
    fn number(&mut self, fp: Fingerprint) -> Option<u32> {
        if !self.slots.is_empty() {
            let slot = self.slots[self.probe(fp)];
            if slot.fp() == fp {
                return Some(slot.id);
            }
        }
        self.on_disk(fp)
    }
}

/// A shard on cache lines of its own, so that threads locking neighbouring
/// shards do not take the same line from each other.
#[repr(align(128))]
struct PaddedShard<S>(Mutex<Shard<S>>);

/// Shards are picked by bits 40..46 of a fingerprint, which the shard's own
/// table does not use to place it (it uses the low bits).
const SHARD_BITS: u32 = 6;
const SHARD_SHIFT: u32 = 40;
const SHARD_MASK: usize = (1 << SHARD_BITS) - 1;

/// The shards of a seen set, picked by [`shard_of`], and what is done to
/// all of them.
struct Shards<S> {
    shards: Vec<PaddedShard<S>>,
    /// Held while the shards go to disk, by one thread at a time.
    spilling: Mutex<()>,
}

impl<S: Slot> Shards<S> {
    fn new() -> Self {
        Shards {
            shards: (0..1 << SHARD_BITS)
                .map(|_| PaddedShard(Mutex::new(Shard::default())))
                .collect(),
            spilling: Mutex::new(()),
        }
    }

    /// What the tables hold, and the room spilling left in them.
    fn tables(&self) -> Tables {
        let slot = std::mem::size_of::<S>();
        (0..self.shards.len())
            .map(|k| {
                let shard = self.lock(k);
                Tables {
                    held: (shard.len * slot) as u64,
                    room: ((shard.slots.len() / 2).saturating_sub(shard.len) * slot) as u64,
                }
            })
            .fold(Tables::default(), |sum, shard| Tables {
                held: sum.held + shard.held,
                room: sum.room + shard.room,
            })
    }

    /// Sends the entries of every shard to disk, a shard at a time, so
    /// that threads inserting meanwhile wait only for the shard being
    /// written; lookups then read the disk for what the tables do not
    /// hold. Returns the bytes written; 0 if another thread is at it. A
    /// shard whose write fails keeps its table, and the error is returned.
    fn spill(&self, dir: &SpillDir) -> io::Result<u64> {
        let Ok(_one_at_a_time) = self.spilling.try_lock() else {
            return Ok(0);
        };
        let mut written = 0;
        for k in 0..self.shards.len() {
            written += self.lock(k).spill(dir)?;
        }
        Ok(written)
    }

    /// Calls `visit` with each group of `by_shard` that is `wanted` and its
    /// shard, locked. Shards another thread holds are left for last, so
    /// that this thread works on while they are busy.
    fn visit(
        &self,
        fps: &[Fingerprint],
        by_shard: &ByShard,
        mut wanted: impl FnMut(&[u32]) -> bool,
        mut visit: impl FnMut(&mut Shard<S>, &[u32]),
    ) {
        let mut busy = [0u8; 1 << SHARD_BITS];
        let mut busy_count = 0;
        for (g, group) in by_shard.groups() {
            if !wanted(group) {
                continue;
            }
            match self.shards[shard_of(fps[group[0] as usize])].0.try_lock() {
                Ok(mut shard) => visit(&mut shard, group),
                Err(TryLockError::Poisoned(poisoned)) => visit(&mut poisoned.into_inner(), group),
                Err(TryLockError::WouldBlock) => {
                    busy[busy_count] = g as u8;
                    busy_count += 1;
                }
            }
        }
        for &g in &busy[..busy_count] {
            let group = by_shard.group(usize::from(g));
            visit(&mut self.lock(shard_of(fps[group[0] as usize])), group);
        }
    }

    /// Calls `look(shard, k, fp, index)` for each first occurrence `k` of
    /// the batch, `fp` as the shards store `fps[k]` and `index` its slot or
    /// the empty one where it belongs, in its shard, locked, with room made
    /// for every fingerprint of the group. Each group's home slots are
    /// touched before any is probed, so that the cache misses overlap
    /// instead of queueing behind each other.
    fn look_up(
        &self,
        fps: &[Fingerprint],
        by_shard: &ByShard,
        mut look: impl FnMut(&mut Shard<S>, usize, Fingerprint, usize),
    ) {
        self.visit(
            fps,
            by_shard,
            |_| true,
            |shard, group| {
                shard.reserve(group.len());
                for &k in group {
                    std::hint::black_box(shard.slots[shard.home(key_of(fps[k as usize]))]);
                }
                for &k in group {
                    let fp = key_of(fps[k as usize]);
                    let index = shard.probe(fp);
                    look(shard, k as usize, fp, index);
                }
            },
        );
    }

    fn lock(&self, shard: usize) -> std::sync::MutexGuard<'_, Shard<S>> {
        // A poisoned shard only means another thread panicked mid-insert of
        // an unrelated entry; the table itself is still consistent.
        self.shards[shard]
            .0
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }
}

/// The state numbers a seen set hands out: densely from 0, a run at a time,
/// up to a limit.
struct Numbers {
    next: AtomicU64,
    limit: u32,
}

impl Numbers {
    /// None handed out yet; at most `limit` will be (and never more than
    /// `u32::MAX - 1`: the rest are markers).
    fn new(limit: u32) -> Self {
        Numbers {
            next: AtomicU64::new(0),
            limit: limit.min(REFUSED),
        }
    }

    /// How many numbers have been handed out.
    fn len(&self) -> u32 {
        self.next.load(Ordering::Relaxed).min(u64::from(self.limit)) as u32
    }

    /// Takes a run of numbers for the fingerprints the batch claimed, and
    /// writes them into `out` in batch order: [`Insert::New`], or
    /// [`Insert::Full`] for those past the limit.
    fn hand_out(&self, batch: &Batch, count: u64, out: &mut [Insert]) {
        let mut next = if count == 0 {
            0
        } else {
            self.next.fetch_add(count, Ordering::Relaxed)
        };
        for &k in &batch.first_occurrences {
            if batch.lookups[k as usize] == Lookup::Claimed {
                out[k as usize] = match u32::try_from(next) {
                    Ok(id) if id < self.limit => Insert::New(id),
                    _ => Insert::Full,
                };
                next += 1;
            }
        }
    }
}

/// Fingerprints to state numbers, numbered densely from 0.
///
/// Each batch's new fingerprints get consecutive numbers in batch order, and
/// no lock is held across shards: a batch claims its new fingerprints in
/// their shards (taking over those that a batch later in turn claimed),
/// waits for its turn, takes a run of numbers for all of them at once, and
/// then writes the numbers in. A batch that meets a fingerprint another
/// batch has claimed waits for its number, which is a few shard visits
/// away, unless it did not ask for numbers of known states.
pub(crate) struct Seen {
    shards: Shards<Numbered>,
    numbers: Numbers,
    /// The turn of the next batch to take its numbers.
    turn: AtomicU64,
    /// Set when an inserting thread panicked: its turn may never come.
    abandoned: AtomicBool,
    /// Per turn (modulo the ring's length), the fingerprints that batches
    /// with earlier turns took over from the batch with that turn. The turns
    /// of batches in flight at once lie closer together than the number of
    /// threads, so a ring of at least twice that many lists never mixes two
    /// turns.
    stolen: Vec<Mutex<Vec<Fingerprint>>>,
}

/// The memory of [`Seen`]'s tables, in bytes.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct Tables {
    /// Taken by the entries they hold.
    pub(crate) held: u64,
    /// Free in tables less than half full: a table grows by half when it
    /// is three quarters full, so it is at least half full unless its
    /// entries went to disk, and this much more can come in before the
    /// tables hold as much as they did.
    pub(crate) room: u64,
}

/// How [`Seen::insert_all`] inserts a batch.
pub(crate) struct Insertion {
    /// The shard to visit first: threads that start apart stay apart
    /// instead of contending for the same locks in step.
    pub(crate) first_shard: usize,
    /// Whether the numbers of states already known are wanted. Without,
    /// a state that another batch is numbering right now comes back as
    /// [`Insert::Seen`] instead of waiting for its number.
    pub(crate) known_numbers: bool,
    /// The batch's place in numbering order, if any: the batch with turn
    /// `t` takes its numbers after those with turns below `t` (from
    /// [`Seen::next_turn`] on), whichever thread is quicker, and a state
    /// that batches reach at once goes to the one with the earliest turn.
    /// Batches in turn therefore number their states exactly as one thread
    /// inserting them in that order would. The liveness search runs half
    /// again as fast on that order as on the order in which threads happen
    /// to finish, and state numbers, hence counterexamples, do not depend
    /// on the thread count.
    pub(crate) turn: Option<u64>,
}

/// The unwinding of a thread that gave up waiting for the turn of a thread
/// that panicked.
pub(crate) struct Abandoned;

/// What [`Seen::insert`] found.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Insert {
    /// The state was already known under this number.
    Known(u32),
    /// The state was already known, and its number was not asked for (the
    /// batch that found it first is numbering it right now).
    Seen,
    /// The state is new and now has this number.
    New(u32),
    /// The state is new, but every number up to the limit is taken.
    Full,
}

impl Seen {
    /// An empty set that hands out at most `limit` numbers (and never more
    /// than `u32::MAX - 1`), to batches inserted by up to `threads` threads
    /// at once.
    pub(crate) fn new(limit: u32, threads: usize) -> Self {
        Seen {
            shards: Shards::new(),
            numbers: Numbers::new(limit),
            turn: AtomicU64::new(0),
            abandoned: AtomicBool::new(false),
            stolen: (0..(threads.max(1) * 2).next_power_of_two())
                .map(|_| Mutex::new(Vec::new()))
                .collect(),
        }
    }

    /// How many numbers have been handed out.
    pub(crate) fn len(&self) -> u32 {
        self.numbers.len()
    }

    /// Inserts one fingerprint.
    #[cfg(test)]
    fn insert(&self, fp: Fingerprint) -> Insert {
        let mut out = Vec::new();
        let how = Insertion {
            first_shard: 0,
            known_numbers: true,
            turn: None,
        };
        self.insert_all(&[fp], &how, &mut out, &mut Batch::default());
        out[0]
    }

    /// The turn of the next batch to take its numbers: batches given
    /// consecutive turns from here on number their states in that order.
    pub(crate) fn next_turn(&self) -> u64 {
        self.turn.load(Ordering::Acquire)
    }

    /// Tells the batches waiting for their turn that an inserting thread
    /// panicked, so that they give up instead of waiting for ever.
    pub(crate) fn abandon(&self) {
        self.abandoned.store(true, Ordering::Release);
    }

    /// Waits until every batch before `turn` has taken its numbers. The
    /// batches before are held by threads that wait for nothing later, so
    /// the wait ends, unless one of them panicked: then this thread unwinds
    /// too, with [`Abandoned`].
    fn wait_for_turn(&self, turn: u64) {
        let mut spins = 0u32;
        while self.turn.load(Ordering::Acquire) != turn {
            if self.abandoned.load(Ordering::Acquire) {
                std::panic::resume_unwind(Box::new(Abandoned));
            }
            back_off(spins);
            spins += 1;
        }
    }

    /// Inserts a batch of fingerprints `how` says, `out[k]` telling what
    /// became of `fps[k]`; `batch` is scratch space.
    ///
    /// A fingerprint that occurs more than once in the batch is looked up
    /// once: its first occurrence may be new, the later ones are known. (In a
    /// model whose actions commute, most of a chunk's successors are reached
    /// more than once from within the chunk.)
    ///
    /// Looking fingerprints up is bound by cache misses. So the batch visits
    /// the shards one at a time, locking each once and touching the slots it
    /// wants before probing them, so that the misses overlap instead of
    /// queueing behind each other.
    ///
    /// The new fingerprints are numbered consecutively in batch order, so a
    /// batch's new states are numbered in the order they were discovered:
    /// related states stay close in memory, which the liveness search
    /// depends on.
    pub(crate) fn insert_all(
        &self,
        fps: &[Fingerprint],
        how: &Insertion,
        out: &mut Vec<Insert>,
        batch: &mut Batch,
    ) {
        batch.deduplicate(fps);
        batch.group_by_shard(fps, how.first_shard);

        // Claim every fingerprint not seen before.
        batch.lookups.clear();
        batch.lookups.resize(fps.len(), Lookup::Claimed);
        let mut count = 0;
        let my_turn = how.turn.map_or(0, |turn| turn as u32);
        let lookups = &mut batch.lookups;
        self.shards
            .look_up(fps, &batch.by_shard, |shard, k, fp, index| {
                let on_disk = if shard.slots[index].fp() != fp {
                    shard.on_disk(fp)
                } else {
                    None
                };
                let slot = &mut shard.slots[index];
                let theirs = claimer(slot.id);
                lookups[k] = if let Some(id) = on_disk {
                    Lookup::of(id)
                } else if slot.fp() != fp {
                    *slot = Numbered::new(fp, claimed(my_turn));
                    shard.len += 1;
                    count += 1;
                    Lookup::Claimed
                } else if let Some(turn) =
                    theirs.filter(|&t| how.turn.is_some() && later(t, my_turn))
                {
                    // The batch that claimed it comes later in turn:
                    // the state is this batch's, as with one thread.
                    self.stolen_from(turn).push(fp);
                    slot.id = claimed(my_turn);
                    count += 1;
                    Lookup::Claimed
                } else {
                    Lookup::of(slot.id)
                };
            });

        // Number them, in batch order, and write the numbers in. Every batch
        // before this one has numbered its states, so none takes any more
        // from this one.
        if let Some(turn) = how.turn {
            self.wait_for_turn(turn);
            for fp in std::mem::take(&mut *self.stolen_from(turn as u32)) {
                let k = batch.index_of(fps, fp);
                batch.lookups[k] = Lookup::Elsewhere;
                count -= 1;
            }
        }
        out.clear();
        out.resize(fps.len(), Insert::Full);
        self.numbers.hand_out(batch, count, out);
        if let Some(turn) = how.turn {
            self.turn.store(turn + 1, Ordering::Release);
        }
        let lookups = &batch.lookups;
        let mine = |k: &&u32| lookups[**k as usize] == Lookup::Claimed;
        self.shards.visit(
            fps,
            &batch.by_shard,
            |group| group.iter().any(|k| mine(&k)),
            |shard, group| {
                for &k in group.iter().filter(mine) {
                    let index = shard.probe(key_of(fps[k as usize]));
                    shard.slots[index].id = match out[k as usize] {
                        Insert::New(id) => id,
                        _ => REFUSED,
                    };
                }
            },
        );

        // Wait for the numbers of those other batches claimed, and pass
        // every number on to the later occurrences.
        for (k, &first) in batch.first.iter().enumerate() {
            out[k] = if first as usize != k {
                match out[first as usize] {
                    Insert::New(id) | Insert::Known(id) => Insert::Known(id),
                    Insert::Seen => Insert::Seen,
                    Insert::Full => Insert::Full,
                }
            } else {
                match batch.lookups[k] {
                    Lookup::Claimed => continue,
                    Lookup::Known(id) => Insert::Known(id),
                    Lookup::Refused => Insert::Full,
                    Lookup::Elsewhere if how.known_numbers => self.await_number(fps[k]),
                    Lookup::Elsewhere => Insert::Seen,
                }
            };
        }
    }

    /// The number another batch is giving `fp`, once it has given it.
    fn await_number(&self, fp: Fingerprint) -> Insert {
        let fp = key_of(fp);
        for spins in 0u32.. {
            // Numbered, it may have gone to disk since.
            match self.shards.lock(shard_of(fp)).number(fp).map(Lookup::of) {
                Some(Lookup::Known(id)) => return Insert::Known(id),
                Some(Lookup::Refused) => return Insert::Full,
                _ => {}
            }
            back_off(spins);
        }
        unreachable!("the other batch numbers what it claimed without waiting")
    }

    /// The fingerprints taken over from the batch with `turn`.
    fn stolen_from(&self, turn: u32) -> std::sync::MutexGuard<'_, Vec<Fingerprint>> {
        self.stolen[turn as usize % self.stolen.len()]
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }
}

/// The seen set of an exploration: [`Seen`] when the numbers of known
/// states are wanted (edges name them), else [`Unnumbered`], which keeps
/// two thirds of the bytes (a fingerprint without its number).
pub(crate) enum Visited {
    Numbered(Seen),
    Unnumbered(Unnumbered),
}

impl Visited {
    /// An empty set that hands out at most `limit` numbers, to batches
    /// inserted by up to `threads` threads at once; `numbered` when the
    /// numbers of known states are asked for.
    pub(crate) fn new(limit: u32, threads: usize, numbered: bool) -> Self {
        if numbered {
            Visited::Numbered(Seen::new(limit, threads))
        } else {
            Visited::Unnumbered(Unnumbered::new(limit))
        }
    }

    /// How many numbers have been handed out.
    pub(crate) fn len(&self) -> u32 {
        match self {
            Visited::Numbered(seen) => seen.len(),
            Visited::Unnumbered(set) => set.len(),
        }
    }

    /// What its tables hold, and the room spilling left in them.
    pub(crate) fn tables(&self) -> Tables {
        match self {
            Visited::Numbered(seen) => seen.shards.tables(),
            Visited::Unnumbered(set) => set.shards.tables(),
        }
    }

    /// Sends its tables' entries to disk, as [`Shards::spill`] says (in
    /// [`Seen`], claimed ones stay until numbered); returns the bytes
    /// written.
    pub(crate) fn spill(&self, dir: &SpillDir) -> io::Result<u64> {
        match self {
            Visited::Numbered(seen) => seen.shards.spill(dir),
            Visited::Unnumbered(set) => set.shards.spill(dir),
        }
    }

    /// The turn of the next batch to take its numbers (see
    /// [`Seen::next_turn`]); an unnumbered set keeps no turns.
    pub(crate) fn next_turn(&self) -> u64 {
        match self {
            Visited::Numbered(seen) => seen.next_turn(),
            Visited::Unnumbered(_) => 0,
        }
    }

    /// Tells the batches waiting for their turn that an inserting thread
    /// panicked (see [`Seen::abandon`]); none waits in an unnumbered set.
    pub(crate) fn abandon(&self) {
        if let Visited::Numbered(seen) = self {
            seen.abandon();
        }
    }

    /// Inserts a batch as [`Seen::insert_all`] does, or, unnumbered, as
    /// [`Unnumbered::insert_all`] does (in the order batches finish, known
    /// states [`Insert::Seen`]).
    pub(crate) fn insert_all(
        &self,
        fps: &[Fingerprint],
        how: &Insertion,
        out: &mut Vec<Insert>,
        batch: &mut Batch,
    ) {
        match self {
            Visited::Numbered(seen) => seen.insert_all(fps, how, out, batch),
            Visited::Unnumbered(set) => set.insert_all(fps, how.first_shard, out, batch),
        }
    }
}

/// What a batch found in a fingerprint's slot.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Lookup {
    Known(u32),
    /// Another batch came first and found no number left.
    Refused,
    /// Another batch has claimed it and is numbering it.
    Elsewhere,
    /// This batch has claimed it.
    Claimed,
}

impl Lookup {
    /// What a slot's number says of a fingerprint another batch inserted.
    fn of(id: u32) -> Lookup {
        match id {
            REFUSED => Lookup::Refused,
            id if claimer(id).is_some() => Lookup::Elsewhere,
            id => Lookup::Known(id),
        }
    }
}

/// Scratch space for [`Seen::insert_all`], kept from batch to batch.
pub(crate) struct Batch {
    /// Per fingerprint of the batch, the index of its first occurrence.
    first: Vec<u32>,
    /// The indices of first occurrences, in batch order.
    first_occurrences: Vec<u32>,
    /// The same, grouped by shard.
    by_shard: ByShard,
    /// Per first occurrence, what its lookup found.
    lookups: Vec<Lookup>,
    /// An open-addressing table of first occurrences (index + 1; 0: empty).
    table: Vec<u32>,
}

impl Default for Batch {
    fn default() -> Self {
        Batch {
            first: Vec::new(),
            first_occurrences: Vec::new(),
            by_shard: ByShard {
                order: Vec::new(),
                starts: [0; (1 << SHARD_BITS) + 1],
            },
            lookups: Vec::new(),
            table: Vec::new(),
        }
    }
}

impl Batch {
    /// Finds each fingerprint's first occurrence in `fps`.
    fn deduplicate(&mut self, fps: &[Fingerprint]) {
        let size = (fps.len() * 2).next_power_of_two().max(16);
        self.table.clear();
        self.table.resize(size, 0);
        self.first.clear();
        self.first_occurrences.clear();
        let mask = size - 1;
        // The shards place a fingerprint by its low bits; a batch is small,
        // so its high bits are as good, and spread independently.
        for (k, &fp) in fps.iter().enumerate() {
            let mut index = (fp >> 48) as usize & mask;
            let first = loop {
                match self.table[index] {
                    0 => {
                        self.table[index] = k as u32 + 1;
                        self.first_occurrences.push(k as u32);
                        break k as u32;
                    }
                    entry if fps[entry as usize - 1] == fp => break entry - 1,
                    _ => index = (index + 1) & mask,
                }
            };
            self.first.push(first);
        }
    }

    /// The index of the first occurrence of `fp`, one of `fps`, the batch
    /// [`Self::deduplicate`] last saw.
    fn index_of(&self, fps: &[Fingerprint], fp: Fingerprint) -> usize {
        let mask = self.table.len() - 1;
        let mut index = (fp >> 48) as usize & mask;
        loop {
            let entry = self.table[index] as usize;
            if key_of(fps[entry - 1]) == fp {
                return entry - 1;
            }
            index = (index + 1) & mask;
        }
    }

    /// Groups the first occurrences by shard (keeping batch order within a
    /// group), the shards in order from `first_shard` on.
    fn group_by_shard(&mut self, fps: &[Fingerprint], first_shard: usize) {
        let group = |k: u32| shard_of(fps[k as usize]).wrapping_sub(first_shard) & SHARD_MASK;
        let ByShard { order, starts } = &mut self.by_shard;
        *starts = [0; (1 << SHARD_BITS) + 1];
        for &k in &self.first_occurrences {
            starts[group(k) + 1] += 1;
        }
        for g in 1..starts.len() {
            starts[g] += starts[g - 1];
        }
        let mut ends = *starts;
        order.clear();
        order.resize(self.first_occurrences.len(), 0);
        for &k in &self.first_occurrences {
            let end = &mut ends[group(k)];
            order[*end as usize] = k;
            *end += 1;
        }
    }
}

/// A batch's first occurrences grouped by shard, the groups in the order in
/// which the shards are visited.
struct ByShard {
    order: Vec<u32>,
    /// Where each group of `order` begins, and where the last one ends.
    starts: [u32; (1 << SHARD_BITS) + 1],
}

impl ByShard {
    /// Group `g`.
    fn group(&self, g: usize) -> &[u32] {
        &self.order[self.starts[g] as usize..self.starts[g + 1] as usize]
    }

    /// The non-empty groups, with their indices.
    fn groups(&self) -> impl Iterator<Item = (usize, &[u32])> {
        (0..1 << SHARD_BITS)
            .map(|g| (g, self.group(g)))
            .filter(|(_, group)| !group.is_empty())
    }
}

/// Waits a moment before looking again for the `spins`-th time: other
/// batches are a few shard visits from done, so spin first, then give the
/// core away in case the other thread is waiting for it.
fn back_off(spins: u32) {
    if spins < 64 {
        std::hint::spin_loop();
    } else {
        std::thread::yield_now();
    }
}

/// Whether turn `a` comes after turn `b`, both cut to their low
/// [`TURN_BITS`] bits (turns in flight at once are never 2^15 apart).
fn later(a: u32, b: u32) -> bool {
    let ahead = a.wrapping_sub(b) & ((1 << TURN_BITS) - 1);
    ahead != 0 && ahead < 1 << (TURN_BITS - 1)
}

/// The fingerprint as the shards store it: 0 marks an empty slot, so a
/// fingerprint of 0 is stored as 1.
fn key_of(fp: Fingerprint) -> Fingerprint {
    fp.max(1)
}

fn shard_of(fp: Fingerprint) -> usize {
    (fp >> SHARD_SHIFT) as usize & SHARD_MASK
}

#[cfg(test)]
mod tests {
    use super::*;

    fn unordered(first_shard: usize) -> Insertion {
        Insertion {
            first_shard,
            known_numbers: true,
            turn: None,
        }
    }

    #[test]
    fn a_slot_should_take_12_bytes_and_a_claim_should_keep_its_turn() {
        assert_eq!(std::mem::size_of::<Numbered>(), 12);
        let far = (1u32 << TURN_BITS) + 5;
        assert_eq!(claimer(claimed(far)), Some(5));
        assert_eq!(claimer(REFUSED), None);
        assert_eq!(claimer(REFUSED - 1), None, "a state number is no claim");
        // Turns compare across the wrap of their low bits.
        assert!(later(1, (1 << TURN_BITS) - 1));
        assert!(!later((1 << TURN_BITS) - 1, 1));
        assert!(!later(7, 7));
    }

    #[test]
    fn seen_should_number_new_fingerprints_densely_and_remember_them() {
        let seen = Seen::new(10, 1);
        assert!(matches!(seen.insert(7), Insert::New(0)));
        assert!(matches!(seen.insert(1 << 41), Insert::New(1)));
        assert!(matches!(seen.insert(7), Insert::Known(0)));
        assert_eq!(seen.len(), 2);
    }

    #[test]
    fn seen_should_refuse_numbers_past_its_limit() {
        let seen = Seen::new(1, 1);
        assert!(matches!(seen.insert(1), Insert::New(0)));
        assert!(matches!(seen.insert(2), Insert::Full));
        assert!(matches!(seen.insert(1), Insert::Known(0)));
        assert_eq!(seen.len(), 1);
    }

    #[test]
    fn a_batch_should_number_its_new_fingerprints_consecutively_in_order() {
        let seen = Seen::new(100, 2);
        assert_eq!(seen.insert(5 << 40), Insert::New(0));
        let mut out = Vec::new();
        let fps = [9, 5 << 40, 3 << 40, 9, 7, 3 << 40];
        seen.insert_all(&fps, &unordered(17), &mut out, &mut Batch::default());
        assert_eq!(
            out,
            [
                Insert::New(1),
                Insert::Known(0),
                Insert::New(2),
                Insert::Known(1),
                Insert::New(3),
                Insert::Known(2),
            ]
        );
    }

    #[test]
    fn a_batch_should_refuse_what_comes_past_the_limit_and_keep_refusing_it() {
        let seen = Seen::new(2, 1);
        let mut out = Vec::new();
        seen.insert_all(
            &[1, 2, 3, 3, 1],
            &unordered(0),
            &mut out,
            &mut Batch::default(),
        );
        assert_eq!(
            out,
            [
                Insert::New(0),
                Insert::New(1),
                Insert::Full,
                Insert::Full,
                Insert::Known(0)
            ]
        );
        assert_eq!(seen.insert(3), Insert::Full);
        assert_eq!(seen.len(), 2);
    }

    #[test]
    fn threads_inserting_overlapping_batches_should_agree_on_every_number() {
        insert_overlapping_batches(None);
    }

    #[test]
    fn numbers_should_hold_while_the_tables_go_to_disk_under_the_inserting_threads() {
        let dir = SpillDir::new(&std::env::temp_dir()).unwrap();
        let seen = insert_overlapping_batches(Some(&dir));
        assert!(
            seen.shards
                .shards
                .iter()
                .any(|shard| shard.0.lock().unwrap().disk.is_some()),
            "nothing went to disk"
        );
    }

    /// Four threads insert overlapping batches, while a fifth sends the
    /// tables to disk again and again, if given a directory; every
    /// fingerprint gets one number, the numbers are dense, and each
    /// batch's new ones consecutive.
    fn insert_overlapping_batches(spill: Option<&SpillDir>) -> Seen {
        let seen = Seen::new(u32::MAX, 4);
        let inserting = std::sync::atomic::AtomicUsize::new(4);
        let fingerprinter = Fingerprinter::new();
        let batches: Vec<Vec<Fingerprint>> = (0..64u64)
            .map(|b| {
                (0..500u64)
                    .map(|k| fingerprinter.fingerprint(&((b * 250 + k) % 9_000)))
                    .collect()
            })
            .collect();
        let results: Vec<Vec<(Fingerprint, Insert)>> = std::thread::scope(|scope| {
            if let Some(dir) = spill {
                scope.spawn(|| loop {
                    let last = inserting.load(Ordering::Relaxed) == 0;
                    seen.shards.spill(dir).unwrap();
                    if last {
                        break;
                    }
                    std::thread::yield_now();
                });
            }
            let workers: Vec<_> = (0..4)
                .map(|t| {
                    let (seen, batches, inserting) = (&seen, &batches, &inserting);
                    scope.spawn(move || {
                        // Counted out however the thread ends, so that the
                        // spilling thread stops.
                        struct Leaving<'a>(&'a std::sync::atomic::AtomicUsize);
                        impl Drop for Leaving<'_> {
                            fn drop(&mut self) {
                                self.0.fetch_sub(1, Ordering::Relaxed);
                            }
                        }
                        let _leaving = Leaving(inserting);
                        let mut batch = Batch::default();
                        let mut out = Vec::new();
                        let mut results = Vec::new();
                        for fps in batches.iter().skip(t).step_by(4) {
                            seen.insert_all(fps, &unordered(t * 29), &mut out, &mut batch);
                            let new: Vec<u32> = out
                                .iter()
                                .filter_map(|r| match r {
                                    Insert::New(id) => Some(*id),
                                    _ => None,
                                })
                                .collect();
                            assert!(new.windows(2).all(|w| w[1] == w[0] + 1), "{new:?}");
                            results.extend(fps.iter().copied().zip(out.iter().copied()));
                            std::thread::yield_now();
                        }
                        results
                    })
                })
                .collect();
            workers.into_iter().map(|w| w.join().unwrap()).collect()
        });
        let mut numbers = std::collections::HashMap::new();
        let mut new = 0;
        for (fp, result) in results.into_iter().flatten() {
            let id = match result {
                Insert::New(id) => {
                    new += 1;
                    id
                }
                Insert::Known(id) => id,
                Insert::Seen => panic!("every number was asked for"),
                Insert::Full => panic!("no limit was set"),
            };
            assert_eq!(*numbers.entry(fp).or_insert(id), id, "one number per state");
        }
        assert_eq!(new, numbers.len(), "each state is new exactly once");
        assert_eq!(seen.len() as usize, numbers.len());
        for (&fp, &id) in &numbers {
            assert_eq!(seen.insert(fp), Insert::Known(id), "looked up again");
        }
        let mut ids: Vec<u32> = numbers.into_values().collect();
        ids.sort_unstable();
        assert!(
            ids.iter().enumerate().all(|(k, &id)| id == k as u32),
            "dense"
        );
        seen
    }

    #[test]
    fn fingerprints_sent_to_disk_should_keep_their_numbers() {
        let dir = SpillDir::new(&std::env::temp_dir()).unwrap();
        let seen = Seen::new(100, 1);
        // One shard's, all of them.
        let fps: Vec<Fingerprint> = (1..=60u64).map(|k| k * 0x9e37_79b9).collect();
        for (k, &fp) in fps[..30].iter().enumerate() {
            assert_eq!(seen.insert(fp), Insert::New(k as u32));
        }
        assert_eq!(seen.shards.tables().held, 30 * 12);
        assert_eq!(
            seen.shards.spill(&dir).unwrap(),
            30 * 12,
            "12 bytes an entry"
        );
        let tables = seen.shards.tables();
        assert_eq!(tables.held, 0, "the entries went");
        assert!(tables.room >= 512 * 12, "{tables:?}: the table stays");
        for (k, &fp) in fps.iter().enumerate() {
            let wanted = if k < 30 {
                Insert::Known(k as u32)
            } else {
                Insert::New(k as u32)
            };
            assert_eq!(seen.insert(fp), wanted, "{k}");
        }
        assert_eq!(
            seen.shards.spill(&dir).unwrap(),
            60 * 12,
            "merged with the first run"
        );
        assert_eq!(seen.shards.spill(&dir).unwrap(), 0, "nothing new");
        for (k, &fp) in fps.iter().enumerate() {
            assert_eq!(seen.insert(fp), Insert::Known(k as u32), "{k}");
        }
        assert_eq!(seen.len(), 60);
    }

    #[test]
    fn batches_in_turn_should_be_numbered_in_turn_whichever_comes_first() {
        let seen = Seen::new(100, 2);
        let first_turn = seen.next_turn();
        let (early, late) = std::thread::scope(|scope| {
            let late = scope.spawn(|| {
                let mut out = Vec::new();
                let how = Insertion {
                    first_shard: 0,
                    known_numbers: true,
                    turn: Some(first_turn + 1),
                };
                seen.insert_all(&[10, 11], &how, &mut out, &mut Batch::default());
                out
            });
            std::thread::sleep(std::time::Duration::from_millis(50));
            let mut out = Vec::new();
            let how = Insertion {
                first_shard: 0,
                known_numbers: true,
                turn: Some(first_turn),
            };
            seen.insert_all(&[20, 21], &how, &mut out, &mut Batch::default());
            (out, late.join().unwrap())
        });
        assert_eq!(early, [Insert::New(0), Insert::New(1)]);
        assert_eq!(late, [Insert::New(2), Insert::New(3)]);
        assert_eq!(seen.next_turn(), first_turn + 2);
    }

    #[test]
    fn a_batch_waiting_for_an_abandoned_turn_should_give_up() {
        let seen = Seen::new(100, 2);
        let how = Insertion {
            first_shard: 0,
            known_numbers: true,
            turn: Some(seen.next_turn() + 1),
        };
        seen.abandon();
        let gave_up = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            seen.insert_all(&[1], &how, &mut Vec::new(), &mut Batch::default())
        }));
        assert!(gave_up.is_err_and(|payload| payload.is::<Abandoned>()));
    }

    #[test]
    fn fingerprints_should_be_stable_across_hashers() {
        let a = Fingerprinter::new();
        let b = Fingerprinter::new();
        assert_eq!(a.fingerprint(&(1u8, "x")), b.fingerprint(&(1u8, "x")));
        assert_ne!(a.fingerprint(&1u8), a.fingerprint(&2u8));
    }
}
