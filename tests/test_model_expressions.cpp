// Expressions in model files (docs/model-files.md, "Values"): fields written as arithmetic over
// the parameters, their errors located at the offending token, and gradients that flow through
// them, including through the initial configuration.
#include <saltus/core/error.hpp>
#include <saltus/multibody/formulation.hpp>
#include <saltus/multibody/model_file.hpp>
#include <saltus/solvers/simulate.hpp>

#include <gtest/gtest.h>

#include <cmath>
#include <string>

#include "support/model_text.hpp"

namespace {

using namespace saltus;
using namespace saltus::multibody;

/// A pendulum of length L released at angle th0 from the downward vertical; the bob's position
/// and the rod's mass are expressions.
const std::string kPendulum = R"yaml(name: pendulum
horizon: 0.8
parameters: {L: 1.2, th0: 0.6, m: 2}
ground: {O: [0, 0]}
points: {p: {position: ["L*sin(th0)", "-L * cos(th0)"]}}
elements:
  - {type: bar, name: rod, from: O, to: p, length: L, mass: "m/2"}
  - {type: point_mass, name: bob, point: p, mass: "m - m/2"}
costs:
  height: {terminal: [{signal: y, of: p}]}
  swing: {running: [{signal: x, of: p, power: 2, weight: "1/L^2"}]}
)yaml";

std::string error_of(const std::string& text) { return test::model_error(text); }

std::string replace(const std::string& text, const std::string& from, const std::string& to) {
  return test::replace_once(text, from, to);
}

TEST(ModelExpressions, PositionsFollowTheParameters) {
  Problem pb = make_problem(parse_model(kPendulum, "model.yaml"));
  pb.options().n_outputs = 2;
  for (const double th0 : {0.6, 0.9}) {
    pb.set_nominal("th0", th0);
    const Solution s = forward_sensitivity(pb);
    const int ix = pb.state_index("p.x"), iy = pb.state_index("p.y");
    EXPECT_NEAR(s.states(0, ix), 1.2 * std::sin(th0), 1e-12);
    EXPECT_NEAR(s.states(0, iy), -1.2 * std::cos(th0), 1e-12);
    // d(initial position)/d th0 and /d L, exactly.
    const Eigen::MatrixXd& S0 = s.sensitivities.front();
    const int L = pb.parameter_index("L"), th = pb.parameter_index("th0");
    EXPECT_NEAR(S0(ix, th), 1.2 * std::cos(th0), 1e-12);
    EXPECT_NEAR(S0(iy, th), 1.2 * std::sin(th0), 1e-12);
    EXPECT_NEAR(S0(ix, L), std::sin(th0), 1e-12);
    EXPECT_NEAR(S0(iy, L), -std::cos(th0), 1e-12);
  }
}

TEST(ModelExpressions, GradientsThroughTheInitialConfigurationMatchDifferences) {
  for (const char* formulation : {"index1", "maggi", "penalty"}) {
    Model model = parse_model(kPendulum, "model.yaml");
    FormulationSettings settings = model.formulation;
    settings.type = parse_formulation(formulation);
    Problem pb = make_problem(model, settings);
    pb.options().rtol = 1e-11;
    pb.options().atol = 1e-12;
    const Solution s = forward_sensitivity(pb);
    const Eigen::VectorXd p = pb.nominal_parameters();
    for (int k = 0; k < pb.n_parameters(); ++k) {
      // A step well above the assembly's Newton tolerance (its noise over h) and small enough
      // for the truncation error (h^2).
      const double h = 1e-3 * std::max(1.0, std::abs(p[k]));
      Eigen::VectorXd up = p, down = p;
      up[k] += h;
      down[k] -= h;
      const Eigen::VectorXd g = (simulate(pb, up, pb.options()).costs - simulate(pb, down, pb.options()).costs) / (2 * h);
      for (int c = 0; c < pb.n_costs(); ++c) {
        EXPECT_NEAR(s.cost_gradient(c, k), g[c], 1e-5 * (1.0 + std::abs(g[c])))
            << formulation << ": d " << pb.cost(c).name << " / d " << pb.parameter_names()[static_cast<size_t>(k)];
      }
    }
  }
}

TEST(ModelExpressions, ConstantExpressionsAreFolded) {
  const std::string text =
      replace(replace(kPendulum, "horizon: 0.8", "horizon: \"2*pi/8\""), "mass: \"m - m/2\"", "mass: \"(3 - 1)/2\"");
  const Model model = parse_model(text, "model.yaml");
  EXPECT_NEAR(model.tf, std::acos(-1.0) / 4.0, 1e-15);
  EXPECT_FALSE(model.elements[1].mass.depends_on_parameters());
  EXPECT_EQ(model.elements[1].mass.constant, 1.0);
  EXPECT_TRUE(model.elements[0].mass.depends_on_parameters());
}

TEST(ModelExpressions, ErrorsPointAtTheToken) {
  std::string msg = error_of(replace(kPendulum, "\"L*sin(th0)\"", "\"L*sin(th1)\""));
  EXPECT_NE(msg.find("model.yaml:5:32: points.p.position[0]: in expression 'L*sin(th1)': unknown name 'th1' "
                     "(parameters: L, th0, m; constant: pi)"),
            std::string::npos)
      << msg;
  msg = error_of(replace(kPendulum, "mass: \"m/2\"", "mass: \"m/(2\""));
  EXPECT_NE(msg.find("model.yaml:7:66: elements[0].mass: in expression 'm/(2': expected ')'"), std::string::npos) << msg;
  msg = error_of(replace(kPendulum, "mass: \"m/2\"", "mass: \"sqrt(m - 3)\""));
  EXPECT_NE(msg.find("elements[0].mass: 'sqrt(m - 3)' is not finite at the nominal parameters"), std::string::npos)
      << msg;
  msg = error_of(replace(kPendulum, "horizon: 0.8", "horizon: \"L\""));
  EXPECT_NE(msg.find("model.yaml:2:10: horizon: 'L' depends on parameters"), std::string::npos) << msg;
  // A domain check names the expression and the parameters it read.
  msg = error_of(replace(kPendulum, "length: L", "length: \"L - 2*m\""));
  EXPECT_NE(msg.find("bar 'rod' needs length > 0, got -2.8 (from expression 'L - 2*m' with L = 1.2, m = 2)"),
            std::string::npos)
      << msg;
}

}  // namespace
