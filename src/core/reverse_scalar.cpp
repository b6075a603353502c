#include <saltus/core/reverse_scalar.hpp>

namespace saltus {

namespace {
thread_local std::vector<ReverseTape::Node> tape_nodes;
thread_local long tape_generation = 0;
}  // namespace

std::vector<ReverseTape::Node>& ReverseTape::nodes() { return tape_nodes; }

void ReverseTape::clear() {
  tape_nodes.clear();  // keeps the capacity: recordings of one size do not allocate
  ++tape_generation;
}

long ReverseTape::generation() { return tape_generation; }

void ReverseTape::sweep(std::vector<double>& adjoint) {
  const Node* node = tape_nodes.data();
  for (std::int32_t i = static_cast<std::int32_t>(tape_nodes.size()) - 1; i >= 0; --i) {
    const double a = adjoint[static_cast<size_t>(i)];
    if (a == 0.0) continue;
    const Node& n = node[i];
    if (n.a >= 0) adjoint[static_cast<size_t>(n.a)] += n.da * a;
    if (n.b >= 0) adjoint[static_cast<size_t>(n.b)] += n.db * a;
  }
}

}  // namespace saltus
