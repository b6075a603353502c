// The Dormand-Prince 5(4) tableau (J. R. Dormand, P. J. Prince, J. Comput. Appl. Math. 6 (1980))
// and the continuous extension of DOPRI5 (Hairer, Norsett, Wanner, Solving ODEs I, II.6).
#include "tableau.hpp"

namespace saltus::detail {

namespace {

// u(theta) = y0 + theta (rc2 + (1-theta) (rc3 + theta (rc4 + (1-theta) rc5))) with
// rc2 = h sum b_i K_i, rc3 = h K_1 - rc2, rc4 = rc2 - h K_7 - rc3, rc5 = h sum d_i K_i,
// rewritten as weights on h K_i.
constexpr double kD[7] = {-12715105075.0 / 11282082432.0, 0.0, 87487479700.0 / 32700410799.0,
                          -10690763975.0 / 1880347072.0, 701980252875.0 / 199316789632.0,
                          -1453857185.0 / 822651844.0, 69997945.0 / 29380423.0};

void dopri5_dense_weights(double theta, Eigen::Ref<Eigen::VectorXd> w, Eigen::Ref<Eigen::VectorXd> dw) {
  const Eigen::VectorXd& b = dormand_prince().b;
  const double s = 1.0 - theta;
  // w_i = theta b_i + theta s (d1_i - b_i) + theta^2 s (2 b_i - d1_i - d7_i) + theta^2 s^2 d_i
  const double p1 = theta, p2 = theta * s, p3 = theta * theta * s, p4 = theta * theta * s * s;
  const double q1 = 1.0, q2 = 1.0 - 2.0 * theta, q3 = 2.0 * theta - 3.0 * theta * theta,
               q4 = 2.0 * theta * s * s - 2.0 * theta * theta * s;
  for (int i = 0; i < 7; ++i) {
    const double first = i == 0 ? 1.0 : 0.0, last = i == 6 ? 1.0 : 0.0;
    const double c2 = first - b[i], c3 = 2.0 * b[i] - first - last, c4 = kD[i];
    w[i] = p1 * b[i] + p2 * c2 + p3 * c3 + p4 * c4;
    dw[i] = q1 * b[i] + q2 * c2 + q3 * c3 + q4 * c4;
  }
}

RungeKuttaTableau make_dormand_prince() {
  RungeKuttaTableau t;
  t.name = "dopri5";
  t.order = 5;
  t.error_order = 4;
  t.stages = 7;
  t.map_stages = 6;
  t.fsal = true;
  t.c.resize(7);
  t.c << 0.0, 1.0 / 5.0, 3.0 / 10.0, 4.0 / 5.0, 8.0 / 9.0, 1.0, 1.0;
  t.a = Eigen::MatrixXd::Zero(7, 7);
  t.a(1, 0) = 1.0 / 5.0;
  t.a(2, 0) = 3.0 / 40.0, t.a(2, 1) = 9.0 / 40.0;
  t.a(3, 0) = 44.0 / 45.0, t.a(3, 1) = -56.0 / 15.0, t.a(3, 2) = 32.0 / 9.0;
  t.a(4, 0) = 19372.0 / 6561.0, t.a(4, 1) = -25360.0 / 2187.0, t.a(4, 2) = 64448.0 / 6561.0,
  t.a(4, 3) = -212.0 / 729.0;
  t.a(5, 0) = 9017.0 / 3168.0, t.a(5, 1) = -355.0 / 33.0, t.a(5, 2) = 46732.0 / 5247.0, t.a(5, 3) = 49.0 / 176.0,
  t.a(5, 4) = -5103.0 / 18656.0;
  t.a(6, 0) = 35.0 / 384.0, t.a(6, 2) = 500.0 / 1113.0, t.a(6, 3) = 125.0 / 192.0, t.a(6, 4) = -2187.0 / 6784.0,
  t.a(6, 5) = 11.0 / 84.0;
  t.b = t.a.row(6).transpose();
  t.e.resize(7);
  t.e << 71.0 / 57600.0, 0.0, -71.0 / 16695.0, 71.0 / 1920.0, -17253.0 / 339200.0, 22.0 / 525.0, -1.0 / 40.0;
  t.dense_weights = dopri5_dense_weights;
  return t;
}

}  // namespace

const RungeKuttaTableau& dormand_prince() {
  static const RungeKuttaTableau tableau = make_dormand_prince();
  return tableau;
}

}  // namespace saltus::detail
