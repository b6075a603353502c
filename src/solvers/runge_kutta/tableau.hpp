#pragma once
// The Butcher tableau of a Runge-Kutta pair, explicit or diagonally implicit, as data: the
// discrete runs (discrete_run.hpp) step, differentiate and transpose any tableau given this way.
//
//   Y_i = z_i + h a_ii K_i,  z_i = x_n + h sum_{j<i} a_ij K_j,  K_i = f(t_n + c_i h, Y_i, p)
//   x_{n+1} = x_n + h sum_i b_i K_i                  (the propagated solution)
//   err     = h sum_i e_i K_i                        (e = b - b_hat, the embedded estimate)
//   u(t_n + theta h) = x_n + h sum_i w_i(theta) K_i  (the continuous extension, if given;
//                                                     otherwise the cubic Hermite interpolant)
// An implicit stage (a_ii != 0) is solved by Newton's method to round-off, with K_i taken as
// (Y_i - z_i) / (h a_ii); its error estimate is filtered by (I - h a_ii J)^-1 (Hairer and Wanner,
// Solving ODEs II, IV.8), so that stiff components do not reject every step.
//
// A Rosenbrock method (`rosenbrock`) solves linear systems with J = f_x(t_n, x_n) instead, in
// the form of Hairer and Wanner (Solving ODEs II, IV.7) with K_i = U_i / h:
//   Y_i = x_n + h sum_{j<i} a_ij K_j,  F_i = f(t_n + c_i h, Y_i, p)
//   (I - h gamma J) K_i = gamma (F_i + sum_{j<i} C_ij K_j + h gamma_i f_t(t_n, x_n, p))
// and the same propagation, error estimate (unfiltered) and cubic Hermite dense output.
#include <Eigen/Core>

#include <vector>

namespace saltus::detail {

struct RungeKuttaTableau {
  const char* name = "";
  int order = 0;        ///< order of the propagated solution
  int error_order = 0;  ///< order of the embedded one (the step controller uses min of the two + 1)
  int stages = 0;       ///< s
  /// Stages whose slopes the propagated solution reads (b_i != 0 or a later a_ki != 0 among
  /// them): the step map, its tangent and its transpose use K_1..K_{map_stages} only. The
  /// remaining stages serve the error estimate and the dense output.
  int map_stages = 0;
  /// First same as last: the last stage is evaluated at (t_n + h, x_{n+1}) and is the next
  /// step's first stage.
  bool fsal = false;
  Eigen::VectorXd c;  ///< s
  Eigen::MatrixXd a;  ///< s x s, lower triangular (the diagonal zero for an explicit pair)
  Eigen::VectorXd b;  ///< s
  Eigen::VectorXd e;  ///< s, b - b_hat
  /// w_i(theta) and dw_i/dtheta of the continuous extension (s entries each), theta in [0, 1];
  /// null: outputs use the cubic Hermite interpolant of x and f at the step's ends.
  void (*dense_weights)(double theta, Eigen::Ref<Eigen::VectorXd> w, Eigen::Ref<Eigen::VectorXd> dw) = nullptr;
  /// Rosenbrock: the linear systems' gamma, the stage coupling C_ij (strictly lower) and the
  /// weights gamma_i of h f_t.
  bool rosenbrock = false;
  double gamma = 0.0;
  Eigen::MatrixXd coupling;
  Eigen::VectorXd time_weights;
  /// Whether stage i is implicit (diagonally implicit pairs).
  bool implicit_stage(int i) const { return a(i, i) != 0.0; }
  bool implicit() const { return a.diagonal().cwiseAbs().maxCoeff() != 0.0; }
  /// Whether a step factors I - h gamma J: implicit stages or a Rosenbrock method.
  bool factors_jacobian() const { return rosenbrock || implicit(); }
  /// The gamma of that matrix.
  double matrix_gamma() const { return rosenbrock ? gamma : a(0, 0); }
};

/// Dormand and Prince's 5(4) pair (FSAL, 7 stages) with the fourth-order continuous extension of
/// Hairer, Norsett and Wanner's DOPRI5 (Solving ODEs I, section II.6).
const RungeKuttaTableau& dormand_prince();

/// Hairer and Wanner's L-stable SDIRK of order 4 with an embedded order-3 solution (5 stages,
/// gamma = 1/4, stiffly accurate; Solving ODEs II, IV.6, Table 6.5).
const RungeKuttaTableau& sdirk4();

/// Sandu et al.'s RODAS3: a stiffly accurate, L-stable Rosenbrock method of order 3 with an
/// embedded order-2 solution (4 stages, gamma = 1/2; Atmos. Environ. 31 (1997) 3459).
const RungeKuttaTableau& rodas3();

}  // namespace saltus::detail
