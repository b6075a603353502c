// Sparse Jacobians by probing and column colouring: sparse_columns.hpp.
#include <saltus/derivatives/sparse_columns.hpp>

#include <saltus/core/error.hpp>

#include <fmt/format.h>

#include <algorithm>
#include <exception>
#include <iterator>
#include <utility>

namespace saltus {

namespace {

/// Column j of probe's Jacobian in `column`; false if the probe threw or the column is not finite.
bool try_column(const JacobianProduct& probe, Eigen::VectorXd& direction, Eigen::VectorXd& column) {
  try {
    probe(direction, column);
  } catch (const std::exception&) {
    return false;
  }
  return column.allFinite();
}

}  // namespace

SparsePattern probe_pattern(int rows, int cols, const std::vector<JacobianProduct>& probes) {
  if (probes.empty()) throw Error("probe_pattern: no probe");
  SparsePattern pattern;
  pattern.rows = rows;
  pattern.cols = cols;
  pattern.starts.reserve(static_cast<size_t>(cols) + 1);
  pattern.starts.push_back(0);
  Eigen::VectorXd direction = Eigen::VectorXd::Zero(cols), column(rows);
  std::vector<char> nonzero(static_cast<size_t>(rows));
  for (int j = 0; j < cols; ++j) {
    direction[j] = 1.0;
    std::fill(nonzero.begin(), nonzero.end(), 0);
    bool any = false;
    for (const JacobianProduct& probe : probes) {
      if (!try_column(probe, direction, column)) continue;
      any = true;
      for (int i = 0; i < rows; ++i) nonzero[static_cast<size_t>(i)] |= column[i] != 0.0;
    }
    if (!any) {
      probes.front()(direction, column);  // its exception names the problem
      throw SolverError(fmt::format("the Jacobian's column {} is not finite at any probe point", j));
    }
    direction[j] = 0.0;
    for (int i = 0; i < rows; ++i) {
      if (nonzero[static_cast<size_t>(i)]) pattern.indices.push_back(i);
    }
    pattern.starts.push_back(static_cast<int>(pattern.indices.size()));
  }
  return pattern;
}

SparsePattern merge_patterns(const SparsePattern& a, const SparsePattern& b) {
  if (a.rows != b.rows || a.cols != b.cols) {
    throw Error(fmt::format("merge_patterns: a {} x {} pattern and a {} x {} one", a.rows, a.cols, b.rows, b.cols));
  }
  SparsePattern out;
  out.rows = a.rows;
  out.cols = a.cols;
  out.starts.reserve(static_cast<size_t>(a.cols) + 1);
  out.starts.push_back(0);
  for (int j = 0; j < a.cols; ++j) {
    const auto a_begin = a.indices.begin() + a.starts[static_cast<size_t>(j)];
    const auto a_end = a.indices.begin() + a.starts[static_cast<size_t>(j) + 1];
    const auto b_begin = b.indices.begin() + b.starts[static_cast<size_t>(j)];
    const auto b_end = b.indices.begin() + b.starts[static_cast<size_t>(j) + 1];
    std::set_union(a_begin, a_end, b_begin, b_end, std::back_inserter(out.indices));
    out.starts.push_back(static_cast<int>(out.indices.size()));
  }
  return out;
}

ColumnGroups colour_columns(const SparsePattern& pattern) {
  // The pattern by rows (which columns each row touches), to find a column's neighbours.
  std::vector<int> row_starts(static_cast<size_t>(pattern.rows) + 1, 0);
  for (int row : pattern.indices) ++row_starts[static_cast<size_t>(row) + 1];
  for (int i = 0; i < pattern.rows; ++i) row_starts[static_cast<size_t>(i) + 1] += row_starts[static_cast<size_t>(i)];
  std::vector<int> row_columns(pattern.indices.size());
  std::vector<int> fill(row_starts.begin(), row_starts.end() - 1);
  for (int j = 0; j < pattern.cols; ++j) {
    for (int e = pattern.starts[static_cast<size_t>(j)]; e < pattern.starts[static_cast<size_t>(j) + 1]; ++e) {
      row_columns[static_cast<size_t>(fill[static_cast<size_t>(pattern.indices[static_cast<size_t>(e)])]++)] = j;
    }
  }
  // Greedy: the lowest colour no neighbour coloured before j has. forbidden[c] == j marks c.
  std::vector<int> colour(static_cast<size_t>(pattern.cols), -1);
  std::vector<int> forbidden(static_cast<size_t>(pattern.cols) + 1, -1);
  int colours = 0;
  for (int j = 0; j < pattern.cols; ++j) {
    for (int e = pattern.starts[static_cast<size_t>(j)]; e < pattern.starts[static_cast<size_t>(j) + 1]; ++e) {
      const auto row = static_cast<size_t>(pattern.indices[static_cast<size_t>(e)]);
      for (int k = row_starts[row]; k < row_starts[row + 1]; ++k) {
        const int c = colour[static_cast<size_t>(row_columns[static_cast<size_t>(k)])];
        if (c >= 0) forbidden[static_cast<size_t>(c)] = j;
      }
    }
    int c = 0;
    while (forbidden[static_cast<size_t>(c)] == j) ++c;
    colour[static_cast<size_t>(j)] = c;
    colours = std::max(colours, c + 1);
  }
  ColumnGroups groups;
  groups.starts.assign(static_cast<size_t>(colours) + 1, 0);
  for (int c : colour) ++groups.starts[static_cast<size_t>(c) + 1];
  for (int g = 0; g < colours; ++g) groups.starts[static_cast<size_t>(g) + 1] += groups.starts[static_cast<size_t>(g)];
  groups.columns.resize(static_cast<size_t>(pattern.cols));
  std::vector<int> next(groups.starts.begin(), groups.starts.end() - 1);
  for (int j = 0; j < pattern.cols; ++j) {
    groups.columns[static_cast<size_t>(next[static_cast<size_t>(colour[static_cast<size_t>(j)])]++)] = j;
  }
  return groups;
}

ColouredJacobian::ColouredJacobian(SparsePattern pattern)
    : pattern_(std::move(pattern)),
      groups_(colour_columns(pattern_)),
      directions_(Eigen::MatrixXd::Zero(pattern_.cols, groups_.count())),
      products_(Eigen::MatrixXd::Zero(pattern_.rows, groups_.count())) {
  for (int g = 0; g < groups_.count(); ++g) {
    for (int k = groups_.starts[g]; k < groups_.starts[g + 1]; ++k) directions_(groups_.columns[k], g) = 1.0;
  }
}

}  // namespace saltus
