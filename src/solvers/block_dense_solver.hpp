#pragma once
// A SUNDIALS direct linear solver for the adjoints' stacked backward Newton matrices (internal).
//
// The backward problem carries one adjoint per cost, stacked: its Newton matrix has n_c equal
// diagonal blocks (each cost's lambda sees the same linearization) and nothing between them,
// and IDAS's backward problem may follow them with gradient states whose rows couple to the
// blocks and whose own block is diagonal (cj I). SUNDIALS's dense LU factors the whole
// (n_c b + t)^2 matrix; this solver factors one b x b block and back-substitutes each cost's
// block with it, then the diagonal tail: n_c^3 times fewer operations for the factorization,
// n_c times fewer for each solve (fivebar_floor's ggl adjoint: 72 x 72 against 20 x 20).
//
// Setup checks the structure on the matrix it is given (equal blocks bit for bit, zeros off
// them, a diagonal tail without couplings into the blocks' rows); a matrix without it is
// factored whole, so the answer never depends on the structure holding.
#include <sundials/sundials_linearsolver.h>
#include <sundials/sundials_nvector.h>

namespace saltus::detail {

/// A direct linear solver for dense SUNMatrix objects of order `n` with the structure above:
/// `blocks` diagonal blocks of order `block`, then n - blocks * block tail rows. Setup returns
/// SUNLS_LUFACT_FAIL (recoverable) for a singular matrix, as SUNLinSol_Dense does. Free it with
/// SUNLinSolFree.
SUNLinearSolver block_dense_solver(sunindextype n, sunindextype block, sunindextype blocks, SUNContext ctx);

/// Heap bytes of such a solver for blocks of order `block` (sundials_footprint.hpp).
long block_dense_solver_bytes(sunindextype block);

/// Whether the last successful setup of `solver` (made by block_dense_solver) found the
/// structure and factored one block rather than the whole matrix.
bool block_dense_solver_structured(SUNLinearSolver solver);

}  // namespace saltus::detail
