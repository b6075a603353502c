#include <saltus/multibody/dense_solve.hpp>

#include <saltus/core/same_bits.hpp>

#include "recorded_solve.hpp"
#include "sparse_factorization.hpp"

#include <array>
#include <memory>
#include <utility>

namespace saltus::multibody::detail {

namespace {

/// A factored matrix and the matrix it came from.
struct CachedFactorization {
  Eigen::MatrixXd matrix;
  Eigen::PartialPivLU<Eigen::MatrixXd> lu;
  bool valid = false;  ///< false until a factorization succeeded
};

/// Four entries: a formulation solves at most two different matrices per right-hand side (Maggi:
/// [Phi_q; B] and R^T M R), and an event adds the impact matrix. Shared: a solve recorded on the
/// reverse tape keeps its factorization (record_dense_solve); the cache then factors into a
/// fresh entry instead of overwriting it.
struct FactorizationCache {
  std::array<std::shared_ptr<CachedFactorization>, 4> entries;
  size_t next = 0;
};

thread_local FactorizationCache cache;

using SharedLU = std::shared_ptr<const Eigen::PartialPivLU<Eigen::MatrixXd>>;

/// dense_factorization's LU, shared with the cache.
SharedLU shared_dense_factorization(const Eigen::MatrixXd& matrix, const char* what) {
  for (const std::shared_ptr<CachedFactorization>& entry : cache.entries) {
    if (entry && entry->valid && same_bits_entries(entry->matrix, matrix)) return SharedLU(entry, &entry->lu);
  }
  const double largest = largest_finite_entry<double>(matrix, what);
  std::shared_ptr<CachedFactorization>& slot = cache.entries[cache.next];
  if (!slot || slot.use_count() > 1) slot = std::make_shared<CachedFactorization>();
  CachedFactorization& entry = *slot;
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
  return SharedLU(slot, &entry.lu);
}

/// X = A^-1 B on the reverse tape as one operation (recorded_solve.hpp) with the dense LU kept
/// from the recording.
class DenseSolveOperation : public RecordedSolve {
 public:
  explicit DenseSolveOperation(SharedLU lu) : lu_(std::move(lu)) {}
  const Eigen::PartialPivLU<Eigen::MatrixXd>& lu() const { return *lu_; }

 private:
  void solve_transposed(Eigen::MatrixXd& bar) const override { bar = lu_->transpose().solve(bar); }

  SharedLU lu_;
};

/// Records X = A^-1 B with A's values (`values`) factored and A's tape entries noted.
template <class Matrix>
DenseMatrix<Reverse> record_factored_solve(const Matrix& matrix, const Eigen::MatrixXd& values,
                                           const DenseMatrix<Reverse>& rhs, const char* what) {
  auto operation = std::make_unique<DenseSolveOperation>(shared_dense_factorization(values, what));
  operation->note_matrix_entries(matrix);
  Eigen::MatrixXd x = operation->lu().solve(Eigen::MatrixXd(rhs.unaryExpr([](const Reverse& r) { return r.value(); })));
  return push_recorded_solve(std::move(operation), rhs, std::move(x));
}

}  // namespace

void throw_singular(const char* what, double pivot, Eigen::Index column, Eigen::Index n, double largest) {
  throw ModelError(fmt::format("the {} is singular (pivot {:.1e} at column {} of {}, largest entry {:.1e})", what,
                               pivot, column + 1, n, largest));
}

const Eigen::PartialPivLU<Eigen::MatrixXd>& dense_factorization(const Eigen::MatrixXd& matrix, const char* what) {
  return *shared_dense_factorization(matrix, what);  // the cache keeps it until a later factorization
}

DenseMatrix<Reverse> record_dense_solve(const DenseMatrix<Reverse>& matrix, const DenseMatrix<Reverse>& rhs,
                                        const char* what) {
  return record_factored_solve(matrix, matrix.unaryExpr([](const Reverse& r) { return r.value(); }), rhs, what);
}

DenseMatrix<Reverse> record_dense_solve(const Eigen::SparseMatrix<Reverse, Eigen::RowMajor, int>& matrix,
                                        const DenseMatrix<Reverse>& rhs, const char* what) {
  const Eigen::MatrixXd values = Eigen::SparseMatrix<double, Eigen::RowMajor, int>(
      matrix.unaryExpr([](const Reverse& r) { return r.value(); }));
  return record_factored_solve(matrix, values, rhs, what);
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
