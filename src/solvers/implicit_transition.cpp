// Implicit transitions of DAE events: implicit_transition.hpp has the equations. The Newton
// iteration and the solves are small dense ones over Eigen's LU, like dae_transfer.cpp's: the
// system couples two modes and the values before the event, which no IDAS call solves.
#include "implicit_transition.hpp"

#include <saltus/core/error.hpp>
#include <saltus/derivatives/residual.hpp>

#include <Eigen/LU>
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <optional>
#include <vector>

#include "index2_transition.hpp"
#include "lu_condition.hpp"
#include "run_support.hpp"

namespace saltus::detail {

namespace {

constexpr int kMaxNewtonIterations = 50;
/// Below this reciprocal condition number A counts as singular (as M in dae_transfer.cpp).
constexpr double kSingularRcond = 1e-14;

/// The differential states, whose rates after the event are unknowns.
std::vector<int> differential_states(const Problem& problem) {
  std::vector<int> out;
  for (int i = 0; i < problem.n_states(); ++i) {
    if (!problem.is_algebraic(i)) out.push_back(i);
  }
  return out;
}

/// The system of one firing: its unknowns u = (x+, y-dot+), its rows (T, F+).
class TransitionSystem {
 public:
  TransitionSystem(const Problem& problem, int event, int mode_after, double t, const ConsistentPoint& before,
                   In<double> p)
      : pb_(problem),
        event_(event),
        mode_after_(mode_after),
        t_(t),
        before_(before),
        p_(p),
        rates_(differential_states(problem)),
        nx_(problem.n_states()),
        ny_(static_cast<Eigen::Index>(rates_.size())) {}

  Eigen::Index size() const { return nx_ + ny_; }

  /// (T; F+) at the point `after`.
  Eigen::VectorXd residual(const ConsistentPoint& after, TangentWorkspace& ws) const {
    Eigen::VectorXd r(size());
    transition_residual(pb_, event_, t_, after.x, after.xdot, before_.x, before_.xdot, p_, r.head(ny_));
    mode_residual(pb_, mode_after_, t_, after.x, after.xdot, p_, r.tail(nx_), ws);
    return r;
  }

  /// A = [T_x+  T_ydot+; F+_x  F+_ydot] at `after`, factored; throws InputError if singular.
  Eigen::PartialPivLU<Eigen::MatrixXd> factor(const ConsistentPoint& after, TangentWorkspace& ws) const {
    const Eigen::VectorXd ones = Eigen::VectorXd::Ones(nx_), zero_x = Eigen::VectorXd::Zero(nx_),
                          zero_p = Eigen::VectorXd::Zero(p_.size());
    Eigen::MatrixXd fx(nx_, nx_), fxdot(nx_, nx_), a(size(), size());
    residual_columns(pb_, mode_after_, t_, after.x, after.xdot, p_, ones, zero_x, fx, ws);
    residual_columns(pb_, mode_after_, t_, after.x, after.xdot, p_, zero_x, ones, fxdot, ws);
    a.bottomLeftCorner(nx_, nx_) = fx;
    const TransitionPoint at{t_, after.x, after.xdot, before_.x, before_.xdot, p_};
    Eigen::VectorXd unit = zero_x, column(ny_);
    for (Eigen::Index j = 0; j < nx_; ++j) {
      unit[j] = 1.0;
      transition_tangent(pb_, event_, at, TransitionDirection{0.0, unit, zero_x, zero_x, zero_x, zero_p}, column);
      unit[j] = 0.0;
      a.block(0, j, ny_, 1) = column;
    }
    for (Eigen::Index k = 0; k < ny_; ++k) {
      const int i = rates_[static_cast<size_t>(k)];
      unit[i] = 1.0;
      transition_tangent(pb_, event_, at, TransitionDirection{0.0, zero_x, unit, zero_x, zero_x, zero_p}, column);
      unit[i] = 0.0;
      a.block(0, nx_ + k, ny_, 1) = column;
      a.block(ny_, nx_ + k, nx_, 1) = fxdot.col(i);
    }
    if (!a.allFinite()) {
      throw ModelError(fmt::format("the derivatives of the transition of event '{}' or of mode '{}' are not finite "
                                   "at t = {:.17g} (state {})",
                                   event_name(), pb_.mode(mode_after_).name, t_, describe_state(pb_, after.x)));
    }
    Eigen::PartialPivLU<Eigen::MatrixXd> lu(a);
    const double rcond = reciprocal_condition(lu);
    if (!(rcond > kSingularRcond)) {
      throw InputError(fmt::format(
          "{}the implicit transition of event '{}' into mode '{}' cannot be solved at t = {:.17g} (state {}): the "
          "matrix [T_x+ T_ydot+; F_x F_ydot] of the transition and the new mode's residual is singular (reciprocal "
          "condition number {:.3g}), so they do not determine the state after the event (docs/dae.md, \"Implicit "
          "transitions\")",
          pb_.event(event_).where(), event_name(), pb_.mode(mode_after_).name, t_, describe_state(pb_, after.x), rcond));
    }
    return lu;
  }

  /// Subtracts the correction `delta` from the unknowns of `after`; returns the largest unknown.
  template <class Point, class Vector>
  double correct(const Vector& delta, Point& after) const {
    double size = 0.0;
    for (Eigen::Index i = 0; i < nx_; ++i) {
      after.x[i] -= delta[i];
      size = std::max(size, std::abs(after.x[i]));
    }
    for (Eigen::Index k = 0; k < ny_; ++k) {
      auto& rate = after.xdot[rates_[static_cast<size_t>(k)]];
      rate -= delta[nx_ + k];
      size = std::max(size, std::abs(rate));
    }
    return size;
  }

  const std::string& event_name() const { return pb_.event(event_).name; }

 private:
  const Problem& pb_;
  int event_;
  int mode_after_;
  double t_;
  const ConsistentPoint& before_;
  In<double> p_;
  std::vector<int> rates_;
  Eigen::Index nx_, ny_;
};

}  // namespace

ConsistentPoint solve_transition(const Problem& problem, int event, int mode_after, double t,
                                 const ConsistentPoint& before, In<double> p, TangentWorkspace& ws) {
  if (problem.mode(mode_after).index2()) {
    return Index2Transition(problem, event, mode_after, t, before, p, ws).solve();
  }
  const TransitionSystem system(problem, event, mode_after, t, before, p);
  ConsistentPoint after = before;  // the first guess: the state and its rates carry on
  double last_correction = 0.0, previous_correction = 0.0;
  for (int iteration = 0; iteration < kMaxNewtonIterations; ++iteration) {
    const Eigen::VectorXd residual = system.residual(after, ws);
    if (!residual.allFinite()) {
      throw ModelError(fmt::format("the transition of event '{}' or the residual of mode '{}' is not finite at "
                                   "t = {:.17g} (state {})",
                                   system.event_name(), problem.mode(mode_after).name, t,
                                   describe_state(problem, after.x)));
    }
    Eigen::VectorXd delta;
    try {
      delta = system.factor(after, ws).solve(residual);
    } catch (const InputError&) {
      if (iteration == 0) throw;  // singular at the event: the transition does not determine x+
      break;                      // Newton wandered where it is: it diverged
    }
    const double size = system.correct(delta, after);
    previous_correction = last_correction;
    last_correction = delta.lpNorm<Eigen::Infinity>();
    if (!std::isfinite(last_correction)) break;
    // Converged as in consistent_point: a correction at round-off of the unknowns, or one that
    // stopped shrinking while already tiny.
    const bool tiny = last_correction <= 1e-13 * size;
    const bool stalled = iteration >= 1 && last_correction >= 0.5 * previous_correction &&
                         last_correction <= 1e-10 * std::max(size, 1.0);
    if (last_correction == 0.0 || tiny || stalled) {
      after.xdot = algebraic_rates(problem, mode_after, t, after.x, after.xdot, p,
                                   fmt::format("after event '{}'", system.event_name()), ws);
      return after;
    }
  }
  throw InputError(fmt::format(
      "{}could not solve the implicit transition of event '{}' into mode '{}' at t = {:.17g}: Newton's iteration on "
      "the state after the event and its rates did not converge in {} iterations (last correction {:.3g}, state "
      "{}); the transition has no solution near the state before the event (docs/dae.md, \"Implicit transitions\")",
      problem.event(event).where(), system.event_name(), problem.mode(mode_after).name, t, kMaxNewtonIterations,
      last_correction,
      describe_state(problem, after.x)));
}

ComplexConsistentPoint solve_transition_complex(const Problem& problem, int event, int mode_after, Complex t,
                                                const ComplexConsistentPoint& before, const VectorX<Complex>& p,
                                                TangentWorkspace& ws) {
  const Eigen::VectorXd p_real = p.real();
  const ConsistentPoint real_before{before.x.real(), before.xdot.real()};
  if (problem.mode(mode_after).index2()) {
    return Index2Transition(problem, event, mode_after, t.real(), real_before, p_real, ws).solve_complex(t, before, p);
  }
  const ConsistentPoint real = solve_transition(problem, event, mode_after, t.real(), real_before, p_real, ws);
  const TransitionSystem system(problem, event, mode_after, t.real(), real_before, p_real);
  const auto lu = system.factor(real, ws);
  ComplexConsistentPoint point{real.x.cast<Complex>(), real.xdot.cast<Complex>()};
  const Eigen::Index nx = problem.n_states();
  const Eigen::Index ny = system.size() - nx;
  VectorX<Complex> t_residual(ny), f_residual(nx), residual(system.size());
  // The imaginary parts by Newton with A at the real parts: the error contracts by about
  // |Im| |A'| ~ h per step, as in consistent_point_complex.
  constexpr int kComplexIterations = 10;
  double previous = 0.0;
  for (int iteration = 0; iteration < kComplexIterations; ++iteration) {
    transition_residual(problem, event, t, point.x, point.xdot, before.x, before.xdot, p, t_residual);
    mode_residual(problem, mode_after, t, point.x, point.xdot, p, f_residual);
    residual << t_residual, f_residual;
    if (!residual.allFinite()) {
      throw ModelError(fmt::format("the transition of event '{}' is not finite at t = {:.17g} (complex-step run)",
                                   system.event_name(), t.real()));
    }
    const Eigen::VectorXd delta_real = lu.solve(residual.real());
    const Eigen::VectorXd delta_imag = lu.solve(residual.imag());
    VectorX<Complex> delta(system.size());
    for (Eigen::Index i = 0; i < delta.size(); ++i) delta[i] = Complex(delta_real[i], delta_imag[i]);
    system.correct(delta, point);
    // Converged: the correction at round-off of the unknowns' imaginary parts (x+ and the rates
    // after the event), or no longer shrinking (round-off, also where they are all zero: a
    // parameter that moves neither).
    double size = 0.0;
    for (Eigen::Index i = 0; i < nx; ++i) {
      size = std::max({size, std::abs(point.x[i].imag()), std::abs(point.xdot[i].imag())});
    }
    const double correction = delta_imag.lpNorm<Eigen::Infinity>();
    if (!(correction > 1e-13 * size) || (iteration >= 1 && correction >= 0.5 * previous)) return point;
    previous = correction;
  }
  throw ModelError(fmt::format("the complex-step run could not solve the transition of event '{}' at t = {:.17g}: "
                               "the imaginary parts did not converge",
                               system.event_name(), t.real()));
}

JumpLinearization linearize_transition(const Problem& problem, const EventValues& v, In<double> p,
                                       TangentWorkspace& ws) {
  const Eigen::Index nx = problem.n_states(), np = p.size();
  const ConsistentPoint before{v.x_minus, v.f_minus}, after{v.x_plus, v.f_plus};
  const TransitionSystem system(problem, v.event, v.mode_after, v.time, before, p);
  const bool completed_after = problem.mode(v.mode_after).index2();
  std::optional<Index2Transition> onto_constraints;
  Eigen::PartialPivLU<Eigen::MatrixXd> lu_a;
  if (completed_after) {
    onto_constraints.emplace(problem, v.event, v.mode_after, v.time, before, p, ws);
  } else {
    lu_a = system.factor(after, ws);
  }
  const bool completed_before = problem.mode(v.mode_before).index2();
  // M- is nonsingular here: the point before was made consistent by Newton with it
  // (consistent_point, in the forward run and in recorded_dae_event), which checks it.
  Eigen::PartialPivLU<Eigen::MatrixXd> lu_m;
  if (!completed_before) {
    const Index1Weights w = index1_weights(problem);
    Eigen::MatrixXd m(nx, nx);
    residual_columns(problem, v.mode_before, v.time, v.x_minus, v.f_minus, p, w.x_weight, w.xdot_weight, m, ws);
    lu_m.compute(m);
  }
  const Eigen::VectorXd zero_x = Eigen::VectorXd::Zero(nx), zero_p = Eigen::VectorXd::Zero(np);
  const TransitionPoint at{v.time, v.x_plus, v.f_plus, v.x_minus, v.f_minus, p};
  Eigen::VectorXd dy(nx), dx_minus(nx), dxdot_minus(nx), b(system.size()), pre(nx);
  // dx+ along (dt, dx-, dp): the old mode's tangent, then one solve with A.
  const auto map = [&](double dt, const Eigen::VectorXd& dx, const Eigen::VectorXd& dp) -> Eigen::VectorXd {
    dy = dx;
    for (int i = 0; i < nx; ++i) {
      if (problem.is_algebraic(i)) dy[i] = 0.0;
    }
    if (completed_before) {
      completion_tangent(problem, v.mode_before, v.time, v.x_minus, p, dt, dy, dp, dx_minus, dxdot_minus, ws);
    } else {
      residual_tangent(problem, v.mode_before, v.time, v.x_minus, v.f_minus, p, dt, dy, zero_x, dp, pre, ws);
      const Eigen::VectorXd u = lu_m.solve(-pre);  // (dy-dot-, dz-)
      dx_minus = dy;
      dxdot_minus.setZero();
      for (int i = 0; i < nx; ++i) (problem.is_algebraic(i) ? dx_minus : dxdot_minus)[i] = u[i];
    }
    if (completed_after) return onto_constraints->tangent(after, dt, dx_minus, dxdot_minus, dp);
    transition_tangent(problem, v.event, at, TransitionDirection{dt, zero_x, zero_x, dx_minus, dxdot_minus, dp},
                       b.head(system.size() - nx));
    residual_tangent(problem, v.mode_after, v.time, v.x_plus, v.f_plus, p, dt, zero_x, zero_x, dp, b.tail(nx), ws);
    return -lu_a.solve(b).head(nx);
  };
  JumpLinearization out{Eigen::MatrixXd::Zero(nx, nx), map(1.0, zero_x, zero_p), Eigen::MatrixXd(nx, np)};
  Eigen::VectorXd unit = zero_x;
  for (int i = 0; i < nx; ++i) {
    if (problem.is_algebraic(i)) continue;  // Phi reads the differential states of x- only
    unit[i] = 1.0;
    out.x.col(i) = map(0.0, unit, zero_p);
    unit[i] = 0.0;
  }
  Eigen::VectorXd unit_p = zero_p;
  for (Eigen::Index j = 0; j < np; ++j) {
    unit_p[j] = 1.0;
    out.p.col(j) = map(0.0, zero_x, unit_p);
    unit_p[j] = 0.0;
  }
  return out;
}

}  // namespace saltus::detail
