#pragma once
// The adjoint of a mode through its completion, for every mode with one: Hessenberg index-2
// DAEs (circle_drift) and the multibody ggl, stabilized_index1 and index3 formulations
// (docs/dae.md, "Adjoint through the completion").
//
// A completion C(t, x, p) = (x_c, x-dot_c) maps any state near the solution manifold to a
// consistent state (the model's choice: a projection, or the one with the same independent
// values), and its rates. Every exact solution of the
// mode's DAE satisfies the explicit ODE
//     x' = R(t, x, p) := x-dot_c(t, x, p),
// with the running costs read at the completed point, g~(t, x, p) = g(t, x_c, x-dot_c, p). This
// is the constrained motion's ODE in the state the DAE carries (theory/multibody.md section 5,
// "Relation to the first-order adjoint": the force-space adjoint is its second-order form), so
// its adjoint gives the problem's gradient whatever the DAE's index (at index 2 it is theory
// hybrid-dae.md section 4's adjoint with the algebraic adjoint eliminated: the completion's
// transpose performs the projections lambda_y^T = ell - (g_z + ell f_z)(k_y f_z)^-1 k_y):
//     lambda' = -R_x^T lambda - g~_x^T,    gradient integral of (g~_p + lambda^T R_p).
// dae_adjoint integrates it in its residual form: F_xdot = I, F_x = -R_x, F_p = -R_p. The
// coefficients handed to it (a terminal cost, the transposed transfer before an event) go through
// the completion's transpose (transpose_completion), so that a cost reading a multiplier reads
// the completed one, and the sensitivities it pairs with are the consistent ones.
//
// Cost: the backward residual takes one reverse sweep of the completion and the costs per point
// (derivatives/reverse.hpp, CompletionRateProducts::cost_sweep: one recording per point, which
// the dense Jacobian's sweep of n_x columns and GMRES's products share; from
// Options::krylov_min_states states on, GMRES's products instead, dae_adjoint.cpp). Where the
// mode has a rate completion (Problem::set_rate_completion: the multibody ggl,
// stabilized_index1 and index3 forms, velocities projected and positions kept) R is that map's
// rates, and the running costs read its state and rates: an
// ODE with the completion's motions from consistent states, so with the same gradient; the
// transposes at the final time, events and the start stay the completion's (one reverse sweep
// of the completion each, below); each segment's backward pass starts from the residual's own
// rates (dae_adjoint.cpp, completed_start). No forward tangents of the completion at the final
// time and before each event: n_x + n_p of them were computed there and not read (6.7 % of the
// 32-rod chain's ggl adjoint). (An implicit transition still takes the completion's tangents
// for its own linearization, implicit_transition.cpp.)
#include <saltus/core/problem.hpp>
#include <saltus/solvers/dae_transfer.hpp>

namespace saltus::detail {

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
