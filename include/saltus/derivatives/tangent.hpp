#pragma once
// Directional derivatives (tangents) of a problem's model functions by forward-mode AD.
//
// Each function evaluates its model function once with saltus::Dual scalars seeded with the
// direction (dt, dx, dp) and returns the value together with
//     d/de F(t + e dt, x + e dx, p + e dp) at e = 0,
// e.g. rhs_tangent gives f_t dt + f_x dx + f_p dp. Costs use the mode's x-dot inside, so their
// tangents include the chain rule through x-dot = f (accelerations in costs).
// A TangentWorkspace holds the Dual vectors so that repeated calls do not allocate.
#include <saltus/core/problem.hpp>

namespace saltus {

struct TangentWorkspace {
  VectorX<Dual> t_x, t_p, t_out, t_xdot;
  Eigen::MatrixXd unit, zero;  ///< seeds of the Jacobians taken through block tangents
  Eigen::MatrixXd rate_unit;   ///< the x-dot seeds of residual_columns through block tangents
  Eigen::VectorXd xdot;         ///< the rates, and their tangents, of running_cost_tangents
  Eigen::MatrixXd xdot_tangents;
};

/// Tangent of f_mode: writes f_t dt + f_x dx + f_p dp into `tangent` (n_x).
void rhs_tangent(const Problem& problem, int mode, double t, In<double> x, In<double> p,
                 double dt, In<double> dx, In<double> dp, Out<double> tangent,
                 TangentWorkspace& ws);

/// Tangents of f_mode in k directions: out.col(j) = f_x dx.col(j) + f_p dp.col(j) (dx and out
/// n_x x k, dp n_p x k), from one evaluation per kTangentBlock directions when the mode has block
/// tangents (Problem::set_block_tangents; a lone last direction, k = 4 m + 1, by rhs_tangent: a
/// block costs all its lanes however few are seeded), else from one rhs_tangent per direction.
void rhs_tangents(const Problem& problem, int mode, double t, In<double> x, In<double> p,
                  const Eigen::Ref<const Eigen::MatrixXd>& dx, const Eigen::Ref<const Eigen::MatrixXd>& dp,
                  Eigen::Ref<Eigen::MatrixXd> out, TangentWorkspace& ws);

/// Tangent of the guard of `event`: r_t dt + r_x dx + r_p dp.
double guard_tangent(const Problem& problem, int event, double t, In<double> x, In<double> p,
                     double dt, In<double> dx, In<double> dp, TangentWorkspace& ws);
/// Tangent of the guard of `event` at a point with rates, whichever form the guard has:
/// r_t dt + r_x dx + r_xdot dxdot + r_p dp (r_xdot = 0 for a guard r(t, x, p)).
double guard_tangent(const Problem& problem, int event, double t, In<double> x, In<double> xdot, In<double> p,
                     double dt, In<double> dx, In<double> dxdot, In<double> dp, TangentWorkspace& ws);

/// Tangent of the jump of `event` (identity if the event has no jump):
/// phi_t dt + phi_x dx + phi_p dp.
void jump_tangent(const Problem& problem, int event, double t, In<double> x, In<double> p,
                  double dt, In<double> dx, In<double> dp, Out<double> tangent,
                  TangentWorkspace& ws);

/// Running-cost integrand g(t, x, f_mode(t, x, p), p) of cost `cost` (0 if it has none).
double running_cost(const Problem& problem, int cost, int mode, double t, In<double> x,
                    In<double> p);

/// Tangent of the running-cost integrand, including the dependence through x-dot.
double running_cost_tangent(const Problem& problem, int cost, int mode, double t, In<double> x,
                            In<double> p, double dt, In<double> dx, In<double> dp,
                            TangentWorkspace& ws);

/// Tangents of every cost's running integrand at once (0 for costs without one), with one
/// evaluation of the mode's right-hand side: `tangents` has n_c entries.
void running_cost_tangents(const Problem& problem, int mode, double t, In<double> x,
                           In<double> p, double dt, In<double> dx, In<double> dp,
                           Out<double> tangents, TangentWorkspace& ws);

/// The same in k directions at once: tangents.col(j) along (dx.col(j), dp.col(j)) (n_c x k).
/// When the costs read the rates and the mode has block tangents, the rates' tangents come from
/// rhs_tangents and each integrand alone is evaluated per direction. `rates`, when given, is the
/// mode's right-hand side at (t, x) that the caller already holds (n_x), used instead of a new
/// evaluation.
void running_cost_tangents(const Problem& problem, int mode, double t, In<double> x, In<double> p,
                           const Eigen::Ref<const Eigen::MatrixXd>& dx, const Eigen::Ref<const Eigen::MatrixXd>& dp,
                           Eigen::Ref<Eigen::MatrixXd> tangents, TangentWorkspace& ws,
                           const Eigen::VectorXd* rates = nullptr);

/// Terminal cost w(t, x, p) (0 if the cost has none) and its tangent w_t dt + w_x dx + w_p dp.
double terminal_cost(const Problem& problem, int cost, double t, In<double> x, In<double> p);
double terminal_cost_tangent(const Problem& problem, int cost, double t, In<double> x, In<double> p,
                             double dt, In<double> dx, In<double> dp, TangentWorkspace& ws);

/// The point terms of `cost` for a firing of `event` at (t, x-, p), summed (0 if none;
/// Cost::has_terms_for), and their tangent c_t dt + c_x dx + c_p dp.
double event_cost(const Problem& problem, int cost, int event, double t, In<double> x, In<double> p);
double event_cost_tangent(const Problem& problem, int cost, int event, double t, In<double> x, In<double> p,
                          double dt, In<double> dx, In<double> dp, TangentWorkspace& ws);

/// Named outputs y = h(t, x, p) (Problem::outputs, n_y entries) and their tangent
/// h_t dt + h_x dx + h_p dp. The problem must have outputs.
void output_values(const Problem& problem, double t, In<double> x, In<double> p, Out<double> y);
void output_tangent(const Problem& problem, double t, In<double> x, In<double> p, double dt, In<double> dx,
                    In<double> dp, Out<double> tangent, TangentWorkspace& ws);

/// Initial state x0(p) and its sensitivity dx0/dp (n_x x n_p).
Eigen::VectorXd initial_state(const Problem& problem, In<double> p);
Eigen::MatrixXd initial_state_jacobian(const Problem& problem, In<double> p);

/// Dense f_x (n_x x n_x) of a mode: analytic if the mode has it, else n_x AD tangents (in blocks
/// when the mode has block tangents).
void rhs_state_jacobian(const Problem& problem, int mode, double t, In<double> x, In<double> p,
                        Eigen::Ref<Eigen::MatrixXd> fx, TangentWorkspace& ws);

/// Dense f_x (n_x x n_x) and f_p (n_x x n_p) of a mode: analytic if the mode has them, else AD.
void rhs_jacobians(const Problem& problem, int mode, double t, In<double> x, In<double> p,
                   Eigen::Ref<Eigen::MatrixXd> fx, Eigen::Ref<Eigen::MatrixXd> fp,
                   TangentWorkspace& ws);

}  // namespace saltus
