// Complex-step runs on IDAS (docs/dae.md, "Complex step"). The route: the model's residual in
// complex arithmetic is the real DAE (Re F, Im F) = 0 in (Re x, Im x) of twice the size, which
// IDAS integrates with the real-part iteration matrix in both diagonal blocks (the coupling
// blocks are O(h) and only slow Newton negligibly, as in the ODE complex run). Events are
// located on the real parts and applied at the complex event time t_e + dt_c, dt_c = -r / r-dot:
//   x^- = x + x-dot- dt_c,  x^+ = phi(t_e + dt_c, x^-) made consistent in the new mode at
//   t_e + dt_c (complex Newton), x+ = x^+ - x-dot+ dt_c, made consistent at t_e,
// and the costs jump by (g- - g+) dt_c plus the point costs at (t_e + dt_c, x^-): the complex
// counterpart of transfer_complex (theory/hybrid-ode.md section 8). The running-cost integrals
// are IDAS states (q' = g, real and imaginary parts), as in DaeRun: IDAS leaves quadratures out
// of its order selection.
#include "complex_dae_run.hpp"

#include <saltus/derivatives/residual.hpp>
#include <saltus/solvers/dae_transfer.hpp>
#include <saltus/solvers/solver_messages.hpp>

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <memory>
#include <utility>

#include "guard_excursions.hpp"
#include "guard_point.hpp"
#include "guard_rate.hpp"
#include "idas_session.hpp"
#include "implicit_transition.hpp"
#include "nvector_view.hpp"
#include "run_support.hpp"
#include "segment_driver.hpp"

namespace saltus::detail {

namespace {

class ComplexDaeRun : private SegmentIntegrator {
 public:
  ComplexDaeRun(const Problem& problem, const VectorX<Complex>& p, const Options& options, double imaginary_scale);
  ComplexSolution run();

 private:
  static int residual_cb(sunrealtype t, N_Vector y, N_Vector yp, N_Vector r, void* self);
  static int jacobian_cb(sunrealtype t, sunrealtype cj, N_Vector y, N_Vector yp, N_Vector r, SUNMatrix J, void* self,
                         N_Vector, N_Vector, N_Vector);
  static int roots_cb(sunrealtype t, N_Vector y, N_Vector yp, sunrealtype* g, void* self);

  void load(N_Vector y, N_Vector yp);  // (y, yp) -> xc_, xdotc_
  void coupling_block(double t, double cj, N_Vector y, N_Vector yp);
  void begin_segment(double t) override;
  Reached advance(double tout, double& t) override;
  bool release_cost_perturbations();
  int start_again(double tout, double& t);
  void record_output(double, bool) override {}
  bool apply_roots(double t) override;
  void finish(double t) override;
  void end_segment();
  /// `after_another`: an event of this root was applied before it (its guard may have been
  /// moved off zero by that jump).
  void apply_event(int k, double t, bool after_another);
  /// The event applied for a firing of k: its resting variant where the real run rests.
  int resolve_rest(int k, double t);
  VectorX<Complex> running_costs(Complex t, const VectorX<Complex>& x, const VectorX<Complex>& xdot) const;
  [[noreturn]] void fail(int flag, double t);

  const Problem& pb_;
  VectorX<Complex> p_;
  Eigen::VectorXd p_real_;
  Options opt_;
  int nx_, nc_;
  bool has_running_cost_ = false;
  int nq_ = 0;  // cost integrals as states: y = (Re x, Im x, Re q, Im q)
  int mode_ = 0;
  VectorX<Complex> xc_, xdotc_, residual_;
  GuardPoint<Complex> guard_point_;      // the state and rates the guards read (guard_point.hpp)
  GuardPoint<double> real_guard_point_;  // the same at the real parts, for the excursion sentinel
  VectorX<Complex> cost_integral_;
  Eigen::VectorXd real_x_, real_xdot_, ones_, cj_weights_, unit_x_, unit_xdot_, zero_p_, cost_tangents_;
  Eigen::MatrixXd jac_real_, jac_imag_;
  VectorX<Complex> x_probe_, xdot_probe_, residual_probe_;
  TangentWorkspace ws_;
  WatchedEvents watched_;
  GuardExcursions excursions_;  // a crossing pair inside one step (guard_excursions.hpp)
  RootMemory roots_;  // what the last root leaves for the segment that starts there (DaeRun's)
  CascadeGuard cascade_;
  ZenoWatch zeno_;
  int failed_evaluations_ = 0;  // recoverable failures in this advance (recoverable_callback)
  std::string model_error_;
  ComplexSolution sol_;
  std::unique_ptr<IdasSession> ida_;
  RestartStep restart_;  // the first step after an event (docs/dae.md, "Restarts")
  std::vector<double> atol_;          // of the stacked components (Re x, Im x, Re q, Im q)
  bool cost_perturbations_released_ = false;  // release_cost_perturbations took them out
};

std::vector<bool> stacked_differential(const Problem& problem, int nq) {
  std::vector<bool> differential;
  for (int copy = 0; copy < 2; ++copy) {
    for (int i = 0; i < problem.n_states(); ++i) differential.push_back(!problem.is_algebraic(i));
  }
  differential.resize(differential.size() + 2 * static_cast<size_t>(nq), true);
  return differential;
}

ComplexDaeRun::ComplexDaeRun(const Problem& problem, const VectorX<Complex>& p, const Options& options,
                             double imaginary_scale)
    : pb_(problem),
      p_(p),
      p_real_(p.real()),
      opt_(options),
      nx_(problem.n_states()),
      nc_(problem.n_costs()),
      cascade_(pb_, opt_),
      zeno_(opt_) {
  pb_.validate();
  validate(opt_, nx_, problem.n_parameters());
  pb_.validate_parameters(p_real_);
  if (!(imaginary_scale > 0.0) || !std::isfinite(imaginary_scale)) {
    throw InputError(fmt::format("complex step size must be positive, got {}", imaginary_scale));
  }
  for (int c = 0; c < nc_; ++c) has_running_cost_ |= static_cast<bool>(pb_.cost(c).running);
  nq_ = has_running_cost_ ? nc_ : 0;
  xc_.resize(nx_);
  xdotc_.resize(nx_);
  real_x_.resize(nx_);
  real_xdot_.resize(nx_);
  ones_ = Eigen::VectorXd::Ones(nx_);
  cj_weights_ = Eigen::VectorXd::Ones(nx_);
  unit_x_ = Eigen::VectorXd::Zero(nx_);
  unit_xdot_ = Eigen::VectorXd::Zero(nx_);
  zero_p_ = Eigen::VectorXd::Zero(p.size());
  cost_tangents_.resize(nc_);
  jac_real_.resize(nx_, nx_);
  jac_imag_.resize(nx_ + nq_, nx_);
  // The imaginary parts are O(imaginary_scale): their absolute tolerances are scaled alike, so
  // both parts are integrated to the same relative accuracy.
  const std::vector<double> atol = dae_state_atol(pb_, opt_);
  const double cost_atol = opt_.cost_atol < 0.0 ? opt_.atol : opt_.cost_atol;
  const double q_atol = opt_.cost_error_control ? cost_atol : 1e300;
  std::vector<double> stacked = atol;
  for (double a : atol) stacked.push_back(a * imaginary_scale);
  stacked.resize(stacked.size() + static_cast<size_t>(nq_), q_atol);
  stacked.resize(stacked.size() + static_cast<size_t>(nq_), q_atol * imaginary_scale);
  atol_ = stacked;
  IdasCallbacks cb;
  cb.residual = residual_cb;
  cb.jacobian = jacobian_cb;
  cb.roots = roots_cb;
  ida_ = std::make_unique<IdasSession>(2 * (nx_ + nq_), 0, 0, stacked_differential(pb_, nq_), opt_, cb, this, stacked,
                                       std::vector<double>{}, 0, std::vector<double>{}, pb_.has_index2_modes());
}

void ComplexDaeRun::load(N_Vector y, N_Vector yp) {
  auto v = view(y);
  auto d = view(yp);
  for (int i = 0; i < nx_; ++i) {
    xc_[i] = Complex(v[i], v[nx_ + i]);
    xdotc_[i] = Complex(d[i], d[nx_ + i]);
  }
}

int ComplexDaeRun::residual_cb(sunrealtype t, N_Vector y, N_Vector yp, N_Vector r, void* self_ptr) {
  auto* self = static_cast<ComplexDaeRun*>(self_ptr);
  // A model error at a trial state is recoverable, as in the real run (DaeRun::residual_cb).
  return recoverable_callback(self->model_error_, self->failed_evaluations_, [&]() -> int {
    self->load(y, yp);
    const int n = self->nx_, nq = self->nq_;
    mode_residual(self->pb_, self->mode_, Complex(t), self->xc_, self->xdotc_, self->p_, self->residual_);
    auto out = view(r);
    out.head(n) = self->residual_.real();
    out.segment(n, n) = self->residual_.imag();
    if (nq > 0) {
      // q' - g(t, x, x-dot, p) in complex arithmetic.
      const VectorX<Complex> g = self->running_costs(Complex(t), self->xc_, self->xdotc_);
      const auto d = view(yp);
      out.segment(2 * n, nq) = d.segment(2 * n, nq) - g.real();
      out.tail(nq) = d.tail(nq) - g.imag();
    }
    if (out.allFinite()) return 0;
    return recoverable_failure(
        self->model_error_, self->failed_evaluations_,
        fmt::format("the residual of mode '{}' is not finite at t = {:.17g} (complex-step run)", self->pb_.mode(self->mode_).name, t));
  });
}

int ComplexDaeRun::jacobian_cb(sunrealtype t, sunrealtype cj, N_Vector y, N_Vector yp, N_Vector, SUNMatrix J,
                               void* self_ptr, N_Vector, N_Vector, N_Vector) {
  // [J_r, -J_i; J_i, J_r]: J_r = F_x + cj F_xdot at the real parts, J_i its imaginary part at
  // the complex state (coupling_block).
  auto* self = static_cast<ComplexDaeRun*>(self_ptr);
  return recoverable_callback(self->model_error_, self->failed_evaluations_, [&]() -> int {
    const int n = self->nx_;
    self->real_x_ = view(y).head(n);
    self->real_xdot_ = view(yp).head(n);
    self->cj_weights_.setConstant(cj);
    residual_columns(self->pb_, self->mode_, t, self->real_x_, self->real_xdot_, self->p_real_, self->ones_,
                     self->cj_weights_, self->jac_real_, self->ws_);
    const int nq = self->nq_, size = 2 * (n + nq);
    Eigen::Map<Eigen::MatrixXd> jac(SM_DATA_D(J), size, size);
    jac.setZero();
    jac.topLeftCorner(n, n) = self->jac_real_;
    jac.block(n, n, n, n) = self->jac_real_;
    self->coupling_block(t, cj, y, yp);
    jac.block(0, n, n, n) = -self->jac_imag_.topRows(n);
    jac.block(n, 0, n, n) = self->jac_imag_.topRows(n);
    for (int i = 0; i < n && nq > 0; ++i) {
      // The cost rows -(g_x + cj g_xdot) at the real parts, in both blocks; cj on the diagonal.
      self->unit_x_[i] = 1.0;
      self->unit_xdot_[i] = cj;
      running_cost_tangents_at_rate(self->pb_, t, self->real_x_, self->real_xdot_, self->p_real_, 0.0, self->unit_x_,
                                    self->unit_xdot_, self->zero_p_, self->cost_tangents_, self->ws_);
      jac.block(2 * n, i, nq, 1) = -self->cost_tangents_;
      jac.block(2 * n + nq, n + i, nq, 1) = -self->cost_tangents_;
      self->unit_x_[i] = 0.0;
      self->unit_xdot_[i] = 0.0;
    }
    if (nq > 0) {
      jac.block(2 * n, n, nq, n) = -self->jac_imag_.bottomRows(nq);
      jac.block(2 * n + nq, 0, nq, n) = self->jac_imag_.bottomRows(nq);
    }
    jac.bottomRightCorner(2 * nq, 2 * nq).diagonal().setConstant(cj);
    if (jac.allFinite()) return 0;
    return recoverable_failure(
        self->model_error_, self->failed_evaluations_,
        fmt::format("the Newton matrix of mode '{}' is not finite at t = {:.17g} (complex-step run)", self->pb_.mode(self->mode_).name, t));
  });
}

/// jac_imag_ = J_i, the imaginary part of the complex iteration matrix F_x + cj F_xdot at the
/// complex state, by a real difference of complex residuals (step 1e-6 (1 + |x_j|)): the
/// coupling between the real and imaginary halves. It is O(h), but without it the imaginary
/// half's Newton iteration sees every correction of the real half as an error of relative size
/// |F_xp| |dx| / |Im x|, and where an imaginary part is small (a state still nearly insensitive
/// to the perturbed parameter) the iteration stopped converging: the five-bar in ggl with
/// respect to L01 took 122107 failed iterations and 366497 Jacobians by t = 3 instead of 6 and
/// 145. Its own accuracy (about 1e-6 relative) only affects the iteration's speed. Costs n_x
/// complex residuals per iteration matrix, as many as J_r's dual ones.
void ComplexDaeRun::coupling_block(double t, double cj, N_Vector y, N_Vector yp) {
  load(y, yp);
  mode_residual(pb_, mode_, Complex(t), xc_, xdotc_, p_, residual_);
  const VectorX<Complex> costs = nq_ > 0 ? running_costs(Complex(t), xc_, xdotc_) : VectorX<Complex>();
  for (int j = 0; j < nx_; ++j) {
    const double step = 1e-6 * (1.0 + std::abs(xc_[j].real()));
    x_probe_ = xc_;
    xdot_probe_ = xdotc_;
    x_probe_[j] += step;
    xdot_probe_[j] += cj * step;
    mode_residual(pb_, mode_, Complex(t), x_probe_, xdot_probe_, p_, residual_probe_);
    jac_imag_.col(j).head(nx_) = (residual_probe_ - residual_).imag() / step;
    // The cost rows q' - g: a running cost that reads the rates (an acceleration) couples too.
    if (nq_ > 0) jac_imag_.col(j).tail(nq_) = -(running_costs(Complex(t), x_probe_, xdot_probe_) - costs).imag() / step;
  }
}

int ComplexDaeRun::roots_cb(sunrealtype t, N_Vector y, N_Vector yp, sunrealtype* g, void* self_ptr) {
  auto* self = static_cast<ComplexDaeRun*>(self_ptr);
  return guarded_callback(self->model_error_, [&]() -> int {
    self->load(y, yp);
    GuardPoint<Complex>& point = self->guard_point_;
    const bool own = point.read(self->pb_, self->watched_, self->mode_, t, self->xc_, self->xdotc_, self->p_, self->ws_);
    const int failed = evaluate_guards<Complex>(self->pb_, self->watched_, t, own ? point.x() : self->xc_,
                                                own ? point.rates() : self->xdotc_, self->p_, g, self->model_error_);
    if (failed != 0) return failed;
    // The real run's excursions (DaeRun::roots_cb), on the real parts (the first nx entries).
    const auto interpolate = [self](double at, Eigen::VectorXd& x_at, Eigen::VectorXd& xdot_at) {
      if (!self->ida_->interpolate_head(at, self->nx_, x_at, xdot_at)) return false;
      GuardPoint<double>& real = self->real_guard_point_;
      if (real.read(self->pb_, self->watched_, self->mode_, at, x_at, xdot_at, self->p_real_, self->ws_)) {
        x_at = real.x();
        xdot_at = real.rates();
      }
      return true;
    };
    g[self->watched_.events.size()] = self->excursions_.sentinel(self->pb_, self->watched_, t, g, self->p_real_, interpolate);
    return 0;
  });
}

VectorX<Complex> ComplexDaeRun::running_costs(Complex t, const VectorX<Complex>& x,
                                              const VectorX<Complex>& xdot) const {
  VectorX<Complex> values(nc_);
  for (int c = 0; c < nc_; ++c) {
    const auto& g = pb_.cost(c).running;
    values[c] = g ? g.complex(t, x, xdot, p_) : Complex(0.0);
  }
  return values;
}

void ComplexDaeRun::begin_segment(double t) {
  auto y = view(ida_->y());
  auto yp = view(ida_->yp());
  y.head(nx_) = xc_.real();
  y.segment(nx_, nx_) = xc_.imag();
  yp.head(nx_) = xdotc_.real();
  yp.segment(nx_, nx_) = xdotc_.imag();
  if (nq_ > 0) {  // the integrals continue from their totals (see HybridRun) at the rate g
    const VectorX<Complex> g = running_costs(Complex(t), xc_, xdotc_);
    y.segment(2 * nx_, nq_) = cost_integral_.real();
    y.tail(nq_) = cost_integral_.imag();
    yp.segment(2 * nx_, nq_) = g.real();
    yp.tail(nq_) = g.imag();
  }
  ida_->start(t);
  const double retry_step = restart_.start(t);
  ida_->set_initial_step(retry_step > 0.0 ? retry_step
                                          : completed_first_step(pb_, mode_, t, Eigen::VectorXd(xc_.real()),
                                                                 Eigen::VectorXd(xdotc_.real()), p_real_, opt_,
                                                                 nx_ + nq_, ws_));
  watched_ = watched_events(pb_, mode_);
  const Eigen::VectorXd x_real = xc_.real(), xdot_real = xdotc_.real();
  watch_return_crossings(pb_, watched_, roots_.on_the_guard(), mode_, t, x_real, xdot_real, p_real_,
                         opt_.grazing_tolerance, ws_);
  hold_guards_near_zero(pb_, watched_, mode_, t, x_real, xdot_real, p_real_, opt_, ws_);
  excursions_.reset();
  std::vector<int> directions = watched_.directions;
  if (!directions.empty()) directions.push_back(0);  // the excursions' sentinel (GuardExcursions)
  ida_->set_roots(directions);
}

/// A segment that failed before its first output: the cost integrals' imaginary parts leave the error test
/// for the rest of the run, once, as the real run's sensitivities of them do
/// (DaeRun::release_cost_sensitivities). Returns whether they did.
bool ComplexDaeRun::release_cost_perturbations() {
  if (nq_ == 0 || cost_perturbations_released_ || !restart_.at_start() || !opt_.cost_error_control) return false;
  std::fill(atol_.end() - nq_, atol_.end(), 1e300);
  ida_->set_state_atol(atol_, opt_.rtol);
  cost_perturbations_released_ = true;
  return true;
}

/// The real run's retry (DaeRun::start_again): the failed segment again from the same complex
/// state.
int ComplexDaeRun::start_again(double tout, double& t) {
  throw_if_interrupted(t);
  ida_->add_stats(sol_.stats);
  sol_.stats.segments -= 1;  // the same segment, counted again when it ends
  model_error_.clear();
  begin_segment(restart_.segment_start());
  return ida_->advance(tout, t);
}

Reached ComplexDaeRun::advance(double tout, double& t) {
  int flag = ida_->advance(tout, t);
  if (flag < 0 && restart_.retry(t)) flag = start_again(tout, t);
  if ((flag == IDA_ERR_FAIL || flag == IDA_CONV_FAIL) && release_cost_perturbations()) flag = start_again(tout, t);
  if (flag < 0) fail(flag, t);
  model_error_.clear();  // a non-finite evaluation the integrator recovered from names no later failure
  failed_evaluations_ = 0;
  load(ida_->y(), ida_->yp());
  if (flag != IDA_ROOT_RETURN) restart_.passed_output();
  return flag == IDA_ROOT_RETURN ? Reached::Roots : Reached::Output;
}

void ComplexDaeRun::end_segment() {
  ida_->add_stats(sol_.stats);
  if (nq_ == 0) return;
  auto y = view(ida_->y());  // IDAS returned at t
  for (int c = 0; c < nc_; ++c) cost_integral_[c] = Complex(y[2 * nx_ + c], y[2 * nx_ + nq_ + c]);
}

bool ComplexDaeRun::apply_roots(double t) {
  const ComplexConsistentPoint point =
      consistent_point_complex(pb_, mode_, Complex(t), xc_, xdotc_, p_, "at an event", ws_);
  xc_ = point.x;
  xdotc_ = point.xdot;
  std::vector<int> fired = excursions_.guard_roots(ida_->root_info(), watched_.events.size());
  // The real run's decision (DaeRun::apply_roots), on the real parts.
  RootsAgainstDirection against = roots_against_their_direction(
      pb_, watched_, fired, mode_, t, Eigen::VectorXd(xc_.real()), Eigen::VectorXd(xdotc_.real()), p_real_, opt_, ws_);
  if (roots_.record(pb_, std::move(against), fired, t)) {
    restart_.passed_output();  // noise only, the segment goes on: no retry from its start
    return false;
  }
  restart_.after_event(ida_->last_step());
  end_segment();
  int applied_here = 0;
  for_each_fired_event(pb_, watched_, fired, [&] { return mode_; }, t, p_real_,
      fired_among(sol_.event_ids), [&](int fired_event) {
    apply_event(resolve_rest(fired_event, t), t, applied_here++ > 0);
  });
  return true;
}

int ComplexDaeRun::resolve_rest(int k, double t) {
  const Event& ev = pb_.event(k);
  // The decisions of the real run (DaeRun::resolve_rest), on the real parts.
  zeno_.refuse_accumulation(pb_, k, t);
  bool rest = false;
  if (ev.rest_event >= 0) {
    rest = roots_.rests(k) || zeno_.accumulation(k, t).has_value();
    if (!rest) {
      const EventValues v = fire_dae_event(pb_, k, mode_, t, ConsistentPoint{xc_.real(), xdotc_.real()}, p_real_, ws_);
      rest = dae_guard_rate(pb_, k, v.mode_after, t, v.x_plus, v.f_plus, p_real_, ws_).grazing(opt_.grazing_tolerance);
    }
  }
  zeno_.record(k, t, -1);
  return rest ? ev.rest_event : k;
}

void ComplexDaeRun::apply_event(int k, double t, bool after_another) {
  const Event& ev = pb_.event(k);
  // The crossing speed and the grazing test on the real parts.
  const EventValues real =
      fire_dae_event(pb_, k, mode_, t, ConsistentPoint{xc_.real(), xdotc_.real()}, p_real_, ws_);
  roots_.applied(pb_, real);
  require_transversal(pb_, real, opt_.grazing_tolerance, "the complex step does not exist");
  // Relative to the level the guard was watched at (WatchedEvents::level). After another event
  // of this root the guard's perturbation alone (complex_time_shift): that event's jump may have
  // moved it off zero (a dose written before a state event tied with it: a real shift of the
  // complex run gave d J/dk 6.24 for 8, J the integral of x).
  const Complex guard = ev.guard_at<Complex>(Complex(t), xc_, xdotc_, p_);
  const Complex dt_c = after_another ? complex_time_shift(guard, real.guard_rate)
                                     : -(guard - watched_.level_of(pb_, k)) / real.guard_rate;
  const Complex tc = Complex(t) + dt_c;
  const VectorX<Complex> x_hat = xc_ + xdotc_ * dt_c;
  const std::string when = fmt::format("after event '{}'", ev.name);
  ComplexConsistentPoint after;
  if (ev.transition) {
    // The transition reads the rates before the event: those of the consistent point at x_hat.
    const ComplexConsistentPoint before = consistent_point_complex(pb_, mode_, tc, x_hat, xdotc_, p_, when, ws_);
    after = solve_transition_complex(pb_, k, real.mode_after, tc, before, p_, ws_);
  } else {
    VectorX<Complex> guess = x_hat;
    if (ev.jump) ev.jump.complex(tc, x_hat, p_, guess);
    after = consistent_point_complex(pb_, real.mode_after, tc, guess, xdotc_, p_, when, ws_);
  }
  cost_integral_ += (running_costs(Complex(t), xc_, xdotc_) - running_costs(tc, after.x, after.xdot)) * dt_c;
  for (int c = 0; c < nc_; ++c) {
    for (const EventCostTerm& term : pb_.cost(c).at_events) {
      if (term.applies_to(pb_, k)) cost_integral_[c] += term.value.complex(tc, x_hat, p_);
    }
  }
  // Carried back to t_e and made consistent there (the change is O(h^2)).
  const VectorX<Complex> x_plus = after.x - after.xdot * dt_c;
  const ComplexConsistentPoint at_event =
      consistent_point_complex(pb_, real.mode_after, Complex(t), x_plus, after.xdot, p_, when, ws_);
  xc_ = at_event.x;
  xdotc_ = at_event.xdot;
  mode_ = real.mode_after;
  sol_.event_times.push_back(tc);
  sol_.event_ids.push_back(k);
  cascade_.record(t, k, real.mode_before, real.x_minus, real.mode_after, xc_.real());
}

void ComplexDaeRun::fail(int flag, double t) {
  throw_if_interrupted(t);
  const std::string context = fmt::format("at t = {:.17g} in mode '{}' (complex-step run)", t, pb_.mode(mode_).name);
  const std::string recovered = blame_model_error(model_error_, flag, ida_flag_name(flag), context);
  throw SolverError(fmt::format("IDAS failed with {} {}{}{}", ida_flag_name(flag), context,
                                pb_.diagnose_failure(t, view(ida_->y()).head(nx_), p_real_), recovered));
}

void ComplexDaeRun::finish(double t) {
  end_segment();
  if (pb_.mode(mode_).index2()) {
    // IDAS leaves an index-2 mode's algebraic states out of its error test: the terminal costs
    // read the completed state, as in the real run (DaeRun::take_integrator_state).
    xc_ = consistent_point_complex(pb_, mode_, Complex(t), xc_, xdotc_, p_, "at the final time", ws_).x;
  }
  sol_.final_state = xc_;
  sol_.costs.resize(nc_);
  for (int c = 0; c < nc_; ++c) {
    const auto& w = pb_.cost(c).terminal;
    sol_.costs[c] = cost_integral_[c] + (w ? w.complex(Complex(t), xc_, p_) : Complex(0.0));
  }
}

ComplexSolution ComplexDaeRun::run() {
  const SolverMessageScope messages;  // caps integrator warnings for this run
  pb_.check_horizon(p_real_, opt_.t0, opt_.tf);
  VectorX<Complex> x0(nx_);
  x0.setZero();
  pb_.initial_state().complex(p_, x0);
  mode_ = pb_.initial_mode_for(x0.real(), p_real_);
  check_start_residual(pb_, mode_, opt_.t0, x0.real(), p_real_, ws_);
  const ComplexConsistentPoint start = consistent_point_complex(pb_, mode_, Complex(opt_.t0), x0,
                                                                VectorX<Complex>::Zero(nx_), p_, "at the start", ws_);
  xc_ = start.x;
  xdotc_ = start.xdot;
  cost_integral_ = VectorX<Complex>::Zero(nc_);
  drive_segments(*this, output_grid(opt_), opt_.t0);
  return std::move(sol_);
}

}  // namespace

ComplexSolution simulate_complex_dae(const Problem& problem, const VectorX<Complex>& p, const Options& options,
                                     double imaginary_scale) {
  return ComplexDaeRun(problem, p, options, imaginary_scale).run();
}

}  // namespace saltus::detail
