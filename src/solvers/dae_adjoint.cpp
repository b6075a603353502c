// The backward pass of the adjoint on IDAS (theory/hybrid-dae.md section 3, Saltus sign): per
// recorded segment the adjoint DAE
//     F_xdot^T lambda-dot - F_x^T lambda + g_x^T = 0          (F_xdot constant in the mode)
// or, where F_xdot changes along the segment (a state-dependent mass matrix), its conservative
// form d/dt (F_ydot^T lambda) = F_y^T lambda - g_y^T with xi = F_ydot^T lambda as the backward
// differential states and lambda algebraic:
//     xi - F_ydot^T lambda = 0,   F_z^T lambda - g_z^T = 0,   xi-dot - F_y^T lambda + g_y^T = 0,
// index 1 where [F_ydot | F_z] is nonsingular, with no derivative of F_xdot along the motion.
// with the gradient quadrature integral of (g_p - lambda^T F_p), one column per cost; at the
// final time and before every event lambda is made consistent (consistent_adjoint), and the
// event's transposed transfer is event_transfer's transfer_adjoint applied to F_xdot+^T lambda+.
// Modes with a completion (index 2, and the multibody index3 and stabilized_index1 forms) take
// the adjoint of the completion's ODE x' = R(t, x, p) instead (completed_adjoint.hpp): the same
// equations with F_xdot = I, F_x = -R_x, F_p = -R_p, and the completion's transpose wherever
// coefficients of x reach it (final time, before events, t0).
#include <saltus/core/error.hpp>
#include <saltus/derivatives/residual.hpp>
#include <saltus/derivatives/reverse.hpp>
#include <saltus/solvers/dae_transfer.hpp>
#include <saltus/solvers/event_transfer.hpp>
#include <saltus/solvers/solver_messages.hpp>

#include <fmt/format.h>

#include <stdexcept>

#include <algorithm>
#include <exception>

#include "dae_adjoint.hpp"
#include "completed_adjoint.hpp"
#include "dae_run.hpp"
#include "implicit_transition.hpp"
#include "nvector_view.hpp"
#include "rate_costs.hpp"
#include "run_support.hpp"

namespace saltus::detail {

namespace {

/// Relative change of F_xdot above which a segment takes the conservative form: the first form
/// above drops d/dt(F_xdot)^T lambda.
constexpr double kConstantMassTolerance = 1e-12;

/// Up to this many gradient integrals (n_p n_c) the backward problem carries them as IDAS states
/// with q' = F_p^T lambda - g_p: IDAS leaves quadratures out of its order selection, and an
/// adjoint that is a low-degree polynomial of time (an integrator chain: lambda linear in t)
/// then kept it at order 1, the quadratures forcing tiny steps and losing accuracy (2.8e-5
/// relative at rtol 1e-8 on a clock). Beyond it they stay quadratures, which keep the dense
/// backward Jacobian at n_x n_c.
constexpr int kGradientStatesLimit = 64;

class DaeAdjointSweep {
 public:
  DaeAdjointSweep(const Problem& problem, const Eigen::VectorXd& p, const Options& options, DaeRun& run,
                  Solution& sol);
  void run();

 private:
  static int residual_cb(sunrealtype t, N_Vector y, N_Vector yp, N_Vector yB, N_Vector ypB, N_Vector rB, void* self);
  static int jacobian_cb(sunrealtype t, sunrealtype cj, N_Vector y, N_Vector yp, N_Vector yB, N_Vector ypB,
                         N_Vector rB, SUNMatrix JB, void* self, N_Vector, N_Vector, N_Vector);
  static int quadrature_cb(sunrealtype t, N_Vector y, N_Vector yp, N_Vector yB, N_Vector ypB, N_Vector qdot,
                           void* self);
  /// J v = c_j v + (R_x^T v_lambda per cost; R_p^T v_lambda per cost for the gradient states),
  /// the backward Newton matrix of a completed segment times v, by one sweep (every cost's block
  /// in one pass) of the completion recorded at the forward point (rate_products_, one recording
  /// per point for the residual and all of GMRES's products there): GMRES's product, which needs
  /// no n_x completion tangents.
  static int jacobian_times_cb(sunrealtype t, N_Vector y, N_Vector yp, N_Vector yB, N_Vector ypB, N_Vector rB,
                               N_Vector v, N_Vector Jv, sunrealtype cj, void* self, N_Vector, N_Vector);
  /// Whether this segment's backward Newton systems take matrix-free GMRES (jacobian_times_cb):
  /// a completed mode, from Options::krylov_min_states states on, unless the options ask for the
  /// dense LU, or gradient states are out of the error test (their weights, ~1e-300, would let
  /// GMRES leave their rows unsolved).
  bool matrix_free_segment() const;
  /// The linearization at the forward point (t, x, x-dot) of the current mode, which has no
  /// completion (a completed one takes the recorded products instead): its state part
  /// (F_x, g_x) or also its parameter part (F_p, g_p), kept while the point does not change
  /// (IDAS evaluates the backward residual several times per point); F_xdot is the segment's, or
  /// the point's in the conservative form.
  const ResidualLinearization& at(double t, const Eigen::Ref<const Eigen::VectorXd>& x,
                                  const Eigen::Ref<const Eigen::VectorXd>& xdot, bool parameters);
  /// Runs a backward callback's body, which returns 0, or 1 where its output is not finite, as
  /// detail::backward_callback (what fails how); `what` names the output in messages.
  template <class Body>
  int guarded(const char* what, double t, Body&& body) noexcept;
  /// F and the running costs (rates folded in, rate_costs.hpp) at a point of `mode`, a mode
  /// without a completion (a completed mode's lambda comes from the completion's transpose).
  void linearize_with_costs(int mode, double t, const Eigen::VectorXd& x, const Eigen::VectorXd& xdot,
                            ResidualLinearization& lin);
  void terminal_conditions();
  /// lambda_ in mode_ from the coefficients ell (n_x x n_c) of x there (at (t, x)), and those
  /// of x-dot (`ell_rate`, n_x x n_c, or empty: an event whose guard reads rates); grad_ gets
  /// the parameter part of the reduction. `lin` is F's linearization there (unread, and left
  /// empty, in a mode with a completion).
  void consistent_lambda(double t, const Eigen::VectorXd& x, const ResidualLinearization& lin,
                         const Eigen::MatrixXd& ell, const Eigen::MatrixXd& ell_rate = {});
  /// Whether `mode` takes the adjoint through its completion (completed_adjoint.hpp).
  bool completed(int mode) const { return pb_.mode(mode).index2(); }
  /// F_xdot^T lambda at a point of `mode` (lambda itself in the completed form).
  Eigen::MatrixXd rate_weighted(int mode, double t, const Eigen::VectorXd& x, const Eigen::VectorXd& xdot);
  /// F_xdot (n_x x n_x) of `mode` at (t, x, x-dot), without the rest of a linearization.
  void rate_matrix(int mode, double t, const Eigen::VectorXd& x, const Eigen::VectorXd& xdot, Eigen::MatrixXd& f_xdot);
  /// In a mode with a completion, `weighted` (coefficients of the completed state) carried back
  /// through the completion's tangent taken at `x` (where the forward pass takes it); grad_ gets
  /// its parameter part.
  Eigen::MatrixXd completed_weights(int mode, double t, const Eigen::VectorXd& x, const Eigen::MatrixXd& weighted);
  void integrate_segment(DaeSegment& segment);
  /// Whether F_xdot may change along the segment: compared at its ends and at a generic
  /// perturbation of the state and the rates there (a mass matrix that returns to its value).
  bool mass_varies(const DaeSegment& segment);
  void transpose_event(const EventRecord& event);
  IdasBackwardSettings settings();
  /// The backward states and rates at the end of a segment (t_end): lambda_ made consistent
  /// there with its rates, xi in the conservative form and the gradient states; in a mode
  /// without and with a completion.
  void residual_start(const DaeSegment& seg, Eigen::VectorXd& yB0, Eigen::VectorXd& ypB0);
  void completed_start(const DaeSegment& seg, Eigen::VectorXd& yB0, Eigen::VectorXd& ypB0);
  /// algebraic_adjoints_ for the segment whose F_xdot `lin` holds: lambda_i is algebraic where
  /// equation i reads no rate (row i of F_xdot zero; adjoint_rate's rule), none in a completed
  /// mode (F_xdot = I) or the conservative form (settings() takes all of lambda there).
  void note_algebraic_adjoints(const ResidualLinearization& lin);

  int gradient_states() const { return np_ * nc_ <= kGradientStatesLimit ? np_ * nc_ : 0; }
  /// Backward states per cost: lambda, and xi in the conservative form.
  int block() const { return conservative_ ? nx_ + ny_ : nx_; }
  int adjoint_states() const { return block() * nc_; }
  /// R_x^T lambda_c + g~_x^T and R_p^T lambda_c + g~_p^T per cost at the forward state x, by
  /// one reverse sweep (all costs' columns in one pass) of the completion and the costs recorded
  /// at x, the recording GMRES's products there share (completed_adjoint.hpp); `yB` holds the
  /// costs' lambda first. Valid until the next call.
  const TransposedProducts& completed_products(double t, const Eigen::Ref<const Eigen::VectorXd>& x,
                                        const Eigen::Ref<const Eigen::VectorXd>& yB);
  /// The backward residual of a mode with a completion: lambda-dot + R_x^T lambda + g~_x^T and
  /// the gradient states' q-dot + R_p^T lambda + g~_p^T. Reverse sweeps rather than the n_x + n_p
  /// forward tangents of the Jacobian, which IDAS asks for far less often (fivebar_floor at rtol
  /// 1e-10, adjoint / simulation: stabilized_index1 17.7 -> 6.9, ggl 15.5 -> 6.9, index3 7.2 -> 4.1).
  void completed_residual(double t, const Eigen::Ref<const Eigen::VectorXd>& x,
                          const Eigen::Ref<const Eigen::VectorXd>& yB, const Eigen::Ref<const Eigen::VectorXd>& ypB,
                          Eigen::Ref<Eigen::VectorXd> r);
  /// The backward Newton matrix of a completed segment: per cost R_x^T + c_j I, and the gradient
  /// states' rows R_p^T (the residual's R_x^T lambda and R_p^T lambda differentiated in lambda),
  /// by one sweep of n_x columns over the completion recorded at the forward point, the recording
  /// the residual there has just made. Forward tangents of the completion (n_x + n_p of them)
  /// cost several times more: fivebar_floor ggl's backward Jacobians 14 % of its adjoint.
  void completed_jacobian(double t, const Eigen::Ref<const Eigen::VectorXd>& x, double cj,
                          Eigen::Map<Eigen::MatrixXd>& jac);
  /// The conservative form's residual rows of one cost (see the top of this file).
  void conservative_residual(const ResidualLinearization& lin, int c, const Eigen::Ref<const Eigen::VectorXd>& yB,
                             const Eigen::Ref<const Eigen::VectorXd>& ypB, Eigen::Ref<Eigen::VectorXd> r);

  const Problem& pb_;
  Eigen::VectorXd p_;
  Options opt_;
  DaeRun& run_;
  Solution& sol_;
  int nx_, np_, nc_;
  int ny_;                      // differential states
  std::vector<int> rate_slot_;  // per state: its slot among the differential states, -1 if algebraic
  int mode_ = 0;
  bool conservative_ = false;   // the segment being integrated takes the conservative form
  bool segment_completed_ = false;  // and whether its mode has a completion (read per callback)
  std::vector<bool> algebraic_adjoints_;  // per state, in this segment; empty: none
  Eigen::VectorXd work_x_, work_e_;  // scratch of the conservative residual
  CompletionRateProducts rate_products_;  // the completion and costs recorded at the forward point
  TransposedProducts rate_product_;       // its rate sweep's output (jacobian_times_cb)
  TransposedProducts cost_product_;       // its cost sweep's output (completed_products)
  Eigen::MatrixXd identity_;              // n_x x n_x: completed_jacobian's sweep weights

  Eigen::MatrixXd lambda_;  // n_x x n_c
  Eigen::MatrixXd grad_;    // n_c x n_p
  TangentWorkspace ws_;
  ResidualLinearization lin_;
  double lin_t_ = 0.0;
  Eigen::VectorXd lin_x_, lin_xdot_;
  Eigen::VectorXd lin_rates_;  // the rates lin_ is taken at: IDAS's, or the state's where costs read rates
  bool lin_valid_ = false;             // the state part is at (lin_t_, lin_x_, lin_xdot_)
  bool lin_parameters_valid_ = false;  // and the parameter part
  RateCostFold fold_;
  std::vector<double> outputs_;  // the run's output times: where the backward pass stops
  std::string error_;  // the last recoverable failure since the backward pass's last stop
  int failures_ = 0;   // and how many there were (detail::recoverable_failure)
  std::exception_ptr exception_;
};

DaeAdjointSweep::DaeAdjointSweep(const Problem& problem, const Eigen::VectorXd& p, const Options& options,
                                 DaeRun& run, Solution& sol)
    : pb_(problem),
      p_(p),
      opt_(options),
      run_(run),
      sol_(sol),
      nx_(problem.n_states()),
      np_(problem.n_parameters()),
      nc_(problem.n_costs()),
      ny_(problem.n_states() - problem.n_algebraic()),
      rate_slot_(static_cast<size_t>(problem.n_states()), -1),
      work_x_(problem.n_states()),
      work_e_(problem.n_states()),
      rate_products_(problem, p),
      outputs_(detail::output_grid(options)) {
  int slot = 0;
  for (int i = 0; i < nx_; ++i) {
    if (!problem.is_algebraic(i)) rate_slot_[static_cast<size_t>(i)] = slot++;
  }
}

template <class Body>
int DaeAdjointSweep::guarded(const char* what, double t, Body&& body) noexcept {
  return detail::backward_callback(error_, failures_, exception_, pb_.mode(mode_).name, what, t, body);
}

const ResidualLinearization& DaeAdjointSweep::at(double t, const Eigen::Ref<const Eigen::VectorXd>& x,
                                                 const Eigen::Ref<const Eigen::VectorXd>& xdot, bool parameters) {
  if (!(lin_valid_ && t == lin_t_ && x == lin_x_ && xdot == lin_xdot_)) {
    // Invalid until complete: a model error below (recoverable) must not leave this point's keys
    // on the previous point's linearization, which IDAS's retry at the same point would read.
    lin_valid_ = false;
    lin_parameters_valid_ = false;
    lin_t_ = t;
    lin_x_ = x;
    lin_xdot_ = xdot;
    linearize_states(pb_, mode_, t, x, xdot, p_, lin_, ws_);
    lin_rates_ = xdot;
    if (!fold_.empty()) {
      // The costs that read rates read the state's (RateCostFold::rates_of_the_state).
      lin_rates_ = fold_.rates_of_the_state(pb_, mode_, t, x, xdot, p_, lin_.f_xdot, ws_);
      if (lin_rates_ != xdot) linearize_states(pb_, mode_, t, x, lin_rates_, p_, lin_, ws_);
    }
    if (conservative_) {
      residual_columns(pb_, mode_, t, x, lin_rates_, p_, lin_.zeros_x, lin_.ones, lin_.f_xdot, ws_);
    }
    fold_.apply(pb_, t, x, lin_rates_, p_, lin_, RateCostFold::Part::States, ws_);
    lin_valid_ = true;
    lin_parameters_valid_ = false;
  }
  if (parameters && !lin_parameters_valid_) {
    linearize_parameters(pb_, mode_, t, x, lin_rates_, p_, lin_, ws_);
    fold_.apply(pb_, t, x, lin_rates_, p_, lin_, RateCostFold::Part::Parameters, ws_);
    lin_parameters_valid_ = true;
  }
  return lin_;
}

int DaeAdjointSweep::residual_cb(sunrealtype t, N_Vector y, N_Vector yp, N_Vector yB, N_Vector ypB, N_Vector rB,
                                 void* ptr) {
  auto* self = static_cast<DaeAdjointSweep*>(ptr);
  return self->guarded("residual", t, [&] {
    if (self->segment_completed_) {
      self->completed_residual(t, view(y).head(self->nx_), view(yB), view(ypB), view(rB));
      return view(rB).allFinite() ? 0 : 1;
    }
    const ResidualLinearization& lin = self->at(t, view(y).head(self->nx_), view(yp).head(self->nx_), false);
    auto lambda = view(yB);
    auto rate = view(ypB);
    auto out = view(rB);
    const int n = self->nx_, b = self->block();
    for (int c = 0; c < self->nc_; ++c) {
      if (self->conservative_) {
        self->conservative_residual(lin, c, lambda.segment(c * b, b), rate.segment(c * b, b), out.segment(c * b, b));
        continue;
      }
      auto r = out.segment(c * n, n);
      r.noalias() = lin.f_xdot.transpose() * rate.segment(c * n, n);
      r.noalias() -= lin.f_x.transpose() * lambda.segment(c * n, n);
      r += lin.g_x.row(c).transpose();
    }
    const int nq = self->gradient_states();
    if (nq > 0) {
      // The gradient integrals: q' - (F_p^T lambda - g_p) = 0, one block of n_p per cost.
      const ResidualLinearization& full = self->at(t, view(y).head(n), view(yp).head(n), true);
      const int np = self->np_;
      const int offset = self->adjoint_states();
      for (int c = 0; c < self->nc_; ++c) {
        auto r = out.segment(offset + c * np, np);
        r = rate.segment(offset + c * np, np) + full.g_p.row(c).transpose();
        r.noalias() -= full.f_p.transpose() * lambda.segment(c * b, n);
      }
    }
    return out.allFinite() ? 0 : 1;
  });
}

int DaeAdjointSweep::jacobian_cb(sunrealtype t, sunrealtype cj, N_Vector y, N_Vector yp, N_Vector, N_Vector,
                                 N_Vector, SUNMatrix JB, void* ptr, N_Vector, N_Vector, N_Vector) {
  auto* self = static_cast<DaeAdjointSweep*>(ptr);
  return self->guarded("Jacobian", t, [&] {
    const int n = self->nx_, b = self->block();
    const int nq = self->gradient_states();
    const int size = self->adjoint_states() + nq;
    Eigen::Map<Eigen::MatrixXd> jac(SM_DATA_D(JB), size, size);
    jac.setZero();
    if (self->segment_completed_) {
      self->completed_jacobian(t, view(y).head(n), cj, jac);
      return jac.allFinite() ? 0 : 1;
    }
    const ResidualLinearization& lin = self->at(t, view(y).head(self->nx_), view(yp).head(self->nx_), false);
    for (int c = 0; c < self->nc_; ++c) {
      if (!self->conservative_) {
        jac.block(c * n, c * n, n, n) = -lin.f_x.transpose() + cj * lin.f_xdot.transpose();
        continue;
      }
      // Rows (lambda rows, xi rows), columns (lambda, xi) of the conservative residual.
      for (int i = 0; i < n; ++i) {
        const int k = self->rate_slot_[static_cast<size_t>(i)];
        if (k < 0) {
          jac.block(c * b + i, c * b, 1, n) = -lin.f_x.col(i).transpose();
          continue;
        }
        jac.block(c * b + i, c * b, 1, n) = -lin.f_xdot.col(i).transpose();
        jac(c * b + i, c * b + n + k) = 1.0;
        jac.block(c * b + n + k, c * b, 1, n) = -lin.f_x.col(i).transpose();
        jac(c * b + n + k, c * b + n + k) = cj;
      }
    }
    if (nq > 0) {
      const ResidualLinearization& full = self->at(t, view(y).head(n), view(yp).head(n), true);
      const int np = self->np_;
      const int offset = self->adjoint_states();
      for (int c = 0; c < self->nc_; ++c) jac.block(offset + c * np, c * b, np, n) = -full.f_p.transpose();
      jac.bottomRightCorner(nq, nq).diagonal().setConstant(cj);
    }
    return jac.allFinite() ? 0 : 1;
  });
}

// IDAS integrates q' = rhsQB backwards from 0 at the segment's end, so rhsQB = -(g_p -
// lambda^T F_p) accumulates +integral (g_p - lambda^T F_p) over the segment.
int DaeAdjointSweep::quadrature_cb(sunrealtype t, N_Vector y, N_Vector yp, N_Vector yB, N_Vector, N_Vector qdot,
                                   void* ptr) {
  auto* self = static_cast<DaeAdjointSweep*>(ptr);
  return self->guarded("quadrature", t, [&] {
    if (self->segment_completed_) {
      // -(R_p^T lambda + g~_p^T), by one reverse sweep for every cost.
      view(qdot) = -self->completed_products(t, view(y).head(self->nx_), view(yB)).p.reshaped();
      return view(qdot).allFinite() ? 0 : 1;
    }
    const ResidualLinearization& lin = self->at(t, view(y).head(self->nx_), view(yp).head(self->nx_), true);
    auto lambda = view(yB);
    auto out = view(qdot);
    const int n = self->nx_, np = self->np_, b = self->block();
    for (int c = 0; c < self->nc_; ++c) {
      auto q = out.segment(c * np, np);
      q.noalias() = lin.f_p.transpose() * lambda.segment(c * b, n);
      q -= lin.g_p.row(c).transpose();
    }
    return out.allFinite() ? 0 : 1;
  });
}

int DaeAdjointSweep::jacobian_times_cb(sunrealtype t, N_Vector y, N_Vector, N_Vector, N_Vector, N_Vector,
                                       N_Vector v, N_Vector Jv, sunrealtype cj, void* ptr, N_Vector, N_Vector) {
  auto* self = static_cast<DaeAdjointSweep*>(ptr);
  return self->guarded("Jacobian product", t, [&] {
    const int n = self->nx_, nc = self->nc_, na = n * nc, nq = self->gradient_states();
    const auto direction = view(v);
    auto out = view(Jv);
    self->rate_products_.record(self->mode_, t, view(y).head(n));  // R = x-dot_c
    // The cost blocks of v as an n x n_c matrix in place: no copy per product.
    const Eigen::Map<const Eigen::MatrixXd> weights(direction.data(), n, nc);
    self->rate_products_.sweep(weights, self->rate_product_);
    const TransposedProducts& products = self->rate_product_;
    out.head(na) = cj * direction.head(na) + products.x.reshaped();
    if (nq > 0) out.segment(na, nq) = cj * direction.segment(na, nq) + products.p.reshaped();
    return out.allFinite() ? 0 : 1;
  });
}

bool DaeAdjointSweep::matrix_free_segment() const {
  return segment_completed_ && !conservative_ && opt_.linear_solver != LinearSolver::Dense &&
         nx_ >= opt_.krylov_min_states && (gradient_states() == 0 || opt_.adjoint_quadrature_error_control);
}

IdasBackwardSettings DaeAdjointSweep::settings() {
  const AdjointTolerances tol = adjoint_tolerances(opt_, p_, sol_.costs);
  IdasBackwardSettings s;
  s.rtol = tol.rtol;
  s.state_atol = tol.per_state(block());
  s.quadrature_atol = tol.quadrature_atol;
  s.quadrature_error_control = opt_.adjoint_quadrature_error_control;
  s.max_steps = opt_.max_steps;
  s.residual = residual_cb;
  s.jacobian = jacobian_cb;
  if (matrix_free_segment()) s.jacobian_times = jacobian_times_cb;
  s.quadrature = quadrature_cb;
  if (gradient_states() > 0) {
    for (double a : tol.quadrature_atol) s.state_atol.push_back(opt_.adjoint_quadrature_error_control ? a : 1e300);
  }
  // Algebraic components of the backward states leave the error test. Their equations read the
  // forward state, which IDAS interpolates, so their values from the recorded consistent point
  // (the final time, an event) differ from IDAS's by its interpolation error; in the error test
  // that difference failed the first step at every step size (IDA_ERR_FAIL). In the
  // conservative form that is all of lambda, fixed by xi through [F_ydot | F_z]^T (its equations
  // read the forward rates where F_ydot depends on z); xi and the gradients carry the error
  // control. Otherwise lambda_i where equation i of F reads no rate: a pendulum DAE with a
  // multiplier lambda, its wall impact's event cost and a running cost failed so at every rtol
  // from 1e-6 to 1e-11 (lambda's multiplier component, x lambda_u + y lambda_v over |r|^2, a
  // difference of O(1) terms, moved 7e-11 with the interpolated x, y: 66 times its atol).
  if (conservative_ || !algebraic_adjoints_.empty()) {
    s.differential.assign(static_cast<size_t>(adjoint_states() + gradient_states()), 1.0);
    for (int c = 0; c < nc_; ++c) {
      for (int i = 0; i < nx_; ++i) {
        const bool algebraic = conservative_ || algebraic_adjoints_[static_cast<size_t>(i)];
        if (algebraic) s.differential[static_cast<size_t>(c * block() + i)] = 0.0;
      }
    }
  }
  s.user_data = this;
  s.block = block();  // jacobian_cb: each cost's block alike, then the gradient states' rows
  s.blocks = nc_;
  return s;
}

void DaeAdjointSweep::note_algebraic_adjoints(const ResidualLinearization& lin) {
  algebraic_adjoints_.clear();
  if (segment_completed_ || conservative_) return;
  std::vector<bool> algebraic(static_cast<size_t>(nx_));
  bool any = false;
  for (int i = 0; i < nx_; ++i) {
    algebraic[static_cast<size_t>(i)] = lin.f_xdot.row(i).isZero(0.0);
    any = any || algebraic[static_cast<size_t>(i)];
  }
  if (any) algebraic_adjoints_ = std::move(algebraic);
}

void DaeAdjointSweep::terminal_conditions() {
  const double tf = sol_.times.back();
  mode_ = sol_.final_mode;
  const DaeSegment& last = run_.segments().back();
  ResidualLinearization lin;
  if (!completed(mode_)) linearize_with_costs(mode_, tf, last.end.x, last.end.xdot, lin);
  Eigen::MatrixXd ell(nx_, nc_);
  grad_.resize(nc_, np_);
  for (int c = 0; c < nc_; ++c) {
    const ScalarGradient w = terminal_cost_gradient(pb_, c, tf, sol_.final_state, p_);
    ell.col(c) = w.x;
    grad_.row(c) = w.p.transpose();
  }
  consistent_lambda(tf, sol_.final_state, lin, ell);
}

void DaeAdjointSweep::consistent_lambda(double t, const Eigen::VectorXd& x, const ResidualLinearization& lin,
                                        const Eigen::MatrixXd& ell, const Eigen::MatrixXd& ell_rate) {
  if (completed(mode_)) {
    // Problem::validate refuses guards that read rates in index-2 modes.
    if (ell_rate.size() > 0) throw std::logic_error("consistent_lambda: rate coefficients in an index-2 mode");
    // Through the completion's transpose: lambda pairs with the ODE's sensitivities, ell with
    // the consistent ones, which the completion's tangent gives from them.
    lambda_ = completed_weights(mode_, t, x, ell);
    return;
  }
  lambda_.resize(nx_, nc_);
  for (int c = 0; c < nc_; ++c) {
    const AdjointPoint a =
        ell_rate.size() > 0 ? consistent_adjoint(pb_, lin, ell.col(c), ell_rate.col(c), lin.g_x.row(c).transpose())
                            : consistent_adjoint(pb_, lin, ell.col(c), lin.g_x.row(c).transpose());
    lambda_.col(c) = a.lambda;
    grad_.row(c) += a.gradient.transpose();
  }
}

Eigen::MatrixXd DaeAdjointSweep::completed_weights(int mode, double t, const Eigen::VectorXd& x,
                                                   const Eigen::MatrixXd& weighted) {
  if (!pb_.mode(mode).index2()) return weighted;
  const CompletionTranspose ct = transpose_completion(pb_, mode, t, x, p_, weighted);
  grad_ += ct.p;
  return ct.x;
}

Eigen::MatrixXd DaeAdjointSweep::rate_weighted(int mode, double t, const Eigen::VectorXd& x,
                                               const Eigen::VectorXd& xdot) {
  if (completed(mode)) return lambda_;  // F_xdot = I
  Eigen::MatrixXd f_xdot(nx_, nx_);
  rate_matrix(mode, t, x, xdot, f_xdot);
  return f_xdot.transpose() * lambda_;
}

void DaeAdjointSweep::rate_matrix(int mode, double t, const Eigen::VectorXd& x, const Eigen::VectorXd& xdot,
                                  Eigen::MatrixXd& f_xdot) {
  const Eigen::VectorXd ones = Eigen::VectorXd::Ones(nx_), zeros = Eigen::VectorXd::Zero(nx_);
  residual_columns(pb_, mode, t, x, xdot, p_, zeros, ones, f_xdot, ws_);
}

bool DaeAdjointSweep::mass_varies(const DaeSegment& seg) {
  if (completed(seg.mode)) return false;  // F_xdot = I
  Eigen::MatrixXd reference(nx_, nx_), other(nx_, nx_);
  const auto mass = [&](double t, const Eigen::VectorXd& x, const Eigen::VectorXd& xdot, Eigen::MatrixXd& out) {
    rate_matrix(seg.mode, t, x, xdot, out);
  };
  // A generic direction, as in RateCostFold::scan: a mass matrix that happens to agree at the
  // segment's ends still changes under it.
  const auto perturbed = [&](const Eigen::VectorXd& v) {
    Eigen::VectorXd out = v;
    for (int i = 0; i < nx_; ++i) out[i] += 1e-3 * (0.37 + 0.011 * i) * std::max(1.0, std::abs(v[i]));
    return out;
  };
  mass(seg.t_start, seg.start.x, seg.start.xdot, reference);
  const double scale = std::max(1.0, reference.lpNorm<Eigen::Infinity>());
  const auto differs = [&] {
    return !((other - reference).lpNorm<Eigen::Infinity>() <= kConstantMassTolerance * scale);
  };
  mass(seg.t_end, seg.end.x, seg.end.xdot, other);
  if (differs()) return true;
  mass(seg.t_start, perturbed(seg.start.x), perturbed(seg.start.xdot), other);
  return differs();
}

const TransposedProducts& DaeAdjointSweep::completed_products(double t, const Eigen::Ref<const Eigen::VectorXd>& x,
                                                      const Eigen::Ref<const Eigen::VectorXd>& yB) {
  rate_products_.record(mode_, t, x);  // shared with GMRES's products at this point
  const Eigen::Map<const Eigen::MatrixXd> weights(yB.data(), nx_, nc_);  // lambda by cost, in place
  rate_products_.cost_sweep(weights, cost_product_);
  return cost_product_;
}

void DaeAdjointSweep::completed_residual(double t, const Eigen::Ref<const Eigen::VectorXd>& x,
                                         const Eigen::Ref<const Eigen::VectorXd>& yB,
                                         const Eigen::Ref<const Eigen::VectorXd>& ypB, Eigen::Ref<Eigen::VectorXd> r) {
  const TransposedProducts& products = completed_products(t, x, yB);
  const Eigen::Index na = nx_ * nc_;
  r.head(na) = ypB.head(na) + products.x.reshaped();
  const int nq = gradient_states();
  if (nq > 0) r.segment(na, nq) = ypB.segment(na, nq) + products.p.reshaped();
}

void DaeAdjointSweep::completed_jacobian(double t, const Eigen::Ref<const Eigen::VectorXd>& x, double cj,
                                         Eigen::Map<Eigen::MatrixXd>& jac) {
  rate_products_.record(mode_, t, x);
  if (identity_.rows() != nx_) identity_ = Eigen::MatrixXd::Identity(nx_, nx_);
  rate_products_.sweep(identity_, rate_product_);
  const Eigen::MatrixXd& r_x_transposed = rate_product_.x;  // n_x x n_x
  const int nq = gradient_states(), offset = adjoint_states();
  for (int c = 0; c < nc_; ++c) {
    auto block = jac.block(c * nx_, c * nx_, nx_, nx_);
    block = r_x_transposed;
    block.diagonal().array() += cj;
    if (nq > 0) jac.block(offset + c * np_, c * nx_, np_, nx_) = rate_product_.p;  // R_p^T
  }
  if (nq > 0) jac.bottomRightCorner(nq, nq).diagonal().setConstant(cj);
}

void DaeAdjointSweep::conservative_residual(const ResidualLinearization& lin, int c,
                                            const Eigen::Ref<const Eigen::VectorXd>& yB,
                                            const Eigen::Ref<const Eigen::VectorXd>& ypB,
                                            Eigen::Ref<Eigen::VectorXd> r) {
  const auto lambda = yB.head(nx_);
  const auto xi = yB.tail(ny_);
  const auto xi_rate = ypB.tail(ny_);
  work_x_.noalias() = lin.f_x.transpose() * lambda;
  work_x_ -= lin.g_x.row(c).transpose();
  work_e_.noalias() = lin.f_xdot.transpose() * lambda;
  for (int i = 0; i < nx_; ++i) {
    const int k = rate_slot_[static_cast<size_t>(i)];
    if (k < 0) {
      r[i] = -work_x_[i];  // F_z^T lambda - g_z^T = 0
      continue;
    }
    r[i] = xi[k] - work_e_[i];                 // xi = F_ydot^T lambda
    r[nx_ + k] = xi_rate[k] - work_x_[i];      // xi-dot = F_y^T lambda - g_y^T
  }
}

void DaeAdjointSweep::integrate_segment(DaeSegment& seg) {
  if (!seg.advanced || !(seg.t_end > seg.t_start)) return;
  conservative_ = mass_varies(seg);
  mode_ = seg.mode;
  segment_completed_ = completed(mode_);
  run_.recompute_segment(seg);  // IDAS recomputes forward steps of this segment
  IdasSession& session = *seg.session;
  sol_.adjoint.checkpoints += session.checkpoints();
  sol_.adjoint.checkpoint_steps = std::max(sol_.adjoint.checkpoint_steps, session.checkpoint_spacing());
  const int nq = gradient_states(), b = block(), na = adjoint_states();
  Eigen::VectorXd yB0(na + nq), ypB0(na + nq);
  if (segment_completed_) {
    completed_start(seg, yB0, ypB0);
  } else {
    residual_start(seg, yB0, ypB0);
  }
  session.start_backward(na + nq, nq > 0 ? 0 : np_ * nc_, settings(), seg.t_end, yB0, ypB0);
  Eigen::VectorXd yB, qB;
  const int flag = detail::integrate_backward_by_stops(outputs_, seg.t_start, seg.t_end, error_, failures_, exception_,
                                                       [&](double stop) { return session.integrate_backward(stop, yB, qB); });
  session.add_backward_stats(sol_.adjoint.backward);
  if (exception_) std::rethrow_exception(exception_);
  if (flag < 0) {
    throw_if_interrupted(seg.t_start);
    const std::string context =
        fmt::format("on [{:.17g}, {:.17g}] in mode '{}'", seg.t_start, seg.t_end, pb_.mode(seg.mode).name);
    const std::string recovered =
        detail::blame_model_error(error_, flag, ida_flag_name(flag), "in the backward (adjoint) pass " + context);
    double t_stop = 0.0;
    Eigen::VectorXd x_stop;
    const std::string diagnosis =
        session.backward_stop(t_stop, x_stop)
            ? fmt::format(", stopped at t = {:.17g}{}", t_stop, pb_.diagnose_failure(t_stop, x_stop.head(nx_), p_))
            : std::string();
    throw SolverError(fmt::format("the backward (adjoint) integration on IDAS failed with {} {}{}{}", ida_flag_name(flag),
                                  context, diagnosis, recovered));
  }
  if (nq > 0) qB = yB.tail(nq);
  for (int c = 0; c < nc_; ++c) lambda_.col(c) = yB.segment(c * b, nx_);
  if (np_ > 0) grad_ += qB.reshaped(np_, nc_).transpose();
  seg.session.reset();  // the backward pass is done with this recording
}

void DaeAdjointSweep::residual_start(const DaeSegment& seg, Eigen::VectorXd& yB0, Eigen::VectorXd& ypB0) {
  linearize_with_costs(mode_, seg.t_end, seg.end.x, seg.end.xdot, lin_);  // F_xdot for the segment
  lin_valid_ = false;
  const ResidualLinearization& lin = lin_;
  note_algebraic_adjoints(lin);
  const int nq = gradient_states(), b = block(), na = adjoint_states();
  for (int c = 0; c < nc_; ++c) {
    Eigen::VectorXd lambda = lambda_.col(c);
    const Eigen::VectorXd rate = adjoint_rate(lin, lambda, lin.g_x.row(c).transpose());
    lambda_.col(c) = lambda;
    yB0.segment(c * b, nx_) = lambda_.col(c);
    ypB0.segment(c * b, nx_) = rate;  // the conservative form: a predictor for lambda only
    if (!conservative_) continue;
    // xi = F_ydot^T lambda, xi-dot = F_y^T lambda - g_y^T.
    const Eigen::VectorXd weighted = lin.f_xdot.transpose() * lambda_.col(c);
    const Eigen::VectorXd forcing = lin.f_x.transpose() * lambda_.col(c) - lin.g_x.row(c).transpose();
    for (int i = 0; i < nx_; ++i) {
      const int k = rate_slot_[static_cast<size_t>(i)];
      if (k < 0) continue;
      yB0[c * b + nx_ + k] = weighted[i];
      ypB0[c * b + nx_ + k] = forcing[i];
    }
  }
  if (nq > 0) {
    yB0.tail(nq).setZero();
    for (int c = 0; c < nc_; ++c) {
      ypB0.segment(na + c * np_, np_) = lin.f_p.transpose() * lambda_.col(c) - lin.g_p.row(c).transpose();
    }
  }
}

void DaeAdjointSweep::completed_start(const DaeSegment& seg, Eigen::VectorXd& yB0, Eigen::VectorXd& ypB0) {
  algebraic_adjoints_.clear();
  const int nq = gradient_states(), na = adjoint_states();
  yB0.head(na) = lambda_.reshaped();
  yB0.tail(nq).setZero();
  // The residual's own rates (completed_residual): lambda' = -(R_x^T lambda + g~_x^T) and the
  // gradient states' q' = -(R_p^T lambda + g~_p^T), one sweep of the recording the residual
  // makes there (n_x + n_p forward tangents of the completion did it, whose normal components
  // differ from the rate completion's).
  const TransposedProducts& products = completed_products(seg.t_end, seg.end.x, yB0.head(na));
  ypB0.head(na) = -products.x.reshaped();
  if (nq > 0) ypB0.tail(nq) = -products.p.reshaped();
}

void DaeAdjointSweep::transpose_event(const EventRecord& e) {
  const EventValues v = recorded_dae_event(pb_, e, p_, ws_);
  require_transversal(pb_, v, opt_.grazing_tolerance, "no adjoint sensitivity exists");
  // psi gets lambda+^T F_xdot+ S+ at t_e+: only S_y+ (F_xdot has zero algebraic columns), which
  // the explicit-reset transfer gives (through the completion's tangent in an index-2 mode); its
  // transpose yields the coefficients of x(t_e-).
  Eigen::MatrixXd weighted = rate_weighted(v.mode_after, v.time, v.x_plus, v.f_plus);
  // The forward transfer takes the completion's tangent at the completed x+ (dae_transfer.cpp,
  // consistent_sensitivities): the same point here, so that both passes differentiate one map.
  weighted = completed_weights(v.mode_after, v.time, v.x_plus, weighted);
  const bool implicit = static_cast<bool>(pb_.event(v.event).transition);
  const JumpLinearization transition = implicit ? linearize_transition(pb_, v, p_, ws_) : JumpLinearization{};
  const AdjointTransfer transfer = transfer_adjoint(pb_, v, p_, weighted, ws_, implicit ? &transition : nullptr);
  grad_ += transfer.gradient;
  ResidualLinearization before;
  mode_ = v.mode_before;
  if (!completed(mode_)) linearize_with_costs(v.mode_before, v.time, v.x_minus, v.f_minus, before);
  consistent_lambda(v.time, v.x_minus, before, transfer.lambda_minus, transfer.rate_coefficients);
}

void DaeAdjointSweep::linearize_with_costs(int mode, double t, const Eigen::VectorXd& x, const Eigen::VectorXd& xdot,
                                           ResidualLinearization& lin) {
  if (completed(mode)) throw std::logic_error("linearize_with_costs: a mode with a completion");
  linearize(pb_, mode, t, x, xdot, p_, lin, ws_);
  fold_.apply(pb_, t, x, xdot, p_, lin, RateCostFold::Part::Both, ws_);
}

void DaeAdjointSweep::run() {
  auto& segments = run_.segments();
  for (const DaeSegment& seg : segments) {
    if (completed(seg.mode)) continue;  // its costs read the completion's rates
    fold_.scan(pb_, seg.t_start, seg.start.x, seg.start.xdot, p_, ws_);
    fold_.scan(pb_, seg.t_end, seg.end.x, seg.end.xdot, p_, ws_);
  }
  terminal_conditions();
  for (auto it = segments.rbegin(); it != segments.rend(); ++it) {
    integrate_segment(*it);
    for (size_t i = it->events_end; i > it->events_begin; --i) transpose_event(sol_.events[i - 1]);
    detail::report_progress(opt_, "adjoint backward", it->t_start, static_cast<long>(it->events_begin));
  }
  // psi gets lambda(t0)^T F_xdot S(t0): the differential part of dx0/dp (the algebraic initial
  // values are guesses).
  const DaeSegment& first = segments.front();
  // At the completed start, as the forward pass (dae_run.cpp: consistent_sensitivities at the
  // consistent initial point).
  const Eigen::MatrixXd weighted =
      completed_weights(first.mode, first.t_start, first.start.x,
                        rate_weighted(first.mode, first.t_start, first.start.x, first.start.xdot));
  if (np_ > 0) grad_ += initial_state_products(pb_, p_, weighted).transpose();
  sol_.cost_gradient = grad_;
  sol_.initial_state_gradient = weighted.transpose();
  if (!sol_.cost_gradient.allFinite()) {
    throw ModelError(fmt::format("the adjoint gradient of problem '{}' is not finite", pb_.name()));
  }
}

}  // namespace

Solution dae_adjoint(const Problem& problem, const Eigen::VectorXd& p, const Options& options) {
  const SolverMessageScope messages;  // one cap for the forward and the backward pass
  DaeRun run(problem, p, options, RunKind::AdjointRecording);
  Solution sol = run.run();
  DaeAdjointSweep(problem, p, options, run, sol).run();
  return sol;
}

}  // namespace saltus::detail
