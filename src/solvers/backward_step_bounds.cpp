// Backward step bounds from the forward steps: backward_step_bounds.hpp.
#include "backward_step_bounds.hpp"

#include <algorithm>

namespace saltus::detail {

std::vector<BackwardStretch> backward_step_bounds(const std::vector<double>& step_ends, double t_from, double t_to) {
  if (step_ends.size() < 2 || !(t_to < t_from)) return {{t_to, 0.0}};
  // The forward step containing t_from: the first end at or above it (the last step if none).
  auto k = static_cast<long>(std::lower_bound(step_ends.begin(), step_ends.end(), t_from) - step_ends.begin());
  k = std::clamp(k, 1L, static_cast<long>(step_ends.size()) - 1);
  const auto length = [&](long i) { return step_ends[static_cast<size_t>(i)] - step_ends[static_cast<size_t>(i - 1)]; };
  std::vector<BackwardStretch> stretches;
  while (true) {
    double shortest = length(k), longest = shortest;
    long j = k;  // the stretch's lowest step
    while (j > 1 && step_ends[static_cast<size_t>(j - 1)] > t_to) {
      const double h = length(j - 1);
      if (std::max(longest, h) > kBackwardStretchSpread * std::min(shortest, h)) break;
      shortest = std::min(shortest, h);
      longest = std::max(longest, h);
      --j;
    }
    const double until = std::max(step_ends[static_cast<size_t>(j - 1)], t_to);
    stretches.push_back({until, longest});
    if (until <= t_to || j <= 1) break;
    k = j - 1;
  }
  if (stretches.back().until > t_to) stretches.back().until = t_to;  // below the segment's first step end
  return stretches;
}

}  // namespace saltus::detail
