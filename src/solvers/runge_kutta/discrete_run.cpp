// A hybrid run by an explicit Runge-Kutta pair, step by step, with the discrete tangent-linear
// model of its steps (discrete_run.hpp).
#include "discrete_run.hpp"

#include <saltus/core/interrupt.hpp>
#include <saltus/derivatives/residual.hpp>
#include <saltus/solvers/event_transfer.hpp>
#include <saltus/solvers/solver_messages.hpp>

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <limits>

#include "../event_log.hpp"
#include "../guard_rate.hpp"

namespace saltus::detail {

namespace {
constexpr double kEps = std::numeric_limits<double>::epsilon();
constexpr int kMaxNonFiniteTries = 50;

int sign_of(double v) { return (v > 0.0) - (v < 0.0); }
}  // namespace

DiscreteRun::DiscreteRun(const Problem& problem, const Eigen::VectorXd& p, const Options& options, RunKind kind)
    : pb_(problem),
      p_(p),
      opt_(options),
      kind_(kind),
      sens_(kind == RunKind::ForwardSensitivity),
      tab_(options.integrator == Integrator::Sdirk        ? sdirk4()
           : options.integrator == Integrator::Rosenbrock ? rodas3()
                                                          : dormand_prince()),
      nx_(problem.n_states()),
      np_(problem.n_parameters()),
      nc_(problem.n_costs()),
      book_(pb_, p_, opt_, sens_, phase_name(kind)) {
  pb_.validate();
  validate(opt_, nx_, np_);
  pb_.validate_parameters(p_);
  if (pb_.kind() != ProblemKind::Explicit) {
    throw InputError(fmt::format("problem '{}' has residual modes or algebraic states: the {} integrator runs "
                                 "explicit problems only (use idas)",
                                 pb_.name(), tab_.name));
  }
  for (int c = 0; c < nc_; ++c) has_running_cost_ |= static_cast<bool>(pb_.cost(c).running);
  identity_p_ = Eigen::MatrixXd::Identity(np_, np_);
  zero_x_ = Eigen::VectorXd::Zero(nx_);
  zero_p_ = Eigen::VectorXd::Zero(np_);
  tangent_.dY.resize(nx_);
  error_.resize(nx_);
  cur_.resize(nx_, nc_, tab_.stages);
  if (tab_.rosenbrock) {
    rosenbrock_.st.resize(nx_, nc_, tab_.stages);
    rosenbrock_.x.resize(nx_);
    rosenbrock_.p.resize(np_);
  }
  prev_.resize(nx_, nc_, tab_.stages);
  atol_ = state_atol(opt_, nx_);
}

void DiscreteRun::check_start() {
  pb_.check_horizon(p_, opt_.t0, opt_.tf);
  x_ = initial_state(pb_, p_);
  if (!x_.allFinite()) {
    throw InputError(fmt::format("the initial state {} of problem '{}' is not finite at the parameters' values",
                                 describe_state(pb_, x_), pb_.name()));
  }
  mode_ = pb_.initial_mode_for(x_, p_);
  check_start_off_guards(pb_, mode_, opt_.t0, x_, p_, ws_);
  check_rate_declarations(pb_, mode_, opt_.t0, x_, p_);
}

Solution DiscreteRun::run() {
  check_start();
  t_ = opt_.t0;
  if (sens_) {
    S_ = initial_state_jacobian(pb_, p_);
    dt_ = Eigen::RowVectorXd::Zero(np_);
  }
  const std::vector<double> grid = output_grid(opt_);
  book_.start(grid.size());
  drive_segments(*this, grid, opt_.t0);
  Solution& sol = book_.solution();
  sol.stats.integrator = tab_.name;
  sol.stats.discrete = true;
  sol.stats.steps = static_cast<long>(log_.steps.size());
  sol.stats.rhs_evals = rhs_evals_;
  sol.stats.root_evals = guard_evals_;
  sol.stats.jacobian_evals = jacobian_evals_;
  sol.stats.nonlinear_iterations = newton_.iterations;
  sol.stats.error_test_failures = rejected_;
  sol.stats.segments = static_cast<int>(sol.events.size()) + 1;
  if (sens_) sol.stats.sensitivity_rhs_evals = static_cast<long>(log_.steps.size()) * tab_.map_stages * np_;
  return std::move(sol);
}

long StepLog::state_bytes(long n_x) {
  return n_x * static_cast<long>(sizeof(double)) + static_cast<long>(sizeof(DiscreteStep) + sizeof(Eigen::VectorXd));
}

void StepLog::store(const Eigen::VectorXd& x, long budget) {
  const size_t n = steps.size() - 1;
  states.emplace_back();
  if (n % stride == 0) {
    states.back() = x;
    ++stored;
  }
  const long bytes = state_bytes(x.size());
  while (static_cast<long>(stride) < static_cast<long>(steps.size()) &&
         (stored + static_cast<long>(stride)) * bytes > budget) {
    stride *= 2;
    for (size_t k = 0; k < states.size(); ++k) {
      if (k % stride != 0 && states[k].size() > 0) {
        states[k] = Eigen::VectorXd();
        --stored;
      }
    }
  }
}

// ---- segments -------------------------------------------------------------------------------

namespace {

/// How close to zero a guard at t counts as on it: 1000 ulp of t times its rate's scale.
double zero_resolution(double t, const GuardRate& rate) { return 1e3 * kEps * std::max(1.0, std::abs(t)) * rate.scale; }

}  // namespace

void DiscreteRun::begin_segment(double t) {
  t_ = t;
  watched_ = watched_events(pb_, mode_);
  const size_t n = watched_.events.size();
  guard_start_.assign(n, 0.0);
  guard_values_.assign(n, 0.0);
  // A guard that the last event left at zero (to round-off) takes its sign from its rate: the
  // side the motion leaves it to. Zero rate (a start on the guard): no sign until it moves.
  Eigen::VectorXd xdot(nx_);
  bool have_rate = false;
  std::vector<size_t> landed;
  for (size_t i = 0; i < n; ++i) {
    const int k = watched_.events[i];
    const double g = pb_.event(k).guard.real(t, x_, p_);
    ++guard_evals_;
    if (!std::isfinite(g)) {
      throw ModelError(fmt::format("the guard of event '{}' is not finite at t = {:.17g}", pb_.event(k).name, t));
    }
    if (!have_rate) {
      pb_.mode(mode_).rhs.real(t, x_, p_, xdot);
      have_rate = true;
    }
    const GuardRate rate = guard_rate(pb_, k, t, x_, p_, xdot, ws_);
    const double resolution = zero_resolution(t, rate);
    if (std::abs(g) > resolution) {
      guard_start_[i] = g;
    } else {
      guard_start_[i] = rate.grazing(opt_.grazing_tolerance) ? 0.0 : std::copysign(resolution, rate.rate);
    }
    if (g == 0.0 && lands_into_crossing(i, t, rate)) landed.push_back(i);
  }
  fired_.assign(n, 0);
  // A jump that left another event's guard exactly at zero, moving into its crossing (a kick
  // setting T to the thermostat's T_high): that event fires at this instant, as in a continuous
  // run (docs/events.md), where the root finder sees it a round-off step later.
  for (size_t i : landed) fired_[i] = 1;
  pending_roots_ = !landed.empty();
  have_last_ = false;
  first_stage_ready_ = false;
  jacobian_ready_ = false;
  h_next_ = initial_step();
}

bool DiscreteRun::lands_into_crossing(size_t i, double t, const GuardRate& rate) const {
  const int k = watched_.events[i];
  const Event& ev = pb_.event(k);
  const int direction = watched_.directions[i];
  if (direction == 0 || !(rate.rate * direction > 0.0) || rate.grazing(opt_.grazing_tolerance) || ev.time_event ||
      ev.may_start_on_guard) {
    return false;
  }
  // Events applied at this instant passed through their guards: not a landing.
  const std::vector<EventRecord>& events = book_.events();
  bool jumped_here = false;
  for (auto e = events.rbegin(); e != events.rend() && e->time == t; ++e) {
    if (e->event == k) return false;
    jumped_here = true;
  }
  return jumped_here;
}

Reached DiscreteRun::advance(double tout, double& t) {
  while (true) {
    if (pending_roots_ && t_ <= tout) {
      t = t_;
      return Reached::Roots;
    }
    if (t_ >= tout) {
      t = tout;
      return Reached::Output;
    }
    take_step();
  }
}

void DiscreteRun::record_output(double t, bool integrated) {
  steps_since_output_ = 0;
  if (!integrated || !have_last_ || t >= t_) {
    book_.record_output(t, mode_, x_, sens_ ? fixed_time_sensitivity(t) : S_, book_.cost_integral());
    return;
  }
  Eigen::VectorXd x, q;
  Eigen::MatrixXd S;
  interpolate(t, x, q, sens_ ? &S : nullptr);
  book_.record_output(t, mode_, x, S, q);
}

bool DiscreteRun::apply_roots(double t) {
  pending_roots_ = false;
  const std::vector<int> applied = book_.apply_fired_events(
      watched_, fired_, t, [&] { return mode_; },
      [&](int k, std::optional<Accumulation>& rest) {
        return resolve_rest(pb_, book_.zeno(), k, mode_, t, x_, p_, opt_.grazing_tolerance, ws_, rest);
      },
      [&](int k, const std::optional<Accumulation>& rest) { apply_event(k, t, rest); });
  log_.steps.back().events_end = book_.events().size();
  require_leaving_guards(pb_, applied, book_.events(), mode_, t, x_, p_, opt_.grazing_tolerance, ws_);
  return true;
}

void DiscreteRun::apply_event(int k, double t, const std::optional<Accumulation>& rest) {
  const EventValues v = fire_event(pb_, k, mode_, t, x_, p_, ws_);
  EventRecord rec = book_.open_event(v, rest);
  if (sens_) {
    // The discrete jump: x+ = phi(t_e, x-, p) with t_e's own tangent; the rates before and after
    // enter through the step maps' time arguments, not here.
    require_transversal(pb_, v, opt_.grazing_tolerance, "no sensitivity exists");
    SensitivityTransfer transfer;
    transfer.tau = dt_;
    transfer.s_plus.resize(nx_, np_);
    transfer.cost_integral_jump = Eigen::MatrixXd::Zero(nc_, np_);
    for (int j = 0; j < np_; ++j) {
      jump_tangent(pb_, k, t, x_, p_, dt_[j], S_.col(j), identity_p_.col(j), transfer.s_plus.col(j), ws_);
      for (int c = 0; c < nc_; ++c) {
        transfer.cost_integral_jump(c, j) =
            event_cost_tangent(pb_, c, k, t, x_, p_, dt_[j], S_.col(j), identity_p_.col(j), ws_);
      }
    }
    if (!cut_the_step(k)) add_own_time_shift(v, transfer);
    book_.book_sensitivities(rec, transfer, S_, rest);
    S_ = std::move(transfer.s_plus);
  } else if (kind_ == RunKind::AdjointRecording) {
    require_transversal(pb_, v, opt_.grazing_tolerance, "no adjoint exists");
  }
  x_ = v.x_plus;
  mode_ = v.mode_after;
  book_.close_event(std::move(rec), t);
}

bool DiscreteRun::cut_the_step(int k) const {
  return event_cut_the_step(pb_, log_.steps.back(), k);
}

bool event_cut_the_step(const Problem& problem, const DiscreteStep& step, int k) {
  return step.kind == StepKind::EventCut && (k == step.root_event || k == problem.event(step.root_event).rest_event);
}

void DiscreteRun::add_own_time_shift(const EventValues& v, SensitivityTransfer& transfer) {
  // The step ended at the time of the event that cut it, with tangent dt_. Another event at that
  // instant (a time event due there, an event at t_f, a guard a jump landed on) has a time t_k
  // of its own: perturbed, it fires after a step of length t_k - t_e, whose tangent at length 0
  // is the rate. So its transfer gains c_e delta with delta = dt_k - dt_ = -(r_t dt_ + r_x S +
  // r_p) / r-dot, as a continuous run's transfer (event_transfer.hpp) with tau = delta, and
  // the cost integrals (g- - g+ + c-dot-) delta.
  const Eigen::VectorXd c_e = reset_defect(pb_, v, p_, ws_);
  const Eigen::VectorXd cost_jump = running_cost_jump(pb_, v, p_);
  Eigen::VectorXd cost_rate = Eigen::VectorXd::Zero(nc_);
  for (int c = 0; c < nc_; ++c) {
    if (!pb_.cost(c).has_terms_for(pb_, v.event)) continue;
    cost_rate[c] = event_cost_tangent(pb_, c, v.event, v.time, v.x_minus, p_, 1.0, v.f_minus, zero_p_, ws_);
  }
  for (int j = 0; j < np_; ++j) {
    const double delta =
        -guard_tangent(pb_, v.event, v.time, v.x_minus, p_, dt_[j], S_.col(j), identity_p_.col(j), ws_) / v.guard_rate;
    if (delta == 0.0) continue;
    transfer.tau[j] += delta;
    transfer.s_plus.col(j) += c_e * delta;
    transfer.cost_integral_jump.col(j) += (cost_jump + cost_rate) * delta;
  }
}

void DiscreteRun::finish(double t) {
  if (sens_ && !log_.steps.empty() && log_.steps.back().kind == StepKind::EventCut) hold_final_time(t);
  book_.finish(t, x_, mode_, S_, ws_);
}

Eigen::MatrixXd DiscreteRun::fixed_time_sensitivity(double t) {
  // S moves with the step's end (dt_: an event fell on this output time); the output's time is
  // fixed: the state after the event, the event at or before t (as hold_final_time).
  if (dt_.isZero(0.0)) return S_;
  Eigen::VectorXd f(nx_);
  pb_.mode(mode_).rhs.real(t, x_, p_, f);
  return S_ - f * dt_;
}

void DiscreteRun::hold_final_time(double t) {
  // The last step ended at an event at t_f: its end moves with the event's time (dt_), t_f does
  // not. A step of length t_f - t_e after it, of tangent -f dt_ at length 0, brings the state
  // and the cost integrals back to t_f: the one-sided derivative of an event at t_f, as a
  // continuous run's (docs/events.md).
  S_ = fixed_time_sensitivity(t);
  for (int c = 0; c < nc_; ++c) {
    book_.cost_integral_sensitivity().row(c) -= running_cost(pb_, c, mode_, t, x_, p_) * dt_;
  }
}

// ---- steps ----------------------------------------------------------------------------------

void DiscreteRun::prepare_newton(double h) {
  if (!jacobian_ready_) {
    jacobian_.resize(nx_, nx_);
    rhs_state_jacobian(pb_, mode_, t_, x_, p_, jacobian_, ws_);
    ++jacobian_evals_;
    jacobian_ready_ = true;
    newton_h_ = 0.0;
  }
  if (h == newton_h_) return;
  newton_.lu.compute(Eigen::MatrixXd::Identity(nx_, nx_) - (h * tab_.matrix_gamma()) * jacobian_);
  newton_h_ = h;
}

bool DiscreteRun::try_step(double h, bool all_stages) {
  const int first = tab_.fsal && first_stage_ready_ ? 1 : 0;
  const int last = all_stages ? tab_.stages : tab_.map_stages;
  if (tab_.factors_jacobian()) prepare_newton(h);
  const long iterations = newton_.iterations;
  StageStatus status = StageStatus::Solved;
  std::string model_message;
  try {
    status = evaluate_stages(tab_, pb_, mode_, t_, h, x_, p_, first, last, cur_, &newton_);
  } catch (const ModelError& e) {
    // A trial stage outside the model's domain (a mechanism's position analysis that does not
    // converge there: chain8 in maggi on dopri5 at rtol 1e-6): the step is rejected and
    // shrunk, as for a stage that is not finite; the message stands if the step cannot shrink.
    status = StageStatus::NonFinite;
    model_message = e.what();
  }
  rhs_evals_ += tab_.implicit() ? newton_.iterations - iterations : last - first;
  if (status != StageStatus::Solved) {
    model_error_ = !model_message.empty() ? model_message
                   : status == StageStatus::NonFinite
                       ? fmt::format("the right-hand side or a running cost of mode '{}' is not finite near t = {:.17g}",
                                     pb_.mode(mode_).name, t_)
                       : std::string();
    if (first == 0 && !tab_.factors_jacobian() && !cur_.K.col(0).allFinite()) {
      throw ModelError(fmt::format("the right-hand side of mode '{}' is not finite at t = {:.17g}, x = {}",
                                   pb_.mode(mode_).name, t_, describe_state(pb_, x_)));
    }
    first_stage_ready_ = false;
    return false;
  }
  first_stage_ready_ = true;
  model_error_.clear();  // a trial stage's failure the step recovered from names no later one
  propagate(tab_, h, x_, cur_, x_next_, q_increment_);
  return x_next_.allFinite();
}

double DiscreteRun::initial_step() {
  const double remaining = opt_.tf - t_;
  Eigen::VectorXd f0(nx_);
  pb_.mode(mode_).rhs.real(t_, x_, p_, f0);
  ++rhs_evals_;
  if (!f0.allFinite()) {
    throw ModelError(fmt::format("the right-hand side of mode '{}' is not finite at t = {:.17g}, x = {}",
                                 pb_.mode(mode_).name, t_, describe_state(pb_, x_)));
  }
  Eigen::VectorXd scale(nx_);
  for (int i = 0; i < nx_; ++i) scale[i] = atol_[static_cast<size_t>(i)] + opt_.rtol * std::abs(x_[i]);
  const auto rms = [&](const Eigen::VectorXd& v) { return std::sqrt(v.cwiseQuotient(scale).squaredNorm() / nx_); };
  const double d0 = rms(x_), d1 = rms(f0);
  double h0 = (d0 < 1e-5 || d1 < 1e-5) ? 1e-6 : 0.01 * d0 / d1;
  h0 = std::min(h0, remaining);
  Eigen::VectorXd x1 = x_ + h0 * f0, f1(nx_);
  pb_.mode(mode_).rhs.real(t_ + h0, x1, p_, f1);
  ++rhs_evals_;
  const double d2 = f1.allFinite() ? rms(f1 - f0) / h0 : 0.0;
  const double dmax = std::max(d1, d2);
  const double h1 = dmax <= 1e-15 ? std::max(1e-6, h0 * 1e-3) : std::pow(0.01 / dmax, 1.0 / tab_.order);
  return std::min({100.0 * h0, h1, remaining});
}

double DiscreteRun::error_norm(double h) {
  double sum = 0.0;
  int n = nx_;
  Eigen::VectorXd& err = error_;
  err.noalias() = h * (cur_.K * tab_.e);
  // Implicit stages: the estimate filtered by the Newton matrix, so that stiff components, which
  // the L-stable method damps, do not reject every step (Hairer and Wanner, IV.8).
  if (tab_.implicit()) err = newton_.lu.solve(err);
  for (int i = 0; i < nx_; ++i) {
    const double scale = atol_[static_cast<size_t>(i)] + opt_.rtol * std::max(std::abs(x_[i]), std::abs(x_next_[i]));
    sum += std::pow(err[i] / scale, 2);
  }
  if (opt_.cost_error_control && has_running_cost_) {
    const double atol = opt_.cost_atol < 0.0 ? opt_.atol : opt_.cost_atol;
    const Eigen::VectorXd& q = book_.cost_integral();
    for (int c = 0; c < nc_; ++c) {
      if (!pb_.cost(c).running) continue;
      double err = 0.0;
      for (int j = 0; j < tab_.stages; ++j) err += tab_.e[j] * cur_.G(c, j);
      const double scale = atol + opt_.rtol * std::max(std::abs(q[c]), std::abs(q[c] + q_increment_[c]));
      sum += std::pow(h * err / scale, 2);
      ++n;
    }
  }
  return std::sqrt(sum / std::max(1, n));
}

bool DiscreteRun::crossed(size_t i, double value) const {
  const double start = guard_start_[i];
  if (start == 0.0) return false;
  const Direction d = pb_.event(watched_.events[i]).direction;
  if (d == Direction::Rising && start > 0.0) return false;
  if (d == Direction::Falling && start < 0.0) return false;
  return sign_of(value) != sign_of(start);
}

bool DiscreteRun::reaches_zero(size_t i, double g, double t, In<double> x) {
  const double start = guard_start_[i];
  const Direction d = pb_.event(watched_.events[i]).direction;
  if (start == 0.0 || (d == Direction::Rising && start > 0.0) || (d == Direction::Falling && start < 0.0)) return false;
  Eigen::VectorXd xdot(nx_);
  pb_.mode(mode_).rhs.real(t, x, p_, xdot);
  const GuardRate rate = guard_rate(pb_, watched_.events[i], t, x, p_, xdot, ws_);
  // Within the resolution begin_segment gives a guard left at zero: beyond it, the next segment
  // sees it.
  return std::abs(g) <= zero_resolution(t, rate) && rate.rate * start < 0.0 && !rate.grazing(opt_.grazing_tolerance);
}

double DiscreteRun::locate_root(size_t i, double h_crossed) {
  // Regula falsi with the Illinois modification on the step map itself: R(h) = r(t_n + h,
  // Phi(t_n, h, x_n, p), p). `hi` stays on the crossed side, so the event state is past the
  // surface by round-off at most and the next segment does not see the crossing again.
  const Event& event = pb_.event(watched_.events[i]);
  const auto R = [&](double h) {
    if (!try_step(h, false)) fail_step("a step towards an event failed (a stage not finite or not solved)", h);
    ++guard_evals_;
    return event.guard.real(t_ + h, x_next_, p_);
  };
  const double start = guard_start_[i];
  double lo = 0.0, f_lo = start, hi = h_crossed, f_hi = guard_values_[i];
  int retained = 0;  // +1: hi moved last, -1: lo moved last
  for (int iteration = 0; iteration < 200; ++iteration) {
    if (hi - lo <= 4.0 * kEps * std::max(std::abs(t_ + hi), 1e-300)) break;
    double h = hi - f_hi * (hi - lo) / (f_hi - f_lo);
    if (!(h > lo && h < hi)) h = 0.5 * (lo + hi);
    const double f = R(h);
    if (sign_of(f) != sign_of(start)) {
      hi = h, f_hi = f;
      if (retained == 1) f_lo *= 0.5;
      retained = 1;
      if (f == 0.0) break;
    } else {
      lo = h, f_lo = f;
      if (retained == -1) f_hi *= 0.5;
      retained = -1;
    }
  }
  return hi;
}

bool DiscreteRun::take_step() {
  throw_if_interrupted(t_);
  const double remaining = opt_.tf - t_;
  double h = std::min(h_next_, remaining);
  bool final_step = h >= remaining || t_ + 1.01 * h >= opt_.tf;
  if (final_step) h = remaining;
  bool rejected = false;
  int non_finite = 0;
  double err = 0.0;
  while (true) {
    if (!(h > 16.0 * kEps * std::max(1.0, std::abs(t_)))) fail_step("the step size fell below the time resolution", h);
    if (!try_step(h, true)) {
      if (++non_finite > kMaxNonFiniteTries) throw ModelError(model_error_);
      h *= 0.25, final_step = false, rejected = true;
      continue;
    }
    err = error_norm(h);
    if (err <= 1.0) break;
    ++rejected_;
    h *= std::max(0.2, 0.9 * std::pow(err, -1.0 / (tab_.error_order + 1)));
    final_step = false, rejected = true;
  }
  const double growth = err == 0.0 ? 5.0 : std::clamp(0.9 * std::pow(err, -1.0 / (tab_.error_order + 1)), 0.2, 5.0);
  h_next_ = h * (rejected ? std::min(1.0, growth) : growth);

  // Guards at the step's end: the first crossing cuts the step.
  int first = -1;
  double h_event = h;
  for (size_t i = 0; i < watched_.events.size(); ++i) {
    guard_values_[i] = pb_.event(watched_.events[i]).guard.real(t_ + h, x_next_, p_);
    ++guard_evals_;
    if (!std::isfinite(guard_values_[i])) fail_step("a guard is not finite at the end of a step", h);
  }
  for (size_t i = 0; i < watched_.events.size(); ++i) {
    if (!crossed(i, guard_values_[i])) continue;
    const double root = locate_root(i, h);
    if (first < 0 || root < h_event) first = static_cast<int>(i), h_event = root;
  }
  if (first < 0) {
    commit(h, final_step ? StepKind::Final : StepKind::Frozen, -1);
    for (size_t i = 0; i < guard_values_.size(); ++i) {
      if (guard_values_[i] != 0.0) guard_start_[i] = guard_values_[i];
    }
    return false;
  }
  if (!try_step(h_event, true)) fail_step("the step cut at an event failed (a stage not finite or not solved)", h_event);
  for (size_t i = 0; i < watched_.events.size(); ++i) {
    const double g = static_cast<int>(i) == first ? 0.0 : pb_.event(watched_.events[i]).guard.real(t_ + h_event, x_next_, p_);
    fired_[i] = static_cast<int>(i) == first || crossed(i, g) || reaches_zero(i, g, t_ + h_event, x_next_) ? 1 : 0;
  }
  commit(h_event, StepKind::EventCut, watched_.events[static_cast<size_t>(first)]);
  pending_roots_ = true;
  return true;
}

void DiscreteRun::commit(double h, StepKind kind, int root_event) {
  last_.t = t_;
  last_.h = h;
  last_.x = x_;
  last_.q = book_.cost_integral();
  if (sens_) tangent_step(h, kind, root_event);
  const size_t events = book_.events().size();
  log_.steps.push_back(DiscreteStep{t_, h, mode_, kind, root_event, events, events});
  if (kind_ == RunKind::AdjointRecording) log_.store(x_, opt_.adjoint_memory_budget);
  std::swap(cur_, prev_);
  have_last_ = true;
  t_ = kind == StepKind::Final ? opt_.tf : t_ + h;
  x_ = x_next_;
  book_.cost_integral() += q_increment_;
  const int s = tab_.stages;
  jacobian_ready_ = false;
  first_stage_ready_ = tab_.fsal && kind != StepKind::EventCut;
  if (first_stage_ready_) {
    cur_.Y.col(0) = x_;
    cur_.K.col(0) = prev_.K.col(s - 1);
    cur_.G.col(0) = prev_.G.col(s - 1);
  }
  if (++steps_since_output_ > opt_.max_steps) {
    throw SolverError(fmt::format("{} took more than Options::max_steps = {} steps between two outputs, at t = "
                                  "{:.17g} in mode '{}' (a stiff problem? use cvodes)",
                                  tab_.name, opt_.max_steps, t_, pb_.mode(mode_).name));
  }
  report_progress(opt_, phase_name(kind_), t_, static_cast<long>(book_.events().size()));
}

// ---- the discrete tangent-linear model --------------------------------------------------------

void DiscreteRun::stage_tangents(double h, double dt, double dh, In<double> dx, In<double> dp, Eigen::MatrixXd& dK,
                                 Eigen::MatrixXd& dG, Eigen::VectorXd& dx_next, Eigen::VectorXd& dq) {
  if (tab_.rosenbrock) {
    rosenbrock_tangents(h, dt, dh, dx, dp, dK, dG, dx_next, dq);
    return;
  }
  dK.resize(nx_, tab_.stages);
  dG.setZero(nc_, tab_.stages);
  Eigen::VectorXd& dY = tangent_.dY;
  for (int i = 0; i < tab_.map_stages; ++i) {
    dY = dx;
    for (int j = 0; j < i; ++j) {
      if (tab_.a(i, j) != 0.0) dY += tab_.a(i, j) * (dh * cur_.K.col(j) + h * dK.col(j));
    }
    const double ti = t_ + tab_.c[i] * h, dti = dt + tab_.c[i] * dh;
    if (tab_.implicit_stage(i)) {
      // Y_i = z_i + h g K_i with K_i = f(T_i, Y_i): (I - h g f_x) dY = dz + dh g K_i + h g (f_t dT + f_p dp).
      const double gamma = tab_.a(i, i);
      rhs_tangent(pb_, mode_, ti, cur_.Y.col(i), p_, dti, zero_x_, dp, dK.col(i), ws_);
      dY += dh * gamma * cur_.K.col(i) + (h * gamma) * dK.col(i);
      dY = stage_lu_[static_cast<size_t>(i)].solve(dY);
    }
    rhs_tangent(pb_, mode_, ti, cur_.Y.col(i), p_, dti, dY, dp, dK.col(i), ws_);
    if (has_running_cost_) {
      // G_i = g(T_i, Y_i, K_i, p) with the slope's tangent just computed: no second f evaluation.
      running_cost_tangents_at_rate(pb_, ti, cur_.Y.col(i), cur_.K.col(i), p_, dti, dY, dK.col(i), dp, dG.col(i), ws_);
    }
  }
  dx_next = dx;
  dq.setZero(nc_);
  for (int i = 0; i < tab_.map_stages; ++i) {
    if (tab_.b[i] == 0.0) continue;
    dx_next += tab_.b[i] * (dh * cur_.K.col(i) + h * dK.col(i));
    dq += tab_.b[i] * (dh * cur_.G.col(i) + h * dG.col(i));
  }
}

void DiscreteRun::rosenbrock_tangents(double h, double dt, double dh, In<double> dx, In<double> dp,
                                      Eigen::MatrixXd& dK, Eigen::MatrixXd& dG, Eigen::VectorXd& dx_next,
                                      Eigen::VectorXd& dq) {
  // The step evaluated in Dual numbers: its Jacobian products carry their own derivatives
  // (second derivatives of f by HyperDual numbers, stages.hpp), so the tangent is exact.
  auto& w = rosenbrock_;
  for (int k = 0; k < nx_; ++k) w.x[k] = make_dual(x_[k], dx[k]);
  for (int k = 0; k < np_; ++k) w.p[k] = make_dual(p_[k], dp[k]);
  const Dual t = make_dual(t_, dt), hd = make_dual(h, dh);
  if (evaluate_stages<Dual>(tab_, pb_, mode_, t, hd, w.x, w.p, 0, tab_.map_stages, w.st, &newton_) !=
      StageStatus::Solved) {
    throw ModelError(fmt::format("the sensitivities of the {} step at t = {:.17g} (h = {:.3g}) in mode '{}' are not "
                                 "finite",
                                 tab_.name, t_, h, pb_.mode(mode_).name));
  }
  propagate<Dual>(tab_, hd, w.x, w.st, w.x_next, w.q);
  dK.resize(nx_, tab_.stages);
  dG.setZero(nc_, tab_.stages);
  for (int i = 0; i < tab_.map_stages; ++i) {
    for (int k = 0; k < nx_; ++k) dK(k, i) = w.st.K(k, i).v[0];
    for (int c = 0; c < nc_; ++c) dG(c, i) = w.st.G(c, i).v[0];
  }
  dx_next.resize(nx_);
  dq.resize(nc_);
  for (int k = 0; k < nx_; ++k) dx_next[k] = w.x_next[k].v[0];
  for (int c = 0; c < nc_; ++c) dq[c] = w.q[c].v[0];
}

void DiscreteRun::factor_stage_jacobians(double h) {
  stage_lu_.resize(static_cast<size_t>(tab_.stages));
  Eigen::MatrixXd& fx = tangent_.fx;
  fx.resize(nx_, nx_);
  for (int i = 0; i < tab_.map_stages; ++i) {
    if (!tab_.implicit_stage(i)) continue;
    rhs_state_jacobian(pb_, mode_, t_ + tab_.c[i] * h, cur_.Y.col(i), p_, fx, ws_);
    ++jacobian_evals_;
    stage_lu_[static_cast<size_t>(i)].compute(Eigen::MatrixXd::Identity(nx_, nx_) - (h * tab_.a(i, i)) * fx);
  }
}

void DiscreteRun::tangent_step(double h, StepKind kind, int root_event) {
  if (tab_.implicit()) factor_stage_jacobians(h);
  if (tab_.rosenbrock) prepare_newton(h);
  last_.S = S_;
  last_.dq = book_.cost_integral_sensitivity();
  last_.dt = dt_;
  last_.dh = Eigen::RowVectorXd::Zero(np_);
  last_.dK.resize(static_cast<size_t>(np_));
  last_.dG.resize(static_cast<size_t>(np_));
  last_.last_stage_tangent = false;
  // A step cut at an event: the tangent along h, and the guard's rate along the step map.
  auto& w = tangent_;
  double rate = 0.0;
  if (kind == StepKind::EventCut) {
    stage_tangents(h, 0.0, 1.0, zero_x_, zero_p_, w.dK_h, w.dG_h, w.dx_h, w.dq_h);
    rate = guard_tangent(pb_, root_event, t_ + h, x_next_, p_, 1.0, w.dx_h, zero_p_, ws_);
    if (!(rate != 0.0)) {
      throw GrazingError(fmt::format("event '{}' at t = {:.17g}: its guard does not cross along the step "
                                     "(rate 0): the event time has no derivative",
                                     pb_.event(root_event).name, t_ + h));
    }
  }
  w.S_next.resize(nx_, np_);
  w.dq_total.resize(nc_, np_);
  for (int j = 0; j < np_; ++j) {
    const double dt = dt_[j];
    double dh = kind == StepKind::Final ? -dt : 0.0;
    auto& dK = last_.dK[static_cast<size_t>(j)];
    auto& dG = last_.dG[static_cast<size_t>(j)];
    stage_tangents(h, dt, dh, S_.col(j), identity_p_.col(j), dK, dG, w.dx_next, w.dq);
    if (kind == StepKind::EventCut) {
      dh = -guard_tangent(pb_, root_event, t_ + h, x_next_, p_, dt, w.dx_next, identity_p_.col(j), ws_) / rate;
      w.dx_next += dh * w.dx_h;
      w.dq += dh * w.dq_h;
      dK += dh * w.dK_h;
      dG += dh * w.dG_h;
    }
    last_.dh[j] = dh;
    w.S_next.col(j) = w.dx_next;
    w.dq_total.col(j) = w.dq;
    dt_[j] = kind == StepKind::Final ? 0.0 : dt + dh;
  }
  std::swap(S_, w.S_next);
  book_.cost_integral_sensitivity() += w.dq_total;
}

void DiscreteRun::interpolate(double t, Eigen::VectorXd& x, Eigen::VectorXd& q, Eigen::MatrixXd* S) {
  if (tab_.dense_weights == nullptr) {
    interpolate_hermite(t, x, q, S);
    return;
  }
  const int s = tab_.stages;
  const double h = last_.h, theta = (t - last_.t) / h;
  Eigen::VectorXd w(s), dw(s);
  tab_.dense_weights(theta, w, dw);
  x = last_.x + h * (prev_.K * w);
  q = last_.q + h * (prev_.G * w);
  if (S == nullptr) return;
  // The tangent of u = x_n + h sum w_i(theta) K_i with theta = (t - t_n) / h at fixed t.
  const Eigen::VectorXd slope = prev_.K * dw;  // h du/dt
  S->resize(nx_, np_);
  const double t_end = last_.t + h;
  for (int j = 0; j < np_; ++j) {
    auto& dK = last_.dK[static_cast<size_t>(j)];
    if (!last_.last_stage_tangent) {
      // The last stage sits at the step's end: its tangent from the end's (S_, dt_n + dh).
      const double dt_end = last_.dt[j] + last_.dh[j];
      rhs_tangent(pb_, mode_, t_end, prev_.Y.col(s - 1), p_, dt_end, S_.col(j), identity_p_.col(j),
                  dK.col(s - 1), ws_);
    }
    const double dh = last_.dh[j];
    S->col(j) = last_.S.col(j) + dh * (prev_.K * w) + h * (dK * w) - (last_.dt[j] + theta * dh) * slope;
  }
  last_.last_stage_tangent = true;
}

void DiscreteRun::interpolate_hermite(double t, Eigen::VectorXd& x, Eigen::VectorXd& q, Eigen::MatrixXd* S) {
  // Called before the events at the step's end are applied: x_, S_ and the cost integrals are
  // still the step's end values.
  const double h = last_.h, theta = (t - last_.t) / h, t1 = last_.t + h, s1 = 1.0 - theta;
  const double h00 = (1.0 + 2.0 * theta) * s1 * s1, h10 = theta * s1 * s1, h01 = theta * theta * (3.0 - 2.0 * theta),
               h11 = theta * theta * (theta - 1.0);
  const double d00 = 6.0 * theta * theta - 6.0 * theta, d10 = 3.0 * theta * theta - 4.0 * theta + 1.0,
               d01 = -d00, d11 = 3.0 * theta * theta - 2.0 * theta;
  Eigen::VectorXd f0(nx_), f1(nx_), g0 = Eigen::VectorXd::Zero(nc_), g1 = Eigen::VectorXd::Zero(nc_);
  pb_.mode(mode_).rhs.real(last_.t, last_.x, p_, f0);
  pb_.mode(mode_).rhs.real(t1, x_, p_, f1);
  for (int c = 0; c < nc_; ++c) {
    g0[c] = running_cost(pb_, c, mode_, last_.t, last_.x, p_);
    g1[c] = running_cost(pb_, c, mode_, t1, x_, p_);
  }
  x = h00 * last_.x + (h10 * h) * f0 + h01 * x_ + (h11 * h) * f1;
  q = h00 * last_.q + (h10 * h) * g0 + h01 * book_.cost_integral() + (h11 * h) * g1;
  if (S == nullptr) return;
  const Eigen::VectorXd du_dtheta = d00 * last_.x + (d10 * h) * f0 + d01 * x_ + (d11 * h) * f1;
  Eigen::VectorXd df0(nx_), df1(nx_);
  S->resize(nx_, np_);
  for (int j = 0; j < np_; ++j) {
    const double dt0 = last_.dt[j], dh = last_.dh[j];
    rhs_tangent(pb_, mode_, last_.t, last_.x, p_, dt0, last_.S.col(j), identity_p_.col(j), df0, ws_);
    rhs_tangent(pb_, mode_, t1, x_, p_, dt0 + dh, S_.col(j), identity_p_.col(j), df1, ws_);
    S->col(j) = h00 * last_.S.col(j) + h01 * S_.col(j) + h10 * (dh * f0 + h * df0) + h11 * (dh * f1 + h * df1) +
                du_dtheta * ((-dt0 - theta * dh) / h);
  }
}

[[noreturn]] void DiscreteRun::fail_step(const char* reason, double h) {
  if (!model_error_.empty()) {
    throw ModelError(fmt::format("{} ({} at t = {:.17g}, h = {:.3g})", model_error_, tab_.name, t_, h));
  }
  throw SolverError(fmt::format("{} failed at t = {:.17g} in mode '{}': {} (h = {:.3g})", tab_.name, t_,
                                pb_.mode(mode_).name, reason, h));
}

}  // namespace saltus::detail
