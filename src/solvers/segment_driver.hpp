#pragma once
// The segment loop of every hybrid run, written once: walk the output grid, integrate a smooth
// segment towards the next output time, record outputs, and at a guard root let the run apply
// its events (event_transfer.hpp) and start the next segment there. A run type (real or complex,
// with or without sensitivities, recording for the adjoint) implements SegmentIntegrator over
// its integrator adapter; the loop knows nothing of the integrator.
#include <saltus/core/problem.hpp>

#include <algorithm>
#include <cmath>
#include <vector>

#include "run_support.hpp"

namespace saltus::detail {

/// Where an integration towards an output time stopped.
enum class Reached {
  Output,  ///< the output time
  Roots,   ///< earlier, where watched guards crossed zero
};

class SegmentIntegrator {
 public:
  virtual ~SegmentIntegrator() = default;
  /// Starts a smooth segment at t from the run's current state and mode.
  virtual void begin_segment(double t) = 0;
  /// Integrates towards tout and sets t to the time reached. Throws if the integrator fails.
  virtual Reached advance(double tout, double& t) = 0;
  /// Records an output at t. `integrated`: the integrator stopped there and holds the state;
  /// otherwise the run's current state is the one (the initial time, or an event that fell on
  /// this output time).
  virtual void record_output(double t, bool integrated) = 0;
  /// Ends the segment at a root found at t and applies the events whose guards fired (the loop
  /// then begins the next segment); returns true. Returns false, leaving the segment and its
  /// integrator going, where every root was dropped as noise (roots_against_their_direction):
  /// nothing happened there, and a restart's first steps, their history lost, are noisy again
  /// (index3's velocities, out of the error test, are position round-off over h; a block starting
  /// to slide from rest crossed its stick guard against its direction 100 times by t = 7e-9 s).
  virtual bool apply_roots(double t) = 0;
  /// Ends the last segment at the final output time t and completes the costs.
  virtual void finish(double t) = 0;
};

/// Whether t has reached the output time tout (to 100 ulp): the segment loop integrates no
/// further towards it.
inline bool at_output_time(double t, double tout) { return tout - t <= 100.0 * 2.2e-16 * std::max(1.0, std::abs(t)); }

/// Runs `run` over the output grid (output_grid(options), starting at t0).
void drive_segments(SegmentIntegrator& run, const std::vector<double>& grid, double t0);

/// Whether time event k (Event::time_event, guard t - t_e(p)) is due at t: t_e(p) lies at or
/// before t by at most the root finder's precision (1e-12 relative). A t_e just after t is the
/// root finder's, which sees its guard change sign.
bool time_event_due(const Problem& problem, int k, double t, In<double> p);

/// The events to apply for the guards that fired at one root at t: `fired[i]` != 0 for the
/// watched event `watched.events[i]`. Calls `apply(k)` for each in declaration order, skipping
/// events that are no longer active in the mode an earlier one switched to (`mode()` reads the
/// run's current mode). Then the time events due at t that are active in the mode reached and
/// not yet applied in this run (`fired_before(k)`: a time event's guard rises through zero once),
/// in declaration order: a time event watched only in the mode another event at the same
/// instant switches to (a pulse of zero width: on at t1, off at t1) fires too. The root finder
/// cannot see it: its guard t - t_e starts the new segment at zero, already crossed. `p`: the
/// real parameters.
/// for_each_fired_event's `fired_before` for a run that logs the events it applied by index.
inline auto fired_among(const std::vector<int>& applied_events) {
  return [&applied_events](int k) {
    return std::find(applied_events.begin(), applied_events.end(), k) != applied_events.end();
  };
}

template <class Mode, class FiredBefore, class Apply>
void for_each_fired_event(const Problem& problem, const WatchedEvents& watched, const std::vector<int>& fired,
                          const Mode& mode, double t, In<double> p, const FiredBefore& fired_before,
                          const Apply& apply) {
  std::vector<int> applied;
  for (size_t i = 0; i < fired.size(); ++i) {
    if (fired[i] == 0) continue;
    const int k = watched.events[i];
    if (problem.event(k).active_in(mode())) {
      apply(k);
      applied.push_back(k);
    }
  }
  const auto due = [&](int k) {
    const Event& ev = problem.event(k);
    return ev.time_event && ev.watched && std::find(applied.begin(), applied.end(), k) == applied.end() &&
           ev.active_in(mode()) && !fired_before(k) && time_event_due(problem, k, t, p);
  };
  for (int k = 0; k < problem.n_events();) {
    if (applied.empty() || !due(k)) {
      ++k;
      continue;
    }
    apply(k);
    applied.push_back(k);
    k = 0;  // the mode may have changed: an earlier event may be due now
  }
}

}  // namespace saltus::detail
