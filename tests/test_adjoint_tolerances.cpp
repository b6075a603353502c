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

// fivebar_floor in the penalty form (rtol 1e-10, two floor impacts): with its gradient
// quadratures at the state's atol 1e-12 the backward pass took 17,870 steps against 5,557
// forward; held to the costs' sizes it takes under twice the forward steps, and the gradient
// stays within 1e-6 of each cost's largest entry of the forward sensitivities' (another code
// path; both within 3e-7 of a forward run at rtol 1e-12).
TEST(AdjointTolerances, PenaltyFiveBarsBackwardPassTakesUnderTwiceTheForwardSteps) {
  const multibody::Model model = multibody::load_model(std::string(SALTUS_SOURCE_DIR) + "/examples/fivebar_floor.yaml");
  multibody::FormulationSettings settings;
  settings.type = multibody::FormulationType::Penalty;
  const Problem pb = multibody::make_problem(model, settings);
  ASSERT_TRUE(pb.options().adjoint_atol_from_costs);
  const Solution a = adjoint(pb);
  const Solution f = forward_sensitivity(pb);
  ASSERT_GT(a.stats.steps, 0);
  EXPECT_LT(a.adjoint.backward.steps, 2 * a.stats.steps) << a.adjoint.backward.steps << " backward, " << a.stats.steps
                                                         << " forward";
  ASSERT_EQ(a.cost_gradient.rows(), f.cost_gradient.rows());
  for (Eigen::Index c = 0; c < f.cost_gradient.rows(); ++c) {
    const double largest = f.cost_gradient.row(c).cwiseAbs().maxCoeff();
    EXPECT_LT((a.cost_gradient.row(c) - f.cost_gradient.row(c)).cwiseAbs().maxCoeff(), 1e-6 * largest)
        << "cost " << c << ": " << a.cost_gradient.row(c) << " against " << f.cost_gradient.row(c);
  }
}

}  // namespace
