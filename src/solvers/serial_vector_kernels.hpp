#pragma once
// Compiled kernels for SUNDIALS' serial vector operations.
//
// Debian's SUNDIALS 6.4 is built without optimization: its serial vector operations (linear sums,
// weighted norms, the sensitivities' vector-array operations) run as unoptimized loops, and they
// were about a quarter of a 64-rod chain's forward-sensitivity run (docs/benchmarks.md, "Serial
// vector kernels and dense LU compiled with Saltus"). These kernels perform the same arithmetic, operation by operation and in the
// same order, so every result is bit-identical to SUNDIALS' own; only the code is compiled with
// the rest of Saltus (with -ffp-contract=off: no multiply-add fused where SUNDIALS rounds twice).
#include <nvector/nvector_serial.h>

namespace saltus::detail {

/// Replaces, in `v`'s operation table, every serial operation that SUNDIALS set (fused and
/// vector-array operations only where they are enabled) with its compiled kernel, and its clone
/// operations with vector_clones.hpp's (data from the vector store). Clones of `v` (CVODES' and
/// IDAS' work vectors, the sensitivity arrays, the Hermite buffers) share that table, so this is
/// called once on each vector Saltus creates, after enabling any operations on it and before the
/// integrator clones it.
void use_compiled_vector_kernels(N_Vector v);

}  // namespace saltus::detail
