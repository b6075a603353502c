#pragma once
// Storage for the data of the serial vectors SUNDIALS clones from Saltus' vectors (its work
// vectors, the sensitivity arrays, and above all the adjoint recordings' Hermite buffers).
//
// Why not malloc: CVODES and IDAS allocate a recording's whole Hermite buffer (check-point
// spacing + 1 points, two vectors each) when the recording starts, and a segment usually ends
// well before the spacing (checkpoint_interval.hpp chooses it for the segment's likely length).
// From glibc's heap every block is written at allocation (its chunk header, and the zeroing of
// the clone), so every page of the buffer was faulted in and zeroed, used or not: on the 64-rod
// chain's adjoint (256 states, 41 segments) the clones took 11.7 % of the run, mostly page faults
// of points never used (docs/benchmarks.md, "Vector data from a store of their own"). The store
// hands out blocks from large anonymous mappings that are faulted in only where written, so a
// point that is never used costs neither a fault nor memory.
//
// Blocks are 64-byte aligned and zeroed. Released blocks are kept per size for reuse (zeroed
// again when handed out); when every block of a mapping is back, one empty mapping is kept with
// its pages given back to the system, any other is unmapped. Blocks of more than 8 MiB come from
// the heap (aligned_alloc): one would take most of a mapping. The store is shared by every
// thread (a mutex per acquire and release: clones are made when integrators are set up, not per
// step). Under AddressSanitizer, or with the environment variable SALTUS_VECTORS_ON_HEAP set
// (for valgrind, which checks the heap's blocks but not the store's), every block comes from the
// heap, so that the checker sees every access to them.
#include <cstddef>

namespace saltus::detail {

/// Zeroed, 64-byte aligned storage for `length` doubles (nullptr for length 0, or if the system
/// has no memory left). Give it back with release_vector_data(data, length).
double* acquire_vector_data(std::size_t length) noexcept;

/// Returns a block from acquire_vector_data with the same length (nullptr: nothing).
void release_vector_data(double* data, std::size_t length) noexcept;

/// Bytes one block of `length` doubles takes in the store (the footprint of a clone's data).
std::size_t vector_data_bytes(std::size_t length);

/// Bytes of the blocks handed out and not yet released (what the store holds for its users, as
/// glibc's in-use heap counts malloc's blocks), wherever they came from.
std::size_t vector_data_in_use();

/// The part of vector_data_in_use() in the store's own mappings, which glibc's heap statistics
/// (mallinfo2) do not see; the heap's blocks they count already.
std::size_t vector_data_in_mappings();

}  // namespace saltus::detail
