#pragma once
// A guard that crosses zero and comes back within one integrator step (a short excursion past
// its surface) shows root finding no sign change at the step's ends, and its events were lost
// without a word: galan at p = 2.9999, whose guard is positive for 1.8 ms with a peak of 1e-4,
// took one switch where the model has three (dG/dp -0.375 for -59.3, exit 0). GuardExcursions
// looks inside every step: where a guard moves towards zero at the step's start and away from
// it at its end, it finds the guard's extremum on the integrator's interpolant, and if that lies
// past zero it locates the crossing the event watches (the first, or the return where only that
// direction is enabled) and marks it by a sentinel root function, which the integrator then
// locates as it locates a guard's root. The run applies that root as the guard's own.
#include <saltus/core/problem.hpp>

#include <Eigen/Core>

#include <functional>
#include <vector>

#include "run_support.hpp"

namespace saltus::detail {

class GuardExcursions {
 public:
  /// The state x and, for a DAE, its rate x-dot at a time within the integrator's last step,
  /// from its interpolant (false where it has none there). An ODE's run leaves x-dot empty:
  /// only guards that read rates read it, and only IDAS runs have those.
  using Interpolate = std::function<bool(double t, Eigen::VectorXd& x, Eigen::VectorXd& xdot)>;

  /// A segment starts: forgets the last point and the sentinel's side.
  void reset();
  /// The sentinel root function's value at t (watched in either direction after the guards),
  /// given the watched guards' values g (as evaluate_guards wrote them) at t. At a point past
  /// every earlier one (an end of a step, or an output time) it first looks for an excursion
  /// since the previous such point; between them (the integrator's root location) it reads the
  /// excursion found there, if any. Held guards (WatchedEvents::held) are not examined.
  double sentinel(const Problem& problem, const WatchedEvents& watched, double t, const double* g, In<double> p,
                  const Interpolate& interpolate);
  /// The integrator's root information (n_watched guards, then the sentinel) as the guards':
  /// a root of the sentinel becomes the crossing it marks (+1 rising, -1 falling) of the guard.
  std::vector<int> guard_roots(std::vector<int> info, size_t n_watched) const;

 private:
  /// Looks for an excursion of watched guard i on [t0, t1] (values r0, r1 there); true if one
  /// was found and its crossing recorded.
  bool examine(const Problem& problem, const WatchedEvents& watched, int i, double t0, double r0, double t1,
               double r1, In<double> p, const Interpolate& interpolate);
  /// Whether guard i might reach zero on [t0, t1]: it would have to travel |r0| + |r1| there,
  /// which a guard moving at the pace of its last secants (this interval's and the one before)
  /// does not do within kReach of it. Saves the probes of examine on every other step.
  bool might_reach_zero(size_t i, double t0, double r0, double t1, double r1) const;
  static constexpr double kReach = 10.0;
  /// Guard i (minus its level) at time t on the interpolant; NaN where there is none.
  double guard_at(const Problem& problem, const WatchedEvents& watched, int i, double t, In<double> p,
                  const Interpolate& interpolate);

  bool has_point_ = false;
  double t_last_ = 0.0;            ///< the last point past every earlier one
  std::vector<double> g_last_;     ///< the guards there
  std::vector<char> held_last_;    ///< 1 where that value was a held guard's band
  bool has_before_ = false;
  double t_before_ = 0.0;          ///< the point before it
  std::vector<double> g_before_;
  double side_ = 1.0;              ///< the sentinel's sign away from crossings
  int guard_ = -1, direction_ = 0;  ///< the crossing marked since the last point, if any
  double t_cross_ = 0.0, t_from_ = 0.0, t_to_ = 0.0;
  Eigen::VectorXd x_, xdot_;       ///< scratch state
};

}  // namespace saltus::detail
