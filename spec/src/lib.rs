//! steadfast-spec: the steadfast protocols as pure, deterministic state
//! machines, the stateright models of their environments, and the properties
//! and fairness they are checked against.
//!
//! Nothing here performs I/O or reads a clock; time and the world arrive as
//! inputs. [`temporal`] holds the language of liveness under fairness that
//! `steadfast-checker` checks; [`mutex`] is a small worked example of it, and
//! [`twophase`] (two-phase commit) one of [`symmetry`] reduction under
//! per-process fairness.

#![deny(missing_docs)]

pub mod leasequeue;
pub mod lifecycle;
pub mod mutex;
pub mod rule_set;
pub mod stable_hash;
pub mod symmetry;
pub mod temporal;
pub mod trace;
pub mod twophase;

pub use symmetry::{Interchangeable, Renaming};
pub use temporal::{Fairness, Formula, Liveness, StatePredicate, Strength, TemporalModel};
