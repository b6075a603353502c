// RODAS3 of A. Sandu, J. G. Verwer, J. G. Blom, E. J. Spee, G. R. Carmichael and F. A. Potra,
// "Benchmarking stiff ODE solvers for atmospheric chemistry problems II: Rosenbrock solvers",
// Atmospheric Environment 31 (1997) 3459-3472: L-stable and stiffly accurate (the last stage
// is the solution), order 3 with an embedded order-2 solution, gamma = 1/2. Coefficients in the
// form of tableau.hpp (U_i = h K_i); tests/test_discrete_sensitivities.cpp observes the order.
#include "tableau.hpp"

namespace saltus::detail {

namespace {

RungeKuttaTableau make_rodas3() {
  RungeKuttaTableau t;
  t.name = "rosenbrock";
  t.order = 3;
  t.error_order = 2;
  t.stages = 4;
  t.map_stages = 4;
  t.fsal = false;
  t.rosenbrock = true;
  t.gamma = 0.5;
  t.a = Eigen::MatrixXd::Zero(4, 4);
  t.a(2, 0) = 2.0;
  t.a(3, 0) = 2.0, t.a(3, 2) = 1.0;
  t.coupling = Eigen::MatrixXd::Zero(4, 4);
  t.coupling(1, 0) = 4.0;
  t.coupling(2, 0) = 1.0, t.coupling(2, 1) = -1.0;
  t.coupling(3, 0) = 1.0, t.coupling(3, 1) = -1.0, t.coupling(3, 2) = -8.0 / 3.0;
  t.c.resize(4);
  t.c << 0.0, 0.0, 1.0, 1.0;
  t.time_weights.resize(4);
  t.time_weights << 0.5, 1.5, 0.0, 0.0;
  t.b.resize(4);
  t.b << 2.0, 0.0, 1.0, 1.0;
  t.e.resize(4);
  t.e << 0.0, 0.0, 0.0, 1.0;
  t.dense_weights = nullptr;  // cubic Hermite
  return t;
}

}  // namespace

const RungeKuttaTableau& rodas3() {
  static const RungeKuttaTableau tableau = make_rodas3();
  return tableau;
}

}  // namespace saltus::detail
