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

/// What the adjoint does with a problem: agree with the other methods, or refuse it
/// (InputError: the stabilized_index1 formulation with multipliers, or a ggl model with a point
/// without mass; docs/dae.md, "Index 2").
enum class AdjointCase { Agrees, Refused };

/// The adjoint case of a mechanism with multipliers in formulation `type`.
inline AdjointCase adjoint_case(multibody::FormulationType type) {
  return type == multibody::FormulationType::StabilizedIndex1 || type == multibody::FormulationType::Index3
             ? AdjointCase::Refused
             : AdjointCase::Agrees;
}

/// The adjoint's cost gradient; for a problem it refuses (`expected`), the check that it does and
/// the forward gradient `fwd` in its place, so that a comparison with it holds trivially there
/// and the other checks still run.
inline Eigen::MatrixXd adjoint_gradient(const Problem& pb, const Solution& fwd,
                                        AdjointCase expected = AdjointCase::Agrees) {
  if (expected == AdjointCase::Refused) {
    EXPECT_THROW((void)adjoint(pb, pb.nominal_parameters(), pb.options()), InputError);
    return fwd.cost_gradient;
  }
  return adjoint(pb, pb.nominal_parameters(), pb.options()).cost_gradient;
}

/// Adjoint and complex step agree with the forward gradient `fwd` to `tolerance` relative to
/// its largest entry, central differences (noisier) to 1e3 times that.
inline void expect_methods_agree(const Problem& pb, const Solution& fwd, double tolerance,
                                 AdjointCase adjoint_case = AdjointCase::Agrees) {
  const Eigen::VectorXd p = pb.nominal_parameters();
  const double scale = fwd.cost_gradient.cwiseAbs().maxCoeff();
  EXPECT_LT((adjoint_gradient(pb, fwd, adjoint_case) - fwd.cost_gradient).cwiseAbs().maxCoeff(), tolerance * scale);
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
