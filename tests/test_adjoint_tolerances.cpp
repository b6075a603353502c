// The adjoint's tolerances (src/solvers/run_support.hpp, adjoint_tolerances): lambda's and the
// gradient quadratures' absolute tolerances, per cost, from the state's or from the costs'
// sizes; and what the costs' sizes buy on the penalty five-bar, whose backward pass resolved
// near-zero quadrature entries to the state's atol.
#include "../src/solvers/run_support.hpp"

#include <saltus/core/options.hpp>
#include <saltus/multibody/formulation.hpp>
#include <saltus/multibody/model_file.hpp>
#include <saltus/solvers/adjoint.hpp>
#include <saltus/solvers/simulate.hpp>

#include <gtest/gtest.h>

#include <limits>
#include <string>
#include <vector>

namespace {

using namespace saltus;
using detail::adjoint_tolerances;

/// Two costs of sizes 0.5 and 2e4, two parameters of sizes 2 and 1e-3.
struct TwoCosts {
  Eigen::VectorXd p = Eigen::Vector2d(2.0, 1e-3);
  Eigen::VectorXd costs = Eigen::Vector2d(0.5, 2e4);
};

Options tolerances(double rtol, double atol) {
  Options o;
  o.rtol = rtol;
  o.atol = atol;
  return o;
}

TEST(AdjointTolerances, StateSizedByDefault) {
  const TwoCosts c;
  const detail::AdjointTolerances tol = adjoint_tolerances(tolerances(1e-6, 1e-8), c.p, c.costs);
  EXPECT_EQ(tol.rtol, 1e-6);
  EXPECT_EQ(tol.cost_atol, (std::vector<double>{1e-8, 1e-8}));
  // Entry dpsi_j/dp_k: the cost quadrature atol over |p_k|, cost-major.
  EXPECT_EQ(tol.quadrature_atol, (std::vector<double>{1e-8 / 2.0, 1e-8 / 1e-3, 1e-8 / 2.0, 1e-8 / 1e-3}));
}

TEST(AdjointTolerances, FromCostsLambdaAndQuadraturesTakeEachCostsSize) {
  const TwoCosts c;
  Options o = tolerances(1e-6, 1e-8);
  o.adjoint_atol_from_costs = true;
  o.adjoint_rtol_scale = 0.1;
  const detail::AdjointTolerances tol = adjoint_tolerances(o, c.p, c.costs);
  EXPECT_DOUBLE_EQ(tol.rtol, 1e-7);
  // lambda: max(atol, r max(1, |psi_j|)): cost 0 (|psi| < 1) 1e-7 * 1, cost 1 1e-7 * 2e4.
  ASSERT_EQ(tol.cost_atol.size(), 2u);
  EXPECT_DOUBLE_EQ(tol.cost_atol[0], 1e-7);
  EXPECT_DOUBLE_EQ(tol.cost_atol[1], 2e-3);
  // Quadratures: max(atol, r |psi_j|) over |p_k|: cost 0 1e-7 * 0.5, cost 1 1e-7 * 2e4.
  ASSERT_EQ(tol.quadrature_atol.size(), 4u);
  EXPECT_DOUBLE_EQ(tol.quadrature_atol[0], 5e-8 / 2.0);
  EXPECT_DOUBLE_EQ(tol.quadrature_atol[1], 5e-8 / 1e-3);
  EXPECT_DOUBLE_EQ(tol.quadrature_atol[2], 2e-3 / 2.0);
  EXPECT_DOUBLE_EQ(tol.quadrature_atol[3], 2e-3 / 1e-3);
}

TEST(AdjointTolerances, GivenValuesWinOverTheCosts) {
  const TwoCosts c;
  Options o = tolerances(1e-6, 1e-8);
  o.adjoint_atol_from_costs = true;
  o.adjoint_atol = 1e-10;
  o.adjoint_quadrature_atol = 1e-9;
  const detail::AdjointTolerances tol = adjoint_tolerances(o, c.p, c.costs);
  EXPECT_EQ(tol.cost_atol, (std::vector<double>{1e-10, 1e-10}));
  EXPECT_EQ(tol.quadrature_atol, (std::vector<double>{1e-9 / 2.0, 1e-9 / 1e-3, 1e-9 / 2.0, 1e-9 / 1e-3}));
  // A given adjoint_atol sets lambda's tolerance only: the quadratures still follow the costs.
  Options lambda_given = tolerances(1e-6, 1e-8);
  lambda_given.adjoint_atol_from_costs = true;
  lambda_given.adjoint_atol = 1e-10;
  EXPECT_DOUBLE_EQ(adjoint_tolerances(lambda_given, c.p, c.costs).quadrature_atol[2], 2e-2 / 2.0);
  // A cost quadrature atol stands in for the state's, and the costs still raise it.
  Options q = tolerances(1e-6, 1e-8);
  q.adjoint_atol_from_costs = true;
  q.cost_atol = 1e-2;
  const detail::AdjointTolerances raised = adjoint_tolerances(q, c.p, c.costs);
  EXPECT_DOUBLE_EQ(raised.quadrature_atol[0], 1e-2 / 2.0);  // max(1e-2, 1e-6 * 0.5)
  EXPECT_DOUBLE_EQ(raised.quadrature_atol[2], 2e-2 / 2.0);  // max(1e-2, 1e-6 * 2e4)
}

TEST(AdjointTolerances, UnknownCostsKeepTheStatesTolerances) {
  TwoCosts c;
  c.costs[1] = std::numeric_limits<double>::quiet_NaN();
  Options o = tolerances(1e-6, 1e-8);
  o.adjoint_atol_from_costs = true;
  const detail::AdjointTolerances tol = adjoint_tolerances(o, c.p, c.costs);
  EXPECT_EQ(tol.cost_atol, (std::vector<double>{1e-8, 1e-8}));
  EXPECT_EQ(tol.quadrature_atol[2], 1e-8 / 2.0);
}

TEST(AdjointTolerances, FromCostsLambdaStaysAboveItsRoundOff) {
  // At rtol 1e-10 lambda's tolerance from the costs is the larger of r max(1, |psi_j|) and
  // 1e-8 |psi_j|: cost 0 (0.5) 5e-9 instead of 1e-10, cost 1 (2e4) 2e-4 instead of 2e-6.
  const TwoCosts c;
  Options o = tolerances(1e-10, 1e-12);
  o.adjoint_atol_from_costs = true;
  const detail::AdjointTolerances tol = adjoint_tolerances(o, c.p, c.costs);
  ASSERT_EQ(tol.cost_atol.size(), 2u);
  EXPECT_DOUBLE_EQ(tol.cost_atol[0], 5e-9);
  EXPECT_DOUBLE_EQ(tol.cost_atol[1], 2e-4);
  // The gradient quadratures keep r |psi_j|.
  EXPECT_DOUBLE_EQ(tol.quadrature_atol[2], 2e-6 / 2.0);
  // From rtol 1e-8 on, the floor changes nothing.
  Options loose = tolerances(1e-8, 1e-12);
  loose.adjoint_atol_from_costs = true;
  EXPECT_DOUBLE_EQ(adjoint_tolerances(loose, c.p, c.costs).cost_atol[1], 2e-4);
  EXPECT_DOUBLE_EQ(adjoint_tolerances(loose, c.p, c.costs).cost_atol[0], 1e-8);
}

// fivebar_floor in the penalty form (rtol 1e-10, two floor impacts). With its gradient
// quadratures at the state's atol 1e-12 the backward pass took 17,870 steps against 5,557
// forward; with lambda's atol at rtol |psi_j| 9,402, chasing round-off in the stiff constraint
// directions. Above that round-off it takes fewer steps than the forward pass (4,609), and the
// gradient is closer to a forward run at rtol 1e-12 (another code path): 2.3e-7 of a cost's
// largest entry against 3.9e-7.
TEST(AdjointTolerances, PenaltyFiveBarsBackwardPassTakesFewerStepsThanTheForwardPass) {
  const multibody::Model model = multibody::load_model(std::string(SALTUS_SOURCE_DIR) + "/examples/fivebar_floor.yaml");
  multibody::FormulationSettings settings;
  settings.type = multibody::FormulationType::Penalty;
  const Problem pb = multibody::make_problem(model, settings);
  ASSERT_TRUE(pb.options().adjoint_atol_from_costs);
  const Solution a = adjoint(pb);
  const Solution f = forward_sensitivity(pb);
  ASSERT_GT(a.stats.steps, 0);
  EXPECT_LT(a.adjoint.backward.steps, a.stats.steps) << a.adjoint.backward.steps << " backward, " << a.stats.steps
                                                     << " forward";
  // Forward sensitivities of the penalty form at rtol 1e-12, atol 1e-13 (costs vy_int, effort,
  // y2_T; the file's four parameters).
  Eigen::MatrixXd tight(3, 4);
  tight << 3.47829018616, -6.53388561204, -0.194594219019, -0.284947719071,  //
      -555.425400748, 170.390660565, 49.3693269898, 16.9395542511,           //
      3.47829018616, -6.53388561204, -0.194594219019, -0.284947719071;
  ASSERT_EQ(a.cost_gradient.rows(), tight.rows());
  ASSERT_EQ(a.cost_gradient.cols(), tight.cols());
  for (Eigen::Index c = 0; c < tight.rows(); ++c) {
    const double largest = tight.row(c).cwiseAbs().maxCoeff();
    EXPECT_LT((a.cost_gradient.row(c) - tight.row(c)).cwiseAbs().maxCoeff(), 3e-7 * largest)
        << "cost " << c << ": " << a.cost_gradient.row(c) << " against " << tight.row(c);
    EXPECT_LT((a.cost_gradient.row(c) - f.cost_gradient.row(c)).cwiseAbs().maxCoeff(), 1e-6 * largest)
        << "cost " << c << ": " << a.cost_gradient.row(c) << " against " << f.cost_gradient.row(c);
  }
}

}  // namespace
