//! The fair-cycle search behind every liveness verdict.
//!
//! A liveness property fails exactly when some fair behaviour violates it, and
//! on a finite graph such a behaviour can be taken to be a lasso: a path to a
//! cycle, then the cycle forever. Under weak fairness alone a strongly
//! connected component holds a fair cycle iff the cycle through *all* of its
//! states and edges is fair (a larger cycle only adds states where a class is
//! disabled and edges that take it), so one pass of Tarjan's algorithm and
//! one test per component decide the property.
//!
//! Strong fairness is not monotone that way: a state where a strongly fair
//! class is enabled but never taken spoils every cycle through it. Such a
//! component is decomposed again without those states, recursively (the
//! Emerson–Lei construction), and is fair iff some part of it, its *core*,
//! passes the test.
//!
//! - `◇□P` fails iff a fair core holds a state where `P` is false.
//! - `□◇P` fails iff, in the graph cut down to the states where `P` is
//!   false, a fair core is reachable.
//! - `P ~> Q` fails iff, in the graph cut down to the states where `Q` is
//!   false, a state where `P` holds can reach a fair core.
//!
//! Tarjan's algorithm runs on an explicit stack, so deep graphs cannot
//! overflow the thread's stack.
//!
//! Under symmetry a component of the graph of canonical states stands for
//! components of the model whose states are its states renamed. Which
//! classes such a component takes and where they are enabled is read through
//! [`Frames`]: a renaming per state, under which the states stand for one
//! concrete component, and the subgroup of renamings that component is
//! closed under (the renamings its cycles compose to). A class is taken in
//! it iff some element of the subgroup makes it of a class some edge takes
//! in its state's frame; enabled everywhere iff every element keeps it
//! enabled at every state. The concrete component is fair iff this says so,
//! and a fair cycle is built over (state, frame) pairs, so that it closes on
//! the same concrete state (see docs/checker.md, "Symmetry").

use std::collections::{HashMap, HashSet, VecDeque};
use std::sync::atomic::{AtomicUsize, Ordering};

use crate::classes::ClassSet;
use crate::graph::Graph;
use crate::memory::filled;
use crate::segmented::Segmented;
use crate::symmetry::{Element, IDENTITY};

/// A liveness formula over the label bits of the graph.
#[derive(Clone, Copy, Debug)]
pub(crate) enum LabelFormula {
    /// `P ~> Q`; `p = None` stands for "is an initial state".
    LeadsTo { p: Option<usize>, q: usize },
    /// `◇□P`.
    EventuallyAlways { p: usize },
    /// `□◇P`.
    InfinitelyOften { p: usize },
}

/// The fairness classes of a model, by strength.
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct FairSets<C> {
    /// Weakly fair: not enabled continuously without being taken.
    pub(crate) weak: C,
    /// Strongly fair: not enabled infinitely often without being taken.
    pub(crate) strong: C,
}

impl<C: ClassSet> FairSets<C> {
    fn all(self) -> C {
        self.weak.union(self.strong)
    }
}

/// How the search judges behaviours: the fairness, and whether every
/// expanded state may stutter forever (TLA+) or only one without successors
/// (whose stutter is an explicit self-loop in the graph).
#[derive(Clone, Copy, Debug)]
pub(crate) struct Rules<C> {
    pub(crate) fairness: FairSets<C>,
    pub(crate) stutters: bool,
}

/// A fair behaviour that violates a formula: the BFS route to `start`, then
/// the edges of `bridge`, then the edges of `cycle` forever (edges are named
/// by their positions in the graph). An empty cycle stutters at its entry.
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
struct Tarjan<'g, C> {
    graph: &'g Graph<C>,
    rules: Rules<C>,
    allowed: StateSet,
    /// Per state, its index and low-link side by side: the search reads
    /// both of a state it meets, so they share a cache line.
    marks: Segmented<Mark>,
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
    members: &'a [u32],
    /// Whether a behaviour can stay in it forever, fairly.
    fair: bool,
    /// Whether a behaviour can reach, through allowed states, a component
    /// where it can.
    reaches_fair: bool,
}

/// What the classes do on a set of states and the edges among them.
struct Summary<C> {
    /// Some edge inside takes the class.
    taken: C,
    /// Enabled at every state.
    always: C,
    /// Enabled at some state.
    somewhere: C,
}

/// A place in the concrete graph a component stands for: a state of the
/// graph and the renaming under which it stands for the concrete state.
type Node = (u32, Element);

/// The frames of a strongly connected set of states (see the module's
/// documentation); without symmetry every frame is the identity.
struct Frames {
    /// Per state, its frame: empty without symmetry.
    of: HashMap<u32, Element>,
    /// Renamings that generate the subgroup the concrete component is
    /// closed under: none without symmetry.
    generators: Vec<Element>,
}

impl Frames {
    fn of(&self, u: u32) -> Element {
        self.of.get(&u).copied().unwrap_or(IDENTITY)
    }
}

impl<'g, C: ClassSet> Tarjan<'g, C> {
    fn new(graph: &'g Graph<C>, rules: Rules<C>, allowed: impl Fn(u32) -> bool) -> Self {
        Tarjan {
            graph,
            rules,
            allowed: StateSet::from_fn(graph.len(), allowed),
            marks: {
                let mut marks = Segmented::new();
                marks.resize(graph.len() as usize, Mark { index: 0, low: 0 });
                marks
            },
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
        mut visit: impl FnMut(&Self, &Component<'_>) -> Option<T>,
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
                    let w = graph.target(frame.position);
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
                let (fair, reaches_fair) = match members {
                    [only] if !self.renamed_loop(*only) => self.judge_alone(*only, escapes),
                    _ => self.judge(members),
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
                    members,
                    fair,
                    reaches_fair,
                };
                let found = visit(self, &component);
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

    /// Judges a component of several states just found, before its members
    /// are marked finished, in one pass over their edges: whether it holds a
    /// fair cycle, and whether it can reach one (itself, or through an edge
    /// to a component finished earlier that can).
    ///
    /// Under weak fairness it holds one iff every class is taken by an edge
    /// inside or disabled at one of its states; a strongly fair class enabled
    /// at one of its states and taken by no edge inside sends it to
    /// [`Self::core`].
    fn judge(&self, members: &[u32]) -> (bool, bool) {
        if self.graph.symmetry.is_some() {
            let escapes = members.iter().any(|&u| {
                self.graph
                    .out(u)
                    .any(|edge| self.marks[edge.to as usize].index == DONE_REACHES)
            });
            let open = |w: u32| !matches!(self.marks[w as usize].index, 0 | DONE | DONE_REACHES);
            let (summary, _) = self.summary(members, open);
            let (weak_fair, spoiling) = self.fairness(&summary);
            let fair = weak_fair && (spoiling.is_empty() || self.core(members, |_| true).is_some());
            return (fair, fair || escapes);
        }
        let mut summary = Summary {
            taken: C::default(),
            always: self.rules.fairness.weak,
            somewhere: C::default(),
        };
        let mut escapes = false;
        for &u in members {
            let mut enabled = C::default();
            for edge in self.graph.out(u) {
                enabled = enabled.union(edge.fair);
                // An allowed successor has been visited; one not finished
                // is still open, so a member: no member's edge leads below
                // the component's root on the stack.
                match self.marks[edge.to as usize].index {
                    0 | DONE => {}
                    DONE_REACHES => escapes = true,
                    _ => summary.taken = summary.taken.union(edge.fair),
                }
            }
            summary.always = summary.always.intersection(enabled);
            summary.somewhere = summary.somewhere.union(enabled);
        }
        let (weak_fair, spoiling) = self.fairness(&summary);
        let fair = weak_fair && (spoiling.is_empty() || self.core(members, |_| true).is_some());
        (fair, fair || escapes)
    }

    /// Whether a set of states with this summary passes weak fairness, and
    /// the strongly fair classes enabled in it and taken by none of its
    /// edges, which spoil every cycle through a state where they are
    /// enabled.
    fn fairness(&self, summary: &Summary<C>) -> (bool, C) {
        let FairSets { weak, strong } = self.rules.fairness;
        let weak_fair = weak
            .intersection(summary.always)
            .minus(summary.taken)
            .is_empty();
        let spoiling = strong.intersection(summary.somewhere).minus(summary.taken);
        (weak_fair, spoiling)
    }

    /// Whether `u` has an edge to itself that is a step, not a stutter:
    /// one to another state of its orbit, under symmetry.
    fn renamed_loop(&self, u: u32) -> bool {
        self.graph.symmetry.is_some()
            && self
                .graph
                .out(u)
                .any(|edge| edge.to == u && edge.renaming != IDENTITY)
    }

    /// The frame reached from `frame` by the edge at position `e`.
    fn next_frame(&self, frame: Element, e: usize) -> Element {
        match &self.graph.symmetry {
            Some(group) => group.compose(frame, group.inverse(self.graph.edge(e).renaming)),
            None => IDENTITY,
        }
    }

    /// The classes enabled at `u` in frame `frame`.
    fn enabled_in(&self, u: u32, frame: Element) -> C {
        self.graph.edge_range(u).fold(C::default(), |acc, e| {
            acc.union(self.graph.taken_in(e, frame))
        })
    }

    /// The frames of the strongly connected `set`, rooted at its first
    /// state; `inside` tells its states from others.
    fn frames(&self, set: &[u32], inside: impl Fn(u32) -> bool) -> Frames {
        let Some(group) = &self.graph.symmetry else {
            return Frames {
                of: HashMap::new(),
                generators: Vec::new(),
            };
        };
        let mut of = HashMap::from([(set[0], IDENTITY)]);
        let mut generators = Vec::new();
        let mut queue = VecDeque::from([set[0]]);
        while let Some(u) = queue.pop_front() {
            let frame = of[&u];
            for e in self.graph.edge_range(u) {
                let w = self.graph.target(e);
                if !inside(w) {
                    continue;
                }
                let next = self.next_frame(frame, e);
                match of.get(&w) {
                    None => {
                        of.insert(w, next);
                        queue.push_back(w);
                    }
                    Some(&known) => {
                        let cycle = group.compose(next, group.inverse(known));
                        if cycle != IDENTITY && !generators.contains(&cycle) {
                            generators.push(cycle);
                        }
                    }
                }
            }
        }
        Frames { of, generators }
    }

    /// What the classes do on the concrete component the strongly
    /// connected `set` stands for (itself, without symmetry), in the frame
    /// of its first state, with the frames it was read through.
    fn summary(&self, set: &[u32], inside: impl Fn(u32) -> bool) -> (Summary<C>, Frames) {
        let frames = self.frames(set, &inside);
        let mut summary = Summary {
            taken: C::default(),
            always: self.rules.fairness.weak,
            somewhere: C::default(),
        };
        for &u in set {
            let frame = frames.of(u);
            let mut enabled = C::default();
            for e in self.graph.edge_range(u) {
                let taken = self.graph.taken_in(e, frame);
                enabled = enabled.union(taken);
                if inside(self.graph.target(e)) {
                    summary.taken = summary.taken.union(taken);
                }
            }
            summary.always = summary.always.intersection(enabled);
            summary.somewhere = summary.somewhere.union(enabled);
        }
        if let Some(group) = &self.graph.symmetry {
            summary = Summary {
                taken: group.closure(summary.taken, &frames.generators),
                always: group.interior(summary.always, &frames.generators),
                somewhere: group.closure(summary.somewhere, &frames.generators),
            };
        }
        (summary, frames)
    }

    /// [`Self::judge`] for a component of one state, `u`, whose edges lead
    /// only to itself and to components finished before it; `escapes` says
    /// whether one of those reaches a fair cycle. Only its own edges are
    /// read, none of its successors' marks. Its cycle is a self-loop, or,
    /// where every state may stutter, the stutter itself; a class enabled
    /// there is enabled for good, so weak and strong fairness agree.
    fn judge_alone(&self, u: u32, escapes: bool) -> (bool, bool) {
        let mut has_cycle = self.may_stutter(u);
        let mut enabled = C::default();
        for edge in self.graph.out(u) {
            enabled = enabled.union(edge.fair);
            has_cycle |= edge.to == u;
        }
        // A self-loop takes no class.
        let fair = has_cycle && self.rules.fairness.all().intersection(enabled).is_empty();
        (fair, fair || escapes)
    }

    /// Whether `u` may repeat forever without an edge of its own. A state
    /// found but not expanded may not: what is enabled there is unknown.
    fn may_stutter(&self, u: u32) -> bool {
        self.rules.stutters && u < self.graph.expanded
    }

    /// [`Self::summary`] of the strongly connected `set` (whose states must
    /// all be allowed), and whether its edges or stutters close a cycle.
    fn summarize(&self, set: &[u32], inside: &HashSet<u32>) -> (Summary<C>, Frames, bool) {
        let has_cycle = set.len() > 1
            || set
                .iter()
                .any(|&u| self.may_stutter(u) || self.graph.out(u).any(|edge| edge.to == u));
        let (summary, frames) = self.summary(set, |w| inside.contains(&w));
        (summary, frames, has_cycle)
    }

    /// A fair core of the strongly connected `members` holding a state that
    /// `wanted` admits: a strongly connected part of them on which a
    /// behaviour can stay forever, fairly. The whole when no strongly fair
    /// class spoils it; otherwise the states where a spoiling class is
    /// enabled are removed and the rest decomposed again.
    fn core(&self, members: &[u32], wanted: impl Fn(u32) -> bool) -> Option<Vec<u32>> {
        let mut work = vec![members.to_vec()];
        while let Some(set) = work.pop() {
            if !set.iter().any(|&u| wanted(u)) {
                continue;
            }
            let inside: HashSet<u32> = set.iter().copied().collect();
            let (summary, frames, has_cycle) = self.summarize(&set, &inside);
            // Taking states away can only disable fewer and take fewer
            // classes: a weak failure is final.
            let (weak_fair, spoiling) = self.fairness(&summary);
            if !has_cycle || !weak_fair {
                continue;
            }
            if spoiling.is_empty() {
                return Some(set);
            }
            // The spoiling classes are closed under the frames' subgroup, so
            // a state spoils in one frame of the component iff in all.
            let rest: Vec<u32> = set
                .into_iter()
                .filter(|&u| {
                    self.enabled_in(u, frames.of(u))
                        .intersection(spoiling)
                        .is_empty()
                })
                .collect();
            work.extend(self.components(&rest));
        }
        None
    }

    /// The strongly connected components of the subgraph induced by `set`.
    fn components(&self, set: &[u32]) -> Vec<Vec<u32>> {
        let inside: HashSet<u32> = set.iter().copied().collect();
        let mut marks: HashMap<u32, Mark> = HashMap::new();
        let mut on_stack: HashSet<u32> = HashSet::new();
        let mut stack = Vec::new();
        let mut found = Vec::new();
        let mut next_index = 1;
        for &root in set {
            if marks.contains_key(&root) {
                continue;
            }
            let mut calls = vec![(root, self.graph.edge_range(root).start)];
            marks.insert(
                root,
                Mark {
                    index: next_index,
                    low: next_index,
                },
            );
            next_index += 1;
            stack.push(root);
            on_stack.insert(root);
            while let Some(&(v, position)) = calls.last() {
                if position < self.graph.edge_range(v).end {
                    let w = self.graph.target(position);
                    if let Some(top) = calls.last_mut() {
                        top.1 += 1;
                    }
                    if !inside.contains(&w) {
                        continue;
                    }
                    match marks.get(&w) {
                        None => {
                            marks.insert(
                                w,
                                Mark {
                                    index: next_index,
                                    low: next_index,
                                },
                            );
                            next_index += 1;
                            stack.push(w);
                            on_stack.insert(w);
                            calls.push((w, self.graph.edge_range(w).start));
                        }
                        Some(&Mark { index, .. }) if on_stack.contains(&w) => {
                            let mark = marks.get_mut(&v).expect("v is open");
                            mark.low = mark.low.min(index);
                        }
                        Some(_) => {}
                    }
                    continue;
                }
                calls.pop();
                let Mark { index, low } = marks[&v];
                if let Some(&(parent, _)) = calls.last() {
                    let mark = marks.get_mut(&parent).expect("the parent is open");
                    mark.low = mark.low.min(low);
                }
                if low == index {
                    let start = stack.iter().rposition(|&u| u == v).unwrap_or(0);
                    let component: Vec<u32> = stack.drain(start..).collect();
                    for u in &component {
                        on_stack.remove(u);
                    }
                    found.push(component);
                }
            }
        }
        found
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
                let w = self.graph.target(e);
                if !self.allowed.contains(w) || !through(w) || came_from.contains_key(&w) {
                    continue;
                }
                came_from.insert(w, (u, e));
                if goal(w) {
                    return Some((w, self.trace(&came_from, from, w)));
                }
                queue.push_back(w);
            }
        }
        None
    }

    /// The edges by which a breadth-first search from `from` reached `to`.
    fn trace<K: Copy + Eq + std::hash::Hash>(
        &self,
        came_from: &HashMap<K, (K, usize)>,
        from: K,
        to: K,
    ) -> Vec<usize> {
        let mut edges = Vec::new();
        let mut at = to;
        loop {
            let (previous, e) = came_from[&at];
            edges.push(e);
            at = previous;
            if at == from {
                break;
            }
        }
        edges.reverse();
        edges
    }

    /// A short fair cycle through the fair core `core`, from and back to
    /// `start`: it goes to the nearest witness of a class it still owes (an
    /// edge taking the class, or, for a weakly fair class, a state where it
    /// is disabled) until it owes none, then home; a class it meets on the
    /// way is paid on the way. Empty when `start` may stutter and owes
    /// nothing: the behaviour repeats `start` forever.
    ///
    /// It runs over (state, frame) pairs, from `start` in the identity
    /// frame and back to it in the identity frame, so that under symmetry
    /// it closes on the same concrete state and pays in concrete classes.
    fn fair_cycle(&self, core: &[u32], start: u32) -> Vec<usize> {
        let FairSets { weak, strong } = self.rules.fairness;
        let inside: HashSet<u32> = core.iter().copied().collect();
        let graph = self.graph;
        let quiet = |(u, frame): Node| weak.minus(self.enabled_in(u, frame));
        // A strongly fair class never enabled in the core is never owed;
        // one enabled there is paid only by taking it.
        let mut rooted = core.to_vec();
        if let Some(k) = rooted.iter().position(|&u| u == start) {
            rooted.swap(0, k);
        }
        let (summary, _) = self.summary(&rooted, |w| inside.contains(&w));
        let home: Node = (start, IDENTITY);
        let mut owed = weak
            .union(strong.intersection(summary.somewhere))
            .minus(quiet(home));
        let mut cycle = Vec::new();
        let mut at = home;
        while !owed.is_empty() {
            let Some((legs, witness)) = self.nearest_witness(at, &inside, owed) else {
                break;
            };
            for e in legs.into_iter().chain(witness) {
                owed = owed.minus(graph.taken_in(e, at.1));
                at = self.follow(at, e);
                owed = owed.minus(quiet(at));
                cycle.push(e);
            }
        }
        let stutter = cycle.is_empty() && self.may_stutter(start);
        if at != home || (cycle.is_empty() && !stutter) {
            if let Some(back) = self.way_home(at, home, &inside) {
                cycle.extend(back);
            }
        }
        cycle
    }

    /// The (state, frame) pair the edge at position `e` leads to from `at`.
    fn follow(&self, at: Node, e: usize) -> Node {
        (self.graph.target(e), self.next_frame(at.1, e))
    }

    /// A shortest run of edges, at least one, from `from` to `home` through
    /// pairs whose states are in `inside`.
    fn way_home(&self, from: Node, home: Node, inside: &HashSet<u32>) -> Option<Vec<usize>> {
        let mut came_from: HashMap<Node, (Node, usize)> = HashMap::new();
        let mut queue = VecDeque::from([from]);
        while let Some(at) = queue.pop_front() {
            for e in self.graph.edge_range(at.0) {
                let next = self.follow(at, e);
                if !inside.contains(&next.0) || came_from.contains_key(&next) {
                    continue;
                }
                came_from.insert(next, (at, e));
                if next == home {
                    return Some(self.trace(&came_from, from, home));
                }
                queue.push_back(next);
            }
        }
        None
    }

    /// The nearest place from `from`, inside `inside`, that pays a class of
    /// `owed`: the edges to a pair where an owed weakly fair class is
    /// disabled, or to a pair and then one edge that takes an owed class.
    fn nearest_witness(
        &self,
        from: Node,
        inside: &HashSet<u32>,
        owed: C,
    ) -> Option<(Vec<usize>, Option<usize>)> {
        let graph = self.graph;
        let weak = self.rules.fairness.weak;
        let mut came_from: HashMap<Node, (Node, usize)> = HashMap::new();
        let mut queue = VecDeque::from([from]);
        let mut seen = HashSet::from([from]);
        while let Some(at) = queue.pop_front() {
            let legs = || {
                if at == from {
                    Vec::new()
                } else {
                    self.trace(&came_from, from, at)
                }
            };
            let (u, frame) = at;
            if !weak
                .minus(self.enabled_in(u, frame))
                .intersection(owed)
                .is_empty()
            {
                return Some((legs(), None));
            }
            let internal = graph
                .edge_range(u)
                .filter(|&e| inside.contains(&graph.target(e)));
            for e in internal.clone() {
                if !graph.taken_in(e, frame).intersection(owed).is_empty() {
                    return Some((legs(), Some(e)));
                }
            }
            for e in internal {
                let next = self.follow(at, e);
                if seen.insert(next) {
                    came_from.insert(next, (at, e));
                    queue.push_back(next);
                }
            }
        }
        None
    }

    /// The members of the finished component `id`.
    fn members_of(&self, id: u32) -> Vec<u32> {
        (0..self.graph.len())
            .filter(|&u| self.component_of(u) == Some(id))
            .collect()
    }
}

/// [`find_violation`] for each of `formulas`, in that order, searching for
/// up to `threads` of them at once. Each search holds 8 bytes per state
/// while it runs.
pub(crate) fn find_violations<C: ClassSet>(
    graph: &Graph<C>,
    formulas: &[LabelFormula],
    rules: Rules<C>,
    initial: u32,
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
            found.push((k, find_violation(graph, formula, rules, initial)));
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

/// Searches `graph` for a behaviour, fair under `rules`, violating
/// `formula`, where the initial states are those numbered below `initial`.
pub(crate) fn find_violation<C: ClassSet>(
    graph: &Graph<C>,
    formula: LabelFormula,
    rules: Rules<C>,
    initial: u32,
) -> Option<EdgeLasso> {
    let lasso = |tarjan: &Tarjan<'_, C>, start: u32, bridge: Vec<usize>, core: &[u32]| {
        let entry = bridge.last().map_or(start, |&e| graph.target(e));
        EdgeLasso {
            start,
            cycle: tarjan.fair_cycle(core, entry),
            bridge,
        }
    };
    match formula {
        LabelFormula::EventuallyAlways { p } => {
            let failing = |u: u32| !graph.label(u, p);
            let mut tarjan = Tarjan::new(graph, rules, |_| true);
            let core = tarjan.run(
                |_| true,
                |tarjan, c| {
                    if !c.fair {
                        return None;
                    }
                    tarjan.core(c.members, failing)
                },
            )?;
            let start = core.iter().copied().filter(|&u| failing(u)).min()?;
            Some(lasso(&tarjan, start, Vec::new(), &core))
        }
        LabelFormula::InfinitelyOften { p } => {
            let mut tarjan = Tarjan::new(graph, rules, |u| !graph.label(u, p));
            let core = tarjan.run(
                |_| true,
                |tarjan, c| {
                    if !c.fair {
                        return None;
                    }
                    tarjan.core(c.members, |_| true)
                },
            )?;
            let start = core.iter().copied().min()?;
            Some(lasso(&tarjan, start, Vec::new(), &core))
        }
        LabelFormula::LeadsTo { p, q } => {
            let triggered = |u: u32| match p {
                Some(p) => graph.label(u, p),
                None => u < initial,
            };
            let mut tarjan = Tarjan::new(graph, rules, |u| !graph.label(u, q));
            // Only what a trigger can reach matters.
            let start = tarjan.run(triggered, |_, c| {
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
            let (entry, _) = tarjan.path(start, |_| true, in_fair_component, false)?;
            let id = tarjan.component_of(entry)?;
            let core = tarjan.core(&tarjan.members_of(id), |_| true)?;
            let in_core: HashSet<u32> = core.iter().copied().collect();
            let (_, bridge) = tarjan.path(start, |_| true, |u| in_core.contains(&u), false)?;
            Some(lasso(&tarjan, start, bridge, &core))
        }
    }
}

impl EdgeLasso {
    /// The states it passes: from an initial state to the cycle's entry
    /// (the BFS route to `start`, then the bridge), then the cycle's states
    /// after the entry, ending at the entry again (none for a stutter).
    fn states<C: ClassSet>(&self, graph: &Graph<C>) -> (Vec<u32>, Vec<u32>) {
        let mut prefix = vec![self.start];
        let mut at = self.start;
        while graph.parent(at) != crate::graph::ROOT {
            at = graph.parent(at);
            prefix.push(at);
        }
        prefix.reverse();
        prefix.extend(self.bridge.iter().map(|&e| graph.target(e)));
        let cycle = self.cycle.iter().map(|&e| graph.target(e)).collect();
        (prefix, cycle)
    }

    /// Whether this behaviour, found for another formula, violates
    /// `formula` too: then the step (counted from the initial state, the
    /// cycle's steps after the prefix's) at which its trigger holds, or its
    /// condition fails. Fairness does not depend on the formula, so a fair
    /// lasso stays fair.
    pub(crate) fn violates<C: ClassSet>(
        &self,
        graph: &Graph<C>,
        formula: LabelFormula,
        initial: u32,
    ) -> Option<usize> {
        let (prefix, cycle) = self.states(graph);
        let entry = prefix.len() - 1;
        // One period of the cycle, from its entry.
        let period = || std::iter::once(prefix[entry]).chain(cycle.iter().copied());
        let steps: Vec<u32> = prefix.iter().chain(&cycle).copied().collect();
        match formula {
            LabelFormula::EventuallyAlways { p } => {
                period().position(|u| !graph.label(u, p)).map(|i| entry + i)
            }
            LabelFormula::InfinitelyOften { p } => {
                period().all(|u| !graph.label(u, p)).then_some(entry)
            }
            LabelFormula::LeadsTo { p, q } => {
                if period().any(|u| graph.label(u, q)) {
                    return None;
                }
                let from = prefix
                    .iter()
                    .rposition(|&u| graph.label(u, q))
                    .map_or(0, |i| i + 1);
                let triggered = |(i, &u): &(usize, &u32)| match p {
                    Some(p) => graph.label(u, p),
                    None => *i == 0 && u < initial,
                };
                steps
                    .iter()
                    .enumerate()
                    .skip(from)
                    .find(triggered)
                    .map(|(i, _)| i)
            }
        }
    }
}
