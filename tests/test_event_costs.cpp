// Point costs at events (Problem::add_event_cost, theory/hybrid-ode.md section 5.3): their values
// and their gradients by forward sensitivities, the adjoint, the complex step and central
// differences, against the closed form of a drag-free bouncing ball; the equation-file spelling
// (costs: {name: {events: {impact: ...}}}) against the C++ one.
//
// Closed form (g, e, h0; T = 2, three impacts): t1 = sqrt(2 h0 / g), v1 = g t1, impact k at
// t_k = t1 + sum_{i=1}^{k-1} 2 e^i v1 / g with speed e^(k-1) v1 before it; after the third the
// ball rises with e^3 v1, so h(T) = e^3 v1 s - g s^2 / 2 with s = T - t3. Its derivatives come
// from central differences of these formulas (step 1e-6, error ~1e-10).
#include <saltus/equations/equation_file.hpp>
#include <saltus/solvers/adjoint.hpp>
#include <saltus/solvers/simulate.hpp>
#include <saltus/verify/gradient.hpp>

#include <gtest/gtest.h>

#include <array>
#include <cmath>
#include <functional>

namespace {

using saltus::Direction;
using saltus::Problem;

constexpr double kT = 2.0;

/// impact_energy = sum of v-^2, impact_times = sum of t_e, height_and_impacts = h(T) + sum v-^2.
std::array<double, 3> closed_form(double g, double e, double h0) {
  const double t1 = std::sqrt(2.0 * h0 / g), v1 = g * t1;
  double t = t1, speed = v1, energy = 0.0, times = 0.0;
  for (int k = 1; k <= 3; ++k) {
    energy += speed * speed;
    times += t;
    speed *= e;  // rebound speed, and the speed before the next impact
    if (k < 3) t += 2.0 * speed / g;
  }
  const double s = kT - t;
  const double height = speed * s - 0.5 * g * s * s;
  return {energy, times, height + energy};
}

/// d closed_form / d(g, e, h0), by central differences of the formulas.
Eigen::MatrixXd closed_form_gradient(double g, double e, double h0) {
  Eigen::MatrixXd grad(3, 3);
  const std::array<double, 3> p = {g, e, h0};
  for (int j = 0; j < 3; ++j) {
    const double h = 1e-6 * p[j];
    std::array<double, 3> up = p, down = p;
    up[j] += h;
    down[j] -= h;
    const auto a = closed_form(up[0], up[1], up[2]), b = closed_form(down[0], down[1], down[2]);
    for (int c = 0; c < 3; ++c) grad(c, j) = (a[c] - b[c]) / (2.0 * h);
  }
  return grad;
}

Problem ball_with_event_costs() {
  Problem pb("ball_event_costs");
  pb.set_states({"h", "v"});
  pb.add_parameter("g", 9.81);
  pb.add_parameter("e", 0.8);
  pb.add_parameter("h0", 1.0);
  pb.set_initial_state([](const auto& p, auto x0) {
    x0[0] = p[2];
    x0[1] = 0.0 * p[2];
  });
  pb.add_mode("flight", [](auto, const auto& x, const auto& p, auto xdot) {
    xdot[0] = x[1];
    xdot[1] = -p[0];
  });
  const int impact = pb.add_event("impact", Direction::Falling, [](auto, const auto& x, const auto&) { return x[0]; })
                         .jump([](auto, const auto& x, const auto& p, auto xp) {
                           xp[0] = x[0];
                           xp[1] = -p[1] * x[1];
                         })
                         .index();
  pb.add_event_cost("impact_energy", impact, [](auto, const auto& x, const auto&) { return x[1] * x[1]; });
  pb.add_event_cost("impact_times", impact, [](auto t, const auto&, const auto&) { return t; });
  pb.add_terminal_cost("height_and_impacts", [](const auto& x, const auto&) { return x[0]; });
  pb.add_event_cost("height_and_impacts", impact, [](auto, const auto& x, const auto&) { return x[1] * x[1]; });
  pb.options().tf = kT;
  pb.options().rtol = 1e-11;
  pb.options().atol = 1e-13;
  return pb;
}

void expect_gradient(const Eigen::MatrixXd& actual, const Eigen::MatrixXd& expected, double tolerance,
                     const char* method) {
  ASSERT_EQ(actual.rows(), expected.rows()) << method;
  for (Eigen::Index c = 0; c < expected.rows(); ++c) {
    for (Eigen::Index j = 0; j < expected.cols(); ++j) {
      EXPECT_NEAR(actual(c, j), expected(c, j), tolerance * std::max(1.0, std::abs(expected(c, j))))
          << method << ": cost " << c << ", parameter " << j;
    }
  }
}

TEST(EventCosts, ValuesMatchTheClosedForm) {
  const Problem pb = ball_with_event_costs();
  const saltus::Solution s = saltus::simulate(pb);
  ASSERT_EQ(s.events.size(), 3u);
  const auto expected = closed_form(9.81, 0.8, 1.0);
  for (int c = 0; c < 3; ++c) EXPECT_NEAR(s.costs[c], expected[static_cast<size_t>(c)], 1e-9) << c;
  EXPECT_EQ(pb.cost_names(), (std::vector<std::string>{"impact_energy", "impact_times", "height_and_impacts"}));
}

TEST(EventCosts, EveryMethodGivesTheClosedFormGradient) {
  const Problem pb = ball_with_event_costs();
  const Eigen::MatrixXd expected = closed_form_gradient(9.81, 0.8, 1.0);
  const Eigen::VectorXd p = pb.nominal_parameters();
  expect_gradient(saltus::forward_sensitivity(pb).cost_gradient, expected, 1e-7, "forward");
  expect_gradient(saltus::adjoint(pb).cost_gradient, expected, 1e-7, "adjoint");
  expect_gradient(saltus::complex_step(pb, p, pb.options()).cost_gradient, expected, 1e-7, "complex step");
  expect_gradient(saltus::central_differences(pb, p, pb.options(), 1e-5).cost_gradient, expected, 1e-5,
                  "central differences");
}

TEST(EventCosts, AnEquationFileSpellsThemUnderTheCost) {
  const Problem file = saltus::equations::parse_equation_problem(R"yaml(
name: ball_event_costs
horizon: 2
tolerances: {rtol: 1.0e-11, atol: 1.0e-13}
parameters: {g: 9.81, e: 0.8, h0: 1.0}
states: {h: h0, v: 0}
modes:
  flight: {rhs: [v, -g]}
events:
  impact: {guard: h, direction: falling, jump: [h, -e*v]}
costs:
  impact_energy: {events: {impact: v^2}}
  impact_times: {events: {impact: t}}
  height_and_impacts: {terminal: h, events: {impact: v*v}}
)yaml",
                                                                   "ball.yaml");
  const Problem code = ball_with_event_costs();
  const saltus::Solution a = saltus::adjoint(file), b = saltus::adjoint(code);
  for (int c = 0; c < 3; ++c) {
    EXPECT_NEAR(a.costs[c], b.costs[c], 1e-10 * std::abs(b.costs[c])) << c;
    for (int j = 0; j < 3; ++j) {
      EXPECT_NEAR(a.cost_gradient(c, j), b.cost_gradient(c, j), 1e-9 * std::max(1.0, std::abs(b.cost_gradient(c, j))));
    }
  }
}

TEST(EventCosts, AnUnknownEventIsNamedWithItsPlace) {
  try {
    (void)saltus::equations::parse_equation_problem(R"yaml(
horizon: 1
states: {h: 1, v: 0}
modes: {flight: {rhs: [v, -9.81]}}
events: {impact: {guard: h, direction: falling, jump: [h, -v]}}
costs: {c: {events: {bounce: v^2}}}
)yaml",
                                                    "bad.yaml");
    FAIL() << "no error";
  } catch (const saltus::InputError& e) {
    EXPECT_STREQ(e.what(), "bad.yaml:6:22: costs.c.events: unknown event 'bounce' (events: impact)");
  }
}

}  // namespace
