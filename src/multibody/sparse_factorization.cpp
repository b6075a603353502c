// KLU factorizations of large sparse multibody matrices: sparse_factorization.hpp.
#include "sparse_factorization.hpp"

#include "recorded_solve.hpp"

#include <saltus/multibody/dense_solve.hpp>

#include <saltus/core/error.hpp>
#include <saltus/core/same_bits.hpp>
#include <saltus/core/reverse_scalar.hpp>

#include <Eigen/SparseLU>
#include <fmt/format.h>
#include <klu.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstring>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

namespace saltus::multibody::detail {

namespace {

/// The nonzero pattern of a matrix in compressed columns, with its values.
struct CompressedColumns {
  std::vector<int> starts;   ///< n + 1 column starts
  std::vector<int> rows;     ///< row of each nonzero
  std::vector<double> values;

  /// Compresses `matrix`, which has `nonzeros` nonzero entries. The vectors keep their
  /// capacity, so repeated calls do not allocate; the copy is branch-free (every entry is
  /// written, and the position advances past the nonzero ones).
  void assign(const Eigen::MatrixXd& matrix, Eigen::Index nonzeros) {
    const Eigen::Index n = matrix.cols(), m = matrix.rows();
    starts.resize(static_cast<size_t>(n + 1));
    rows.resize(static_cast<size_t>(nonzeros + 1));
    values.resize(static_cast<size_t>(nonzeros + 1));
    int k = 0;
    starts[0] = 0;
    for (Eigen::Index j = 0; j < n; ++j) {
      const double* column = matrix.data() + j * m;
      for (Eigen::Index i = 0; i < m; ++i) {
        rows[static_cast<size_t>(k)] = static_cast<int>(i);
        values[static_cast<size_t>(k)] = column[i];
        k += column[i] != 0.0;
      }
      starts[static_cast<size_t>(j + 1)] = k;
    }
    rows.resize(static_cast<size_t>(k));
    values.resize(static_cast<size_t>(k));
    of_transpose = false;
  }
  /// Copies the compressed rows of `matrix` (every stored entry, zeros included: the pattern is
  /// the assembly's, the same at every evaluation), which are the compressed columns of its
  /// transpose: KLU then factors A^T, and a solve with A is its transposed solve.
  void assign(const Eigen::SparseMatrix<double, Eigen::RowMajor, int>& matrix) {
    const auto n = static_cast<size_t>(matrix.outerSize());
    const auto nonzeros = static_cast<size_t>(matrix.nonZeros());
    starts.resize(n + 1);
    rows.resize(nonzeros);
    values.resize(nonzeros);
    if (matrix.isCompressed()) {
      std::copy(matrix.outerIndexPtr(), matrix.outerIndexPtr() + n + 1, starts.begin());
      std::copy(matrix.innerIndexPtr(), matrix.innerIndexPtr() + nonzeros, rows.begin());
      std::copy(matrix.valuePtr(), matrix.valuePtr() + nonzeros, values.begin());
    } else {
      size_t k = 0;
      starts[0] = 0;
      for (size_t i = 0; i < n; ++i) {
        for (Eigen::SparseMatrix<double, Eigen::RowMajor, int>::InnerIterator it(matrix, static_cast<Eigen::Index>(i)); it;
             ++it, ++k) {
          rows[k] = static_cast<int>(it.col());
          values[k] = it.value();
        }
        starts[i + 1] = static_cast<int>(k);
      }
    }
    of_transpose = true;
  }
  /// The arrays are the compressed columns of A^T (assigned from compressed rows).
  bool of_transpose = false;
  bool same_pattern(const CompressedColumns& other) const {
    return of_transpose == other.of_transpose && starts == other.starts && rows == other.rows;
  }
  bool same(const CompressedColumns& other) const { return values == other.values && same_pattern(other); }
};

/// KLU's settings and its objects, freed with it.
struct KluCommon {
  klu_common common{};
  KluCommon() { klu_defaults(&common); }
};

struct SymbolicDeleter {
  void operator()(klu_symbolic* s) const {
    KluCommon c;
    klu_free_symbolic(&s, &c.common);
  }
};
struct NumericDeleter {
  void operator()(klu_numeric* n) const {
    KluCommon c;
    klu_free_numeric(&n, &c.common);
  }
};

}  // namespace

/// The last two solves X = A^-1 B with one factorization, by their right-hand sides' bits.
/// A forward sensitivity's right-hand side, and each product of CVODES's GMRES with the
/// Jacobian, solves for the accelerations' tangents at the point of the last right-hand side:
/// solve_dual first solves again for the values themselves, with the same factors and the
/// right-hand side that evaluation solved, then for the tangents. Two entries so that a run of
/// tangent solves at one point keeps the values' solve. A solve is a function of its factors
/// and right-hand side alone, so a remembered X is bit for bit the one a solve would give.
class RecentSolves {
 public:
  /// The remembered X for B, or nullptr.
  const Eigen::MatrixXd* find(const Eigen::MatrixXd& rhs) {
    for (int k = 0; k < 2; ++k) {
      if (held_[k] && same_bits_entries(rhs_[k], rhs)) {
        last_used_ = k;
        return &x_[k];
      }
    }
    return nullptr;
  }
  /// Remembers X for B in the entry not used last (assignments into kept storage: no allocation
  /// once the sizes have been seen).
  void remember(const Eigen::MatrixXd& rhs, const Eigen::MatrixXd& x) {
    const int k = 1 - last_used_;
    rhs_[k] = rhs;
    x_[k] = x;
    held_[k] = true;
    last_used_ = k;
  }
  void forget() { held_[0] = held_[1] = false; }

 private:
  std::array<Eigen::MatrixXd, 2> rhs_, x_;
  std::array<bool, 2> held_{false, false};
  int last_used_ = 1;
};

/// One factored matrix: its nonzeros (to recognise it), KLU's analysis of their pattern and its
/// numeric factors.
struct SparseFactors {
  CompressedColumns columns;
  std::shared_ptr<klu_symbolic> symbolic;  // shared by the entries with one pattern
  std::unique_ptr<klu_numeric, NumericDeleter> numeric;
  bool valid = false;
  /// sparse_solve's; cleared when the entry is factored anew. Mutable: a solve leaves the factors
  /// as they are.
  mutable RecentSolves recent;
};

/// As the dense cache (dense_solve.cpp): the two matrices a formulation solves per right-hand
/// side and an impact matrix.
namespace {

struct SparseCache {
  /// Shared: a solve recorded on the reverse tape keeps its factors (record_sparse_solve); the
  /// cache then factors into a fresh entry instead of overwriting them.
  std::array<std::shared_ptr<SparseFactors>, 4> entries;
  size_t next = 0;
  KluCommon klu;
  CompressedColumns scratch;  ///< the matrix being solved with
};

thread_local SparseCache cache;

[[noreturn]] void throw_non_finite(const char* what) {
  throw ModelError(fmt::format("the {} has non-finite entries: the state it was evaluated at is not finite "
                               "(an overflow of the integration?)",
                               what));
}

[[noreturn]] void throw_sparse_singular(const char* what, double rcond, Eigen::Index n) {
  throw ModelError(fmt::format("the {} is singular (sparse LU of order {}: smallest pivot {:.1e} of the largest)",
                               what, n, rcond));
}

/// Numeric factors of entry.columns with `symbolic`: always a full factorization with
/// pivoting. KLU's refactorization (the previous matrix's pivot order) would halve this, but
/// its rounding then depends on which matrix came before: a right-hand side must be a function
/// of its arguments alone, or CVODES's recomputation of a stretch of the forward solution in
/// the adjoint takes other steps than the recording and overruns its step store (a crash in
/// CVodeB, measured on the chains of 24 to 64 rods).
void factor_numeric(SparseFactors& entry, const std::shared_ptr<klu_symbolic>& symbolic, Eigen::Index n,
                    const char* what) {
  klu_common& common = cache.klu.common;
  CompressedColumns& c = entry.columns;  // KLU's C interface takes non-const arrays
  entry.numeric.reset(klu_factor(c.starts.data(), c.rows.data(), c.values.data(), symbolic.get(), &common));
  if (!entry.numeric || common.status == KLU_SINGULAR) throw_sparse_singular(what, 0.0, n);
  if (klu_rcond(symbolic.get(), entry.numeric.get(), &common) != 1 || !(common.rcond > 1e-13)) {
    throw_sparse_singular(what, common.rcond, n);
  }
}

/// KLU's symbolic analysis of the pattern of `c`. KLU's default first permutes a matrix to block
/// triangular form (BTF) and orders each block; where that finds a single block (a KKT matrix
/// is irreducible) the analysis is redone without BTF: AMD then orders the matrix's own pattern
/// rather than the one BTF's row permutation (its zero-free diagonal) leaves, with about half the
/// fill-in. Measured: the vehicle's 112 x 112 KKT matrix factors in 10,426 flops instead of
/// 19,979, its simulation takes 1.83 s of CPU instead of 2.1 s; the 64-rod chain 0.55 s
/// instead of 0.6 s. A reducible matrix (the chain's triangular 128 x 128 one) keeps BTF.
klu_symbolic* analyse(Eigen::Index n, CompressedColumns& c, const char* what) {
  klu_common common = cache.klu.common;  // a copy: only this analysis changes its settings
  klu_symbolic* s = klu_analyze(static_cast<int>(n), c.starts.data(), c.rows.data(), &common);
  if (s != nullptr && s->nblocks == 1 && common.btf != 0) {
    klu_free_symbolic(&s, &common);
    common.btf = 0;
    s = klu_analyze(static_cast<int>(n), c.starts.data(), c.rows.data(), &common);
  }
  if (s == nullptr) throw ModelError(fmt::format("KLU could not analyse the {} (status {})", what, common.status));
  return s;
}

/// The entry for the compressed matrix in cache.scratch, factored: a cached one, or the next
/// slot factored now (its symbolic analysis reused from an entry with the same pattern).
const std::shared_ptr<SparseFactors>& factored(Eigen::Index n, const char* what) {
  const CompressedColumns& columns = cache.scratch;
  for (const std::shared_ptr<SparseFactors>& entry : cache.entries) {
    if (entry && entry->valid && entry->columns.same(columns)) return entry;
  }
  for (const double v : columns.values) {
    if (!std::isfinite(v)) throw_non_finite(what);
  }
  std::shared_ptr<SparseFactors>& slot = cache.entries[cache.next];
  if (!slot || slot.use_count() > 1) slot = std::make_shared<SparseFactors>();
  SparseFactors& entry = *slot;
  const bool same_pattern = entry.symbolic && entry.columns.same_pattern(columns);
  entry.valid = false;
  entry.recent.forget();
  entry.numeric.reset();
  entry.columns = columns;
  std::shared_ptr<klu_symbolic> symbolic = same_pattern ? entry.symbolic : nullptr;
  for (const std::shared_ptr<SparseFactors>& other : cache.entries) {
    if (!symbolic && other && other.get() != &entry && other->symbolic && other->columns.same_pattern(entry.columns)) {
      symbolic = other->symbolic;
    }
  }
  if (!symbolic) symbolic.reset(analyse(n, entry.columns, what), SymbolicDeleter{});
  entry.symbolic = symbolic;
  factor_numeric(entry, symbolic, n, what);
  entry.valid = true;
  cache.next = (cache.next + 1) % cache.entries.size();
  return slot;
}

/// X = A^-T B or A^-1 B in place with the factors.
void solve_in_place(const SparseFactors& factors, Eigen::MatrixXd& x, bool transposed, const char* what) {
  klu_common& common = cache.klu.common;
  if (x.cols() == 0) return;
  const int n = static_cast<int>(x.rows()), k = static_cast<int>(x.cols());
  if (factors.columns.starts.size() != static_cast<size_t>(n) + 1) {
    throw std::logic_error(fmt::format("sparse solve with the {}: {} right-hand-side rows for a matrix of order {}", what,
                                       n, factors.columns.starts.size() - 1));
  }
  transposed = transposed != factors.columns.of_transpose;  // KLU holds A^T's factors
  const int ok = transposed ? klu_tsolve(factors.symbolic.get(), factors.numeric.get(), n, k, x.data(), &common)
                            : klu_solve(factors.symbolic.get(), factors.numeric.get(), n, k, x.data(), &common);
  if (ok != 1) throw ModelError(fmt::format("KLU could not solve with the {} (status {})", what, common.status));
}

/// X = A^-1 B on the reverse tape as one operation (recorded_solve.hpp) with KLU's factors kept
/// from the recording.
class SparseSolveOperation : public RecordedSolve {
 public:
  /// `what` is copied: the sweep may come after the caller's string is gone.
  SparseSolveOperation(std::shared_ptr<const SparseFactors> factors, const char* what)
      : factors_(std::move(factors)), what_(what) {}

 private:
  void solve_transposed(Eigen::MatrixXd& bar) const override { solve_in_place(*factors_, bar, true, what_.c_str()); }

  std::shared_ptr<const SparseFactors> factors_;
  std::string what_;
};

}  // namespace

const SparseFactors* sparse_factors(const Eigen::MatrixXd& matrix, const char* what) {
  if (matrix.rows() < kSparseMinSize || matrix.rows() != matrix.cols()) return nullptr;
  const Eigen::Index nonzeros = (matrix.array() != 0.0).count();
  if (static_cast<double>(nonzeros) > kSparseMaxDensity * static_cast<double>(matrix.size())) return nullptr;
  cache.scratch.assign(matrix, nonzeros);
  return factored(matrix.rows(), what).get();
}

std::shared_ptr<const SparseFactors> sparse_factors(const Eigen::SparseMatrix<double, Eigen::RowMajor, int>& matrix,
                                                    const char* what) {
  if (matrix.rows() != matrix.cols()) {
    throw ModelError(fmt::format("the {} is not square ({} x {})", what, matrix.rows(), matrix.cols()));
  }
  cache.scratch.assign(matrix);
  return factored(matrix.rows(), what);
}

Eigen::MatrixXd sparse_solve(const SparseFactors& factors, const Eigen::MatrixXd& rhs, const char* what) {
  if (const Eigen::MatrixXd* known = factors.recent.find(rhs)) return *known;
  Eigen::MatrixXd x = rhs;
  solve_in_place(factors, x, false, what);
  factors.recent.remember(rhs, x);
  return x;
}

DenseMatrix<Reverse> record_sparse_solve(const Eigen::SparseMatrix<Reverse, Eigen::RowMajor, int>& matrix,
                                         const DenseMatrix<Reverse>& rhs, const char* what) {
  const Eigen::SparseMatrix<double, Eigen::RowMajor, int> values =
      matrix.unaryExpr([](const Reverse& r) { return r.value(); });
  const std::shared_ptr<const SparseFactors> factors = sparse_factors(values, what);
  auto operation = std::make_unique<SparseSolveOperation>(factors, what);
  operation->note_matrix_entries(matrix);
  Eigen::MatrixXd x = rhs.unaryExpr([](const Reverse& r) { return r.value(); });
  solve_in_place(*factors, x, false, what);
  return push_recorded_solve(std::move(operation), rhs, std::move(x));
}

DenseMatrix<Complex> solve_sparse_complex(const Eigen::SparseMatrix<Complex, Eigen::RowMajor, int>& matrix,
                                          const DenseMatrix<Complex>& rhs, const char* what) {
  if (matrix.rows() != matrix.cols()) {
    throw ModelError(fmt::format("the {} is not square ({} x {})", what, matrix.rows(), matrix.cols()));
  }
  for (int i = 0; i < matrix.outerSize(); ++i) {
    for (Eigen::SparseMatrix<Complex, Eigen::RowMajor, int>::InnerIterator it(matrix, i); it; ++it) {
      if (!std::isfinite(it.value().real()) || !std::isfinite(it.value().imag())) throw_non_finite(what);
    }
  }
  // Singular as the real runs judge it (KLU's pivot ratio on the real parts, sparse_factors): a
  // real part that is singular must not pass on the complex step's O(h) imaginary parts.
  sparse_factors(Eigen::SparseMatrix<double, Eigen::RowMajor, int>(matrix.real()), what);
  using ColumnMatrix = Eigen::SparseMatrix<Complex, Eigen::ColMajor, int>;
  Eigen::SparseLU<ColumnMatrix, Eigen::COLAMDOrdering<int>> lu;
  lu.compute(ColumnMatrix(matrix));
  if (lu.info() != Eigen::Success) {
    throw ModelError(fmt::format("the {} is singular (complex sparse LU of order {}: {})", what, matrix.rows(),
                                 lu.lastErrorMessage()));
  }
  DenseMatrix<Complex> x = lu.solve(rhs);
  if (!x.allFinite()) throw ModelError(fmt::format("the {} is singular (complex sparse LU of order {})", what, matrix.rows()));
  return x;
}

}  // namespace saltus::multibody::detail
