// time_events against hand-derived values. With A = (x0 + alpha) alpha + beta - alpha and
// B = delta A + gamma - beta:  x(T) = 2 B^2 + T - gamma, so
//   dx_T/dx0 = 4B delta alpha,  dx_T/dalpha = 4B delta (x0 + 2 alpha - 1),
//   dx_T/dbeta = 4B (delta - 1),  dx_T/ddelta = 4B A,  dx_T/dgamma = 4B - 1.
#include <saltus/examples/builtin.hpp>
#include <saltus/solvers/simulate.hpp>

#include <gtest/gtest.h>

using namespace saltus;

TEST(TimeEvents, HandDerivedStateAndGradient) {
  const double x0 = 1.0, alpha = 1.5, beta = 2.5, delta = 5.5, gamma = 3.5, T = 5.0;
  const double A = (x0 + alpha) * alpha + beta - alpha;
  const double B = delta * A + gamma - beta;
  const Solution s = forward_sensitivity(examples::time_events());
  EXPECT_NEAR(s.final_state[0], 2 * B * B + T - gamma, 1e-8);
  EXPECT_NEAR(s.final_state[0], 1473.03125, 1e-8);
  const double expected[5] = {4 * B * delta * alpha, 4 * B * delta * (x0 + 2 * alpha - 1),
                              4 * B * (delta - 1), 4 * B * A, 4 * B - 1};
  for (int k = 0; k < 5; ++k) EXPECT_NEAR(s.cost_gradient(0, k), expected[k], 1e-7) << k;
}

TEST(TimeEvents, EventTimesAndTheirDerivativesAreUnitVectors) {
  const Solution s = forward_sensitivity(examples::time_events());
  ASSERT_EQ(s.events.size(), 3u);
  const double times[3] = {1.5, 2.5, 3.5};
  const int own[3] = {1, 2, 4};  // alpha, beta, gamma
  for (int i = 0; i < 3; ++i) {
    EXPECT_NEAR(s.events[static_cast<size_t>(i)].time, times[i], 1e-12);
    for (int k = 0; k < 5; ++k) {
      EXPECT_NEAR(s.events[static_cast<size_t>(i)].dtime_dp[k], k == own[i] ? 1.0 : 0.0, 1e-12);
    }
  }
}

TEST(TimeEvents, StatesAtOutputTimesFollowTheRamp) {
  Problem pb = examples::time_events();
  pb.options().output_times = {0.0, 1.0, 2.0, 3.0, 4.0};
  const Solution s = simulate(pb);
  const double expected[6] = {1.0, 2.0, 3.75 + 0.5, 5.5 * 4.75 + 0.5,
                              2 * 27.125 * 27.125 + 0.5, 1473.03125};
  ASSERT_EQ(s.times.size(), 6u);  // tf is appended
  for (int i = 0; i < 6; ++i) EXPECT_NEAR(s.states(i, 0), expected[i], 1e-8) << s.times[size_t(i)];
}
