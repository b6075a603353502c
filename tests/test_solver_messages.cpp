// Integrator warnings are capped per run: a few lines, then one summary with the count.
#include <saltus/solvers/simulate.hpp>
#include <saltus/solvers/solver_messages.hpp>

#include <gtest/gtest.h>

#include <algorithm>
#include <sstream>

namespace {

using namespace saltus;

/// x' = -k (x - 1) integrated late in time (t ~ 1e10): the steps the dynamics need (~1e-6 s) are
/// below the resolution of t, so CVODES warns "t + h = t" on every step, up to its own limit of
/// ten warnings and a final notice (eleven in all).
Problem late_relaxation() {
  Problem pb("late_relaxation");
  pb.set_states({"x"});
  pb.add_parameter("k", 1e6);
  pb.set_initial_state([](const auto&, auto x0) { x0[0] = 0.0; });
  pb.add_mode("relax", [](auto, const auto& x, const auto& p, auto xdot) { xdot[0] = -p[0] * (x[0] - 1.0); });
  pb.add_terminal_cost("x_T", [](const auto& x, const auto&) { return x[0]; });
  pb.options().t0 = 1e10;
  pb.options().tf = 1e10 + 1e-3;
  pb.options().method = LinearMultistep::Adams;
  return pb;
}

TEST(SolverMessages, WarningsAreCappedPerRunWithASummary) {
  const Problem pb = late_relaxation();
  std::ostringstream err;
  long warnings = 0;
  {
    const SolverMessageScope scope(err, 2);
    simulate(pb);
    forward_sensitivity(pb);  // a second run inside the same scope shares the cap
    warnings = SolverMessageScope::warnings();
  }
  const std::string text = err.str();
  EXPECT_EQ(warnings, 22);
  EXPECT_EQ(std::count(text.begin(), text.end(), '\n'), 3) << text;
  EXPECT_NE(text.find("saltus: solver warning: CVode: Internal t = 1e+10 and h = "), std::string::npos) << text;
  EXPECT_NE(text.find("saltus: 20 more solver warnings suppressed\n"), std::string::npos) << text;
}

TEST(SolverMessages, EachRunHasItsOwnCapWithoutAnOuterScope) {
  ::testing::internal::CaptureStderr();
  simulate(late_relaxation());
  const std::string text = ::testing::internal::GetCapturedStderr();
  EXPECT_EQ(std::count(text.begin(), text.end(), '\n'), 4) << text;  // three lines and the summary
  EXPECT_NE(text.find("saltus: 8 more solver warnings suppressed"), std::string::npos) << text;
}

}  // namespace
