//! Sets of fairness classes, as the bits of the sets edges take (an edge
//! names its set by index; see [`crate::graph::Graph`]).
//!
//! The search is generic over the set's width, so that a model with at most
//! 32 classes keeps one-instruction set operations, and a model with up to
//! [`MAX_CLASSES`] still fits.

use std::fmt::Debug;

/// The most fairness classes a model may declare.
pub(crate) const MAX_CLASSES: usize = 256;

/// A set of fairness classes, numbered from 0: up to 32, 64 or
/// [`MAX_CLASSES`] of them, by type.
pub(crate) trait ClassSet:
    Copy + Default + Eq + std::hash::Hash + Debug + Send + Sync + 'static
{
    /// The set with class `j` added.
    #[must_use]
    fn with(self, j: usize) -> Self;
    /// Classes in either set.
    #[must_use]
    fn union(self, other: Self) -> Self;
    /// Classes in both sets.
    #[must_use]
    fn intersection(self, other: Self) -> Self;
    /// Classes in this set and not in `other`.
    #[must_use]
    fn minus(self, other: Self) -> Self;
    /// Whether the set is empty.
    fn is_empty(self) -> bool;
    /// Whether class `j` is in the set.
    fn contains(self, j: usize) -> bool;
}

macro_rules! word_set {
    ($word:ty) => {
        impl ClassSet for $word {
            fn with(self, j: usize) -> Self {
                self | 1 << j
            }

            fn union(self, other: Self) -> Self {
                self | other
            }

            fn intersection(self, other: Self) -> Self {
                self & other
            }

            fn minus(self, other: Self) -> Self {
                self & !other
            }

            fn is_empty(self) -> bool {
                self == 0
            }

            fn contains(self, j: usize) -> bool {
                self >> j & 1 != 0
            }
        }
    };
}

word_set!(u32);
word_set!(u64);

/// Up to [`MAX_CLASSES`] classes.
#[derive(Clone, Copy, Default, PartialEq, Eq, Hash, Debug)]
pub(crate) struct Wide([u64; MAX_CLASSES / 64]);

impl Wide {
    fn zip(self, other: Self, op: impl Fn(u64, u64) -> u64) -> Self {
        Wide(std::array::from_fn(|i| op(self.0[i], other.0[i])))
    }
}

impl ClassSet for Wide {
    fn with(mut self, j: usize) -> Self {
        self.0[j / 64] |= 1 << (j % 64);
        self
    }

    fn union(self, other: Self) -> Self {
        self.zip(other, |a, b| a | b)
    }

    fn intersection(self, other: Self) -> Self {
        self.zip(other, |a, b| a & b)
    }

    fn minus(self, other: Self) -> Self {
        self.zip(other, |a, b| a & !b)
    }

    fn is_empty(self) -> bool {
        self.0.iter().all(|&w| w == 0)
    }

    fn contains(self, j: usize) -> bool {
        self.0[j / 64] >> (j % 64) & 1 != 0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn laws<C: ClassSet>(last: usize) {
        let set = |members: &[usize]| members.iter().fold(C::default(), |s, &j| s.with(j));
        let a = set(&[0, last]);
        let b = set(&[last, 1]);
        assert_eq!(a.union(b), set(&[0, 1, last]));
        assert_eq!(a.intersection(b), set(&[last]));
        assert_eq!(a.minus(b), set(&[0]));
        assert!(a.minus(a).is_empty() && !a.is_empty());
        assert!(a.contains(last) && a.contains(0) && !a.contains(1));
        assert_ne!(
            set(&[last]),
            set(&[last - 1]),
            "every class has a bit of its own"
        );
    }

    #[test]
    fn every_width_should_be_a_set() {
        laws::<u32>(31);
        laws::<u64>(63);
        laws::<Wide>(MAX_CLASSES - 1);
    }
}
