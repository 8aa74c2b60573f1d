//! What a state costs on a model of the size the leasequeue proofs need: the
//! `bench` scenario of the steadfast variant (6.36 million states, 26
//! million edges), checked for safety alone and with liveness, each in a
//! process of its own on 2 threads.
//!
//! Run: `cargo bench -p steadfast-checker --bench leasequeue [-- REPEATS]`
//! (1 by default; each run takes about a minute on a 2-core machine).
//!
//! Peak memory is how far the process's peak resident set rose above what it
//! held before the run: it counts every allocation the check made, the
//! seen set, the graph with its edges and the frontier included. Bytes per
//! state is that peak over the states, edges included.

use steadfast_spec::leasequeue::model::scenarios;
use steadfast_spec::leasequeue::Variant;

mod common;
use common::{measure, run_child, Run};

const THREADS: usize = 2;

fn main() {
    let args: Vec<String> = std::env::args()
        .skip(1)
        .filter(|arg| !arg.starts_with('-'))
        .collect();
    if let [kind] = &args[..] {
        if let Some(kind) = kind.strip_prefix("run=") {
            let model = scenarios::bench(Variant::Steadfast);
            println!(
                "{}",
                measure(&model, THREADS, kind == "safety", false).to_line()
            );
            return;
        }
    }
    let repeats: usize = match args.first().map(|n| n.parse()) {
        None => 1,
        Some(Ok(n)) if n > 0 => n,
        Some(_) => {
            eprintln!("error: the argument is how often each run is repeated, a positive number");
            std::process::exit(2);
        }
    };
    println!(
        "model: leasequeue, variant steadfast, scenario bench, {THREADS} threads; \
         {repeats} run(s) each, taken in turn; the fastest shown"
    );
    let mut safety = Vec::new();
    let mut liveness = Vec::new();
    for _ in 0..repeats {
        safety.push(run_child(&["run=safety".into()]));
        liveness.push(run_child(&["run=liveness".into()]));
    }
    let fastest = |runs: Vec<Run>| runs.into_iter().min_by_key(|run| run.time).expect("a run");
    let (safety, liveness) = (fastest(safety), fastest(liveness));
    for (kind, run) in [("safety", &safety), ("liveness", &liveness)] {
        println!(
            "{kind:>9}: {} states, {} edges, {:.2?} (explore {:.2?}, search {:.2?}), \
             peak {:.1} MiB, {:.1} B/state with edges",
            run.states,
            run.edges,
            run.time,
            run.explore,
            run.search,
            run.peak as f64 / (1024.0 * 1024.0),
            run.peak as f64 / run.states as f64
        );
    }
    println!(
        "liveness costs {:.2}x the safety run's time",
        liveness.time.as_secs_f64() / safety.time.as_secs_f64()
    );
}
