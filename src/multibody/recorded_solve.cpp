// A linear solve recorded on the reverse tape as one operation: recorded_solve.hpp.
#include "recorded_solve.hpp"

#include <utility>

namespace saltus::multibody::detail {

void RecordedSolve::backward(std::vector<double>& adjoint, int columns) const {
  // X = A^-1 B for each of the sweep's columns c: B-bar = A^-T X-bar, A-bar = -B-bar X^T, every
  // column's X-bar solved at once (bar's column c k + j).
  const Eigen::Index n = values_.rows(), k = values_.cols();
  const auto at = [columns](std::int32_t node, Eigen::Index c) { return adjoint_slot(node, c, columns); };
  const bool any = gather_output_adjoints(adjoint, columns, first_output_, n, k,
                                          [n](Eigen::Index i, Eigen::Index j) { return j * n + i; }, bar_);
  if (!any) return;
  solve_transposed(bar_);  // now B-bar
  for (Eigen::Index c = 0; c < columns; ++c) {
    for (Eigen::Index j = 0; j < k; ++j) {
      for (Eigen::Index i = 0; i < n; ++i) {
        const Term& b = rhs_terms_[static_cast<size_t>(j * n + i)];
        if (b.node >= 0) adjoint[at(b.node, c)] += b.coefficient * bar_(i, c * k + j);
      }
    }
  }
  for (const MatrixEntry& e : matrix_entries_) {
    for (Eigen::Index c = 0; c < columns; ++c) {
      double sum = 0.0;
      for (Eigen::Index j = 0; j < k; ++j) sum += bar_(e.row, c * k + j) * values_(e.col, j);
      adjoint[at(e.node, c)] -= e.coefficient * sum;
    }
  }
}

void RecordedSolve::note_matrix_entries(const DenseMatrix<Reverse>& a) {
  matrix_entries_.reserve(static_cast<size_t>(a.size()));
  for (Eigen::Index j = 0; j < a.cols(); ++j) {
    for (Eigen::Index i = 0; i < a.rows(); ++i) note_matrix_entry(static_cast<int>(i), static_cast<int>(j), a(i, j));
  }
}

void RecordedSolve::note_matrix_entries(const Eigen::SparseMatrix<Reverse, Eigen::RowMajor, int>& a) {
  matrix_entries_.reserve(static_cast<size_t>(a.nonZeros()));
  for (int i = 0; i < a.outerSize(); ++i) {
    for (Eigen::SparseMatrix<Reverse, Eigen::RowMajor, int>::InnerIterator it(a, i); it; ++it) {
      note_matrix_entry(i, static_cast<int>(it.col()), it.value());
    }
  }
}

DenseMatrix<Reverse> push_recorded_solve(std::unique_ptr<RecordedSolve> operation, const DenseMatrix<Reverse>& rhs,
                                         Eigen::MatrixXd values) {
  const Eigen::Index n = rhs.rows(), k = rhs.cols();
  RecordedSolve& recorded = *operation;
  recorded.rhs_terms_.resize(static_cast<size_t>(n * k));
  for (Eigen::Index j = 0; j < k; ++j) {
    for (Eigen::Index i = 0; i < n; ++i) {
      recorded.rhs_terms_[static_cast<size_t>(j * n + i)] = {rhs(i, j).node(), rhs(i, j).coefficient()};
    }
  }
  recorded.values_ = std::move(values);
  const std::int32_t first = ReverseTape::push_operation(std::move(operation), static_cast<std::int32_t>(n * k));
  recorded.first_output_ = first;
  DenseMatrix<Reverse> X(n, k);
  for (Eigen::Index j = 0; j < k; ++j) {
    for (Eigen::Index i = 0; i < n; ++i) {
      X(i, j) = Reverse::output(recorded.values_(i, j), first + static_cast<std::int32_t>(j * n + i));
    }
  }
  return X;
}

}  // namespace saltus::multibody::detail
