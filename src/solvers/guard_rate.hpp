#pragma once
// The crossing speed of a guard, r-dot = r_t + r_x f, and the scale it is judged against,
// |r_t| + |r_x| |f| (Euclidean norms): a rate that is tiny against that bound means the
// trajectory moves (nearly) tangent to the guard surface: it grazes it.
#include <saltus/derivatives/tangent.hpp>
#include <saltus/solvers/event_transfer.hpp>

#include "run_support.hpp"

namespace saltus::detail {

struct GuardRate {
  double rate = 0.0;
  double scale = 0.0;
  double gradient = 0.0;  ///< |r_x|
  double reach = 0.0;     ///< sum_i |r_x_i x_i|: the size of the guard's terms at this state
  double gradient_l1 = 0.0;  ///< sum_i |r_x_i|
  bool grazing(double tolerance) const { return is_grazing(rate, scale, tolerance); }
};

/// Throws InputError if the initial state lies exactly on the guard of an event watched in
/// `mode` (r = 0) while moving into its enabled crossing direction or resting on it (r-dot = 0):
/// CVODES masks a guard that starts at zero, so the event would never fire and the motion would
/// pass through the surface (a ball released on its floor would fall through it).
void check_start_off_guards(const Problem& problem, int mode, double t0, In<double> x0, In<double> p,
                            TangentWorkspace& ws);
/// As above with the initial rate x-dot(t0) given (a DAE's consistent rate; a guard that reads
/// rates takes x-ddot from the residual).
void check_start_off_guards(const Problem& problem, int mode, double t0, In<double> x0, In<double> xdot,
                            In<double> p, TangentWorkspace& ws);

/// True if the state x_after (in mode_after) sits on the guard of `event` without moving off it
/// (its rate is grazing): a jump that leads there cannot be continued by root finding.
bool stays_on_guard(const Problem& problem, int event, int mode_after, double t, In<double> x_after,
                    In<double> p, double grazing_tolerance, TangentWorkspace& ws);

/// Whether firing `event` at (t, x) in `mode` would leave the state on its guard (restitution 0).
bool jump_stays_on_guard(const Problem& problem, int event, int mode, double t, In<double> x, In<double> p,
                         double grazing_tolerance, TangentWorkspace& ws);

/// The crossing speed of a guard r(t, x, p) at (t, x) moving at x-dot.
GuardRate guard_rate(const Problem& problem, int event, double t, In<double> x, In<double> p,
                     In<double> xdot, TangentWorkspace& ws);
/// The crossing speed of any guard: r-dot = r_t + r_x x-dot + r_xdot x-ddot, with the scale
/// |r_t| + |(r_x, r_xdot)| |(x-dot, x-ddot)| (x-ddot is read only by guards that read rates).
GuardRate guard_rate(const Problem& problem, int event, double t, In<double> x, In<double> p,
                     In<double> xdot, In<double> xddot, TangentWorkspace& ws);
/// The crossing speed at a consistent point (x, x-dot) of DAE mode `mode`: a guard that reads
/// rates takes x-ddot from the differentiated residual (dae_transfer.hpp, state_accelerations).
GuardRate dae_guard_rate(const Problem& problem, int event, int mode, double t, In<double> x, In<double> xdot,
                         In<double> p, TangentWorkspace& ws);

/// Whether the guard value r is off zero by more than round-off of the guard's scale
/// (1 + sum_i |r_x_i x_i|, times 1e-8; states the guard does not read do not count): a jump that
/// moved the state off its guard (a guard that a mode flag in the state turns off) does not leave
/// it resting there.
bool off_guard(double r, const GuardRate& rate);

/// Holds off the watched guards that a segment starts on, grazing (|r| within their band below,
/// r-dot grazing): a contact left closed at rest that opens at second order (pulled away) or at
/// third (released as its force passed through zero), a guard that starts on its surface. The
/// guard's own integration noise (about rtol sum_i |r_x_i x_i| + atol sum_i |r_x_i| per step)
/// could cross zero there and fire the event again, grazing, with no time derivative, over and
/// over. evaluate_guards reports such a guard as its band on its non-firing side (for
/// Direction::Either, the side of its value) until it leaves the band, then watches it as
/// usual. The band is kHoldNoiseFactor times that noise, at least round-off (off_guard). A guard
/// crossing with a rate is never held: it must fire at its exact time. Decided on the real
/// state, so every run type takes the same events.
void hold_guards_near_zero(const Problem& problem, WatchedEvents& watched, int mode, double t, In<double> x,
                           In<double> xdot, In<double> p, const Options& options, TangentWorkspace& ws);
/// As above in an explicit mode, its rate x-dot = f(t, x, p) evaluated here.
void hold_guards_near_zero(const Problem& problem, WatchedEvents& watched, int mode, double t, In<double> x,
                           In<double> p, const Options& options, TangentWorkspace& ws);
/// The band of hold_guards_near_zero in units of the guard's integration noise per step: the
/// noise accumulates over the steps a guard that opens at third order needs to leave it (the
/// ladder's top leaving its wall at rtol 1e-8 in ggl, with its gap left at -1.3e-10 by the
/// release, drifted 1.3e-2 of this band in the first 3.5e-4 s).
inline constexpr double kHoldNoiseFactor = 100.0;

}  // namespace saltus::detail
