//! A hash that is the same in every process and every build (unlike
//! `std`'s), for names that must agree across processes: where an action's
//! queue is placed, which annotation holds a handler's progress.

/// FNV-1a (64 bits) over the UTF-8 bytes of `text`.
pub fn fnv1a(text: &str) -> u64 {
    text.bytes().fold(0xcbf2_9ce4_8422_2325, |hash, byte| {
        (hash ^ u64::from(byte)).wrapping_mul(0x0100_0000_01b3)
    })
}

/// SplitMix64's finalizer: every bit of `hash` moves every bit of the
/// result, so that hashes of names that differ only at their end still
/// compare in no particular order (FNV-1a alone leaves them correlated).
pub fn mix(hash: u64) -> u64 {
    let z = (hash ^ (hash >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    let z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

#[cfg(test)]
mod tests {
    #[test]
    fn fnv1a_should_give_the_published_values() {
        // From the FNV reference test vectors.
        assert_eq!(super::fnv1a(""), 0xcbf2_9ce4_8422_2325);
        assert_eq!(super::fnv1a("a"), 0xaf63_dc4c_8601_ec8c);
        assert_eq!(super::fnv1a("foobar"), 0x8594_4171_f739_67e8);
    }

    #[test]
    fn mix_should_be_splitmix64s_finalizer() {
        // SplitMix64 seeded with 0 first returns mix(0x9e3779b97f4a7c15).
        assert_eq!(super::mix(0x9e37_79b9_7f4a_7c15), 0xe220_a839_7b1d_cdaf);
    }
}
