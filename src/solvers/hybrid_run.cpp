// A hybrid run segment by segment on CVODES: simulation, forward sensitivities, adjoint recording.
// The event transfer is event_transfer.hpp's (docs/theory/hybrid-ode.md sections 3-5).
#include "hybrid_run.hpp"

#include <saltus/core/same_bits.hpp>
#include <saltus/solvers/event_transfer.hpp>
#include <saltus/solvers/solver_messages.hpp>

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <utility>

#include "checkpoint_interval.hpp"
#include "event_log.hpp"
#include "guard_rate.hpp"
#include "sundials_footprint.hpp"

namespace saltus::detail {

HybridRun::HybridRun(const Problem& problem, const Eigen::VectorXd& p, const Options& options,
                     RunKind kind)
    : pb_(problem),
      p_(p),
      opt_(options),
      kind_(kind),
      sens_(kind == RunKind::ForwardSensitivity),
      nx_(problem.n_states()),
      np_(problem.n_parameters()),
      nc_(problem.n_costs()),
      book_(pb_, p_, opt_, sens_, phase_name(kind)),
      ledger_(options.adjoint_memory_budget) {
  pb_.validate();
  validate(opt_, nx_, np_);
  pb_.validate_parameters(p_);
  for (int c = 0; c < nc_; ++c) has_running_cost_ |= static_cast<bool>(pb_.cost(c).running);
  recorded_quadratures_ = has_running_cost_ ? nc_ : 0;
  last_rate_.kept = has_running_cost_ && pb_.running_costs_read_rates();
  // The backward pass integrates lambda (n_x per cost) with the gradient quadratures (n_p per
  // cost) on the recording of one segment at a time.
  backward_bytes_ = CvodesSession::backward_bytes(nx_ * nc_, np_ * nc_, opt_, nx_);
  identity_p_ = Eigen::MatrixXd::Identity(np_, np_);
  zero_p_ = Eigen::VectorXd::Zero(np_);
  xdot_.resize(nx_);
  fx_.resize(nx_, nx_);
  fp_.resize(nx_, np_);
  sensitivities_.resize(nx_, np_);
  sensitivity_rates_.resize(nx_, np_);
  cost_tangents_.resize(nc_, np_);
}

int HybridRun::non_finite(std::string message) {
  return recoverable_failure(model_error_, failed_evaluations_, std::move(message));
}

int HybridRun::non_finite_cost_sensitivities(double t, const Eigen::Ref<const Eigen::VectorXd>& x) {
  return non_finite(fmt::format("the sensitivities of the running costs in mode '{}' are not finite at t = {:.17g}, x = {}",
                                pb_.mode(mode_).name, t, describe_state(pb_, x)));
}

int HybridRun::non_finite(const char* what, double t, const Eigen::Ref<const Eigen::VectorXd>& x) {
  return non_finite(
      fmt::format("{} of mode '{}' is not finite at t = {:.17g}, x = {}", what, pb_.mode(mode_).name, t, describe_state(pb_, x)));
}

int HybridRun::rhs_cb(sunrealtype t, N_Vector y, N_Vector ydot, void* self_ptr) {
  auto* self = static_cast<HybridRun*>(self_ptr);
  // A model error at a trial state is recoverable (recoverable_callback): the vehicle's maggi
  // simulation predicted a wheel's Euler parameter e0, in the independent set, at 1 + 5.6e-7,
  // where no unit quaternion has it, and stopped at t = 2.27.
  return detail::recoverable_callback(self->model_error_, self->failed_evaluations_, [&]() -> int {
  auto x = view(y);
  auto out = view(ydot);
  self->evaluate_rate(t, x, out);
  return out.allFinite() ? 0 : self->non_finite("the right-hand side", t, x);
  });
}

void HybridRun::evaluate_rate(double t, const Eigen::Ref<const Eigen::VectorXd>& x, Eigen::Ref<Eigen::VectorXd> xdot) {
  LastRate& last = last_rate_;
  if (last.kept && last.valid && last.mode == mode_ && same_bits(last.t, t) && same_bits_entries(last.x, x)) {
    xdot = last.xdot;  // the same point's right-hand side, bit for bit
    return;
  }
  pb_.mode(mode_).rhs.real(t, x, p_, xdot);
  if (!last.kept) return;
  last.valid = true;
  last.mode = mode_;
  last.t = t;
  last.x = x;  // sized once: no allocation after the first call
  last.xdot = xdot;
}

int HybridRun::jacobian_cb(sunrealtype t, N_Vector y, N_Vector, SUNMatrix J, void* self_ptr,
                           N_Vector, N_Vector, N_Vector) {
  auto* self = static_cast<HybridRun*>(self_ptr);
  return detail::recoverable_callback(self->model_error_, self->failed_evaluations_, [&]() -> int {
  auto x = view(y);
  Eigen::Map<Eigen::MatrixXd> jac(SM_DATA_D(J), self->nx_, self->nx_);
  rhs_state_jacobian(self->pb_, self->mode_, t, x, self->p_, jac, self->ws_);
  return jac.allFinite() ? 0 : self->non_finite("the Jacobian of the right-hand side", t, x);
  });
}

int HybridRun::jacobian_times_cb(N_Vector v, N_Vector Jv, sunrealtype t, N_Vector y, N_Vector, void* self_ptr,
                                 N_Vector) {
  auto* self = static_cast<HybridRun*>(self_ptr);
  return detail::recoverable_callback(self->model_error_, self->failed_evaluations_, [&]() -> int {
    auto out = view(Jv);
    rhs_tangent(self->pb_, self->mode_, t, view(y), self->p_, 0.0, view(v), self->zero_p_, out, self->ws_);
    return out.allFinite() ? 0 : self->non_finite("the Jacobian product of the right-hand side", t, view(y));
  });
}

int HybridRun::roots_cb(sunrealtype t, N_Vector y, sunrealtype* g, void* self_ptr) {
  auto* self = static_cast<HybridRun*>(self_ptr);
  return detail::guarded_callback(self->model_error_, [&]() -> int {
  const int failed = evaluate_guards<double>(self->pb_, self->watched_, t, view(y), self->p_, g, self->model_error_);
  if (failed != 0) return failed;
  const auto interpolate = [self](double at, Eigen::VectorXd& x, Eigen::VectorXd&) {
    return self->cv_->interpolate(at, x);
  };
  g[self->watched_.events.size()] =
      self->excursions_.sentinel(self->pb_, self->watched_, t, g, self->p_, interpolate);
  return 0;
  });
}

int HybridRun::quadrature_cb(sunrealtype t, N_Vector y, N_Vector q, void* self_ptr) {
  auto* self = static_cast<HybridRun*>(self_ptr);
  return detail::recoverable_callback(self->model_error_, self->failed_evaluations_, [&]() -> int {
  auto x = view(y);
  auto out = view(q);
  if (self->last_rate_.kept) {
    self->evaluate_rate(t, x, self->xdot_);
  } else {
    self->xdot_.setZero();  // no running cost reads it (RateUse::Ignores)
  }
  for (int c = 0; c < self->nc_; ++c) {
    const auto& g = self->pb_.cost(c).running;
    out[c] = g ? g.real(t, x, self->xdot_, self->p_) : 0.0;
  }
  for (int c = 0; c < self->nc_; ++c) {
    if (!std::isfinite(out[c])) {
      return self->non_finite(fmt::format("the running cost of '{}' is {} at t = {:.17g}, x = {}", self->pb_.cost(c).name,
                                          std::isnan(out[c]) ? "nan" : "infinite", t, describe_state(self->pb_, x)));
    }
  }
  return 0;
  });
}

int HybridRun::sensitivity_cb(int ns, sunrealtype t, N_Vector y, N_Vector, N_Vector* yS,
                              N_Vector* ySdot, void* self_ptr, N_Vector, N_Vector) {
  auto* self = static_cast<HybridRun*>(self_ptr);
  return detail::recoverable_callback(self->model_error_, self->failed_evaluations_, [&]() -> int {
  auto x = view(y);
  const Mode& mode = self->pb_.mode(self->mode_);
  const bool analytic = mode.jacobian && mode.jacobian->state && mode.jacobian->parameters;
  if (analytic) {
    mode.jacobian->state(t, x, self->p_, self->fx_);
    mode.jacobian->parameters(t, x, self->p_, self->fp_);
  }
  if (!analytic && mode.rhs_tangents) {
    // Every direction from one evaluation per block (Problem::set_block_tangents).
    for (int j = 0; j < ns; ++j) self->sensitivities_.col(j) = view(yS[j]);
    rhs_tangents(self->pb_, self->mode_, t, x, self->p_, self->sensitivities_.leftCols(ns),
                 self->identity_p_.leftCols(ns), self->sensitivity_rates_.leftCols(ns), self->ws_);
    for (int j = 0; j < ns; ++j) view(ySdot[j]) = self->sensitivity_rates_.col(j);
    return self->sensitivity_rates_.leftCols(ns).allFinite() ? 0 : self->non_finite("the sensitivities' right-hand side", t, x);
  }
  for (int j = 0; j < ns; ++j) {
    auto s = view(yS[j]);
    auto out = view(ySdot[j]);
    if (analytic) {
      out.noalias() = self->fx_ * s + self->fp_.col(j);
    } else {
      rhs_tangent(self->pb_, self->mode_, t, x, self->p_, 0.0, s, self->identity_p_.col(j), out,
                  self->ws_);
    }
    if (!out.allFinite()) return self->non_finite("the sensitivities' right-hand side", t, x);
  }
  return 0;
  });
}

int HybridRun::quadrature_sensitivity_cb(int ns, sunrealtype t, N_Vector y, N_Vector* yS,
                                         N_Vector, N_Vector* qS, void* self_ptr, N_Vector,
                                         N_Vector) {
  auto* self = static_cast<HybridRun*>(self_ptr);
  return detail::recoverable_callback(self->model_error_, self->failed_evaluations_, [&]() -> int {
  auto x = view(y);
  if (self->pb_.mode(self->mode_).rhs_tangents) {
    // Every direction's rates from one evaluation per block (Problem::set_block_tangents).
    for (int j = 0; j < ns; ++j) self->sensitivities_.col(j) = view(yS[j]);
    // The rates at this point: CVODES evaluated the quadrature here a moment ago (LastRate).
    const Eigen::VectorXd* rates = nullptr;
    if (self->last_rate_.kept) {
      self->evaluate_rate(t, x, self->xdot_);
      rates = &self->xdot_;
    }
    running_cost_tangents(self->pb_, self->mode_, t, x, self->p_, self->sensitivities_.leftCols(ns),
                          self->identity_p_.leftCols(ns), self->cost_tangents_.leftCols(ns), self->ws_, rates);
    for (int j = 0; j < ns; ++j) view(qS[j]) = self->cost_tangents_.col(j);
    return self->cost_tangents_.leftCols(ns).allFinite() ? 0 : self->non_finite_cost_sensitivities(t, x);
  }
  for (int j = 0; j < ns; ++j) {
    auto s = view(yS[j]);
    auto out = view(qS[j]);
    running_cost_tangents(self->pb_, self->mode_, t, x, self->p_, 0.0, s,
                          self->identity_p_.col(j), out, self->ws_);
    if (!out.allFinite()) return self->non_finite_cost_sensitivities(t, x);
  }
  return 0;
  });
}

void HybridRun::begin_segment(double t) {
  if (kind_ == RunKind::AdjointRecording) start_recording(t);
  view(cv_->y()) = x_;
  for (int j = 0; j < cv_->ns(); ++j) view(cv_->yS(j)) = S_.col(j);
  // The cost quadratures continue from their totals rather than from zero: their error weights
  // rtol |q| + atol then stay relative. Restarted from zero at every event they were purely
  // absolute, and with growing sensitivities their integrands forced steps down to t + h = t,
  // where an event is detected again at the same instant (a false Zeno cascade).
  if (cv_->nq() > 0) {
    view(cv_->q()) = book_.cost_integral();
    for (int j = 0; j < cv_->ns(); ++j) view(cv_->qS(j)) = book_.cost_integral_sensitivity().col(j);
  }
  cv_->start(t);
  watched_ = watched_events(pb_, mode_);
  watch_return_crossings(pb_, watched_, roots_.on_the_guard(), mode_, t, x_, p_,
                         opt_.grazing_tolerance, ws_);
  hold_guards_near_zero(pb_, watched_, mode_, t, x_, p_, opt_, ws_);
  excursions_.reset();
  std::vector<int> directions = watched_.directions;
  if (!directions.empty()) directions.push_back(0);  // the excursions' sentinel (GuardExcursions)
  cv_->set_roots(directions);
  segment_advanced_ = false;
  if (kind_ == RunKind::AdjointRecording) account(segments_.back());
}

namespace {
/// The snapshot's heap bytes: its record in the segment list and its two vectors.
long snapshot_bytes(const RecordedSegment& s) {
  return static_cast<long>(sizeof(RecordedSegment)) +
         footprint::heap_block(static_cast<long>(s.x_start.size() * sizeof(double))) +
         footprint::heap_block(static_cast<long>(s.q_start.size() * sizeof(double)));
}
}  // namespace

void HybridRun::account(RecordedSegment& s) {
  ledger_.update(s.accounted_bytes, snapshot_bytes(s) + (s.session ? s.session->held_bytes() : 0));
}

void HybridRun::release(RecordedSegment& s) {
  s.session.reset();
  account(s);
}

long HybridRun::headroom() const {
  // The backward problem of one segment, and the check point the current recording may add
  // before the next look at the budget (CvodesSession::advance pauses at every check point).
  return backward_bytes_ + CvodesSession::checkpoint_bytes(nx_, recorded_quadratures_, opt_);
}

void HybridRun::start_recording(double t) {
  RecordedSegment seg;
  seg.mode = mode_;
  seg.t_start = t;
  seg.x_start = x_;
  if (recorded_quadratures_ > 0) seg.q_start = book_.cost_integral();
  // The events applied since the previous segment started are those at its end.
  seg.events_begin = segments_.empty() ? 0 : segments_.back().events_end;
  seg.events_end = book_.solution().events.size();
  segments_.push_back(std::move(seg));
  RecordedSegment& s = segments_.back();
  account(s);
  // A session of its own per segment, so that its check points end at this segment's event.
  // It records if that fits the budget once older recordings are released; otherwise it only
  // integrates, and the backward pass recomputes the segment with fewer check points.
  // The ledger releases older recordings to make room (make_room), so only the budget's share
  // caps the spacing here.
  s.checkpoint_steps = checkpoint_interval(opt_, nx_, latest_segment_steps(segments_),
                                           footprint::hermite_point(nx_), opt_.adjoint_memory_budget);
  const long needed =
      CvodesSession::recording_bytes(nx_, recorded_quadratures_, opt_, s.checkpoint_steps) + headroom();
  make_room(needed);
  const long checkpoint_steps = ledger_.fits(needed) ? s.checkpoint_steps : 0;
  s.session = std::make_unique<CvodesSession>(nx_, recorded_quadratures_, 0, opt_, callbacks_,
                                              this, state_atol(opt_, nx_), std::vector<double>{},
                                              std::vector<double>{}, checkpoint_steps);
  cv_ = s.session.get();
  account(s);
}

void HybridRun::make_room(long extra) {
  // Oldest first: the backward pass needs them last, and the recordings kept are then the
  // newest ones, used one after the other as soon as the backward pass starts.
  while (!ledger_.fits(extra) && oldest_kept_ + 1 < segments_.size()) {
    RecordedSegment& old = segments_[oldest_kept_++];
    if (old.session) release(old);
  }
}

void HybridRun::keep_within_budget() {
  RecordedSegment& s = segments_.back();
  account(s);
  if (!s.recorded()) return;
  make_room(headroom());
  if (ledger_.fits(headroom())) return;
  // This segment alone outgrows the budget: it continues without check points (the same steps)
  // and is recomputed with check points sized for the budget.
  s.session->stop_recording();
  account(s);
}

void HybridRun::finish_recording() {
  RecordedSegment& s = segments_.back();
  s.steps = cv_->steps();
  if (segment_advanced_) s.initial_step = cv_->initial_step();
  if (s.recorded()) {
    cv_->measure_checkpoints();
    account(s);
  } else {
    cv_ = nullptr;
    release(s);  // the integrator that did not record is of no use to the backward pass
  }
}

Reached HybridRun::advance(double tout, double& t) {
  int flag = CvodesSession::kPaused;
  while (flag == CvodesSession::kPaused) {
    flag = cv_->advance(tout, t);
    if (kind_ == RunKind::AdjointRecording) keep_within_budget();
  }
  if (flag < 0) fail(flag, t);
  // A non-finite evaluation the integrator recovered from names no later integrator failure,
  // only a failed read of this advance's solution (read_solution).
  recovered_error_ = std::exchange(model_error_, {});
  if (kind_ == RunKind::AdjointRecording && !segments_.empty()) segments_.back().recovered_failures += failed_evaluations_;
  failed_evaluations_ = 0;
  segment_advanced_ = true;
  if (flag == CV_ROOT_RETURN) {
    fired_ = excursions_.guard_roots(cv_->root_info(), watched_.events.size());
    return Reached::Roots;
  }
  if (kind_ == RunKind::AdjointRecording && t == opt_.tf) {
    const auto x = view(cv_->y());
    Eigen::VectorXd xdot(nx_);
    pb_.mode(mode_).rhs.real(t, x, p_, xdot);
    fired_ = roots_at_the_final_time(pb_, watched_, mode_, t, x, xdot, p_, opt_.grazing_tolerance, ws_);
    if (!fired_.empty()) return Reached::Roots;
  }
  return Reached::Output;
}

long HybridRun::recomputation_checkpoint_steps(const RecordedSegment& s) const {
  const long steps = s.checkpoint_steps;
  const long checkpoint = CvodesSession::checkpoint_bytes(nx_, recorded_quadratures_, opt_);
  const auto bytes = [&](long k) {
    return CvodesSession::recording_bytes(nx_, recorded_quadratures_, opt_, k) +
           (s.steps / k + 1) * checkpoint;
  };
  // The same check points as the forward pass repeat its steps exactly; when they do not fit,
  // fewer Hermite points and more check points: their sum is smallest where the two are equal,
  // at sqrt(N checkpoint / point) steps between check points.
  if (ledger_.fits(bytes(steps) + backward_bytes_)) return steps;
  const double optimum = std::sqrt(static_cast<double>(s.steps) * static_cast<double>(checkpoint) /
                                   static_cast<double>(footprint::hermite_point(nx_)));
  return std::clamp(std::lround(optimum), 1L, std::max(1L, s.steps));
}

void HybridRun::recompute(RecordedSegment& s) {
  // One advance to t_end instead of one per output time: the step limit (per advance) must
  // allow the segment's own steps on top of Options::max_steps.
  Options o = opt_;
  o.max_steps = opt_.max_steps + s.steps;
  s.session = std::make_unique<CvodesSession>(
      nx_, recorded_quadratures_, 0, o, callbacks_, this, state_atol(opt_, nx_),
      std::vector<double>{}, std::vector<double>{}, recomputation_checkpoint_steps(s));
  CvodesSession& cv = *s.session;
  view(cv.y()) = s.x_start;
  if (cv.nq() > 0) view(cv.q()) = s.q_start;
  cv.start(s.t_start);
  cv.set_initial_step(s.initial_step);  // no roots: the segment ends at t_end, not at its event
  account(s);
  mode_ = s.mode;
  model_error_.clear();
  // The forward pass's recovered failures of the whole segment come again in this one advance.
  failed_evaluations_ = -static_cast<int>(std::min<long>(s.recovered_failures, 1L << 30));
  double t = s.t_start;
  int flag = CvodesSession::kPaused;
  while (flag == CvodesSession::kPaused) {
    flag = cv.advance(s.t_end, t);
    account(s);
    if (flag < 0) fail_recomputation(s, flag, t);
  }
  cv.measure_checkpoints();
  account(s);
  ++recomputed_;
}

CvodesSession& HybridRun::recording(RecordedSegment& s) {
  if (!s.recorded()) recompute(s);
  return *s.session;
}

void HybridRun::fail_recomputation(const RecordedSegment& s, int flag, double t) {
  throw_if_interrupted(t);
  const std::string context = fmt::format(
      "at t = {:.17g} while recomputing the segment [{:.17g}, {:.17g}] in mode '{}' for the "
      "backward pass",
      t, s.t_start, s.t_end, pb_.mode(s.mode).name);
  const std::string recovered = blame_model_error(model_error_, flag, flag_name(flag), context);
  throw SolverError(fmt::format("CVODES failed with {} {}{}{}", flag_name(flag), context,
                                pb_.diagnose_failure(t, view(s.session->y()), p_), recovered));
}

template <class Read>
void HybridRun::read_solution(double t, Read&& read) {
  try {
    read();
  } catch (const SolverError& e) {
    if (recovered_error_.empty()) throw;
    throw ModelError(fmt::format("{} ({} at t = {:.17g} in mode '{}')", recovered_error_, e.what(), t,
                                 pb_.mode(mode_).name));
  }
}

void HybridRun::read_sensitivities(double t) {
  read_solution(t, [&] { cv_->load_sensitivities(t); });
  for (int j = 0; j < np_; ++j) S_.col(j) = view(cv_->yS(j));
}

void HybridRun::close_segment(double t) {
  if (kind_ != RunKind::AdjointRecording) return;
  RecordedSegment& seg = segments_.back();
  seg.t_end = t;
  seg.advanced = segment_advanced_;
  // Recomputing forward steps from a check point during the backward pass must not stop at
  // roots again.
  cv_->set_roots({});
}

void HybridRun::end_segment(double t) {
  close_segment(t);
  cv_->add_stats(book_.solution().stats);
  if (segment_advanced_ && cv_->nq() > 0) {
    read_solution(t, [&] { cv_->load_quadratures(t); });
    book_.cost_integral() = view(cv_->q());
    if (sens_) {
      read_solution(t, [&] { cv_->load_quadrature_sensitivities(t); });
      for (int j = 0; j < np_; ++j) book_.cost_integral_sensitivity().col(j) = view(cv_->qS(j));
    }
  }
  if (kind_ == RunKind::AdjointRecording) finish_recording();
}

void HybridRun::record_output(double t, bool integrated) {
  if (integrated) {
    x_ = view(cv_->y());
    if (sens_) read_sensitivities(t);
  }
  if (integrated && segment_advanced_ && cv_->nq() > 0) {
    read_solution(t, [&] { cv_->load_quadratures(t); });
    book_.record_output(t, mode_, x_, S_, view(cv_->q()));
  } else {
    book_.record_output(t, mode_, x_, S_, book_.cost_integral());
  }
}

bool HybridRun::apply_roots(double t) {
  x_ = view(cv_->y());
  if (sens_) read_sensitivities(t);
  std::vector<int> fired = std::exchange(fired_, {});  // advance's roots
  RootsAgainstDirection against = roots_against_their_direction(pb_, watched_, fired, mode_, t, x_, p_, opt_, ws_);
  if (roots_.record(pb_, std::move(against), fired, t)) return false;  // noise only: the segment goes on
  end_segment(t);
  const std::vector<int> applied = book_.apply_fired_events(
      watched_, fired, t, [&] { return mode_; },
      [&](int k, std::optional<Accumulation>& rest) {
        if (roots_.rests(k)) {
          rest = Accumulation{t};
          return pb_.event(k).rest_event;
        }
        return resolve_rest(pb_, book_.zeno(), k, mode_, t, x_, p_, opt_.grazing_tolerance, ws_, rest);
      },
      [&](int k, const std::optional<Accumulation>& rest) { apply_event(k, t, rest); });
  // A jump that leaves the state on its guard (r-dot+ = 0) cannot be continued: the next crossing
  // is undefined. Events that already grazed before the jump are reported as grazing instead.
  require_leaving_guards(pb_, applied, book_.events(), mode_, t, x_, p_, opt_.grazing_tolerance, ws_);
  return true;
}

void HybridRun::apply_event(int k, double t, const std::optional<Accumulation>& rest) {
  const EventValues v = fire_event(pb_, k, mode_, t, x_, p_, ws_);
  roots_.applied(pb_, v);
  EventRecord rec = book_.open_event(v, rest);
  if (sens_) {
    require_transversal(pb_, v, opt_.grazing_tolerance, "no sensitivity exists");
    SensitivityTransfer transfer = transfer_sensitivities(pb_, v, p_, S_, ws_);
    book_.book_sensitivities(rec, transfer, S_, rest);
    S_ = std::move(transfer.s_plus);
  }
  x_ = v.x_plus;
  mode_ = v.mode_after;
  book_.close_event(std::move(rec), t);
}

void HybridRun::fail(int flag, double t) {
  throw_if_interrupted(t);
  const std::string name = flag_name(flag);
  std::string context = fmt::format("at t = {:.17g} in mode '{}'", t, pb_.mode(mode_).name);
  const std::string recovered = blame_model_error(model_error_, flag, name, context);  // the model said what went wrong
  if (t == opt_.t0 && book_.solution().events.empty()) {
    // CVODES sizes its first step from the horizon: an absurd horizon fails here, not later.
    context += fmt::format("; the first step failed (CVODES sizes it from the initial state, the tolerances "
                           "and the horizon [{}, {}] s: is the horizon far longer than the model's time "
                           "scales?)",
                           opt_.t0, opt_.tf);
  }
  std::string hint;
  if (!book_.solution().events.empty() && std::abs(book_.solution().events.back().time - t) < 1e-6 * std::max(1.0, t)) {
    hint = "; events accumulate just before this time (Zeno behaviour?)";
  }
  if (flag == CV_TOO_MUCH_WORK) {
    hint += fmt::format("; Options::max_steps = {} steps were not enough", opt_.max_steps);
    if (cv_ != nullptr) hint += vanishing_steps_hint(cv_->last_step(), t);
  }
  if (cv_ != nullptr) hint += pb_.diagnose_failure(t, view(cv_->y()), p_);  // the state CVODES reached
  throw SolverError(fmt::format("CVODES failed with {} {}{}{}", name, context, hint, recovered));
}

void HybridRun::finish(double tf) {
  end_segment(tf);
  book_.finish(tf, x_, mode_, S_, ws_);
}

void HybridRun::check_start() {
  pb_.check_horizon(p_, opt_.t0, opt_.tf);
  x_ = initial_state(pb_, p_);
  if (!x_.allFinite()) {
    // The model's initial values at these parameters are no numbers: bad input (an override
    // outside the values the model admits), not a failed run.
    throw InputError(fmt::format("the initial state {} of problem '{}' is not finite at the parameters' values",
                                 describe_state(pb_, x_), pb_.name()));
  }
  mode_ = pb_.initial_mode_for(x_, p_);
  check_start_off_guards(pb_, mode_, opt_.t0, x_, p_, ws_);
  check_rate_declarations(pb_, mode_, opt_.t0, x_, p_);
}

Solution HybridRun::run() {
  const SolverMessageScope messages;  // caps integrator warnings for this run
  check_start();
  S_ = sens_ ? initial_state_jacobian(pb_, p_) : Eigen::MatrixXd();

  callbacks_.rhs = rhs_cb;
  callbacks_.jacobian = jacobian_cb;
  callbacks_.jacobian_times = jacobian_times_cb;
  callbacks_.roots = roots_cb;
  callbacks_.quadrature = quadrature_cb;
  callbacks_.sensitivity = sensitivity_cb;
  callbacks_.quadrature_sensitivity = quadrature_sensitivity_cb;
  if (kind_ != RunKind::AdjointRecording) {
    session_ = std::make_unique<CvodesSession>(nx_, has_running_cost_ ? nc_ : 0,
                                               sens_ ? np_ : 0, opt_, callbacks_, this,
                                               state_atol(opt_, nx_), parameter_scales(opt_, p_));
    if (sens_ && opt_.sensitivity_atol_from_states) {
      session_->set_sensitivity_atol(sensitivity_state_atol(opt_, nx_, pb_.state_scale(x_)), opt_.rtol);
    }
    cv_ = session_.get();
  }

  const std::vector<double> grid = output_grid(opt_);
  book_.start(grid.size());
  drive_segments(*this, grid, opt_.t0);
  return std::move(book_.solution());
}

}  // namespace saltus::detail
