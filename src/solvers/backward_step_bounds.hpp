#pragma once
// The longest step the backward pass may take where it is, from the steps of the forward pass it
// integrates over. The backward problem's coefficients (the Jacobian of the forward right-hand
// side, the running costs' gradients) are read off the recorded forward solution, so its own
// error estimate cannot see a stretch it steps over: a sphere's compliant contact lasting 50 ms
// of a 0.3 s drop was crossed by one backward step and the adjoint gradient came out zero, where
// the forward pass had taken hundreds of steps through it. Backward steps bounded by the
// forward steps of the stretch they are in keep what the forward pass resolved in view.
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

/// A recording's forward steps grouped as they come: consecutive steps whose lengths lie within
/// kBackwardStretchSpread of each other form one stretch, kept as its end and its longest step
/// (memory per stretch, not per step: a segment of 5 million steps of one size is one stretch).
class ForwardStretches {
 public:
  /// A segment starts at t (forgets the previous one).
  void start(double t);
  /// A forward step ended at t; a time not beyond the last one is ignored.
  void add_step_end(double t);
  /// The stretches of a backward integration from t_from down to t_to (t_to <= t_from), each
  /// bounded by its longest forward step; without forward steps one unbounded stretch to t_to.
  std::vector<BackwardStretch> backward(double t_from, double t_to) const;
  long stretches() const { return static_cast<long>(ends_.size()); }

 private:
  double start_ = 0.0;
  double last_ = 0.0;      // the latest step's end
  double shortest_ = 0.0;  // the current stretch's shortest step
  std::vector<double> ends_, longest_;
};

/// Integrates a backward problem stretch by stretch: set_max_step(bound) then integrate(until),
/// a SUNDIALS flag, for each; stops at the first negative flag and returns the last flag (0 if
/// no stretch ran). SUNDIALS applies a maximum step when it next chooses a step size (on growth,
/// or after a failed step): a step already longer when a shorter stretch begins runs on until
/// then, so the bound holds from the stretch's first step-size change on. (Restarting the
/// backward integrator there instead cost ball1d's backward pass 2.4 times its steps.)
template <class SetMaxStep, class Integrate>
int integrate_in_stretches(const std::vector<BackwardStretch>& stretches, SetMaxStep&& set_max_step,
                           Integrate&& integrate) {
  int flag = 0;
  for (const BackwardStretch& stretch : stretches) {
    set_max_step(stretch.max_step);
    flag = integrate(stretch.until);
    if (flag < 0) break;
  }
  return flag;
}

}  // namespace saltus::detail
