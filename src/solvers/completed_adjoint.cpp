// The completion's transpose for the adjoint through a mode's completion: completed_adjoint.hpp.
#include "completed_adjoint.hpp"

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

}  // namespace saltus::detail
