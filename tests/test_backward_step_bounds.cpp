// The backward pass's step bounds from the forward steps (src/solvers/backward_step_bounds.hpp),
// and the case that needs them: a sphere dropped on a compliant plane, whose 50 ms contact the
// backward pass stepped over (the adjoint gradient came out zero, on CVODES and on IDAS).
#include "../src/solvers/backward_step_bounds.hpp"

#include <saltus/multibody/formulation.hpp>
#include <saltus/multibody/model_file.hpp>
#include <saltus/solvers/adjoint.hpp>
#include <saltus/solvers/simulate.hpp>

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace {

using namespace saltus;
using detail::ForwardStretches;
using detail::integrate_in_stretches;
using detail::BackwardStretch;

void expect_stretches(const std::vector<BackwardStretch>& got, const std::vector<BackwardStretch>& want) {
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < want.size(); ++i) {
    EXPECT_DOUBLE_EQ(got[i].until, want[i].until) << "stretch " << i;
    EXPECT_NEAR(got[i].max_step, want[i].max_step, 1e-12 * want[i].max_step) << "stretch " << i;
  }
}

/// The stretches of a recording whose steps ended at `ends` (the first: the segment's start).
ForwardStretches recorded(const std::vector<double>& ends) {
  ForwardStretches f;
  f.start(ends.front());
  for (size_t i = 1; i < ends.size(); ++i) f.add_step_end(ends[i]);
  return f;
}

TEST(BackwardStepBounds, WithoutForwardStepsOneUnboundedStretch) {
  expect_stretches(recorded({0.0}).backward(1.0, 0.0), {{0.0, 0.0}});
  expect_stretches(recorded({0.0, 1.0}).backward(0.5, 0.5), {{0.5, 0.0}});  // nothing to integrate
}

TEST(BackwardStepBounds, UniformStepsFormOneStretch) {
  std::vector<double> ends;
  for (int k = 0; k <= 10; ++k) ends.push_back(0.1 * k);
  const ForwardStretches f = recorded(ends);
  EXPECT_EQ(f.stretches(), 1);
  expect_stretches(f.backward(1.0, 0.0), {{0.0, 0.1}});
}

// Long steps, three of 0.01 (a contact), long steps again.
const std::vector<double> kContactSteps{0.0, 0.5, 1.0, 1.01, 1.02, 1.03, 1.5, 2.0};

TEST(BackwardStepBounds, ShortStepsGetTheirOwnStretch) {
  expect_stretches(recorded(kContactSteps).backward(2.0, 0.0), {{1.03, 0.5}, {1.0, 0.01}, {0.0, 0.5}});
}

TEST(BackwardStepBounds, AnIntegrationBetweenOutputTimesStartsInTheStretchItStandsIn) {
  const ForwardStretches f = recorded(kContactSteps);
  expect_stretches(f.backward(1.025, 0.75), {{1.0, 0.01}, {0.75, 0.5}});
  expect_stretches(f.backward(1.03, 1.0), {{1.0, 0.01}});  // from a stretch's end exactly
  // Beyond the last step end (the interpolated final time) and below the segment's start.
  expect_stretches(f.backward(2.5, 1.7), {{1.7, 0.5}});
  expect_stretches(f.backward(0.4, -1.0), {{-1.0, 0.5}});
}

TEST(BackwardStepBounds, AStepThatIsNoLaterIsIgnored) {
  ForwardStretches f;
  f.start(0.0);
  f.add_step_end(0.5);
  f.add_step_end(0.5);
  f.add_step_end(0.25);
  f.add_step_end(1.0);
  expect_stretches(f.backward(1.0, 0.0), {{0.0, 0.5}});
}

TEST(BackwardStepBounds, IntegrationStopsAtTheFirstFailure) {
  const std::vector<BackwardStretch> stretches{{1.0, 0.1}, {0.5, 0.01}, {0.0, 0.1}};
  std::vector<double> bounds, integrated_to;
  const int flag = integrate_in_stretches(
      stretches, [&](double h) { bounds.push_back(h); },
      [&](double until) {
        integrated_to.push_back(until);
        return until == 0.5 ? -3 : 0;
      });
  EXPECT_EQ(flag, -3);
  EXPECT_EQ(bounds, (std::vector<double>{0.1, 0.01}));
  EXPECT_EQ(integrated_to, (std::vector<double>{1.0, 0.5}));
}

/// A sphere of mass m dropped from 0.2 m above a compliant plane: it lands at about 0.2 s and
/// leaves it 50 ms later (written from docs/model-files.md by an outside reader).
const char* kDrop = R"(name: drop_plane
horizon: 0.3
parameters: {m: 2, k: 1.0e5, d: 0.5}
gravity: [0, 0, -9.81]
spatial:
  bodies:
    ball: {mass: m, inertia: [0.008, 0.008, 0.008], position: [0, 0, 0.3]}
  forces:
    - {type: compliant_contact, name: floor, body: ball, radius: 0.1, plane: {normal: [0, 0, 1]}, stiffness: k, damping: d}
costs:
  z_T: {terminal: [{signal: z, of: ball}]}
  load: {running: [{signal: normal_force, of: floor}]}
)";

class DropOnACompliantPlane : public ::testing::TestWithParam<multibody::FormulationType> {};

// The adjoint was zero (CVODES, index1: 9 backward steps against hundreds forward) or wrong
// (IDAS, ggl: 28) where the forward sensitivities and the complex step agree.
TEST_P(DropOnACompliantPlane, AdjointAgreesWithForwardSensitivities) {
  multibody::FormulationSettings settings;
  settings.type = GetParam();
  const Problem pb = multibody::make_problem(multibody::parse_model(kDrop, "drop_plane.yaml"), settings);
  const Solution f = forward_sensitivity(pb);
  const Solution a = adjoint(pb);
  ASSERT_EQ(a.cost_gradient.rows(), 2);
  // d z_T / d m is about -5.9e-3 (the complex step's), d load / d m about 3.58.
  EXPECT_NEAR(f.cost_gradient(0, 0), -5.9278e-3, 1e-6);
  EXPECT_NEAR(f.cost_gradient(1, 0), 3.5807, 1e-3);
  for (Eigen::Index c = 0; c < 2; ++c) {
    const double largest = f.cost_gradient.row(c).cwiseAbs().maxCoeff();
    EXPECT_LT((a.cost_gradient.row(c) - f.cost_gradient.row(c)).cwiseAbs().maxCoeff(), 1e-5 * largest)
        << "cost " << c << ": adjoint " << a.cost_gradient.row(c) << ", forward " << f.cost_gradient.row(c);
  }
}

INSTANTIATE_TEST_SUITE_P(Formulations, DropOnACompliantPlane,
                         ::testing::Values(multibody::FormulationType::Index1, multibody::FormulationType::GGL),
                         [](const auto& info) { return multibody::to_string(info.param); });

}  // namespace
