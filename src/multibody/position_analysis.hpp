#pragma once
// Position and velocity analysis with independent coordinates u = B q (B selects f = n - m
// coordinates): A = [Phi_q; B] is the square matrix of multibody.md section 7.
//
// Positions are found by Newton's method in double; for the other scalar types one more Newton
// step is taken in that type from the converged double solution q*. That step is
//   q = q* - A(q*)^-1 [Phi(t, q*, p); B q* - u],
// whose derivative with respect to (t, u, p) is exactly the implicit-function derivative
// -A^-1 [Phi_t, -I, Phi_p] (the residual at q* is at round-off), so sensitivities, complex
// steps and adjoints see the exact constraint manifold including parameter-dependent lengths.
#include <saltus/core/error.hpp>
#include <saltus/core/hyper_dual.hpp>
#include <saltus/multibody/dynamics.hpp>

#include <fmt/format.h>

#include <string>
#include <type_traits>
#include <vector>

namespace saltus::multibody::detail {

/// The independent coordinates of a model (indices into q, in increasing order).
struct Partition {
  std::vector<int> independent;
  int n = 0;
  int f() const { return static_cast<int>(independent.size()); }
  /// Position of coordinate k among the independent ones, or -1.
  int slot(int k) const;
};

/// `model.independent` if given (checked), else the columns that a fully pivoted LU of Phi_q at
/// the initial guess leaves out. Throws InputError if the count is not n - m.
Partition choose_partition(const Model& model, const Eigen::VectorXd& p);

/// The spatial joint rows (indices among the joints' rows) that depend on the rows before them
/// at the initial positions, p: the element rows and the normalizations first, then the joints'
/// rows in order, each kept if it adds to the rank (Gram-Schmidt, relative tolerance
/// kRedundantRowTolerance). A closed loop of revolute joints with parallel axes has 3 such rows.
std::vector<int> find_redundant_joint_rows(const Model& model, const Eigen::VectorXd& p);

/// A row whose part orthogonal to the rows kept before it is below this fraction of its norm
/// depends on them.
inline constexpr double kRedundantRowTolerance = 1e-9;

/// Each rotational driver's row sin(theta - f) also vanishes at theta = f + pi: the assembled
/// start must be on the driven branch, cos(theta - f(t0)) > 0, else an InputError names it.
void check_drivers_on_their_branch(const Model& model, const MotionState<double>& start, const Eigen::VectorXd& p);

/// Throws InputError if a row left out as redundant does not hold at the assembled start (the
/// joints conflict rather than repeat each other).
void check_redundant_rows_hold(const Model& model, const MotionState<double>& start, const Eigen::VectorXd& p);

/// `model` with its redundant joint rows found and left out (Model::redundant_joint_rows).
Model with_redundant_joint_rows_left_out(const Model& model, const Eigen::VectorXd& p);

/// The independent coordinates a fully pivoted LU of the constraint Jacobian leaves out of its
/// pivot columns (its largest pivots make the dependent set); fewer than n - m if it is rank
/// deficient. Pivots within 1e-9 (relative) of the largest go to the lowest column, then row: the choice does
/// not change with the last bits of `jac` (a configuration computed in double or in Dual).
Partition pivot_partition(const Eigen::MatrixXd& jac);

/// The largest mean squared gain |dq/du|_F^2 / f an independent set may reach before Saltus
/// takes another (Maggi's re-partitioning, the partitioning impact law): beyond it the dependent
/// coordinates move, rms, more than ten times faster than the independent ones.
inline constexpr double kRepartitionGain = 100.0;

/// |R|_F^2 / f for R = dq/du = [Phi_q; B]^-1 [0; I] of set `part` at constraint Jacobian `jac`;
/// infinity where [Phi_q; B] is singular.
double partition_gain(const Partition& part, const Eigen::MatrixXd& jac);

/// The best-conditioned independent set that keeps the coordinates `keep` independent: the
/// pivot columns of a fully pivoted LU of Phi_q without those columns are the dependent set.
/// Fewer than n - m independent coordinates if that is rank deficient.
Partition pivot_partition_keeping(const Eigen::MatrixXd& jac, const std::vector<int>& keep);

/// The independent set for completing configuration q at time t (index3's completion,
/// formulations.hpp): `preferred` while its partition_gain there is within kRepartitionGain,
/// else pivot_partition of Phi_q there (`preferred` again at a singular configuration). A
/// function of the configuration alone, so that every evaluation at a point (the forward run's,
/// the adjoint's recomputations and Jacobians) completes it the same way. Each thread remembers
/// its last answer with the Phi_q it came from: a completion's Jacobian asks at one point once
/// per direction.
Partition completion_partition(const Model& model, const Partition& preferred, double t, const Eigen::VectorXd& q,
                               const Eigen::VectorXd& p);

/// [Phi_q; B] for a constraint Jacobian.
template <class S>
SparseMat<S> augmented_jacobian(const Partition& part, const SparseMat<S>& jac) {
  SparseRowStack<S> A(part.n, static_cast<int>(jac.rows()) + part.f());
  A.push(jac);
  for (int j = 0; j < part.f(); ++j) {
    RowJacobian<S> unit;
    unit.add(part.independent[static_cast<size_t>(j)], S(1.0));
    A.push(unit);
  }
  return A.matrix();
}
inline Eigen::MatrixXd augmented_jacobian(const Partition& part, const Eigen::MatrixXd& jac) {
  Eigen::MatrixXd A = Eigen::MatrixXd::Zero(jac.rows() + part.f(), part.n);
  A.topRows(jac.rows()) = jac;
  for (int j = 0; j < part.f(); ++j) A(jac.rows() + j, part.independent[static_cast<size_t>(j)]) = 1.0;
  return A;
}

/// X = [Phi_q; B]^-1 rhs: sparse (KLU) from kSparseSolveMinRows rows, assembled straight into a
/// dense matrix below.
template <class S, class Rhs>
MatX<S> solve_augmented(const Partition& part, const SparseMat<S>& jac, const Rhs& rhs, const char* what) {
  if (part.n >= kSparseSolveMinRows) return solve_sparse<S>(augmented_jacobian(part, jac), rhs, what);
  MatX<S> A = MatX<S>::Zero(jac.rows() + part.f(), part.n);
  for (int i = 0; i < jac.outerSize(); ++i) {
    for (typename SparseMat<S>::InnerIterator it(jac, i); it; ++it) A(i, it.col()) += it.value();
  }
  for (int j = 0; j < part.f(); ++j) A(jac.rows() + j, part.independent[static_cast<size_t>(j)]) = S(1.0);
  return solve_dense<S>(A, rhs, what);
}

template <class S>
VectorX<S> select(const Partition& part, const VectorX<S>& q) {
  VectorX<S> u(part.f());
  for (int j = 0; j < part.f(); ++j) u[j] = q[part.independent[static_cast<size_t>(j)]];
  return u;
}

/// Newton solve of Phi(t, q, p) = 0, B q = u from `guess` (double). Throws ModelError with the
/// residual and the independent coordinates if it does not converge.
Eigen::VectorXd solve_positions(const Model& model, const Partition& part, double t,
                                const Eigen::VectorXd& u, const Eigen::VectorXd& p,
                                const Eigen::VectorXd& guess, const FormulationSettings& settings);

/// One Newton step in S from the converged q* (see the file comment).
template <class S>
VectorX<S> refine_positions(const Model& model, const Partition& part, const S& t,
                            const VectorX<S>& u, In<S> p, const Eigen::VectorXd& q_star) {
  MotionState<S> st{t, q_star.cast<S>(), VectorX<S>::Zero(part.n)};
  // One Newton step from the solution carries the first derivatives exactly; second
  // derivatives (HyperDual) need a second step, from the first one's result.
  const int steps = std::is_same_v<S, saltus::HyperDual> ? 2 : 1;
  for (int step = 0; step < steps; ++step) {
    const ConstraintSet<S> c = constraints(model, st, p);
    VectorX<S> residual(c.phi.size() + part.f());
    residual << c.phi, select(part, st.q) - u;
    st.q -= solve_augmented<S>(part, c.jac, residual, "position-analysis matrix [Phi_q; B]");
  }
  return st.q;
}

/// v with B v = u-dot and Phi_q v + Phi_t = 0, at the positions in `st` (st.v is ignored).
template <class S>
VectorX<S> velocities_from_independent(const Model& model, const Partition& part,
                                       const MotionState<S>& st, const VectorX<S>& u_dot, In<S> p) {
  MotionState<S> at_rest{st.t, st.q, VectorX<S>::Zero(part.n)};
  const ConstraintSet<S> c = constraints(model, at_rest, p);
  VectorX<S> rhs(c.phi.size() + part.f());
  rhs << -c.phi_t, u_dot;
  return solve_augmented<S>(part, c.jac, rhs, "velocity-analysis matrix [Phi_q; B]");
}

}  // namespace saltus::multibody::detail
