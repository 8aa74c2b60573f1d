//! Breadth-first exploration of a model's reachable states, level by level,
//! on any number of threads.
//!
//! Each level's frontier holds consecutive state numbers. Threads claim
//! chunks of it in order, expand them against the shared [`Visited`] set, and
//! hand back per-chunk buffers that are appended in chunk order, so the edge
//! array stays sorted by state number with no second pass. Each chunk's new
//! states get consecutive numbers; ordering those runs makes the next
//! frontier consecutive again. A level's edges are appended while the next
//! level is expanded, by the thread that would otherwise wait for the rest.

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use serde::de::DeserializeOwned;
use serde::Serialize;
use stateright::Model;
use steadfast_spec::TemporalModel;

use crate::classes::ClassSet;
use crate::graph::{Graph, Parent, MAX_CLASS_SETS, ROOT};
use crate::memory::Passed;
use crate::packed::{EncodingError, Packed};
use crate::seen::{Abandoned, Batch, Fingerprint, Fingerprinter, Insert, Insertion, Visited};
use crate::spill::{SpillDir, SpillFile, Spiller, Word};
use crate::symmetry::{Element, Group, IDENTITY};
use crate::CheckError;
use crate::{Bound, Interrupt, Progress};

/// About how many bytes of states a thread expands per claim.
const CHUNK_BYTES: usize = 32 * 1024;

/// How many states a thread expands per claim: enough to amortise the claim
/// and the visits to the seen set's shards, few enough that the chunk's
/// successors stay in cache while they are looked up and that a narrow
/// level still splits between threads. That is about [`CHUNK_BYTES`] of
/// states, from 64 to 1,024 of them. (Measured: the 32-byte mutex states ran
/// fastest at 1,024, the 320-byte leasequeue states at 128 or fewer; with
/// 1,024 of those, exploring took half as long again.)
fn chunk_states<S>() -> usize {
    (CHUNK_BYTES / std::mem::size_of::<S>().max(1)).clamp(64, 1024)
}

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
    /// The fairness classes, class `j` of an edge for `classes[j]`.
    pub(crate) classes: Vec<fn(&M::Action) -> bool>,
    /// The renamings the model declares, when states are reduced to one per
    /// orbit (see [`crate::symmetry`]).
    pub(crate) symmetry: Option<&'a Arc<Group>>,
    /// Predicates kept per state as label bits (for the liveness search).
    pub(crate) labels: Vec<fn(&M, &M::State) -> bool>,
    /// Predicates for which the first state found is remembered.
    pub(crate) targets: Vec<Target<M>>,
    /// Whether edges are kept (the liveness search needs them).
    pub(crate) keep_edges: bool,
    /// Whether states waiting to be expanded are kept encoded (see
    /// [`crate::packed::worth_encoding`]).
    pub(crate) encode: bool,
    pub(crate) threads: usize,
    pub(crate) max_states: u32,
    pub(crate) timeout: Option<Duration>,
    /// The limit on the process's resident memory, if any.
    pub(crate) memory: Option<crate::memory::Watch>,
    /// Where the graph and the frontier go past the memory limit; `None`:
    /// the limit stops the exploration.
    pub(crate) spill: Option<Spiller>,
    pub(crate) interrupt: Option<Interrupt>,
    pub(crate) progress: Option<&'a (dyn Fn(&Progress) + Sync)>,
}

/// What an exploration produced.
pub(crate) struct Explored<C> {
    pub(crate) graph: Graph<C>,
    /// Per target, the lowest-numbered (so nearest) state found satisfying it.
    pub(crate) found: Vec<Option<u32>>,
    /// The lowest-numbered expanded state for which no action yields a
    /// successor (a deadlock; successors cut by the boundary do not count).
    pub(crate) deadlock: Option<u32>,
    /// Successor states computed, counting repeats: what a fingerprint
    /// collision could have hidden a state among.
    pub(crate) generated: u64,
    /// The bound that stopped the exploration before it was complete.
    pub(crate) stopped: Option<Bound>,
    /// A state that could not be kept in the frontier stopped it.
    pub(crate) failed: Option<CheckError>,
    /// How many levels were expanded.
    pub(crate) depth: u32,
    pub(crate) elapsed: Duration,
    /// Bytes of the graph and the frontier written to disk.
    pub(crate) spilled: u64,
}

/// The output of expanding one chunk of the frontier.
struct Chunk<S> {
    /// Per expanded state, its out-degree.
    degrees: Vec<u32>,
    /// Its edges.
    edges: ChunkEdges,
    labels: Vec<u32>,
    found: Vec<Option<u32>>,
    /// The first expanded state without a successor.
    deadlock: Option<u32>,
    /// Successors computed (inside the boundary and different from their
    /// state), counting repeats.
    generated: u64,
    /// States first found here, with how they were reached.
    discovered: Discovered<S>,
    /// Fewer states than the chunk held were expanded: the state limit was
    /// reached while expanding the next one.
    truncated: bool,
    /// Where its degrees, edges and labels went, if they went to disk.
    on_disk: Option<OnDisk>,
}

/// Where a chunk's degrees, edges and labels are in its level's edges
/// file, one after the other, and how many of each.
struct OnDisk {
    at: u64,
    degrees: usize,
    edges: usize,
    labels: usize,
}

/// The bytes of an edge on disk: its target, class set and renaming.
const EDGE_BYTES: usize = 8;

impl<S> Chunk<S> {
    /// Sends its degrees, edges and labels to `file`, its edge buffer to
    /// `spare`; returns the bytes written. On an error it keeps them.
    fn spill(&mut self, file: &mut SpillFile, spare: &SpareEdges) -> std::io::Result<u64> {
        let mut bytes = Vec::with_capacity(
            (self.degrees.len() + self.labels.len()) * 4 + self.edges.len() * EDGE_BYTES,
        );
        self.degrees
            .iter()
            .for_each(|&degree| degree.put(&mut bytes));
        for &(to, set, renaming) in &self.edges {
            to.put(&mut bytes);
            set.put(&mut bytes);
            renaming.put(&mut bytes);
        }
        self.labels.iter().for_each(|&word| word.put(&mut bytes));
        let at = file.append(&bytes)?;
        self.on_disk = Some(OnDisk {
            at,
            degrees: self.degrees.len(),
            edges: self.edges.len(),
            labels: self.labels.len(),
        });
        self.degrees = Vec::new();
        self.labels = Vec::new();
        spare.keep(std::mem::take(&mut self.edges));
        Ok(bytes.len() as u64)
    }

    /// Reads back what [`Chunk::spill`] sent to `file`, if it sent any,
    /// into a buffer from `spare`.
    fn load(&mut self, file: &SpillFile, spare: &SpareEdges) {
        let Some(OnDisk {
            at,
            degrees,
            edges,
            labels,
        }) = self.on_disk.take()
        else {
            return;
        };
        let mut bytes = vec![0; (degrees + labels) * 4 + edges * EDGE_BYTES];
        if let Err(error) = file.read(at, &mut bytes) {
            panic!("the graph spilled to disk could not be read back: {error}");
        }
        let (degree_bytes, rest) = bytes.split_at(degrees * 4);
        let (edge_bytes, label_bytes) = rest.split_at(edges * EDGE_BYTES);
        self.degrees = degree_bytes.chunks_exact(4).map(u32::take).collect();
        self.edges = spare.take();
        self.edges
            .extend(edge_bytes.chunks_exact(EDGE_BYTES).map(|edge| {
                (
                    u32::take(edge),
                    u16::take(&edge[4..]),
                    Element::take(&edge[6..]),
                )
            }));
        self.labels = label_bytes.chunks_exact(4).map(u32::take).collect();
    }
}

/// The states a chunk found first. [`Visited::insert_all`] numbers a batch's
/// new states consecutively, so they are the numbers from `first` on.
struct Discovered<S> {
    first: u32,
    parents: Vec<Parent>,
    /// Their fingerprints: a state decoded from `states` must hash to its
    /// own again, or its encoding lost something.
    fingerprints: Vec<Fingerprint>,
    /// Kept as bytes until they are expanded: a level of full states was
    /// most of a check's memory.
    states: Packed<S>,
}

/// The states of one level, as the runs in which they were discovered (in
/// number order), cut into chunks of [`chunk_states`] states (the last one
/// fewer).
/// A chunk may span runs; keeping the runs as they came saves moving every
/// state once per level.
struct Frontier<S> {
    runs: Vec<Discovered<S>>,
    /// Per chunk, its pieces: a run, and the range of the run's states.
    chunks: Vec<Vec<(usize, std::ops::Range<usize>)>>,
    /// Where its runs' encodings are once [spilled](Frontier::spill).
    file: Option<SpillFile>,
}

impl<S> Discovered<S> {
    /// None yet; they will be kept encoded or as they are.
    fn new(encode: bool) -> Self {
        Discovered {
            first: 0,
            parents: Vec::new(),
            fingerprints: Vec::new(),
            states: Packed::new(encode),
        }
    }
}

impl<S> Frontier<S> {
    fn new(mut runs: Vec<Discovered<S>>) -> Self {
        runs.retain(|run| !run.states.is_empty());
        runs.sort_unstable_by_key(|run| run.first);
        let chunk_states = chunk_states::<S>();
        let mut chunks = Vec::new();
        let mut chunk = Vec::new();
        let mut size = 0;
        for (index, run) in runs.iter().enumerate() {
            let mut start = 0;
            while start < run.states.len() {
                let end = run.states.len().min(start + chunk_states - size);
                chunk.push((index, start..end));
                size += end - start;
                start = end;
                if size == chunk_states {
                    chunks.push(std::mem::take(&mut chunk));
                    size = 0;
                }
            }
        }
        if size > 0 {
            chunks.push(chunk);
        }
        Frontier {
            runs,
            chunks,
            file: None,
        }
    }

    /// Writes its runs' encodings to a file of `dir`, and frees them;
    /// returns how many bytes went. States kept as they are (a small
    /// model's) stay in memory.
    fn spill(&mut self, dir: &SpillDir) -> std::io::Result<u64> {
        let mut written = 0;
        for run in &mut self.runs {
            if let Packed::Encoded(encoded) = &mut run.states {
                let file = match &mut self.file {
                    Some(file) => file,
                    None => self.file.insert(dir.file()?),
                };
                written += encoded.spill(file)?;
            }
        }
        Ok(written)
    }
}

impl<S: Serialize + DeserializeOwned> Frontier<S> {
    /// The number of chunk `index`'s first state. The states of its pieces
    /// that are kept encoded are decoded into `decoded`, and their
    /// fingerprints copied to `fingerprints`, `scratch` holding their
    /// decompressed encodings; [`Frontier::pieces`] then gives them all.
    fn decode(
        &self,
        index: usize,
        decoded: &mut Vec<S>,
        fingerprints: &mut Vec<Fingerprint>,
        scratch: &mut Vec<u8>,
    ) -> Result<u32, EncodingError> {
        let pieces = &self.chunks[index];
        let first = pieces
            .first()
            .map_or(0, |(run, range)| self.runs[*run].first + range.start as u32);
        decoded.clear();
        fingerprints.clear();
        for (run, range) in pieces {
            let run = &self.runs[*run];
            if let Packed::Encoded(encoded) = &run.states {
                encoded.decode(range.clone(), decoded, scratch, self.file.as_ref())?;
                fingerprints.extend_from_slice(&run.fingerprints[range.clone()]);
            }
        }
        Ok(first)
    }

    /// The states of chunk `index`, in order, each piece with its states'
    /// fingerprints: those kept as they are from the frontier, the others
    /// from `decoded`, as [`Frontier::decode`] left them.
    fn pieces<'a>(&'a self, index: usize, decoded: &'a [S]) -> Vec<(&'a [S], &'a [Fingerprint])> {
        let mut at = 0;
        self.chunks[index]
            .iter()
            .map(|(run, range)| {
                let run = &self.runs[*run];
                let states = match &run.states {
                    Packed::Plain(states) => &states[range.clone()],
                    Packed::Encoded(_) => {
                        let piece = &decoded[at..at + range.len()];
                        at += range.len();
                        piece
                    }
                };
                (states, &run.fingerprints[range.clone()])
            })
            .collect()
    }
}

/// State shared by the threads expanding one level.
struct Level<'a, M: Model, C> {
    run: &'a Exploration<'a, M>,
    class_sets: &'a ClassSets<C>,
    spare_edges: &'a SpareEdges,
    seen: &'a Visited,
    fingerprinter: &'a Fingerprinter,
    frontier: &'a Frontier<M::State>,
    next_chunk: AtomicUsize,
    stop: &'a Mutex<Option<Bound>>,
    failed: &'a Mutex<Option<CheckError>>,
    stopping: &'a AtomicBool,
    started: Instant,
    last_progress: &'a Mutex<Instant>,
    depth: u32,
    /// The numbering turn of the level's first chunk: chunks take their
    /// numbers in chunk order.
    first_turn: u64,
    /// Where each chunk's discoveries go as soon as they are sealed, when
    /// the exploration was spilling as the level began: the next frontier's
    /// file.
    discoveries: Option<Mutex<SpillFile>>,
    /// Where each chunk's degrees, edges and labels go as soon as it is
    /// expanded, when the exploration was spilling as the level began.
    edges: Option<Mutex<SpillFile>>,
}

impl<M> Exploration<'_, M>
where
    M: TemporalModel + Sync,
    M::State: Clone + std::hash::Hash + PartialEq + Send + Sync + Serialize + DeserializeOwned,
{
    /// The state that stands for `state`'s orbit, with its fingerprint and
    /// the renaming that gives it: `state` itself without symmetry.
    fn canonical(
        &self,
        state: M::State,
        fingerprinter: &Fingerprinter,
    ) -> (M::State, Fingerprint, Element) {
        match self.symmetry {
            Some(group) => group.canonical(self.model, state, fingerprinter),
            None => {
                let fingerprint = fingerprinter.fingerprint(&state);
                (state, fingerprint, IDENTITY)
            }
        }
    }

    /// `next`, a successor of `state` (whose fingerprint is `own`), made
    /// canonical as [`Exploration::canonical`] does; `None` when it is
    /// `state` itself, a step that changes nothing (a stutter, which takes
    /// no fairness class).
    ///
    /// Without symmetry the fingerprint the seen set needs anyway tells a
    /// move from a stutter: a successor with its state's fingerprint is its
    /// state, as the seen set takes it to be (the report gives the chance
    /// that a fingerprint was shared). Comparing every successor with its
    /// state took a seventh of the time on leasequeue, and after equal
    /// fingerprints (a stutter step at nearly every state there) still a
    /// fifteenth. Under symmetry the canonical successor of a stutter may
    /// be renamed, so the states are compared first.
    fn moved(
        &self,
        state: &M::State,
        own: Fingerprint,
        next: M::State,
        fingerprinter: &Fingerprinter,
    ) -> Option<(M::State, Fingerprint, Element)> {
        if self.symmetry.is_some() && next == *state {
            return None;
        }
        let (next, fingerprint, renaming) = self.canonical(next, fingerprinter);
        let stutters = self.symmetry.is_none() && fingerprint == own;
        (!stutters).then_some((next, fingerprint, renaming))
    }

    pub(crate) fn run<C: ClassSet>(&self) -> Explored<C> {
        let started = Instant::now();
        let seen = Visited::new(self.max_states, self.threads, self.keep_edges);
        let fingerprinter = Fingerprinter::new();
        let mut graph = Graph::new(self.labels.len());
        let mut found = vec![None; self.targets.len()];
        let mut deadlock = None;
        let mut generated = 0;
        if self.keep_edges {
            graph.offsets.push(0);
        }

        let stop = Mutex::new(None);
        let failed = Mutex::new(None);
        let class_sets = ClassSets::new();
        let spare_edges = SpareEdges::default();
        let mut initial = Discovered::new(self.encode);
        let initial_states: Vec<_> = (self.model.init_states().into_iter())
            .map(|state| self.canonical(state, &fingerprinter))
            .collect();
        let mut inserted = Vec::new();
        let fingerprints: Vec<_> = initial_states.iter().map(|(_, fp, _)| *fp).collect();
        let how = Insertion {
            first_shard: 0,
            known_numbers: true,
            turn: None,
        };
        seen.insert_all(&fingerprints, &how, &mut inserted, &mut Batch::default());
        for (index, ((state, fingerprint, _), result)) in
            initial_states.into_iter().zip(inserted).enumerate()
        {
            if let Insert::New(_) = result {
                initial.parents.push(Parent {
                    state: ROOT,
                    ordinal: index as u32,
                });
                initial.fingerprints.push(fingerprint);
                if let Err(error) = initial.states.push(state) {
                    failed
                        .lock()
                        .unwrap_or_else(|p| p.into_inner())
                        .get_or_insert(error.into());
                }
            }
        }
        let mut frontier = place(&mut graph, vec![initial], self.keep_edges);

        let stopping = AtomicBool::new(false);
        let last_progress = Mutex::new(started);
        let mut depth = 0;
        // The chunks of the last level expanded, still to be recorded in the
        // graph (that is done while the next level is expanded), and the
        // file their edges went to, if they did.
        let mut pending = (Vec::new(), None);
        let failing = |failed: &Mutex<Option<CheckError>>| {
            failed.lock().unwrap_or_else(|p| p.into_inner()).is_some()
        };
        while !frontier.chunks.is_empty() && !stopping.load(Ordering::Relaxed) && !failing(&failed)
        {
            let level = Level {
                run: self,
                class_sets: &class_sets,
                spare_edges: &spare_edges,
                seen: &seen,
                fingerprinter: &fingerprinter,
                frontier: &frontier,
                next_chunk: AtomicUsize::new(0),
                stop: &stop,
                failed: &failed,
                stopping: &stopping,
                started,
                last_progress: &last_progress,
                depth,
                first_turn: seen.next_turn(),
                discoveries: self.level_file(&stop, &stopping),
                edges: self.level_file(&stop, &stopping),
            };
            let (previous, previous_file) = std::mem::take(&mut pending);
            let mut chunks = level.expand(|| {
                record(
                    &mut graph,
                    &mut found,
                    &mut deadlock,
                    previous,
                    previous_file.as_ref(),
                    &spare_edges,
                    (self.keep_edges, self.symmetry.is_some()),
                );
                self.spill_graph(&mut graph, &stop, &stopping);
                // The last level's frontier went as it was made, and its
                // edges just now: all that can be on disk is.
                if let Some(spiller) = &self.spill {
                    spiller.level_done();
                }
            });
            chunks.sort_unstable_by_key(|(index, _)| *index);
            generated += chunks.iter().map(|(_, chunk)| chunk.generated).sum::<u64>();
            depth += 1;

            let discovered = chunks
                .iter_mut()
                .map(|(_, chunk)| std::mem::replace(&mut chunk.discovered, Discovered::new(false)))
                .collect();
            let Level {
                discoveries, edges, ..
            } = level;
            frontier = place(&mut graph, discovered, self.keep_edges);
            frontier.file = discoveries.map(unlocked);
            self.spill(|dir| frontier.spill(dir), &stop, &stopping);
            if self.spill.as_ref().is_some_and(Spiller::eager) {
                self.spill(|dir| seen.spill(dir), &stop, &stopping);
            }
            pending = (
                chunks.into_iter().map(|(_, chunk)| chunk).collect(),
                edges.map(unlocked),
            );
        }
        record(
            &mut graph,
            &mut found,
            &mut deadlock,
            pending.0,
            pending.1.as_ref(),
            &spare_edges,
            (self.keep_edges, self.symmetry.is_some()),
        );
        self.spill_graph(&mut graph, &stop, &stopping);

        graph.set_classes(class_sets.into_inner());
        if let Some(group) = self.symmetry {
            graph.reduce_by(group.clone());
        }
        // States found but never expanded: no edges, no labels.
        graph
            .labels
            .resize(graph.len() as usize * graph.label_words, 0);
        if self.keep_edges {
            let end = graph.offsets.last().expect("the first offset");
            graph.offsets.resize(graph.len() as usize + 1, end);
        }
        let stopped = stop.into_inner().unwrap_or_else(|p| p.into_inner());
        Explored {
            graph,
            found,
            deadlock,
            generated,
            stopped,
            failed: failed.into_inner().unwrap_or_else(|p| p.into_inner()),
            depth,
            elapsed: started.elapsed(),
            spilled: self.spill.as_ref().map_or(0, Spiller::written),
        }
    }

    /// Runs `spill` if the exploration is spilling, and counts the bytes
    /// it wrote; a write that fails stops the exploration as a bound does
    /// (the disk is full, say), with what was written and what was not both
    /// still whole.
    fn spill(
        &self,
        spill: impl FnOnce(&SpillDir) -> std::io::Result<u64>,
        stop: &Mutex<Option<Bound>>,
        stopping: &AtomicBool,
    ) {
        let Some((spiller, dir)) = self.spilling() else {
            return;
        };
        match spill(dir) {
            Ok(written) => spiller.count(written),
            Err(error) => halt(stop, stopping, Bound::Disk(error.kind())),
        }
    }

    /// Sends the graph's full segments to disk, if the exploration spills.
    /// A safety check's graph is only each state's parent and ordinal, the
    /// trail its counterexamples are rebuilt from and read only then: it
    /// goes from the start, whatever the memory, when a spill directory is
    /// given, so that a state costs memory only in the seen set (and in
    /// the frontier while its level is expanded).
    fn spill_graph<C: ClassSet>(
        &self,
        graph: &mut Graph<C>,
        stop: &Mutex<Option<Bound>>,
        stopping: &AtomicBool,
    ) {
        match &self.spill {
            Some(spiller) if !self.keep_edges => match graph.spill(spiller.directory()) {
                Ok(written) => spiller.count(written),
                Err(error) => halt(stop, stopping, Bound::Disk(error.kind())),
            },
            _ => self.spill(|dir| graph.spill(dir), stop, stopping),
        }
    }

    /// A file for what the chunks of the level about to be expanded send
    /// to disk as they are done (their discoveries, or their edges), if the
    /// exploration is spilling (a file that cannot be made stops it, as
    /// [`Exploration::spill`] says).
    fn level_file(
        &self,
        stop: &Mutex<Option<Bound>>,
        stopping: &AtomicBool,
    ) -> Option<Mutex<SpillFile>> {
        let (_, dir) = self.spilling()?;
        match dir.file() {
            Ok(file) => Some(Mutex::new(file)),
            Err(error) => {
                halt(stop, stopping, Bound::Disk(error.kind()));
                None
            }
        }
    }

    /// The spiller and its directory, while the exploration spills.
    fn spilling(&self) -> Option<(&Spiller, &SpillDir)> {
        let spiller = self.spill.as_ref()?;
        Some((spiller, spiller.dir()?))
    }
}

/// Stops the exploration at `bound`, unless another bound stopped it first.
fn halt(stop: &Mutex<Option<Bound>>, stopping: &AtomicBool, bound: Bound) {
    let mut stop = stop.lock().unwrap_or_else(|p| p.into_inner());
    stop.get_or_insert(bound);
    stopping.store(true, Ordering::Relaxed);
}

/// A level's file, no longer shared.
fn unlocked(file: Mutex<SpillFile>) -> SpillFile {
    file.into_inner().unwrap_or_else(|p| p.into_inner())
}

/// Appends the chunks of a level, in order, to the graph: the edges and
/// labels of the expanded prefix (read back from `file` for the chunks
/// that sent them there), and every target and deadlock found. Their
/// edge buffers, emptied, go to `spare` for the next chunks.
fn record<S, C: ClassSet>(
    graph: &mut Graph<C>,
    found: &mut [Option<u32>],
    deadlock: &mut Option<u32>,
    chunks: Vec<Chunk<S>>,
    file: Option<&SpillFile>,
    spare: &SpareEdges,
    (keep_edges, renamed): (bool, bool),
) {
    let mut complete = true;
    for mut chunk in chunks {
        if let Some(file) = file {
            chunk.load(file, spare);
        }
        for (slot, id) in found.iter_mut().zip(chunk.found) {
            *slot = (*slot).or(id);
        }
        if !complete {
            continue;
        }
        *deadlock = (*deadlock).or(chunk.deadlock);
        for degree in chunk.degrees {
            if keep_edges {
                let end = graph.offsets.last().expect("the first offset") + u64::from(degree);
                graph.offsets.push(end);
            }
            graph.expanded += 1;
        }
        graph.add_edges(&chunk.edges, renamed);
        graph.labels.extend(chunk.labels);
        complete = !chunk.truncated;
        spare.keep(chunk.edges);
    }
}

/// A chunk's edges: per edge its target, the index of its class set in
/// [`ClassSets`], and the renaming that made its target canonical.
type ChunkEdges = Vec<(u32, u16, Element)>;

/// Edge buffers of chunks already recorded, for later chunks to fill. A
/// chunk's edges are its largest buffer; allocated afresh for every chunk,
/// each came from pages the allocator had given back and faulted in again
/// (a tenth of a two-phase commit check's time on mimalloc).
#[derive(Default)]
struct SpareEdges(Mutex<Vec<ChunkEdges>>);

impl SpareEdges {
    /// At most this many are kept: enough for the threads to take turns.
    const KEPT: usize = 64;

    /// Keeps `edges`, emptied, unless enough are kept.
    fn keep(&self, mut edges: ChunkEdges) {
        let mut spare = self.0.lock().unwrap_or_else(|p| p.into_inner());
        if spare.len() < Self::KEPT && edges.capacity() > 0 {
            edges.clear();
            spare.push(edges);
        }
    }

    /// An empty buffer, with room from an earlier chunk when one is kept.
    fn take(&self) -> ChunkEdges {
        let mut spare = self.0.lock().unwrap_or_else(|p| p.into_inner());
        spare.pop().unwrap_or_default()
    }
}

/// Records the parents of a level's discovered states and makes them the
/// next frontier. The numbers handed out in a level are exactly the next
/// ones, in one consecutive run per chunk, so ordering the runs puts every
/// state in its place.
fn place<S, C: ClassSet>(
    graph: &mut Graph<C>,
    discovered: Vec<Discovered<S>>,
    keep_edges: bool,
) -> Frontier<S> {
    let mut frontier = Frontier::new(discovered);
    for run in &mut frontier.runs {
        debug_assert_eq!(run.first as usize, graph.len() as usize);
        graph.add_states(&std::mem::take(&mut run.parents), keep_edges);
    }
    frontier
}

impl<M, C: ClassSet> Level<'_, M, C>
where
    M: TemporalModel + Sync,
    M::State: Clone + std::hash::Hash + PartialEq + Send + Sync + Serialize + DeserializeOwned,
{
    /// Expands the frontier on the run's threads, the calling thread doing
    /// `meanwhile` first; returns the chunks with their indices, in no
    /// particular order.
    fn expand(&self, meanwhile: impl FnOnce()) -> Vec<(usize, Chunk<M::State>)> {
        let threads = self.run.threads.max(1);
        let work = || {
            let _abandon = AbandonOnPanic(self.seen);
            let mut done = Vec::new();
            let mut scratch = Scratch::new();
            while let Some(index) = self.claim() {
                done.push((index, self.expand_chunk(index, &mut scratch)));
                self.report_progress();
            }
            done
        };
        if threads == 1 || self.frontier.chunks.len() == 1 {
            meanwhile();
            return work();
        }
        std::thread::scope(|scope| {
            let helpers: Vec<_> = (1..threads).map(|_| scope.spawn(work)).collect();
            meanwhile();
            let mine = std::panic::catch_unwind(std::panic::AssertUnwindSafe(work));
            let mut done = Vec::new();
            // A panic from the model's code wins over the threads that gave
            // up waiting for the panicking one.
            let mut panic: Option<Box<dyn std::any::Any + Send>> = None;
            for result in std::iter::once(mine).chain(helpers.into_iter().map(|h| h.join())) {
                match result {
                    Ok(more) => done.extend(more),
                    Err(payload) => {
                        if panic.as_ref().is_none_or(|first| first.is::<Abandoned>()) {
                            panic = Some(payload);
                        }
                    }
                }
            }
            if let Some(payload) = panic {
                std::panic::resume_unwind(payload);
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
        if self
            .run
            .interrupt
            .as_ref()
            .is_some_and(Interrupt::is_triggered)
        {
            self.halt(Bound::Interrupted);
            return None;
        }
        if let Some(passed) = self.run.memory.as_ref().and_then(|m| m.passed()) {
            if let Err(bound) = self.make_room(passed) {
                self.halt(bound);
                return None;
            }
        }
        let index = self.next_chunk.fetch_add(1, Ordering::Relaxed);
        (index < self.frontier.chunks.len()).then_some(index)
    }

    fn halt(&self, bound: Bound) {
        halt(self.stop, self.stopping, bound);
    }

    /// Memory passed its bound: goes on spilling, or says the bound that
    /// stops the exploration.
    ///
    /// Until a level has gone to disk whole, the exploration goes on as
    /// it spills. After, the seen set's entries go to disk too. Their
    /// tables keep their size, so the memory does not fall, but the room
    /// left in them is taken before the process grows: memory past the
    /// bound by no more than that room goes on as it is. Past it, the
    /// entries go if they hold as much as the memory is past the bound and
    /// at least a sixteenth of it: each time they go, every fingerprint
    /// already on disk is written again (merged in order), so less would
    /// buy too little room for that. Else what holds the memory cannot go
    /// to disk (the columns' last segments, the chunks being expanded, the
    /// process itself), and the memory bound stops the exploration.
    fn make_room(&self, passed: Passed) -> Result<(), Bound> {
        let stop = Bound::Memory(passed.limit);
        let Some(spiller) = &self.run.spill else {
            return Err(stop);
        };
        if spiller.memory_passed() {
            return Ok(());
        }
        let Some(dir) = spiller.dir() else {
            return Err(stop);
        };
        let tables = self.seen.tables();
        let over = (passed.resident.saturating_sub(tables.room)).saturating_sub(passed.limit);
        if over == 0 {
            return Ok(());
        }
        if tables.held < over.max(passed.limit / 16) {
            return Err(stop);
        }
        match self.seen.spill(dir) {
            Ok(written) => {
                spiller.count(written);
                Ok(())
            }
            Err(error) => Err(Bound::Disk(error.kind())),
        }
    }

    /// Appends what `write` writes to one of the level's files, if the
    /// level has it (it is spilling); a write that fails stops the
    /// exploration at the disk, and what it would have written stays in
    /// memory.
    fn append_to(
        &self,
        file: Option<&Mutex<SpillFile>>,
        write: impl FnOnce(&mut SpillFile) -> std::io::Result<u64>,
    ) {
        let (Some(file), Some(spiller)) = (file, &self.run.spill) else {
            return;
        };
        let mut file = file.lock().unwrap_or_else(|p| p.into_inner());
        match write(&mut file) {
            Ok(written) => spiller.count(written),
            Err(error) => self.halt(Bound::Disk(error.kind())),
        }
    }

    /// Stops the exploration for a state that could not be kept as bytes:
    /// the check fails, it does not end as a bound would.
    fn fail(&self, error: impl Into<CheckError>) {
        let mut failed = self.failed.lock().unwrap_or_else(|p| p.into_inner());
        failed.get_or_insert(error.into());
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

    /// Decodes the states of chunk `index` that the frontier keeps encoded
    /// into `states`, and checks that each hashes to the fingerprint it was
    /// found with; returns the number of the chunk's first state.
    fn decode(
        &self,
        index: usize,
        states: &mut Vec<M::State>,
        scratch: &mut Scratch<M, C>,
    ) -> Result<u32, EncodingError> {
        let first =
            self.frontier
                .decode(index, states, &mut scratch.expected, &mut scratch.encodings)?;
        let altered = states
            .iter()
            .zip(&scratch.expected)
            .any(|(state, &fp)| self.fingerprinter.fingerprint(state) != fp);
        if altered {
            return Err(EncodingError::altered());
        }
        Ok(first)
    }

    fn expand_chunk(&self, index: usize, scratch: &mut Scratch<M, C>) -> Chunk<M::State> {
        let run = self.run;
        let model = run.model;
        let mut states = std::mem::take(&mut scratch.states);
        let decoded = self.decode(index, &mut states, scratch);
        let first = decoded.as_ref().map_or(0, |&first| first);
        let pieces = match decoded {
            Ok(_) => self.frontier.pieces(index, &states),
            Err(error) => {
                self.fail(error);
                Vec::new()
            }
        };
        let count = pieces.iter().map(|(piece, _)| piece.len()).sum();
        let mut chunk = Chunk {
            degrees: Vec::with_capacity(count),
            edges: Vec::new(),
            labels: Vec::with_capacity(count * run.labels.len().div_ceil(32)),
            found: vec![None; run.targets.len()],
            deadlock: None,
            generated: 0,
            discovered: Discovered::new(run.encode),
            truncated: false,
            on_disk: None,
        };

        // First every successor of the chunk, so that they can be looked up
        // in one batch.
        scratch.successors.clear();
        scratch.fingerprints.clear();
        scratch.next_states.clear();
        scratch.ends.clear();
        let states_with_fingerprints = pieces
            .iter()
            .flat_map(|(states, fingerprints)| states.iter().zip(fingerprints.iter().copied()));
        for (offset, (state, own)) in states_with_fingerprints.enumerate() {
            let id = first + offset as u32;
            for (slot, target) in chunk.found.iter_mut().zip(&run.targets) {
                if slot.is_none() && (target.condition)(model, state) == target.wanted {
                    *slot = Some(id);
                }
            }
            let words = chunk.labels.len();
            chunk
                .labels
                .resize(words + run.labels.len().div_ceil(32), 0);
            for (k, label) in run.labels.iter().enumerate() {
                if label(model, state) {
                    chunk.labels[words + k / 32] |= 1 << (k % 32);
                }
            }
            scratch.actions.clear();
            model.actions(state, &mut scratch.actions);
            let mut produced = false;
            for action in scratch.actions.drain(..) {
                let fair = run
                    .classes
                    .iter()
                    .enumerate()
                    .filter(|(_, class)| class(&action))
                    .fold(C::default(), |set, (j, _)| set.with(j));
                let Some(next) = model.next_state(state, action) else {
                    continue;
                };
                produced = true;
                if !model.within_boundary(&next) {
                    continue;
                }
                match run.moved(state, own, next, self.fingerprinter) {
                    None => scratch.successors.push(Successor::SelfLoop),
                    Some((next, fingerprint, renaming)) => {
                        scratch.successors.push(Successor::Other { fair, renaming });
                        scratch.fingerprints.push(fingerprint);
                        scratch.next_states.push(next);
                    }
                }
            }
            scratch.ends.push(scratch.successors.len());
            if !produced && chunk.deadlock.is_none() {
                chunk.deadlock = Some(id);
            }
        }

        chunk.generated = scratch.fingerprints.len() as u64;
        let how = Insertion {
            first_shard: index * 29,
            known_numbers: run.keep_edges,
            turn: Some(self.first_turn + index as u64),
        };
        self.seen.insert_all(
            &scratch.fingerprints,
            &how,
            &mut scratch.inserted,
            &mut scratch.batch,
        );

        // Then the edges, state by state in action order. Every new number
        // handed out is recorded, even past a truncation, so that numbers
        // stay dense.
        if run.keep_edges {
            // At most one per successor, and a stutter step per state.
            chunk.edges = self.spare_edges.take();
            chunk.edges.reserve_exact(scratch.successors.len() + count);
        }
        let new = scratch
            .inserted
            .iter()
            .filter(|result| matches!(result, Insert::New(_)))
            .count();
        chunk.discovered.parents.reserve_exact(new);
        let mut results = scratch
            .inserted
            .iter()
            .copied()
            .zip(scratch.fingerprints.iter().copied());
        let mut next_states = scratch.next_states.drain(..);
        let mut begin = 0;
        for (offset, &end) in scratch.ends.iter().enumerate() {
            let id = first + offset as u32;
            let edges_before = chunk.edges.len();
            for (ordinal, successor) in scratch.successors[begin..end].iter().enumerate() {
                let (to, fair, renaming) = match *successor {
                    Successor::SelfLoop => (id, C::default(), IDENTITY),
                    Successor::Other { fair, renaming } => {
                        let next = next_states.next();
                        match (results.next(), next) {
                            (Some((Insert::Known(to), _)), _) => (to, fair, renaming),
                            // Known, and no edge is kept.
                            (Some((Insert::Seen, _)), _) => continue,
                            (Some((Insert::New(to), fingerprint)), Some(next)) => {
                                let parent = Parent {
                                    state: id,
                                    ordinal: ordinal as u32,
                                };
                                if chunk.discovered.states.is_empty() {
                                    chunk.discovered.first = to;
                                }
                                chunk.discovered.parents.push(parent);
                                chunk.discovered.fingerprints.push(fingerprint);
                                if let Err(error) = chunk.discovered.states.push(next) {
                                    self.fail(error);
                                }
                                (to, fair, renaming)
                            }
                            _ => {
                                // A successor could not be numbered: this
                                // state and the rest of the chunk stay
                                // unexpanded.
                                if !chunk.truncated {
                                    self.halt(Bound::States(run.max_states));
                                    chunk.truncated = true;
                                    chunk.edges.truncate(edges_before);
                                    chunk.labels.truncate(
                                        chunk.degrees.len() * run.labels.len().div_ceil(32),
                                    );
                                }
                                continue;
                            }
                        }
                    }
                };
                if run.keep_edges && !chunk.truncated {
                    let set = match self.class_sets.index(fair, &mut scratch.class_sets) {
                        Ok(set) => set,
                        Err(error) => {
                            self.fail(error);
                            0
                        }
                    };
                    chunk.edges.push((to, set, renaming));
                }
            }
            begin = end;
            if chunk.truncated {
                continue;
            }
            if run.keep_edges && chunk.edges.len() == edges_before {
                // A state with no successor stutters forever.
                chunk.edges.push((id, 0, IDENTITY));
            }
            chunk
                .degrees
                .push((chunk.edges.len() - edges_before) as u32);
        }
        chunk.discovered.states.seal();
        // Its sealed discoveries, then its degrees, edges and labels.
        if let Packed::Encoded(encoded) = &mut chunk.discovered.states {
            self.append_to(self.discoveries.as_ref(), |file| encoded.spill(file));
        }
        self.append_to(self.edges.as_ref(), |file| {
            chunk.spill(file, self.spare_edges)
        });
        drop(pieces);
        scratch.states = states;
        chunk
    }
}

/// The distinct sets of fairness classes the edges take, numbered as the
/// threads first meet them: an edge keeps a 16-bit index instead of its set.
struct ClassSets<C> {
    known: Mutex<(Vec<C>, HashMap<C, u16>)>,
}

impl<C: ClassSet> ClassSets<C> {
    /// Only the empty set, numbered 0 (self-loops take it).
    fn new() -> Self {
        let empty = C::default();
        ClassSets {
            known: Mutex::new((vec![empty], HashMap::from([(empty, 0)]))),
        }
    }

    /// The index of `set`; `mine` is the calling thread's copy of the
    /// indices it has met, so that the shared table is locked only for a
    /// set the thread has not met yet.
    fn index(&self, set: C, mine: &mut ahash::AHashMap<C, u16>) -> Result<u16, CheckError> {
        if let Some(&index) = mine.get(&set) {
            return Ok(index);
        }
        let mut known = self.known.lock().unwrap_or_else(|p| p.into_inner());
        let (sets, indices) = &mut *known;
        let index = match indices.get(&set) {
            Some(&index) => index,
            None if sets.len() == MAX_CLASS_SETS => {
                return Err(CheckError::TooManyClassSets(MAX_CLASS_SETS))
            }
            None => {
                let index = sets.len() as u16;
                sets.push(set);
                indices.insert(set, index);
                index
            }
        };
        mine.insert(set, index);
        Ok(index)
    }

    /// The sets, by index.
    fn into_inner(self) -> Vec<C> {
        self.known.into_inner().unwrap_or_else(|p| p.into_inner()).0
    }
}

/// Marks the [`Visited`] set abandoned if the thread panics while holding a
/// chunk, so that threads waiting for that chunk's numbering turn give up.
struct AbandonOnPanic<'a>(&'a Visited);

impl Drop for AbandonOnPanic<'_> {
    fn drop(&mut self) {
        if std::thread::panicking() {
            self.0.abandon();
        }
    }
}

/// One successor of a state, before it has a number.
#[derive(Clone, Copy)]
enum Successor<C> {
    /// The action leads back to the same state.
    SelfLoop,
    /// The action leads elsewhere, taking these fairness classes, to a state
    /// that `renaming` made canonical; its fingerprint and canonical state
    /// are next in line in [`Scratch`].
    Other { fair: C, renaming: Element },
}

/// Buffers a thread reuses from chunk to chunk.
struct Scratch<M: Model, C> {
    /// The indices of the class sets this thread has met (looked up once
    /// per edge, so with a fast hasher).
    class_sets: ahash::AHashMap<C, u16>,
    /// The chunk's states, decoded.
    states: Vec<M::State>,
    /// Their encodings, decompressed.
    encodings: Vec<u8>,
    /// Their fingerprints when they were found.
    expected: Vec<Fingerprint>,
    actions: Vec<M::Action>,
    successors: Vec<Successor<C>>,
    /// Per state of the chunk, where its successors end in `successors`.
    ends: Vec<usize>,
    fingerprints: Vec<u64>,
    next_states: Vec<M::State>,
    inserted: Vec<Insert>,
    batch: Batch,
}

impl<M: Model, C> Scratch<M, C> {
    fn new() -> Self {
        Scratch {
            class_sets: ahash::AHashMap::new(),
            states: Vec::new(),
            encodings: Vec::new(),
            expected: Vec::new(),
            actions: Vec::new(),
            successors: Vec::new(),
            ends: Vec::new(),
            fingerprints: Vec::new(),
            next_states: Vec::new(),
            inserted: Vec::new(),
            batch: Batch::default(),
        }
    }
}

#[cfg(test)]
mod tests {
    use steadfast_spec::mutex::{Lock, LockVariant};

    use super::*;

    fn explore(threads: usize) -> Graph<u32> {
        // Neighbouring chunks of a level reach many of the same states,
        // which threads race for.
        let lock = Lock::new(5, LockVariant::Filter).unwrap().with_rounds(1);
        let run = Exploration {
            model: &lock,
            symmetry: None,
            classes: Vec::new(),
            labels: Vec::new(),
            targets: Vec::new(),
            keep_edges: true,
            encode: true,
            threads,
            max_states: u32::MAX - 2,
            timeout: None,
            memory: None,
            spill: None,
            interrupt: None,
            progress: None,
        };
        run.run().graph
    }

    #[test]
    fn threads_should_number_every_state_as_one_thread_does() {
        let one = explore(1);
        assert_eq!(one.len(), 139_183);
        let parents =
            |graph: &Graph<u32>| -> Vec<_> { (0..graph.len()).map(|u| graph.parent(u)).collect() };
        let ranges = |graph: &Graph<u32>| -> Vec<_> {
            (0..graph.len()).map(|u| graph.edge_range(u)).collect()
        };
        let edges = |graph: &Graph<u32>| -> Vec<_> {
            (0..graph.edge_count()).map(|e| graph.edge(e)).collect()
        };
        for _ in 0..3 {
            let two = explore(2);
            assert!(parents(&two) == parents(&one), "the same parents");
            assert_eq!(two.edge_count(), one.edge_count());
            assert!(edges(&two) == edges(&one), "the same edges");
            assert!(ranges(&two) == ranges(&one), "the same offsets");
        }
    }
}
