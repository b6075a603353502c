// The spacing of the adjoint's check points (src/solvers/checkpoint_interval.hpp): the rule, and
// that the automatic spacing keeps each segment of a recording in one interval (so the backward
// pass recomputes no forward step), on CVODES and on IDAS, with the gradient of the forward
// sensitivities (another code path).
#include "../src/solvers/checkpoint_interval.hpp"

#include <saltus/core/error.hpp>
#include <saltus/core/options.hpp>
#include <saltus/examples/builtin.hpp>
#include <saltus/multibody/formulation.hpp>
#include <saltus/multibody/model_file.hpp>
#include <saltus/solvers/adjoint.hpp>
#include <saltus/solvers/simulate.hpp>

#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

namespace {

using namespace saltus;
using detail::checkpoint_interval;

constexpr long kBudget = 256L << 20;  // Options::adjoint_memory_budget's default

TEST(CheckpointInterval, AGivenSpacingIsKept) {
  Options o;
  o.checkpoint_steps = 7;
  EXPECT_EQ(checkpoint_interval(o, 1000, 50000, 100, kBudget), 7);
}

TEST(CheckpointInterval, TheFirstSegmentGetsOneHundredStepsPerState) {
  const Options o;  // checkpoint_steps 0: automatic
  EXPECT_EQ(checkpoint_interval(o, 1, 0, 500, kBudget), 100);
  EXPECT_EQ(checkpoint_interval(o, 12, 0, 500, kBudget), 1200);
}

TEST(CheckpointInterval, LaterSegmentsGetTwiceTheLatestSegmentsStepsAndAtLeastOneHundred) {
  const Options o;
  EXPECT_EQ(checkpoint_interval(o, 12, 705, 500, kBudget), 1410);
  EXPECT_EQ(checkpoint_interval(o, 12, 30, 500, kBudget), 100);
}

TEST(CheckpointInterval, TheLatestSegmentIsTheLatestThatTookSteps) {
  struct Segment {
    long steps;
  };
  EXPECT_EQ(detail::latest_segment_steps(std::vector<Segment>{}), 0);
  EXPECT_EQ(detail::latest_segment_steps(std::vector<Segment>{{700}, {980}, {0}, {0}}), 980);
}

TEST(CheckpointInterval, TheBufferStaysWithinAThirtySecondOfTheBudgetAndTheFreeBytes) {
  Options o;
  o.adjoint_memory_budget = kBudget;
  // 8 MiB for points of 10,000 bytes: 838 of them, where 100 states would want 10,000.
  EXPECT_EQ(checkpoint_interval(o, 100, 0, 10000, kBudget), 838);
  EXPECT_EQ(checkpoint_interval(o, 100, 0, 10000, 3'000'000), 300);  // what the other recordings left
  EXPECT_EQ(checkpoint_interval(o, 100, 0, 10000, 0), 100);          // never below 100 steps
  o.adjoint_memory_budget = kMinAdjointMemoryBudget;                  // 1 MiB: 32 KiB for a buffer
  EXPECT_EQ(checkpoint_interval(o, 100, 0, 10000, kMinAdjointMemoryBudget), 100);
}

TEST(CheckpointInterval, ANegativeSpacingIsBadInput) {
  Problem pb = examples::ball1d();
  Options o = pb.options();
  o.checkpoint_steps = -1;
  try {
    adjoint(pb, pb.nominal_parameters(), o);
    FAIL() << "checkpoint_steps -1 was accepted";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("checkpoint_steps"), std::string::npos) << e.what();
  }
}

/// |a - b| <= relative * (the row's largest |b|), entry by entry.
void expect_rows_close(const Eigen::MatrixXd& a, const Eigen::MatrixXd& b, double relative) {
  ASSERT_EQ(a.rows(), b.rows());
  ASSERT_EQ(a.cols(), b.cols());
  for (Eigen::Index c = 0; c < b.rows(); ++c) {
    const double scale = b.row(c).cwiseAbs().maxCoeff();
    for (Eigen::Index k = 0; k < b.cols(); ++k) {
      EXPECT_LE(std::abs(a(c, k) - b(c, k)), relative * scale) << "(" << c << ", " << k << "): " << a(c, k) << " vs " << b(c, k);
    }
  }
}

/// fivebar_floor: three segments (two floor impacts) of 700 to 1,000 forward steps each.
Problem fivebar_floor(multibody::FormulationType type) {
  const multibody::Model model = multibody::load_model(std::string(SALTUS_SOURCE_DIR) + "/examples/fivebar_floor.yaml");
  multibody::FormulationSettings settings = model.formulation;
  settings.type = type;
  return multibody::make_problem(model, settings);
}

class AutomaticSpacing : public ::testing::TestWithParam<multibody::FormulationType> {};

// index1 runs on CVODES, ggl on IDAS: the two adjoint recordings.
TEST_P(AutomaticSpacing, KeepsEachSegmentInOneIntervalWithTheGradientOfForwardSensitivities) {
  const Problem pb = fivebar_floor(GetParam());
  Options automatic = pb.options();
  automatic.checkpoint_steps = 0;
  Options fixed = pb.options();
  fixed.checkpoint_steps = 100;
  const Solution a = adjoint(pb, pb.nominal_parameters(), automatic);
  const Solution f = adjoint(pb, pb.nominal_parameters(), fixed);
  const Solution forward = forward_sensitivity(pb);
  ASSERT_EQ(a.adjoint.backward.segments, 3);
  EXPECT_EQ(a.adjoint.checkpoints, 3);  // one per recording: the backward pass recomputes nothing
  EXPECT_GT(f.adjoint.checkpoints, 20);
  EXPECT_GT(a.adjoint.checkpoint_steps, 1000);
  expect_rows_close(a.cost_gradient, forward.cost_gradient, 1e-5);
  expect_rows_close(f.cost_gradient, forward.cost_gradient, 1e-5);
}

TEST_P(AutomaticSpacing, ASmallBudgetKeepsTheFormerSpacing) {
  const Problem pb = fivebar_floor(GetParam());
  Options o = pb.options();
  o.adjoint_memory_budget = kMinAdjointMemoryBudget;  // 32 KiB for a buffer: fewer than 100 points
  const Solution a = adjoint(pb, pb.nominal_parameters(), o);
  EXPECT_EQ(a.adjoint.checkpoint_steps, 100);
  EXPECT_GT(a.adjoint.checkpoints, 20);
}

TEST(CheckpointInterval, LaterSegmentsFollowTheLatestSegmentsSteps) {
  // fivebar_floor in the penalty form: its first segment (about 2,460 steps) takes three
  // intervals of 1,200 (12 states); the two later ones (about 2,600 and 550 steps) get twice
  // their predecessor's steps and one interval each. A first segment's spacing for every
  // segment would make it at least 7 check points.
  const Problem pb = fivebar_floor(multibody::FormulationType::Penalty);
  const Solution a = adjoint(pb);
  ASSERT_EQ(a.adjoint.backward.segments, 3);
  EXPECT_LE(a.adjoint.checkpoints, 5);
  EXPECT_GT(a.adjoint.checkpoint_steps, 4000);
}

INSTANTIATE_TEST_SUITE_P(FiveBarFloor, AutomaticSpacing,
                         ::testing::Values(multibody::FormulationType::Index1, multibody::FormulationType::GGL),
                         [](const auto& info) { return multibody::to_string(info.param); });

}  // namespace
