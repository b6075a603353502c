// Options of the forward sensitivities on CVODES: without the sensitivities in the error test
// (Options::sensitivity_error_control off) a run is still a function of its inputs alone, and its
// gradient stays near the default run's.
#include <saltus/core/options.hpp>
#include <saltus/multibody/formulation.hpp>
#include <saltus/multibody/model_file.hpp>
#include <saltus/solvers/simulate.hpp>

#include <gtest/gtest.h>

#include <string>

namespace {

using namespace saltus;

Problem fivebar_floor() {
  const multibody::Model model = multibody::load_model(std::string(SALTUS_SOURCE_DIR) + "/examples/fivebar_floor.yaml");
  multibody::FormulationSettings settings;
  settings.type = multibody::FormulationType::Index1;
  return multibody::make_problem(model, settings);
}

// CVODES's first-step estimate evaluated the cost sensitivities at work vectors it had not
// formed when the sensitivities were out of the error test: the same run gave 2,847 to 3,002
// steps and gradients 4e-9 apart from one repetition to the next in one process. Saltus leaves
// the cost sensitivities out of the error test with them.
TEST(SensitivityOptions, WithoutSensitivityErrorControlARunRepeatsBitForBit) {
  const Problem pb = fivebar_floor();
  Options o = pb.options();
  o.sensitivity_error_control = false;
  const Solution first = forward_sensitivity(pb, pb.nominal_parameters(), o);
  ASSERT_GT(first.stats.steps, 0);
  for (int run = 0; run < 3; ++run) {
    const Problem again = fivebar_floor();
    const Solution next = forward_sensitivity(again, again.nominal_parameters(), o);
    EXPECT_EQ(next.stats.steps, first.stats.steps) << "run " << run;
    EXPECT_EQ(next.cost_gradient, first.cost_gradient) << "run " << run;
  }
  // The gradient of the default run (sensitivities in the error test), within 1e-7 of each
  // cost's largest entry (rtol 1e-10).
  const Solution controlled = forward_sensitivity(pb);
  ASSERT_EQ(controlled.cost_gradient.rows(), first.cost_gradient.rows());
  for (Eigen::Index c = 0; c < first.cost_gradient.rows(); ++c) {
    const double largest = controlled.cost_gradient.row(c).cwiseAbs().maxCoeff();
    EXPECT_LT((first.cost_gradient.row(c) - controlled.cost_gradient.row(c)).cwiseAbs().maxCoeff(), 1e-7 * largest)
        << "cost " << c;
  }
}

}  // namespace
