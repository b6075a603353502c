// Sparse Jacobians by probing and column colouring (derivatives/sparse_columns.hpp) on a
// function whose Jacobian is written out by hand: the probed pattern is its nonzero structure,
// the colours are structurally orthogonal and few, and the coloured values agree with central
// differences of the function.
#include <saltus/core/error.hpp>
#include <saltus/derivatives/sparse_columns.hpp>

#include <gtest/gtest.h>

#include <cmath>
#include <set>
#include <stdexcept>
#include <utility>

using namespace saltus;

namespace {

constexpr int kSize = 30;

/// F_i = x_i^2 + x_{i-1} sin(x_{i+1}) (tridiagonal), and F_0 also reads x_{n-1}: 3 x_{n-1}.
Eigen::VectorXd function(const Eigen::VectorXd& x) {
  Eigen::VectorXd f(kSize);
  for (int i = 0; i < kSize; ++i) {
    f[i] = x[i] * x[i];
    if (i > 0 && i + 1 < kSize) f[i] += x[i - 1] * std::sin(x[i + 1]);
  }
  f[0] += 3.0 * x[kSize - 1];
  return f;
}

/// Its Jacobian by hand.
Eigen::MatrixXd jacobian(const Eigen::VectorXd& x) {
  Eigen::MatrixXd j = Eigen::MatrixXd::Zero(kSize, kSize);
  for (int i = 0; i < kSize; ++i) {
    j(i, i) = 2.0 * x[i];
    if (i > 0 && i + 1 < kSize) {
      j(i, i - 1) = std::sin(x[i + 1]);
      j(i, i + 1) = x[i - 1] * std::cos(x[i + 1]);
    }
  }
  j(0, kSize - 1) = 3.0;
  return j;
}

Eigen::VectorXd point(double shift) {
  Eigen::VectorXd x(kSize);
  for (int i = 0; i < kSize; ++i) x[i] = 0.3 + 0.1 * i + shift;
  return x;
}

JacobianProduct product_at(const Eigen::VectorXd& x) {
  return [x](const Eigen::VectorXd& d, Eigen::Ref<Eigen::VectorXd> out) { out = jacobian(x) * d; };
}

}  // namespace

TEST(SparseColumns, ProbedPatternIsTheStructureAndColoursAreOrthogonal) {
  // At x = 0 the diagonal 2 x_i vanishes for i = 0 only if x_0 = 0: probe there and at a point
  // off it, as SparseIterationMatrix does, and the union is the structure.
  Eigen::VectorXd at_zero = point(0.0);
  at_zero[0] = 0.0;
  const SparsePattern pattern = probe_pattern(kSize, kSize, {product_at(at_zero), product_at(point(0.01))});
  const Eigen::MatrixXd reference = jacobian(point(0.01));
  int expected = 0;
  for (int j = 0; j < kSize; ++j) {
    std::set<int> rows(pattern.indices.begin() + pattern.starts[j], pattern.indices.begin() + pattern.starts[j + 1]);
    for (int i = 0; i < kSize; ++i) {
      EXPECT_EQ(rows.count(i) == 1, reference(i, j) != 0.0) << i << ", " << j;
      expected += reference(i, j) != 0.0;
    }
  }
  EXPECT_EQ(pattern.nonzeros(), expected);

  const ColumnGroups groups = colour_columns(pattern);
  EXPECT_LE(groups.count(), 4);  // a band of width 3 and one extra entry
  std::set<int> seen;
  for (int g = 0; g < groups.count(); ++g) {
    std::set<int> rows_of_group;
    for (int k = groups.starts[g]; k < groups.starts[g + 1]; ++k) {
      const int j = groups.columns[k];
      EXPECT_TRUE(seen.insert(j).second) << "column " << j << " in two groups";
      for (int e = pattern.starts[j]; e < pattern.starts[j + 1]; ++e) {
        EXPECT_TRUE(rows_of_group.insert(pattern.indices[e]).second) << "group " << g << " shares row " << pattern.indices[e];
      }
    }
  }
  EXPECT_EQ(static_cast<int>(seen.size()), kSize);
}

TEST(SparseColumns, ColouredValuesAgreeWithCentralDifferences) {
  const Eigen::VectorXd x = point(0.02);
  ColouredJacobian coloured(probe_pattern(kSize, kSize, {product_at(x)}));
  std::vector<double> values(static_cast<size_t>(coloured.pattern().nonzeros()));
  int calls = 0;
  coloured.evaluate(
      [&](const Eigen::MatrixXd& d, Eigen::Ref<Eigen::MatrixXd> out) {
        ++calls;
        EXPECT_EQ(d.cols(), coloured.colours());
        out = jacobian(x) * d;
      },
      values.data());
  EXPECT_EQ(calls, 1);
  const double h = 1e-6;
  for (int j = 0; j < kSize; ++j) {
    Eigen::VectorXd plus = x, minus = x;
    plus[j] += h;
    minus[j] -= h;
    const Eigen::VectorXd difference = (function(plus) - function(minus)) / (2.0 * h);
    for (int e = coloured.pattern().starts[j]; e < coloured.pattern().starts[j + 1]; ++e) {
      EXPECT_NEAR(values[e], difference[coloured.pattern().indices[e]], 1e-8) << "column " << j;
    }
  }
}

TEST(SparseColumns, FailedProbesAddNothingAndMergingUnites) {
  const Eigen::VectorXd x = point(0.0);
  const JacobianProduct throws = [](const Eigen::VectorXd&, Eigen::Ref<Eigen::VectorXd>) {
    throw std::runtime_error("outside the model's domain");
  };
  const JacobianProduct not_finite = [](const Eigen::VectorXd&, Eigen::Ref<Eigen::VectorXd> out) {
    out.setConstant(NAN);
  };
  const SparsePattern with_failures = probe_pattern(kSize, kSize, {product_at(x), throws, not_finite});
  const SparsePattern alone = probe_pattern(kSize, kSize, {product_at(x)});
  EXPECT_EQ(with_failures.indices, alone.indices);
  EXPECT_EQ(with_failures.starts, alone.starts);
  EXPECT_THROW(probe_pattern(kSize, kSize, {throws}), std::runtime_error);
  EXPECT_THROW(probe_pattern(kSize, kSize, {not_finite}), SolverError);

  // The diagonal alone merged with the off-diagonal entries gives the whole pattern.
  const JacobianProduct diagonal = [x](const Eigen::VectorXd& d, Eigen::Ref<Eigen::VectorXd> out) {
    out = jacobian(x).diagonal().asDiagonal() * d;
  };
  const JacobianProduct off_diagonal = [x](const Eigen::VectorXd& d, Eigen::Ref<Eigen::VectorXd> out) {
    Eigen::MatrixXd j = jacobian(x);
    j.diagonal().setZero();
    out = j * d;
  };
  const SparsePattern merged = merge_patterns(probe_pattern(kSize, kSize, {diagonal}),
                                              probe_pattern(kSize, kSize, {off_diagonal}));
  EXPECT_EQ(merged.indices, alone.indices);
  EXPECT_EQ(merged.starts, alone.starts);
  SparsePattern other_shape = alone;
  other_shape.rows = kSize + 1;
  EXPECT_THROW(merge_patterns(alone, other_shape), Error);
}
