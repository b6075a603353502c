// The matrix product recorded on the reverse tape as one operation (recorded_product.hpp): its
// values against Eigen's product, and the gradient a sweep gives against the complex step of the
// same function in complex arithmetic (an independent computation), with sparse, repeated,
// scaled and constant entries of A, constant entries of B, and two sweep columns at once.
#include "../src/multibody/recorded_product.hpp"

#include <saltus/core/scalar.hpp>

#include <gtest/gtest.h>

#include <cmath>
#include <complex>
#include <stdexcept>
#include <vector>

namespace {

using namespace saltus;
using multibody::DenseMatrix;
using multibody::detail::ProductEntry;
using multibody::detail::recorded_product;
using multibody::detail::transposed_entries;

constexpr int kInputs = 5;
const std::vector<double> kNominal{0.7, -0.4, 1.3, 0.25, -1.1};

/// A (3 x 4, sparse: entries given as triplets, one of them twice, one a constant, one a scaled
/// input) and B (4 x 2, one constant entry) built from the inputs z.
template <class S>
void factors(const std::vector<S>& z, int& rows, std::vector<std::pair<std::pair<int, int>, S>>& a, DenseMatrix<S>& b) {
  rows = 3;
  a = {{{0, 0}, z[0] * z[1]}, {{0, 2}, S(3.0) * z[2]},  {{1, 1}, sin(z[3])}, {{1, 3}, S(0.5)},
       {{2, 0}, z[4]},        {{2, 2}, z[0] + z[3]},    {{0, 0}, z[2]},       {{2, 3}, exp(z[1])}};
  b.resize(4, 2);
  b << z[0], z[1] * z[2], S(2.0), z[3], z[4] * z[4], cos(z[0]), z[1], S(-1.5) * z[3];
}

/// y_w = sum_ij w_ij C_ij^2 + C_00 C_21 with C = A B: two outputs (weights w1, w2).
template <class S>
std::vector<S> outputs(const DenseMatrix<S>& c) {
  S y1(0.0), y2(0.0);
  for (Eigen::Index i = 0; i < c.rows(); ++i) {
    for (Eigen::Index j = 0; j < c.cols(); ++j) {
      y1 += S(1.0 + 0.5 * static_cast<double>(i) - 0.3 * static_cast<double>(j)) * c(i, j) * c(i, j);
      y2 += S(0.2 * static_cast<double>(i * j) - 1.0) * c(i, j);
    }
  }
  return {y1 + c(0, 0) * c(2, 1), y2 * y2};
}

/// The gradient of both outputs by the complex step of the plain product.
Eigen::MatrixXd complex_step_gradients() {
  using C = std::complex<double>;
  Eigen::MatrixXd grad(2, kInputs);
  const double h = 1e-30;
  for (int k = 0; k < kInputs; ++k) {
    std::vector<C> z(kNominal.begin(), kNominal.end());
    z[static_cast<size_t>(k)] += C(0.0, h);
    int rows = 0;
    std::vector<std::pair<std::pair<int, int>, C>> a;
    DenseMatrix<C> b;
    factors<C>(z, rows, a, b);
    DenseMatrix<C> amat = DenseMatrix<C>::Zero(rows, b.rows());
    for (const auto& [at, v] : a) amat(at.first, at.second) += v;
    const std::vector<C> y = outputs<C>(DenseMatrix<C>(amat * b));
    for (int o = 0; o < 2; ++o) grad(o, k) = y[static_cast<size_t>(o)].imag() / h;
  }
  return grad;
}

struct Recorded {
  std::vector<Reverse> z, y;
  DenseMatrix<Reverse> c;
  Eigen::MatrixXd plain;  ///< A B in double
};

Recorded record() {
  ReverseTape::clear();
  Recorded r;
  for (double v : kNominal) r.z.push_back(Reverse::independent(v));
  int rows = 0;
  std::vector<std::pair<std::pair<int, int>, Reverse>> a;
  DenseMatrix<Reverse> b;
  factors<Reverse>(r.z, rows, a, b);
  std::vector<ProductEntry> entries;
  Eigen::MatrixXd amat = Eigen::MatrixXd::Zero(rows, b.rows());
  for (const auto& [at, v] : a) {
    entries.push_back({at.first, at.second, v});
    amat(at.first, at.second) += v.value();
  }
  Eigen::MatrixXd bvals(b.rows(), b.cols());
  for (Eigen::Index i = 0; i < b.rows(); ++i) {
    for (Eigen::Index j = 0; j < b.cols(); ++j) bvals(i, j) = b(i, j).value();
  }
  r.plain = amat * bvals;
  r.c = recorded_product(rows, entries, b);
  r.y = outputs<Reverse>(r.c);
  return r;
}

TEST(RecordedProduct, ValuesAreTheProduct) {
  const Recorded r = record();
  ASSERT_EQ(r.c.rows(), 3);
  ASSERT_EQ(r.c.cols(), 2);
  for (Eigen::Index i = 0; i < 3; ++i) {
    for (Eigen::Index j = 0; j < 2; ++j) EXPECT_NEAR(r.c(i, j).value(), r.plain(i, j), 1e-15 * (1.0 + std::abs(r.plain(i, j))));
  }
  ReverseTape::clear();
}

TEST(RecordedProduct, OneSweepColumnPerOutputMatchesComplexStep) {
  const Eigen::MatrixXd reference = complex_step_gradients();
  for (int o = 0; o < 2; ++o) {
    const Recorded r = record();
    std::vector<double> adjoint(static_cast<size_t>(ReverseTape::size()), 0.0);
    adjoint[static_cast<size_t>(r.y[static_cast<size_t>(o)].node())] = r.y[static_cast<size_t>(o)].coefficient();
    ReverseTape::sweep(adjoint);
    for (int k = 0; k < kInputs; ++k) {
      EXPECT_NEAR(adjoint[static_cast<size_t>(r.z[static_cast<size_t>(k)].node())], reference(o, k),
                  1e-12 * (1.0 + std::abs(reference(o, k))))
          << "output " << o << ", input " << k;
    }
  }
  ReverseTape::clear();
}

TEST(RecordedProduct, TwoSweepColumnsAtOnceMatchComplexStep) {
  const Eigen::MatrixXd reference = complex_step_gradients();
  const Recorded r = record();
  std::vector<double> adjoint(static_cast<size_t>(ReverseTape::size()) * 2, 0.0);
  for (int o = 0; o < 2; ++o) {
    const Reverse& y = r.y[static_cast<size_t>(o)];
    adjoint[static_cast<size_t>(y.node()) * 2 + static_cast<size_t>(o)] = y.coefficient();
  }
  ReverseTape::sweep(adjoint, 2);
  for (int o = 0; o < 2; ++o) {
    for (int k = 0; k < kInputs; ++k) {
      EXPECT_NEAR(adjoint[static_cast<size_t>(r.z[static_cast<size_t>(k)].node()) * 2 + static_cast<size_t>(o)],
                  reference(o, k), 1e-12 * (1.0 + std::abs(reference(o, k))))
          << "column " << o << ", input " << k;
    }
  }
  ReverseTape::clear();
}

TEST(RecordedProduct, IsOneOperationOnTheTape) {
  ReverseTape::clear();
  Eigen::MatrixXd values(6, 3);
  DenseMatrix<Reverse> r(6, 3);
  for (Eigen::Index i = 0; i < 6; ++i) {
    for (Eigen::Index j = 0; j < 3; ++j) {
      values(i, j) = 0.1 * static_cast<double>(i + 6 * j) - 0.4;
      r(i, j) = Reverse::independent(values(i, j));
    }
  }
  const std::int32_t before = ReverseTape::size();
  const DenseMatrix<Reverse> c = recorded_product(3, transposed_entries(r), r);  // R^T R
  EXPECT_EQ(ReverseTape::size() - before, 9);  // its outputs only
  const Eigen::MatrixXd expected = values.transpose() * values;
  for (Eigen::Index i = 0; i < 3; ++i) {
    for (Eigen::Index j = 0; j < 3; ++j) EXPECT_NEAR(c(i, j).value(), expected(i, j), 1e-14);
  }
  ReverseTape::clear();
}

/// A dense A (20 x 16, every entry a function of the inputs, one entry given twice, one a
/// constant: past the size from which a sweep forms A-bar as one dense product) and B (16 x 3).
template <class S>
void dense_factors(const std::vector<S>& z, std::vector<std::pair<std::pair<int, int>, S>>& a, DenseMatrix<S>& b) {
  a.clear();
  for (int i = 0; i < 20; ++i) {
    for (int j = 0; j < 16; ++j) {
      const S entry = (i == 3 && j == 5) ? S(0.75)
                                         : sin(z[static_cast<size_t>((i + j) % kInputs)] * S(0.1 * (i - j) + 0.3)) +
                                               z[static_cast<size_t>(i % kInputs)] * S(0.05 * j);
      a.push_back({{i, j}, entry});
    }
  }
  a.push_back({{7, 2}, z[1] * z[4]});
  b.resize(16, 3);
  for (int i = 0; i < 16; ++i) {
    for (int j = 0; j < 3; ++j) b(i, j) = cos(z[static_cast<size_t>((i * 3 + j) % kInputs)] + S(0.2 * i)) * S(1.0 + j);
  }
}

TEST(RecordedProduct, ADenseAMatchesComplexStepInTwoSweepColumns) {
  using C = std::complex<double>;
  const double h = 1e-30;
  Eigen::MatrixXd reference(2, kInputs);
  for (int k = 0; k < kInputs; ++k) {
    std::vector<C> z(kNominal.begin(), kNominal.end());
    z[static_cast<size_t>(k)] += C(0.0, h);
    std::vector<std::pair<std::pair<int, int>, C>> a;
    DenseMatrix<C> b;
    dense_factors<C>(z, a, b);
    DenseMatrix<C> amat = DenseMatrix<C>::Zero(20, 16);
    for (const auto& [at, v] : a) amat(at.first, at.second) += v;
    const std::vector<C> y = outputs<C>(DenseMatrix<C>(amat * b));
    for (int o = 0; o < 2; ++o) reference(o, k) = y[static_cast<size_t>(o)].imag() / h;
  }
  ReverseTape::clear();
  std::vector<Reverse> z;
  for (double v : kNominal) z.push_back(Reverse::independent(v));
  std::vector<std::pair<std::pair<int, int>, Reverse>> a;
  DenseMatrix<Reverse> b;
  dense_factors<Reverse>(z, a, b);
  std::vector<ProductEntry> entries;
  for (const auto& [at, v] : a) entries.push_back({at.first, at.second, v});
  const std::vector<Reverse> y = outputs<Reverse>(recorded_product(20, entries, b));
  std::vector<double> adjoint(static_cast<size_t>(ReverseTape::size()) * 2, 0.0);
  for (int o = 0; o < 2; ++o) {
    adjoint[static_cast<size_t>(y[static_cast<size_t>(o)].node()) * 2 + static_cast<size_t>(o)] =
        y[static_cast<size_t>(o)].coefficient();
  }
  ReverseTape::sweep(adjoint, 2);
  for (int o = 0; o < 2; ++o) {
    for (int k = 0; k < kInputs; ++k) {
      EXPECT_NEAR(adjoint[static_cast<size_t>(z[static_cast<size_t>(k)].node()) * 2 + static_cast<size_t>(o)],
                  reference(o, k), 1e-11 * (1.0 + std::abs(reference(o, k))))
          << "column " << o << ", input " << k;
    }
  }
  ReverseTape::clear();
}

TEST(RecordedProduct, AnEntryOutsideAIsRefused) {
  ReverseTape::clear();
  DenseMatrix<Reverse> b = DenseMatrix<Reverse>::Ones(2, 1);
  EXPECT_THROW(recorded_product(2, {{2, 0, Reverse(1.0)}}, b), std::invalid_argument);
  EXPECT_THROW(recorded_product(2, {{0, 2, Reverse(1.0)}}, b), std::invalid_argument);
  EXPECT_THROW(recorded_product(-1, {}, b), std::invalid_argument);
  ReverseTape::clear();
}

}  // namespace
