#include "checkpoint_interval.hpp"

#include <saltus/core/options.hpp>

#include <algorithm>
#include <climits>

namespace saltus::detail {

long checkpoint_interval(const Options& options, long states, long previous_segment_steps, long point_bytes,
                         long free_bytes) {
  if (options.checkpoint_steps > 0) return options.checkpoint_steps;
  // Past LONG_MAX / 2 steps the cap below decides anyway.
  const long wanted = previous_segment_steps > 0
                          ? kCheckpointGrowth * std::min(previous_segment_steps, LONG_MAX / kCheckpointGrowth)
                          : kCheckpointStepsPerState * std::min(states, LONG_MAX / kCheckpointStepsPerState);
  const long bytes = std::min(options.adjoint_memory_budget / kCheckpointBudgetShare, free_bytes);
  const long affordable = bytes / std::max(1L, point_bytes);
  return std::max(kFewestCheckpointSteps, std::min(wanted, affordable));
}

}  // namespace saltus::detail
