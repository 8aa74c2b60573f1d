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
