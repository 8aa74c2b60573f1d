//! The cost of sound liveness checking, beside stateright's own depth-first
//! checker on the same model: the `mutex` model's `bench` scenario (the
//! filter lock for 6 processes that enter once each, 2.8 million states),
//! or two-phase commit (`twophase`, 8 resource managers by default); and what
//! symmetry reduction saves on it.
//!
//! Run: `cargo bench -p steadfast-checker --bench liveness [-- mutex
//! [PROCESSES [ROUNDS]] | -- twophase [RMS]]` (ROUNDS 0: without limit).
//! stateright's DFS keeps the whole path with every pending state, so
//! without a limit on rounds its memory grows with the depth of its search;
//! it ran out of 24 GiB on the unbounded 6-process lock, so the benchmark
//! bounds the rounds.
//!
//! The first five runs explore every state, as stateright does; the sixth
//! checks liveness on the graph reduced by the model's symmetry (the lock's
//! processes other than 0, two-phase commit's RMs); for `twophase` a
//! seventh runs stateright's DFS again with its own symmetry reduction, by
//! the same canonical form, for safety alone.
//! Each run happens in a process of its own; its peak memory is how far the
//! process's peak resident set rose above what it held before the run, so it
//! counts every allocation the run made, frontier states included.

use std::time::{Duration, Instant};

use stateright::{Checker, Model};
use steadfast_checker::CheckableState;
use steadfast_spec::mutex::{Lock, LockVariant};
use steadfast_spec::twophase::{TmVariant, TwoPhase};
use steadfast_spec::TemporalModel;

mod common;
use common::{measure, peak_resident, resident, run_child, Run};

/// How often each run is repeated. This machine's neighbours make single
/// timings vary by a fifth, now and then by a third, so each run is shown
/// by its fastest and its median time, and the ratios are given for both.
/// The repeats go round the runs in turn, so that a slow spell of the
/// machine falls on all of them alike.
const REPEATS: usize = 5;

/// The runs a benchmark makes, each in a process of its own so that its
/// peak memory is its own.
const RUNS: [(&str, usize); 6] = [
    ("stateright-dfs", 1),
    ("safety", 1),
    ("safety", 2),
    ("liveness", 1),
    ("liveness", 2),
    ("reduced", 1),
];

/// The model measured, from the command line.
enum Subject {
    Mutex(Lock),
    TwoPhase(TwoPhase),
}

impl Subject {
    /// The model the arguments name (`mutex PROCESSES ROUNDS`, `twophase
    /// RMS`; the first alone takes its defaults), and a line on it.
    fn parse(args: &[String]) -> (Subject, String) {
        let arg = |k: usize, default: &str| -> u8 {
            let text = args.get(k).map_or(default, String::as_str);
            text.parse().unwrap_or_else(|_| {
                eprintln!("error: {text:?} is not a count; {USAGE}");
                std::process::exit(2);
            })
        };
        let fail = |e: &dyn std::fmt::Display| -> ! {
            eprintln!("error: {e}");
            std::process::exit(2);
        };
        match args.first().map_or("mutex", String::as_str) {
            "mutex" => {
                let (processes, rounds) = (arg(1, "6"), arg(2, "1"));
                let lock = Lock::new(processes, LockVariant::Filter)
                    .unwrap_or_else(|e| fail(&e))
                    .with_rounds(rounds);
                let about = format!(
                    "mutex, variant filter, {processes} processes, rounds {rounds} (0: no limit)"
                );
                (Subject::Mutex(lock), about)
            }
            "twophase" => {
                let rms = arg(1, "8");
                let model = TwoPhase::new(rms, TmVariant::TwoPhase).unwrap_or_else(|e| fail(&e));
                let about = format!("twophase, variant two-phase, {rms} resource managers");
                (Subject::TwoPhase(model), about)
            }
            other => fail(&format!("no benchmark model {other:?}; {USAGE}")),
        }
    }

    /// Makes the run `kind` on `threads` threads.
    fn run(&self, kind: &str, threads: usize) -> Run {
        match (self, kind) {
            (Subject::TwoPhase(model), "stateright-dfs-reduced") => stateright_dfs_reduced(model),
            (Subject::Mutex(model), _) => run(model, kind, threads),
            (Subject::TwoPhase(model), _) => run(model, kind, threads),
        }
    }

    /// The runs it is measured by: stateright's own reduction too where
    /// its state gives stateright a canonical form.
    fn runs(&self) -> Vec<(&'static str, usize)> {
        let mut runs = RUNS.to_vec();
        if let Subject::TwoPhase(_) = self {
            runs.push(("stateright-dfs-reduced", 1));
        }
        runs
    }
}

const USAGE: &str = "the arguments are `mutex [PROCESSES [ROUNDS]]` or `twophase [RMS]`";

/// Makes the run `kind` of `model` on `threads` threads.
fn run<M>(model: &M, kind: &str, threads: usize) -> Run
where
    M: TemporalModel + Clone + Send + Sync + 'static,
    M::State: CheckableState + std::fmt::Debug + 'static,
    M::Action: Clone + PartialEq + std::fmt::Debug + Send + Sync + 'static,
{
    match kind {
        "stateright-dfs" => stateright_dfs(model),
        "safety" => measure(model, threads, true, false),
        "reduced" => measure(model, threads, false, true),
        _ => measure(model, threads, false, false),
    }
}

fn main() {
    let args: Vec<String> = std::env::args()
        .skip(1)
        .filter(|arg| !arg.starts_with('-'))
        .collect();
    if let [kind, threads, model @ ..] = &args[..] {
        if let Some(threads) = threads.strip_prefix("threads=") {
            let (subject, _) = Subject::parse(model);
            println!(
                "{}",
                subject.run(kind, threads.parse().unwrap_or(1)).to_line()
            );
            return;
        }
    }
    let (subject, about) = Subject::parse(&args);
    let planned = subject.runs();
    println!(
        "model: {about}; {REPEATS} runs each, taken in turn; the fastest shown, and the median \
         time"
    );

    let mut repeats: Vec<Vec<Run>> = planned.iter().map(|_| Vec::new()).collect();
    for _ in 0..REPEATS {
        for ((kind, threads), runs) in planned.iter().zip(&mut repeats) {
            let mut child = vec![kind.to_string(), format!("threads={threads}")];
            child.extend(args.iter().cloned());
            runs.push(run_child(&child));
        }
    }
    let mut runs = Vec::new();
    for ((kind, threads), mut repeated) in planned.into_iter().zip(repeats) {
        repeated.sort_by_key(|run| run.time);
        let median = repeated[repeated.len() / 2].time;
        let run = repeated.swap_remove(0);
        println!(
            "{kind:>15} {threads} thread(s): {:>9} states {:>10} edges  {:>8.2?} (median {:>8.2?})  \
             explore {:.2?}, search {:.2?}  {:>9.0} states/s  peak {:>6.1} MiB",
            run.states,
            run.edges,
            run.time,
            median,
            run.explore,
            run.search,
            rate(run.states, run.time),
            run.peak as f64 / (1024.0 * 1024.0)
        );
        runs.push((run, median));
    }
    let [dfs, safety1, safety2, live1, live2, reduced] = &runs[..6] else {
        return;
    };
    // The ratio of two runs' times: fastest against fastest, and median
    // against median.
    let ratio = |a: &(Run, Duration), b: &(Run, Duration)| {
        format!(
            "{:.2}x (medians: {:.2}x)",
            a.0.time.as_secs_f64() / b.0.time.as_secs_f64(),
            a.1.as_secs_f64() / b.1.as_secs_f64()
        )
    };
    for (threads, safety, live) in [(1, safety1, live1), (2, safety2, live2)] {
        println!(
            "{threads} thread(s): liveness costs {} the safety run; peak {:.1} B/state with \
             edges ({:.1} B/state for safety alone)",
            ratio(live, safety),
            live.0.peak as f64 / live.0.states as f64,
            safety.0.peak as f64 / safety.0.states as f64
        );
    }
    println!(
        "safety speed-up with 2 threads: {}",
        ratio(safety1, safety2)
    );
    println!(
        "1-thread safety against stateright's DFS: {} faster",
        ratio(dfs, safety1)
    );
    println!(
        "symmetry: {} states instead of {} ({:.1}x fewer); 1-thread liveness {} faster",
        reduced.0.states,
        live1.0.states,
        live1.0.states as f64 / reduced.0.states as f64,
        ratio(live1, reduced)
    );
    if let Some(dfs_reduced) = runs.get(6) {
        println!(
            "reduced: stateright's DFS with its symmetry (safety alone) {} states; our reduced \
             liveness, the declaration's verification included, takes {} its time",
            dfs_reduced.0.states,
            ratio(reduced, dfs_reduced)
        );
    }
}

fn stateright_dfs<M>(model: &M) -> Run
where
    M: Model + Clone + Send + Sync + 'static,
    M::State: Clone + PartialEq + std::hash::Hash + std::fmt::Debug + Send + Sync + 'static,
    M::Action: Clone + PartialEq + std::fmt::Debug + Send + Sync + 'static,
{
    measure_stateright(|| model.clone().checker().spawn_dfs().join())
}

/// stateright's DFS with its own symmetry reduction (of safety), by the
/// model's canonical form.
fn stateright_dfs_reduced(model: &TwoPhase) -> Run {
    measure_stateright(|| model.clone().checker().symmetry().spawn_dfs().join())
}

/// Times the stateright check `run` makes and measures its peak.
fn measure_stateright<M: Model, C: Checker<M>>(run: impl FnOnce() -> C) -> Run {
    let before = resident();
    let started = Instant::now();
    let checker = run();
    let time = started.elapsed();
    assert!(checker.is_done(), "stateright explored the whole graph");
    Run {
        states: checker.unique_state_count() as u64,
        edges: 0,
        time,
        explore: time,
        search: Duration::ZERO,
        peak: peak_resident().saturating_sub(before),
    }
}

fn rate(states: u64, time: Duration) -> f64 {
    states as f64 / time.as_secs_f64()
}
