// The Reverse scalar and its tape (core/reverse_scalar.hpp): gradients against closed forms,
// the nodes a recording holds (unary operations fold into coefficients), the tape's growth, the
// zero-partial rule, and one tape per thread.
#include <saltus/core/reverse_scalar.hpp>

#include <gtest/gtest.h>

#include <cmath>
#include <thread>
#include <vector>

namespace saltus {
namespace {

/// Gradient of `output` with respect to `inputs` (independents) by one sweep.
std::vector<double> gradient(const Reverse& output, const std::vector<Reverse>& inputs) {
  std::vector<double> adjoint(static_cast<size_t>(ReverseTape::size()), 0.0);
  if (!output.is_constant()) adjoint[static_cast<size_t>(output.node())] = output.coefficient();
  ReverseTape::sweep(adjoint);
  std::vector<double> g;
  for (const Reverse& x : inputs) g.push_back(adjoint[static_cast<size_t>(x.node())]);
  return g;
}

TEST(ReverseScalar, UnaryChainsRecordNoNodesAndDifferentiateExactly) {
  ReverseTape::clear();
  const double x0 = 0.7, y0 = -1.3;
  const Reverse x = Reverse::independent(x0), y = Reverse::independent(y0);
  const std::int32_t before = ReverseTape::size();
  // Unary operations only: scales, shifts, elementary functions of one variable.
  const Reverse u = 2.0 * exp(sin(3.0 * x) + 1.0) / 5.0 - 4.0;
  EXPECT_EQ(ReverseTape::size(), before);
  const Reverse v = sqrt(cosh(y * 0.5) + 2.0);
  EXPECT_EQ(ReverseTape::size(), before);
  const Reverse w = u * v;  // the one operation of two variables
  EXPECT_EQ(ReverseTape::size(), before + 1);

  const double du = 2.0 * std::exp(std::sin(3.0 * x0) + 1.0) * std::cos(3.0 * x0) * 3.0 / 5.0;
  const double dv = std::sinh(y0 * 0.5) * 0.5 / (2.0 * std::sqrt(std::cosh(y0 * 0.5) + 2.0));
  const double u0 = 2.0 * std::exp(std::sin(3.0 * x0) + 1.0) / 5.0 - 4.0;
  const double v0 = std::sqrt(std::cosh(y0 * 0.5) + 2.0);
  EXPECT_DOUBLE_EQ(w.value(), u0 * v0);
  const std::vector<double> g = gradient(w, {x, y});
  EXPECT_NEAR(g[0], du * v0, 1e-14 * std::abs(du * v0));
  EXPECT_NEAR(g[1], u0 * dv, 1e-14 * std::abs(u0 * dv));
  // A unary result seeded directly: its coefficient carries the derivative.
  const std::vector<double> gu = gradient(u, {x, y});
  EXPECT_NEAR(gu[0], du, 1e-14 * std::abs(du));
  EXPECT_EQ(gu[1], 0.0);
}

TEST(ReverseScalar, AVariableMinusItselfAndTimesItselfAreExact) {
  ReverseTape::clear();
  const Reverse x = Reverse::independent(1.5);
  const Reverse scaled = 3.0 * x;
  EXPECT_EQ(gradient(scaled - x, {x})[0], 2.0);      // one node with x's node twice
  EXPECT_EQ(gradient(scaled * scaled, {x})[0], 27.0);  // d(9 x^2)/dx at 1.5
}

TEST(ReverseScalar, AZeroPartialPassesNoAdjointEvenAfterAnInfiniteOne) {
  ReverseTape::clear();
  const Reverse s = Reverse::independent(0.0);
  const Reverse root = sqrt(s);  // coefficient 0.5 / sqrt(0) = inf
  EXPECT_TRUE(std::isinf(root.coefficient()));
  const Reverse times_zero = root * 0.0;  // partial 0: a constant, not inf * 0
  EXPECT_TRUE(times_zero.is_constant());
  const Reverse y = Reverse::independent(0.0);
  const Reverse product = root * y;  // d/droot = y = 0 drops root; d/dy = root = 0 drops y
  EXPECT_TRUE(product.is_constant());
  const Reverse sum = y + times_zero;
  const std::vector<double> g = gradient(sum, {s, y});
  EXPECT_EQ(g[0], 0.0);
  EXPECT_EQ(g[1], 1.0);
}

TEST(ReverseScalar, TheTapeGrowsPastItsFirstBlockAndKeepsEveryNode) {
  ReverseTape::clear();
  constexpr int kTerms = 20000;  // nodes well past the first 1024-node block
  std::vector<Reverse> x;
  for (int i = 0; i < kTerms; ++i) x.push_back(Reverse::independent(1.0 + 1e-4 * i));
  Reverse sum = x[0] * x[0];
  for (int i = 1; i < kTerms; ++i) sum += x[i] * x[i - 1];
  EXPECT_GE(ReverseTape::size(), 3 * kTerms - 2);
  const std::vector<double> g = gradient(sum, x);
  // d/dx_i of x_0^2 + sum x_i x_{i-1}: x_{i-1} + x_{i+1} (x_1 + 2 x_0 at i = 0).
  for (int i = 0; i < kTerms; ++i) {
    const double left = i == 0 ? 2.0 * x[0].value() : x[i - 1].value();
    const double right = i + 1 < kTerms ? x[i + 1].value() : 0.0;
    ASSERT_NEAR(g[static_cast<size_t>(i)], left + right, 1e-13) << "at i = " << i;
  }
}

TEST(ReverseScalar, EachThreadRecordsOnItsOwnTape) {
  // Both threads record and sweep at once; each gradient is its own function's.
  auto record = [](double a, double* out) {
    for (int k = 0; k < 200; ++k) {
      ReverseTape::clear();
      const Reverse x = Reverse::independent(a);
      Reverse y = x;
      for (int i = 0; i < 50; ++i) y = y * x;  // x^51
      *out = gradient(y, {x})[0];
    }
  };
  double g1 = 0.0, g2 = 0.0;
  std::thread t1(record, 1.01, &g1), t2(record, 0.99, &g2);
  t1.join();
  t2.join();
  EXPECT_NEAR(g1, 51.0 * std::pow(1.01, 50), 1e-12 * 51.0 * std::pow(1.01, 50));
  EXPECT_NEAR(g2, 51.0 * std::pow(0.99, 50), 1e-12 * 51.0 * std::pow(0.99, 50));
}

}  // namespace
}  // namespace saltus
