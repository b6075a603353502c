#pragma once
// A sparse matrix assembled from a scatter (put(i, j, value) once per contribution; several
// contributions to one entry add) into a pattern kept between calls.
//
// Why: the KKT and penalty matrices of a mechanism have the same pattern at every right-hand
// side, but building them through triplets sorts every contribution and allocates the
// triplets, the matrix and its transposed pieces at each call. On the 64-rod chain's forward
// run that was about 10 % of the time (triplet sort, emplace_back, reallocation) and most of its
// allocations (docs/benchmarks.md, "KKT matrices into a kept pattern"). Here the first call
// records the sequence of (i, j) it was handed and the slot each one lands in; later calls that
// hand the same sequence write straight into the values. A call whose sequence differs (another
// model, another set of active contacts, an impact's extra rows) is detected entry by entry and
// rebuilds the pattern: the result is always the matrix of the contributions handed, never a
// stale one.
#include <saltus/multibody/kinematics.hpp>

#include <algorithm>
#include <array>
#include <cstddef>
#include <utility>
#include <vector>

namespace saltus::multibody::detail {

/// One pattern: the contributions' (row, column) in call order, the value slot each lands in,
/// whether it is the first to land there (it assigns; later ones add: no zeroing pass, and an
/// AD scalar gains no addition of zero), and the matrix whose values are rewritten each call.
template <class S>
class KeptPattern {
 public:
  /// Fills the kept matrix from `scatter` if it hands this pattern's sequence; false (the matrix
  /// then holds partial values) if not.
  template <class Scatter>
  bool refill(Eigen::Index rows, Eigen::Index cols, const Scatter& scatter) {
    if (matrix_.rows() != rows || matrix_.cols() != cols || calls_.empty()) return false;
    S* values = matrix_.valuePtr();
    size_t k = 0;
    bool same = true;
    scatter([&](int i, int j, const S& v) {
      if (!same) return;
      if (k >= calls_.size() || calls_[k].first != i || calls_[k].second != j) {
        same = false;
        return;
      }
      S& entry = values[slots_[k]];
      if (first_[k]) {
        entry = v;
      } else {
        entry += v;
      }
      ++k;
    });
    return same && k == calls_.size();
  }

  /// Records the sequence `scatter` hands, builds its pattern and fills it.
  template <class Scatter>
  void rebuild(Eigen::Index rows, Eigen::Index cols, const Scatter& scatter) {
    calls_.clear();
    scatter([this](int i, int j, const S&) { calls_.emplace_back(i, j); });
    std::vector<std::pair<int, int>> entries = calls_;
    std::sort(entries.begin(), entries.end());
    entries.erase(std::unique(entries.begin(), entries.end()), entries.end());
    matrix_.resize(rows, cols);
    matrix_.resizeNonZeros(static_cast<Eigen::Index>(entries.size()));
    int* starts = matrix_.outerIndexPtr();
    int* columns = matrix_.innerIndexPtr();
    std::fill(starts, starts + rows + 1, 0);
    for (size_t e = 0; e < entries.size(); ++e) {
      ++starts[entries[e].first + 1];
      columns[e] = entries[e].second;
    }
    for (Eigen::Index r = 0; r < rows; ++r) starts[r + 1] += starts[r];
    slots_.resize(calls_.size());
    first_.assign(calls_.size(), false);
    std::vector<bool> taken(entries.size(), false);
    for (size_t k = 0; k < calls_.size(); ++k) {
      const auto at = std::lower_bound(entries.begin(), entries.end(), calls_[k]);
      const auto slot = static_cast<size_t>(at - entries.begin());
      slots_[k] = static_cast<int>(slot);
      first_[k] = !taken[slot];
      taken[slot] = true;
    }
    refill(rows, cols, scatter);
  }

  const SparseMat<S>& matrix() const { return matrix_; }

 private:
  std::vector<std::pair<int, int>> calls_;
  std::vector<int> slots_;
  std::vector<bool> first_;
  SparseMat<S> matrix_;
};

/// A few kept patterns: a run alternates between a handful of structures (the right-hand
/// side's KKT matrix, with and without active contacts; an impact's), each keeps its own.
template <class S>
class PatternedAssembly {
 public:
  /// The rows x cols matrix of the contributions `scatter` hands (called once when a kept
  /// pattern matches, a few times when the structure changed). The reference is valid until
  /// the next call.
  template <class Scatter>
  const SparseMat<S>& assemble(Eigen::Index rows, Eigen::Index cols, const Scatter& scatter) {
    for (size_t k = 0; k < patterns_.size(); ++k) {
      const size_t slot = (last_ + k) % patterns_.size();
      if (patterns_[slot].refill(rows, cols, scatter)) {
        last_ = slot;
        return patterns_[slot].matrix();
      }
    }
    last_ = next_;
    next_ = (next_ + 1) % patterns_.size();
    patterns_[last_].rebuild(rows, cols, scatter);
    return patterns_[last_].matrix();
  }

 private:
  std::array<KeptPattern<S>, 4> patterns_;
  size_t last_ = 0, next_ = 0;
};

/// Call sites with an assembly each.
struct KktAssemblySite {};
struct PenaltyAssemblySite {};

/// This thread's assembly for the scalar type S and the call site `Site` (a tag type): the
/// kept values are a scratch of one call, so threads and problems never share a live one.
template <class S, class Site>
PatternedAssembly<S>& thread_assembly() {
  thread_local PatternedAssembly<S> assembly;
  return assembly;
}

}  // namespace saltus::multibody::detail
