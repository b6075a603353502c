#include <saltus/multibody/dense_solve.hpp>

#include <saltus/core/same_bits.hpp>

#include "sparse_factorization.hpp"

#include <array>

namespace saltus::multibody::detail {

namespace {

/// A factored matrix and the matrix it came from.
struct CachedFactorization {
  Eigen::MatrixXd matrix;
  Eigen::PartialPivLU<Eigen::MatrixXd> lu;
  bool valid = false;  ///< false until a factorization succeeded
};

/// Four entries: a formulation solves at most two different matrices per right-hand side (Maggi:
/// [Phi_q; B] and R^T M R), and an event adds the impact matrix.
struct FactorizationCache {
  std::array<CachedFactorization, 4> entries;
  size_t next = 0;
};

thread_local FactorizationCache cache;

}  // namespace

void throw_singular(const char* what, double pivot, Eigen::Index column, Eigen::Index n, double largest) {
  throw ModelError(fmt::format("the {} is singular (pivot {:.1e} at column {} of {}, largest entry {:.1e})", what,
                               pivot, column + 1, n, largest));
}

const Eigen::PartialPivLU<Eigen::MatrixXd>& dense_factorization(const Eigen::MatrixXd& matrix, const char* what) {
  for (const CachedFactorization& entry : cache.entries) {
    if (entry.valid && same_bits_entries(entry.matrix, matrix)) return entry.lu;
  }
  const double largest = largest_finite_entry<double>(matrix, what);
  CachedFactorization& entry = cache.entries[cache.next];
  entry.valid = false;
  entry.lu.compute(matrix);
  const Eigen::MatrixXd& U = entry.lu.matrixLU();
  for (Eigen::Index k = 0; k < U.rows(); ++k) {
    const double pivot = std::abs(U(k, k));
    if (!(pivot > 1e-13 * largest)) throw_singular(what, pivot, k, U.rows(), largest);
  }
  entry.matrix = matrix;  // same size as before: no allocation
  entry.valid = true;
  cache.next = (cache.next + 1) % cache.entries.size();
  return entry.lu;
}

FactoredMatrix::FactoredMatrix(const Eigen::MatrixXd& matrix, const char* what)
    : what_(what), sparse_(sparse_factors(matrix, what)) {
  if (sparse_ == nullptr) dense_ = &dense_factorization(matrix, what);
}

FactoredMatrix::FactoredMatrix(const Eigen::SparseMatrix<double, Eigen::RowMajor, int>& matrix, const char* what)
    : what_(what) {
  if (matrix.rows() >= kSparseMinSize) {
    sparse_ = sparse_factors(matrix, what).get();
  } else {
    dense_ = &dense_factorization(Eigen::MatrixXd(matrix), what);
  }
}

Eigen::MatrixXd FactoredMatrix::solve(const Eigen::MatrixXd& rhs) const {
  return sparse_ != nullptr ? sparse_solve(*sparse_, rhs, what_) : dense_->solve(rhs);
}

}  // namespace saltus::multibody::detail
