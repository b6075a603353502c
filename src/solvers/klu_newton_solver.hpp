#pragma once
// A SUNDIALS direct linear solver for a compressed-column sparse SUNMatrix by SuiteSparse KLU
// that factors every matrix it is given afresh, with KLU's partial pivoting, and reuses only the
// symbolic analysis (the fill-reducing ordering) while the pattern stays the same.
//
// Why not SUNDIALS's SUNLinSol_KLU: after its first factorization it refactors each new matrix
// with the first one's pivot sequence (klu_refactor), which suits matrices whose values change
// little. IDAS's Newton matrices F_x + c_j F_xdot change with the step size, and with the stale
// pivots the Newton iterations converged worse: fivebar_floor in the stabilized index-1
// formulation took 8,271 forward-sensitivity steps and 1,834 Jacobians with SUNLinSol_KLU,
// against 5,193 and 411 with the dense LU and 5,180 and 500 with a fresh factorization each time.
// A fresh factorization is also a pure function of the matrix, so the adjoint's recomputation
// of forward steps repeats the recording's (multibody/dense_solve.hpp says the same for the
// KKT matrices).
#include <sundials/sundials_context.h>
#include <sundials/sundials_linearsolver.h>

namespace saltus::detail {

/// A new solver (free it with SUNLinSolFree). Its setup returns SUNLS_LUFACT_FAIL, which IDAS
/// recovers from with a smaller step, for a singular or non-finite matrix.
SUNLinearSolver make_klu_newton_solver(SUNContext context);

}  // namespace saltus::detail
