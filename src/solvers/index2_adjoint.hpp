#pragma once
// The adjoint of Hessenberg index-2 modes (theory/hybrid-dae.md section 4) in residual form,
// Saltus sign: the adjoint DAE stays F_xdot^T lambda-dot - F_x^T lambda + g_x^T = 0 (dae_adjoint);
// what index 2 changes is which lambda are consistent, at the final time and before events.
//
// Rows and columns of a mode's linearization, split by its structure:
//   D  differential rows (F_xdot row not zero), as many as the differential states y;
//   A2 constraint rows: algebraic rows that read no algebraic state (k(y) = 0: Phi, Phi_q v);
//   A1 the other algebraic rows (index 1: a multiplier slot with no row in force, w = 0);
//   z2 algebraic states that no algebraic row reads (the multipliers of the constraint rows);
//   z1 the other algebraic states (read by the A1 rows, |z1| = |A1|).
// The consistent adjoint for the coefficients ell (psi gets ell^T S, S consistent: k_y S_y = -k_p)
// solves, with nu the multipliers of the constraint rows,
//     M^T lambda_D + F_A2,y^T nu = ell_y,       F_D,z^T lambda_D + F_A1,z^T lambda_A1 = g_z^T,
// and the gradient gets -F_A2,p^T nu (theory: lambda_y^T = ell - (g_z + ell f_z)(k_y f_z)^-1 k_y
// and the term -(g_z + ell f_z)(k_y f_z)^-1 k_p). The constraint rows' lambda_A2 follow from the
// hidden adjoint constraint d/dt (F_D,z2^T lambda_D - g_z2^T) = 0, which also gives lambda-dot:
//     M^T lambda-dot_D - F_A,y^T lambda_A = (F_D^T lambda_D - g^T)_y,
//     -F_A1,z1^T lambda_A1 = (F_D^T lambda_D - g^T)_z1,
//     F_D,z2^T lambda-dot_D = -d/dt (F_D,z2^T lambda_D - g_z2^T)|lambda fixed.
// The last right-hand side is a central difference along (t, x) +- delta (1, x-dot): it seeds
// IDAS's first backward step only (its predictor); BDF's corrector never reads lambda_A2 or
// lambda-dot at the start, so the gradient does not depend on it.
#include <saltus/core/problem.hpp>
#include <saltus/solvers/dae_transfer.hpp>

#include <string>
#include <vector>

#include "rate_costs.hpp"

namespace saltus::detail {

/// The row and column classes above at one linearization of mode `mode` (checked: |D| = |y| and
/// |A1| = |z1|, rates read for the differential states only; else InputError naming the mode).
struct Index2Structure {
  std::vector<bool> differential_row;  ///< D
  std::vector<bool> constraint_row;    ///< A2
  std::vector<bool> hidden_column;     ///< z2
};
Index2Structure index2_structure(const Problem& problem, int mode, const ResidualLinearization& lin);
/// Why the mode does not have that structure at `lin` ("" when it does; then `s` holds it). A
/// mode with a completion without it takes the adjoint through the completion
/// (completed_adjoint.hpp).
std::string index2_obstacle(const Problem& problem, int mode, const ResidualLinearization& lin, Index2Structure& s);

/// lambda (n_x x n_c) consistent with `ell` (n_x x n_c: psi_c gets ell_c^T S) at an index-2 point,
/// its constraint rows' entries zero (index2_adjoint_rates sets them); `gradient` (n_c x n_p)
/// receives the terms -F_A2,p^T nu. ell must not read algebraic states (InputError naming the
/// state and `what`: the terminal cost, an event).
Eigen::MatrixXd consistent_index2_adjoint(const Problem& problem, int mode, const ResidualLinearization& lin,
                                          const Eigen::MatrixXd& ell, Eigen::MatrixXd& gradient,
                                          const std::string& what);

/// lambda-dot (n_x x n_c) at a consistent index-2 point (t, x, x-dot); sets lambda's constraint
/// rows from the hidden adjoint constraint. `lin` holds F_xdot, F_x and g_x at the point (the
/// running costs' rates folded in by `fold`, which the differences apply too).
Eigen::MatrixXd index2_adjoint_rates(const Problem& problem, int mode, double t, In<double> x, In<double> xdot,
                                    In<double> p, const ResidualLinearization& lin, Eigen::MatrixXd& lambda,
                                    const RateCostFold& fold, TangentWorkspace& ws);

/// The transpose of a completion's tangent at x: for S = C_x s + C_p (the consistent
/// sensitivities the completion gives from s), W^T S = (C_x^T W)^T s + (C_p^T W)^T. W is
/// n_x x n_c.
struct CompletionTranspose {
  Eigen::MatrixXd x;  ///< C_x^T W, n_x x n_c
  Eigen::MatrixXd p;  ///< W^T C_p, n_c x n_p
};
CompletionTranspose transpose_completion(const Problem& problem, int mode, double t, In<double> x, In<double> p,
                                         const Eigen::MatrixXd& w);

}  // namespace saltus::detail
