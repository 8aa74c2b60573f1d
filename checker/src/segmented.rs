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

use std::ops::{Index, IndexMut};

/// Elements per segment: 65,536 (256 KiB of `u32`).
const SEGMENT_BITS: u32 = 16;
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

    /// Its elements, in order.
    pub(crate) fn iter(&self) -> impl Iterator<Item = &T> + '_ {
        self.segments.iter().flatten()
    }

    /// The element at `index`, or `None` past the end.
    pub(crate) fn get(&self, index: usize) -> Option<T> {
        (index < self.len).then(|| self[index])
    }

    /// Appends `value` until it holds `len` elements (nothing when it holds
    /// as many or more).
    pub(crate) fn resize(&mut self, len: usize, value: T) {
        while self.len < len {
            self.push(value);
        }
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

/// A non-decreasing sequence of `u64` (where each state's edges start), in
/// 4 bytes an element instead of 8: per segment of [`SEGMENT`] elements its
/// first, and per element its distance from it.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(crate) struct Offsets {
    bases: Vec<u64>,
    above: Segmented<u32>,
}

impl Offsets {
    /// An empty one.
    pub(crate) fn new() -> Self {
        Offsets {
            bases: Vec::new(),
            above: Segmented::new(),
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
        self.bases[index >> SEGMENT_BITS] + u64::from(self.above[index])
    }

    /// Appends `offset` until it holds `len` offsets.
    pub(crate) fn resize(&mut self, len: usize, offset: u64) {
        while self.len() < len {
            self.push(offset);
        }
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
        assert!(segmented.iter().eq(plain.iter()));
        assert_eq!(segmented.get(plain.len()), None);
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
    #[should_panic(expected = "index out of bounds")]
    fn an_index_past_the_end_should_panic_even_inside_the_last_segment() {
        let mut segmented = Segmented::new();
        segmented.push(1u32);
        let _ = segmented[1];
    }
}
