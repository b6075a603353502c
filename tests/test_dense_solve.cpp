// The multibody dense solves in every scalar type: the dual path (double factorization and
// implicit differentiation, with its per-thread factorization cache) and the reverse path (the
// solve recorded as one tape operation that sweeps with the transposed LU) against the complex
// step of Gaussian elimination in complex arithmetic, an independent computation.
#include <saltus/core/dual_block.hpp>
#include <saltus/multibody/dense_solve.hpp>
#include <saltus/core/same_bits.hpp>

#include <gtest/gtest.h>

#include <complex>
#include <limits>
#include <string>
#include <vector>

namespace {

using namespace saltus;
using saltus::multibody::solve_dense;

constexpr int kSize = 7;
constexpr int kParameters = 3;

/// A(p) = A0 + sum_k p_k A_k, with a structural zero block like a KKT matrix and an entry that
/// needs pivoting (A(0,0) small), and b(p) = b0 + p_0 p_1 e.
template <class S>
void matrix_and_rhs(const VectorX<S>& p, multibody::DenseMatrix<S>& A, VectorX<S>& b) {
  A = multibody::DenseMatrix<S>::Zero(kSize, kSize);
  b = VectorX<S>::Zero(kSize);
  for (int i = 0; i < kSize; ++i) {
    for (int j = 0; j < kSize; ++j) {
      if (i >= 5 && j >= 5) continue;  // zero block
      const double base = (i == j ? 4.0 : 0.0) + 0.3 * std::sin(1.0 + i + 2.0 * j);
      A(i, j) = S(base) + p[(i + j) % kParameters] * S(0.1 * (i - j)) + p[0] * p[2] * S(i == j ? 0.2 : 0.0);
    }
    b[i] = S(1.0 + i) + p[0] * p[1] * S(0.5 - 0.1 * i);
  }
  A(0, 0) = S(1e-3) + S(1e-3) * p[1];
}

const std::vector<double> kNominal{0.7, -0.4, 1.3};

/// d x / d p_k by the complex step of the complex-arithmetic elimination.
Eigen::MatrixXd complex_step_jacobian() {
  Eigen::MatrixXd jac(kSize, kParameters);
  const double h = 1e-30;
  for (int k = 0; k < kParameters; ++k) {
    VectorX<Complex> p(kParameters);
    for (int i = 0; i < kParameters; ++i) p[i] = Complex(kNominal[static_cast<size_t>(i)], i == k ? h : 0.0);
    multibody::DenseMatrix<Complex> A;
    VectorX<Complex> b;
    matrix_and_rhs<Complex>(p, A, b);
    const VectorX<Complex> x = solve_dense<Complex>(A, b, "test matrix").col(0);
    for (int i = 0; i < kSize; ++i) jac(i, k) = x[i].imag() / h;
  }
  return jac;
}

TEST(DenseSolve, DoubleSolutionSatisfiesTheSystem) {
  multibody::DenseMatrix<double> A;
  VectorX<double> b;
  matrix_and_rhs<double>(Eigen::Map<const Eigen::VectorXd>(kNominal.data(), kParameters), A, b);
  const Eigen::VectorXd x = solve_dense<double>(A, b, "test matrix").col(0);
  EXPECT_LT((A * x - b).norm(), 1e-13 * b.norm());
}

TEST(DenseSolve, DualTangentMatchesComplexStep) {
  const Eigen::MatrixXd reference = complex_step_jacobian();
  for (int k = 0; k < kParameters; ++k) {
    // Twice per direction: the second call reuses the cached factorization.
    for (int repeat = 0; repeat < 2; ++repeat) {
      VectorX<Dual> p(kParameters);
      for (int i = 0; i < kParameters; ++i) p[i] = make_dual(kNominal[static_cast<size_t>(i)], i == k ? 1.0 : 0.0);
      multibody::DenseMatrix<Dual> A;
      VectorX<Dual> b;
      matrix_and_rhs<Dual>(p, A, b);
      const VectorX<Dual> x = solve_dense<Dual>(A, b, "test matrix").col(0);
      for (int i = 0; i < kSize; ++i) EXPECT_NEAR(x[i].v[0], reference(i, k), 1e-12 * (1.0 + std::abs(reference(i, k))));
    }
  }
}

/// The test matrix's solve recorded on a fresh tape: its parameters and solution.
struct RecordedTestSolve {
  VectorX<Reverse> p, x;
};
RecordedTestSolve record_solve() {
  ReverseTape::clear();
  RecordedTestSolve r{VectorX<Reverse>(kParameters), {}};
  for (int i = 0; i < kParameters; ++i) r.p[i] = Reverse::independent(kNominal[static_cast<size_t>(i)]);
  multibody::DenseMatrix<Reverse> A;
  VectorX<Reverse> b;
  matrix_and_rhs<Reverse>(r.p, A, b);
  r.x = solve_dense<Reverse>(A, b, "test matrix").col(0);
  return r;
}

/// Sweeps the tape from output `out` of a recorded solve and compares d x_out / d p with the
/// complex step's.
void expect_reverse_gradient(const RecordedTestSolve& r, int out, const Eigen::MatrixXd& reference) {
  ASSERT_FALSE(r.x[out].is_constant());  // a recorded output (a zero partial records no node)
  std::vector<double> adjoint(static_cast<size_t>(ReverseTape::size()), 0.0);
  adjoint[static_cast<size_t>(r.x[out].node())] = r.x[out].coefficient();
  ReverseTape::sweep(adjoint);
  for (int k = 0; k < kParameters; ++k) {
    EXPECT_NEAR(adjoint[static_cast<size_t>(r.p[k].node())], reference(out, k), 1e-12 * (1.0 + std::abs(reference(out, k))))
        << "output " << out << ", parameter " << k;
  }
}

TEST(DenseSolve, ReverseGradientMatchesComplexStep) {
  const Eigen::MatrixXd reference = complex_step_jacobian();
  // The gradient of w^T x for each output weight vector w = e_i.
  for (int out = 0; out < kSize; ++out) expect_reverse_gradient(record_solve(), out, reference);
  ReverseTape::clear();
}

TEST(DenseSolve, ReverseTapeRecordsTheSolveAsOneOperation) {
  // A 60 x 60 matrix whose every entry depends on one independent: the elimination recorded
  // about 2 n^3 / 3 = 144,000 nodes, the residual and triangular solves 4 n^2; the solve as one
  // operation records its n outputs.
  const int n = 60;
  ReverseTape::clear();
  const Reverse s = Reverse::independent(0.5);
  multibody::DenseMatrix<Reverse> A(n, n);
  for (int i = 0; i < n; ++i) {
    for (int j = 0; j < n; ++j) A(i, j) = s * (i == j ? 10.0 : 1.0 / (1.0 + i + j));
  }
  const size_t before = static_cast<size_t>(ReverseTape::size());
  solve_dense<Reverse>(A, VectorX<Reverse>::Ones(n), "test matrix");
  EXPECT_EQ(static_cast<size_t>(ReverseTape::size()) - before, static_cast<size_t>(n));
  ReverseTape::clear();
}

TEST(DenseSolve, ARecordedSolveKeepsItsFactorsWhileTheCacheMovesOn) {
  // The solve is recorded, then more matrices than the cache holds are factored before the
  // sweep: the sweep's transposed solve must still use the recorded matrix's factors.
  const Eigen::MatrixXd reference = complex_step_jacobian();
  const RecordedTestSolve recorded = record_solve();
  for (int k = 0; k < 6; ++k) {
    const Eigen::MatrixXd other = Eigen::MatrixXd::Identity(kSize, kSize) * (3.0 + k) + Eigen::MatrixXd::Ones(kSize, kSize);
    solve_dense<double>(other, Eigen::VectorXd::Ones(kSize), "other matrix");
  }
  expect_reverse_gradient(recorded, 1, reference);
  ReverseTape::clear();
}

TEST(DenseSolve, CacheServesInterleavedMatricesCorrectly) {
  // More distinct matrices than the cache holds, revisited in turn: every answer stays right.
  std::vector<Eigen::MatrixXd> matrices;
  for (int k = 0; k < 6; ++k) {
    matrices.push_back(Eigen::MatrixXd::Identity(4, 4) * (2.0 + k) + Eigen::MatrixXd::Constant(4, 4, 0.1 * k));
  }
  const Eigen::VectorXd b = Eigen::VectorXd::LinSpaced(4, 1.0, 4.0);
  for (int round = 0; round < 3; ++round) {
    for (const Eigen::MatrixXd& A : matrices) {
      const Eigen::VectorXd x = solve_dense<double>(A, b, "test matrix").col(0);
      EXPECT_LT((A * x - b).norm(), 1e-14);
    }
  }
}

template <class S>
std::string singular_message() {
  multibody::DenseMatrix<S> A = multibody::DenseMatrix<S>::Zero(3, 3);
  A(0, 0) = S(1.0);
  A(1, 1) = S(2.0);  // row and column 3 are zero
  try {
    solve_dense<S>(A, VectorX<S>::Ones(3), "KKT matrix");
  } catch (const ModelError& e) {
    return e.what();
  }
  return "no error";
}

TEST(DenseSolve, SingularMatrixIsNamedInEveryScalarType) {
  for (const std::string& message : {singular_message<double>(), singular_message<Dual>(),
                                     singular_message<Reverse>(), singular_message<Complex>()}) {
    EXPECT_NE(message.find("the KKT matrix is singular"), std::string::npos) << message;
    EXPECT_NE(message.find("column 3 of 3"), std::string::npos) << message;
  }
}

TEST(DenseSolve, NonFiniteMatrixIsNamed) {
  Eigen::MatrixXd A = Eigen::MatrixXd::Identity(2, 2);
  A(1, 0) = std::numeric_limits<double>::quiet_NaN();
  try {
    solve_dense<double>(A, Eigen::VectorXd::Ones(2), "Maggi matrix");
    FAIL() << "no error";
  } catch (const ModelError& e) {
    EXPECT_NE(std::string(e.what()).find("the Maggi matrix has non-finite entries"), std::string::npos) << e.what();
  }
}

/// A KKT-like matrix of a chain, large and sparse enough for KLU: [M G^T; G 0] with M
/// diagonal (n_q = 2 n_c coordinates) and G bidiagonal blocks, entries depending on p; and a
/// right-hand side depending on p.
template <class S>
void chain_kkt(const VectorX<S>& p, int links, multibody::DenseMatrix<S>& A, VectorX<S>& b) {
  const int nq = 2 * links, n = nq + links;
  A = multibody::DenseMatrix<S>::Zero(n, n);
  b = VectorX<S>::Zero(n);
  for (int i = 0; i < nq; ++i) A(i, i) = S(1.0 + 0.01 * i) + p[0] * S(0.1);
  for (int k = 0; k < links; ++k) {
    const S angle = S(0.3 * k) + p[1] * S(0.05 * (k % 3));
    // Link k joins point k-1 (the pin for k = 0) and point k: G rows d/dq of |q_k - q_{k-1}|^2 / 2.
    const S cx = cos(angle), cy = sin(angle);
    A(nq + k, 2 * k) = cx;
    A(nq + k, 2 * k + 1) = cy;
    A(2 * k, nq + k) = cx;
    A(2 * k + 1, nq + k) = cy;
    if (k > 0) {
      A(nq + k, 2 * k - 2) = -cx;
      A(nq + k, 2 * k - 1) = -cy;
      A(2 * k - 2, nq + k) = -cx;
      A(2 * k - 1, nq + k) = -cy;
    }
  }
  for (int i = 0; i < n; ++i) b[i] = S(std::sin(1.0 + i)) + p[2] * S(0.2 * (i % 5));
}

/// The chain's system in complex arithmetic, parameter k stepped by i 1e-30 (the complex step).
struct ComplexChainSystem {
  VectorX<Complex> p;
  multibody::DenseMatrix<Complex> A;
  VectorX<Complex> b;
};
ComplexChainSystem complex_chain_system(const VectorX<double>& p, int k, int links) {
  ComplexChainSystem system;
  system.p = p.cast<Complex>();
  system.p[k] += Complex(0.0, 1e-30);
  chain_kkt<Complex>(system.p, links, system.A, system.b);
  return system;
}

/// For each parameter direction: the dual solve `solve` of the chain's system (value against x,
/// tangent against the complex step of the complex-arithmetic elimination, an independent
/// computation).
template <class Solve>
void expect_dual_solve_matches_complex_step(const VectorX<double>& p, int links, const Eigen::VectorXd& x,
                                            const Solve& solve) {
  for (int k = 0; k < 3; ++k) {
    VectorX<Dual> pd(3);
    VectorX<Complex> pc(3);
    for (int i = 0; i < 3; ++i) {
      pd[i] = make_dual(p[i], i == k ? 1.0 : 0.0);
      pc[i] = Complex(p[i], i == k ? 1e-30 : 0.0);
    }
    multibody::DenseMatrix<Dual> Ad;
    VectorX<Dual> bd;
    chain_kkt<Dual>(pd, links, Ad, bd);
    multibody::DenseMatrix<Complex> Ac;
    VectorX<Complex> bc;
    chain_kkt<Complex>(pc, links, Ac, bc);
    const VectorX<Dual> xd = solve(Ad, bd);
    const VectorX<Complex> xc = solve_dense<Complex>(Ac, bc, "chain KKT matrix").col(0);
    for (Eigen::Index i = 0; i < x.size(); ++i) {
      EXPECT_NEAR(xd[i].a, x[i], 1e-12 * (1.0 + std::abs(x[i]))) << links << " links, " << i;
      const double reference = xc[i].imag() / 1e-30;
      EXPECT_NEAR(xd[i].v[0], reference, 1e-10 * (1.0 + std::abs(reference))) << links << " links, " << i << ", " << k;
    }
  }
}

// Large sparse matrices go to KLU (src/multibody/sparse_factorization.hpp): the solution, and
// the dual tangent (factored once in double, then implicit differentiation), against the complex
// step of the complex-arithmetic elimination, an independent computation; the matrix is sparse
// enough and large enough to take that path.
TEST(DenseSolve, LargeSparseMatricesSolveWithKlu) {
  const int links = 40;  // 120 x 120, about 4 % nonzeros
  VectorX<double> p(3);
  p << 0.7, -0.4, 1.3;
  multibody::DenseMatrix<double> A;
  VectorX<double> b;
  chain_kkt<double>(p, links, A, b);
  ASSERT_GE(A.rows(), 64);
  ASSERT_LT(static_cast<double>((A.array() != 0.0).count()) / static_cast<double>(A.size()), 0.15);
  const Eigen::VectorXd x = solve_dense<double>(A, b, "chain KKT matrix").col(0);
  EXPECT_LT((A * x - b).cwiseAbs().maxCoeff(), 1e-12 * (1.0 + b.cwiseAbs().maxCoeff()));
  EXPECT_LT((x - A.partialPivLu().solve(b)).cwiseAbs().maxCoeff(), 1e-12 * (1.0 + x.cwiseAbs().maxCoeff()));
  expect_dual_solve_matches_complex_step(p, links, x, [](const multibody::DenseMatrix<Dual>& Ad, const VectorX<Dual>& bd) {
    return VectorX<Dual>(solve_dense<Dual>(Ad, bd, "chain KKT matrix").col(0));
  });
}

// The sparse path remembers its last two solves per factorization (sparse_factorization.hpp):
// more matrices of one pattern than the cache holds, so that its entries are factored anew with
// other values, each solved with the same two right-hand sides in turn, round after round. Every
// answer solves its own matrix (a remembered solve of an entry's earlier matrix would not), and
// a repeated solve gives the first one's bits.
TEST(DenseSolve, RememberedSparseSolvesBelongToTheirMatrix) {
  const int links = 40;
  std::vector<Eigen::MatrixXd> matrices;
  Eigen::VectorXd b;
  for (int k = 0; k < 6; ++k) {
    VectorX<double> p(3);
    p << 0.7 + 0.1 * k, -0.4, 1.3 - 0.05 * k;
    multibody::DenseMatrix<double> A;
    VectorX<double> b_k;
    chain_kkt<double>(p, links, A, b_k);
    matrices.push_back(A);
    if (k == 0) b = b_k;
  }
  const Eigen::VectorXd b2 = Eigen::VectorXd::LinSpaced(b.size(), -1.0, 2.0);
  std::vector<Eigen::VectorXd> first(matrices.size());
  for (int round = 0; round < 3; ++round) {
    for (size_t k = 0; k < matrices.size(); ++k) {
      const Eigen::MatrixXd& A = matrices[k];
      for (int again = 0; again < 2; ++again) {
        const Eigen::VectorXd x = solve_dense<double>(A, b, "chain KKT matrix").col(0);
        const Eigen::VectorXd x2 = solve_dense<double>(A, b2, "chain KKT matrix").col(0);
        EXPECT_LT((A * x - b).cwiseAbs().maxCoeff(), 1e-12 * (1.0 + b.cwiseAbs().maxCoeff())) << k << ", " << round;
        EXPECT_LT((A * x2 - b2).cwiseAbs().maxCoeff(), 1e-12 * (1.0 + b2.cwiseAbs().maxCoeff())) << k << ", " << round;
        if (round == 0 && again == 0) first[k] = x;
        EXPECT_TRUE(same_bits_entries(x, first[k])) << k << ", " << round;
      }
    }
  }
}

// A singular large sparse matrix (a link whose direction cannot be resolved: a zero row and
// column) is named, as in the dense path.
TEST(DenseSolve, SingularSparseMatrixIsNamed) {
  VectorX<double> p = VectorX<double>::Zero(3);
  multibody::DenseMatrix<double> A;
  VectorX<double> b;
  chain_kkt<double>(p, 40, A, b);
  A.row(80 + 7).setZero();
  A.col(80 + 7).setZero();
  try {
    solve_dense<double>(A, b, "chain KKT matrix");
    FAIL() << "no error";
  } catch (const ModelError& e) {
    EXPECT_NE(std::string(e.what()).find("the chain KKT matrix is singular"), std::string::npos) << e.what();
  }
}

/// A dense matrix in the compressed-rows form the formulations assemble (its nonzeros only).
template <class S>
Eigen::SparseMatrix<S, Eigen::RowMajor, int> compressed(const multibody::DenseMatrix<S>& A) {
  std::vector<Eigen::Triplet<S, int>> entries;
  for (int i = 0; i < A.rows(); ++i) {
    for (int j = 0; j < A.cols(); ++j) {
      if (real_part(A(i, j)) != 0.0) entries.emplace_back(i, j, A(i, j));
    }
  }
  Eigen::SparseMatrix<S, Eigen::RowMajor, int> sparse(A.rows(), A.cols());
  sparse.setFromTriplets(entries.begin(), entries.end());
  return sparse;
}

// The second right-hand side of the recorded chain solves: p0 b + 1, in any scalar type.
template <class S>
VectorX<S> second_rhs(const VectorX<S>& p, const VectorX<S>& b) {
  return VectorX<S>(b * p[0] + VectorX<S>::Constant(b.size(), S(1.0)));
}

// The chain's KKT solve with two right-hand sides [b, p0 b + 1] (one recorded operation with
// two columns) on a fresh Reverse tape: its parameters and both solutions.
struct RecordedChainSolve {
  VectorX<Reverse> p, x, x2;
};
RecordedChainSolve record_chain_solve(const VectorX<double>& p, int links) {
  ReverseTape::clear();
  RecordedChainSolve r{VectorX<Reverse>(p.size()), {}, {}};
  for (Eigen::Index i = 0; i < p.size(); ++i) r.p[i] = Reverse::independent(p[i]);
  multibody::DenseMatrix<Reverse> A;
  VectorX<Reverse> b;
  chain_kkt<Reverse>(r.p, links, A, b);
  multibody::DenseMatrix<Reverse> B(b.size(), 2);
  B.col(0) = b;
  B.col(1) = second_rhs<Reverse>(r.p, b);
  const multibody::DenseMatrix<Reverse> X = multibody::solve_sparse<Reverse>(compressed(A), B, "chain KKT matrix");
  r.x = X.col(0);
  r.x2 = X.col(1);
  return r;
}

// Matrices assembled sparse (solve_sparse): a large one goes to KLU from its compressed form, a
// small one to the dense LU; values and dual tangents against the complex step of the
// complex-arithmetic elimination (an independent computation), reverse gradients too.
TEST(DenseSolve, SparseAssembledMatricesSolveInEveryScalarType) {
  for (const int links : {40, 2}) {  // 120 x 120 (KLU) and 6 x 6 (dense LU)
    const std::string size = std::to_string(links) + " links";
    VectorX<double> p(3);
    p << 0.7, -0.4, 1.3;
    multibody::DenseMatrix<double> A;
    VectorX<double> b;
    chain_kkt<double>(p, links, A, b);
    const Eigen::VectorXd x = multibody::solve_sparse<double>(compressed(A), b, "chain KKT matrix").col(0);
    EXPECT_LT((A * x - b).cwiseAbs().maxCoeff(), 1e-12 * (1.0 + b.cwiseAbs().maxCoeff())) << size;
    expect_dual_solve_matches_complex_step(
        p, links, x, [](const multibody::DenseMatrix<Dual>& Ad, const VectorX<Dual>& bd) {
          return VectorX<Dual>(multibody::solve_sparse<Dual>(compressed(Ad), bd, "chain KKT matrix").col(0));
        });
    // Reverse: the gradient of sum_i x_i against the complex step.
    const RecordedChainSolve recorded = record_chain_solve(p, links);
    const VectorX<Reverse>& pr = recorded.p;
    const VectorX<Reverse>& xr = recorded.x;
    Reverse total(0.0);
    for (int i = 0; i < xr.size(); ++i) total += xr[i];
    ASSERT_FALSE(total.is_constant());
    std::vector<double> adjoint(static_cast<size_t>(ReverseTape::size()), 0.0);
    adjoint[static_cast<size_t>(total.node())] = total.coefficient();
    ReverseTape::sweep(adjoint);
    ReverseTape::clear();
    for (int k = 0; k < 3; ++k) {
      const double gradient_k = adjoint[static_cast<size_t>(pr[k].node())];
      VectorX<Complex> pc(3);
      for (int i = 0; i < 3; ++i) pc[i] = Complex(p[i], i == k ? 1e-30 : 0.0);
      multibody::DenseMatrix<Complex> Ac;
      VectorX<Complex> bc;
      chain_kkt<Complex>(pc, links, Ac, bc);
      const double reference = solve_dense<Complex>(Ac, bc, "chain KKT matrix").col(0).sum().imag() / 1e-30;
      EXPECT_NEAR(gradient_k, reference, 1e-10 * (1.0 + std::abs(reference))) << size << ", " << k;
    }
  }
}

// The chain's KKT matrix with the right-hand sides [b, p0 b + 1], in any scalar type.
template <class S>
struct TwoRightHandSides {
  multibody::DenseMatrix<S> A, B;
};
template <class S>
TwoRightHandSides<S> two_right_hand_sides(const VectorX<S>& p, int links) {
  TwoRightHandSides<S> system;
  VectorX<S> b;
  chain_kkt<S>(p, links, system.A, b);
  system.B.resize(b.size(), 2);
  system.B.col(0) = b;
  system.B.col(1) = second_rhs<S>(p, b);
  return system;
}

// A DualBlock solve of a matrix assembled sparse, with two right-hand sides: every direction's
// tangent of every column (one pass over the stored entries for all directions) against the
// complex step of the complex-arithmetic elimination, through KLU (40 links) and the dense LU
// (2 links).
TEST(DenseSolve, ADualBlocksSparseSolveHasEveryDirectionOfEveryColumn) {
  for (const int links : {40, 2}) {
    const std::string size = std::to_string(links) + " links";
    const double p_values[3] = {0.7, -0.4, 1.3};
    VectorX<DualBlock> p(3);
    for (int k = 0; k < 3; ++k) {
      p[k] = DualBlock(p_values[k]);
      p[k].v[static_cast<size_t>(k)] = 1.0;  // direction k: d / d p_k; the fourth stays zero
    }
    const TwoRightHandSides<DualBlock> system = two_right_hand_sides<DualBlock>(p, links);
    const multibody::DenseMatrix<DualBlock> X =
        multibody::solve_sparse<DualBlock>(compressed(system.A), system.B, "chain KKT matrix");
    for (int k = 0; k < 3; ++k) {
      VectorX<Complex> pc(3);
      for (int i = 0; i < 3; ++i) pc[i] = Complex(p_values[i], i == k ? 1e-30 : 0.0);
      const TwoRightHandSides<Complex> complex_system = two_right_hand_sides<Complex>(pc, links);
      const multibody::DenseMatrix<Complex> Xc = solve_dense<Complex>(complex_system.A, complex_system.B, "chain KKT matrix");
      for (Eigen::Index j = 0; j < 2; ++j) {
        for (Eigen::Index i = 0; i < X.rows(); ++i) {
          const double reference = Xc(i, j).imag() / 1e-30;
          EXPECT_NEAR(X(i, j).v[static_cast<size_t>(k)], reference, 1e-10 * (1.0 + std::abs(reference)))
              << size << ", direction " << k << ", column " << j << ", row " << i;
          if (k == 0) {
            EXPECT_NEAR(X(i, j).a, Xc(i, j).real(), 1e-12 * (1.0 + std::abs(Xc(i, j).real())));
          }
        }
      }
    }
    for (Eigen::Index i = 0; i < X.rows(); ++i) EXPECT_EQ(X(i, 0).v[3], 0.0) << size;
  }
}

// Several adjoint vectors in one pass over the tape (ReverseTape::sweep with columns, as the
// backward passes sweep every cost at once): column c's gradient of w_c^T x + w_c^T x2 / 2
// (x, x2 the solutions of one solve with two right-hand sides), with w_c a different weighting
// per column, against the complex step, through the KLU solve's recorded operation (40 links)
// and the dense elimination's nodes (2 links).
TEST(DenseSolve, ColumnsOfOneSweepAreEachTheirOwnGradient) {
  for (const int links : {40, 2}) {
    const std::string size = std::to_string(links) + " links";
    VectorX<double> p(3);
    p << 0.7, -0.4, 1.3;
    const RecordedChainSolve recorded = record_chain_solve(p, links);
    const VectorX<Reverse>& pr = recorded.p;
    const VectorX<Reverse>& xr = recorded.x;
    const VectorX<Reverse>& x2r = recorded.x2;
    const Eigen::Index n = xr.size();
    constexpr int kColumns = 3;
    Eigen::MatrixXd w(n, kColumns);
    for (Eigen::Index i = 0; i < n; ++i) {
      w(i, 0) = 1.0;
      w(i, 1) = (i % 3 == 0) ? -2.0 : 0.0;  // zero seeds on most outputs
      w(i, 2) = std::cos(0.3 * static_cast<double>(i));
    }
    std::vector<double> adjoint(static_cast<size_t>(ReverseTape::size()) * kColumns, 0.0);
    for (Eigen::Index i = 0; i < n; ++i) {
      ASSERT_FALSE(xr[i].is_constant() || x2r[i].is_constant()) << i;
      for (int c = 0; c < kColumns; ++c) {
        adjoint[static_cast<size_t>(xr[i].node()) * kColumns + c] += w(i, c) * xr[i].coefficient();
        adjoint[static_cast<size_t>(x2r[i].node()) * kColumns + c] += 0.5 * w(i, c) * x2r[i].coefficient();
      }
    }
    ReverseTape::sweep(adjoint, kColumns);
    ReverseTape::clear();
    for (int k = 0; k < 3; ++k) {
      const ComplexChainSystem system = complex_chain_system(p, k, links);
      const VectorX<Complex> xc = solve_dense<Complex>(system.A, system.b, "chain KKT matrix").col(0);
      const VectorX<Complex> x2c = solve_dense<Complex>(system.A, second_rhs<Complex>(system.p, system.b), "chain KKT matrix").col(0);
      for (int c = 0; c < kColumns; ++c) {
        double reference = 0.0;
        for (Eigen::Index i = 0; i < n; ++i) reference += w(i, c) * (xc[i].imag() + 0.5 * x2c[i].imag()) / 1e-30;
        const double gradient = adjoint[static_cast<size_t>(pr[k].node()) * kColumns + c];
        EXPECT_NEAR(gradient, reference, 1e-10 * (1.0 + std::abs(reference))) << size << ", p" << k << ", column " << c;
      }
    }
  }
}


// A singular or non-finite matrix assembled sparse is named (scalar type S, `links` links).
template <class S>
void expect_singular_and_non_finite_named(int links) {
  multibody::DenseMatrix<S> A;
  VectorX<S> b;
  chain_kkt<S>(VectorX<S>::Zero(3), links, A, b);
  multibody::DenseMatrix<S> singular = A;
  singular.row(2 * links + 1).setZero();
  singular.col(2 * links + 1).setZero();
  try {
    multibody::solve_sparse<S>(compressed(singular), b, "chain KKT matrix");
    ADD_FAILURE() << "no error for " << links << " links";
  } catch (const ModelError& e) {
    EXPECT_NE(std::string(e.what()).find("the chain KKT matrix is singular"), std::string::npos) << e.what();
  }
  multibody::DenseMatrix<S> infinite = A;
  infinite(1, 1) = S(std::numeric_limits<double>::infinity());
  try {
    multibody::solve_sparse<S>(compressed(infinite), b, "chain KKT matrix");
    ADD_FAILURE() << "no error for " << links << " links";
  } catch (const ModelError& e) {
    EXPECT_NE(std::string(e.what()).find("the chain KKT matrix has non-finite entries"), std::string::npos)
        << e.what();
  }
}

// In double, on the KLU path (40 links) and the dense one (2 links).
TEST(DenseSolve, SingularOrNonFiniteSparseMatricesAreNamed) {
  for (const int links : {40, 2}) expect_singular_and_non_finite_named<double>(links);
}

// The complex step's solve of a large matrix assembled sparse: Eigen's sparse LU in complex
// arithmetic, against the dense complex elimination (independent code), the real parts and the
// complex step's imaginary parts; a singular or non-finite one is named as on the other paths.
TEST(DenseSolve, LargeComplexMatricesAssembledSparseSolveSparseInComplexArithmetic) {
  const int links = 40;  // 120 x 120
  VectorX<double> p(3);
  p << 0.7, -0.4, 1.3;
  for (int k = 0; k < 3; ++k) {
    const ComplexChainSystem system = complex_chain_system(p, k, links);
    const VectorX<Complex> sparse = multibody::solve_sparse<Complex>(compressed(system.A), system.b, "chain KKT matrix").col(0);
    const VectorX<Complex> dense = solve_dense<Complex>(system.A, system.b, "chain KKT matrix").col(0);
    for (Eigen::Index i = 0; i < dense.size(); ++i) {
      EXPECT_NEAR(sparse[i].real(), dense[i].real(), 1e-12 * (1.0 + std::abs(dense[i].real()))) << i;
      const double tangent = dense[i].imag() / 1e-30;
      EXPECT_NEAR(sparse[i].imag() / 1e-30, tangent, 1e-10 * (1.0 + std::abs(tangent))) << i << ", p" << k;
    }
  }
  expect_singular_and_non_finite_named<Complex>(links);
  // A real part that is singular is refused although the imaginary parts make the complex
  // matrix regular (as the real runs refuse it).
  ComplexChainSystem system = complex_chain_system(p, 0, links);
  system.A.row(2 * links + 1).setConstant(Complex(1e-30, 1e-20));
  try {
    multibody::solve_sparse<Complex>(compressed(system.A), system.b, "chain KKT matrix");
    ADD_FAILURE() << "no error for a singular real part";
  } catch (const ModelError& e) {
    EXPECT_NE(std::string(e.what()).find("the chain KKT matrix is singular"), std::string::npos) << e.what();
  }
}

}  // namespace
