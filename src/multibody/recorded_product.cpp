// A matrix product recorded on the reverse tape as one operation: recorded_product.hpp.
#include "recorded_product.hpp"

#include "operation_adjoints.hpp"

#include <Eigen/SparseCore>
#include <fmt/format.h>

#include <limits>
#include <memory>
#include <stdexcept>

namespace saltus::multibody::detail {

namespace {

using Term = InputTerm;

using RowMajorMatrix = Eigen::Matrix<double, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;

/// Entries of A from which a sweep forms A-bar as a dense product (RecordedProduct).
constexpr size_t kDenseMinEntries = 256;

class RecordedProduct final : public ReverseOperation {
 public:
  RecordedProduct(int rows, const std::vector<ProductEntry>& a, const DenseMatrix<Reverse>& b)
      : rows_(rows), b_values_(b.rows(), b.cols()) {
    for (const ProductEntry& e : a) {
      if (e.row < 0 || e.row >= rows || e.col < 0 || e.col >= b.rows()) {
        throw std::invalid_argument(fmt::format("recorded_product: entry ({}, {}) outside A, {} x {}", e.row, e.col,
                                                rows, b.rows()));
      }
      if (!e.value.is_constant()) a_terms_.push_back({e.row, e.col, {e.value.node(), e.value.coefficient()}});
    }
    // A mostly on the tape (R^T in the Maggi form's R^T (M R)) and not tiny: A is held dense and
    // the sweep forms A-bar as one dense product (dense_a_adjoints). Below kDenseMinEntries
    // (fivebar_floor's 2 x 10 R^T) the dense products' set-up costs more than they save.
    const size_t size = static_cast<size_t>(rows) * static_cast<size_t>(b.rows());
    if (size >= kDenseMinEntries && 4 * a_terms_.size() >= size) {
      a_dense_ = RowMajorMatrix::Zero(rows, b.rows());
      for (const ProductEntry& e : a) a_dense_(e.row, e.col) += e.value.value();  // repeated entries summed
    } else {
      std::vector<Eigen::Triplet<double, int>> entries;
      entries.reserve(a.size());
      for (const ProductEntry& e : a) entries.emplace_back(e.row, e.col, e.value.value());
      a_values_.resize(rows, b.rows());
      a_values_.setFromTriplets(entries.begin(), entries.end());  // repeated entries summed
    }
    b_terms_.resize(static_cast<size_t>(b.size()));
    for (Eigen::Index i = 0; i < b.rows(); ++i) {
      for (Eigen::Index j = 0; j < b.cols(); ++j) {
        b_values_(i, j) = b(i, j).value();
        b_terms_[static_cast<size_t>(i * b.cols() + j)] = {b(i, j).node(), b(i, j).coefficient()};
      }
    }
  }

  /// C's values (its output nodes row by row).
  RowMajorMatrix values() const {
    if (dense()) return a_dense_ * b_values_;
    return a_values_ * b_values_;
  }

  /// For every sweep column at once (side by side in C-bar): B-bar = A^T C-bar as one sparse
  /// product (dense where A is held dense), then A-bar_ik = C-bar_i. B_k. for A's entries on the
  /// tape: each a run over one row of each (an entry at a time through Eigen's row expressions,
  /// the vehicle's maggi adjoint spent 12 % here; a dense A^T C-bar for its 63 x 63 mass
  /// matrix, more), or where A is held dense all of A-bar as one dense product.
  void backward(std::vector<double>& adjoint, int columns) const override {
    const Eigen::Index rows = rows_, inner = b_values_.rows(), width = b_values_.cols();
    const auto at = [columns](std::int32_t node, Eigen::Index c) { return adjoint_slot(node, c, columns); };
    const bool any = gather_output_adjoints(
        adjoint, columns, first_output_, rows, width, [width](Eigen::Index i, Eigen::Index j) { return i * width + j; },
        c_bar_);
    if (!any) return;
    if (dense()) {
      b_bar_.noalias() = a_dense_.transpose() * c_bar_;
    } else {
      b_bar_.noalias() = a_values_.transpose() * c_bar_;
    }
    for (Eigen::Index i = 0; i < inner; ++i) {
      for (Eigen::Index j = 0; j < width; ++j) {
        const Term& t = b_terms_[static_cast<size_t>(i * width + j)];
        if (t.node < 0) continue;
        for (Eigen::Index c = 0; c < columns; ++c) adjoint[at(t.node, c)] += t.coefficient * b_bar_(i, c * width + j);
      }
    }
    if (dense()) {
      dense_a_adjoints(adjoint, columns);
      return;
    }
    for (const ATerm& e : a_terms_) {
      const double* b_row = b_values_.data() + e.col * width;
      const double* c_row = c_bar_.data() + e.row * width * columns;
      for (Eigen::Index c = 0; c < columns; ++c) {
        double sum = 0.0;
        for (Eigen::Index j = 0; j < width; ++j) sum += c_row[c * width + j] * b_row[j];
        adjoint[at(e.term.node, c)] += e.term.coefficient * sum;
      }
    }
  }

  void set_first_output(std::int32_t first) { first_output_ = first; }

 private:
  /// A is held dense (a_dense_) rather than sparse (a_values_).
  bool dense() const { return a_dense_.size() > 0; }

  /// A-bar = C-bar B^T per sweep column as one dense product, then each of A's tape entries
  /// takes its entry. Entry by entry (a dot product of a row of C-bar with a row of B each, a
  /// chain of dependent additions), R^T's 2,048 entries in the 32-rod chain's Maggi form took a
  /// third of its adjoint.
  void dense_a_adjoints(std::vector<double>& adjoint, int columns) const {
    const Eigen::Index rows = a_dense_.rows(), inner = a_dense_.cols(), width = b_values_.cols();
    a_bar_.resize(rows, columns * inner);
    for (Eigen::Index c = 0; c < columns; ++c) {
      a_bar_.middleCols(c * inner, inner).noalias() = c_bar_.middleCols(c * width, width) * b_values_.transpose();
    }
    for (const ATerm& e : a_terms_) {
      for (Eigen::Index c = 0; c < columns; ++c) {
        adjoint[adjoint_slot(e.term.node, c, columns)] += e.term.coefficient * a_bar_(e.row, c * inner + e.col);
      }
    }
  }

  /// An entry of A on the tape.
  struct ATerm {
    int row, col;
    Term term;
  };
  Eigen::Index rows_;                                           ///< A's row count
  Eigen::SparseMatrix<double, Eigen::RowMajor, int> a_values_;  ///< A, repeated entries summed (unless dense())
  std::vector<ATerm> a_terms_;                                  ///< A's entries on the tape
  RowMajorMatrix b_values_;
  std::vector<Term> b_terms_;  ///< row-major
  std::int32_t first_output_ = 0;
  RowMajorMatrix a_dense_;  ///< A, where held dense (else empty)
  mutable RowMajorMatrix c_bar_, b_bar_, a_bar_;  // scratch of the sweep (the tape is one thread's)
};

}  // namespace

DenseMatrix<Reverse> recorded_product(int rows, const std::vector<ProductEntry>& a, const DenseMatrix<Reverse>& b) {
  const long long outputs = static_cast<long long>(rows) * static_cast<long long>(b.cols());
  if (rows < 0 || outputs > std::numeric_limits<std::int32_t>::max() - static_cast<long long>(ReverseTape::size())) {
    throw std::invalid_argument(fmt::format("recorded_product: {} x {} outputs do not fit the tape ({} nodes)", rows,
                                            b.cols(), ReverseTape::size()));
  }
  auto operation = std::make_unique<RecordedProduct>(rows, a, b);
  const RowMajorMatrix values = operation->values();
  RecordedProduct& recorded = *operation;
  const Eigen::Index width = b.cols();
  const std::int32_t first =
      ReverseTape::push_operation(std::move(operation), static_cast<std::int32_t>(rows * width));
  recorded.set_first_output(first);
  DenseMatrix<Reverse> c(rows, width);
  for (Eigen::Index i = 0; i < rows; ++i) {
    for (Eigen::Index j = 0; j < width; ++j) {
      c(i, j) = Reverse::output(values(i, j), first + static_cast<std::int32_t>(i * width + j));
    }
  }
  return c;
}

std::vector<ProductEntry> transposed_entries(const DenseMatrix<Reverse>& a) {
  std::vector<ProductEntry> entries;
  entries.reserve(static_cast<size_t>(a.size()));
  for (Eigen::Index i = 0; i < a.rows(); ++i) {
    for (Eigen::Index j = 0; j < a.cols(); ++j) entries.push_back({static_cast<int>(j), static_cast<int>(i), a(i, j)});
  }
  return entries;
}

}  // namespace saltus::multibody::detail
