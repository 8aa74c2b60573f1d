//! The seen set of a safety check: fingerprints alone, 8 bytes a state in
//! the tables.
//!
//! A check that keeps no edges never asks which number a known state has,
//! so nothing needs to remember it: new states still get dense numbers,
//! each batch's consecutive in batch order, but the tables keep only the
//! fingerprints. Tables at most three quarters full and at least half (see
//! [`Shard::reserve`]) take 10.7 to 16 bytes a state.
//!
//! With one thread the numbers are those [`Seen`](super::Seen) gives. With
//! more, batches take their numbers in the order they finish, and a state
//! that two batches reach at once is the one's that looked first: the
//! states and the verdicts are the same, a counterexample may be another of
//! the same length.

use super::{Batch, Fingerprint, Insert, Lookup, Numbers, Shards};

/// Fingerprints seen, and how many numbers were handed out.
pub(crate) struct Unnumbered {
    pub(super) shards: Shards<Fingerprint>,
    numbers: Numbers,
}

impl Unnumbered {
    /// An empty set that hands out at most `limit` numbers (and never more
    /// than [`Seen`](super::Seen) would).
    pub(crate) fn new(limit: u32) -> Self {
        Unnumbered {
            shards: Shards::new(),
            numbers: Numbers::new(limit),
        }
    }

    /// How many numbers have been handed out.
    pub(crate) fn len(&self) -> u32 {
        self.numbers.len()
    }

    /// Inserts a batch of fingerprints, `out[k]` telling what became of
    /// `fps[k]`: [`Insert::New`] with its number the first time a
    /// fingerprint is inserted (numbers consecutive in batch order),
    /// [`Insert::Seen`] after, [`Insert::Full`] past the limit. A batch
    /// visits the shards from `first_shard` on; `batch` is scratch space.
    pub(crate) fn insert_all(
        &self,
        fps: &[Fingerprint],
        first_shard: usize,
        out: &mut Vec<Insert>,
        batch: &mut Batch,
    ) {
        batch.deduplicate(fps);
        batch.group_by_shard(fps, first_shard);
        // Claimed: new here; any other lookup means already there.
        batch.lookups.clear();
        batch.lookups.resize(fps.len(), Lookup::Elsewhere);
        let mut count = 0;
        let lookups = &mut batch.lookups;
        self.shards
            .look_up(fps, &batch.by_shard, |shard, k, fp, index| {
                if shard.slots[index] != fp && shard.on_disk(fp).is_none() {
                    shard.slots[index] = fp;
                    shard.len += 1;
                    count += 1;
                    lookups[k] = Lookup::Claimed;
                }
            });
        out.clear();
        out.resize(fps.len(), Insert::Seen);
        self.numbers.hand_out(batch, count, out);
        for (k, &first) in batch.first.iter().enumerate() {
            if first as usize != k && out[first as usize] == Insert::Full {
                out[k] = Insert::Full;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::seen::Fingerprinter;
    use crate::spill::SpillDir;

    fn insert(set: &Unnumbered, fps: &[Fingerprint]) -> Vec<Insert> {
        let mut out = Vec::new();
        set.insert_all(fps, 0, &mut out, &mut Batch::default());
        out
    }

    #[test]
    fn new_fingerprints_should_be_numbered_in_batch_order_and_known_ones_seen() {
        let set = Unnumbered::new(100);
        assert_eq!(insert(&set, &[5 << 40]), [Insert::New(0)]);
        assert_eq!(
            insert(&set, &[9, 5 << 40, 3 << 40, 9, 0, 3 << 40]),
            [
                Insert::New(1),
                Insert::Seen,
                Insert::New(2),
                Insert::Seen,
                Insert::New(3),
                Insert::Seen,
            ]
        );
        assert_eq!(set.len(), 4);
        assert_eq!(set.shards.tables().held, 4 * 8, "8 bytes a fingerprint");
    }

    #[test]
    fn what_comes_past_the_limit_should_be_refused_in_every_occurrence() {
        let set = Unnumbered::new(2);
        assert_eq!(
            insert(&set, &[1, 2, 3, 3, 1]),
            [
                Insert::New(0),
                Insert::New(1),
                Insert::Full,
                Insert::Full,
                Insert::Seen
            ]
        );
        assert_eq!(set.len(), 2);
    }

    #[test]
    fn fingerprints_sent_to_disk_should_stay_seen() {
        let dir = SpillDir::new(&std::env::temp_dir()).unwrap();
        let set = Unnumbered::new(1_000);
        let fingerprinter = Fingerprinter::new();
        let fps: Vec<Fingerprint> = (0..300u64).map(|k| fingerprinter.fingerprint(&k)).collect();
        let new = |out: &[Insert]| out.iter().filter(|r| matches!(r, Insert::New(_))).count();
        assert_eq!(new(&insert(&set, &fps[..200])), 200);
        assert_eq!(
            set.shards.spill(&dir).unwrap(),
            200 * 12,
            "12 bytes an entry"
        );
        assert_eq!(set.shards.tables().held, 0, "the entries went");
        let out = insert(&set, &fps);
        assert_eq!(new(&out), 100, "only the last hundred are new");
        assert!(out[..200].iter().all(|r| *r == Insert::Seen));
        assert_eq!(set.len(), 300);
    }

    #[test]
    fn threads_inserting_overlapping_batches_should_find_each_state_new_once() {
        let set = Unnumbered::new(u32::MAX);
        let fingerprinter = Fingerprinter::new();
        let results: Vec<Vec<Insert>> = std::thread::scope(|scope| {
            let workers: Vec<_> = (0..4u64)
                .map(|t| {
                    let (set, fingerprinter) = (&set, &fingerprinter);
                    scope.spawn(move || {
                        let mut batch = Batch::default();
                        let mut out = Vec::new();
                        let mut all = Vec::new();
                        for b in (t..64).step_by(4) {
                            let fps: Vec<Fingerprint> = (0..500u64)
                                .map(|k| fingerprinter.fingerprint(&((b * 250 + k) % 9_000)))
                                .collect();
                            set.insert_all(&fps, t as usize * 29, &mut out, &mut batch);
                            let numbers: Vec<u32> = out
                                .iter()
                                .filter_map(|r| match r {
                                    Insert::New(id) => Some(*id),
                                    _ => None,
                                })
                                .collect();
                            assert!(numbers.windows(2).all(|w| w[1] == w[0] + 1));
                            all.extend(out.iter().copied());
                        }
                        all
                    })
                })
                .collect();
            workers.into_iter().map(|w| w.join().unwrap()).collect()
        });
        let mut numbers: Vec<u32> = results
            .into_iter()
            .flatten()
            .filter_map(|r| match r {
                Insert::New(id) => Some(id),
                Insert::Seen => None,
                other => panic!("{other:?}: no limit was set"),
            })
            .collect();
        numbers.sort_unstable();
        // Batch b covers b·250 to b·250 + 499, modulo 9,000: together, all.
        assert_eq!(
            numbers,
            (0..9_000).collect::<Vec<u32>>(),
            "dense, each once"
        );
        assert_eq!(set.len(), 9_000);
    }
}
