#include "stationarity.hpp"

#include <nlopt.h>

#include <memory>
#include <type_traits>
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

struct NloptDeleter {
  void operator()(nlopt_opt opt) const { nlopt_destroy(opt); }
};

}  // namespace

double kkt_residual(const Eigen::VectorXd& g, const Eigen::MatrixXd& active_gradients) {
  const Eigen::Index m = active_gradients.cols();
  if (m == 0) return g.lpNorm<Eigen::Infinity>();
  std::unique_ptr<std::remove_pointer_t<nlopt_opt>, NloptDeleter> opt(
      nlopt_create(NLOPT_LD_LBFGS, static_cast<unsigned>(m)));
  LeastSquares ls{g, active_gradients};
  const std::vector<double> zero(static_cast<size_t>(m), 0.0);
  Eigen::VectorXd w = Eigen::VectorXd::Zero(m);
  double value = 0.0;
  // A failure to set up leaves w = 0: the residual is then |g|, and the point counts as not
  // stationary, which costs a restart, never a wrong "converged".
  if (opt && nlopt_set_lower_bounds(opt.get(), zero.data()) >= 0 &&
      nlopt_set_min_objective(opt.get(), half_squared_residual, &ls) >= 0 &&
      nlopt_set_ftol_rel(opt.get(), 1e-15) >= 0 && nlopt_set_xtol_rel(opt.get(), 1e-12) >= 0 &&
      nlopt_set_maxeval(opt.get(), 1000) >= 0) {
    Eigen::VectorXd trial = w;
    if (nlopt_optimize(opt.get(), trial.data(), &value) >= 0 && trial.allFinite()) w = trial.cwiseMax(0.0);
  }
  return (g + active_gradients * w).lpNorm<Eigen::Infinity>();
}

}  // namespace saltus::optimize_detail
