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
use std::sync::RwLock;

use serde::Serialize;
use stateright::Model;
use steadfast_spec::{
    Fairness, Interchangeable, Renaming, StatePredicate, Strength, TemporalModel,
};

use crate::classes::ClassSet;
use crate::concrete::successors;
use crate::seen::{Fingerprint, Fingerprinter};
use crate::CheckError;

/// The most renamings a declared group may have: an edge names its renaming
/// by 16 bits.
pub(crate) const MAX_RENAMINGS: usize = 1 << 16;

/// The most renamings tried one by one for a canonical state, when the model
/// gives no canonical form of its own.
pub(crate) const MAX_TRIED: usize = 256;

/// The number of a renaming in its [`Group`]; 0 is the identity.
pub(crate) type Element = u16;

/// A predicate a verdict reads, with the name of a property that reads it.
pub(crate) type NamedPredicate<M> = (&'static str, StatePredicate<M>);

/// The identity's number.
pub(crate) const IDENTITY: Element = 0;

/// The renamings of the declared sets (the product of their symmetric
/// groups): how a canonical state is found, and the renamings met so far,
/// numbered, with what each makes of every fairness class.
pub(crate) struct Group {
    sets: Vec<Interchangeable>,
    /// Every renaming, identity first, numbered as here, when canonical
    /// states are found by trying each; `None` when the model gives them
    /// ([`TemporalModel::canonical`]).
    tried: Option<Vec<Renaming>>,
    /// The renamings met so far.
    met: RwLock<Met>,
    /// Whose each fairness class is.
    fairness: ClassKeys,
    /// A swap of the first two ids and a rotation of all, per set: they
    /// generate the group, so a property of each is one of every element.
    generators: Vec<Element>,
}

/// Renamings numbered as they are met, with their class maps.
#[derive(Default)]
struct Met {
    renamings: Vec<Renaming>,
    numbers: HashMap<Renaming, Element>,
    /// Per renaming, per fairness class, the class it renames it to.
    classes: Vec<Vec<u16>>,
}

impl Group {
    /// The group the model declares, checked against its fairness; `None`
    /// when it renames nothing (no set, or sets of one id).
    pub(crate) fn of<M: TemporalModel>(
        model: &M,
        fairness: &[Fairness<M>],
    ) -> Result<Option<Self>, CheckError> {
        let sets = model.interchangeable();
        // The product of the sets' factorials, saturating: a set of 255 ids
        // has more renamings than any check could take.
        let size = sets
            .iter()
            .flat_map(|set| 1..=set.ids.len())
            .try_fold(1usize, |acc, n| acc.checked_mul(n))
            .unwrap_or(usize::MAX);
        if size == 1 {
            return Ok(None);
        }
        if size > MAX_RENAMINGS {
            return Err(CheckError::TooManyRenamings {
                most: MAX_RENAMINGS,
                given_form: true,
            });
        }
        let gives_form = model
            .init_states()
            .first()
            .is_some_and(|state| model.canonical(state).is_some());
        if !gives_form && size > MAX_TRIED {
            return Err(CheckError::TooManyRenamings {
                most: MAX_TRIED,
                given_form: false,
            });
        }
        let identity = Renaming::identity(&sets);
        let mut group = Group {
            tried: None,
            met: RwLock::default(),
            fairness: ClassKeys::of(&sets, fairness)?,
            generators: Vec::new(),
            sets,
        };
        group.meet(identity)?;
        if !gives_form {
            let mut every = vec![Vec::new()];
            for set in &group.sets {
                every = every
                    .into_iter()
                    .flat_map(|images: Vec<Vec<u8>>| {
                        permutations(set.ids.clone().collect()).into_iter().map(
                            move |permutation| {
                                let mut images = images.clone();
                                images.push(permutation);
                                images
                            },
                        )
                    })
                    .collect();
            }
            let every: Vec<Renaming> = every
                .into_iter()
                .map(|images| {
                    Renaming::from_images(&group.sets, images).expect("permutations of each set")
                })
                .collect();
            for renaming in &every {
                group.meet(renaming.clone())?;
            }
            group.tried = Some(every);
        }
        for (k, set) in group
            .sets
            .iter()
            .enumerate()
            .filter(|(_, s)| s.ids.len() > 1)
        {
            let ids: Vec<u8> = set.ids.clone().collect();
            let mut swap = ids.clone();
            swap.swap(0, 1);
            let mut rotate = ids.clone();
            rotate.rotate_left(1);
            for images in [swap, rotate] {
                let mut all: Vec<Vec<u8>> =
                    group.sets.iter().map(|s| s.ids.clone().collect()).collect();
                all[k] = images;
                let renaming = Renaming::from_images(&group.sets, all).expect("a permutation");
                let g = group.meet(renaming)?;
                group.generators.push(g);
            }
        }
        group.generators.sort_unstable();
        group.generators.dedup();
        Ok(Some(group))
    }

    /// The number of `renaming`, numbering it if it is new; an error if a
    /// fairness class has no counterpart under it.
    fn meet(&self, renaming: Renaming) -> Result<Element, CheckError> {
        if let Some(&g) = self.read().numbers.get(&renaming) {
            return Ok(g);
        }
        let map = self.fairness.map(&self.sets, &renaming)?;
        let mut met = self.met.write().unwrap_or_else(|p| p.into_inner());
        if let Some(&g) = met.numbers.get(&renaming) {
            return Ok(g);
        }
        // The group has at most MAX_RENAMINGS elements.
        let g = met.renamings.len() as Element;
        met.renamings.push(renaming.clone());
        met.numbers.insert(renaming, g);
        met.classes.push(map);
        Ok(g)
    }

    /// The number of a renaming of the group: every renaming of it has a
    /// class map, since the generators' do.
    fn number(&self, renaming: Renaming) -> Element {
        self.meet(renaming)
            .expect("a renaming composed of generators maps every class")
    }

    fn read(&self) -> std::sync::RwLockReadGuard<'_, Met> {
        self.met.read().unwrap_or_else(|p| p.into_inner())
    }

    /// The renaming numbered `g`.
    pub(crate) fn renaming(&self, g: Element) -> Renaming {
        self.read().renamings[usize::from(g)].clone()
    }

    /// `a` after `b`.
    pub(crate) fn compose(&self, a: Element, b: Element) -> Element {
        if b == IDENTITY {
            return a;
        }
        if a == IDENTITY {
            return b;
        }
        let composed = {
            let met = self.read();
            met.renamings[usize::from(a)].after(&met.renamings[usize::from(b)])
        };
        self.number(composed)
    }

    /// The renaming that undoes `a`.
    pub(crate) fn inverse(&self, a: Element) -> Element {
        if a == IDENTITY {
            return a;
        }
        let undone = self.read().renamings[usize::from(a)].inverse();
        self.number(undone)
    }

    /// The class that renaming `g` makes of class `j`.
    pub(crate) fn class(&self, g: Element, j: usize) -> usize {
        usize::from(self.read().classes[usize::from(g)][j])
    }

    /// The classes `g` makes of `set`.
    pub(crate) fn rename<C: ClassSet>(&self, set: C, g: Element) -> C {
        if g == IDENTITY {
            return set;
        }
        let met = self.read();
        let map = &met.classes[usize::from(g)];
        (0..map.len())
            .filter(|&j| set.contains(j))
            .fold(C::default(), |acc, j| acc.with(usize::from(map[j])))
    }

    /// The classes some renaming that `generators` generate makes of one of
    /// `set`: the union of the orbits of its classes.
    pub(crate) fn closure<C: ClassSet>(&self, set: C, generators: &[Element]) -> C {
        let mut closed = set;
        let mut queue: Vec<usize> = (0..self.fairness.keys.len())
            .filter(|&j| set.contains(j))
            .collect();
        while let Some(j) = queue.pop() {
            for &g in generators {
                let k = self.class(g, j);
                if !closed.contains(k) {
                    closed = closed.with(k);
                    queue.push(k);
                }
            }
        }
        closed
    }

    /// The classes every renaming that `generators` generate makes of one
    /// of `set`: the orbits wholly inside it.
    pub(crate) fn interior<C: ClassSet>(&self, set: C, generators: &[Element]) -> C {
        let every = (0..self.fairness.keys.len()).fold(C::default(), |acc, j| acc.with(j));
        every.minus(self.closure(every.minus(set), generators))
    }

    /// The representative of `state`'s orbit, with its fingerprint and the
    /// number of the renaming that gives it: the model's canonical form, or
    /// else, of the state's renamings, the one with the smallest
    /// fingerprint (the first such in numbering order). Every state of an
    /// orbit has the same one, unless two states of the orbit share a
    /// fingerprint, which is the collision the seen set risks anyway.
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
        let Some(tried) = &self.tried else {
            // A state the model gives no form for stands for itself: sound
            // (its edges still name their renamings), only reduced less; the
            // verification refuses a model that does so on its first states.
            let Some((canonical, renaming)) = model.canonical(&state) else {
                let fp = fingerprinter.fingerprint(&state);
                return (state, fp, IDENTITY);
            };
            let fp = fingerprinter.fingerprint(&canonical);
            return (canonical, fp, self.number(renaming));
        };
        let mut best_fp = fingerprinter.fingerprint(&state);
        let mut best = (IDENTITY, None);
        for (g, renaming) in tried.iter().enumerate().skip(1) {
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
        M::Action: Clone,
    {
        let fingerprinter = Fingerprinter::new();
        let mut seen = HashSet::new();
        let mut queue: std::collections::VecDeque<M::State> = model.init_states().into();
        let mut checked = 0;
        while let Some(state) = queue.pop_front() {
            if checked == budget {
                break;
            }
            if !seen.insert(fingerprinter.fingerprint(&state)) {
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
                let renaming = self.renaming(g);
                let renamed = model.rename(&state, &renaming);
                if model.rename(&renamed, &renaming.inverse()) != state {
                    return Err(broken(
                        "renaming it back does not give the state again".into(),
                    ));
                }
                if self.tried.is_none() {
                    let (Some((canonical, by)), Some((again, _))) =
                        (model.canonical(&state), model.canonical(&renamed))
                    else {
                        return Err(broken("the model gives no canonical form of it".into()));
                    };
                    if model.rename(&state, &by) != canonical {
                        return Err(broken(
                            "its canonical form is not its renaming by the renaming given with it"
                                .into(),
                        ));
                    }
                    if again != canonical {
                        return Err(broken(
                            "the renamed state has another canonical form than the state".into(),
                        ));
                    }
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
                        let next = fingerprinter.fingerprint(&model.rename(next, &renaming));
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

/// Whose each fairness class is, as the checker renames them.
struct ClassKeys {
    /// Per class, its key: set, id, and its place among the classes
    /// declared for that id (`None`: a class of no id).
    keys: Vec<Option<(usize, u8, usize)>>,
    /// Each key's class.
    index: HashMap<(usize, u8, usize), usize>,
    names: Vec<&'static str>,
    strengths: Vec<Strength>,
}

impl ClassKeys {
    fn of<M: Model>(
        sets: &[Interchangeable],
        fairness: &[Fairness<M>],
    ) -> Result<Self, CheckError> {
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
                        "class {:?} belongs to set {set}, but the model declares {} \
                         interchangeable sets",
                        class.name,
                        sets.len()
                    )));
                }
            }
            keys.push(key);
        }
        let index = keys
            .iter()
            .enumerate()
            .filter_map(|(j, key)| key.map(|key| (key, j)))
            .collect();
        Ok(ClassKeys {
            keys,
            index,
            names: fairness.iter().map(|f| f.name).collect(),
            strengths: fairness.iter().map(|f| f.strength).collect(),
        })
    }

    /// Per class, the class `renaming` makes of it: the `k`-th class
    /// declared for an id becomes the `k`-th declared for the id's new name.
    fn map(&self, sets: &[Interchangeable], renaming: &Renaming) -> Result<Vec<u16>, CheckError> {
        self.keys
            .iter()
            .enumerate()
            .map(|(j, key)| {
                let Some((set, id, k)) = *key else {
                    return Ok(j as u16);
                };
                let to = renaming.id(set, id);
                let renamed = self
                    .index
                    .get(&(set, to, k))
                    .copied()
                    .filter(|&r| self.strengths[r] == self.strengths[j]);
                renamed.map(|r| r as u16).ok_or_else(|| {
                    let strength = format!("{:?}", self.strengths[j]).to_lowercase();
                    CheckError::AsymmetricFairness(format!(
                        "class {:?} is the {}th {strength} class of {} {id}, and {} {to} has no \
                         such class: declare the same classes, in the same order, for every id \
                         of the set",
                        self.names[j],
                        k + 1,
                        sets[set].name,
                        sets[set].name,
                    ))
                })
            })
            .collect()
    }
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
        let tried = group.tried.as_ref().map(Vec::len);
        assert_eq!(tried, Some(6), "the three processes other than 0");
        for a in 0..6 {
            assert_eq!(group.compose(a, group.inverse(a)), IDENTITY);
            for j in 0..4 {
                let id = group.renaming(a).id(0, j as u8);
                assert_eq!(group.class(a, j), usize::from(id), "class j is process j's");
            }
        }
        let generators = group.generators.clone();
        assert_eq!(group.closure(0b0010u32, &generators), 0b1110);
        assert_eq!(group.interior(0b1111u32, &generators), 0b1111);
        assert_eq!(group.interior(0b0111u32, &generators), 0b0001);
        assert_eq!(group.closure(0b0010u32, &[]), 0b0010);
        assert!(group.verify(&lock, &[], &[], 200).is_ok());
    }
}
