#pragma once
// One step of an explicit Runge-Kutta tableau on a mode of a hybrid ODE, in any scalar type: the
// discrete run steps in double, the complex-step replay of its frozen steps in Complex, and the
// replay's event-time Newton step differentiates a step with respect to h in Dual. The running
// costs are integrated by the same stages: G_i = g(T_i, Y_i, K_i, p) (K_i is x-dot there).
#include <saltus/core/problem.hpp>

#include <cmath>

#include "explicit_tableau.hpp"

namespace saltus::detail {

template <class S>
using StageMatrix = Eigen::Matrix<S, Eigen::Dynamic, Eigen::Dynamic>;

/// The stages of one step: Y_i, K_i (n_x x s) and G_i (n_c x s; zero rows for costs without a
/// running part). Sized once per run: a step allocates nothing.
template <class S>
struct StageValues {
  StageMatrix<S> Y, K, G;
  void resize(int n_x, int n_c, int stages) {
    Y.resize(n_x, stages);
    K.resize(n_x, stages);
    G = StageMatrix<S>::Zero(n_c, stages);
  }
};

/// Evaluates stages first..last-1 of the step (t, h) from x in `mode` (the earlier stages must
/// be in `st`). Returns false if a slope or a running cost is not finite.
template <class S>
bool evaluate_stages(const ExplicitTableau& tab, const Problem& problem, int mode, const S& t, const S& h,
                     const VectorX<S>& x, const VectorX<S>& p, int first, int last, StageValues<S>& st) {
  const auto& rhs = problem.mode(mode).rhs.template get<S>();
  for (int i = first; i < last; ++i) {
    st.Y.col(i) = x;
    for (int j = 0; j < i; ++j) {
      if (tab.a(i, j) != 0.0) st.Y.col(i) += (h * tab.a(i, j)) * st.K.col(j);
    }
    const S ti = t + tab.c[i] * h;
    rhs(ti, st.Y.col(i), p, st.K.col(i));
    for (int c = 0; c < problem.n_costs(); ++c) {
      const auto& g = problem.cost(c).running;
      if (g) st.G(c, i) = g.template get<S>()(ti, st.Y.col(i), st.K.col(i), p);
    }
    for (Eigen::Index k = 0; k < st.K.rows(); ++k) {
      if (!std::isfinite(real_part(st.K(k, i)))) return false;
    }
    for (Eigen::Index k = 0; k < st.G.rows(); ++k) {
      if (!std::isfinite(real_part(st.G(k, i)))) return false;
    }
  }
  return true;
}

/// x_{n+1} = x + h sum b_i K_i and the running-cost increments h sum b_i G_i (n_c).
template <class S>
void propagate(const ExplicitTableau& tab, const S& h, const VectorX<S>& x, const StageValues<S>& st, VectorX<S>& x_next,
               VectorX<S>& cost_increment) {
  x_next = x;
  cost_increment.setZero(st.G.rows());
  for (int i = 0; i < tab.map_stages; ++i) {
    if (tab.b[i] == 0.0) continue;
    x_next += (h * tab.b[i]) * st.K.col(i);
    cost_increment += (h * tab.b[i]) * st.G.col(i);
  }
}

}  // namespace saltus::detail
