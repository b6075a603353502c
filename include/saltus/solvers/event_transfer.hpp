#pragma once
// The event transfer of a hybrid ODE (theory/hybrid-ode.md sections 4, 6 and 8): what happens
// to the state, the sensitivities, the adjoint and the complex-step state when event k fires at
// time t_e. Pure functions of the values around the event and their derivatives, whatever
// integrator produced them: simulation, forward sensitivities, the adjoint's backward pass and
// the complex-step run all use these, so the event maps are written once.
//
// Notation (one event, k, from mode m- to mode m+):
//   x- = x(t_e-), x+ = phi(t_e, x-, p) (x- if the event has no jump), f- = f_{m-}(t_e, x-, p),
//   f+ = f_{m+}(t_e, x+, p), r-dot- = r_t + r_x f- (the crossing speed, non-zero),
//   c_e = phi_x f- + phi_t - f+ (the reset defect), g- - g+ per cost (the running-cost jump).
// A cost may add a point term c(t_e, x-, p) at each firing (Problem::add_event_cost; theory
// section 5.3); c-dot- = c_t + c_x f- is its rate along the motion.
// Forward (S = dx/dp, n_x x n_p):
//   tau_j = -(r_x S-_j + r_p e_j) / r-dot-,   S+_j = phi_x S-_j + phi_p e_j + c_e tau_j,
//   d(integral of g)/dp_j += (g- - g+) tau_j,  d psi/dp_j += c_x (S-_j + f- tau_j) + c_p e_j + c_t tau_j.
// Adjoint (lambda, n_x x n_c, one column per cost), its transpose:
//   kappa_c = c_e . lambda+_c + (g- - g+)_c + c-dot-_c,
//   lambda-_c = phi_x^T lambda+_c + tau_x^T kappa_c + c_x^T,
//   grad_c += phi_p^T lambda+_c + kappa_c tau_p + c_p,
//   with tau_x = -r_x / r-dot-, tau_p = -r_p / r-dot-.
// A DAE guard may read rates, r(t, x, x-dot, p): then r-dot- = r_t + r_x f- + r_xdot x-ddot-,
// tau_j gains -r_xdot S-dot-_j / r-dot-, and the adjoint gives the coefficients tau_xdot^T kappa
// of S-dot- besides lambda- (theory/hybrid-dae.md section 2, (6b)).
// Complex step: the event time is complex, t_e + dt_c with dt_c = -r(t_e, x-) / r-dot-, and the
// state is carried through it: x+ = x_hat+ - f+ dt_c, x_hat+ = phi(t_e + dt_c, x- + f- dt_c);
// a point cost is c(t_e + dt_c, x- + f- dt_c, p).
#include <saltus/core/problem.hpp>
#include <saltus/derivatives/tangent.hpp>
#include <saltus/solvers/solution.hpp>

#include <cmath>

namespace saltus {

/// Whether a crossing speed r-dot is tiny against its scale |r_t| + |r_x| |f| (or the scale is
/// zero): the motion then grazes the guard, and the event time has no derivative.
inline bool is_grazing(double rate, double scale, double tolerance) {
  return !(std::abs(rate) > tolerance * scale) || scale == 0.0;
}

/// The values around one firing of an event (see the notation above).
struct EventValues {
  int event = -1;
  int mode_before = 0;
  int mode_after = 0;
  double time = 0.0;           ///< t_e [s]
  Eigen::VectorXd x_minus;     ///< x(t_e-), n_x
  Eigen::VectorXd x_plus;      ///< x(t_e+), n_x
  /// x-dot(t_e-), n_x: f_{m-}(t_e, x-, p), or a DAE mode's consistent rate (dae_transfer.hpp)
  Eigen::VectorXd f_minus;
  /// x-dot(t_e+), n_x: f_{m+}(t_e, x+, p), or the consistent rate after the event
  Eigen::VectorXd f_plus;
  /// x-ddot(t_e-), n_x, for a guard that reads rates (dae_transfer.hpp, state_accelerations);
  /// empty otherwise.
  Eigen::VectorXd xddot_minus;
  double guard_rate = 0.0;     ///< r-dot- = r_t + r_x f- (+ r_xdot x-ddot- for a guard reading rates)
  /// |r_t| + |r_x| |f-|: a crossing speed tiny against it means the motion grazes the guard.
  double guard_rate_scale = 0.0;

  bool grazing(double tolerance) const { return is_grazing(guard_rate, guard_rate_scale, tolerance); }
};

/// Fires event `event` at (t, x-) in `mode_before`: applies its jump (the identity if it has
/// none) and evaluates f- and f+ and the guard's crossing speed. Throws ModelError if x+ is not
/// finite.
EventValues fire_event(const Problem& problem, int event, int mode_before, double t, In<double> x_minus,
                       In<double> p, TangentWorkspace& ws);

/// The values a record holds (event, modes, time, x-, x+, the crossing speed and its scale),
/// without the rates f- and f+.
EventValues recorded_values(const EventRecord& record);

/// The values of a recorded firing (x-, x+, the crossing speed and its scale from the record):
/// evaluates f- and f+ only.
EventValues recorded_event(const Problem& problem, const EventRecord& record, In<double> p);

/// Throws GrazingError if the event grazes its guard (the event time then has no derivative):
/// `consequence` ends the message ("no sensitivity exists").
void require_transversal(const Problem& problem, const EventValues& event, double grazing_tolerance,
                         const char* consequence);

/// The Jacobians of an event's map x+ = phi(t, x-, p) when the event gives no jump to
/// differentiate directly: a DAE's implicit transition (src/solvers/implicit_transition.hpp). With one, the
/// functions below use it in place of the jump's derivatives.
struct JumpLinearization {
  Eigen::MatrixXd x;  ///< phi_x, n_x x n_x
  Eigen::VectorXd t;  ///< phi_t, n_x
  Eigen::MatrixXd p;  ///< phi_p, n_x x n_p
};

/// c_e = phi_x f- + phi_t - f+ (n_x).
Eigen::VectorXd reset_defect(const Problem& problem, const EventValues& event, In<double> p,
                             TangentWorkspace& ws, const JumpLinearization* jump = nullptr);

/// g- - g+ for every cost (n_c; 0 for costs without a running part).
Eigen::VectorXd running_cost_jump(const Problem& problem, const EventValues& event, In<double> p);

/// c(t_e, x-, p) of every cost for this firing (n_c; 0 for costs without a point term for it):
/// add to the costs.
Eigen::VectorXd event_cost_values(const Problem& problem, const EventValues& event, In<double> p);

/// The forward transfer of sensitivities through one event.
struct SensitivityTransfer {
  Eigen::RowVectorXd tau;               ///< dt_e/dp, 1 x n_p
  Eigen::MatrixXd s_plus;               ///< S(t_e+), n_x x n_p
  /// (g- - g+) tau plus the point costs' derivatives, n_c x n_p: add to d cost/dp.
  Eigen::MatrixXd cost_integral_jump;
};
/// `s_dot_minus` (n_x x n_p): S-dot(t_e-), required when the guard reads rates (tau then reads
/// r_xdot S-dot-).
SensitivityTransfer transfer_sensitivities(const Problem& problem, const EventValues& event, In<double> p,
                                           const Eigen::MatrixXd& s_minus, TangentWorkspace& ws,
                                           const JumpLinearization* jump = nullptr,
                                           const Eigen::MatrixXd* s_dot_minus = nullptr);

/// The adjoint transfer through one event, backwards: lambda(t_e+) -> lambda(t_e-).
struct AdjointTransfer {
  Eigen::MatrixXd lambda_minus;   ///< lambda(t_e-), n_x x n_c
  /// For a guard that reads rates, the coefficients of S-dot(t_e-), n_x x n_c (tau_xdot^T
  /// kappa); empty otherwise. A DAE folds them into lambda- (consistent_adjoint).
  Eigen::MatrixXd rate_coefficients;
  Eigen::MatrixXd gradient;       ///< the event's contribution to d cost/dp, n_c x n_p
};
AdjointTransfer transfer_adjoint(const Problem& problem, const EventValues& event, In<double> p,
                                 const Eigen::MatrixXd& lambda_plus, TangentWorkspace& ws,
                                 const JumpLinearization* jump = nullptr);

/// The complex-step transfer (complex state xc-, complex parameters).
struct ComplexTransfer {
  Complex time;                        ///< t_e + dt_c
  VectorX<Complex> x_plus;             ///< the state after the event, carried back to t_e
  VectorX<Complex> cost_integral_jump; ///< (g- - g+) dt_c plus the point costs, n_c: add to the costs
};
/// `guard_rate` is r-dot- of the real parts (its O(h) imaginary part changes dt_c at O(h^2)).
/// dt_c = complex_time_shift(r_c, r-dot). Throws ModelError if the state after the jump is not
/// finite.
ComplexTransfer transfer_complex(const Problem& problem, int event, int mode_before, double t,
                                 const VectorX<Complex>& x_minus, const VectorX<Complex>& p, double guard_rate);
/// As above at a complex time t (a discrete run's step end, which moves with the parameters).
ComplexTransfer transfer_complex(const Problem& problem, int event, int mode_before, Complex t,
                                 const VectorX<Complex>& x_minus, const VectorX<Complex>& p, double guard_rate);

/// The complex event time's shift dt_c = -i Im(r_c) / r-dot: the real run fired the event at its
/// real time, so the shift is the guard's perturbation alone (the ODE complex step, and the DAE
/// one for an event after another at the same root). The real part of r_c is the real
/// run's guard there: round-off at a root, the level of a guard held in a band, or the value an
/// earlier jump at the same instant moved it to (a tie of a time event and a state event: a real
/// shift of -0.4 / r-dot there moved the complex run off the real one, d J/dk 6.24 for 8).
inline Complex complex_time_shift(Complex guard, double guard_rate) { return Complex(0.0, -guard.imag() / guard_rate); }

}  // namespace saltus
