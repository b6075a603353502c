#pragma once
// Adjoint (reverse) sensitivities of a hybrid ODE's costs through its events.
//
// Forward pass: the hybrid run of simulate(), with one CVODES session per smooth segment that
// stores check points (Options::checkpoint_steps, or a spacing chosen per segment), so that no
// interpolation of the forward state ever crosses an event. The sessions held at once stay within
// Options::adjoint_memory_budget: the oldest are released and their segments recomputed from a
// snapshot (start time, mode, state) during the backward pass (docs/adjoint.md). Backward pass (theory/hybrid-ode.md section 6.4), for
// every cost j at once (lambda has one column per cost):
//   lambda(tf) = w_x^T,  grad = w_p;
//   in each segment, backwards:  lambda' = -f_x^T lambda - g_x^T,
//                                grad  += integral of (lambda^T f_p + g_p) dt;
//   at each event, newest first, with lambda = lambda+ (H3)-(H4):
//     tau_x = -r_x / r-dot,  tau_p = -r_p / r-dot,  c_e = phi_x f- + phi_t - f+,
//     kappa = c_e^T lambda + g- - g+,
//     grad += lambda^T phi_p + kappa tau_p,   lambda- = phi_x^T lambda + tau_x^T kappa;
//   finally grad += lambda(t0)^T dx0/dp, and dpsi/dx0 = lambda(t0)^T.
// Every product with a Jacobian (f_x^T lambda, f_p^T lambda, phi_x^T lambda, ...) is one
// reverse-mode sweep (derivatives/reverse.hpp), so a backward step costs the same for 1 or
// 1000 parameters; f_p is never formed.
//
// Throws what simulate() throws, GrazingError if an event grazes its guard (tau does not
// exist), and SolverError if a backward integration fails.
#include <saltus/core/problem.hpp>
#include <saltus/solvers/solution.hpp>

namespace saltus {

/// Simulates and computes dpsi_j/dp (Solution::cost_gradient, n_c x n_p) and dpsi_j/dx0
/// (Solution::initial_state_gradient, n_c x n_x) by the adjoint method.
Solution adjoint(const Problem& problem, const Eigen::VectorXd& p, const Options& options);
Solution adjoint(const Problem& problem);

}  // namespace saltus
