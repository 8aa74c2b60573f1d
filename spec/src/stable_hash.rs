//! A hash that is the same in every process and every build (unlike
//! `std`'s), for names that must agree across processes: where an action's
//! queue is placed, which annotation holds a handler's progress.

/// FNV-1a (64 bits) over the UTF-8 bytes of `text`.
pub fn fnv1a(text: &str) -> u64 {
    text.bytes().fold(0xcbf2_9ce4_8422_2325, |hash, byte| {
        (hash ^ u64::from(byte)).wrapping_mul(0x0100_0000_01b3)
    })
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
}
