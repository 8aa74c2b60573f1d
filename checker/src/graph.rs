//! The explored state graph, numbered densely and kept compactly: per state
//! its BFS parent and a few label bits, per edge its target and the fairness
//! classes it takes.

/// One transition of the graph.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Edge {
    /// The successor's state number.
    pub(crate) to: u32,
    /// Bit `j` set: this step takes fairness class `j`. Always 0 on a
    /// self-loop, which changes nothing and so takes no class.
    pub(crate) fair: u32,
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
#[derive(Default)]
pub(crate) struct Graph {
    pub(crate) parents: Vec<Parent>,
    /// Per state, bit `k` set when label predicate `k` holds there.
    pub(crate) labels: Vec<u32>,
    /// Empty when edges were not kept (a safety-only check).
    pub(crate) offsets: Vec<u64>,
    pub(crate) edges: Vec<Edge>,
    pub(crate) expanded: u32,
}

impl Graph {
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
    pub(crate) fn out(&self, u: u32) -> &[Edge] {
        &self.edges[self.edge_range(u)]
    }

    /// The fairness classes enabled at `u`: those some non-stutter successor
    /// takes.
    pub(crate) fn enabled(&self, u: u32) -> u32 {
        self.out(u).iter().fold(0, |acc, e| acc | e.fair)
    }

    /// Whether label `k` holds at `u`.
    pub(crate) fn label(&self, u: u32, k: u8) -> bool {
        self.labels[u as usize] & (1 << k) != 0
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
