#pragma once
// The longest step the backward pass may take where it is, from the steps of the forward pass it
// integrates over. The backward problem's coefficients (the Jacobian of the forward right-hand
// side, the running costs' gradients) are read off the recorded forward solution, so its own
// error estimate cannot see a stretch it steps over: a sphere's compliant contact lasting 50 ms
// of a 0.3 s drop was crossed by one backward step and the adjoint gradient came out zero, where
// the forward pass had taken hundreds of steps through it. No backward step longer than the
// forward steps there keeps every stretch the forward pass resolved in view.
#include <vector>

namespace saltus::detail {

/// A stretch of a backward integration: from where the previous one ended down to `until`, with
/// steps of at most `max_step` (0: unbounded).
struct BackwardStretch {
  double until;
  double max_step;
};

/// Forward steps whose lengths are within this factor of each other form one stretch.
inline constexpr double kBackwardStretchSpread = 2.0;

/// The stretches of a backward integration from t_from down to t_to (t_to <= t_from) over a
/// forward pass whose steps ended at `step_ends` (ascending, the segment's start first):
/// consecutive forward steps whose lengths lie within kBackwardStretchSpread of each other form
/// one stretch, bounded by its longest step. Without forward steps (fewer than two times), one
/// unbounded stretch to t_to.
std::vector<BackwardStretch> backward_step_bounds(const std::vector<double>& step_ends, double t_from, double t_to);

/// Integrates a backward problem from t_from down to t_to stretch by stretch: set_max_step(bound)
/// then integrate(until) for each (a SUNDIALS flag); stops at the first negative flag. Returns
/// the last flag (0 if no stretch ran).
template <class SetMaxStep, class Integrate>
int integrate_in_stretches(const std::vector<double>& step_ends, double t_from, double t_to, SetMaxStep&& set_max_step,
                           Integrate&& integrate) {
  int flag = 0;
  for (const BackwardStretch& stretch : backward_step_bounds(step_ends, t_from, t_to)) {
    set_max_step(stretch.max_step);
    flag = integrate(stretch.until);
    if (flag < 0) break;
  }
  return flag;
}

}  // namespace saltus::detail
