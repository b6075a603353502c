#include "stationarity.hpp"

#include "nlopt_handle.hpp"

#include <algorithm>
#include <vector>

namespace saltus::optimize_detail {

namespace {

struct LeastSquares {
  const Eigen::VectorXd& g;
  const Eigen::MatrixXd& b;
};

/// 0.5 |g + B w|^2 and its gradient B^T (g + B w).
double half_squared_residual(unsigned m, const double* w, double* gradient, void* data) {
  const auto* ls = static_cast<const LeastSquares*>(data);
  const Eigen::VectorXd r = ls->g + ls->b * Eigen::Map<const Eigen::VectorXd>(w, m);
  if (gradient) Eigen::Map<Eigen::VectorXd>(gradient, m) = ls->b.transpose() * r;
  return 0.5 * r.squaredNorm();
}

/// min |g + B w|_inf at the w >= 0 that NLopt's bounded L-BFGS finds for min |g + B w|_2, for
/// g of unit size and unit columns: its stopping test is absolute (a projected gradient of
/// 1e-8), so the caller scales. Every finite trial that lowers the residual is kept, whatever
/// NLopt's return code (ROUNDOFF_LIMITED near the solution).
double unit_kkt_residual(const Eigen::VectorXd& g, const Eigen::MatrixXd& b) {
  const Eigen::Index m = b.cols();
  double best = g.lpNorm<Eigen::Infinity>();
  const NloptHandle opt(nlopt_create(NLOPT_LD_LBFGS, static_cast<unsigned>(m)));
  LeastSquares ls{g, b};
  const std::vector<double> zero(static_cast<size_t>(m), 0.0);
  if (!opt || nlopt_set_lower_bounds(opt.get(), zero.data()) < 0 ||
      nlopt_set_min_objective(opt.get(), half_squared_residual, &ls) < 0 ||
      nlopt_set_ftol_rel(opt.get(), 1e-15) < 0 || nlopt_set_xtol_rel(opt.get(), 1e-12) < 0 ||
      nlopt_set_maxeval(opt.get(), 1000) < 0) {
    return best;  // w = 0: not stationary unless g is, which costs a restart, never a wrong "converged"
  }
  Eigen::VectorXd w = Eigen::VectorXd::Zero(m);
  double value = 0.0;
  nlopt_optimize(opt.get(), w.data(), &value);
  if (w.allFinite()) best = std::min(best, (g + b * w.cwiseMax(0.0)).lpNorm<Eigen::Infinity>());
  return best;
}

}  // namespace

double kkt_residual(const Eigen::VectorXd& g, const Eigen::MatrixXd& active_gradients) {
  const double size = g.lpNorm<Eigen::Infinity>();
  if (!(size > 0.0)) return size;  // 0, or NaN for a gradient that is not finite
  // Unit gradient and unit columns (a column of zeros dropped: it absorbs nothing).
  std::vector<Eigen::Index> kept;
  for (Eigen::Index j = 0; j < active_gradients.cols(); ++j) {
    if (active_gradients.col(j).norm() > 0.0) kept.push_back(j);
  }
  Eigen::MatrixXd unit(g.size(), static_cast<Eigen::Index>(kept.size()));
  for (size_t j = 0; j < kept.size(); ++j) {
    unit.col(static_cast<Eigen::Index>(j)) = active_gradients.col(kept[j]).normalized();
  }
  if (kept.empty()) return size;
  return size * unit_kkt_residual(g / size, unit);
}

}  // namespace saltus::optimize_detail
