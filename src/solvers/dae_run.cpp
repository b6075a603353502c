// A hybrid run segment by segment on IDAS: simulation and forward sensitivities of problems
// written as residuals (docs/dae.md; theory/hybrid-dae.md sections 1, 2 and 8). The running-cost
// integrals q are IDAS states with q-dot = g rather than IDAS quadratures: IDAS leaves
// quadratures out of its order selection, so a motion whose states are low-degree polynomials
// of time (zero local error estimates) kept it at order 1 with the quadratures forcing tiny
// steps (the integral of 1 + t over [0, 1] came out 1.5000286 in 15181 steps at rtol 1e-8).
#include "dae_run.hpp"

#include <saltus/derivatives/residual.hpp>
#include <saltus/solvers/solver_messages.hpp>

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <utility>

#include "checkpoint_interval.hpp"
#include "event_log.hpp"
#include "guard_rate.hpp"
#include "nvector_view.hpp"
#include "sundials_footprint.hpp"

namespace saltus::detail {

namespace {
std::vector<bool> differential_states(const Problem& problem) {
  std::vector<bool> differential(static_cast<size_t>(problem.n_states()));
  for (int i = 0; i < problem.n_states(); ++i) differential[static_cast<size_t>(i)] = !problem.is_algebraic(i);
  return differential;
}
}  // namespace

DaeRun::DaeRun(const Problem& problem, const Eigen::VectorXd& p, const Options& options, RunKind kind)
    : pb_(problem),
      p_(p),
      opt_(options),
      kind_(kind),
      sens_(kind == RunKind::ForwardSensitivity),
      nx_(problem.n_states()),
      np_(problem.n_parameters()),
      nc_(problem.n_costs()),
      book_(pb_, p_, opt_, sens_, phase_name(kind)) {
  pb_.validate();
  validate(opt_, nx_, np_);
  pb_.validate_parameters(p_);
  for (int c = 0; c < nc_; ++c) has_running_cost_ |= static_cast<bool>(pb_.cost(c).running);
  nq_ = has_running_cost_ ? nc_ : 0;
  identity_p_ = Eigen::MatrixXd::Identity(np_, np_);
  ones_ = Eigen::VectorXd::Ones(nx_);
  cj_weights_ = Eigen::VectorXd::Ones(nx_);
  unit_x_ = Eigen::VectorXd::Zero(nx_);
  unit_xdot_ = Eigen::VectorXd::Zero(nx_);
  zero_p_ = Eigen::VectorXd::Zero(np_);
  cost_values_.resize(nc_);
}

std::vector<bool> DaeRun::differential_components() const {
  std::vector<bool> differential = differential_states(pb_);
  differential.resize(static_cast<size_t>(nx_ + nq_), true);  // the cost integrals
  return differential;
}

std::vector<double> DaeRun::component_atol() const {
  std::vector<double> atol = dae_state_atol(pb_, opt_);
  const double cost_atol = opt_.cost_atol < 0.0 ? opt_.atol : opt_.cost_atol;
  // Without cost error control the integrals follow the states' steps: a tolerance they always meet.
  atol.resize(static_cast<size_t>(nx_ + nq_), opt_.cost_error_control ? cost_atol : 1e300);
  return atol;
}

int DaeRun::residual_cb(sunrealtype t, N_Vector y, N_Vector yp, N_Vector r, void* self_ptr) {
  auto* self = static_cast<DaeRun*>(self_ptr);
  return recoverable_callback(self->model_error_, self->failed_evaluations_, [&]() -> int {
    const int n = self->nx_, nq = self->nq_;
    const auto x = view(y).head(n);
    const auto xdot = view(yp).head(n);
    auto out = view(r);
    mode_residual(self->pb_, self->mode_, t, x, xdot, self->p_, out.head(n), self->ws_);
    if (nq > 0) {
      // The cost integrals q, q-dot - g(t, x, x-dot, p) = 0.
      running_costs_at_rate(self->pb_, t, x, xdot, self->p_, self->cost_values_);
      out.tail(nq) = view(yp).tail(nq) - self->cost_values_;
    }
    if (out.allFinite()) return 0;
    return recoverable_failure(
        self->model_error_, self->failed_evaluations_,
        fmt::format("the residual of mode '{}' or a running cost is not finite at t = {:.17g}, x = {}",
                    self->pb_.mode(self->mode_).name, t, describe_state(self->pb_, Eigen::VectorXd(x))));
  });
}

int DaeRun::jacobian_cb(sunrealtype t, sunrealtype cj, N_Vector y, N_Vector yp, N_Vector, SUNMatrix J,
                        void* self_ptr, N_Vector, N_Vector, N_Vector) {
  auto* self = static_cast<DaeRun*>(self_ptr);
  const auto non_finite = [self, t, y]() {
    return recoverable_failure(self->model_error_, self->failed_evaluations_,
                               fmt::format("the Newton matrix of mode '{}' is not finite at t = {:.17g}, x = {}",
                                           self->pb_.mode(self->mode_).name, t,
                                           describe_state(self->pb_, Eigen::VectorXd(view(y).head(self->nx_)))));
  };
  return recoverable_callback(self->model_error_, self->failed_evaluations_, [&]() -> int {
    if (self->sparse_) {
      const auto x = view(y).head(self->nx_);
      const auto xdot = view(yp).head(self->nx_);
      return self->sparse_->fill(t, x, xdot, self->p_, cj, J) ? 0 : non_finite();
    }
    // dF/dx + cj dF/dx-dot, one AD tangent per column; for the cost integrals the rows
    // -(g_x + cj g_xdot) and cj I.
    const int n = self->nx_, nq = self->nq_;
    const auto x = view(y).head(n);
    const auto xdot = view(yp).head(n);
    Eigen::Map<Eigen::MatrixXd> jac(SM_DATA_D(J), n + nq, n + nq);
    self->cj_weights_.setConstant(cj);
    residual_columns(self->pb_, self->mode_, t, x, xdot, self->p_, self->ones_, self->cj_weights_,
                     jac.topLeftCorner(n, n), self->ws_);
    if (nq > 0) {
      jac.topRightCorner(n, nq).setZero();
      jac.bottomRightCorner(nq, nq).setIdentity();
      jac.bottomRightCorner(nq, nq) *= cj;
      for (int i = 0; i < n; ++i) {
        self->unit_x_[i] = 1.0;
        self->unit_xdot_[i] = cj;
        running_cost_tangents_at_rate(self->pb_, t, x, xdot, self->p_, 0.0, self->unit_x_, self->unit_xdot_,
                                      self->zero_p_, self->cost_values_, self->ws_);
        jac.block(n, i, nq, 1) = -self->cost_values_;
        self->unit_x_[i] = 0.0;
        self->unit_xdot_[i] = 0.0;
      }
    }
    return jac.allFinite() ? 0 : non_finite();
  });
}

int DaeRun::roots_cb(sunrealtype t, N_Vector y, N_Vector yp, sunrealtype* g, void* self_ptr) {
  auto* self = static_cast<DaeRun*>(self_ptr);
  return guarded_callback(self->model_error_, [&]() -> int {
    GuardPoint<double>& point = self->guard_point_;
    const auto x = view(y).head(self->nx_);
    const auto xdot = view(yp).head(self->nx_);
    const bool own = point.read(self->pb_, self->watched_, self->mode_, t, x, xdot, self->p_, self->ws_);
    const int failed = evaluate_guards<double>(self->pb_, self->watched_, t, own ? In<double>(point.x()) : In<double>(x),
                                               own ? In<double>(point.rates()) : In<double>(xdot), self->p_, g,
                                               self->model_error_);
    if (failed != 0) return failed;
    const auto interpolate = [self, &point](double at, Eigen::VectorXd& x_at, Eigen::VectorXd& xdot_at) {
      if (!self->ida_->interpolate_head(at, self->nx_, x_at, xdot_at)) return false;
      if (point.read(self->pb_, self->watched_, self->mode_, at, x_at, xdot_at, self->p_, self->ws_)) {
        x_at = point.x();
        xdot_at = point.rates();
      }
      return true;
    };
    g[self->watched_.events.size()] = self->excursions_.sentinel(self->pb_, self->watched_, t, g, self->p_, interpolate);
    return 0;
  });
}

int DaeRun::sensitivity_cb(int ns, sunrealtype t, N_Vector y, N_Vector yp, N_Vector, N_Vector* yS, N_Vector* ypS,
                           N_Vector* rS, void* self_ptr, N_Vector, N_Vector, N_Vector) {
  auto* self = static_cast<DaeRun*>(self_ptr);
  return recoverable_callback(self->model_error_, self->failed_evaluations_, [&]() -> int {
    // F_x S_j + F_xdot S-dot_j + F_p e_j, and for the cost integrals S-dot_q - (g_x S_j +
    // g_xdot S-dot_j + g_p e_j).
    const int n = self->nx_, nq = self->nq_;
    const auto x = view(y).head(n);
    const auto xdot = view(yp).head(n);
    // Every direction's residual rows at once (one evaluation per block where the mode has
    // block tangents), through matrices of the directions.
    Eigen::MatrixXd& s_all = self->sensitivity_block_[0];
    Eigen::MatrixXd& s_dot_all = self->sensitivity_block_[1];
    Eigen::MatrixXd& r_all = self->sensitivity_block_[2];
    s_all.resize(n, ns);
    s_dot_all.resize(n, ns);
    r_all.resize(n, ns);
    for (int j = 0; j < ns; ++j) {
      s_all.col(j) = view(yS[j]).head(n);
      s_dot_all.col(j) = view(ypS[j]).head(n);
    }
    residual_tangents(self->pb_, self->mode_, t, x, xdot, self->p_, s_all, s_dot_all, self->identity_p_.leftCols(ns),
                      r_all, self->ws_);
    for (int j = 0; j < ns; ++j) {
      const auto s = view(yS[j]);
      const auto s_dot = view(ypS[j]);
      auto out = view(rS[j]);
      out.head(n) = r_all.col(j);
      if (nq > 0) {
        running_cost_tangents_at_rate(self->pb_, t, x, xdot, self->p_, 0.0, s.head(n), s_dot.head(n),
                                      self->identity_p_.col(j), self->cost_values_, self->ws_);
        out.tail(nq) = s_dot.tail(nq) - self->cost_values_;
      }
      if (!out.allFinite()) {
        return recoverable_failure(
            self->model_error_, self->failed_evaluations_,
            fmt::format("the sensitivity residual of mode '{}' or of a running cost is not finite at t = {:.17g}, x = {}",
                        self->pb_.mode(self->mode_).name, t, describe_state(self->pb_, Eigen::VectorXd(x))));
      }
    }
    return 0;
  });
}

int DaeRun::select_sparse_pattern(double t) {
  if (!sparse_) return 0;
  sparse_->select(mode_, t, point_.x, point_.xdot, p_);
  return sparse_->nonzeros();
}

void DaeRun::recompute_segment(const DaeSegment& segment) {
  mode_ = segment.mode;
  if (sparse_) sparse_->activate(segment.sparse_pattern);
}

void DaeRun::begin_segment(double t) {
  if (kind_ == RunKind::AdjointRecording) {
    // A session of its own per segment, so that its check points end at this segment's event.
    DaeSegment seg;
    seg.mode = mode_;
    seg.t_start = t;
    seg.start = point_;
    seg.events_begin = segments_.empty() ? 0 : segments_.back().events_end;
    seg.events_end = book_.solution().events.size();
    const int nonzeros = select_sparse_pattern(t);
    // A segment that starts at tf (after an event there) is never integrated: its session must
    // not record, because IDAS's IDAAdjFree crashes on a recording that IDASolveF never ran.
    // IDAS keeps every segment's recording: their buffers together stay within the budget.
    const long point_bytes = footprint::hermite_point(nx_ + nq_);
    const long checkpoint_steps =
        at_output_time(t, opt_.tf) ? 0
                                   : checkpoint_interval(opt_, nx_, latest_segment_steps(segments_), point_bytes,
                                                         opt_.adjoint_memory_budget - hermite_bytes_);
    if (checkpoint_steps > 0) seg.hermite_bytes = (checkpoint_steps + 1) * point_bytes;
    hermite_bytes_ += seg.hermite_bytes;
    seg.session = std::make_unique<IdasSession>(nx_ + nq_, 0, 0, differential_components(), opt_, callbacks_, this,
                                                component_atol(), std::vector<double>{}, checkpoint_steps,
                                                std::vector<double>{}, pb_.has_index2_modes(), nonzeros);
    seg.sparse_pattern = sparse_ ? sparse_->active_id() : -1;
    ida_ = seg.session.get();
    segments_.push_back(std::move(seg));
  } else {
    select_sparse_pattern(t);  // the session's matrix follows in the Jacobian callback
  }
  IdasSession& ida = *ida_;
  view(ida.y()).head(nx_) = point_.x;
  view(ida.yp()).head(nx_) = point_.xdot;
  for (int j = 0; j < ida.ns(); ++j) {
    view(ida.yS(j)).head(nx_) = S_.col(j);
    view(ida.ypS(j)).head(nx_) = S_dot_.col(j);
  }
  if (nq_ > 0) {
    // The cost integrals continue from their totals (their error weights stay relative, see
    // HybridRun::begin_segment) at the rate g.
    view(ida.y()).tail(nq_) = book_.cost_integral();
    running_costs_at_rate(pb_, t, point_.x, point_.xdot, p_, cost_values_);
    view(ida.yp()).tail(nq_) = cost_values_;
    for (int j = 0; j < ida.ns(); ++j) {
      view(ida.yS(j)).tail(nq_) = book_.cost_integral_sensitivity().col(j);
      running_cost_tangents_at_rate(pb_, t, point_.x, point_.xdot, p_, 0.0, S_.col(j), S_dot_.col(j),
                                    identity_p_.col(j), cost_values_, ws_);
      view(ida.ypS(j)).tail(nq_) = cost_values_;
    }
  }
  ida.start(t);
  const double retry_step = restart_.start(t);
  ida.set_initial_step(retry_step > 0.0 ? retry_step
                                        : completed_first_step(pb_, mode_, t, point_.x, point_.xdot, p_, opt_,
                                                               nx_ + nq_, ws_));
  watched_ = watched_events(pb_, mode_);
  watch_return_crossings(pb_, watched_, roots_.on_the_guard(), mode_, t, point_.x, point_.xdot, p_,
                         opt_.grazing_tolerance, ws_);
  hold_guards_near_zero(pb_, watched_, mode_, t, point_.x, point_.xdot, p_, opt_, ws_);
  excursions_.reset();
  std::vector<int> directions = watched_.directions;
  if (!directions.empty()) directions.push_back(0);  // the excursions' sentinel (GuardExcursions)
  ida.set_roots(directions);
}

Reached DaeRun::advance(double tout, double& t) {
  int flag = ida_->advance(tout, t);
  if (flag < 0 && restart_.retry(t)) flag = start_again(tout, t);
  if ((flag == IDA_ERR_FAIL || flag == IDA_CONV_FAIL) && release_cost_sensitivities()) flag = start_again(tout, t);
  if (flag < 0) fail(flag, t);
  model_error_.clear();  // a non-finite evaluation the integrator recovered from names no later failure
  failed_evaluations_ = 0;
  if (kind_ == RunKind::AdjointRecording) segments_.back().advanced = true;
  if (flag == IDA_ROOT_RETURN) {
    fired_ = excursions_.guard_roots(ida_->root_info(), watched_.events.size());
    return Reached::Roots;
  }
  if (kind_ == RunKind::AdjointRecording && t == opt_.tf) {
    const auto x = view(ida_->y()).head(nx_);
    const auto xdot = view(ida_->yp()).head(nx_);
    const bool own = guard_point_.read(pb_, watched_, mode_, t, x, xdot, p_, ws_);
    fired_ = roots_at_the_final_time(pb_, watched_, mode_, t, own ? In<double>(guard_point_.x()) : In<double>(x),
                                     own ? In<double>(guard_point_.rates()) : In<double>(xdot), p_,
                                     opt_.grazing_tolerance, ws_);
    if (!fired_.empty()) return Reached::Roots;
  }
  return Reached::Output;
}

bool DaeRun::release_cost_sensitivities() {
  // Only where they are in the error test: with cost or sensitivity error control off they are not.
  if (!sens_ || nq_ == 0 || cost_sensitivities_released_ || session_ == nullptr || !restart_.at_start() ||
      !opt_.cost_error_control || !opt_.sensitivity_error_control) {
    return false;
  }
  std::vector<double> atol = component_atol();
  std::fill(atol.begin() + nx_, atol.end(), 1e300);
  session_->set_sensitivity_atol(atol, opt_.rtol);
  cost_sensitivities_released_ = true;
  return true;
}

int DaeRun::start_again(double tout, double& t) {
  throw_if_interrupted(t);
  ida_->add_stats(book_.solution().stats);
  book_.solution().stats.segments -= 1;  // the same segment, counted again when it ends
  if (kind_ == RunKind::AdjointRecording) {
    hermite_bytes_ -= segments_.back().hermite_bytes;
    segments_.pop_back();
  }
  model_error_.clear();
  failed_evaluations_ = 0;
  begin_segment(restart_.segment_start());
  return ida_->advance(tout, t);
}

void DaeRun::take_integrator_state(double t, const char* when) {
  IdasSession& ida = *ida_;
  // IDAS returns values consistent to its Newton tolerance; the event transfer and the output
  // get them consistent to round-off, with the algebraic rates z-dot that IDAS does not hold.
  point_ = consistent_point(pb_, mode_, t, view(ida.y()).head(nx_), view(ida.yp()).head(nx_), p_, when, ws_);
  if (sens_) {
    ida.load_sensitivities(t);
    for (int j = 0; j < np_; ++j) S_.col(j) = view(ida.yS(j)).head(nx_);
    consistent_sensitivities(pb_, mode_, t, point_, p_, S_, S_dot_, ws_);
  }
}

void DaeRun::end_segment(double t) {
  IdasSession& ida = *ida_;
  ida.add_stats(book_.solution().stats);
  if (kind_ == RunKind::AdjointRecording) {
    DaeSegment& seg = segments_.back();
    seg.t_end = t;
    seg.steps = ida.steps();
    seg.end = point_;
    // Recomputing forward steps from a check point during the backward pass must not stop at
    // roots again.
    ida.set_roots({});
  }
  if (nq_ > 0) {
    // IDAS returned at t: y holds the integrals there, and take_integrator_state loaded yS.
    book_.cost_integral() = view(ida.y()).tail(nq_);
    if (sens_) {
      for (int j = 0; j < np_; ++j) book_.cost_integral_sensitivity().col(j) = view(ida.yS(j)).tail(nq_);
    }
  }
}

void DaeRun::record_output(double t, bool integrated) {
  if (integrated) {
    take_integrator_state(t, "at an output time");
    restart_.passed_output();
  }
  if (integrated && nq_ > 0) {
    book_.record_output(t, mode_, point_.x, S_, view(ida_->y()).tail(nq_));
  } else {
    book_.record_output(t, mode_, point_.x, S_, book_.cost_integral());
  }
}

bool DaeRun::apply_roots(double t) {
  take_integrator_state(t, "at an event");
  std::vector<int> fired = std::exchange(fired_, {});  // advance's roots
  RootsAgainstDirection against =
      roots_against_their_direction(pb_, watched_, fired, mode_, t, point_.x, point_.xdot, p_, opt_, ws_);
  if (roots_.record(pb_, std::move(against), fired, t)) {
    restart_.passed_output();  // noise only, the segment goes on: no retry from its start
    return false;
  }
  restart_.after_event(ida_->last_step());
  end_segment(t);
  const std::vector<int> applied = book_.apply_fired_events(
      watched_, fired, t, [&] { return mode_; },
      [&](int k, std::optional<Accumulation>& rest) { return resolve_rest(k, t, rest); },
      [&](int k, const std::optional<Accumulation>& rest) { apply_event(k, t, rest); });
  require_leaving_guards(pb_, applied, book_.events(), mode_, t, point_.x, point_.xdot, p_, opt_.grazing_tolerance,
                         ws_);
  return true;
}

int DaeRun::resolve_rest(int k, double t, std::optional<Accumulation>& rest) {
  const Event& ev = pb_.event(k);
  if (ev.rest_event < 0) return k;
  rest = roots_.rests(k) ? std::optional<Accumulation>(Accumulation{t}) : book_.zeno().accumulation(k, t);
  if (!rest) {
    // The jump would leave the state on the guard (restitution 0): the motion rests there.
    const EventValues v = fire_dae_event(pb_, k, mode_, t, point_, p_, ws_);
    if (dae_guard_rate(pb_, k, v.mode_after, t, v.x_plus, v.f_plus, p_, ws_).grazing(opt_.grazing_tolerance)) {
      rest = Accumulation{t};
    }
  }
  return rest ? ev.rest_event : k;
}

void DaeRun::apply_event(int k, double t, const std::optional<Accumulation>& rest) {
  const EventValues v = fire_dae_event(pb_, k, mode_, t, point_, p_, ws_);
  roots_.applied(pb_, v);
  EventRecord rec = book_.open_event(v, rest);
  if (sens_) {
    require_transversal(pb_, v, opt_.grazing_tolerance, "no sensitivity exists");
    DaeSensitivityTransfer transfer = transfer_dae_sensitivities(pb_, v, p_, S_, S_dot_, ws_);
    book_.book_sensitivities(rec, transfer.transfer, S_, rest);
    S_ = std::move(transfer.transfer.s_plus);
    S_dot_ = std::move(transfer.s_dot_plus);
  }
  point_ = ConsistentPoint{v.x_plus, v.f_plus};
  mode_ = v.mode_after;
  book_.close_event(std::move(rec), t);
}

void DaeRun::fail(int flag, double t) {
  throw_if_interrupted(t);
  const std::string context = fmt::format("at t = {:.17g} in mode '{}'", t, pb_.mode(mode_).name);
  const std::string recovered = blame_model_error(model_error_, flag, ida_flag_name(flag), context);
  std::string hint;
  if (flag == IDA_TOO_MUCH_WORK) {
    hint = fmt::format("; Options::max_steps = {} steps were not enough", opt_.max_steps);
    if (ida_ != nullptr) hint += vanishing_steps_hint(ida_->last_step(), t);
  }
  if ((flag == IDA_CONV_FAIL || flag == IDA_ERR_FAIL) && pb_.mode(mode_).index2()) {
    // Index 1 is not the question there: a completed mode is index 2 or 3 by design.
    hint = "; the corrector kept failing in a mode of index 2 or 3 (with a completion), whose Newton matrix grows "
           "ill-conditioned as the steps shrink (like h^-2, h^-3 in the multibody index3 form: a mechanism in index3 "
           "may run in --formulation ggl or stabilized_index1, docs/multibody.md)";
  } else if (flag == IDA_CONV_FAIL || flag == IDA_ERR_FAIL) {
    hint = "; the corrector kept failing: is the DAE index 1 along the motion (docs/dae.md)?";
  }
  if (ida_ != nullptr) hint += pb_.diagnose_failure(t, view(ida_->y()).head(nx_), p_);  // the state IDAS reached
  throw SolverError(fmt::format("IDAS failed with {} {}{}{}", ida_flag_name(flag), context, hint, recovered));
}

void DaeRun::finish(double tf) {
  end_segment(tf);
  book_.finish(tf, point_.x, mode_, S_, ws_);
}

void DaeRun::check_start() {
  pb_.check_horizon(p_, opt_.t0, opt_.tf);
  const Eigen::VectorXd x0 = initial_state(pb_, p_);
  if (!x0.allFinite()) {
    throw InputError(fmt::format("the initial state {} of problem '{}' is not finite at the parameters' values",
                                 describe_state(pb_, x0), pb_.name()));
  }
  mode_ = pb_.initial_mode_for(x0, p_);
  check_start_residual(pb_, mode_, opt_.t0, x0, p_, ws_);
  point_ = consistent_point(pb_, mode_, opt_.t0, x0, Eigen::VectorXd::Zero(nx_), p_, "at the start", ws_);
  check_start_off_guards(pb_, mode_, opt_.t0, point_.x, point_.xdot, p_, ws_);
}

Solution DaeRun::run() {
  const SolverMessageScope messages;  // caps integrator warnings for this run
  check_start();
  if (sens_) {
    S_ = initial_state_jacobian(pb_, p_);
    consistent_sensitivities(pb_, mode_, opt_.t0, point_, p_, S_, S_dot_, ws_);
  }

  callbacks_.residual = residual_cb;
  callbacks_.jacobian = jacobian_cb;
  callbacks_.roots = roots_cb;
  callbacks_.sensitivity = sensitivity_cb;
  if (uses_sparse_iteration_matrix(opt_, nx_ + nq_)) {
    sparse_ = std::make_unique<SparseIterationMatrix>(pb_, nq_, kind_ == RunKind::AdjointRecording);
    // Automatic keeps the dense LU where colouring saves little: a residual, or a running cost,
    // that reads most states makes most columns clash.
    sparse_->select(mode_, opt_.t0, point_.x, point_.xdot, p_);
    if (opt_.linear_solver == LinearSolver::Automatic && 2 * sparse_->active().colours() > nx_ + nq_) sparse_.reset();
  }
  if (kind_ != RunKind::AdjointRecording) {
    session_ = std::make_unique<IdasSession>(nx_ + nq_, 0, sens_ ? np_ : 0, differential_components(), opt_,
                                             callbacks_, this, component_atol(), parameter_scales(opt_, p_), 0,
                                             std::vector<double>{}, pb_.has_index2_modes(), sparse_ ? sparse_->nonzeros() : 0);
    ida_ = session_.get();
  }
  const std::vector<double> grid = output_grid(opt_);
  book_.start(grid.size());
  drive_segments(*this, grid, opt_.t0);
  if (sparse_) {
    const ColouredJacobian& last = sparse_->active();
    book_.solution().stats.linear_solver =
        fmt::format("KLU on the sparse Newton matrix ({0} x {0}, {1} nonzeros, {2} tangents per evaluation)",
                    last.pattern().cols, last.pattern().nonzeros(), last.colours());
  }
  return std::move(book_.solution());
}

}  // namespace saltus::detail
