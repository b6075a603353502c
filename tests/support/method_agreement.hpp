#pragma once
// Helpers shared by the mechanism tests: the agreement of forward sensitivities with the
// adjoint, the complex step and central differences, and a named output's column.
#include <saltus/core/error.hpp>
#include <saltus/core/problem.hpp>
#include <saltus/multibody/model.hpp>
#include <saltus/solvers/adjoint.hpp>
#include <saltus/solvers/named_outputs.hpp>
#include <saltus/solvers/solution.hpp>
#include <saltus/verify/gradient.hpp>

#include <gtest/gtest.h>

#include <algorithm>
#include <string>

namespace saltus::test_support {

/// Adjoint and complex step agree with the forward gradient `fwd` to `tolerance` relative to
/// its largest entry, central differences (noisier) to 1e3 times that.
inline void expect_methods_agree(const Problem& pb, const Solution& fwd, double tolerance) {
  const Eigen::VectorXd p = pb.nominal_parameters();
  const double scale = fwd.cost_gradient.cwiseAbs().maxCoeff();
  const Eigen::MatrixXd adj = adjoint(pb, p, pb.options()).cost_gradient;
  EXPECT_LT((adj - fwd.cost_gradient).cwiseAbs().maxCoeff(), tolerance * scale);
  const GradientEstimate cs = complex_step(pb, p, pb.options());
  EXPECT_LT((cs.cost_gradient - fwd.cost_gradient).cwiseAbs().maxCoeff(), tolerance * scale);
  const GradientEstimate cd = central_differences(pb, p, pb.options());
  EXPECT_LT((cd.cost_gradient - fwd.cost_gradient).cwiseAbs().maxCoeff(), 1e3 * tolerance * scale);
}

/// The column of named output `name` (out.names.size() if absent).
inline Eigen::Index output_column(const OutputTrajectory& out, const std::string& name) {
  return std::find(out.names.begin(), out.names.end(), name) - out.names.begin();
}

}  // namespace saltus::test_support
