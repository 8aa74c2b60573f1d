//! The set of visited states: fingerprints mapped to dense state numbers,
//! shared by the exploring threads.

use std::hash::Hash;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Mutex;

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

/// One shard of [`Seen`]: an open-addressing table with linear probing whose
/// slots hold a fingerprint and its state number side by side, so that a
/// lookup touches one cache line, not a control byte and then a bucket.
#[derive(Default)]
struct Shard {
    /// `(fingerprint, number)`; a fingerprint of 0 marks an empty slot (a
    /// state whose fingerprint is 0 is stored as 1).
    slots: Vec<(Fingerprint, u32)>,
    len: usize,
}

impl Shard {
    /// The slot holding `fp`, or the empty slot where it belongs.
    fn probe(&self, fp: Fingerprint) -> usize {
        let mask = self.slots.len() - 1;
        let mut index = fp as usize & mask;
        loop {
            let key = self.slots[index].0;
            if key == fp || key == 0 {
                return index;
            }
            index = (index + 1) & mask;
        }
    }

    /// Doubles the table (from 1,024 slots), keeping the load at most 3/4.
    fn grow(&mut self) {
        let size = (self.slots.len() * 2).max(1024);
        let old = std::mem::replace(&mut self.slots, vec![(0, 0); size]);
        for (fp, id) in old.into_iter().filter(|&(fp, _)| fp != 0) {
            let index = self.probe(fp);
            self.slots[index] = (fp, id);
        }
    }
}

/// A shard on cache lines of its own, so that threads locking neighbouring
/// shards do not take the same line from each other.
#[repr(align(128))]
struct PaddedShard(Mutex<Shard>);

/// Shards are picked by bits 40..46 of a fingerprint, which the shard's own
/// table does not use to place it (it uses the low bits).
const SHARD_BITS: u32 = 6;
const SHARD_SHIFT: u32 = 40;
const SHARD_MASK: usize = (1 << SHARD_BITS) - 1;

/// Fingerprints to state numbers, numbered densely from 0 in the order in
/// which they were first inserted.
pub(crate) struct Seen {
    shards: Vec<PaddedShard>,
    next: AtomicU64,
    limit: u32,
    /// Held while a batch numbers its new states.
    numbering: Mutex<()>,
}

/// What [`Seen::insert`] found.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Insert {
    /// The state was already known under this number.
    Known(u32),
    /// The state is new and now has this number.
    New(u32),
    /// The state is new, but every number up to the limit is taken.
    Full,
}

impl Seen {
    /// An empty set that hands out at most `limit` numbers.
    pub(crate) fn new(limit: u32) -> Self {
        Seen {
            shards: (0..1 << SHARD_BITS)
                .map(|_| PaddedShard(Mutex::new(Shard::default())))
                .collect(),
            next: AtomicU64::new(0),
            limit,
            numbering: Mutex::new(()),
        }
    }

    /// How many numbers have been handed out.
    pub(crate) fn len(&self) -> u32 {
        self.next.load(Ordering::Relaxed).min(u64::from(self.limit)) as u32
    }

    /// Inserts one fingerprint.
    pub(crate) fn insert(&self, fp: Fingerprint) -> Insert {
        let mut out = Vec::new();
        self.insert_all(&[fp], 0, &mut out, &mut Vec::new());
        out[0]
    }

    /// Inserts a batch of fingerprints, `out[k]` telling what became of
    /// `fps[k]`; `order` is scratch space.
    ///
    /// Most fingerprints of a batch are already known, and looking them up is
    /// bound by cache misses. So lookups go first, grouped by shard: each
    /// shard is locked once and its slots are touched before they are probed,
    /// so the misses overlap instead of queueing behind a lock operation
    /// each. Shards are visited from `first_shard` on, so that threads that
    /// start apart stay apart instead of contending for the same locks in
    /// step. The fingerprints not found are then inserted in batch order,
    /// under one lock for the whole batch, so that a batch's new states get
    /// consecutive numbers in the order they were discovered: related states
    /// stay close in memory, which the liveness search depends on.
    pub(crate) fn insert_all(
        &self,
        fps: &[Fingerprint],
        first_shard: usize,
        out: &mut Vec<Insert>,
        order: &mut Vec<u32>,
    ) {
        out.clear();
        out.resize(fps.len(), Insert::Full);
        order.clear();
        order.extend(0..fps.len() as u32);
        let key = |k: u32| shard_of(fps[k as usize]).wrapping_sub(first_shard) & SHARD_MASK;
        order.sort_unstable_by_key(|&k| key(k));
        for group in order.chunk_by(|&a, &b| key(a) == key(b)) {
            let shard = self.lock(shard_of(fps[group[0] as usize]));
            if shard.slots.is_empty() {
                continue;
            }
            let mask = shard.slots.len() - 1;
            for &k in group {
                std::hint::black_box(shard.slots[fps[k as usize].max(1) as usize & mask].0);
            }
            for &k in group {
                let fp = fps[k as usize].max(1);
                let slot = shard.slots[shard.probe(fp)];
                if slot.0 == fp {
                    out[k as usize] = Insert::Known(slot.1);
                }
            }
        }
        let _numbering = self
            .numbering
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner());
        for (k, &fp) in fps.iter().enumerate() {
            if !matches!(out[k], Insert::Known(_)) {
                let mut shard = self.lock(shard_of(fp));
                out[k] = self.insert_locked(&mut shard, fp);
            }
        }
    }

    fn lock(&self, shard: usize) -> std::sync::MutexGuard<'_, Shard> {
        // A poisoned shard only means another thread panicked mid-insert of
        // an unrelated entry; the table itself is still consistent.
        self.shards[shard]
            .0
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    fn insert_locked(&self, shard: &mut Shard, fp: Fingerprint) -> Insert {
        let fp = fp.max(1);
        if (shard.len + 1) * 4 > shard.slots.len() * 3 {
            shard.grow();
        }
        let index = shard.probe(fp);
        if shard.slots[index].0 == fp {
            return Insert::Known(shard.slots[index].1);
        }
        let id = self.next.fetch_add(1, Ordering::Relaxed);
        match u32::try_from(id) {
            Ok(id) if id < self.limit => {
                shard.slots[index] = (fp, id);
                shard.len += 1;
                Insert::New(id)
            }
            _ => Insert::Full,
        }
    }
}

fn shard_of(fp: Fingerprint) -> usize {
    (fp >> SHARD_SHIFT) as usize & SHARD_MASK
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn seen_should_number_new_fingerprints_densely_and_remember_them() {
        let seen = Seen::new(10);
        assert!(matches!(seen.insert(7), Insert::New(0)));
        assert!(matches!(seen.insert(1 << 41), Insert::New(1)));
        assert!(matches!(seen.insert(7), Insert::Known(0)));
        assert_eq!(seen.len(), 2);
    }

    #[test]
    fn seen_should_refuse_numbers_past_its_limit() {
        let seen = Seen::new(1);
        assert!(matches!(seen.insert(1), Insert::New(0)));
        assert!(matches!(seen.insert(2), Insert::Full));
        assert!(matches!(seen.insert(1), Insert::Known(0)));
        assert_eq!(seen.len(), 1);
    }

    #[test]
    fn fingerprints_should_be_stable_across_hashers() {
        let a = Fingerprinter::new();
        let b = Fingerprinter::new();
        assert_eq!(a.fingerprint(&(1u8, "x")), b.fingerprint(&(1u8, "x")));
        assert_ne!(a.fingerprint(&1u8), a.fingerprint(&2u8));
    }
}
