#pragma once
// Checks every derivative Saltus takes of a problem's model functions -- f_t, f_x, f_p of each
// mode (forward-mode AD, or the mode's analytic Jacobians), the guards' and jumps' derivatives
// in t, x, p, the running costs' (through x-dot) and the terminal costs' -- against the
// complex step at one point (t, x, p). Explicit problems (ProblemKind::Explicit) only: a
// residual's, a completion's and a transition's derivatives are checked by the forward,
// adjoint and complex-step runs agreeing (tests/test_dae.cpp).
#include <saltus/core/problem.hpp>

#include <string>

namespace saltus {

struct DerivativeCheck {
  int entries_checked = 0;
  double max_relative_error = 0.0;  ///< |d_ad - d_cs| / max(|d_cs|, 1e-8 * max |d_cs|, 1e-300)
  std::string worst;                ///< description of the worst entry
};

/// Throws InputError for a problem that is not explicit.
DerivativeCheck check_model_derivatives(const Problem& problem, double t,
                                        const Eigen::VectorXd& x, const Eigen::VectorXd& p,
                                        double step = 1e-20);

}  // namespace saltus
