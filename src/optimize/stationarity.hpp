#pragma once
// First-order (KKT) stationarity of a point of a bound- and cost-constrained minimization. NLopt's
// CCSAQ stops when its step falls below the tolerance, which it also does at points that are not
// optimal (from an infeasible start on a projectile's speed held to a range: V = 10.2 with the
// range constraint slack and the gradient (1, 0), where the optimum is 7.83). optimize() checks
// the point it would report and restarts the optimizer from there when it is not stationary.
#include <Eigen/Core>

namespace saltus::optimize_detail {

/// The KKT residual of   min f(x)  s.t.  c_k(x) <= 0  at a point where f has the gradient g:
///   |g + B w|_inf  at the multipliers w >= 0 that minimize |g + B w|_2,
/// B's columns the gradients of the active constraints (n x m; an active lower bound on x_i is
/// the column -e_i, an upper one +e_i). 0 at a KKT point; |g|_inf without active constraints.
/// The non-negative least-squares problem is solved by NLopt's bounded L-BFGS with g and the
/// columns scaled to unit size (its stopping test is absolute): the result is in g's units.
double kkt_residual(const Eigen::VectorXd& g, const Eigen::MatrixXd& active_gradients);

}  // namespace saltus::optimize_detail
