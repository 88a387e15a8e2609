//! How the vectors that gather a snapshot's records grow.
//!
//! A full vector doubles: at a million records of 64 bytes, one record past a
//! million leaves 64 MB unused until the snapshot ends. The ledger's batch, the
//! change book's lists and the dense maps instead start with room for about as
//! many records as the last snapshot had ([`room_for`]) and grow by an eighth
//! past it ([`push_by_eighths`]): at most an eighth unused, for a copy of the
//! vector every eighth of its length.

/// Room for `last` records (the last snapshot's count) and an eighth more.
pub fn room_for(last: usize) -> usize {
    last + last / 8
}

/// Pushes `x`, growing a full `v` by an eighth (at least 16) rather than
/// doubling it.
pub fn push_by_eighths<T>(v: &mut Vec<T>, x: T) {
    if v.len() == v.capacity() {
        v.reserve_exact((v.len() / 8).max(16));
    }
    v.push(x);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_full_vector_grows_by_an_eighth() {
        let mut v = Vec::with_capacity(1000);
        for i in 0..1001 {
            push_by_eighths(&mut v, i);
        }
        assert_eq!(v.capacity(), 1125);
        assert_eq!(v[1000], 1000);
        let mut small = Vec::new();
        push_by_eighths(&mut small, 1u8);
        assert_eq!(small.capacity(), 16);
        assert_eq!(room_for(1000), 1125);
    }
}
