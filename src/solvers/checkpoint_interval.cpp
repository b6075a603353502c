#include "checkpoint_interval.hpp"

#include <saltus/core/options.hpp>

#include <algorithm>
#include <cmath>

namespace saltus::detail {

long checkpoint_interval(const Options& options, long states, long previous_segment_steps, long point_bytes,
                         long free_bytes) {
  if (options.checkpoint_steps > 0) return options.checkpoint_steps;
  const long wanted =
      previous_segment_steps > 0
          ? static_cast<long>(std::ceil(kCheckpointGrowth * static_cast<double>(previous_segment_steps)))
          : kCheckpointStepsPerState * states;
  const long bytes = std::min(options.adjoint_memory_budget / kCheckpointBudgetShare, free_bytes);
  const long affordable = bytes / std::max(1L, point_bytes);
  return std::max(kFewestCheckpointSteps, std::min(wanted, affordable));
}

}  // namespace saltus::detail
