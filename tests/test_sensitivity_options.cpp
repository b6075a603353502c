// Options of the forward sensitivities on CVODES: without the sensitivities in the error test
// (Options::sensitivity_error_control off) a run is still a function of its inputs alone, and its
// gradient stays near the default run's.
#include <saltus/core/options.hpp>
#include <saltus/multibody/formulation.hpp>
#include <saltus/multibody/model_file.hpp>
#include <saltus/solvers/simulate.hpp>

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdlib>
#include <string>
#include <vector>

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

/// Frees many blocks of `bytes` filled with 1e300, so that the allocations that follow reuse
/// memory that reads as garbage where it is not written first.
void poison_the_heap(size_t bytes) {
  std::vector<double*> blocks;
  for (int k = 0; k < 2000; ++k) {
    auto* block = static_cast<double*>(std::malloc(bytes));
    std::fill_n(block, bytes / sizeof(double), 1e300);
    blocks.push_back(block);
  }
  for (double* block : blocks) std::free(block);
}

// With Adams and forward sensitivities CVODES takes a norm of history vectors it has not written
// yet; their memory came from N_VClone unset, so a gradient depended on what earlier
// allocations left there (an outside reader: correct in one run, 6e119 with --json given,
// CV_ERR_FAILURE with --tend). Saltus's vectors are cloned zeroed: the same gradient whatever
// the heap held, and the BDF run's to the tolerances.
TEST(SensitivityOptions, AdamsForwardSensitivitiesIgnoreWhatTheHeapHeld) {
  const Problem pb = fivebar_floor();
  Options adams = pb.options();
  adams.method = LinearMultistep::Adams;
  const Solution clean = forward_sensitivity(pb, pb.nominal_parameters(), adams);
  for (size_t bytes : {16, 32, 64, 128, 256}) {
    poison_the_heap(bytes);
    const Solution again = forward_sensitivity(pb, pb.nominal_parameters(), adams);
    EXPECT_EQ(again.cost_gradient, clean.cost_gradient) << bytes << " bytes";
  }
  const Solution bdf = forward_sensitivity(pb);
  for (Eigen::Index c = 0; c < bdf.cost_gradient.rows(); ++c) {
    const double largest = bdf.cost_gradient.row(c).cwiseAbs().maxCoeff();
    EXPECT_LT((clean.cost_gradient.row(c) - bdf.cost_gradient.row(c)).cwiseAbs().maxCoeff(), 1e-6 * largest)
        << "cost " << c;
  }
}

}  // namespace
