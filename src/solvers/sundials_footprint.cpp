#include "sundials_footprint.hpp"

#include "vector_clones.hpp"

#include <nvector/nvector_serial.h>
#include <sundials/sundials_config.h>
#include <sundials/sundials_linearsolver.h>
#include <sundials/sundials_matrix.h>
#include <sundials/sundials_nonlinearsolver.h>
#include <sunlinsol/sunlinsol_dense.h>
#include <sunlinsol/sunlinsol_spgmr.h>
#include <sunmatrix/sunmatrix_dense.h>
#include <sunnonlinsol/sunnonlinsol_fixedpoint.h>
#include <sunnonlinsol/sunnonlinsol_newton.h>

#include <algorithm>

static_assert(SUNDIALS_VERSION_MAJOR == 6,
              "the private structure sizes below are those of SUNDIALS 6 (LP64)");

namespace saltus::detail::footprint {

namespace {

// Private SUNDIALS 6.4 structures (not in the installed headers), sizeof on LP64, measured by
// compiling the 6.4.1 sources: cvodes_impl.h, cvodes_ls_impl.h, sundials_context_impl.h,
// sundials_logger_impl.h, sundials_hashmap.h.
constexpr long kCVodeMemRec = 2712;
constexpr long kCVadjMemRec = 520;
constexpr long kCkpntMemRec = 824;
constexpr long kDtpntMemRec = 16;
constexpr long kHermiteDataMemRec = 32;
constexpr long kCVodeBMemRec = 128;
constexpr long kCVLsMemRec = 312;
constexpr long kCVLsMemRecB = 104;
constexpr long kSUNContext = 32;
constexpr long kSUNLogger = 96;
constexpr long kSUNHashMap = 16;
constexpr long kLoggerFileSlots = 8;  // SUN_MAX_LOGFILE_HANDLES_, one pointer each
// CVodeInit's work arrays for fused vector operations hold L_MAX = 13 entries each.
constexpr long kFusedWorkArrays = 3;
constexpr long kLMax = 13;
// cvAllocVectors: ewt, acor, tempv, ftemp, vtemp1, vtemp2, vtemp3 besides the history zn.
constexpr long kIntegratorWorkVectors = 7;
// cvQuadAllocVectors: ewtQ, acorQ, yQ, tempvQ besides the history znQ.
constexpr long kQuadratureWorkVectors = 4;

constexpr long kPointer = static_cast<long>(sizeof(void*));
constexpr long kReal = static_cast<long>(sizeof(sunrealtype));

/// A SUNDIALS object made by its *NewEmpty: the generic struct and its operation table.
template <class Generic, class Ops>
long generic_object() {
  return heap_block(sizeof(Generic)) + heap_block(sizeof(Ops));
}

/// SUNNonlinSol_Newton: structs, content and the correction vector it clones.
long newton_solver(long n) {
  return generic_object<_generic_SUNNonlinearSolver, _generic_SUNNonlinearSolver_Ops>() +
         heap_block(sizeof(_SUNNonlinearSolverContent_Newton)) + nvector(n);
}

/// Nordsieck vectors of a check point of order q (CVAckpntNew): zn[0..q], and zn[qmax] while
/// q < qmax (a hot restart may raise the order at once).
long history_vectors(int order, bool bdf) { return order + 1 + (order < max_order(bdf) ? 1 : 0); }

}  // namespace

long heap_block(long request) {
  if (request <= 0) return 0;
  return std::max(32L, (request + 8 + 15) & ~15L);
}

long nvector(long n) {
  const CloneBytes clone = clone_bytes(n);
  return heap_block(clone.header_request) + clone.data;
}

long dense_matrix(long n) {
  return generic_object<_generic_SUNMatrix, _generic_SUNMatrix_Ops>() +
         heap_block(sizeof(_SUNMatrixContent_Dense)) + heap_block(n * n * kReal) +
         heap_block(n * kPointer);
}

long dense_solver(long n) {
  return generic_object<_generic_SUNLinearSolver, _generic_SUNLinearSolver_Ops>() +
         heap_block(sizeof(_SUNLinearSolverContent_Dense)) +
         heap_block(n * static_cast<long>(sizeof(sunindextype)));
}

long block_dense_solver(long block, long content_bytes) {
  return generic_object<_generic_SUNLinearSolver, _generic_SUNLinearSolver_Ops>() + heap_block(content_bytes) +
         heap_block(block * block * kReal) + heap_block(block * kPointer) +
         heap_block(block * static_cast<long>(sizeof(sunindextype)));
}

long gmres_solver(long n) {
  const long maxl = kGmresKrylovDimension;
  return generic_object<_generic_SUNLinearSolver, _generic_SUNLinearSolver_Ops>() +
         heap_block(sizeof(_SUNLinearSolverContent_SPGMR)) + 2 * nvector(n) +    // xcor, vtemp
         heap_block((maxl + 1) * kPointer) + (maxl + 1) * nvector(n) +           // V
         heap_block((maxl + 1) * kPointer) + (maxl + 1) * heap_block(maxl * kReal) +  // Hes
         heap_block(2 * maxl * kReal) + 2 * heap_block((maxl + 1) * kReal) +     // givens, yg, cv
         heap_block((maxl + 1) * kPointer);                                      // Xv
}

long context() {
  return heap_block(kSUNContext) + heap_block(kSUNLogger) + heap_block(kSUNHashMap) +
         heap_block(kLoggerFileSlots * kPointer);
}

int max_order(bool bdf) { return bdf ? 5 : 12; }

long fixed_point_solver(long n) {
  return generic_object<_generic_SUNNonlinearSolver, _generic_SUNNonlinearSolver_Ops>() +
         heap_block(sizeof(_SUNNonlinearSolverContent_FixedPoint)) + 3 * nvector(n);
}

long integrator(long n, bool bdf, bool vector_atol, Corrector corrector) {
  const long history = max_order(bdf) + 1;
  const long vectors = kIntegratorWorkVectors + history + (vector_atol ? 1 : 0);
  const long base = heap_block(kCVodeMemRec) + vectors * nvector(n) + kFusedWorkArrays * heap_block(kLMax * kReal);
  if (corrector == Corrector::FixedPoint) return base + fixed_point_solver(n);
  // CVodeSetLinearSolver: its memory, two work vectors (ytemp, x) and the saved Jacobian.
  const long linear_solver_interface =
      heap_block(kCVLsMemRec) + 2 * nvector(n) + (corrector == Corrector::KrylovNewton ? 0 : dense_matrix(n));
  return base + newton_solver(n) + linear_solver_interface;
}

long quadratures(long nq, bool bdf, bool vector_atol) {
  if (nq <= 0) return 0;
  const long vectors = kQuadratureWorkVectors + max_order(bdf) + 1 + (vector_atol ? 1 : 0);
  return vectors * nvector(nq);
}

long roots(int nr) {
  if (nr <= 0) return 0;
  // glo, ghi, grout (reals); iroots, rootdir, gactive (ints).
  return 3 * heap_block(nr * kReal) + 3 * heap_block(nr * static_cast<long>(sizeof(int)));
}

long hermite_adjoint_memory(long n, long steps) {
  const long points = steps + 1;
  const long adj_init = heap_block(kCVadjMemRec) + heap_block(points * kPointer) +
                        points * heap_block(kDtpntMemRec);
  const long hermite = nvector(n) /* ytmp */ +
                       points * (heap_block(kHermiteDataMemRec) + 2 * nvector(n));
  return adj_init + hermite;
}

long hermite_point(long n) { return hermite_adjoint_memory(n, 1) - hermite_adjoint_memory(n, 0); }

long checkpoint(long n, long nq, int order, bool bdf, bool initial) {
  const long vectors = initial ? 2 : history_vectors(order, bdf);
  // The initial check point stores znQ[0] only.
  const long quadrature_vectors = nq > 0 ? (initial ? 1 : vectors) : 0;
  return heap_block(kCkpntMemRec) + vectors * nvector(n) + quadrature_vectors * nvector(nq);
}

long largest_checkpoint(long n, long nq, bool bdf) {
  return checkpoint(n, nq, max_order(bdf), bdf, false);
}

long backward_problem(long nB, long nqB, bool bdf, Corrector corrector) {
  // CVodeCreateB's record, the backward CVODES integrator (vector tolerances: one per cost's
  // adjoint), the copy of yB0 CVodeInitB keeps, the quadratures with vector tolerances and
  // CVodeSetLinearSolverB's record (none with fixed-point iteration: no linear solver).
  return heap_block(kCVodeBMemRec) + integrator(nB, bdf, true, corrector) + nvector(nB) +
         quadratures(nqB, bdf, true) + (corrector == Corrector::FixedPoint ? 0 : heap_block(kCVLsMemRecB));
}

}  // namespace saltus::detail::footprint
