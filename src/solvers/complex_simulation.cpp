// Complex-arithmetic hybrid simulation with complex event times (theory/hybrid-ode.md section 8).
#include <saltus/derivatives/tangent.hpp>
#include <saltus/solvers/complex_simulation.hpp>
#include <saltus/solvers/event_transfer.hpp>
#include <saltus/solvers/solver_messages.hpp>

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <memory>
#include <utility>

#include "complex_dae_run.hpp"
#include "runge_kutta/discrete_adjoint.hpp"
#include "cvodes_session.hpp"
#include "guard_excursions.hpp"
#include "guard_rate.hpp"
#include "run_support.hpp"
#include "segment_driver.hpp"

namespace saltus {

namespace {

using detail::view;

/// Integrates the real system y = (Re x, Im x) and quadratures q = (Re z, Im z).
class ComplexRun : private detail::SegmentIntegrator {
 public:
  ComplexRun(const Problem& problem, const VectorX<Complex>& p, const Options& options,
             double imaginary_scale);
  ComplexSolution run();

 private:
  static int rhs_cb(sunrealtype t, N_Vector y, N_Vector ydot, void* self);
  static int jacobian_cb(sunrealtype t, N_Vector y, N_Vector fy, SUNMatrix J, void* self,
                         N_Vector, N_Vector, N_Vector);
  static int roots_cb(sunrealtype t, N_Vector y, sunrealtype* g, void* self);
  static int quadrature_cb(sunrealtype t, N_Vector y, N_Vector q, void* self);

  void load_state(N_Vector y);  // y -> xc_
  // The segment loop's steps (segment_driver.hpp); the complex run records no outputs.
  void begin_segment(double t) override;
  detail::Reached advance(double tout, double& t) override;
  void record_output(double, bool) override {}
  bool apply_roots(double t) override;
  void finish(double t) override;
  void end_segment(double t);
  void apply_event(int k, double t);
  [[noreturn]] void fail(int flag, double t);

  const Problem& pb_;
  VectorX<Complex> p_;
  Eigen::VectorXd p_real_;
  Options opt_;
  int nx_, nc_;
  bool has_running_cost_ = false;
  int mode_ = 0;
  VectorX<Complex> xc_, fc_;
  VectorX<Complex> cost_integral_;
  bool segment_advanced_ = false;
  Eigen::VectorXd real_x_, zero_p_;
  Eigen::MatrixXd identity_x_;
  TangentWorkspace ws_;
  detail::WatchedEvents watched_;
  detail::GuardExcursions excursions_;  // a crossing pair inside one step (guard_excursions.hpp)
  Eigen::VectorXd interpolated_;        // (Re x, Im x) from the interpolant
  detail::RootMemory roots_;  // what the last root leaves for the segment that starts there (HybridRun's)
  detail::CascadeGuard cascade_;
  detail::ZenoWatch zeno_;  // the same resting decisions as the real run, on the real parts
  std::string model_error_;
  int failed_evaluations_ = 0;  // recoverable failures in this advance (recoverable_callback)
  ComplexSolution sol_;
  std::unique_ptr<detail::CvodesSession> cv_;
};

ComplexRun::ComplexRun(const Problem& problem, const VectorX<Complex>& p, const Options& options,
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
  xc_.resize(nx_);
  fc_.resize(nx_);
  real_x_.resize(nx_);
  zero_p_ = Eigen::VectorXd::Zero(p.size());
  identity_x_ = Eigen::MatrixXd::Identity(nx_, nx_);
  // Tolerances: imaginary parts (states and cost quadratures) are O(imaginary_scale) and get
  // absolute tolerances scaled alike, so both parts are integrated to the same accuracy.
  Options o = opt_;
  std::vector<double> atol = detail::state_atol(opt_, nx_);
  std::vector<double> stacked = atol;
  for (double a : atol) stacked.push_back(a * imaginary_scale);
  o.atol_per_state = stacked;
  // The stacked (real; imaginary) state has 2 n_x entries: decide the corrector by the real
  // run's size, so that the complex step integrates as the run it checks.
  o.nonlinear_solver = detail::uses_fixed_point(opt_, nx_) ? NonlinearSolver::FixedPoint : NonlinearSolver::Newton;
  const double cost_atol = opt_.cost_atol < 0.0 ? opt_.atol : opt_.cost_atol;
  std::vector<double> quadrature_atol(static_cast<size_t>(nc_), cost_atol);
  for (int c = 0; c < nc_; ++c) quadrature_atol.push_back(cost_atol * imaginary_scale);
  detail::CvodesCallbacks cb;
  cb.rhs = rhs_cb;
  cb.jacobian = jacobian_cb;
  cb.roots = roots_cb;
  cb.quadrature = quadrature_cb;
  cv_ = std::make_unique<detail::CvodesSession>(2 * nx_, has_running_cost_ ? 2 * nc_ : 0, 0, o,
                                                cb, this, stacked, std::vector<double>{},
                                                quadrature_atol);
}

void ComplexRun::load_state(N_Vector y) {
  auto v = view(y);
  for (int i = 0; i < nx_; ++i) xc_[i] = Complex(v[i], v[nx_ + i]);
}

int ComplexRun::rhs_cb(sunrealtype t, N_Vector y, N_Vector ydot, void* self_ptr) {
  auto* self = static_cast<ComplexRun*>(self_ptr);
  // A model error at a trial state is recoverable, as in the real run (HybridRun::rhs_cb).
  return detail::recoverable_callback(self->model_error_, self->failed_evaluations_, [&]() -> int {
  self->load_state(y);
  self->pb_.mode(self->mode_).rhs.complex(Complex(t), self->xc_, self->p_, self->fc_);
  auto out = view(ydot);
  out.head(self->nx_) = self->fc_.real();
  out.tail(self->nx_) = self->fc_.imag();
  if (!out.allFinite()) {
    return detail::recoverable_failure(
        self->model_error_, self->failed_evaluations_,
        fmt::format("the right-hand side of mode '{}' is not finite at t = {:.17g} (complex run)", self->pb_.mode(self->mode_).name, t));
  }
  return 0;
  });
}

int ComplexRun::jacobian_cb(sunrealtype t, N_Vector y, N_Vector, SUNMatrix J, void* self_ptr,
                            N_Vector, N_Vector, N_Vector) {
  // Block-diagonal approximation diag(f_x, f_x) at the real part: the off-diagonal blocks
  // are O(h) and only slow Newton convergence negligibly.
  auto* self = static_cast<ComplexRun*>(self_ptr);
  return detail::recoverable_callback(self->model_error_, self->failed_evaluations_, [&]() -> int {
  const int n = self->nx_;
  auto v = view(y);
  self->real_x_ = v.head(n);
  Eigen::Map<Eigen::MatrixXd> jac(SM_DATA_D(J), 2 * n, 2 * n);
  jac.setZero();
  Eigen::VectorXd col(n);
  for (int j = 0; j < n; ++j) {
    rhs_tangent(self->pb_, self->mode_, t, self->real_x_, self->p_real_, 0.0,
                self->identity_x_.col(j), self->zero_p_, col, self->ws_);
    jac.block(0, j, n, 1) = col;
    jac.block(n, n + j, n, 1) = col;
  }
  if (jac.allFinite()) return 0;
  return detail::recoverable_failure(
      self->model_error_, self->failed_evaluations_,
      fmt::format("the Jacobian of mode '{}' is not finite at t = {:.17g} (complex run)", self->pb_.mode(self->mode_).name, t));
  });
}

int ComplexRun::roots_cb(sunrealtype t, N_Vector y, sunrealtype* g, void* self_ptr) {
  auto* self = static_cast<ComplexRun*>(self_ptr);
  return detail::guarded_callback(self->model_error_, [&]() -> int {
  self->load_state(y);
  const int failed =
      detail::evaluate_guards<Complex>(self->pb_, self->watched_, t, self->xc_, self->p_, g, self->model_error_);
  if (failed != 0) return failed;
  // The real run's excursions (HybridRun::roots_cb), on the real parts.
  const auto interpolate = [self](double at, Eigen::VectorXd& x, Eigen::VectorXd&) {
    if (!self->cv_->interpolate(at, self->interpolated_)) return false;
    x = self->interpolated_.head(self->nx_);
    return true;
  };
  g[self->watched_.events.size()] =
      self->excursions_.sentinel(self->pb_, self->watched_, t, g, self->p_real_, interpolate);
  return 0;
  });
}

int ComplexRun::quadrature_cb(sunrealtype t, N_Vector y, N_Vector q, void* self_ptr) {
  auto* self = static_cast<ComplexRun*>(self_ptr);
  return detail::recoverable_callback(self->model_error_, self->failed_evaluations_, [&]() -> int {
  self->load_state(y);
  self->pb_.mode(self->mode_).rhs.complex(Complex(t), self->xc_, self->p_, self->fc_);
  auto out = view(q);
  for (int c = 0; c < self->nc_; ++c) {
    const auto& g = self->pb_.cost(c).running;
    const Complex value = g ? g.complex(Complex(t), self->xc_, self->fc_, self->p_) : Complex(0);
    out[c] = value.real();
    out[self->nc_ + c] = value.imag();
    if (!std::isfinite(value.real()) || !std::isfinite(value.imag())) {
      // Named as the real run names it (HybridRun::quadrature_cb): CVODES's own failure flag
      // would not say which cost failed.
      // A finite cost whose derivative is not (sqrt at 0) is named by its complex-step part.
      const double part = std::isfinite(value.real()) ? value.imag() : value.real();
      return detail::recoverable_failure(
          self->model_error_, self->failed_evaluations_,
          fmt::format("the running cost of '{}'{} is {} at t = {:.17g}, x = {} (complex run)", self->pb_.cost(c).name,
                      std::isfinite(value.real()) ? "'s complex-step derivative" : "", std::isnan(part) ? "nan" : "infinite",
                      t, detail::describe_state(self->pb_, self->xc_.real().eval())));
    }
  }
  return 0;
  });
}

void ComplexRun::begin_segment(double t) {
  auto y = view(cv_->y());
  y.head(nx_) = xc_.real();
  y.tail(nx_) = xc_.imag();
  if (cv_->nq() > 0) {  // the quadratures continue from their totals (see HybridRun)
    auto q = view(cv_->q());
    q.head(nc_) = cost_integral_.real();
    q.tail(nc_) = cost_integral_.imag();
  }
  cv_->start(t);
  watched_ = detail::watched_events(pb_, mode_);
  real_x_ = xc_.real();
  detail::watch_return_crossings(pb_, watched_, roots_.on_the_guard(), mode_, t, real_x_, p_real_,
                                 opt_.grazing_tolerance, ws_);
  detail::hold_guards_near_zero(pb_, watched_, mode_, t, real_x_, p_real_, opt_, ws_);
  excursions_.reset();
  std::vector<int> directions = watched_.directions;
  if (!directions.empty()) directions.push_back(0);  // the excursions' sentinel (GuardExcursions)
  cv_->set_roots(directions);
  segment_advanced_ = false;
}

void ComplexRun::end_segment(double t) {
  cv_->add_stats(sol_.stats);
  if (!segment_advanced_ || cv_->nq() == 0) return;
  cv_->load_quadratures(t);
  auto q = view(cv_->q());
  for (int c = 0; c < nc_; ++c) cost_integral_[c] = Complex(q[c], q[nc_ + c]);
}

void ComplexRun::apply_event(int k, double t) {
  // The crossing speed and the grazing test on the real parts (the O(h) imaginary part of the
  // speed changes dt_c only at O(h^2)).
  real_x_ = xc_.real();
  const EventValues real = fire_event(pb_, k, mode_, t, real_x_, p_real_, ws_);
  roots_.applied(pb_, real);
  require_transversal(pb_, real, opt_.grazing_tolerance, "the complex step does not exist");
  const ComplexTransfer transfer =
      transfer_complex(pb_, k, mode_, t, xc_, p_, real.guard_rate);
  cost_integral_ += transfer.cost_integral_jump;
  xc_ = transfer.x_plus;
  // The real parts as the real run has them (its jump at the root's own state): the carry to the
  // complex event time and back moves them by round-off, and one left a guard just short of zero
  // in its crossing direction, which fired again at once (an `up` twice at one instant where
  // the real run fired it once: the complex step's events out of step with the real run's).
  for (Eigen::Index i = 0; i < xc_.size(); ++i) xc_[i] = Complex(real.x_plus[i], xc_[i].imag());
  mode_ = real.mode_after;
  sol_.event_times.push_back(transfer.time);
  sol_.event_ids.push_back(k);
  cascade_.record(t, k, real.mode_before, real.x_minus, real.mode_after, xc_.real());
}

detail::Reached ComplexRun::advance(double tout, double& t) {
  const int flag = cv_->advance(tout, t);
  if (flag < 0) fail(flag, t);
  model_error_.clear();  // a non-finite evaluation the integrator recovered from names no later failure
  failed_evaluations_ = 0;
  segment_advanced_ = true;
  if (flag == CV_ROOT_RETURN) return detail::Reached::Roots;
  load_state(cv_->y());
  return detail::Reached::Output;
}

bool ComplexRun::apply_roots(double t) {
  load_state(cv_->y());
  std::vector<int> fired = excursions_.guard_roots(cv_->root_info(), watched_.events.size());
  real_x_ = xc_.real();  // the real run's decision (HybridRun::apply_roots), on the real parts
  detail::RootsAgainstDirection against =
      detail::roots_against_their_direction(pb_, watched_, fired, mode_, t, real_x_, p_real_, opt_, ws_);
  if (roots_.record(pb_, std::move(against), fired, t)) return false;  // noise only: the segment goes on
  end_segment(t);
  detail::for_each_fired_event(pb_, watched_, fired, [&] { return mode_; }, t, p_real_,
      detail::fired_among(sol_.event_ids), [&](int fired_event) {
    const Event& ev = pb_.event(fired_event);
    zeno_.refuse_accumulation(pb_, fired_event, t);
    int k = fired_event;
    if (ev.rest_event >= 0) {
      real_x_ = xc_.real();
      const bool rest = roots_.rests(fired_event) || zeno_.accumulation(fired_event, t).has_value() ||
                        detail::jump_stays_on_guard(pb_, fired_event, mode_, t, real_x_, p_real_,
                                                    opt_.grazing_tolerance, ws_);
      if (rest) k = ev.rest_event;
    }
    zeno_.record(fired_event, t, -1);
    apply_event(k, t);
  });
  return true;
}

void ComplexRun::fail(int flag, double t) {
  throw_if_interrupted(t);
  const std::string flag_name = detail::flag_name(flag);
  const std::string context = fmt::format("at t = {:.17g} in mode '{}' (complex-step run)", t,
                                          pb_.mode(mode_).name);
  const std::string recovered = detail::blame_model_error(model_error_, flag, flag_name, context);
  // The real parts of the state CVODES reached: the model reads them as the real run's.
  throw SolverError(fmt::format("CVODES failed with {} {}{}{}", flag_name, context,
                                pb_.diagnose_failure(t, view(cv_->y()).head(nx_), p_real_), recovered));
}

ComplexSolution ComplexRun::run() {
  const SolverMessageScope messages;  // caps integrator warnings for this run
  pb_.check_horizon(p_real_, opt_.t0, opt_.tf);
  pb_.initial_state().complex(p_, xc_);
  real_x_ = xc_.real();
  mode_ = pb_.initial_mode_for(real_x_, p_real_);
  cost_integral_ = VectorX<Complex>::Zero(nc_);
  detail::drive_segments(*this, detail::output_grid(opt_), opt_.t0);
  return std::move(sol_);
}

void ComplexRun::finish(double t) {
  end_segment(t);
  sol_.final_state = xc_;
  sol_.costs.resize(nc_);
  for (int c = 0; c < nc_; ++c) {
    const auto& w = pb_.cost(c).terminal;
    sol_.costs[c] = cost_integral_[c] + (w ? w.complex(Complex(t), xc_, p_) : Complex(0));
  }
}

}  // namespace

ComplexSolution simulate_complex(const Problem& problem, const VectorX<Complex>& p,
                                 const Options& options, double imaginary_scale) {
  if (detail::runs_discrete(problem, options)) return detail::simulate_complex_discrete(problem, p, options);
  if (detail::runs_on_idas(problem, options)) return detail::simulate_complex_dae(problem, p, options, imaginary_scale);
  return ComplexRun(problem, p, options, imaginary_scale).run();
}

}  // namespace saltus
