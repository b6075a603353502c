#pragma once
// Consistent values of an index-1 hybrid DAE and its event transfer (theory/hybrid-dae.md
// sections 1 and 2; docs/dae.md). Pure functions of the values around a point, like
// event_transfer.hpp, which they build on.
//
// Notation: x = (y, z) with y the differential and z the algebraic states (in any order;
// Problem::is_algebraic), F(t, x, x-dot, p) = 0 the residual of the mode (mode_residual), and
//   M = [F_ydot | F_z],
// the n_x x n_x matrix whose columns are F_xdot e_i for differential and F_x e_i for algebraic
// states. Index 1 means M is nonsingular.
//   Consistent point: given y, solve F = 0 for (y-dot, z) by Newton with M.
//   Rates of the algebraic states: d/dt F = 0 gives M (y-ddot, z-dot) = -(F_t + F_x y-dot),
//   with y-dot the rates of the differential states only.
//   Sensitivities: given S_y, M (S-dot_y, S_z) = -(F_x S_y + F_p) (S_y: S with its algebraic
//   rows zeroed); the algebraic rows of S-dot are set to zero (they only seed the integrator's
//   predictor).
//   Events with an explicit reset y+ = phi_y(t, x-, p) (the algebraic entries of phi are only a
//   first guess for z+): the transfer of event_transfer.hpp applied with f- = x-dot(t_e-) and
//   f+ = x-dot(t_e+), then the consistent sensitivities above in the new mode. This is theory
//   section 2 with T = y+ - phi_y(t, y-, z-, p).
//   Events with an implicit transition (EventBuilder::transition): the same transfer with the
//   transition's map and its Jacobians (src/solvers/implicit_transition.hpp) in place of phi.
#include <saltus/core/problem.hpp>
#include <saltus/derivatives/tangent.hpp>
#include <saltus/solvers/event_transfer.hpp>

namespace saltus {

/// A point of a DAE mode where F(t, x, x-dot, p) = 0, with x-dot including the algebraic
/// states' rates z-dot.
struct ConsistentPoint {
  Eigen::VectorXd x;     ///< n_x
  Eigen::VectorXd xdot;  ///< n_x
};

/// The consistent point of `mode` at t through the differential states of `x_guess`: Newton on
/// (y-dot, z) from the guesses' algebraic entries and rates, then z-dot. `when` names the
/// occasion in errors ("at the start", "after event 'bounce'"). Throws InputError when M is
/// singular at the guess (the mode is not index 1 there) or Newton does not converge (no
/// consistent state near the guess), ModelError when F is not finite; each names the mode, the
/// time and the state.
ConsistentPoint consistent_point(const Problem& problem, int mode, double t, In<double> x_guess,
                                 In<double> xdot_guess, In<double> p, const std::string& when,
                                 TangentWorkspace& ws);

/// A consistent point in complex arithmetic (complex-step runs).
struct ComplexConsistentPoint {
  VectorX<Complex> x;     ///< n_x
  VectorX<Complex> xdot;  ///< n_x; the algebraic entries hold z-dot of the real parts (their
                          ///< imaginary parts enter the complex step only at O(h^2))
};

/// consistent_point in complex arithmetic at a possibly complex time: Newton on (y-dot, z) with
/// M at the real parts (the imaginary parts are O(h), so this converges to the complex solution
/// in a few more steps than the real one). Throws like consistent_point.
ComplexConsistentPoint consistent_point_complex(const Problem& problem, int mode, Complex t,
                                                const VectorX<Complex>& x_guess, const VectorX<Complex>& xdot_guess,
                                                const VectorX<Complex>& p, const std::string& when,
                                                TangentWorkspace& ws);

/// The rates of the algebraic states at a point where F = 0: returns x-dot with its algebraic
/// entries replaced by z-dot. Throws like consistent_point.
Eigen::VectorXd algebraic_rates(const Problem& problem, int mode, double t, In<double> x, In<double> xdot,
                                In<double> p, const std::string& when, TangentWorkspace& ws);

/// x-ddot at a consistent point: y-ddot from M (y-ddot, z-dot) = -(F_t + F_x y-dot), zero in
/// the algebraic entries. What a guard that reads rates needs for its crossing speed. Throws
/// InputError in an index-2 mode, like consistent_point where M is singular.
Eigen::VectorXd state_accelerations(const Problem& problem, int mode, double t, In<double> x, In<double> xdot,
                                    In<double> p, TangentWorkspace& ws);

/// Consistent sensitivities at a consistent point: `s` (n_x x n_p) keeps its differential rows
/// and receives S_z; `s_dot` (n_x x n_p) receives S-dot_y (zero algebraic rows).
void consistent_sensitivities(const Problem& problem, int mode, double t, const ConsistentPoint& point,
                              In<double> p, Eigen::MatrixXd& s, Eigen::MatrixXd& s_dot, TangentWorkspace& ws);

/// Fires event `event` from the consistent point `before` of `mode_before`: applies its reset
/// to the differential states, makes the state consistent in the new mode, and evaluates the
/// crossing speed r_t + r_x x-dot-. EventValues::f_minus / f_plus are the rates around the event.
EventValues fire_dae_event(const Problem& problem, int event, int mode_before, double t,
                           const ConsistentPoint& before, In<double> p, TangentWorkspace& ws);

/// The forward transfer through a DAE event (see the notation above): tau, S+ (consistent in the
/// new mode), the cost jumps, and S-dot+ (n_x x n_p). `s_dot_minus` (n_x x n_p, consistent with
/// s_minus) enters tau when the guard reads rates.
struct DaeSensitivityTransfer {
  SensitivityTransfer transfer;
  Eigen::MatrixXd s_dot_plus;
};
DaeSensitivityTransfer transfer_dae_sensitivities(const Problem& problem, const EventValues& event, In<double> p,
                                                  const Eigen::MatrixXd& s_minus, const Eigen::MatrixXd& s_dot_minus,
                                                  TangentWorkspace& ws);

/// The values of a recorded firing with the consistent rates around it (from the modes'
/// residuals at the recorded states): the adjoint's counterpart of recorded_event.
EventValues recorded_dae_event(const Problem& problem, const EventRecord& record, In<double> p,
                               TangentWorkspace& ws);

/// The dense first derivatives of a mode's residual and of the running costs at one point
/// (t, x, x-dot), for the adjoint (theory/hybrid-dae.md section 3):
struct ResidualLinearization {
  Eigen::MatrixXd f_x;     ///< F_x, n_x x n_x
  Eigen::MatrixXd f_xdot;  ///< F_xdot (E), n_x x n_x, zero columns for algebraic states
  Eigen::MatrixXd f_p;     ///< F_p, n_x x n_p
  Eigen::MatrixXd g_x;     ///< running costs' g_x, n_c x n_x
  Eigen::MatrixXd g_p;     ///< running costs' g_p, n_c x n_p
  /// M = [F_ydot | F_z] (columns of F_xdot for differential, of F_x for algebraic states).
  Eigen::MatrixXd index1_matrix(const Problem& problem) const;
  // Scratch directions, kept so that repeated linearizations do not allocate.
  Eigen::VectorXd ones, zeros_x, zeros_p, direction_x, direction_p, column;
};
/// All of it.
void linearize(const Problem& problem, int mode, double t, In<double> x, In<double> xdot, In<double> p,
               ResidualLinearization& out, TangentWorkspace& ws);
/// F_x and g_x only (the adjoint's residual and Jacobian; F_xdot is constant in a mode).
void linearize_states(const Problem& problem, int mode, double t, In<double> x, In<double> xdot, In<double> p,
                      ResidualLinearization& out, TangentWorkspace& ws);
/// F_p and g_p only (the gradient quadrature).
void linearize_parameters(const Problem& problem, int mode, double t, In<double> x, In<double> xdot,
                          In<double> p, ResidualLinearization& out, TangentWorkspace& ws);

/// The adjoint at a point of a mode from the coefficients `ell` (n_x) it must give the state
/// sensitivity there: psi gets ell^T S, with S consistent (S_z follows S_y). Solves
///     M^T mu = (0; ell_z),   M^T lambda = (ell_y - (F_x^T mu)_y; g_z^T),
/// so that lambda satisfies the algebraic adjoint equation F_z^T lambda = g_z^T and
/// (F_xdot^T lambda)_y carries ell through the algebraic states; `gradient` (n_p) receives
/// -F_p^T mu, the parameter part of that reduction. For the terminal condition ell = w_x; at an
/// event ell is what the transposed transfer gives for x(t_e-).
struct AdjointPoint {
  Eigen::VectorXd lambda;    ///< n_x
  Eigen::VectorXd gradient;  ///< n_p
};
AdjointPoint consistent_adjoint(const Problem& problem, const ResidualLinearization& lin, In<double> ell, In<double> g_x);
/// As above with coefficients `ell_rate` (n_x) of S-dot as well (an event whose guard reads
/// rates): psi gets ell^T S + ell_rate^T S-dot; ell_rate's differential entries join ell_z in
/// the right-hand side of the solve for mu (its algebraic entries are not read).
AdjointPoint consistent_adjoint(const Problem& problem, const ResidualLinearization& lin, In<double> ell,
                                In<double> ell_rate, In<double> g_x);

/// The adjoint's rate at a point where lambda is consistent: the solution of
/// F_xdot^T lambda-dot = F_x^T lambda - g_x^T on the differential components of lambda (rows of
/// F_xdot that are not zero); `lambda`'s other components receive the (round-off) correction
/// the same solve gives. For IDAS's backward initial values.
Eigen::VectorXd adjoint_rate(const ResidualLinearization& lin, Eigen::VectorXd& lambda, In<double> g_x);

}  // namespace saltus
