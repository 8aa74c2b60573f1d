//! Breadth-first exploration of a model's reachable states, level by level,
//! on any number of threads.
//!
//! Each level's frontier holds consecutive state numbers. Threads claim
//! fixed-size chunks of it in order, expand them against the shared
//! [`Seen`] set, and hand back per-chunk buffers that are appended in chunk
//! order, so the edge array stays sorted by state number with no second pass.
//! New states get numbers as they are found; sorting the next frontier by
//! number makes it consecutive again.

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use stateright::Model;

use crate::graph::{Edge, Graph, Parent, ROOT};
use crate::seen::{Fingerprinter, Insert, Seen};
use crate::{Bound, Progress};

/// States a thread expands per claim: large enough to amortise the claim,
/// small enough to balance a narrow level across threads.
const CHUNK: usize = 512;

/// How often progress is reported.
const PROGRESS_EVERY: Duration = Duration::from_millis(250);

/// A state predicate the exploration looks for, with the value it looks for.
pub(crate) struct Target<M: Model> {
    pub(crate) condition: fn(&M, &M::State) -> bool,
    pub(crate) wanted: bool,
}

/// What to explore and what to record on the way.
pub(crate) struct Exploration<'a, M: Model> {
    pub(crate) model: &'a M,
    /// The fairness classes, bit `j` of an edge for `classes[j]`.
    pub(crate) classes: Vec<fn(&M::Action) -> bool>,
    /// Predicates kept per state as label bits (for the liveness search).
    pub(crate) labels: Vec<fn(&M, &M::State) -> bool>,
    /// Predicates for which the first state found is remembered.
    pub(crate) targets: Vec<Target<M>>,
    /// Whether edges are kept (the liveness search needs them).
    pub(crate) keep_edges: bool,
    pub(crate) threads: usize,
    pub(crate) max_states: u32,
    pub(crate) timeout: Option<Duration>,
    pub(crate) progress: Option<&'a (dyn Fn(&Progress) + Sync)>,
}

/// What an exploration produced.
pub(crate) struct Explored {
    pub(crate) graph: Graph,
    /// Per target, the lowest-numbered (so nearest) state found satisfying it.
    pub(crate) found: Vec<Option<u32>>,
    /// The bound that stopped the exploration before it was complete.
    pub(crate) stopped: Option<Bound>,
    /// How many levels were expanded.
    pub(crate) depth: u32,
    pub(crate) elapsed: Duration,
}

/// The output of expanding one chunk of the frontier.
struct Chunk<S> {
    /// Per expanded state, its out-degree.
    degrees: Vec<u32>,
    edges: Vec<Edge>,
    labels: Vec<u32>,
    found: Vec<Option<u32>>,
    /// States first found here, with how they were reached.
    discovered: Vec<(u32, Parent, S)>,
    /// Fewer states than the chunk held were expanded: the state limit was
    /// reached while expanding the next one.
    truncated: bool,
}

/// State shared by the threads expanding one level.
struct Level<'a, M: Model> {
    run: &'a Exploration<'a, M>,
    seen: &'a Seen,
    fingerprinter: &'a Fingerprinter,
    frontier: &'a [M::State],
    /// The number of `frontier[0]`.
    base: u32,
    next_chunk: AtomicUsize,
    stop: &'a Mutex<Option<Bound>>,
    stopping: &'a AtomicBool,
    started: Instant,
    last_progress: &'a Mutex<Instant>,
    depth: u32,
}

impl<M> Exploration<'_, M>
where
    M: Model + Sync,
    M::State: std::hash::Hash + Send + Sync,
{
    pub(crate) fn run(&self) -> Explored {
        let started = Instant::now();
        let seen = Seen::new(self.max_states);
        let fingerprinter = Fingerprinter::new();
        let mut graph = Graph::default();
        let mut found = vec![None; self.targets.len()];
        if self.keep_edges {
            graph.offsets.push(0);
        }

        let mut frontier = Vec::new();
        for (index, state) in self.model.init_states().into_iter().enumerate() {
            if let Insert::New(_) = seen.insert(fingerprinter.fingerprint(&state)) {
                graph.parents.push(Parent {
                    state: ROOT,
                    ordinal: index as u32,
                });
                frontier.push(state);
            }
        }

        let stop = Mutex::new(None);
        let stopping = AtomicBool::new(false);
        let last_progress = Mutex::new(started);
        let mut depth = 0;
        while !frontier.is_empty() && !stopping.load(Ordering::Relaxed) {
            let level = Level {
                run: self,
                seen: &seen,
                fingerprinter: &fingerprinter,
                base: graph.expanded,
                frontier: &frontier,
                next_chunk: AtomicUsize::new(0),
                stop: &stop,
                stopping: &stopping,
                started,
                last_progress: &last_progress,
                depth,
            };
            let mut chunks = level.expand();
            chunks.sort_unstable_by_key(|(index, _)| *index);
            depth += 1;

            let mut next = Vec::new();
            let mut complete = true;
            for (_, chunk) in chunks {
                next.extend(chunk.discovered);
                for (slot, id) in found.iter_mut().zip(chunk.found) {
                    *slot = (*slot).or(id);
                }
                if !complete {
                    continue;
                }
                for degree in chunk.degrees {
                    if self.keep_edges {
                        let end = graph.offsets[graph.offsets.len() - 1] + u64::from(degree);
                        graph.offsets.push(end);
                    }
                    graph.expanded += 1;
                }
                graph.edges.extend(chunk.edges);
                graph.labels.extend(chunk.labels);
                complete = !chunk.truncated;
            }
            next.sort_unstable_by_key(|(id, _, _)| *id);
            graph
                .parents
                .extend(next.iter().map(|(_, parent, _)| *parent));
            frontier = next.into_iter().map(|(_, _, state)| state).collect();
        }

        // States found but never expanded: no edges, no labels.
        graph.labels.resize(graph.parents.len(), 0);
        if self.keep_edges {
            let end = graph.offsets[graph.offsets.len() - 1];
            graph.offsets.resize(graph.parents.len() + 1, end);
        }
        let stopped = stop.into_inner().unwrap_or_else(|p| p.into_inner());
        Explored {
            graph,
            found,
            stopped,
            depth,
            elapsed: started.elapsed(),
        }
    }
}

impl<M> Level<'_, M>
where
    M: Model + Sync,
    M::State: std::hash::Hash + Send + Sync,
{
    /// Expands the frontier on the run's threads; returns the chunks with
    /// their indices, in no particular order.
    fn expand(&self) -> Vec<(usize, Chunk<M::State>)> {
        let threads = self.run.threads.max(1);
        let work = || {
            let mut done = Vec::new();
            let mut actions = Vec::new();
            while let Some(index) = self.claim() {
                done.push((index, self.expand_chunk(index, &mut actions)));
                self.report_progress();
            }
            done
        };
        if threads == 1 || self.frontier.len() <= CHUNK {
            return work();
        }
        std::thread::scope(|scope| {
            let helpers: Vec<_> = (1..threads).map(|_| scope.spawn(work)).collect();
            let mut done = work();
            for helper in helpers {
                match helper.join() {
                    Ok(more) => done.extend(more),
                    Err(panic) => std::panic::resume_unwind(panic),
                }
            }
            done
        })
    }

    /// The next chunk to expand, unless the frontier is used up or a bound
    /// was hit. Chunks are claimed in order, so those expanded form a prefix.
    fn claim(&self) -> Option<usize> {
        if self.stopping.load(Ordering::Relaxed) {
            return None;
        }
        if let Some(timeout) = self.run.timeout {
            if self.started.elapsed() >= timeout {
                self.halt(Bound::Timeout(timeout));
                return None;
            }
        }
        let index = self.next_chunk.fetch_add(1, Ordering::Relaxed);
        (index * CHUNK < self.frontier.len()).then_some(index)
    }

    fn halt(&self, bound: Bound) {
        let mut stop = self.stop.lock().unwrap_or_else(|p| p.into_inner());
        stop.get_or_insert(bound);
        self.stopping.store(true, Ordering::Relaxed);
    }

    fn report_progress(&self) {
        let Some(progress) = self.run.progress else {
            return;
        };
        let Ok(mut last) = self.last_progress.try_lock() else {
            return;
        };
        if last.elapsed() < PROGRESS_EVERY {
            return;
        }
        *last = Instant::now();
        progress(&Progress {
            states: u64::from(self.seen.len()),
            depth: self.depth,
            elapsed: self.started.elapsed(),
        });
    }

    fn expand_chunk(&self, index: usize, actions: &mut Vec<M::Action>) -> Chunk<M::State> {
        let run = self.run;
        let model = run.model;
        let start = index * CHUNK;
        let states = &self.frontier[start..(start + CHUNK).min(self.frontier.len())];
        let mut chunk = Chunk {
            degrees: Vec::with_capacity(states.len()),
            edges: Vec::new(),
            labels: Vec::with_capacity(if run.labels.is_empty() {
                0
            } else {
                states.len()
            }),
            found: vec![None; run.targets.len()],
            discovered: Vec::new(),
            truncated: false,
        };
        for (offset, state) in states.iter().enumerate() {
            let id = self.base + (start + offset) as u32;
            for (slot, target) in chunk.found.iter_mut().zip(&run.targets) {
                if slot.is_none() && (target.condition)(model, state) == target.wanted {
                    *slot = Some(id);
                }
            }

            let edges_before = chunk.edges.len();
            let mut successors = 0u32;
            actions.clear();
            model.actions(state, actions);
            for action in actions.drain(..) {
                let fair = run
                    .classes
                    .iter()
                    .enumerate()
                    .filter(|(_, class)| class(&action))
                    .fold(0u32, |bits, (j, _)| bits | 1 << j);
                let Some(next) = model.next_state(state, action) else {
                    continue;
                };
                if !model.within_boundary(&next) {
                    continue;
                }
                let ordinal = successors;
                successors += 1;
                let to = match self.seen.insert(self.fingerprinter.fingerprint(&next)) {
                    Insert::Known(to) => to,
                    Insert::New(to) => {
                        let parent = Parent { state: id, ordinal };
                        chunk.discovered.push((to, parent, next));
                        to
                    }
                    Insert::Full => {
                        // This state's successors cannot all be numbered: it
                        // and the rest of the chunk stay unexpanded.
                        self.halt(Bound::States(run.max_states));
                        chunk.edges.truncate(edges_before);
                        chunk.truncated = true;
                        return chunk;
                    }
                };
                if run.keep_edges {
                    let fair = if to == id { 0 } else { fair };
                    chunk.edges.push(Edge { to, fair });
                }
            }
            if run.keep_edges && successors == 0 {
                // A state with no successor stutters forever.
                chunk.edges.push(Edge { to: id, fair: 0 });
            }
            chunk
                .degrees
                .push((chunk.edges.len() - edges_before) as u32);
            if !run.labels.is_empty() {
                let bits = run
                    .labels
                    .iter()
                    .enumerate()
                    .filter(|(_, label)| label(model, state))
                    .fold(0u32, |bits, (k, _)| bits | 1 << k);
                chunk.labels.push(bits);
            }
            if self.stopping.load(Ordering::Relaxed) && offset + 1 < states.len() {
                // Another thread hit a bound; what is expanded so far stands.
                chunk.truncated = true;
                return chunk;
            }
        }
        chunk
    }
}
