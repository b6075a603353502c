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
  // Scratch of a Rosenbrock step: f_t and the costs' gamma_t at the step start, a directional
  // derivative (f and costs), and the Dual and HyperDual arguments that compute it.
  VectorX<S> f_t, direction_f, zero_x;
  VectorX<S> g_t, direction_g;
  VectorX<Dual> dual_x, dual_p, dual_f;
  VectorX<HyperDual> hyper_x, hyper_p, hyper_f;
  void resize(int n_x, int n_c, int stages) {
    Y.resize(n_x, stages);
    K.resize(n_x, stages);
    G = StageMatrix<S>::Zero(n_c, stages);
    for (VectorX<S>* v : {&z, &iterate, &f, &residual, &delta, &f_t, &direction_f}) v->resize(n_x);
    zero_x = VectorX<S>::Zero(n_x);
    g_t = VectorX<S>::Zero(n_c);
    direction_g = VectorX<S>::Zero(n_c);
    for (Eigen::VectorXd* v : {&real_in, &perturbation_in, &real_out, &perturbation_out}) v->resize(n_x);
    dual_x.resize(n_x), dual_f.resize(n_x), hyper_x.resize(n_x), hyper_f.resize(n_x);
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

/// Below this h gamma (relative to max(1, |t|)) an implicit stage's slope is f(Y), not the
/// quotient (Y - z) / (h gamma).
inline constexpr double kTinyStageStep = 1e-7;

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

/// The largest perturbation of the time and the parameters relative to their size (1 for sizes
/// below 1): max(|T'| / max(|T|, 1), max_k |p_k'| / max(|p_k|, 1)); 0 in double.
template <class S>
double relative_input_perturbation(const S& T, In<S> p) {
  const auto relative = [](const S& s) { return std::abs(perturbation_part(s)) / std::max(std::abs(real_part(s)), 1.0); };
  double r = relative(T);
  for (Eigen::Index k = 0; k < p.size(); ++k) r = std::max(r, relative(p[k]));
  return r;
}

/// Solves Y = z + h gamma f(T, Y, p) for Y by simplified Newton iterations from Y = st.iterate
/// (z in st.z), leaving the solution in st.iterate.
template <class S>
StageStatus solve_stage(const RhsFn<S>& rhs, const S& T, const S& h_gamma, In<S> p, StageNewton& newton,
                        StageValues<S>& st) {
  double previous[2] = {INFINITY, INFINITY};
  const double relative_perturbation = relative_input_perturbation<S>(T, p);
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
      // The perturbation part converges against at least the size a perturbation of the
      // stage's relative order would have: where the derivative is zero (a parameter the motion
      // does not depend on), the perturbation is round-off that never shrinks against itself.
      const double floor = part == 0 ? 0.0 : relative_perturbation * part_norm<S>(st.iterate, 0);
      const bool small = change <= newton.rtol * std::max(size, floor) || change == 0.0;
      // Round-off floor: the change stopped shrinking far below the iterate, where the stage
      // matrix's conditioning (a stiff penalty formulation: 1e7 and more) bounds the accuracy.
      // The perturbation part stalls with the real part, at the same relative level of its
      // floor (a ladder in penalty: 3.5e-34 against a perturbation of 1.6e-29 and a floor of
      // 1.9e-21, and the complex step failed at t = 0).
      const bool stalled =
          iteration >= 3 && change >= 0.5 * previous[part] && change <= 1e-6 * std::max(size, floor);
      done = done && (small || stalled);
      previous[part] = change;
    }
    if (done) return StageStatus::Solved;
  }
  return StageStatus::NotConverged;
}

}  // namespace stage_detail

namespace rosenbrock_detail {

/// The directional derivative along (v_t, v_x) at (t, x, p) of the right-hand side
/// (st.direction_f) and, with `costs`, of every running cost along the flow,
/// gamma(t, x) = g(t, x, f(t, x, p), p) (st.direction_g; 0 for costs without one). Exact: Dual
/// numbers in double; in Complex and Dual, whose perturbations move (t, x, p, v) too,
/// HyperDual numbers give the perturbation of the derivative (f_x v)' = f_x v' + f_xx[v, x'] + ...
template <class S>
void directional(const Problem& problem, int mode, const S& t, In<S> x, In<S> p, const S& v_t, In<S> v_x,
                 bool costs, StageValues<S>& st) {
  const int n_x = static_cast<int>(x.size()), n_p = static_cast<int>(p.size());
  if (st.dual_p.size() != n_p) st.dual_p.resize(n_p), st.hyper_p.resize(n_p);  // once per run
  if constexpr (std::is_same_v<S, double>) {
    for (int k = 0; k < n_x; ++k) st.dual_x[k] = make_dual(x[k], v_x[k]);
    for (int k = 0; k < n_p; ++k) st.dual_p[k] = Dual(p[k]);
    const Dual td = make_dual(t, v_t);
    problem.mode(mode).rhs.dual(td, st.dual_x, st.dual_p, st.dual_f);
    for (int k = 0; k < n_x; ++k) st.direction_f[k] = st.dual_f[k].v[0];
    for (int c = 0; costs && c < problem.n_costs(); ++c) {
      const auto& g = problem.cost(c).running;
      st.direction_g[c] = g ? g.dual(td, st.dual_x, st.dual_f, st.dual_p).v[0] : 0.0;
    }
  } else {
    const auto hyper = [](const S& value, const S& direction) {
      return HyperDual(real_part(value), real_part(direction), perturbation_part(value), perturbation_part(direction));
    };
    for (int k = 0; k < n_x; ++k) st.hyper_x[k] = hyper(x[k], v_x[k]);
    for (int k = 0; k < n_p; ++k) st.hyper_p[k] = hyper(p[k], S(0.0));
    const HyperDual th = hyper(t, v_t);
    problem.mode(mode).rhs.second(th, st.hyper_x, st.hyper_p, st.hyper_f);
    for (int k = 0; k < n_x; ++k) st.direction_f[k] = compose_scalar<S>(st.hyper_f[k].e1, st.hyper_f[k].e12);
    for (int c = 0; costs && c < problem.n_costs(); ++c) {
      const auto& g = problem.cost(c).running;
      if (!g) {
        st.direction_g[c] = S(0.0);
        continue;
      }
      const HyperDual value = g.second(th, st.hyper_x, st.hyper_f, st.hyper_p);
      st.direction_g[c] = compose_scalar<S>(value.e1, value.e12);
    }
  }
}

/// The stages 0..last-1 of a Rosenbrock step (tableau.hpp) in the scalar type S. The running
/// costs are integrated as the extra components q' = gamma(t, x) of the system, with their own
/// Jacobian row gamma_x (so the method keeps its order on them):
///   G_i = gamma (g_i + sum_j C_ij G_j + h (gamma_i gamma_t + gamma_x K_i)).
/// `newton.lu` holds I - h gamma J at the real parts. In Complex and Dual the perturbation of
/// the matrix itself enters: K' = (I - h gamma J)^-1 (rhs' + (h gamma J)' K).
template <class S>
StageStatus evaluate_rosenbrock_stages(const RungeKuttaTableau& tab, const Problem& problem, int mode, const S& t,
                                       const S& h, In<S> x, In<S> p, int last, StageValues<S>& st,
                                       const StageNewton& newton) {
  const auto& rhs = problem.mode(mode).rhs.template get<S>();
  const int n_c = problem.n_costs();
  bool costs = false;
  for (int c = 0; c < n_c; ++c) costs |= static_cast<bool>(problem.cost(c).running);
  directional<S>(problem, mode, t, x, p, S(1.0), st.zero_x, costs, st);
  st.f_t = st.direction_f;
  if (costs) st.g_t = st.direction_g;
  const S h_gamma = h * tab.gamma;
  for (int i = 0; i < last; ++i) {
    const S ti = t + tab.c[i] * h;
    st.Y.col(i) = x;
    for (int j = 0; j < i; ++j) {
      if (tab.a(i, j) != 0.0) st.Y.col(i) += (h * tab.a(i, j)) * st.K.col(j);
    }
    rhs(ti, st.Y.col(i), p, st.f);
    st.residual = st.f;
    if (tab.time_weights[i] != 0.0) st.residual += (h * tab.time_weights[i]) * st.f_t;
    for (int j = 0; j < i; ++j) {
      if (tab.coupling(i, j) != 0.0) st.residual += tab.coupling(i, j) * st.K.col(j);
    }
    st.residual *= tab.gamma;
    if (!all_finite<S>(st.residual)) return StageStatus::NonFinite;
    solve_real<S>(newton.lu, st.residual, st.delta, st);
    if constexpr (!std::is_same_v<S, double>) {
      for (Eigen::Index k = 0; k < st.delta.size(); ++k) st.iterate[k] = S(real_part(st.delta[k]));
      directional<S>(problem, mode, t, x, p, S(0.0), st.iterate, false, st);
      for (Eigen::Index k = 0; k < st.delta.size(); ++k) {
        st.perturbation_in[k] = perturbation_part(h_gamma * st.direction_f[k]);
      }
      st.perturbation_out = newton.lu.solve(st.perturbation_in);
      for (Eigen::Index k = 0; k < st.delta.size(); ++k) st.delta[k] += compose_scalar<S>(0.0, st.perturbation_out[k]);
    }
    st.K.col(i) = st.delta;
    if (costs) {
      directional<S>(problem, mode, t, x, p, S(0.0), st.K.col(i), true, st);
      for (int c = 0; c < n_c; ++c) {
        const auto& g = problem.cost(c).running;
        if (!g) continue;
        S value = g.template get<S>()(ti, st.Y.col(i), st.f, p) +
                  h * (tab.time_weights[i] * st.g_t[c] + st.direction_g[c]);
        for (int j = 0; j < i; ++j) value += tab.coupling(i, j) * st.G(c, j);
        st.G(c, i) = tab.gamma * value;
      }
    }
    if (!all_finite<S>(st.K.col(i)) || !all_finite<S>(st.G.col(i))) return StageStatus::NonFinite;
  }
  return StageStatus::Solved;
}

}  // namespace rosenbrock_detail

/// Evaluates stages first..last-1 of the step (t, h) from x in `mode` (the earlier stages must
/// be in `st`). `newton` is the factored I - h a_ii J for implicit stages (unused otherwise).
template <class S>
StageStatus evaluate_stages(const RungeKuttaTableau& tab, const Problem& problem, int mode, const S& t, const S& h,
                            std::type_identity_t<In<S>> x, std::type_identity_t<In<S>> p, int first, int last,
                            StageValues<S>& st, StageNewton* newton = nullptr) {
  if (tab.rosenbrock) return rosenbrock_detail::evaluate_rosenbrock_stages<S>(tab, problem, mode, t, h, x, p, last, st, *newton);
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
      if (std::abs(real_part(h_gamma)) > kTinyStageStep * std::max(1.0, std::abs(real_part(ti)))) {
        // The slope from the stage equation: the Newton error divided by h gamma, not amplified
        // by the stiffness as f(Y) would be.
        st.K.col(i) = (st.iterate - st.z) / h_gamma;
      } else {
        // A tiny step (the last one, 1e-13 s after an event at t_f - 1e-13): the quotient loses
        // its digits, and the tangents, which take K = f(Y), disagreed with the complex step by
        // 5e-4. The slope is f(Y) itself.
        rhs(ti, st.Y.col(i), p, st.K.col(i));
      }
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
