// The rate completion (Problem::set_rate_completion): the map whose rates the adjoint's backward
// pass records in a mode with a completion. The multibody ggl, stabilized_index1 and index3 forms
// give the kinetic-metric completion with the positions kept (formulations.hpp, DaeForm::rate_completion); it must
// equal the completion on consistent states, and its reverse sweeps (the backward residual's
// products and its dense Newton matrix, one sweep of the identity) must be its derivatives.
#include <saltus/core/error.hpp>
#include <saltus/core/parameter_subset.hpp>
#include <saltus/derivatives/residual.hpp>
#include <saltus/derivatives/reverse.hpp>
#include <saltus/multibody/formulation.hpp>
#include <saltus/multibody/model_file.hpp>
#include <saltus/solvers/adjoint.hpp>

#include <gtest/gtest.h>

#include "support/example_files.hpp"

#include <string>
#include <vector>

namespace {

using namespace saltus;

Problem load(const std::string& file, multibody::FormulationType type) { return saltus::testing::example_in(file, type); }

struct Completed {
  Eigen::VectorXd x, xdot;
};

/// The rate completion's values at (t, guess, p), evaluated in Reverse constants.
Completed rate_completion(const Problem& pb, double t, const Eigen::VectorXd& guess, const Eigen::VectorXd& p) {
  const Eigen::Index n = guess.size();
  const VectorX<Reverse> guess_r = guess.cast<Reverse>(), p_r = p.cast<Reverse>();
  VectorX<Reverse> x = VectorX<Reverse>::Zero(n), xdot = VectorX<Reverse>::Zero(n);
  pb.mode(0).rate_completion(Reverse(t), guess_r, p_r, x, xdot);
  Completed out{Eigen::VectorXd(n), Eigen::VectorXd(n)};
  for (Eigen::Index i = 0; i < n; ++i) {
    out.x[i] = x[i].value();
    out.xdot[i] = xdot[i].value();
  }
  return out;
}

Completed completion(const Problem& pb, double t, const Eigen::VectorXd& guess, const Eigen::VectorXd& p) {
  Completed out{Eigen::VectorXd(guess.size()), Eigen::VectorXd(guess.size())};
  pb.mode(0).completion.real(t, guess, p, out.x, out.xdot);
  return out;
}

/// The number of coordinates: the states are the coordinates, then their "<name>_dot", ...
Eigen::Index coordinates(const Problem& pb) {
  const auto is_velocity = [](const std::string& name) {
    return name.size() > 4 && name.compare(name.size() - 4, 4, "_dot") == 0;
  };
  Eigen::Index n = 0;
  while (n < pb.n_states() && !is_velocity(pb.state_names()[static_cast<size_t>(n)])) ++n;
  return n;
}

class RateCompletion : public ::testing::TestWithParam<multibody::FormulationType> {};

TEST_P(RateCompletion, EqualsTheCompletionOnConsistentStatesAndKeepsThePositionsElsewhere) {
  const Problem pb = load("fivebar_floor.yaml", GetParam());
  ASSERT_TRUE(static_cast<bool>(pb.mode(0).rate_completion));
  const Eigen::VectorXd p = pb.nominal_parameters();
  Eigen::VectorXd x0(pb.n_states());
  pb.initial_state().real(p, x0);
  const double t = 0.0;
  const Completed consistent = completion(pb, t, x0, p);
  const Completed same = rate_completion(pb, t, consistent.x, p);
  const double scale = 1.0 + consistent.xdot.cwiseAbs().maxCoeff();
  EXPECT_LT((same.x - consistent.x).cwiseAbs().maxCoeff(), 1e-12 * scale);
  EXPECT_LT((same.xdot - consistent.xdot).cwiseAbs().maxCoeff(), 1e-12 * scale);

  // Off the constraints the completion moves the positions and the rate completion keeps them.
  const Eigen::Index n = coordinates(pb);
  ASSERT_GT(n, 0);
  Eigen::VectorXd drifted = consistent.x;
  drifted.head(n).array() += 1e-4;
  const Completed projected = completion(pb, t, drifted, p);
  const Completed kept = rate_completion(pb, t, drifted, p);
  EXPECT_GT((projected.x.head(n) - drifted.head(n)).cwiseAbs().maxCoeff(), 1e-6);
  EXPECT_EQ(kept.x.head(n), drifted.head(n));
}

TEST_P(RateCompletion, ItsSweepOfTheIdentityIsItsJacobianTransposed) {
  // The backward Newton matrix of a completed segment is R_x^T + c_j I, R_p^T from one sweep of
  // the identity (dae_adjoint.cpp, completed_jacobian): against central differences of the
  // rates at a drifted state (positions off their constraints, where both maps differ).
  const Problem pb = load("fivebar_floor.yaml", GetParam());
  const Eigen::VectorXd p = pb.nominal_parameters();
  Eigen::VectorXd x(pb.n_states());
  pb.initial_state().real(p, x);
  const double t = 0.05;
  x = completion(pb, t, x, p).x;
  x.head(coordinates(pb)).array() += 1e-5;
  CompletionRateProducts products(pb, p);
  products.record(0, t, x);
  TransposedProducts swept;
  products.sweep(Eigen::MatrixXd::Identity(pb.n_states(), pb.n_states()), swept);
  ASSERT_EQ(swept.x.rows(), pb.n_states());
  ASSERT_EQ(swept.p.rows(), pb.n_parameters());
  const double h = 1e-6;
  const double scale = 1.0 + swept.x.cwiseAbs().maxCoeff() + swept.p.cwiseAbs().maxCoeff();
  for (int j = 0; j < pb.n_states(); ++j) {
    Eigen::VectorXd plus = x, minus = x;
    plus[j] += h;
    minus[j] -= h;
    const Eigen::VectorXd column = (rate_completion(pb, t, plus, p).xdot - rate_completion(pb, t, minus, p).xdot) / (2 * h);
    EXPECT_LT((swept.x.row(j).transpose() - column).cwiseAbs().maxCoeff(), 1e-6 * scale) << "state " << j;  // R_x e_j
  }
  for (int k = 0; k < pb.n_parameters(); ++k) {
    Eigen::VectorXd plus = p, minus = p;
    const double step = h * std::max(1.0, std::abs(p[k]));
    plus[k] += step;
    minus[k] -= step;
    const Eigen::VectorXd column = (rate_completion(pb, t, x, plus).xdot - rate_completion(pb, t, x, minus).xdot) / (2 * step);
    EXPECT_LT((swept.p.row(k).transpose() - column).cwiseAbs().maxCoeff(), 1e-6 * scale) << pb.parameter_names()[static_cast<size_t>(k)];
  }
}

INSTANTIATE_TEST_SUITE_P(Formulations, RateCompletion,
                         ::testing::Values(multibody::FormulationType::GGL, multibody::FormulationType::StabilizedIndex1,
                                           multibody::FormulationType::Index3));

// A subset of free parameters (--wrt) calls the rate completion with the full parameter vector,
// as every other model function (it read the subset's short vector by the full indices).
TEST(RateCompletionSetting, ASubsetOfParametersReadsTheFullParameters) {
  const Problem pb = load("fivebar_floor.yaml", multibody::FormulationType::GGL);
  const std::vector<std::string> free = {"e", "L01"};
  const Problem subset = with_free_parameters(pb, free);
  ASSERT_TRUE(static_cast<bool>(subset.mode(0).rate_completion));
  const Solution full = adjoint(pb), part = adjoint(subset);
  for (int c = 0; c < pb.n_costs(); ++c) {
    const double scale = full.cost_gradient.row(c).cwiseAbs().maxCoeff();
    for (size_t k = 0; k < free.size(); ++k) {
      EXPECT_NEAR(part.cost_gradient(c, static_cast<int>(k)), full.cost_gradient(c, pb.parameter_index(free[k])),
                  1e-7 * scale)
          << pb.cost(c).name << " " << free[k];
    }
  }
}

TEST(RateCompletionSetting, Index3sRatesHoldItsVelocitiesToTheirConstraints) {
  // index3's velocities carry IDAS's drift off Phi_q v + Phi_t = 0 (they are out of its error
  // test). The rate completion projects them back: its velocities are consistent, so index3's own
  // completion (the dependent velocities solved from the independent ones) keeps them, and it
  // keeps the positions as they are.
  const Problem pb = load("fivebar_floor.yaml", multibody::FormulationType::Index3);
  ASSERT_TRUE(static_cast<bool>(pb.mode(0).rate_completion));
  const Eigen::VectorXd p = pb.nominal_parameters();
  Eigen::VectorXd x(pb.n_states());
  pb.initial_state().real(p, x);
  const double t = 0.05;
  x = completion(pb, t, x, p).x;
  const Eigen::Index n = coordinates(pb);
  Eigen::VectorXd drifted = x;
  for (Eigen::Index i = 0; i < n; ++i) drifted[n + i] += 1e-3 * static_cast<double>(i + 1);
  const Completed moved = completion(pb, t, drifted, p);
  EXPECT_GT((moved.x.segment(n, n) - drifted.segment(n, n)).cwiseAbs().maxCoeff(), 1e-5);  // the drift is off them
  const Completed rates = rate_completion(pb, t, drifted, p);
  EXPECT_EQ(rates.x.head(n), drifted.head(n));
  const Completed again = completion(pb, t, rates.x, p);
  const double scale = 1.0 + rates.x.segment(n, n).cwiseAbs().maxCoeff();
  EXPECT_LT((again.x.segment(n, n) - rates.x.segment(n, n)).cwiseAbs().maxCoeff(), 1e-10 * scale);
  EXPECT_LT((again.xdot.segment(n, n) - rates.xdot.segment(n, n)).cwiseAbs().maxCoeff(),
            1e-9 * (1.0 + again.xdot.segment(n, n).cwiseAbs().maxCoeff()));
}

TEST(RateCompletionSetting, NeedsACompletionAndANewCompletionDropsIt) {
  Problem pb("rate_completion");
  pb.set_states({"y", "z"});
  pb.add_parameter("a", 1.0);
  const int mode = pb.add_residual_mode("m", [](auto, const auto& x, const auto& xdot, const auto& p, auto r) {
    r[0] = xdot[0] - x[1];
    r[1] = x[0] - p[0];
  });
  const auto completion = [](auto, const auto& guess, const auto& p, auto x, auto xdot) {
    x[0] = p[0];
    x[1] = 0.0 * guess[1];
    xdot.setZero();
  };
  const CompletionFn<Reverse> rates = [](Reverse, In<Reverse> guess, In<Reverse>, Out<Reverse> x, Out<Reverse> xdot) {
    x = guess;
    xdot.setZero();
  };
  EXPECT_THROW(pb.set_rate_completion(mode, rates), InputError);
  pb.set_completion(mode, completion);
  EXPECT_THROW(pb.set_rate_completion(mode + 1, rates), InputError);
  pb.set_rate_completion(mode, rates);
  EXPECT_TRUE(static_cast<bool>(pb.mode(mode).rate_completion));
  pb.set_completion(mode, completion);  // a new completion: the rates it had belonged to the old one
  EXPECT_FALSE(static_cast<bool>(pb.mode(mode).rate_completion));
}

}  // namespace
