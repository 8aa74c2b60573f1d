//! steadfast-checker: a sound checker of safety and fair liveness for
//! stateright models, and the `steadfast` command built on it.
//!
//! stateright judges `eventually` only at terminal states, so a model that
//! loops forever short of its goal passes. [`check`] instead builds the
//! reachable graph (numbered states, compact edges tagged with the fairness
//! classes they take), splits it into strongly connected components, and
//! looks for a fair cycle on which a property fails; what it reports is a
//! lasso. Declarations come from [`steadfast_spec::TemporalModel`].
//!
//! ```
//! use steadfast_checker::{check, CheckOptions, Verdict};
//! use steadfast_spec::mutex::{Lock, LockVariant};
//!
//! let model = Lock::new(2, LockVariant::Filter).unwrap();
//! let report = check(&model, &CheckOptions::default()).unwrap();
//! assert!(report.all_hold());
//!
//! let broken = Lock::new(2, LockVariant::VictimOnly).unwrap();
//! let report = check(&broken, &CheckOptions::default()).unwrap();
//! let entry = report.property("a trying process enters").unwrap();
//! assert_eq!(entry.verdict, Verdict::Violated);
//! ```

#![deny(missing_docs)]

pub mod census;
mod check;
mod classes;
mod concrete;
mod explore;
mod graph;
mod liveness;
pub mod memory;
mod packed;
pub mod registry;
mod render;
pub mod replay;
mod report;
mod seen;
mod segmented;
mod spill;
mod symmetry;

pub use check::{
    check, check_with_progress, max_threads, CheckError, CheckOptions, CheckableState, Interrupt,
    Progress, Spilling, Stuttering, DEADLOCK_PROPERTY,
};
pub use render::{
    Change, RenderedClass, RenderedEvidence, RenderedProperty, RenderedReport, RenderedStep,
    GHOST_FIELD,
};
pub use report::{
    Bound, ClassOnCycle, Evidence, Path, PropertyKind, PropertyReport, Report, Stats, Step, Verdict,
};
