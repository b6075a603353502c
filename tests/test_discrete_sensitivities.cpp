// Discrete forward (tangent-linear) and adjoint sensitivities of the dopri5, sdirk and rosenbrock
// integrators: the derivatives of the numbers the integrator computed, exact to round-off.
//
// References that do not come from the code under test: the complex step of the whole discrete
// computation (the same frozen steps repeated in complex arithmetic, each event step ending on
// its guard at a complex event time: another code path, which differentiates nothing but the
// Rosenbrock steps' Jacobian products, whose HyperDual derivatives test_hyper_dual checks), and
// CVODES at tight tolerances, the continuous gradient that the discrete one must approach at the
// method's order as the steps shrink.
#include <saltus/equations/equation_file.hpp>
#include <saltus/examples/builtin.hpp>
#include <saltus/multibody/formulation.hpp>
#include <saltus/multibody/model_file.hpp>
#include <saltus/solvers/adjoint.hpp>
#include <saltus/solvers/simulate.hpp>
#include <saltus/verify/gradient.hpp>

#include <fmt/format.h>
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <tuple>

using namespace saltus;

namespace {

Options discrete_options(const Problem& pb, Integrator integrator = Integrator::Dopri5) {
  Options o = pb.options();
  o.integrator = integrator;
  return o;
}

Integrator integrator_named(const std::string& name) {
  return name == "sdirk" ? Integrator::Sdirk : name == "rosenbrock" ? Integrator::Rosenbrock : Integrator::Dopri5;
}

/// max |a - b| / max |b| per cost row, over the rows.
double relative_difference(const Eigen::MatrixXd& a, const Eigen::MatrixXd& b) {
  double worst = 0.0;
  for (Eigen::Index c = 0; c < b.rows(); ++c) {
    const double scale = std::max(b.row(c).cwiseAbs().maxCoeff(), 1e-300);
    worst = std::max(worst, (a.row(c) - b.row(c)).cwiseAbs().maxCoeff() / scale);
  }
  return worst;
}

Problem fivebar_floor() {
  const multibody::Model model = multibody::load_model(std::string(SALTUS_SOURCE_DIR) + "/examples/fivebar_floor.yaml");
  return multibody::make_problem(model, model.formulation);
}

/// examples/<file> in `formulation`.
Problem example_as(const std::string& file, multibody::FormulationType formulation) {
  const multibody::Model model = multibody::load_model(std::string(SALTUS_SOURCE_DIR) + "/examples/" + file);
  multibody::FormulationSettings settings = model.formulation;
  settings.type = formulation;
  return multibody::make_problem(model, settings);
}

/// discrete_options at rtol 1e-6, atol 1e-8.
Options loose_discrete_options(const Problem& pb, Integrator integrator) {
  Options o = discrete_options(pb, integrator);
  o.rtol = 1e-6;
  o.atol = 1e-8;
  return o;
}

Problem problem_named(const std::string& name) {
  return name == "fivebar_floor" ? fivebar_floor() : examples::make_example(name);
}

}  // namespace

class DiscreteExample : public ::testing::TestWithParam<std::tuple<std::string, std::string>> {};

TEST_P(DiscreteExample, AdjointEqualsTangentLinearAndComplexStepOfTheSteps) {
  const auto& [integrator, name] = GetParam();
  const Problem pb = problem_named(name);
  const Eigen::VectorXd p = pb.nominal_parameters();
  Options o = discrete_options(pb, integrator_named(integrator));
  if (o.integrator == Integrator::Sdirk && o.rtol < 1e-8) {
    o.rtol = 1e-8;  // the fourth-order method at the five-bar's 1e-10 takes 3472 steps, 17 s for the three runs
    o.atol = 1e-10;
  }
  if (o.integrator == Integrator::Rosenbrock && o.rtol < 1e-6) {
    o.rtol = 1e-6;  // third order: the five-bar at 1e-10 would take some 3e4 steps
    o.atol = 1e-8;
  }
  if (o.integrator == Integrator::Rosenbrock && name == "fivebar_floor") {
    set_horizon(o, 2.0);  // its first impact: the adjoint's n_x + n_p + 2 tangent steps per step
  }                       // make the whole horizon minutes long under the sanitizers
  const Solution fwd = forward_sensitivity(pb, p, o);
  const Solution adj = adjoint(pb, p, o);
  const GradientEstimate cs = complex_step(pb, p, o);
  ASSERT_FALSE(fwd.events.empty()) << "the example should cross events";
  EXPECT_EQ(fwd.stats.integrator, integrator);
  EXPECT_TRUE(fwd.stats.discrete);
  EXPECT_EQ(adj.stats.steps, fwd.stats.steps) << "the same steps";
  EXPECT_LT((adj.costs - fwd.costs).cwiseAbs().maxCoeff(), 1e-14 * (1.0 + fwd.costs.cwiseAbs().maxCoeff()));
  const double adjoint_vs_tlm = relative_difference(adj.cost_gradient, fwd.cost_gradient);
  const double tlm_vs_complex = relative_difference(fwd.cost_gradient, cs.cost_gradient);
  std::printf("%s %s: %ld steps, %zu events; |adjoint - TLM| %.2e, |TLM - complex step| %.2e\n", integrator.c_str(),
              name.c_str(), fwd.stats.steps, fwd.events.size(), adjoint_vs_tlm, tlm_vs_complex);
  EXPECT_LT(adjoint_vs_tlm, 1e-12);
  EXPECT_LT(tlm_vs_complex, 1e-10);
  EXPECT_LT(relative_difference(fwd.final_sensitivity, cs.final_sensitivity), 1e-9);
}

INSTANTIATE_TEST_SUITE_P(Builtin, DiscreteExample,
                         ::testing::Combine(::testing::Values("dopri5", "sdirk", "rosenbrock"),
                                            ::testing::Values("ball1d", "galan", "box2d", "time_events", "hiskens",
                                                              "hysteretic", "fivebar_floor")));

// Output sensitivities come from the tangent of the outputs' interpolant (the continuous extension
// for dopri5, cubic Hermite for sdirk): at a tight tolerance they are the continuous ones.
TEST(DiscreteOutputs, SensitivitiesAtOutputTimesApproachTheContinuousOnes) {
  const Problem pb = examples::make_example("ball1d");
  const Eigen::VectorXd p = pb.nominal_parameters();
  Options tight = pb.options();
  tight.rtol = 1e-12;
  tight.atol = 1e-14;
  const Solution reference = forward_sensitivity(pb, p, tight);
  for (const Integrator integrator : {Integrator::Dopri5, Integrator::Sdirk, Integrator::Rosenbrock}) {
    Options o = discrete_options(pb, integrator);
    o.rtol = integrator == Integrator::Rosenbrock ? 1e-9 : 1e-10;
    o.atol = 1e-12;
    const Solution fwd = forward_sensitivity(pb, p, o);
    ASSERT_EQ(fwd.times.size(), reference.times.size());
    double worst = 0.0;
    for (size_t k = 0; k < fwd.times.size(); ++k) {
      const double scale = 1.0 + reference.sensitivities[k].cwiseAbs().maxCoeff();
      worst = std::max(worst, (fwd.sensitivities[k] - reference.sensitivities[k]).cwiseAbs().maxCoeff() / scale);
    }
    std::printf("%s: largest output-sensitivity difference to the continuous one %.2e over %zu outputs\n",
                fwd.stats.integrator.c_str(), worst, fwd.times.size());
    EXPECT_LT(worst, 1e-6);
  }
}

// Robertson, stiff, at rtol 1e-4: the discrete adjoint of sdirk is the derivative of what it
// computed (its complex step agrees to round-off) and is near the published gradient; CVODES'
// continuous adjoint at the same tolerance differs from its own complex step by 0.5 % (the reason
// discrete adjoints exist: docs/discrete-sensitivities.md).
class DiscreteStiff : public ::testing::TestWithParam<std::string> {};

TEST_P(DiscreteStiff, RobertsonAdjointIsTheDerivativeOfItsSteps) {
  const Problem pb = examples::make_example("robertson");
  const Eigen::VectorXd p = pb.nominal_parameters();
  Options o = pb.options();
  o.rtol = 1e-4;
  o.atol = 1e-8;
  o.atol_per_state.clear();
  o.integrator = integrator_named(GetParam());
  const Solution adj = adjoint(pb, p, o);
  const Solution fwd = forward_sensitivity(pb, p, o);
  // Stiff: the step Jacobians (entries up to 3e7 h) multiply in opposite orders in the two.
  EXPECT_LT(relative_difference(adj.cost_gradient, fwd.cost_gradient), 1e-10);
  const GradientEstimate cs = complex_step(pb, p, o);
  const double discrete = relative_difference(adj.cost_gradient, cs.cost_gradient);
  o.integrator = Integrator::Cvodes;
  const Solution continuous = adjoint(pb, p, o);
  const GradientEstimate cvodes_cs = complex_step(pb, p, o);
  const double continuous_gap = relative_difference(continuous.cost_gradient, cvodes_cs.cost_gradient);
  std::printf("robertson rtol 1e-4: %s %ld steps, adjoint vs complex step %.2e; CVODES adjoint vs complex step %.2e\n",
              GetParam().c_str(), adj.stats.steps, discrete, continuous_gap);
  EXPECT_LT(discrete, 1e-10);
  EXPECT_GT(continuous_gap, 1e-3);
  // cvsRoberts_ASAi_dns: dG/dp = (7.6842e+05, -3.0691e+00, 5.1144e-04); the third-order
  // Rosenbrock method at rtol 1e-4 is 0.6 % from it, the fourth-order SDIRK 0.02 %.
  const double within = GetParam() == "rosenbrock" ? 1e-2 : 2e-4;
  EXPECT_NEAR(adj.cost_gradient(0, 0), 7.6842e+05, within * 7.6842e+05);
  EXPECT_NEAR(adj.cost_gradient(0, 1), -3.0691, within * 3.0691);
  EXPECT_NEAR(adj.cost_gradient(0, 2), 5.1144e-04, within * 5.1144e-04);
}

INSTANTIATE_TEST_SUITE_P(Implicit, DiscreteStiff, ::testing::Values("sdirk", "rosenbrock"));

TEST(DiscreteTableaus, SdirkSatisfiesItsOrderConditions) {
  // Checked through a linear test equation: x' = lambda x over one step gives the stability
  // function R(z) = 1 + z + z^2/2 + z^3/6 + z^4/24 + O(z^5) for order 4 (and R(-inf) = 0, L-stable).
  Problem pb("linear", "x' = -k x");
  pb.set_states({"x"});
  pb.add_parameter("k", 1.0);
  pb.set_initial_state([](const auto&, auto x0) { x0[0] = 1.0; });
  pb.add_mode("m", [](auto, const auto& x, const auto& p, auto xdot) { xdot[0] = -p[0] * x[0]; });
  pb.add_terminal_cost("x_T", [](const auto& x, const auto&) { return x[0]; });
  for (const double rtol : {1e-6, 1e-9}) {
    Options o = pb.options();
    o.integrator = Integrator::Sdirk;
    o.tf = 2.0;
    o.rtol = rtol;
    o.atol = rtol * 1e-2;
    const Solution s = simulate(pb, pb.nominal_parameters(), o);
    EXPECT_NEAR(s.costs[0], std::exp(-2.0), 50.0 * rtol) << rtol;
  }
  Options stiff = pb.options();
  stiff.integrator = Integrator::Sdirk;
  stiff.tf = 1.0;
  stiff.rtol = 1e-6;
  Problem fast = pb;
  fast.set_nominal("k", 1e8);
  const Solution s = adjoint(fast, fast.nominal_parameters(), stiff);
  EXPECT_LT(s.stats.steps, 200) << "L-stable: steps are not bound by stability";
  EXPECT_NEAR(s.costs[0], 0.0, 1e-10);
}

namespace {

struct ConvergencePoint {
  double steps, error;
};

/// The discrete adjoint gradient's distance to the continuous one (CVODES at rtol 1e-12) as
/// dopri5's tolerance tightens, printed with the observed order in the number of steps.
std::vector<ConvergencePoint> convergence(const std::string& name, const std::vector<double>& tolerances,
                                          Integrator integrator = Integrator::Dopri5) {
  const Problem pb = examples::make_example(name);
  const Eigen::VectorXd p = pb.nominal_parameters();
  Options tight = pb.options();
  tight.rtol = 1e-12;
  tight.atol = 1e-14;
  const Solution reference = forward_sensitivity(pb, p, tight);
  std::vector<ConvergencePoint> points;
  for (const double rtol : tolerances) {
    Options o = discrete_options(pb, integrator);
    o.rtol = rtol;
    o.atol = rtol * 1e-2;
    const Solution adj = adjoint(pb, p, o);
    points.push_back({static_cast<double>(adj.stats.steps), relative_difference(adj.cost_gradient, reference.cost_gradient)});
    const ConvergencePoint& now = points.back();
    if (points.size() == 1) {
      std::printf("%s rtol %.0e: %g steps, gradient error %.2e\n", name.c_str(), rtol, now.steps, now.error);
      continue;
    }
    const ConvergencePoint& before = points[points.size() - 2];
    std::printf("%s rtol %.0e: %g steps, gradient error %.2e, observed order %.2f\n", name.c_str(), rtol, now.steps,
                now.error, -std::log(now.error / before.error) / std::log(now.steps / before.steps));
  }
  return points;
}

double overall_order(const std::vector<ConvergencePoint>& points) {
  return -std::log(points.back().error / points.front().error) / std::log(points.back().steps / points.front().steps);
}

}  // namespace

TEST(DiscreteConvergence, GradientApproachesTheContinuousOneAtOrderFive) {
  // The discrete gradient is the derivative of a fifth-order approximation: its distance to the
  // continuous gradient falls like N^-5 in the number of steps N once the steps that restart
  // every segment no longer dominate N (the switched linear system of Hiskens and Pai).
  const std::vector<ConvergencePoint> points = convergence("hiskens", {1e-6, 1e-7, 1e-8, 1e-9, 1e-10});
  for (size_t i = 1; i < points.size(); ++i) EXPECT_LT(points[i].error, points[i - 1].error);
  const double order = overall_order(points);
  std::printf("hiskens: observed order %.2f over the range\n", order);
  EXPECT_GT(order, 4.5);
  EXPECT_LT(order, 6.5);
  EXPECT_LT(points.back().error, 1e-9);
}

TEST(DiscreteConvergence, SdirkGradientApproachesTheContinuousOneAtOrderFour) {
  const std::vector<ConvergencePoint> points =
      convergence("hiskens", {1e-5, 1e-6, 1e-7, 1e-8, 1e-9}, Integrator::Sdirk);
  for (size_t i = 1; i < points.size(); ++i) EXPECT_LT(points[i].error, points[i - 1].error);
  const double order = overall_order(points);
  std::printf("hiskens sdirk: observed order %.2f over the range\n", order);
  EXPECT_GT(order, 3.3);
  EXPECT_LT(order, 5.5);
}

TEST(DiscreteConvergence, RosenbrockGradientApproachesTheContinuousOneAtOrderThree) {
  const std::vector<ConvergencePoint> points =
      convergence("hiskens", {1e-5, 1e-6, 1e-7, 1e-8, 1e-9}, Integrator::Rosenbrock);
  for (size_t i = 1; i < points.size(); ++i) EXPECT_LT(points[i].error, points[i - 1].error);
  const double order = overall_order(points);
  std::printf("hiskens rosenbrock: observed order %.2f over the range\n", order);
  EXPECT_GT(order, 2.5);
  EXPECT_LT(order, 4.0);
}

TEST(DiscreteConvergence, BouncingBallGradientConvergesToTheContinuousOne) {
  // Few steps between three impacts: the restarts inflate the apparent order at loose
  // tolerances; the gradient still converges, by four orders of magnitude over the range.
  const std::vector<ConvergencePoint> points = convergence("ball1d", {1e-6, 1e-7, 1e-8, 1e-9, 1e-10});
  for (size_t i = 1; i < points.size(); ++i) EXPECT_LT(points[i].error, points[i - 1].error);
  EXPECT_LT(points.back().error, 1e-10);
  EXPECT_LT(points.back().error, 1e-3 * points.front().error);
}

namespace {

/// 3000 decoupled decaying states driven by a(t) with a kick on the first: a few hundred steps of
/// 24 kB states, several MiB for the discrete adjoint to store.
Problem wide_problem() {
  constexpr int n = 3000;
  Problem pb("wide", "decaying states with a kick");
  std::vector<std::string> names;
  for (int i = 0; i < n; ++i) names.push_back("x" + std::to_string(i));
  pb.set_states(names);
  pb.add_parameter("k", 1.0);
  pb.add_parameter("a", 0.5);
  pb.set_initial_state([](const auto& p, auto x0) {
    for (int i = 0; i < n; ++i) x0[i] = 1.0 + p[1] * (double(i) / n);
  });
  pb.add_mode("decay", [](auto t, const auto& x, const auto& p, auto xdot) {
    using std::sin;
    for (int i = 0; i < n; ++i) xdot[i] = -p[0] * (1.0 + double(i) / n) * x[i] + p[1] * sin(3.0 * t);
  });
  pb.add_event("kick", Direction::Falling, [](auto, const auto& x, const auto&) { return x[0] - 0.6; })
      .jump([](auto, const auto& x, const auto& p, auto x_plus) {
        x_plus = x;
        x_plus[0] = x[0] + p[1];
      });
  pb.add_cost("energy", [](auto, const auto& x, const auto&, const auto&) { return x[0] * x[0]; },
              [](const auto& x, const auto&) {
                auto sum = x[0] * 0.0;
                for (int i = 0; i < n; ++i) sum += x[i] * x[i];
                return sum / double(n);
              });
  pb.options().tf = 6.0;
  pb.options().n_outputs = 3;
  pb.options().integrator = Integrator::Dopri5;
  return pb;
}

}  // namespace

TEST(DiscreteAdjointMemory, BudgetRecomputesStepsWithTheSameGradient) {
  const Problem pb = wide_problem();
  const Eigen::VectorXd p = pb.nominal_parameters();
  const Solution full = adjoint(pb, p, pb.options());
  Options small = pb.options();
  small.adjoint_memory_budget = kMinAdjointMemoryBudget;
  const Solution bounded = adjoint(pb, p, small);
  std::printf("%ld steps, %zu events: %ld states stored (%.1f MiB) in all; within 1 MiB %ld stored, %ld steps "
              "recomputed, %.2f MiB at most\n",
              full.stats.steps, full.events.size(), full.adjoint.checkpoints,
              static_cast<double>(full.adjoint.peak_stored_bytes) / (1 << 20), bounded.adjoint.checkpoints,
              bounded.adjoint.recomputed_segments, static_cast<double>(bounded.adjoint.peak_stored_bytes) / (1 << 20));
  ASSERT_FALSE(full.events.empty());
  EXPECT_EQ(full.adjoint.recomputed_segments, 0);
  EXPECT_GT(full.adjoint.peak_stored_bytes, 2 * kMinAdjointMemoryBudget);
  EXPECT_GT(bounded.adjoint.recomputed_segments, 0);
  EXPECT_LE(bounded.adjoint.peak_stored_bytes, kMinAdjointMemoryBudget);
  // The recomputed steps repeat the stored ones bitwise.
  EXPECT_EQ(bounded.cost_gradient, full.cost_gradient);
  EXPECT_EQ(bounded.initial_state_gradient, full.initial_state_gradient);
  const Solution forward = forward_sensitivity(pb, p, pb.options());
  EXPECT_LT(relative_difference(full.cost_gradient, forward.cost_gradient), 1e-12);
}

// The ODE formulations of a mechanism run on the discrete integrators: the five-bar with its first
// floor impact (t_f = 2 s, rtol 1e-8). Index-1 and Maggi are exact to round-off; the penalty
// formulation's stiff mass matrix M + Phi_q^T alpha Phi_q limits every method's solves to about
// eps times its condition number, so its agreement is ~1e-9 (documented in
// docs/discrete-sensitivities.md, "Limits").
TEST(DiscreteMultibody, EveryOdeFormulationOfTheFiveBar) {
  const multibody::Model model = multibody::load_model(std::string(SALTUS_SOURCE_DIR) + "/examples/fivebar_floor.yaml");
  for (const auto type : {multibody::FormulationType::Index1, multibody::FormulationType::Maggi,
                          multibody::FormulationType::Penalty}) {
    multibody::FormulationSettings settings = model.formulation;
    settings.type = type;
    const Problem pb = multibody::make_problem(model, settings);
    const Eigen::VectorXd p = pb.nominal_parameters();
    for (const Integrator integrator : {Integrator::Dopri5, Integrator::Sdirk, Integrator::Rosenbrock}) {
      if (type == multibody::FormulationType::Penalty && integrator != Integrator::Dopri5) continue;
      // Maggi on rosenbrock is the five-bar of DiscreteExample (the file's formulation).
      if (type == multibody::FormulationType::Maggi && integrator == Integrator::Rosenbrock) continue;
      Options o = pb.options();
      o.integrator = integrator;
      set_horizon(o, 2.0);
      // Rosenbrock, of order 3, at 1e-6: at 1e-8 its 2938 steps take minutes under the sanitizers.
      o.rtol = integrator == Integrator::Rosenbrock ? 1e-6 : 1e-8;
      o.atol = o.rtol * 1e-2;
      const Solution fwd = forward_sensitivity(pb, p, o);
      const Solution adj = adjoint(pb, p, o);
      const GradientEstimate cs = complex_step(pb, p, o);
      ASSERT_EQ(fwd.events.size(), 1u);
      const double adjoint_vs_tlm = relative_difference(adj.cost_gradient, fwd.cost_gradient);
      const double tlm_vs_complex = relative_difference(fwd.cost_gradient, cs.cost_gradient);
      std::printf("%s %s: %ld steps; |adjoint - TLM| %.2e, |TLM - complex step| %.2e\n",
                  multibody::to_string(type).c_str(), fwd.stats.integrator.c_str(), fwd.stats.steps, adjoint_vs_tlm,
                  tlm_vs_complex);
      const bool penalty = type == multibody::FormulationType::Penalty;
      EXPECT_LT(adjoint_vs_tlm, penalty ? 1e-7 : 1e-12);
      EXPECT_LT(tlm_vs_complex, penalty ? 1e-7 : 1e-10);
    }
  }
}

// A point mass on a massless bar swings the same whatever its mass: d y_T / d m is zero, and the
// complex step's stage Newton iterations see perturbations of round-off size only. They used to
// never converge against themselves ("the complex-step replay could not repeat the step at
// t = 0"); the implicit integrators must give a zero derivative, as the explicit one does.
TEST(DiscreteComplexStep, ParameterTheMotionDoesNotDependOnGivesZero) {
  const char* kPendulum = R"yaml(
name: point_pendulum
horizon: 0.5
parameters: {m: 2.0, L: 1.0}
ground: {O: [0, 0]}
points:
  p: {position: [L, 0]}
elements:
  - {type: bar, name: rod, from: O, to: p, length: L, mass: 0}
  - {type: point_mass, point: p, mass: m}
costs:
  yT: {terminal: [{signal: y, of: p}]}
)yaml";
  const Problem pb = multibody::make_problem(multibody::parse_model(kPendulum, "point_pendulum.yaml"));
  const Eigen::VectorXd p = pb.nominal_parameters();
  for (const Integrator integrator : {Integrator::Dopri5, Integrator::Sdirk, Integrator::Rosenbrock}) {
    Options o = discrete_options(pb, integrator);
    o.rtol = 1e-6;
    o.atol = 1e-8;
    const GradientEstimate cs = complex_step(pb, p, o);
    const Solution fwd = forward_sensitivity(pb, p, o);
    SCOPED_TRACE(fwd.stats.integrator);
    EXPECT_LT(std::abs(cs.cost_gradient(0, 0)), 1e-14);  // d y_T / d m
    // d y_T / d L is not zero: the complex step still follows it.
    EXPECT_GT(std::abs(fwd.cost_gradient(0, 1)), 0.1);
    EXPECT_NEAR(cs.cost_gradient(0, 1), fwd.cost_gradient(0, 1), 1e-10 * std::abs(fwd.cost_gradient(0, 1)));
  }
}

namespace {

/// x' = -k x, then -k x + r from t1 on (`start`), and a dose x + D at td; A = x(T).
Problem dosed_decay(double td, double horizon) {
  return equations::parse_equation_problem(
      fmt::format("name: dosed\nhorizon: {}\nparameters: {{k: 0.7, r: 2.0, t1: 1.0, td: {}, D: 1.5}}\n"
                  "states: {{x: 1}}\nmodes:\n  idle: {{rhs: [\"-k*x\"]}}\n  pumping: {{rhs: [\"-k*x + r\"]}}\n"
                  "events:\n  start: {{at: t1, only_in: idle, next: pumping}}\n  dose: {{at: td, jump: [\"x + D\"]}}\n"
                  "costs:\n  A: {{terminal: x}}\n",
                  horizon, td),
      "dosed.yaml");
}

/// A = r/k + (e^(-k t1) - r/k) e^(-k (T - t1)) + D e^(-k (T - td)) for td >= t1 (and, the two
/// orders giving the same state, at td = t1 from both sides): dA/d(k, r, t1, td, D).
Eigen::RowVectorXd dosed_gradient(double td, double horizon) {
  const double k = 0.7, r = 2.0, t1 = 1.0, D = 1.5, T = horizon;
  const double a = std::exp(-k * t1), b = std::exp(-k * (T - t1)), c = std::exp(-k * (T - td));
  Eigen::RowVectorXd g(5);
  g << -r / (k * k) + r / (k * k) * b - t1 * a * b - (a - r / k) * (T - t1) * b - D * (T - td) * c,  // k
      (1.0 - b) / k,                                                                                  // r
      -r * b,                                                                                         // t1
      k * D * c,                                                                                      // td
      c;                                                                                              // D
  return g;
}

}  // namespace

// Two events at one instant with times of their own (a dose due when the pump starts), and an
// event at t_f: the discrete runs took the time derivative of the event that ended the step for
// both (d A/d td = 0, the dose moved with t1), and at t_f held the final time to the event's
// (d A/d td = -0.0035 where the left derivative is k D). Each now shifts by its own time, as a
// continuous run's transfer; forward, adjoint and complex step against the closed form.
TEST(DiscreteEvents, EventsAtOneInstantAndAtTheEndKeepTheirOwnTimes) {
  for (const auto& [td, horizon] : {std::pair{1.0, 3.0}, std::pair{3.0, 3.0}}) {
    const Problem pb = dosed_decay(td, horizon);
    const Eigen::RowVectorXd exact = dosed_gradient(td, horizon);
    for (const Integrator integrator : {Integrator::Dopri5, Integrator::Sdirk, Integrator::Rosenbrock}) {
      Options o = discrete_options(pb, integrator);
      o.rtol = 1e-10;
      o.atol = 1e-12;
      const Eigen::VectorXd p = pb.nominal_parameters();
      const Solution fwd = forward_sensitivity(pb, p, o);
      const Solution adj = adjoint(pb, p, o);
      const GradientEstimate cs = complex_step(pb, p, o);
      // The output at t_f is the state at the fixed t_f, as the final state (an event on an
      // output time: the state after it, the event at or before that time).
      EXPECT_LT((fwd.sensitivities.back() - fwd.final_sensitivity).cwiseAbs().maxCoeff(), 1e-15);
      for (int j = 0; j < 5; ++j) {
        const double tolerance = 1e-6 * std::abs(exact[j]);
        EXPECT_NEAR(fwd.cost_gradient(0, j), exact[j], tolerance) << fwd.stats.integrator << " td " << td << " " << j;
        EXPECT_NEAR(adj.cost_gradient(0, j), fwd.cost_gradient(0, j), 1e-12 * std::abs(exact[j])) << j;
        EXPECT_NEAR(cs.cost_gradient(0, j), fwd.cost_gradient(0, j), 1e-10 * std::abs(exact[j])) << j;
      }
    }
  }
}

// A time event's jump that sets x exactly onto another event's guard, moving into its crossing:
// a continuous run fires that event at the same instant (docs/events.md); the discrete runs
// started the guard on its far side and never fired it. The kick x + u lands on th, x rises at
// k y = 2 and `cross` switches z' on: Z = T - ts - (th - x0 - u) / k on the landing side, so
// d Z/d(ts, th, u, k) = (-1, -1/k, 1/k, 0), the landed event's own time in every method.
TEST(DiscreteEvents, AJumpOntoAnotherGuardFiresItAtOnce) {
  const Problem pb = equations::parse_equation_problem(
      "name: land\nhorizon: 2\nparameters: {ts: 0.5, th: 0.8, u: 0.3, k: 2.0}\nstates: {x: 0.5, y: 0, z: 0}\n"
      "modes:\n  a: {rhs: [\"k*y\", \"0\", \"0\"]}\n  b: {rhs: [\"k*y\", \"0\", \"1\"]}\n"
      "events:\n  kick: {at: ts, jump: [\"x + u\", \"1\", z]}\n"
      "  cross: {guard: x - th, direction: rising, next: b, only_in: a}\n"
      "costs:\n  Z: {terminal: z}\n",
      "land.yaml");
  const double exact[] = {-1.0, -0.5, 0.5, 0.0};
  for (const Integrator integrator : {Integrator::Cvodes, Integrator::Dopri5, Integrator::Sdirk, Integrator::Rosenbrock}) {
    const Options o = discrete_options(pb, integrator);
    const Eigen::VectorXd p = pb.nominal_parameters();
    const Solution fwd = forward_sensitivity(pb, p, o);
    ASSERT_EQ(fwd.events.size(), 2u) << fwd.stats.integrator;
    EXPECT_EQ(fwd.events[1].name, "cross");
    EXPECT_NEAR(fwd.costs[0], 1.5, 1e-9) << fwd.stats.integrator;
    const Solution adj = adjoint(pb, p, o);
    const GradientEstimate cs = complex_step(pb, p, o);
    for (int j = 0; j < 4; ++j) {
      EXPECT_NEAR(fwd.cost_gradient(0, j), exact[j], 1e-9) << fwd.stats.integrator << " " << j;
      EXPECT_NEAR(adj.cost_gradient(0, j), exact[j], 1e-9) << fwd.stats.integrator << " " << j;
      EXPECT_NEAR(cs.cost_gradient(0, j), exact[j], 1e-9) << fwd.stats.integrator << " " << j;
    }
  }
}

// A state event written before a time event due at its instant: the time event cut the step, and
// the state event, applied first, took the step end's time derivative (d z_T/d(k, Te, c) = (6.8,
// 3.4, 0)). The event that cut the step is the one without a shift, whatever the order. z_T = 3 c
// + D k Te in either order of the two.
TEST(DiscreteEvents, TheEventThatCutTheStepIsNotTheFirstWritten) {
  const std::string st = "  st: {guard: x - c, direction: rising, jump: [x, \"z + 3*x\"]}\n";
  const std::string dose = "  dose: {at: Te, jump: [x, \"z + D*x\"]}\n";
  const double exact[] = {0.8, 0.4, 2.0, 3.0};
  for (const std::string& events : {st + dose, dose + st}) {
    const Problem pb = equations::parse_equation_problem(
        "name: tie\nhorizon: 4\nparameters: {k: 1, Te: 2, D: 0.4, c: 2}\nstates: {x: 0, z: 0}\n"
        "modes:\n  m: {rhs: [k, 0]}\nevents:\n" + events + "costs:\n  zT: {terminal: z}\n",
        "tie.yaml");
    for (const Integrator integrator : {Integrator::Dopri5, Integrator::Sdirk, Integrator::Rosenbrock}) {
      const Options o = discrete_options(pb, integrator);
      const Eigen::VectorXd p = pb.nominal_parameters();
      const Solution fwd = forward_sensitivity(pb, p, o);
      const Solution adj = adjoint(pb, p, o);
      const GradientEstimate cs = complex_step(pb, p, o);
      ASSERT_EQ(fwd.events.size(), 2u);
      for (int j = 0; j < 4; ++j) {
        EXPECT_NEAR(fwd.cost_gradient(0, j), exact[j], 1e-9) << fwd.stats.integrator << " " << j << "\n" << events;
        EXPECT_NEAR(adj.cost_gradient(0, j), exact[j], 1e-9) << fwd.stats.integrator << " " << j << "\n" << events;
        EXPECT_NEAR(cs.cost_gradient(0, j), exact[j], 1e-9) << fwd.stats.integrator << " " << j << "\n" << events;
      }
    }
  }
}

// A trial stage outside the model's domain is a rejected step, as a stage that is not finite:
// chain8 in maggi on dopri5 at rtol 1e-6 failed at t = 0.864 ("cannot be assembled": the
// position analysis of a trial stage did not converge) where CVODES and sdirk run.
TEST(DiscreteMultibody, AStageOutsideTheModelsDomainShrinksTheStep) {
  const Problem pb = example_as("chain8.yaml", multibody::FormulationType::Maggi);
  const Options o = loose_discrete_options(pb, Integrator::Dopri5);
  const Solution sim = simulate(pb, pb.nominal_parameters(), o);
  // y_T from the chain's angles integrated by scipy's DOP853 at rtol 1e-12; at rtol 1e-6 the
  // motion after the impact is resolved to about 1e-4 (CVODES: 8e-3).
  EXPECT_NEAR(sim.costs[0], 0.0270497583, 1e-3 * 0.0270497583);
}

// sdirk's last step 1e-12 s long, after ball1d's impact: its implicit stage's slope (Y - z) /
// (h gamma) lost its digits, and the forward gradient (whose tangents take K = f(Y)) was 1.5e-5
// from the complex step of the same steps. A tiny stage's slope is f(Y) now.
TEST(DiscreteEvents, ATinyLastStepAfterAnEvent) {
  const Problem pb = examples::make_example("ball1d");
  Options o = discrete_options(pb, Integrator::Sdirk);
  set_horizon(o, 0.461951645628261);
  const Eigen::VectorXd p = pb.nominal_parameters();
  const Solution fwd = forward_sensitivity(pb, p, o);
  ASSERT_EQ(fwd.events.size(), 1u);
  ASSERT_LT(o.tf - fwd.events[0].time, 1e-11);
  const GradientEstimate cs = complex_step(pb, p, o);
  EXPECT_LT(relative_difference(fwd.cost_gradient, cs.cost_gradient), 1e-7);
}

// sdirk's complex step on the ladder in penalty failed at t = 0 ("could not repeat the step"):
// the stage Newton's perturbation part stalled with its real part at round-off, 3.5e-34 against
// a perturbation of 1.6e-29, and was judged against the perturbation alone. Now it runs and
// agrees with the forward gradient to the penalty formulation's conditioning.
TEST(DiscreteMultibody, TheComplexStepOfAStiffPenaltyStage) {
  const Problem pb = example_as("ladder.yaml", multibody::FormulationType::Penalty);
  const Options o = loose_discrete_options(pb, Integrator::Sdirk);
  const Eigen::VectorXd p = pb.nominal_parameters();
  const GradientEstimate cs = complex_step(pb, p, o);
  const Solution fwd = forward_sensitivity(pb, p, o);
  EXPECT_LT(relative_difference(cs.cost_gradient, fwd.cost_gradient), 1e-5);
}
