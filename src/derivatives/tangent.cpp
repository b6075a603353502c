#include <saltus/core/error.hpp>
#include <saltus/derivatives/tangent.hpp>

#include "dual_seed.hpp"

#include <fmt/format.h>

namespace saltus {

using detail::blocked_directions;
using detail::seed;
using detail::seed_constant;
using detail::tangent_of;

void rhs_tangent(const Problem& problem, int mode, double t, In<double> x, In<double> p,
                 double dt, In<double> dx, In<double> dp, Out<double> tangent,
                 TangentWorkspace& ws) {
  seed(ws.t_x, x, dx);
  seed(ws.t_p, p, dp);
  ws.t_out.resize(x.size());
  problem.mode(mode).rhs.dual(make_dual(t, dt), ws.t_x, ws.t_p, ws.t_out);
  tangent_of(ws.t_out, tangent);
}

void rhs_tangents(const Problem& problem, int mode, double t, In<double> x, In<double> p,
                  const Eigen::Ref<const Eigen::MatrixXd>& dx, const Eigen::Ref<const Eigen::MatrixXd>& dp,
                  Eigen::Ref<Eigen::MatrixXd> out, TangentWorkspace& ws) {
  const Mode& m = problem.mode(mode);
  const Eigen::Index blocked = m.rhs_tangents ? blocked_directions(dx.cols()) : 0;
  if (blocked > 0) m.rhs_tangents(t, x, p, dx.leftCols(blocked), dp.leftCols(blocked), out.leftCols(blocked));
  for (Eigen::Index j = blocked; j < dx.cols(); ++j) {
    rhs_tangent(problem, mode, t, x, p, 0.0, dx.col(j), dp.col(j), out.col(j), ws);
  }
}

double guard_tangent(const Problem& problem, int event, double t, In<double> x, In<double> p,
                     double dt, In<double> dx, In<double> dp, TangentWorkspace& ws) {
  if (problem.event(event).reads_rates()) {
    throw Error("guard_tangent: the guard of event '" + problem.event(event).name +
                "' reads rates; call the overload with x-dot");
  }
  seed(ws.t_x, x, dx);
  seed(ws.t_p, p, dp);
  return problem.event(event).guard.dual(make_dual(t, dt), ws.t_x, ws.t_p).v[0];
}

double guard_tangent(const Problem& problem, int event, double t, In<double> x, In<double> xdot, In<double> p,
                     double dt, In<double> dx, In<double> dxdot, In<double> dp, TangentWorkspace& ws) {
  const Event& e = problem.event(event);
  if (!e.reads_rates()) return guard_tangent(problem, event, t, x, p, dt, dx, dp, ws);
  seed(ws.t_x, x, dx);
  seed(ws.t_xdot, xdot, dxdot);
  seed(ws.t_p, p, dp);
  return e.rate_guard.dual(make_dual(t, dt), ws.t_x, ws.t_xdot, ws.t_p).v[0];
}

void jump_tangent(const Problem& problem, int event, double t, In<double> x, In<double> p,
                  double dt, In<double> dx, In<double> dp, Out<double> tangent,
                  TangentWorkspace& ws) {
  const auto& jump = problem.event(event).jump;
  if (!jump) {
    tangent = dx;
    return;
  }
  seed(ws.t_x, x, dx);
  seed(ws.t_p, p, dp);
  ws.t_out.resize(x.size());
  jump.dual(make_dual(t, dt), ws.t_x, ws.t_p, ws.t_out);
  tangent_of(ws.t_out, tangent);
}

namespace {

/// The xdot (tangent) a running cost receives in ws.t_xdot, from the seeded ws.t_x and ws.t_p:
/// f_mode when some cost reads it, else zero (RateUse::Ignores).
void running_cost_rates(const Problem& problem, int mode, const Dual& t, bool needed, TangentWorkspace& ws) {
  ws.t_xdot.resize(ws.t_x.size());
  if (needed) {
    problem.mode(mode).rhs.dual(t, ws.t_x, ws.t_p, ws.t_xdot);
  } else {
    ws.t_xdot.setConstant(Dual(0.0));
  }
}

}  // namespace

double running_cost(const Problem& problem, int cost, int mode, double t, In<double> x,
                    In<double> p) {
  const auto& g = problem.cost(cost).running;
  if (!g) return 0.0;
  Eigen::VectorXd xdot = Eigen::VectorXd::Zero(x.size());
  if (problem.cost(cost).rates == RateUse::Reads) problem.mode(mode).rhs.real(t, x, p, xdot);
  return g.real(t, x, xdot, p);
}

double running_cost_tangent(const Problem& problem, int cost, int mode, double t, In<double> x,
                            In<double> p, double dt, In<double> dx, In<double> dp,
                            TangentWorkspace& ws) {
  const auto& g = problem.cost(cost).running;
  if (!g) return 0.0;
  seed(ws.t_x, x, dx);
  seed(ws.t_p, p, dp);
  const Dual td = make_dual(t, dt);
  running_cost_rates(problem, mode, td, problem.cost(cost).rates == RateUse::Reads, ws);
  return g.dual(td, ws.t_x, ws.t_xdot, ws.t_p).v[0];
}

void running_cost_tangents(const Problem& problem, int mode, double t, In<double> x,
                           In<double> p, double dt, In<double> dx, In<double> dp,
                           Out<double> tangents, TangentWorkspace& ws) {
  seed(ws.t_x, x, dx);
  seed(ws.t_p, p, dp);
  const Dual td = make_dual(t, dt);
  running_cost_rates(problem, mode, td, problem.running_costs_read_rates(), ws);
  for (int c = 0; c < problem.n_costs(); ++c) {
    const auto& g = problem.cost(c).running;
    tangents[c] = g ? g.dual(td, ws.t_x, ws.t_xdot, ws.t_p).v[0] : 0.0;
  }
}

void running_cost_tangents(const Problem& problem, int mode, double t, In<double> x, In<double> p,
                           const Eigen::Ref<const Eigen::MatrixXd>& dx, const Eigen::Ref<const Eigen::MatrixXd>& dp,
                           Eigen::Ref<Eigen::MatrixXd> tangents, TangentWorkspace& ws,
                           const Eigen::VectorXd* rates) {
  if (!problem.mode(mode).rhs_tangents || !problem.running_costs_read_rates()) {
    for (Eigen::Index j = 0; j < dx.cols(); ++j) {
      running_cost_tangents(problem, mode, t, x, p, 0.0, dx.col(j), dp.col(j), tangents.col(j), ws);
    }
    return;
  }
  // The rates and their tangents once for every direction, then the integrands alone.
  if (rates != nullptr) {
    if (rates->size() != x.size()) {
      throw Error(fmt::format("running_cost_tangents: {} rates for {} states", rates->size(), x.size()));
    }
    ws.xdot = *rates;
  } else {
    ws.xdot.resize(x.size());
    problem.mode(mode).rhs.real(t, x, p, ws.xdot);
  }
  ws.xdot_tangents.resize(x.size(), dx.cols());
  rhs_tangents(problem, mode, t, x, p, dx, dp, ws.xdot_tangents, ws);
  for (Eigen::Index j = 0; j < dx.cols(); ++j) {
    seed(ws.t_x, x, dx.col(j));
    seed(ws.t_p, p, dp.col(j));
    seed(ws.t_xdot, ws.xdot, ws.xdot_tangents.col(j));
    for (int c = 0; c < problem.n_costs(); ++c) {
      const auto& g = problem.cost(c).running;
      tangents(c, j) = g ? g.dual(Dual(t), ws.t_x, ws.t_xdot, ws.t_p).v[0] : 0.0;
    }
  }
}

double terminal_cost(const Problem& problem, int cost, double t, In<double> x, In<double> p) {
  const auto& w = problem.cost(cost).terminal;
  return w ? w.real(t, x, p) : 0.0;
}

double terminal_cost_tangent(const Problem& problem, int cost, double t, In<double> x, In<double> p,
                             double dt, In<double> dx, In<double> dp, TangentWorkspace& ws) {
  const auto& w = problem.cost(cost).terminal;
  if (!w) return 0.0;
  seed(ws.t_x, x, dx);
  seed(ws.t_p, p, dp);
  return w.dual(make_dual(t, dt), ws.t_x, ws.t_p).v[0];
}

void output_values(const Problem& problem, double t, In<double> x, In<double> p, Out<double> y) {
  problem.outputs().value.real(t, x, p, y);
}

void output_tangent(const Problem& problem, double t, In<double> x, In<double> p, double dt, In<double> dx,
                    In<double> dp, Out<double> tangent, TangentWorkspace& ws) {
  seed(ws.t_x, x, dx);
  seed(ws.t_p, p, dp);
  ws.t_out.resize(problem.outputs().size());
  problem.outputs().value.dual(make_dual(t, dt), ws.t_x, ws.t_p, ws.t_out);
  tangent_of(ws.t_out, tangent);
}

double event_cost(const Problem& problem, int cost, int event, double t, In<double> x, In<double> p) {
  double sum = 0.0;
  for (const EventCostTerm& term : problem.cost(cost).at_events) {
    if (term.applies_to(problem, event)) sum += term.value.real(t, x, p);
  }
  return sum;
}

double event_cost_tangent(const Problem& problem, int cost, int event, double t, In<double> x, In<double> p,
                          double dt, In<double> dx, In<double> dp, TangentWorkspace& ws) {
  double sum = 0.0;
  bool seeded = false;
  for (const EventCostTerm& term : problem.cost(cost).at_events) {
    if (!term.applies_to(problem, event)) continue;
    if (!seeded) {
      seed(ws.t_x, x, dx);
      seed(ws.t_p, p, dp);
      seeded = true;
    }
    sum += term.value.dual(make_dual(t, dt), ws.t_x, ws.t_p).v[0];
  }
  return sum;
}

Eigen::VectorXd initial_state(const Problem& problem, In<double> p) {
  Eigen::VectorXd x0 = Eigen::VectorXd::Zero(problem.n_states());
  problem.initial_state().real(p, x0);
  return x0;
}

Eigen::MatrixXd initial_state_jacobian(const Problem& problem, In<double> p) {
  const int nx = problem.n_states();
  const int np = problem.n_parameters();
  Eigen::MatrixXd jac(nx, np);
  VectorX<Dual> pd, x0(nx);
  for (int j = 0; j < np; ++j) {
    seed(pd, p, Eigen::VectorXd::Unit(np, j));
    x0.setConstant(Dual(0.0));
    problem.initial_state().dual(pd, x0);
    tangent_of(x0, jac.col(j));
  }
  return jac;
}

void rhs_state_jacobian(const Problem& problem, int mode, double t, In<double> x, In<double> p,
                        Eigen::Ref<Eigen::MatrixXd> fx, TangentWorkspace& ws) {
  const auto& m = problem.mode(mode);
  if (m.jacobian && m.jacobian->state) {
    m.jacobian->state(t, x, p, fx);
    return;
  }
  const auto nx = x.size();
  if (m.rhs_tangents) {
    ws.unit.setIdentity(nx, nx);
    ws.zero.setZero(p.size(), nx);
    rhs_tangents(problem, mode, t, x, p, ws.unit, ws.zero, fx, ws);
    return;
  }
  ws.t_out.resize(nx);
  seed_constant(ws.t_p, p);
  for (Eigen::Index j = 0; j < nx; ++j) {
    seed(ws.t_x, x, Eigen::VectorXd::Unit(nx, j));
    m.rhs.dual(Dual(t), ws.t_x, ws.t_p, ws.t_out);
    tangent_of(ws.t_out, fx.col(j));
  }
}

void rhs_jacobians(const Problem& problem, int mode, double t, In<double> x, In<double> p,
                   Eigen::Ref<Eigen::MatrixXd> fx, Eigen::Ref<Eigen::MatrixXd> fp,
                   TangentWorkspace& ws) {
  const auto& m = problem.mode(mode);
  if (m.jacobian && m.jacobian->state && m.jacobian->parameters) {
    m.jacobian->state(t, x, p, fx);
    m.jacobian->parameters(t, x, p, fp);
    return;
  }
  rhs_state_jacobian(problem, mode, t, x, p, fx, ws);
  const auto nx = x.size();
  const auto np = p.size();
  if (m.rhs_tangents) {
    ws.zero.setZero(nx, np);
    ws.unit.setIdentity(np, np);
    rhs_tangents(problem, mode, t, x, p, ws.zero, ws.unit, fp, ws);
    return;
  }
  ws.t_out.resize(nx);
  seed_constant(ws.t_x, x);
  for (Eigen::Index j = 0; j < np; ++j) {
    seed(ws.t_p, p, Eigen::VectorXd::Unit(np, j));
    m.rhs.dual(Dual(t), ws.t_x, ws.t_p, ws.t_out);
    tangent_of(ws.t_out, fp.col(j));
  }
}

}  // namespace saltus
