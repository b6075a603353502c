#pragma once
// The scalar types a Saltus model function is compiled for, and the vector views it receives.
//
// A model function is written once as a template (a generic lambda) on the scalar type S and
// instantiated for
//   - double                : simulation;
//   - std::complex<double>  : complex-step differentiation (theory/hybrid-ode.md section 8);
//   - saltus::Dual          : forward-mode AD, one tangent direction (ceres::Jet<double, 1>);
//   - saltus::DualBlock     : forward-mode AD, kTangentBlock directions at once, for the
//                             right-hand sides that opt in (Problem::set_block_tangents);
//   - saltus::Reverse       : reverse-mode AD (reverse_scalar.hpp: operations record their
//                             local partials on a tape that one sweep transposes), for the
//                             vector-Jacobian products of the adjoint.
// Inside a model function, call math functions unqualified after `using std::sqrt;` etc. so that
// argument-dependent lookup picks the overload for the scalar type, and take branches on
// saltus::real_part(value) only: the complex step needs the real trajectory unchanged.
#include <Eigen/Core>
#include <saltus/core/dual_block.hpp>
#include <saltus/core/reverse_scalar.hpp>
#include <ceres/jet.h>

#include <complex>

namespace saltus {

using Complex = std::complex<double>;
/// Forward-mode dual number: value `.a`, one directional derivative `.v[0]`. It is a
/// ceres::Jet<double, 1> (all of ceres' math functions apply) that, unlike Jet, converts
/// implicitly from double, so model code can write `xdot[0] = 1.0;` for every scalar type.
struct Dual : ceres::Jet<double, 1> {
  using Base = ceres::Jet<double, 1>;
  Dual() = default;
  Dual(double value) : Base(value) {}         // NOLINT(google-explicit-constructor)
  Dual(const Base& jet) : Base(jet) {}        // NOLINT(google-explicit-constructor)
};

// Comparisons of Duals compare values (as ceres::Jet does); spelled out for the derived type,
// which Jet's templated operators do not deduce (Eigen's products and reductions need them).
inline bool operator==(const Dual& a, const Dual& b) { return a.a == b.a; }
inline bool operator!=(const Dual& a, const Dual& b) { return a.a != b.a; }
inline bool operator<(const Dual& a, const Dual& b) { return a.a < b.a; }
inline bool operator>(const Dual& a, const Dual& b) { return a.a > b.a; }
inline bool operator<=(const Dual& a, const Dual& b) { return a.a <= b.a; }
inline bool operator>=(const Dual& a, const Dual& b) { return a.a >= b.a; }

template <class S>
using VectorX = Eigen::Matrix<S, Eigen::Dynamic, 1>;

/// Read-only vector argument of a model function (states, state derivatives, parameters).
template <class S>
using In = Eigen::Ref<const VectorX<S>>;

/// Output vector argument of a model function (x-dot, post-jump state, initial state).
template <class S>
using Out = Eigen::Ref<VectorX<S>>;

/// The real part of any Saltus scalar: use it for every branch in a model function.
inline double real_part(double s) { return s; }
inline double real_part(const Complex& s) { return s.real(); }
inline double real_part(const Dual& s) { return s.a; }
inline double real_part(const Reverse& s) { return s.value(); }

/// A Dual with value `value` and tangent `tangent`.
inline Dual make_dual(double value, double tangent) {
  Dual d(value);
  d.v[0] = tangent;
  return d;
}

}  // namespace saltus

namespace Eigen {
template <>
struct NumTraits<saltus::Dual> : NumTraits<ceres::Jet<double, 1>> {
  using Real = saltus::Dual;
  using NonInteger = saltus::Dual;
  using Nested = saltus::Dual;
  using Literal = saltus::Dual;
};
template <>
struct NumTraits<saltus::Reverse> : NumTraits<double> {
  using Real = saltus::Reverse;
  using NonInteger = saltus::Reverse;
  using Nested = saltus::Reverse;
  using Literal = saltus::Reverse;
  enum {
    IsComplex = 0,
    IsInteger = 0,
    IsSigned = 1,
    RequireInitialization = 1,
    ReadCost = 1,
    AddCost = 3,
    MulCost = 3
  };
};
template <typename BinaryOp>
struct ScalarBinaryOpTraits<saltus::Reverse, double, BinaryOp> {
  using ReturnType = saltus::Reverse;
};
template <typename BinaryOp>
struct ScalarBinaryOpTraits<double, saltus::Reverse, BinaryOp> {
  using ReturnType = saltus::Reverse;
};
template <typename BinaryOp>
struct ScalarBinaryOpTraits<saltus::Dual, double, BinaryOp> {
  using ReturnType = saltus::Dual;
};
template <typename BinaryOp>
struct ScalarBinaryOpTraits<double, saltus::Dual, BinaryOp> {
  using ReturnType = saltus::Dual;
};
}  // namespace Eigen
