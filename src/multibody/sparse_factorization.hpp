#pragma once
// Sparse LU (SuiteSparse KLU) of the large, sparse matrices of the multibody formulations (a
// chain's KKT matrix [M Phi_q^T; Phi_q 0] has about 7 nonzeros per row whatever its size).
// The formulations still assemble them dense; solve_factored (dense_solve.hpp) hands every
// matrix here first, and when it is large and sparse enough KLU factors its nonzeros in time
// that grows with them rather than with n^3. The symbolic analysis (ordering) is kept per
// sparsity pattern and reused for every matrix with that pattern; the numeric factorization is
// kept for the last matrices, as the dense path keeps its LU, so that the columns of a Jacobian
// and the parameter directions at one state solve with one factorization.
#include <Eigen/Core>

namespace saltus::multibody::detail {

/// X = A^-1 B with KLU (B n x k) when A has at least kSparseMinSize rows and at most
/// kSparseMaxDensity of its entries nonzero; returns false (x untouched) when it does not. Throws
/// ModelError naming `what` when A is not finite or is singular (KLU's reciprocal pivot growth
/// estimate below 1e-13, or a zero pivot).
bool sparse_solve(const Eigen::MatrixXd& matrix, const Eigen::MatrixXd& rhs, const char* what, Eigen::MatrixXd& x);
inline constexpr Eigen::Index kSparseMinSize = 64;
inline constexpr double kSparseMaxDensity = 0.15;

}  // namespace saltus::multibody::detail
