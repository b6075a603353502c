// Hybrid DAEs on IDAS (docs/dae.md) against references that did not come from the DAE path:
// published SUNDIALS values, closed forms (theory/hybrid-dae.md section 6), the ODE path on
// CVODES for the same models, and central differences.
#include <saltus/core/error.hpp>
#include <saltus/equations/equation_file.hpp>
#include <saltus/examples/builtin.hpp>
#include <saltus/solvers/adjoint.hpp>
#include <saltus/solvers/dae_transfer.hpp>
#include <saltus/solvers/simulate.hpp>
#include <saltus/verify/gradient.hpp>

#include <fmt/format.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <string>

#include "support/expect_message.hpp"

using namespace saltus;
using saltus::test_support::expect_message;

namespace {

void expect_relative(double value, double reference, double relative, const std::string& what = "") {
  EXPECT_NEAR(value, reference, relative * std::abs(reference)) << what << ": reference " << reference;
}

/// galan (theory/hybrid-dae.md section 6) with the switching function as an algebraic state
/// z = x^3 - 5x^2 + 7x, and the guard z - p on it: the event time's derivative then needs
/// z-dot at the event, which only the differentiated algebraic equation gives.
Problem galan_dae() {
  Problem pb("galan_dae", "galan with the switching function as an algebraic state");
  pb.set_states({"x", "z"});
  pb.set_algebraic_states({"z"});
  pb.add_parameter("p", 2.9);
  pb.set_initial_state([](const auto&, auto x0) {
    x0[0] = 0.0;
    x0[1] = 1.0;  // a wrong guess on purpose: the consistent start makes it 0
  });
  const auto switching = [](const auto& x) { return x[0] * x[0] * x[0] - 5.0 * x[0] * x[0] + 7.0 * x[0]; };
  const int a = pb.add_residual_mode("A", [switching](auto, const auto& x, const auto& xdot, const auto&, auto r) {
    r[0] = xdot[0] - (4.0 - x[0]);
    r[1] = x[1] - switching(x);
  });
  const int b = pb.add_residual_mode("B", [switching](auto, const auto& x, const auto& xdot, const auto&, auto r) {
    r[0] = xdot[0] - (10.0 - 2.0 * x[0]);
    r[1] = x[1] - switching(x);
  });
  const auto guard = [](auto, const auto& x, const auto& p) { return x[1] - p[0]; };
  pb.add_event("A_to_B", Direction::Rising, guard).only_in({a}).switch_to(b);
  pb.add_event("B_to_A", Direction::Falling, guard).only_in({b}).switch_to(a);
  pb.add_running_cost("G", [](auto, const auto& x, const auto&, const auto&) { return x[0]; });
  pb.options().tf = 5.0;
  pb.options().rtol = 1e-10;
  pb.options().atol = 1e-12;
  return pb;
}

/// A ball dropped from h0 whose energy E = v^2/2 + g h is an algebraic state; it bounces with
/// restitution e (v+ = -e v-), which changes E, re-solved after the jump. Cost: integral of E.
Problem energy_ball() {
  Problem pb("energy_ball", "bouncing ball with its energy as an algebraic state");
  pb.set_states({"h", "v", "E"});
  pb.set_algebraic_states({"E"});
  pb.add_parameter("h0", 10.0);
  pb.add_parameter("e", 0.8);
  pb.add_parameter("g", 9.81);
  pb.set_initial_state([](const auto& p, auto x0) {
    x0[0] = p[0];
    x0[1] = 0.0;
    x0[2] = 0.0;
  });
  pb.add_residual_mode("flight", [](auto, const auto& x, const auto& xdot, const auto& p, auto r) {
    r[0] = xdot[0] - x[1];
    r[1] = xdot[1] + p[2];
    r[2] = x[2] - (0.5 * x[1] * x[1] + p[2] * x[0]);
  });
  pb.add_event("impact", Direction::Falling, [](auto, const auto& x, const auto&) { return x[0]; })
      .jump([](auto, const auto& x, const auto& p, auto xp) {
        xp = x;
        xp[1] = -p[1] * x[1];
      });
  pb.add_running_cost("energy", [](auto, const auto& x, const auto&, const auto&) { return x[2]; });
  pb.add_terminal_cost("E_T", [](const auto& x, const auto&) { return x[2]; });
  pb.options().tf = 3.0;
  pb.options().rtol = 1e-10;
  pb.options().atol = 1e-12;
  return pb;
}

}  // namespace

TEST(RobertsonDae, PublishedIdasExampleAtPointFour) {
  // idasRoberts_FSA_dns: rtol 1e-4, atol (1e-8, 1e-14, 1e-6); the same values as the CVODES
  // example's, since both solve the same kinetics.
  Problem pb = examples::robertson_dae();
  Options o = pb.options();
  o.rtol = 1e-4;
  o.atol_per_state = {1e-8, 1e-14, 1e-6};
  o.output_times = {0.0, 0.4};
  o.tf = 0.4;
  const Solution s = forward_sensitivity(pb, pb.nominal_parameters(), o);
  const Eigen::MatrixXd& S = s.sensitivities.back();
  expect_relative(s.final_state[0], 9.8517e-01, 2e-4, "y1");
  expect_relative(s.final_state[1], 3.3864e-05, 2e-4, "y2");
  expect_relative(s.final_state[2], 1.4794e-02, 2e-4, "y3");
  expect_relative(S(0, 0), -3.5595e-01, 5e-4, "dy1/dp1");
  expect_relative(S(1, 0), 3.9025e-04, 5e-4, "dy2/dp1");
  expect_relative(S(2, 0), 3.5556e-01, 5e-4, "dy3/dp1");
  // The algebraic row is consistent: the sensitivities of the conservation law sum to zero.
  EXPECT_NEAR(S.col(0).sum(), 0.0, 1e-12);
}

TEST(RobertsonDae, AgreesWithTheOdeAndThePublishedGradient) {
  const Solution dae = forward_sensitivity(examples::robertson_dae());
  const Solution ode = forward_sensitivity(examples::robertson());
  // Published (cvsRoberts_ASAi_dns): dG/dp = (7.6842e+05, -3.0691e+00, 5.1144e-04).
  expect_relative(dae.costs[0], 3.9983e+07, 1e-4, "G");
  expect_relative(dae.cost_gradient(0, 0), 7.6842e+05, 2e-4, "dG/dp1");
  expect_relative(dae.cost_gradient(0, 1), -3.0691e+00, 2e-4, "dG/dp2");
  expect_relative(dae.cost_gradient(0, 2), 5.1144e-04, 2e-4, "dG/dp3");
  // The ODE on CVODES, at the same tolerances, within their accuracy.
  expect_relative(dae.costs[0], ode.costs[0], 1e-8, "G vs ODE");
  for (int j = 0; j < 3; ++j) expect_relative(dae.cost_gradient(0, j), ode.cost_gradient(0, j), 2e-5, "dG/dp vs ODE");
}

TEST(GalanDae, ClosedFormThroughAGuardOnTheAlgebraicState) {
  Problem pb = galan_dae();
  const Solution s = forward_sensitivity(pb);
  ASSERT_EQ(s.events.size(), 3u);
  const double times[] = {0.219215922289804, 0.275812591473484, 1.266347841796072};
  const double taus[] = {0.315707550098, 0.025508077526, 0.744917151578};
  const double s_plus[] = {-1.645655005864, -1.348070546155, -2.754505037664};
  for (int i = 0; i < 3; ++i) {
    EXPECT_NEAR(s.events[i].time, times[i], 1e-9) << "event " << i;
    EXPECT_NEAR(s.events[i].dtime_dp[0], taus[i], 1e-7) << "tau " << i;
    EXPECT_NEAR(s.events[i].sensitivity_after(0, 0), s_plus[i], 1e-7) << "S+ " << i;
    // z follows x: its sensitivity is z_x S_x, continuous in x.
    const double x = s.events[i].state_after[0];
    EXPECT_NEAR(s.events[i].sensitivity_after(1, 0), (3 * x * x - 10 * x + 7) * s_plus[i], 1e-6);
  }
  EXPECT_NEAR(s.costs[0], 20.0290746533596, 1e-8);
  EXPECT_NEAR(s.cost_gradient(0, 0), -2.31195310744389, 1e-7);
  EXPECT_NEAR(s.final_state[0], 4.99884240621728, 1e-9);
  EXPECT_NEAR(s.final_sensitivity(0, 0), -0.00157410794767, 1e-8);
  // The inconsistent initial guess z = 1 was corrected to z(0) = 0.
  EXPECT_NEAR(s.states(0, 1), 0.0, 1e-15);
}

TEST(GalanDae, AdjointMatchesTheClosedForm) {
  Problem pb = galan_dae();
  const Solution s = adjoint(pb);
  EXPECT_NEAR(s.costs[0], 20.0290746533596, 1e-8);
  EXPECT_NEAR(s.cost_gradient(0, 0), -2.31195310744389, 1e-7);
  // lambda(0) of the ODE (theory section 6): dG/dx0 = 1.249710601554, through the differential
  // state only.
  EXPECT_NEAR(s.initial_state_gradient(0, 0), 1.249710601554, 1e-7);
  EXPECT_EQ(s.initial_state_gradient(0, 1), 0.0);
}

// p = 2.99999: the guard z - p is positive for 0.56 ms only, inside one IDAS step; the pair of
// switches is found on IDAS' interpolant (GuardExcursions; before: one switch, dG/dp -0.375).
// Reference: galan's closed form (mpmath, 40 digits), dG/dp by its central difference, h = 1e-13.
TEST(GalanDae, ASwitchPairInsideOneStepIsFound) {
  Problem pb = galan_dae();
  pb.set_nominal("p", 2.99999);
  const double times[] = {0.28693740987468955, 0.28749642753872267, 1.3853601647339848};
  const Eigen::VectorXd p = pb.nominal_parameters();
  for (const bool adjoint_run : {false, true}) {
    const Solution s = adjoint_run ? adjoint(pb, p, pb.options()) : forward_sensitivity(pb, p, pb.options());
    ASSERT_EQ(s.events.size(), 3u) << (adjoint_run ? "adjoint" : "forward");
    for (int i = 0; i < 3; ++i) EXPECT_NEAR(s.events[i].time, times[i], 2e-9) << "event " << i;
    EXPECT_NEAR(s.costs[0], 19.618161216508804, 1e-8);
    EXPECT_NEAR(s.cost_gradient(0, 0), -186.64674652141837, 1e-3);
  }
  EXPECT_NEAR(complex_step(pb, p, pb.options()).cost_gradient(0, 0), -186.64674652141837, 1e-3);
}

TEST(GalanDae, CentralDifferencesAgree) {
  Problem pb = galan_dae();
  const GradientEstimate fd = central_differences(pb, pb.nominal_parameters(), pb.options());
  EXPECT_NEAR(fd.cost_gradient(0, 0), -2.31195310744389, 1e-4);
}

TEST(EnergyBall, ClosedFormThroughAJumpThatChangesTheAlgebraicState) {
  Problem pb = energy_ball();
  const Solution s = forward_sensitivity(pb);
  const double h0 = 10.0, e = 0.8, g = 9.81, T = 3.0;
  const double t1 = std::sqrt(2.0 * h0 / g);
  ASSERT_EQ(s.events.size(), 1u);
  EXPECT_NEAR(s.events[0].time, t1, 1e-9);
  EXPECT_NEAR(s.events[0].state_after[2], e * e * g * h0, 1e-8);  // E+ = e^2 g h0, re-solved
  // integral of E = g h0 t1 + e^2 g h0 (T - t1); E(T) = e^2 g h0.
  const double dt1_dh0 = t1 / (2.0 * h0), dt1_dg = -t1 / (2.0 * g);
  EXPECT_NEAR(s.costs[0], g * h0 * t1 + e * e * g * h0 * (T - t1), 1e-7);
  EXPECT_NEAR(s.costs[1], e * e * g * h0, 1e-8);
  const double grad_h0 = g * t1 + g * h0 * dt1_dh0 + e * e * g * (T - t1) - e * e * g * h0 * dt1_dh0;
  const double grad_e = 2.0 * e * g * h0 * (T - t1);
  const double grad_g = h0 * t1 + g * h0 * dt1_dg + e * e * h0 * (T - t1) - e * e * g * h0 * dt1_dg;
  EXPECT_NEAR(s.cost_gradient(0, 0), grad_h0, 1e-6);
  EXPECT_NEAR(s.cost_gradient(0, 1), grad_e, 1e-6);
  EXPECT_NEAR(s.cost_gradient(0, 2), grad_g, 1e-6);
  EXPECT_NEAR(s.cost_gradient(1, 0), e * e * g, 1e-7);
  EXPECT_NEAR(s.cost_gradient(1, 1), 2.0 * e * g * h0, 1e-7);
  EXPECT_NEAR(s.cost_gradient(1, 2), e * e * h0, 1e-7);
  // tau = dt1/dp and the consistent algebraic sensitivity after the jump, E+ = e^2 g h0.
  EXPECT_NEAR(s.events[0].dtime_dp[0], dt1_dh0, 1e-9);
  EXPECT_NEAR(s.events[0].dtime_dp[2], dt1_dg, 1e-9);
  EXPECT_NEAR(s.events[0].sensitivity_after(2, 1), 2.0 * e * g * h0, 1e-7);
}

TEST(RobertsonDae, AdjointAgreesWithForwardAndPublished) {
  Problem pb = examples::robertson_dae();
  const Solution adj = adjoint(pb);
  const Solution fwd = forward_sensitivity(pb);
  expect_relative(adj.cost_gradient(0, 0), 7.6842e+05, 2e-4, "dG/dp1");
  expect_relative(adj.cost_gradient(0, 1), -3.0691e+00, 2e-4, "dG/dp2");
  expect_relative(adj.cost_gradient(0, 2), 5.1144e-04, 2e-4, "dG/dp3");
  for (int j = 0; j < 3; ++j) expect_relative(adj.cost_gradient(0, j), fwd.cost_gradient(0, j), 1e-5, "adjoint vs forward");
}

TEST(EnergyBall, AdjointThroughTheJumpAndATerminalCostOnTheAlgebraicState) {
  // E_T = E(T) reads the algebraic state: the terminal condition reduces it through the
  // algebraic equation (dae_transfer.hpp, consistent_adjoint).
  Problem pb = energy_ball();
  const Solution adj = adjoint(pb);
  const Solution fwd = forward_sensitivity(pb);
  for (int c = 0; c < 2; ++c) {
    for (int j = 0; j < 3; ++j) {
      EXPECT_NEAR(adj.cost_gradient(c, j), fwd.cost_gradient(c, j), 1e-6 * std::max(1.0, std::abs(fwd.cost_gradient(c, j))))
          << pb.cost(c).name << " " << pb.parameters()[j].name;
    }
  }
  const double e = 0.8, g = 9.81, h0 = 10.0;
  EXPECT_NEAR(adj.cost_gradient(1, 0), e * e * g, 1e-7);
  EXPECT_NEAR(adj.cost_gradient(1, 1), 2.0 * e * g * h0, 1e-7);
  // dE_T/dh(0) = e^2 g; the initial velocity matters as v0^2/2 -> 0 at v0 = 0.
  EXPECT_NEAR(adj.initial_state_gradient(1, 0), e * e * g, 1e-7);
  EXPECT_NEAR(adj.initial_state_gradient(1, 1), 0.0, 1e-7);
}

TEST(DaeComplexStep, AgreesWithForwardAdjointAndClosedForms) {
  // The complex step on IDAS: the complex residual as a real DAE of twice the size, events at
  // complex event times (complex_dae_run.cpp). An independent route to the same derivatives.
  {
    Problem pb = galan_dae();
    const GradientEstimate cs = complex_step(pb, pb.nominal_parameters(), pb.options());
    EXPECT_NEAR(cs.cost_gradient(0, 0), -2.31195310744389, 1e-7);
    const double taus[] = {0.315707550098, 0.025508077526, 0.744917151578};
    for (int i = 0; i < 3; ++i) EXPECT_NEAR(cs.event_time_gradient(i, 0), taus[i], 1e-7) << i;
    EXPECT_NEAR(cs.final_sensitivity(0, 0), -0.00157410794767, 1e-8);
  }
  {
    Problem pb = energy_ball();
    const GradientEstimate cs = complex_step(pb, pb.nominal_parameters(), pb.options());
    const Solution fwd = forward_sensitivity(pb);
    for (int c = 0; c < 2; ++c) {
      for (int j = 0; j < 3; ++j) {
        EXPECT_NEAR(cs.cost_gradient(c, j), fwd.cost_gradient(c, j), 1e-6 * std::max(1.0, std::abs(fwd.cost_gradient(c, j))));
      }
    }
  }
  {
    Problem pb = examples::robertson_dae();
    const GradientEstimate cs = complex_step(pb, pb.nominal_parameters(), pb.options());
    const Solution fwd = forward_sensitivity(pb);
    for (int j = 0; j < 3; ++j) expect_relative(cs.cost_gradient(0, j), fwd.cost_gradient(0, j), 1e-5, "complex vs forward");
  }
}

TEST(OdeOnIdas, ComplexStepGivesTheCvodesAnswer) {
  for (const char* name : {"galan", "ball1d", "time_events"}) {
    Problem pb = examples::make_example(name);
    Options o = pb.options();
    const GradientEstimate cv = complex_step(pb, pb.nominal_parameters(), o);
    o.integrator = Integrator::Idas;
    const GradientEstimate ida = complex_step(pb, pb.nominal_parameters(), o);
    for (int c = 0; c < pb.n_costs(); ++c) {
      for (int j = 0; j < pb.n_parameters(); ++j) {
        const double scale = std::max(1.0, std::abs(cv.cost_gradient(c, j)));
        EXPECT_NEAR(ida.cost_gradient(c, j), cv.cost_gradient(c, j), 1e-5 * scale) << name << " " << c << " " << j;
      }
    }
  }
}

TEST(OdeOnIdas, AdjointGivesTheCvodesAnswer) {
  for (const char* name : {"galan", "time_events", "hiskens"}) {
    Problem pb = examples::make_example(name);
    Options o = pb.options();
    const Solution cv = adjoint(pb, pb.nominal_parameters(), o);
    o.integrator = Integrator::Idas;
    const Solution ida = adjoint(pb, pb.nominal_parameters(), o);
    for (int c = 0; c < pb.n_costs(); ++c) {
      for (int j = 0; j < pb.n_parameters(); ++j) {
        const double scale = std::max(1.0, std::abs(cv.cost_gradient(c, j)));
        EXPECT_NEAR(ida.cost_gradient(c, j), cv.cost_gradient(c, j), 1e-5 * scale) << name << " " << c << " " << j;
      }
      for (int i = 0; i < pb.n_states(); ++i) {
        const double scale = std::max(1.0, std::abs(cv.initial_state_gradient(c, i)));
        EXPECT_NEAR(ida.initial_state_gradient(c, i), cv.initial_state_gradient(c, i), 1e-5 * scale) << name;
      }
    }
  }
}

TEST(OdeOnIdas, ExplicitProblemsGiveTheCvodesAnswer) {
  // An explicit ODE run through the DAE path (x-dot - f = 0 on IDAS) against CVODES.
  for (const char* name : {"galan", "ball1d", "time_events"}) {
    Problem pb = examples::make_example(name);
    Options o = pb.options();
    const Solution cv = forward_sensitivity(pb, pb.nominal_parameters(), o);
    o.integrator = Integrator::Idas;
    const Solution ida = forward_sensitivity(pb, pb.nominal_parameters(), o);
    ASSERT_EQ(ida.events.size(), cv.events.size()) << name;
    for (size_t i = 0; i < cv.events.size(); ++i) EXPECT_NEAR(ida.events[i].time, cv.events[i].time, 1e-6) << name;
    for (int c = 0; c < pb.n_costs(); ++c) {
      const double scale = std::max(1.0, std::abs(cv.costs[c]));
      EXPECT_NEAR(ida.costs[c], cv.costs[c], 1e-6 * scale) << name;
      for (int j = 0; j < pb.n_parameters(); ++j) {
        const double g_scale = std::max(1.0, std::abs(cv.cost_gradient(c, j)));
        EXPECT_NEAR(ida.cost_gradient(c, j), cv.cost_gradient(c, j), 1e-5 * g_scale) << name << " " << c << " " << j;
      }
    }
  }
}

TEST(DaeCosts, PolynomialMotionKeepsIdasAccurateAndQuick) {
  // x = t, z = 1 + x: every local error estimate of the states is zero. Cost integrals as IDAS
  // quadratures (outside IDAS's order selection) kept it at order 1 with 15181 steps and
  // integral 1.5000286; as IDAS states the integral is exact.
  Problem pb("clock", "");
  pb.set_states({"x", "z"});
  pb.set_algebraic_states({"z"});
  pb.add_parameter("a", 1.0);
  pb.set_initial_state([](const auto&, auto x0) { x0.setZero(); });
  pb.add_residual_mode("m", [](auto, const auto& x, const auto& xdot, const auto& p, auto r) {
    r[0] = xdot[0] - p[0];
    r[1] = x[1] - (1.0 + x[0]);
  });
  pb.add_running_cost("Z", [](auto, const auto& x, const auto&, const auto&) { return x[1]; });
  pb.options().tf = 1.0;
  const Solution s = forward_sensitivity(pb);
  // Within the tolerances (rtol 1e-8); the old error was 2.9e-5.
  EXPECT_NEAR(s.costs[0], 1.5, 1e-8);               // integral of 1 + a t
  EXPECT_NEAR(s.cost_gradient(0, 0), 0.5, 1e-8);    // integral of t
  EXPECT_LT(s.stats.steps, 200);
  // The adjoint: lambda_x = T - t is linear, so its gradient integral needs the same care.
  const Solution a = adjoint(pb);
  EXPECT_NEAR(a.costs[0], 1.5, 1e-8);
  EXPECT_NEAR(a.cost_gradient(0, 0), 0.5, 1e-8);
  EXPECT_LT(a.adjoint.backward.steps, 200);
  const GradientEstimate cs = complex_step(pb, pb.nominal_parameters(), pb.options());
  EXPECT_NEAR(cs.costs[0], 1.5, 1e-8);
  EXPECT_NEAR(cs.cost_gradient(0, 0), 0.5, 1e-8);
}

namespace {
/// circle_drift's closed form (examples/builtin/circle_drift.cpp) in complex arithmetic:
/// tan(theta/2) = tan(theta0/2) exp(-a t / R) until x2 = R sin theta falls to h, then
/// exp(+a (t - t_e) / R); G = integral of R cos theta = (R/lambda) [ln u - ln(1 + u^2)] pieces.
struct CircleClosedForm {
  Complex G, x2_T, t_e, z0;
};
CircleClosedForm circle_closed_form(Complex a, Complex R, Complex theta0, Complex h, double T) {
  const Complex lambda = a / R;
  const Complex u0 = std::tan(theta0 / 2.0);
  const Complex ue = std::tan(std::asin(h / R) / 2.0);
  const Complex te = std::log(u0 / ue) / lambda;
  const Complex uT = ue * std::exp(lambda * (T - te));
  const auto F = [](Complex u) { return std::log(u) - std::log(1.0 + u * u); };
  CircleClosedForm c;
  c.G = R / lambda * (F(u0) - F(ue)) + R / lambda * (F(uT) - F(ue));
  c.x2_T = R * 2.0 * uT / (1.0 + uT * uT);
  c.t_e = te;
  c.z0 = -a * std::cos(theta0) / R;
  return c;
}
}  // namespace

TEST(CircleDriftIndex2, ForwardAdjointAndComplexStepMatchTheClosedForm) {
  Problem pb = examples::circle_drift();
  const Eigen::VectorXd p = pb.nominal_parameters();
  const Solution s = forward_sensitivity(pb);
  const CircleClosedForm exact = circle_closed_form(p[0], p[1], p[2], p[3], 3.0);
  ASSERT_EQ(s.events.size(), 1u);
  EXPECT_NEAR(s.events[0].time, exact.t_e.real(), 1e-9);
  EXPECT_NEAR(s.costs[0], exact.G.real(), 1e-8);
  EXPECT_NEAR(s.costs[1], exact.x2_T.real(), 1e-8);
  EXPECT_NEAR(s.states(0, 2), exact.z0.real(), 1e-12);  // the completion solved for z(0)
  // The closed form differentiated by complex step, parameter by parameter.
  const GradientEstimate cs = complex_step(pb, p, pb.options());
  for (int j = 0; j < 4; ++j) {
    Complex q[4] = {p[0], p[1], p[2], p[3]};
    q[j] += Complex(0.0, 1e-30);
    const CircleClosedForm d = circle_closed_form(q[0], q[1], q[2], q[3], 3.0);
    const double dG = d.G.imag() / 1e-30, dx2 = d.x2_T.imag() / 1e-30, dte = d.t_e.imag() / 1e-30;
    EXPECT_NEAR(s.cost_gradient(0, j), dG, 1e-7 * std::max(1.0, std::abs(dG))) << j;
    EXPECT_NEAR(s.cost_gradient(1, j), dx2, 1e-7 * std::max(1.0, std::abs(dx2))) << j;
    EXPECT_NEAR(s.events[0].dtime_dp[j], dte, 1e-7 * std::max(1.0, std::abs(dte))) << j;
    EXPECT_NEAR(cs.cost_gradient(0, j), dG, 1e-7 * std::max(1.0, std::abs(dG))) << j;
    EXPECT_NEAR(cs.cost_gradient(1, j), dx2, 1e-7 * std::max(1.0, std::abs(dx2))) << j;
  }
  // The adjoint (through the completion: theory section 4 with the algebraic adjoint eliminated)
  // against the same closed form.
  const Solution adj = adjoint(pb);
  for (int j = 0; j < 4; ++j) {
    Complex q[4] = {p[0], p[1], p[2], p[3]};
    q[j] += Complex(0.0, 1e-30);
    const CircleClosedForm d = circle_closed_form(q[0], q[1], q[2], q[3], 3.0);
    const double dG = d.G.imag() / 1e-30, dx2 = d.x2_T.imag() / 1e-30;
    EXPECT_NEAR(adj.cost_gradient(0, j), dG, 1e-7 * std::max(1.0, std::abs(dG))) << j;
    EXPECT_NEAR(adj.cost_gradient(1, j), dx2, 1e-7 * std::max(1.0, std::abs(dx2))) << j;
  }
}

// A terminal cost on the multiplier z of an index-2 mode, beside two other costs (three adjoint
// columns: the index-2 adjoint of theory section 4 that Saltus ran before failed there with
// IDA_ERR_FAIL before the event at rtol 1e-10). The adjoint reduces it through the
// completion's transpose (z follows from the hidden constraint). Against forward sensitivities
// and the complex step, which read z(T) as it is.
TEST(CircleDriftIndex2, TheAdjointTakesATerminalCostOnTheMultiplier) {
  Problem pb = examples::circle_drift();
  pb.add_terminal_cost("z_T", [](const auto& x, const auto&) { return x[2]; });
  const Eigen::VectorXd p = pb.nominal_parameters();
  const Solution fwd = forward_sensitivity(pb);
  const Solution adj = adjoint(pb);
  const GradientEstimate cs = complex_step(pb, p, pb.options());
  const int c = pb.cost_index("z_T");
  const double scale = fwd.cost_gradient.row(c).cwiseAbs().maxCoeff();
  ASSERT_GT(scale, 1e-3);
  EXPECT_LT((adj.cost_gradient.row(c) - fwd.cost_gradient.row(c)).cwiseAbs().maxCoeff(), 1e-6 * scale)
      << adj.cost_gradient.row(c) << "\n" << fwd.cost_gradient.row(c);
  EXPECT_LT((cs.cost_gradient.row(c) - fwd.cost_gradient.row(c)).cwiseAbs().maxCoeff(), 1e-6 * scale);
}

TEST(DaeErrors, SingularIndexOneMatrixNamesModeAndTime) {
  // The algebraic state does not appear in its equation: [F_ydot | F_z] is singular.
  Problem pb("index2", "");
  pb.set_states({"y", "z"});
  pb.set_algebraic_states({"z"});
  pb.add_parameter("p", 1.0);
  pb.set_initial_state([](const auto&, auto x0) { x0.setZero(); });
  pb.add_residual_mode("constrained", [](auto t, const auto& x, const auto& xdot, const auto&, auto r) {
    r[0] = xdot[0] - x[1];
    r[1] = x[0] - t;
  });
  pb.add_terminal_cost("y", [](const auto& x, const auto&) { return x[0]; });
  expect_message([&] { simulate(pb); }, "not an index-1 DAE at the start (t = 0");
  expect_message([&] { simulate(pb); }, "mode 'constrained'");
}

TEST(DaeErrors, AnAlgebraicStateMissingFromTheResidualIsRefused) {
  // [F_ydot | F_z] = [[1, 0], [0, 0]]: an exact zero pivot, for which Eigen's rcond estimate
  // alone reports 1.
  Problem pb("missing_z", "");
  pb.set_states({"x", "z"});
  pb.set_algebraic_states({"z"});
  pb.add_parameter("p", 1.0);
  pb.set_initial_state([](const auto&, auto x0) { x0.setZero(); });
  pb.add_residual_mode("m", [](auto, const auto& x, const auto& xdot, const auto&, auto r) {
    r[0] = xdot[0] - 1.0;
    r[1] = x[0];
  });
  pb.add_terminal_cost("x", [](const auto& x, const auto&) { return x[0]; });
  expect_message([&] { simulate(pb); }, "mode 'm' of problem 'missing_z' is not an index-1 DAE at the start");
}

TEST(DaeErrors, InconsistentStartThatNewtonCannotFix) {
  Problem pb("no_solution", "");
  pb.set_states({"y", "z"});
  pb.set_algebraic_states({"z"});
  pb.add_parameter("p", 1.0);
  pb.set_initial_state([](const auto&, auto x0) { x0 << 0.0, 1.0; });
  pb.add_residual_mode("m", [](auto, const auto& x, const auto& xdot, const auto&, auto r) {
    using std::exp;
    r[0] = xdot[0] - x[1];
    r[1] = exp(x[1]) + 1.0;  // e^z = -1 has no real solution
  });
  pb.add_terminal_cost("y", [](const auto& x, const auto&) { return x[0]; });
  expect_message([&] { simulate(pb); }, "could not make the state consistent");
}

// ball1d's energy_rate reads der(v): on IDAS the adjoint folds the rate in through the residual
// (y-dot = -M^-1 F(t, x, 0, p)) and agrees with the CVODES adjoint, which reads the right-hand side.
TEST(DaeAdjoint, RunningCostsReadingRatesAgreeWithCvodes) {
  Problem ball = examples::ball1d();
  Options on_idas = ball.options();
  on_idas.integrator = Integrator::Idas;
  const Solution idas = adjoint(ball, ball.nominal_parameters(), on_idas);
  const Solution cvodes = adjoint(ball);
  const std::vector<std::string> costs = ball.cost_names();
  ASSERT_NE(std::find(costs.begin(), costs.end(), "energy_rate"), costs.end());
  const Eigen::ArrayXXd scale = cvodes.cost_gradient.array().abs().max(1.0);
  EXPECT_LT(((idas.cost_gradient - cvodes.cost_gradient).array().abs() / scale).maxCoeff(), 1e-6)
      << idas.cost_gradient << "\n" << cvodes.cost_gradient;
}

TEST(DaeErrors, MethodsNotYetOnIdasAndMisdeclaredModes) {
  Problem pb = examples::robertson_dae();
  // A running cost that reads an algebraic state's rate (approximate in IDAS) is refused by the
  // adjoint on IDAS; differential rates are folded in (docs/dae.md, "Limits").
  Problem rates = galan_dae();
  rates.add_running_cost("z_rate", [](auto, const auto&, const auto& xdot, const auto&) { return xdot[1]; });
  expect_message([&] { adjoint(rates); }, "cost 'z_rate' reads the rate of the algebraic state 'z'");
  Options o = pb.options();
  o.integrator = Integrator::Cvodes;
  expect_message([&] { simulate(pb, pb.nominal_parameters(), o); }, "CVODES cannot integrate it");
  Problem mixed("mixed", "");
  mixed.set_states({"y", "z"});
  mixed.set_algebraic_states({"z"});
  mixed.add_parameter("p", 1.0);
  mixed.set_initial_state([](const auto&, auto x0) { x0.setZero(); });
  mixed.add_mode("explicit", [](auto, const auto&, const auto&, auto xdot) { xdot.setZero(); });
  mixed.add_terminal_cost("y", [](const auto& x, const auto&) { return x[0]; });
  expect_message([&] { simulate(mixed); }, "write it as a residual");
}

namespace {
/// A state-dependent mass matrix: (1 + z) x' + k x = 0 with z = x^2 algebraic, and a jump
/// x+ = e x- where x falls through h. p = (k, x0, h, e); costs G = integral of x dt, z_T = z(T).
Problem variable_mass() {
  Problem pb("variable_mass", "(1 + x^2) x' = -k x with a jump at x = h");
  pb.set_states({"x", "z"});
  pb.set_algebraic_states({"z"});
  pb.add_parameter("k", 2.0);
  pb.add_parameter("x0", 1.5);
  pb.add_parameter("h", 0.8);
  pb.add_parameter("e", 0.5);
  pb.set_initial_state([](const auto& p, auto x0) {
    x0[0] = p[1];
    x0[1] = 0.0 * p[1];  // a guess
  });
  pb.add_residual_mode("decay", [](auto, const auto& x, const auto& xdot, const auto& p, auto r) {
    r[0] = (1.0 + x[1]) * xdot[0] + p[0] * x[0];
    r[1] = x[1] - x[0] * x[0];
  });
  pb.add_event("drop", Direction::Falling, [](auto, const auto& x, const auto& p) { return x[0] - p[2]; })
      .jump([](auto, const auto& x, const auto& p, auto x_plus) {
        x_plus = x;
        x_plus[0] = p[3] * x[0];
      });
  pb.add_running_cost("G", [](auto, const auto& x, const auto&, const auto&) { return x[0]; });
  pb.add_terminal_cost("z_T", [](const auto& x, const auto&) { return x[1]; });
  pb.options().tf = 1.0;
  pb.options().rtol = 1e-10;
  pb.options().atol = 1e-12;
  return pb;
}

/// Its closed form: ln x + x^2 / 2 = -k t + const on each side of the drop, and
/// integral of x dt = -integral of (1 + x^2) / k dx. Returns (G, z_T).
std::pair<Complex, Complex> variable_mass_closed_form(Complex k, Complex x0, Complex h, Complex e) {
  const auto potential = [](Complex x) { return std::log(x) + 0.5 * x * x; };
  const auto primitive = [](Complex x) { return x + x * x * x / 3.0; };
  const Complex t1 = (potential(x0) - potential(h)) / k;
  const Complex x1 = e * h;
  const Complex target = potential(x1) - k * (1.0 - t1);
  Complex x_T = x1;
  for (int i = 0; i < 60; ++i) x_T -= (potential(x_T) - target) / (1.0 / x_T + x_T);  // Newton
  const Complex G = (primitive(x0) - primitive(h)) / k + (primitive(x1) - primitive(x_T)) / k;
  return {G, x_T * x_T};
}
}  // namespace

// F_xdot = diag(1 + z, 0) changes along the motion: the adjoint takes the conservative form
// d/dt (F_ydot^T lambda) = F_y^T lambda - g_y^T (docs/dae.md, "Adjoint"). Against the closed
// form differentiated by complex step, through the jump and with a terminal cost on z.
TEST(DaeAdjoint, AStateDependentMassMatrixTakesTheConservativeForm) {
  const Problem pb = variable_mass();
  const Eigen::VectorXd p = pb.nominal_parameters();
  const auto [G, z_T] = variable_mass_closed_form(p[0], p[1], p[2], p[3]);
  const Solution fwd = forward_sensitivity(pb);
  ASSERT_EQ(fwd.events.size(), 1u);
  EXPECT_NEAR(fwd.costs[0], G.real(), 1e-8);
  EXPECT_NEAR(fwd.costs[1], z_T.real(), 1e-8);
  const Solution adj = adjoint(pb);
  for (int j = 0; j < 4; ++j) {
    Complex q[4] = {p[0], p[1], p[2], p[3]};
    q[j] += Complex(0.0, 1e-30);
    const auto [dG, dz] = variable_mass_closed_form(q[0], q[1], q[2], q[3]);
    for (const Solution* s : {&fwd, &adj}) {
      EXPECT_NEAR(s->cost_gradient(0, j), dG.imag() / 1e-30, 1e-7 * std::max(1.0, std::abs(dG.imag() / 1e-30))) << j;
      EXPECT_NEAR(s->cost_gradient(1, j), dz.imag() / 1e-30, 1e-7 * std::max(1.0, std::abs(dz.imag() / 1e-30))) << j;
    }
  }
}

namespace {
/// A guard that reads a rate, written as an algebraic state: w = y-dot (the residual row
/// w - y-dot = 0 reads the rate), and the guard w - v on it. y relaxes towards c; when its rate
/// falls to v the target becomes d. p = (c, d, v, y0); cost G = integral of y dt.
Problem rate_guard() {
  Problem pb("rate_guard", "an event when the rate of y falls to v");
  pb.set_states({"y", "w"});
  pb.set_algebraic_states({"w"});
  pb.add_parameter("c", 2.0);
  pb.add_parameter("d", 0.5);
  pb.add_parameter("v", 0.7);
  pb.add_parameter("y0", 0.0);
  pb.set_initial_state([](const auto& p, auto x0) {
    x0[0] = p[3];
    x0[1] = 0.0 * p[3];  // a guess
  });
  const auto mode = [](int target) {
    return [target](auto, const auto& x, const auto& xdot, const auto& p, auto r) {
      r[0] = xdot[0] - (p[target] - x[0]);
      r[1] = x[1] - xdot[0];
    };
  };
  const int a = pb.add_residual_mode("towards_c", mode(0));
  const int b = pb.add_residual_mode("towards_d", mode(1));
  pb.add_event("slow", Direction::Falling, [](auto, const auto& x, const auto& p) { return x[1] - p[2]; })
      .only_in({a})
      .switch_to(b);
  pb.add_running_cost("G", [](auto, const auto& x, const auto&, const auto&) { return x[0]; });
  pb.options().tf = 3.0;
  pb.options().rtol = 1e-10;
  pb.options().atol = 1e-12;
  return pb;
}

/// y-dot = (c - y0) e^-t falls to v at t_e = ln((c - y0) / v); then y = d + (y_e - d) e^-(t - t_e).
std::pair<Complex, Complex> rate_guard_closed_form(Complex c, Complex d, Complex v, Complex y0) {
  const Complex t_e = std::log((c - y0) / v), y_e = c - v, T = 3.0;
  const Complex G = c * t_e + (y0 - c) * (1.0 - std::exp(-t_e)) + d * (T - t_e) + (y_e - d) * (1.0 - std::exp(-(T - t_e)));
  return {G, t_e};
}

/// Forward (event time and cost), adjoint, complex step and, with `differences`, central
/// differences of a rate-guard problem against the closed form differentiated by complex step.
void expect_rate_guard_closed_form(const Problem& pb, bool differences) {
  const Eigen::VectorXd p = pb.nominal_parameters();
  const auto [G, t_e] = rate_guard_closed_form(p[0], p[1], p[2], p[3]);
  const Solution fwd = forward_sensitivity(pb);
  ASSERT_EQ(fwd.events.size(), 1u);
  EXPECT_NEAR(fwd.events[0].time, t_e.real(), 1e-8);
  EXPECT_NEAR(fwd.costs[0], G.real(), 1e-8);
  const Solution adj = adjoint(pb);
  const GradientEstimate cs = complex_step(pb, p, pb.options());
  const GradientEstimate fd = differences ? central_differences(pb, p, pb.options()) : cs;
  for (int j = 0; j < 4; ++j) {
    Complex q[4] = {p[0], p[1], p[2], p[3]};
    q[j] += Complex(0.0, 1e-30);
    const auto [dG, dt] = rate_guard_closed_form(q[0], q[1], q[2], q[3]);
    const double g = dG.imag() / 1e-30, te = dt.imag() / 1e-30, tolerance = 1e-7 * std::max(1.0, std::abs(g));
    EXPECT_NEAR(fwd.events[0].dtime_dp[j], te, 1e-7 * std::max(1.0, std::abs(te))) << pb.name() << j;
    EXPECT_NEAR(fwd.cost_gradient(0, j), g, tolerance) << pb.name() << j;
    EXPECT_NEAR(adj.cost_gradient(0, j), g, tolerance) << pb.name() << j;
    EXPECT_NEAR(cs.cost_gradient(0, j), g, tolerance) << pb.name() << j;
    EXPECT_NEAR(fd.cost_gradient(0, j), g, 1e-5 * std::max(1.0, std::abs(g))) << pb.name() << j;
  }
}
}  // namespace

// Guards that read rates (docs/dae.md, "Events"): the crossing speed then reads w-dot = y-ddot,
// which the differentiated equations give. Forward, adjoint and complex step against the closed
// form differentiated by complex step.
TEST(DaeEvents, AGuardOnARateThroughAnAlgebraicState) { expect_rate_guard_closed_form(rate_guard(), false); }

namespace {
/// rate_guard's motion with the guard reading the rate itself, r = y-dot - v (Problem::add_event
/// with r(t, x, xdot, p)): no algebraic state. `residual` writes the modes as residuals; else
/// they are explicit right-hand sides and the guard alone makes the problem a DAE.
Problem direct_rate_guard(bool residual) {
  Problem pb(residual ? "direct_rate_guard_residual" : "direct_rate_guard_explicit",
             "an event when the rate of y falls to v, read by the guard");
  pb.set_states({"y"});
  pb.add_parameter("c", 2.0);
  pb.add_parameter("d", 0.5);
  pb.add_parameter("v", 0.7);
  pb.add_parameter("y0", 0.0);
  pb.set_initial_state([](const auto& p, auto x0) { x0[0] = p[3]; });
  int a = 0, b = 0;
  if (residual) {
    const auto mode = [](int target) {
      return [target](auto, const auto& x, const auto& xdot, const auto& p, auto r) { r[0] = xdot[0] - (p[target] - x[0]); };
    };
    a = pb.add_residual_mode("towards_c", mode(0));
    b = pb.add_residual_mode("towards_d", mode(1));
  } else {
    const auto mode = [](int target) {
      return [target](auto, const auto& x, const auto& p, auto xdot) { xdot[0] = p[target] - x[0]; };
    };
    a = pb.add_mode("towards_c", mode(0));
    b = pb.add_mode("towards_d", mode(1));
  }
  pb.add_event("slow", Direction::Falling,
               [](auto, const auto&, const auto& xdot, const auto& p) { return xdot[0] - p[2]; })
      .only_in({a})
      .switch_to(b);
  pb.add_running_cost("G", [](auto, const auto& x, const auto&, const auto&) { return x[0]; });
  pb.options().tf = 3.0;
  pb.options().rtol = 1e-10;
  pb.options().atol = 1e-12;
  return pb;
}
}  // namespace

// A guard r(t, x, x-dot, p) (docs/dae.md, "Events"): the crossing speed reads y-ddot from the
// differentiated residual, tau reads S-dot-, the adjoint folds tau's S-dot- coefficients into
// lambda-. Forward, adjoint, complex step and central differences against the closed form
// differentiated by complex step, with residual modes and with explicit ones.
TEST(DaeEvents, AGuardThatReadsRatesDirectly) {
  for (const bool residual : {true, false}) {
    const Problem pb = direct_rate_guard(residual);
    EXPECT_EQ(pb.kind(), ProblemKind::Residual);
    expect_rate_guard_closed_form(pb, true);
  }
}

// The index-2 transfer goes through the completion, which maps states: a guard reading rates
// watched in an index-2 mode is refused with the event and the mode named.
TEST(DaeEvents, AGuardThatReadsRatesIsRefusedInAnIndex2Mode) {
  Problem pb = examples::circle_drift();
  pb.add_event("fast", Direction::Rising, [](auto, const auto&, const auto& xdot, const auto&) { return xdot[0] - 10.0; })
      .switch_to(0);
  expect_message([&] { simulate(pb); }, "event 'fast' has a guard that reads rates and is watched in mode");
  expect_message([&] { simulate(pb); }, "index 2");
}

// Beyond 64 gradient integrals (n_p n_c) the backward pass keeps them as IDAS quadratures
// rather than states: the forms through the completion (circle_drift) and the conservative one
// (variable_mass) then take the quadrature callbacks. 17 more costs give 4 x 19 = 76 > 64; the
// gradients agree with forward sensitivities as with few costs.
TEST(DaeAdjoint, ManyCostsTakeTheQuadraturePathInEveryForm) {
  for (Problem pb : {examples::circle_drift(), variable_mass()}) {
    for (int k = 0; k < 17; ++k) {
      const double w = 1.0 + 0.1 * k;
      pb.add_running_cost(fmt::format("extra{}", k),
                          [w](auto, const auto& x, const auto&, const auto&) { return w * x[0] * x[0]; });
    }
    ASSERT_GT(pb.n_parameters() * pb.n_costs(), 64);
    const Solution fwd = forward_sensitivity(pb);
    const Solution adj = adjoint(pb);
    const double scale = fwd.cost_gradient.cwiseAbs().maxCoeff();
    EXPECT_LT((adj.cost_gradient - fwd.cost_gradient).cwiseAbs().maxCoeff(), 1e-6 * scale) << pb.name();
  }
}

// A running cost on a differential rate, der(y)^2, in an index-1 DAE: y' = -k z, z + z^3 = y.
// The adjoint folds it into the state through the residual (rate_costs.hpp) and now reads the
// rates of the state there, not IDAS's interpolated ones, whose corrector error failed the
// backward error test at some tolerances (IDA_ERR_FAIL at rtol 1e-8, default and 1e-10 ran).
// Reference: the same cost written without rates, (k z)^2, whose adjoint has no fold.
TEST(DaeCosts, ACostOnARateHasTheAdjointOfTheSameCostWithoutIt) {
  const auto problem = [](const std::string& cost) {
    return equations::parse_equation_problem("name: tank\nhorizon: 2\nparameters: {k: 1.0}\nstates: {y: 2.0, z: 0.7}\n"
                                             "algebraic: z\nmodes:\n  m: {residual: [\"der(y) + k*z\", \"z + z^3 - y\"]}\n"
                                             "costs: {D: {running: \"" + cost + "\"}}\n",
                                             "tank.yaml");
  };
  const Problem with_rate = problem("der(y)^2"), without = problem("(k*z)^2");
  for (double rtol : {1e-6, 1e-8, 1e-10}) {
    Options o = with_rate.options();
    o.rtol = rtol;
    const Eigen::VectorXd p = with_rate.nominal_parameters();
    const Solution reference = forward_sensitivity(without, p, o);
    const Solution adj = adjoint(with_rate, p, o);
    EXPECT_NEAR(adj.costs[0], reference.costs[0], 50 * rtol) << rtol;
    EXPECT_NEAR(adj.cost_gradient(0, 0), reference.cost_gradient(0, 0), 50 * rtol) << rtol;
    EXPECT_NEAR(adj.initial_state_gradient(0, 0), adjoint(without, p, o).initial_state_gradient(0, 0), 50 * rtol) << rtol;
  }
}

// A residual whose rate coefficient reads the algebraic state, (1 + z^2) y' + y - b sin t = 0,
// with z = K y' + c. IDAS kept the Newton matrix while c_j moved by up to 25 % and the
// sensitivities' corrector then kept failing: 123,246 steps at order 1 and dY/db off by 1e-6
// relative at rtol 1e-10. Reference: the scalar ODE y' = v(t, y), v the root of
// (1 + (K v + c)^2) v + y - b sin t = 0, integrated by scipy's DOP853 at rtol 1e-13 and
// differentiated by fourth-order central differences.
TEST(DaeForwardSensitivity, ARateCoefficientReadingTheAlgebraicState) {
  const Problem pb = equations::parse_equation_problem(
      "name: rate_coefficient\nhorizon: 4\ntolerances: {rtol: 1.0e-10, atol: 1.0e-12}\n"
      "parameters: {b: 1.5, c: 0.5, K: -0.2}\nstates: {y: 0, z: 0}\nalgebraic: z\n"
      "modes:\n  A:\n    residual: [\"(1 + z^2)*der(y) + y - b*sin(t)\", \"z - K*der(y) - c\"]\n"
      "costs: {Y: {terminal: y}}\n",
      "rate_coefficient.yaml");
  const Solution fwd = forward_sensitivity(pb);
  EXPECT_NEAR(fwd.costs[0], 0.15564769738343553, 1e-8);
  const double reference[] = {0.16175407786900914, 0.4292683609719479, -0.4349170971076436};
  for (int j = 0; j < 3; ++j) EXPECT_NEAR(fwd.cost_gradient(0, j), reference[j], 1e-8) << j;
  EXPECT_LT(fwd.stats.steps, 2000);
}

// The adjoint of the same model: both rows read the one rate, so the rows that read rates are
// not the adjoint's differential components, and the backward start solved a singular matrix
// (IDA_REP_RES_ERR at every rtol; the model written as der(y) + (...)/(1 + z^2) failed with
// IDA_ILL_INPUT at rtol 1e-6). Reference as above.
TEST(DaeAdjoint, RowsThatReadOneRateTogether) {
  const double reference[] = {0.16175407786900914, 0.4292683609719479, -0.4349170971076436};
  for (const char* rate_row : {"(1 + z^2)*der(y) + y - b*sin(t)", "der(y) + (y - b*sin(t))/(1 + z^2)"}) {
    const Problem pb = equations::parse_equation_problem(
        fmt::format("name: rate_rows\nhorizon: 4\nparameters: {{b: 1.5, c: 0.5, K: -0.2}}\nstates: {{y: 0, z: 0}}\n"
                    "algebraic: z\nmodes:\n  A:\n    residual: [\"{}\", \"z - K*der(y) - c\"]\n"
                    "costs: {{Y: {{terminal: y}}}}\n",
                    rate_row),
        "rate_rows.yaml");
    for (double rtol : {1e-6, 1e-10}) {
      Options o = pb.options();
      o.rtol = rtol;
      o.atol = 1e-2 * rtol;
      const Solution adj = adjoint(pb, pb.nominal_parameters(), o);
      for (int j = 0; j < 3; ++j) EXPECT_NEAR(adj.cost_gradient(0, j), reference[j], 100 * rtol) << rate_row << " " << rtol;
    }
  }
}

// A guard that reads a rate, der(y) - v with y' = 1 - y, and a jump on another state: IDAS
// located the root on its interpolated rates, and the guard re-evaluated at the consistent point
// after the event sat back on its non-firing side, so it fired 101 times at t = ln 2 (ZenoError
// at every rtol). Once, at t = -ln v.
TEST(DaeEvents, AGuardOnARateFiresOnceWhenTheJumpLeavesIt) {
  const Problem pb = equations::parse_equation_problem(
      "name: rate_guard\nhorizon: 2\nparameters: {v: 0.5}\nstates: {y: 0, c: 0}\nmodes:\n  m: {rhs: [\"1 - y\", \"0\"]}\n"
      "events:\n  hit: {guard: der(y) - v, direction: falling, jump: [y, c + 1]}\ncosts:\n  cT: {terminal: c}\n",
      "rate_guard.yaml");
  for (double rtol : {1e-6, 1e-8, 1e-10}) {
    for (const bool own_atol : {false, true}) {  // the default atol, and one with the rtol
    Options o = pb.options();
    o.rtol = rtol;
    if (own_atol) o.atol = 1e-2 * rtol;
    const Solution fwd = forward_sensitivity(pb, pb.nominal_parameters(), o);
    ASSERT_EQ(fwd.events.size(), 1u) << rtol << " " << o.atol;
    EXPECT_NEAR(fwd.events[0].time, std::log(2.0), 100 * std::max(rtol, o.atol)) << rtol;
    EXPECT_EQ(fwd.costs[0], 1.0) << rtol;
    }
  }
}

// The same with a guard on an algebraic state that reads a rate, z = der(y1) y2 + b, and jumps
// on y3 alone: `up` fired twice and `down` up to three times, depending on rtol (y3_T 3.764 for
// 3.964). Reference: the model reduced to an ODE, scipy DOP853 at rtol 1e-12: up at 0.8262717,
// down at 3.0998833.
TEST(DaeEvents, AGuardOnAnAlgebraicStateFiresOncePerCrossing) {
  const Problem pb = equations::parse_equation_problem(
      "name: lincomb\nhorizon: 6\nparameters: {a: -0.5, b: 0.1, zc: 0.3, D: 0.2}\n"
      "states: {y1: 1, y2: 0, y3: 0, z: 0}\nalgebraic: z\nmodes:\n  m:\n    residual:\n"
      "      - der(y1) + der(y2) + y1 - y2\n      - der(y1) - der(y2) + a*y2\n"
      "      - der(y3) + 2*der(y1) - der(y2) - y1*y2\n      - z - der(y1)*y2 - b\n"
      "events:\n  up: {guard: z - zc, direction: rising, jump: [y1, y2, y3 - D, z]}\n"
      "  down: {guard: z - zc, direction: falling, jump: [y1, y2, y3 + 2*D, z]}\n"
      "costs:\n  y3T: {terminal: y3}\n",
      "lincomb.yaml");
  for (double rtol : {1e-6, 1e-8, 1e-10, 1e-11}) {
    Options o = pb.options();
    o.rtol = rtol;
    o.atol = 1e-2 * rtol;
    const Solution sim = simulate(pb, pb.nominal_parameters(), o);
    ASSERT_EQ(sim.events.size(), 2u) << rtol;
    EXPECT_NEAR(sim.events[0].time, 0.8262717, 1e-5) << rtol;
    EXPECT_NEAR(sim.events[1].time, 3.0998833, 1e-5) << rtol;
  }
}

// A time event and a state event tied at t = 2, the dose written first and moving the state
// event's guard off zero (both fire, in the order written: docs/events.md). J = integral of x
// does not depend on the order: J = k T^2 / 2 + D (T - Te), so d J/d(k, Te, D, c) = (T^2 / 2,
// -D, T - Te, 0). The complex step shifted the second event's complex time by the moved guard's
// real value too, and gave d J/dk = 6.24 on CVODES and on IDAS; it now takes the guard's
// perturbation alone.
TEST(OdeOnIdas, TheComplexStepThroughATimeAndStateEventTie) {
  const Problem pb = equations::parse_equation_problem(
      "name: tie\nhorizon: 4\nparameters: {k: 1, Te: 2, D: 0.4, c: 2}\nstates: {x: 0, z: 0}\n"
      "modes:\n  m: {rhs: [k, 0]}\nevents:\n  dose: {at: Te, jump: [x + D, z]}\n"
      "  st: {guard: x - c, direction: rising, jump: [x, z + 3*x]}\ncosts:\n  J: {running: x}\n",
      "tie.yaml");
  const double exact[] = {8.0, -0.4, 2.0, 0.0};
  for (const Integrator integrator : {Integrator::Cvodes, Integrator::Idas}) {
    Options o = pb.options();
    o.integrator = integrator;
    const GradientEstimate cs = complex_step(pb, pb.nominal_parameters(), o);
    for (int j = 0; j < 4; ++j) EXPECT_NEAR(cs.cost_gradient(0, j), exact[j], 1e-7) << j;
  }
}
