// Bad input and misbehaving models give clear errors that name the problem.
#include <saltus/examples/builtin.hpp>
#include <saltus/solvers/adjoint.hpp>
#include <saltus/solvers/simulate.hpp>

#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <memory>
#include <string>
#include <type_traits>
#include <vector>

using namespace saltus;

namespace {

template <class E, class F>
std::string message_of(F&& f) {
  try {
    f();
  } catch (const E& e) {
    return e.what();
  }
  ADD_FAILURE() << "expected an exception";
  return "";
}

bool contains(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

}  // namespace

TEST(Errors, NaNParameterIsNamed) {
  const Problem pb = examples::ball1d();
  Eigen::VectorXd p = pb.nominal_parameters();
  p[pb.parameter_index("e")] = std::numeric_limits<double>::quiet_NaN();
  const auto msg = message_of<InputError>([&] { simulate(pb, p, pb.options()); });
  EXPECT_TRUE(contains(msg, "'e'")) << msg;
}

TEST(Errors, WrongParameterVectorSize) {
  const Problem pb = examples::ball1d();
  const auto msg = message_of<InputError>([&] { simulate(pb, Eigen::VectorXd(2), pb.options()); });
  EXPECT_TRUE(contains(msg, "6 parameters")) << msg;
}

TEST(Errors, UnknownParameterListsTheKnownOnes) {
  Problem pb = examples::ball1d();
  const auto msg = message_of<InputError>([&] { pb.set_nominal("gravity", 1.0); });
  EXPECT_TRUE(contains(msg, "gravity")) << msg;
  EXPECT_TRUE(contains(msg, "h0")) << msg;
}

TEST(Errors, NegativeToleranceIsRejected) {
  const Problem pb = examples::ball1d();
  Options o = pb.options();
  o.rtol = -1e-6;
  const auto msg = message_of<InputError>([&] { simulate(pb, pb.nominal_parameters(), o); });
  EXPECT_TRUE(contains(msg, "rtol")) << msg;
}

TEST(Errors, HorizonMustBeAfterStart) {
  const Problem pb = examples::ball1d();
  Options o = pb.options();
  EXPECT_THROW(set_horizon(o, -1.0), InputError);
  o.tf = o.t0;
  EXPECT_THROW(simulate(pb, pb.nominal_parameters(), o), InputError);
}

TEST(Errors, NaNRightHandSideNamesModeTimeAndState) {
  Problem pb("breaks");
  pb.set_states({"x"});
  pb.add_parameter("a", 1.0);
  pb.set_initial_state([](const auto&, auto x) { x[0] = 0.0; });
  pb.add_mode("fragile", [](auto t, const auto&, const auto& p, auto xdot) {
    xdot[0] = p[0];
    if (real_part(t) > 0.5) xdot[0] = xdot[0] * std::numeric_limits<double>::quiet_NaN();
  });
  pb.add_terminal_cost("x_T", [](const auto& x, const auto&) { return x[0]; });
  const auto msg = message_of<ModelError>([&] { simulate(pb); });
  EXPECT_TRUE(contains(msg, "fragile")) << msg;
  EXPECT_TRUE(contains(msg, "not finite")) << msg;
  EXPECT_TRUE(contains(msg, "t = ")) << msg;
}

// A model error at a trial state that the integrator recovered from (a shorter step) is not the
// cause of a later failure within the same stretch between two outputs: the step limit is
// named as the cause, the recovered error as a note. Without the step limit the run recovers
// and ends where the closed form says.
TEST(Errors, AFailureRecoveredFromDoesNotTakeTheBlameForTheStepLimit) {
  const auto thrown = std::make_shared<bool>(false);
  Problem pb("oscillating");
  pb.set_states({"x"});
  pb.add_parameter("w", 200.0);
  pb.set_initial_state([](const auto&, auto x) { x[0] = 0.0; });
  pb.add_mode("fast", [thrown](auto t, const auto&, const auto& p, auto xdot) {
    using std::cos;
    if (real_part(t) > 0.05 && !*thrown) {
      *thrown = true;
      throw ModelError("the test's trial failure");
    }
    xdot[0] = cos(p[0] * t);
  });
  pb.add_terminal_cost("x_T", [](const auto& x, const auto&) { return x[0]; });
  Options o = pb.options();
  o.tf = 10.0;
  o.n_outputs = 2;  // one stretch: the failure and the step limit fall in it
  o.max_steps = 300;
  const auto msg = message_of<SolverError>([&] { simulate(pb, pb.nominal_parameters(), o); });
  EXPECT_TRUE(*thrown);
  EXPECT_TRUE(contains(msg, "max_steps = 300")) << msg;
  EXPECT_TRUE(contains(msg, "earlier in this stretch the model failed at a trial state")) << msg;
  EXPECT_TRUE(contains(msg, "the test's trial failure")) << msg;
  *thrown = false;
  o.max_steps = 500000;
  const Solution s = simulate(pb, pb.nominal_parameters(), o);
  EXPECT_TRUE(*thrown);
  EXPECT_NEAR(s.final_state[0], std::sin(2000.0) / 200.0, 1e-5);
}

// Sensitivities that are not finite where the state's rates are (a model whose derivatives fail
// past t = 0.5) end the forward run with a ModelError naming them, after the recoverable tries,
// rather than CVODES's flag alone.
TEST(Errors, NaNSensitivityRatesAreNamed) {
  Problem pb("breaks_in_derivatives");
  pb.set_states({"x"});
  pb.add_parameter("a", 1.0);
  pb.set_initial_state([](const auto&, auto x) { x[0] = 0.0; });
  pb.add_mode("fragile", [](auto t, const auto&, const auto& p, auto xdot) {
    xdot[0] = p[0];
    using S = std::decay_t<decltype(t)>;
    if (!std::is_same_v<S, double> && real_part(t) > 0.5) xdot[0] = xdot[0] * std::numeric_limits<double>::quiet_NaN();
  });
  pb.add_terminal_cost("x_T", [](const auto& x, const auto&) { return x[0]; });
  EXPECT_NEAR(simulate(pb).final_state[0], 1.0, 1e-9);  // the state's own rates stay finite
  const auto msg = message_of<ModelError>([&] { forward_sensitivity(pb); });
  EXPECT_TRUE(contains(msg, "the sensitivities' right-hand side of mode 'fragile' is not finite")) << msg;
}

// The same on IDAS, whose Newton matrix reads the same derivatives: named at once, in the
// simulation and the forward run. Before, the Newton matrix's failure was recoverable without a
// name or a limit, and IDAS crept towards t = 0.5 in steps of 5e-17 s until max_steps.
TEST(Errors, NaNDerivativesAreNamedOnIdas) {
  Problem pb("breaks_in_derivatives_dae");
  pb.set_states({"x"});
  pb.add_parameter("a", 1.0);
  pb.set_initial_state([](const auto&, auto x) { x[0] = 0.0; });
  pb.add_residual_mode("fragile", [](auto t, const auto&, const auto& xdot, const auto& p, auto r) {
    r[0] = xdot[0] - p[0];
    using S = std::decay_t<decltype(t)>;
    if (!std::is_same_v<S, double> && real_part(t) > 0.5) r[0] = r[0] * std::numeric_limits<double>::quiet_NaN();
  });
  pb.add_terminal_cost("x_T", [](const auto& x, const auto&) { return x[0]; });
  for (const bool sensitivities : {false, true}) {
    const auto msg = message_of<ModelError>([&] { sensitivities ? forward_sensitivity(pb) : simulate(pb); });
    EXPECT_TRUE(contains(msg, "of mode 'fragile'")) << msg;
    EXPECT_TRUE(contains(msg, "is not finite at t = 0.5")) << msg;
  }
}

namespace {

// Throws a ModelError from a derivative evaluation in 0.2 < t < 0.5, once the backward pass has
// begun.
struct BackwardTrap {
  bool armed = false;      // by the terminal cost's derivative: the forward pass has ended
  bool persists = false;   // throw at every such evaluation, not once
  int thrown = 0;
  template <class T>
  void spring(const T& t) {
    // Inside the run, not at its ends, which the gradient's last steps evaluate outside the
    // integrator (no shorter step exists there).
    if (!armed || std::is_same_v<T, double> || real_part(t) <= 0.2 || real_part(t) >= 0.5) return;
    if (thrown > 0 && !persists) return;
    ++thrown;
    throw ModelError("the test's backward failure");
  }
};

}  // namespace

// A model error that only the backward pass meets (it reads the forward solution between its
// points, where a model's domain may end though the recorded states stayed in it) is recovered
// from, with a shorter backward step, on CVODES and IDAS alike: the gradient is the one without
// the failure. One that persists ends the run with a ModelError naming it after a limited number
// of tries, rather than a creeping backward step or an unnamed flag. Before, IDAS's backward pass
// ended at the first such failure, and CVODES's retried without a limit.
TEST(Errors, AModelErrorOfTheBackwardPassAloneIsRecoveredFromOnCvodesAndIdas) {
  const auto trap = std::make_shared<BackwardTrap>();
  for (const bool residual : {false, true}) {
    Problem pb(residual ? "decay_dae" : "decay");
    pb.set_states({"x"});
    pb.add_parameter("a", 0.7);
    pb.set_initial_state([](const auto&, auto x) { x[0] = 2.0; });
    if (residual) {
      pb.add_residual_mode("decaying", [trap](auto t, const auto& x, const auto& xdot, const auto& p, auto r) {
        trap->spring(t);
        r[0] = xdot[0] + p[0] * x[0];
      });
    } else {
      pb.add_mode("decaying", [trap](auto t, const auto& x, const auto& p, auto xdot) {
        trap->spring(t);
        xdot[0] = -p[0] * x[0];
      });
    }
    pb.add_terminal_cost("x_T", [trap](const auto& x, const auto&) {
      // Its derivative is first taken for the backward pass's terminal conditions.
      if (!std::is_same_v<std::decay_t<decltype(x[0])>, double>) trap->armed = true;
      return x[0];
    });
    Options o = pb.options();
    o.tf = 1.0;
    o.rtol = 1e-9;
    o.atol = 1e-12;
    *trap = BackwardTrap{};
    const Solution s = adjoint(pb, pb.nominal_parameters(), o);
    EXPECT_EQ(trap->thrown, 1) << pb.name();
    EXPECT_NEAR(s.cost_gradient(0, 0), -2.0 * std::exp(-0.7), 1e-7) << pb.name();  // d(x0 e^{-aT})/da
    *trap = BackwardTrap{};
    trap->persists = true;
    const auto msg = message_of<ModelError>([&] { adjoint(pb, pb.nominal_parameters(), o); });
    EXPECT_TRUE(contains(msg, "the test's backward failure")) << msg;
    EXPECT_GT(trap->thrown, 1) << pb.name();
    // kRecoverableFailures tries per stretch between two output times (here the stretch that
    // reaches t = 0.5, shortening its steps to land there, and the next), then fatal.
    EXPECT_LE(trap->thrown, 2 * 51) << pb.name();
  }
}

TEST(Errors, NaNInitialStateIsReported) {
  Problem pb("bad_start");
  pb.set_states({"x"});
  pb.add_parameter("a", -1.0);
  pb.set_initial_state([](const auto& p, auto x) {
    using std::sqrt;
    x[0] = sqrt(p[0]);
  });
  pb.add_mode("m", [](auto, const auto&, const auto&, auto xdot) { xdot[0] = 1.0; });
  pb.add_terminal_cost("x_T", [](const auto& x, const auto&) { return x[0]; });
  // The model's initial values at these parameters are no numbers: bad input (exit status 2),
  // not a failed run.
  const auto msg = message_of<InputError>([&] { simulate(pb); });
  EXPECT_TRUE(contains(msg, "the initial state (x=nan) of problem 'bad_start' is not finite at the parameters' values"))
      << msg;
}

// A large model's state in a message: the non-finite entries and the first ones, twelve in
// all, and the count of the others, so that the message stays one readable line.
TEST(Errors, ALargeStateInAMessageNamesItsNonFiniteEntriesAndCountsTheRest) {
  constexpr int n = 300;
  Problem pb("large_bad_start");
  std::vector<std::string> names;
  for (int i = 0; i < n; ++i) names.push_back("x" + std::to_string(i));
  pb.set_states(names);
  pb.add_parameter("a", -1.0);
  pb.set_initial_state([](const auto& p, auto x) {
    using std::sqrt;
    for (int i = 0; i < n; ++i) x[i] = 1.0 + i;
    x[250] = sqrt(p[0]);  // NaN
  });
  pb.add_mode("m", [](auto, const auto& x, const auto&, auto xdot) {
    for (int i = 0; i < n; ++i) xdot[i] = -x[i];
  });
  pb.add_terminal_cost("x_T", [](const auto& x, const auto&) { return x[0]; });
  const auto msg = message_of<InputError>([&] { simulate(pb); });
  EXPECT_TRUE(contains(msg, "(x0=1, x1=2, ")) << msg;
  EXPECT_TRUE(contains(msg, "x10=11, x250=nan")) << msg;  // sqrt(-1), written without a sign
  EXPECT_TRUE(contains(msg, "nan, and 288 more of 300 states)")) << msg;
  EXPECT_FALSE(contains(msg, "x11=")) << msg;
  EXPECT_LT(msg.size(), 400u) << msg;
}

TEST(Errors, IncompleteProblemsAreRejected) {
  Problem pb("empty");
  EXPECT_THROW(pb.validate(), InputError);
  pb.set_states({"x"});
  EXPECT_THROW(pb.validate(), InputError);  // no modes
  EXPECT_THROW(pb.add_parameter("a", std::nan("")), InputError);
  pb.add_parameter("a", 1.0);
  EXPECT_THROW(pb.add_parameter("a", 2.0), InputError);  // duplicate
}

TEST(Errors, EventSwitchingToAMissingModeIsRejected) {
  Problem pb = examples::galan();
  pb.add_event("bad", Direction::Rising, [](auto, const auto& x, const auto&) { return x[0]; })
      .switch_to(7);
  const auto msg = message_of<InputError>([&] { pb.validate(); });
  EXPECT_TRUE(contains(msg, "bad")) << msg;
}
