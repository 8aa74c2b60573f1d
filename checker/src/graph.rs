//! The explored state graph, numbered densely and kept compactly: per state
//! its BFS parent and its label bits, per edge its target and the fairness
//! classes it takes.

use crate::classes::ClassSet;

/// One transition of the graph.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Edge<C> {
    /// The successor's state number.
    pub(crate) to: u32,
    /// The fairness classes this step takes. Always empty on a self-loop,
    /// which changes nothing and so takes no class.
    pub(crate) fair: C,
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

/// The reachable graph as far as it was explored.
///
/// States `0..expanded` have their successors recorded: `edges[offsets[u]..
/// offsets[u + 1]]`, in the model's action order; a state with no successor
/// has one self-loop (it stutters forever). States from `expanded` on were
/// found but not expanded before a bound stopped the search: they have no
/// edges, so no cycle passes through them.
pub(crate) struct Graph<C> {
    pub(crate) parents: Vec<Parent>,
    /// Per state, [`Graph::label_words`] words: bit `k % 32` of word `k / 32`
    /// set when label predicate `k` holds there.
    pub(crate) labels: Vec<u32>,
    /// Words of label bits per state.
    pub(crate) label_words: usize,
    /// Empty when edges were not kept (a safety-only check).
    pub(crate) offsets: Vec<u64>,
    pub(crate) edges: Vec<Edge<C>>,
    pub(crate) expanded: u32,
}

impl<C: ClassSet> Graph<C> {
    /// An empty graph whose states carry `labels` label bits.
    pub(crate) fn new(labels: usize) -> Self {
        Graph {
            parents: Vec::new(),
            labels: Vec::new(),
            label_words: labels.div_ceil(32),
            offsets: Vec::new(),
            edges: Vec::new(),
            expanded: 0,
        }
    }

    /// How many states were found.
    pub(crate) fn len(&self) -> u32 {
        self.parents.len() as u32
    }

    /// The positions in `edges` of state `u`'s successors.
    pub(crate) fn edge_range(&self, u: u32) -> std::ops::Range<usize> {
        let u = u as usize;
        self.offsets[u] as usize..self.offsets[u + 1] as usize
    }

    /// The successors of state `u`.
    pub(crate) fn out(&self, u: u32) -> &[Edge<C>] {
        &self.edges[self.edge_range(u)]
    }

    /// The fairness classes enabled at `u`: those some non-stutter successor
    /// takes.
    pub(crate) fn enabled(&self, u: u32) -> C {
        self.out(u)
            .iter()
            .fold(C::default(), |acc, e| acc.union(e.fair))
    }

    /// Whether label `k` holds at `u`.
    pub(crate) fn label(&self, u: u32, k: usize) -> bool {
        self.labels[u as usize * self.label_words + k / 32] >> (k % 32) & 1 != 0
    }

    /// The route to `u` from an initial state along BFS parents: the initial
    /// state's index in `init_states()` and the successor ordinal of each
    /// step after it.
    pub(crate) fn route_to(&self, u: u32) -> Route {
        let mut ordinals = Vec::new();
        let mut at = u;
        loop {
            let parent = self.parents[at as usize];
            if parent.state == ROOT {
                ordinals.reverse();
                return Route {
                    init: parent.ordinal,
                    ordinals,
                };
            }
            ordinals.push(parent.ordinal);
            at = parent.state;
        }
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
