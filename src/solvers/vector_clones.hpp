#pragma once
// The clone operations of Saltus' serial vectors (installed by use_compiled_vector_kernels):
// every vector CVODES and IDAS clone from one of Saltus' vectors (work vectors, sensitivity
// arrays, the adjoint recordings' Hermite buffers) takes its data from the vector store
// (vector_store.hpp), zeroed, and its header (the generic vector with its serial content) from
// one heap block. The clones of one kind share one operation table, never freed, instead of a
// copy each (about 60 function pointers: the larger part of a short vector's memory).
//
// A clone is a serial vector for every serial operation (NV_DATA_S, N_VGetArrayPointer,
// N_VSetArrayPointer); it is destroyed through its table (N_VDestroy). Enabling or disabling
// operations (N_VEnableFusedOps_Serial, ...) must be done on the vector Saltus creates, before
// it is cloned: on a clone it would change the table its kind shares.
#include <nvector/nvector_serial.h>

namespace saltus::detail {

/// N_VClone for Saltus' serial vectors: a vector of w's length with zero entries (CVODES 6.4
/// takes norms of history vectors it has not written yet: from the heap, a run's gradient
/// depended on what earlier allocations had left there), nullptr if out of memory (which
/// SUNDIALS 6.4's N_VClone does not check, as with its own serial clone).
N_Vector clone_from_store(N_Vector w);

/// N_VCloneEmpty likewise: w's length without data (N_VSetArrayPointer gives it some).
N_Vector clone_without_data(N_Vector w);

/// The memory one clone of a length-n vector takes: its header's malloc request and its data's
/// bytes in the vector store (sundials_footprint.hpp).
struct CloneBytes {
  long header_request;
  long data;
};
CloneBytes clone_bytes(long n);

}  // namespace saltus::detail
