//! States kept as bytes while they wait to be expanded.
//!
//! A model's state is a tree of small vectors (queues, caches, channels), so
//! a few hundred bytes of it are spread over a dozen heap blocks, each with
//! the allocator's overhead. A breadth-first frontier holds a whole level of
//! such states, and a level's discoveries besides: on the leasequeue `bench`
//! scenario, packing them took the check's peak from 2,374,884 to 762,588
//! KiB (see docs/benchmarks.md). A [`Packed`]
//! list keeps each state as its serde encoding in postcard's format instead
//! (variable-length integers, no field names, no padding), all of a list's
//! states in one buffer, and decodes a state only when a thread expands it.
//!
//! Once a list is complete it is [sealed](Packed::seal): its buffer is
//! compressed with LZ4. The states of one list are successors of
//! neighbouring states, so they repeat each other's fields at length,
//! wherever in the state they lie: on `bench`, cutting only the prefix and
//! suffix a state shares with the one before left 511 of its 950 MB of
//! encodings (149 bytes a state).
//!
//! The encoding is generic, not the model's own: every model's state is
//! serde already (traces and the explorer print it), and a generic one cannot
//! drift from the state it encodes. [`round_trips`] is the one condition it
//! asks of a model: decoding what was encoded gives the same state back.

use std::marker::PhantomData;

use serde::de::DeserializeOwned;
use serde::Serialize;

use crate::spill::SpillFile;

/// Why a state could not be kept as bytes, or read back.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct EncodingError(pub(crate) String);

impl EncodingError {
    /// A state came back from its encoding as another state.
    pub(crate) fn altered() -> Self {
        EncodingError(
            "a state decodes to another state: serde skips or rewrites one of its fields".into(),
        )
    }
}

/// The mean encoding, over a model's initial states, from which a frontier
/// is kept encoded. Below it, the states are about as small as the numbers
/// kept for each of them anyway, so encoding them saves little memory, and
/// encoding and decoding them costs as much as expanding them: on the mutex
/// `bench` (initial states of 26 bytes encoded) it made the check a third
/// slower. The leasequeue and lifecycle models start at 90 to 129 bytes.
pub(crate) const ENCODE_FROM: usize = 48;

/// Whether states like `samples` are kept encoded: their mean encoding is
/// at least [`ENCODE_FROM`] bytes.
pub(crate) fn worth_encoding<S: Serialize>(samples: &[S]) -> Result<bool, EncodingError> {
    let mut total = 0;
    for state in samples {
        total += postcard::to_allocvec(state)
            .map_err(|error| EncodingError(format!("a state could not be encoded: {error}")))?
            .len();
    }
    Ok(!samples.is_empty() && total >= ENCODE_FROM * samples.len())
}

/// States in the order they were pushed: as they are, or each kept as its
/// encoding.
pub(crate) enum Packed<S> {
    /// The states themselves, for a model whose states are small.
    Plain(Vec<S>),
    /// Their encodings.
    Encoded(Encoded<S>),
}

/// States kept as their encodings, one after another.
///
/// Offsets are `u32`: a list holds the states one chunk of the frontier
/// discovered (a few thousand at most), far below 4 GiB of encodings.
pub(crate) struct Encoded<S> {
    /// The encodings, one after another; compressed once sealed. Empty
    /// once they are on disk.
    bytes: Vec<u8>,
    /// Per state, where its encoding ends among the encodings.
    ends: Vec<u32>,
    sealed: bool,
    /// Where in a spill file its sealed bytes start, and how many there
    /// are, once they were [spilled](Encoded::spill).
    spilled: Option<(u64, usize)>,
    _states: PhantomData<fn() -> S>,
}

impl<S> Packed<S> {
    /// An empty list, keeping its states encoded or as they are.
    pub(crate) fn new(encode: bool) -> Self {
        if encode {
            Packed::Encoded(Encoded {
                bytes: Vec::new(),
                ends: Vec::new(),
                sealed: false,
                spilled: None,
                _states: PhantomData,
            })
        } else {
            Packed::Plain(Vec::new())
        }
    }

    /// How many states it holds.
    pub(crate) fn len(&self) -> usize {
        match self {
            Packed::Plain(states) => states.len(),
            Packed::Encoded(encoded) => encoded.ends.len(),
        }
    }

    /// Whether it holds none.
    pub(crate) fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

impl<S: Serialize + DeserializeOwned> Packed<S> {
    /// Keeps `state`, after the others. The list must not be sealed.
    pub(crate) fn push(&mut self, state: S) -> Result<(), EncodingError> {
        let encoded = match self {
            Packed::Plain(states) => {
                states.push(state);
                return Ok(());
            }
            Packed::Encoded(encoded) => encoded,
        };
        debug_assert!(!encoded.sealed, "a sealed list takes no more states");
        let bytes = std::mem::take(&mut encoded.bytes);
        encoded.bytes = postcard::to_extend(&state, bytes)
            .map_err(|error| EncodingError(format!("a state could not be encoded: {error}")))?;
        let end = u32::try_from(encoded.bytes.len()).map_err(|_| {
            EncodingError("a chunk's states took more than 4 GiB of encodings".into())
        })?;
        encoded.ends.push(end);
        Ok(())
    }

    /// Compresses an encoded list, which takes no more states from now on,
    /// and frees what it reserved beyond what it holds.
    pub(crate) fn seal(&mut self) {
        match self {
            Packed::Plain(states) => states.shrink_to_fit(),
            Packed::Encoded(encoded) if !encoded.sealed => {
                encoded.bytes = lz4_flex::compress_prepend_size(&encoded.bytes);
                encoded.ends.shrink_to_fit();
                encoded.sealed = true;
            }
            Packed::Encoded(_) => {}
        }
    }
}

impl<S> Encoded<S> {
    /// Writes a sealed list's bytes to `file`, and frees them; returns how
    /// many went. Nothing changes if the write fails, or the list is not
    /// sealed or already on disk.
    pub(crate) fn spill(&mut self, file: &mut SpillFile) -> std::io::Result<u64> {
        if !self.sealed || self.spilled.is_some() {
            return Ok(0);
        }
        let len = self.bytes.len();
        let at = file.append(&self.bytes)?;
        self.spilled = Some((at, len));
        self.bytes = Vec::new();
        Ok(len as u64)
    }
}

impl<S: DeserializeOwned> Encoded<S> {
    /// Appends to `out` the states at `range`, decoded; `scratch` holds
    /// the decompressed encodings of a sealed list meanwhile, and `file` is
    /// where a spilled list's bytes are.
    pub(crate) fn decode(
        &self,
        range: std::ops::Range<usize>,
        out: &mut Vec<S>,
        scratch: &mut Vec<u8>,
        file: Option<&SpillFile>,
    ) -> Result<(), EncodingError> {
        let read;
        let bytes = match (self.spilled, file) {
            (None, _) => &self.bytes,
            (Some((at, len)), Some(file)) => {
                let mut buffer = vec![0; len];
                file.read(at, &mut buffer).map_err(|error| {
                    EncodingError(format!(
                        "a frontier buffer spilled to disk could not be read back: {error}"
                    ))
                })?;
                read = buffer;
                &read
            }
            (Some(_), None) => {
                return Err(EncodingError(
                    "a frontier buffer on disk was read without its file".into(),
                ))
            }
        };
        let encodings = if self.sealed {
            let damaged = |error: &dyn std::fmt::Display| {
                EncodingError(format!(
                    "a frontier buffer could not be decompressed: {error}"
                ))
            };
            let (size, compressed) =
                lz4_flex::block::uncompressed_size(bytes).map_err(|e| damaged(&e))?;
            scratch.clear();
            scratch.resize(size, 0);
            lz4_flex::block::decompress_into(compressed, scratch).map_err(|e| damaged(&e))?;
            &scratch[..]
        } else {
            &bytes[..]
        };
        for index in range {
            let start = index
                .checked_sub(1)
                .map_or(0, |before| self.ends[before] as usize);
            let end = self.ends[index] as usize;
            let state = postcard::from_bytes(&encodings[start..end])
                .map_err(|error| EncodingError(format!("a state could not be decoded: {error}")))?;
            out.push(state);
        }
        Ok(())
    }
}

/// Checks that `state` comes back equal from its encoding, so that a packed
/// state expands as the state itself would.
///
/// # Errors
///
/// A state that cannot be encoded or decoded (serde attributes such as
/// `untagged` or `flatten` need a self-describing format), or that decodes
/// to another state (a field skipped by serde).
pub(crate) fn round_trips<S>(state: &S) -> Result<(), EncodingError>
where
    S: Serialize + DeserializeOwned + PartialEq + Clone,
{
    let mut packed = Packed::new(true);
    packed.push(state.clone())?;
    packed.seal();
    let mut decoded = Vec::new();
    if let Packed::Encoded(encoded) = &packed {
        encoded.decode(0..1, &mut decoded, &mut Vec::new(), None)?;
    }
    if decoded.first() == Some(state) {
        Ok(())
    } else {
        Err(EncodingError::altered())
    }
}

#[cfg(test)]
mod tests {
    use serde::Deserialize;

    use super::*;

    #[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
    struct State {
        queue: Vec<u32>,
        name: Option<String>,
    }

    #[test]
    fn states_should_come_back_as_they_were_pushed() {
        let states = [
            State {
                queue: vec![],
                name: None,
            },
            State {
                queue: vec![1, 300, u32::MAX],
                name: Some("a".into()),
            },
            State {
                queue: vec![7],
                name: Some(String::new()),
            },
        ];
        let mut packed = Packed::new(true);
        for state in &states {
            packed.push(state.clone()).unwrap();
        }
        assert_eq!(packed.len(), 3);
        let mut scratch = Vec::new();
        let mut file = crate::spill::SpillDir::new(&std::env::temp_dir())
            .unwrap()
            .file()
            .unwrap();
        file.append(b"before").unwrap();
        for (sealed, spilled) in [(false, false), (true, false), (true, true)] {
            if sealed && !spilled {
                packed.seal();
            }
            let Packed::Encoded(encoded) = &mut packed else {
                panic!("kept plain");
            };
            if spilled {
                assert!(encoded.spill(&mut file).unwrap() > 0);
                assert!(encoded.bytes.is_empty());
            } else if !sealed {
                assert_eq!(encoded.spill(&mut file).unwrap(), 0, "not sealed yet");
            }
            for start in 0..3 {
                let mut decoded = Vec::new();
                encoded
                    .decode(start..3, &mut decoded, &mut scratch, Some(&file))
                    .unwrap();
                assert_eq!(decoded[..], states[start..], "sealed: {sealed}");
            }
        }
    }

    #[test]
    fn small_states_should_be_kept_as_they_are() {
        let small = State {
            queue: vec![1],
            name: None,
        };
        let large = State {
            queue: (0..ENCODE_FROM as u32).collect(),
            name: None,
        };
        assert!(!worth_encoding(&[small]).unwrap());
        assert!(worth_encoding(&[large]).unwrap());
        assert!(!worth_encoding::<State>(&[]).unwrap());
    }

    #[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
    struct Skipping {
        kept: u8,
        #[serde(skip)]
        lost: u8,
    }

    #[test]
    fn a_state_that_loses_a_field_should_be_refused() {
        assert!(round_trips(&Skipping { kept: 1, lost: 0 }).is_ok());
        let error = round_trips(&Skipping { kept: 1, lost: 2 }).unwrap_err();
        assert!(error.0.contains("skips"), "{}", error.0);
    }

    #[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
    #[serde(untagged)]
    enum Untagged {
        Number(u8),
        Text(String),
    }

    #[test]
    fn a_state_postcard_cannot_read_should_be_refused() {
        let error = round_trips(&Untagged::Text("x".into())).unwrap_err();
        assert!(error.0.contains("decoded"), "{}", error.0);
    }
}
