// ball1d against closed forms: theory/hybrid-ode.md section 11 (derived independently of the
// code) and the free-flight formulas of docs/benchmarks.md.
#include <saltus/examples/builtin.hpp>
#include <saltus/solvers/adjoint.hpp>
#include <saltus/solvers/simulate.hpp>
#include <saltus/verify/gradient.hpp>

#include <gtest/gtest.h>

#include <cmath>
#include <complex>

using namespace saltus;

namespace {

// Parameter order of the ball1d example: g, c, e, h0, v0, r.
enum { G, C, E, H0, V0, R };

Problem ball_without_drag(double tf) {
  Problem pb = examples::ball1d();
  pb.set_nominal("c", 0.0);
  pb.options().tf = tf;
  return pb;
}

// Closed form of the drag-free ball at time T (after any number of bounces), as a template so
// that the complex step gives its exact derivatives independently of Saltus.
template <class S>
void ball_closed_form(const S& g, const S& e, const S& h0, const S& v0, const S& r, double T,
                      S& h, S& v) {
  using std::sqrt;
  S w = sqrt(v0 * v0 + 2.0 * g * (h0 - r));  // impact speed
  S t_hit = (v0 + w) / g;
  S t_prev = 0.0 * g;
  S start_h = h0, start_v = v0;
  while (std::real(t_hit) < T) {
    start_h = r;
    start_v = e * w;  // leaves the floor at speed e w
    w = start_v;
    t_prev = t_hit;
    t_hit = t_hit + 2.0 * start_v / g;
  }
  const S dt = T - t_prev;
  h = start_h + start_v * dt - 0.5 * g * dt * dt;
  v = start_v - g * dt;
}

}  // namespace

TEST(Ball1d, FirstImpactTimeAndItsSensitivityMatchClosedForm) {
  Problem pb = ball_without_drag(2.0);
  const Solution s = forward_sensitivity(pb);
  ASSERT_GE(s.events.size(), 2u);
  // theory/hybrid-ode.md section 11.2: H = 1, v0 = 0, g = 9.81, e = 0.8.
  EXPECT_NEAR(s.events[0].time, 0.451523640985731, 1e-10);
  EXPECT_NEAR(s.events[1].time, 1.17396146656290, 1e-10);
  const auto& tau1 = s.events[0].dtime_dp;
  EXPECT_NEAR(tau1[H0], 0.225761820492865, 1e-9);
  EXPECT_NEAR(tau1[V0], 0.101936799184506, 1e-9);
  EXPECT_NEAR(tau1[G], -0.0230134373591096, 1e-9);
  EXPECT_NEAR(tau1[E], 0.0, 1e-12);
  EXPECT_NEAR(tau1[R], -0.225761820492865, 1e-9);  // dt1/dr = -dt1/dh0 (benchmarks.md)
  const auto& tau2 = s.events[1].dtime_dp;
  EXPECT_NEAR(tau2[H0], 0.586980733281450, 1e-9);
  EXPECT_NEAR(tau2[V0], 0.101936799184506, 1e-9);
  EXPECT_NEAR(tau2[G], -0.0598349371336850, 1e-9);
  EXPECT_NEAR(tau2[E], 0.903047281971462, 1e-9);
}

TEST(Ball1d, SensitivityJumpAtFirstImpactMatchesClosedForm) {
  const Solution s = forward_sensitivity(ball_without_drag(2.0));
  const auto& ev = s.events[0];
  // Q-, Q+ (row h) and V-, V+ (row v) of section 11.2 in the order (H, v0, g, e).
  const int cols[4] = {H0, V0, G, E};
  const double q_minus[4] = {1, 0.451523640985731, -0.101936799184506, 0};
  const double q_plus[4] = {-0.8, -0.361218912788585, 0.0815494393476045, 0};
  const double v_minus[4] = {0, 1, -0.451523640985731, 0};
  const double v_plus[4] = {3.98650222626302, 1.0, -0.0451523640985730, 4.42944691807002};
  for (int k = 0; k < 4; ++k) {
    EXPECT_NEAR(ev.sensitivity_before(0, cols[k]), q_minus[k], 1e-8) << "Q- column " << k;
    EXPECT_NEAR(ev.sensitivity_after(0, cols[k]), q_plus[k], 1e-8) << "Q+ column " << k;
    EXPECT_NEAR(ev.sensitivity_before(1, cols[k]), v_minus[k], 1e-8) << "V- column " << k;
    EXPECT_NEAR(ev.sensitivity_after(1, cols[k]), v_plus[k], 1e-8) << "V+ column " << k;
  }
}

TEST(Ball1d, TerminalStateAndGradientMatchClosedFormAfterThreeBounces) {
  Problem pb = ball_without_drag(2.0);
  const Solution s = forward_sensitivity(pb);
  EXPECT_EQ(s.events.size(), 3u);
  const Eigen::VectorXd p = pb.nominal_parameters();
  double h = 0, v = 0;
  ball_closed_form(p[G], p[E], p[H0], p[V0], p[R], 2.0, h, v);
  EXPECT_NEAR(s.final_state[0], h, 1e-9);
  EXPECT_NEAR(s.final_state[1], v, 1e-9);
  // Exact derivatives of the closed form by complex step (independent of the solver).
  const int h_T = pb.cost_index("h_T"), v_T = pb.cost_index("v_T");
  for (int k : {G, E, H0, V0, R}) {
    std::complex<double> pc[6];
    for (int i = 0; i < 6; ++i) pc[i] = p[i];
    pc[k] += std::complex<double>(0, 1e-30);
    std::complex<double> hc, vc;
    ball_closed_form(pc[G], pc[E], pc[H0], pc[V0], pc[R], 2.0, hc, vc);
    EXPECT_NEAR(s.cost_gradient(h_T, k), hc.imag() / 1e-30, 1e-7) << "dh_T/dp" << k;
    EXPECT_NEAR(s.cost_gradient(v_T, k), vc.imag() / 1e-30, 1e-7) << "dv_T/dp" << k;
  }
}

TEST(Ball1d, JumpingRunningCostMatchesSection11Point2) {
  // psi = integral_0^1.5 v^2/2 dt, two impacts; value and gradient in closed form (hybrid-ode.md
  // section 11.2): gradient w.r.t. (H, v0, g, e).
  Problem pb("ball_half_v2");
  pb.set_states({"q", "v"});
  pb.add_parameter("H", 1.0);
  pb.add_parameter("v0", 0.0);
  pb.add_parameter("g", 9.81);
  pb.add_parameter("e", 0.8);
  pb.set_initial_state([](const auto& p, auto x) {
    x[0] = p[0];
    x[1] = p[1];
  });
  pb.add_mode("flight", [](auto, const auto& x, const auto& p, auto xdot) {
    xdot[0] = x[1];
    xdot[1] = -p[2];
  });
  pb.add_event("impact", Direction::Falling, [](auto, const auto& x, const auto&) { return x[0]; })
      .jump([](auto, const auto& x, const auto& p, auto xp) {
        xp[0] = x[0];
        xp[1] = -p[3] * x[1];
      });
  pb.add_running_cost("psi", [](auto, const auto& x, const auto&, const auto&) {
    return 0.5 * x[1] * x[1];
  });
  pb.options().tf = 1.5;
  pb.options().rtol = 1e-11;
  pb.options().atol = 1e-13;
  const Solution s = forward_sensitivity(pb);
  EXPECT_NEAR(s.costs[0], 3.37626778997619, 1e-9);
  const double expected[4] = {5.01482701050713, -0.00673797817970, 0.177136449484735,
                              8.46513052730042};
  for (int k = 0; k < 4; ++k) EXPECT_NEAR(s.cost_gradient(0, k), expected[k], 1e-8) << k;
}

TEST(Ball1d, DragAndFloorRegressionOfSection11Point3) {
  // hybrid-ode.md section 11.3: drag, floor height x_f, psi = int (v^2 + q/2) dt + q(T) v(T).
  Problem pb("ball_regression");
  pb.set_states({"q", "v"});
  for (auto [name, value] : {std::pair{"H", 1.0}, {"v0", 0.5}, {"g", 9.81}, {"e", 0.8},
                             {"c", 0.3}, {"xf", 0.1}}) {
    pb.add_parameter(name, value);
  }
  pb.set_initial_state([](const auto& p, auto x) {
    x[0] = p[0];
    x[1] = p[1];
  });
  pb.add_mode("flight", [](auto, const auto& x, const auto& p, auto xdot) {
    xdot[0] = x[1];
    xdot[1] = -p[2] - p[4] * x[1];
  });
  pb.add_event("impact", Direction::Falling,
               [](auto, const auto& x, const auto& p) { return x[0] - p[5]; })
      .jump([](auto, const auto& x, const auto& p, auto xp) {
        xp[0] = x[0];
        xp[1] = -p[3] * x[1];
      });
  pb.add_cost(
      "psi",
      [](auto, const auto& x, const auto&, const auto&) { return x[1] * x[1] + 0.5 * x[0]; },
      [](const auto& x, const auto&) { return x[0] * x[1]; });
  pb.options().tf = 1.7;
  pb.options().rtol = 1e-11;
  pb.options().atol = 1e-13;
  const Solution s = forward_sensitivity(pb);
  ASSERT_EQ(s.events.size(), 3u);
  EXPECT_NEAR(s.events[0].time, 0.491433897180, 1e-10);
  EXPECT_NEAR(s.events[1].time, 1.131660105815, 1e-10);
  EXPECT_NEAR(s.events[2].time, 1.615742870790, 1e-10);
  EXPECT_NEAR(s.costs[0], 6.2994414796, 1e-9);
  const double expected[6] = {9.6617148078,  0.57498875323, 0.30928192668,
                              18.726771588, -3.6659107477, -7.8206039735};
  for (int k = 0; k < 6; ++k) EXPECT_NEAR(s.cost_gradient(0, k), expected[k], 2e-8) << k;
  // The same through the complex step with complex event times.
  const GradientEstimate cs = complex_step(pb, pb.nominal_parameters(), pb.options());
  for (int k = 0; k < 6; ++k) EXPECT_NEAR(cs.cost_gradient(0, k), expected[k], 2e-8) << k;
}

// A drag-free ball with e = 0.7 settles on its floor: its bounces accumulate at
// t_inf = t1 + D1 / (1 - e) (t1 = sqrt(2 h0 / g), D1 = 2 e sqrt(2 g h0) / g), after which it rests
// at h = r. Closed forms (independent of Saltus) for t_inf, dt_inf/de and h_mean = integral of h:
//   h_mean = (2/3) t1 h0 + (2/3) (v1^3 / g^2) e^3 / (1 - e^3),  v1 = sqrt(2 g h0)  (r = 0).
TEST(Ball1dRest, TheBouncesAccumulateAndTheBallRestsWithExactSensitivities) {
  Problem pb = ball_without_drag(3.0);
  pb.set_nominal("e", 0.7);
  const double g = 9.81, e = 0.7, h0 = 1.0;
  const double t1 = std::sqrt(2.0 * h0 / g), v1 = std::sqrt(2.0 * g * h0), d1 = 2.0 * e * v1 / g;
  const double t_inf = t1 + d1 / (1.0 - e);
  const double dt_inf_de = d1 / ((1.0 - e) * (1.0 - e)) + 2.0 * v1 / g / (1.0 - e);
  const double series = std::pow(e, 3) / (1.0 - std::pow(e, 3));
  const double h_mean = 2.0 / 3.0 * t1 * h0 + 2.0 / 3.0 * std::pow(v1, 3) / (g * g) * series;
  const double dh_mean_de = 2.0 / 3.0 * std::pow(v1, 3) / (g * g) * 3.0 * e * e / std::pow(1.0 - std::pow(e, 3), 2);

  const Solution s = forward_sensitivity(pb);
  ASSERT_FALSE(s.events.empty());
  const EventRecord& rest = s.events.back();
  EXPECT_TRUE(rest.rest);
  EXPECT_EQ(rest.name, "impact (rest)");
  EXPECT_EQ(pb.mode(s.final_mode).name, "rest");
  EXPECT_GT(s.events.size(), 10u);
  EXPECT_NEAR(rest.accumulation_time, t_inf, 1e-6);
  EXPECT_NEAR(rest.time, t_inf, 1e-3);  // at rest once the remaining tail is below zeno_tail
  EXPECT_NEAR(rest.daccumulation_dp[E], dt_inf_de, 1e-5 * dt_inf_de);
  // The resting ball stays put: h = r, v = 0 at every output after it came to rest.
  for (size_t i = 0; i < s.times.size(); ++i) {
    if (s.times[i] <= rest.time) continue;
    EXPECT_EQ(s.states(static_cast<Eigen::Index>(i), 0), 0.0);
    EXPECT_EQ(s.states(static_cast<Eigen::Index>(i), 1), 0.0);
  }
  const int h_mean_index = pb.cost_index("h_mean");
  EXPECT_NEAR(s.costs[h_mean_index], h_mean, 1e-7);
  EXPECT_NEAR(s.cost_gradient(h_mean_index, E), dh_mean_de, 1e-6 * dh_mean_de);
  // The adjoint and the complex step take the same resting transition and agree.
  const Solution adj = adjoint(pb);
  const GradientEstimate cs = complex_step(pb, pb.nominal_parameters(), pb.options());
  for (int c = 0; c < pb.n_costs(); ++c) {
    for (int k = 0; k < pb.n_parameters(); ++k) {
      const double scale = 1e-6 * (1.0 + std::abs(s.cost_gradient(c, k)));
      EXPECT_NEAR(adj.cost_gradient(c, k), s.cost_gradient(c, k), scale) << c << "," << k;
      EXPECT_NEAR(cs.cost_gradient(c, k), s.cost_gradient(c, k), scale) << c << "," << k;
    }
  }
}

// With e = 0 the first impact would leave the ball on its floor with zero speed: it rests at
// once, at t1, with dt1/dh0 = 1 / sqrt(2 g h0).
TEST(Ball1dRest, RestitutionZeroRestsAtTheFirstImpact) {
  Problem pb = ball_without_drag(1.0);
  pb.set_nominal("e", 0.0);
  const Solution s = forward_sensitivity(pb);
  ASSERT_EQ(s.events.size(), 1u);
  EXPECT_TRUE(s.events[0].rest);
  const double t1 = std::sqrt(2.0 / 9.81);
  EXPECT_NEAR(s.events[0].time, t1, 1e-9);
  EXPECT_DOUBLE_EQ(s.events[0].accumulation_time, s.events[0].time);
  EXPECT_NEAR(s.events[0].daccumulation_dp[H0], 1.0 / std::sqrt(2.0 * 9.81), 1e-8);
  EXPECT_EQ(s.final_state[0], 0.0);
  EXPECT_EQ(s.final_state[1], 0.0);
  EXPECT_NEAR(s.costs[pb.cost_index("h_mean")], 2.0 / 3.0 * t1, 1e-9);
}
