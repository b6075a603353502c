// hiskens against its closed form: in mode i, u(t) = e^t [cos(w t) I + sin(w t)/w (A_i - I)] u0
// with w = sqrt(1000); switching times by Newton on the closed form; gradients by the complex
// step of that closed form (independent of Saltus' solvers).
#include <saltus/examples/builtin.hpp>
#include <saltus/solvers/simulate.hpp>

#include <gtest/gtest.h>

#include <array>
#include <cmath>
#include <complex>
#include <vector>

using namespace saltus;

namespace {

template <class S>
using U = std::array<S, 2>;

// A_i - I for the two modes.
constexpr double kB[2][2][2] = {{{0, -100}, {10, 0}}, {{0, 10}, {-100, 0}}};

template <class S>
U<S> flow(int mode, const S& dt, const U<S>& u) {
  using std::cos, std::exp, std::sin, std::sqrt;
  const double w = std::sqrt(1000.0);
  const S c = cos(w * dt), s = sin(w * dt) / w, e = exp(dt);
  const auto& B = kB[mode];
  return {e * (c * u[0] + s * (B[0][0] * u[0] + B[0][1] * u[1])),
          e * (c * u[1] + s * (B[1][0] * u[0] + B[1][1] * u[1]))};
}

template <class S>
U<S> field(int mode, const U<S>& u) {
  const auto& B = kB[mode];
  return {u[0] + B[0][0] * u[0] + B[0][1] * u[1], u[1] + B[1][0] * u[0] + B[1][1] * u[1]};
}

// Final state and the switching times of the closed form, for parameters p = (l1, l2, u10, u20).
template <class S>
U<S> closed_form(const std::array<S, 4>& p, double T, std::vector<S>* switches) {
  int mode = 0;
  S t0 = 0.0 * p[0];
  U<S> u0 = {p[2], p[3]};
  for (;;) {
    const S lambda = mode == 0 ? p[0] : p[1];
    auto guard = [&](const S& t) {
      const U<S> u = flow(mode, t - t0, u0);
      return u[1] - lambda * u[0];
    };
    // Scan for a sign change of the real part after t0, then Newton in the scalar type.
    const int n = 4000;
    const double start = std::real(t0), step = (T - start) / n;
    double lo = -1;
    for (int i = 0; i < n; ++i) {
      const double a = start + i * step + (i == 0 ? 1e-9 : 0.0), b = start + (i + 1) * step;
      if (std::real(guard(S(a))) * std::real(guard(S(b))) < 0) {
        lo = a;
        break;
      }
    }
    if (lo < 0) return flow(mode, T - t0, u0);
    S t = lo + 0.5 * step;
    for (int it = 0; it < 30; ++it) {
      const U<S> u = flow(mode, t - t0, u0);
      const U<S> f = field(mode, u);
      t = t - (u[1] - lambda * u[0]) / (f[1] - lambda * f[0]);
    }
    u0 = flow(mode, t - t0, u0);
    t0 = t;
    if (switches) switches->push_back(t);
    mode = 1 - mode;
  }
}

}  // namespace

TEST(Hiskens, FirstSwitchTimeIsThePublishedFormula) {
  const Solution s = simulate(examples::hiskens());
  ASSERT_GE(s.events.size(), 1u);
  const double t1 = (M_PI - std::atan(1.0 / (2.75 * std::sqrt(10.0)))) / std::sqrt(1000.0);
  EXPECT_NEAR(s.events[0].time, t1, 1e-10);
  EXPECT_NEAR(t1, 0.0957254, 1e-7);
}

TEST(Hiskens, StateGradientAndEventTimesMatchClosedForm) {
  const Problem pb = examples::hiskens();
  const Solution s = forward_sensitivity(pb);
  const Eigen::VectorXd p = pb.nominal_parameters();
  std::vector<double> switches;
  const U<double> u = closed_form<double>({p[0], p[1], p[2], p[3]}, 0.125, &switches);
  ASSERT_EQ(s.events.size(), switches.size());
  for (size_t i = 0; i < switches.size(); ++i) EXPECT_NEAR(s.events[i].time, switches[i], 1e-10);
  EXPECT_NEAR(s.costs[0], u[0], 1e-8 * std::abs(u[0]) + 1e-12);
  EXPECT_NEAR(s.costs[1], u[1], 1e-8 * std::abs(u[1]) + 1e-12);
  const double h = 1e-30;
  for (int k = 0; k < 4; ++k) {
    std::array<std::complex<double>, 4> pc = {p[0], p[1], p[2], p[3]};
    pc[k] += std::complex<double>(0.0, h);
    std::vector<std::complex<double>> sw;
    const U<std::complex<double>> uc = closed_form(pc, 0.125, &sw);
    for (int c = 0; c < 2; ++c) {
      const double ref = uc[c].imag() / h;
      EXPECT_NEAR(s.cost_gradient(c, k), ref, 1e-7 * (1.0 + std::abs(ref))) << c << "," << k;
    }
    for (size_t i = 0; i < sw.size(); ++i) {
      EXPECT_NEAR(s.events[i].dtime_dp[k], sw[i].imag() / h, 1e-8) << "event " << i;
    }
  }
}
