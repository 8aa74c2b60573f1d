//! Memory: allocation that suits large tables shared by several threads,
//! and the process's own use of it, which a check's memory bound watches.

use std::sync::Mutex;
use std::time::{Duration, Instant};

/// A vector of `len` copies of `value`, written out when it is made.
///
/// `vec![0; len]` asks the allocator for zeroed memory, which the kernel
/// maps to its shared zero page until each page is first written. A table
/// that is read before it is written, as a hash table or Tarjan's index is,
/// then takes a second fault per page, and while more than one thread of the
/// process runs, each of those faults interrupts every core to flush its
/// TLB. Writing the vector at once costs one fault per page and no flush.
pub(crate) fn filled<T: Clone>(len: usize, value: T) -> Vec<T> {
    let mut vector = Vec::with_capacity(len);
    vector.resize(len, value);
    vector
}

/// The process's resident memory, in bytes (Linux's `VmRSS`); `None` where
/// `/proc` does not tell.
pub fn resident() -> Option<u64> {
    kib_field("/proc/self/status", "VmRSS:")
}

/// The memory the machine can give without swapping, in bytes (Linux's
/// `MemAvailable`); `None` where `/proc` does not tell.
pub fn available() -> Option<u64> {
    kib_field("/proc/meminfo", "MemAvailable:")
}

/// The value of the line of `file` that starts with `name`, given in kB
/// (as `/proc` writes them), in bytes.
fn kib_field(file: &str, name: &str) -> Option<u64> {
    let text = std::fs::read_to_string(file).ok()?;
    let line = text.lines().find(|line| line.starts_with(name))?;
    let kib: u64 = line[name.len()..]
        .trim()
        .trim_end_matches("kB")
        .trim()
        .parse()
        .ok()?;
    Some(kib * 1024)
}

/// A number of bytes, as people read and write it: `512M`, `1.5G`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Size(pub u64);

impl std::fmt::Display for Size {
    /// In the largest binary unit that leaves at least 1 (`1.5 GiB`).
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        const UNITS: [&str; 5] = ["B", "KiB", "MiB", "GiB", "TiB"];
        let mut value = self.0 as f64;
        let mut unit = 0;
        while value >= 1024.0 && unit + 1 < UNITS.len() {
            value /= 1024.0;
            unit += 1;
        }
        if unit == 0 || value.fract() == 0.0 {
            write!(f, "{value} {}", UNITS[unit])
        } else {
            write!(f, "{value:.1} {}", UNITS[unit])
        }
    }
}

impl std::str::FromStr for Size {
    type Err = String;

    /// A number, whole or not, with an optional binary unit: `K`, `M`,
    /// `G` or `T` (also `KiB`, `MB` and the like: each means 1024 to the
    /// power its letter says); no unit is bytes.
    fn from_str(text: &str) -> Result<Self, Self::Err> {
        let trimmed = text.trim();
        let split = trimmed
            .find(|c: char| !(c.is_ascii_digit() || c == '.'))
            .unwrap_or(trimmed.len());
        let (number, unit) = trimmed.split_at(split);
        let power = match unit.trim().to_ascii_uppercase().as_str() {
            "" | "B" => 0,
            "K" | "KB" | "KIB" => 1,
            "M" | "MB" | "MIB" => 2,
            "G" | "GB" | "GIB" => 3,
            "T" | "TB" | "TIB" => 4,
            _ => {
                return Err(format!(
                    "{text:?} is not a size: a number and a unit of K, M, G or T (as 512M, 1.5G)"
                ))
            }
        };
        let value: f64 = number
            .parse()
            .map_err(|_| format!("{text:?} is not a size: it starts with no number (as 512M)"))?;
        let bytes = value * 1024f64.powi(power);
        if !(1.0..=u64::MAX as f64).contains(&bytes) {
            return Err(format!("{text:?} is not a size of at least one byte"));
        }
        Ok(Size(bytes as u64))
    }
}

/// A limit on the process's resident memory, looked at no more often than
/// every few milliseconds (reading `/proc` costs microseconds; a chunk of
/// states is claimed far more often).
pub(crate) struct Watch {
    limit: u64,
    last: Mutex<Instant>,
}

impl Watch {
    /// How long between two looks.
    const EVERY: Duration = Duration::from_millis(20);

    pub(crate) fn new(limit: u64) -> Self {
        Watch {
            limit,
            last: Mutex::new(Instant::now()),
        }
    }

    /// The limit and the process's resident memory, once that has passed
    /// it (it is looked at only if no other thread looks, and not too soon
    /// after the last look).
    pub(crate) fn passed(&self) -> Option<Passed> {
        let mut last = self.last.try_lock().ok()?;
        if last.elapsed() < Self::EVERY {
            return None;
        }
        *last = Instant::now();
        resident()
            .filter(|rss| *rss > self.limit)
            .map(|resident| Passed {
                limit: self.limit,
                resident,
            })
    }
}

/// What [`Watch::passed`] saw: the limit, and the resident memory past it,
/// in bytes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Passed {
    pub(crate) limit: u64,
    pub(crate) resident: u64,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_should_read_as_people_write_them_and_print_back() {
        assert_eq!("512M".parse(), Ok(Size(512 << 20)));
        assert_eq!("1.5G".parse(), Ok(Size(3 << 29)));
        assert_eq!("2 GiB".parse(), Ok(Size(2 << 30)));
        assert_eq!("4096".parse(), Ok(Size(4096)));
        assert_eq!(Size(3 << 29).to_string(), "1.5 GiB");
        assert_eq!(Size(512 << 20).to_string(), "512 MiB");
        assert_eq!(Size(100).to_string(), "100 B");
        for bad in ["12X", "G", "", "0", "0.1"] {
            let error = bad.parse::<Size>().unwrap_err();
            assert!(error.contains("is not a size"), "{bad}: {error}");
        }
    }

    #[test]
    fn this_process_should_know_its_memory_on_linux() {
        let resident = resident().expect("/proc/self/status has VmRSS");
        assert!(resident > 1 << 20, "{resident}");
        assert!(available().expect("/proc/meminfo has MemAvailable") > 0);
        // A limit below what the process holds is passed, once looked at.
        let watch = Watch::new(1024);
        std::thread::sleep(Watch::EVERY);
        assert!(watch
            .passed()
            .is_some_and(|p| p.limit == 1024 && p.resident > 1024));
        let roomy = Watch::new(u64::MAX);
        std::thread::sleep(Watch::EVERY);
        assert_eq!(roomy.passed(), None);
    }
}
