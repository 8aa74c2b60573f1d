//! The part of a seen-set shard that went to disk: its fingerprints and
//! their state numbers, sorted by fingerprint in one file, with the first
//! fingerprint of every block kept in memory to find the one block a
//! lookup reads.
//!
//! A run is written once and then only read; spilling the shard again
//! merges the run with the table's entries into a new run, and the old one
//! goes (its unnamed file with it).

use std::io;

use crate::spill::{SpillDir, SpillFile, Word};

/// A fingerprint and its state number, as the run stores them.
pub(super) type Entry = (u64, u32);

/// The bytes of one entry on disk: the fingerprint, then the number.
const ENTRY: usize = 12;

/// Entries per block: one lookup reads one block (3 KiB), and the index
/// keeps 8 bytes per block (1/32 of a byte per state). The crate's tests
/// cut blocks to 4 entries, so that their runs span many blocks.
const BLOCK: usize = if cfg!(test) { 4 } else { 256 };

/// Entries read or written at a time while merging.
const CHUNK: usize = if cfg!(test) { 8 } else { 1 << 16 };

/// Entries sorted by fingerprint, on disk.
#[derive(Debug)]
pub(super) struct SortedRun {
    file: SpillFile,
    len: usize,
    /// The first fingerprint of each block.
    firsts: Vec<u64>,
}

impl SortedRun {
    /// A new run in `dir` of the entries of `old` and of `new`, which is
    /// sorted by fingerprint and shares none with `old`; and the bytes it
    /// took. `old` is only read: on an error it is still whole.
    pub(super) fn merge(
        old: Option<&SortedRun>,
        new: &[Entry],
        dir: &SpillDir,
    ) -> io::Result<(SortedRun, u64)> {
        let mut out = Writer {
            run: SortedRun {
                file: dir.file()?,
                len: 0,
                firsts: Vec::new(),
            },
            buffer: Vec::with_capacity(CHUNK * ENTRY),
        };
        let mut new = new.iter().copied().peekable();
        if let Some(old) = old {
            let mut bytes = crate::memory::filled(CHUNK * ENTRY, 0);
            for start in (0..old.len).step_by(CHUNK) {
                let count = CHUNK.min(old.len - start);
                let bytes = &mut bytes[..count * ENTRY];
                old.file.read((start * ENTRY) as u64, bytes)?;
                for entry in bytes.chunks_exact(ENTRY).map(decode) {
                    while let Some(earlier) = new.next_if(|&(fp, _)| fp < entry.0) {
                        out.push(earlier)?;
                    }
                    out.push(entry)?;
                }
            }
        }
        for entry in new {
            out.push(entry)?;
        }
        out.finish()
    }

    /// The number stored for `fp`, if the run holds it; `block` is scratch
    /// space.
    pub(super) fn get(&self, fp: u64, block: &mut Vec<u8>) -> io::Result<Option<u32>> {
        let after = self.firsts.partition_point(|&first| first <= fp);
        let Some(index) = after.checked_sub(1) else {
            return Ok(None);
        };
        let start = index * BLOCK;
        let count = BLOCK.min(self.len - start);
        block.resize(count * ENTRY, 0);
        self.file.read((start * ENTRY) as u64, block)?;
        let (mut low, mut high) = (0, count);
        while low < high {
            let middle = (low + high) / 2;
            let (key, id) = decode(&block[middle * ENTRY..]);
            match key.cmp(&fp) {
                std::cmp::Ordering::Less => low = middle + 1,
                std::cmp::Ordering::Greater => high = middle,
                std::cmp::Ordering::Equal => return Ok(Some(id)),
            }
        }
        Ok(None)
    }
}

/// A run being written, a chunk of entries at a time.
struct Writer {
    run: SortedRun,
    buffer: Vec<u8>,
}

impl Writer {
    fn push(&mut self, (fp, id): Entry) -> io::Result<()> {
        if self.run.len % BLOCK == 0 {
            self.run.firsts.push(fp);
        }
        fp.put(&mut self.buffer);
        id.put(&mut self.buffer);
        self.run.len += 1;
        if self.buffer.len() == self.buffer.capacity() {
            self.flush()?;
        }
        Ok(())
    }

    fn flush(&mut self) -> io::Result<()> {
        self.run.file.append(&self.buffer)?;
        self.buffer.clear();
        Ok(())
    }

    /// The run, and the bytes it took.
    fn finish(mut self) -> io::Result<(SortedRun, u64)> {
        self.flush()?;
        self.run.firsts.shrink_to_fit();
        let bytes = (self.run.len * ENTRY) as u64;
        Ok((self.run, bytes))
    }
}

fn decode(bytes: &[u8]) -> Entry {
    (u64::take(bytes), u32::take(&bytes[8..]))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_merged_run_should_hold_every_entry_of_both_and_nothing_else() {
        let dir = SpillDir::new(&std::env::temp_dir()).unwrap();
        let even: Vec<Entry> = (0..30u64).map(|k| (k * 2, k as u32)).collect();
        let (first, bytes) = SortedRun::merge(None, &even, &dir).unwrap();
        assert_eq!(bytes, 30 * 12);
        let odd: Vec<Entry> = (0..40u64).map(|k| (k * 2 + 1, 100 + k as u32)).collect();
        let (both, bytes) = SortedRun::merge(Some(&first), &odd, &dir).unwrap();
        assert_eq!(bytes, 70 * 12);
        let mut block = Vec::new();
        for k in 0..30u64 {
            assert_eq!(both.get(k * 2, &mut block).unwrap(), Some(k as u32));
            assert_eq!(first.get(k * 2, &mut block).unwrap(), Some(k as u32));
            assert_eq!(first.get(k * 2 + 1, &mut block).unwrap(), None, "odd");
        }
        for k in 0..40u64 {
            assert_eq!(
                both.get(k * 2 + 1, &mut block).unwrap(),
                Some(100 + k as u32)
            );
        }
        assert_eq!(
            both.get(u64::MAX, &mut block).unwrap(),
            None,
            "past the last"
        );
        let (shifted, _) = SortedRun::merge(None, &[(5, 1), (9, 2)], &dir).unwrap();
        assert_eq!(
            shifted.get(3, &mut block).unwrap(),
            None,
            "before the first"
        );
    }
}
