// Maggi's re-partitioning (docs/multibody.md, "Maggi"): a double pendulum of two rods in natural
// coordinates, released from the horizontal, starts with the vertical coordinates independent
// (the horizontal ones carry the pivots there); as the rods pass the vertical that set degrades
// and Maggi switches to another. Its motion and gradients must agree with the index-1
// formulation (an independent integration of the same equations in full coordinates) to 1e-8,
// and forward, adjoint and complex step must agree through the switches.
#include <saltus/multibody/formulation.hpp>
#include <saltus/multibody/model_file.hpp>
#include <saltus/solvers/adjoint.hpp>
#include <saltus/solvers/named_outputs.hpp>
#include <saltus/solvers/simulate.hpp>
#include <saltus/verify/gradient.hpp>

#include <gtest/gtest.h>

#include <algorithm>
#include <string>

namespace {

using namespace saltus;
using multibody::FormulationType;

const char* kDoublePendulum = R"yaml(
name: double_pendulum
horizon: 1.5
parameters: {L1: 1.0, L2: 0.8, g: 9.81}
gravity: [0, -g]
ground: {O: [0, 0]}
points:
  p1: {position: [L1, 0]}
  p2: {position: ["L1 + L2", 0]}
elements:
  - {type: bar, name: upper, from: O, to: p1, length: L1, mass: 1}
  - {type: bar, name: lower, from: p1, to: p2, length: L2, mass: 0.8}
costs:
  x2_T: {terminal: [{signal: x, of: p2}]}
  height: {running: [{signal: y, of: p2}]}
)yaml";

Problem pendulum(FormulationType type) {
  multibody::Model model = multibody::parse_model(kDoublePendulum, "double_pendulum.yaml");
  model.formulation.type = type;
  Problem pb = multibody::make_problem(model);
  pb.options().rtol = 1e-12;
  pb.options().atol = 1e-14;
  return pb;
}

double output(const Problem& pb, const Solution& s, const std::string& name) {
  const OutputTrajectory out = output_trajectory(pb, s, pb.nominal_parameters());
  const auto column = std::find(out.names.begin(), out.names.end(), name) - out.names.begin();
  return out.values(out.values.rows() - 1, column);
}

TEST(Repartition, DoublePendulumThroughTheVerticalAgreesWithIndex1) {
  const Problem maggi = pendulum(FormulationType::Maggi);
  const Problem index1 = pendulum(FormulationType::Index1);
  const Solution a = forward_sensitivity(maggi);
  const Solution b = forward_sensitivity(index1);
  const long switches = std::count_if(a.events.begin(), a.events.end(),
                                      [](const EventRecord& e) { return e.name == "repartition"; });
  EXPECT_GE(switches, 1);
  for (const char* name : {"p1.x", "p1.y", "p2.x", "p2.y", "p2.x_dot", "p2.y_dot"}) {
    EXPECT_NEAR(output(maggi, a, name), output(index1, b, name), 1e-8) << name;
  }
  EXPECT_LT((a.costs - b.costs).cwiseAbs().maxCoeff(), 1e-8);
  EXPECT_LT((a.cost_gradient - b.cost_gradient).cwiseAbs().maxCoeff(), 1e-7 * b.cost_gradient.cwiseAbs().maxCoeff());
  // The switch maps the state to the new independent set (a bit mask over p1.x, p1.y, p2.x, p2.y:
  // two bits set), and the Newton references follow the positions.
  const auto mask = static_cast<unsigned>(a.final_state[maggi.state_index("independent_set")]);
  EXPECT_EQ(__builtin_popcount(mask), 2);
  EXPECT_EQ(static_cast<unsigned>(a.events.front().state_before[maggi.state_index("independent_set")]), 0b1010u);
  EXPECT_NE(static_cast<unsigned>(a.events.front().state_after[maggi.state_index("independent_set")]), 0b1010u);
  for (const char* name : {"p1.x", "p1.y", "p2.x", "p2.y"}) {
    EXPECT_NEAR(a.final_state[maggi.state_index(std::string(name) + ".ref")], output(maggi, a, name), 1e-8) << name;
  }
}

TEST(Repartition, ForwardAdjointAndComplexStepAgreeThroughTheSwitches) {
  const Problem pb = pendulum(FormulationType::Maggi);
  const Eigen::VectorXd p = pb.nominal_parameters();
  const Solution fwd = forward_sensitivity(pb);
  const Solution adj = adjoint(pb, p, pb.options());
  const GradientEstimate cs = complex_step(pb, p, pb.options());
  const double scale = fwd.cost_gradient.cwiseAbs().maxCoeff();
  EXPECT_LT((adj.cost_gradient - fwd.cost_gradient).cwiseAbs().maxCoeff(), 1e-6 * scale);
  EXPECT_LT((cs.cost_gradient - fwd.cost_gradient).cwiseAbs().maxCoeff(), 1e-6 * scale);
}

}  // namespace
