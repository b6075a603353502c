#pragma once
// Vector-Jacobian products of a problem's model functions by reverse-mode AD (saltus::Reverse).
//
// Each function records its model function once with saltus::Reverse scalars at the given
// point and sweeps the tape backwards for its weight vectors (all of them in one pass over the
// tape, ReverseTape::sweep with columns), so that lambda^T F_x and lambda^T F_p cost a few
// evaluations of F whatever the number of parameters. The adjoint of
// theory/hybrid-ode.md section 6 is built from these products; none of them forms f_p.
//
// The tape is per thread: every recording here clears it, and a generation counter tells
// cached recordings (AdjointRhs) when the tape they hold has been recycled.
#include <saltus/core/problem.hpp>

namespace saltus {

/// Gradient of a scalar function of (t, x, p): d/dt (1), d/dx (n_x), d/dp (n_p).
struct ScalarGradient {
  double t = 0.0;
  Eigen::RowVectorXd x;
  Eigen::RowVectorXd p;
};

/// Transposed products of a vector function F(t, x, p) with the columns of a weight matrix L:
/// t = L^T F_t (m), x = F_x^T L (n_x x m), p = F_p^T L (n_p x m).
struct TransposedProducts {
  Eigen::VectorXd t;
  Eigen::MatrixXd x;
  Eigen::MatrixXd p;
};

/// r_t, r_x, r_p of the guard of `event` at (t, x, p).
ScalarGradient guard_gradient(const Problem& problem, int event, double t, In<double> x,
                              In<double> p);

/// The gradient of a guard at a point with rates: r_t, r_x, r_p, and r_xdot (zero for a guard
/// r(t, x, p)).
struct GuardGradient {
  ScalarGradient state;    ///< r_t, r_x (1 x n_x), r_p (1 x n_p)
  Eigen::RowVectorXd xdot; ///< r_xdot, 1 x n_x
};
GuardGradient guard_gradient(const Problem& problem, int event, double t, In<double> x, In<double> xdot,
                             In<double> p);

/// Products of the jump phi of `event` (identity if it has none) at (t, x-, p) with the
/// columns of `weights` (n_x x m).
TransposedProducts jump_products(const Problem& problem, int event, double t, In<double> x,
                                 In<double> p, const Eigen::MatrixXd& weights);

/// Products of the completion of index-2 mode `mode` (Problem::set_completion) from the guess
/// (t, x_guess, p), its outputs stacked as (x, x-dot) (2 n_x), with the columns of `weights`
/// (2 n_x x m): x = [C_x; C_xdot,x]^T L over the guess, p likewise.
TransposedProducts completion_products(const Problem& problem, int mode, double t, In<double> x_guess,
                                       In<double> p, const Eigen::MatrixXd& weights);

/// w_t, w_x and w_p of the terminal part of `cost` at (tf, x(tf), p); zero if it has none.
ScalarGradient terminal_cost_gradient(const Problem& problem, int cost, double t, In<double> x,
                                      In<double> p);

/// c_t, c_x and c_p of the point terms of `cost` for a firing of `event` at (t, x-, p), summed;
/// zero if it has none (Cost::has_terms_for).
ScalarGradient event_cost_gradient(const Problem& problem, int cost, int event, double t, In<double> x,
                                   In<double> p);

/// (dx0/dp)^T L for the columns of `weights` (n_x x m): an n_p x m matrix.
Eigen::MatrixXd initial_state_products(const Problem& problem, In<double> p,
                                       const Eigen::MatrixXd& weights);

/// Transposed products of the slopes and running costs of a mode at one point (a Runge-Kutta
/// stage): with K = f(t, x, p) and G_c = g_c(t, x, K, p) (n_c), for the columns m of
///     f_weights^T K + g_weights^T G     (f_weights n_x x m, g_weights n_c x m)
/// the derivatives t (m), x (n_x x m), p (n_p x m). One recording per point serves several sweeps;
/// the sweeps write into the caller's matrices and allocate nothing once sized.
class StageProducts {
 public:
  StageProducts(const Problem& problem, const Eigen::VectorXd& p);
  /// Records f and every running cost of `mode` at (t, x) (t active).
  void record(int mode, double t, In<double> x);
  /// Sweeps the last recording for every weight column (one pass) into `out` (resized if needed).
  void sweep(const Eigen::MatrixXd& f_weights, const Eigen::MatrixXd& g_weights, TransposedProducts& out);
  long recordings() const { return recordings_; }

 private:
  const Problem& problem_;
  Eigen::VectorXd p_;
  int n_x_, n_c_;
  long generation_ = -1;
  long recordings_ = 0;
  Reverse t_ad_;
  VectorX<Reverse> x_ad_, p_ad_, f_ad_, g_ad_;
  std::vector<double> adjoint_;
};

/// The point a recording on the Reverse tape was made at: whether the tape still holds a
/// recording of (mode, t, x) (no other recording cleared it since), and the count of recordings.
class RecordedPoint {
 public:
  bool holds(int mode, double t, In<double> x) const {
    return generation_ == ReverseTape::generation() && mode == mode_ && t == t_ && x.size() == x_.size() && x == x_;
  }
  /// Notes a finished recording of (mode, t, x), made since the tape was last cleared.
  void remember(int mode, double t, In<double> x) {
    generation_ = ReverseTape::generation();
    mode_ = mode;
    t_ = t;
    x_ = x;
    ++recordings_;
  }
  /// Whether the tape still holds the last recording (of any point).
  bool current() const { return generation_ == ReverseTape::generation(); }
  long recordings() const { return recordings_; }

 private:
  long generation_ = -1;
  int mode_ = -1;
  double t_ = 0.0;
  Eigen::VectorXd x_;
  long recordings_ = 0;
};

/// Products of the rates of a mode's completion (Problem::set_completion) with weight vectors,
/// at one point: with (x_c, x-dot_c) = C(t, x_guess, p), for each column w of `rate_weights`
/// (n_x x m) the derivatives x = C_xdot,x^T w (n_x x m) and p = C_xdot,p^T w (n_p x m); and,
/// with the running costs read at the completed point, G_c = g_c(t, x_c, x-dot_c, p), the
/// adjoint's products through the completion (cost_sweep, one column w_c per cost):
/// x.col(c) = C_xdot,x^T w_c + G_c,x^T (R_x^T lambda + g~_x^T), p.col(c) = C_xdot,p^T w_c + G_c,p^T.
/// One recording per point serves every product there: the backward residual, its quadrature
/// and GMRES's products of the backward Newton matrix come at one forward point in turn, and a
/// recording costs about a completion's reverse tape. Each sweep takes all its columns in one
/// pass over the tape. Where the mode has a rate completion (Problem::set_rate_completion), C is
/// that map.
class CompletionRateProducts {
 public:
  CompletionRateProducts(const Problem& problem, const Eigen::VectorXd& p);
  /// Records the completion of `mode` from (t, x_guess) and the running costs there, unless the
  /// tape already holds them.
  void record(int mode, double t, In<double> x_guess);
  /// Rates only: C_xdot^T w per column of `rate_weights` into `out` (sized on first use; out.t
  /// is left empty: time is passive).
  void sweep(const Eigen::Ref<const Eigen::MatrixXd>& rate_weights, TransposedProducts& out);
  /// Rates and costs: column c of `rate_weights` (n_x x n_c) with cost c's integrand.
  void cost_sweep(const Eigen::Ref<const Eigen::MatrixXd>& rate_weights, TransposedProducts& out);
  long recordings() const { return point_.recordings(); }

 private:
  void sweep(const Eigen::Ref<const Eigen::MatrixXd>& rate_weights, bool with_costs, TransposedProducts& out);

  const Problem& problem_;
  Eigen::VectorXd p_;
  int n_x_, n_c_;
  RecordedPoint point_;
  VectorX<Reverse> x_ad_, p_ad_, completed_x_, completed_xdot_, costs_;
  std::vector<double> adjoint_;
};

/// The products the adjoint right-hand side and its quadrature need inside a mode:
///     x part:  f_x^T lambda + g_{c,x}^T        (n_x)
///     p part:  f_p^T lambda + g_{c,p}^T        (n_p)
/// for cost c with running integrand g_c(t, x, f(t, x, p), p) (accelerations included by the
/// chain rule). One recording of f and every g_c per point serves any number of adjoint
/// vectors: CVODES evaluates the backward right-hand side several times at one time point.
class AdjointRhs {
 public:
  AdjointRhs(const Problem& problem, const Eigen::VectorXd& p);
  /// Records f and the running costs at (mode, t, x) unless the tape already holds them.
  void record(int mode, double t, In<double> x);
  /// Every cost at once, in one pass over the tape: column c of `lambda` (n_x x n_c) with cost
  /// c, into column c of `dx` (n_x x n_c) and `dp` (n_p x n_c).
  void apply_all(const Eigen::Ref<const Eigen::MatrixXd>& lambda, Eigen::Ref<Eigen::MatrixXd> dx,
                 Eigen::Ref<Eigen::MatrixXd> dp);
  /// f_x^T V (n_x x m) from the same recording (no cost term), all columns in one pass: the
  /// backward Jacobian's products.
  void state_products(const Eigen::Ref<const Eigen::MatrixXd>& v, Eigen::Ref<Eigen::MatrixXd> out);
  /// Number of recordings made (diagnostics).
  long recordings() const { return point_.recordings(); }

 private:
  const Problem& problem_;
  Eigen::VectorXd p_;
  int n_x_, n_c_;
  RecordedPoint point_;
  VectorX<Reverse> x_ad_, p_ad_, f_ad_, g_ad_;
  std::vector<double> adjoint_;
};

}  // namespace saltus
