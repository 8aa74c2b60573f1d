//! The explored state graph, numbered densely and kept compactly: per state
//! its BFS parent and its label bits, per edge its target and the fairness
//! classes it takes.

use crate::classes::ClassSet;
use std::sync::Arc;

use crate::segmented::{Column, Offsets};
use crate::spill::SpillDir;
use crate::symmetry::{Element, Group, IDENTITY};

/// One transition of the graph, as [`Graph::edge`] gives it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Edge<C> {
    /// The successor's state number.
    pub(crate) to: u32,
    /// The fairness classes this step takes. Always empty on a self-loop,
    /// which changes nothing and so takes no class.
    pub(crate) fair: C,
    /// The renaming that made the successor canonical (see
    /// [`crate::symmetry`]); the identity without symmetry.
    pub(crate) renaming: Element,
}

/// How a state was first reached: from `parent` by its `ordinal`-th successor.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Parent {
    /// The predecessor on a shortest path from an initial state; `ROOT` for
    /// an initial state.
    pub(crate) state: u32,
    /// Which of the predecessor's successors (in the model's action order,
    /// counting only actions that yield a state inside the boundary), or, for
    /// an initial state, its index in `init_states()`.
    pub(crate) ordinal: u32,
}

/// The parent of an initial state.
pub(crate) const ROOT: u32 = u32::MAX;

/// The most distinct sets of fairness classes a graph's edges may take: an
/// edge names its set by a 16-bit index.
pub(crate) const MAX_CLASS_SETS: usize = 1 << 16;

/// The reachable graph as far as it was explored: 6 bytes per edge, and per
/// state 4 for its parent, 4 for where its edges start and 4 per 32 labels
/// (a safety-only check keeps no edges, and 4 bytes for the ordinal instead).
///
/// States `0..expanded` have their successors recorded: edges
/// `offsets[u]..offsets[u + 1]`, in the model's action order; a state with
/// no successor has one self-loop (it stutters forever). States from
/// `expanded` on were found but not expanded before a bound stopped the
/// search: they have no edges, so no cycle passes through them.
///
/// An edge is its target and the index of the set of fairness classes it
/// takes: a model's actions take few distinct sets, so they are kept once,
/// in `class_sets`, and an edge costs 6 bytes whatever the sets' width.
///
/// Every column is a [`Column`]: once a check spills ([`Graph::spill`]),
/// its full segments are on disk and are read back through a cache, so the
/// columns are read by number (`get`), never by reference.
pub(crate) struct Graph<C> {
    /// Per state, its predecessor on a shortest path from an initial state;
    /// [`ROOT`] for an initial state.
    parents: Column<u32>,
    /// Per state, which of its parent's successors it is, only while no
    /// edges are kept (a safety-only check): with edges, it is the position
    /// of the first edge from the parent to it (the first successor that
    /// reached a state is the one that discovered it).
    ordinals: Column<u32>,
    /// Per initial state (numbered first, in order), its index in
    /// `init_states()`.
    roots: Vec<u32>,
    /// Per state, [`Graph::label_words`] words: bit `k % 32` of word `k / 32`
    /// set when label predicate `k` holds there.
    pub(crate) labels: Column<u32>,
    /// Words of label bits per state.
    pub(crate) label_words: usize,
    /// Empty when edges were not kept (a safety-only check).
    pub(crate) offsets: Offsets,
    /// Per edge, the successor's state number.
    targets: Column<u32>,
    /// Per edge, the index in `class_sets` of the classes it takes.
    takes: Column<u16>,
    /// The distinct sets of classes edges take; the empty set first, which
    /// every self-loop takes.
    class_sets: Vec<C>,
    /// Per edge, the renaming that made its target canonical; empty
    /// without symmetry (every renaming the identity).
    renamings: Column<Element>,
    /// How renamings compose and rename classes, under symmetry.
    pub(crate) symmetry: Option<Arc<Group>>,
    pub(crate) expanded: u32,
}

impl<C: ClassSet> Graph<C> {
    /// An empty graph whose states carry `labels` label bits.
    pub(crate) fn new(labels: usize) -> Self {
        Graph {
            parents: Column::new(),
            ordinals: Column::new(),
            roots: Vec::new(),
            labels: Column::new(),
            label_words: labels.div_ceil(32),
            offsets: Offsets::new(),
            targets: Column::new(),
            takes: Column::new(),
            class_sets: vec![C::default()],
            renamings: Column::new(),
            symmetry: None,
            expanded: 0,
        }
    }

    /// How many states were found.
    pub(crate) fn len(&self) -> u32 {
        self.parents.len() as u32
    }

    /// How many initial states it has: they are numbered first.
    pub(crate) fn initial_states(&self) -> u32 {
        self.roots.len() as u32
    }

    /// How many edges were kept.
    pub(crate) fn edge_count(&self) -> usize {
        self.targets.len()
    }

    /// Records the states found next, in number order: each with its parent
    /// and which of the parent's successors it is (for an initial state, its
    /// index in `init_states()`). The ordinals are kept only while edges are
    /// not, which name them otherwise.
    pub(crate) fn add_states(&mut self, found: &[Parent], keep_edges: bool) {
        for parent in found {
            if parent.state == ROOT {
                self.roots.push(parent.ordinal);
            }
            self.parents.push(parent.state);
            if !keep_edges {
                self.ordinals.push(parent.ordinal);
            }
        }
    }

    /// Appends edges, each a target, the index of its class set (see
    /// [`Graph::set_classes`]) and the renaming that made the target
    /// canonical, kept when `renamed` (under symmetry).
    pub(crate) fn add_edges(&mut self, edges: &[(u32, u16, Element)], renamed: bool) {
        self.targets.extend(edges.iter().map(|&(to, _, _)| to));
        self.takes.extend(edges.iter().map(|&(_, set, _)| set));
        if renamed {
            self.renamings.extend(edges.iter().map(|&(_, _, g)| g));
        }
    }

    /// Takes the distinct class sets edges name by index.
    pub(crate) fn set_classes(&mut self, class_sets: Vec<C>) {
        debug_assert_eq!(class_sets.first(), Some(&C::default()));
        self.class_sets = class_sets;
    }

    /// Makes the graph one of canonical states under `group`.
    pub(crate) fn reduce_by(&mut self, group: Arc<Group>) {
        self.symmetry = Some(group);
    }

    /// The positions of state `u`'s successors.
    pub(crate) fn edge_range(&self, u: u32) -> std::ops::Range<usize> {
        let u = u as usize;
        self.offsets.get(u) as usize..self.offsets.get(u + 1) as usize
    }

    /// The edge at position `e`.
    pub(crate) fn edge(&self, e: usize) -> Edge<C> {
        Edge {
            to: self.targets.get(e),
            fair: self.class_sets[usize::from(self.takes.get(e))],
            renaming: self.renamings.checked(e).unwrap_or(IDENTITY),
        }
    }

    /// The classes the edge at position `e` takes, renamed by `frame`: those
    /// a concrete step takes from the state its source stands for under
    /// `frame`.
    pub(crate) fn taken_in(&self, e: usize, frame: Element) -> C {
        match &self.symmetry {
            Some(group) => group.rename(self.class_sets[usize::from(self.takes.get(e))], frame),
            None => self.class_sets[usize::from(self.takes.get(e))],
        }
    }

    /// The successor's number of the edge at position `e`.
    pub(crate) fn target(&self, e: usize) -> u32 {
        self.targets.get(e)
    }

    /// The successors of state `u`.
    pub(crate) fn out(&self, u: u32) -> impl Iterator<Item = Edge<C>> + '_ {
        self.edge_range(u).map(|e| self.edge(e))
    }

    /// Whether label `k` holds at `u`.
    pub(crate) fn label(&self, u: u32, k: usize) -> bool {
        self.labels.get(u as usize * self.label_words + k / 32) >> (k % 32) & 1 != 0
    }

    /// Which of its parent's successors `u` is, or for an initial state its
    /// index in `init_states()`.
    fn ordinal_of(&self, u: u32) -> u32 {
        let parent = self.parent(u);
        if parent == ROOT {
            return self.roots[u as usize];
        }
        if let Some(ordinal) = self.ordinals.checked(u as usize) {
            return ordinal;
        }
        let range = self.edge_range(parent);
        let first = range
            .clone()
            .find(|&e| self.targets.get(e) == u)
            .expect("a state's parent has an edge to it");
        (first - range.start) as u32
    }

    /// The route to `u` from an initial state along BFS parents: the initial
    /// state's index in `init_states()` and the successor ordinal of each
    /// step after it.
    pub(crate) fn route_to(&self, u: u32) -> Route {
        let mut ordinals = Vec::new();
        let mut at = u;
        loop {
            let parent = self.parent(at);
            if parent == ROOT {
                ordinals.reverse();
                return Route {
                    init: self.ordinal_of(at),
                    ordinals,
                };
            }
            ordinals.push(self.ordinal_of(at));
            at = parent;
        }
    }

    /// The predecessor of `u` on a shortest path from an initial state;
    /// [`ROOT`] for an initial state.
    pub(crate) fn parent(&self, u: u32) -> u32 {
        self.parents.get(u as usize)
    }

    /// Writes every full segment of its columns to files of `dir`, and frees
    /// them (see [`Column::spill`]); returns how many bytes went.
    pub(crate) fn spill(&mut self, dir: &SpillDir) -> std::io::Result<u64> {
        Ok(self.parents.spill(dir)?
            + self.ordinals.spill(dir)?
            + self.labels.spill(dir)?
            + self.offsets.spill(dir)?
            + self.targets.spill(dir)?
            + self.takes.spill(dir)?
            + self.renamings.spill(dir)?)
    }

    /// The successor ordinal of the edge at position `e`, which leaves `from`.
    pub(crate) fn ordinal(&self, from: u32, e: usize) -> u32 {
        (e - self.edge_range(from).start) as u32
    }
}

/// A path named by the choices that make it: which initial state, then which
/// successor at each step. The model turns it back into states and actions.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Route {
    pub(crate) init: u32,
    pub(crate) ordinals: Vec<u32>,
}
