//! Interchangeable ids: what a model declares so that the checker explores
//! one state per class of states that differ only by a renaming of ids.
//!
//! A model whose processes run one program, told apart only by their ids,
//! has for every behaviour a copy per renaming of those ids. It declares each
//! set of such ids ([`Interchangeable`]), how a renaming acts on its state
//! ([`crate::TemporalModel::rename`]), and which fairness class belongs to
//! which id ([`crate::Fairness::of`]); the checker then keeps one
//! representative per orbit and still judges fairness exactly (see
//! docs/checker.md, "Symmetry").
//!
//! What the declaration promises, and what the checker verifies on the first
//! states it meets: renaming a state renames its successors (with their
//! fairness classes), and changes no property's value. A property that names
//! an id (process 0) is kept true by leaving that id out of the set.

use std::ops::Range;

/// A set of ids the model treats alike: any renaming among them maps each
/// behaviour to a behaviour, each fair one to a fair one, and keeps every
/// property's value.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Interchangeable {
    /// What the ids name, for reports (`"scheduler"`).
    pub name: &'static str,
    /// The ids; ids outside the range are never renamed.
    pub ids: Range<u8>,
}

impl Interchangeable {
    /// The ids `ids` of `name`.
    pub fn new(name: &'static str, ids: Range<u8>) -> Self {
        Interchangeable { name, ids }
    }
}

/// One renaming of each declared set's ids: a permutation per set.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Renaming {
    /// Per set, its first id and the image of each of its ids in order.
    sets: Vec<(u8, Vec<u8>)>,
}

impl Renaming {
    /// The renaming that leaves every id of `sets` in place.
    pub fn identity(sets: &[Interchangeable]) -> Self {
        Renaming {
            sets: sets
                .iter()
                .map(|set| (set.ids.start, set.ids.clone().collect()))
                .collect(),
        }
    }

    /// The renaming that sends the `k`-th id of each set to `images[set][k]`;
    /// `None` unless there is one permutation of its ids per set.
    pub fn from_images(sets: &[Interchangeable], images: Vec<Vec<u8>>) -> Option<Self> {
        if sets.len() != images.len() {
            return None;
        }
        let mut renamed = Vec::with_capacity(sets.len());
        for (set, image) in sets.iter().zip(images) {
            let mut sorted = image.clone();
            sorted.sort_unstable();
            if !sorted.iter().copied().eq(set.ids.clone()) {
                return None;
            }
            renamed.push((set.ids.start, image));
        }
        Some(Renaming { sets: renamed })
    }

    /// The new name of id `id` of set `set` (its index in the model's
    /// declaration); an id outside the set's range keeps its name.
    pub fn id(&self, set: usize, id: u8) -> u8 {
        let (start, images) = &self.sets[set];
        id.checked_sub(*start)
            .and_then(|k| images.get(usize::from(k)))
            .copied()
            .unwrap_or(id)
    }

    /// The image of each id of set `set`, in id order.
    pub fn images(&self, set: usize) -> &[u8] {
        &self.sets[set].1
    }

    /// `self` after `first`: the renaming that renames by `first`, then by
    /// `self`.
    pub fn after(&self, first: &Renaming) -> Renaming {
        Renaming {
            sets: self
                .sets
                .iter()
                .enumerate()
                .map(|(set, (start, _))| {
                    let images = first.images(set).iter().map(|&id| self.id(set, id));
                    (*start, images.collect())
                })
                .collect(),
        }
    }

    /// The renaming that undoes this one.
    pub fn inverse(&self) -> Renaming {
        Renaming {
            sets: self
                .sets
                .iter()
                .map(|(start, images)| {
                    let mut undone = vec![0; images.len()];
                    for (k, &image) in images.iter().enumerate() {
                        undone[usize::from(image - start)] = start + k as u8;
                    }
                    (*start, undone)
                })
                .collect(),
        }
    }

    /// Whether it renames nothing.
    pub fn is_identity(&self) -> bool {
        self.sets.iter().all(|(start, images)| {
            images
                .iter()
                .copied()
                .eq(*start..*start + images.len() as u8)
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn renamings_should_compose_as_functions_and_leave_other_ids_alone() {
        let sets = [Interchangeable::new("process", 1..4)];
        let rotate = Renaming::from_images(&sets, vec![vec![2, 3, 1]]).unwrap();
        let swap = Renaming::from_images(&sets, vec![vec![2, 1, 3]]).unwrap();
        assert_eq!(rotate.id(0, 1), 2);
        assert_eq!(rotate.id(0, 0), 0, "outside the set");
        assert_eq!(rotate.id(0, 9), 9, "outside the set");
        let both = swap.after(&rotate);
        for id in 0..5 {
            assert_eq!(both.id(0, id), swap.id(0, rotate.id(0, id)));
        }
        assert!(!both.is_identity());
        assert!(Renaming::identity(&sets).is_identity());
        assert!(both.inverse().after(&both).is_identity());
        assert!(both.after(&both.inverse()).is_identity());
    }

    #[test]
    fn images_that_are_not_a_permutation_should_make_no_renaming() {
        let sets = [Interchangeable::new("process", 0..2)];
        assert_eq!(Renaming::from_images(&sets, vec![vec![0, 0]]), None);
        assert_eq!(Renaming::from_images(&sets, vec![vec![0, 2]]), None);
        assert_eq!(Renaming::from_images(&sets, vec![]), None);
    }
}
