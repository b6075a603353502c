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
#include <cstdint>
#include <memory>
#include <stdexcept>
#include <utility>
#include <vector>

namespace saltus::multibody::detail {

/// One pattern: the contributions' (row, column) in call order, the value slot each lands in,
/// whether it assigns there (the first to land does; later ones add: no zeroing pass, and an AD
/// scalar gains no addition of zero), and the matrix whose values are rewritten each call.
template <class S>
class KeptPattern {
 public:
  /// Fills the kept matrix from `scatter` if it hands this pattern's sequence; false (the matrix
  /// then holds partial values and must not be read) if not.
  template <class Scatter>
  bool refill(Eigen::Index rows, Eigen::Index cols, const Scatter& scatter) {
    if (!built_ || matrix_.rows() != rows || matrix_.cols() != cols) return false;
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
      if (assigns_[k] != 0) {
        entry = v;
      } else {
        entry += v;
      }
      ++k;
    });
    return same && k == calls_.size();
  }

  /// Records the sequence `scatter` hands, builds its pattern and fills it. Throws
  /// std::logic_error for an entry outside rows x cols or a scatter that hands another
  /// sequence when called again (its contributions must be a function of the structure).
  template <class Scatter>
  void rebuild(Eigen::Index rows, Eigen::Index cols, const Scatter& scatter) {
    // Recorded apart: a scatter that throws leaves the kept pattern whole.
    std::vector<std::pair<int, int>> calls;
    scatter([&calls, rows, cols](int i, int j, const S&) {
      if (i < 0 || j < 0 || i >= rows || j >= cols) {
        throw std::logic_error("PatternedAssembly: a contribution outside the matrix");
      }
      calls.emplace_back(i, j);
    });
    built_ = false;  // until the pattern matches calls_ again (build_pattern may throw bad_alloc)
    calls_ = std::move(calls);
    build_pattern(rows, cols);
    built_ = true;
    if (!refill(rows, cols, scatter)) {
      throw std::logic_error("PatternedAssembly: the scatter handed another sequence when called again");
    }
  }

  const SparseMat<S>& matrix() const { return matrix_; }

 private:
  /// The matrix's compressed rows for the distinct entries of calls_, and each call's slot.
  void build_pattern(Eigen::Index rows, Eigen::Index cols) {
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
    assigns_.assign(calls_.size(), 0);
    std::vector<char> taken(entries.size(), 0);
    for (size_t k = 0; k < calls_.size(); ++k) {
      const auto at = std::lower_bound(entries.begin(), entries.end(), calls_[k]);
      const auto slot = static_cast<size_t>(at - entries.begin());
      slots_[k] = static_cast<int>(slot);
      assigns_[k] = taken[slot] == 0 ? 1 : 0;
      taken[slot] = 1;
    }
  }

  std::vector<std::pair<int, int>> calls_;
  std::vector<int> slots_;
  std::vector<char> assigns_;
  SparseMat<S> matrix_;
  bool built_ = false;  ///< an empty sequence is a pattern too (a matrix without entries)
};

/// A few kept patterns: a run alternates between a handful of structures (the right-hand
/// side's KKT matrix, with and without active contacts; an impact's), each keeps its own; a
/// new one replaces the least recently used.
template <class S>
class PatternedAssembly {
 public:
  /// The rows x cols matrix of the contributions `scatter` hands. The reference is valid until
  /// the next call. The scatter runs once when the last structure recurs; a structure that
  /// changed costs up to one run per kept pattern tried and two to rebuild (for the reverse
  /// tape, nodes that no output reads).
  template <class Scatter>
  const SparseMat<S>& assemble(Eigen::Index rows, Eigen::Index cols, const Scatter& scatter) {
    ++clock_;
    for (size_t k = 0; k < patterns_.size(); ++k) {
      const size_t slot = (last_ + k) % patterns_.size();
      if (patterns_[slot].refill(rows, cols, scatter)) return use(slot);
    }
    const size_t oldest = static_cast<size_t>(std::min_element(used_.begin(), used_.end()) - used_.begin());
    patterns_[oldest].rebuild(rows, cols, scatter);
    return use(oldest);
  }

 private:
  const SparseMat<S>& use(size_t slot) {
    last_ = slot;
    used_[slot] = clock_;
    return patterns_[slot].matrix();
  }

  std::array<KeptPattern<S>, 4> patterns_;
  std::array<std::uint64_t, 4> used_{};
  std::uint64_t clock_ = 0;
  size_t last_ = 0;
};

/// Call sites with an assembly each.
struct KktAssemblySite {};
struct PenaltyAssemblySite {};

/// This thread's assembly for the scalar type S and the call site `Site` (a tag type): the
/// kept values are a scratch of one call, so threads and problems never share a live one
/// (neither scatter calls back into an assembly of its own site).
template <class S, class Site>
PatternedAssembly<S>& thread_assembly() {
  // On the heap, a pointer in thread-local storage: the library's TLS block comes from the
  // loader's small static surplus when Python loads the module (the assemblies held in it made
  // `import saltus` fail: "cannot allocate memory in static TLS block"; PointMemo likewise).
  thread_local std::unique_ptr<PatternedAssembly<S>> assembly;
  if (!assembly) assembly = std::make_unique<PatternedAssembly<S>>();
  return *assembly;
}

}  // namespace saltus::multibody::detail
