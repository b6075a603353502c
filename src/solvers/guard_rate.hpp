#pragma once
// The crossing speed of a guard, r-dot = r_t + r_x f, and the scale it is judged against,
// |r_t| + |r_x| |f| (Euclidean norms): a rate that is tiny against that bound means the
// trajectory moves (nearly) tangent to the guard surface: it grazes it.
#include <saltus/derivatives/tangent.hpp>
#include <saltus/solvers/event_transfer.hpp>

namespace saltus::detail {

struct GuardRate {
  double rate = 0.0;
  double scale = 0.0;
  double gradient = 0.0;  ///< |r_x|
  double reach = 0.0;     ///< sum_i |r_x_i x_i|: the size of the guard's terms at this state
  bool grazing(double tolerance) const { return is_grazing(rate, scale, tolerance); }
};

/// Throws InputError if the initial state lies exactly on the guard of an event watched in
/// `mode` (r = 0) while moving into its enabled crossing direction or resting on it (r-dot = 0):
/// CVODES masks a guard that starts at zero, so the event would never fire and the motion would
/// pass through the surface (a ball released on its floor would fall through it).
void check_start_off_guards(const Problem& problem, int mode, double t0, In<double> x0, In<double> p,
                            TangentWorkspace& ws);
/// As above with the initial rate x-dot(t0) given (a DAE's consistent rate).
void check_start_off_guards(const Problem& problem, int mode, double t0, In<double> x0, In<double> xdot,
                            In<double> p, TangentWorkspace& ws);

/// True if the state x_after (in mode_after) sits on the guard of `event` without moving off it
/// (its rate is grazing): a jump that leads there cannot be continued by root finding.
bool stays_on_guard(const Problem& problem, int event, int mode_after, double t, In<double> x_after,
                    In<double> p, double grazing_tolerance, TangentWorkspace& ws);

/// Whether firing `event` at (t, x) in `mode` would leave the state on its guard (restitution 0).
bool jump_stays_on_guard(const Problem& problem, int event, int mode, double t, In<double> x, In<double> p,
                         double grazing_tolerance, TangentWorkspace& ws);

GuardRate guard_rate(const Problem& problem, int event, double t, In<double> x, In<double> p,
                     In<double> xdot, TangentWorkspace& ws);

/// Whether the guard value r is off zero by more than round-off of the guard's scale
/// (1 + sum_i |r_x_i x_i|, times 1e-8; states the guard does not read do not count): a jump that
/// moved the state off its guard (a guard that a mode flag in the state turns off) does not leave
/// it resting there.
bool off_guard(double r, const GuardRate& rate);

}  // namespace saltus::detail
