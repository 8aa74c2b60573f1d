//! Spilling to disk: where the graph's columns, the frontier and the seen
//! set go once the process's memory passes its bound, so that a check goes
//! on, more slowly, instead of stopping (or being killed by the kernel).
//!
//! Every spill file is an anonymous temporary file in the spill directory:
//! it has no name, so nothing is left behind however the process ends, and
//! its space comes back when the structure that wrote it is dropped. A file
//! is appended by one writer at a time (the exploration's main thread; for
//! a level's discoveries or a seen-set shard, whichever thread holds its
//! lock) and read by any, at an offset, without a shared cursor.

use std::fs::File;
use std::io;
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, AtomicU8, Ordering};

/// When an exploration spills, and how much it wrote.
///
/// Spilling starts when the memory bound is first passed (or at once, when
/// asked to): from then on the exploration's main thread writes what is
/// left of each new frontier to disk as it is made, and the graph's full
/// segments as it records each level; from the next level on, each chunk's
/// discoveries, and its edges, go as soon as the chunk is expanded (the
/// edges are read back when the level is recorded). Once a level's
/// frontier and edges have gone (a level spilled whole), memory past the
/// bound again sends the seen set's entries to disk, as long as they make
/// room enough to be worth it; past that, what holds the memory cannot go
/// to disk (the columns' last segments, the chunks being expanded), and the
/// check stops there as a bound stops it.
#[derive(Debug)]
pub(crate) struct Spiller {
    dir: SpillDir,
    state: AtomicU8,
    written: AtomicU64,
    /// Spilling from the start, whatever the memory: the seen set too
    /// goes to disk after every level.
    eager: bool,
}

/// Not spilling.
const OFF: u8 = 0;
/// Spilling, and no level has been spilled whole yet.
const ASKED: u8 = 1;
/// Spilling, and a level has been spilled whole.
const ON: u8 = 2;

impl Spiller {
    /// Spilling to `dir` once memory passes its bound, or from the start.
    pub(crate) fn new(dir: SpillDir, from_start: bool) -> Self {
        Spiller {
            dir,
            state: AtomicU8::new(if from_start { ASKED } else { OFF }),
            written: AtomicU64::new(0),
            eager: from_start,
        }
    }

    /// Whether it spills from the start, whatever the memory, the seen set
    /// after every level.
    pub(crate) fn eager(&self) -> bool {
        self.eager
    }

    /// Memory passed its bound: whether the check goes on, spilling (from
    /// now on, or as it already did without having spilled a whole level
    /// yet), rather than stop.
    pub(crate) fn memory_passed(&self) -> bool {
        match self
            .state
            .compare_exchange(OFF, ASKED, Ordering::Relaxed, Ordering::Relaxed)
        {
            Ok(_) => true,
            Err(state) => state == ASKED,
        }
    }

    /// The spill directory, while spilling.
    pub(crate) fn dir(&self) -> Option<&SpillDir> {
        (self.state.load(Ordering::Relaxed) != OFF).then_some(&self.dir)
    }

    /// The spill directory, whether or not spilling has begun.
    pub(crate) fn directory(&self) -> &SpillDir {
        &self.dir
    }

    /// Counts `bytes` more written to disk.
    pub(crate) fn count(&self, bytes: u64) {
        self.written.fetch_add(bytes, Ordering::Relaxed);
    }

    /// A level was spilled whole (its frontier and its edges), if
    /// spilling: memory past the bound from now on stops the check.
    pub(crate) fn level_done(&self) {
        let _ = self
            .state
            .compare_exchange(ASKED, ON, Ordering::Relaxed, Ordering::Relaxed);
    }

    /// The bytes written to disk so far.
    pub(crate) fn written(&self) -> u64 {
        self.written.load(Ordering::Relaxed)
    }
}

/// Where spill files are made.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct SpillDir(PathBuf);

impl SpillDir {
    /// The directory `dir`, once a file could be made in it.
    ///
    /// # Errors
    ///
    /// When no file can be made there (it does not exist, is not a
    /// directory, or is not writable).
    pub(crate) fn new(dir: &Path) -> io::Result<Self> {
        tempfile::tempfile_in(dir)?;
        Ok(SpillDir(dir.to_path_buf()))
    }

    /// A new, empty spill file.
    pub(crate) fn file(&self) -> io::Result<SpillFile> {
        Ok(SpillFile {
            file: tempfile::tempfile_in(&self.0)?,
            len: 0,
        })
    }
}

/// An append-only file of spilled bytes, read back at offsets.
#[derive(Debug)]
pub(crate) struct SpillFile {
    file: File,
    len: u64,
}

impl SpillFile {
    /// Appends `bytes`; returns where they start. Nothing is taken as
    /// written unless all of it was.
    pub(crate) fn append(&mut self, bytes: &[u8]) -> io::Result<u64> {
        let at = self.len;
        self.file.write_all_at(bytes, at)?;
        self.len += bytes.len() as u64;
        Ok(at)
    }

    /// Fills `buffer` with the bytes written from `at` on.
    pub(crate) fn read(&self, at: u64, buffer: &mut [u8]) -> io::Result<()> {
        self.file.read_exact_at(buffer, at)
    }
}

/// A fixed-size value that goes to disk as its little-endian bytes.
pub(crate) trait Word: Copy {
    /// Its size in bytes.
    const BYTES: usize;
    /// Appends its bytes to `out`.
    fn put(self, out: &mut Vec<u8>);
    /// The value of the first [`Word::BYTES`] bytes of `bytes`.
    fn take(bytes: &[u8]) -> Self;
}

macro_rules! word {
    ($($t:ty),*) => {$(
        impl Word for $t {
            const BYTES: usize = std::mem::size_of::<$t>();

            fn put(self, out: &mut Vec<u8>) {
                out.extend_from_slice(&self.to_le_bytes());
            }

            fn take(bytes: &[u8]) -> Self {
                let mut array = [0; std::mem::size_of::<$t>()];
                array.copy_from_slice(&bytes[..Self::BYTES]);
                <$t>::from_le_bytes(array)
            }
        }
    )*};
}

word!(u16, u32, u64);

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bytes_should_read_back_where_they_were_appended() {
        let dir = SpillDir::new(&std::env::temp_dir()).unwrap();
        let mut file = dir.file().unwrap();
        assert_eq!(file.append(b"abc").unwrap(), 0);
        assert_eq!(file.append(b"defg").unwrap(), 3);
        let mut buffer = [0; 4];
        file.read(3, &mut buffer).unwrap();
        assert_eq!(&buffer, b"defg");
        assert!(file.read(5, &mut buffer).is_err(), "past the end");
    }

    #[test]
    fn words_should_survive_their_bytes() {
        let mut out = Vec::new();
        0xBEEF_u16.put(&mut out);
        0xDEAD_BEEF_u32.put(&mut out);
        assert_eq!(out.len(), 6);
        assert_eq!(u16::take(&out), 0xBEEF);
        assert_eq!(u32::take(&out[2..]), 0xDEAD_BEEF);
    }

    #[test]
    fn a_directory_that_cannot_hold_files_should_be_refused() {
        assert!(SpillDir::new(Path::new("/nonexistent/steadfast")).is_err());
        let options = crate::CheckOptions {
            spill: Some(crate::Spilling {
                dir: "/nonexistent/steadfast".into(),
                from_start: true,
            }),
            ..crate::CheckOptions::default()
        };
        let model = steadfast_spec::mutex::Lock::new(2, steadfast_spec::mutex::LockVariant::Filter)
            .unwrap();
        let error = crate::check(&model, &options).err().expect("refused");
        let message = error.to_string();
        assert!(
            message.contains("cannot spill to /nonexistent/steadfast")
                && message.contains("--spill-dir"),
            "{message}"
        );
    }

    /// Every registered scenario, in every variant, judged with its graph
    /// and frontiers on disk from the first level, and its seen set after
    /// every level, and judged in memory, gives the same report: counts,
    /// verdicts and counterexamples. The crate's tests cut the graph's
    /// columns into segments of 16 and the seen set's runs into blocks of
    /// 4, so every graph here spans many segments, most of them read back
    /// from disk, and most lookups read a block of a run.
    #[test]
    fn every_registered_scenario_should_judge_alike_spilled_or_not() {
        let dir = std::env::temp_dir();
        let options = |spill: bool| crate::CheckOptions {
            threads: 1,
            max_states: Some(3_000),
            spill: spill.then(|| crate::Spilling {
                dir: dir.clone(),
                from_start: true,
            }),
            ..crate::CheckOptions::default()
        };
        let mut checked = 0;
        for entry in crate::registry::registry() {
            for (variant, _) in entry.variants() {
                for (scenario, _, _) in entry.scenarios() {
                    let run = |spill| {
                        entry
                            .check(variant, scenario, &options(spill), None)
                            .unwrap_or_else(|e| {
                                panic!("{} {variant} {scenario}: {e}", entry.name())
                            })
                    };
                    let (held, spilled) = (run(false), run(true));
                    let what =
                        format!("{} --variant {variant} --scenario {scenario}", entry.name());
                    assert_eq!(held.stats.spilled, 0, "{what}");
                    assert!(
                        spilled.stats.spilled > 0 || held.stats.unique_states < 16,
                        "{what}: nothing spilled"
                    );
                    assert_eq!(held.properties, spilled.properties, "{what}");
                    assert_eq!(held.stopped, spilled.stopped, "{what}");
                    let counts = |r: &crate::RenderedReport| {
                        (
                            r.stats.unique_states,
                            r.stats.edges,
                            r.stats.depth,
                            r.stats.generated,
                        )
                    };
                    assert_eq!(counts(&held), counts(&spilled), "{what}");
                    checked += 1;
                }
            }
        }
        assert!(checked > 20, "only {checked} scenarios");
    }
}
