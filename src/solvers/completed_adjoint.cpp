// The adjoint's linearization through a mode's completion: completed_adjoint.hpp.
#include "completed_adjoint.hpp"

#include <saltus/derivatives/residual.hpp>
#include <saltus/derivatives/reverse.hpp>

namespace saltus::detail {

CompletionTranspose transpose_completion(const Problem& problem, int mode, double t, In<double> x, In<double> p,
                                         const Eigen::MatrixXd& w) {
  const Eigen::Index n = x.size();
  Eigen::MatrixXd weights = Eigen::MatrixXd::Zero(2 * n, w.cols());
  weights.topRows(n) = w;
  const TransposedProducts products = completion_products(problem, mode, t, x, p, weights);
  return {products.x, products.p.transpose()};
}

void CompletedLinearization::states(const Problem& problem, int mode, double t, In<double> x, In<double> p,
                                    ResidualLinearization& out, TangentWorkspace& ws) {
  const Eigen::Index nx = x.size(), nc = problem.n_costs();
  if (unit_x_.size() != nx) {
    unit_x_ = zero_x_ = Eigen::VectorXd::Zero(nx);
    x_tangent_.resize(nx);
    xdot_tangent_.resize(nx);
  }
  if (zero_p_.size() != p.size()) unit_p_ = zero_p_ = Eigen::VectorXd::Zero(p.size());
  costs_.resize(nc);
  point_ = consistent_point(problem, mode, t, x, x, p, "in the adjoint's backward pass", ws);
  out.f_xdot.setIdentity(nx, nx);
  out.f_x.resize(nx, nx);
  out.g_x.resize(nc, nx);
  for (Eigen::Index i = 0; i < nx; ++i) {
    unit_x_[i] = 1.0;
    completion_tangent(problem, mode, t, x, p, 0.0, unit_x_, zero_p_, x_tangent_, xdot_tangent_, ws);
    unit_x_[i] = 0.0;
    out.f_x.col(i) = -xdot_tangent_;
    if (x_tangent_.isZero(0.0) && xdot_tangent_.isZero(0.0)) {
      out.g_x.col(i).setZero();  // a state the completion does not read
      continue;
    }
    running_cost_tangents_at_rate(problem, t, point_.x, point_.xdot, p, 0.0, x_tangent_, xdot_tangent_, zero_p_,
                                  costs_, ws);
    out.g_x.col(i) = costs_;
  }
}

void CompletedLinearization::parameters(const Problem& problem, int mode, double t, In<double> x, In<double> p,
                                        ResidualLinearization& out, TangentWorkspace& ws) {
  const Eigen::Index nx = x.size(), np = p.size(), nc = problem.n_costs();
  out.f_p.resize(nx, np);
  out.g_p.resize(nc, np);
  for (Eigen::Index j = 0; j < np; ++j) {
    unit_p_[j] = 1.0;
    completion_tangent(problem, mode, t, x, p, 0.0, zero_x_, unit_p_, x_tangent_, xdot_tangent_, ws);
    out.f_p.col(j) = -xdot_tangent_;
    running_cost_tangents_at_rate(problem, t, point_.x, point_.xdot, p, 0.0, x_tangent_, xdot_tangent_, unit_p_,
                                  costs_, ws);
    unit_p_[j] = 0.0;
    out.g_p.col(j) = costs_;
  }
}

void CompletedLinearization::all(const Problem& problem, int mode, double t, In<double> x, In<double> p,
                                 ResidualLinearization& out, TangentWorkspace& ws) {
  states(problem, mode, t, x, p, out, ws);
  parameters(problem, mode, t, x, p, out, ws);
}

}  // namespace saltus::detail
