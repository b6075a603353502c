#pragma once
// The discrete adjoint of a discrete Runge-Kutta run (discrete_run.hpp), and the complex-step
// replay of its frozen steps that checks it.
//
// Adjoint: the transpose of the run's tangent-linear model, step by step from t_f back to t0,
// with the stages of each step recomputed from the state stored at its start. For a step with
// incoming adjoints lambda (of x_{n+1}, one column per cost) and nu (of t_{n+1}):
//   Kbar_i = h b_i lambda + h sum_{k>i} a_ki Ybar_k,
//   (tbar_i, Ybar_i, pbar_i) = products of f and g at stage i with weights Kbar_i and h b_i e_c,
//   xbar_n = lambda + sum_i Ybar_i,  tbar_n = nu + sum_i tbar_i,  pbar += sum_i pbar_i,
//   hbar = nu + sum_i c_i tbar_i + lambda^T sum_i b_i K_i + sum_i b_i G_i + sum_k Ybar_k^T sum_j a_kj K_j;
// then hbar is dropped (frozen step), subtracted from tbar_n (last step, h = t_f - t_n), or, for a
// step cut at an event, spread by the root condition R(t_n, x_n, p, h) = 0 as
//   -hbar / R_h times (R_x, R_t, R_p), the gradient of R from one more sweep of the step.
// Events in between, newest first: lambda- = phi_x^T lambda+ + c_x^T, nu += phi_t^T lambda+ + c_t,
// grad += phi_p^T lambda+ + c_p. Finally grad += (dx0/dp)^T lambda(t0).
#include <saltus/core/problem.hpp>
#include <saltus/solvers/complex_simulation.hpp>
#include <saltus/solvers/solution.hpp>

namespace saltus::detail {

/// Simulates with the discrete integrator of `options` and computes dpsi/dp and dpsi/dx0 of the
/// computed costs by the discrete adjoint.
Solution discrete_adjoint(const Problem& problem, const Eigen::VectorXd& p, const Options& options);

/// The discrete computation repeated in complex arithmetic at complex parameters p: the steps
/// of a real run at Re(p) with their sizes frozen, the last step ending at t_f, each step cut at
/// an event ending on its guard (complex event times, by Newton's method on the step size), the
/// same events applied. Im(psi(p + i h e_k)) / h is then the derivative of the computed costs.
ComplexSolution simulate_complex_discrete(const Problem& problem, const VectorX<Complex>& p, const Options& options);

}  // namespace saltus::detail
