// The C++ problem description: names, lookups, options and the scalar types.
#include <saltus/core/parameter_subset.hpp>
#include <saltus/examples/builtin.hpp>
#include <saltus/solvers/adjoint.hpp>
#include <saltus/solvers/simulate.hpp>
#include <saltus/verify/gradient.hpp>

#include <gtest/gtest.h>

#include <cmath>
#include <memory>
#include <type_traits>

using namespace saltus;

TEST(ProblemApi, NamesAndIndices) {
  const Problem pb = examples::box2d();
  EXPECT_EQ(pb.n_states(), 4);
  EXPECT_EQ(pb.n_parameters(), 5);
  EXPECT_EQ(pb.parameter_index("vx0"), 3);
  EXPECT_EQ(pb.cost_index("kinetic"), 1);
  EXPECT_EQ(pb.state_index("vy"), 3);
  EXPECT_THROW(pb.state_index("z"), InputError);
}

TEST(ProblemApi, InitialStateMayDependOnParameters) {
  Problem pb = examples::box2d();
  pb.set_nominal("vx0", -1.0);
  pb.options().tf = 0.01;
  const Solution s = forward_sensitivity(pb);
  EXPECT_DOUBLE_EQ(s.states(0, 2), -1.0);
  EXPECT_DOUBLE_EQ(s.sensitivities.front()(2, 3), 1.0);  // dvx(0)/dvx0
}

TEST(ProblemApi, SetHorizonTrimsOutputTimes) {
  Options o;
  o.output_times = {0.0, 1.0, 2.0, 3.0};
  o.tf = 3.0;
  set_horizon(o, 1.5);
  EXPECT_EQ(o.output_times, (std::vector<double>{0.0, 1.0, 1.5}));
  EXPECT_DOUBLE_EQ(o.tf, 1.5);
}

TEST(ProblemApi, DualConvertsFromDoubleAndCarriesTheTangent) {
  const auto f = [](const auto& a) {
    using std::sin;
    std::decay_t<decltype(a)> y = 2.0;  // constants assign to every scalar type
    return y * sin(a) * a;
  };
  const Dual r = f(make_dual(0.7, 1.0));
  EXPECT_NEAR(r.a, 2.0 * std::sin(0.7) * 0.7, 1e-15);
  EXPECT_NEAR(r.v[0], 2.0 * (std::cos(0.7) * 0.7 + std::sin(0.7)), 1e-15);
}

// Notes that depend on the parameters follow the nominal values (an override is noted as the
// model's own value would be), after the notes added once; a subset of free parameters keeps
// them, read at the full parameter vector.
TEST(ProblemApi, ParameterNotesFollowTheNominalValues) {
  Problem pb = examples::galan();
  const int p = pb.parameter_index("p");
  pb.add_note("added");
  pb.set_parameter_notes([p](In<double> values) {
    return values[p] > 3.0 ? std::vector<std::string>{"p above 3"} : std::vector<std::string>{};
  });
  EXPECT_EQ(pb.notes(), (std::vector<std::string>{"added"}));
  pb.set_nominal("p", 3.5);
  EXPECT_EQ(pb.notes(), (std::vector<std::string>{"added", "p above 3"}));
  const Problem subset = with_free_parameters(pb, {"p"});
  Problem copy = subset;
  copy.set_nominal("p", 2.9);
  EXPECT_EQ(copy.notes(), (std::vector<std::string>{"added"}));
  copy.set_nominal("p", 3.2);
  EXPECT_EQ(copy.notes(), (std::vector<std::string>{"added", "p above 3"}));
}

TEST(ProblemApi, OutputGridIncludesBothEnds) {
  Problem pb = examples::galan();
  pb.options().n_outputs = 11;
  const Solution s = simulate(pb);
  ASSERT_EQ(s.times.size(), 11u);
  EXPECT_DOUBLE_EQ(s.times.front(), 0.0);
  EXPECT_DOUBLE_EQ(s.times.back(), 5.0);
  EXPECT_EQ(s.states.rows(), 11);
}

// A terminal cost may read the final time: w(t, x, p) = t x with x' = -a x, x(0) = 1 and a
// reset x+ = x/2 at t = 1 (a time event), so psi = tf e^{-a tf} / 2 and
// dpsi/da = -tf^2 e^{-a tf} / 2 for every horizon past the event.
TEST(ProblemApi, TerminalCostsMayDependOnTheFinalTime) {
  Problem pb("decay");
  pb.set_states({"x"});
  pb.add_parameter("a", 0.7);
  pb.set_initial_state([](const auto&, auto x0) { x0 << 1.0; });
  pb.add_mode("decay", [](auto, const auto& x, const auto& p, auto xdot) { xdot[0] = -p[0] * x[0]; });
  pb.add_event("halve", Direction::Rising, [](auto t, const auto&, const auto&) { return t - 1.0; })
      .jump([](auto, const auto& x, const auto&, auto xp) { xp[0] = 0.5 * x[0]; });
  pb.add_terminal_cost("t_x", [](auto t, const auto& x, const auto&) { return t * x[0]; });
  pb.add_cost("x_and_t", [](auto, const auto& x, const auto&, const auto&) { return 0.0 * x[0]; },
              [](const auto& x, const auto&) { return x[0]; });
  pb.options().rtol = 1e-10;
  pb.options().atol = 1e-12;
  for (const double tf : {2.0, 3.5}) {
    Options o = pb.options();
    set_horizon(o, tf);
    const double a = 0.7, x_tf = 0.5 * std::exp(-a * tf);
    const Solution fwd = forward_sensitivity(pb, pb.nominal_parameters(), o);
    const Solution adj = adjoint(pb, pb.nominal_parameters(), o);
    const GradientEstimate cs = complex_step(pb, pb.nominal_parameters(), o);
    EXPECT_NEAR(fwd.costs[0], tf * x_tf, 1e-8 * tf * x_tf);
    EXPECT_NEAR(fwd.costs[1], x_tf, 1e-8 * x_tf);
    for (const Eigen::MatrixXd* g : {&fwd.cost_gradient, &adj.cost_gradient, &cs.cost_gradient}) {
      EXPECT_NEAR((*g)(0, 0), -tf * tf * x_tf, 1e-7 * tf * tf * x_tf) << "tf = " << tf;
      EXPECT_NEAR((*g)(1, 0), -tf * x_tf, 1e-7 * tf * x_tf) << "tf = " << tf;
    }
  }
}

// Derivatives with respect to some parameters only: the columns of the full gradient, from
// forward sensitivities and the adjoint, on an ODE with analytic Jacobians (robertson), a DAE
// (robertson_dae) and a hybrid ODE with events (ball1d); the fixed parameters keep their values.
TEST(ParameterSubset, GivesTheColumnsOfTheFullGradient) {
  for (const auto& [name, free] : std::vector<std::pair<std::string, std::vector<std::string>>>{
           {"robertson", {"p3", "p1"}}, {"robertson_dae", {"p2"}}, {"ball1d", {"e", "g"}}}) {
    Problem full = examples::make_example(name);
    const Problem subset = with_free_parameters(full, free);
    ASSERT_EQ(subset.parameter_names(), free);
    const Eigen::VectorXd p_full = full.nominal_parameters();
    const Solution reference = forward_sensitivity(full, p_full, full.options());
    const Solution forward = forward_sensitivity(subset, subset.nominal_parameters(), subset.options());
    const Solution adj = adjoint(subset, subset.nominal_parameters(), subset.options());
    EXPECT_TRUE(forward.costs.isApprox(reference.costs, 1e-7)) << name;  // fewer columns in the error test
    for (size_t k = 0; k < free.size(); ++k) {
      const Eigen::VectorXd column = reference.cost_gradient.col(full.parameter_index(free[k]));
      const double scale = column.cwiseAbs().maxCoeff();
      EXPECT_LT((forward.cost_gradient.col(static_cast<Eigen::Index>(k)) - column).cwiseAbs().maxCoeff(), 1e-6 * scale)
          << name << " d/d" << free[k];
      EXPECT_LT((adj.cost_gradient.col(static_cast<Eigen::Index>(k)) - column).cwiseAbs().maxCoeff(), 1e-5 * scale)
          << name << " d/d" << free[k] << " (adjoint)";
    }
  }
}

TEST(ParameterSubset, RefusesUnknownAndRepeatedNames) {
  const Problem ball = examples::make_example("ball1d");
  EXPECT_THROW(with_free_parameters(ball, {"nope"}), InputError);
  EXPECT_THROW(with_free_parameters(ball, {"e", "e"}), InputError);
}

// Options::on_progress: every output time of the forward pass (times rising to tf, events
// counted), then every segment of the backward pass (times falling to t0).
TEST(Progress, ReportsTheForwardAndBackwardPasses) {
  const Problem ball = examples::make_example("ball1d");
  Options options = ball.options();
  std::vector<RunProgress> seen;
  options.on_progress = [&](const RunProgress& p) { seen.push_back(p); };
  const Solution s = adjoint(ball, ball.nominal_parameters(), options);
  ASSERT_FALSE(seen.empty());
  size_t backward = 0;
  while (backward < seen.size() && std::string(seen[backward].phase) == "adjoint forward") ++backward;
  EXPECT_EQ(backward, s.times.size());
  EXPECT_DOUBLE_EQ(seen[backward - 1].t, options.tf);
  EXPECT_EQ(seen[backward - 1].events, static_cast<long>(s.events.size()));
  ASSERT_EQ(seen.size() - backward, s.events.size() + 1);  // one segment more than events
  for (size_t i = backward; i < seen.size(); ++i) {
    EXPECT_STREQ(seen[i].phase, "adjoint backward");
    if (i > backward) {
      EXPECT_LT(seen[i].t, seen[i - 1].t);
    }
  }
  EXPECT_DOUBLE_EQ(seen.back().t, options.t0);
  seen.clear();
  (void)simulate(ball, ball.nominal_parameters(), options);
  EXPECT_STREQ(seen.front().phase, "simulation");
}

namespace {

/// x' = -k x, x(0) = 1, psi = integral of x over [0, 2]: psi = (1 - exp(-2k)) / k.
Problem decay_with_integral(RateUse rates) {
  Problem pb("decay", "x' = -k x with the integral of x");
  pb.set_states({"x"});
  pb.add_parameter("k", 0.7);
  pb.set_initial_state([](const auto&, auto x0) { x0[0] = 1.0; });
  pb.add_mode("decay", [](auto, const auto& x, const auto& p, auto xdot) { xdot[0] = -p[0] * x[0]; });
  pb.add_running_cost("integral", [](auto, const auto& x, const auto&, const auto&) { return x[0]; }, rates);
  pb.options().tf = 2.0;
  pb.options().rtol = 1e-10;
  pb.options().atol = 1e-12;
  return pb;
}

}  // namespace

TEST(ProblemApi, CostsThatIgnoreTheRateGiveTheSameGradient) {
  const double k = 0.7, T = 2.0;
  const double value = (1.0 - std::exp(-k * T)) / k;
  const double derivative = T * std::exp(-k * T) / k - (1.0 - std::exp(-k * T)) / (k * k);
  for (RateUse rates : {RateUse::Reads, RateUse::Ignores}) {
    const Problem pb = decay_with_integral(rates);
    EXPECT_EQ(pb.running_costs_read_rates(), rates == RateUse::Reads);
    const Solution s = forward_sensitivity(pb);
    EXPECT_NEAR(s.costs[0], value, 1e-9);
    EXPECT_NEAR(s.cost_gradient(0, 0), derivative, 1e-8);
    const Solution a = adjoint(pb, pb.nominal_parameters(), pb.options());
    EXPECT_NEAR(a.cost_gradient(0, 0), derivative, 1e-8);
  }
}

// A running cost that reads the rate: CVODES evaluates the quadrature at each step's converged
// state and then (staggered sensitivities) the right-hand side at the same point; the run
// evaluates the model once there. psi = integral of x'^2 = k (1 - exp(-2kT)) / 2.
TEST(ProblemApi, TheRateAtTheQuadraturesPointIsEvaluatedOnce) {
  const double k = 0.7, T = 2.0;
  auto real_evaluations = std::make_shared<long>(0);
  Problem pb("decay", "x' = -k x with the integral of x'^2");
  pb.set_states({"x"});
  pb.add_parameter("k", k);
  pb.set_initial_state([](const auto&, auto x0) { x0[0] = 1.0; });
  pb.add_mode("decay", [real_evaluations](auto, const auto& x, const auto& p, auto xdot) {
    if constexpr (std::is_same_v<std::remove_cvref_t<decltype(x[0])>, double>) ++*real_evaluations;
    xdot[0] = -p[0] * x[0];
  });
  pb.add_running_cost("rate_squared", [](auto, const auto&, const auto& xdot, const auto&) { return xdot[0] * xdot[0]; });
  pb.options().tf = T;
  pb.options().rtol = 1e-10;
  pb.options().atol = 1e-12;
  ASSERT_EQ(pb.options().corrector, SensitivityCorrector::Staggered);
  const Solution s = forward_sensitivity(pb);
  EXPECT_NEAR(s.costs[0], k * (1.0 - std::exp(-2.0 * k * T)) / 2.0, 1e-9);
  EXPECT_NEAR(s.cost_gradient(0, 0), (1.0 - std::exp(-2.0 * k * T)) / 2.0 + k * T * std::exp(-2.0 * k * T), 1e-8);
  // Evaluating the quadrature's point again would take rhs_evals + one per step at least.
  EXPECT_LT(*real_evaluations, s.stats.rhs_evals + s.stats.steps / 2)
      << "CVODES asked " << s.stats.rhs_evals << " times in " << s.stats.steps << " steps";
}

TEST(ProblemApi, CostDeclaredToIgnoreTheRateThatReadsItIsRefused) {
  Problem pb = decay_with_integral(RateUse::Reads);
  pb.add_running_cost("rate_squared", [](auto, const auto&, const auto& xdot, const auto&) { return xdot[0] * xdot[0]; },
                      RateUse::Ignores);
  try {
    simulate(pb);
    FAIL() << "no error";
  } catch (const ModelError& e) {
    EXPECT_NE(std::string(e.what()).find("running cost 'rate_squared' is declared RateUse::Ignores"), std::string::npos)
        << e.what();
  }
}
