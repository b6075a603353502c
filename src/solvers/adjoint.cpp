// The backward pass of the hybrid adjoint: CVODES backward integration per recorded segment,
// the transposed event jumps (H3)-(H4) of theory/hybrid-ode.md section 6 between them.
#include <saltus/derivatives/reverse.hpp>
#include <saltus/derivatives/tangent.hpp>
#include <saltus/solvers/adjoint.hpp>
#include <saltus/solvers/event_transfer.hpp>
#include <saltus/solvers/solver_messages.hpp>

#include <fmt/format.h>

#include <algorithm>
#include <exception>

#include "dae_adjoint.hpp"
#include "hybrid_run.hpp"
#include "runge_kutta/discrete_adjoint.hpp"

namespace saltus {

namespace {

using detail::view;

class AdjointSweep {
 public:
  AdjointSweep(const Problem& problem, const Eigen::VectorXd& p, const Options& options,
               detail::HybridRun& run, Solution& sol);
  void run();

 private:
  static int rhs_cb(sunrealtype t, N_Vector y, N_Vector yB, N_Vector yBdot, void* self);
  static int jacobian_cb(sunrealtype t, N_Vector y, N_Vector yB, N_Vector fyB, SUNMatrix JB,
                         void* self, N_Vector, N_Vector, N_Vector);
  static int quadrature_cb(sunrealtype t, N_Vector y, N_Vector yB, N_Vector qBdot, void* self);
  static int jacobian_times_cb(N_Vector v, N_Vector Jv, sunrealtype t, N_Vector y, N_Vector yB, N_Vector fyB,
                               void* self, N_Vector tmp);

  /// Sweeps the right-hand-side tape at (t, x) for every cost column of the stacked yB;
  /// fills dx_ (n_x x n_c) and dp_ (n_p x n_c).
  void products_at(double t, const Eigen::Ref<const Eigen::VectorXd>& x,
                   const Eigen::Ref<const Eigen::VectorXd>& yB);
  /// Runs a backward callback's body, which returns whether its output is finite, as
  /// detail::backward_callback (what fails how); `what` names the output in messages.
  template <class Body>
  int guarded(const char* what, double t, Body&& body) noexcept;
  void terminal_conditions();
  void integrate_segment(detail::RecordedSegment& segment);
  void transpose_event(const EventRecord& event);
  detail::BackwardSettings settings();

  const Problem& pb_;
  Eigen::VectorXd p_;
  Options opt_;
  detail::HybridRun& run_;
  Solution& sol_;
  int nx_, np_, nc_;
  int mode_ = 0;  // mode of the segment being integrated

  Eigen::MatrixXd lambda_;  // n_x x n_c
  Eigen::MatrixXd grad_;    // n_c x n_p
  AdjointRhs rhs_;
  TangentWorkspace ws_;
  Eigen::MatrixXd fx_;
  // The last sweep: its point, stacked adjoint and results (reused by the quadrature).
  long sweep_recordings_ = -1;
  Eigen::VectorXd sweep_yB_;
  Eigen::MatrixXd dx_, dp_;
  std::vector<double> outputs_;  // the run's output times: where the backward pass stops
  std::string error_;  // the last recoverable failure since the backward pass's last stop
  int failures_ = 0;   // and how many there were (detail::recoverable_failure)
  std::exception_ptr exception_;
};

AdjointSweep::AdjointSweep(const Problem& problem, const Eigen::VectorXd& p,
                           const Options& options, detail::HybridRun& run, Solution& sol)
    : pb_(problem),
      p_(p),
      opt_(options),
      run_(run),
      sol_(sol),
      nx_(problem.n_states()),
      np_(problem.n_parameters()),
      nc_(problem.n_costs()),
      rhs_(problem, p),
      outputs_(detail::output_grid(options)) {
  fx_.resize(nx_, nx_);
  dx_.resize(nx_, nc_);
  dp_.resize(np_, nc_);
}

template <class Body>
int AdjointSweep::guarded(const char* what, double t, Body&& body) noexcept {
  // A requested stop fails the step; integrate_segment then throws saltus::Interrupted.
  return detail::backward_callback(error_, failures_, exception_, pb_.mode(mode_).name, what, t,
                                   [&] { return body() ? 0 : 1; });
}

void AdjointSweep::products_at(double t, const Eigen::Ref<const Eigen::VectorXd>& x,
                               const Eigen::Ref<const Eigen::VectorXd>& yB) {
  rhs_.record(mode_, t, x);
  // A new point means a new recording, so the counter identifies the point swept last.
  if (sweep_recordings_ == rhs_.recordings() && sweep_yB_.size() == yB.size() &&
      sweep_yB_ == yB) {
    return;
  }
  const Eigen::Map<const Eigen::MatrixXd> lambda(yB.data(), nx_, nc_);  // lambda by cost, in place
  rhs_.apply_all(lambda, dx_, dp_);  // every cost in one sweep
  sweep_recordings_ = rhs_.recordings();
  sweep_yB_ = yB;
}

// lambda' = -(f_x^T lambda + g_x^T), one column per cost.
int AdjointSweep::rhs_cb(sunrealtype t, N_Vector y, N_Vector yB, N_Vector yBdot, void* ptr) {
  auto* self = static_cast<AdjointSweep*>(ptr);
  return self->guarded("right-hand side", t, [&] {
    self->products_at(t, view(y), view(yB));
    auto out = view(yBdot);
    for (int c = 0; c < self->nc_; ++c) out.segment(c * self->nx_, self->nx_) = -self->dx_.col(c);
    return out.allFinite();
  });
}

// CVODES integrates q' = fQB backwards from 0 at the segment's end, so fQB = -(lambda^T f_p +
// g_p) accumulates +integral(lambda^T f_p + g_p) over the segment.
int AdjointSweep::quadrature_cb(sunrealtype t, N_Vector y, N_Vector yB, N_Vector qBdot,
                                void* ptr) {
  auto* self = static_cast<AdjointSweep*>(ptr);
  return self->guarded("quadrature", t, [&] {
    self->products_at(t, view(y), view(yB));
    auto out = view(qBdot);
    for (int c = 0; c < self->nc_; ++c) out.segment(c * self->np_, self->np_) = -self->dp_.col(c);
    return out.allFinite();
  });
}

// d(lambda')/d(lambda) = -f_x^T, block diagonal over the costs.
int AdjointSweep::jacobian_cb(sunrealtype t, N_Vector y, N_Vector, N_Vector, SUNMatrix JB,
                              void* ptr, N_Vector, N_Vector, N_Vector) {
  auto* self = static_cast<AdjointSweep*>(ptr);
  return self->guarded("Jacobian", t, [&] {
    const int n = self->nx_ * self->nc_;
    Eigen::Map<Eigen::MatrixXd> jac(SM_DATA_D(JB), n, n);
    rhs_state_jacobian(self->pb_, self->mode_, t, view(y), self->p_, self->fx_, self->ws_);
    jac.setZero();
    for (int c = 0; c < self->nc_; ++c) {
      jac.block(c * self->nx_, c * self->nx_, self->nx_, self->nx_) = -self->fx_.transpose();
    }
    return jac.allFinite();
  });
}

// -f_x^T v block by block (the matrix-free backward solver): one sweep of the point's recording
// for every cost's block.
int AdjointSweep::jacobian_times_cb(N_Vector v, N_Vector Jv, sunrealtype t, N_Vector y, N_Vector, N_Vector,
                                    void* ptr, N_Vector) {
  auto* self = static_cast<AdjointSweep*>(ptr);
  return self->guarded("Jacobian product", t, [&] {
    self->rhs_.record(self->mode_, t, view(y));
    auto in = view(v);
    auto out = view(Jv);
    const int n = self->nx_;
    const int m = self->nc_;
    const Eigen::Map<const Eigen::MatrixXd> blocks(in.data(), n, m);  // the cost blocks in place
    Eigen::Map<Eigen::MatrixXd> products(out.data(), n, m);
    self->rhs_.state_products(blocks, products);  // every cost's block in one sweep
    products *= -1.0;
    return products.allFinite();
  });
}

detail::BackwardSettings AdjointSweep::settings() {
  const detail::AdjointTolerances tol = detail::adjoint_tolerances(opt_, p_, sol_.costs);
  detail::BackwardSettings s;
  s.rtol = tol.rtol;
  s.state_atol = tol.per_state(nx_);
  s.quadrature_atol = tol.quadrature_atol;
  s.quadrature_error_control = opt_.adjoint_quadrature_error_control;
  s.max_steps = opt_.max_steps;
  s.rhs = rhs_cb;
  s.jacobian = jacobian_cb;
  s.jacobian_times = jacobian_times_cb;
  s.quadrature = quadrature_cb;
  s.user_data = this;
  s.block = nx_;  // jacobian_cb: -f_x^T on each cost's diagonal block
  s.blocks = nc_;
  return s;
}

void AdjointSweep::terminal_conditions() {
  lambda_.resize(nx_, nc_);
  grad_.resize(nc_, np_);
  for (int c = 0; c < nc_; ++c) {
    const ScalarGradient w = terminal_cost_gradient(pb_, c, sol_.times.back(), sol_.final_state, p_);
    lambda_.col(c) = w.x.transpose();
    grad_.row(c) = w.p;
  }
}

void AdjointSweep::integrate_segment(detail::RecordedSegment& seg) {
  if (!seg.advanced || !(seg.t_end > seg.t_start)) {
    run_.release(seg);
    return;
  }
  mode_ = seg.mode;
  run_.set_mode(seg.mode);  // CVODES recomputes forward steps of this segment
  // Kept from the forward pass or recomputed now from the segment's snapshot: the backward
  // integration below is the same for both.
  detail::CvodesSession& session = run_.recording(seg);
  const detail::CheckpointUsage usage = session.checkpoint_usage();
  sol_.adjoint.checkpoints += usage.checkpoints;
  sol_.adjoint.stored_bytes += usage.stored_bytes;
  sol_.adjoint.checkpoint_steps = std::max(sol_.adjoint.checkpoint_steps, usage.spacing);
  const Eigen::VectorXd stacked = lambda_.reshaped();
  session.start_backward(nx_ * nc_, np_ * nc_, settings(), seg.t_end, stacked);
  run_.account(seg);
  Eigen::VectorXd yB, qB;
  const int flag = detail::integrate_backward_by_stops(outputs_, seg.t_start, seg.t_end, error_, failures_, exception_,
                                                       [&](double stop) { return session.integrate_backward(stop, yB, qB); });
  session.add_backward_stats(sol_.adjoint.backward);
  if (exception_) std::rethrow_exception(exception_);
  if (flag < 0) throw_if_interrupted(seg.t_start);
  if (flag < 0) {
    const std::string context =
        fmt::format("on [{:.17g}, {:.17g}] in mode '{}'", seg.t_start, seg.t_end, pb_.mode(seg.mode).name);
    const std::string recovered =
        detail::blame_model_error(error_, flag, detail::flag_name(flag), "in the backward (adjoint) pass " + context);
    double t_stop = 0.0;
    Eigen::VectorXd x_stop;
    const std::string diagnosis = session.backward_stop(t_stop, x_stop)
                                      ? fmt::format(", stopped at t = {:.17g}{}", t_stop, pb_.diagnose_failure(t_stop, x_stop, p_))
                                      : std::string();
    throw SolverError(fmt::format("the backward (adjoint) integration failed with {} {}{}{}",
                                  detail::flag_name(flag), context, diagnosis, recovered));
  }
  lambda_ = yB.reshaped(nx_, nc_);
  if (np_ > 0) grad_ += qB.reshaped(np_, nc_).transpose();
  run_.release(seg);
}

void AdjointSweep::transpose_event(const EventRecord& e) {
  const EventValues v = recorded_event(pb_, e, p_);
  require_transversal(pb_, v, opt_.grazing_tolerance, "no adjoint sensitivity exists");
  const AdjointTransfer transfer = transfer_adjoint(pb_, v, p_, lambda_, ws_);
  lambda_ = transfer.lambda_minus;
  grad_ += transfer.gradient;
}

void AdjointSweep::run() {
  terminal_conditions();
  auto& segments = run_.segments();
  for (auto it = segments.rbegin(); it != segments.rend(); ++it) {
    integrate_segment(*it);
    for (size_t i = it->events_end; i > it->events_begin; --i) transpose_event(sol_.events[i - 1]);
    detail::report_progress(opt_, "adjoint backward", it->t_start, static_cast<long>(it->events_begin));
  }
  if (np_ > 0) grad_ += initial_state_products(pb_, p_, lambda_).transpose();
  sol_.cost_gradient = grad_;
  sol_.initial_state_gradient = lambda_.transpose();
  sol_.adjoint.memory_budget = run_.ledger().budget();
  sol_.adjoint.peak_stored_bytes = run_.ledger().peak();
  sol_.adjoint.recomputed_segments = run_.recomputed_segments();
  sol_.adjoint.tape_recordings = rhs_.recordings();
  if (!sol_.cost_gradient.allFinite()) {
    throw ModelError(fmt::format("the adjoint gradient of problem '{}' is not finite", pb_.name()));
  }
}

}  // namespace

Solution adjoint(const Problem& problem, const Eigen::VectorXd& p, const Options& options) {
  if (detail::runs_discrete(problem, options)) return detail::discrete_adjoint(problem, p, options);
  if (detail::runs_on_idas(problem, options)) return detail::dae_adjoint(problem, p, options);
  const SolverMessageScope messages;  // one cap for the forward and the backward pass
  detail::HybridRun run(problem, p, options, detail::RunKind::AdjointRecording);
  Solution sol = run.run();
  AdjointSweep(problem, p, options, run, sol).run();
  return sol;
}

Solution adjoint(const Problem& problem) {
  return adjoint(problem, problem.nominal_parameters(), problem.options());
}

}  // namespace saltus
