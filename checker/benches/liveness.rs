//! The cost of sound liveness checking, measured on the `mutex` model's
//! `bench` scenario (the filter lock for 6 processes, about 8.8 million
//! states), beside stateright's own depth-first checker on the same model.
//!
//! Run: `cargo bench -p steadfast-checker --bench liveness [-- PROCESSES]`.
//!
//! Peak memory is the growth of the process's peak resident set during a run
//! (reset through `/proc/self/clear_refs` before each), so it counts every
//! allocation the run made, frontier states included.

use std::time::{Duration, Instant};

use stateright::{Checker, Model};
use steadfast_checker::{check, CheckOptions, Report};
use steadfast_spec::mutex::{Lock, LockVariant};

fn main() {
    let processes = std::env::args()
        .skip(1)
        .find(|arg| !arg.starts_with('-'))
        .map_or(Ok(6), |arg| arg.parse::<u8>())
        .unwrap_or_else(|e| {
            eprintln!("error: the argument must be a process count: {e}");
            std::process::exit(2);
        });
    let model = Lock::new(processes, LockVariant::Filter).unwrap_or_else(|e| {
        eprintln!("error: {e}");
        std::process::exit(2);
    });
    println!("model: mutex, variant filter, {processes} processes");

    let (stateright_states, stateright_time) = stateright_dfs(&model);
    println!(
        "stateright DFS (1 thread):   {stateright_states} states in {:.2?}: {:.0} states/s",
        stateright_time,
        rate(stateright_states, stateright_time)
    );

    let mut safety = Vec::new();
    for threads in [1, 2] {
        let run = measure(&model, threads, true);
        println!(
            "steadfast safety ({threads} thread{}): {} states in {:.2?}: {:.0} states/s, peak {:.1} B/state",
            if threads == 1 { ") " } else { "s)" },
            run.states,
            run.time,
            rate(run.states, run.time),
            run.peak as f64 / run.states as f64
        );
        safety.push(run);
    }
    for threads in [1, 2] {
        let run = measure(&model, threads, false);
        let per_state = (run.peak as f64 - 8.0 * run.edges as f64) / run.states as f64;
        println!(
            "steadfast liveness ({threads} thread{}): {} states, {} edges in {:.2?} \
             (explore {:.2?}, search {:.2?}): {:.0} states/s, {:.2}x the safety run, \
             peak {:.1} B/state + 8 B/edge",
            if threads == 1 { ") " } else { "s)" },
            run.states,
            run.edges,
            run.time,
            run.explore,
            run.search,
            rate(run.states, run.time),
            run.time.as_secs_f64() / safety[threads - 1].time.as_secs_f64(),
            per_state
        );
    }
    println!(
        "safety speed-up with 2 threads: {:.2}x; 1-thread safety vs stateright DFS: {:.2}x",
        safety[0].time.as_secs_f64() / safety[1].time.as_secs_f64(),
        stateright_time.as_secs_f64() / safety[0].time.as_secs_f64()
    );
}

fn stateright_dfs(model: &Lock) -> (u64, Duration) {
    let started = Instant::now();
    let checker = model.clone().checker().spawn_dfs().join();
    let elapsed = started.elapsed();
    assert!(checker.is_done(), "stateright explored the whole graph");
    (checker.unique_state_count() as u64, elapsed)
}

/// One measured run of the checker.
struct Run {
    states: u64,
    edges: u64,
    time: Duration,
    explore: Duration,
    search: Duration,
    /// Bytes by which the peak resident set grew.
    peak: u64,
}

fn measure(model: &Lock, threads: usize, safety_only: bool) -> Run {
    let before = reset_peak();
    let options = CheckOptions {
        threads,
        safety_only,
        ..CheckOptions::default()
    };
    let started = Instant::now();
    let report: Report<Lock> = check(model, &options).expect("the model is checkable");
    let time = started.elapsed();
    let peak = peak_resident().saturating_sub(before);
    assert!(report.all_hold(), "the filter lock is correct");
    Run {
        states: report.stats.unique_states,
        edges: report.stats.edges,
        time,
        explore: report.stats.explore_time,
        search: report.stats.liveness_time,
        peak,
    }
}

/// Resets the peak resident set to the current one and returns it, in bytes.
fn reset_peak() -> u64 {
    if let Err(e) = std::fs::write("/proc/self/clear_refs", "5") {
        eprintln!("warning: cannot reset the peak resident set ({e}); memory figures include earlier runs");
    }
    status_kib("VmRSS:") * 1024
}

fn peak_resident() -> u64 {
    status_kib("VmHWM:") * 1024
}

fn status_kib(field: &str) -> u64 {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|status| {
            status
                .lines()
                .find_map(|line| line.strip_prefix(field))
                .and_then(|rest| rest.trim().trim_end_matches("kB").trim().parse().ok())
        })
        .unwrap_or(0)
}

fn rate(states: u64, time: Duration) -> f64 {
    states as f64 / time.as_secs_f64()
}
