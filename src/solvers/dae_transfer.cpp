// Consistent values and the event transfer of index-1 hybrid DAEs (theory/hybrid-dae.md
// sections 1-2). The Newton iteration and the solves are small dense ones written here: they
// are a few lines over Eigen's LU, and they must be pure functions of the values at one
// instant (an event transfer), which IDAS's own IDACalcIC (bound to an integrator and its
// step) is not.
#include <saltus/core/error.hpp>
#include <saltus/derivatives/residual.hpp>
#include <saltus/solvers/dae_transfer.hpp>

#include <Eigen/LU>
#include <Eigen/QR>
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <vector>

#include "guard_rate.hpp"
#include "implicit_transition.hpp"
#include "lu_condition.hpp"
#include "run_support.hpp"

namespace saltus {

namespace {

constexpr int kMaxNewtonIterations = 50;
/// Below this reciprocal condition number M = [F_ydot | F_z] counts as singular.
constexpr double kSingularRcond = 1e-14;

/// M = [F_ydot | F_z] at the point, factored; throws InputError if it is singular.
Eigen::PartialPivLU<Eigen::MatrixXd> factor_index1(const Problem& problem, int mode, double t, In<double> x,
                                                   In<double> xdot, In<double> p, const std::string& when,
                                                   TangentWorkspace& ws) {
  const Index1Weights w = index1_weights(problem);
  Eigen::MatrixXd m(x.size(), x.size());
  residual_columns(problem, mode, t, x, xdot, p, w.x_weight, w.xdot_weight, m, ws);
  if (!m.allFinite()) {
    throw ModelError(fmt::format("the derivatives of the residual of mode '{}' are not finite {} (t = {:.17g}, "
                                 "state {})",
                                 problem.mode(mode).name, when, t,
                                 detail::describe_state(problem, Eigen::VectorXd(x))));
  }
  Eigen::PartialPivLU<Eigen::MatrixXd> lu(m);
  const double rcond = detail::reciprocal_condition(lu);
  if (!(rcond > kSingularRcond)) {
    throw InputError(fmt::format(
        "{}mode '{}' of problem '{}' is not an index-1 DAE {} (t = {:.17g}, state {}): the matrix [F_ydot | F_z] "
        "of the residual's derivatives with respect to the differential rates and the algebraic states is "
        "singular (reciprocal condition number {:.3g}), so the residual does not determine them (docs/dae.md)",
        problem.mode(mode).where(), problem.mode(mode).name, problem.name(), when, t,
        detail::describe_state(problem, Eigen::VectorXd(x)), rcond));
  }
  return lu;
}

/// Replaces the unknowns (differential rates, algebraic states) of (x, xdot) by u - delta.
void correct_unknowns(const Problem& problem, const Eigen::VectorXd& delta, ConsistentPoint& point) {
  for (Eigen::Index i = 0; i < delta.size(); ++i) {
    (problem.is_algebraic(static_cast<int>(i)) ? point.x : point.xdot)[i] -= delta[i];
  }
}

double unknowns_norm(const Problem& problem, const ConsistentPoint& point) {
  double norm = 0.0;
  for (Eigen::Index i = 0; i < point.x.size(); ++i) {
    const double u = problem.is_algebraic(static_cast<int>(i)) ? point.x[i] : point.xdot[i];
    norm = std::max(norm, std::abs(u));
  }
  return norm;
}

/// The model's completion of an index-2 mode (Problem::set_completion).
ConsistentPoint completed_point(const Problem& problem, int mode, double t, In<double> x_guess, In<double> p,
                                const std::string& when) {
  ConsistentPoint point{Eigen::VectorXd(x_guess.size()), Eigen::VectorXd(x_guess.size())};
  problem.mode(mode).completion.real(t, x_guess, p, point.x, point.xdot);
  if (!point.x.allFinite() || !point.xdot.allFinite()) {
    throw ModelError(fmt::format("the completion of mode '{}' is not finite {} (t = {:.17g}, from the state {})",
                                 problem.mode(mode).name, when, t,
                                 detail::describe_state(problem, Eigen::VectorXd(x_guess))));
  }
  return point;
}

}  // namespace

ConsistentPoint consistent_point(const Problem& problem, int mode, double t, In<double> x_guess,
                                 In<double> xdot_guess, In<double> p, const std::string& when,
                                 TangentWorkspace& ws) {
  if (problem.mode(mode).index2()) return completed_point(problem, mode, t, x_guess, p, when);
  ConsistentPoint point{x_guess, xdot_guess};
  Eigen::VectorXd residual(x_guess.size());
  double last_correction = 0.0, previous_correction = 0.0;
  for (int iteration = 0; iteration < kMaxNewtonIterations; ++iteration) {
    mode_residual(problem, mode, t, point.x, point.xdot, p, residual, ws);
    if (!residual.allFinite()) {
      throw ModelError(fmt::format("the residual of mode '{}' is not finite {} (t = {:.17g}, state {})",
                                   problem.mode(mode).name, when, t, detail::describe_state(problem, point.x)));
    }
    Eigen::VectorXd delta;
    try {
      delta = factor_index1(problem, mode, t, point.x, point.xdot, p, when, ws).solve(residual);
    } catch (const InputError&) {
      if (iteration == 0) throw;  // singular at the given values: the mode is not index 1 there
      break;                      // Newton wandered where it is: it diverged
    }
    correct_unknowns(problem, delta, point);
    previous_correction = last_correction;
    last_correction = delta.lpNorm<Eigen::Infinity>();
    if (!std::isfinite(last_correction)) break;
    const double size = unknowns_norm(problem, point);
    // Converged to round-off: the correction is at the level of the unknowns' last digits (a
    // linear residual converges in one step, whose follow-up correction is of that size), or
    // it stopped shrinking while already tiny (round-off in the residual itself).
    const bool tiny = last_correction <= 1e-13 * size;
    const bool stalled = iteration >= 1 && last_correction >= 0.5 * previous_correction &&
                         last_correction <= 1e-10 * std::max(size, 1.0);
    if (last_correction == 0.0 || tiny || stalled) {
      point.xdot = algebraic_rates(problem, mode, t, point.x, point.xdot, p, when, ws);
      return point;
    }
  }
  throw InputError(fmt::format(
      "{}could not make the state consistent with the residual of mode '{}' {} (t = {:.17g}): Newton's iteration on "
      "the differential rates and the algebraic states did not converge in {} iterations (last correction {:.3g}, "
      "state {}); give initial values of the algebraic states closer to a solution",
      problem.mode(mode).where(), problem.mode(mode).name, when, t, kMaxNewtonIterations, last_correction,
      detail::describe_state(problem, point.x)));
}

ComplexConsistentPoint consistent_point_complex(const Problem& problem, int mode, Complex t,
                                                const VectorX<Complex>& x_guess, const VectorX<Complex>& xdot_guess,
                                                const VectorX<Complex>& p, const std::string& when,
                                                TangentWorkspace& ws) {
  // The real parts as the real run finds them, then the imaginary parts by Newton with the real
  // M: its error contracts by about |Im| |M'| ~ h per step, so two or three steps reach round-off.
  if (problem.mode(mode).index2()) {
    ComplexConsistentPoint point{VectorX<Complex>(x_guess.size()), VectorX<Complex>(x_guess.size())};
    problem.mode(mode).completion.complex(t, x_guess, p, point.x, point.xdot);
    if (!point.x.allFinite() || !point.xdot.allFinite()) {
      throw ModelError(fmt::format("the completion of mode '{}' is not finite {} (t = {:.17g}, complex-step run)",
                                   problem.mode(mode).name, when, t.real()));
    }
    return point;
  }
  const Eigen::VectorXd p_real = p.real();
  const ConsistentPoint real =
      consistent_point(problem, mode, t.real(), x_guess.real(), xdot_guess.real(), p_real, when, ws);
  ComplexConsistentPoint point{real.x.cast<Complex>(), real.xdot.cast<Complex>()};
  for (Eigen::Index i = 0; i < point.x.size(); ++i) {
    const bool algebraic = problem.is_algebraic(static_cast<int>(i));
    // The differential states keep the imaginary parts given; the unknowns start from zero.
    if (!algebraic) point.x[i] += Complex(0.0, x_guess[i].imag());
  }
  const auto lu = factor_index1(problem, mode, t.real(), real.x, real.xdot, p_real, when, ws);
  VectorX<Complex> residual;
  constexpr int kComplexIterations = 10;
  for (int iteration = 0; iteration < kComplexIterations; ++iteration) {
    mode_residual(problem, mode, t, point.x, point.xdot, p, residual);
    if (!residual.allFinite()) {
      throw ModelError(fmt::format("the residual of mode '{}' is not finite {} (t = {:.17g}, complex-step run)",
                                   problem.mode(mode).name, when, t.real()));
    }
    const Eigen::VectorXd delta_real = lu.solve(residual.real());
    const Eigen::VectorXd delta_imag = lu.solve(residual.imag());
    double size = 0.0;
    for (Eigen::Index i = 0; i < delta_real.size(); ++i) {
      Complex& u = problem.is_algebraic(static_cast<int>(i)) ? point.x[i] : point.xdot[i];
      u -= Complex(delta_real[i], delta_imag[i]);
      size = std::max(size, std::abs(u.imag()));
    }
    const double correction = delta_imag.lpNorm<Eigen::Infinity>();
    if (!(correction > 1e-13 * size)) return point;
  }
  throw ModelError(fmt::format("the complex-step run could not make the state consistent with mode '{}' {} "
                               "(t = {:.17g}): the imaginary parts did not converge",
                               problem.mode(mode).name, when, t.real()));
}

namespace {

/// The solution (y-ddot, z-dot) of M (y-ddot, z-dot) = -(F_t + F_x y-dot), d/dt F = 0 with
/// y-dot the rates of the differential states only; laid out as M's columns (differential
/// entries y-ddot, algebraic entries z-dot).
Eigen::VectorXd second_rates(const Problem& problem, int mode, double t, In<double> x, In<double> xdot,
                             In<double> p, const std::string& when, TangentWorkspace& ws) {
  Eigen::VectorXd differential_rates = xdot;
  for (int i = 0; i < problem.n_states(); ++i) {
    if (problem.is_algebraic(i)) differential_rates[i] = 0.0;
  }
  Eigen::VectorXd total(x.size());
  residual_tangent(problem, mode, t, x, xdot, p, 1.0, differential_rates, Eigen::VectorXd::Zero(x.size()),
                   Eigen::VectorXd::Zero(p.size()), total, ws);
  return factor_index1(problem, mode, t, x, xdot, p, when, ws).solve(-total);
}

}  // namespace

Eigen::VectorXd algebraic_rates(const Problem& problem, int mode, double t, In<double> x, In<double> xdot,
                                In<double> p, const std::string& when, TangentWorkspace& ws) {
  Eigen::VectorXd rates = xdot;
  if (problem.n_algebraic() == 0) return rates;
  const Eigen::VectorXd solution = second_rates(problem, mode, t, x, xdot, p, when, ws);
  for (int i = 0; i < problem.n_states(); ++i) {
    if (problem.is_algebraic(i)) rates[i] = solution[i];
  }
  return rates;
}

Eigen::VectorXd state_accelerations(const Problem& problem, int mode, double t, In<double> x, In<double> xdot,
                                    In<double> p, TangentWorkspace& ws) {
  if (problem.mode(mode).index2()) {
    throw InputError(fmt::format("mode '{}' is index 2 (a completion): the rates of its rates, which a guard that "
                                 "reads rates needs, are not available there (docs/dae.md, \"Events\")",
                                 problem.mode(mode).name));
  }
  Eigen::VectorXd accelerations = second_rates(problem, mode, t, x, xdot, p, "for a guard that reads rates", ws);
  for (int i = 0; i < problem.n_states(); ++i) {
    if (problem.is_algebraic(i)) accelerations[i] = 0.0;
  }
  return accelerations;
}

void consistent_sensitivities(const Problem& problem, int mode, double t, const ConsistentPoint& point,
                              In<double> p, Eigen::MatrixXd& s, Eigen::MatrixXd& s_dot, TangentWorkspace& ws) {
  const Eigen::Index nx = point.x.size(), np = p.size();
  s_dot.setZero(nx, np);
  if (np == 0) return;
  if (problem.mode(mode).index2()) {
    // The completion's tangents along (S_j, e_j): its projection and hidden-constraint solve,
    // differentiated (one evaluation per block of directions where the mode has block tangents).
    const Eigen::MatrixXd directions = s;
    const Eigen::MatrixXd units = Eigen::MatrixXd::Identity(np, np);
    completion_tangents(problem, mode, t, point.x, p, directions, units, s, s_dot, ws);
    return;
  }
  const auto lu = factor_index1(problem, mode, t, point.x, point.xdot, p, "for the sensitivities", ws);
  const Eigen::VectorXd zero_x = Eigen::VectorXd::Zero(nx);
  Eigen::VectorXd unit = Eigen::VectorXd::Zero(np), s_differential(nx), total(nx);
  for (Eigen::Index j = 0; j < np; ++j) {
    s_differential = s.col(j);
    for (Eigen::Index i = 0; i < nx; ++i) {
      if (problem.is_algebraic(static_cast<int>(i))) s_differential[i] = 0.0;
    }
    unit[j] = 1.0;
    residual_tangent(problem, mode, t, point.x, point.xdot, p, 0.0, s_differential, zero_x, unit, total, ws);
    unit[j] = 0.0;
    const Eigen::VectorXd u = lu.solve(-total);
    for (Eigen::Index i = 0; i < nx; ++i) {
      (problem.is_algebraic(static_cast<int>(i)) ? s(i, j) : s_dot(i, j)) = u[i];
    }
  }
}

namespace {

/// The consistent point after event `event` from `before`: its implicit transition, or its jump
/// (the identity without one) made consistent in the new mode.
ConsistentPoint state_after_event(const Problem& problem, int event, int mode_after, double t,
                                  const ConsistentPoint& before, In<double> p, TangentWorkspace& ws) {
  const Event& ev = problem.event(event);
  if (ev.transition) return detail::solve_transition(problem, event, mode_after, t, before, p, ws);
  Eigen::VectorXd guess = before.x;
  if (ev.jump) ev.jump.real(t, before.x, p, guess);
  if (!guess.allFinite()) {
    throw ModelError(fmt::format("the jump of event '{}' at t = {:.17g} returned a non-finite state {} from {}",
                                 ev.name, t, detail::describe_state(problem, guess),
                                 detail::describe_state(problem, before.x)));
  }
  return consistent_point(problem, mode_after, t, guess, before.xdot, p, fmt::format("after event '{}'", ev.name),
                          ws);
}

}  // namespace

EventValues fire_dae_event(const Problem& problem, int event, int mode_before, double t,
                           const ConsistentPoint& before, In<double> p, TangentWorkspace& ws) {
  EventValues v;
  v.event = event;
  v.mode_before = mode_before;
  v.mode_after = problem.event(event).mode_after(mode_before);
  v.time = t;
  v.x_minus = before.x;
  v.f_minus = before.xdot;
  const ConsistentPoint after = state_after_event(problem, event, v.mode_after, t, before, p, ws);
  v.x_plus = after.x;
  v.f_plus = after.xdot;
  if (problem.event(event).reads_rates()) {
    v.xddot_minus = state_accelerations(problem, mode_before, t, v.x_minus, v.f_minus, p, ws);
  }
  // x-ddot is read only by a guard that reads rates (empty otherwise).
  const detail::GuardRate rate = detail::guard_rate(problem, event, t, v.x_minus, p, v.f_minus, v.xddot_minus, ws);
  v.guard_rate = rate.rate;
  v.guard_rate_scale = rate.scale;
  return v;
}

DaeSensitivityTransfer transfer_dae_sensitivities(const Problem& problem, const EventValues& event, In<double> p,
                                                  const Eigen::MatrixXd& s_minus, const Eigen::MatrixXd& s_dot_minus,
                                                  TangentWorkspace& ws) {
  // The explicit-reset transfer gives tau, the cost jumps and the differential rows of S+ (with
  // f- and f+ the consistent rates, z-dot- included); the algebraic rows follow in the new mode.
  // An implicit transition gives its map's Jacobians in place of the jump's.
  const bool implicit = static_cast<bool>(problem.event(event.event).transition);
  const JumpLinearization transition = implicit ? detail::linearize_transition(problem, event, p, ws) : JumpLinearization{};
  DaeSensitivityTransfer out{
      transfer_sensitivities(problem, event, p, s_minus, ws, implicit ? &transition : nullptr, &s_dot_minus), {}};
  const ConsistentPoint after{event.x_plus, event.f_plus};
  consistent_sensitivities(problem, event.mode_after, event.time, after, p, out.transfer.s_plus, out.s_dot_plus, ws);
  return out;
}

EventValues recorded_dae_event(const Problem& problem, const EventRecord& record, In<double> p,
                               TangentWorkspace& ws) {
  EventValues v = recorded_values(record);
  const Eigen::VectorXd no_rate = Eigen::VectorXd::Zero(v.x_minus.size());
  v.f_minus = consistent_point(problem, v.mode_before, v.time, v.x_minus, no_rate, p, "at an event", ws).xdot;
  v.f_plus = consistent_point(problem, v.mode_after, v.time, v.x_plus, no_rate, p, "after an event", ws).xdot;
  if (problem.event(v.event).reads_rates()) {
    v.xddot_minus = state_accelerations(problem, v.mode_before, v.time, v.x_minus, v.f_minus, p, ws);
  }
  return v;
}

Eigen::MatrixXd ResidualLinearization::index1_matrix(const Problem& problem) const {
  Eigen::MatrixXd m = f_xdot;
  for (int i = 0; i < problem.n_states(); ++i) {
    if (problem.is_algebraic(i)) m.col(i) = f_x.col(i);
  }
  return m;
}

namespace {
void size_scratch(ResidualLinearization& out, Eigen::Index nx, Eigen::Index np, Eigen::Index nc) {
  if (out.ones.size() != nx) {
    out.ones = Eigen::VectorXd::Ones(nx);
    out.zeros_x = Eigen::VectorXd::Zero(nx);
    out.direction_x = Eigen::VectorXd::Zero(nx);
  }
  if (out.zeros_p.size() != np) {
    out.zeros_p = Eigen::VectorXd::Zero(np);
    out.direction_p = Eigen::VectorXd::Zero(np);
  }
  out.column.resize(nc);
}
}  // namespace

void linearize_states(const Problem& problem, int mode, double t, In<double> x, In<double> xdot, In<double> p,
                      ResidualLinearization& out, TangentWorkspace& ws) {
  const Eigen::Index nx = x.size(), nc = problem.n_costs();
  size_scratch(out, nx, p.size(), nc);
  out.f_x.resize(nx, nx);
  out.g_x.resize(nc, nx);
  residual_columns(problem, mode, t, x, xdot, p, out.ones, out.zeros_x, out.f_x, ws);
  for (Eigen::Index i = 0; i < nx; ++i) {
    out.direction_x[i] = 1.0;
    running_cost_tangents_at_rate(problem, t, x, xdot, p, 0.0, out.direction_x, out.zeros_x, out.zeros_p, out.column,
                                  ws);
    out.g_x.col(i) = out.column;
    out.direction_x[i] = 0.0;
  }
}

void linearize_parameters(const Problem& problem, int mode, double t, In<double> x, In<double> xdot,
                          In<double> p, ResidualLinearization& out, TangentWorkspace& ws) {
  const Eigen::Index nx = x.size(), np = p.size(), nc = problem.n_costs();
  size_scratch(out, nx, np, nc);
  out.f_p.resize(nx, np);
  out.g_p.resize(nc, np);
  residual_parameter_jacobian(problem, mode, t, x, xdot, p, out.f_p, ws);
  for (Eigen::Index j = 0; j < np; ++j) {
    out.direction_p[j] = 1.0;
    running_cost_tangents_at_rate(problem, t, x, xdot, p, 0.0, out.zeros_x, out.zeros_x, out.direction_p, out.column,
                                  ws);
    out.g_p.col(j) = out.column;
    out.direction_p[j] = 0.0;
  }
}

void linearize(const Problem& problem, int mode, double t, In<double> x, In<double> xdot, In<double> p,
               ResidualLinearization& out, TangentWorkspace& ws) {
  linearize_states(problem, mode, t, x, xdot, p, out, ws);
  linearize_parameters(problem, mode, t, x, xdot, p, out, ws);
  out.f_xdot.resize(x.size(), x.size());
  residual_columns(problem, mode, t, x, xdot, p, out.zeros_x, out.ones, out.f_xdot, ws);
}

AdjointPoint consistent_adjoint(const Problem& problem, const ResidualLinearization& lin, In<double> ell,
                                In<double> g_x) {
  return consistent_adjoint(problem, lin, ell, ell.head(0), g_x);
}

AdjointPoint consistent_adjoint(const Problem& problem, const ResidualLinearization& lin, In<double> ell,
                                In<double> ell_rate, In<double> g_x) {
  const Eigen::Index nx = ell.size();
  const Eigen::PartialPivLU<Eigen::MatrixXd> lu(lin.index1_matrix(problem).transpose());
  Eigen::VectorXd reduced = ell;
  AdjointPoint out{Eigen::VectorXd(nx), Eigen::VectorXd::Zero(lin.f_p.cols())};
  // The coefficients of the unknowns of M (S-dot_y, S_z): ell_rate on the differential rows,
  // ell on the algebraic ones.
  Eigen::VectorXd dependent_part = Eigen::VectorXd::Zero(nx);
  for (int i = 0; i < nx; ++i) {
    if (problem.is_algebraic(i)) {
      dependent_part[i] = ell[i];
    } else if (ell_rate.size() == nx) {
      dependent_part[i] = ell_rate[i];
    }
  }
  if (!dependent_part.isZero(0.0)) {
    // ell_z S_z + ell_rate_y S-dot_y = mu^T M (S-dot_y, S_z) = -mu^T (F_y S_y + F_p): neither
    // is free.
    const Eigen::VectorXd mu = lu.solve(dependent_part);
    reduced -= lin.f_x.transpose() * mu;
    out.gradient = -lin.f_p.transpose() * mu;
  }
  for (int i = 0; i < nx; ++i) {
    if (problem.is_algebraic(i)) reduced[i] = g_x[i];
  }
  out.lambda = lu.solve(reduced);
  return out;
}

Eigen::VectorXd adjoint_rate(const ResidualLinearization& lin, Eigen::VectorXd& lambda, In<double> g_x) {
  // F_xdot^T lambda-dot - F_x^T lambda + g_x^T = 0, linear in (lambda-dot on the differential
  // components, lambda on the others): one solve of N u = F_x^T lambda - g_x^T from lambda-dot = 0.
  const Eigen::Index nx = lambda.size();
  const Eigen::MatrixXd et = lin.f_xdot.transpose();
  Eigen::MatrixXd n(nx, nx);
  std::vector<bool> differential(static_cast<size_t>(nx));
  for (Eigen::Index i = 0; i < nx; ++i) {
    differential[static_cast<size_t>(i)] = !lin.f_xdot.row(i).isZero(0.0);
    n.col(i) = differential[static_cast<size_t>(i)] ? Eigen::VectorXd(et.col(i)) : Eigen::VectorXd(-lin.f_x.transpose().col(i));
  }
  const Eigen::VectorXd forcing = lin.f_x.transpose() * lambda - g_x;
  const Eigen::PartialPivLU<Eigen::MatrixXd> lu(n);
  const Eigen::VectorXd u = lu.solve(forcing);
  if (!(lu.rcond() > kSingularRcond) || !u.allFinite()) {
    // The rows that read rates are dependent ((1 + z^2) y' + ... and z - K y' - c: two rows, one
    // rate), so they are not the differential components and N is singular. lambda is consistent
    // already (consistent_adjoint); the least-norm solution of F_xdot^T lambda-dot = F_x^T lambda
    // - g_x^T is a rate that satisfies the equations IDAS differentiates.
    return et.completeOrthogonalDecomposition().solve(forcing);
  }
  Eigen::VectorXd rate = Eigen::VectorXd::Zero(nx);
  for (Eigen::Index i = 0; i < nx; ++i) {
    if (differential[static_cast<size_t>(i)]) {
      rate[i] = u[i];
    } else {
      lambda[i] += u[i];
    }
  }
  return rate;
}

}  // namespace saltus
