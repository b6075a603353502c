#include "checkpoint_interval.hpp"

#include <saltus/core/error.hpp>
#include <saltus/core/options.hpp>

#include <fmt/format.h>

#include <algorithm>
#include <climits>

namespace saltus::detail {

long checkpoint_interval(const Options& options, long states, long previous_segment_steps, long point_bytes,
                         long free_bytes) {
  if (options.checkpoint_steps > 0) {
    // The user's spacing, allocated whole: refused where it could never be held (2^62 steps
    // overflowed the buffer's byte count and crashed the run; 1e17 failed in CVodeAdjInit).
    const long points_affordable = options.adjoint_memory_budget / std::max(1L, point_bytes);
    if (options.checkpoint_steps >= points_affordable) {
      throw InputError(fmt::format(
          "checkpoint_steps (--checkpoint-steps) = {}: its interpolation buffer of {} points of {} bytes ({:.4g} "
          "MiB) exceeds the adjoint's memory budget of {:.4g} MiB (--adjoint-memory); {}",
          options.checkpoint_steps, options.checkpoint_steps + 1, point_bytes,
          static_cast<double>(options.checkpoint_steps + 1) * static_cast<double>(point_bytes) / 0x1p20,
          static_cast<double>(options.adjoint_memory_budget) / 0x1p20,
          points_affordable > 1 ? fmt::format("give at most {} steps, or a larger budget", points_affordable - 1)
                                : std::string("give a larger budget")));
    }
    // Where the recordings kept so far leave less (IDAS keeps every segment's), the spacing
    // that still fits: the budget bounds the buffers together.
    const long points_free = free_bytes / std::max(1L, point_bytes);
    return std::max(1L, std::min(options.checkpoint_steps, points_free - 1));
  }
  // Past LONG_MAX / 2 steps the cap below decides anyway.
  const long wanted = previous_segment_steps > 0
                          ? kCheckpointGrowth * std::min(previous_segment_steps, LONG_MAX / kCheckpointGrowth)
                          : kCheckpointStepsPerState * std::min(states, LONG_MAX / kCheckpointStepsPerState);
  const long bytes = std::min(options.adjoint_memory_budget / kCheckpointBudgetShare, free_bytes);
  const long affordable = bytes / std::max(1L, point_bytes);
  return std::max(kFewestCheckpointSteps, std::min(wanted, affordable));
}

}  // namespace saltus::detail
