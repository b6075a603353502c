// robertson against the published SUNDIALS example outputs (docs/benchmarks.md):
// cvsRoberts_FSA_dns (rtol 1e-4, atol (1e-8, 1e-14, 1e-6), staggered, full error control) and
// cvsRoberts_ASAi_dns (G = int_0^4e7 y3 dt at rtol 1e-6).
#include <saltus/examples/builtin.hpp>
#include <saltus/solvers/simulate.hpp>

#include <gtest/gtest.h>

#include <cmath>

using namespace saltus;

namespace {
// The published values carry 5 significant digits: half a unit of the last digit plus the
// integration error at the published tolerances (a few units of 1e-4 relative).
void expect_published(double value, double published, double relative) {
  EXPECT_NEAR(value, published, relative * std::abs(published)) << "published " << published;
}
}  // namespace

TEST(Robertson, PublishedForwardSensitivityAtPointFour) {
  Problem pb = examples::robertson();
  Options o = pb.options();
  o.rtol = 1e-4;
  o.atol_per_state = {1e-8, 1e-14, 1e-6};
  o.output_times = {0.0, 0.4};
  o.tf = 0.4;
  const Solution s = forward_sensitivity(pb, pb.nominal_parameters(), o);
  const Eigen::MatrixXd& S = s.sensitivities.back();
  expect_published(s.final_state[0], 9.8517e-01, 2e-4);
  expect_published(s.final_state[1], 3.3864e-05, 2e-4);
  expect_published(s.final_state[2], 1.4794e-02, 2e-4);
  expect_published(S(0, 0), -3.5595e-01, 5e-4);
  expect_published(S(1, 0), 3.9025e-04, 5e-4);
  expect_published(S(2, 0), 3.5556e-01, 5e-4);
}

TEST(Robertson, PublishedAdjointGradientByForwardSensitivity) {
  Problem pb = examples::robertson();
  Options o = pb.options();
  o.rtol = 1e-6;
  o.atol_per_state = {1e-8, 1e-14, 1e-6};
  const Solution s = forward_sensitivity(pb, pb.nominal_parameters(), o);
  expect_published(s.costs[0], 3.9983e+07, 1e-4);
  expect_published(s.cost_gradient(0, 0), 7.6842e+05, 5e-4);
  expect_published(s.cost_gradient(0, 1), -3.0691e+00, 5e-4);
  expect_published(s.cost_gradient(0, 2), 5.1144e-04, 5e-4);
}

TEST(Robertson, DefaultTolerancesAgreeWithPublishedToFourDigits) {
  const Solution s = forward_sensitivity(examples::robertson());
  expect_published(s.costs[0], 3.9983e+07, 1e-4);
  expect_published(s.cost_gradient(0, 0), 7.6842e+05, 2e-4);
  expect_published(s.cost_gradient(0, 1), -3.0691e+00, 2e-4);
  expect_published(s.cost_gradient(0, 2), 5.1144e-04, 2e-4);
}
