// The residual form of a mode, explicit or implicit, and its AD derivatives.
#include <saltus/derivatives/residual.hpp>

#include "dual_seed.hpp"

namespace saltus {

using detail::blocked_directions;
using detail::seed;
using detail::seed_constant;
using detail::seed_unit;
using detail::tangent_of;

namespace {

/// F in Dual scalars from the seeded workspace (t_x, t_xdot, t_p) into ws.t_out.
void dual_residual(const Mode& m, const Dual& t, TangentWorkspace& ws) {
  ws.t_out.resize(ws.t_x.size());
  if (m.implicit()) {
    m.residual.dual(t, ws.t_x, ws.t_xdot, ws.t_p, ws.t_out);
    return;
  }
  m.rhs.dual(t, ws.t_x, ws.t_p, ws.t_out);
  ws.t_out = ws.t_xdot - ws.t_out;
}

}  // namespace

void mode_residual(const Problem& problem, int mode, double t, In<double> x, In<double> xdot, In<double> p,
                   Out<double> residual, TangentWorkspace&) {
  const Mode& m = problem.mode(mode);
  if (m.implicit()) {
    m.residual.real(t, x, xdot, p, residual);
    return;
  }
  m.rhs.real(t, x, p, residual);
  residual = xdot - residual;
}

void mode_residual(const Problem& problem, int mode, Complex t, const VectorX<Complex>& x, const VectorX<Complex>& xdot,
                   const VectorX<Complex>& p, VectorX<Complex>& residual) {
  const Mode& m = problem.mode(mode);
  residual.resize(x.size());
  if (m.implicit()) {
    m.residual.complex(t, x, xdot, p, residual);
    return;
  }
  m.rhs.complex(t, x, p, residual);
  residual = xdot - residual;
}

void residual_tangent(const Problem& problem, int mode, double t, In<double> x, In<double> xdot, In<double> p,
                      double dt, In<double> dx, In<double> dxdot, In<double> dp, Out<double> tangent,
                      TangentWorkspace& ws) {
  seed(ws.t_x, x, dx);
  seed(ws.t_xdot, xdot, dxdot);
  seed(ws.t_p, p, dp);
  dual_residual(problem.mode(mode), make_dual(t, dt), ws);
  tangent_of(ws.t_out, tangent);
}

bool has_block_residual_tangents(const Mode& mode) {
  return mode.implicit() ? static_cast<bool>(mode.residual_tangents) : static_cast<bool>(mode.rhs_tangents);
}

void residual_tangents(const Problem& problem, int mode, double t, In<double> x, In<double> xdot, In<double> p,
                       const Eigen::Ref<const Eigen::MatrixXd>& dx, const Eigen::Ref<const Eigen::MatrixXd>& dxdot,
                       const Eigen::Ref<const Eigen::MatrixXd>& dp, Eigen::Ref<Eigen::MatrixXd> out,
                       TangentWorkspace& ws) {
  const Mode& m = problem.mode(mode);
  const Eigen::Index blocked = has_block_residual_tangents(m) ? blocked_directions(dx.cols()) : 0;
  if (blocked > 0 && m.implicit()) {
    m.residual_tangents(t, x, xdot, p, dx.leftCols(blocked), dxdot.leftCols(blocked), dp.leftCols(blocked),
                        out.leftCols(blocked));
  } else if (blocked > 0) {
    // F = x-dot - f: F's tangents are dxdot minus f's.
    m.rhs_tangents(t, x, p, dx.leftCols(blocked), dp.leftCols(blocked), out.leftCols(blocked));
    out.leftCols(blocked) = dxdot.leftCols(blocked) - out.leftCols(blocked);
  }
  for (Eigen::Index j = blocked; j < dx.cols(); ++j) {
    residual_tangent(problem, mode, t, x, xdot, p, 0.0, dx.col(j), dxdot.col(j), dp.col(j), out.col(j), ws);
  }
}

void residual_columns(const Problem& problem, int mode, double t, In<double> x, In<double> xdot, In<double> p,
                      In<double> x_weight, In<double> xdot_weight, Eigen::Ref<Eigen::MatrixXd> matrix,
                      TangentWorkspace& ws) {
  const Mode& m = problem.mode(mode);
  if (has_block_residual_tangents(m)) {
    // Column i's direction is x_weight[i] e_i in x and xdot_weight[i] e_i in x-dot.
    const Eigen::Index n = x.size();
    ws.unit.setZero(n, n);
    ws.unit.diagonal() = x_weight;
    ws.rate_unit.setZero(n, n);
    ws.rate_unit.diagonal() = xdot_weight;
    ws.zero.setZero(p.size(), n);
    residual_tangents(problem, mode, t, x, xdot, p, ws.unit, ws.rate_unit, ws.zero, matrix, ws);
    return;
  }
  seed_constant(ws.t_p, p);
  for (Eigen::Index i = 0; i < x.size(); ++i) {
    seed_unit(ws.t_x, x, i, x_weight[i]);
    seed_unit(ws.t_xdot, xdot, i, xdot_weight[i]);
    dual_residual(m, Dual(t), ws);
    tangent_of(ws.t_out, matrix.col(i));
  }
}

void completion_tangent(const Problem& problem, int mode, double t, In<double> x_guess, In<double> p, double dt,
                        In<double> dx_guess, In<double> dp, Out<double> x_tangent, Out<double> xdot_tangent,
                        TangentWorkspace& ws) {
  seed(ws.t_x, x_guess, dx_guess);
  seed(ws.t_p, p, dp);
  ws.t_out.resize(x_guess.size());
  ws.t_xdot.resize(x_guess.size());
  problem.mode(mode).completion.dual(make_dual(t, dt), ws.t_x, ws.t_p, ws.t_out, ws.t_xdot);
  tangent_of(ws.t_out, x_tangent);
  tangent_of(ws.t_xdot, xdot_tangent);
}

void completion_tangents(const Problem& problem, int mode, double t, In<double> x_guess, In<double> p,
                         const Eigen::Ref<const Eigen::MatrixXd>& dx_guess, const Eigen::Ref<const Eigen::MatrixXd>& dp,
                         Eigen::Ref<Eigen::MatrixXd> x_tangents, Eigen::Ref<Eigen::MatrixXd> xdot_tangents,
                         TangentWorkspace& ws) {
  const Mode& m = problem.mode(mode);
  // A lone last direction takes one Dual evaluation, not a block of one (dual_seed.hpp).
  const Eigen::Index blocked = m.completion_tangents ? blocked_directions(dx_guess.cols()) : 0;
  if (blocked > 0) {
    m.completion_tangents(t, x_guess, p, dx_guess.leftCols(blocked), dp.leftCols(blocked), x_tangents.leftCols(blocked),
                          xdot_tangents.leftCols(blocked));
  }
  for (Eigen::Index j = blocked; j < dx_guess.cols(); ++j) {
    completion_tangent(problem, mode, t, x_guess, p, 0.0, dx_guess.col(j), dp.col(j), x_tangents.col(j),
                       xdot_tangents.col(j), ws);
  }
}

void residual_parameter_jacobian(const Problem& problem, int mode, double t, In<double> x, In<double> xdot,
                                 In<double> p, Eigen::Ref<Eigen::MatrixXd> fp, TangentWorkspace& ws) {
  const Mode& m = problem.mode(mode);
  if (has_block_residual_tangents(m)) {
    ws.zero.setZero(x.size(), p.size());
    ws.unit.setIdentity(p.size(), p.size());
    residual_tangents(problem, mode, t, x, xdot, p, ws.zero, ws.zero, ws.unit, fp, ws);
    return;
  }
  seed_constant(ws.t_x, x);
  seed_constant(ws.t_xdot, xdot);
  for (Eigen::Index j = 0; j < p.size(); ++j) {
    seed_unit(ws.t_p, p, j);
    dual_residual(m, Dual(t), ws);
    tangent_of(ws.t_out, fp.col(j));
  }
}

Index1Weights index1_weights(const Problem& problem) {
  const int nx = problem.n_states();
  Index1Weights w{Eigen::VectorXd::Zero(nx), Eigen::VectorXd::Zero(nx)};
  for (int i = 0; i < nx; ++i) (problem.is_algebraic(i) ? w.x_weight : w.xdot_weight)[i] = 1.0;
  return w;
}

void running_costs_at_rate(const Problem& problem, double t, In<double> x, In<double> xdot, In<double> p,
                           Out<double> values) {
  for (int c = 0; c < problem.n_costs(); ++c) {
    const auto& g = problem.cost(c).running;
    values[c] = g ? g.real(t, x, xdot, p) : 0.0;
  }
}

void running_cost_tangents_at_rate(const Problem& problem, double t, In<double> x, In<double> xdot,
                                   In<double> p, double dt, In<double> dx, In<double> dxdot, In<double> dp,
                                   Out<double> tangents, TangentWorkspace& ws) {
  seed(ws.t_x, x, dx);
  seed(ws.t_xdot, xdot, dxdot);
  seed(ws.t_p, p, dp);
  const Dual td = make_dual(t, dt);
  for (int c = 0; c < problem.n_costs(); ++c) {
    const auto& g = problem.cost(c).running;
    tangents[c] = g ? g.dual(td, ws.t_x, ws.t_xdot, ws.t_p).v[0] : 0.0;
  }
}

}  // namespace saltus

namespace saltus {

namespace {

/// The rates with the algebraic states' entries zeroed: a transition reads the differential
/// rates only.
template <class V>
V differential_rates(const Problem& problem, const V& xdot) {
  V out = xdot;
  for (int i = 0; i < problem.n_states(); ++i) {
    if (problem.is_algebraic(i)) out[i] = 0.0;
  }
  return out;
}

int n_differential(const Problem& problem) { return problem.n_states() - problem.n_algebraic(); }

}  // namespace

void transition_residual(const Problem& problem, int event, double t, In<double> x_plus, In<double> xdot_plus,
                         In<double> x_minus, In<double> xdot_minus, In<double> p, Out<double> residual) {
  const Eigen::VectorXd rates_plus = differential_rates(problem, Eigen::VectorXd(xdot_plus));
  const Eigen::VectorXd rates_minus = differential_rates(problem, Eigen::VectorXd(xdot_minus));
  problem.event(event).transition.real(t, x_plus, rates_plus, x_minus, rates_minus, p, residual);
}

void transition_residual(const Problem& problem, int event, Complex t, const VectorX<Complex>& x_plus,
                         const VectorX<Complex>& xdot_plus, const VectorX<Complex>& x_minus,
                         const VectorX<Complex>& xdot_minus, const VectorX<Complex>& p, VectorX<Complex>& residual) {
  residual.resize(n_differential(problem));
  problem.event(event).transition.complex(t, x_plus, differential_rates(problem, xdot_plus), x_minus,
                                          differential_rates(problem, xdot_minus), p, residual);
}

void transition_tangent(const Problem& problem, int event, const TransitionPoint& at, const TransitionDirection& d,
                        Out<double> tangent) {
  VectorX<Dual> x_plus, xdot_plus, x_minus, xdot_minus, p, out(n_differential(problem));
  seed(x_plus, at.x_plus, d.x_plus);
  seed(xdot_plus, differential_rates(problem, Eigen::VectorXd(at.xdot_plus)),
       differential_rates(problem, Eigen::VectorXd(d.xdot_plus)));
  seed(x_minus, at.x_minus, d.x_minus);
  seed(xdot_minus, differential_rates(problem, Eigen::VectorXd(at.xdot_minus)),
       differential_rates(problem, Eigen::VectorXd(d.xdot_minus)));
  seed(p, at.p, d.p);
  problem.event(event).transition.dual(make_dual(at.t, d.t), x_plus, xdot_plus, x_minus, xdot_minus, p, out);
  tangent_of(out, tangent);
}

}  // namespace saltus
