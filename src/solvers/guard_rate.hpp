#pragma once
// The crossing speed of a guard, r-dot = r_t + r_x f, and the scale it is judged against,
// |r_t| + |r_x| |f| (Euclidean norms): a rate that is tiny against that bound means the
// trajectory moves (nearly) tangent to the guard surface: it grazes it.
#include <saltus/derivatives/tangent.hpp>
#include <saltus/solvers/event_transfer.hpp>

#include <vector>

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

/// Throws InputError naming the first of the start's rates x-dot(t0), running costs and guards
/// watched in `mode` that is not a number (nan or infinite): the run would fail on it at its
/// first step; as bad input the model is named before anything is integrated.
void check_start_finite(const Problem& problem, int mode, double t0, In<double> x0, In<double> xdot, In<double> p);

/// Throws InputError naming the first row of the residual of `mode` that is not a number at the
/// start, at the initial values x0 and zero rates (the first guess from which Newton makes the
/// start consistent): for an explicit mode run on IDAS (residual x-dot - f) the rate of its state
/// as check_start_finite names it, for a residual mode the row. As bad input the model is named
/// (exit 2), as an explicit mode's start is, not a failed run. Nothing for an index-2 mode (its
/// completion makes the start).
void check_start_residual(const Problem& problem, int mode, double t0, In<double> x0, In<double> p,
                          TangentWorkspace& ws);

/// Throws InputError if the start is not finite (check_start_finite) or if the initial state
/// lies exactly on the guard of an event watched in `mode` (r = 0) while moving into its enabled crossing direction or resting on it (r-dot = 0):
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

/// Whether the motion from (t, x, x-dot) of `mode`, whose guard rate for `event` grazes
/// (`rate`), curves off the guard to its non-firing side (either side for Direction::Either):
/// the guard's second derivative along the motion, a central difference of the guard's rate at
/// the states a short time before and after along x-dot (the rate there from the mode's
/// right-hand side, or its completion), reaches the grazing threshold within that time. A
/// five-bar's point landing with restitution 0 is pulled up off its floor by the linkage at
/// once (its guard's r-ddot = +5 m/s^2): its motion goes on. False where the mode has neither
/// (an index-1 DAE), for a guard that reads rates, and at rest (x-dot = 0).
bool curves_off_guard(const Problem& problem, int event, int mode, double t, In<double> x, In<double> xdot,
                      In<double> p, double grazing_tolerance, const GuardRate& rate, TangentWorkspace& ws);

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
/// crossing with a rate is never held: it must fire at its exact time. A guard whose root at
/// the segment's start was dropped as noise (WatchedEvents::dropped_at_start: it moves away from
/// zero against its direction) is held too, grazing or not: index3's velocities, out of the error
/// test, are noisy over the first steps after every restart, and a block starting to slide from
/// rest crossed its stick guard against its direction 100 times by t = 7e-9 s. Decided on the real
/// state, so every run type takes the same events.
void hold_guards_near_zero(const Problem& problem, WatchedEvents& watched, int mode, double t, In<double> x,
                           In<double> xdot, In<double> p, const Options& options, TangentWorkspace& ws);
/// As above in an explicit mode, its rate x-dot = f(t, x, p) evaluated here.
void hold_guards_near_zero(const Problem& problem, WatchedEvents& watched, int mode, double t, In<double> x,
                           In<double> p, const Options& options, TangentWorkspace& ws);
/// For each watched Direction::Either event that left the state on its guard at the last root
/// (`on_the_guard`, RootMemory) moving off it at a rate that is not grazing, with the guard within
/// round-off of zero (off_guard): watches only the crossing that brings the state back (falling
/// if it leaves upwards). In exact arithmetic the state starts at r = 0 and the integrator masks
/// that root; numerically the root was located just past zero, and watching both directions fired
/// the event again at once, its jump reversing the rate each time (a ball with an either-way
/// floor: 18 firings within 1e-13 s, then through the floor). Only where the event's own jump
/// reversed the guard's rate in its mode (a bounce), or its root was dropped. A mode switch that
/// turns the motion back onto a guard whose event switches straight back, neither moving the
/// state (a relay without hysteresis at its set point), is a sliding mode: ZenoError. Call
/// before hold_guards_near_zero.
void watch_return_crossings(const Problem& problem, WatchedEvents& watched, const std::vector<OnTheGuard>& on_the_guard,
                            int mode, double t, In<double> x, In<double> xdot, In<double> p,
                            double grazing_tolerance, TangentWorkspace& ws);
/// As above in an explicit mode, its rate x-dot = f(t, x, p) evaluated here.
void watch_return_crossings(const Problem& problem, WatchedEvents& watched, const std::vector<OnTheGuard>& on_the_guard,
                            int mode, double t, In<double> x, In<double> p, double grazing_tolerance,
                            TangentWorkspace& ws);

/// The roots at which an event's guard moves against its direction (a falling guard rising, a
/// rising one falling) faster than grazing: the integration's noise crossing zero next to the
/// guard, not the motion. Found: a ball's last bounce before its Zeno limit, leaving its floor at
/// 2.6e-5 m/s, reported falling 3.5e-9 s later; its jump then sent the ball down through the
/// floor. Only roots where the guard is within its noise band of zero count (noise_band; a
/// guard that jumps across zero is no noise). Such a motion stays within the tolerance of its
/// guard (its bounces are lower than the integration resolves): an event with a resting variant
/// rests there (`resting`, left in `fired`); the others' roots are cleared from `fired`
/// (`dropped`). Grazing roots and events watched in both directions are kept as they are (an
/// either-way event narrowed by watch_return_crossings is watched in one).
RootsAgainstDirection roots_against_their_direction(const Problem& problem, const WatchedEvents& watched,
                                                    std::vector<int>& fired, int mode, double t, In<double> x,
                                                    In<double> xdot, In<double> p, const Options& options,
                                                    TangentWorkspace& ws);
/// As above in an explicit mode, its rate x-dot = f(t, x, p) evaluated here.
RootsAgainstDirection roots_against_their_direction(const Problem& problem, const WatchedEvents& watched,
                                                    std::vector<int>& fired, int mode, double t, In<double> x,
                                                    In<double> p, const Options& options, TangentWorkspace& ws);

/// The roots exactly at the final time tf that a recording integrator returns as an output:
/// CVodeF and IDASolveF, which step to their stop time tf one step at a time, report a root that
/// lies exactly there (a time event at tf) as reaching tf, where CVode and IDASolve report the
/// root. Per watched event, 1 where the guard is zero at (tf, x), or past zero on the side its
/// crossing leads to by at most the root's location in time (|r| <= |r-dot| 1e-12 max(1, tf)),
/// moving in its watched direction without grazing; empty when none is. The recording run then fires them as the other
/// runs do (the adjoint missed a dose at tf: 0.15 for a gradient whose forward value was 0.59).
std::vector<int> roots_at_the_final_time(const Problem& problem, const WatchedEvents& watched, int mode, double tf,
                                         In<double> x, In<double> xdot, In<double> p, double grazing_tolerance,
                                         TangentWorkspace& ws);

/// The guard's integration noise band around zero: kHoldNoiseFactor times its noise per step,
/// rtol sum_i |r_x_i x_i| + atol sum_i |r_x_i|, and at least round-off (off_guard).
double noise_band(const GuardRate& rate, const Options& options);

/// The band of hold_guards_near_zero in units of the guard's integration noise per step: the
/// noise accumulates over the steps a guard that opens at third order needs to leave it (the
/// ladder's top leaving its wall at rtol 1e-8 in ggl, with its gap left at -1.3e-10 by the
/// release, drifted 1.3e-2 of this band in the first 3.5e-4 s).
inline constexpr double kHoldNoiseFactor = 100.0;

}  // namespace saltus::detail
