// time_events against hand-derived values. With A = (x0 + alpha) alpha + beta - alpha and
// B = delta A + gamma - beta:  x(T) = 2 B^2 + T - gamma, so
//   dx_T/dx0 = 4B delta alpha,  dx_T/dalpha = 4B delta (x0 + 2 alpha - 1),
//   dx_T/dbeta = 4B (delta - 1),  dx_T/ddelta = 4B A,  dx_T/dgamma = 4B - 1.
#include <saltus/equations/equation_file.hpp>
#include <saltus/examples/builtin.hpp>
#include <saltus/solvers/adjoint.hpp>
#include <saltus/solvers/simulate.hpp>
#include <saltus/verify/gradient.hpp>

#include <gtest/gtest.h>

#include <cmath>
#include <string>

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

// A dose given exactly at the final time (tau = tf = 2) applies its jump and its event cost, and
// every method differentiates it one-sidedly (the dose as given, tau at most tf): with
// x' = -k x, x(0) = 1, x+ = x- + D at tau,
//   x_T = e^{-k tf} + D e^{-k (tf - tau)}:  d/dk = -tf e^{-k tf}, d/dD = 1, d/dtau = D k;
//   auc = integral of x = (1 - e^{-k tf}) / k:  d/dk = (k tf e^{-k tf} - (1 - e^{-k tf})) / k^2,
//         d/dtau = -D (an earlier dose adds its area), d/dD = 0;
//   trough = x(tau-) = e^{-k tau}:  d/dk = -tau e^{-k tau}, d/dtau = -k e^{-k tau}.
// The adjoint missed events at the final time (they start no segment of the backward pass):
// 0.15 for d x_T / d tau on a dosing model whose forward sensitivity said 0.59. Explicit (CVODES)
// and residual (IDAS) modes.
TEST(TimeEvents, AnEventAtTheFinalTimeEntersEveryGradient) {
  const double k = 0.7, D = 1.5, tf = 2.0, e = std::exp(-k * tf);
  const double expected[3][3] = {{-tf * e, 1.0, D * k},
                                 {(k * tf * e - (1.0 - e)) / (k * k), 0.0, -D},
                                 {-tf * e, 0.0, -k * e}};
  for (const std::string mode : {"{rhs: [\"-k*x\"]}", "{residual: [\"der(x) + k*x\"]}"}) {
    const Problem pb = equations::parse_equation_problem("name: dose_at_end\nhorizon: 2\nparameters: {k: 0.7, D: 1.5, tau: 2}\n"
                                                         "states: {x: 1}\nmodes: {m: " + mode + "}\n"
                                                         "events: {dose: {at: tau, jump: [\"x + D\"]}}\n"
                                                         "tolerances: {rtol: 1.0e-10, atol: 1.0e-12}\n"
                                                         "costs:\n  x_T: {terminal: x}\n  auc: {running: x}\n"
                                                         "  trough: {events: {dose: x}}\n",
                                                         "dose_at_end.yaml");
    const Eigen::VectorXd p = pb.nominal_parameters();
    const Solution fwd = forward_sensitivity(pb, p, pb.options());
    ASSERT_EQ(fwd.events.size(), 1u) << mode;
    EXPECT_NEAR(fwd.costs[0], e + D, 1e-9) << mode;
    EXPECT_NEAR(fwd.costs[1], (1.0 - e) / k, 1e-9) << mode;
    EXPECT_NEAR(fwd.costs[2], e, 1e-9) << mode;
    const Solution adj = adjoint(pb, p, pb.options());
    const GradientEstimate cs = complex_step(pb, p, pb.options());
    for (int c = 0; c < 3; ++c) {
      for (int j = 0; j < 3; ++j) {
        EXPECT_NEAR(fwd.cost_gradient(c, j), expected[c][j], 1e-7) << mode << " forward " << c << ", " << j;
        EXPECT_NEAR(adj.cost_gradient(c, j), expected[c][j], 1e-7) << mode << " adjoint " << c << ", " << j;
        EXPECT_NEAR(cs.cost_gradient(c, j), expected[c][j], 1e-7) << mode << " complex step " << c << ", " << j;
      }
    }
  }
}

// A pulse of zero width: 'start' (watched in idle) and 'stop' (watched only in pumping) at one
// instant. After 'start' switched to pumping, the root finder could not see 'stop': its guard
// t - t1 began the new segment at zero, already crossed, and the run pumped on to the end
// (x_T = 13 where the model says 105, exit 0). Time events due at the instant of a firing now
// fire in the mode reached, in written order, each once. x(t1) = 1 + t1, doubled by 'start',
// plus 100 by 'stop', then idle to T = 2: x_T = 104 + t1, dx_T/dt1 = 1, dx_T/dx0 = 2.
TEST(TimeEvents, AZeroWidthPulseFiresBothEventsAtOneInstant) {
  const std::string head =
      "name: pulse\nhorizon: 2\ntolerances: {rtol: 1.0e-10, atol: 1.0e-12}\nparameters: {t1: 1, x0: 1}\n";
  const std::string ode = "states: {x: x0}\nmodes: {idle: {rhs: [1]}, pumping: {rhs: [10]}}\n";
  const std::string dae = "states: {x: x0, z: 0}\nalgebraic: z\n"
                          "modes: {idle: {residual: [\"der(x) - z\", \"z - 1\"]}, "
                          "pumping: {residual: [\"der(x) - z\", \"z - 10\"]}}\n";
  const std::string start = "  start: {at: t1, only_in: idle, next: pumping, jump: [2*x]}\n";
  const std::string stop = "  stop: {at: t1, only_in: pumping, next: idle, jump: [x + 100]}\n";
  const std::string dae_start = "  start: {at: t1, only_in: idle, next: pumping, jump: [2*x, z]}\n";
  const std::string dae_stop = "  stop: {at: t1, only_in: pumping, next: idle, jump: [x + 100, z]}\n";
  const std::string tail = "initial_mode: idle\ncosts: {x_T: {terminal: x}}\n";
  struct Case {
    std::string name, text;
    Integrator integrator;
  };
  const std::vector<Case> cases = {
      {"ode", head + ode + "events:\n" + start + stop + tail, Integrator::Automatic},
      {"ode, stop written first", head + ode + "events:\n" + stop + start + tail, Integrator::Automatic},
      {"dopri5", head + ode + "events:\n" + start + stop + tail, Integrator::Dopri5},
      {"dae", head + dae + "events:\n" + dae_start + dae_stop + tail, Integrator::Automatic},
  };
  for (const Case& c : cases) {
    const Problem pb = equations::parse_equation_problem(c.text, "pulse.yaml");
    Options o = pb.options();
    o.integrator = c.integrator;
    const Eigen::VectorXd p = pb.nominal_parameters();
    const Solution s = forward_sensitivity(pb, p, o);
    ASSERT_EQ(s.events.size(), 2u) << c.name;
    EXPECT_EQ(s.events[0].name, "start") << c.name;
    EXPECT_EQ(s.events[1].name, "stop") << c.name;
    EXPECT_EQ(pb.mode(s.final_mode).name, "idle") << c.name;
    EXPECT_NEAR(s.costs[0], 105.0, 1e-8) << c.name;
    EXPECT_NEAR(s.cost_gradient(0, 0), 1.0, 1e-7) << c.name;
    EXPECT_NEAR(s.cost_gradient(0, 1), 2.0, 1e-7) << c.name;
    const Solution a = adjoint(pb, p, o);
    EXPECT_NEAR(a.cost_gradient(0, 0), 1.0, 1e-7) << c.name;
    EXPECT_NEAR(a.cost_gradient(0, 1), 2.0, 1e-7) << c.name;
    if (c.integrator == Integrator::Automatic) {
      const GradientEstimate cs = complex_step(pb, p, o);
      EXPECT_NEAR(cs.costs[0], 105.0, 1e-8) << c.name;
      EXPECT_NEAR(cs.cost_gradient(0, 0), 1.0, 1e-7) << c.name;
      EXPECT_NEAR(cs.cost_gradient(0, 1), 2.0, 1e-7) << c.name;
    }
  }
}

// A jump that lands exactly on another event's guard, moving into its crossing, fires that event
// (found by a model file written from the docs: a kick setting x to 2 exactly, a switch `off` at
// x = 2 rising; CVODES and IDAS set a root function that starts at zero aside, and `off` never
// fired: x_T = 4, exit 0). The closed form of the limit a -> 0-: `off` at t = 1 - a, x_T = -a,
// dx_T/da = -1. On CVODES and IDAS (the DAE version's algebraic z = x).
TEST(TimeEvents, AJumpOntoAnotherGuardFiresIt) {
  const std::string head = "name: kick\nhorizon: 3\ntolerances: {rtol: 1.0e-10, atol: 1.0e-12}\nparameters: {a: 0}\n";
  const std::string ode = "states: {x: 0}\nmodes: {up: {rhs: [1]}, down: {rhs: [-1]}}\n"
                          "events:\n  kick: {at: 1, jump: [2 + a]}\n  off: {guard: x - 2, direction: rising, only_in: up, next: down}\n";
  const std::string dae = "states: {x: 0, z: 0}\nalgebraic: z\n"
                          "modes: {up: {residual: [\"der(x) - 1\", \"z - x\"]}, down: {residual: [\"der(x) + 1\", \"z - x\"]}}\n"
                          "events:\n  kick: {at: 1, jump: [2 + a, 2 + a]}\n  off: {guard: z - 2, direction: rising, only_in: up, next: down}\n";
  const std::string tail = "initial_mode: up\ncosts: {x_T: {terminal: x}}\n";
  for (const std::string& body : {ode, dae}) {
    const Problem pb = equations::parse_equation_problem(head + body + tail, "kick.yaml");
    const Eigen::VectorXd p = pb.nominal_parameters();
    const Solution s = forward_sensitivity(pb, p, pb.options());
    ASSERT_EQ(s.events.size(), 2u) << body;
    EXPECT_EQ(s.events[1].name, "off");
    EXPECT_NEAR(s.events[1].time, 1.0, 1e-11);
    EXPECT_EQ(pb.mode(s.final_mode).name, "down");
    EXPECT_NEAR(s.costs[0], 0.0, 1e-9);
    EXPECT_NEAR(s.cost_gradient(0, 0), -1.0, 1e-7);
    EXPECT_NEAR(adjoint(pb, p, pb.options()).cost_gradient(0, 0), -1.0, 1e-7);
    EXPECT_NEAR(complex_step(pb, p, pb.options()).cost_gradient(0, 0), -1.0, 1e-7);
  }
}

// A time event 5e-13 s before or after another firing fires once (found by review: the firing
// of a state event S at t = 1 re-fired a time event T at 1 - 5e-13 that had fired already, and
// fired one at 1 + 5e-13 that the root finder then found again: c_T = 12 instead of 11).
TEST(TimeEvents, ATimeEventNextToAnotherFiringFiresOnce) {
  for (const char* t1 : {"0.9999999999995", "1", "1.0000000000005"}) {
    const Problem pb = equations::parse_equation_problem(
        std::string("name: due\nhorizon: 2\ntolerances: {rtol: 1.0e-10, atol: 1.0e-12}\nparameters: {t1: ") + t1 +
            "}\nstates: {x: 0, c: 0}\nmodes: {m: {rhs: [1, 0]}}\n"
            "events:\n  S: {guard: x - 1, direction: rising, jump: [x, c + 10]}\n  T: {at: t1, jump: [x, c + 1]}\n"
            "costs: {c_T: {terminal: c}}\n",
        "due.yaml");
    for (const Integrator integrator : {Integrator::Automatic, Integrator::Dopri5}) {
      Options o = pb.options();
      o.integrator = integrator;
      const Solution s = forward_sensitivity(pb, pb.nominal_parameters(), o);
      EXPECT_EQ(s.events.size(), 2u) << t1;
      EXPECT_NEAR(s.costs[0], 11.0, 1e-12) << t1;
    }
    EXPECT_NEAR(complex_step(pb, pb.nominal_parameters(), pb.options()).costs[0], 11.0, 1e-12) << t1;
  }
}
