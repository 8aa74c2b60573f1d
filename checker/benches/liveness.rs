//! The cost of sound liveness checking, measured on the `mutex` model's
//! `bench` scenario (the filter lock for 6 processes that enter once each,
//! 2.8 million states), beside stateright's own depth-first checker on the
//! same model.
//!
//! Run: `cargo bench -p steadfast-checker --bench liveness [-- PROCESSES [ROUNDS]]`
//! (ROUNDS 0: without limit). stateright's DFS keeps the whole path with
//! every pending state, so without a limit on rounds its memory grows with
//! the depth of its search; it ran out of 24 GiB on the unbounded 6-process
//! lock, so the benchmark bounds the rounds.
//!
//! Each run happens in a process of its own; its peak memory is how far the
//! process's peak resident set rose above what it held before the run, so it
//! counts every allocation the run made, frontier states included.

use std::time::{Duration, Instant};

use stateright::{Checker, Model};
use steadfast_spec::mutex::{Lock, LockVariant};

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
const RUNS: [(&str, usize); 5] = [
    ("stateright-dfs", 1),
    ("safety", 1),
    ("safety", 2),
    ("liveness", 1),
    ("liveness", 2),
];

fn main() {
    let args: Vec<String> = std::env::args()
        .skip(1)
        .filter(|arg| !arg.starts_with('-'))
        .collect();
    if let [kind, threads, processes, rounds] = &args[..] {
        if let Some(threads) = threads.strip_prefix("threads=") {
            let model = lock(processes, rounds);
            let threads = threads.parse().unwrap_or(1);
            let run = match kind.as_str() {
                "stateright-dfs" => stateright_dfs(&model),
                "safety" => measure(&model, threads, true),
                _ => measure(&model, threads, false),
            };
            println!("{}", run.to_line());
            return;
        }
    }
    let processes = args.first().map_or("6", String::as_str);
    let rounds = args.get(1).map_or("1", String::as_str);
    lock(processes, rounds);
    println!(
        "model: mutex, variant filter, {processes} processes, rounds {rounds} (0: no limit); \
         {REPEATS} runs each, taken in turn; the fastest shown, and the median time"
    );

    let mut repeats: Vec<Vec<Run>> = RUNS.iter().map(|_| Vec::new()).collect();
    for _ in 0..REPEATS {
        for ((kind, threads), runs) in RUNS.iter().zip(&mut repeats) {
            let args = [
                kind.to_string(),
                format!("threads={threads}"),
                processes.into(),
                rounds.into(),
            ];
            runs.push(run_child(&args));
        }
    }
    let mut runs = Vec::new();
    for ((kind, threads), mut repeated) in RUNS.into_iter().zip(repeats) {
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
    let [dfs, safety1, safety2, live1, live2] = &runs[..] else {
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
}

fn lock(processes: &str, rounds: &str) -> Lock {
    let (Ok(processes), Ok(rounds)) = (processes.parse(), rounds.parse()) else {
        eprintln!("error: the arguments are a process count and a round count, as numbers");
        std::process::exit(2);
    };
    Lock::new(processes, LockVariant::Filter)
        .unwrap_or_else(|e| {
            eprintln!("error: {e}");
            std::process::exit(2);
        })
        .with_rounds(rounds)
}

fn stateright_dfs(model: &Lock) -> Run {
    let before = resident();
    let started = Instant::now();
    let checker = model.clone().checker().spawn_dfs().join();
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
