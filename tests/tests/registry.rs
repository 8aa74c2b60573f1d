//! Every registered model, checked at its first scenario through the same
//! entry points the `steadfast` command uses, gives the verdicts its variants
//! promise: the first (default) variant proves everything; a variant that
//! exists to show a failure shows one. (Larger scenarios have tests of their
//! own, or run through `steadfast check`.)

use steadfast_checker::registry::registry;
use steadfast_checker::{CheckOptions, Verdict};

#[test]
fn default_variants_should_prove_every_property_in_the_first_scenario() {
    for entry in registry() {
        let variant = entry.variants()[0].0;
        {
            let scenario = entry.scenarios()[0].0;
            let report = entry
                .check(variant, scenario, &CheckOptions::default(), None)
                .unwrap_or_else(|e| panic!("{}: {e}", entry.name()));
            assert!(report.stopped.is_none());
            for property in &report.properties {
                assert_eq!(
                    property.verdict,
                    Verdict::Holds,
                    "{} {variant} {scenario}: {}",
                    entry.name(),
                    property.name
                );
            }
        }
    }
}

#[test]
fn other_variants_should_each_violate_something_with_evidence() {
    for entry in registry() {
        for (variant, _) in entry.variants().into_iter().skip(1) {
            let scenario = entry.scenarios()[0].0;
            let report = entry
                .check(variant, scenario, &CheckOptions::default(), None)
                .unwrap_or_else(|e| panic!("{}: {e}", entry.name()));
            let violated: Vec<_> = report
                .properties
                .iter()
                .filter(|p| p.verdict == Verdict::Violated)
                .collect();
            assert!(!violated.is_empty(), "{} {variant}", entry.name());
            for property in violated {
                let evidence = property
                    .evidence
                    .as_ref()
                    .expect("a violation has evidence");
                assert!(evidence.counterexample);
                assert!(evidence.explorer_path.starts_with("#/steps/0"));
            }
        }
    }
}

/// Every registered scenario gives the same verdicts with and without
/// symmetry reduction, and its safety properties the same verdicts in a
/// safety-only check (`--safety`), under a bound on states that keeps
/// `cargo test` short: where both runs complete, every verdict is the same;
/// where a bound stopped one, no verdict contradicts the other's (a bound
/// leaves `unknown`, never a wrong answer). A bound stops a safety-only
/// check at as many states, but on more than one thread not always the
/// same ones: which chunk of the last level numbers a state first is a
/// race there. Scenarios past the bound are
/// compared by `steadfast check` with and without `--no-symmetry` and
/// `--safety`.
#[test]
fn every_scenario_should_give_the_same_verdicts_with_and_without_symmetry_and_safety_only() {
    let bounded = |symmetry| CheckOptions {
        max_states: Some(60_000),
        symmetry,
        ..CheckOptions::default()
    };
    let mut compared = 0;
    for entry in registry() {
        for (variant, _) in entry.variants() {
            for (scenario, _, _) in entry.scenarios() {
                let run = |symmetry| {
                    entry
                        .check(variant, scenario, &bounded(symmetry), None)
                        .unwrap_or_else(|e| panic!("{} {variant} {scenario}: {e}", entry.name()))
                };
                let (full, reduced) = (run(false), run(true));
                let safety = entry
                    .check(
                        variant,
                        scenario,
                        &CheckOptions {
                            safety_only: true,
                            ..bounded(true)
                        },
                        None,
                    )
                    .unwrap_or_else(|e| panic!("{} {variant} {scenario}: {e}", entry.name()));
                let both = full.stopped.is_none() && reduced.stopped.is_none();
                compared += usize::from(both);
                // The same exploration, the same states, whether or not the
                // liveness search follows.
                assert_eq!(safety.stats.unique_states, reduced.stats.unique_states);
                assert_eq!(safety.stopped, reduced.stopped);
                for ((f, r), s) in full
                    .properties
                    .iter()
                    .zip(&reduced.properties)
                    .zip(&safety.properties)
                {
                    assert_eq!(f.name, r.name);
                    assert_eq!(f.name, s.name);
                    let agree = |a: Verdict, b: Verdict, both: bool| {
                        a == b || (!both && (a == Verdict::Unknown || b == Verdict::Unknown))
                    };
                    assert!(
                        agree(f.verdict, r.verdict, both),
                        "{} {variant} {scenario}: {} is {:?} in full, {:?} reduced",
                        entry.name(),
                        f.name,
                        f.verdict,
                        r.verdict
                    );
                    let agrees = if s.kind.is_liveness() {
                        s.verdict == Verdict::NotChecked
                    } else {
                        agree(s.verdict, r.verdict, both)
                    };
                    assert!(
                        agrees,
                        "{} {variant} {scenario}: {} is {:?} safety-only, {:?} reduced",
                        entry.name(),
                        f.name,
                        s.verdict,
                        r.verdict
                    );
                }
            }
        }
    }
    assert!(compared > 0, "some scenario completes within the bound");
}
