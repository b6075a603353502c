// Contacts that close together are one impact (docs/multibody.md, "Contacts"): a bar falling
// flat on both ends bounces straight up with v+ = -e v- and no spin (two impacts one after the
// other would set it spinning); a third, redundant contact makes the impulses non-unique, which
// is a clear error; a tilted bar hits end by end as before.
#include <saltus/core/error.hpp>
#include <saltus/multibody/formulation.hpp>
#include <saltus/multibody/model_file.hpp>
#include <saltus/solvers/adjoint.hpp>
#include <saltus/solvers/simulate.hpp>
#include <saltus/verify/gradient.hpp>

#include <gtest/gtest.h>

#include "support/method_agreement.hpp"

#include <cmath>
#include <string>

namespace {

using namespace saltus;
using multibody::FormulationType;

const char* kFlatBar = R"yaml(
name: flat_bar
horizon: 0.5
tolerances: {rtol: 1.0e-11, atol: 1.0e-13}
parameters: {h: 0.5, e: 0.7, angle: 0}
bodies:
  bar: {mass: 1, inertia: "1/12", position: [0, h], angle: angle}
contacts:
  - {name: left, point: {body: bar, at: [-0.5, 0]}, line: {point: [0, 0], normal: [0, 1]}, restitution: e}
  - {name: right, point: {body: bar, at: [0.5, 0]}, line: {point: [0, 0], normal: [0, 1]}, restitution: e}
costs:
  y_T: {terminal: [{signal: y, of: bar}]}
  spin_T: {terminal: [{signal: omega, of: bar}]}
)yaml";

Problem flat_bar(FormulationType type, const std::string& extra = "", double angle = 0.0) {
  std::string text = kFlatBar;
  if (!extra.empty()) text.replace(text.find("costs:"), 6, extra + "costs:");
  multibody::Model model = multibody::parse_model(text, "flat_bar.yaml");
  model.formulation.type = type;
  Problem pb = multibody::make_problem(model);
  pb.set_nominal("angle", angle);
  return pb;
}

}  // namespace

class SimultaneousImpacts : public ::testing::TestWithParam<FormulationType> {};

TEST_P(SimultaneousImpacts, FlatBarBouncesStraightUp) {
  const Problem pb = flat_bar(GetParam());
  const Solution s = forward_sensitivity(pb);
  ASSERT_FALSE(s.events.empty());
  const double g = 9.81, h = 0.5, e = 0.7;
  const double t1 = std::sqrt(2.0 * h / g);
  EXPECT_NEAR(s.events.front().time, t1, 1e-8);
  // Up at -e times the impact speed, no spin: the bar reaches e^2 h at t1 + e sqrt(2 h / g).
  const double up = e * g * t1;
  const double t_top = t1 + up / g;
  EXPECT_NEAR(s.costs[pb.cost_index("spin_T")], 0.0, 1e-9);
  EXPECT_NEAR(s.costs[pb.cost_index("y_T")], up * (0.5 - t1) - 0.5 * g * (0.5 - t1) * (0.5 - t1), 1e-8);
  EXPECT_GT(0.5, t1);
  EXPECT_LT(0.5, t_top + up / g);  // the horizon ends before the second landing
  // d y_T / d e = g t1 (0.5 - t1): exact through the joint jump.
  EXPECT_NEAR(s.cost_gradient(pb.cost_index("y_T"), pb.parameter_index("e")), g * t1 * (0.5 - t1), 1e-7);
  const Eigen::VectorXd p = pb.nominal_parameters();
  const Eigen::MatrixXd adj = adjoint(pb, p, pb.options()).cost_gradient;
  const GradientEstimate cs = complex_step(pb, p, pb.options());
  EXPECT_LT((adj - s.cost_gradient).cwiseAbs().maxCoeff(), 1e-7);
  EXPECT_LT((cs.cost_gradient - s.cost_gradient).cwiseAbs().maxCoeff(), 1e-7);
}

INSTANTIATE_TEST_SUITE_P(Formulations, SimultaneousImpacts,
                         ::testing::Values(FormulationType::Index1, FormulationType::Maggi, FormulationType::Penalty,
                                           FormulationType::GGL, FormulationType::StabilizedIndex1),
                         [](const auto& info) { return multibody::to_string(info.param); });

TEST(SimultaneousImpacts, TiltedBarHitsEndByEnd) {
  const Problem pb = flat_bar(FormulationType::Index1, "", 0.05);
  const Solution s = simulate(pb);
  ASSERT_GE(s.events.size(), 2u);
  EXPECT_EQ(s.events[0].name, "left");  // the lower end first (a positive angle lowers it)
  EXPECT_GT(s.events[1].time - s.events[0].time, 1e-3);
  EXPECT_GT(std::abs(s.costs[pb.cost_index("spin_T")]), 0.1);
}

TEST(SimultaneousImpacts, RedundantContactsAreAClearError) {
  const std::string middle =
      "  - {name: middle, point: {body: bar, at: [0, 0]}, line: {point: [0, 0], normal: [0, 1]}, restitution: e}\n";
  const Problem pb = flat_bar(FormulationType::Index1, middle);
  try {
    simulate(pb);
    ADD_FAILURE() << "three dependent contacts were resolved";
  } catch (const ModelError& err) {
    EXPECT_NE(std::string(err.what()).find("simultaneous impact"), std::string::npos) << err.what();
    EXPECT_NE(std::string(err.what()).find("dependent"), std::string::npos) << err.what();
  }
}
