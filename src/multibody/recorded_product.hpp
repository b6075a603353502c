#pragma once
// A matrix product C = A B recorded on the reverse tape as one operation (ReverseOperation)
// rather than as one node per scalar multiply and add: the recording notes A's entries (with
// their tape terms), B's values and terms; a sweep reads C-bar from the outputs' adjoints and
// adds A-bar_ij = C-bar_i. . B_j. to A's entries on the tape and B-bar = A^T C-bar to B's.
// The Maggi formulation's reduced mass matrix R^T (M R) of the vehicle (63 coordinates, 14
// independent ones) was about 24,000 of the 31,000 nodes of each right-hand side's recording,
// and every adjoint product swept them all. A mostly on the tape and not tiny (R^T there) is held
// dense, and a sweep forms A-bar = C-bar B^T as one dense product.
#include <saltus/core/reverse_scalar.hpp>
#include <saltus/multibody/dense_solve.hpp>

#include <Eigen/Core>

#include <cstdint>
#include <vector>

namespace saltus::multibody::detail {

/// A's entries: (row, column, value), repeated entries summed, in any order.
struct ProductEntry {
  int row, col;
  Reverse value;
};

/// C = A B with A (`rows` x B.rows()) given by its entries and B dense: one operation on the
/// current thread's tape, C's entries its output nodes. Throws std::invalid_argument on an entry
/// outside A.
DenseMatrix<Reverse> recorded_product(int rows, const std::vector<ProductEntry>& a, const DenseMatrix<Reverse>& b);

/// The entries of A = a^T, for C = a^T B.
std::vector<ProductEntry> transposed_entries(const DenseMatrix<Reverse>& a);

}  // namespace saltus::multibody::detail
