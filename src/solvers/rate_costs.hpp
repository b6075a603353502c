#pragma once
// Running costs that read rates, g(t, x, x-dot, p), in the adjoint on IDAS. The adjoint DAE
// needs g as a function of the state: the residual's rows with rates D determine the
// differential rates, F_D(t, x, y-dot(x), p) = 0, so y-dot_x = -M_D,y^-1 F_D,x with
// M_D,y = F_D,ydot and F_D,x taken at the point's rates (a state-dependent M_D,y included), and
// the cost's linearization becomes g_x - B F_D,x and g_p - B F_D,p with B = g_ydot M_D,y^-1
// (M_D,y^T B^T = g_ydot^T). On the solution the integrand is unchanged. Rates of algebraic states
// (z-dot, which IDAS holds only approximately) are refused.
// Modes with a completion do not come here: their adjoint reads the completion's rates
// (completed_adjoint.hpp).
#include <saltus/core/problem.hpp>
#include <saltus/solvers/dae_transfer.hpp>

#include <vector>

namespace saltus::detail {

class RateCostFold {
 public:
  /// Adds the differential states whose rates some running cost reads at (t, x, x-dot); throws
  /// InputError naming the cost and the state if one reads an algebraic state's rate.
  void scan(const Problem& problem, double t, In<double> x, In<double> xdot, In<double> p, TangentWorkspace& ws);
  bool empty() const { return states_.empty(); }
  /// x-dot with the rates the costs read replaced by the residual's at x: one Newton step on
  /// the rows with rates, rates -= M_D,y^-1 F_D(t, x, x-dot, p) (exact for F linear in the
  /// rates), with f_xdot = F_xdot at (t, x, x-dot). The backward pass's x-dot is IDAS's
  /// interpolation of the forward rates, which carries the forward corrector's error and jumps
  /// between its steps; a cost like der(y)^2 fed that into the adjoint's forcing, and the
  /// backward error test failed (IDA_ERR_FAIL at some tolerances).
  Eigen::VectorXd rates_of_the_state(const Problem& problem, int mode, double t, In<double> x, In<double> xdot,
                                     In<double> p, const Eigen::MatrixXd& f_xdot, TangentWorkspace& ws) const;
  enum class Part { States, Parameters, Both };
  /// Folds the rates into lin.g_x, lin.g_p or both; lin holds F_xdot and F_x or F_p (as `part`
  /// needs) at (t, x, x-dot).
  void apply(const Problem& problem, double t, In<double> x, In<double> xdot, In<double> p,
             ResidualLinearization& lin, Part part, TangentWorkspace& ws) const;

 private:
  /// g_xdot (n_c x n_x), columns of the states read.
  Eigen::MatrixXd rate_gradients(const Problem& problem, double t, In<double> x, In<double> xdot, In<double> p,
                                 TangentWorkspace& ws) const;

  std::vector<int> states_;  // differential states whose rates a running cost reads
};

}  // namespace saltus::detail
