// The C++ problem description: names, lookups, options and the scalar types.
#include <saltus/examples/builtin.hpp>
#include <saltus/solvers/simulate.hpp>

#include <gtest/gtest.h>

#include <cmath>

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

TEST(ProblemApi, OutputGridIncludesBothEnds) {
  Problem pb = examples::galan();
  pb.options().n_outputs = 11;
  const Solution s = simulate(pb);
  ASSERT_EQ(s.times.size(), 11u);
  EXPECT_DOUBLE_EQ(s.times.front(), 0.0);
  EXPECT_DOUBLE_EQ(s.times.back(), 5.0);
  EXPECT_EQ(s.states.rows(), 11);
}
