#pragma once
// The reciprocal condition number by which the DAE solvers call a matrix singular.
#include <Eigen/LU>

#include <algorithm>
#include <cmath>

namespace saltus::detail {

/// min(Eigen's estimate, smallest / largest |pivot|) of a factored matrix, 0 where every pivot
/// is 0 (0 / 0 said "reciprocal condition number nan") or Eigen's estimate is nan. Eigen's
/// estimate reports 1 for some exactly singular matrices (a zero pivot with a zero column, as
/// when an algebraic state does not appear): the pivots are checked as well.
inline double reciprocal_condition(const Eigen::PartialPivLU<Eigen::MatrixXd>& lu) {
  const Eigen::VectorXd pivots = lu.matrixLU().diagonal().cwiseAbs();
  const double pivot_ratio = pivots.size() == 0 ? 1.0 : pivots.maxCoeff() > 0.0 ? pivots.minCoeff() / pivots.maxCoeff() : 0.0;
  const double estimate = lu.rcond();
  return std::isnan(estimate) ? pivot_ratio : std::min(estimate, pivot_ratio);
}

}  // namespace saltus::detail
