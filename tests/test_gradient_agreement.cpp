// Forward sensitivity vs complex step (complex event times) vs central differences on every
// built-in example, across events.
//
// Tolerances: forward sensitivity and the complex step integrate the same tangent-linear model
// by two independent code paths at the example's tolerance (rtol 1e-8 .. 1e-10), so they agree
// to ~1e3 rtol; we require 1e-6. Central differences at h = cbrt(rtol) |p| carry an O(h^2)
// truncation and O(rtol/h) integration-noise error, each ~rtol^(2/3) (~5e-7 at rtol 1e-10),
// amplified by event-time localisation; we require 1e-4. Entries smaller than 1e-6 of their
// cost's largest entry are compared absolutely at that floor.
#include <saltus/equations/equation_file.hpp>
#include <saltus/examples/builtin.hpp>
#include <saltus/solvers/simulate.hpp>
#include <saltus/verify/gradient.hpp>

#include <gtest/gtest.h>

using namespace saltus;

class EveryExample : public ::testing::TestWithParam<std::string> {};

TEST_P(EveryExample, ForwardComplexStepAndCentralDifferencesAgree) {
  const Problem pb = examples::make_example(GetParam());
  const Eigen::VectorXd p = pb.nominal_parameters();
  const GradientCheck check = check_gradient(pb, p, pb.options());
  ASSERT_EQ(check.entries.size(), static_cast<size_t>(pb.n_costs() * pb.n_parameters()));
  EXPECT_LT(check.max_relative_error[1], 1e-6) << "complex step vs forward";
  // 1.2e-4 for ball1d's energy_rate / c: noise of the fourth-order stencil (1.5 rtol / h).
  EXPECT_LT(check.max_relative_error[2], 2e-4) << "central differences vs forward";
}

TEST_P(EveryExample, EventTimeDerivativesAgreeWithComplexStep) {
  const Problem pb = examples::make_example(GetParam());
  const Eigen::VectorXd p = pb.nominal_parameters();
  const Solution fwd = forward_sensitivity(pb, p, pb.options());
  const GradientEstimate cs = complex_step(pb, p, pb.options());
  ASSERT_EQ(cs.event_time_gradient.rows(), static_cast<Eigen::Index>(fwd.events.size()));
  for (size_t e = 0; e < fwd.events.size(); ++e) {
    for (int k = 0; k < pb.n_parameters(); ++k) {
      const double ref = cs.event_time_gradient(static_cast<Eigen::Index>(e), k);
      EXPECT_NEAR(fwd.events[e].dtime_dp[k], ref, 1e-6 * (1.0 + std::abs(ref)))
          << "event " << e << " parameter " << k;
    }
  }
}

TEST_P(EveryExample, FinalStateSensitivityAgreesWithComplexStep) {
  const Problem pb = examples::make_example(GetParam());
  const Eigen::VectorXd p = pb.nominal_parameters();
  const Solution fwd = forward_sensitivity(pb, p, pb.options());
  const GradientEstimate cs = complex_step(pb, p, pb.options());
  for (Eigen::Index i = 0; i < fwd.final_sensitivity.rows(); ++i) {
    const double scale = cs.final_sensitivity.row(i).cwiseAbs().maxCoeff();
    for (Eigen::Index k = 0; k < fwd.final_sensitivity.cols(); ++k) {
      EXPECT_NEAR(fwd.final_sensitivity(i, k), cs.final_sensitivity(i, k), 1e-6 * scale + 1e-12)
          << "state " << i << " parameter " << k;
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Builtin, EveryExample,
                         ::testing::Values("ball1d", "galan", "box2d", "time_events", "robertson",
                                           "hiskens"));

TEST(GradientAgreement, Ball1dWithOverriddenParametersAndLongerHorizon) {
  // A parameter override of ball1d as in public test suites: g = 9.8, h0 = 10, T = 5.
  Problem pb = examples::ball1d();
  pb.set_nominal("g", 9.8);
  pb.set_nominal("h0", 10.0);
  pb.options().tf = 5.0;
  const Eigen::VectorXd p = pb.nominal_parameters();
  const GradientCheck check = compare_gradients(
      pb, {forward_estimate(forward_sensitivity(pb, p, pb.options())),
           complex_step(pb, p, pb.options())});
  EXPECT_LT(check.max_relative_error[1], 1e-6);
}

TEST(GradientAgreement, AdamsMethodAndSimultaneousCorrectorGiveTheSameGradient) {
  Problem pb = examples::box2d();
  Options adams = pb.options();
  adams.method = LinearMultistep::Adams;
  adams.corrector = SensitivityCorrector::Simultaneous;
  const Eigen::VectorXd p = pb.nominal_parameters();
  const Solution bdf = forward_sensitivity(pb, p, pb.options());
  const Solution ad = forward_sensitivity(pb, p, adams);
  for (int c = 0; c < pb.n_costs(); ++c) {
    for (int k = 0; k < pb.n_parameters(); ++k) {
      EXPECT_NEAR(ad.cost_gradient(c, k), bdf.cost_gradient(c, k),
                  1e-6 * (1.0 + std::abs(bdf.cost_gradient(c, k))));
    }
  }
}

// compare_gradients' floor: an entry that is zero in exact arithmetic, where central differences
// leave noise below their noise_fraction of the row, is judged absolutely against that noise
// (1e-3 of it here, not 5 from the 1e-6 floor alone); a real disagreement above it still shows.
TEST(GradientAgreement, CentralDifferencesNoiseOnAnExactZeroIsNoDisagreement) {
  const Problem pb = examples::make_example("ball1d");
  ASSERT_GE(pb.n_parameters(), 2);
  GradientEstimate exact, central;
  exact.method = "forward sensitivity";
  central.method = "central differences";
  exact.cost_gradient = Eigen::MatrixXd::Zero(pb.n_costs(), pb.n_parameters());
  exact.cost_gradient(0, 0) = 1.0;  // the row's largest entry; entry (0, 1) is exactly zero
  central.cost_gradient = exact.cost_gradient;
  central.cost_gradient(0, 0) = 1.01;
  central.cost_gradient(0, 1) = 5e-6;
  central.noise_fraction = 1e-4;  // an estimate whose noise is 1e-4 of the row
  const GradientCheck check = compare_gradients(pb, {exact, central});
  EXPECT_NEAR(check.entries[1].relative_errors[1], 5e-6 / 1e-4, 1e-12);
  EXPECT_NEAR(check.entries[0].relative_errors[1], 0.01, 1e-12);
  EXPECT_NEAR(check.max_relative_error[1], 0.05, 1e-12);
  central.noise_fraction = 0.0;  // the 1e-6 floor alone
  EXPECT_NEAR(compare_gradients(pb, {exact, central}).entries[1].relative_errors[1], 5.0, 1e-9);
}

// An estimate whose noise is larger than a tenth of the entry checks nothing there: marked
// unchecked (the report's "noise"), not shown as agreement; a difference within a smaller noise
// is marked within_noise and keeps its size in relative_differences (an outside reader saw
// central differences 20,000 times the exact entry reported as "0.00e+00" agreement).
TEST(GradientAgreement, AnEntryWithinALargeNoiseIsUnchecked) {
  const Problem pb = examples::make_example("ball1d");
  GradientEstimate exact, central;
  exact.method = "forward sensitivity";
  central.method = "central differences";
  exact.cost_gradient = Eigen::MatrixXd::Zero(pb.n_costs(), pb.n_parameters());
  exact.cost_gradient(0, 0) = 1.0;
  exact.cost_gradient(0, 1) = 2.0;
  central.cost_gradient = exact.cost_gradient;
  central.cost_gradient(0, 0) = 2e4;       // noise 1e5: unchecked
  central.cost_gradient(0, 1) = 2.0 + 1e-3;  // noise 1e-2 (below 0.2): agreement within noise
  central.noise = Eigen::MatrixXd::Zero(pb.n_costs(), pb.n_parameters());
  central.noise(0, 0) = 1e5;
  central.noise(0, 1) = 1e-2;
  const GradientCheck check = compare_gradients(pb, {exact, central});
  EXPECT_TRUE(check.entries[0].unchecked[1]);
  EXPECT_TRUE(check.entries[0].within_noise[1]);
  EXPECT_FALSE(check.entries[1].unchecked[1]);
  EXPECT_TRUE(check.entries[1].within_noise[1]);
  EXPECT_EQ(check.entries[1].relative_errors[1], 0.0);
  EXPECT_NEAR(check.entries[1].relative_differences[1], 1e-3 / 2.0, 1e-12);
  EXPECT_FALSE(check.entries[2].within_noise[1]);  // equal: no difference to explain
  EXPECT_EQ(check.unchecked_entries[1], 1);
  // An exactly zero entry (a cost that ignores the parameter) within a noise small beside its
  // row's largest entry is checked absolutely: within noise, not unchecked.
  exact.cost_gradient(1, 0) = 3.0;
  exact.cost_gradient(1, 1) = 0.0;
  central.cost_gradient(1, 0) = 3.0;
  central.cost_gradient(1, 1) = 2e-7;
  central.noise(1, 1) = 5e-7;
  const GradientCheck zero = compare_gradients(pb, {exact, central});
  const size_t entry = static_cast<size_t>(pb.n_parameters()) + 1;  // cost 1, parameter 1
  EXPECT_TRUE(zero.entries[entry].within_noise[1]);
  EXPECT_FALSE(zero.entries[entry].unchecked[1]);
  EXPECT_EQ(zero.unchecked_entries[1], 1);  // entry (0, 0) only
  EXPECT_FALSE(check.entries[0].unchecked[0]);
  // A row that is zero in every method (a ball at rest whatever its parameters) under a large
  // noise: equal values agree, checked (it was marked "noise", with advice that changed nothing).
  exact.cost_gradient.row(2).setZero();
  central.cost_gradient.row(2).setZero();
  central.noise.row(2).setConstant(1e-3);
  const GradientCheck at_rest = compare_gradients(pb, {exact, central});
  for (int k = 0; k < pb.n_parameters(); ++k) {
    EXPECT_FALSE(at_rest.entries[static_cast<size_t>(2 * pb.n_parameters() + k)].unchecked[1]) << k;
  }
  EXPECT_EQ(at_rest.unchecked_entries[1], 1);
}

// The same floor from the spread of central differences' own two-point estimates: hysteretic's
// d G / d beta is exactly zero (theory: the model does not depend on beta at beta = 0), and
// central differences gave -3.4e-8 where their estimates at h and 2h were -1.9e-8 and +1.7e-8;
// against the 1e-6 floor of the row the summary read "central differences vs forward 1.04e+01".
TEST(GradientAgreement, CentralDifferencesJudgedAgainstTheirOwnSpread) {
  const Problem pb = examples::make_example("hysteretic");
  const Eigen::VectorXd p = pb.nominal_parameters();
  const GradientEstimate central = central_differences(pb, p, pb.options());
  const GradientEstimate forward = forward_estimate(forward_sensitivity(pb, p, pb.options()));
  const int beta = 3;
  ASSERT_EQ(pb.parameter_names()[beta], "beta");
  EXPECT_EQ(forward.cost_gradient(0, beta), 0.0);
  EXPECT_GT(std::abs(central.cost_gradient(0, beta)), 1e-6 * forward.cost_gradient.cwiseAbs().maxCoeff());
  const GradientCheck check = compare_gradients(pb, {forward, central});
  EXPECT_LT(check.entries[beta].relative_errors[1], 1.0);
  for (int k = 0; k < pb.n_parameters(); ++k) {
    if (k == beta) continue;
    EXPECT_LT(check.entries[static_cast<size_t>(k)].relative_errors[1], 1e-3) << k;  // as before
  }
}

// A cost that does not depend on a parameter still moves with it through the steps: y_T of a
// decay with a kick, against beta, which weighs only the other cost's event term. Central
// differences gave -7.9e-8 there, beyond the spread of their own two-point estimates, and the
// summary read "central differences vs forward sensitivity: 4.52e-02" for their integration
// noise 1.5 (rtol |y_T| + atol) / h = 1.6e-7 (an outside reader's report).
TEST(GradientAgreement, ACostThatIgnoresAParameterIsNoDisagreement) {
  const Problem pb = equations::parse_equation_problem(
      "horizon: 4\ntolerances: {rtol: 1.0e-10, atol: 1.0e-12}\n"
      "parameters: {k: 0.5, a: 1.0, ts: 1.0, beta: 0.3, y0: 2.0}\nstates: {y: y0}\n"
      "modes: {decay: {rhs: [-k*y]}}\nevents: {kick: {at: ts, jump: [y + a]}}\n"
      "costs: {J: {running: y, events: {kick: beta*t}}, yT: {terminal: y}}\n",
      "kick");
  const Eigen::VectorXd p = pb.nominal_parameters();
  const GradientEstimate forward = forward_estimate(forward_sensitivity(pb, p, pb.options()));
  const GradientEstimate central = central_differences(pb, p, pb.options());
  const int beta = 3, y_T = 1;
  EXPECT_EQ(forward.cost_gradient(y_T, beta), 0.0);
  // The noise bound of the entry: 1.5 (rtol |y_T| + atol) / h, h = cbrt(rtol) beta.
  const double h = central_difference_step(0.3, default_relative_step(1e-10));
  EXPECT_GE(central.noise(y_T, beta), 1.5 * (1e-10 * std::abs(central.costs[y_T]) + 1e-12) / h * (1 - 1e-12));
  EXPECT_LT(std::abs(central.cost_gradient(y_T, beta)), central.noise(y_T, beta));
  const GradientCheck check = compare_gradients(pb, {forward, central});
  EXPECT_EQ(check.entries[static_cast<size_t>(y_T * pb.n_parameters() + beta)].relative_errors[1], 0.0);
  // The entries that are not zero still agree, within the stencil's accuracy: d J / d beta = 1
  // (the kick at ts = 1, weighed by t) among them.
  EXPECT_LT(check.max_relative_error[1], 1e-5);
  EXPECT_NEAR(forward.cost_gradient(0, beta), 1.0, 1e-12);
}

// A cost whose gradient is zero in exact arithmetic (a reaction held at m g): its entries are
// rounding (1e-17), and the methods' differing rounding is no disagreement. Before, the row's
// largest entry set the scale and the summary read "adjoint vs forward 7.77e+00".
TEST(GradientAgreement, RoundingOnAZeroGradientIsNoDisagreement) {
  const Problem pb = examples::make_example("ball1d");
  GradientEstimate forward, adjoint;
  forward.method = "forward sensitivity";
  adjoint.method = "adjoint";
  forward.costs = adjoint.costs = Eigen::VectorXd::Constant(pb.n_costs(), 19.62);
  forward.cost_gradient = Eigen::MatrixXd::Constant(pb.n_costs(), pb.n_parameters(), 1.3e-17);
  adjoint.cost_gradient = Eigen::MatrixXd::Constant(pb.n_costs(), pb.n_parameters(), -8.8e-17);
  const GradientCheck check = compare_gradients(pb, {forward, adjoint});
  // Judged absolutely at 1e-14 |psi|: 1.01e-16 / 1.962e-13.
  EXPECT_NEAR(check.max_relative_error[1], 1.01e-16 / (1e-14 * 19.62), 1e-12);
  // A real gradient keeps its own scale.
  forward.cost_gradient(0, 0) = 2.0;
  adjoint.cost_gradient(0, 0) = 2.0 * (1 + 1e-8);
  EXPECT_NEAR(compare_gradients(pb, {forward, adjoint}).entries[0].relative_errors[1], 1e-8, 1e-12);
}

// Central differences whose step reaches past a parameter's domain (ball1d's restitution e in
// [0, 1], at 0.995 with a relative step of 0.01: runs at e = 1.00495 and 1.0149) still run, as
// the model continues smoothly past e = 1, and say so once for that parameter; inside the
// domain they say nothing.
TEST(GradientAgreement, CentralDifferencesOutsideAParametersDomainAreNoted) {
  Problem pb = examples::ball1d();
  pb.set_nominal("e", 0.995);
  const Eigen::VectorXd p = pb.nominal_parameters();
  const GradientEstimate wide = central_differences(pb, p, pb.options(), 0.01);
  ASSERT_EQ(wide.notes.size(), 1u);
  EXPECT_NE(wide.notes[0].find("central differences for 'e' ran at e = 1.0"), std::string::npos) << wide.notes[0];
  EXPECT_NE(wide.notes[0].find("outside its domain"), std::string::npos) << wide.notes[0];
  const GradientEstimate forward = forward_estimate(forward_sensitivity(pb, p, pb.options()));
  const int e = pb.parameter_index("e");
  for (int c = 0; c < pb.n_costs(); ++c) {
    EXPECT_NEAR(wide.cost_gradient(c, e), forward.cost_gradient(c, e), 1e-4 * (1.0 + std::abs(forward.cost_gradient(c, e))));
  }
  EXPECT_NE(wide.notes[0].find("a smaller relative step stays inside"), std::string::npos) << wide.notes[0];
  EXPECT_TRUE(central_differences(pb, p, pb.options(), 1e-4).notes.empty());
  // On the bound itself no step stays inside, and the note says so.
  pb.set_nominal("e", 1.0);
  const GradientEstimate on_bound = central_differences(pb, pb.nominal_parameters(), pb.options(), 1e-4);
  ASSERT_EQ(on_bound.notes.size(), 1u);
  EXPECT_NE(on_bound.notes[0].find("lies on the bound"), std::string::npos) << on_bound.notes[0];
  // A p given outside the domain (the C++ API runs it) was the caller's choice: no notes.
  Eigen::VectorXd outside = pb.nominal_parameters();
  outside[e] = 1.05;
  EXPECT_TRUE(central_differences(pb, outside, pb.options(), 0.01).notes.empty());
}
