// Joint stops (docs/model-files.md, "Contacts"): a rod pendulum released from th0 against an
// angle stop at the vertical, and a block falling along a vertical prismatic rail onto an end
// stop, against their closed forms (the quarter period K(sin(th0/2)) / omega0 of the physical
// pendulum, free fall), with the restitution reversing the joint rate exactly; and the stops'
// bad input, one line each.
#include <saltus/multibody/formulation.hpp>
#include <saltus/multibody/model_file.hpp>
#include <saltus/solvers/adjoint.hpp>
#include <saltus/solvers/simulate.hpp>
#include <saltus/verify/gradient.hpp>

#include <gtest/gtest.h>

#include "support/method_agreement.hpp"
#include "support/stop_models.hpp"

#include <cmath>
#include <string>

namespace {

using namespace saltus;
using multibody::FormulationType;
using test::kPendulum;
using test::kRail;

Problem problem_of(const char* text, FormulationType type) {
  multibody::Model model = multibody::parse_model(text, "model.yaml");
  model.formulation.type = type;
  return multibody::make_problem(model);
}

/// The first quarter period of the physical pendulum (a uniform rod pinned at one end).
double quarter_period(double l, double th0, double g) {
  const double omega0 = std::sqrt(1.5 * g / l);
  return std::comp_ellint_1(std::sin(0.5 * th0)) / omega0;
}

}  // namespace

class JointStops : public ::testing::TestWithParam<FormulationType> {};

TEST_P(JointStops, PendulumHitsItsAngleStopAtTheQuarterPeriod) {
  const Problem pb = problem_of(kPendulum, GetParam());
  const Solution fwd = forward_sensitivity(pb);
  ASSERT_GE(fwd.events.size(), 2u);
  const double l = 0.8, th0 = 0.9, e = 0.5, g = 9.81;
  const double t1 = quarter_period(l, th0, g);
  const bool penalty = GetParam() == FormulationType::Penalty;
  EXPECT_NEAR(fwd.events[0].time, t1, penalty ? 1e-6 : 1e-9);
  // The rebound reaches th1 with 1 - cos th1 = e^2 (1 - cos th0); it comes back after a half period.
  const double th1 = std::acos(1.0 - e * e * (1.0 - std::cos(th0)));
  EXPECT_NEAR(fwd.events[1].time, t1 + 2.0 * quarter_period(l, th1, g), penalty ? 1e-6 : 1e-9);
  // dt1/dl = t1 / (2 l); dt1/dth0 by central differences of the closed form.
  const EventRecord& first = fwd.events[0];
  EXPECT_NEAR(first.dtime_dp[pb.parameter_index("l")], t1 / (2.0 * l), penalty ? 1e-5 : 1e-7);
  const double h = 1e-6;
  const double dth0 = (quarter_period(l, th0 + h, g) - quarter_period(l, th0 - h, g)) / (2.0 * h);
  EXPECT_NEAR(first.dtime_dp[pb.parameter_index("th0")], dth0, penalty ? 1e-5 : 1e-7);
  EXPECT_NEAR(first.dtime_dp[pb.parameter_index("e")], 0.0, 1e-9);
  // Forward, adjoint and complex step agree through both impacts.
  const Eigen::VectorXd p = pb.nominal_parameters();
  const Eigen::MatrixXd adj = adjoint(pb, p, pb.options()).cost_gradient;
  const GradientEstimate cs = complex_step(pb, p, pb.options());
  const double scale = fwd.cost_gradient.cwiseAbs().maxCoeff();
  EXPECT_LT((adj - fwd.cost_gradient).cwiseAbs().maxCoeff(), 1e-6 * scale);
  EXPECT_LT((cs.cost_gradient - fwd.cost_gradient).cwiseAbs().maxCoeff(), 1e-6 * scale);
}

TEST_P(JointStops, BlockFallsOntoItsTravelStop) {
  const Problem pb = problem_of(kRail, GetParam());
  const Solution s = forward_sensitivity(pb);
  ASSERT_GE(s.events.size(), 1u);
  const double L = 0.4, g = 9.81;
  const double t1 = std::sqrt(2.0 * L / g);
  const bool penalty = GetParam() == FormulationType::Penalty;
  EXPECT_NEAR(s.events[0].time, t1, penalty ? 1e-6 : 1e-9);
  EXPECT_NEAR(s.events[0].dtime_dp[pb.parameter_index("L")], 1.0 / std::sqrt(2.0 * L * g), penalty ? 1e-5 : 1e-7);
  EXPECT_NEAR(s.events[0].dtime_dp[pb.parameter_index("g")], -0.5 * t1 / g, penalty ? 1e-5 : 1e-7);
}

INSTANTIATE_TEST_SUITE_P(Formulations, JointStops,
                         ::testing::Values(FormulationType::Index1, FormulationType::Maggi, FormulationType::Penalty,
                                           FormulationType::GGL, FormulationType::StabilizedIndex1),
                         [](const auto& info) { return multibody::to_string(info.param); });

TEST(JointStops, RestitutionReversesTheJointRate) {
  // Index-1 states (q, v): the rod's angular velocity is v[2], the block's vertical one v[1].
  const Problem pendulum = problem_of(kPendulum, FormulationType::Index1);
  const Solution a = simulate(pendulum);
  const EventRecord& hit = a.events.front();
  const double omega_minus = hit.state_before[5], omega_plus = hit.state_after[5];
  const double omega0 = std::sqrt(1.5 * 9.81 / 0.8);
  EXPECT_NEAR(omega_minus, -omega0 * std::sqrt(2.0 * (1.0 - std::cos(0.9))), 1e-8);
  EXPECT_NEAR(omega_plus, -0.5 * omega_minus, 1e-12 * std::abs(omega_minus));
  const Problem rail = problem_of(kRail, FormulationType::Index1);
  const Solution b = simulate(rail);
  const double v_minus = b.events.front().state_before[4], v_plus = b.events.front().state_after[4];
  EXPECT_NEAR(v_minus, -std::sqrt(2.0 * 9.81 * 0.4), 1e-8);
  EXPECT_NEAR(v_plus, -0.6 * v_minus, 1e-12 * std::abs(v_minus));
}

// A knee in natural coordinates: two bars hanging from O, the knee stop between them (the
// angle from the thigh's vector to the shank's) reverses its rate times e at the impact, by
// the test's own formula for the angle's rate from the event's states.
const char* kKnee = R"yaml(
name: knee
horizon: 1.2
tolerances: {rtol: 1.0e-11, atol: 1.0e-13}
formulation: index1
parameters: {e: 0.4, stop: -0.05}
ground: {O: [0, 0]}
points:
  k: {position: [0.5, 0]}
  f: {position: [0.5, -0.5]}
elements:
  - {type: bar, name: thigh, from: O, to: k, length: 0.5, mass: 1}
  - {type: bar, name: shank, from: k, to: f, length: 0.5, mass: 1}
contacts:
  - {name: knee_stop, stop: {bar_a: thigh, bar_b: shank, max: stop}, restitution: e}
costs:
  x_T: {terminal: [{signal: x, of: f}]}
)yaml";

TEST(JointStops, KneeStopBetweenBarsReversesTheRelativeRate) {
  const Problem pb = problem_of(kKnee, FormulationType::Index1);
  const Solution fwd = forward_sensitivity(pb);
  ASSERT_FALSE(fwd.events.empty());
  // State (q, v): k = q[0..1], f = q[2..3]; u = k - O, w = f - k; angle = atan2(u x w, u . w).
  const auto rate = [](const Eigen::VectorXd& x) {
    const double ux = x[0], uy = x[1], wx = x[2] - x[0], wy = x[3] - x[1];
    const double dux = x[4], duy = x[5], dwx = x[6] - x[4], dwy = x[7] - x[5];
    const double cross = ux * wy - uy * wx, dot = ux * wx + uy * wy;
    const double dcross = dux * wy + ux * dwy - duy * wx - uy * dwx, ddot = dux * wx + ux * dwx + duy * wy + uy * dwy;
    return (dot * dcross - cross * ddot) / (cross * cross + dot * dot);
  };
  const EventRecord& hit = fwd.events.front();
  const double before = rate(hit.state_before), after = rate(hit.state_after);
  std::printf("knee stop at t = %.6f: relative rate %.6f before, %.6f after\n", hit.time, before, after);
  EXPECT_GT(before, 0.1);  // the angle grows towards its upper limit
  EXPECT_NEAR(after, -0.4 * before, 1e-10 * before);
  const Eigen::VectorXd p = pb.nominal_parameters();
  const Eigen::MatrixXd adj = adjoint(pb, p, pb.options()).cost_gradient;
  const GradientEstimate cs = complex_step(pb, p, pb.options());
  const double scale = fwd.cost_gradient.cwiseAbs().maxCoeff();
  EXPECT_LT((adj - fwd.cost_gradient).cwiseAbs().maxCoeff(), 1e-6 * scale);
  EXPECT_LT((cs.cost_gradient - fwd.cost_gradient).cwiseAbs().maxCoeff(), 1e-6 * scale);
}

TEST(JointStops, BadStopsAreRefusedWithTheirField) {
  const auto refused = [](std::string text, const std::string& from, const std::string& to, const std::string& expect) {
    text.replace(text.find(from), from.size(), to);
    try {
      multibody::parse_model(text, "bad.yaml");
      ADD_FAILURE() << "accepted: " << to;
    } catch (const InputError& err) {
      EXPECT_NE(std::string(err.what()).find(expect), std::string::npos) << err.what();
      EXPECT_NE(std::string(err.what()).find("bad.yaml:"), std::string::npos) << err.what();
    }
  };
  refused(kPendulum, "min: 0}", "min: 0, max: 1}", "one limit, min or max");
  refused(kPendulum, "min: 0}", "}", "needs its limit");
  refused(kPendulum, "body_a: ground, body_b: rod,", "body_a: ground, body_b: rod, slider: x,", "limits one joint");
  refused(kPendulum, "restitution: e}", "restitution: e, law: partitioning}", "stop uses law: impulse");
  refused(kPendulum, "{name: vertical, stop:", "{name: vertical, point: rod, stop:", "not both");
  refused(kRail, "slider: rail", "slider: track", "unknown prismatic joint 'track'");
  refused(kPendulum, "body_b: rod,", "body_b: ground,", "must differ");
  // Starting beyond the stop.
  std::string beyond = kPendulum;
  beyond.replace(beyond.find("th0: 0.9"), 8, "th0: -0.2");
  try {
    multibody::make_problem(multibody::parse_model(beyond, "beyond.yaml"));
    ADD_FAILURE() << "a start beyond the stop was accepted";
  } catch (const InputError& err) {
    EXPECT_NE(std::string(err.what()).find("starts beyond its stop"), std::string::npos) << err.what();
  }
}
