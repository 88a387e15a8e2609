//! Asking the processor for memory ahead of its use, for lookups made many
//! at a time (`tag_table`, `id_map`, the ledger's gather).

/// Asks the processor to bring the cache line of `x` in (a hint: it changes
/// no value, and is nothing on processors without the instruction here).
#[inline(always)]
pub fn prefetch<T: ?Sized>(x: &T) {
    #[cfg(target_arch = "x86_64")]
    // SAFETY: a prefetch reads nothing into the program and cannot fault;
    // the pointer is of a live reference besides.
    unsafe {
        std::arch::x86_64::_mm_prefetch::<{ std::arch::x86_64::_MM_HINT_T0 }>(
            (x as *const T).cast::<i8>(),
        );
    }
    #[cfg(not(target_arch = "x86_64"))]
    let _ = x;
}
