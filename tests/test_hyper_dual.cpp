// HyperDual numbers (core/hyper_dual.hpp) give the second derivatives that the Rosenbrock
// integrator's tangent and adjoint need: checked against central differences of first
// derivatives computed by ceres' Jet (an independent forward-mode implementation), function by
// function and on whole right-hand sides (a stiff chemistry model and a mechanism).
#include <gtest/gtest.h>
#include <saltus/core/hyper_dual.hpp>
#include <saltus/examples/builtin.hpp>
#include <saltus/multibody/formulation.hpp>
#include <saltus/multibody/model_file.hpp>

#include <cmath>
#include <string>

using namespace saltus;

namespace {

/// f'(x) by Dual numbers.
template <class F>
double first_derivative(const F& f, double x) {
  return f(make_dual(x, 1.0)).v[0];
}

/// Checks value, both first derivatives and the mixed part of f at x along (v, d) with w.
template <class F>
void expect_second_order(const char* name, const F& f, double x) {
  const double v = 0.7, d = -1.3, w = 0.4, eps = 1e-5;
  const HyperDual r = f(HyperDual(x, v, d, w));
  const double f1 = first_derivative(f, x);
  const double f2 = (first_derivative(f, x + eps) - first_derivative(f, x - eps)) / (2.0 * eps);
  const double scale = 1.0 + std::abs(f2 * v * d);
  EXPECT_NEAR(r.a, f(Dual(x)).a, 1e-15 * (1.0 + std::abs(r.a))) << name;
  EXPECT_NEAR(r.e1, f1 * v, 1e-14 * (1.0 + std::abs(f1))) << name;
  EXPECT_NEAR(r.e2, f1 * d, 1e-14 * (1.0 + std::abs(f1))) << name;
  EXPECT_NEAR(r.e12, f1 * w + f2 * v * d, 1e-8 * scale) << name << " at " << x;
}

}  // namespace

TEST(HyperDual, ElementaryFunctionsHaveTheirSecondDerivatives) {
  using std::abs, std::acos, std::asin, std::atan, std::atan2, std::cbrt, std::cos, std::cosh, std::exp, std::log,
      std::pow, std::sin, std::sinh, std::sqrt, std::tan, std::tanh;
  for (const double x : {0.3, 0.8}) {
    expect_second_order("product", [](auto u) { return u * u * 3.0 - 2.0 * u; }, x);
    expect_second_order("quotient", [](auto u) { return (u + 1.0) / (u * u + 2.0); }, x);
    expect_second_order("reciprocal", [](auto u) { return 1.0 / u; }, x);
    expect_second_order("sqrt", [](auto u) { return sqrt(u); }, x);
    expect_second_order("cbrt", [](auto u) { return cbrt(u); }, x);
    expect_second_order("exp", [](auto u) { return exp(u); }, x);
    expect_second_order("log", [](auto u) { return log(u); }, x);
    expect_second_order("sin", [](auto u) { return sin(u); }, x);
    expect_second_order("cos", [](auto u) { return cos(u); }, x);
    expect_second_order("tan", [](auto u) { return tan(u); }, x);
    expect_second_order("asin", [](auto u) { return asin(u); }, x);
    expect_second_order("acos", [](auto u) { return acos(u); }, x);
    expect_second_order("atan", [](auto u) { return atan(u); }, x);
    expect_second_order("sinh", [](auto u) { return sinh(u); }, x);
    expect_second_order("cosh", [](auto u) { return cosh(u); }, x);
    expect_second_order("tanh", [](auto u) { return tanh(u); }, x);
    expect_second_order("pow 2.5", [](auto u) { return pow(u, 2.5); }, x);
    expect_second_order("pow -1.5", [](auto u) { return pow(u, -1.5); }, x);
    expect_second_order("2^u", [](auto u) { return pow(2.0, u); }, x);
    expect_second_order("u^u", [](auto u) { return pow(u, u); }, x);
    expect_second_order("atan2(u, c)", [](auto u) { return atan2(u * u - 0.2, 0.5 - u); }, x);
    expect_second_order("atan2(c, u)", [](auto u) { return atan2(sin(u), u - 1.0); }, x);
    expect_second_order("abs", [](auto u) { return abs(u - 0.5) * u; }, x);
  }
}

TEST(HyperDual, PowersAtZeroAreFiniteWhereStdPowIs) {
  // pow(0, 1.5) = 0 with zero first derivative; directions that are zero add nothing, even
  // where the second derivative is infinite.
  const HyperDual at_rest = pow(HyperDual(0.0, 1.0, 0.0, 0.0), 1.5);
  EXPECT_EQ(at_rest.a, 0.0);
  EXPECT_EQ(at_rest.e1, 0.0);
  EXPECT_EQ(at_rest.e2, 0.0);
  EXPECT_EQ(at_rest.e12, 0.0);
  const HyperDual smooth = pow(HyperDual(0.0, 1.0, 1.0, 0.0), 2.5);
  EXPECT_TRUE(isfinite(smooth));
  EXPECT_EQ(pow(0.0, HyperDual(2.0, 1.0, 0.0, 0.0)).a, 0.0);
  EXPECT_EQ(pow(-2.0, HyperDual(3.0)).a, -8.0);
}

namespace {

/// The mixed part of a right-hand side along (v, d) in x and dp in p against central differences
/// in (d, dp) of the Dual product f_x v; returns the largest relative difference.
double jacobian_product_derivative_error(const Problem& pb, const Eigen::VectorXd& x, const Eigen::VectorXd& p) {
  const int n = pb.n_states(), np = pb.n_parameters();
  Eigen::VectorXd v(n), d(n), dp(np);
  for (int k = 0; k < n; ++k) v[k] = std::sin(1.0 + k), d[k] = std::cos(2.0 + 3.0 * k);
  for (int k = 0; k < np; ++k) dp[k] = 0.5 + 0.1 * k;
  const double t = 0.3;
  VectorX<HyperDual> xh(n), ph(np), fh(n);
  for (int k = 0; k < n; ++k) xh[k] = HyperDual(x[k], v[k], d[k], 0.0);
  for (int k = 0; k < np; ++k) ph[k] = HyperDual(p[k], 0.0, dp[k], 0.0);
  pb.mode(0).rhs.second(HyperDual(t), xh, ph, fh);
  const auto jv = [&](double eps) {
    VectorX<Dual> xd(n), pd(np), fd(n);
    for (int k = 0; k < n; ++k) xd[k] = make_dual(x[k] + eps * d[k], v[k]);
    for (int k = 0; k < np; ++k) pd[k] = Dual(p[k] + eps * dp[k]);
    pb.mode(0).rhs.dual(Dual(t), xd, pd, fd);
    Eigen::VectorXd out(n);
    for (int k = 0; k < n; ++k) out[k] = fd[k].v[0];
    return out;
  };
  const Eigen::VectorXd at = jv(0.0);
  const double eps = 1e-6 * (1.0 + x.norm()) / (1.0 + d.norm());
  const Eigen::VectorXd difference = (jv(eps) - jv(-eps)) / (2.0 * eps);
  double worst = 0.0;
  for (int k = 0; k < n; ++k) {
    EXPECT_NEAR(fh[k].e1, at[k], 1e-12 * (1.0 + std::abs(at[k])));
    worst = std::max(worst, std::abs(fh[k].e12 - difference[k]) / (1.0 + difference.cwiseAbs().maxCoeff()));
  }
  return worst;
}

}  // namespace

TEST(HyperDual, RightHandSidesGiveTheDerivativesOfTheirJacobianProducts) {
  const Problem robertson = examples::make_example("robertson");
  Eigen::VectorXd x(3);
  x << 0.9, 2e-5, 0.1;
  const double chemistry = jacobian_product_derivative_error(robertson, x, robertson.nominal_parameters());
  std::printf("robertson: (f_x v)' against central differences %.2e\n", chemistry);
  EXPECT_LT(chemistry, 1e-7);
  const multibody::Model model = multibody::load_model(std::string(SALTUS_SOURCE_DIR) + "/examples/fivebar_floor.yaml");
  for (const auto type : {multibody::FormulationType::Index1, multibody::FormulationType::Maggi}) {
    multibody::FormulationSettings settings = model.formulation;
    settings.type = type;
    const Problem pb = multibody::make_problem(model, settings);
    Eigen::VectorXd x0(pb.n_states());
    pb.initial_state().real(pb.nominal_parameters(), x0);
    for (int k = 0; k < x0.size(); ++k) x0[k] += 0.01 * std::sin(3.0 * k);  // moving, off the start
    const double mechanism = jacobian_product_derivative_error(pb, x0, pb.nominal_parameters());
    std::printf("fivebar_floor %s: (f_x v)' against central differences %.2e\n", multibody::to_string(type).c_str(),
                mechanism);
    EXPECT_LT(mechanism, 1e-6);
  }
}
