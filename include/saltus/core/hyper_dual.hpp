#pragma once
// A hyper-dual number a + e1 E1 + e2 E2 + e12 E1 E2 (E1^2 = E2^2 = 0, E1 E2 != 0): evaluated at
// x + s v E1 + d E2 + w E1 E2, a function f gives f(x) + f'(x)[v] E1 + f'(x)[d] E2 +
// (f'(x)[w] + f''(x)[v, d]) E1 E2, exact to round-off. Saltus compiles right-hand sides and
// running costs for it (Problem's modes and costs, `second`) so that the Rosenbrock integrator,
// whose steps use the Jacobian f_x, can differentiate a Jacobian-vector product f_x v with
// respect to the states, parameters and time (stages.hpp, docs/discrete-sensitivities.md).
//
// Every operation is a plain function of (const HyperDual&, const HyperDual&), so doubles
// convert implicitly on either side, as model code expects (`2.0 * x[0]`, `xdot[0] = 1.0;`).
// Comparisons compare values only, as for Dual: branch on real_part().
#include <Eigen/Core>

#include <algorithm>
#include <cmath>

namespace saltus {

struct HyperDual {
  double a = 0.0;    ///< value
  double e1 = 0.0;   ///< derivative along the first direction
  double e2 = 0.0;   ///< derivative along the second direction
  double e12 = 0.0;  ///< mixed second derivative (plus the first derivative along w)

  HyperDual() = default;
  HyperDual(double value) : a(value) {}  // NOLINT(google-explicit-constructor)
  HyperDual(double value, double d1, double d2, double d12) : a(value), e1(d1), e2(d2), e12(d12) {}

  HyperDual& operator+=(const HyperDual& o) { return *this = HyperDual(a + o.a, e1 + o.e1, e2 + o.e2, e12 + o.e12); }
  HyperDual& operator-=(const HyperDual& o) { return *this = HyperDual(a - o.a, e1 - o.e1, e2 - o.e2, e12 - o.e12); }
  HyperDual& operator*=(const HyperDual& o);
  HyperDual& operator/=(const HyperDual& o);
};

namespace hyper_dual_detail {
/// g(u) from g(a), g'(a), g''(a): the chain rule to second order. A derivative whose direction
/// is zero contributes nothing, even where it is infinite (pow(0, 1.5)'' at 0).
inline HyperDual chain(const HyperDual& u, double g0, double g1, double g2) {
  const auto times = [](double g, double d) { return d == 0.0 ? 0.0 : g * d; };
  return {g0, times(g1, u.e1), times(g1, u.e2), times(g1, u.e12) + times(g2, u.e1 * u.e2)};
}
}  // namespace hyper_dual_detail

inline HyperDual operator+(const HyperDual& u) { return u; }
inline HyperDual operator-(const HyperDual& u) { return {-u.a, -u.e1, -u.e2, -u.e12}; }
inline HyperDual operator+(const HyperDual& u, const HyperDual& v) { return {u.a + v.a, u.e1 + v.e1, u.e2 + v.e2, u.e12 + v.e12}; }
inline HyperDual operator-(const HyperDual& u, const HyperDual& v) { return {u.a - v.a, u.e1 - v.e1, u.e2 - v.e2, u.e12 - v.e12}; }
inline HyperDual operator*(const HyperDual& u, const HyperDual& v) {
  return {u.a * v.a, u.e1 * v.a + u.a * v.e1, u.e2 * v.a + u.a * v.e2,
          u.e12 * v.a + u.e1 * v.e2 + u.e2 * v.e1 + u.a * v.e12};
}
inline HyperDual reciprocal(const HyperDual& v) {
  const double r = 1.0 / v.a;
  return hyper_dual_detail::chain(v, r, -r * r, 2.0 * r * r * r);
}
inline HyperDual operator/(const HyperDual& u, const HyperDual& v) { return u * reciprocal(v); }
inline HyperDual& HyperDual::operator*=(const HyperDual& o) { return *this = *this * o; }
inline HyperDual& HyperDual::operator/=(const HyperDual& o) { return *this = *this / o; }

inline bool operator==(const HyperDual& u, const HyperDual& v) { return u.a == v.a; }
inline bool operator!=(const HyperDual& u, const HyperDual& v) { return u.a != v.a; }
inline bool operator<(const HyperDual& u, const HyperDual& v) { return u.a < v.a; }
inline bool operator>(const HyperDual& u, const HyperDual& v) { return u.a > v.a; }
inline bool operator<=(const HyperDual& u, const HyperDual& v) { return u.a <= v.a; }
inline bool operator>=(const HyperDual& u, const HyperDual& v) { return u.a >= v.a; }

inline HyperDual sqrt(const HyperDual& u) {
  const double s = std::sqrt(u.a);
  return hyper_dual_detail::chain(u, s, 0.5 / s, -0.25 / (s * u.a));
}
inline HyperDual cbrt(const HyperDual& u) {
  const double c = std::cbrt(u.a);
  return hyper_dual_detail::chain(u, c, c / (3.0 * u.a), -2.0 * c / (9.0 * u.a * u.a));
}
inline HyperDual exp(const HyperDual& u) {
  const double e = std::exp(u.a);
  return hyper_dual_detail::chain(u, e, e, e);
}
inline HyperDual log(const HyperDual& u) { return hyper_dual_detail::chain(u, std::log(u.a), 1.0 / u.a, -1.0 / (u.a * u.a)); }
inline HyperDual log10(const HyperDual& u) { return log(u) * (1.0 / std::log(10.0)); }
inline HyperDual sin(const HyperDual& u) {
  const double s = std::sin(u.a);
  return hyper_dual_detail::chain(u, s, std::cos(u.a), -s);
}
inline HyperDual cos(const HyperDual& u) {
  const double c = std::cos(u.a);
  return hyper_dual_detail::chain(u, c, -std::sin(u.a), -c);
}
inline HyperDual tan(const HyperDual& u) {
  const double t = std::tan(u.a), d = 1.0 + t * t;
  return hyper_dual_detail::chain(u, t, d, 2.0 * t * d);
}
inline HyperDual asin(const HyperDual& u) {
  const double q = 1.0 - u.a * u.a, d = 1.0 / std::sqrt(q);
  return hyper_dual_detail::chain(u, std::asin(u.a), d, u.a * d / q);
}
inline HyperDual acos(const HyperDual& u) {
  const double q = 1.0 - u.a * u.a, d = 1.0 / std::sqrt(q);
  return hyper_dual_detail::chain(u, std::acos(u.a), -d, -u.a * d / q);
}
inline HyperDual atan(const HyperDual& u) {
  const double d = 1.0 / (1.0 + u.a * u.a);
  return hyper_dual_detail::chain(u, std::atan(u.a), d, -2.0 * u.a * d * d);
}
inline HyperDual sinh(const HyperDual& u) {
  const double s = std::sinh(u.a);
  return hyper_dual_detail::chain(u, s, std::cosh(u.a), s);
}
inline HyperDual cosh(const HyperDual& u) {
  const double c = std::cosh(u.a);
  return hyper_dual_detail::chain(u, c, std::sinh(u.a), c);
}
inline HyperDual tanh(const HyperDual& u) {
  const double t = std::tanh(u.a), d = 1.0 - t * t;
  return hyper_dual_detail::chain(u, t, d, -2.0 * t * d);
}
inline HyperDual abs(const HyperDual& u) { return u.a < 0.0 ? -u : u; }
inline HyperDual fabs(const HyperDual& u) { return abs(u); }
inline HyperDual fmin(const HyperDual& u, const HyperDual& v) { return v.a < u.a ? v : u; }
inline HyperDual fmax(const HyperDual& u, const HyperDual& v) { return u.a < v.a ? v : u; }
inline HyperDual floor(const HyperDual& u) { return HyperDual(std::floor(u.a)); }
inline HyperDual ceil(const HyperDual& u) { return HyperDual(std::ceil(u.a)); }
/// u^k for a constant exponent (finite at u = 0 for k >= 0, as std::pow and Dual are).
inline HyperDual pow(const HyperDual& u, double k) {
  if (k == 0.0) return HyperDual(1.0);
  if (k == 1.0) return u;
  if (k == 2.0) return u * u;
  return hyper_dual_detail::chain(u, std::pow(u.a, k), k * std::pow(u.a, k - 1.0),
                                  k * (k - 1.0) * std::pow(u.a, k - 2.0));
}
/// b^v: exp(v log b) for b > 0; a constant exponent or a zero base as std::pow.
inline HyperDual pow(double b, const HyperDual& v) {
  if (v.e1 == 0.0 && v.e2 == 0.0 && v.e12 == 0.0) return HyperDual(std::pow(b, v.a));
  if (b == 0.0 && v.a > 0.0) return HyperDual(0.0);
  return exp(v * std::log(b));
}
/// u^v: with a varying exponent exp(v log u), defined for u > 0 (as for Dual).
inline HyperDual pow(const HyperDual& u, const HyperDual& v) {
  if (v.e1 == 0.0 && v.e2 == 0.0 && v.e12 == 0.0) return pow(u, v.a);
  return exp(v * log(u));
}
/// atan2(y, x): the angle's value with its branch, derivatives from the smooth atan2 field.
inline HyperDual atan2(const HyperDual& y, const HyperDual& x) {
  const double r2 = x.a * x.a + y.a * y.a;
  const double gy = x.a / r2, gx = -y.a / r2;
  const double gyy = -2.0 * x.a * y.a / (r2 * r2), gxx = -gyy, gxy = (y.a * y.a - x.a * x.a) / (r2 * r2);
  return {std::atan2(y.a, x.a), gy * y.e1 + gx * x.e1, gy * y.e2 + gx * x.e2,
          gy * y.e12 + gx * x.e12 + gyy * y.e1 * y.e2 + gxx * x.e1 * x.e2 + gxy * (y.e1 * x.e2 + x.e1 * y.e2)};
}
inline HyperDual hypot(const HyperDual& x, const HyperDual& y) { return sqrt(x * x + y * y); }
inline bool isfinite(const HyperDual& u) {
  return std::isfinite(u.a) && std::isfinite(u.e1) && std::isfinite(u.e2) && std::isfinite(u.e12);
}
inline bool isnan(const HyperDual& u) { return std::isnan(u.a); }

inline double real_part(const HyperDual& s) { return s.a; }

}  // namespace saltus

namespace Eigen {
template <>
struct NumTraits<saltus::HyperDual> : NumTraits<double> {
  using Real = saltus::HyperDual;
  using NonInteger = saltus::HyperDual;
  using Nested = saltus::HyperDual;
  using Literal = saltus::HyperDual;
  enum { IsComplex = 0, IsInteger = 0, IsSigned = 1, RequireInitialization = 1, ReadCost = 1, AddCost = 4, MulCost = 9 };
};
}  // namespace Eigen
