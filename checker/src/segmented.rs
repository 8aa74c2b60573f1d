//! A vector kept in fixed-size segments, for the graph's per-state and
//! per-edge columns: it grows by adding a segment, never by moving what it
//! holds.
//!
//! A `Vec` that doubles copies itself into a block twice its size, so that
//! for a moment it needs three times what it holds. glibc's `realloc` remaps
//! large blocks instead of copying them, but most allocators (mimalloc,
//! which the command uses) copy: the graph's columns, the larger part of a
//! check's memory, would then peak at up to three times their size while
//! they grow.
//!
//! A [`Column`] is one whose full segments can go to disk once a check's
//! memory passes its bound (see [`crate::spill`]): they are written in
//! order, so the segments on disk are always a prefix, and read back a block
//! at a time through a cache of the reading thread's own.

use std::cell::RefCell;
use std::ops::{Index, IndexMut};
use std::sync::atomic::{AtomicUsize, Ordering};

use crate::spill::{SpillDir, SpillFile, Word};

/// Elements per segment: 65,536 (256 KiB of `u32`); 16 in the crate's own
/// tests, so that their small graphs span many segments and spill.
const SEGMENT_BITS: u32 = if cfg!(test) { 4 } else { 16 };
const SEGMENT: usize = 1 << SEGMENT_BITS;

/// A growable sequence indexed like a `Vec`, in segments of [`SEGMENT`]
/// elements. Every segment but the last is full.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(crate) struct Segmented<T> {
    segments: Vec<Vec<T>>,
    len: usize,
}

impl<T: Copy> Segmented<T> {
    /// An empty one; no segment is allocated until something is pushed.
    pub(crate) fn new() -> Self {
        Segmented {
            segments: Vec::new(),
            len: 0,
        }
    }

    /// How many elements it holds.
    pub(crate) fn len(&self) -> usize {
        self.len
    }

    /// The last segment, a new one when the last is full.
    fn with_room(&mut self) -> &mut Vec<T> {
        if self.len % SEGMENT == 0 {
            self.segments.push(Vec::with_capacity(SEGMENT));
        }
        self.segments.last_mut().expect("a segment with room")
    }

    /// Appends `value`.
    pub(crate) fn push(&mut self, value: T) {
        self.with_room().push(value);
        self.len += 1;
    }

    /// Appends `value` until it holds `len` elements (nothing when it holds
    /// as many or more).
    pub(crate) fn resize(&mut self, len: usize, value: T) {
        while self.len < len {
            self.push(value);
        }
    }

    /// Segment `k`'s elements.
    fn segment(&self, k: usize) -> &[T] {
        &self.segments[k]
    }

    /// Frees segment `k`, a full one kept elsewhere now: reading its
    /// elements from here is a panic from now on.
    fn release(&mut self, k: usize) {
        debug_assert_eq!(self.segments[k].len(), SEGMENT, "only a full segment goes");
        self.segments[k] = Vec::new();
    }
}

impl<T: Copy> Extend<T> for Segmented<T> {
    /// Fills the last segment, then new ones, a segment's worth at a time.
    fn extend<I: IntoIterator<Item = T>>(&mut self, values: I) {
        let mut values = values.into_iter().peekable();
        while values.peek().is_some() {
            let last = self.with_room();
            let before = last.len();
            last.extend(values.by_ref().take(SEGMENT - before));
            self.len += last.len() - before;
        }
    }
}

impl<T> Index<usize> for Segmented<T> {
    type Output = T;

    /// Past the end is a panic, as for a `Vec`: in the last segment its own
    /// length tells, past it the list of segments does.
    fn index(&self, index: usize) -> &T {
        &self.segments[index >> SEGMENT_BITS][index & (SEGMENT - 1)]
    }
}

impl<T> IndexMut<usize> for Segmented<T> {
    fn index_mut(&mut self, index: usize) -> &mut T {
        &mut self.segments[index >> SEGMENT_BITS][index & (SEGMENT - 1)]
    }
}

/// A [`Segmented`] sequence of words whose full segments can go to disk:
/// one of the graph's columns. It is read by [`Column::get`], which reads
/// what is on disk back through the reading thread's cache.
#[derive(Debug)]
pub(crate) struct Column<T> {
    held: Segmented<T>,
    /// How many segments, from the first, are on disk (and freed in
    /// `held`).
    spilled: usize,
    disk: Option<Disk>,
}

/// The segments of a [`Column`] on disk: segment `k` at `k` whole segments
/// into the file. They are read back a block of [`BLOCK`] elements at a
/// time into the reading thread's cache of blocks ([`BLOCKS`]): the
/// liveness search reads the edges of neighbouring states together, and a
/// miss costs one small read, served from the kernel's page cache while the
/// machine has memory to spare.
#[derive(Debug)]
struct Disk {
    file: SpillFile,
    /// Tells its blocks from other columns' in a thread's cache.
    id: usize,
}

/// Elements per block read back from disk: 1,024 (4 KiB of `u32`); a
/// divisor of [`SEGMENT`]. 4 in the crate's own tests.
const BLOCK: usize = if cfg!(test) { 4 } else { 1 << 10 };

/// How many blocks a thread keeps read back: 8,192 (32 MiB of `u32`); 8 in
/// the crate's own tests, so that blocks are read again and again.
const CACHED: usize = if cfg!(test) { 8 } else { 1 << 13 };

/// The next [`Disk::id`].
static DISKS: AtomicUsize = AtomicUsize::new(0);

/// A block read back from disk.
struct Block {
    /// The [`Disk::id`] of its column.
    column: usize,
    /// Which block of the column.
    number: usize,
    bytes: Box<[u8]>,
}

thread_local! {
    /// The blocks this thread read back from disk, of any column: direct
    /// mapped, each slot holding the last block read into it. A cache per
    /// thread takes no lock, so the threads of the liveness search read
    /// spilled columns side by side.
    static BLOCKS: RefCell<Vec<Option<Block>>> = const { RefCell::new(Vec::new()) };
}

impl<T: Word> Column<T> {
    /// An empty one.
    pub(crate) fn new() -> Self {
        Column {
            held: Segmented::new(),
            spilled: 0,
            disk: None,
        }
    }

    /// How many elements it holds.
    pub(crate) fn len(&self) -> usize {
        self.held.len()
    }

    /// Appends `value`.
    pub(crate) fn push(&mut self, value: T) {
        self.held.push(value);
    }

    /// Appends `value` until it holds `len` elements.
    pub(crate) fn resize(&mut self, len: usize, value: T) {
        self.held.resize(len, value);
    }

    /// The element at `index`.
    ///
    /// # Panics
    ///
    /// Past the end, as a `Vec`; and when a segment on disk cannot be read
    /// back (the spill directory's disk failed under the check).
    #[inline]
    pub(crate) fn get(&self, index: usize) -> T {
        let k = index >> SEGMENT_BITS;
        if k < self.spilled {
            let disk = self.disk.as_ref().expect("spilled segments have a file");
            disk.get::<T>(index)
        } else {
            self.held[index]
        }
    }

    /// The element at `index`, or `None` past the end.
    pub(crate) fn checked(&self, index: usize) -> Option<T> {
        (index < self.len()).then(|| self.get(index))
    }

    /// Writes every full segment not on disk yet to a file of `dir`, and
    /// frees it; returns how many bytes went. A segment whose write fails
    /// stays held, so the column is whole either way.
    pub(crate) fn spill(&mut self, dir: &SpillDir) -> std::io::Result<u64> {
        let full = self.held.len() / SEGMENT;
        if self.spilled >= full {
            return Ok(0);
        }
        let disk = match &mut self.disk {
            Some(disk) => disk,
            None => self.disk.insert(Disk {
                file: dir.file()?,
                id: DISKS.fetch_add(1, Ordering::Relaxed),
            }),
        };
        let mut bytes = Vec::with_capacity(SEGMENT * T::BYTES);
        let mut written = 0;
        for k in self.spilled..full {
            bytes.clear();
            for &value in self.held.segment(k) {
                value.put(&mut bytes);
            }
            let at = disk.file.append(&bytes)?;
            debug_assert_eq!(at, (k * SEGMENT * T::BYTES) as u64);
            written += bytes.len() as u64;
            self.held.release(k);
            self.spilled = k + 1;
        }
        Ok(written)
    }
}

impl<T: Word> Extend<T> for Column<T> {
    fn extend<I: IntoIterator<Item = T>>(&mut self, values: I) {
        self.held.extend(values);
    }
}

impl Disk {
    /// Element `index` of the column, a `T`: read from its block in this
    /// thread's cache, after reading the block back if the cache does not
    /// hold it.
    #[cold]
    #[inline(never)]
    fn get<T: Word>(&self, index: usize) -> T {
        let block = index / BLOCK;
        // Columns whose blocks of one number would share a slot are spread.
        let slot = block.wrapping_add(self.id.wrapping_mul(CACHED / 8 + 1)) % CACHED;
        let at = index % BLOCK * T::BYTES;
        BLOCKS.with_borrow_mut(|blocks| {
            if blocks.is_empty() {
                blocks.resize_with(CACHED, || None);
            }
            let entry = &mut blocks[slot];
            match entry {
                Some(held) if held.column == self.id && held.number == block => {
                    T::take(&held.bytes[at..])
                }
                _ => {
                    let mut bytes = vec![0; BLOCK * T::BYTES].into_boxed_slice();
                    let start = (block * BLOCK * T::BYTES) as u64;
                    if let Err(error) = self.file.read(start, &mut bytes) {
                        panic!("the graph spilled to disk could not be read back: {error}");
                    }
                    let value = T::take(&bytes[at..]);
                    *entry = Some(Block {
                        column: self.id,
                        number: block,
                        bytes,
                    });
                    value
                }
            }
        })
    }
}

/// A non-decreasing sequence of `u64` (where each state's edges start), in
/// 4 bytes an element instead of 8: per segment of [`SEGMENT`] elements its
/// first, and per element its distance from it.
#[derive(Debug)]
pub(crate) struct Offsets {
    bases: Vec<u64>,
    above: Column<u32>,
}

impl Offsets {
    /// An empty one.
    pub(crate) fn new() -> Self {
        Offsets {
            bases: Vec::new(),
            above: Column::new(),
        }
    }

    /// How many it holds.
    pub(crate) fn len(&self) -> usize {
        self.above.len()
    }

    /// Appends `offset`, no less than the last.
    ///
    /// # Panics
    ///
    /// When the segment's elements span more than `u32::MAX`: 65,536
    /// states with over four billion edges, 24 GiB of edges, past any
    /// memory bound a check runs under.
    pub(crate) fn push(&mut self, offset: u64) {
        if self.above.len() % SEGMENT == 0 {
            self.bases.push(offset);
        }
        let base = *self.bases.last().expect("a base per segment");
        debug_assert!(offset >= base, "offsets must not decrease");
        let above = u32::try_from(offset - base)
            .expect("65,536 states with over four billion edges (24 GiB of edges)");
        self.above.push(above);
    }

    /// The last offset.
    pub(crate) fn last(&self) -> Option<u64> {
        self.len().checked_sub(1).map(|last| self.get(last))
    }

    /// The offset at `index`.
    pub(crate) fn get(&self, index: usize) -> u64 {
        self.bases[index >> SEGMENT_BITS] + u64::from(self.above.get(index))
    }

    /// Appends `offset` until it holds `len` offsets.
    pub(crate) fn resize(&mut self, len: usize, offset: u64) {
        while self.len() < len {
            self.push(offset);
        }
    }

    /// Writes its full segments to disk, as [`Column::spill`] does.
    pub(crate) fn spill(&mut self, dir: &SpillDir) -> std::io::Result<u64> {
        self.above.spill(dir)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn it_should_index_as_a_vec_does_across_segments() {
        let mut segmented = Segmented::new();
        let mut plain = Vec::new();
        for i in 0..(2 * SEGMENT + 7) as u32 {
            segmented.push(i * 3);
            plain.push(i * 3);
        }
        segmented.extend([1, 2, 3]);
        plain.extend([1, 2, 3]);
        segmented.resize(3 * SEGMENT + 1, 9);
        plain.resize(3 * SEGMENT + 1, 9);
        assert_eq!(segmented.len(), plain.len());
        assert!(plain.iter().enumerate().all(|(i, v)| segmented[i] == *v));
        assert_eq!(segmented.segments.len(), 4);
        assert!(segmented.segments[..3].iter().all(|s| s.len() == SEGMENT));
    }

    #[test]
    fn offsets_should_read_back_as_pushed_across_segments() {
        let mut offsets = Offsets::new();
        let plain: Vec<u64> = (0..(2 * SEGMENT as u64 + 3))
            // Past `u32::MAX` from the second segment on.
            .map(|i| i * 7 + (i >> SEGMENT_BITS) * (1 << 40))
            .collect();
        for &offset in &plain {
            offsets.push(offset);
        }
        offsets.resize(plain.len() + 2, plain[plain.len() - 1]);
        assert!(plain.iter().enumerate().all(|(i, &o)| offsets.get(i) == o));
        assert_eq!(offsets.len(), plain.len() + 2);
        assert_eq!(offsets.last(), plain.last().copied());
    }

    #[test]
    fn a_column_should_read_as_before_once_its_segments_are_on_disk() {
        let dir = SpillDir::new(&std::env::temp_dir()).unwrap();
        let mut column = Column::new();
        let mut offsets = Offsets::new();
        // More blocks on disk than the cache holds.
        let plain: Vec<u32> =
            (0..(CACHED * BLOCK / SEGMENT + 3) as u32 * SEGMENT as u32 + 5).collect();
        for (i, &value) in plain.iter().enumerate() {
            column.push(value);
            offsets.push(u64::from(value) * 3);
            if i == SEGMENT + 2 {
                // Only the full segment goes.
                assert_eq!(column.spill(&dir).unwrap(), (SEGMENT * 4) as u64);
                assert_eq!(column.spilled, 1);
            }
        }
        let written = column.spill(&dir).unwrap();
        assert_eq!(
            written,
            (plain.len() / SEGMENT - 1) as u64 * SEGMENT as u64 * 4
        );
        assert_eq!(column.spill(&dir).unwrap(), 0, "nothing more is full");
        assert!(offsets.spill(&dir).unwrap() > 0);
        // Forwards, backwards (past what the cache holds), and the held tail.
        for i in (0..plain.len()).chain((0..plain.len()).rev()) {
            assert_eq!(column.get(i), plain[i]);
            assert_eq!(offsets.get(i), u64::from(plain[i]) * 3);
        }
        assert_eq!(column.checked(plain.len()), None);
        column.extend([7, 8]);
        assert_eq!(column.get(plain.len() + 1), 8);
    }

    #[test]
    #[should_panic(expected = "index out of bounds")]
    fn an_index_past_the_end_should_panic_even_inside_the_last_segment() {
        let mut segmented = Segmented::new();
        segmented.push(1u32);
        let _ = segmented[1];
    }
}
