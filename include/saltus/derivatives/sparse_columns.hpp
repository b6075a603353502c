#pragma once
// Sparse Jacobians from directional derivatives by column colouring (Curtis, Powell and Reid):
// columns that share no row are "structurally orthogonal", so one product J d with d the sum of
// their unit vectors gives all of their entries at once. A Jacobian of n columns then costs one
// product per colour (a handful for a mechanism whose elements couple few coordinates) instead
// of n.
//
// The nonzero pattern is found by probing: one product per column at a few points (the
// caller's, and points moved off it so that entries which vanish there, such as velocity terms
// at rest, show up). An entry the probes miss makes the matrix an approximation: for a Newton
// iteration matrix that costs convergence, never correctness, and the user of a pattern checks
// it with one more product in a random direction (sparse_iteration_matrix.hpp) and probes again
// when it misses something (a contact that became active switches equations).
#include <Eigen/Core>

#include <functional>
#include <vector>

namespace saltus {

/// The nonzero pattern of a rows x cols matrix in compressed columns: the rows of column j are
/// indices[starts[j] .. starts[j+1]), ascending.
struct SparsePattern {
  int rows = 0;
  int cols = 0;
  std::vector<int> starts;   ///< cols + 1 entries
  std::vector<int> indices;  ///< row of each nonzero
  int nonzeros() const { return starts.empty() ? 0 : starts.back(); }
};

/// A product J d: writes J times the direction (cols) into `product` (rows). It may throw; a
/// non-finite product is a failed probe.
using JacobianProduct = std::function<void(const Eigen::VectorXd& direction, Eigen::Ref<Eigen::VectorXd> product)>;

/// The union of the nonzeros of several Jacobians of one shape, one product per column each
/// (probes[k](e_j)). A probe that throws or returns a non-finite product adds nothing; if every
/// probe fails on some column, that failure propagates (the first probe is called again and its
/// exception, or a SolverError for non-finite values, escapes).
SparsePattern probe_pattern(int rows, int cols, const std::vector<JacobianProduct>& probes);

/// The union of two patterns of one shape.
SparsePattern merge_patterns(const SparsePattern& a, const SparsePattern& b);

/// Groups of structurally orthogonal columns of `pattern` (no two columns of one group have a
/// nonzero in the same row), by the greedy colouring in column order: column j takes the lowest
/// colour that none of the columns sharing a row with it has. Every column is in one group.
struct ColumnGroups {
  std::vector<int> starts;   ///< count() + 1 entries
  std::vector<int> columns;  ///< the columns of group g: columns[starts[g] .. starts[g+1])
  int count() const { return starts.empty() ? 0 : static_cast<int>(starts.size()) - 1; }
};
ColumnGroups colour_columns(const SparsePattern& pattern);

/// A Jacobian of known pattern evaluated from one product per colour, all colours in one call
/// (so that products which share work between directions, block tangents, share it). Holds its
/// direction and product matrices, so evaluations do not allocate.
class ColouredJacobian {
 public:
  ColouredJacobian() = default;
  explicit ColouredJacobian(SparsePattern pattern);

  const SparsePattern& pattern() const { return pattern_; }
  int colours() const { return groups_.count(); }

  /// The values of J in pattern order (pattern().nonzeros() entries). `products` is any callable
  /// (const Eigen::MatrixXd& directions, Eigen::Ref<Eigen::MatrixXd> products) writing J times
  /// each column of directions (cols x colours(): column g the sum of colour g's unit vectors)
  /// into the same column of products (rows x colours()).
  template <class Products>
  void evaluate(Products&& products, double* values) {
    products(static_cast<const Eigen::MatrixXd&>(directions_), Eigen::Ref<Eigen::MatrixXd>(products_));
    for (int g = 0; g < groups_.count(); ++g) {
      for (int k = groups_.starts[g]; k < groups_.starts[g + 1]; ++k) {
        const int j = groups_.columns[k];
        for (int e = pattern_.starts[j]; e < pattern_.starts[j + 1]; ++e) values[e] = products_(pattern_.indices[e], g);
      }
    }
  }

 private:
  SparsePattern pattern_;
  ColumnGroups groups_;
  Eigen::MatrixXd directions_, products_;
};

}  // namespace saltus
