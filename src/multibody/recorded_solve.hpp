#pragma once
// A linear solve X = A^-1 B recorded on the reverse tape as one operation (ReverseOperation)
// rather than as the scalar operations of an elimination or of triangular solves: the recording
// notes A's entries that are on the tape, B's terms and X's values; a sweep seeds X-bar from the
// outputs' adjoints, solves B-bar = A^-T X-bar once with the factors kept from the recording,
// and adds A-bar = -B-bar X^T to the noted entries of A. The factorization behind it (KLU's,
// sparse_factorization.cpp; or the dense LU, dense_solve.cpp) supplies the transposed solve.
#include <saltus/core/reverse_scalar.hpp>
#include <saltus/multibody/dense_solve.hpp>

#include "operation_adjoints.hpp"

#include <Eigen/Core>

#include <cstdint>
#include <memory>
#include <vector>

namespace saltus::multibody::detail {

class RecordedSolve : public ReverseOperation {
 public:
  void backward(std::vector<double>& adjoint, int columns) const final;

  /// Notes A's entries that are on the tape (a constant has no adjoint): every entry of a dense
  /// A, the stored ones of a sparse A.
  void note_matrix_entries(const DenseMatrix<Reverse>& a);
  void note_matrix_entries(const Eigen::SparseMatrix<Reverse, Eigen::RowMajor, int>& a);

 protected:
  /// bar <- A^-T bar (n x m), with the factors kept from the recording.
  virtual void solve_transposed(Eigen::MatrixXd& bar) const = 0;

 private:
  void note_matrix_entry(int row, int col, const Reverse& a) {
    if (!a.is_constant()) matrix_entries_.push_back({row, col, a.node(), a.coefficient()});
  }
  friend DenseMatrix<Reverse> push_recorded_solve(std::unique_ptr<RecordedSolve> operation,
                                                  const DenseMatrix<Reverse>& rhs, Eigen::MatrixXd values);
  using Term = InputTerm;  ///< B's entries
  struct MatrixEntry {
    int row, col;
    std::int32_t node;
    double coefficient;
  };
  std::vector<MatrixEntry> matrix_entries_;  ///< A's entries that are on the tape
  std::vector<Term> rhs_terms_;              ///< B's entries, column-major (node -1: constant)
  Eigen::MatrixXd values_;                   ///< X
  std::int32_t first_output_ = 0;
  mutable Eigen::MatrixXd bar_;  // the outputs' adjoints, then B-bar (the tape is one thread's)
};

/// Pushes `operation` (A's entries noted) on the tape with B = `rhs` and X's values `values`
/// (computed by the caller with the operation's factors), and returns X as its output nodes.
DenseMatrix<Reverse> push_recorded_solve(std::unique_ptr<RecordedSolve> operation, const DenseMatrix<Reverse>& rhs,
                                         Eigen::MatrixXd values);

}  // namespace saltus::multibody::detail
