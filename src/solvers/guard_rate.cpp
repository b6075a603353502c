#include "guard_rate.hpp"

#include <cmath>

namespace saltus::detail {

GuardRate guard_rate(const Problem& problem, int event, double t, In<double> x, In<double> p,
                     In<double> xdot, TangentWorkspace& ws) {
  const Eigen::VectorXd zero_x = Eigen::VectorXd::Zero(x.size());
  const Eigen::VectorXd zero_p = Eigen::VectorXd::Zero(p.size());
  GuardRate r;
  r.rate = guard_tangent(problem, event, t, x, p, 1.0, xdot, zero_p, ws);
  r.scale = std::abs(guard_tangent(problem, event, t, x, p, 1.0, zero_x, zero_p, ws));
  Eigen::VectorXd direction = zero_x;
  for (Eigen::Index i = 0; i < x.size(); ++i) {
    direction[i] = xdot[i];
    r.scale += std::abs(guard_tangent(problem, event, t, x, p, 0.0, direction, zero_p, ws));
    direction[i] = 0.0;
  }
  return r;
}

}  // namespace saltus::detail
