// A mechanism's named outputs (points, reactions, spring forces, gaps, energies) against closed
// forms and physical laws, in every formulation, and their sensitivities against central
// differences of whole runs.
#include <saltus/multibody/formulation.hpp>
#include <saltus/multibody/model_file.hpp>
#include <saltus/solvers/named_outputs.hpp>
#include <saltus/solvers/simulate.hpp>

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <string>

namespace {

using namespace saltus;
using namespace saltus::multibody;

int column(const OutputTrajectory& y, const std::string& name) {
  const auto it = std::find(y.names.begin(), y.names.end(), name);
  EXPECT_NE(it, y.names.end()) << name;
  return static_cast<int>(it - y.names.begin());
}

Problem fivebar_floor() {
  return make_problem(load_model(std::string(SALTUS_SOURCE_DIR) + "/examples/fivebar_floor.yaml"));
}

// A point mass m on a massless bar of length L, released at rest from the horizontal: the
// closed forms of a simple pendulum. With phi the angle below the horizontal, the speed is
// v^2 = 2 g L sin(phi) and the bar's tension T = 3 m g sin(phi); the bar row |P - O|^2 - L^2
// has the multiplier mu = T / (2 L) (its force -2 (P - O) mu pulls the mass towards O).
const char* kPendulum = R"yaml(
name: pendulum
horizon: 1.5
outputs: 31
tolerances: {rtol: 1.0e-11, atol: 1.0e-12}
parameters: {L: 0.8, m: 1.7, g: 9.81}
gravity: [0, -g]
ground: {O: [0, 0]}
points:
  p: {position: [L, 0]}
elements:
  - {type: bar, name: rod, from: O, to: p, length: L}
  - {type: point_mass, name: bob, point: p, mass: m}
costs:
  height: {terminal: [{signal: y, of: p}]}
  sway: {running: [{signal: x, of: p, power: 2}], terminal: [{signal: vx, of: p}]}
)yaml";

class PendulumOutputs : public ::testing::TestWithParam<FormulationType> {};

TEST_P(PendulumOutputs, MatchTheClosedForms) {
  FormulationSettings settings;
  settings.type = GetParam();
  const Model model = parse_model(kPendulum, "pendulum.yaml");
  const Problem pb = make_problem(model, settings);
  const Eigen::VectorXd p = pb.nominal_parameters();
  const Solution s = simulate(pb, p, pb.options());
  const OutputTrajectory y = output_trajectory(pb, s, p);
  const double L = 0.8, m = 1.7, g = 9.81;
  const int x = column(y, "p.x"), h = column(y, "p.y"), vx = column(y, "p.x_dot"), vy = column(y, "p.y_dot");
  const int mu = column(y, "rod.reaction[0]"), phi = column(y, "rod.phi[0]");
  const int kinetic = column(y, "kinetic_energy"), potential = column(y, "potential_energy"),
            total = column(y, "total_energy");
  EXPECT_EQ(y.units[static_cast<size_t>(mu)], "N/m");
  EXPECT_EQ(y.units[static_cast<size_t>(total)], "J");
  double largest_mu = 0.0;
  for (Eigen::Index i = 0; i < y.values.rows(); ++i) {
    const double sin_phi = -y.values(i, h) / L;
    const double speed2 = std::pow(y.values(i, vx), 2) + std::pow(y.values(i, vy), 2);
    EXPECT_NEAR(std::hypot(y.values(i, x), y.values(i, h)), L, 1e-8);
    EXPECT_NEAR(speed2, 2 * g * L * sin_phi, 2e-7 * 2 * g * L);
    EXPECT_NEAR(y.values(i, mu), 3 * m * g * sin_phi / (2 * L), 1e-5) << "t = " << s.times[static_cast<size_t>(i)];
    EXPECT_NEAR(y.values(i, phi), 0.0, 1e-7);
    EXPECT_NEAR(y.values(i, kinetic), 0.5 * m * speed2, 1e-9);
    EXPECT_NEAR(y.values(i, potential), m * g * y.values(i, h), 1e-9);
    EXPECT_NEAR(y.values(i, total), 0.0, 2e-7 * m * g * L);
    largest_mu = std::max(largest_mu, y.values(i, mu));
  }
  EXPECT_GT(largest_mu, 3 * m * g / (2 * L) * 0.9);  // the swing passes near the bottom
}

INSTANTIATE_TEST_SUITE_P(Formulations, PendulumOutputs,
                         ::testing::Values(FormulationType::Index1, FormulationType::Maggi, FormulationType::GGL,
                                           FormulationType::StabilizedIndex1),
                         [](const auto& info) { return std::string(to_string(info.param)); });

// Every conservative element at once (a body on a pin with a rotational spring and a constant
// torque, a spring with an actuator force, a constant force, a point mass on a bar from the
// body, a massive bar swinging from the ground, and a rotational spring with a torque between
// the two bars):
// without dampers, drivers or impacts the total energy is constant, so every potential term
// must be the one whose gradient is the element's generalized force.
const char* kConservative = R"yaml(
name: conservative
horizon: 3
outputs: 61
tolerances: {rtol: 1.0e-11, atol: 1.0e-12}
parameters: {k: 20}
ground: {O: [0, 0], C: [0.9, 0.6], D: [-2, 0]}
points:
  p: {position: [1.3, -0.7]}
  r: {position: [-1.2, -0.6], velocity: [0.3, -0.4]}
bodies:
  b: {mass: 2, inertia: 0.4, position: [0.5, 0], angle: 0, angular_velocity: 1.5}
elements:
  - {type: revolute, name: pin, a: {body: b, at: [-0.5, 0]}, b: O}
  - {type: rotational_spring, name: twist, body_a: ground, body_b: b, stiffness: 3, rest_angle: 0.2, torque: 0.4}
  - {type: spring, name: s, from: C, to: {body: b, at: [0.5, 0]}, stiffness: k, rest_length: 0.3, actuator_force: 1.5}
  - {type: force, name: push, point: {body: b, at: [0.5, 0]}, force: [0.7, -0.3]}
  - {type: bar, name: rod, from: {body: b, at: [0.5, 0]}, to: p, length: "sqrt(0.3^2 + 0.7^2)"}
  - {type: bar, name: swing, from: D, to: r, length: 1, mass: 0.6}
  - {type: rotational_spring, name: knee, bar_a: rod, bar_b: swing, stiffness: 0.8, rest_angle: 0.5, torque: -0.2}
  - {type: point_mass, name: bob, point: p, mass: 0.3}
costs:
  angle: {terminal: [{signal: theta, of: b}]}
)yaml";

TEST(NamedOutputs, TotalEnergyIsConservedWithEveryConservativeElement) {
  const Model model = parse_model(kConservative, "conservative.yaml");
  const Problem pb = make_problem(model);
  const Eigen::VectorXd p = pb.nominal_parameters();
  const Solution s = simulate(pb, p, pb.options());
  const OutputTrajectory y = output_trajectory(pb, s, p);
  const int total = column(y, "total_energy"), kinetic = column(y, "kinetic_energy");
  const double e0 = y.values(0, total);
  double swing = 0.0;
  for (Eigen::Index i = 0; i < y.values.rows(); ++i) {
    EXPECT_NEAR(y.values(i, total), e0, 1e-6) << "t = " << s.times[static_cast<size_t>(i)];
    swing = std::max(swing, std::abs(y.values(i, kinetic) - y.values(0, kinetic)));
  }
  EXPECT_GT(swing, 0.1);  // energy moves between the terms
  // Rotational spring angle and torque, spring force as the closed forms of their definitions.
  const int angle = column(y, "twist.angle"), torque = column(y, "twist.torque"), theta = column(y, "b.theta");
  const int len = column(y, "s.length"), force = column(y, "s.force");
  for (Eigen::Index i = 0; i < y.values.rows(); ++i) {
    EXPECT_DOUBLE_EQ(y.values(i, angle), y.values(i, theta));
    EXPECT_NEAR(y.values(i, torque), 3 * (y.values(i, theta) - 0.2) + 0.4, 1e-12);
    EXPECT_NEAR(y.values(i, force), 20 * (y.values(i, len) - 0.3) + 1.5, 1e-12);
  }
}

// dy/dp = h_x S + h_p against central differences of whole runs of the five-bar with floor
// impacts, at output times before and after impacts.
TEST(NamedOutputs, SensitivitiesMatchCentralDifferencesThroughImpacts) {
  const Problem pb = fivebar_floor();
  Options options = pb.options();
  options.tf = 2.0;
  options.n_outputs = 9;
  options.rtol = 1e-12;  // differences of runs: the runs' own error over the step must stay small
  options.atol = 1e-13;
  const Eigen::VectorXd p = pb.nominal_parameters();
  const Solution s = forward_sensitivity(pb, p, options);
  ASSERT_GE(s.events.size(), 1u);
  EXPECT_TRUE(output_trajectory(pb, s, p).sensitivities.empty());  // asked for only
  EXPECT_THROW(output_trajectory(pb, simulate(pb, p, options), p, OutputSensitivities::Compute), InputError);
  const OutputTrajectory y = output_trajectory(pb, s, p, OutputSensitivities::Compute);
  ASSERT_EQ(y.sensitivities.size(), s.times.size());
  // An output that is a state (the independent p2.y-dot of this Maggi model) has its row of S
  // (to round-off: the velocities are rebuilt from the independent ones).
  for (size_t i = 0; i < s.times.size(); ++i) {
    const Eigen::RowVectorXd dy = y.sensitivities[i].row(column(y, "p2.y_dot"));
    EXPECT_TRUE(dy.isApprox(s.sensitivities[i].row(pb.state_index("p2.y_dot")), 1e-12)) << dy;
  }
  for (Eigen::Index k = 0; k < p.size(); ++k) {
    const double h = 2e-5 * std::max(1.0, std::abs(p[k]));
    Eigen::VectorXd plus = p, minus = p;
    plus[k] += h;
    minus[k] -= h;
    const OutputTrajectory yp = output_trajectory(pb, simulate(pb, plus, options), plus);
    const OutputTrajectory ym = output_trajectory(pb, simulate(pb, minus, options), minus);
    for (const char* name : {"p1.x", "p2.y_dot", "bar_12.reaction[0]", "spring1.force", "floor.gap", "total_energy"}) {
      const int j = column(y, name);
      for (Eigen::Index i = 1; i < y.values.rows(); ++i) {
        const double fd = (yp.values(i, j) - ym.values(i, j)) / (2 * h);
        const double exact = y.sensitivities[static_cast<size_t>(i)](j, k);
        EXPECT_NEAR(exact, fd, 1e-5 * std::max(1.0, std::abs(fd)))
            << name << " d/d" << pb.parameter_names()[static_cast<size_t>(k)] << " at t = " << s.times[static_cast<size_t>(i)];
      }
    }
  }
}

TEST(NamedOutputs, ProblemsWithoutOutputsGiveNone) {
  Problem pb("decay");
  pb.set_states({"x"});
  pb.add_parameter("k", 1.0);
  pb.set_initial_state([](const auto&, auto x0) { x0[0] = 1.0; });
  pb.add_mode("only", [](auto, const auto& x, const auto& p, auto xdot) { xdot[0] = -p[0] * x[0]; });
  pb.add_terminal_cost("x_T", [](const auto& x, const auto&) { return x[0]; });
  const Solution s = simulate(pb, pb.nominal_parameters(), pb.options());
  EXPECT_TRUE(output_trajectory(pb, s, pb.nominal_parameters()).empty());
  EXPECT_THROW(pb.set_outputs({"a", "a"}, {"", ""}, [](auto, const auto&, const auto&, auto y) { y.setZero(); }),
               InputError);
  EXPECT_THROW(pb.set_outputs({"a"}, {}, [](auto, const auto&, const auto&, auto y) { y.setZero(); }), InputError);
}

}  // namespace

// psi(t) as if the horizon ended at t, against the costs of runs that do end there: on CVODES
// (quadratures, events with jumps, costs with event terms) and on IDAS (integrals as states).
void expect_cost_history_matches_shorter_runs(const Problem& pb, Options options) {
  const Eigen::VectorXd p = pb.nominal_parameters();
  const Solution s = simulate(pb, p, options);
  ASSERT_EQ(s.cost_history.rows(), static_cast<Eigen::Index>(s.times.size()));
  EXPECT_TRUE(s.cost_history.bottomRows(1).transpose().isApprox(s.costs, 1e-14));
  const double t0 = options.t0;
  for (size_t i = 1; i + 1 < s.times.size(); i += std::max<size_t>(1, s.times.size() / 5)) {
    options.tf = s.times[i];
    options.n_outputs = 2;
    const Solution shorter = simulate(pb, p, options);
    for (int c = 0; c < pb.n_costs(); ++c) {
      EXPECT_NEAR(s.cost_history(static_cast<Eigen::Index>(i), c), shorter.costs[c],
                  1e-6 * std::max(1.0, std::abs(shorter.costs[c])))
          << pb.name() << " " << pb.cost(c).name << " at t = " << s.times[i] << " (t0 = " << t0 << ")";
    }
  }
}

TEST(CostHistory, EqualsTheCostsOfShorterRunsOnCvodes) {
  const Problem pb = fivebar_floor();
  Options options = pb.options();
  options.tf = 3.0;
  options.n_outputs = 13;
  expect_cost_history_matches_shorter_runs(pb, options);
}

// A cost with terms at every impact: the bouncing ball's, on both integrators.
Problem ball_with_impact_costs() {
  Problem pb("ball");
  pb.set_states({"h", "v"});
  pb.add_parameter("e", 0.8);
  pb.set_initial_state([](const auto&, auto x0) {
    x0[0] = 1.0;
    x0[1] = 0.0;
  });
  pb.add_mode("fall", [](auto, const auto& x, const auto&, auto xdot) {
    xdot[0] = x[1];
    xdot[1] = -9.81 - 0.1 * x[1];
  });
  const int floor = pb.add_event("floor", Direction::Falling, [](auto, const auto& x, const auto&) { return x[0]; })
                        .jump([](auto, const auto& x, const auto& p, auto x_plus) {
                          x_plus[0] = x[0];
                          x_plus[1] = -p[0] * x[1];
                        })
                        .index();
  pb.add_running_cost("height", [](auto, const auto& x, const auto&, const auto&) { return x[0]; });
  pb.add_event_cost("height", floor, [](auto, const auto& x, const auto&) { return x[1] * x[1]; });
  pb.add_terminal_cost("final_speed", [](const auto& x, const auto&) { return x[1]; });
  pb.options().tf = 2.5;
  pb.options().n_outputs = 11;
  pb.options().rtol = 1e-10;
  pb.options().atol = 1e-12;
  return pb;
}

TEST(CostHistory, CountsEventTermsOnBothIntegrators) {
  const Problem pb = ball_with_impact_costs();
  Options options = pb.options();
  expect_cost_history_matches_shorter_runs(pb, options);
  options.integrator = Integrator::Idas;
  expect_cost_history_matches_shorter_runs(pb, options);
}

TEST(CostHistory, EqualsTheCostsOfShorterRunsOnIdas) {
  const Model model = parse_model(kPendulum, "pendulum.yaml");
  FormulationSettings settings;
  settings.type = FormulationType::GGL;
  const Problem pb = make_problem(model, settings);
  expect_cost_history_matches_shorter_runs(pb, pb.options());
}
