//! steadfast-tests: integration tests across the workspace. The tests live in
//! `tests/`; this library holds what they share.

#![deny(missing_docs)]
