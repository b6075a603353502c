#include <saltus/core/error.hpp>
#include <saltus/derivatives/residual.hpp>
#include <saltus/derivatives/reverse.hpp>
#include <saltus/solvers/event_transfer.hpp>

#include <fmt/format.h>

#include <stdexcept>

#include "guard_rate.hpp"
#include "run_support.hpp"

namespace saltus {

namespace {

/// f- and f+.
void evaluate_flows(const Problem& problem, In<double> p, EventValues& v) {
  const Eigen::Index n = v.x_minus.size();
  v.f_minus.resize(n);
  v.f_plus.resize(n);
  problem.mode(v.mode_before).rhs.real(v.time, v.x_minus, p, v.f_minus);
  problem.mode(v.mode_after).rhs.real(v.time, v.x_plus, p, v.f_plus);
}

/// f-, f+ and the crossing speed with its scale.
void evaluate_rates(const Problem& problem, In<double> p, EventValues& v, TangentWorkspace& ws) {
  evaluate_flows(problem, p, v);
  const detail::GuardRate rate = detail::guard_rate(problem, v.event, v.time, v.x_minus, p, v.f_minus, ws);
  v.guard_rate = rate.rate;
  v.guard_rate_scale = rate.scale;
}

}  // namespace

EventValues fire_event(const Problem& problem, int event, int mode_before, double t, In<double> x_minus,
                       In<double> p, TangentWorkspace& ws) {
  const Event& ev = problem.event(event);
  EventValues v;
  v.event = event;
  v.mode_before = mode_before;
  v.mode_after = ev.mode_after(mode_before);
  v.time = t;
  v.x_minus = x_minus;
  v.x_plus = v.x_minus;
  if (ev.jump) ev.jump.real(t, v.x_minus, p, v.x_plus);
  if (!v.x_plus.allFinite()) {
    throw ModelError(fmt::format("the jump of event '{}' at t = {:.17g} returned a non-finite state {} from {}",
                                 ev.name, t, detail::describe_state(problem, v.x_plus),
                                 detail::describe_state(problem, v.x_minus)));
  }
  evaluate_rates(problem, p, v, ws);
  return v;
}

EventValues recorded_values(const EventRecord& record) {
  EventValues v;
  v.event = record.event;
  v.mode_before = record.mode_before;
  v.mode_after = record.mode_after;
  v.time = record.time;
  v.x_minus = record.state_before;
  v.x_plus = record.state_after;
  v.guard_rate = record.guard_rate;
  v.guard_rate_scale = record.guard_rate_scale;
  return v;
}

EventValues recorded_event(const Problem& problem, const EventRecord& record, In<double> p) {
  EventValues v = recorded_values(record);
  evaluate_flows(problem, p, v);
  return v;
}

void require_transversal(const Problem& problem, const EventValues& event, double grazing_tolerance,
                         const char* consequence) {
  if (!event.grazing(grazing_tolerance)) return;
  throw GrazingError(fmt::format(
      "event '{}' at t = {:.17g} grazes its guard (r-dot- = {:.3g}, state {}): the event time has no "
      "derivative there, so {}",
      problem.event(event.event).name, event.time, event.guard_rate,
      detail::describe_state(problem, event.x_minus), consequence));
}

Eigen::VectorXd reset_defect(const Problem& problem, const EventValues& event, In<double> p,
                             TangentWorkspace& ws, const JumpLinearization* jump) {
  if (jump != nullptr) return jump->x * event.f_minus + jump->t - event.f_plus;
  // One forward tangent of the jump in the direction (dt, dx, dp) = (1, f-, 0).
  Eigen::VectorXd c_e(event.x_minus.size());
  jump_tangent(problem, event.event, event.time, event.x_minus, p, 1.0, event.f_minus,
               Eigen::VectorXd::Zero(p.size()), c_e, ws);
  c_e -= event.f_plus;
  return c_e;
}

Eigen::VectorXd running_cost_jump(const Problem& problem, const EventValues& event, In<double> p) {
  // The rates are the event's f- and f+: the modes' right-hand sides, or a DAE's consistent
  // rates (dae_transfer.hpp).
  Eigen::VectorXd before(problem.n_costs()), after(problem.n_costs());
  running_costs_at_rate(problem, event.time, event.x_minus, event.f_minus, p, before);
  running_costs_at_rate(problem, event.time, event.x_plus, event.f_plus, p, after);
  return before - after;
}

Eigen::VectorXd event_cost_values(const Problem& problem, const EventValues& event, In<double> p) {
  Eigen::VectorXd values(problem.n_costs());
  for (int c = 0; c < problem.n_costs(); ++c) {
    values[c] = event_cost(problem, c, event.event, event.time, event.x_minus, p);
  }
  return values;
}

SensitivityTransfer transfer_sensitivities(const Problem& problem, const EventValues& event, In<double> p,
                                           const Eigen::MatrixXd& s_minus, TangentWorkspace& ws,
                                           const JumpLinearization* jump, const Eigen::MatrixXd* s_dot_minus) {
  const Eigen::Index nx = event.x_minus.size(), np = p.size();
  const bool rates = problem.event(event.event).reads_rates();
  if (rates && (s_dot_minus == nullptr || event.xddot_minus.size() != nx)) {
    throw std::logic_error("transfer_sensitivities: a guard that reads rates needs S-dot- and x-ddot-");
  }
  const Eigen::VectorXd no_rate = Eigen::VectorXd::Zero(nx);
  const Eigen::VectorXd c_e = reset_defect(problem, event, p, ws, jump);
  const Eigen::VectorXd cost_jump = running_cost_jump(problem, event, p);
  const Eigen::MatrixXd unit = Eigen::MatrixXd::Identity(np, np);
  SensitivityTransfer out;
  out.tau.resize(np);
  out.s_plus.resize(nx, np);
  out.cost_integral_jump.resize(problem.n_costs(), np);
  for (Eigen::Index j = 0; j < np; ++j) {
    out.tau[j] = -guard_tangent(problem, event.event, event.time, event.x_minus, event.f_minus, p, 0.0,
                                s_minus.col(j), rates ? In<double>(s_dot_minus->col(j)) : In<double>(no_rate),
                                unit.col(j), ws) /
                 event.guard_rate;
    if (jump != nullptr) {
      out.s_plus.col(j) = jump->x * s_minus.col(j) + jump->p.col(j);
    } else {
      jump_tangent(problem, event.event, event.time, event.x_minus, p, 0.0, s_minus.col(j), unit.col(j),
                   out.s_plus.col(j), ws);
    }
    out.s_plus.col(j) += c_e * out.tau[j];
    out.cost_integral_jump.col(j) = cost_jump * out.tau[j];
  }
  // Point costs c(t_e, x(t_e-), p): x(t_e-) moves with the event time, by S- + f- tau.
  for (int c = 0; c < problem.n_costs(); ++c) {
    if (!problem.cost(c).has_terms_for(problem, event.event)) continue;
    for (Eigen::Index j = 0; j < np; ++j) {
      const Eigen::VectorXd dx = s_minus.col(j) + event.f_minus * out.tau[j];
      out.cost_integral_jump(c, j) += event_cost_tangent(problem, c, event.event, event.time, event.x_minus, p,
                                                         out.tau[j], dx, unit.col(j), ws);
    }
  }
  return out;
}

AdjointTransfer transfer_adjoint(const Problem& problem, const EventValues& event, In<double> p,
                                 const Eigen::MatrixXd& lambda_plus, TangentWorkspace& ws,
                                 const JumpLinearization* jump) {
  const bool rates = problem.event(event.event).reads_rates();
  if (rates && event.xddot_minus.size() != event.x_minus.size()) {
    throw std::logic_error("transfer_adjoint: a guard that reads rates needs x-ddot-");
  }
  const GuardGradient guard = guard_gradient(problem, event.event, event.time, event.x_minus, event.f_minus, p);
  const ScalarGradient& r = guard.state;
  // The crossing speed from the same reverse sweep as r_x and r_p (f- is the recorded one).
  const double r_dot = r.t + r.x.dot(event.f_minus) + (rates ? guard.xdot.dot(event.xddot_minus) : 0.0);
  const Eigen::RowVectorXd tau_x = -r.x / r_dot;
  const Eigen::RowVectorXd tau_p = -r.p / r_dot;
  const Eigen::VectorXd c_e = reset_defect(problem, event, p, ws, jump);
  const Eigen::VectorXd cost_jump = running_cost_jump(problem, event, p);
  const TransposedProducts phi =
      jump != nullptr ? TransposedProducts{{}, jump->x.transpose() * lambda_plus, jump->p.transpose() * lambda_plus}
                      : jump_products(problem, event.event, event.time, event.x_minus, p, lambda_plus);
  AdjointTransfer out;
  out.lambda_minus.resize(lambda_plus.rows(), lambda_plus.cols());
  out.gradient.resize(lambda_plus.cols(), p.size());
  Eigen::RowVectorXd kappas(lambda_plus.cols());
  for (Eigen::Index c = 0; c < lambda_plus.cols(); ++c) {
    double kappa = c_e.dot(lambda_plus.col(c)) + cost_jump[c];  // d cost / d t_e
    out.gradient.row(c) = phi.p.col(c).transpose();
    out.lambda_minus.col(c) = phi.x.col(c);
    if (problem.cost(static_cast<int>(c)).has_terms_for(problem, event.event)) {
      // Point cost c(t_e, x-, p): its rate c_t + c_x f- joins kappa; c_x and c_p enter directly.
      const ScalarGradient point =
          event_cost_gradient(problem, static_cast<int>(c), event.event, event.time, event.x_minus, p);
      kappa += point.t + point.x.dot(event.f_minus);
      out.lambda_minus.col(c) += point.x.transpose();
      out.gradient.row(c) += point.p;
    }
    out.gradient.row(c) += kappa * tau_p;
    out.lambda_minus.col(c) += tau_x.transpose() * kappa;
    kappas[c] = kappa;
  }
  // S-dot- enters tau through r_xdot: its coefficients tau_xdot^T kappa.
  if (rates) out.rate_coefficients = (-guard.xdot / r_dot).transpose() * kappas;
  return out;
}

ComplexTransfer transfer_complex(const Problem& problem, int event, int mode_before, double t,
                                 const VectorX<Complex>& x_minus, const VectorX<Complex>& p, double guard_rate) {
  return transfer_complex(problem, event, mode_before, Complex(t), x_minus, p, guard_rate);
}

ComplexTransfer transfer_complex(const Problem& problem, int event, int mode_before, Complex tc,
                                 const VectorX<Complex>& x_minus, const VectorX<Complex>& p, double guard_rate) {
  const Event& ev = problem.event(event);
  const int mode_after = ev.mode_after(mode_before);
  const Eigen::Index nx = x_minus.size();
  const double t = tc.real();
  VectorX<Complex> f_minus(nx), f_plus(nx), x_hat_plus(nx);
  problem.mode(mode_before).rhs.complex(tc, x_minus, p, f_minus);
  const Complex dt_c = complex_time_shift(ev.guard.complex(tc, x_minus, p), guard_rate);
  ComplexTransfer out;
  out.time = tc + dt_c;
  const VectorX<Complex> x_hat = x_minus + f_minus * dt_c;
  if (ev.jump) {
    ev.jump.complex(out.time, x_hat, p, x_hat_plus);
  } else {
    x_hat_plus = x_hat;
  }
  problem.mode(mode_after).rhs.complex(out.time, x_hat_plus, p, f_plus);
  out.cost_integral_jump = VectorX<Complex>::Zero(problem.n_costs());
  for (int c = 0; c < problem.n_costs(); ++c) {
    const auto& g = problem.cost(c).running;
    if (!g) continue;
    const Complex g_minus = g.complex(tc, x_minus, f_minus, p);
    const Complex g_plus = g.complex(out.time, x_hat_plus, f_plus, p);
    out.cost_integral_jump[c] = (g_minus - g_plus) * dt_c;
  }
  // Point costs at the complex event time, with the state carried there (x- + f- dt_c).
  for (int c = 0; c < problem.n_costs(); ++c) {
    for (const EventCostTerm& term : problem.cost(c).at_events) {
      if (term.applies_to(problem, event)) out.cost_integral_jump[c] += term.value.complex(out.time, x_hat, p);
    }
  }
  out.x_plus = x_hat_plus - f_plus * dt_c;
  if (!out.x_plus.allFinite()) {
    throw ModelError(fmt::format("the jump of event '{}' at t = {:.17g} returned a non-finite state (complex run)",
                                 ev.name, t));
  }
  return out;
}

}  // namespace saltus
