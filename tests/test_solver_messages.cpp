// Integrator warnings are capped per run: a few lines, then one summary with the count.
#include <saltus/multibody/formulation.hpp>
#include <saltus/multibody/model_file.hpp>
#include <saltus/solvers/simulate.hpp>
#include <saltus/solvers/solver_messages.hpp>

#include <gtest/gtest.h>

#include <algorithm>
#include <sstream>

namespace {

using namespace saltus;

// The five-bar with an elastic floor over 40 s restarts CVODES after every impact with steps so
// small that CVODES warns "t + h = t" dozens of times (with forward sensitivities).
TEST(SolverMessages, WarningsAreCappedPerRunWithASummary) {
  const Problem pb = multibody::make_problem(multibody::load_model(std::string(SALTUS_SOURCE_DIR) + "/examples/fivebar_floor.yaml"));
  Options o = pb.options();
  set_horizon(o, 40.0);
  std::ostringstream err;
  long warnings = 0;
  {
    const SolverMessageScope scope(err, 2);
    forward_sensitivity(pb, pb.nominal_parameters(), o);
    warnings = SolverMessageScope::warnings();
  }
  const std::string text = err.str();
  ASSERT_GT(warnings, 2) << "the run no longer provokes warnings; pick another";
  EXPECT_EQ(std::count(text.begin(), text.end(), '\n'), 3) << text;
  EXPECT_NE(text.find("saltus: solver warning: CVode: "), std::string::npos) << text;
  EXPECT_NE(text.find(std::to_string(warnings - 2) + " more solver warnings suppressed"), std::string::npos) << text;
}

}  // namespace
