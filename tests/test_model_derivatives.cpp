// Every derivative Saltus takes of the built-in models (forward-mode AD, and robertson's
// analytic Jacobians) against the complex step, at the initial state and at the final state.
// Both are exact to round-off, so they must agree to ~1e-12.
#include <saltus/derivatives/tangent.hpp>
#include <saltus/examples/builtin.hpp>
#include <saltus/solvers/simulate.hpp>
#include <saltus/verify/derivative_check.hpp>

#include <gtest/gtest.h>

using namespace saltus;

class ModelDerivatives : public ::testing::TestWithParam<std::string> {};

TEST_P(ModelDerivatives, MatchComplexStepAtInitialAndFinalState) {
  const Problem pb = examples::make_example(GetParam());
  const Eigen::VectorXd p = pb.nominal_parameters();
  const Solution s = simulate(pb);
  for (const auto& [t, x] : {std::pair{pb.options().t0, initial_state(pb, p)},
                             std::pair{pb.options().tf, s.final_state}}) {
    const DerivativeCheck check = check_model_derivatives(pb, t, x, p);
    EXPECT_GT(check.entries_checked, 0);
    EXPECT_LT(check.max_relative_error, 1e-12) << check.worst;
  }
}

INSTANTIATE_TEST_SUITE_P(Builtin, ModelDerivatives,
                         ::testing::Values("ball1d", "galan", "box2d", "time_events", "robertson",
                                           "hiskens"));

TEST(ModelDerivatives, DetectsAWrongAnalyticJacobian) {
  Problem pb = examples::robertson();
  AnalyticJacobian wrong;
  wrong.state = [](double, In<double>, In<double> p, Eigen::Ref<Eigen::MatrixXd> J) {
    J.setZero();
    J(0, 0) = -p[0];
  };
  wrong.parameters = [](double, In<double>, In<double>, Eigen::Ref<Eigen::MatrixXd> J) {
    J.setZero();
  };
  pb.set_jacobian(0, wrong);
  const Eigen::VectorXd x(Eigen::Vector3d(0.9, 1e-5, 0.1));
  const DerivativeCheck check = check_model_derivatives(pb, 0.0, x, pb.nominal_parameters());
  EXPECT_GT(check.max_relative_error, 1e-3);
}

TEST(ModelDerivatives, InitialStateJacobianMatchesHandDerivation) {
  const Problem pb = examples::ball1d();
  const Eigen::MatrixXd J = initial_state_jacobian(pb, pb.nominal_parameters());
  Eigen::MatrixXd expected = Eigen::MatrixXd::Zero(2, 6);
  expected(0, 3) = 1.0;  // dh/dh0
  expected(1, 4) = 1.0;  // dv/dv0
  EXPECT_TRUE(J.isApprox(expected));
}
