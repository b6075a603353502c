#pragma once
// The stages of one Runge-Kutta step on a mode of a hybrid ODE, in any scalar type: the discrete
// run steps in double, the complex-step replay of its frozen steps in Complex, and the replay's
// event-time Newton step differentiates a step with respect to h in Dual. The running costs are
// integrated by the same stages: G_i = g(T_i, Y_i, K_i, p) (K_i is x-dot there).
//
// Implicit stages (tableau.hpp) are solved by simplified Newton iterations with a real matrix
// I - h_r a_ii J, J = f_x(t_n, x_n): in Complex and Dual arithmetic the real and the perturbation
// parts converge together, to round-off.
#include <saltus/core/problem.hpp>

#include <Eigen/LU>

#include <cmath>
#include <type_traits>

#include "tableau.hpp"

namespace saltus::detail {

template <class S>
using StageMatrix = Eigen::Matrix<S, Eigen::Dynamic, Eigen::Dynamic>;

/// The stages of one step: Y_i, K_i (n_x x s) and G_i (n_c x s; zero rows for costs without a
/// running part), with the Newton scratch. Sized once per run: a step allocates nothing.
template <class S>
struct StageValues {
  StageMatrix<S> Y, K, G;
  // Scratch of the implicit stages' Newton iterations.
  VectorX<S> z, iterate, f, residual, delta;
  Eigen::VectorXd real_in, perturbation_in, real_out, perturbation_out;
  void resize(int n_x, int n_c, int stages) {
    Y.resize(n_x, stages);
    K.resize(n_x, stages);
    G = StageMatrix<S>::Zero(n_c, stages);
    for (VectorX<S>* v : {&z, &iterate, &f, &residual, &delta}) v->resize(n_x);
    for (Eigen::VectorXd* v : {&real_in, &perturbation_in, &real_out, &perturbation_out}) v->resize(n_x);
  }
};

/// The factored Newton matrix I - h a_ii J of a step's implicit stages (all a_ii equal).
struct StageNewton {
  Eigen::PartialPivLU<Eigen::MatrixXd> lu;
  /// An iterate counts as solved when its change is below this, relative to the iterate (its
  /// real and its perturbation parts separately), or stagnates at round-off.
  double rtol = 1e-13;
  int max_iterations = 50;
  long iterations = 0;  ///< Newton iterations taken (counted across steps)
};

enum class StageStatus { Solved, NonFinite, NotConverged };

// The real part and the perturbation part (imaginary part, tangent) of a scalar.
inline double perturbation_part(double) { return 0.0; }
inline double perturbation_part(const Complex& s) { return s.imag(); }
inline double perturbation_part(const Dual& s) { return s.v[0]; }
template <class S>
S compose_scalar(double real, double perturbation);
template <>
inline double compose_scalar<double>(double real, double) { return real; }
template <>
inline Complex compose_scalar<Complex>(double real, double perturbation) { return {real, perturbation}; }
template <>
inline Dual compose_scalar<Dual>(double real, double perturbation) { return make_dual(real, perturbation); }

/// out = lu^-1 rhs for a real matrix and a vector of any scalar type (parts solved separately,
/// in the scratch vectors of `st`).
template <class S>
void solve_real(const Eigen::PartialPivLU<Eigen::MatrixXd>& lu, const VectorX<S>& rhs, VectorX<S>& out,
                StageValues<S>& st) {
  if constexpr (std::is_same_v<S, double>) {
    out = lu.solve(rhs);
  } else {
    for (Eigen::Index k = 0; k < rhs.size(); ++k) {
      st.real_in[k] = real_part(rhs[k]);
      st.perturbation_in[k] = perturbation_part(rhs[k]);
    }
    st.real_out = lu.solve(st.real_in);
    st.perturbation_out = lu.solve(st.perturbation_in);
    for (Eigen::Index k = 0; k < rhs.size(); ++k) out[k] = compose_scalar<S>(st.real_out[k], st.perturbation_out[k]);
  }
}

template <class S>
bool all_finite(const Eigen::Ref<const VectorX<S>>& v) {
  for (Eigen::Index k = 0; k < v.size(); ++k) {
    if (!std::isfinite(real_part(v[k])) || !std::isfinite(perturbation_part(v[k]))) return false;
  }
  return true;
}

namespace stage_detail {

/// max_k |part(v_k)| for the real (0) or the perturbation (1) part.
template <class S>
double part_norm(const VectorX<S>& v, int part) {
  double m = 0.0;
  for (Eigen::Index k = 0; k < v.size(); ++k) {
    m = std::max(m, std::abs(part == 0 ? real_part(v[k]) : perturbation_part(v[k])));
  }
  return m;
}

/// Solves Y = z + h gamma f(T, Y, p) for Y by simplified Newton iterations from Y = st.iterate
/// (z in st.z), leaving the solution in st.iterate.
template <class S>
StageStatus solve_stage(const RhsFn<S>& rhs, const S& T, const S& h_gamma, In<S> p, StageNewton& newton,
                        StageValues<S>& st) {
  double previous[2] = {INFINITY, INFINITY};
  for (int iteration = 0; iteration < newton.max_iterations; ++iteration) {
    ++newton.iterations;
    rhs(T, st.iterate, p, st.f);
    st.residual = st.iterate - st.z - h_gamma * st.f;
    if (!all_finite<S>(st.residual)) return StageStatus::NonFinite;
    solve_real<S>(newton.lu, st.residual, st.delta, st);
    st.iterate -= st.delta;
    bool done = true;
    for (int part = 0; part < 2; ++part) {
      const double change = part_norm<S>(st.delta, part), size = part_norm<S>(st.iterate, part);
      const bool small = change <= newton.rtol * size || change == 0.0;
      // Round-off floor: the change stopped shrinking far below the iterate, where the stage
      // matrix's conditioning (a stiff penalty formulation: 1e7 and more) bounds the accuracy.
      const bool stalled = iteration >= 3 && change >= 0.5 * previous[part] && change <= 1e-6 * size;
      done = done && (small || stalled);
      previous[part] = change;
    }
    if (done) return StageStatus::Solved;
  }
  return StageStatus::NotConverged;
}

}  // namespace stage_detail

/// Evaluates stages first..last-1 of the step (t, h) from x in `mode` (the earlier stages must
/// be in `st`). `newton` is the factored I - h a_ii J for implicit stages (unused otherwise).
template <class S>
StageStatus evaluate_stages(const RungeKuttaTableau& tab, const Problem& problem, int mode, const S& t, const S& h,
                            std::type_identity_t<In<S>> x, std::type_identity_t<In<S>> p, int first, int last,
                            StageValues<S>& st, StageNewton* newton = nullptr) {
  const auto& rhs = problem.mode(mode).rhs.template get<S>();
  for (int i = first; i < last; ++i) {
    const S ti = t + tab.c[i] * h;
    if (!tab.implicit_stage(i)) {
      st.Y.col(i) = x;
      for (int j = 0; j < i; ++j) {
        if (tab.a(i, j) != 0.0) st.Y.col(i) += (h * tab.a(i, j)) * st.K.col(j);
      }
      rhs(ti, st.Y.col(i), p, st.K.col(i));
    } else {
      st.z = x;
      for (int j = 0; j < i; ++j) {
        if (tab.a(i, j) != 0.0) st.z += (h * tab.a(i, j)) * st.K.col(j);
      }
      const S h_gamma = h * tab.a(i, i);
      st.iterate = st.z;
      if (i > 0) st.iterate += h_gamma * st.K.col(i - 1);
      const StageStatus status = stage_detail::solve_stage<S>(rhs, ti, h_gamma, p, *newton, st);
      if (status != StageStatus::Solved) return status;
      st.Y.col(i) = st.iterate;
      st.K.col(i) = (st.iterate - st.z) / h_gamma;
    }
    for (int c = 0; c < problem.n_costs(); ++c) {
      const auto& g = problem.cost(c).running;
      if (g) st.G(c, i) = g.template get<S>()(ti, st.Y.col(i), st.K.col(i), p);
    }
    if (!all_finite<S>(st.K.col(i)) || !all_finite<S>(st.G.col(i))) return StageStatus::NonFinite;
  }
  return StageStatus::Solved;
}

/// x_{n+1} = x + h sum b_i K_i and the running-cost increments h sum b_i G_i (n_c).
template <class S>
void propagate(const RungeKuttaTableau& tab, const S& h, std::type_identity_t<In<S>> x, const StageValues<S>& st,
               VectorX<S>& x_next, VectorX<S>& cost_increment) {
  x_next = x;
  cost_increment.setZero(st.G.rows());
  for (int i = 0; i < tab.map_stages; ++i) {
    if (tab.b[i] == 0.0) continue;
    x_next += (h * tab.b[i]) * st.K.col(i);
    cost_increment += (h * tab.b[i]) * st.G.col(i);
  }
}

}  // namespace saltus::detail
