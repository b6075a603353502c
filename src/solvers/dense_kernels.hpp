#pragma once
// Compiled kernels for SUNDIALS' dense matrix and dense LU (internal).
//
// Debian's SUNDIALS 6.4 is built without optimization (serial_vector_kernels.hpp): its dense LU
// (SUNDlsMat_denseGETRF / GETRS) and the dense matrix operations CVODES applies at each Newton
// matrix update (copy, c A + I) run as unoptimized loops. These kernels perform the same
// arithmetic in the same order, so factors, pivots and solutions are bit-identical to
// SUNDIALS' own (compiled with -ffp-contract=off, CMakeLists.txt).
#include <sundials/sundials_linearsolver.h>
#include <sundials/sundials_matrix.h>

namespace saltus::detail {

/// LU factorization with partial pivoting of the m x n column-major matrix whose columns are
/// `columns` (m >= n), in place, as SUNDlsMat_denseGETRF: row k was swapped with row pivots[k].
/// Returns 0, or k + 1 if the k-th pivot is zero (the factorization stops there).
sunindextype dense_lu_factor(sunrealtype** columns, sunindextype m, sunindextype n, sunindextype* pivots);

/// Solves A x = b in place in `b` with the factors of dense_lu_factor (order n), as
/// SUNDlsMat_denseGETRS.
void dense_lu_solve(sunrealtype* const* columns, sunindextype n, const sunindextype* pivots, sunrealtype* b);

/// Replaces the dense matrix `matrix`'s operations (zero, copy, scale-add, scale-add-identity,
/// matrix-vector product) with compiled kernels; clones copy the table.
void use_compiled_dense_kernels(SUNMatrix matrix);

/// Replaces the setup and solve of `solver`, a SUNLinSol_Dense, with ones that factor and solve
/// with dense_lu_factor / dense_lu_solve on the same content (its pivots, its last flag).
void use_compiled_dense_kernels(SUNLinearSolver solver);

/// SUNDenseMatrix(n, n) and SUNLinSol_Dense(y, A) with the compiled kernels; null where SUNDIALS
/// could not allocate.
SUNMatrix compiled_dense_matrix(sunindextype n, SUNContext ctx);
SUNLinearSolver compiled_dense_solver(N_Vector y, SUNMatrix matrix, SUNContext ctx);

}  // namespace saltus::detail
