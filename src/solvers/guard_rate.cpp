#include "guard_rate.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

#include "run_support.hpp"

namespace saltus::detail {

void check_start_off_guards(const Problem& problem, int mode, double t0, In<double> x0, In<double> p,
                            TangentWorkspace& ws) {
  Eigen::VectorXd xdot(x0.size());
  problem.mode(mode).rhs.real(t0, x0, p, xdot);
  check_start_off_guards(problem, mode, t0, x0, xdot, p, ws);
}

void check_start_off_guards(const Problem& problem, int mode, double t0, In<double> x0, In<double> xdot,
                            In<double> p, TangentWorkspace& ws) {
  for (int k = 0; k < problem.n_events(); ++k) {
    const Event& e = problem.event(k);
    if (!e.watched || !e.active_in(mode) || e.may_start_on_guard || e.guard.real(t0, x0, p) != 0.0) continue;
    const double rate = guard_rate(problem, k, t0, x0, p, xdot, ws).rate;
    const bool leaves = (e.direction == Direction::Falling && rate > 0.0) ||
                        (e.direction == Direction::Rising && rate < 0.0);
    if (leaves) continue;
    throw InputError(fmt::format(
        "event '{}': the run starts on its guard (r = 0 at t0 = {}, state {}) and {} (r-dot = {:.3g}); a "
        "guard that starts at zero is never detected there, so start off the guard (a time event after "
        "t0), or, if the motion leaves the guard away from the firing direction, declare it "
        "(starts_on_guard: true in an equation file, EventBuilder::starts_on_guard in C++)",
        e.name, t0, describe_state(problem, Eigen::VectorXd(x0)),
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
  const Eigen::VectorXd zero_p = Eigen::VectorXd::Zero(p.size());
  Eigen::VectorXd direction = Eigen::VectorXd::Zero(x.size());
  GuardRate r;
  r.rate = guard_tangent(problem, event, t, x, p, 1.0, xdot, zero_p, ws);
  const double r_t = guard_tangent(problem, event, t, x, p, 1.0, direction, zero_p, ws);
  double r_x_norm2 = 0.0;
  for (Eigen::Index i = 0; i < x.size(); ++i) {
    direction[i] = 1.0;
    const double r_xi = guard_tangent(problem, event, t, x, p, 0.0, direction, zero_p, ws);
    r_x_norm2 += r_xi * r_xi;
    r.reach += std::abs(r_xi * x[i]);
    r.gradient_l1 += std::abs(r_xi);
    direction[i] = 0.0;
  }
  r.gradient = std::sqrt(r_x_norm2);
  r.scale = std::abs(r_t) + r.gradient * xdot.norm();
  return r;
}

bool off_guard(double r, const GuardRate& rate) { return std::abs(r) > 1e-8 * (1.0 + rate.reach); }

void hold_guards_near_zero(const Problem& problem, WatchedEvents& watched, double t, In<double> x,
                           In<double> xdot, In<double> p, const Options& options, TangentWorkspace& ws) {
  watched.held.assign(watched.events.size(), 0.0);
  // Guards far from zero need no rate (n_x tangents each): only those within a generous screen.
  const double screen = 1e-3 * (1.0 + x.cwiseAbs().maxCoeff());
  for (size_t i = 0; i < watched.events.size(); ++i) {
    const int k = watched.events[i];
    const double r = problem.event(k).guard.real(t, x, p);
    if (!(std::abs(r) <= screen)) continue;
    const GuardRate rate = guard_rate(problem, k, t, x, p, xdot, ws);
    if (!rate.grazing(options.grazing_tolerance)) continue;
    const double atol = options.atol_per_state.empty()
                            ? options.atol
                            : *std::max_element(options.atol_per_state.begin(), options.atol_per_state.end());
    const double noise = options.rtol * rate.reach + atol * rate.gradient_l1;
    const double band = std::max(1e-8 * (1.0 + rate.reach), kHoldNoiseFactor * noise);
    if (std::abs(r) > band) continue;
    // The non-firing side: above zero for a falling crossing, below for a rising one.
    const int side = watched.directions[i] != 0 ? -watched.directions[i] : (r >= 0.0 ? 1 : -1);
    watched.held[i] = side * band;
  }
}

void hold_guards_near_zero(const Problem& problem, WatchedEvents& watched, int mode, double t, In<double> x,
                           In<double> p, const Options& options, TangentWorkspace& ws) {
  Eigen::VectorXd xdot(x.size());
  problem.mode(mode).rhs.real(t, x, p, xdot);
  hold_guards_near_zero(problem, watched, t, x, xdot, p, options, ws);
}

}  // namespace saltus::detail
