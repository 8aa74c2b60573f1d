//! What the benchmarks share: one measured run, made in a process of its
//! own so that its peak memory is its own.

// Each benchmark compiles this module and uses a part of it.
#![allow(dead_code)]

use std::time::{Duration, Instant};

use steadfast_checker::{check, CheckOptions, CheckableState, Report, Spilling, Verdict};
use steadfast_spec::TemporalModel;

/// The allocator the `steadfast` command runs on, so that the figures are
/// the command's (stateright's runs share it).
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

/// One measured run of the checker.
pub struct Run {
    pub states: u64,
    pub edges: u64,
    pub time: Duration,
    pub explore: Duration,
    pub search: Duration,
    /// Bytes by which the peak resident set grew.
    pub peak: u64,
}

impl Run {
    /// The line a child process prints for its parent.
    pub fn to_line(&self) -> String {
        format!(
            "{} {} {} {} {} {}",
            self.states,
            self.edges,
            self.time.as_nanos(),
            self.explore.as_nanos(),
            self.search.as_nanos(),
            self.peak
        )
    }

    fn from_line(line: &str) -> Option<Run> {
        let numbers: Vec<u64> = line
            .split(' ')
            .map(str::parse)
            .collect::<Result<_, _>>()
            .ok()?;
        let [states, edges, time, explore, search, peak] = numbers[..] else {
            return None;
        };
        Some(Run {
            states,
            edges,
            time: Duration::from_nanos(time),
            explore: Duration::from_nanos(explore),
            search: Duration::from_nanos(search),
            peak,
        })
    }
}

/// Runs this benchmark again with `args`, in a process of its own, and
/// reads the run it measured.
pub fn run_child(args: &[String]) -> Run {
    let output = std::process::Command::new(std::env::current_exe().expect("own path"))
        .args(args)
        .output()
        .expect("the benchmark runs itself");
    let text = String::from_utf8_lossy(&output.stdout);
    Run::from_line(text.trim()).unwrap_or_else(|| {
        eprintln!(
            "error: run {args:?} failed: {}",
            String::from_utf8_lossy(&output.stderr)
        );
        std::process::exit(1);
    })
}

/// Checks `model` on `threads` threads, for safety alone or with liveness,
/// reduced by its symmetry or not, and asserts that every property judged
/// holds. As the `steadfast` command does, it may spill to the system's
/// temporary directory: a safety check's trail goes there from the start,
/// the rest only past a memory bound, and none is set here.
pub fn measure<M>(model: &M, threads: usize, safety_only: bool, symmetry: bool) -> Run
where
    M: TemporalModel + Sync,
    M::State: CheckableState,
    M::Action: Clone,
{
    let before = resident();
    let options = CheckOptions {
        threads,
        safety_only,
        symmetry,
        spill: Some(Spilling {
            dir: std::env::temp_dir(),
            from_start: false,
        }),
        ..CheckOptions::default()
    };
    let started = Instant::now();
    let report: Report<M> = check(model, &options).expect("the model is checkable");
    let time = started.elapsed();
    let peak = peak_resident().saturating_sub(before);
    for property in &report.properties {
        let expected = if safety_only && property.kind.is_liveness() {
            Verdict::NotChecked
        } else {
            Verdict::Holds
        };
        assert_eq!(property.verdict, expected, "{}", property.name);
    }
    Run {
        states: report.stats.unique_states,
        edges: report.stats.edges,
        time,
        explore: report.stats.explore_time,
        search: report.stats.liveness_time,
        peak,
    }
}

/// The resident set now, in bytes.
pub fn resident() -> u64 {
    status_kib("VmRSS:") * 1024
}

/// The peak resident set so far, in bytes.
pub fn peak_resident() -> u64 {
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
