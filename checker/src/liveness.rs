//! The fair-cycle search behind every liveness verdict.
//!
//! A liveness property fails exactly when some fair behaviour violates it, and
//! on a finite graph such a behaviour can be taken to be a lasso: a path to a
//! cycle, then the cycle forever. Under weak fairness a strongly connected
//! component holds a fair cycle iff the cycle through *all* of its states and
//! edges is fair (a larger cycle only adds states where a class is disabled
//! and edges that take it), so one pass of Tarjan's algorithm and one test per
//! component decide the property; no component is ever split again.
//!
//! - `◇□P` fails iff a fair component holds a state where `P` is false.
//! - `P ~> Q` fails iff, in the graph cut down to the states where `Q` is
//!   false, a state where `P` holds can reach a fair component.
//!
//! Tarjan's algorithm runs on an explicit stack, so deep graphs cannot
//! overflow the thread's stack.

use std::collections::{HashMap, VecDeque};
use std::sync::atomic::{AtomicUsize, Ordering};

use crate::graph::Graph;
use crate::memory::filled;

/// A liveness formula over the label bits of the graph.
#[derive(Clone, Copy, Debug)]
pub(crate) enum LabelFormula {
    /// `P ~> Q`; `p = None` stands for "is an initial state".
    LeadsTo { p: Option<u8>, q: u8 },
    /// `◇□P`.
    EventuallyAlways { p: u8 },
}

/// A fair behaviour that violates a formula: the BFS route to `start`, then
/// the edges of `bridge`, then the edges of `cycle` forever (edges are named
/// by their positions in the graph).
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct EdgeLasso {
    pub(crate) start: u32,
    pub(crate) bridge: Vec<usize>,
    pub(crate) cycle: Vec<usize>,
}

/// Marks a state whose component is finished and reaches no fair cycle, as
/// its `Mark::index`.
const DONE: u32 = u32::MAX;

/// Marks a state whose component is finished and reaches a fair cycle
/// (through allowed states), as its `Mark::index`. Keeping the fact in the
/// mark saves a second lookup per edge into a finished component.
const DONE_REACHES: u32 = u32::MAX - 1;

/// A set of states as one bit each: small enough to stay in cache while the
/// search jumps around the graph.
struct StateSet(Vec<u64>);

impl StateSet {
    fn from_fn(n: u32, contains: impl Fn(u32) -> bool) -> Self {
        let mut words = filled((n as usize).div_ceil(64), 0u64);
        for u in (0..n).filter(|&u| contains(u)) {
            words[u as usize / 64] |= 1 << (u % 64);
        }
        StateSet(words)
    }

    fn contains(&self, u: u32) -> bool {
        self.0[u as usize / 64] & (1 << (u % 64)) != 0
    }
}

/// Tarjan's algorithm over the states in `allowed`. After a state's
/// component is finished its `index` is `DONE` or `DONE_REACHES` and its
/// `low` is the component's number, so one mark per state serves the whole
/// search.
struct Tarjan<'g> {
    graph: &'g Graph,
    /// Whether every expanded state may stutter forever (TLA+), not only
    /// one without successors (whose stutter is an explicit self-loop).
    stutters: bool,
    allowed: StateSet,
    /// Per state, its index and low-link side by side: the search reads
    /// both of a state it meets, so they share a cache line.
    marks: Vec<Mark>,
    /// Per component number, whether it holds a fair cycle.
    fair: Vec<bool>,
}

/// A state's place in Tarjan's search: `index` 0 while unvisited.
#[derive(Clone, Copy)]
struct Mark {
    index: u32,
    low: u32,
}

/// A state whose edges the search is going through.
struct Frame {
    state: u32,
    /// The next of its edges to follow.
    position: usize,
    /// Whether an edge already followed leads to a finished component that
    /// reaches a fair cycle.
    escapes: bool,
}

/// The facts about one finished component that the formulas need.
struct Component<'a> {
    id: u32,
    members: &'a [u32],
    /// Whether a behaviour can stay in it forever, fairly.
    fair: bool,
    /// Whether a behaviour can reach, through allowed states, a component
    /// where it can.
    reaches_fair: bool,
}

impl<'g> Tarjan<'g> {
    fn new(graph: &'g Graph, stutters: bool, allowed: impl Fn(u32) -> bool) -> Self {
        Tarjan {
            graph,
            stutters,
            allowed: StateSet::from_fn(graph.len(), allowed),
            marks: filled(graph.len() as usize, Mark { index: 0, low: 0 }),
            fair: Vec::new(),
        }
    }

    /// The component of a finished state.
    fn component_of(&self, u: u32) -> Option<u32> {
        let mark = self.marks[u as usize];
        (mark.index >= DONE_REACHES).then_some(mark.low)
    }

    /// Runs the search from the allowed states that `roots` admits, handing
    /// each component reachable from them to `visit` as it is finished
    /// (successors' components first), until `visit` returns something.
    fn run<T>(
        &mut self,
        roots: impl Fn(u32) -> bool,
        all_fair: u32,
        mut visit: impl FnMut(&Component<'_>) -> Option<T>,
    ) -> Option<T> {
        let graph = self.graph;
        let mut next_index = 1u32;
        let mut stack: Vec<u32> = Vec::new();
        let mut calls: Vec<Frame> = Vec::new();
        for root in 0..graph.len() {
            if self.marks[root as usize].index != 0 || !self.allowed.contains(root) || !roots(root)
            {
                continue;
            }
            self.open(root, &mut next_index, &mut stack, &mut calls);
            while let Some(frame) = calls.last_mut() {
                let v = frame.state;
                if frame.position < graph.edge_range(v).end {
                    let w = graph.edges[frame.position].to;
                    frame.position += 1;
                    if !self.allowed.contains(w) {
                        continue;
                    }
                    let mark = self.marks[w as usize];
                    match mark.index {
                        0 => self.open(w, &mut next_index, &mut stack, &mut calls),
                        DONE => {}
                        DONE_REACHES => frame.escapes = true,
                        on_stack => {
                            let low = &mut self.marks[v as usize].low;
                            *low = (*low).min(on_stack);
                        }
                    }
                    continue;
                }
                let Some(Frame { escapes, .. }) = calls.pop() else {
                    break;
                };
                let Mark { index, low } = self.marks[v as usize];
                if low != index {
                    let parent = calls[calls.len() - 1].state;
                    let parent_low = &mut self.marks[parent as usize].low;
                    *parent_low = (*parent_low).min(low);
                    continue;
                }
                let start = stack.iter().rposition(|&u| u == v).unwrap_or(0);
                let id = self.fair.len() as u32;
                let members = &stack[start..];
                // Judged while the members are still open, which tells
                // their edges to one another from those leaving.
                let (fair, reaches_fair) = if let [only] = members {
                    self.judge_alone(*only, escapes, all_fair)
                } else {
                    self.judge(members, all_fair)
                };
                let index = if reaches_fair { DONE_REACHES } else { DONE };
                for &u in members {
                    self.marks[u as usize] = Mark { index, low: id };
                }
                self.fair.push(fair);
                if let Some(parent) = calls.last_mut() {
                    parent.escapes |= reaches_fair;
                }
                let component = Component {
                    id,
                    members,
                    fair,
                    reaches_fair,
                };
                let found = visit(&component);
                stack.truncate(start);
                if found.is_some() {
                    return found;
                }
            }
        }
        None
    }

    fn open(&mut self, u: u32, next_index: &mut u32, stack: &mut Vec<u32>, calls: &mut Vec<Frame>) {
        self.marks[u as usize] = Mark {
            index: *next_index,
            low: *next_index,
        };
        *next_index += 1;
        stack.push(u);
        calls.push(Frame {
            state: u,
            position: self.graph.edge_range(u).start,
            escapes: false,
        });
    }

    /// The edges that stay inside component `id`.
    fn internal_edges<'a>(
        &'a self,
        id: u32,
        members: &'a [u32],
    ) -> impl Iterator<Item = (u32, usize)> + 'a {
        members.iter().flat_map(move |&u| {
            self.graph
                .edge_range(u)
                .filter(move |&e| self.component_of(self.graph.edges[e].to) == Some(id))
                .map(move |e| (u, e))
        })
    }

    /// Judges a component just found, before its members are marked
    /// finished, in one pass over their edges: whether it holds a fair
    /// cycle, and whether it can reach one (itself, or through an edge to a
    /// component finished earlier that can).
    ///
    /// A component holds a fair cycle iff it has a cycle at all and every
    /// class is either taken by an edge inside it or disabled at one of its
    /// states.
    fn judge(&self, members: &[u32], all_fair: u32) -> (bool, bool) {
        let mut has_cycle = members.len() > 1;
        let mut taken = 0;
        let mut always_enabled = all_fair;
        let mut escapes = false;
        for &u in members {
            let mut enabled = 0;
            for edge in self.graph.out(u) {
                enabled |= edge.fair;
                // An allowed successor has been visited; one not finished
                // is still open, so a member: no member's edge leads below
                // the component's root on the stack.
                match self.marks[edge.to as usize].index {
                    0 => {}
                    DONE => {}
                    DONE_REACHES => escapes = true,
                    _ => {
                        has_cycle = true;
                        taken |= edge.fair;
                    }
                }
            }
            always_enabled &= enabled;
        }
        let fair = has_cycle && always_enabled & !taken == 0;
        (fair, fair || escapes)
    }

    /// [`Self::judge`] for a component of one state, `u`, whose edges lead
    /// only to itself and to components finished before it; `escapes` says
    /// whether one of those reaches a fair cycle. Only its own edges are
    /// read, none of its successors' marks. Its cycle is a self-loop, or,
    /// where every state may stutter, the stutter itself.
    fn judge_alone(&self, u: u32, escapes: bool, all_fair: u32) -> (bool, bool) {
        // A state found but not expanded takes part in no cycle: what is
        // enabled there is unknown.
        let mut has_cycle = self.stutters && u < self.graph.expanded;
        let mut taken = 0;
        let mut enabled = 0;
        for edge in self.graph.out(u) {
            enabled |= edge.fair;
            if edge.to == u {
                has_cycle = true;
                taken |= edge.fair;
            }
        }
        let fair = has_cycle && all_fair & enabled & !taken == 0;
        (fair, fair || escapes)
    }

    /// A shortest path of edges from `from` to a state satisfying `goal`,
    /// through allowed states that `through` admits; at least one edge long
    /// when `nonempty` is set, even if `from` itself satisfies `goal`.
    fn path(
        &self,
        from: u32,
        through: impl Fn(u32) -> bool,
        goal: impl Fn(u32) -> bool,
        nonempty: bool,
    ) -> Option<(u32, Vec<usize>)> {
        if !nonempty && goal(from) {
            return Some((from, Vec::new()));
        }
        let mut came_from: HashMap<u32, (u32, usize)> = HashMap::new();
        let mut queue = VecDeque::from([from]);
        while let Some(u) = queue.pop_front() {
            for e in self.graph.edge_range(u) {
                let w = self.graph.edges[e].to;
                if !self.allowed.contains(w) || !through(w) || came_from.contains_key(&w) {
                    continue;
                }
                came_from.insert(w, (u, e));
                if goal(w) {
                    let mut edges = Vec::new();
                    let mut at = w;
                    loop {
                        let (previous, e) = came_from[&at];
                        edges.push(e);
                        at = previous;
                        if at == from {
                            break;
                        }
                    }
                    edges.reverse();
                    return Some((w, edges));
                }
                queue.push_back(w);
            }
        }
        None
    }

    /// A cycle through all that makes component `id` fair, from and back to
    /// `start`: for each class, an edge taking it or a state disabling it.
    fn fair_cycle(&self, id: u32, members: &[u32], start: u32, all_fair: u32) -> Vec<usize> {
        let inside = |u: u32| self.component_of(u) == Some(id);
        let internal: Vec<(u32, usize)> = self.internal_edges(id, members).collect();
        let mut cycle = Vec::new();
        let mut at = start;
        for class in (0..32).filter(|j| all_fair & (1 << j) != 0) {
            let bit = 1u32 << class;
            if let Some(&(from, e)) = internal
                .iter()
                .find(|(_, e)| self.graph.edges[*e].fair & bit != 0)
            {
                if let Some((_, leg)) = self.path(at, inside, |u| u == from, false) {
                    cycle.extend(leg);
                }
                cycle.push(e);
                at = self.graph.edges[e].to;
            } else if let Some(&quiet) = members.iter().find(|&&u| self.graph.enabled(u) & bit == 0)
            {
                if let Some((_, leg)) = self.path(at, inside, |u| u == quiet, false) {
                    cycle.extend(leg);
                }
                at = quiet;
            }
        }
        let back = self.path(at, inside, |u| u == start, cycle.is_empty());
        if let Some((_, leg)) = back {
            cycle.extend(leg);
        }
        cycle
    }
}

/// [`find_violation`] for each of `formulas`, in that order, searching for
/// up to `threads` of them at once. Each search holds 8 bytes per state
/// while it runs.
pub(crate) fn find_violations(
    graph: &Graph,
    formulas: &[LabelFormula],
    all_fair: u32,
    initial: u32,
    stutters: bool,
    threads: usize,
) -> Vec<Option<EdgeLasso>> {
    let next = AtomicUsize::new(0);
    let search = || {
        let mut found = Vec::new();
        loop {
            let k = next.fetch_add(1, Ordering::Relaxed);
            let Some(&formula) = formulas.get(k) else {
                return found;
            };
            found.push((
                k,
                find_violation(graph, formula, all_fair, initial, stutters),
            ));
        }
    };
    let threads = threads.clamp(1, formulas.len().max(1));
    let mut found = if threads == 1 {
        search()
    } else {
        std::thread::scope(|scope| {
            let helpers: Vec<_> = (1..threads).map(|_| scope.spawn(search)).collect();
            let mut found = search();
            for helper in helpers {
                match helper.join() {
                    Ok(more) => found.extend(more),
                    Err(panic) => std::panic::resume_unwind(panic),
                }
            }
            found
        })
    };
    found.sort_unstable_by_key(|&(k, _)| k);
    found.into_iter().map(|(_, lasso)| lasso).collect()
}

/// Searches `graph` for a fair behaviour violating `formula`, where
/// `all_fair` has one bit per declared fairness class, the initial states
/// are those numbered below `initial`, and `stutters` says whether every
/// expanded state may stutter forever. A lasso whose cycle is empty stutters
/// at its entry.
pub(crate) fn find_violation(
    graph: &Graph,
    formula: LabelFormula,
    all_fair: u32,
    initial: u32,
    stutters: bool,
) -> Option<EdgeLasso> {
    match formula {
        LabelFormula::EventuallyAlways { p } => {
            let mut tarjan = Tarjan::new(graph, stutters, |_| true);
            let (id, members, start) = tarjan.run(
                |_| true,
                all_fair,
                |c| {
                    let start = c.members.iter().find(|&&u| !graph.label(u, p))?;
                    c.fair.then(|| (c.id, c.members.to_vec(), *start))
                },
            )?;
            Some(EdgeLasso {
                start,
                bridge: Vec::new(),
                cycle: tarjan.fair_cycle(id, &members, start, all_fair),
            })
        }
        LabelFormula::LeadsTo { p, q } => {
            let triggered = |u: u32| match p {
                Some(p) => graph.label(u, p),
                None => u < initial,
            };
            let mut tarjan = Tarjan::new(graph, stutters, |u| !graph.label(u, q));
            // Only what a trigger can reach matters.
            let start = tarjan.run(triggered, all_fair, |c| {
                if !c.reaches_fair {
                    return None;
                }
                c.members.iter().copied().find(|&u| triggered(u))
            })?;
            let in_fair_component = |u: u32| {
                tarjan
                    .component_of(u)
                    .is_some_and(|c| tarjan.fair[c as usize])
            };
            let (entry, bridge) = tarjan.path(start, |_| true, in_fair_component, false)?;
            let id = tarjan.component_of(entry)?;
            let members: Vec<u32> = (0..graph.len())
                .filter(|&u| tarjan.component_of(u) == Some(id))
                .collect();
            Some(EdgeLasso {
                start,
                bridge,
                cycle: tarjan.fair_cycle(id, &members, entry, all_fair),
            })
        }
    }
}
