// Running costs that read rates, folded into the adjoint's cost linearization: rate_costs.hpp.
#include "rate_costs.hpp"

#include <saltus/core/error.hpp>
#include <saltus/derivatives/residual.hpp>
#include <saltus/derivatives/reverse.hpp>

#include <Eigen/LU>
#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>

namespace saltus::detail {

void RateCostFold::scan(const Problem& problem, double t, In<double> x, In<double> xdot, In<double> p,
                        TangentWorkspace& ws) {
  const Eigen::Index nx = x.size();
  const Eigen::VectorXd zero_x = Eigen::VectorXd::Zero(nx), zero_p = Eigen::VectorXd::Zero(p.size());
  // At the point's rates and at generic ones: a cost like der(y)^2 has a zero derivative where
  // der(y) = 0 (a start at rest) but reads the rate all the same.
  Eigen::VectorXd generic = xdot;
  for (Eigen::Index i = 0; i < nx; ++i) generic[i] += 0.37 + 0.011 * static_cast<double>(i);
  Eigen::VectorXd direction = zero_x, tangents(problem.n_costs()), at_generic(problem.n_costs());
  for (int i = 0; i < nx; ++i) {
    direction[i] = 1.0;
    running_cost_tangents_at_rate(problem, t, x, xdot, p, 0.0, zero_x, direction, zero_p, tangents, ws);
    running_cost_tangents_at_rate(problem, t, x, generic, p, 0.0, zero_x, direction, zero_p, at_generic, ws);
    direction[i] = 0.0;
    for (int c = 0; c < problem.n_costs(); ++c) {
      if (tangents[c] == 0.0 && at_generic[c] == 0.0) continue;
      const std::string& name = problem.state_names()[static_cast<size_t>(i)];
      if (problem.is_algebraic(i)) {
        throw InputError(fmt::format("cost '{}' reads the rate of the algebraic state '{}' (der({})), which the "
                                     "adjoint on IDAS does not support; use forward sensitivities (docs/dae.md, "
                                     "\"Limits\")",
                                     problem.cost(c).name, name, name));
      }
      if (std::find(states_.begin(), states_.end(), i) == states_.end()) states_.push_back(i);
    }
  }
}

Eigen::MatrixXd RateCostFold::rate_gradients(const Problem& problem, double t, In<double> x, In<double> xdot,
                                             In<double> p, TangentWorkspace& ws) const {
  const Eigen::Index nx = x.size();
  Eigen::MatrixXd g_rates = Eigen::MatrixXd::Zero(problem.n_costs(), nx);
  const Eigen::VectorXd zero_x = Eigen::VectorXd::Zero(nx), zero_p = Eigen::VectorXd::Zero(p.size());
  Eigen::VectorXd direction = zero_x, tangents(problem.n_costs());
  for (int i : states_) {
    direction[i] = 1.0;
    running_cost_tangents_at_rate(problem, t, x, xdot, p, 0.0, zero_x, direction, zero_p, tangents, ws);
    direction[i] = 0.0;
    g_rates.col(i) = tangents;
  }
  return g_rates;
}

namespace {

/// The residual's rows with rates D and the rates they hold, with M_D,y = F_D,ydot factored.
struct RateRows {
  std::vector<Eigen::Index> rows, columns;
  Eigen::MatrixXd m;                        ///< M_D,y
  Eigen::PartialPivLU<Eigen::MatrixXd> lu;  ///< of M_D,y
};

RateRows rate_rows(const Problem& problem, const Eigen::MatrixXd& f_xdot) {
  RateRows r;
  for (Eigen::Index i = 0; i < f_xdot.rows(); ++i) {
    if (!f_xdot.row(i).isZero(0.0)) r.rows.push_back(i);
    if (!f_xdot.col(i).isZero(0.0)) r.columns.push_back(i);
  }
  if (r.rows.size() != r.columns.size()) {
    std::vector<std::string> rows, rates;
    for (const Eigen::Index i : r.rows) rows.push_back(fmt::format("residual[{}]", i));
    for (const Eigen::Index i : r.columns) rates.push_back(fmt::format("der({})", problem.state_names()[static_cast<size_t>(i)]));
    throw InputError(fmt::format("a running cost reads rates, which the adjoint on IDAS takes from the residual's "
                                 "rows with rates; but they are {} rows ({}) for {} rate{} ({}); use forward "
                                 "sensitivities (docs/dae.md, \"Limits\")",
                                 r.rows.size(), fmt::join(rows, ", "), r.columns.size(), r.columns.size() == 1 ? "" : "s",
                                 fmt::join(rates, ", ")));
  }
  const auto k = static_cast<Eigen::Index>(r.rows.size());
  r.m.resize(k, k);
  for (Eigen::Index a = 0; a < k; ++a) {
    for (Eigen::Index b = 0; b < k; ++b) r.m(a, b) = f_xdot(r.rows[static_cast<size_t>(a)], r.columns[static_cast<size_t>(b)]);
  }
  r.lu.compute(r.m);
  if (!(r.lu.rcond() > 1e-14)) {
    throw InputError("a running cost reads rates, which the adjoint on IDAS takes from the residual's rows with "
                     "rates; but their matrix F_ydot is singular; use forward sensitivities (docs/dae.md, "
                     "\"Limits\")");
  }
  return r;
}

}  // namespace

Eigen::VectorXd RateCostFold::rates_of_the_state(const Problem& problem, int mode, double t, In<double> x,
                                                 In<double> xdot, In<double> p, const Eigen::MatrixXd& f_xdot,
                                                 TangentWorkspace& ws) const {
  Eigen::VectorXd rates = xdot;
  if (states_.empty()) return rates;
  const RateRows r = rate_rows(problem, f_xdot);
  Eigen::VectorXd residual(x.size());
  mode_residual(problem, mode, t, x, xdot, p, residual, ws);
  Eigen::VectorXd residual_rows(static_cast<Eigen::Index>(r.rows.size()));
  for (size_t a = 0; a < r.rows.size(); ++a) residual_rows[static_cast<Eigen::Index>(a)] = residual[r.rows[a]];
  const Eigen::VectorXd step = r.lu.solve(residual_rows);
  for (size_t b = 0; b < r.columns.size(); ++b) rates[r.columns[b]] -= step[static_cast<Eigen::Index>(b)];
  return rates;
}

void RateCostFold::apply(const Problem& problem, double t, In<double> x, In<double> xdot, In<double> p,
                         ResidualLinearization& lin, Part part, TangentWorkspace& ws) const {
  if (states_.empty()) return;
  const RateRows r = rate_rows(problem, lin.f_xdot);
  const std::vector<Eigen::Index>& rows = r.rows;
  const std::vector<Eigen::Index>& columns = r.columns;
  const auto k = static_cast<Eigen::Index>(rows.size());
  const Eigen::PartialPivLU<Eigen::MatrixXd> lu(r.m.transpose());
  const Eigen::MatrixXd g_all = rate_gradients(problem, t, x, xdot, p, ws);
  Eigen::MatrixXd g_rates(g_all.rows(), k);
  for (Eigen::Index b = 0; b < k; ++b) g_rates.col(b) = g_all.col(columns[static_cast<size_t>(b)]);
  const Eigen::MatrixXd b = lu.solve(g_rates.transpose()).transpose();  // n_c x k
  for (Eigen::Index a = 0; a < k; ++a) {
    const Eigen::Index row = rows[static_cast<size_t>(a)];
    if (part != Part::Parameters) lin.g_x.noalias() -= b.col(a) * lin.f_x.row(row);
    if (part != Part::States) lin.g_p.noalias() -= b.col(a) * lin.f_p.row(row);
  }
}

}  // namespace saltus::detail
