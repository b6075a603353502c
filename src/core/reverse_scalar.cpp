#include <saltus/core/reverse_scalar.hpp>

#include <algorithm>
#include <limits>
#include <stdexcept>

namespace saltus {

namespace detail {
constinit thread_local ReverseTapeCursor reverse_tape_cursor __attribute__((tls_model("initial-exec")));
}  // namespace detail

namespace {
/// The nodes behind detail::reverse_tape_cursor; at the thread's exit the cursor is reset with
/// them, so that nothing writes through it into freed memory.
struct TapeStorage {
  std::vector<ReverseTape::Node> nodes;
  ~TapeStorage() { detail::reverse_tape_cursor = {}; }
};
thread_local TapeStorage tape_storage;
thread_local std::vector<std::unique_ptr<ReverseOperation>> tape_operations;
thread_local long tape_generation = 0;
}  // namespace

void ReverseTape::grow() {
  detail::ReverseTapeCursor& cursor = detail::reverse_tape_cursor;
  constexpr auto kMost = static_cast<size_t>(std::numeric_limits<std::int32_t>::max());  // node indices are int32
  std::vector<ReverseTape::Node>& nodes = tape_storage.nodes;
  if (nodes.size() >= kMost) throw std::length_error("the reverse tape outgrew 2^31 - 1 nodes");
  nodes.resize(std::min(kMost, std::max<size_t>(1024, 2 * nodes.size())));
  cursor.nodes = nodes.data();
  cursor.capacity = static_cast<std::int32_t>(nodes.size());
}

void ReverseTape::clear() {
  detail::reverse_tape_cursor.size = 0;  // keeps the storage: recordings of one size do not allocate
  tape_operations.clear();
  ++tape_generation;
}

long ReverseTape::generation() { return tape_generation; }

std::int32_t ReverseTape::push_operation(std::unique_ptr<ReverseOperation> operation, std::int32_t outputs) {
  const auto index = static_cast<std::int32_t>(tape_operations.size());
  tape_operations.push_back(std::move(operation));
  const std::int32_t first = size();
  for (std::int32_t k = 0; k < outputs; ++k) push(kOperationOutput, k + 1 == outputs ? 1.0 : 0.0, index, 0.0);
  return first;
}

namespace {

/// The sweep for `Columns` adjoint vectors known at compile time (0: `columns` at run time), so
/// that the usual one to four columns (one per cost) run as unrolled loops: the backward Newton
/// products of the DAE adjoints are such sweeps, about a third of the vehicle's ggl adjoint.
template <int Columns>
void sweep_columns(std::vector<double>& adjoint, int columns) {
  const ReverseTape::Node* node = ReverseTape::data();
  const size_t m = Columns > 0 ? static_cast<size_t>(Columns) : static_cast<size_t>(columns);
  for (std::int32_t i = ReverseTape::size() - 1; i >= 0; --i) {
    const ReverseTape::Node& n = node[i];
    if (n.a == ReverseTape::kOperationOutput) {
      // The operation's outputs are consecutive and all their uses come after them: at its
      // last output every output's adjoint is complete.
      if (n.da != 0.0) tape_operations[static_cast<size_t>(n.b)]->backward(adjoint, columns);
      continue;
    }
    double* adj = adjoint.data();  // an operation's backward may not move it, but reread it anyway
    const double* a = adj + static_cast<size_t>(i) * m;
    bool any = false;
    for (size_t c = 0; c < m; ++c) any |= a[c] != 0.0;
    if (!any) continue;
    if (n.a >= 0) {
      double* to = adj + static_cast<size_t>(n.a) * m;
      for (size_t c = 0; c < m; ++c) to[c] += n.da * a[c];
    }
    if (n.b >= 0) {
      double* to = adj + static_cast<size_t>(n.b) * m;
      for (size_t c = 0; c < m; ++c) to[c] += n.db * a[c];
    }
  }
}

}  // namespace

void ReverseTape::sweep(std::vector<double>& adjoint, int columns) {
  switch (columns) {
    case 1: return sweep_columns<1>(adjoint, columns);
    case 2: return sweep_columns<2>(adjoint, columns);
    case 3: return sweep_columns<3>(adjoint, columns);
    case 4: return sweep_columns<4>(adjoint, columns);
    default: return sweep_columns<0>(adjoint, columns);
  }
}

}  // namespace saltus
