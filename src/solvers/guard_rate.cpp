#include "guard_rate.hpp"

#include <saltus/core/error.hpp>
#include <saltus/derivatives/residual.hpp>
#include <saltus/derivatives/reverse.hpp>
#include <saltus/solvers/dae_transfer.hpp>

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <stdexcept>
#include <string>

#include "run_support.hpp"

namespace saltus::detail {

void check_start_off_guards(const Problem& problem, int mode, double t0, In<double> x0, In<double> p,
                            TangentWorkspace& ws) {
  Eigen::VectorXd xdot(x0.size());
  problem.mode(mode).rhs.real(t0, x0, p, xdot);
  check_start_off_guards(problem, mode, t0, x0, xdot, p, ws);
}

namespace {

std::string not_a_number(double v) { return std::isnan(v) ? "nan" : "infinite"; }

[[noreturn]] void throw_start_rate(const Problem& problem, int mode, double t0, int state, double rate) {
  const Mode& m = problem.mode(mode);
  throw InputError(fmt::format("{}mode '{}': the rate of state '{}' at the start (t0 = {:g}) is {}", m.where(), m.name,
                               problem.state_names()[static_cast<size_t>(state)], t0, not_a_number(rate)));
}

}  // namespace

void check_start_residual(const Problem& problem, int mode, double t0, In<double> x0, In<double> p,
                          TangentWorkspace& ws) {
  const Mode& m = problem.mode(mode);
  if (m.index2()) return;
  const Eigen::VectorXd rates = Eigen::VectorXd::Zero(x0.size());
  Eigen::VectorXd residual(x0.size());
  mode_residual(problem, mode, t0, x0, rates, p, residual, ws);
  for (int i = 0; i < problem.n_states(); ++i) {
    if (std::isfinite(residual[i])) continue;
    if (!m.implicit()) throw_start_rate(problem, mode, t0, i, residual[i]);
    throw InputError(fmt::format("{}mode '{}': residual[{}] at the start (t0 = {:g}) is {}, at the state {} and zero "
                                 "rates (the first guess from which Newton makes the start consistent)",
                                 m.where(), m.name, i, t0, not_a_number(residual[i]),
                                 describe_state(problem, Eigen::VectorXd(x0))));
  }
}

void check_start_finite(const Problem& problem, int mode, double t0, In<double> x0, In<double> xdot, In<double> p) {
  for (int i = 0; i < problem.n_states(); ++i) {
    if (!std::isfinite(xdot[i])) throw_start_rate(problem, mode, t0, i, xdot[i]);
  }
  for (int c = 0; c < problem.n_costs(); ++c) {
    const auto& running = problem.cost(c).running;
    const double g = running ? running.real(t0, x0, xdot, p) : 0.0;
    if (std::isfinite(g)) continue;
    throw InputError(fmt::format("the running cost of '{}' at the start (t0 = {:g}) is {}", problem.cost(c).name, t0,
                                 not_a_number(g)));
  }
  for (int k = 0; k < problem.n_events(); ++k) {
    const Event& e = problem.event(k);
    if (!e.watched || !e.active_in(mode)) continue;
    const double r = e.guard_at<double>(t0, x0, xdot, p);
    if (std::isfinite(r)) continue;
    throw InputError(fmt::format("{}the guard of event '{}' at the start (t0 = {:g}) is {}", e.where(), e.name, t0,
                                 not_a_number(r)));
  }
}

void check_start_off_guards(const Problem& problem, int mode, double t0, In<double> x0, In<double> xdot,
                            In<double> p, TangentWorkspace& ws) {
  check_start_finite(problem, mode, t0, x0, xdot, p);
  for (int k = 0; k < problem.n_events(); ++k) {
    const Event& e = problem.event(k);
    if (!e.watched || !e.active_in(mode) || e.may_start_on_guard || e.guard_at<double>(t0, x0, xdot, p) != 0.0) {
      continue;
    }
    const double rate = dae_guard_rate(problem, k, mode, t0, x0, xdot, p, ws).rate;
    const bool leaves = (e.direction == Direction::Falling && rate > 0.0) ||
                        (e.direction == Direction::Rising && rate < 0.0);
    if (leaves) continue;
    throw InputError(fmt::format(
        "{}event '{}': the run starts on its guard (r = 0 at t0 = {}, state {}) and {} (r-dot = {:.3g}); a "
        "guard that starts at zero is never detected there, so start off the guard (a time event after "
        "t0), or, if the motion leaves the guard away from the firing direction, declare it "
        "(starts_on_guard: true in an equation file, EventBuilder::starts_on_guard in C++)",
        e.where(), e.name, t0, describe_state(problem, Eigen::VectorXd(x0)),
        rate == 0.0 ? "rests on it" : "moves through it", rate));
  }
}

bool stays_on_guard(const Problem& problem, int event, int mode_after, double t, In<double> x_after,
                    In<double> p, double grazing_tolerance, TangentWorkspace& ws) {
  Eigen::VectorXd xdot(x_after.size());
  problem.mode(mode_after).rhs.real(t, x_after, p, xdot);
  const GuardRate rate = guard_rate(problem, event, t, x_after, p, xdot, ws);
  return rate.grazing(grazing_tolerance) && !off_guard(problem.event(event).guard.real(t, x_after, p), rate);
}

bool jump_stays_on_guard(const Problem& problem, int event, int mode, double t, In<double> x, In<double> p,
                         double grazing_tolerance, TangentWorkspace& ws) {
  const Event& e = problem.event(event);
  Eigen::VectorXd x_plus = x;
  if (e.jump) e.jump.real(t, x, p, x_plus);
  return x_plus.allFinite() &&
         stays_on_guard(problem, event, e.mode_after(mode), t, x_plus, p, grazing_tolerance, ws);
}

GuardRate guard_rate(const Problem& problem, int event, double t, In<double> x, In<double> p,
                     In<double> xdot, TangentWorkspace& ws) {
  return guard_rate(problem, event, t, x, p, xdot, xdot.head(0), ws);
}

GuardRate guard_rate(const Problem& problem, int event, double t, In<double> x, In<double> p,
                     In<double> xdot, In<double> xddot, TangentWorkspace& ws) {
  const bool rates = problem.event(event).reads_rates();
  if (rates && xddot.size() != x.size()) {
    throw std::logic_error("guard_rate: a guard that reads rates needs x-ddot");
  }
  const Eigen::VectorXd zero_p = Eigen::VectorXd::Zero(p.size());
  GuardRate r;
  // The rate along the motion, one tangent: the event-time sensitivity divides by it.
  r.rate = rates ? guard_tangent(problem, event, t, x, xdot, p, 1.0, xdot, xddot, zero_p, ws)
                 : guard_tangent(problem, event, t, x, p, 1.0, xdot, zero_p, ws);
  // The partial derivatives along x (and x-dot) from one reverse sweep: one tangent per state
  // cost n + 2 evaluations of the guard, each of a Maggi formulation's guards with its Newton
  // solve for the dependent coordinates (35 % of the vehicle's simulation in maggi).
  const GuardGradient g = guard_gradient(problem, event, t, x, xdot, p);
  r.gradient = std::sqrt(g.state.x.squaredNorm() + g.xdot.squaredNorm());
  r.reach = g.state.x.cwiseProduct(x.transpose()).cwiseAbs().sum() + g.xdot.cwiseProduct(xdot.transpose()).cwiseAbs().sum();
  r.gradient_l1 = g.state.x.cwiseAbs().sum() + g.xdot.cwiseAbs().sum();
  const double speed = rates ? std::hypot(xdot.norm(), xddot.norm()) : xdot.norm();
  r.scale = std::abs(g.state.t) + r.gradient * speed;
  return r;
}

GuardRate dae_guard_rate(const Problem& problem, int event, int mode, double t, In<double> x, In<double> xdot,
                         In<double> p, TangentWorkspace& ws) {
  if (!problem.event(event).reads_rates()) return guard_rate(problem, event, t, x, p, xdot, ws);
  const Eigen::VectorXd xddot = state_accelerations(problem, mode, t, x, xdot, p, ws);
  return guard_rate(problem, event, t, x, p, xdot, xddot, ws);
}

bool curves_off_guard(const Problem& problem, int event, int mode, double t, In<double> x, In<double> xdot,
                      In<double> p, double grazing_tolerance, const GuardRate& rate, TangentWorkspace& ws) {
  const Event& ev = problem.event(event);
  const Mode& m = problem.mode(mode);
  const double speed = xdot.cwiseAbs().maxCoeff();
  const bool rates_off_the_motion = !m.implicit() || m.index2();  // a right-hand side or a completion
  if (ev.reads_rates() || !(speed > 0.0) || !rates_off_the_motion) return false;
  // A step of 1e-4 of the time the motion takes to cover the state's size: far above
  // round-off in the rates' difference, far below the motion's own time scales.
  const double delta = 1e-4 * (1.0 + x.cwiseAbs().maxCoeff()) / speed;
  const Eigen::VectorXd zero_p = Eigen::VectorXd::Zero(p.size());
  const auto rate_at = [&](double s) {
    const double ts = t + s;
    Eigen::VectorXd xs = x + s * xdot, rates(x.size());
    if (m.implicit()) {
      Eigen::VectorXd guess = xs;
      m.completion.real(ts, guess, p, xs, rates);
    } else {
      m.rhs.real(ts, xs, p, rates);
    }
    return guard_tangent(problem, event, ts, xs, p, 1.0, rates, zero_p, ws);
  };
  double rise = 0.0;  // ~ r-ddot delta
  try {
    rise = 0.5 * (rate_at(delta) - rate_at(-delta));
  } catch (const ModelError&) {
    return false;  // the model refuses a state that close (a completion's Newton): keep the stop
  }
  if (!std::isfinite(rise) || !(std::abs(rise) > grazing_tolerance * rate.scale)) return false;
  switch (ev.direction) {
    case Direction::Falling: return rise > 0.0;  // fires going down: off on the positive side
    case Direction::Rising: return rise < 0.0;
    case Direction::Either: return true;
  }
  return false;
}

bool off_guard(double r, const GuardRate& rate) { return std::abs(r) > 1e-8 * (1.0 + rate.reach); }

double noise_band(const GuardRate& rate, const Options& options) {
  const double atol = options.atol_per_state.empty()
                          ? options.atol
                          : *std::max_element(options.atol_per_state.begin(), options.atol_per_state.end());
  const double noise = options.rtol * rate.reach + atol * rate.gradient_l1;
  return std::max(1e-8 * (1.0 + rate.reach), kHoldNoiseFactor * noise);
}

void hold_guards_near_zero(const Problem& problem, WatchedEvents& watched, int mode, double t, In<double> x,
                           In<double> xdot, In<double> p, const Options& options, TangentWorkspace& ws) {
  watched.held.assign(watched.events.size(), 0.0);
  watched.level.assign(watched.events.size(), 0.0);
  // Guards far from zero need no rate (n_x tangents each): only those within a generous screen.
  const double screen = 1e-3 * (1.0 + x.cwiseAbs().maxCoeff());
  for (size_t i = 0; i < watched.events.size(); ++i) {
    const int k = watched.events[i];
    const double r = problem.event(k).guard_at<double>(t, x, xdot, p);
    if (!(std::abs(r) <= screen)) continue;
    const GuardRate rate = dae_guard_rate(problem, k, mode, t, x, xdot, p, ws);
    // A root dropped here, its guard still moving against its direction (an event applied at
    // the same root may have turned it: then it must fire at its time, unheld).
    const bool dropped = i < watched.dropped_at_start.size() && watched.dropped_at_start[i] != 0 &&
                         watched.directions[i] != 0 && rate.rate * watched.directions[i] < 0.0;
    const double band = noise_band(rate, options);
    if (std::abs(r) > band) continue;
    if (!rate.grazing(options.grazing_tolerance) && !dropped) {
      // Past zero on its firing side by more than a tenth of its band (a held guard released at
      // its band: a rod's end left 1.1e-8 m into its plane by a bounce of 4.5e-13 m), moving
      // out: zero would never be crossed again, and the contact was lost. A root's own location
      // just past zero (round-off) keeps zero: levels there moved a settling ball's bounce times
      // by a percent, and its rest with them.
      // The level lies a round-off step (1e-12 of the guard's reach) further on the firing side,
      // so that the root function starts the segment on its non-firing side, not at zero (which
      // CVODES and IDAS set aside until it moves). A step of the band's size would lower the
      // level bounce after bounce (a Zeno ball's limit moved by 1.3e-6 s).
      // Exactly at zero and moving into its crossing (a jump that lands on another event's
      // guard: a kick setting T to the thermostat's T_high): CVODES and IDAS set a root function
      // that starts at zero aside until it has moved, and so never saw this crossing; the level
      // lets it fire a round-off step later. Not for an event applied at this root (its guard
      // passed through), a time event (they fire when due) or one that may start on its guard.
      const int d = watched.directions[i];
      const Event& ev = problem.event(k);
      const bool applied = i < watched.applied_at_start.size() && watched.applied_at_start[i] != 0;
      const bool lands_on_zero = r == 0.0 && rate.rate * d > 0.0 && !applied && !ev.time_event && !ev.may_start_on_guard;
      const bool past_and_leaving = r * d > 0.1 * band && rate.rate * d < 0.0;
      if (d != 0 && (past_and_leaving || lands_on_zero)) watched.level[i] = r + d * 1e-12 * (1.0 + rate.reach);
      // Applied at this root and going on through its crossing (a jump on other states), but
      // back on its non-firing side within its noise band: a DAE's guard that reads rates or
      // algebraic states is re-evaluated at the consistent point after the event (der(y) - v,
      // whose root IDAS located on its interpolated rates, fired 101 times at one instant; z -
      // zc with z = der(y1) y2 + b fired twice). The level puts it a round-off step on its firing
      // side: it crossed once. (An explicit model's guard keeps the root's own value.)
      const bool re_evaluated = problem.mode(mode).implicit() || ev.reads_rates();
      // (Within the band, as every hold: a jump that resets the guard by less than the
      // integration's noise there cannot be told from that noise; at rtol 1e-10 the consistent
      // point moved der(y) - v by more than a tenth of it.)
      const bool passed_back = re_evaluated && applied && r * d < 0.0 && rate.rate * d > 0.0;
      if (d != 0 && passed_back) watched.level[i] = r - d * 1e-12 * (1.0 + rate.reach);
      continue;
    }
    // The non-firing side: above zero for a falling crossing, below for a rising one. But an
    // event applied at this root at a tangential crossing, whose guard moves exactly as before
    // (its jump left the guard's rate as it was: r = (x - a)^3 with a jump on another state),
    // is still passing through the crossing it fired at: it is held on its firing side, so that
    // going on there is no second firing (it was), and coming back is watched as usual.
    const double before = i < watched.rate_before_at_start.size() ? watched.rate_before_at_start[i] : NAN;
    const bool passing_through = i < watched.applied_at_start.size() && watched.applied_at_start[i] != 0 &&
                                 is_grazing(before, rate.scale, options.grazing_tolerance) && before == rate.rate;
    // (Both rates exactly zero count too: x' = 1 meets (x - a)^3 at x = a exactly. An impact
    // whose approach speed was exactly zero at a located root, v- = 0.0, would count as well,
    // but a located crossing of a falling body has v- = -sqrt(2 g h) != 0.)
    const int d = watched.directions[i];
    const int side = d != 0 ? (passing_through ? d : -d) : (r >= 0.0 ? 1 : -1);
    watched.held[i] = side * band;
  }
}

void hold_guards_near_zero(const Problem& problem, WatchedEvents& watched, int mode, double t, In<double> x,
                           In<double> p, const Options& options, TangentWorkspace& ws) {
  Eigen::VectorXd xdot(x.size());
  problem.mode(mode).rhs.real(t, x, p, xdot);
  hold_guards_near_zero(problem, watched, mode, t, x, xdot, p, options, ws);
}

namespace {

/// The rate of `event`'s guard at (t, x) in `mode`: x-dot from its right-hand side, or, in a
/// residual mode, from the consistent point there (x's algebraic states re-solved); a zero rate
/// (no judgement) where that mode has no consistent point at x.
GuardRate rate_in_mode(const Problem& problem, int event, int mode, double t, In<double> x, In<double> xdot_guess,
                       In<double> p, TangentWorkspace& ws) {
  if (!problem.mode(mode).implicit()) {
    Eigen::VectorXd xdot(x.size());
    problem.mode(mode).rhs.real(t, x, p, xdot);
    return dae_guard_rate(problem, event, mode, t, x, xdot, p, ws);
  }
  try {
    const ConsistentPoint point = consistent_point(problem, mode, t, x, xdot_guess, p, "at a switch back", ws);
    return dae_guard_rate(problem, event, mode, t, point.x, point.xdot, p, ws);
  } catch (const Error&) {
    return GuardRate{};
  }
}

/// Throws ZenoError where an event switched the motion from mode A into `mode` at the last root
/// leaving the state as it was, and an event watched in `mode` sits on its guard moving into its
/// crossing and fires back to A, again leaving the state: both modes drive the motion into the
/// surface (a relay without hysteresis at its set point), a sliding mode that the hybrid model
/// does not continue. The real runs switched back and forth until the noise let one mode run on
/// (heat -> cool -> heat ... six times, then heating past the set point); the complex step, whose
/// state after an event is carried back to t in the new mode, ran on in the other one.
void refuse_sliding_modes(const Problem& problem, const WatchedEvents& watched, const std::vector<OnTheGuard>& on_the_guard,
                          int mode, double t, In<double> x, In<double> xdot, In<double> p, double grazing_tolerance,
                          TangentWorkspace& ws) {
  for (const OnTheGuard& came : on_the_guard) {
    // Whether its jump kept the state or not (a relay that counts its switches, n + 1): the
    // state is still on the guard (below) is what makes the motion slide.
    if (std::isnan(came.rate_before) || came.mode_before == came.mode_after || came.mode_after != mode) continue;
    // The switch turned the motion, not the jump: in the first mode the state after the jump
    // still moves as before (a bounce that also switches modes reverses it by its jump, and
    // leaves the surface).
    const GuardRate unswitched = rate_in_mode(problem, came.event, came.mode_before, t, x, xdot, p, ws);
    if (!(unswitched.rate * came.rate_before > 0.0)) continue;
    for (size_t i = 0; i < watched.events.size(); ++i) {
      const int k = watched.events[i];
      const Event& ev = problem.event(k);
      if (ev.mode_after(mode) != came.mode_before) continue;
      const GuardRate rate = dae_guard_rate(problem, k, mode, t, x, xdot, p, ws);
      if (rate.grazing(grazing_tolerance) || off_guard(ev.guard_at<double>(t, x, xdot, p), rate)) continue;
      // It fires at once: crossing in its watched direction, or, either way, back across the
      // guard that brought the motion here.
      const bool fires = watched.directions[i] != 0 ? rate.rate * watched.directions[i] > 0.0
                                                    : k == came.event && rate.rate * came.rate_before < 0.0;
      if (!fires) continue;
      // ... its jump leaves the state on that guard (it keeps the state, or changes others) ...
      Eigen::VectorXd back_at = x;
      if (ev.transition) continue;  // an implicit transition may move the differential states
      if (ev.jump) ev.jump.real(t, x, p, back_at);
      if (!back_at.allFinite() || off_guard(ev.guard_at<double>(t, back_at, xdot, p), rate)) continue;
      // ... and A drives the guard back the other way (a relay's heating raises T - T_set, its
      // cooling lowers it). Time events rise in every mode: two at one instant are no such pair.
      const GuardRate back = rate_in_mode(problem, k, came.mode_before, t, back_at, xdot, p, ws);
      if (back.grazing(grazing_tolerance) || !(back.rate * rate.rate < 0.0)) continue;
      throw ZenoError(fmt::format(
          "Zeno behaviour: at t = {:.17g} event '{}' switched mode '{}' to '{}', which drives the state {} back across "
          "the guard of '{}' (r-dot = {:.3g}), where it switches back to '{}': both modes drive the motion into the "
          "surface, a sliding mode (as a relay without hysteresis at its set point), which a hybrid model does not "
          "continue; give the switch hysteresis (two guards apart, docs/events.md) or a mode for the motion along "
          "the surface",
          t, problem.event(came.event).name, problem.mode(came.mode_before).name, problem.mode(mode).name,
          describe_state(problem, Eigen::VectorXd(x)), ev.name, rate.rate, problem.mode(came.mode_before).name));
    }
  }
}

}  // namespace

void watch_return_crossings(const Problem& problem, WatchedEvents& watched, const std::vector<OnTheGuard>& on_the_guard,
                            int mode, double t, In<double> x, In<double> xdot, In<double> p,
                            double grazing_tolerance, TangentWorkspace& ws) {
  refuse_sliding_modes(problem, watched, on_the_guard, mode, t, x, xdot, p, grazing_tolerance, ws);
  watched.dropped_at_start.assign(watched.events.size(), 0);
  watched.applied_at_start.assign(watched.events.size(), 0);
  watched.rate_before_at_start.assign(watched.events.size(), NAN);
  for (size_t i = 0; i < watched.events.size(); ++i) {
    const int k = watched.events[i];
    watched.dropped_at_start[i] = std::any_of(on_the_guard.begin(), on_the_guard.end(), [k](const OnTheGuard& g) {
      return g.event == k && std::isnan(g.rate_before);
    });
    const auto applied = std::find_if(on_the_guard.begin(), on_the_guard.end(), [k](const OnTheGuard& g) {
      return g.event == k && !std::isnan(g.rate_before);
    });
    watched.applied_at_start[i] = applied != on_the_guard.end();
    if (applied != on_the_guard.end()) watched.rate_before_at_start[i] = applied->rate_before;
  }
  for (size_t i = 0; i < watched.events.size(); ++i) {
    const int k = watched.events[i];
    const auto left = std::find_if(on_the_guard.begin(), on_the_guard.end(), [k](const OnTheGuard& g) { return g.event == k; });
    if (watched.directions[i] != 0 || left == on_the_guard.end()) continue;
    const GuardRate rate = dae_guard_rate(problem, k, mode, t, x, xdot, p, ws);
    if (rate.grazing(grazing_tolerance) || off_guard(problem.event(k).guard_at<double>(t, x, xdot, p), rate)) continue;
    const bool dropped = std::isnan(left->rate_before);
    // Its jump (a bounce) or its switch into this mode turned the guard's motion back: the state
    // leaves the guard it was applied on, and only a crossing back is a new one.
    const bool turned_back = left->mode_after == mode && left->rate_before * rate.rate < 0.0;
    if (!dropped && !turned_back) continue;
    watched.directions[i] = rate.rate > 0.0 ? -1 : 1;  // leaving upwards, it comes back falling
  }
}

void watch_return_crossings(const Problem& problem, WatchedEvents& watched, const std::vector<OnTheGuard>& on_the_guard,
                            int mode, double t, In<double> x, In<double> p, double grazing_tolerance,
                            TangentWorkspace& ws) {
  if (on_the_guard.empty()) return;
  Eigen::VectorXd xdot(x.size());
  problem.mode(mode).rhs.real(t, x, p, xdot);
  watch_return_crossings(problem, watched, on_the_guard, mode, t, x, xdot, p, grazing_tolerance, ws);
}

std::vector<int> roots_at_the_final_time(const Problem& problem, const WatchedEvents& watched, int mode, double tf,
                                         In<double> x, In<double> xdot, In<double> p, double grazing_tolerance,
                                         TangentWorkspace& ws) {
  std::vector<int> fired(watched.events.size(), 0);
  bool any = false;
  for (size_t i = 0; i < watched.events.size(); ++i) {
    const int k = watched.events[i];
    // Relative to the guard's level (WatchedEvents::level), as the root function is.
    const double r =
        problem.event(k).guard_at<double>(tf, x, xdot, p) - (i < watched.level.size() ? watched.level[i] : 0.0);
    const GuardRate rate = dae_guard_rate(problem, k, mode, tf, x, xdot, p, ws);
    if (rate.grazing(grazing_tolerance) || rate.rate * watched.directions[i] < 0.0) continue;
    // Zero, or just past zero on the side the crossing leads to, within the integrators' root
    // location in time (about 100 ulp of t: the rate over 1e-12 max(1, tf)).
    const bool past = r == 0.0 || (r * rate.rate > 0.0 && std::abs(r) <= std::abs(rate.rate) * 1e-12 * std::max(1.0, std::abs(tf)));
    if (!past) continue;
    fired[i] = rate.rate > 0.0 ? 1 : -1;
    any = true;
  }
  if (!any) fired.clear();
  return fired;
}

RootsAgainstDirection roots_against_their_direction(const Problem& problem, const WatchedEvents& watched,
                                                    std::vector<int>& fired, int mode, double t, In<double> x,
                                                    In<double> xdot, In<double> p, const Options& options,
                                                    TangentWorkspace& ws) {
  RootsAgainstDirection found;
  for (size_t i = 0; i < fired.size() && i < watched.events.size(); ++i) {
    if (fired[i] == 0 || watched.directions[i] == 0) continue;
    const int k = watched.events[i];
    const GuardRate rate = dae_guard_rate(problem, k, mode, t, x, xdot, p, ws);
    if (!(rate.rate * watched.directions[i] < 0.0) || rate.grazing(options.grazing_tolerance)) continue;
    // Noise crosses zero only next to it; a guard that jumps across zero (an angle stop's angle
    // wrapping at +-pi) is far from it on both sides and fires for its event to judge.
    if (std::abs(problem.event(k).guard_at<double>(t, x, xdot, p)) > noise_band(rate, options)) continue;
    if (problem.event(k).rest_event >= 0) {
      found.resting.push_back(k);
    } else {
      fired[i] = 0;
      found.dropped.push_back(k);
    }
  }
  return found;
}

RootsAgainstDirection roots_against_their_direction(const Problem& problem, const WatchedEvents& watched,
                                                    std::vector<int>& fired, int mode, double t, In<double> x,
                                                    In<double> p, const Options& options, TangentWorkspace& ws) {
  if (std::none_of(fired.begin(), fired.end(), [](int f) { return f != 0; })) return {};
  Eigen::VectorXd xdot(x.size());
  problem.mode(mode).rhs.real(t, x, p, xdot);
  return roots_against_their_direction(problem, watched, fired, mode, t, x, xdot, p, options, ws);
}

}  // namespace saltus::detail
