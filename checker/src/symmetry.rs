//! Symmetry reduction: the group of renamings a model declares
//! ([`TemporalModel::interchangeable`]), one canonical state per orbit, and
//! what the fair-cycle search needs to judge fairness exactly on the graph of
//! canonical states (see [`crate::liveness`] and docs/checker.md,
//! "Symmetry").
//!
//! An edge of the reduced graph leaves a canonical state `c`, takes an
//! action of `c` to a state `t`, and arrives at `canonical(t) = π(t)`; it
//! keeps `π` (as an element's number). A concrete behaviour through `c`
//! under a renaming `f` (the state `f(c)`) takes the action renamed by `f`,
//! whose classes are the edge's renamed by `f`, and arrives at `f(t) =
//! f∘π⁻¹(canonical(t))`: its next frame is `f∘π⁻¹`. The search follows
//! frames to tell which concrete classes a cycle takes.

use std::collections::{HashMap, HashSet};

use serde::Serialize;
use stateright::Model;
use steadfast_spec::{
    Fairness, Interchangeable, Renaming, StatePredicate, Strength, TemporalModel,
};

use crate::classes::ClassSet;
use crate::seen::{Fingerprint, Fingerprinter};
use crate::CheckError;

/// The most renamings a group may hold: an edge names its renaming by a
/// byte.
pub(crate) const MAX_RENAMINGS: usize = 256;

/// The number of a renaming in its [`Group`]; 0 is the identity.
pub(crate) type Element = u8;

/// A predicate a verdict reads, with the name of a property that reads it.
pub(crate) type NamedPredicate<M> = (&'static str, StatePredicate<M>);

/// The identity's number.
pub(crate) const IDENTITY: Element = 0;

/// Every renaming of the declared sets (the product of their symmetric
/// groups), numbered, with the tables the search composes them by.
pub(crate) struct Group {
    sets: Vec<Interchangeable>,
    renamings: Vec<Renaming>,
    /// `compose[a · n + b]`: `a` after `b`.
    compose: Vec<Element>,
    inverse: Vec<Element>,
    /// Per element, per fairness class, the class it renames it to.
    classes: Vec<Vec<u16>>,
    /// A swap of the first two ids and a rotation of all, per set: they
    /// generate the group, so a property of each is one of every element.
    generators: Vec<Element>,
}

impl Group {
    /// The group the model declares, checked against its fairness; `None`
    /// when it renames nothing (no set, or sets of one id).
    pub(crate) fn of<M: TemporalModel>(
        model: &M,
        fairness: &[Fairness<M>],
    ) -> Result<Option<Self>, CheckError> {
        let sets = model.interchangeable();
        let mut renamings = vec![Vec::new()];
        for set in &sets {
            let mut extended = Vec::new();
            for images in &renamings {
                for permutation in permutations(set.ids.clone().collect()) {
                    let mut images: Vec<Vec<u8>> = images.clone();
                    images.push(permutation);
                    extended.push(images);
                    if extended.len() > MAX_RENAMINGS {
                        return Err(CheckError::TooManyRenamings(MAX_RENAMINGS));
                    }
                }
            }
            renamings = extended;
        }
        if renamings.len() == 1 {
            return Ok(None);
        }
        let renamings: Vec<Renaming> = renamings
            .into_iter()
            .map(|images| Renaming::from_images(&sets, images).expect("permutations of each set"))
            .collect();
        let numbers: HashMap<&Renaming, Element> = renamings
            .iter()
            .enumerate()
            .map(|(k, r)| (r, k as Element))
            .collect();
        let n = renamings.len();
        let mut compose = Vec::with_capacity(n * n);
        for a in &renamings {
            for b in &renamings {
                compose.push(numbers[&a.after(b)]);
            }
        }
        let inverse = (0..n)
            .map(|a| {
                let found = (0..n).find(|&b| compose[a * n + b] == IDENTITY);
                found.expect("a group has inverses") as Element
            })
            .collect();
        let classes = renamings
            .iter()
            .map(|r| class_map(&sets, fairness, r))
            .collect::<Result<_, _>>()?;
        let mut generators = Vec::new();
        for (k, set) in sets.iter().enumerate().filter(|(_, s)| s.ids.len() > 1) {
            let ids: Vec<u8> = set.ids.clone().collect();
            let mut swap = ids.clone();
            swap.swap(0, 1);
            let mut rotate = ids.clone();
            rotate.rotate_left(1);
            for images in [swap, rotate] {
                let mut all: Vec<Vec<u8>> = sets.iter().map(|s| s.ids.clone().collect()).collect();
                all[k] = images;
                let renaming = Renaming::from_images(&sets, all).expect("a permutation");
                generators.push(numbers[&renaming]);
            }
        }
        generators.sort_unstable();
        generators.dedup();
        Ok(Some(Group {
            sets,
            renamings,
            compose,
            inverse,
            classes,
            generators,
        }))
    }

    /// How many renamings it holds.
    pub(crate) fn len(&self) -> usize {
        self.renamings.len()
    }

    /// The renaming numbered `g`.
    pub(crate) fn renaming(&self, g: Element) -> &Renaming {
        &self.renamings[usize::from(g)]
    }

    /// `a` after `b`.
    pub(crate) fn compose(&self, a: Element, b: Element) -> Element {
        self.compose[usize::from(a) * self.len() + usize::from(b)]
    }

    /// The renaming that undoes `a`.
    pub(crate) fn inverse(&self, a: Element) -> Element {
        self.inverse[usize::from(a)]
    }

    /// The class that renaming `g` makes of class `j`.
    pub(crate) fn class(&self, g: Element, j: usize) -> usize {
        usize::from(self.classes[usize::from(g)][j])
    }

    /// The representative of `state`'s orbit: of its renamings, the one
    /// with the smallest fingerprint (the first such in numbering order),
    /// with that fingerprint and the number of the renaming that gives it.
    /// Every state of an orbit has the same one, unless two states of the
    /// orbit share a fingerprint, which is the collision the seen set
    /// risks anyway.
    pub(crate) fn canonical<M>(
        &self,
        model: &M,
        state: M::State,
        fingerprinter: &Fingerprinter,
    ) -> (M::State, Fingerprint, Element)
    where
        M: TemporalModel,
        M::State: Clone + std::hash::Hash,
    {
        let mut best_fp = fingerprinter.fingerprint(&state);
        let mut best = (IDENTITY, None);
        for (g, renaming) in self.renamings.iter().enumerate().skip(1) {
            let renamed = model.rename(&state, renaming);
            let fp = fingerprinter.fingerprint(&renamed);
            if fp < best_fp {
                best_fp = fp;
                best = (g as Element, Some(renamed));
            }
        }
        match best {
            (g, Some(renamed)) => (renamed, best_fp, g),
            (_, None) => (state, best_fp, IDENTITY),
        }
    }

    /// A renaming as the user declared its sets: `scheduler 0→1 1→0`.
    pub(crate) fn describe(&self, g: Element) -> String {
        let renaming = self.renaming(g);
        let parts: Vec<String> = self
            .sets
            .iter()
            .enumerate()
            .map(|(k, set)| {
                let moves: Vec<String> = set
                    .ids
                    .clone()
                    .zip(renaming.images(k))
                    .map(|(from, to)| format!("{from}→{to}"))
                    .collect();
                format!("{} {}", set.name, moves.join(" "))
            })
            .collect();
        parts.join(", ")
    }

    /// Checks the promise of the declaration on up to `budget` states
    /// reached from the initial ones (explored without reduction), for each
    /// generator `g`: renaming by `g` and back gives the state again; keeps
    /// it inside the boundary and every predicate's value; and renames its
    /// successors, each with its fairness classes. A model that breaks it
    /// would be reduced unsoundly, so this is an error, naming the state
    /// and the renaming.
    pub(crate) fn verify<M>(
        &self,
        model: &M,
        classes: &[fn(&M::Action) -> bool],
        predicates: &[NamedPredicate<M>],
        budget: usize,
    ) -> Result<(), CheckError>
    where
        M: TemporalModel,
        M::State: Clone + std::hash::Hash + PartialEq + Serialize,
    {
        let fingerprinter = Fingerprinter::new();
        let mut seen = HashSet::new();
        let mut queue: std::collections::VecDeque<M::State> = model.init_states().into();
        let mut checked = 0;
        while let Some(state) = queue.pop_front() {
            if checked == budget || !seen.insert(fingerprinter.fingerprint(&state)) {
                continue;
            }
            checked += 1;
            let steps = successors(model, &state, classes);
            for &g in &self.generators {
                let broken = |what: String| CheckError::NotSymmetric {
                    what,
                    renaming: self.describe(g),
                    state: json_excerpt(&state),
                };
                let renamed = model.rename(&state, self.renaming(g));
                if model.rename(&renamed, self.renaming(self.inverse(g))) != state {
                    return Err(broken(
                        "renaming it back does not give the state again".into(),
                    ));
                }
                if !model.within_boundary(&renamed) {
                    return Err(broken("the renamed state is outside the boundary".into()));
                }
                for (name, predicate) in predicates {
                    if predicate(model, &state) != predicate(model, &renamed) {
                        return Err(broken(format!("{name:?} changes its value")));
                    }
                }
                let mut expected: Vec<(Fingerprint, Vec<usize>)> = steps
                    .iter()
                    .map(|(next, taken)| {
                        let next = fingerprinter.fingerprint(&model.rename(next, self.renaming(g)));
                        let mut taken: Vec<usize> =
                            taken.iter().map(|&j| self.class(g, j)).collect();
                        taken.sort_unstable();
                        (next, taken)
                    })
                    .collect();
                let mut found: Vec<(Fingerprint, Vec<usize>)> =
                    successors(model, &renamed, classes)
                        .into_iter()
                        .map(|(next, taken)| (fingerprinter.fingerprint(&next), taken))
                        .collect();
                expected.sort_unstable();
                found.sort_unstable();
                if expected != found {
                    return Err(broken(
                        "the renamed state's steps are not the state's steps renamed (their \
                         successors, or the fairness classes they take)"
                            .into(),
                    ));
                }
            }
            queue.extend(steps.into_iter().map(|(next, _)| next));
        }
        Ok(())
    }
}

/// The successors of `state` inside the boundary and other than itself,
/// each with the classes its action takes.
fn successors<M: Model>(
    model: &M,
    state: &M::State,
    classes: &[fn(&M::Action) -> bool],
) -> Vec<(M::State, Vec<usize>)>
where
    M::State: PartialEq,
{
    let mut actions = Vec::new();
    model.actions(state, &mut actions);
    actions
        .into_iter()
        .filter_map(|action| {
            let taken = (0..classes.len())
                .filter(|&j| classes[j](&action))
                .collect();
            let next = model.next_state(state, action)?;
            (next != *state && model.within_boundary(&next)).then_some((next, taken))
        })
        .collect()
}

/// The start of a state's JSON, for an error message.
pub(crate) fn json_excerpt<S: Serialize>(state: &S) -> String {
    const MOST: usize = 600;
    let mut text = serde_json::to_string(state).unwrap_or_else(|e| format!("<{e}>"));
    if text.len() > MOST {
        let cut = (0..=MOST)
            .rev()
            .find(|&i| text.is_char_boundary(i))
            .unwrap_or(0);
        text.truncate(cut);
        text.push('…');
    }
    text
}

/// Per class, the class `renaming` makes of it: the `k`-th class declared
/// for an id becomes the `k`-th declared for the id's new name.
fn class_map<M: Model>(
    sets: &[Interchangeable],
    fairness: &[Fairness<M>],
    renaming: &Renaming,
) -> Result<Vec<u16>, CheckError> {
    let mut position = HashMap::new();
    let mut keys = Vec::with_capacity(fairness.len());
    for class in fairness {
        let key = class.member.map(|(set, id)| {
            let k = position.entry((set, id)).or_insert(0usize);
            *k += 1;
            (set, id, *k - 1)
        });
        if let Some((set, _, _)) = key {
            if set >= sets.len() {
                return Err(CheckError::AsymmetricFairness(format!(
                    "class {:?} belongs to set {set}, but the model declares {} interchangeable \
                     sets",
                    class.name,
                    sets.len()
                )));
            }
        }
        keys.push(key);
    }
    let index: HashMap<(usize, u8, usize), usize> = keys
        .iter()
        .enumerate()
        .filter_map(|(j, key)| key.map(|key| (key, j)))
        .collect();
    keys.iter()
        .enumerate()
        .map(|(j, key)| {
            let Some((set, id, k)) = *key else {
                return Ok(j as u16);
            };
            let to = renaming.id(set, id);
            let renamed = index
                .get(&(set, to, k))
                .copied()
                .filter(|&r| fairness[r].strength == fairness[j].strength);
            renamed.map(|r| r as u16).ok_or_else(|| {
                let strength = |s: Strength| format!("{s:?}").to_lowercase();
                CheckError::AsymmetricFairness(format!(
                    "class {:?} is the {}th {} class of {} {id}, and {} {to} has no such class: \
                     declare the same classes, in the same order, for every id of the set",
                    fairness[j].name,
                    k + 1,
                    strength(fairness[j].strength),
                    sets[set].name,
                    sets[set].name,
                ))
            })
        })
        .collect()
}

/// Every permutation of `items`, the identity first (Heap's algorithm).
fn permutations(mut items: Vec<u8>) -> Vec<Vec<u8>> {
    let n = items.len();
    let mut all = vec![items.clone()];
    let mut counters = vec![0; n];
    let mut i = 1;
    while i < n {
        if counters[i] < i {
            let j = if i % 2 == 0 { 0 } else { counters[i] };
            items.swap(j, i);
            all.push(items.clone());
            counters[i] += 1;
            i = 1;
        } else {
            counters[i] = 0;
            i += 1;
        }
    }
    all
}

/// What the fair-cycle search knows of the group: composition, and the
/// fairness classes each renaming makes of each set of classes an edge
/// takes.
pub(crate) struct Renamer<C> {
    n: usize,
    compose: Vec<Element>,
    inverse: Vec<Element>,
    class_maps: Vec<Vec<u16>>,
    /// `renamed[set · n + g]`: the class set numbered `set` renamed by `g`.
    renamed: Vec<C>,
}

impl<C: ClassSet> Renamer<C> {
    /// The tables for `group`, over the class sets `sets` that edges name.
    pub(crate) fn new(group: &Group, sets: &[C]) -> Self {
        let n = group.len();
        let mut renamer = Renamer {
            n,
            compose: group.compose.clone(),
            inverse: group.inverse.clone(),
            class_maps: group.classes.clone(),
            renamed: Vec::new(),
        };
        renamer.renamed = sets
            .iter()
            .flat_map(|&set| (0..n).map(move |g| (set, g as Element)))
            .map(|(set, g)| renamer.rename(set, g))
            .collect();
        renamer
    }

    /// `a` after `b`.
    pub(crate) fn compose(&self, a: Element, b: Element) -> Element {
        self.compose[usize::from(a) * self.n + usize::from(b)]
    }

    /// The renaming that undoes `a`.
    pub(crate) fn inverse(&self, a: Element) -> Element {
        self.inverse[usize::from(a)]
    }

    /// The classes `g` makes of `set`.
    pub(crate) fn rename(&self, set: C, g: Element) -> C {
        if g == IDENTITY {
            return set;
        }
        let map = &self.class_maps[usize::from(g)];
        (0..map.len())
            .filter(|&j| set.contains(j))
            .fold(C::default(), |acc, j| acc.with(usize::from(map[j])))
    }

    /// The classes `g` makes of the class set numbered `set`.
    pub(crate) fn rename_indexed(&self, set: u16, g: Element) -> C {
        self.renamed[usize::from(set) * self.n + usize::from(g)]
    }

    /// The subgroup `generators` generate.
    pub(crate) fn subgroup(&self, generators: &[Element]) -> Vec<Element> {
        let mut members = vec![IDENTITY];
        let mut inside = vec![false; self.n];
        inside[usize::from(IDENTITY)] = true;
        let mut i = 0;
        while i < members.len() {
            let a = members[i];
            for &g in generators {
                let b = self.compose(g, a);
                if !inside[usize::from(b)] {
                    inside[usize::from(b)] = true;
                    members.push(b);
                }
            }
            i += 1;
        }
        members
    }

    /// The classes some element of `subgroup` makes of one of `set`.
    pub(crate) fn closure(&self, set: C, subgroup: &[Element]) -> C {
        subgroup
            .iter()
            .fold(C::default(), |acc, &h| acc.union(self.rename(set, h)))
    }

    /// The classes every element of `subgroup` makes of one of `set`.
    pub(crate) fn interior(&self, set: C, subgroup: &[Element]) -> C {
        subgroup
            .iter()
            .fold(set, |acc, &h| acc.intersection(self.rename(set, h)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use steadfast_spec::mutex::{Lock, LockVariant};

    #[test]
    fn permutations_should_list_each_once_identity_first() {
        let all = permutations(vec![1, 2, 3, 4]);
        assert_eq!(all.len(), 24);
        assert_eq!(all[0], vec![1, 2, 3, 4]);
        let distinct: HashSet<_> = all.iter().collect();
        assert_eq!(distinct.len(), 24);
    }

    #[test]
    fn the_lock_should_form_a_group_that_renames_its_classes() {
        let lock = Lock::new(4, LockVariant::Filter).unwrap();
        let fairness = lock.fairness();
        let group = Group::of(&lock, &fairness).unwrap().unwrap();
        assert_eq!(group.len(), 6, "the three processes other than 0");
        for a in 0..6u8 {
            assert_eq!(group.compose(a, group.inverse(a)), IDENTITY);
            for j in 0..4 {
                let id = group.renaming(a).id(0, j as u8);
                assert_eq!(group.class(a, j), usize::from(id), "class j is process j's");
            }
        }
        let renamer = Renamer::<u32>::new(&group, &[0b0010]);
        let all = renamer.subgroup(&group.generators);
        assert_eq!(all.len(), 6, "the generators generate the group");
        assert_eq!(renamer.closure(0b0010, &all), 0b1110);
        assert_eq!(renamer.interior(0b1110, &all), 0b1110);
        assert_eq!(renamer.interior(0b0110, &all), 0);
        assert!(group.verify(&lock, &[], &[], 200).is_ok());
    }
}
