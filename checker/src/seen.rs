//! The set of visited states: fingerprints mapped to dense state numbers,
//! shared by the exploring threads.

use std::collections::HashMap;
use std::hash::{BuildHasherDefault, Hash, Hasher};
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

/// A hasher that passes a fingerprint through: it is already uniformly mixed.
#[derive(Default)]
struct PassThrough(u64);

impl Hasher for PassThrough {
    fn finish(&self) -> u64 {
        self.0
    }

    fn write(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.0 = (self.0 << 8) | u64::from(b);
        }
    }

    fn write_u64(&mut self, n: u64) {
        self.0 = n;
    }
}

type Shard = HashMap<Fingerprint, u32, BuildHasherDefault<PassThrough>>;

/// Shards are picked by bits 40..46 of a fingerprint, which the shard's own
/// table uses neither for its bucket (low bits) nor for its tag (top 7 bits).
const SHARD_BITS: u32 = 6;
const SHARD_SHIFT: u32 = 40;

/// Fingerprints to state numbers, numbered densely from 0 in the order in
/// which they were first inserted.
pub(crate) struct Seen {
    shards: Vec<Mutex<Shard>>,
    next: AtomicU64,
    limit: u32,
}

/// What [`Seen::insert`] found.
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
                .map(|_| Mutex::new(Shard::default()))
                .collect(),
            next: AtomicU64::new(0),
            limit,
        }
    }

    /// How many numbers have been handed out.
    pub(crate) fn len(&self) -> u32 {
        self.next.load(Ordering::Relaxed).min(u64::from(self.limit)) as u32
    }

    pub(crate) fn insert(&self, fp: Fingerprint) -> Insert {
        let shard = (fp >> SHARD_SHIFT) as usize & ((1 << SHARD_BITS) - 1);
        // A poisoned shard only means another thread panicked mid-insert of an
        // unrelated entry; the map itself is still consistent.
        let mut shard = self.shards[shard]
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner());
        if let Some(&id) = shard.get(&fp) {
            return Insert::Known(id);
        }
        let id = self.next.fetch_add(1, Ordering::Relaxed);
        let Ok(id) = u32::try_from(id) else {
            return Insert::Full;
        };
        if id >= self.limit {
            return Insert::Full;
        }
        shard.insert(fp, id);
        Insert::New(id)
    }
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
