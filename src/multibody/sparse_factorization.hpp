#pragma once
// Sparse LU (SuiteSparse KLU) of the large, sparse matrices of the multibody formulations (a
// chain's KKT matrix [M Phi_q^T; Phi_q 0] has about 7 nonzeros per row whatever its size).
// Matrices assembled sparse (the KKT, impact and penalty matrices, [Phi_q; B]) come here
// directly from their compressed form when they are large (kSparseMinSize rows); a dense matrix
// handed to FactoredMatrix (dense_solve.hpp) comes here when it is large and sparse enough.
// KLU factors the nonzeros in time that grows with them rather than with n^3. The symbolic analysis (ordering) is kept per
// sparsity pattern and reused for every matrix with that pattern; the numeric factorization is
// kept for the last matrices, as the dense path keeps its LU, so that the columns of a Jacobian
// and the parameter directions at one state solve with one factorization.
#include <saltus/multibody/dense_solve.hpp>

#include <Eigen/Core>
#include <Eigen/SparseCore>

#include <memory>

namespace saltus::multibody::detail {

struct SparseFactors;

/// KLU's factors of `matrix` (from this thread's cache, or factored now) when it has at least
/// kSparseMinSize rows and at most kSparseMaxDensity of its entries nonzero; nullptr when it
/// does not. Valid until this thread's next factorization. Throws ModelError naming `what` when
/// A is not finite or is singular (a zero pivot, or KLU's klu_rcond, the smallest over the
/// largest |U_kk| of the scaled matrix, below 1e-13; the dense path compares each pivot with the
/// largest entry instead).
const SparseFactors* sparse_factors(const Eigen::MatrixXd& matrix, const char* what);
/// KLU's factors of a matrix assembled sparse (square; from the cache, or factored now), whatever
/// its size: the caller chose the sparse path. Throws like the dense overload.
/// Shared: the cache keeps them for the next solves; a solve recorded on the reverse tape keeps
/// them until the tape is cleared (record_sparse_solve).
std::shared_ptr<const SparseFactors> sparse_factors(const Eigen::SparseMatrix<double, Eigen::RowMajor, int>& matrix,
                                                    const char* what);
/// X = A^-1 B (B n x k) with the factors; the last two solves with them are remembered by B's
/// bits and not repeated (a tangent's solve_dual solves again for the values that the right-hand
/// side at its point solved).
Eigen::MatrixXd sparse_solve(const SparseFactors& factors, const Eigen::MatrixXd& rhs, const char* what);
inline constexpr Eigen::Index kSparseMinSize = kSparseSolveMinRows;
inline constexpr double kSparseMaxDensity = 0.15;

}  // namespace saltus::multibody::detail
