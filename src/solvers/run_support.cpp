#include "run_support.hpp"

#include <saltus/solvers/event_transfer.hpp>

#include <saltus/derivatives/residual.hpp>
#include <saltus/derivatives/tangent.hpp>

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <string>
#include <vector>

namespace saltus::detail {

namespace {
/// The smallest absolute tolerance of a cost's lambda relative to that cost, about sqrt(eps):
/// lambda comes from reverse sweeps through the model's (stiff) matrices, whose rounding
/// is about this size.
constexpr double kLambdaCostNoise = 1e-8;
}  // namespace

bool integrates_on_idas(const Problem& problem, const Options& options) {
  const bool residual = problem.kind() == ProblemKind::Residual;
  if (options.integrator == Integrator::Cvodes && residual) {
    throw InputError(fmt::format("problem '{}' is a DAE (it has residual modes, algebraic states, implicit transitions or guards that read rates): CVODES cannot "
                                 "integrate it; use IDAS (the default for DAE problems)",
                                 problem.name()));
  }
  if (is_discrete(options.integrator)) return false;
  return options.integrator == Integrator::Idas || residual;
}

bool runs_on_idas(const Problem& problem, const Options& options) {
  const bool idas = integrates_on_idas(problem, options);
  if (idas && options.nonlinear_solver == NonlinearSolver::FixedPoint) {
    throw InputError(fmt::format("problem '{}' runs on IDAS, whose corrector is Newton's: the fixed-point nonlinear solver "
                                 "is for CVODES runs",
                                 problem.name()));
  }
  return idas;
}

bool runs_discrete(const Problem& problem, const Options& options) {
  if (!is_discrete(options.integrator)) return false;
  if (problem.kind() == ProblemKind::Residual) {
    throw InputError(fmt::format("problem '{}' is a DAE (it has residual modes, algebraic states, implicit transitions or guards that read rates): the {} "
                                 "integrator runs explicit problems only; use IDAS (the default for DAE problems)",
                                 problem.name(),
                                 options.integrator == Integrator::Sdirk        ? "sdirk"
                                 : options.integrator == Integrator::Rosenbrock ? "rosenbrock"
                                                                                : "dopri5"));
  }
  if (options.nonlinear_solver == NonlinearSolver::FixedPoint) {
    throw InputError(fmt::format("problem '{}': the fixed-point nonlinear solver is for CVODES runs; the Runge-Kutta "
                                 "integrators solve their stages themselves",
                                 problem.name()));
  }
  return true;
}

std::vector<double> dae_state_atol(const Problem& problem, const Options& options) {
  std::vector<double> atol = state_atol(options, problem.n_states());
  if (!problem.has_index2_modes()) return atol;
  for (int i = 0; i < problem.n_states(); ++i) {
    if (problem.is_algebraic(i)) atol[static_cast<size_t>(i)] = kIndex2AlgebraicAtol;
  }
  return atol;
}

AdjointTolerances adjoint_tolerances(const Options& opt, const Eigen::VectorXd& p, const Eigen::VectorXd& costs) {
  AdjointTolerances tol;
  const auto n_costs = costs.size();
  // A scale below 1 must not take lambda below what double precision resolves (kMinRtol).
  tol.rtol = opt.adjoint_rtol > 0.0 ? opt.adjoint_rtol : std::max(kMinRtol, opt.rtol * opt.adjoint_rtol_scale);
  // Per cost: one scale for all would resolve a small cost's lambda only to the largest cost's
  // size (the vehicle's penalty adjoint: comfort ~ 3.5 held to tyre_load's 2.6e6 * rtol, its
  // gradient off by 2.3e-2).
  const bool from_costs = opt.adjoint_atol < 0.0 && opt.adjoint_atol_from_costs && costs.allFinite();
  // Scaled with a cost, lambda's tolerance stays above its evaluation's round-off
  // (kLambdaCostNoise): the penalty five-bar at rtol 1e-10 (lambda's atol rtol |psi|) took
  // 9,402 backward steps against 5,557 forward, chasing noise in its stiff directions, for a
  // gradient farther from a tight reference than with the floor (docs/benchmarks.md).
  for (Eigen::Index c = 0; c < n_costs; ++c) {
    const double atol = opt.adjoint_atol >= 0.0 ? opt.adjoint_atol : opt.atol;
    const double size = std::abs(costs[c]);
    tol.cost_atol.push_back(from_costs ? std::max({opt.atol, tol.rtol * std::max(1.0, size), kLambdaCostNoise * size})
                                       : atol);
  }
  // A cost's gradient quadratures are held to that cost's size, r |psi_c| (dpsi_c/dp_k p_k is a
  // change of psi_c), whether or not adjoint_atol (lambda's) is given: at the state's atol the
  // penalty five-bar's backward pass took 17,870 steps against 5,557 forward (10,171 so), the
  // vehicle's index-1 one 2,820 against 1,386 (1,671), for gradients as close to a tight
  // reference (docs/benchmarks.md).
  const bool quadratures_from_costs = opt.adjoint_atol_from_costs && costs.allFinite();
  const double cost_atol = opt.cost_atol >= 0.0 ? opt.cost_atol : opt.atol;
  const std::vector<double> scales = parameter_scales(opt, p);
  for (Eigen::Index c = 0; c < n_costs; ++c) {
    const double atol = opt.adjoint_quadrature_atol >= 0.0 ? opt.adjoint_quadrature_atol
                        : quadratures_from_costs ? std::max(cost_atol, tol.rtol * std::abs(costs[c]))
                                                 : cost_atol;
    for (double scale : scales) tol.quadrature_atol.push_back(atol / scale);
  }
  return tol;
}

std::vector<double> AdjointTolerances::per_state(int block) const {
  std::vector<double> atol;
  atol.reserve(cost_atol.size() * static_cast<size_t>(block));
  for (double a : cost_atol) atol.insert(atol.end(), static_cast<size_t>(block), a);
  return atol;
}

std::vector<double> output_grid(const Options& o) {
  std::vector<double> grid = o.output_times;
  if (grid.empty()) {
    const int n = o.n_outputs;
    for (int i = 0; i < n; ++i) {
      grid.push_back(i + 1 == n ? o.tf : o.t0 + (o.tf - o.t0) * i / (n - 1));
    }
  }
  if (grid.back() < o.tf) grid.push_back(o.tf);
  return grid;
}

std::string nonfinite_adjoint_message(const std::string& mode, const char* what, double t) {
  return fmt::format("the adjoint {} of mode '{}' is not finite at t = {:.17g}", what, mode, t);
}

std::vector<double> backward_stops(const std::vector<double>& outputs, double t_start, double t_end) {
  std::vector<double> stops;
  for (auto t = outputs.rbegin(); t != outputs.rend(); ++t) {
    if (*t > t_start && *t < t_end) stops.push_back(*t);
  }
  stops.push_back(t_start);
  return stops;
}

double WatchedEvents::level_of(const Problem& problem, int event) const {
  for (size_t i = 0; i < events.size() && i < level.size(); ++i) {
    if (events[i] == event || problem.event(events[i]).rest_event == event) return level[i];
  }
  return 0.0;
}

WatchedEvents watched_events(const Problem& problem, int mode) {
  WatchedEvents w;
  for (int k = 0; k < problem.n_events(); ++k) {
    const Event& e = problem.event(k);
    if (!e.watched || !e.active_in(mode)) continue;
    w.events.push_back(k);
    w.directions.push_back(e.direction == Direction::Rising    ? 1
                           : e.direction == Direction::Falling ? -1
                                                               : 0);
  }
  return w;
}

void check_rate_declarations(const Problem& problem, int mode, double t0, In<double> x0, In<double> p) {
  const Eigen::Index n = x0.size();
  Eigen::VectorXd f(n);
  bool have_f = false;
  for (int c = 0; c < problem.n_costs(); ++c) {
    const Cost& cost = problem.cost(c);
    if (!cost.running || cost.rates != RateUse::Ignores) continue;
    if (!have_f) {
      problem.mode(mode).rhs.real(t0, x0, p, f);
      have_f = true;
    }
    const double at_zero = cost.running.real(t0, x0, Eigen::VectorXd::Zero(n), p);
    const Eigen::VectorXd probe = Eigen::VectorXd::LinSpaced(n, 1.0, 2.0);
    for (const Eigen::VectorXd& xdot : {f, probe}) {
      const double value = cost.running.real(t0, x0, xdot, p);
      if (value != at_zero) {
        throw ModelError(fmt::format("running cost '{}' is declared RateUse::Ignores but its value depends on "
                                     "x-dot ({:.17g} with x-dot = 0, {:.17g} with another x-dot at t = {})",
                                     cost.name, at_zero, value, t0));
      }
    }
  }
}

std::vector<double> state_atol(const Options& o, int n_states) {
  if (!o.atol_per_state.empty()) return o.atol_per_state;
  return std::vector<double>(static_cast<size_t>(n_states), o.atol);
}

std::vector<double> sensitivity_state_atol(const Options& o, int n_states, double scale) {
  const double floor = o.rtol * scale;
  std::vector<double> atol = state_atol(o, n_states);
  for (double& a : atol) a = std::max(a, floor);
  return atol;
}

std::vector<double> parameter_scales(const Options& o, const Eigen::VectorXd& p) {
  if (!o.parameter_scales.empty()) return o.parameter_scales;
  // Tolerances divided by |p_k| must stay normal doubles: at p = 1e300 the sensitivity atol
  // 1e-12 / 1e300 was subnormal, its error weight infinite, and the first step failed (galan with
  // --param p=1e300, whose simulation runs).
  std::vector<double> s(static_cast<size_t>(p.size()));
  for (Eigen::Index k = 0; k < p.size(); ++k) {
    s[static_cast<size_t>(k)] = p[k] != 0.0 ? std::clamp(std::abs(p[k]), kSmallestParameterScale, kLargestParameterScale) : 1.0;
  }
  return s;
}

std::optional<Accumulation> ZenoWatch::accumulation(int event, double t) const {
  std::optional<Accumulation> a = geometric_limit(event, t);
  if (a && !(a->time - t <= options_.zeno_tail * std::max(1.0, std::abs(t)))) return std::nullopt;
  return a;
}

std::optional<Accumulation> ZenoWatch::geometric_limit(int event, double t) const {
  const auto it = firings_.find(event);
  const size_t n = static_cast<size_t>(options_.zeno_intervals);
  if (it == firings_.end() || it->second.size() < n) return std::nullopt;
  const std::deque<Firing>& f = it->second;
  std::vector<double> times;
  for (size_t i = f.size() - n; i < f.size(); ++i) times.push_back(f[i].time);
  times.push_back(t);
  std::vector<double> ratios;
  for (size_t i = 2; i < times.size(); ++i) {
    const double previous = times[i - 1] - times[i - 2], current = times[i] - times[i - 1];
    if (!(previous > 0.0 && current > 0.0 && current < previous)) return std::nullopt;
    ratios.push_back(current / previous);
  }
  const double rho = ratios.back();
  for (double r : ratios) {
    if (std::abs(r - rho) > options_.zeno_ratio_tolerance * rho) return std::nullopt;
  }
  const double d1 = times[n - 1] - times[n - 2], d2 = t - times[n - 1];
  const double tail = d2 * d2 / (d1 - d2);  // = d2 rho / (1 - rho)
  if (!std::isfinite(tail)) return std::nullopt;
  Accumulation a;
  a.time = t + tail;
  a.ratio = rho;
  const double q = d2 / (d1 - d2);  // tail = d2 q; derivatives of t + d2^2 / (d1 - d2)
  a.weight_a = q * q;
  a.weight_b = -2.0 * q - 2.0 * q * q;
  a.weight_c = 1.0 + 2.0 * q + q * q;
  a.record_a = f[f.size() - 2].record;
  a.record_b = f[f.size() - 1].record;
  return a;
}

void ZenoWatch::refuse_accumulation(const Problem& problem, int event, double t) const {
  const Event& ev = problem.event(event);
  if (ev.rest_event >= 0) return;
  // The limit however far: an event that cannot rest must not bounce on into the integration's
  // noise, where the ratios scatter and the limit is no longer recognised. A rod's tip on a floor
  // (restitution 0.5, rtol 1e-6) bounced at ratios 0.500 +- 0.1 % down to intervals of 1e-3 s,
  // then at scattered ratios while its tail was still above zeno_tail, its bounces fell below
  // the tolerance, and the tip passed through the floor without an event.
  const std::optional<Accumulation> limit = geometric_limit(event, t);
  if (!limit || limit->time >= options_.tf) return;  // a limit past the horizon is never reached
  const bool near = limit->time - t <= options_.zeno_tail * std::max(1.0, std::abs(t));
  if (!near && limit->ratio > kFarZenoRatio) return;
  const std::string accumulate = fmt::format(
      "Zeno behaviour: the firings of event '{}' accumulate (at t = {:.17g} the intervals between its last {} firings "
      "shrink geometrically toward t = {:.17g})",
      ev.name, t, options_.zeno_intervals + 1, limit->time);
  if (!ev.zeno_remedy.empty()) throw ZenoError(fmt::format("{}: {}", accumulate, ev.zeno_remedy));
  throw ZenoError(fmt::format("{} and the event has no resting variant to continue past their limit with ({})",
                              accumulate, kRestingVariantHint));
}

void ZenoWatch::record(int event, double t, long record) {
  std::deque<Firing>& f = firings_[event];
  f.push_back({t, record});
  while (f.size() > static_cast<size_t>(options_.zeno_intervals) + 1) f.pop_front();
}

bool same_instant(double a, double b, const Options& o) {
  return std::abs(a - b) <= o.cascade_window * std::max(1.0, std::abs(a));
}

bool RootMemory::record(const Problem& problem, RootsAgainstDirection found, const std::vector<int>& fired, double t) {
  const bool applies = std::any_of(fired.begin(), fired.end(), [](int f) { return f != 0; });
  const bool only_noise = !applies && !found.dropped.empty();
  in_a_row_ = only_noise ? in_a_row_ + 1 : 0;
  if (in_a_row_ >= max_dropped_restarts) {
    const Event& ev = problem.event(found.dropped.front());
    const std::string remedy =
        !ev.zeno_remedy.empty()
            ? ev.zeno_remedy
            : fmt::format("tighten rtol, or, for a contact whose bounces fall below the tolerance, give its event a "
                          "resting variant ({})",
                          kRestingVariantHint);
    throw ZenoError(fmt::format(
        "the guard of event '{}' crossed zero against its direction {} times in a row by t = {:.17g}: the motion stays "
        "within the integration's noise of its guard; {}",
        ev.name, in_a_row_, t, remedy));
  }
  resting_ = std::move(found.resting);
  on_the_guard_.clear();
  for (int k : found.dropped) on_the_guard_.push_back({k, -1, -1, std::numeric_limits<double>::quiet_NaN(), false});
  return only_noise;
}

bool CascadeGuard::same_state(In<double> x, In<double> y) const {
  // Every component, algebraic ones too: index3's velocities are "algebraic" (out of its error
  // test), and an impact that changes only them is a step. A loop missed for a multiplier's
  // noise still meets the cascade limit.
  const std::vector<double> atol = state_atol(options_, static_cast<int>(x.size()));
  for (Eigen::Index i = 0; i < x.size(); ++i) {
    const double scale = options_.rtol * std::max(std::abs(x[i]), std::abs(y[i])) + atol[static_cast<size_t>(i)];
    if (!(std::abs(x[i] - y[i]) <= scale)) return false;
  }
  return true;
}

int CascadeGuard::visits(int mode, In<double> x) const {
  return static_cast<int>(
      std::count_if(visits_.begin(), visits_.end(), [&](const Visit& v) { return v.mode == mode && same_state(x, v.x); }));
}

void CascadeGuard::refuse_loop(double t, int event, int mode) const {
  static_assert(max_visits == 2, "the message counts the third meeting");
  std::string sequence;
  for (const int m : modes_) sequence += (sequence.empty() ? "" : " -> ") + problem_.mode(m).name;
  throw ZenoError(fmt::format(
      "Zeno behaviour: at t = {:.17g} the events ({}, last '{}') come back to mode '{}' at the same state for the third "
      "time without time advancing: the modes on both sides of the guard drive the motion into it (a sliding mode, "
      "as a relay without hysteresis), which a hybrid model does not continue; give the switch hysteresis (two "
      "guards apart, docs/events.md) or a mode for the motion along the guard",
      t, sequence, problem_.event(event).name, problem_.mode(mode).name));
}

void RootMemory::applied(const Problem& problem, const EventValues& event) {
  bool kept = true;
  for (Eigen::Index i = 0; i < event.x_minus.size() && kept; ++i) {
    if (problem.is_algebraic(static_cast<int>(i))) continue;  // a DAE mode's are its own
    kept = std::abs(event.x_plus[i] - event.x_minus[i]) <= 1e-12 * (1.0 + std::abs(event.x_minus[i]));
  }
  on_the_guard_.push_back({event.event, event.mode_before, event.mode_after, event.guard_rate, kept});
}

bool RootMemory::rests(int k) const { return std::find(resting_.begin(), resting_.end(), k) != resting_.end(); }

void CascadeGuard::record(double t, int event, int mode_before, In<double> x_before, int mode_after,
                          In<double> x_after) {
  const std::string& event_name = problem_.event(event).name;
  ++total_;
  if (total_ > options_.max_events) {
    throw ZenoError(fmt::format(
        "more than {} events by t = {:.17g} (last: '{}'); raise Options::max_events if the "
        "model really has that many, otherwise the events accumulate (Zeno behaviour)",
        options_.max_events, t, event_name));
  }
  cascade_ = (cascade_ > 0 && same_instant(t, last_time_, options_)) ? cascade_ + 1 : 1;
  last_time_ = t;
  if (cascade_ > options_.max_event_cascade) {
    throw ZenoError(fmt::format(
        "Zeno behaviour: {} events within {:.3g} s of t = {:.17g} without time advancing (last: "
        "'{}'); limit Options::max_event_cascade = {}",
        cascade_, options_.cascade_window * std::max(1.0, std::abs(t)), t, event_name,
        options_.max_event_cascade));
  }
  if (cascade_ == 1) {
    visits_.assign(1, Visit{mode_before, Eigen::VectorXd(x_before)});
    modes_.assign(1, mode_before);
  }
  // A firing that leaves mode and state as they were (an event that only adds a cost) is no
  // step of a loop: two of them at one instant are not a sliding mode.
  if (mode_after == mode_before && same_state(x_before, x_after)) return;
  modes_.push_back(mode_after);
  if (visits(mode_after, x_after) >= max_visits) refuse_loop(t, event, mode_after);
  visits_.push_back(Visit{mode_after, Eigen::VectorXd(x_after)});
}

Eigen::VectorXd costs_to_date(const Problem& problem, double t, In<double> x, In<double> p, In<double> integrals) {
  Eigen::VectorXd psi = integrals;
  for (int c = 0; c < problem.n_costs(); ++c) psi[c] += terminal_cost(problem, c, t, x, p);
  return psi;
}

// Why (docs/multibody.md, "The first step"): a compound pendulum started at 0.75 rad/s in index3
// at rtol 1e-10 took IDAS's 2e-11 s and gave d theta_T / d theta_0 = 0.70449 against 0.707035
// (right from any first step of 1e-9 to 1e-4 s), and at atol 1e-14 made no progress past 2.4e-12
// s. A run whose error-tested states start at rest (index3 at rest: its velocities are out of the
// test) keeps IDAS's choice: taking this step there too moved index3's results on the shipped
// mechanisms both ways within its accuracy (the ladder's gradients at rtol 1e-12 from 1.7e-8 to
// 1e-5 of index1's). In ggl and stabilized_index1 the velocities are tested, so a start at rest
// under load is "moving" here: its first-order estimate is about atol / |a|. At rest with cost
// integrals, IDAS's choice is what it would be without them (1e-3 of the way to the first
// output): their rates (a reaction's, 0.4 N) weighed by cost_atol made IDAS take 8e-12 s, where
// index3's Newton matrix (condition ~ h^-3) failed every step down to 2e-10 s (a sleeve and a
// pendulum at rest with a running cost on a reaction, IDA_CONV_FAIL at every rtol).
double completed_first_step(const Problem& problem, int mode, double t, In<double> x, In<double> xdot, In<double> p,
                            const Options& options, int components, TangentWorkspace& ws) {
  if (!problem.mode(mode).index2() || (t != options.t0 && !options.motion_first_step_at_restarts)) return 0.0;
  const auto n = static_cast<int>(x.size());
  Eigen::VectorXd x_tangent(n), xddot(n);
  completion_tangent(problem, mode, t, x, p, 1.0, xdot, Eigen::VectorXd::Zero(p.size()), x_tangent, xddot, ws);
  const std::vector<double> atol = dae_state_atol(problem, options);
  double rates = 0.0, second_rates = 0.0;
  for (int i = 0; i < n; ++i) {
    if (problem.is_algebraic(i)) continue;
    const double weight = 1.0 / (options.rtol * std::abs(x[i]) + atol[static_cast<size_t>(i)]);
    rates += std::pow(xdot[i] * weight, 2);
    second_rates += std::pow(xddot[i] * weight, 2);
  }
  const std::vector<double> grid = output_grid(options);
  const auto first_output = std::upper_bound(grid.begin(), grid.end(), t);
  const double cap = 1e-3 * ((first_output != grid.end() ? *first_output : options.tf) - t);
  if (!std::isfinite(rates) || !std::isfinite(second_rates)) return 0.0;
  const double first_order = 0.5 / std::sqrt(rates / components);  // infinite at rest
  const double second_order = 1.0 / std::sqrt(std::sqrt(second_rates / components));  // infinite without x-ddot
  if (second_order > first_order) return std::min(second_order, cap);
  // IDAS's own choice, but as if without the cost integrals (their rates weigh in IDAS's).
  return components > n ? std::min(first_order, cap) : 0.0;
}

std::string describe_state(const Problem& problem, const Eigen::VectorXd& x) {
  // A message is one line: a large model lists its first entries and every non-finite one (the
  // usual culprit), kDescribedEntries in all, and counts the rest.
  const auto n = static_cast<int>(x.size());
  std::vector<char> shown(static_cast<size_t>(n), n <= kDescribedEntries ? 1 : 0);
  if (n > kDescribedEntries) {
    int count = 0;
    const auto show_first = [&](const auto& wanted) {
      for (int i = 0; i < n && count < kDescribedEntries; ++i) {
        if (wanted(i) && !shown[static_cast<size_t>(i)]) {
          shown[static_cast<size_t>(i)] = 1;
          ++count;
        }
      }
    };
    show_first([&](int i) { return !std::isfinite(x[i]); });
    show_first([](int) { return true; });
  }
  std::string s = "(";
  for (int i = 0; i < n; ++i) {
    if (!shown[static_cast<size_t>(i)]) continue;
    const std::string value = std::isnan(x[i]) ? std::string("nan") : fmt::format("{:.9g}", x[i]);  // not "-nan"
    s += fmt::format("{}{}={}", s.size() > 1 ? ", " : "", problem.state_names()[static_cast<size_t>(i)], value);
  }
  if (n > kDescribedEntries) s += fmt::format(", and {} more of {} states", n - kDescribedEntries, n);
  return s + ")";
}

std::string vanishing_steps_hint(double last_step, double t) {
  if (!(std::abs(last_step) <= 1e-12 * std::max(1.0, std::abs(t)))) return "";
  return fmt::format("; its steps had fallen to {:.2g} s, within 1e-12 of t: the motion or its sensitivities "
                     "may grow without bound there (a rate or a derivative of the model that is singular at "
                     "the state reached)",
                     std::abs(last_step));
}

}  // namespace saltus::detail
