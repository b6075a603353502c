#pragma once
// Dense linear solves A X = B of the multibody formulations (KKT, Maggi, penalty and impact
// matrices), in every Saltus scalar type, with their derivatives obtained by differentiating the
// solve rather than the elimination.
//
//   - double: an LU factorization with partial pivoting (Eigen::PartialPivLU), or for large
//             sparse matrices SuiteSparse KLU (FactoredMatrix). A matrix assembled sparse
//             (solve_sparse) goes to KLU from 48 rows without being formed dense.
//   - Dual, DualBlock: the real parts are factored once (as for double) and the tangents follow
//             by implicit differentiation, X' = A^-1 (B' - A' X): two triangular solves per
//             column and direction instead of an elimination in dual arithmetic. The
//             factorization of the most recent matrices is kept per thread and reused when the
//             same matrix (bit for bit) comes back, which it does for every column of a Jacobian
//             and every parameter direction of the forward sensitivities at one state: a
//             Jacobian then costs one factorization, not one per column.
//   - Reverse: recorded on the tape as one operation, the solve it is (record_dense_solve, and
//             record_sparse_solve from 48 rows): the values from the double factors, which the
//             tape keeps; a sweep solves with A^T once for all its columns and adds -B-bar X^T
//             to A's entries on the tape. Before, the residual and the two triangular solves
//             were recorded scalar by scalar, 2 (n^2 + nnz(A)) nodes per column.
//   - Complex: Gaussian elimination in complex arithmetic, pivoting on the real parts, so the
//             complex step stays an independent check of the dual and reverse paths; a large
//             matrix assembled sparse (48 rows or more) by Eigen's sparse LU in complex
//             arithmetic (solve_sparse_complex), still no implicit differentiation, at the cost of
//             a sparse factorization instead of an O(n^3) elimination per solve.
// Every path throws ModelError naming `what` for a non-finite or singular matrix (a pivot below
// 1e-13 of the largest entry).
#include <saltus/core/error.hpp>
#include <saltus/core/scalar.hpp>

#include <Eigen/Core>
#include <Eigen/LU>
#include <Eigen/SparseCore>
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <type_traits>

namespace saltus::multibody {

template <class S>
using DenseMatrix = Eigen::Matrix<S, Eigen::Dynamic, Eigen::Dynamic>;

/// From this many rows a matrix assembled sparse is factored by KLU (solve_sparse), and a dense
/// one with at most 15 % nonzeros too; below it the dense LU is faster (measured on the chain's
/// and the spatial examples' KKT matrices: the 16-rod chain's 48 rows take its GGL adjoint from
/// 0.246 to 0.193 s on KLU, the spatial arm's 35 rows ran 5-10 % slower; docs/benchmarks.md).
inline constexpr Eigen::Index kSparseSolveMinRows = 48;

namespace detail {

/// The LU factorization of `matrix` (square, double), taken from this thread's cache of recent
/// factorizations when the same matrix was factored there, otherwise computed and cached. The
/// reference stays valid until this thread's next call. Throws ModelError naming `what` when the
/// matrix is not finite or singular.
const Eigen::PartialPivLU<Eigen::MatrixXd>& dense_factorization(const Eigen::MatrixXd& matrix, const char* what);

struct SparseFactors;

/// A double matrix factored: dense_factorization's LU, or for a large sparse matrix (at least 48
/// rows, at most 15 % nonzeros) SuiteSparse KLU's factors with the symbolic analysis kept per
/// sparsity pattern (src/multibody/sparse_factorization.hpp). Both come from per-thread caches
/// of recent factorizations and stay valid until this thread's next factorization.
class FactoredMatrix {
 public:
  /// Factors `matrix` (or finds it in the caches). Throws like dense_factorization.
  FactoredMatrix(const Eigen::MatrixXd& matrix, const char* what);
  /// Factors a matrix assembled sparse: KLU from its compressed form if it has at least
  /// kSparseMinSize (48) rows, otherwise the dense LU of its dense form (faster when small).
  FactoredMatrix(const Eigen::SparseMatrix<double, Eigen::RowMajor, int>& matrix, const char* what);
  /// X = A^-1 B.
  Eigen::MatrixXd solve(const Eigen::MatrixXd& rhs) const;

 private:
  const char* what_;
  const SparseFactors* sparse_ = nullptr;
  const Eigen::PartialPivLU<Eigen::MatrixXd>* dense_ = nullptr;
};

/// Largest |real part| of the entries; throws ModelError naming `what` on a non-finite entry.
template <class S>
double largest_finite_entry(const DenseMatrix<S>& matrix, const char* what) {
  double largest = 0.0;
  bool finite = true;
  for (Eigen::Index j = 0; j < matrix.cols(); ++j) {
    for (Eigen::Index i = 0; i < matrix.rows(); ++i) {
      const double entry = real_part(matrix(i, j));
      finite = finite && std::isfinite(entry);
      largest = std::max(largest, std::abs(entry));
    }
  }
  if (!finite) {
    throw ModelError(fmt::format("the {} has non-finite entries: the state it was evaluated at is not finite "
                                 "(an overflow of the integration?)",
                                 what));
  }
  return largest;
}

[[noreturn]] void throw_singular(const char* what, double pivot, Eigen::Index column, Eigen::Index n, double largest);

/// Gaussian elimination with partial pivoting on the real parts, in the scalar type S.
template <class S, class Rhs>
DenseMatrix<S> eliminate_dense(const DenseMatrix<S>& matrix, const Rhs& rhs, const char* what) {
  using std::abs;
  DenseMatrix<S> A = matrix;
  DenseMatrix<S> B = rhs;
  const Eigen::Index n = A.rows();
  const double largest = largest_finite_entry<S>(A, what);
  for (Eigen::Index k = 0; k < n; ++k) {
    Eigen::Index pivot = k;
    for (Eigen::Index i = k + 1; i < n; ++i) {
      if (std::abs(real_part(A(i, k))) > std::abs(real_part(A(pivot, k)))) pivot = i;
    }
    const double size = std::abs(real_part(A(pivot, k)));
    if (!(size > 1e-13 * largest)) throw_singular(what, size, k, n, largest);
    if (pivot != k) {
      A.row(k).swap(A.row(pivot));
      B.row(k).swap(B.row(pivot));
    }
    for (Eigen::Index i = k + 1; i < n; ++i) {
      const S factor = A(i, k) / A(k, k);
      for (Eigen::Index j = k + 1; j < n; ++j) A(i, j) -= factor * A(k, j);
      for (Eigen::Index j = 0; j < B.cols(); ++j) B(i, j) -= factor * B(k, j);
    }
  }
  for (Eigen::Index k = n - 1; k >= 0; --k) {
    for (Eigen::Index j = 0; j < B.cols(); ++j) {
      S sum = B(k, j);
      for (Eigen::Index i = k + 1; i < n; ++i) sum -= A(k, i) * B(i, j);
      B(k, j) = sum / A(k, k);
    }
  }
  return B;
}

/// One part of every entry of a matrix of duals (`part`: the value or the tangent), as the
/// matching double matrix. A compressed sparse matrix keeps its pattern: the index arrays are
/// copied, not re-inserted entry by entry (Eigen's sparse unaryExpr assignment, which cost the
/// 64-rod chain's forward sensitivities 7 % of their time).
template <class RealMatrix, class Matrix, class Part>
RealMatrix dual_part(const Matrix& matrix, Part part) {
  if constexpr (std::is_base_of_v<Eigen::SparseMatrixBase<Matrix>, Matrix>) {
    // The index arrays mean the same only in the same storage order and index type.
    static_assert(static_cast<bool>(Matrix::IsRowMajor) == static_cast<bool>(RealMatrix::IsRowMajor) &&
                      std::is_same_v<typename Matrix::StorageIndex, typename RealMatrix::StorageIndex>,
                  "dual_part: the double matrix must have the dual matrix's storage order and index type");
    if (matrix.isCompressed()) {
      RealMatrix out(matrix.rows(), matrix.cols());
      const Eigen::Index nonzeros = matrix.nonZeros();
      out.resizeNonZeros(nonzeros);
      std::copy_n(matrix.outerIndexPtr(), matrix.outerSize() + 1, out.outerIndexPtr());
      std::copy_n(matrix.innerIndexPtr(), nonzeros, out.innerIndexPtr());
      std::transform(matrix.valuePtr(), matrix.valuePtr() + nonzeros, out.valuePtr(), part);
      return out;
    }
  }
  return matrix.unaryExpr(part);
}

/// X and its tangents from the double factorization of A's values (see the file comment), for a
/// dense A or one assembled sparse (RealMatrix: the matching double type; each tangent residual
/// B' - A' X then costs O(nnz)), in a Dual or a DualBlock: one solve for every direction and
/// column at once.
template <class RealMatrix, class Matrix, class Rhs>
DenseMatrix<typename Matrix::Scalar> solve_dual(const Matrix& matrix, const Rhs& rhs, const char* what) {
  using D = typename Matrix::Scalar;
  constexpr int directions = D::DIMENSION;
  const DenseMatrix<D> B = rhs;
  const Eigen::Index rows = B.rows(), cols = B.cols();
  const RealMatrix A_value = dual_part<RealMatrix>(matrix, [](const D& d) { return d.a; });
  const FactoredMatrix factored(A_value, what);
  const Eigen::MatrixXd X_value = factored.solve(Eigen::MatrixXd(B.unaryExpr([](const D& d) { return d.a; })));
  // Direction k's residual in columns k * cols ... (k + 1) * cols - 1.
  Eigen::MatrixXd residuals(rows, directions * cols);
  for (int k = 0; k < directions; ++k) residuals.middleCols(k * cols, cols) = B.unaryExpr([k](const D& d) { return d.v[k]; });
  if constexpr (std::is_base_of_v<Eigen::SparseMatrixBase<Matrix>, Matrix>) {
    // Every direction from one pass over the stored entries: a double copy of A' per direction
    // cost an allocation and a copy of the pattern each.
    for (Eigen::Index outer = 0; outer < matrix.outerSize(); ++outer) {
      for (typename Matrix::InnerIterator it(matrix, outer); it; ++it) {
        const D& entry = it.value();
        for (Eigen::Index j = 0; j < cols; ++j) {
          const double x = X_value(it.col(), j);
          for (int k = 0; k < directions; ++k) residuals(it.row(), k * cols + j) -= entry.v[k] * x;
        }
      }
    }
  } else {
    for (int k = 0; k < directions; ++k) {
      const RealMatrix A_tangent = dual_part<RealMatrix>(matrix, [k](const D& d) { return d.v[k]; });
      residuals.middleCols(k * cols, cols).noalias() -= A_tangent * X_value;
    }
  }
  const Eigen::MatrixXd X_tangent = factored.solve(residuals);
  DenseMatrix<D> X(rows, cols);
  for (Eigen::Index j = 0; j < cols; ++j) {
    for (Eigen::Index i = 0; i < rows; ++i) {
      D& x = X(i, j);
      x.a = X_value(i, j);
      for (int k = 0; k < directions; ++k) x.v[k] = X_tangent(i, k * cols + j);
    }
  }
  return X;
}

/// X = A^-1 B recorded on the reverse tape as one operation (src/multibody/recorded_solve.hpp):
/// the values from the dense LU of A's values (the factorization cache's, which the tape keeps
/// for its sweeps); a sweep costs one transposed dense solve per column and the entries of A on
/// the tape. A small matrix assembled sparse comes here with its stored entries.
DenseMatrix<Reverse> record_dense_solve(const DenseMatrix<Reverse>& matrix, const DenseMatrix<Reverse>& rhs,
                                        const char* what);
DenseMatrix<Reverse> record_dense_solve(const Eigen::SparseMatrix<Reverse, Eigen::RowMajor, int>& matrix,
                                        const DenseMatrix<Reverse>& rhs, const char* what);

/// X = A^-1 B recorded on the reverse tape as one operation (ReverseOperation): the values from
/// KLU's factors of A's values, which the tape keeps for its sweeps; a sweep costs one transposed
/// sparse solve and O(nnz(A)) (src/multibody/sparse_factorization.cpp).
DenseMatrix<Reverse> record_sparse_solve(const Eigen::SparseMatrix<Reverse, Eigen::RowMajor, int>& matrix,
                                         const DenseMatrix<Reverse>& rhs, const char* what);

/// X = A^-1 B for a large matrix A assembled sparse, in complex arithmetic throughout (Eigen's
/// supernodal sparse LU with COLAMD ordering, pivoting on the largest magnitude): the complex
/// step's solve, independent of the factor-and-differentiate path of the other scalar types.
/// Throws ModelError naming `what` when A is not square, not finite or singular.
DenseMatrix<Complex> solve_sparse_complex(const Eigen::SparseMatrix<Complex, Eigen::RowMajor, int>& matrix,
                                          const DenseMatrix<Complex>& rhs, const char* what);

}  // namespace detail

/// Solves A X = B for square A (n x n) and B (n x k) in the scalar type S (see the file comment
/// for how each type is solved). Throws ModelError naming `what` when A is not finite or is
/// singular.
template <class S, class Rhs>
DenseMatrix<S> solve_dense(const DenseMatrix<S>& matrix, const Rhs& rhs, const char* what) {
  if constexpr (std::is_same_v<S, double>) {
    return detail::FactoredMatrix(matrix, what).solve(Eigen::MatrixXd(rhs));
  } else if constexpr (std::is_same_v<S, Dual> || std::is_same_v<S, DualBlock>) {
    return detail::solve_dual<Eigen::MatrixXd>(matrix, rhs, what);
  } else if constexpr (std::is_same_v<S, Reverse>) {
    return detail::record_dense_solve(matrix, DenseMatrix<Reverse>(rhs), what);
  } else {
    return detail::eliminate_dense<S>(matrix, rhs, what);
  }
}

/// Solves A X = B for a square A assembled sparse (n x n, compressed rows) and B (n x k) in the
/// scalar type S: double, Dual and DualBlock factor the values sparse (KLU from 48 rows, dense LU below);
/// Reverse records one tape operation (record_sparse_solve from 48 rows, record_dense_solve
/// below); Complex factors sparse in complex arithmetic from 48 rows (solve_sparse_complex);
/// HyperDual, and Complex below 48 rows, eliminate the dense form as solve_dense does. Throws
/// like solve_dense.
template <class S, class Rhs>
DenseMatrix<S> solve_sparse(const Eigen::SparseMatrix<S, Eigen::RowMajor, int>& matrix, const Rhs& rhs,
                            const char* what) {
  if constexpr (std::is_same_v<S, double>) {
    return detail::FactoredMatrix(matrix, what).solve(Eigen::MatrixXd(rhs));
  } else if constexpr (std::is_same_v<S, Dual> || std::is_same_v<S, DualBlock>) {
    return detail::solve_dual<Eigen::SparseMatrix<double, Eigen::RowMajor, int>>(matrix, rhs, what);
  } else if constexpr (std::is_same_v<S, Reverse>) {
    if (matrix.rows() >= kSparseSolveMinRows) return detail::record_sparse_solve(matrix, DenseMatrix<Reverse>(rhs), what);
    return detail::record_dense_solve(matrix, DenseMatrix<Reverse>(rhs), what);
  } else if constexpr (std::is_same_v<S, Complex>) {
    if (matrix.rows() >= kSparseSolveMinRows) return detail::solve_sparse_complex(matrix, DenseMatrix<Complex>(rhs), what);
    return solve_dense<S>(DenseMatrix<S>(matrix), rhs, what);
  } else {
    return solve_dense<S>(DenseMatrix<S>(matrix), rhs, what);
  }
}

}  // namespace saltus::multibody
