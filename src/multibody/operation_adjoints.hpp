#pragma once
// The adjoints a block operation on the reverse tape (ReverseOperation: the recorded solve and
// product) reads and writes in its backward pass: `columns` sweep columns interleaved, node k's
// adjoint in column c at adjoint[k * columns + c] (ReverseTape::sweep).
#include <Eigen/Core>

#include <cstddef>
#include <cstdint>
#include <vector>

namespace saltus::multibody::detail {

/// An input of an operation: its node and coefficient (Reverse::coefficient); node -1: a constant.
struct InputTerm {
  std::int32_t node;
  double coefficient;
};

/// Where node `node`'s adjoint in sweep column c lies.
inline std::size_t adjoint_slot(std::int32_t node, Eigen::Index c, int columns) {
  return static_cast<std::size_t>(node) * static_cast<std::size_t>(columns) + static_cast<std::size_t>(c);
}

/// Copies the adjoints of an operation's rows x cols outputs (output (i, j) is node first +
/// offset(i, j)) into bar(i, c * cols + j), every sweep column c side by side; returns whether
/// any is nonzero (an operation whose outputs carry no adjoint passes none on).
template <class Matrix, class Offset>
bool gather_output_adjoints(const std::vector<double>& adjoint, int columns, std::int32_t first, Eigen::Index rows,
                            Eigen::Index cols, Offset offset, Matrix& bar) {
  bar.resize(rows, cols * columns);
  bool any = false;
  for (Eigen::Index c = 0; c < columns; ++c) {
    for (Eigen::Index j = 0; j < cols; ++j) {
      for (Eigen::Index i = 0; i < rows; ++i) {
        const double v = adjoint[adjoint_slot(first + static_cast<std::int32_t>(offset(i, j)), c, columns)];
        bar(i, c * cols + j) = v;
        any = any || v != 0.0;
      }
    }
  }
  return any;
}

}  // namespace saltus::multibody::detail
