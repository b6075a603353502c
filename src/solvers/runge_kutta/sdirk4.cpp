// Hairer and Wanner's SDIRK method of order 4 (E. Hairer, G. Wanner, Solving Ordinary
// Differential Equations II, section IV.6, Table 6.5): L-stable, stiffly accurate, gamma = 1/4,
// with an embedded solution of order 3. The order conditions are checked by
// tests/test_discrete_sensitivities.cpp.
#include "tableau.hpp"

namespace saltus::detail {

namespace {

RungeKuttaTableau make_sdirk4() {
  RungeKuttaTableau t;
  t.name = "sdirk";
  t.order = 4;
  t.error_order = 3;
  t.stages = 5;
  t.map_stages = 5;
  t.fsal = false;
  t.a = Eigen::MatrixXd::Zero(5, 5);
  t.a(0, 0) = 1.0 / 4.0;
  t.a(1, 0) = 1.0 / 2.0, t.a(1, 1) = 1.0 / 4.0;
  t.a(2, 0) = 17.0 / 50.0, t.a(2, 1) = -1.0 / 25.0, t.a(2, 2) = 1.0 / 4.0;
  t.a(3, 0) = 371.0 / 1360.0, t.a(3, 1) = -137.0 / 2720.0, t.a(3, 2) = 15.0 / 544.0, t.a(3, 3) = 1.0 / 4.0;
  t.a(4, 0) = 25.0 / 24.0, t.a(4, 1) = -49.0 / 48.0, t.a(4, 2) = 125.0 / 16.0, t.a(4, 3) = -85.0 / 12.0,
  t.a(4, 4) = 1.0 / 4.0;
  t.c.resize(5);
  t.c << 1.0 / 4.0, 3.0 / 4.0, 11.0 / 20.0, 1.0 / 2.0, 1.0;
  t.b = t.a.row(4).transpose();
  Eigen::VectorXd b_hat(5);
  b_hat << 59.0 / 48.0, -17.0 / 96.0, 225.0 / 32.0, -85.0 / 12.0, 0.0;
  t.e = t.b - b_hat;
  t.dense_weights = nullptr;  // cubic Hermite
  return t;
}

}  // namespace

const RungeKuttaTableau& sdirk4() {
  static const RungeKuttaTableau tableau = make_sdirk4();
  return tableau;
}

}  // namespace saltus::detail
