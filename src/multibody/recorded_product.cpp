// A matrix product recorded on the reverse tape as one operation: recorded_product.hpp.
#include "recorded_product.hpp"

#include <fmt/format.h>

#include <memory>
#include <stdexcept>

namespace saltus::multibody::detail {

namespace {

using RowMajorMatrix = Eigen::Matrix<double, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;

/// An input's node and coefficient (Reverse::coefficient); node -1: a constant.
struct Term {
  std::int32_t node;
  double coefficient;
};

class RecordedProduct final : public ReverseOperation {
 public:
  RecordedProduct(int rows, const std::vector<ProductEntry>& a, const DenseMatrix<Reverse>& b)
      : rows_(rows), b_values_(b.rows(), b.cols()) {
    a_.reserve(a.size());
    for (const ProductEntry& e : a) {
      if (e.row < 0 || e.row >= rows || e.col < 0 || e.col >= b.rows()) {
        throw std::invalid_argument(fmt::format("recorded_product: entry ({}, {}) outside A, {} x {}", e.row, e.col,
                                                rows, b.rows()));
      }
      a_.push_back({e.row, e.col, e.value.value(), {e.value.node(), e.value.coefficient()}});
    }
    b_terms_.resize(static_cast<size_t>(b.size()));
    for (Eigen::Index i = 0; i < b.rows(); ++i) {
      for (Eigen::Index j = 0; j < b.cols(); ++j) {
        b_values_(i, j) = b(i, j).value();
        b_terms_[static_cast<size_t>(i * b.cols() + j)] = {b(i, j).node(), b(i, j).coefficient()};
      }
    }
  }

  /// C's values, rows_ x B.cols(), row-major (its output nodes' order).
  RowMajorMatrix values() const {
    RowMajorMatrix c = RowMajorMatrix::Zero(rows_, b_values_.cols());
    for (const Entry& e : a_) c.row(e.row) += e.value * b_values_.row(e.col);
    return c;
  }

  void backward(std::vector<double>& adjoint, int columns) const override {
    const Eigen::Index width = b_values_.cols();
    const auto m = static_cast<size_t>(columns);
    const auto at = [m](std::int32_t node, int c) { return static_cast<size_t>(node) * m + static_cast<size_t>(c); };
    c_bar_.resize(rows_, width);
    b_bar_.resize(b_values_.rows(), width);
    for (int c = 0; c < columns; ++c) {
      bool any = false;
      for (Eigen::Index i = 0; i < rows_; ++i) {
        for (Eigen::Index j = 0; j < width; ++j) {
          const double v = adjoint[at(first_output_ + static_cast<std::int32_t>(i * width + j), c)];
          c_bar_(i, j) = v;
          any = any || v != 0.0;
        }
      }
      if (!any) continue;
      b_bar_.setZero();
      for (const Entry& e : a_) {
        if (e.term.node >= 0) {
          adjoint[at(e.term.node, c)] += e.term.coefficient * c_bar_.row(e.row).dot(b_values_.row(e.col));
        }
        b_bar_.row(e.col) += e.value * c_bar_.row(e.row);
      }
      for (Eigen::Index i = 0; i < b_bar_.rows(); ++i) {
        for (Eigen::Index j = 0; j < width; ++j) {
          const Term& t = b_terms_[static_cast<size_t>(i * width + j)];
          if (t.node >= 0) adjoint[at(t.node, c)] += t.coefficient * b_bar_(i, j);
        }
      }
    }
  }

  void set_first_output(std::int32_t first) { first_output_ = first; }

 private:
  struct Entry {
    int row, col;
    double value;
    Term term;
  };
  int rows_;
  std::vector<Entry> a_;
  RowMajorMatrix b_values_;
  std::vector<Term> b_terms_;  ///< row-major
  std::int32_t first_output_ = 0;
  mutable RowMajorMatrix c_bar_, b_bar_;  // scratch of the sweep (the tape is one thread's)
};

}  // namespace

DenseMatrix<Reverse> recorded_product(int rows, const std::vector<ProductEntry>& a, const DenseMatrix<Reverse>& b) {
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
