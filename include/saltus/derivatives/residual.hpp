#pragma once
// A mode's dynamics as a residual, whatever way the mode was written (docs/dae.md):
//   F(t, x, xdot, p) = the mode's residual (Problem::add_residual_mode), or xdot - f(t, x, p)
//   for an explicit mode,
// with its values, tangents and the dense matrices the DAE integrator and the event transfer
// need. Shapes: x, xdot have n_x entries, p has n_p; F has n_x entries. Derivatives come from
// forward-mode AD, one tangent per column, or one evaluation per block of columns where the
// mode has block tangents (residual_tangents).
#include <saltus/core/problem.hpp>
#include <saltus/derivatives/tangent.hpp>

namespace saltus {

/// F(t, x, xdot, p) of `mode` into `residual` (n_x).
void mode_residual(const Problem& problem, int mode, double t, In<double> x, In<double> xdot, In<double> p,
                   Out<double> residual, TangentWorkspace& ws);

/// F in complex arithmetic (complex-step runs; t is complex at a complex event time).
void mode_residual(const Problem& problem, int mode, Complex t, const VectorX<Complex>& x, const VectorX<Complex>& xdot,
                   const VectorX<Complex>& p, VectorX<Complex>& residual);

/// Tangent F_t dt + F_x dx + F_xdot dxdot + F_p dp of `mode` into `tangent` (n_x).
void residual_tangent(const Problem& problem, int mode, double t, In<double> x, In<double> xdot, In<double> p,
                      double dt, In<double> dx, In<double> dxdot, In<double> dp, Out<double> tangent,
                      TangentWorkspace& ws);

/// Tangents F_x dx.col(j) + F_xdot dxdot.col(j) + F_p dp.col(j) of `mode` at (t, x, xdot, p), t
/// held, into out.col(j) (dx, dxdot, out: n_x x k; dp: n_p x k): one evaluation per
/// kTangentBlock directions where the mode has block tangents (Problem::set_block_residual_tangents,
/// or an explicit mode's set_block_tangents; a lone last direction by residual_tangent), else
/// residual_tangent per direction.
void residual_tangents(const Problem& problem, int mode, double t, In<double> x, In<double> xdot, In<double> p,
                       const Eigen::Ref<const Eigen::MatrixXd>& dx, const Eigen::Ref<const Eigen::MatrixXd>& dxdot,
                       const Eigen::Ref<const Eigen::MatrixXd>& dp, Eigen::Ref<Eigen::MatrixXd> out,
                       TangentWorkspace& ws);

/// Whether residual_tangents evaluates `mode` once per block of directions.
bool has_block_residual_tangents(const Mode& mode);

/// The n_x x n_x matrix whose column i is x_weight[i] F_x e_i + xdot_weight[i] F_xdot e_i.
/// IDAS's iteration matrix F_x + c_j F_xdot has weights (1, c_j); the index-1 matrix
/// [F_ydot | F_z] has (0, 1) for differential and (1, 0) for algebraic states
/// (index1_weights).
void residual_columns(const Problem& problem, int mode, double t, In<double> x, In<double> xdot, In<double> p,
                      In<double> x_weight, In<double> xdot_weight, Eigen::Ref<Eigen::MatrixXd> matrix,
                      TangentWorkspace& ws);

/// The tangent of an index-2 mode's completion (Problem::set_completion): the directional
/// derivatives of its x and x-dot along (dt, dx_guess, dp), into x_tangent and xdot_tangent (n_x).
void completion_tangent(const Problem& problem, int mode, double t, In<double> x_guess, In<double> p, double dt,
                        In<double> dx_guess, In<double> dp, Out<double> x_tangent, Out<double> xdot_tangent,
                        TangentWorkspace& ws);

/// completion_tangent in k directions (t held): x_tangents.col(j), xdot_tangents.col(j) along
/// (dx_guess.col(j), dp.col(j)); dx_guess and the outputs are n_x x k, dp is n_p x k. One
/// evaluation per kTangentBlock directions where the mode has block completion tangents
/// (Problem::set_block_completion_tangents), else completion_tangent per direction.
void completion_tangents(const Problem& problem, int mode, double t, In<double> x_guess, In<double> p,
                         const Eigen::Ref<const Eigen::MatrixXd>& dx_guess, const Eigen::Ref<const Eigen::MatrixXd>& dp,
                         Eigen::Ref<Eigen::MatrixXd> x_tangents, Eigen::Ref<Eigen::MatrixXd> xdot_tangents,
                         TangentWorkspace& ws);

/// T(t, x+, x-dot+, x-, x-dot-, p) of the implicit transition of `event` into `residual` (n_y);
/// the algebraic entries of the rates are set to zero first.
void transition_residual(const Problem& problem, int event, double t, In<double> x_plus, In<double> xdot_plus,
                         In<double> x_minus, In<double> xdot_minus, In<double> p, Out<double> residual);
/// T in complex arithmetic (complex-step runs).
void transition_residual(const Problem& problem, int event, Complex t, const VectorX<Complex>& x_plus,
                         const VectorX<Complex>& xdot_plus, const VectorX<Complex>& x_minus,
                         const VectorX<Complex>& xdot_minus, const VectorX<Complex>& p, VectorX<Complex>& residual);

/// The arguments of a transition's tangent: the point and one direction in each argument.
struct TransitionPoint {
  double t;
  In<double> x_plus, xdot_plus, x_minus, xdot_minus, p;
};
struct TransitionDirection {
  double t;
  In<double> x_plus, xdot_plus, x_minus, xdot_minus, p;
};
/// The tangent of T along `d` at `at` into `tangent` (n_y); rates of algebraic states count as
/// zero in both.
void transition_tangent(const Problem& problem, int event, const TransitionPoint& at, const TransitionDirection& d,
                        Out<double> tangent);

/// F_p (n_x x n_p).
void residual_parameter_jacobian(const Problem& problem, int mode, double t, In<double> x, In<double> xdot,
                                 In<double> p, Eigen::Ref<Eigen::MatrixXd> fp, TangentWorkspace& ws);

/// The column weights of [F_ydot | F_z] for residual_columns: (x_weight, xdot_weight) with 1 on
/// the algebraic (respectively differential) states.
struct Index1Weights {
  Eigen::VectorXd x_weight, xdot_weight;
};
Index1Weights index1_weights(const Problem& problem);

/// Every cost's running integrand g(t, x, xdot, p) with xdot given (n_c; 0 for costs without
/// one): for residual modes, where xdot comes from the integrator.
void running_costs_at_rate(const Problem& problem, double t, In<double> x, In<double> xdot, In<double> p,
                           Out<double> values);

/// Their tangents g_t dt + g_x dx + g_xdot dxdot + g_p dp (n_c).
void running_cost_tangents_at_rate(const Problem& problem, double t, In<double> x, In<double> xdot,
                                   In<double> p, double dt, In<double> dx, In<double> dxdot, In<double> dp,
                                   Out<double> tangents, TangentWorkspace& ws);

}  // namespace saltus
