#pragma once
// A dual number with kTangentBlock directional derivatives: a + v[0] E0 + ... + v[3] E3
// (Ei Ej = 0). Evaluated at x + sum_k d_k E_k, a function f gives f(x) + sum_k f'(x)[d_k] E_k:
// four tangents from one evaluation whose shared work (values, branches, a factorization) is done
// once. Forward sensitivities use it through Problem::set_block_tangents.
//
// A plain struct with fixed-size loops rather than ceres::Jet<double, 4>: Jet's Eigen vector of
// derivatives was not inlined by GCC (an assignment loop called per operation), and the
// vehicle's forward sensitivities ran 15 % slower in blocks of Jet<double, 4> than in Dual. The
// derivatives are 16-byte aligned (48 bytes in all): a 40-byte layout, copied in 16-byte pieces
// that its 8-byte value offsets from the derivatives' pairs, stalled store forwarding
// (docs/benchmarks.md, "Block tangents").
// The formulas follow Jet's (ceres/jet.h) for the ordinary cases; a derivative whose direction is
// zero contributes nothing, even where it is infinite (sqrt at 0) or undefined (log u of a
// power's exponent at u <= 0), as for HyperDual and Reverse, so that one direction's singularity
// does not spoil the three others of its block. Doubles convert implicitly, as model code expects
// (`2.0 * x[0]`, `xdot[0] = 1.0;`); comparisons compare values only: branch on real_part().
#include <Eigen/Core>

#include <array>
#include <cmath>

namespace saltus {

/// Tangent directions a DualBlock carries: forward sensitivities evaluate a right-hand side once
/// per block of this many parameters instead of once per parameter.
inline constexpr int kTangentBlock = 4;

struct DualBlock {
  static constexpr int DIMENSION = kTangentBlock;  ///< as ceres::Jet's, for generic code
  double a = 0.0;                                  ///< value
  alignas(16) std::array<double, kTangentBlock> v{};  ///< derivatives along the directions

  DualBlock() = default;
  DualBlock(double value) : a(value) {}  // NOLINT(google-explicit-constructor)

  DualBlock& operator+=(const DualBlock& o);
  DualBlock& operator-=(const DualBlock& o);
  DualBlock& operator*=(const DualBlock& o);
  DualBlock& operator/=(const DualBlock& o);
  DualBlock& operator*=(double s);
  DualBlock& operator/=(double s);
};

namespace dual_block_detail {
/// g(u) from g(a) and g'(a): the chain rule. A zero direction contributes nothing.
inline DualBlock chain(const DualBlock& u, double g0, double g1) {
  DualBlock out(g0);
  for (int k = 0; k < kTangentBlock; ++k) out.v[k] = u.v[k] == 0.0 ? 0.0 : g1 * u.v[k];
  return out;
}
/// u scaled by the constant s.
inline DualBlock scaled(const DualBlock& u, double s) {
  DualBlock out(u.a * s);
  for (int k = 0; k < kTangentBlock; ++k) out.v[k] = u.v[k] * s;
  return out;
}
inline bool constant(const DualBlock& u) {
  for (int k = 0; k < kTangentBlock; ++k) {
    if (u.v[k] != 0.0) return false;
  }
  return true;
}
}  // namespace dual_block_detail

inline DualBlock operator+(const DualBlock& u) { return u; }
inline DualBlock operator-(const DualBlock& u) { return dual_block_detail::scaled(u, -1.0); }
// Each result is built in place, never as a copy of an operand modified: the copy's
// differently sized stores and loads stalled store forwarding (a third of the vehicle's block
// evaluations went to Eigen's sums).
inline DualBlock operator+(const DualBlock& u, const DualBlock& w) {
  DualBlock out(u.a + w.a);
  for (int k = 0; k < kTangentBlock; ++k) out.v[k] = u.v[k] + w.v[k];
  return out;
}
inline DualBlock operator-(const DualBlock& u, const DualBlock& w) {
  DualBlock out(u.a - w.a);
  for (int k = 0; k < kTangentBlock; ++k) out.v[k] = u.v[k] - w.v[k];
  return out;
}
inline DualBlock operator+(const DualBlock& u, double s) {
  DualBlock out(u.a + s);
  out.v = u.v;
  return out;
}
inline DualBlock operator+(double s, const DualBlock& u) { return u + s; }
inline DualBlock operator-(const DualBlock& u, double s) { return u + (-s); }
inline DualBlock operator-(double s, const DualBlock& u) {
  DualBlock out(s - u.a);
  for (int k = 0; k < kTangentBlock; ++k) out.v[k] = -u.v[k];
  return out;
}
inline DualBlock operator*(const DualBlock& u, const DualBlock& w) {
  DualBlock out(u.a * w.a);
  for (int k = 0; k < kTangentBlock; ++k) out.v[k] = w.a * u.v[k] + u.a * w.v[k];
  return out;
}
inline DualBlock operator*(const DualBlock& u, double s) { return dual_block_detail::scaled(u, s); }
inline DualBlock operator*(double s, const DualBlock& u) { return dual_block_detail::scaled(u, s); }
inline DualBlock operator/(const DualBlock& u, const DualBlock& w) {
  const double inverse = 1.0 / w.a, ratio = u.a / w.a;  // the value as double's
  DualBlock out(ratio);
  for (int k = 0; k < kTangentBlock; ++k) out.v[k] = (u.v[k] - ratio * w.v[k]) * inverse;
  return out;
}
inline DualBlock operator/(const DualBlock& u, double s) {
  const double inverse = 1.0 / s;
  DualBlock out(u.a / s);
  for (int k = 0; k < kTangentBlock; ++k) out.v[k] = u.v[k] * inverse;
  return out;
}
inline DualBlock operator/(double s, const DualBlock& w) { return DualBlock(s) / w; }
inline DualBlock& DualBlock::operator+=(const DualBlock& o) {
  a += o.a;
  for (int k = 0; k < kTangentBlock; ++k) v[k] += o.v[k];
  return *this;
}
inline DualBlock& DualBlock::operator-=(const DualBlock& o) {
  a -= o.a;
  for (int k = 0; k < kTangentBlock; ++k) v[k] -= o.v[k];
  return *this;
}
inline DualBlock& DualBlock::operator*=(const DualBlock& o) { return *this = *this * o; }
inline DualBlock& DualBlock::operator/=(const DualBlock& o) { return *this = *this / o; }
inline DualBlock& DualBlock::operator*=(double s) { return *this = *this * s; }
inline DualBlock& DualBlock::operator/=(double s) { return *this = *this / s; }

inline bool operator==(const DualBlock& u, const DualBlock& w) { return u.a == w.a; }
inline bool operator!=(const DualBlock& u, const DualBlock& w) { return u.a != w.a; }
inline bool operator<(const DualBlock& u, const DualBlock& w) { return u.a < w.a; }
inline bool operator>(const DualBlock& u, const DualBlock& w) { return u.a > w.a; }
inline bool operator<=(const DualBlock& u, const DualBlock& w) { return u.a <= w.a; }
inline bool operator>=(const DualBlock& u, const DualBlock& w) { return u.a >= w.a; }

inline DualBlock sqrt(const DualBlock& u) {
  const double s = std::sqrt(u.a);
  return dual_block_detail::chain(u, s, 1.0 / (2.0 * s));
}
inline DualBlock cbrt(const DualBlock& u) {
  const double c = std::cbrt(u.a);
  return dual_block_detail::chain(u, c, 1.0 / (3.0 * c * c));
}
inline DualBlock exp(const DualBlock& u) {
  const double e = std::exp(u.a);
  return dual_block_detail::chain(u, e, e);
}
inline DualBlock log(const DualBlock& u) { return dual_block_detail::chain(u, std::log(u.a), 1.0 / u.a); }
inline DualBlock log10(const DualBlock& u) { return dual_block_detail::chain(u, std::log10(u.a), 1.0 / (u.a * std::log(10.0))); }
inline DualBlock sin(const DualBlock& u) { return dual_block_detail::chain(u, std::sin(u.a), std::cos(u.a)); }
inline DualBlock cos(const DualBlock& u) { return dual_block_detail::chain(u, std::cos(u.a), -std::sin(u.a)); }
inline DualBlock tan(const DualBlock& u) {
  const double t = std::tan(u.a);
  return dual_block_detail::chain(u, t, 1.0 + t * t);
}
inline DualBlock asin(const DualBlock& u) {
  return dual_block_detail::chain(u, std::asin(u.a), 1.0 / std::sqrt(1.0 - u.a * u.a));
}
inline DualBlock acos(const DualBlock& u) {
  return dual_block_detail::chain(u, std::acos(u.a), -1.0 / std::sqrt(1.0 - u.a * u.a));
}
inline DualBlock atan(const DualBlock& u) { return dual_block_detail::chain(u, std::atan(u.a), 1.0 / (1.0 + u.a * u.a)); }
inline DualBlock sinh(const DualBlock& u) { return dual_block_detail::chain(u, std::sinh(u.a), std::cosh(u.a)); }
inline DualBlock cosh(const DualBlock& u) { return dual_block_detail::chain(u, std::cosh(u.a), std::sinh(u.a)); }
inline DualBlock tanh(const DualBlock& u) {
  const double t = std::tanh(u.a);
  return dual_block_detail::chain(u, t, 1.0 - t * t);
}
inline DualBlock abs(const DualBlock& u) { return u.a < 0.0 ? -u : u; }
inline DualBlock fabs(const DualBlock& u) { return abs(u); }
inline DualBlock fmin(const DualBlock& u, const DualBlock& w) { return w.a < u.a ? w : u; }
inline DualBlock fmax(const DualBlock& u, const DualBlock& w) { return u.a < w.a ? w : u; }
inline DualBlock floor(const DualBlock& u) { return DualBlock(std::floor(u.a)); }
inline DualBlock ceil(const DualBlock& u) { return DualBlock(std::ceil(u.a)); }
/// u^k for a constant exponent (finite at u = 0 for k >= 0, as std::pow and Dual are).
inline DualBlock pow(const DualBlock& u, double k) {
  if (k == 0.0) return DualBlock(1.0);
  if (k == 1.0) return u;
  if (k == 2.0) return u * u;
  return dual_block_detail::chain(u, std::pow(u.a, k), k * std::pow(u.a, k - 1.0));
}
/// b^w: d/dw b^w = b^w log b, in the directions that move w only (a negative or zero base
/// where w does not move keeps std::pow's value and a zero derivative).
inline DualBlock pow(double b, const DualBlock& w) {
  const double value = std::pow(b, w.a);
  return dual_block_detail::chain(w, value, value * std::log(b));
}
/// u^w with both varying: w u^(w-1) u' + u^w log(u) w', each term only in the directions that move
/// its variable (log u is undefined for u <= 0, where only a constant exponent is finite).
inline DualBlock pow(const DualBlock& u, const DualBlock& w) {
  if (dual_block_detail::constant(w)) return pow(u, w.a);
  const double value = std::pow(u.a, w.a), base_slope = w.a * std::pow(u.a, w.a - 1.0), log_u = std::log(u.a);
  DualBlock out(value);
  for (int k = 0; k < kTangentBlock; ++k) {
    const double along_u = u.v[k] == 0.0 ? 0.0 : base_slope * u.v[k];
    const double along_w = w.v[k] == 0.0 ? 0.0 : value * log_u * w.v[k];
    out.v[k] = along_u + along_w;
  }
  return out;
}
/// atan2(y, x): the angle's value with its branch, derivatives from the smooth atan2 field.
inline DualBlock atan2(const DualBlock& y, const DualBlock& x) {
  const double r2 = x.a * x.a + y.a * y.a, gy = x.a / r2, gx = -y.a / r2;
  DualBlock out(std::atan2(y.a, x.a));
  for (int k = 0; k < kTangentBlock; ++k) out.v[k] = gy * y.v[k] + gx * x.v[k];
  return out;
}
inline DualBlock hypot(const DualBlock& x, const DualBlock& y) {
  const double h = std::hypot(x.a, y.a);
  DualBlock out(h);
  for (int k = 0; k < kTangentBlock; ++k) out.v[k] = x.a / h * x.v[k] + y.a / h * y.v[k];
  return out;
}
inline bool isfinite(const DualBlock& u) {
  bool finite = std::isfinite(u.a);
  for (int k = 0; k < kTangentBlock; ++k) finite = finite && std::isfinite(u.v[k]);
  return finite;
}
inline bool isnan(const DualBlock& u) { return std::isnan(u.a); }

inline double real_part(const DualBlock& s) { return s.a; }

}  // namespace saltus

namespace Eigen {
template <>
struct NumTraits<saltus::DualBlock> : NumTraits<double> {
  using Real = saltus::DualBlock;
  using NonInteger = saltus::DualBlock;
  using Nested = saltus::DualBlock;
  using Literal = saltus::DualBlock;
  enum { IsComplex = 0, IsInteger = 0, IsSigned = 1, RequireInitialization = 1, ReadCost = 1, AddCost = 5, MulCost = 9 };
};
template <typename BinaryOp>
struct ScalarBinaryOpTraits<saltus::DualBlock, double, BinaryOp> {
  using ReturnType = saltus::DualBlock;
};
template <typename BinaryOp>
struct ScalarBinaryOpTraits<double, saltus::DualBlock, BinaryOp> {
  using ReturnType = saltus::DualBlock;
};
}  // namespace Eigen
