// Backward step bounds from the forward steps: backward_step_bounds.hpp.
#include "backward_step_bounds.hpp"

#include <algorithm>

namespace saltus::detail {

void ForwardStretches::start(double t) {
  start_ = last_ = t;
  shortest_ = 0.0;
  ends_.clear();
  longest_.clear();
}

void ForwardStretches::add_step_end(double t) {
  if (!(t > last_)) return;
  const double h = t - last_;
  last_ = t;
  if (!ends_.empty() && std::max(longest_.back(), h) <= kBackwardStretchSpread * std::min(shortest_, h)) {
    ends_.back() = t;
    longest_.back() = std::max(longest_.back(), h);
    shortest_ = std::min(shortest_, h);
    return;
  }
  ends_.push_back(t);
  longest_.push_back(h);
  shortest_ = h;
}

std::vector<BackwardStretch> ForwardStretches::backward(double t_from, double t_to) const {
  if (ends_.empty() || !(t_to < t_from)) return {{t_to, 0.0}};
  // The stretch holding t_from: the first whose end is at or above it (the last if none).
  auto k = static_cast<long>(std::lower_bound(ends_.begin(), ends_.end(), t_from) - ends_.begin());
  k = std::min(k, static_cast<long>(ends_.size()) - 1);
  std::vector<BackwardStretch> stretches;
  while (true) {
    const double lower = k > 0 ? ends_[static_cast<size_t>(k - 1)] : start_;
    stretches.push_back({std::max(lower, t_to), longest_[static_cast<size_t>(k)]});
    if (lower <= t_to || k == 0) break;
    --k;
  }
  stretches.back().until = t_to;  // below the segment's start: the first stretch's bound
  return stretches;
}

}  // namespace saltus::detail
