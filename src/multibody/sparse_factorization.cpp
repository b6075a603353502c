// KLU factorizations of large sparse multibody matrices: sparse_factorization.hpp.
#include "sparse_factorization.hpp"

#include <saltus/core/error.hpp>

#include <fmt/format.h>
#include <klu.h>

#include <array>
#include <cmath>
#include <cstring>
#include <memory>
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
  }
  /// Copies the compressed arrays of `matrix` (every stored entry, zeros included: the pattern is
  /// the assembly's, the same at every evaluation).
  void assign(const Eigen::SparseMatrix<double, Eigen::ColMajor, int>& matrix) {
    const Eigen::Index n = matrix.outerSize();
    starts.resize(static_cast<size_t>(n + 1));
    rows.clear();
    values.clear();
    starts[0] = 0;
    for (Eigen::Index j = 0; j < n; ++j) {
      for (Eigen::SparseMatrix<double, Eigen::ColMajor, int>::InnerIterator it(matrix, j); it; ++it) {
        rows.push_back(static_cast<int>(it.row()));
        values.push_back(it.value());
      }
      starts[static_cast<size_t>(j + 1)] = static_cast<int>(rows.size());
    }
  }
  bool same_pattern(const CompressedColumns& other) const { return starts == other.starts && rows == other.rows; }
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

/// One factored matrix: its nonzeros (to recognise it), KLU's analysis of their pattern and its
/// numeric factors.
struct SparseFactors {
  CompressedColumns columns;
  std::shared_ptr<klu_symbolic> symbolic;  // shared by the entries with one pattern
  std::unique_ptr<klu_numeric, NumericDeleter> numeric;
  bool valid = false;
};

/// As the dense cache (dense_solve.cpp): the two matrices a formulation solves per right-hand
/// side and an impact matrix.
namespace {

struct SparseCache {
  std::array<SparseFactors, 4> entries;
  size_t next = 0;
  KluCommon klu;
  CompressedColumns scratch;  ///< the matrix being solved with
};

thread_local SparseCache cache;

[[noreturn]] void throw_sparse_singular(const char* what, double rcond, Eigen::Index n) {
  throw ModelError(fmt::format("the {} is singular (sparse LU of order {}: smallest pivot {:.1e} of the largest)",
                               what, n, rcond));
}

/// The entry for the compressed matrix in cache.scratch, factored: a cached one, or the next
/// slot factored now (its symbolic analysis reused from an entry with the same pattern).
const SparseFactors& factored(Eigen::Index n, const char* what) {
  const CompressedColumns& columns = cache.scratch;
  for (const SparseFactors& entry : cache.entries) {
    if (entry.valid && entry.columns.same(columns)) return entry;
  }
  for (const double v : columns.values) {
    if (!std::isfinite(v)) {
      throw ModelError(fmt::format("the {} has non-finite entries: the state it was evaluated at is not finite "
                                   "(an overflow of the integration?)",
                                   what));
    }
  }
  SparseFactors& entry = cache.entries[cache.next];
  entry.valid = false;
  entry.numeric.reset();
  entry.columns = columns;
  std::shared_ptr<klu_symbolic> symbolic;
  for (const SparseFactors& other : cache.entries) {
    if (other.symbolic && &other != &entry && other.columns.same_pattern(entry.columns)) symbolic = other.symbolic;
  }
  klu_common& common = cache.klu.common;
  if (!symbolic) {
    klu_symbolic* s = klu_analyze(static_cast<int>(n), entry.columns.starts.data(), entry.columns.rows.data(), &common);
    if (s == nullptr) throw ModelError(fmt::format("KLU could not analyse the {} (status {})", what, common.status));
    symbolic.reset(s, SymbolicDeleter{});
  }
  entry.symbolic = symbolic;
  entry.numeric.reset(klu_factor(entry.columns.starts.data(), entry.columns.rows.data(), entry.columns.values.data(),
                                 symbolic.get(), &common));
  if (!entry.numeric || common.status == KLU_SINGULAR) throw_sparse_singular(what, 0.0, n);
  if (klu_rcond(symbolic.get(), entry.numeric.get(), &common) != 1 || !(common.rcond > 1e-13)) {
    throw_sparse_singular(what, common.rcond, n);
  }
  entry.valid = true;
  cache.next = (cache.next + 1) % cache.entries.size();
  return entry;
}

}  // namespace

const SparseFactors* sparse_factors(const Eigen::MatrixXd& matrix, const char* what) {
  if (matrix.rows() < kSparseMinSize || matrix.rows() != matrix.cols()) return nullptr;
  const Eigen::Index nonzeros = (matrix.array() != 0.0).count();
  if (static_cast<double>(nonzeros) > kSparseMaxDensity * static_cast<double>(matrix.size())) return nullptr;
  cache.scratch.assign(matrix, nonzeros);
  return &factored(matrix.rows(), what);
}

const SparseFactors& sparse_factors(const Eigen::SparseMatrix<double, Eigen::ColMajor, int>& matrix, const char* what) {
  if (matrix.rows() != matrix.cols()) {
    throw ModelError(fmt::format("the {} is not square ({} x {})", what, matrix.rows(), matrix.cols()));
  }
  cache.scratch.assign(matrix);
  return factored(matrix.rows(), what);
}

Eigen::MatrixXd sparse_solve(const SparseFactors& factors, const Eigen::MatrixXd& rhs, const char* what) {
  Eigen::MatrixXd x = rhs;
  klu_common& common = cache.klu.common;
  if (x.cols() > 0 && klu_solve(factors.symbolic.get(), factors.numeric.get(), static_cast<int>(x.rows()),
                                static_cast<int>(x.cols()), x.data(), &common) != 1) {
    throw ModelError(fmt::format("KLU could not solve with the {} (status {})", what, common.status));
  }
  return x;
}

}  // namespace saltus::multibody::detail
