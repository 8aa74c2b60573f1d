//! What the tests of every protocol share about traces: JSON round trips.

/// `value` written as JSON (as a runtime's trace records it) and read back.
pub(crate) fn round_trip<T>(value: &T) -> T
where
    T: serde::Serialize + serde::de::DeserializeOwned,
{
    let text = serde_json::to_string(value).expect("it serializes");
    serde_json::from_str(&text).expect("what was written reads back")
}
