// Coulomb friction on persistent contacts (docs/multibody.md, "Friction"): a block on an
// incline, pulled up the slope by a spring whose anchor moves at constant speed, is launched
// down the slope, slides, sticks where its slip velocity vanishes, and slips again when the
// spring's growing pull leaves the friction cone. Every phase is a harmonic oscillator about a
// moving equilibrium, so the stick and slip times and the final position have closed forms
// (computed here, independently of Saltus); their derivatives by central differences of the
// closed form. Forward, adjoint, complex step and central differences agree through the events.
#include <saltus/multibody/formulation.hpp>
#include <saltus/multibody/model_file.hpp>
#include <saltus/solvers/adjoint.hpp>
#include <saltus/solvers/named_outputs.hpp>
#include <saltus/solvers/simulate.hpp>
#include <saltus/verify/gradient.hpp>

#include <gtest/gtest.h>

#include "support/method_agreement.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <string>

namespace {

using namespace saltus;
using multibody::FormulationType;

const char* kStickSlip = R"yaml(
name: stick_slip
horizon: 1.0
parameters: {mu: 0.5, k: 20, V: 0.5, v0: -1, al: 0.2, g: 9.81}
gravity: [0, -g]
points:
  P: {position: [0, 0], velocity: ["v0*cos(al)", "v0*sin(al)"]}
  A: {position: ["cos(al)", "sin(al)"]}
elements:
  - {type: point_mass, point: P, mass: 1}
  - {type: coordinate_driver, coordinate: A.x, function: {offset: "cos(al)", rate: "V*cos(al)"}}
  - {type: coordinate_driver, coordinate: A.y, function: {offset: "sin(al)", rate: "V*sin(al)"}}
  - {type: spring, from: P, to: A, stiffness: k, rest_length: 1}
contacts:
  - {name: slope, point: P, line: {point: [0, 0], normal: ["-sin(al)", "cos(al)"]}, restitution: 0,
     persistent: true, friction: mu}
costs:
  x_T: {terminal: [{signal: x, of: P}]}
)yaml";

struct Motion {
  double t1, t2, x_final;  // stick, slip, P.x at tf
};

/// Along the slope, s from the origin (mass 1, spring from P to the anchor at d0 + V t, rest
/// length L0, N = g cos al, G = g sin al): s'' = k (d0 + V t - s - L0) - G + friction.
/// Sliding down (sigma = -1) the friction is +mu N: s = s_eq1 + u, u'' = -w^2 u,
/// s_eq1 = d0 + V t - L0 + (mu N - G) / k. It stops at t1, the first root of s' = V + u'.
/// Stuck, the spring's pull k D - G grows as D = d0 + V t - s1 - L0 until it reaches mu N at t2;
/// then it slides up, s = s_eq2 - (V / w) sin(w (t - t2)), s_eq2 = d0 + V t - L0 - (mu N + G) / k.
Motion closed_form(double mu, double k, double V, double v0, double al, double g, double tf = 1.0) {
  const double d0 = 1.0, L0 = 1.0;
  const double N = g * std::cos(al), G = g * std::sin(al), w = std::sqrt(k);
  const auto s_eq1 = [&](double t) { return d0 + V * t - L0 + (mu * N - G) / k; };
  const double u0 = -s_eq1(0.0), ud0 = v0 - V;
  // s'(t) = V - u0 w sin(w t) + ud0 cos(w t) = V + R sin(w t + phi).
  const double A = -u0 * w, B = ud0, R = std::hypot(A, B), phi = std::atan2(B, A);
  double t1 = std::numeric_limits<double>::infinity();
  for (const double base : {std::asin(-V / R), M_PI - std::asin(-V / R)}) {
    for (int turn = -2; turn <= 2; ++turn) {
      const double t = (base + 2.0 * M_PI * turn - phi) / w;
      if (t > 1e-12) t1 = std::min(t1, t);
    }
  }
  const double s1 = s_eq1(t1) + u0 * std::cos(w * t1) + ud0 / w * std::sin(w * t1);
  const double D1 = d0 + V * t1 - s1 - L0;
  const double t2 = t1 + ((mu * N + G) / k - D1) / V;
  const double s_final = d0 + V * tf - L0 - (mu * N + G) / k - V / w * std::sin(w * (tf - t2));
  return {t1, t2, s_final * std::cos(al)};
}

class Friction : public ::testing::TestWithParam<FormulationType> {
 protected:
  bool penalty() const { return GetParam() == FormulationType::Penalty; }
  Problem problem() const {
    multibody::Model model = multibody::parse_model(kStickSlip, "stick_slip.yaml");
    model.formulation.type = GetParam();
    Problem pb = multibody::make_problem(model);
    pb.options().rtol = 1e-11;
    pb.options().atol = 1e-13;
    return pb;
  }
};

TEST_P(Friction, BlockSlidesSticksAndSlipsAgainOnAnIncline) {
  const Problem pb = problem();
  const Solution fwd = forward_sensitivity(pb);
  ASSERT_EQ(fwd.events.size(), 2u);
  EXPECT_EQ(fwd.events[0].name, "slope stick");
  EXPECT_EQ(fwd.events[1].name, "slope slip");
  const double mu = 0.5, k = 20, V = 0.5, v0 = -1, al = 0.2, g = 9.81;
  const Motion m = closed_form(mu, k, V, v0, al, g);
  const double tol = penalty() ? 1e-6 : 1e-9;
  EXPECT_NEAR(fwd.events[0].time, m.t1, tol);
  EXPECT_NEAR(fwd.events[1].time, m.t2, tol);
  EXPECT_NEAR(fwd.costs[0], m.x_final, tol);
  // Event times and cost against central differences of the closed form.
  const double h = 1e-6;
  const auto derivative = [&](int which, int parameter) {
    double plus[6] = {mu, k, V, v0, al, g}, minus[6] = {mu, k, V, v0, al, g};
    plus[parameter] += h;
    minus[parameter] -= h;
    const Motion a = closed_form(plus[0], plus[1], plus[2], plus[3], plus[4], plus[5]);
    const Motion b = closed_form(minus[0], minus[1], minus[2], minus[3], minus[4], minus[5]);
    const double fa = which == 0 ? a.t1 : which == 1 ? a.t2 : a.x_final;
    const double fb = which == 0 ? b.t1 : which == 1 ? b.t2 : b.x_final;
    return (fa - fb) / (2.0 * h);
  };
  for (int j = 0; j < 6; ++j) {
    const std::string name = pb.parameter_names()[static_cast<size_t>(j)];
    EXPECT_NEAR(fwd.events[0].dtime_dp[j], derivative(0, j), 1e3 * tol) << name;
    EXPECT_NEAR(fwd.events[1].dtime_dp[j], derivative(1, j), 1e3 * tol) << name;
    EXPECT_NEAR(fwd.cost_gradient(0, j), derivative(2, j), 1e3 * tol) << name;
  }
  // The anchor A is a driven point without mass: in ggl the adjoint goes through the completion
  // (completed_adjoint.hpp), as in stabilized_index1 and index3.
  test_support::expect_methods_agree(pb, fwd, penalty() ? 5e-5 : 1e-6);
}

TEST_P(Friction, FrictionForceFollowsTheRegimes) {
  const Problem pb = problem();
  const Solution s = simulate(pb);
  const OutputTrajectory out = output_trajectory(pb, s, pb.nominal_parameters());
  const auto friction = test_support::output_column(out, "slope.friction");
  const auto normal = test_support::output_column(out, "slope.force");
  ASSERT_LT(friction, static_cast<long>(out.names.size()));
  const double N = 9.81 * std::cos(0.2), mu = 0.5;
  const double t1 = s.events[0].time, t2 = s.events[1].time;
  for (size_t i = 0; i < s.times.size(); ++i) {
    const auto row = static_cast<Eigen::Index>(i);
    const double t = s.times[i];
    EXPECT_NEAR(out.values(row, normal), N, penalty() ? 1e-4 : 1e-7) << t;
    const double f = out.values(row, friction);  // along (cos al, sin al), up the slope
    if (t < t1 - 1e-9) {
      EXPECT_NEAR(f, mu * N, penalty() ? 1e-4 : 1e-7) << t;  // sliding down: friction up the slope
    } else if (t > t1 + 1e-9 && t < t2 - 1e-9) {
      EXPECT_LT(std::abs(f), mu * N) << t;  // sticking: inside the cone
    } else if (t > t2 + 1e-9) {
      EXPECT_NEAR(f, -mu * N, penalty() ? 1e-4 : 1e-7) << t;  // sliding up
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Formulations, Friction,
                         ::testing::Values(FormulationType::Index1, FormulationType::Maggi, FormulationType::Penalty,
                                           FormulationType::GGL, FormulationType::StabilizedIndex1,
                                           FormulationType::Index3),
                         [](const auto& info) { return multibody::to_string(info.param); });

// A block dropped onto a belt driven at vb + A sin(w t) (a line carried by the belt body)
// catches up with it, sticks or slides back as the belt's acceleration asks (an outside reader's
// model; their event-located scipy reference: x_T = 2.8335, vx_T = 0.44667, which index1 and
// ggl give to 2e-7). In index3, whose velocities are out of the error test, the state's slip
// velocity at the stick event was 3.9e-9, judged moving: the block kept sliding the way it
// went, friction pushed it along the slip, and it overtook the belt at mu g (vx_T = 14.7).
TEST(Friction, AStickEventIsDecidedAtZeroSlipInIndex3) {
  const char* conveyor = R"yaml(
name: conveyor
horizon: 3
tolerances: {rtol: 1.0e-10, atol: 1.0e-12}
parameters: {mu: 0.5, vb: 1.0, A: 0.3, w: 5, m: 0.4, M: 3, g: 9.81}
gravity: [0, -g]
bodies:
  belt: {mass: M, inertia: 1, position: [0, -0.1], velocity: ["vb + A*w", 0]}
points:
  B: {position: [0, 0]}
elements:
  - {type: prismatic, name: rail, body_a: ground, body_b: belt, point_a: [0, -0.1], direction: [1, 0]}
  - {type: coordinate_driver, name: drive, coordinate: belt.x, function: {rate: vb, amplitude: A, frequency: w}}
  - {type: point_mass, point: B, mass: m}
contacts:
  - {name: grip, point: B, line: {body: belt, point: [0, 0.1], normal: [0, 1]}, restitution: 0, persistent: true, friction: mu}
costs:
  xT: {terminal: [{signal: x, of: B}]}
  vxT: {terminal: [{signal: vx, of: B}]}
)yaml";
  multibody::Model model = multibody::parse_model(conveyor, "conveyor.yaml");
  multibody::FormulationSettings settings;
  settings.type = FormulationType::Index3;
  const Problem pb = multibody::make_problem(model, settings);
  const Solution s = simulate(pb);
  EXPECT_NEAR(s.costs[0], 2.8335073431, 1e-6) << "x_T";
  EXPECT_NEAR(s.costs[1], 0.446667031, 1e-6) << "vx_T";
  // The first stick, at t = 0.27034, turns back to sliding the other way (the belt pulls away
  // faster than friction can follow); the second, at 0.64191, sticks until the slip at 0.77089.
  ASSERT_GE(s.events.size(), 3u);
  EXPECT_NEAR(s.events[1].time, 0.641911394, 1e-6);
  EXPECT_EQ(s.events[2].name, "grip slip");
  EXPECT_NEAR(s.events[2].time, 0.770890526, 1e-6);
}

TEST(Friction, RefusedWhereItCannotAct) {
  const auto refused = [](const std::string& from, const std::string& to, const std::string& expect) {
    std::string text = kStickSlip;
    text.replace(text.find(from), from.size(), to);
    try {
      multibody::make_problem(multibody::parse_model(text, "bad.yaml"));
      ADD_FAILURE() << "accepted: " << to;
    } catch (const InputError& e) {
      EXPECT_NE(std::string(e.what()).find(expect), std::string::npos) << e.what();
      EXPECT_NE(std::string(e.what()).find("bad.yaml:"), std::string::npos) << e.what();
    }
  };
  refused("persistent: true, friction: mu", "friction: mu", "friction acts on a persistent contact");
  refused("mu: 0.5,", "mu: -0.5,", "friction");
}

// A box sliding on two frictional corners decelerates at mu g and stops at t = v0 / (mu g):
// both corners would stick there, which leaves the static friction forces indeterminate (a
// singular KKT matrix). The run stops naming the contacts and the body, in every formulation,
// after sliding exactly as the closed form says (an outside reader's model).
TEST(Friction, TwoCornersOfOneBodyCannotStickAtOnce) {
  const std::string text = R"(name: box2stick
horizon: 1.5
tolerances: {rtol: 1.0e-10, atol: 1.0e-12}
parameters: {m: 2, w: 0.4, hh: 0.2, mu: 0.3, vx0: 2}
bodies:
  box: {mass: m, inertia: "m*(w^2+hh^2)/12", position: [0, "hh/2"], velocity: [vx0, 0]}
contacts:
  - {name: left, point: {body: box, at: ["-w/2", "-hh/2"]}, line: {point: [0, 0], normal: [0, 1]}, restitution: 0, persistent: true, friction: mu}
  - {name: right, point: {body: box, at: ["w/2", "-hh/2"]}, line: {point: [0, 0], normal: [0, 1]}, restitution: 0, persistent: true, friction: mu}
costs:
  xT: {terminal: [{signal: x, of: box}]}
)";
  // t = vx0 / (mu g) = 2 / (0.3 * 9.81) = 0.67957866...: the closed form the message's time must match.
  for (const FormulationType type : {FormulationType::Index1, FormulationType::Penalty, FormulationType::Maggi,
                                     FormulationType::GGL, FormulationType::StabilizedIndex1, FormulationType::Index3}) {
    multibody::Model model = multibody::parse_model(text, "box.yaml");
    model.formulation.type = type;
    const Problem pb = multibody::make_problem(model);
    try {
      simulate(pb);
      ADD_FAILURE() << multibody::to_string(type) << ": accepted";
    } catch (const ModelError& e) {
      const std::string msg = e.what();
      EXPECT_NE(msg.find("the frictional contacts 'left' and 'right' both stick on body 'box' at t = 0.67957866"),
                std::string::npos)
          << msg;
    }
  }
}

}  // namespace
