#include "guard_rate.hpp"

#include <cmath>

namespace saltus::detail {

GuardRate guard_rate(const Problem& problem, int event, double t, In<double> x, In<double> p,
                     In<double> xdot, TangentWorkspace& ws) {
  const Eigen::VectorXd zero_p = Eigen::VectorXd::Zero(p.size());
  Eigen::VectorXd direction = Eigen::VectorXd::Zero(x.size());
  GuardRate r;
  r.rate = guard_tangent(problem, event, t, x, p, 1.0, xdot, zero_p, ws);
  const double r_t = guard_tangent(problem, event, t, x, p, 1.0, direction, zero_p, ws);
  double r_x_norm2 = 0.0;
  for (Eigen::Index i = 0; i < x.size(); ++i) {
    direction[i] = 1.0;
    const double r_xi = guard_tangent(problem, event, t, x, p, 0.0, direction, zero_p, ws);
    r_x_norm2 += r_xi * r_xi;
    direction[i] = 0.0;
  }
  r.scale = std::abs(r_t) + std::sqrt(r_x_norm2) * xdot.norm();
  return r;
}

}  // namespace saltus::detail
