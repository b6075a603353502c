#pragma once
// Implicit transitions into an index-2 mode (theory/hybrid-dae.md section 4, [002 (16)];
// docs/dae.md, "Implicit transitions"). The mode's completion C(t, x_guess, p) = (x, x-dot)
// (Problem::set_completion) projects the differential states y onto its n_c constraints k = 0
// and solves the hidden ones; the state after the event is x+ = C(t, y+, p) for a y+ on the
// constraints, so the transition gives n_T = n_y - n_c equations, the constraints the others.
// Saltus does not see k: "y+ lies on the constraints" reads y+ = C_y(t, y+, p), n_y equations
// of rank n_c (C_y is a projection there). The system
//     R(y) = [ T(t, C(y), C-dot(y), x-, x-dot-, p)   (n_T rows) ;
//              y - C_y(t, y, p)                       (n_y rows) ] = 0
// is overdetermined but consistent; Gauss-Newton (least squares by QR) converges to its zero
// quadratically, and its Jacobian J (n_T + n_y) x n_y has full column rank exactly when the
// transition and the constraints determine y+ (theory's condition on [T_y+; k_y]).
// n_c is the rank of I - P, P = dC_y/dy at the completed state before the event: P is a
// projection, so n_T = trace P, rounded.
// Tangent of the map Phi along (dt, dx-, dx-dot-, dp): J dy = -b with b the tangent of R at
// dy = 0 (through C's tangent in t and p), then dx+ = C's tangent along (dt, dy, dp).
#include <saltus/solvers/dae_transfer.hpp>

#include <Eigen/QR>

#include <optional>
#include <vector>

namespace saltus::detail {

/// One firing of an event with an implicit transition into an index-2 mode.
class Index2Transition {
 public:
  /// `before` is the consistent point before the event (in the old mode). Throws InputError if
  /// the mode after the event has no completion or the completion is not a projection there.
  Index2Transition(const Problem& problem, int event, int mode_after, double t, const ConsistentPoint& before,
                   In<double> p, TangentWorkspace& ws);

  /// The consistent point after the event: Gauss-Newton on R from the completed state before.
  /// Throws InputError when J is rank-deficient at the start or the iteration does not converge,
  /// ModelError when T or the completion is not finite or T writes more than n_T equations.
  ConsistentPoint solve();
  /// The same in complex arithmetic at a possibly complex time: the real parts by solve(), the
  /// imaginary parts by Newton with the real J.
  ComplexConsistentPoint solve_complex(Complex t, const ComplexConsistentPoint& before, const VectorX<Complex>& p);
  /// dx+ (n_x) along (dt, dx-, dx-dot-, dp) at the solution `after` (the same point in every
  /// call: J is factored at the first).
  Eigen::VectorXd tangent(const ConsistentPoint& after, double dt, In<double> dx_minus, In<double> dxdot_minus,
                          In<double> dp);

  /// n_T = n_y - n_c, the equations T gives.
  Eigen::Index equations() const { return n_t_; }

 private:
  Eigen::VectorXd with_differential(const Eigen::VectorXd& y) const;
  ConsistentPoint complete(const Eigen::VectorXd& y) const;
  Eigen::VectorXd residual(const Eigen::VectorXd& y) const;
  /// J at y, factored; throws InputError if its column rank is below n_y.
  Eigen::ColPivHouseholderQR<Eigen::MatrixXd> factor(const Eigen::VectorXd& y) const;
  /// The rows of T for a point after the event, n_T of them (n_y written by the model, the rest
  /// checked untouched).
  Eigen::VectorXd transition_rows(const ConsistentPoint& after) const;
  const std::string& event_name() const;

  const Problem& pb_;
  int event_;
  int mode_after_;
  double t_;
  const ConsistentPoint& before_;
  In<double> p_;
  TangentWorkspace& ws_;
  std::vector<int> differential_;
  Eigen::Index nx_, ny_, n_t_ = 0;
  Eigen::VectorXd start_;  ///< the completed state before the event: x-'s projection in the new mode
  std::optional<Eigen::ColPivHouseholderQR<Eigen::MatrixXd>> qr_;  ///< J at the solution, for tangent()
};

}  // namespace saltus::detail
