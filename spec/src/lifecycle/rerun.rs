//! The rule behind "a handler succeeds once per digest per start", kept
//! once for the model's ghost and for the replay of real traces.
//!
//! A handler that succeeded on a digest does not run on it again in the
//! same operator start, unless it ran on another digest in between: its
//! success is recorded before anything can ask for it again. A parent's
//! return starts its sub-handlers' count afresh (they run as part of it).

use serde::{Deserialize, Serialize};

/// A handler or sub-handler, as the rule needs to tell them apart.
pub trait HandlerKey: Clone + Ord {
    /// Whether this is a top-level handler (no sub-handler).
    fn is_top(&self) -> bool;
    /// Whether this is a sub-handler of the top-level handler `top`.
    fn is_sub_of(&self, top: &Self) -> bool;
}

/// One handler's last return.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
struct Return<K, G, W> {
    handler: K,
    /// The operator start whose run it was.
    start: u32,
    /// The digest it ran on.
    digest: G,
    /// Where a run of that start on that digest succeeded, since the
    /// handler last ran on another (`W`: what the caller reports a place
    /// by; the model needs none).
    succeeded: Option<W>,
}

/// Each handler's last return, kept sorted by handler.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct Returns<K, G, W> {
    last: Vec<Return<K, G, W>>,
}

impl<K, G, W> Default for Returns<K, G, W> {
    fn default() -> Self {
        Returns { last: Vec::new() }
    }
}

impl<K: HandlerKey, G: PartialEq, W: Clone> Returns<K, G, W> {
    /// A run of `handler` in operator start `start` returned after running
    /// on `digest`, succeeding or not, `at` the place given. Returns where
    /// the success it repeats was, if it ran again on a digest it had
    /// succeeded on: the rule is broken.
    pub fn returned(
        &mut self,
        handler: K,
        start: u32,
        digest: G,
        success: bool,
        at: W,
    ) -> Option<W> {
        if handler.is_top() {
            self.last.retain(|r| !r.handler.is_sub_of(&handler));
        }
        let now = success.then_some(at);
        match self.last.binary_search_by(|r| r.handler.cmp(&handler)) {
            Ok(index) => {
                let entry = &mut self.last[index];
                let same = entry.start == start && entry.digest == digest;
                let before = if same { entry.succeeded.take() } else { None };
                entry.start = start;
                entry.digest = digest;
                entry.succeeded = before.clone().or(now);
                before
            }
            Err(index) => {
                let entry = Return {
                    handler,
                    start,
                    digest,
                    succeeded: now,
                };
                self.last.insert(index, entry);
                None
            }
        }
    }

    /// Forgets every return: the object is another one (made again under
    /// its name).
    pub fn clear(&mut self) {
        self.last.clear();
    }
}
