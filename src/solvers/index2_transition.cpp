// Implicit transitions into an index-2 mode: index2_transition.hpp has the equations. Dense
// least squares over Eigen's column-pivoting QR: the system has n_y unknowns and couples the
// transition with the model's completion, which no IDAS call solves.
#include "index2_transition.hpp"

#include <saltus/core/error.hpp>
#include <saltus/derivatives/residual.hpp>

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <stdexcept>

#include "run_support.hpp"

namespace saltus::detail {

namespace {

constexpr int kMaxIterations = 50;
/// QR's rank threshold: pivots below this fraction of the largest count as zero.
constexpr double kRankThreshold = 1e-12;

}  // namespace

Index2Transition::Index2Transition(const Problem& problem, int event, int mode_after, double t,
                                   const ConsistentPoint& before, In<double> p, TangentWorkspace& ws)
    : pb_(problem), event_(event), mode_after_(mode_after), t_(t), before_(before), p_(p), ws_(ws),
      nx_(problem.n_states()) {
  if (!problem.mode(mode_after).index2()) {
    throw std::logic_error("Index2Transition: the mode after the event has no completion");
  }
  for (int i = 0; i < problem.n_states(); ++i) {
    if (!problem.is_algebraic(i)) differential_.push_back(i);
  }
  ny_ = static_cast<Eigen::Index>(differential_.size());
  Eigen::VectorXd xdot(nx_);
  start_.resize(nx_);
  problem.mode(mode_after).completion.real(t, before.x, p, start_, xdot);
  if (!start_.allFinite()) {
    throw ModelError(fmt::format("the completion of mode '{}' is not finite at the state before event '{}' "
                                 "(t = {:.17g}, state {})",
                                 problem.mode(mode_after).name, event_name(), t, describe_state(problem, before.x)));
  }
  // n_T = trace of the projection dC_y/dy at the completed state.
  const Eigen::VectorXd zero_p = Eigen::VectorXd::Zero(p.size());
  Eigen::VectorXd unit = Eigen::VectorXd::Zero(nx_), dx(nx_), dxdot(nx_);
  double trace = 0.0;
  for (const int i : differential_) {
    unit[i] = 1.0;
    completion_tangent(problem, mode_after, t, start_, p, 0.0, unit, zero_p, dx, dxdot, ws);
    unit[i] = 0.0;
    trace += dx[i];
  }
  n_t_ = std::lround(trace);
  if (!(std::abs(trace - static_cast<double>(n_t_)) < 0.1) || n_t_ < 0 || n_t_ > ny_) {
    throw InputError(fmt::format(
        "{}event '{}' has an implicit transition into mode '{}', whose completion is not a projection of the "
        "differential states at t = {:.17g} (the trace of its derivative is {:.6g}, not a whole number of free "
        "directions): Saltus counts the transition's equations, n_y - n_c, from it (docs/dae.md, \"Implicit "
        "transitions\")",
        problem.event(event).where(), event_name(), problem.mode(mode_after).name, t, trace));
  }
}

const std::string& Index2Transition::event_name() const { return pb_.event(event_).name; }

Eigen::VectorXd Index2Transition::with_differential(const Eigen::VectorXd& y) const {
  Eigen::VectorXd x = start_;
  for (Eigen::Index k = 0; k < ny_; ++k) x[differential_[static_cast<size_t>(k)]] = y[k];
  return x;
}

ConsistentPoint Index2Transition::complete(const Eigen::VectorXd& y) const {
  ConsistentPoint point{Eigen::VectorXd(nx_), Eigen::VectorXd(nx_)};
  pb_.mode(mode_after_).completion.real(t_, with_differential(y), p_, point.x, point.xdot);
  return point;
}

Eigen::VectorXd Index2Transition::transition_rows(const ConsistentPoint& after) const {
  // The model writes n_T rows; the others must stay as given (NaN), or T wrote too many.
  Eigen::VectorXd rows = Eigen::VectorXd::Constant(ny_, std::numeric_limits<double>::quiet_NaN());
  transition_residual(pb_, event_, t_, after.x, after.xdot, before_.x, before_.xdot, p_, rows);
  if (!rows.tail(ny_ - n_t_).array().isNaN().all()) {
    throw ModelError(fmt::format(
        "the transition of event '{}' writes more than {} equations at t = {:.17g} (state {}): into mode '{}' (index "
        "2, {} constraints) it gives n_y - n_c = {} of them, the constraints give the rest (docs/dae.md, \"Implicit "
        "transitions\")",
        event_name(), n_t_, t_, describe_state(pb_, after.x), pb_.mode(mode_after_).name, ny_ - n_t_, n_t_));
  }
  return rows.head(n_t_);
}

Eigen::VectorXd Index2Transition::residual(const Eigen::VectorXd& y) const {
  const ConsistentPoint after = complete(y);
  Eigen::VectorXd r(n_t_ + ny_);
  r.head(n_t_) = transition_rows(after);
  for (Eigen::Index k = 0; k < ny_; ++k) r[n_t_ + k] = y[k] - after.x[differential_[static_cast<size_t>(k)]];
  if (!r.allFinite()) {
    throw ModelError(fmt::format("the transition of event '{}' or the completion of mode '{}' is not finite at "
                                 "t = {:.17g} (state {})",
                                 event_name(), pb_.mode(mode_after_).name, t_, describe_state(pb_, after.x)));
  }
  return r;
}

Eigen::ColPivHouseholderQR<Eigen::MatrixXd> Index2Transition::factor(const Eigen::VectorXd& y) const {
  const ConsistentPoint after = complete(y);
  const Eigen::VectorXd x_guess = with_differential(y), zero_x = Eigen::VectorXd::Zero(nx_),
                        zero_p = Eigen::VectorXd::Zero(p_.size());
  const TransitionPoint at{t_, after.x, after.xdot, before_.x, before_.xdot, p_};
  Eigen::MatrixXd j(n_t_ + ny_, ny_);
  Eigen::VectorXd unit = zero_x, dx(nx_), dxdot(nx_), column(ny_);
  for (Eigen::Index k = 0; k < ny_; ++k) {
    const int i = differential_[static_cast<size_t>(k)];
    unit[i] = 1.0;
    completion_tangent(pb_, mode_after_, t_, x_guess, p_, 0.0, unit, zero_p, dx, dxdot, ws_);
    unit[i] = 0.0;
    transition_tangent(pb_, event_, at, TransitionDirection{0.0, dx, dxdot, zero_x, zero_x, zero_p}, column);
    j.block(0, k, n_t_, 1) = column.head(n_t_);
    for (Eigen::Index r = 0; r < ny_; ++r) j(n_t_ + r, k) = (r == k ? 1.0 : 0.0) - dx[differential_[static_cast<size_t>(r)]];
  }
  if (!j.allFinite()) {
    throw ModelError(fmt::format("the derivatives of the transition of event '{}' or of the completion of mode '{}' "
                                 "are not finite at t = {:.17g} (state {})",
                                 event_name(), pb_.mode(mode_after_).name, t_, describe_state(pb_, after.x)));
  }
  Eigen::ColPivHouseholderQR<Eigen::MatrixXd> qr;
  qr.setThreshold(kRankThreshold);
  qr.compute(j);
  if (qr.rank() < ny_) {
    throw InputError(fmt::format(
        "{}the implicit transition of event '{}' into mode '{}' cannot be solved at t = {:.17g} (state {}): its {} "
        "equations and the mode's constraints do not determine the state after the event (the matrix [T_y+; k_y] "
        "has rank {} of {}; docs/dae.md, \"Implicit transitions\")",
        pb_.event(event_).where(), event_name(), pb_.mode(mode_after_).name, t_, describe_state(pb_, after.x), n_t_,
        qr.rank(), ny_));
  }
  return qr;
}

ConsistentPoint Index2Transition::solve() {
  Eigen::VectorXd y(ny_);
  for (Eigen::Index k = 0; k < ny_; ++k) y[k] = start_[differential_[static_cast<size_t>(k)]];
  double last_correction = 0.0, previous_correction = 0.0;
  for (int iteration = 0; iteration < kMaxIterations; ++iteration) {
    const Eigen::VectorXd r = residual(y);
    Eigen::VectorXd delta;
    try {
      delta = factor(y).solve(r);
    } catch (const InputError&) {
      if (iteration == 0) throw;  // rank-deficient at the event: the transition does not determine y+
      break;                      // the iteration wandered where it is: it diverged
    }
    y -= delta;
    previous_correction = last_correction;
    last_correction = delta.lpNorm<Eigen::Infinity>();
    if (!std::isfinite(last_correction)) break;
    const double size = y.lpNorm<Eigen::Infinity>();
    // Converged as in consistent_point: a correction at round-off of the unknowns, or one that
    // stopped shrinking while already tiny.
    const bool tiny = last_correction <= 1e-13 * size;
    const bool stalled = iteration >= 1 && last_correction >= 0.5 * previous_correction &&
                         last_correction <= 1e-10 * std::max(size, 1.0);
    if (last_correction == 0.0 || tiny || stalled) return complete(y);
  }
  throw InputError(fmt::format(
      "{}could not solve the implicit transition of event '{}' into mode '{}' at t = {:.17g}: Gauss-Newton on the "
      "differential states after the event did not converge in {} iterations (last correction {:.3g}, state {}); "
      "the transition has no solution on the constraints near the state before the event (docs/dae.md, \"Implicit "
      "transitions\")",
      pb_.event(event_).where(), event_name(), pb_.mode(mode_after_).name, t_, kMaxIterations, last_correction,
      describe_state(pb_, with_differential(y))));
}

ComplexConsistentPoint Index2Transition::solve_complex(Complex t, const ComplexConsistentPoint& before,
                                                       const VectorX<Complex>& p) {
  const ConsistentPoint real = solve();
  Eigen::VectorXd y_real(ny_);
  for (Eigen::Index k = 0; k < ny_; ++k) y_real[k] = real.x[differential_[static_cast<size_t>(k)]];
  const auto qr = factor(y_real);
  VectorX<Complex> y = y_real.cast<Complex>(), rows, r(n_t_ + ny_);
  const auto& completion = pb_.mode(mode_after_).completion;
  ComplexConsistentPoint point{VectorX<Complex>(nx_), VectorX<Complex>(nx_)};
  // The imaginary parts by Newton with the real J: the error contracts by about |Im| |J'| ~ h
  // per step, as in consistent_point_complex.
  constexpr int kComplexIterations = 10;
  double previous = 0.0;
  // The completion at the differential states y (the other entries of the guess as in start_).
  const auto complete_at = [&](const VectorX<Complex>& y_now) {
    VectorX<Complex> guess = start_.cast<Complex>();
    for (Eigen::Index k = 0; k < ny_; ++k) guess[differential_[static_cast<size_t>(k)]] = y_now[k];
    completion.complex(t, guess, p, point.x, point.xdot);
  };
  for (int iteration = 0; iteration < kComplexIterations; ++iteration) {
    complete_at(y);
    transition_residual(pb_, event_, t, point.x, point.xdot, before.x, before.xdot, p, rows);
    r.head(n_t_) = rows.head(n_t_);
    for (Eigen::Index k = 0; k < ny_; ++k) r[n_t_ + k] = y[k] - point.x[differential_[static_cast<size_t>(k)]];
    if (!r.allFinite()) {
      throw ModelError(fmt::format("the transition of event '{}' is not finite at t = {:.17g} (complex-step run)",
                                   event_name(), t.real()));
    }
    const Eigen::VectorXd delta_real = qr.solve(Eigen::VectorXd(r.real()));
    const Eigen::VectorXd delta_imag = qr.solve(Eigen::VectorXd(r.imag()));
    for (Eigen::Index k = 0; k < ny_; ++k) y[k] -= Complex(delta_real[k], delta_imag[k]);
    double size = 0.0;
    for (Eigen::Index k = 0; k < ny_; ++k) size = std::max(size, std::abs(y[k].imag()));
    const double correction = delta_imag.lpNorm<Eigen::Infinity>();
    if (!(correction > 1e-13 * size) || (iteration >= 1 && correction >= 0.5 * previous)) {
      complete_at(y);
      return point;
    }
    previous = correction;
  }
  throw ModelError(fmt::format("the complex-step run could not solve the transition of event '{}' at t = {:.17g}: "
                               "the imaginary parts did not converge",
                               event_name(), t.real()));
}

Eigen::VectorXd Index2Transition::tangent(const ConsistentPoint& after, double dt, In<double> dx_minus,
                                          In<double> dxdot_minus, In<double> dp) {
  Eigen::VectorXd y(ny_);
  for (Eigen::Index k = 0; k < ny_; ++k) y[k] = after.x[differential_[static_cast<size_t>(k)]];
  if (!qr_) qr_ = factor(y);
  const Eigen::VectorXd zero_x = Eigen::VectorXd::Zero(nx_);
  Eigen::VectorXd cx(nx_), cxdot(nx_), column(ny_), b(n_t_ + ny_);
  // R's tangent at dy = 0: C moves with t and p.
  completion_tangent(pb_, mode_after_, t_, after.x, p_, dt, zero_x, dp, cx, cxdot, ws_);
  const TransitionPoint at{t_, after.x, after.xdot, before_.x, before_.xdot, p_};
  transition_tangent(pb_, event_, at, TransitionDirection{dt, cx, cxdot, dx_minus, dxdot_minus, dp}, column);
  b.head(n_t_) = column.head(n_t_);
  for (Eigen::Index k = 0; k < ny_; ++k) b[n_t_ + k] = -cx[differential_[static_cast<size_t>(k)]];
  const Eigen::VectorXd dy = -qr_->solve(b);
  Eigen::VectorXd dy_full = zero_x;
  for (Eigen::Index k = 0; k < ny_; ++k) dy_full[differential_[static_cast<size_t>(k)]] = dy[k];
  completion_tangent(pb_, mode_after_, t_, after.x, p_, dt, dy_full, dp, cx, cxdot, ws_);
  return cx;
}

}  // namespace saltus::detail
