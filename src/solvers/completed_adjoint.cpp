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
  const Eigen::Index nx = x.size(), np = p.size(), nc = problem.n_costs();
  costs_.resize(nc);
  zero_p_.setZero(np);
  point_ = consistent_point(problem, mode, t, x, x, p, "in the adjoint's backward pass", ws);
  // Every state's direction at once (one evaluation per block where the mode has block
  // completion tangents).
  if (unit_x_.rows() != nx || zero_p_by_x_.rows() != np) {  // once per size: no allocation per point
    unit_x_.setIdentity(nx, nx);
    zero_p_by_x_.setZero(np, nx);
  }
  x_tangents_.resize(nx, nx);
  out.f_x.resize(nx, nx);
  completion_tangents(problem, mode, t, x, p, unit_x_, zero_p_by_x_, x_tangents_, out.f_x, ws);
  out.f_x = -out.f_x;  // F_x = -R_x
  out.f_xdot.setIdentity(nx, nx);
  out.g_x.resize(nc, nx);
  for (Eigen::Index i = 0; i < nx; ++i) {
    if (x_tangents_.col(i).isZero(0.0) && out.f_x.col(i).isZero(0.0)) {
      out.g_x.col(i).setZero();  // a state the completion does not read
      continue;
    }
    rate_tangent_ = -out.f_x.col(i);
    running_cost_tangents_at_rate(problem, t, point_.x, point_.xdot, p, 0.0, x_tangents_.col(i), rate_tangent_, zero_p_,
                                  costs_, ws);
    out.g_x.col(i) = costs_;
  }
}

void CompletedLinearization::parameters(const Problem& problem, int mode, double t, In<double> x, In<double> p,
                                        ResidualLinearization& out, TangentWorkspace& ws) {
  const Eigen::Index nx = x.size(), np = p.size(), nc = problem.n_costs();
  costs_.resize(nc);
  if (unit_p_.rows() != np || zero_x_by_p_.rows() != nx) {
    unit_p_.setIdentity(np, np);
    zero_x_by_p_.setZero(nx, np);
  }
  p_tangents_.resize(nx, np);
  out.f_p.resize(nx, np);
  completion_tangents(problem, mode, t, x, p, zero_x_by_p_, unit_p_, p_tangents_, out.f_p, ws);
  out.f_p = -out.f_p;  // F_p = -R_p
  out.g_p.resize(nc, np);
  for (Eigen::Index j = 0; j < np; ++j) {
    rate_tangent_ = -out.f_p.col(j);
    running_cost_tangents_at_rate(problem, t, point_.x, point_.xdot, p, 0.0, p_tangents_.col(j), rate_tangent_,
                                  unit_p_.col(j), costs_, ws);
    out.g_p.col(j) = costs_;
  }
}

void CompletedLinearization::all(const Problem& problem, int mode, double t, In<double> x, In<double> p,
                                 ResidualLinearization& out, TangentWorkspace& ws) {
  states(problem, mode, t, x, p, out, ws);
  parameters(problem, mode, t, x, p, out, ws);
}

}  // namespace saltus::detail
