#pragma once
// How far apart one segment's adjoint recording places its check points.
namespace saltus {
struct Options;
}

namespace saltus::detail {

/// Forward steps between two check points of one segment's recording (CVodeAdjInit's and
/// IDAAdjInit's Nd): Options::checkpoint_steps when it is set (> 0; InputError where its buffer
/// of Nd + 1 points would not fit in Options::adjoint_memory_budget, and closer where it would
/// not fit in `free_bytes`, at least 1); otherwise chosen so that a
/// segment usually fits in one interval. The backward pass recomputes the forward steps of every
/// interval of a segment but its last (the forward pass leaves that one in the Hermite buffer),
/// so a segment within one interval is integrated forward once instead of about twice; but the
/// buffer of Nd + 1 points is allocated whole when the recording starts (two vector headers and
/// two records per point; the data pages only once written: vector_store.hpp), which a short
/// segment does not repay. The automatic spacing is
///   - for the first segment, kCheckpointStepsPerState steps per state: a step costs more the
///     more states there are (2 us for a 2-state ball, 7 us for the 12-state five-bar, about
///     200 us for the 126-state vehicle) while a buffer point's allocation barely grows;
///   - for a later one, kCheckpointGrowth times the steps of the latest segment that took any;
/// never below kFewestCheckpointSteps (the former fixed default) and, above that, at most
/// what keeps the buffer within 1/kCheckpointBudgetShare of Options::adjoint_memory_budget and
/// within `free_bytes` (what the caller's recordings may still take: the whole budget where a
/// ledger releases older recordings, the budget less the buffers kept where none does).
/// `point_bytes` is the heap size of one buffer point for `states` states.
long checkpoint_interval(const Options& options, long states, long previous_segment_steps, long point_bytes,
                         long free_bytes);

/// The forward steps of the latest segment that took any (0 if none): a segment just begun has
/// taken none, nor have the segments of an event cascade at one instant.
template <class Segments>
long latest_segment_steps(const Segments& segments) {
  for (auto it = segments.rbegin(); it != segments.rend(); ++it) {
    if (it->steps > 0) return it->steps;
  }
  return 0;
}

inline constexpr long kFewestCheckpointSteps = 100;
inline constexpr long kCheckpointStepsPerState = 100;
inline constexpr long kCheckpointGrowth = 2;
inline constexpr long kCheckpointBudgetShare = 32;

}  // namespace saltus::detail
