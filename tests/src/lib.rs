//! steadfast-tests: integration tests across the workspace. The tests live in
//! `tests/`; this library holds what they share: [`kube_testserver`], the
//! Kubernetes API server they run against; [`backup`], the example
//! operator's custom resource; [`kube_target`], it or a real
//! cluster; [`etcd_server`], real etcd on
//! loopback with its faults; [`certs`], a CA and certificates of a test's
//! own; [`tcp_proxy`], network faults on loopback;
//! [`leasequeue_nodes`], leasequeue schedulers run as processes would be,
//! and the replay of their traces; [`scrape`], what a metrics endpoint
//! serves.

#![deny(missing_docs)]

pub mod backup;
pub mod certs;
pub mod etcd_server;
pub mod kube_target;
pub mod kube_testserver;
pub mod leasequeue_nodes;
pub mod scrape;
pub mod tcp_proxy;

/// mimalloc, as in the `steadfast` command: the model checks of `cargo
/// test` clone, hash and drop states by the million, and glibc's `malloc`
/// and `free` take a large part of their time (docs/benchmarks.md).
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

use steadfast_checker::{check, CheckOptions, CheckableState, Report, Verdict};
use steadfast_spec::TemporalModel;

/// Checks `model` with the default options, on every core.
///
/// # Panics
///
/// If the model cannot be checked as declared.
pub fn run<M>(model: &M) -> Report<M>
where
    M: TemporalModel + Sync,
    M::State: CheckableState,
    M::Action: Clone,
{
    check(model, &CheckOptions::default()).expect("the model is checkable")
}

/// Asserts that the check was complete and every property holds.
///
/// # Panics
///
/// Naming the first property that does not hold.
pub fn assert_all_hold<M: stateright::Model>(report: &Report<M>) {
    assert!(report.stopped.is_none(), "the check was cut short");
    for property in &report.properties {
        assert_eq!(property.verdict, Verdict::Holds, "{}", property.name);
    }
}

/// The verdict on `property` in `report`.
///
/// # Panics
///
/// If the model has no such property.
pub fn verdict<M: stateright::Model>(report: &Report<M>, property: &str) -> Verdict {
    report
        .property(property)
        .unwrap_or_else(|| panic!("the model has no property {property:?}"))
        .verdict
}

/// Asserts that a rule is needed: `property` holds in `model` under every
/// rule, and is violated in `without`, the same model with `rule` taken
/// away.
///
/// # Panics
///
/// If either check says otherwise.
pub fn assert_needed<M>(model: &M, without: &M, rule: &str, property: &str)
where
    M: TemporalModel + Sync,
    M::State: CheckableState,
    M::Action: Clone,
{
    assert_eq!(
        verdict(&run(model), property),
        Verdict::Holds,
        "{property} with every rule"
    );
    assert_eq!(
        verdict(&run(without), property),
        Verdict::Violated,
        "{property} without {rule}"
    );
}

/// With `STEADFAST_KEEP_TRACES=DIR`, copies the files of `traces` into a
/// fresh directory under `DIR` named `prefix…`, for `steadfast replay` or a
/// reader, and says where.
///
/// # Panics
///
/// If `DIR` is not a writable directory, or a trace cannot be copied.
pub fn keep_traces(traces: &std::path::Path, prefix: &str) {
    let Some(keep) = std::env::var_os("STEADFAST_KEEP_TRACES") else {
        return;
    };
    let kept = tempfile::Builder::new()
        .prefix(prefix)
        .tempdir_in(keep)
        .expect("STEADFAST_KEEP_TRACES names a writable directory")
        .keep();
    for entry in std::fs::read_dir(traces).expect("the traces are readable") {
        let trace = entry.expect("a trace").path();
        let name = trace.file_name().expect("a trace has a name");
        std::fs::copy(&trace, kept.join(name)).expect("the trace is copied");
    }
    eprintln!("traces kept in {}", kept.display());
}

/// Asserts that every step of the trace at `path` (each line after the
/// header) is stamped with when it was taken (`at`, milliseconds since the
/// Unix epoch) within the last hour and not after now, and that the stamps
/// never go back by more than a second (a wall clock may be stepped a
/// little): what lets the traces of several nodes be merged in order.
///
/// # Panics
///
/// If the trace cannot be read, or a step is not so stamped.
pub fn assert_stamped(path: &std::path::Path) {
    let text = std::fs::read_to_string(path).expect("the trace is readable");
    // Read after the trace: a node may still be appending to it, and every
    // step read was stamped before now.
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .expect("the clock is after the epoch")
        .as_millis() as u64;
    let mut last = 0;
    for (step, line) in text.lines().skip(1).enumerate() {
        let record: serde_json::Value = serde_json::from_str(line).expect("a step is JSON");
        let at = record["at"].as_u64().unwrap_or(0);
        let where_ = format!("{} step {step}", path.display());
        assert!(
            now.saturating_sub(3_600_000) < at && at <= now,
            "{where_}: stamped {at}, now {now}"
        );
        assert!(at + 1_000 >= last, "{where_}: stamped {at}, after {last}");
        last = last.max(at);
    }
}

/// Every trace (`*.jsonl`) in `dir`, sorted.
///
/// # Panics
///
/// If `dir` cannot be read.
pub fn traces_in(dir: &std::path::Path) -> Vec<std::path::PathBuf> {
    let mut paths: Vec<std::path::PathBuf> = std::fs::read_dir(dir)
        .expect("the trace directory is readable")
        .map(|entry| entry.expect("a directory entry").path())
        .filter(|path| path.extension().is_some_and(|e| e == "jsonl"))
        .collect();
    paths.sort();
    paths
}

/// Replays every trace in `dir` as `steadfast replay` does (every step
/// through its role, then every trace together against the protocols'
/// properties and the world's rules), and returns each trace's step count.
/// The world's rules must hold whatever the variant; the protocols'
/// properties only if `properties_hold` (a legacy variant breaks them by
/// design, as its model does).
///
/// # Panics
///
/// If a trace cannot be read or is not stamped, a step diverges, or a rule
/// that must hold is broken: the report, as `steadfast replay` prints it.
pub fn replay_all(
    dir: &std::path::Path,
    properties_hold: bool,
) -> Vec<(std::path::PathBuf, usize)> {
    use steadfast_checker::replay;
    let paths = traces_in(dir);
    assert!(!paths.is_empty(), "no trace in {}", dir.display());
    paths.iter().for_each(|path| assert_stamped(path));
    let traces: Vec<replay::Traced> = paths
        .iter()
        .map(|path| replay::read(path).unwrap_or_else(|error| panic!("{error}")))
        .collect();
    let report = replay::check(&traces, &replay::Options::default());
    assert!(
        report.passes(properties_hold),
        "the replay fails:\n{}",
        report.render(&traces)
    );
    paths
        .into_iter()
        .zip(report.replays)
        .map(|(path, replay)| (path, replay.unwrap_or_default()))
        .collect()
}
