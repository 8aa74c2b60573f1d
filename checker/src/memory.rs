//! Allocation that suits large tables shared by several threads.

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
