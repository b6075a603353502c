#pragma once
// The bytes an adjoint holds for its backward pass, against Options::adjoint_memory_budget.
#include <algorithm>

namespace saltus::detail {

class MemoryLedger {
 public:
  explicit MemoryLedger(long budget) : budget_(budget) {}

  /// An item that was accounted with `accounted` bytes now holds `bytes`; `accounted` is
  /// updated, so each item keeps its own running figure.
  void update(long& accounted, long bytes) {
    held_ += bytes - accounted;
    accounted = bytes;
    peak_ = std::max(peak_, held_);
  }
  /// Whether `extra` more bytes would stay within the budget.
  bool fits(long extra) const { return held_ + extra <= budget_; }

  long budget() const { return budget_; }
  long held() const { return held_; }
  long peak() const { return peak_; }

 private:
  long budget_;
  long held_ = 0;
  long peak_ = 0;
};

}  // namespace saltus::detail
