// The built-in hysteretic oscillator against the reference of theory/hybrid-dae.md section 7
// (derived and checked there by RK4 with two step sizes agreeing to 10 digits, FSA, 002's
// Algorithm 1 and the augmented-state adjoint): the 19 reversals, the end state, G, dG/dp and
// lambda(0+); forward, adjoint and complex step agree; the start on the guard is accepted only
// where the model declares it.
#include <saltus/examples/builtin.hpp>
#include <saltus/solvers/adjoint.hpp>
#include <saltus/solvers/simulate.hpp>
#include <saltus/verify/gradient.hpp>

#include <gtest/gtest.h>

#include <cmath>

namespace {

using saltus::Problem;

double relative(double a, double b) { return std::abs(a - b) / std::abs(b); }

TEST(Hysteretic, ReversalsAndEndStateMatchTheReference) {
  const Problem pb = saltus::examples::make_example("hysteretic");
  const saltus::Solution s = saltus::simulate(pb);
  ASSERT_EQ(s.events.size(), 19u);
  // (t_i, u_i, z_i) of reversals 1, 2, 10, 19 (theory table).
  const struct {
    int index;
    double t, u, z;
  } table[] = {{1, 0.4215126674, 1.61824715e-3, 0.226654393},
               {2, 0.8710606940, -4.87659506e-3, -0.541649366},
               {10, 5.1795568591, -9.35283258e-2, -1.66932596},
               {19, 9.7128048062, 1.69021497e-1, 2.41441369}};
  for (const auto& row : table) {
    const auto& e = s.events[static_cast<size_t>(row.index - 1)];
    EXPECT_NEAR(e.time, row.t, 2e-9) << "reversal " << row.index;
    EXPECT_LT(relative(e.state_after[2], row.u), 1e-7) << "u* after reversal " << row.index;  // u* <- u
    EXPECT_LT(relative(e.state_after[3], row.z), 1e-7) << "z* after reversal " << row.index;  // z* <- z
    EXPECT_EQ(e.name, row.index % 2 == 1 ? "to_unloading" : "to_loading");
  }
  EXPECT_LT(relative(s.final_state[0], -3.805399e-2), 1e-6);
  EXPECT_LT(relative(s.final_state[1], -1.058072), 1e-6);
  EXPECT_LT(relative(s.costs[0], 0.0499397886), 3e-8);  // the quadrature at rtol 1e-10
}

TEST(Hysteretic, GradientsMatchTheReferenceInEveryMethod) {
  const Problem pb = saltus::examples::make_example("hysteretic");
  const double reference[] = {-1.3366439e-5, 3.2667902e-3, -1.5302250e-6};
  const saltus::Solution forward = saltus::forward_sensitivity(pb);
  const saltus::Solution adjoint = saltus::adjoint(pb);
  const saltus::GradientEstimate complex = saltus::complex_step(pb, pb.nominal_parameters(), pb.options());
  for (int j = 0; j < 3; ++j) {
    EXPECT_LT(relative(forward.cost_gradient(0, j), reference[j]), 2e-6) << "forward " << j;
    EXPECT_LT(relative(adjoint.cost_gradient(0, j), reference[j]), 2e-6) << "adjoint " << j;
    EXPECT_LT(relative(complex.cost_gradient(0, j), reference[j]), 2e-6) << "complex step " << j;
  }
  // dG/dbeta = 0 exactly at beta = 0: the beta terms are O(beta^3).
  EXPECT_EQ(forward.cost_gradient(0, 3), 0.0);
  EXPECT_EQ(adjoint.cost_gradient(0, 3), 0.0);
  // lambda(0+) = (-4.6826e-4, 9.0622e-5) for (u, v).
  EXPECT_LT(relative(adjoint.initial_state_gradient(0, 0), -4.6826e-4), 1e-4);
  EXPECT_LT(relative(adjoint.initial_state_gradient(0, 1), 9.0622e-5), 1e-4);
}

TEST(Hysteretic, ParametersOutsideTheLawsDomainAreRefused) {
  Problem pb = saltus::examples::make_example("hysteretic");
  EXPECT_THROW(pb.set_nominal("kb", 400.0), saltus::InputError);
  EXPECT_THROW(pb.set_nominal("alpha", -1.0), saltus::InputError);
}

/// y' = t^2 from y(0) = 0 starts on the guard y (r = r-dot = 0) and leaves it upwards.
Problem starts_on_guard(bool declared) {
  Problem pb("start_on_guard");
  pb.set_states({"y"});
  pb.add_parameter("a", 1.0);
  pb.set_initial_state([](const auto& p, auto x0) { x0[0] = 0.0 * p[0]; });
  pb.add_mode("m", [](auto t, const auto&, const auto& p, auto xdot) { xdot[0] = p[0] * t * t - 0.1 * t; });
  auto event = pb.add_event("cross", saltus::Direction::Falling, [](auto, const auto& x, const auto&) { return x[0]; });
  event.jump([](auto, const auto& x, const auto&, auto xp) { xp[0] = x[0]; });
  if (declared) event.starts_on_guard();
  pb.add_terminal_cost("y_T", [](const auto& x, const auto&) { return x[0]; });
  pb.options().tf = 1.0;
  return pb;
}

TEST(Hysteretic, AStartOnAGuardIsIgnoredOnlyWhereDeclared) {
  EXPECT_THROW(saltus::simulate(starts_on_guard(false)), saltus::InputError);
  // y = a t^3 / 3 - 0.05 t^2 dips below zero first, so the falling guard would fire at once if
  // it were watched from t = 0; declared, the root at t0 is ignored and the run goes on.
  const saltus::Solution s = saltus::simulate(starts_on_guard(true));
  EXPECT_NEAR(s.costs[0], 1.0 / 3.0 - 0.05, 1e-8);
}

}  // namespace
