//! The machine's wall clock, where a time must mean the same on every node
//! and across restarts: trace stamps, activation deadlines on the wire,
//! times in progress records. The roles themselves never read it.

use std::time::{SystemTime, UNIX_EPOCH};

/// The wall clock, in milliseconds since the Unix epoch (0 for a clock set
/// before it).
pub(crate) fn now_ms() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX))
}
