// Equation model files (saltus/equations/equation_file.hpp) against the built-in examples,
// which are independent C++ code: examples/equations/NAME.yaml must define the same problem as
// examples/builtin/NAME.cpp (names, settings, domains) and give the same costs, events and
// forward and adjoint gradients, to 1e-10 relative. The DAE files (algebraic states, residual
// modes; run on IDAS, forward sensitivities) against the built-in robertson_dae and closed forms,
// and hysteretic_dae against the built-in hysteretic (an ODE there) and theory/hybrid-dae.md
// section 7.
#include <saltus/equations/equation_file.hpp>
#include <saltus/examples/builtin.hpp>
#include <saltus/solvers/adjoint.hpp>
#include <saltus/solvers/simulate.hpp>
#include <saltus/verify/gradient.hpp>

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

namespace {

using namespace saltus;

const std::string kExamples = std::string(SALTUS_SOURCE_DIR) + "/examples/equations/";

Problem from_file(const std::string& name) { return equations::load_equation_problem(kExamples + name + ".yaml"); }

/// |a - b| <= 1e-10 relative to b, or to the largest entry of `reference` for entries near zero
/// (a gradient entry that vanishes in exact arithmetic is rounding noise in both).
void expect_close(const Eigen::MatrixXd& a, const Eigen::MatrixXd& reference, const std::string& what,
                  double tolerance = 1e-10) {
  ASSERT_EQ(a.rows(), reference.rows()) << what;
  ASSERT_EQ(a.cols(), reference.cols()) << what;
  const double scale = reference.cwiseAbs().maxCoeff();
  for (Eigen::Index i = 0; i < a.rows(); ++i) {
    for (Eigen::Index j = 0; j < a.cols(); ++j) {
      const double b = reference(i, j);
      EXPECT_NEAR(a(i, j), b, tolerance * std::max(std::abs(b), 1e-3 * scale)) << what << "(" << i << ", " << j << ")";
    }
  }
}

void expect_same_definition(const Problem& file, const Problem& builtin) {
  EXPECT_EQ(file.name(), builtin.name());
  EXPECT_EQ(file.description(), builtin.description());
  EXPECT_EQ(file.state_names(), builtin.state_names());
  EXPECT_EQ(file.parameter_names(), builtin.parameter_names());
  EXPECT_EQ(file.cost_names(), builtin.cost_names());
  ASSERT_EQ(file.n_parameters(), builtin.n_parameters());
  for (int k = 0; k < file.n_parameters(); ++k) {
    EXPECT_EQ(file.parameters()[size_t(k)].nominal, builtin.parameters()[size_t(k)].nominal);
    EXPECT_EQ(file.parameters()[size_t(k)].description, builtin.parameters()[size_t(k)].description);
  }
  ASSERT_EQ(file.n_modes(), builtin.n_modes());
  for (int m = 0; m < file.n_modes(); ++m) {
    EXPECT_EQ(file.mode(m).name, builtin.mode(m).name);
    EXPECT_EQ(file.mode(m).implicit(), builtin.mode(m).implicit()) << file.mode(m).name;
  }
  EXPECT_EQ(file.kind(), builtin.kind());
  for (int i = 0; i < file.n_states(); ++i) EXPECT_EQ(file.is_algebraic(i), builtin.is_algebraic(i)) << i;
  ASSERT_EQ(file.n_events(), builtin.n_events());
  for (int e = 0; e < file.n_events(); ++e) {
    const Event &a = file.event(e), &b = builtin.event(e);
    EXPECT_EQ(a.name, b.name);
    EXPECT_EQ(a.direction, b.direction) << a.name;
    EXPECT_EQ(static_cast<bool>(a.jump), static_cast<bool>(b.jump)) << a.name;
    EXPECT_EQ(a.target_mode, b.target_mode) << a.name;
    EXPECT_EQ(a.transitions, b.transitions) << a.name;
    EXPECT_EQ(a.active_modes, b.active_modes) << a.name;
    EXPECT_EQ(a.rest_event, b.rest_event) << a.name;
    EXPECT_EQ(a.watched, b.watched) << a.name;
    EXPECT_EQ(a.may_start_on_guard, b.may_start_on_guard) << a.name;
  }
  const Options &o = file.options(), &r = builtin.options();
  EXPECT_EQ(o.t0, r.t0);
  EXPECT_EQ(o.tf, r.tf);
  EXPECT_EQ(o.n_outputs, r.n_outputs);
  EXPECT_EQ(o.output_times, r.output_times);
  EXPECT_EQ(o.rtol, r.rtol);
  EXPECT_EQ(o.atol, r.atol);
  EXPECT_EQ(o.atol_per_state, r.atol_per_state);
  EXPECT_EQ(o.cost_atol, r.cost_atol);
  EXPECT_EQ(o.method, r.method);
}

/// `tight_adjoint`: run both adjoints with tight backward tolerances. The hysteretic oscillator's
/// adjoint at its default tolerances is accurate to 8e-7 (against its forward gradient), and two
/// codes whose derivatives differ in the last digit (the expression trees and the C++ code) take
/// backward steps that differ: the gradients are 2.2e-8 apart at the defaults, 2e-11 at
/// adjoint_rtol 1e-12 (measured). The comparison is of the problems, so it is made where the
/// integration error is below 1e-10.
void expect_same_results(const Problem& file, const Problem& builtin, bool tight_adjoint = false) {
  const Solution fa = forward_sensitivity(file), fb = forward_sensitivity(builtin);
  ASSERT_EQ(fa.events.size(), fb.events.size());
  for (size_t i = 0; i < fa.events.size(); ++i) {
    EXPECT_EQ(fa.events[i].name, fb.events[i].name) << i;
    EXPECT_EQ(fa.events[i].rest, fb.events[i].rest) << i;
    EXPECT_NEAR(fa.events[i].time, fb.events[i].time, 1e-10 * std::max(1.0, std::abs(fb.events[i].time))) << i;
  }
  EXPECT_EQ(fa.modes, fb.modes);
  expect_close(fa.costs, fb.costs, "costs");
  expect_close(fa.final_state, fb.final_state, "final state");
  expect_close(fa.states, fb.states, "states at the output times");
  expect_close(fa.cost_gradient, fb.cost_gradient, "forward gradient");
  expect_close(fa.final_sensitivity, fb.final_sensitivity, "S(tf)");
  Options backward = builtin.options();
  if (tight_adjoint) {
    backward.rtol = 1e-12;  // the recorded forward trajectories too
    backward.atol = 1e-14;
    backward.adjoint_rtol = 1e-13;
    backward.adjoint_atol = 1e-16;
    backward.adjoint_quadrature_atol = 1e-18;
  }
  const Solution aa = adjoint(file, file.nominal_parameters(), backward);
  const Solution ab = adjoint(builtin, builtin.nominal_parameters(), backward);
  expect_close(aa.costs, ab.costs, "adjoint run costs");
  expect_close(aa.cost_gradient, ab.cost_gradient, "adjoint gradient");
  // The memory states' entries (dG/du*, dG/dz* at t0) gather every reversal's transposed reset:
  // 1.1e-10 apart even at these tolerances (measured).
  expect_close(aa.initial_state_gradient, ab.initial_state_gradient, "dpsi/dx0", tight_adjoint ? 1e-9 : 1e-10);
}

class EquationModel : public testing::TestWithParam<std::string> {};

TEST_P(EquationModel, DefinesTheBuiltInProblem) {
  expect_same_definition(from_file(GetParam()), examples::make_example(GetParam()));
}

TEST_P(EquationModel, ReproducesTheBuiltInCostsAndGradients) {
  expect_same_results(from_file(GetParam()), examples::make_example(GetParam()), GetParam() == "hysteretic");
}

INSTANTIATE_TEST_SUITE_P(Examples, EquationModel, testing::Values("ball1d", "galan", "hiskens", "time_events", "hysteretic"));

// Without drag and with e = 0.7 the bounces accumulate before t = 3 (test_ball1d): both take the
// resting transition (rests_in) at the same firing and agree afterwards.
TEST(EquationModel, BallComesToRestAsTheBuiltInDoes) {
  Problem a = from_file("ball1d"), b = examples::ball1d();
  for (Problem* pb : {&a, &b}) {
    pb->set_nominal("c", 0.0);
    pb->set_nominal("e", 0.7);
    set_horizon(pb->options(), 3.0);
  }
  const Solution s = simulate(a);
  ASSERT_FALSE(s.events.empty());
  EXPECT_TRUE(s.events.back().rest);
  EXPECT_EQ(a.mode(s.final_mode).name, "rest");
  expect_same_results(a, b);
}

// Every check differentiates the expression trees: the complex step (complex event times) and
// the central differences of the file are the built-in's.
TEST(EquationModel, ComplexStepAndDifferencesAgreeWithTheBuiltIn) {
  for (const std::string name : {"ball1d", "galan", "hiskens"}) {
    const Problem file = from_file(name), builtin = examples::make_example(name);
    const Eigen::VectorXd p = builtin.nominal_parameters();
    const GradientEstimate cs = complex_step(file, p, file.options());
    expect_close(cs.cost_gradient, complex_step(builtin, p, builtin.options()).cost_gradient, name + " complex step");
    // Differences divide the two trajectories' last-digit differences by the step (cbrt(rtol)).
    const Eigen::MatrixXd cd = central_differences(file, p, file.options()).cost_gradient;
    const Eigen::MatrixXd reference = central_differences(builtin, p, builtin.options()).cost_gradient;
    EXPECT_LT((cd - reference).cwiseAbs().maxCoeff(), 1e-6 * reference.cwiseAbs().maxCoeff()) << name;
  }
}

TEST(EquationModel, DomainsAreTheBuiltIns) {
  for (Problem pb : {from_file("ball1d"), examples::ball1d()}) {
    EXPECT_THROW(pb.set_nominal("e", 1.5), InputError);
    EXPECT_THROW(pb.set_nominal("c", -0.1), InputError);
    EXPECT_NO_THROW(pb.set_nominal("e", 1.0));
    EXPECT_NO_THROW(pb.set_nominal("g", -3.0));  // unbounded
  }
}

TEST(EquationModel, InitialModeRuleAtOverriddenParameters) {
  // p = -1: r(0) = 1 > 0 starts galan in mode B, as the built-in's rule does.
  Problem a = from_file("galan"), b = examples::galan();
  a.set_nominal("p", -1.0);
  b.set_nominal("p", -1.0);
  const Solution sa = forward_sensitivity(a), sb = forward_sensitivity(b);
  EXPECT_EQ(sa.modes.front(), 1);
  EXPECT_EQ(sa.modes, sb.modes);
  expect_close(sa.costs, sb.costs, "costs");
  EXPECT_NEAR(sa.costs[0], 25.0 - 2.5 * (1.0 - std::exp(-10.0)), 1e-8);  // closed form (test_galan)
}

TEST(EquationModel, DetectsEquationFiles) {
  EXPECT_TRUE(equations::is_equation_file(kExamples + "ball1d.yaml"));
  EXPECT_FALSE(equations::is_equation_file(std::string(SALTUS_SOURCE_DIR) + "/examples/fivebar.yaml"));
  try {
    (void)equations::is_equation_file(kExamples + "no_such_file.yaml");
    FAIL() << "no error";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("no_such_file.yaml"), std::string::npos) << e.what();
  }
}

TEST(EquationModel, TextAndOptionalKeys) {
  // Defaults: t0 = 0, Options' outputs and tolerances, BDF; adams and [t0, tf] when given.
  const Problem pb = equations::parse_equation_problem(R"(
states: {x: 1}
modes: {decay: {rhs: [-x]}}
costs: {x_T: {terminal: x}}
horizon: 1
)", "decay.yaml");
  EXPECT_EQ(pb.name(), "model");
  EXPECT_EQ(pb.options().t0, 0.0);
  EXPECT_EQ(pb.options().n_outputs, Options().n_outputs);
  EXPECT_EQ(pb.options().rtol, Options().rtol);
  EXPECT_EQ(pb.options().method, LinearMultistep::BDF);
  EXPECT_NEAR(simulate(pb).costs[0], std::exp(-1.0), 1e-7);  // rtol 1e-8

  const Problem adams = equations::parse_equation_problem(R"(
name: decay
parameters: {k: 2}
states: {x: 1}
modes: {decay: {rhs: [-k*x]}}
costs:
  both: {running: "x + 0*der(x) + t", terminal: x*t}
horizon: [1, 2]
outputs: 11
method: adams
tolerances: {rtol: 1e-9, atol: 1e-11}
)", "adams.yaml");
  EXPECT_EQ(adams.options().method, LinearMultistep::Adams);
  EXPECT_EQ(adams.options().t0, 1.0);
  EXPECT_EQ(adams.options().n_outputs, 11);
  // x = exp(-2 (t - 1)): int_1^2 (x + t) dt + 2 x(2) = (1 - e^-2)/2 + 1.5 + 2 e^-2.
  const Solution s = adjoint(adams);
  const double e2 = std::exp(-2.0);
  EXPECT_NEAR(s.costs[0], (1 - e2) / 2 + 1.5 + 2 * e2, 1e-7);
  // d/dk: int_1^2 -(t-1) e^{-k(t-1)} dt + 2 * -(1) e^{-k} = -(1 - 3 e^-2)/4 - 2 e^-2.
  EXPECT_NEAR(s.cost_gradient(0, 0), -(1 - 3 * e2) / 4 - 2 * e2, 1e-7);
}

// ---- DAE files: `algebraic` and residual modes ----------------------------------------------

TEST(EquationModelDae, RobertsonDefinesTheBuiltInProblem) {
  const Problem file = from_file("robertson_dae"), builtin = examples::robertson_dae();
  expect_same_definition(file, builtin);
  EXPECT_EQ(file.kind(), ProblemKind::Residual);
  EXPECT_EQ(file.n_algebraic(), 1);
  EXPECT_TRUE(file.is_algebraic(2));
  EXPECT_TRUE(runs_on_idas(file, file.options()));
}

// The same Options on both (they are equal, checked above): the comparison is of the problems.
TEST(EquationModelDae, RobertsonReproducesTheBuiltIn) {
  const Problem file = from_file("robertson_dae"), builtin = examples::robertson_dae();
  const Options o = builtin.options();
  const Solution fa = forward_sensitivity(file, builtin.nominal_parameters(), o);
  const Solution fb = forward_sensitivity(builtin, builtin.nominal_parameters(), o);
  expect_close(fa.costs, fb.costs, "costs");
  expect_close(fa.cost_gradient, fb.cost_gradient, "forward gradient");
  expect_close(fa.final_state, fb.final_state, "final state");
  expect_close(fa.states, fb.states, "states at the output times");
  expect_close(fa.final_sensitivity, fb.final_sensitivity, "S(tf)");
  EXPECT_EQ(fa.events.size(), 0u);
  // docs/dae.md's table (robertson_dae, IDAS, forward).
  EXPECT_NEAR(fa.costs[0], 3.998252820846e+07, 1e-11 * 4e7);
  EXPECT_NEAR(fa.cost_gradient(0, 0), 7.683774e+05, 1e-6 * 7.683774e+05);
  EXPECT_NEAR(fa.cost_gradient(0, 1), -3.068921, 1e-6 * 3.068921);
  EXPECT_NEAR(fa.cost_gradient(0, 2), 5.114890e-04, 1e-6 * 5.114890e-04);
}

// The adjoint and the complex step on IDAS (docs/dae.md) through the file's residual
// expressions: the built-in's.
TEST(EquationModelDae, RobertsonAdjointAndComplexStepAreTheBuiltIns) {
  const Problem file = from_file("robertson_dae"), builtin = examples::robertson_dae();
  const Options o = builtin.options();
  const Solution aa = adjoint(file, builtin.nominal_parameters(), o);
  const Solution ab = adjoint(builtin, builtin.nominal_parameters(), o);
  expect_close(aa.costs, ab.costs, "adjoint run costs");
  expect_close(aa.cost_gradient, ab.cost_gradient, "adjoint gradient");
  expect_close(aa.initial_state_gradient, ab.initial_state_gradient, "dpsi/dx0");
  // The complex step on IDAS evaluates the residual expressions in complex arithmetic.
  const GradientEstimate ca = complex_step(file, builtin.nominal_parameters(), o);
  const GradientEstimate cb = complex_step(builtin, builtin.nominal_parameters(), o);
  expect_close(ca.cost_gradient, cb.cost_gradient, "complex step");
}

// galan with z = x^3 - 5x^2 + 7x algebraic and guards z - p: galan's closed form (test_dae's
// galan_dae in C++), through three switches whose guards read the algebraic state.
TEST(EquationModelDae, GalanDaeAgreesWithTheClosedForm) {
  const Problem pb = from_file("galan_dae");
  EXPECT_EQ(pb.kind(), ProblemKind::Residual);
  EXPECT_TRUE(pb.is_algebraic(1));
  const Solution s = forward_sensitivity(pb);
  ASSERT_EQ(s.events.size(), 3u);
  const double times[] = {0.219215922289804, 0.275812591473484, 1.266347841796072};
  const char* names[] = {"A_to_B", "B_to_A", "A_to_B"};
  for (int i = 0; i < 3; ++i) {
    EXPECT_EQ(s.events[size_t(i)].name, names[i]) << i;
    EXPECT_NEAR(s.events[size_t(i)].time, times[i], 1e-9) << i;
  }
  EXPECT_NEAR(s.costs[0], 20.0290746533596, 1e-8);
  EXPECT_NEAR(s.cost_gradient(0, 0), -2.31195310744389, 1e-7);
  EXPECT_NEAR(s.final_state[0], 4.99884240621728, 1e-9);
  EXPECT_NEAR(s.states(0, 1), 0.0, 1e-15);  // the guess z = 1 was made consistent
  // The explicit galan.yaml gives the same answers on CVODES.
  const Solution ode = forward_sensitivity(from_file("galan"));
  EXPECT_NEAR(s.costs[0], ode.costs[0], 1e-8);
  EXPECT_NEAR(s.cost_gradient(0, 0), ode.cost_gradient(0, 0), 1e-7);
  // Central differences through the file's residuals agree with the forward gradient.
  const GradientEstimate fd = central_differences(pb, pb.nominal_parameters(), pb.options());
  EXPECT_NEAR(fd.cost_gradient(0, 0), -2.31195310744389, 1e-4);
  const Solution a = adjoint(pb);
  EXPECT_NEAR(a.cost_gradient(0, 0), -2.31195310744389, 1e-8);
  const GradientEstimate cs = complex_step(pb, pb.nominal_parameters(), pb.options());
  EXPECT_NEAR(cs.cost_gradient(0, 0), -2.31195310744389, 1e-7);
}

TEST(EquationModelDae, GalanDaeInitialModeRule) {
  // p = -1: r(0) = 1 > 0 starts in B (sign_of reads x); G as for galan (test_galan).
  Problem pb = from_file("galan_dae");
  pb.set_nominal("p", -1.0);
  const Solution s = forward_sensitivity(pb);
  EXPECT_EQ(s.modes.front(), 1);
  EXPECT_NEAR(s.costs[0], 25.0 - 2.5 * (1.0 - std::exp(-10.0)), 1e-8);
}

// The hysteretic oscillator as a hybrid DAE (examples/equations/hysteretic_dae.yaml): the
// restoring force z is an algebraic state with the residual z - sigma(u, u*, z*; xi), the memory
// (u*, z*) differential states with zero rates, reset to (u, z) at each reversal. Its states
// (u, v, z, u*, z*) hold the built-in's (u, v, u*, z*) at these indices.
const int kHystereticOdeStates[] = {0, 1, 3, 4};

/// max |a - b| / |b| over the entries where b != 0 (the zeros are checked apart).
double max_relative_difference(const Eigen::MatrixXd& a, const Eigen::MatrixXd& b) {
  double d = 0.0;
  for (Eigen::Index i = 0; i < b.rows(); ++i) {
    for (Eigen::Index j = 0; j < b.cols(); ++j) {
      if (b(i, j) != 0.0) d = std::max(d, std::abs(a(i, j) - b(i, j)) / std::abs(b(i, j)));
    }
  }
  return d;
}

/// max |a - b| over a row relative to the largest |b| of that row (sensitivity rows whose
/// entries cross zero somewhere).
double max_row_scaled_difference(const Eigen::MatrixXd& a, const Eigen::MatrixXd& b) {
  double d = 0.0;
  for (Eigen::Index i = 0; i < b.rows(); ++i) {
    const double scale = b.row(i).cwiseAbs().maxCoeff();
    if (scale > 0.0) d = std::max(d, (a.row(i) - b.row(i)).cwiseAbs().maxCoeff() / scale);
  }
  return d;
}

/// theory/hybrid-dae.md section 7: G and dG/d(ka, kb, alpha, beta) (FSA, Algorithm 1 and the
/// augmented-state ASA agree on them); dG/dbeta = 0 exactly at beta = 0 (its terms are O(beta^3)).
/// At rtol 1e-10 the runs give G 2.6e-10 to 3.3e-10 above the reference (at rtol 1e-12: 1.3e-11)
/// and dG/dp to 4.4e-7 relative (alpha, in every method; ka 4e-8, kb 8e-9).
void expect_hysteretic_reference(double G, const Eigen::MatrixXd& gradient, const std::string& what) {
  EXPECT_NEAR(G, 0.0499397886, 1e-9) << what;
  const double reference[] = {-1.3366439e-5, 3.2667902e-3, -1.5302250e-6};
  for (int k = 0; k < 3; ++k) {
    EXPECT_NEAR(gradient(0, k), reference[k], 1e-4 * std::abs(reference[k])) << what << " " << k;
  }
  EXPECT_NEAR(gradient(0, 3), 0.0, 1e-12) << what;
}

TEST(EquationModelDae, HystereticDaeIsTheOscillatorWithAnAlgebraicForce) {
  const Problem file = from_file("hysteretic_dae"), builtin = examples::hysteretic();
  EXPECT_EQ(file.kind(), ProblemKind::Residual);
  EXPECT_EQ(file.state_names(), (std::vector<std::string>{"u", "v", "z", "u_star", "z_star"}));
  EXPECT_EQ(file.n_algebraic(), 1);
  for (int i = 0; i < file.n_states(); ++i) EXPECT_EQ(file.is_algebraic(i), i == 2) << i;
  EXPECT_TRUE(runs_on_idas(file, file.options()));
  EXPECT_EQ(file.parameter_names(), builtin.parameter_names());
  ASSERT_EQ(file.n_parameters(), builtin.n_parameters());
  for (int k = 0; k < file.n_parameters(); ++k) {
    EXPECT_EQ(file.parameters()[size_t(k)].nominal, builtin.parameters()[size_t(k)].nominal) << k;
    EXPECT_EQ(file.parameters()[size_t(k)].description, builtin.parameters()[size_t(k)].description) << k;
  }
  EXPECT_EQ(file.cost_names(), builtin.cost_names());
  ASSERT_EQ(file.n_modes(), builtin.n_modes());
  for (int m = 0; m < file.n_modes(); ++m) {
    EXPECT_EQ(file.mode(m).name, builtin.mode(m).name);
    EXPECT_TRUE(file.mode(m).implicit()) << file.mode(m).name;
  }
  ASSERT_EQ(file.n_events(), builtin.n_events());
  for (int e = 0; e < file.n_events(); ++e) {
    const Event &a = file.event(e), &b = builtin.event(e);
    EXPECT_EQ(a.name, b.name);
    EXPECT_EQ(a.direction, b.direction) << a.name;
    EXPECT_EQ(static_cast<bool>(a.jump), static_cast<bool>(b.jump)) << a.name;
    EXPECT_EQ(a.target_mode, b.target_mode) << a.name;
    EXPECT_EQ(a.transitions, b.transitions) << a.name;
    EXPECT_EQ(a.active_modes, b.active_modes) << a.name;
    EXPECT_EQ(a.may_start_on_guard, b.may_start_on_guard) << a.name;
  }
  const Options &o = file.options(), &r = builtin.options();
  EXPECT_EQ(o.t0, r.t0);
  EXPECT_EQ(o.tf, r.tf);
  EXPECT_EQ(o.rtol, r.rtol);
  EXPECT_EQ(o.atol, r.atol);
}

// The file on IDAS against the built-in (the ODE with z substituted) on CVODES, at the same
// Options: two integrators with their own steps, so they agree to their integration error.
// Measured at rtol 1e-10: G 1.3e-9 relative, dG/dp 2.9e-9 (ka), 3.0e-9 (kb), 4.4e-8 (alpha,
// the smallest entry), event times 1.3e-9, the memory z* 3.9e-9 relative, x(tf) 4.5e-9
// relative, tau = dt_e/dp and S(tf) 4.0e-7 and 5.2e-8 of their rows' largest entries. (The
// built-in on IDAS differs from itself on CVODES as much: G 8.9e-10, dG/dp 3.0e-7.) At rtol
// 1e-12 the two are 3.2e-12 apart in G and 2.1e-9 in dG/dp: the same problem.
TEST(EquationModelDae, HystereticDaeReproducesTheBuiltIn) {
  const Problem file = from_file("hysteretic_dae"), builtin = examples::hysteretic();
  const Options o = builtin.options();
  const Eigen::VectorXd p = builtin.nominal_parameters();
  const Solution fa = forward_sensitivity(file, p, o);
  const Solution fb = forward_sensitivity(builtin, p, o);
  EXPECT_EQ(fa.stats.integrator, "IDAS");
  EXPECT_EQ(fb.stats.integrator, "CVODES");
  ASSERT_EQ(fa.events.size(), 19u);
  ASSERT_EQ(fb.events.size(), 19u);
  for (size_t i = 0; i < 19; ++i) {
    const EventRecord &a = fa.events[i], &b = fb.events[i];
    EXPECT_EQ(a.name, b.name) << i;
    EXPECT_EQ(a.mode_after, b.mode_after) << i;
    EXPECT_NEAR(a.time, b.time, 1e-8) << i;
    // z is continuous (1.2e-14 measured), and the memory takes the algebraic state's value
    // before the reversal: the built-in's z* = sigma(u, u*, z*) there.
    EXPECT_NEAR(a.state_after[2], a.state_before[2], 1e-12) << i;
    EXPECT_EQ(a.state_after[4], a.state_before[2]) << i;
    EXPECT_EQ(a.state_after[3], a.state_before[0]) << i;
    EXPECT_NEAR(a.state_after[4], b.state_after[3], 2e-8 * std::abs(b.state_after[3])) << i;
    EXPECT_LT(max_row_scaled_difference(a.dtime_dp, b.dtime_dp), 2e-6) << i;
  }
  EXPECT_EQ(fa.modes, fb.modes);
  EXPECT_NEAR(fa.costs[0], fb.costs[0], 1e-8 * fb.costs[0]);
  // Each is off a run at rtol 1e-12 by up to 4.2e-7 (the built-in) and 1.9e-7 (the file on IDAS).
  EXPECT_LT(max_relative_difference(fa.cost_gradient, fb.cost_gradient), 6e-7);
  EXPECT_EQ(fa.cost_gradient(0, 3), 0.0);
  Eigen::VectorXd xa(4);
  Eigen::MatrixXd sa(4, 4);
  for (int i = 0; i < 4; ++i) {
    xa[i] = fa.final_state[kHystereticOdeStates[i]];
    sa.row(i) = fa.final_sensitivity.row(kHystereticOdeStates[i]);
  }
  EXPECT_LT(max_relative_difference(xa, fb.final_state), 3e-8);
  EXPECT_LT(max_row_scaled_difference(sa, fb.final_sensitivity), 3e-7);
  expect_hysteretic_reference(fa.costs[0], fa.cost_gradient, "file, forward");
  expect_hysteretic_reference(fb.costs[0], fb.cost_gradient, "built-in, forward");
  // theory section 7: u(10), v(10) (printed to 7 digits) and the first and last reversal times
  // (6e-11 and 2.3e-10 apart, measured).
  EXPECT_NEAR(fa.final_state[0], -3.805399e-2, 2e-8);
  EXPECT_NEAR(fa.final_state[1], -1.058072, 1e-6);
  EXPECT_NEAR(fa.events[0].time, 0.4215126674, 5e-9);
  EXPECT_NEAR(fa.events[18].time, 9.7128048062, 5e-9);

  Options tight = o;
  tight.rtol = 1e-12;
  tight.atol = 1e-14;
  const Solution ta = forward_sensitivity(file, p, tight), tb = forward_sensitivity(builtin, p, tight);
  EXPECT_NEAR(ta.costs[0], tb.costs[0], 1e-10 * tb.costs[0]);
  EXPECT_LT(max_relative_difference(ta.cost_gradient, tb.cost_gradient), 1e-8);
}

// The adjoint (IDAS; the residuals' F_xdot is the identity on u, v, u*, z* in both modes and G
// reads no rate, so it is not refused) and the complex step (complex residuals and event times)
// against the forward gradient. Measured: the adjoint 5.8e-8 (ka), 1.2e-8 (kb), 7.6e-7 (alpha)
// relative, as the built-in's adjoint (8e-7, its backward tolerances); the complex step 8.1e-8.
// The adjoint run's G is 2.7e-9 from the forward run's (no sensitivities in its step control).
TEST(EquationModelDae, HystereticDaeAdjointAndComplexStepAgreeWithForward) {
  const Problem pb = from_file("hysteretic_dae");
  const Solution f = forward_sensitivity(pb);
  const Solution a = adjoint(pb);
  const GradientEstimate cs = complex_step(pb, pb.nominal_parameters(), pb.options());
  EXPECT_NEAR(a.costs[0], f.costs[0], 1e-8 * f.costs[0]);
  expect_hysteretic_reference(a.costs[0], a.cost_gradient, "adjoint");
  expect_hysteretic_reference(cs.costs[0], cs.cost_gradient, "complex step");
  EXPECT_LT(max_relative_difference(a.cost_gradient, f.cost_gradient), 3e-6);
  EXPECT_LT(max_relative_difference(cs.cost_gradient, f.cost_gradient), 4e-7);
  EXPECT_EQ(a.cost_gradient(0, 3), 0.0);
  EXPECT_EQ(cs.cost_gradient(0, 3), 0.0);
  // dG/dx0: theory section 7's lambda(0+) for (u, v); none for z, whose start is only a guess.
  EXPECT_NEAR(a.initial_state_gradient(0, 0), -4.6826e-4, 1e-4 * 4.6826e-4);
  EXPECT_NEAR(a.initial_state_gradient(0, 1), 9.0622e-5, 1e-4 * 9.0622e-5);
  EXPECT_EQ(a.initial_state_gradient(0, 2), 0.0);
  // The built-in's adjoint (2.7e-7 apart, measured), also for the memory's (u*, z*).
  const Solution ab = adjoint(examples::hysteretic());
  Eigen::MatrixXd lambda0(1, 4);
  for (int i = 0; i < 4; ++i) lambda0(0, i) = a.initial_state_gradient(0, kHystereticOdeStates[i]);
  EXPECT_LT(max_relative_difference(lambda0, ab.initial_state_gradient), 2e-6);
}

// A damped pendulum's zero crossings (no resting variant) come ever closer as its swing decays,
// their intervals' ratios rising toward 1 (0.987 at t = 32): four of them agree within 1 % and
// extrapolate to a "limit" at t = 285, before the horizon (300). That is no accumulation: a limit
// further than zeno_tail stops a run only at ratios up to kFarZenoRatio = 0.9 (run_support.hpp).
TEST(EquationModel, SlowlyShrinkingIntervalsAreNoZenoLimit) {
  const Problem pb = equations::parse_equation_problem(R"yaml(
name: damped_pendulum
horizon: 300
tolerances: {rtol: 1.0e-8, atol: 1.0e-10}
parameters: {c: 0.05, th0: 2.5}
states: {x: th0, v: 0, n: 0}
modes:
  swing: {rhs: [v, "-sin(x) - c*v", 0]}
events:
  cross: {guard: x, direction: either, jump: [x, v, n + 1]}
costs:
  crossings: {terminal: n}
)yaml",
                                                       "damped_pendulum.yaml");
  const Solution s = simulate(pb);
  ASSERT_GT(s.events.size(), 90u);
  EXPECT_EQ(s.costs[0], static_cast<double>(s.events.size()));
  // The half-period tends to the damped linear pendulum's pi / sqrt(1 - c^2 / 4) as the swing
  // decays (to 1.4e-3 rad at t = 300: the nonlinear correction A^2 / 16 is 1e-7).
  const double last = s.events.back().time - s.events[s.events.size() - 2].time;
  EXPECT_NEAR(last, std::acos(-1.0) / std::sqrt(1.0 - 0.025 * 0.025), 1e-5);
}

// A pendulum as an index-1 DAE (its multiplier lam algebraic, from the acceleration-level
// constraint) striking a wall at x = -w, with an event cost and a running cost together. The
// adjoint failed with IDA_ERR_FAIL before the wall at every rtol from 1e-6 to 1e-11: lam's
// adjoint component, a difference of O(1) terms, was error-tested though its start comes from
// the recorded event point and its equation reads IDAS's interpolation (dae_adjoint.cpp,
// settings). Reference: the angle's ODE by scipy's DOP853 at rtol 1e-13 with event location,
// d/dL by central differences of step 1e-4 (an outside reader's, reproduced).
TEST(EquationModelDae, PendulumAgainstAWallHasAnAdjointThroughTheImpact) {
  const Problem pb = equations::parse_equation_problem(R"yaml(
name: pendulum_dae_wall
horizon: 1
tolerances: {rtol: 1.0e-10, atol: 1.0e-12}
parameters: {g: 9.81, L: 1, th0: 0.8, om0: 0.5, w: 0.5, e: 0.7}
states:
  x: "L*sin(th0)"
  y: "-L*cos(th0)"
  u: "L*om0*cos(th0)"
  v: "L*om0*sin(th0)"
  lam: 0
algebraic: lam
modes:
  swing:
    residual:
      - der(x) - u
      - der(y) - v
      - der(u) + lam*x
      - der(v) + lam*y + g
      - u^2 + v^2 - lam*(x^2 + y^2) - g*y
events:
  wall: {guard: x + w, direction: falling, jump: [x, y, "-e*u", "-e*v", lam]}
costs:
  hit: {events: {wall: u^2 + v^2}}
  xint: {running: x}
)yaml",
                                                       "pendulum_dae_wall.yaml");
  const int hit = pb.cost_index("hit"), xint = pb.cost_index("xint"), L = pb.parameter_index("L");
  const Solution f = forward_sensitivity(pb);
  const Solution a = adjoint(pb);
  for (const Solution* s : {&f, &a}) {
    EXPECT_NEAR(s->costs[hit], 3.5720327848593, 1e-8);
    EXPECT_NEAR(s->costs[xint], 0.1775216793989, 1e-8);
    EXPECT_NEAR(s->cost_gradient(hit, L), 9.485838976, 3e-7);
    EXPECT_NEAR(s->cost_gradient(xint, L), 0.6071166039, 3e-8);
  }
  EXPECT_LT(max_relative_difference(a.cost_gradient, f.cost_gradient), 1e-7);
}

// A jump's algebraic entries are first guesses, re-solved in the new mode: the ball of test_dae
// whose energy E = v^2/2 + g h is algebraic. Also a terminal cost of an algebraic state, an event
// cost, der() of a differential state in a running cost and a time event on a DAE.
TEST(EquationModelDae, JumpsAndCostsOfAnEnergyBall) {
  const Problem pb = equations::parse_equation_problem(R"yaml(
name: energy_ball
horizon: 3
tolerances: {rtol: 1e-10, atol: 1e-12}
parameters: {h0: 10, e: 0.8, g: 9.81}
states: {h: h0, v: 0, E: 0}
algebraic: E
modes:
  flight: {residual: ["der(h) - v", "der(v) + g", "E - (0.5*v^2 + g*h)"]}
events:
  impact: {guard: h, direction: falling, jump: [h, -e*v, 12345]}
costs:
  energy: {running: E}
  E_T: {terminal: E}
  drop: {running: der(h)}
  impact_energy: {events: {impact: E}}
)yaml", "energy_ball.yaml");
  const Solution s = forward_sensitivity(pb);
  const double h0 = 10.0, e = 0.8, g = 9.81, T = 3.0;
  const double t1 = std::sqrt(2.0 * h0 / g);
  ASSERT_EQ(s.events.size(), 1u);
  EXPECT_NEAR(s.events[0].time, t1, 1e-9);
  EXPECT_NEAR(s.events[0].state_after[2], e * e * g * h0, 1e-8);  // not the guess 12345
  EXPECT_NEAR(s.costs[0], g * h0 * t1 + e * e * g * h0 * (T - t1), 1e-7);
  EXPECT_NEAR(s.costs[1], e * e * g * h0, 1e-8);
  // The integral of der(h) is h(T) - h0 (h is continuous), h(T) = e g t1 (T - t1) - g (T - t1)^2 / 2.
  const double hT = e * g * t1 * (T - t1) - 0.5 * g * (T - t1) * (T - t1);
  EXPECT_NEAR(s.final_state[0], hT, 1e-8);
  EXPECT_NEAR(s.costs[2], hT - h0, 1e-8);
  EXPECT_NEAR(s.costs[3], g * h0, 1e-8);
  const double dt1_dh0 = t1 / (2.0 * h0);
  const double grad_h0 = g * t1 + g * h0 * dt1_dh0 + e * e * g * (T - t1) - e * e * g * h0 * dt1_dh0;
  EXPECT_NEAR(s.cost_gradient(0, 0), grad_h0, 1e-6);
  EXPECT_NEAR(s.cost_gradient(0, 1), 2.0 * e * g * h0 * (T - t1), 1e-6);
  EXPECT_NEAR(s.cost_gradient(1, 1), 2.0 * e * g * h0, 1e-7);
  EXPECT_NEAR(s.cost_gradient(3, 0), g, 1e-7);
  EXPECT_NEAR(s.cost_gradient(3, 2), h0, 1e-7);

  // x' = -k x with z = 2 x algebraic, a kick x+ = x- + 1 at t = 0.5 (the time event's z entry a
  // guess), a switch to mode `slow` (x' = -k x / 2) at the kick:
  // z(1) = 2 (e^{-k/2} + 1) e^{-k/4}.
  const Problem kick = equations::parse_equation_problem(R"yaml(
horizon: 1
tolerances: {rtol: 1e-10, atol: 1e-12}
parameters: {k: 2}
states: {x: 1, z: 0}
algebraic: [z]
modes:
  fast: {residual: ["der(x) + k*x", z - 2*x]}
  slow: {residual: ["der(x) + k*x/2", z - 2*x]}
events:
  kick: {at: 0.5, jump: [x + 1, 0], next: slow}
costs:
  z_T: {terminal: z}
  z_kick: {events: {kick: z}}
)yaml", "kick.yaml");
  const Solution k = forward_sensitivity(kick);
  ASSERT_EQ(k.events.size(), 1u);
  EXPECT_EQ(k.modes.front(), 0);
  EXPECT_EQ(k.final_mode, 1);
  const double kk = 2.0, a = std::exp(-kk / 2), b = std::exp(-kk / 4);
  EXPECT_NEAR(k.costs[0], 2 * (a + 1) * b, 1e-9);
  EXPECT_NEAR(k.cost_gradient(0, 0), 2 * (-0.5 * a * b - 0.25 * (a + 1) * b), 1e-8);
  EXPECT_NEAR(k.costs[1], 2 * a, 1e-9);
  EXPECT_NEAR(k.cost_gradient(1, 0), -a, 1e-8);
}

// A guard that reads a rate, der(y) - v, in a file of explicit modes: the model runs on IDAS.
// y relaxes towards c until its rate falls to v at t_e = ln(c / v) (y0 = 0), then towards d:
// G = integral of y over [0, 3] in closed form, its derivatives by complex step of that form.
TEST(EquationModelDae, AGuardReadsARate) {
  const Problem pb = equations::parse_equation_problem(R"yaml(
horizon: 3
tolerances: {rtol: 1e-10, atol: 1e-12}
parameters: {c: 2, d: 0.5, v: 0.7}
states: {y: 0}
modes:
  towards_c: {rhs: [c - y]}
  towards_d: {rhs: [d - y]}
events:
  slow: {guard: der(y) - v, direction: falling, only_in: towards_c, next: towards_d}
costs:
  G: {running: y}
)yaml", "rate_guard.yaml");
  EXPECT_EQ(pb.kind(), ProblemKind::Residual);
  const auto closed_form = [](Complex c, Complex d, Complex v) {
    const Complex t_e = std::log(c / v), y_e = c - v, T = 3.0;
    return c * t_e - c * (1.0 - std::exp(-t_e)) + d * (T - t_e) + (y_e - d) * (1.0 - std::exp(-(T - t_e)));
  };
  const Solution fwd = forward_sensitivity(pb);
  const Solution adj = adjoint(pb);
  ASSERT_EQ(fwd.events.size(), 1u);
  EXPECT_NEAR(fwd.events[0].time, std::log(2.0 / 0.7), 1e-8);
  EXPECT_NEAR(fwd.costs[0], closed_form(2.0, 0.5, 0.7).real(), 1e-8);
  for (int j = 0; j < 3; ++j) {
    Complex q[3] = {2.0, 0.5, 0.7};
    q[j] += Complex(0.0, 1e-30);
    const double g = closed_form(q[0], q[1], q[2]).imag() / 1e-30;
    EXPECT_NEAR(fwd.cost_gradient(0, j), g, 1e-7 * std::max(1.0, std::abs(g))) << j;
    EXPECT_NEAR(adj.cost_gradient(0, j), g, 1e-7 * std::max(1.0, std::abs(g))) << j;
  }
}

namespace {

// The turns below with v(0) = 1: x = sin(w t) / w turns at x = +-1/w, so amp = 3 / w^2 and
// A_T = 1 / w, d amp / dw = -6 and d A_T / dw = -1 at w = 1, in every run type (the adjoint's
// recording and the complex step read the guards as the forward run does).
void expect_turns_gradients(const Problem& pb, const std::string& label) {
  Options o = pb.options();
  o.rtol = 1e-9;
  o.atol = 1e-11;
  const Eigen::VectorXd p = pb.nominal_parameters();
  const Solution fwd = forward_sensitivity(pb, p, o), adj = adjoint(pb, p, o);
  const GradientEstimate cs = complex_step(pb, p, o);
  for (const Eigen::MatrixXd& g : {fwd.cost_gradient, adj.cost_gradient, cs.cost_gradient}) {
    EXPECT_NEAR(g(0, 0), -6.0, 1e-5) << label;
    EXPECT_NEAR(g(1, 0), -1.0, 1e-5) << label;
  }
  EXPECT_EQ(adj.events.size(), 3u) << label;
}

}  // namespace

// A guard der(x) whose event leaves x and its rate as they were (an outside reader's model):
// x = sin(w t) turns at t = (k + 1/2) pi / w, three times in [0, 10] at w = 1, with x = +-1 there,
// so `amp`, the sum of x^2 at the turns, is 3, and the held A_T is x at the last turn (+1).
// The root was located on IDAS's interpolated rate and the guard read after the restart on
// f(x): it fired 5 to 14 times at every rtol (or stopped as Zeno) where `guard: v` fired 3.
TEST(EquationModelDae, ARateGuardFiresOncePerCrossing) {
  const std::string head = R"yaml(
horizon: 10
parameters: {w: 1.0}
states: {x: 0, v: w, A: 0}
modes:
  m: {rhs: [v, -w^2*x, 0]}
costs:
  amp: {events: {rev: x^2}}
  A_T: {terminal: A}
)yaml";
  for (const char* direction : {"either", "falling", "rising"}) {
    const Problem pb = equations::parse_equation_problem(
        head + "events:\n  rev: {guard: der(x), direction: " + direction + ", jump: [x, v, x]}\n", "turns.yaml");
    const std::string which(direction);
    // Either: the turns at pi/2 (x = 1), 3 pi/2 (x = -1) and 5 pi/2 (x = 1); falling (the rate
    // falling through zero at a maximum): pi/2 and 5 pi/2; rising: 3 pi/2.
    const std::vector<double> turns = which == "either"    ? std::vector<double>{0.5, 1.5, 2.5}
                                      : which == "falling" ? std::vector<double>{0.5, 2.5}
                                                           : std::vector<double>{1.5};
    for (const double rtol : {1e-6, 1e-7, 1e-8, 1e-10, 1e-12}) {
      Options o = pb.options();
      o.rtol = rtol;
      o.atol = rtol * 1e-2;
      const Solution s = forward_sensitivity(pb, pb.nominal_parameters(), o);
      ASSERT_EQ(s.events.size(), turns.size()) << which << " at rtol " << rtol;
      for (size_t i = 0; i < turns.size(); ++i) {
        EXPECT_NEAR(s.events[i].time, turns[i] * M_PI, 1e3 * rtol) << which << " at rtol " << rtol << ", turn " << i;
      }
      EXPECT_NEAR(s.costs[0], static_cast<double>(turns.size()), 1e3 * rtol) << which << " at rtol " << rtol;
      EXPECT_NEAR(s.costs[1], which == "rising" ? -1.0 : 1.0, 1e3 * rtol) << which << " at rtol " << rtol;
    }
  }
  // With v(0) = 1 (expect_turns_gradients).
  std::string moving = head;
  moving.replace(moving.find("v: w"), 4, "v: 1");
  expect_turns_gradients(equations::parse_equation_problem(
                             moving + "events:\n  rev: {guard: der(x), direction: either, jump: [x, v, x]}\n",
                             "turns.yaml"),
                         "rhs");
}

// The same turns in residual modes, with and without an algebraic state: the guard reads the
// consistent rates (and algebraic states) at the state IDAS hands, which a restart there holds.
// On IDAS's interpolated rates it fired 6 times for the 3 turns.
TEST(EquationModelDae, ARateGuardInAResidualModeFiresOncePerCrossing) {
  const std::string tail = R"yaml(
costs:
  amp: {events: {rev: x^2}}
  A_T: {terminal: A}
events:
  rev: {guard: der(x), direction: either, jump: JUMP}
)yaml";
  struct Variant {
    const char* name;
    std::string head, jump;
  };
  const std::vector<Variant> variants = {
      {"differential", R"yaml(
horizon: 10
parameters: {w: 1.0}
states: {x: 0, v: 1, A: 0}
modes:
  m: {residual: ["der(x) - v", "der(v) + w^2*x", "der(A)"]}
)yaml", "[x, v, x]"},
      {"algebraic", R"yaml(
horizon: 10
parameters: {w: 1.0}
states: {x: 0, v: 1, z: 0, A: 0}
algebraic: z
modes:
  m: {residual: ["der(x) - z", "der(v) + w^2*x", z - v, "der(A)"]}
)yaml", "[x, v, z, x]"},
  };
  for (const Variant& variant : variants) {
    std::string text = variant.head + tail;
    text.replace(text.find("JUMP"), 4, variant.jump);
    const Problem pb = equations::parse_equation_problem(text, "turns.yaml");
    for (const double rtol : {1e-6, 1e-8, 1e-10, 1e-12}) {
      Options o = pb.options();
      o.rtol = rtol;
      o.atol = rtol * 1e-2;
      const Solution s = forward_sensitivity(pb, pb.nominal_parameters(), o);
      ASSERT_EQ(s.events.size(), 3u) << variant.name << " at rtol " << rtol;
      for (size_t i = 0; i < 3; ++i) {
        EXPECT_NEAR(s.events[i].time, (0.5 + static_cast<double>(i)) * M_PI, 1e3 * rtol)
            << variant.name << " at rtol " << rtol << ", turn " << i;
      }
      EXPECT_NEAR(s.costs[0], 3.0, 1e3 * rtol) << variant.name << " at rtol " << rtol;
      EXPECT_NEAR(s.costs[1], 1.0, 1e3 * rtol) << variant.name << " at rtol " << rtol;
    }
    expect_turns_gradients(pb, variant.name);
  }
}

// A drag law log(h - 1) whose h falls to 1: the forward run's steps fall to round-off of t
// before the rate is infinite, and it runs out of steps; the message says so, not only that the
// step budget was spent (an outside reader's finding).
TEST(EquationModel, RunningOutOfStepsAtASingularityIsNamed) {
  const Problem pb = equations::parse_equation_problem(R"yaml(
horizon: 3
tolerances: {rtol: 1e-10, atol: 1e-12}
parameters: {g: 9.81, cd: 0.05}
states: {h: 2, v: 1.5}
modes:
  flight: {rhs: [v, "-g - cd*v*log(h - 1)"]}
costs:
  h_T: {terminal: h}
)yaml", "singular_drag.yaml");
  Options o = pb.options();
  o.max_steps = 5000;
  try {
    (void)forward_sensitivity(pb, pb.nominal_parameters(), o);
    FAIL() << "the run went through h = 1";
  } catch (const SolverError& e) {
    const std::string message = e.what();
    EXPECT_NE(message.find("CV_TOO_MUCH_WORK at t = 0.62895"), std::string::npos) << message;
    EXPECT_NE(message.find("its steps had fallen to"), std::string::npos) << message;
    EXPECT_NE(message.find("within 1e-12 of t"), std::string::npos) << message;
  }
}

// The adjoint of a cost that reads rates, in a mode with more rows that read rates than rates,
// is refused naming the rows and the rates (it said only how many).
TEST(EquationModelDae, TheAdjointOfARateCostNamesTheRowsWithRates) {
  const Problem pb = equations::parse_equation_problem(R"yaml(
horizon: 1
states: {y: 1, z: 0}
algebraic: z
modes:
  decay: {residual: ["der(y) + y", "der(y) + y - z"]}
costs:
  speed: {running: der(y)^2}
)yaml", "two_rows.yaml");
  try {
    (void)adjoint(pb);
    FAIL() << "the adjoint ran";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("they are 2 rows (residual[0], residual[1]) for 1 rate (der(y)); use forward "
                                         "sensitivities"),
              std::string::npos)
        << e.what();
  }
  EXPECT_NEAR(forward_sensitivity(pb).costs[0], (1.0 - std::exp(-2.0)) / 2.0, 1e-6);
}

/// The message of the InputError that parsing `text` throws ("" if none).
std::string error_of(const std::string& text) {
  try {
    (void)equations::parse_equation_problem(text, "bad.yaml");
  } catch (const InputError& e) {
    return e.what();
  }
  return "";
}

const std::string kHead = "horizon: 1\nparameters: {k: 2}\nstates: {x: 1, v: 0}\n";
const std::string kModes = "modes:\n  free: {rhs: [v, -k*x]}\n  stuck: {rhs: [0, 0]}\n";
const std::string kCosts = "costs: {x_T: {terminal: x}}\n";

TEST(EquationModelErrors, OneLineWithFileLineColumnFieldAndWhat) {
  const std::string ev = kHead + kModes + "events:\n  hit: {guard: x, direction: ";
  const std::pair<std::string, std::string> cases[] = {
      {kHead + "modes:\n  free: {rhs: [v, -q*x]}\n" + kCosts,
       "bad.yaml:5:20: modes.free.rhs[1]: in expression '-q*x': unknown name 'q' (parameters: k; states: x, v; "
       "time: t; constant: pi) (at character 2)"},
      {kHead + "modes:\n  free: {rhs: [v]}\n" + kCosts,
       "bad.yaml:5:15: modes.free.rhs: expected 2 expressions, one per state (x, v), got 1"},
      {ev + "falling, jump: [x]}\n" + kCosts,
       "bad.yaml:8:45: events.hit.jump: expected 2 expressions, one per state (x, v), got 1"},
      {ev + "falling, next: stop}\n" + kCosts,
       "bad.yaml:8:45: events.hit.next: unknown mode 'stop' (modes: free, stuck)"},
      {ev + "falling, only_in: free}\n" + kCosts,
       "bad.yaml:8:8: events.hit: in mode 'free' the event keeps the state and the mode, so it would change "
       "nothing (give a jump, or a next mode)"},
      {ev + "falling, jump: [x, v], next: {free: free}}\n" + kCosts,
       "bad.yaml:8:8: events.hit: in mode 'free' the event keeps the state and the mode, so it would change "
       "nothing (give a jump, or a next mode)"},
      {ev + "down, next: stuck}\n" + kCosts,
       "bad.yaml:8:30: events.hit.direction: unknown direction 'down' (rising, falling or either)"},
      {kHead + kModes + "events:\n  hit: {guard: x, next: stuck}\n" + kCosts,
       "bad.yaml:8:8: events.hit.direction: missing field"},
      {kHead + kModes + "events:\n  hit: {at: x, jump: [x, 0]}\n" + kCosts,
       "bad.yaml:8:13: events.hit.at: in expression 'x': unknown name 'x' (parameters: k; constant: pi) (at "
       "character 1)"},
      {kHead + kModes + "events:\n  hit: {at: 1, direction: rising, jump: [x, 0]}\n" + kCosts,
       "bad.yaml:8:27: events.hit.direction: a time event ('at') fires as t rises: no direction"},
      {kHead + kModes + "events:\n  hit: {at: k - 2, jump: [x, 0]}\n" + kCosts,
       "bad.yaml:8:13: events.hit.at: the time event 'hit' at t = 0 does not come after the start t0 = 0: a time event "
       "fires only after t0 (give a jump at the start in the initial states)"},
      {kHead + kModes + "events:\n  hit: {at: 1e-300, jump: [x, 0]}\n" + kCosts,
       "bad.yaml:8:13: events.hit.at: the time event 'hit' at t = 1e-300 comes within 1e-12 (relative) "
       "of the start t0 = 0, closer than a run resolves time: it would never fire (give a jump at the "
       "start in the initial states)"},
      {ev + "falling, only_in: stuck, next: {free: stuck}}\n" + kCosts,
       "bad.yaml:8:62: events.hit.next: the event is not watched in mode 'free' (only_in)"},
      {kHead + kModes + "costs: {x_T: {terminal: der(x)}}\n",
       "bad.yaml:7:25: costs.x_T.terminal: in expression 'der(x)': der(...) is not available in this expression "
       "(in an equation model, rates are read by residuals, guards, running costs and transitions only: not by "
       "right-hand sides, jumps, initial values, terminal or event costs) (at character 1)"},
      {"horizon: 1\nparameters: {k: \"2*kk\", kk: 1}\nstates: {x: 1, v: 0}\n" + kModes + kCosts,
       "bad.yaml:2:17: parameters.k: '2*kk' depends on parameters, but this field takes a number or a constant "
       "expression (such as 2*pi)"},
      {kHead + kModes + "costs: {e: {running: \"der(k)\"}}\n",
       "bad.yaml:7:27: costs.e.running: in expression 'der(k)': der(...) takes a name of the rates (x, v), got "
       "'k' (at character 5)"},
      {kHead + kModes + "initial_mode: frozen\n" + kCosts,
       "bad.yaml:7:15: initial_mode: unknown mode 'frozen' (modes: free, stuck)"},
      {kHead + kModes, "bad.yaml:1:1: costs: missing field"},
      {"horizon: 1\nparameters: {t: 2}\nstates: {x: 1}\n",
       "bad.yaml:2:14: parameters.t: 't' is reserved (t: time, pi, der(x): rate of x)"},
      {"horizon: 1\nparameters: {x: 2}\nstates: {x: 1}\n", "bad.yaml:3:10: states.x: the name 'x' is already used"},
      {"horizon: 1\nstates: {x: 1}\nstates: {y: 1}\n", "bad.yaml:3:1: states: given twice (each key may appear once)"},
      {kHead + kModes + kCosts + "residuals: [x]\n",
       "bad.yaml:8:1: residuals: unknown field (known: algebraic, costs, description, events, horizon, initial_mode, "
       "method, modes, name, outputs, parameters, states, tolerances)"},
      {kHead + kModes + "costs: {over: {running: max(x, 0)^2}}\n",
       "bad.yaml:7:32: costs.over.0)^2: unknown field (known: events, running, terminal) (quote an expression that "
       "contains a comma: \"max(x, 0)^2\")"},
      {"horizon: 1\nparameters: {e: {value: 2, max: 1}}\nstates: {x: 1}\n",
       "bad.yaml:2:17: parameters.e: the value 2 is outside [min, max] = [-inf, 1]"},
      {"horizon: 1\nstates: {x: \"sqrt(-1)\"}\n",
       "bad.yaml:2:13: states.x: 'sqrt(-1)' is not finite at the nominal parameters (got nan)"},
      {"states: [x]\n", "bad.yaml:1:9: states: expected a mapping name: initial value (at least one state)"},
      {kHead + kModes + kCosts + "horizon: [1]\n", "bad.yaml:8:1: horizon: given twice (each key may appear once)"},
      {"parameters: {k: 2}\nstates: {x: 1, v: 0}\n" + kModes + kCosts + "horizon: [1, 1]\n",
       "bad.yaml:7:10: horizon: the final time must exceed the initial time (got [1, 1])"},
      // A reversed horizon is named before the time events that read its start.
      {"horizon: [5, 1]\nparameters: {k: 2}\nstates: {x: 1, v: 0}\n" + kModes +
           "events:\n  hit: {at: 2.5, jump: [x, 0]}\n" + kCosts,
       "bad.yaml:1:10: horizon: the final time must exceed the initial time (got [5, 1])"},
      // A setting takes no parameter: an unknown name there is not offered the parameters.
      {"horizon: abc\nparameters: {k: 2}\nstates: {x: 1, v: 0}\n" + kModes + kCosts,
       "bad.yaml:1:10: horizon: in expression 'abc': unknown name 'abc' (constant: pi) (at character 1)"},
      {"horizon: \"k + foo\"\nparameters: {k: 2}\nstates: {x: 1, v: 0}\n" + kModes + kCosts,
       "bad.yaml:1:15: horizon: in expression 'k + foo': unknown name 'foo' (parameters: k; constant: pi) (at "
       "character 5)"},
      {"horizon: k\nparameters: {k: 2}\nstates: {x: 1, v: 0}\n" + kModes + kCosts,
       "bad.yaml:1:10: horizon: 'k' depends on parameters, but this field takes a number or a constant expression "
       "(such as 2*pi)"},
      {"horizon: 1\nparameters: {e: {value: 2, min: 3, max: 1}}\nstates: {x: 1}\n",
       "bad.yaml:2:17: parameters.e: min 3 is above max 1"},
      // A time that is not a number is named as such (it said "at t = -nan does not come after").
      {kHead + kModes + "events:\n  hit: {at: sqrt(k - 3), jump: [x, 0]}\n" + kCosts,
       "bad.yaml:8:13: events.hit.at: the time of the time event 'hit' is nan, not a finite number"},
      // Both a guard and a time: named as both (it said "needs either a guard ... or a time").
      {kHead + kModes + "events:\n  hit: {guard: x, direction: falling, at: 0.3, jump: [x, 0]}\n" + kCosts,
       "bad.yaml:8:8: events.hit: has both a guard and a time 'at': give exactly one (guard: a state event, at: a "
       "time event)"},
      {kHead + kModes + "events:\n  hit: {jump: [x, 0]}\n" + kCosts,
       "bad.yaml:8:8: events.hit: needs either a guard (with a direction) or a time 'at'"},
      // A second document was ignored without a word.
      {kHead + kModes + kCosts + "---\nhorizon: 2\n", "bad.yaml:9:1: a second YAML document ('---'): a model file holds one"},
  };
  for (const auto& [text, message] : cases) EXPECT_EQ(error_of(text), message) << text;
}

// Input errors that only a run finds name the declaration too: a start on a guard, a residual
// mode that is not index 1 (before: "event 'hit': ..." and "mode 'm' ..." without a position).
TEST(EquationModelErrors, InputErrorsFoundByARunNameTheDeclaration) {
  const std::pair<std::string, std::string> cases[] = {
      {kHead + kModes + "events:\n  hit: {guard: x - 1, direction: falling, jump: [x, -v]}\n" + kCosts,
       "bad.yaml:8:8: events.hit: event 'hit': the run starts on its guard"},
      {"horizon: 1\nstates: {x: 1, z: 0}\nalgebraic: z\nmodes:\n  m: {residual: [\"der(x) - z\", \"x - 1\"]}\n" +
           kCosts,
       "bad.yaml:5:6: modes.m: mode 'm' of problem 'model' is not an index-1 DAE at the start"},
      // nan has no sign: it chose the `otherwise` mode silently.
      {kHead + kModes + "initial_mode: {sign_of: sqrt(x - 2), positive: free, otherwise: stuck}\n" + kCosts,
       "bad.yaml:7:25: initial_mode.sign_of: evaluates to nan at the start (t0 = 0): its sign cannot choose the "
       "initial mode"},
  };
  for (const auto& [text, start] : cases) {
    const Problem pb = equations::parse_equation_problem(text, "bad.yaml");
    try {
      simulate(pb);
      ADD_FAILURE() << "accepted: " << text;
    } catch (const InputError& e) {
      EXPECT_EQ(std::string(e.what()).substr(0, start.size()), start) << e.what();
    }
  }
}

const std::string kDaeHead = "horizon: 1\nparameters: {k: 2}\nstates: {x: 1, z: 0}\nalgebraic: [z]\n";
const std::string kDaeModes = "modes:\n  m: {residual: [der(x) + k*x, z - 2*x]}\n";

// A bound holds for every override, its message located at the parameter's entry.
TEST(EquationModelErrors, AnOverrideOutsideItsBoundsIsLocated) {
  Problem pb = equations::parse_equation_problem(
      "horizon: 1\nparameters:\n  k: {value: 2, min: 0, max: 10}\nstates: {x: 1}\nmodes: {m: {rhs: [-k*x]}}\n"
      "costs: {x_T: {terminal: x}}\n",
      "bad.yaml");
  try {
    pb.set_nominal("k", 11.0);
    ADD_FAILURE() << "k = 11 accepted";
  } catch (const InputError& e) {
    EXPECT_EQ(std::string(e.what()), "bad.yaml:3:6: parameters.k: the value 11 is outside [min, max] = [0, 10]");
  }
  EXPECT_NO_THROW(pb.set_nominal("k", 10.0));
}

TEST(EquationModelErrors, DaeKeys) {
  const std::pair<std::string, std::string> cases[] = {
      {kDaeHead + "modes:\n  m: {residual: [der(x) + k*x]}\n" + kCosts,
       "bad.yaml:6:17: modes.m.residual: expected 2 expressions, as many equations as states (x, z), "
       "got 1"},
      {kDaeHead + "modes:\n  m: {rhs: [-k*x, 0], residual: [der(x) + k*x, z - 2*x]}\n" + kCosts,
       "bad.yaml:6:6: modes.m: mode 'm' has both rhs and residual: give exactly one (rhs: x' = f, "
       "residual: F = 0)"},
      {kDaeHead + "modes:\n  m: {}\n" + kCosts,
       "bad.yaml:6:6: modes.m: mode 'm' needs exactly one of rhs (x' = f) and residual (F = 0)"},
      {kDaeHead + "modes:\n  m: {residual: [der(x) + k*x, z - 2*x]}\n  n: {rhs: [-k*x, 0]}\n" + kCosts,
       "bad.yaml:7:12: modes.n.rhs: mode 'n' is explicit (rhs), but the file has algebraic states (z): "
       "every mode must be a residual (residual: [...])"},
      {kDaeHead + "modes:\n  m: {residual: [der(x) + k*x, \"z - 2*x + 0*der( z )\"]}\n" + kCosts,
       "bad.yaml:6:50: modes.m.residual[1]: in expression 'z - 2*x + 0*der( z )': der(z): 'z' is an "
       "algebraic state, and the rate of an algebraic state is not available (der() takes a "
       "differential state: x) (at character 18)"},
      {kDaeHead + kDaeModes + "costs: {c: {running: \"x + der(z)\"}}\n",
       "bad.yaml:7:31: costs.c.running: in expression 'x + der(z)': der(z): 'z' is an algebraic state, "
       "and the rate of an algebraic state is not available (der() takes a differential state: x) (at "
       "character 9)"},
      // The names offered leave out der(z) of the algebraic z (they listed "rates: der(x), der(z)").
      {kDaeHead + "modes:\n  m: {residual: [der(x) + q*x, z - 2*x]}\n" + kCosts,
       "bad.yaml:6:27: modes.m.residual[0]: in expression 'der(x) + q*x': unknown name 'q' (parameters: k; "
       "states: x, z; time: t; rates: der(x); constant: pi) (at character 10)"},
      {"horizon: 1\nparameters: {k: 2}\nstates: {x: 1, z: 0}\nalgebraic: [z, w]\n" + kDaeModes + kCosts,
       "bad.yaml:4:16: algebraic[1]: unknown state 'w' (states: x, z)"},
      {"horizon: 1\nparameters: {k: 2}\nstates: {x: 1, z: 0}\nalgebraic: k\n" + kDaeModes + kCosts,
       "bad.yaml:4:12: algebraic: 'k' is a parameter, not a state (states: x, z)"},
      {"horizon: 1\nparameters: {k: 2}\nstates: {x: 1, z: 0}\nalgebraic: [z, z]\n" + kDaeModes + kCosts,
       "bad.yaml:4:16: algebraic[1]: the state 'z' is listed twice"},
      {kDaeHead + "algebraic: z\n" + kDaeModes + kCosts,
       "bad.yaml:5:1: algebraic: given twice (each key may appear once)"},
      {"horizon: 1\nparameters: {k: 2}\nstates: {x: 1, z: 0}\nalgebraic: {z: 0}\n" + kDaeModes + kCosts,
       "bad.yaml:4:12: algebraic: expected a state name or a list of state names"},
      {"horizon: 1\nparameters: {k: 2}\nstates: {x: 1, z: 0}\nalgebraic: []\n" + kDaeModes + kCosts,
       "bad.yaml:4:12: algebraic: expected a state name or a list of state names (at least one)"},
      {kDaeHead + kDaeModes + "events:\n  e: {guard: z - 1, direction: falling, jump: [x, 3]}\n" + kCosts,
       "bad.yaml:8:6: events.e: in mode 'm' the event keeps the state and the mode, so it would change "
       "nothing (give a jump, or a next mode)"},
      {kDaeHead + kDaeModes + kCosts + "tolerances: {atol: [1e-8]}\n",
       "bad.yaml:8:20: tolerances.atol: expected a number, or a list of 2 numbers, one per state (x, "
       "z), got 1"},
      {kDaeHead + kDaeModes + kCosts + "tolerances: {atol: [1e-8, 0]}\n",
       "bad.yaml:8:27: tolerances.atol[1]: must be positive, got 0"},
      {kDaeHead + kDaeModes + "events:\n  e: {at: 0.5, jump: [2*x, z], starts_on_guard: true}\n" + kCosts,
       "bad.yaml:8:49: events.e.starts_on_guard: a time event ('at') has no guard for the initial state to lie on (it "
       "fires when t reaches its time)"},
      {kDaeHead + kDaeModes + "events:\n  \"line\\nbreak\": {at: 0.5, jump: [2*x, z]}\n" + kCosts,
       "bad.yaml:8:3: events.line\\nbreak: a name may not hold a control character (a line break, a tab): "
       "byte 5 of the name is code 10"},
      {kDaeHead + kDaeModes + "costs: {\"\": {terminal: x}}\n",
       "bad.yaml:7:9: costs.: a name may not be empty"},
      {kDaeHead + kDaeModes + kCosts + "tolerances: {rtol: 1e-17}\n",
       "bad.yaml:8:20: tolerances.rtol: must be at least 1e-15 (double precision's limit), got 1e-17"},
      {kDaeHead + kDaeModes + kCosts + "outputs: [0, 0.5, 0.5]\n",
       "bad.yaml:8:19: outputs[2]: output times must increase strictly: 0.5 follows 0.5"},
      {kDaeHead + kDaeModes + kCosts + "outputs: [0, 2]\n",
       "bad.yaml:8:14: outputs[1]: the output time 2 is outside the horizon [0, 1]"},
  };
  for (const auto& [text, message] : cases) EXPECT_EQ(error_of(text), message) << text;
}

TEST(EquationModel, OutputTimesAndToleranceLists) {
  const Problem pb = equations::parse_equation_problem(kDaeHead + kDaeModes + kCosts +
                                                           "outputs: [0.25, \"1/2\", 1]\n"
                                                           "tolerances: {atol: [1e-9, 1e-7], cost_atol: 1e-5}\n",
                                                       "lists.yaml");
  EXPECT_EQ(pb.options().output_times, (std::vector<double>{0.25, 0.5, 1.0}));
  EXPECT_EQ(pb.options().atol_per_state, (std::vector<double>{1e-9, 1e-7}));
  EXPECT_EQ(pb.options().cost_atol, 1e-5);
  const Solution s = simulate(pb);
  ASSERT_EQ(s.times.size(), 3u);
  EXPECT_NEAR(s.states(1, 0), std::exp(-1.0), 1e-6);
  EXPECT_NEAR(s.final_state[1], 2 * std::exp(-2.0), 1e-6);
}

}  // namespace
