// Simultaneous events, events at output times, grazing, Zeno, and sticking contacts.
#include <saltus/equations/equation_file.hpp>
#include <saltus/examples/builtin.hpp>
#include <saltus/solvers/adjoint.hpp>
#include <saltus/solvers/simulate.hpp>
#include <saltus/verify/gradient.hpp>

#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <string>

#include "support/test_problems.hpp"

using namespace saltus;
using saltus::testing::two_switches;

TEST(SimultaneousEvents, SeparatedEventsGiveTheClosedForm) {
  // p1 < p2: order (1, 2), x1(T) = 3T - (p1 + p2).
  const Solution s = forward_sensitivity(two_switches(0.5, 1.2));
  ASSERT_EQ(s.events.size(), 2u);
  EXPECT_NEAR(s.costs[0], 6.0 - 1.7, 1e-9);
  EXPECT_NEAR(s.cost_gradient(0, 0), -1.0, 1e-8);
  EXPECT_NEAR(s.cost_gradient(0, 1), -1.0, 1e-8);
}

TEST(SimultaneousEvents, SameInstantIsAppliedInDeclarationOrderGivingTheOneSidedDerivative) {
  // p1 = p2: both guards vanish together. Saltus applies 'first' then 'second' (declaration
  // order), each seeing the state and field left by the previous one: the derivative of the
  // order (1, 2), i.e. of x1(T) = 3T - (p1 + p2) (section 10).
  const Solution s = forward_sensitivity(two_switches(1.0, 1.0));
  ASSERT_EQ(s.events.size(), 2u);
  EXPECT_EQ(s.events[0].name, "first");
  EXPECT_EQ(s.events[1].name, "second");
  EXPECT_DOUBLE_EQ(s.events[0].time, s.events[1].time);
  EXPECT_EQ(s.final_mode, 3);
  EXPECT_NEAR(s.costs[0], 4.0, 1e-9);
  EXPECT_NEAR(s.cost_gradient(0, 0), -1.0, 1e-8);
  EXPECT_NEAR(s.cost_gradient(0, 1), -1.0, 1e-8);
}

TEST(SimultaneousEvents, CornerImpactOfCommutingResetsAgreesWithFiniteDifferences) {
  // Central differences separate the two events; the resets commute, so they agree.
  const Problem pb = saltus::testing::corner_impact_box2d();
  const Eigen::VectorXd p = pb.nominal_parameters();
  const Solution s = forward_sensitivity(pb, p, pb.options());
  ASSERT_EQ(s.events.size(), 2u);
  EXPECT_NEAR(s.events[0].time, s.events[1].time, 1e-9);
  saltus::testing::expect_corner_impact_differences(pb, s.cost_gradient);
}

TEST(EventAtOutputTime, OutputReportsTheStateAfterTheEventAndGradientsAgree) {
  Problem pb = examples::time_events();
  pb.options().output_times = {0.0, 1.5, 2.5, 4.0};
  const Solution s = forward_sensitivity(pb);
  ASSERT_EQ(s.times.size(), 5u);
  EXPECT_NEAR(s.states(1, 0), 3.75, 1e-9);     // x(1.5+) = (1 + 1.5) * 1.5
  EXPECT_NEAR(s.states(2, 0), 26.125, 1e-9);   // x(2.5+) = 5.5 * 4.75
  EXPECT_EQ(s.events.size(), 3u);
  const GradientEstimate fd = central_differences(pb, pb.nominal_parameters(), pb.options());
  for (int k = 0; k < pb.n_parameters(); ++k) {
    EXPECT_NEAR(s.cost_gradient(0, k), fd.cost_gradient(0, k),
                1e-5 * std::abs(fd.cost_gradient(0, k)));
  }
}

TEST(Grazing, TangentialCrossingIsReportedAndHasNoSensitivity) {
  // a' = 1, b' = 3 (t - 1)^2, b(0) = -1: b = (t - 1)^3 crosses zero at t = 1 with zero speed.
  const Problem pb = saltus::testing::inflection_crossing();
  const Solution s = simulate(pb);
  ASSERT_EQ(s.events.size(), 1u);
  EXPECT_TRUE(s.events[0].grazing);
  EXPECT_NEAR(s.events[0].time, 1.0, 1e-3);
  EXPECT_THROW(forward_sensitivity(pb), GrazingError);
}

/// ball1d's flight and impact without its resting mode: nothing to continue with when the
/// bounces accumulate. With `remedy`, its impact names that remedy instead (zeno_remedy).
Problem ball_without_resting_mode(const std::string& remedy = "") {
  Problem pb("plain_ball");
  pb.set_states({"h", "v"});
  pb.add_parameter("e", 0.8);
  pb.set_initial_state([](const auto&, auto x0) { x0 << 1.0, 0.0; });
  pb.add_mode("flight", [](auto, const auto& x, const auto&, auto xdot) {
    xdot[0] = x[1];
    xdot[1] = -9.81 + 0.0 * x[0];
  });
  pb.add_event("impact", Direction::Falling, [](auto, const auto& x, const auto&) { return x[0]; })
      .jump([](auto, const auto& x, const auto& p, auto xp) { xp << x[0], -p[0] * x[1]; })
      .zeno_remedy(remedy);
  pb.add_terminal_cost("h_T", [](const auto& x, const auto&) { return x[0]; });
  pb.options().rtol = 1e-10;
  pb.options().atol = 1e-12;
  return pb;
}

TEST(Zeno, BallWithoutRestitutionOrRestingModeStopsWithAClearError) {
  Problem pb = ball_without_resting_mode();
  pb.set_nominal("e", 0.0);
  try {
    simulate(pb);
    FAIL() << "expected ZenoError";
  } catch (const ZenoError& err) {
    EXPECT_NE(std::string(err.what()).find("'impact'"), std::string::npos) << err.what();
    EXPECT_NE(std::string(err.what()).find("rests_in"), std::string::npos) << err.what();
  }
}

// Without drag the bounces accumulate at t = t1 (1 + 2e/(1 - e)) = 9 t1 = 4.0637 s < 15 s
// (t1 = sqrt(2 / g), e = 0.8): every run type stops there, naming the event and the limit,
// before the bounces shrink into the integration's noise (where a cascade or a grazing rebound
// would stop it with a less telling message).
TEST(Zeno, AccumulatingBouncesWithoutRestingModeStopWithAClearError) {
  Problem pb = ball_without_resting_mode();
  pb.options().tf = 15.0;
  const double limit = 9.0 * std::sqrt(2.0 / 9.81);
  const auto expect_accumulation_error = [&](const std::function<void()>& run, const char* what) {
    try {
      run();
      ADD_FAILURE() << what << ": expected ZenoError";
    } catch (const ZenoError& err) {
      const std::string message = err.what();
      EXPECT_NE(message.find("'impact' accumulate"), std::string::npos) << what << ": " << message;
      EXPECT_NE(message.find("persistent: true"), std::string::npos) << what << ": " << message;
      const size_t at = message.find("toward t = ");
      ASSERT_NE(at, std::string::npos) << what << ": " << message;
      EXPECT_NEAR(std::stod(message.substr(at + 11)), limit, 1e-6) << what;
    }
  };
  const Eigen::VectorXd p = pb.nominal_parameters();
  expect_accumulation_error([&] { simulate(pb); }, "simulation");
  expect_accumulation_error([&] { forward_sensitivity(pb, p, pb.options()); }, "forward");
  expect_accumulation_error([&] { adjoint(pb, p, pb.options()); }, "adjoint");
  expect_accumulation_error([&] { complex_step(pb, p, pb.options()); }, "complex step");
}

// An event with its own remedy (EventBuilder::zeno_remedy) names it where its firings accumulate,
// not a resting variant: the limit and the event as before, then the remedy.
TEST(Zeno, AnEventsOwnRemedyReplacesTheRestingVariantHint) {
  Problem pb = ball_without_resting_mode("shorten the horizon");
  pb.options().tf = 15.0;
  try {
    simulate(pb);
    FAIL() << "expected ZenoError";
  } catch (const ZenoError& err) {
    const std::string message = err.what();
    EXPECT_NE(message.find("'impact' accumulate"), std::string::npos) << message;
    EXPECT_NE(message.find("): shorten the horizon"), std::string::npos) << message;
    EXPECT_EQ(message.find("resting variant"), std::string::npos) << message;
  }
}

TEST(Zeno, CascadeLimitIsConfigurable) {
  // A clock event that resets the clock itself fires again and again at one instant.
  Problem pb("loop");
  pb.set_states({"x"});
  pb.add_parameter("a", 1.0);
  pb.set_initial_state([](const auto&, auto x) { x[0] = 0.0; });
  pb.add_mode("m", [](auto, const auto&, const auto&, auto xdot) { xdot[0] = 1.0; });
  // Each firing moves x back below the guard by 1e-7: it refires 1e-7 s later, again and
  // again, within the 1e-6 s cascade window.
  pb.add_event("again", Direction::Rising, [](auto, const auto& x, const auto& p) {
      return x[0] - p[0];
    }).jump([](auto, const auto& x, const auto& p, auto xp) { xp[0] = x[0] - 1e-7 * p[0]; });
  pb.add_terminal_cost("x_T", [](const auto& x, const auto&) { return x[0]; });
  pb.options().tf = 2.0;
  pb.options().max_event_cascade = 5;
  pb.options().cascade_window = 1e-6;
  EXPECT_THROW(simulate(pb), ZenoError);
}

// A resting variant does not excuse every cascade: firings at constant intervals (ratio 1) do
// not accumulate geometrically, so the run still stops with the cascade error.
TEST(Zeno, NonGeometricCascadesStillStop) {
  Problem pb("loop");
  pb.set_states({"x"});
  pb.add_parameter("a", 1.0);
  pb.set_initial_state([](const auto&, auto x) { x[0] = 0.0; });
  const int run = pb.add_mode("m", [](auto, const auto&, const auto&, auto xdot) { xdot[0] = 1.0; });
  const int stop = pb.add_mode("stopped", [](auto, const auto&, const auto&, auto xdot) { xdot[0] = 0.0; });
  pb.add_event("again", Direction::Rising, [](auto, const auto& x, const auto& p) { return x[0] - p[0]; })
      .jump([](auto, const auto& x, const auto& p, auto xp) { xp[0] = x[0] - 1e-7 * p[0]; })
      .only_in({run})
      .rests_in(stop, [](auto, const auto& x, const auto&, auto xp) { xp[0] = x[0]; });
  pb.add_terminal_cost("x_T", [](const auto& x, const auto&) { return x[0]; });
  pb.options().tf = 2.0;
  pb.options().max_event_cascade = 5;
  pb.options().cascade_window = 1e-6;
  EXPECT_THROW(simulate(pb), ZenoError);
}

// A state that starts exactly on a guard is never detected by root finding (CVODES masks a guard
// that starts at zero), so a ball released on its floor would fall through it: that start is
// refused, while one that leaves the guard runs.
TEST(StartOnGuard, RestingOrEnteringIsRefusedLeavingRuns) {
  Problem pb = examples::ball1d();
  pb.set_nominal("h0", 0.0);
  try {
    simulate(pb);
    FAIL() << "a ball resting on its floor at t0 was accepted";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find(
                  "event 'impact': the run starts on its guard (r = 0 at t0 = 0, state (h=0, v=0)) and rests on it"),
              std::string::npos)
        << e.what();
  }
  pb.set_nominal("v0", -1.0);
  EXPECT_THROW(forward_sensitivity(pb), InputError);
  pb.set_nominal("v0", 1.0);
  Options o = pb.options();
  set_horizon(o, 0.1);
  EXPECT_NO_THROW(simulate(pb, pb.nominal_parameters(), o));
}

// An absurd horizon fails on the first step, and the message says so.
TEST(StartOnGuard, AnAbsurdHorizonIsNamed) {
  const Problem pb = examples::ball1d();
  Options o = pb.options();
  set_horizon(o, 1e300);
  try {
    simulate(pb, pb.nominal_parameters(), o);
    FAIL() << "expected a failure";
  } catch (const SolverError& e) {
    EXPECT_NE(std::string(e.what()).find("the first step failed"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("horizon [0, 1e+300] s"), std::string::npos) << e.what();
  }
}

namespace {

/// The documented bouncing ball (docs/model-files.md) with a raised floor, no drag and e = 0.6:
/// it rests on its floor at h = r from the Zeno limit t_inf = t_1 + (2 v_1 / g) e / (1 - e),
/// t_1 = sqrt(2 / g), v_1 = sqrt(2 g) (a 1 m drop), about 1.8061 s.
Problem resting_ball(double rtol, const std::string& direction) {
  Problem pb = equations::parse_equation_problem(
      "name: ball\nhorizon: 6\nparameters: {g: 9.81, e: 0.6, h0: 1.25, r: 0.25}\nstates: {h: h0, v: 0}\n"
      "modes: {flight: {rhs: [v, -g]}, rest: {rhs: [0, 0]}}\n"
      "events:\n"
      "  impact: {guard: h - r, direction: " + direction + ", jump: [h, -e*v], only_in: flight, rests_in: {mode: rest, jump: [r, 0]}}\n"
      "  lift_off: {guard: -g, direction: rising, only_in: rest, next: flight}\n"
      "costs: {h_T: {terminal: h}}\n",
      "ball.yaml");
  pb.options().rtol = rtol;
  return pb;
}

}  // namespace

// Near the Zeno limit a bounce leaves the floor at tolerance-level speed (2.6e-5 m/s at rtol
// 1e-8); the integration's noise then crossed the guard 'falling' while the ball still rose,
// and that spurious impact's jump sent the ball down through its floor (h = -86 m at t = 6,
// exit 0; also at rtol 1e-6 and 3e-9). A root against its event's direction is now no firing.
TEST(Zeno, ABounceAtNoiseLevelDoesNotFireAgainstItsDirection) {
  for (double rtol : {1e-6, 1e-8, 3e-9, 1e-10}) {
    const Problem pb = resting_ball(rtol, "falling");
    const Solution s = simulate(pb, pb.nominal_parameters(), pb.options());
    EXPECT_EQ(pb.mode(s.final_mode).name, "rest") << rtol;
    EXPECT_NEAR(s.final_state[0], 0.25, 1e-12) << rtol;
    EXPECT_EQ(s.final_state[1], 0.0) << rtol;
    for (const EventRecord& e : s.events) {
      if (e.name == "impact") {
        EXPECT_LE(e.guard_rate, 0.0) << rtol << " at t = " << e.time;
      }
    }
    const double t1 = std::sqrt(2.0 / 9.81), v1 = std::sqrt(2.0 * 9.81);
    EXPECT_NEAR(s.events.back().accumulation_time, t1 + 2.0 * v1 / 9.81 * 0.6 / 0.4, 2e-3) << rtol;
  }
}

// A floor watched in both directions (direction: either) whose jump reverses the crossing: the
// bounce leaves the floor where the root was located just past zero, and watching both
// directions fired the impact again at once, 18 times within 1e-13 s, then let the ball through
// its floor. After its own firing an either-way guard watches the crossing that brings the state
// back: the same bounces as a falling floor.
TEST(Zeno, AnEitherWayFloorBouncesAsAFallingOne) {
  for (double rtol : {1e-8, 1e-10}) {
    const Problem either = resting_ball(rtol, "either"), falling = resting_ball(rtol, "falling");
    const Solution a = simulate(either, either.nominal_parameters(), either.options());
    const Solution b = simulate(falling, falling.nominal_parameters(), falling.options());
    ASSERT_EQ(a.events.size(), b.events.size()) << rtol;
    for (size_t i = 0; i < a.events.size(); ++i) EXPECT_NEAR(a.events[i].time, b.events[i].time, 1e-9) << rtol << " " << i;
    EXPECT_NEAR(a.final_state[0], 0.25, 1e-12) << rtol;
  }
  // Every run type takes the same bounces (their complex-step event times differ from t by
  // O(h): the decision reads the events applied, not the log's times).
  const Problem either = resting_ball(1e-10, "either");
  const Eigen::VectorXd p = either.nominal_parameters();
  const Options o = either.options();
  EXPECT_NEAR(forward_sensitivity(either, p, o).final_state[0], 0.25, 1e-12);
  EXPECT_NEAR(adjoint(either, p, o).final_state[0], 0.25, 1e-12);
  EXPECT_NEAR(complex_step(either, p, o).costs[0], 0.25, 1e-12);
}

// An either-way event whose mode switch (not its jump) turns the motion back keeps watching both
// directions: a relay without hysteresis switches at T = 1 in a zero-time cascade, heat -> cool
// -> heat -> ... Its motion would slide along T = 1 (both modes drive T into the guard), which a
// hybrid model does not continue: after six switches the noise left T just above 1 in 'heat' and
// the run went on heating to T = 3 (exit 0), while the complex step cooled to T = -1. Every run
// type now stops at the first switch back.
TEST(Zeno, ARelayWithoutHysteresisStopsAsASlidingMode) {
  const Problem relay = equations::parse_equation_problem(
      "name: relay\nhorizon: 3\nparameters: {T_set: 1}\nstates: {T: 0}\nmodes: {heat: {rhs: [1]}, cool: {rhs: [-1]}}\n"
      "events:\n  switch: {guard: T - T_set, direction: either, next: {heat: cool, cool: heat}}\n"
      "costs: {T_T: {terminal: T}}\n",
      "relay.yaml");
  const Eigen::VectorXd p = relay.nominal_parameters();
  const auto expect_sliding = [](const std::function<void()>& run, const char* what) {
    try {
      run();
      ADD_FAILURE() << what << ": the relay ran on";
    } catch (const ZenoError& e) {
      const std::string m = e.what();
      EXPECT_NE(m.find("sliding mode"), std::string::npos) << what << ": " << m;
      EXPECT_NE(m.find("switched mode 'heat' to 'cool'"), std::string::npos) << what << ": " << m;
      EXPECT_NE(m.find("'switch'"), std::string::npos) << what << ": " << m;
    }
  };
  expect_sliding([&] { simulate(relay, p, relay.options()); }, "simulation");
  // A relay that counts its switches (a jump on another state) slides the same way: it ran on
  // through the surface once a switch into a mode turning back watched only the return crossing.
  const Problem counting = equations::parse_equation_problem(
      "name: relay\nhorizon: 3\nparameters: {T_set: 1}\nstates: {T: 0, n: 0}\n"
      "modes: {heat: {rhs: [1, 0]}, cool: {rhs: [-1, 0]}}\n"
      "events:\n  switch: {guard: T - T_set, direction: either, next: {heat: cool, cool: heat}, jump: [T, n + 1]}\n"
      "costs: {T_T: {terminal: T}}\n",
      "relay.yaml");
  expect_sliding([&] { simulate(counting, p, counting.options()); }, "simulation, counting");
  expect_sliding([&] { forward_sensitivity(relay, p, relay.options()); }, "forward");
  expect_sliding([&] { adjoint(relay, p, relay.options()); }, "adjoint");
  expect_sliding([&] { complex_step(relay, p, relay.options()); }, "complex step");
  // The same relay as two one-way events at one set point, and as a DAE on IDAS.
  const Problem two_events = equations::parse_equation_problem(
      "name: relay\nhorizon: 3\nparameters: {T_set: 1}\nstates: {T: 0}\nmodes: {heat: {rhs: [1]}, cool: {rhs: [-1]}}\n"
      "events:\n  switch: {guard: T - T_set, direction: rising, only_in: heat, next: cool}\n"
      "  back: {guard: T - T_set, direction: falling, only_in: cool, next: heat}\n"
      "costs: {T_T: {terminal: T}}\n",
      "relay.yaml");
  const Problem dae = equations::parse_equation_problem(
      "name: relay\nhorizon: 3\nparameters: {T_set: 1}\nstates: {T: 0, z: 0}\nalgebraic: z\n"
      "modes: {heat: {residual: [\"der(T) - z\", \"z - 1\"]}, cool: {residual: [\"der(T) - z\", \"z + 1\"]}}\n"
      "events:\n  switch: {guard: T - T_set, direction: either, next: {heat: cool, cool: heat}}\n"
      "costs: {T_T: {terminal: T}}\n",
      "relay.yaml");
  for (const Problem* other : {&two_events, &dae}) {
    expect_sliding([&] { simulate(*other, p, other->options()); }, "simulation");
    expect_sliding([&] { adjoint(*other, p, other->options()); }, "adjoint");
    expect_sliding([&] { complex_step(*other, p, other->options()); }, "complex step");
  }
  // Two time events 1e-10 s apart switch there and back, but time rises in every mode: such a
  // pulse is no sliding mode (found by the review: it was refused).
  for (const double width : {1e-10, 0.5}) {
    Problem pulse = equations::parse_equation_problem(
        "name: pulse\nhorizon: 3\nparameters: {t_on: 1, width: 0}\nstates: {x: 0}\n"
        "modes: {idle: {rhs: [1]}, pumping: {rhs: [5]}}\n"
        "events:\n  start: {at: t_on, only_in: idle, next: pumping}\n"
        "  stop: {at: t_on + width, only_in: pumping, next: idle}\ncosts: {x_T: {terminal: x}}\n",
        "pulse.yaml");
    pulse.set_nominal("width", width);
    const Solution s = simulate(pulse);
    EXPECT_EQ(s.events.size(), 2u) << width;
    EXPECT_NEAR(s.final_state[0], 3.0 + 4.0 * width, 1e-8) << width;  // 4 more per second of pumping
  }
  // With hysteresis (two guards apart) the same relay cycles between 0.9 and 1.1.
  const Problem hysteresis = equations::parse_equation_problem(
      "name: relay\nhorizon: 3\nstates: {T: 0}\nmodes: {heat: {rhs: [1]}, cool: {rhs: [-1]}}\n"
      "events:\n  off: {guard: T - 1.1, direction: rising, only_in: heat, next: cool}\n"
      "  on: {guard: T - 0.9, direction: falling, only_in: cool, next: heat}\n"
      "costs: {T_T: {terminal: T}}\n",
      "relay.yaml");
  const Solution s = simulate(hysteresis);
  ASSERT_EQ(s.events.size(), 10u);  // 1.1, 1.3, 1.5, ... 2.9
  EXPECT_NEAR(s.events.back().time, 2.9, 1e-9);
  EXPECT_NEAR(s.final_state[0], 1.0, 1e-9);  // cooling from 1.1 for 0.1 s
}

// The complex step's run fires what the real run fires: x = -(t - 1)^2 + c crosses zero rising
// at 1 - sqrt(c) and falling at 1 + sqrt(c) (c = 1e-6). Its carry of the state to the complex
// event time and back left x a round-off short of zero after 'up', which fired again at once:
// n_T = 12 where the real run has 11, and 'down' reported with the dt/dc of 'up' (-508 for +500).
TEST(ComplexStep, TheComplexRunFiresEachEventOnceAsTheRealRun) {
  const Problem pb = equations::parse_equation_problem(
      "name: para\nhorizon: 2\noutputs: 2000\ntolerances: {rtol: 1.0e-8, atol: 1.0e-10}\nparameters: {c: 1.0e-6}\n"
      "states: {x: -1 + c, v: 2, n: 0}\nmodes: {m: {rhs: [v, -2, 0]}}\n"
      "events:\n  up: {guard: x, direction: rising, jump: [x, v, n + 1]}\n"
      "  down: {guard: x, direction: falling, jump: [x, v, n + 10]}\n"
      "costs: {nT: {terminal: n}, xT: {terminal: x}}\n",
      "para.yaml");
  const Eigen::VectorXd p = pb.nominal_parameters();
  const Solution fwd = forward_sensitivity(pb, p, pb.options());
  ASSERT_EQ(fwd.events.size(), 2u);
  const GradientEstimate cs = complex_step(pb, p, pb.options());
  EXPECT_EQ(cs.costs[0], 11.0);
  ASSERT_EQ(cs.event_time_gradient.rows(), 2);
  // dt/dc = -/+ 1 / (2 sqrt(c)) = -/+ 500, to the integration's accuracy at rtol 1e-8.
  EXPECT_NEAR(cs.event_time_gradient(0, 0), -500.0, 20.0);
  EXPECT_NEAR(cs.event_time_gradient(1, 0), 500.0, 20.0);
}

// A guard crossing with zero speed, r = (x - a)^3, whose jump acts on another state: the
// crossing is tangential (grazing), and the guard goes on to its firing side exactly as before the
// jump. The hold after a restart kept it on its non-firing side and fired it again as it left its
// band (two firings, y_T = 4 e^-2 in the simulation, one in the adjoint's recording): it fires
// once, y_T = k e^-2, dy_T/dk = e^-2 (found by a model file written from the docs).
TEST(Grazing, ACrossingWhoseJumpLeavesTheGuardMovingOnFiresOnce) {
  const Problem pb = equations::parse_equation_problem(
      "name: cubic\nhorizon: 2\nparameters: {a: 1, k: 2}\nstates: {x: 0, y: 1}\nmodes: {m: {rhs: [1, -y]}}\n"
      "events:\n  hit: {guard: \"(x - a)^3\", direction: rising, jump: [x, \"k*y\"]}\n"
      "costs: {yT: {terminal: y}}\n",
      "cubic.yaml");
  const Eigen::VectorXd p = pb.nominal_parameters();
  const Solution s = simulate(pb, p, pb.options());
  ASSERT_EQ(s.events.size(), 1u);
  EXPECT_TRUE(s.events[0].grazing);
  EXPECT_NEAR(s.costs[0], 2.0 * std::exp(-2.0), 1e-7);
  const Solution adj = adjoint(pb, p, pb.options());
  ASSERT_EQ(adj.events.size(), 1u);
  EXPECT_NEAR(adj.costs[0], 2.0 * std::exp(-2.0), 1e-7);
  EXPECT_NEAR(adj.cost_gradient(0, 1), std::exp(-2.0), 1e-6);  // d y_T / d k
}

// An either-way switch into a mode that turns the motion back leaves the guard it was applied
// on, as a bounce does: only a crossing back is a new one. Modes A (x' = 1), B (x' = -2) and
// C (x' = 0.5), the switch A -> B -> C -> A at x = th: the run fired once, or three times at
// one instant (ending in A, J = 2), as the root's last bits fell (th = 0.9, 1.1), and forward
// and simulation differed. It fires once for every th: x = th - 2 (t - th) after it,
// J = th^2 / 2 + th (2 - th) - (2 - th)^2 = -1.5 th^2 + 6 th - 4.
TEST(EitherWay, ASwitchThatTurnsTheMotionBackFiresOnceWhateverTheSetPoint) {
  const Problem pb = equations::parse_equation_problem(
      "name: cycle\nhorizon: 2\nparameters: {th: 0.6}\nstates: {x: 0}\n"
      "modes: {A: {rhs: [1]}, B: {rhs: [-2]}, C: {rhs: [0.5]}}\n"
      "events:\n  sw: {guard: x - th, direction: either, next: {A: B, B: C, C: A}}\n"
      "costs: {J: {running: x}}\n",
      "cycle.yaml");
  for (const double th : {0.3, 0.6, 0.77, 0.9, 1.1}) {
    Eigen::VectorXd p(1);
    p << th;
    const double J = th * th / 2.0 + th * (2.0 - th) - (2.0 - th) * (2.0 - th);
    for (const bool forward : {false, true}) {
      const Solution s = forward ? forward_sensitivity(pb, p, pb.options()) : simulate(pb, p, pb.options());
      SCOPED_TRACE(::testing::Message() << "th = " << th << (forward ? ", forward" : ", simulation"));
      ASSERT_EQ(s.events.size(), 1u);
      EXPECT_EQ(s.final_mode, 1);  // B
      EXPECT_NEAR(s.costs[0], J, 1e-6);
      if (forward) {
        EXPECT_NEAR(s.cost_gradient(0, 0), 6.0 - 3.0 * th, 1e-6);  // J = -1.5 th^2 + 6 th - 4
      }
    }
  }
}

// An either-way floor that also switches modes (down -> up -> down) bounces: its jump turned the
// motion, not its switch, so it is no sliding mode (the sliding-mode check no longer requires a
// jump that keeps the state, and must not take a bounce for one). Impacts at sqrt(2 h0 / g) and
// 2 e sqrt(2 g h0) / g later.
TEST(EitherWay, AFloorThatSwitchesModesBouncesAndDoesNotSlide) {
  const Problem pb = equations::parse_equation_problem(
      "name: ball_modes\nhorizon: 1.2\nparameters: {e: 0.8, g: 9.81}\nstates: {h: 1, v: 0}\n"
      "modes: {down: {rhs: [v, -g]}, up: {rhs: [v, -g]}}\n"
      "events:\n  floor: {guard: h, direction: either, next: {down: up, up: down}, jump: [h, -e*v]}\n"
      "costs: {h_T: {terminal: h}}\n",
      "ball_modes.yaml");
  const Solution s = simulate(pb);
  ASSERT_EQ(s.events.size(), 2u);
  const double t1 = std::sqrt(2.0 / 9.81);
  EXPECT_NEAR(s.events[0].time, t1, 1e-8);
  EXPECT_NEAR(s.events[1].time, t1 + 2.0 * 0.8 * std::sqrt(2.0 * 9.81) / 9.81, 1e-8);
}
