// galan (seed 002, Sec. 5.1) against the published dG/dp and the closed form of
// theory/hybrid-dae.md section 6.
#include <saltus/examples/builtin.hpp>
#include <saltus/solvers/adjoint.hpp>
#include <saltus/solvers/simulate.hpp>
#include <saltus/verify/gradient.hpp>

#include <gtest/gtest.h>

#include <cmath>

using namespace saltus;

TEST(Galan, PublishedGradient) {
  const Solution s = forward_sensitivity(examples::galan());
  EXPECT_NEAR(s.cost_gradient(0, 0), -2.31195, 5e-6);  // seed 002, printed to 6 digits
}

TEST(Galan, ClosedFormEventsAndSensitivityJumps) {
  const Solution s = forward_sensitivity(examples::galan());
  ASSERT_EQ(s.events.size(), 3u);
  const double t[3] = {0.219215922289804, 0.275812591473484, 1.266347841796072};
  const double s_minus[3] = {0.0, -1.469533710095, -0.500643551454};
  const double tau[3] = {0.315707550098, 0.025508077526, 0.744917151578};
  const double s_plus[3] = {-1.645655005864, -1.348070546155, -2.754505037664};
  const char* names[3] = {"A_to_B", "B_to_A", "A_to_B"};
  for (int i = 0; i < 3; ++i) {
    const auto& e = s.events[static_cast<size_t>(i)];
    EXPECT_EQ(e.name, names[i]);
    EXPECT_NEAR(e.time, t[i], 2e-9);  // state error ~rtol |x| over |x-dot|
    EXPECT_NEAR(e.sensitivity_before(0, 0), s_minus[i], 1e-8);
    EXPECT_NEAR(e.dtime_dp[0], tau[i], 1e-8);
    EXPECT_NEAR(e.sensitivity_after(0, 0), s_plus[i], 1e-8);
  }
  EXPECT_NEAR(s.final_state[0], 4.99884240621728, 1e-9);
  EXPECT_NEAR(s.costs[0], 20.0290746533596, 1e-8);
  EXPECT_NEAR(s.final_sensitivity(0, 0), -0.00157410794767, 1e-9);
  EXPECT_NEAR(s.cost_gradient(0, 0), -2.31195310744389, 1e-8);
}

TEST(Galan, SecondSwitchIsAFallingCrossing) {
  const Solution s = simulate(examples::galan());
  ASSERT_EQ(s.events.size(), 3u);
  EXPECT_LT(s.events[1].guard_rate, 0.0);
  EXPECT_GT(s.events[0].guard_rate, 0.0);
  EXPECT_EQ(s.final_mode, 1);  // ends in mode B
}

TEST(Galan, InitialModeFollowsTheGuardForOverriddenThreshold) {
  // p = -1: r(0) = 1 > 0, so the run starts in mode B and r stays positive on [0, 5]:
  // x = 5 (1 - exp(-2t)), G = 25 - 2.5 (1 - exp(-10)), dG/dp = 0.
  Problem pb = examples::galan();
  pb.set_nominal("p", -1.0);
  const Solution s = forward_sensitivity(pb);
  EXPECT_TRUE(s.events.empty());
  EXPECT_EQ(s.modes.front(), 1);
  EXPECT_NEAR(s.costs[0], 25.0 - 2.5 * (1.0 - std::exp(-10.0)), 1e-8);
  EXPECT_NEAR(s.cost_gradient(0, 0), 0.0, 1e-12);
}

// p = 2.9999: the guard rises above zero for 1.8 ms only (peak 1e-4), within one integrator step,
// so the signs at the step's ends do not show the pair of switches (before: one switch, dG/dp
// -0.375, exit 0). GuardExcursions finds it on the interpolant. Reference: the closed form
// (mpmath, 40 digits: switch times from the cubic's roots, G from the exact exponentials, dG/dp
// by a central difference of it with h = 1e-12).
TEST(Galan, ASwitchPairInsideOneStepIsFound) {
  Problem pb = examples::galan();
  pb.set_nominal("p", 2.9999);
  const double t[3] = {0.28533196187817008, 0.28709975000827233, 1.3833230385271205};
  const Eigen::VectorXd p = pb.nominal_parameters();
  for (const bool adjoint_run : {false, true}) {
    const Solution s = adjoint_run ? adjoint(pb, p, pb.options()) : forward_sensitivity(pb, p, pb.options());
    ASSERT_EQ(s.events.size(), 3u) << (adjoint_run ? "adjoint" : "forward");
    for (int i = 0; i < 3; ++i) EXPECT_NEAR(s.events[static_cast<size_t>(i)].time, t[i], 2e-9);
    EXPECT_NEAR(s.costs[0], 19.626250476944930, 1e-8);
    EXPECT_NEAR(s.cost_gradient(0, 0), -59.280837410359905, 1e-4);
  }
  EXPECT_EQ(simulate(pb).events.size(), 3u);
  const GradientEstimate cs = complex_step(pb, p, pb.options());
  EXPECT_NEAR(cs.cost_gradient(0, 0), -59.280837410359905, 1e-4);
}

TEST(Galan, AThresholdOfOneE300IsNeverReachedAndHasNoGradient) {
  // x = 4 - 4 e^-t stays below every switching value near 4 (r = x^3 - 5x^2 + 7x - p < 0), so
  // G = int_0^5 x dt = 16 + 4 e^-5 for any huge p, and dG/dp = 0. The sensitivities' absolute
  // tolerance atol / |p| was subnormal at p = 1e300 and the first step failed.
  Problem pb = examples::galan();
  pb.set_nominal("p", 1e300);
  const double G = 16.0 + 4.0 * std::exp(-5.0);
  const Solution forward = forward_sensitivity(pb);
  const Solution backward = adjoint(pb);
  EXPECT_TRUE(forward.events.empty());
  EXPECT_NEAR(forward.costs[0], G, 1e-8);
  EXPECT_EQ(forward.cost_gradient(0, 0), 0.0);
  EXPECT_EQ(backward.cost_gradient(0, 0), 0.0);
  EXPECT_NEAR(backward.initial_state_gradient(0, 0), 1.0 - std::exp(-5.0), 1e-7);  // d G / d x0
}
