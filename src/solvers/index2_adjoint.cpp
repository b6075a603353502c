// The consistent adjoint of index-2 modes: index2_adjoint.hpp has the equations.
#include "index2_adjoint.hpp"

#include <saltus/core/error.hpp>
#include <saltus/derivatives/residual.hpp>
#include <saltus/derivatives/reverse.hpp>

#include <Eigen/LU>
#include <fmt/format.h>

#include <cmath>

namespace saltus::detail {

namespace {

bool zero_row(const Eigen::MatrixXd& m, Eigen::Index row) { return m.row(row).isZero(0.0); }

/// Factor a square matrix of the index-2 adjoint, or throw naming the mode and the matrix.
Eigen::PartialPivLU<Eigen::MatrixXd> factor(const Problem& problem, int mode, const Eigen::MatrixXd& m,
                                             const char* which) {
  Eigen::PartialPivLU<Eigen::MatrixXd> lu(m);
  const Eigen::VectorXd u = lu.matrixLU().diagonal().cwiseAbs();
  const double scale = std::max(1.0, m.lpNorm<Eigen::Infinity>());
  if (u.size() > 0 && !(u.minCoeff() > 1e-13 * scale)) {
    throw ModelError(fmt::format("the index-2 adjoint of mode '{}' needs the {} nonsingular (k_y f_z singular: the "
                                 "mode is not Hessenberg index 2 there; docs/dae.md, \"Index 2\")",
                                 problem.mode(mode).name, which));
  }
  return lu;
}

/// Why the adjoint below cannot run on the mode ("" when it can): it reads the rates of the
/// differential states only, so each has a column in F_xdot and no algebraic state has one.
std::string semi_explicit_obstacle(const Problem& problem, int mode, const ResidualLinearization& lin) {
  for (int c = 0; c < problem.n_states(); ++c) {
    const bool has_rate = !lin.f_xdot.col(c).isZero(0.0);
    if (has_rate == !problem.is_algebraic(c)) continue;
    const std::string& name = problem.state_names()[static_cast<size_t>(c)];
    return has_rate ? fmt::format("the residual of mode '{}' reads the rate of the algebraic state '{}'",
                                  problem.mode(mode).name, name)
                    : fmt::format("the residual of mode '{}' has no rate of the differential state '{}'",
                                  problem.mode(mode).name, name);
  }
  return "";
}

}  // namespace

std::string index2_obstacle(const Problem& problem, int mode, const ResidualLinearization& lin, Index2Structure& s) {
  const Eigen::Index n = lin.f_x.rows();
  s = Index2Structure{std::vector<bool>(static_cast<size_t>(n)), std::vector<bool>(static_cast<size_t>(n)),
                      std::vector<bool>(static_cast<size_t>(n))};
  if (std::string why = semi_explicit_obstacle(problem, mode, lin); !why.empty()) return why;
  int differential_rows = 0, index1_rows = 0, index1_columns = 0;
  for (Eigen::Index r = 0; r < n; ++r) {
    const auto k = static_cast<size_t>(r);
    s.differential_row[k] = !zero_row(lin.f_xdot, r);
    if (s.differential_row[k]) {
      ++differential_rows;
      continue;
    }
    bool reads_algebraic = false;
    for (int c = 0; c < n; ++c) reads_algebraic = reads_algebraic || (problem.is_algebraic(c) && lin.f_x(r, c) != 0.0);
    s.constraint_row[k] = !reads_algebraic;
    if (reads_algebraic) ++index1_rows;
  }
  for (int c = 0; c < n; ++c) {
    if (!problem.is_algebraic(c)) continue;
    bool read = false;
    for (Eigen::Index r = 0; r < n; ++r) read = read || (!s.differential_row[static_cast<size_t>(r)] && lin.f_x(r, c) != 0.0);
    s.hidden_column[static_cast<size_t>(c)] = !read;
    if (read) ++index1_columns;
  }
  const int differential_states = static_cast<int>(n) - problem.n_algebraic();
  if (differential_rows != differential_states || index1_rows != index1_columns) {
    return fmt::format("mode '{}' has {} rows with rates for {} differential states, and {} algebraic rows reading "
                       "algebraic states for {} such states",
                       problem.mode(mode).name, differential_rows, differential_states, index1_rows, index1_columns);
  }
  return "";
}

Index2Structure index2_structure(const Problem& problem, int mode, const ResidualLinearization& lin) {
  Index2Structure s;
  if (std::string why = index2_obstacle(problem, mode, lin, s); !why.empty()) {
    throw InputError(fmt::format("the index-2 adjoint needs mode '{}' in semi-explicit form, but {} (docs/dae.md, "
                                 "\"Index 2\")",
                                 problem.mode(mode).name, why));
  }
  return s;
}

Eigen::MatrixXd consistent_index2_adjoint(const Problem& problem, int mode, const ResidualLinearization& lin,
                                          const Eigen::MatrixXd& ell, Eigen::MatrixXd& gradient,
                                          const std::string& what) {
  const Index2Structure s = index2_structure(problem, mode, lin);
  const Eigen::Index n = lin.f_x.rows();
  // K = [F_ydot | F_z] with the constraint rows' y columns F_A2,y (their F_ydot is zero).
  Eigen::MatrixXd k = lin.index1_matrix(problem);
  for (Eigen::Index r = 0; r < n; ++r) {
    if (!s.constraint_row[static_cast<size_t>(r)]) continue;
    for (int c = 0; c < n; ++c) {
      if (!problem.is_algebraic(c)) k(r, c) = lin.f_x(r, c);
    }
  }
  const auto lu = factor(problem, mode, k.transpose(), "matrix [F_ydot + k_y | F_z]");
  Eigen::MatrixXd rhs = ell;
  for (int c = 0; c < n; ++c) {
    if (!problem.is_algebraic(c)) continue;
    for (Eigen::Index j = 0; j < ell.cols(); ++j) {
      if (ell(c, j) != 0.0) {
        throw InputError(fmt::format("{} reads the algebraic state '{}' of the index-2 mode '{}', which the index-2 "
                                     "adjoint does not support; use forward sensitivities (docs/dae.md, \"Index 2\")",
                                     what, problem.state_names()[static_cast<size_t>(c)], problem.mode(mode).name));
      }
    }
    rhs.row(c) = lin.g_x.col(c).transpose();
  }
  Eigen::MatrixXd lambda = lu.solve(rhs);
  for (Eigen::Index r = 0; r < n; ++r) {
    if (!s.constraint_row[static_cast<size_t>(r)]) continue;
    // nu_r: the gradient's -k_p^T nu; lambda_A2 comes from the hidden constraint.
    gradient -= lambda.row(r).transpose() * lin.f_p.row(r);
    lambda.row(r).setZero();
  }
  return lambda;
}

Eigen::MatrixXd index2_adjoint_rates(const Problem& problem, int mode, double t, In<double> x, In<double> xdot,
                                    In<double> p, const ResidualLinearization& lin, Eigen::MatrixXd& lambda,
                                    const RateCostFold& fold, TangentWorkspace& ws) {
  const Index2Structure s = index2_structure(problem, mode, lin);
  const Eigen::Index n = lin.f_x.rows(), nc = lambda.cols();
  Eigen::MatrixXd lambda_d = lambda;
  for (Eigen::Index r = 0; r < n; ++r) {
    if (!s.differential_row[static_cast<size_t>(r)]) lambda_d.row(r).setZero();
  }
  // L: rows by residual row, columns by state; the unknowns u = (lambda-dot_D, -lambda_A).
  Eigen::MatrixXd l = Eigen::MatrixXd::Zero(n, n);
  for (Eigen::Index r = 0; r < n; ++r) {
    const bool differential = s.differential_row[static_cast<size_t>(r)];
    for (int c = 0; c < n; ++c) {
      if (!problem.is_algebraic(c)) {
        l(r, c) = differential ? lin.f_xdot(r, c) : lin.f_x(r, c);
      } else if (s.hidden_column[static_cast<size_t>(c)] == differential) {
        l(r, c) = lin.f_x(r, c);  // F_D,z2 and F_A1,z1
      }
    }
  }
  const auto lu = factor(problem, mode, l.transpose(), "matrix of the hidden adjoint constraint k_y f_z");
  Eigen::MatrixXd rhs = lin.f_x.transpose() * lambda_d - lin.g_x.transpose();
  // The z2 rows: -d/dt (F_D,z2^T lambda_D - g_z2^T) at fixed lambda, by central differences.
  const double delta = 1e-6 * (1.0 + std::abs(t));
  ResidualLinearization ahead, behind;
  const Eigen::VectorXd x_ahead = x + delta * xdot, x_behind = x - delta * xdot;
  for (const double side : {1.0, -1.0}) {
    ResidualLinearization& at = side > 0.0 ? ahead : behind;
    const Eigen::VectorXd& point = side > 0.0 ? x_ahead : x_behind;
    at.f_xdot = lin.f_xdot;
    linearize_states(problem, mode, t + side * delta, point, xdot, p, at, ws);
    fold.apply(problem, mode, t + side * delta, point, xdot, p, at, RateCostFold::Part::States, ws);
  }
  const Eigen::MatrixXd change = ((ahead.f_x - behind.f_x).transpose() * lambda_d -
                                  (ahead.g_x - behind.g_x).transpose()) / (2.0 * delta);
  for (int c = 0; c < n; ++c) {
    if (problem.is_algebraic(c) && s.hidden_column[static_cast<size_t>(c)]) rhs.row(c) = -change.row(c);
  }
  const Eigen::MatrixXd u = lu.solve(rhs);
  Eigen::MatrixXd rates = Eigen::MatrixXd::Zero(n, nc);
  for (Eigen::Index r = 0; r < n; ++r) {
    if (s.differential_row[static_cast<size_t>(r)]) {
      rates.row(r) = u.row(r);
    } else {
      lambda.row(r) = -u.row(r);
    }
  }
  return rates;
}

CompletionTranspose transpose_completion(const Problem& problem, int mode, double t, In<double> x, In<double> p,
                                         const Eigen::MatrixXd& w) {
  const Eigen::Index n = x.size();
  Eigen::MatrixXd weights = Eigen::MatrixXd::Zero(2 * n, w.cols());
  weights.topRows(n) = w;
  const TransposedProducts products = completion_products(problem, mode, t, x, p, weights);
  return {products.x, products.p.transpose()};
}

}  // namespace saltus::detail
