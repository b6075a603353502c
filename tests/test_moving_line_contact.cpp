// Contacts against a line carried by a body (docs/model-files.md, "Contacts"): a paddle held
// fixed gives the same run as the equivalent ground line (an independent code path), and on a
// free paddle the impulse law reverses the relative normal velocity of ball and turning line by
// e, checked with the test's own kinematics from the event's states.
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

/// The ball drops on a paddle at angle th held by a driver, its line carried by the paddle.
const char* kFixedPaddle = R"yaml(
name: fixed_paddle
horizon: 0.9
tolerances: {rtol: 1.0e-10, atol: 1.0e-12}
formulation: index1
parameters: {e: 0.8, h: 1.0, th: 0.1}
ground: {pivot: [0, 0]}
points: {ball: {position: [0.3, h]}}
bodies: {paddle: {mass: 2, inertia: 0.2, position: [0, 0], angle: th}}
elements:
  - {type: revolute, a: paddle, b: pivot}
  - {type: coordinate_driver, coordinate: paddle.theta, function: {offset: th}}
  - {type: point_mass, point: ball, mass: 0.5}
contacts:
  - {name: hit, point: ball, restitution: e, line: {body: paddle, point: [0.1, 0.02], normal: [0, 2]}}
costs:
  ball_y: {terminal: [{signal: y, of: ball}]}
  ball_vx: {terminal: [{signal: vx, of: ball}]}
)yaml";

/// The same line on the ground: its point and normal rotated by th in the file.
const char* kGroundLine = R"yaml(
name: ground_line
horizon: 0.9
tolerances: {rtol: 1.0e-10, atol: 1.0e-12}
formulation: index1
parameters: {e: 0.8, h: 1.0, th: 0.1}
points: {ball: {position: [0.3, h]}}
elements:
  - {type: point_mass, point: ball, mass: 0.5}
contacts:
  - name: hit
    point: ball
    restitution: e
    line: {point: ["0.1*cos(th) - 0.02*sin(th)", "0.1*sin(th) + 0.02*cos(th)"], normal: ["-sin(th)", "cos(th)"]}
costs:
  ball_y: {terminal: [{signal: y, of: ball}]}
  ball_vx: {terminal: [{signal: vx, of: ball}]}
)yaml";

double relative(const Eigen::MatrixXd& a, const Eigen::MatrixXd& b) {
  return (a - b).cwiseAbs().maxCoeff() / b.cwiseAbs().maxCoeff();
}

}  // namespace

TEST(MovingLineContact, FixedPaddleIsTheGroundLine) {
  const Problem paddle = multibody::make_problem(multibody::parse_model(kFixedPaddle, "fixed_paddle"));
  const Problem ground = multibody::make_problem(multibody::parse_model(kGroundLine, "ground_line"));
  const Solution a = forward_sensitivity(paddle);
  const Solution b = forward_sensitivity(ground);
  ASSERT_FALSE(a.events.empty());
  ASSERT_EQ(a.events.size(), b.events.size());
  EXPECT_NEAR(a.events[0].time, b.events[0].time, 1e-10);
  EXPECT_LT(relative(a.costs, b.costs), 1e-9);
  // d/d(e, h, th): th moves the carried line through the paddle's driven angle in one model
  // and through the line's expressions in the other.
  std::printf("fixed paddle vs ground line: costs %.2e, gradients %.2e\n", relative(a.costs, b.costs),
              relative(a.cost_gradient, b.cost_gradient));
  EXPECT_LT(relative(a.cost_gradient, b.cost_gradient), 1e-7);
}

class MovingLine : public ::testing::TestWithParam<FormulationType> {};

TEST_P(MovingLine, ImpulseReversesTheRelativeNormalVelocityOfATurningLine) {
  multibody::Model model = multibody::load_model(std::string(SALTUS_SOURCE_DIR) + "/examples/paddle.yaml");
  model.formulation.type = GetParam();
  const Problem pb = multibody::make_problem(model);
  const Eigen::VectorXd p = pb.nominal_parameters();
  const Solution fwd = forward_sensitivity(pb);
  ASSERT_EQ(fwd.events.size(), 2u);
  const Eigen::MatrixXd adj = adjoint(pb, p, pb.options()).cost_gradient;
  const GradientEstimate cs = complex_step(pb, p, pb.options());
  EXPECT_LT(relative(adj, fwd.cost_gradient), 1e-6);
  EXPECT_LT(relative(cs.cost_gradient, fwd.cost_gradient), 1e-6);
  if (GetParam() != FormulationType::Index1) return;  // full coordinates (q, v) in the state
  // Coordinates: ball (x, y), paddle (x, y, theta); the line: O = r + A(theta) (0, 0.02),
  // n = A(theta) (0, 1). Relative normal velocity n^T (vP - vO) + (P - O)^T n-dot.
  const double e = 0.8;
  const auto normal_rate = [](const Eigen::VectorXd& x) {
    const double px = x[0], py = x[1], bx = x[2], by = x[3], th = x[4];
    const double vpx = x[5], vpy = x[6], vbx = x[7], vby = x[8], w = x[9];
    const double c = std::cos(th), s = std::sin(th);
    const double ox = bx - 0.02 * s, oy = by + 0.02 * c;           // O
    const double vox = vbx - 0.02 * c * w, voy = vby - 0.02 * s * w;  // O-dot
    const double nx = -s, ny = c, ndx = -c * w, ndy = -s * w;      // n, n-dot
    return nx * (vpx - vox) + ny * (vpy - voy) + (px - ox) * ndx + (py - oy) * ndy;
  };
  const double gap_rate_before = normal_rate(fwd.events[0].state_before);
  const double gap_rate_after = normal_rate(fwd.events[0].state_after);
  std::printf("paddle impact: relative normal velocity %.6f before, %.6f after\n", gap_rate_before, gap_rate_after);
  EXPECT_LT(gap_rate_before, -1.0);
  EXPECT_NEAR(gap_rate_after, -e * gap_rate_before, 1e-10 * std::abs(gap_rate_before));
}

INSTANTIATE_TEST_SUITE_P(Formulations, MovingLine,
                         ::testing::Values(FormulationType::Index1, FormulationType::Maggi, FormulationType::Penalty,
                                           FormulationType::GGL, FormulationType::StabilizedIndex1,
                                           FormulationType::Index3),
                         [](const auto& info) { return multibody::to_string(info.param); });

TEST(MovingLineContact, BadLineBodiesAreRefusedWithTheirField) {
  std::string text = kFixedPaddle;
  const auto replace = [&](const std::string& from, const std::string& to) {
    std::string t = text;
    t.replace(t.find(from), from.size(), to);
    return t;
  };
  try {
    multibody::parse_model(replace("line: {body: paddle", "line: {body: padle"), "bad.yaml");
    ADD_FAILURE() << "an unknown line body was accepted";
  } catch (const InputError& err) {
    EXPECT_NE(std::string(err.what()).find("contacts[0].line.body"), std::string::npos) << err.what();
    EXPECT_NE(std::string(err.what()).find("unknown body 'padle'"), std::string::npos) << err.what();
  }
  try {
    multibody::parse_model(replace("restitution: e,", "restitution: e, law: partitioning,"), "bad.yaml");
    ADD_FAILURE() << "the partitioning law on a carried line was accepted";
  } catch (const InputError& err) {
    EXPECT_NE(std::string(err.what()).find("needs a ground line"), std::string::npos) << err.what();
  }
}
