#pragma once
// Kinematics and body dynamics of spatial rigid bodies with Euler parameters (theory
// multibody.md sections 10-12), templated on the Saltus scalar type, element-local: each
// quantity carries its Jacobian over the few coordinates it depends on (kinematics.hpp's
// KinRow form: value, jac, rate, bias), so that the constraint rows of spatial joints join the
// planar ones in one ConstraintSet.
//
// A spatial body's coordinates are q_i = (r, p) with r the body frame's origin [m] and p =
// (e0, e) its Euler parameters; velocities are (r-dot, p-dot). Every formula holds for any p,
// normalized or not (the normalization p^T p = 1 is a constraint row), so derivatives are exact.
// Complex-step safety: no Eigen .norm() or .dot() (they conjugate).
#include <saltus/multibody/kinematics.hpp>

#include <Eigen/Core>

#include <cmath>
#include <utility>

namespace saltus::multibody {

template <class S>
using Vec3 = Eigen::Matrix<S, 3, 1>;
template <class S>
using Vec4 = Eigen::Matrix<S, 4, 1>;
template <class S>
using Mat3 = Eigen::Matrix<S, 3, 3>;
template <class S>
using Mat34 = Eigen::Matrix<S, 3, 4>;

template <class S>
S dot3(const Vec3<S>& a, const Vec3<S>& b) {
  return a[0] * b[0] + a[1] * b[1] + a[2] * b[2];
}

/// a b, each entry summed in index order. Eigen vectorizes a double product (another summation
/// order), so a double evaluation would round differently from the real part of a Dual one: the
/// KKT matrix of a Jacobian product (CVODES's GMRES, at the right-hand side's own point) then
/// differed in the last bits from the right-hand side's and missed its cached factorization
/// (measured on the vehicle: 1,434 of its simulation's 4,298 KLU factorizations).
template <class S, int R, int K, int C>
Eigen::Matrix<S, R, C> product(const Eigen::Matrix<S, R, K>& a, const Eigen::Matrix<S, K, C>& b) {
  Eigen::Matrix<S, R, C> out;
  for (int i = 0; i < R; ++i) {
    for (int j = 0; j < C; ++j) {
      S sum = a(i, 0) * b(0, j);
      for (int k = 1; k < K; ++k) sum += a(i, k) * b(k, j);
      out(i, j) = sum;
    }
  }
  return out;
}

/// a~, the matrix of the cross product: a~ b = a x b.
template <class S>
Mat3<S> skew(const Vec3<S>& a) {
  Mat3<S> m;
  m << S(0.0), -a[2], a[1], a[2], S(0.0), -a[0], -a[1], a[0], S(0.0);
  return m;
}

template <class S>
Vec3<S> vector_part(const Vec4<S>& p) {
  return Vec3<S>(p[1], p[2], p[3]);
}

/// A(p) = (e0^2 - e^T e) I + 2 e e^T + 2 e0 e~: body axes to ground axes.
template <class S>
Mat3<S> rotation_matrix(const Vec4<S>& p) {
  const Vec3<S> e = vector_part(p);
  const S e0 = p[0];
  Mat3<S> A = (e0 * e0 - dot3(e, e)) * Mat3<S>::Identity() + S(2.0) * e * e.transpose() + S(2.0) * e0 * skew(e);
  return A;
}

/// a x b.
template <class S>
Vec3<S> cross3(const Vec3<S>& a, const Vec3<S>& b) {
  return Vec3<S>(a[1] * b[2] - a[2] * b[1], a[2] * b[0] - a[0] * b[2], a[0] * b[1] - a[1] * b[0]);
}

/// A(x) a = (x0^2 - e^T e) a + 2 e (e^T a) + 2 x0 (e x a), e = (x1, x2, x3), without forming
/// A(x): a third of the operations of rotation_matrix(x) * a, which matters on the reverse tape
/// and in the AD scalars. For Euler parameters x = p it is the rotation of a; the formula is
/// the quadratic form of any 4-vector (B(x, a) x = 2 A(x) a, used for the bias with x = p-dot).
template <class S>
Vec3<S> rotate(const Vec4<S>& x, const Vec3<S>& a) {
  const Vec3<S> e = vector_part(x);
  const S x0 = x[0];
  const S along = S(2.0) * dot3(e, a);
  const S scale = x0 * x0 - dot3(e, e);
  const S twice_x0 = S(2.0) * x0;
  const Vec3<S> c = cross3(e, a);
  return Vec3<S>(scale * a[0] + along * e[0] + twice_x0 * c[0], scale * a[1] + along * e[1] + twice_x0 * c[1],
                 scale * a[2] + along * e[2] + twice_x0 * c[2]);
}

/// [-e, sign e~ + e0 I] (3 x 4): E(p) with sign +1, G(p) with sign -1.
template <class S>
Mat34<S> euler_rate_matrix(const Vec4<S>& p, double sign) {
  const Vec3<S> e = vector_part(p);
  Mat34<S> m;
  m.col(0) = -e;
  m.template rightCols<3>() = S(sign) * skew(e) + p[0] * Mat3<S>::Identity();
  return m;
}

/// E(p) = [-e, e~ + e0 I] (3 x 4); the ground angular velocity is omega = 2 E p-dot.
template <class S>
Mat34<S> e_matrix(const Vec4<S>& p) {
  return euler_rate_matrix(p, 1.0);
}

/// G(p) = [-e, -e~ + e0 I] (3 x 4); the body angular velocity is omega' = 2 G p-dot.
template <class S>
Mat34<S> g_matrix(const Vec4<S>& p) {
  return euler_rate_matrix(p, -1.0);
}

/// B(p, a) = d(A(p) a)/dp = 2 [(e0 I + e~) a, e a^T - (e0 I + e~) a~] (3 x 4). Linear in p.
/// Written out entry by entry (e~ a~ = a e^T - (e^T a) I makes the right 3 x 3 block
/// 2 (e^T a) I plus an antisymmetric part): half the operations of the matrix products.
template <class S>
Mat34<S> b_matrix(const Vec4<S>& p, const Vec3<S>& a) {
  const Vec3<S> e = vector_part(p);
  const S e0 = p[0];
  const Vec3<S> c = cross3(e, a);
  Mat34<S> m;
  for (int i = 0; i < 3; ++i) m(i, 0) = S(2.0) * (e0 * a[i] + c[i]);
  const S diagonal = S(2.0) * dot3(e, a);
  // (i, j) off the diagonal: 2 (e_i a_j - a_i e_j) - 2 e0 (a~)_ij, antisymmetric.
  const S m01 = S(2.0) * (e[0] * a[1] - a[0] * e[1] + e0 * a[2]);
  const S m02 = S(2.0) * (e[0] * a[2] - a[0] * e[2] - e0 * a[1]);
  const S m12 = S(2.0) * (e[1] * a[2] - a[1] * e[2] + e0 * a[0]);
  m(0, 1) = diagonal;
  m(1, 2) = diagonal;
  m(2, 3) = diagonal;
  m(0, 2) = m01;
  m(1, 1) = -m01;
  m(0, 3) = m02;
  m(2, 1) = -m02;
  m(1, 3) = m12;
  m(2, 2) = -m12;
  return m;
}

/// The Euler parameters and their rates of spatial body `body` at a motion state.
template <class S>
struct SpatialPose {
  int offset = 0;  ///< index of r_x in q
  Vec3<S> r, r_dot;
  Vec4<S> p, p_dot;
};

template <class S>
SpatialPose<S> spatial_pose(const Model& m, const MotionState<S>& st, int body) {
  SpatialPose<S> pose;
  pose.offset = m.spatial_offset(body);
  pose.r = st.q.template segment<3>(pose.offset);
  pose.r_dot = st.v.template segment<3>(pose.offset);
  pose.p = st.q.template segment<4>(pose.offset + 3);
  pose.p_dot = st.v.template segment<4>(pose.offset + 3);
  return pose;
}

/// A spatial vector quantity: value, rate, bias (as Kin2, in three components) and its
/// Jacobian over the coordinates (a body point: 3 + 4 entries; a difference of two: 14).
template <class S>
struct Kin3 {
  Vec3<S> value, rate, bias;
  LocalJacobian<Vec3<S>, 14> jac;
};

template <class S>
Vec3<S> value3(const Value3& v, In<S> p) {
  return Vec3<S>(value_of<S>(v.x, p), value_of<S>(v.y, p), value_of<S>(v.z, p));
}

/// A Value3 scaled to unit length (axes and normals of joints).
template <class S>
Vec3<S> unit3(const Value3& v, In<S> p) {
  using std::sqrt;
  const Vec3<S> w = value3<S>(v, p);
  return w / sqrt(dot3(w, w));
}

/// A vector w fixed on spatial body `body` (given in its frame) or a constant ground vector
/// (body -1): the direction A(p) w, or with `with_origin` the body point r + A(p) w.
/// d(A w)/dp = B(p, w); its rate is B(p, w) p-dot and its bias B(p-dot, w) p-dot (B is linear
/// in p).
template <class S>
Kin3<S> spatial_vector(const Model& m, const MotionState<S>& st, int body, const Vec3<S>& w, bool with_origin) {
  Kin3<S> k;
  if (body < 0) {
    k.value = w;
    k.rate.setZero();
    k.bias.setZero();
    return k;
  }
  const SpatialPose<S> pose = spatial_pose(m, st, body);
  const Mat34<S> B = b_matrix(pose.p, w);
  k.value = rotate(pose.p, w);
  k.rate = B * pose.p_dot;
  k.bias = S(2.0) * rotate(pose.p_dot, w);  // B(p-dot, w) p-dot
  for (int c = 0; c < 4; ++c) k.jac.add(pose.offset + 3 + c, Vec3<S>(B.col(c)));
  if (with_origin) {
    k.value += pose.r;
    k.rate += pose.r_dot;
    for (int c = 0; c < 3; ++c) k.jac.add(pose.offset + c, Vec3<S>(Vec3<S>::Unit(c)));
  }
  return k;
}

template <class S>
Kin3<S> difference(const Kin3<S>& a, const Kin3<S>& b) {
  Kin3<S> d{a.value - b.value, a.rate - b.rate, a.bias - b.bias, a.jac};
  d.jac.add_mapped(b.jac, [](const Vec3<S>& c) { return Vec3<S>(-c); });
  return d;
}

/// a^T b as a row (the product rule on every field). Entries on one coordinate are merged so
/// that a dot-2 row (a direction on body i against a difference of points on i and j) fits a
/// row Jacobian.
template <class S>
KinRow<S> dot(const Kin3<S>& a, const Kin3<S>& b) {
  KinRow<S> r;
  r.value = dot3(a.value, b.value);
  const auto merge = [&r](const Kin3<S>& from, const Vec3<S>& along) {
    for (int k = 0; k < from.jac.size(); ++k) r.jac.add_or_merge(from.jac.coordinate(k), dot3(from.jac.coefficient(k), along));
  };
  merge(a, b.value);
  merge(b, a.value);
  r.rate = dot3(a.rate, b.value) + dot3(a.value, b.rate);
  r.phi_t = S(0.0);
  r.bias = dot3(a.bias, b.value) + S(2.0) * dot3(a.rate, b.rate) + dot3(a.value, b.bias);
  return r;
}

/// Component i of a spatial vector quantity as a row.
template <class S>
KinRow<S> component(const Kin3<S>& a, int i) {
  KinRow<S> r{a.value[i], {}, a.rate[i], S(0.0), a.bias[i]};
  r.jac.add_mapped(a.jac, [i](const Vec3<S>& c) { return c[i]; });
  return r;
}

/// Two unit vectors perpendicular to h and to each other (f, g, h right-handed), chosen from
/// the ground axis least aligned with h (decided on real parts, so the choice is the same in
/// every scalar type and the vectors are smooth functions of h).
template <class S>
std::pair<Vec3<S>, Vec3<S>> perpendicular_pair(const Vec3<S>& h) {
  using std::sqrt;
  int least = 0;
  for (int c = 1; c < 3; ++c) {
    if (std::abs(real_part(h[c])) < std::abs(real_part(h[least]))) least = c;
  }
  const Vec3<S> axis = Vec3<S>::Unit(least);
  Vec3<S> f = skew(h) * axis;
  f /= sqrt(dot3(f, f));
  Vec3<S> g = skew(h) * f;
  g /= sqrt(dot3(g, g));
  return {f, g};
}

/// The normalization row p^T p - 1 of spatial body `body`.
template <class S>
KinRow<S> normalization_row(const Model& m, const MotionState<S>& st, int body) {
  const SpatialPose<S> pose = spatial_pose(m, st, body);
  KinRow<S> r;
  r.value = S(-1.0);
  r.rate = S(0.0);
  r.phi_t = S(0.0);
  r.bias = S(0.0);
  for (int c = 0; c < 4; ++c) {
    r.value += pose.p[c] * pose.p[c];
    r.rate += S(2.0) * pose.p[c] * pose.p_dot[c];
    r.bias += S(2.0) * pose.p_dot[c] * pose.p_dot[c];
    r.jac.add(pose.offset + 3 + c, S(2.0) * pose.p[c]);
  }
  return r;
}

/// The inertia tensor about the centre of mass, J'_C [kg m^2], of a spatial body.
template <class S>
Mat3<S> central_inertia(const SpatialBody& b, In<S> p) {
  const S xx = value_of<S>(b.inertia[0], p), yy = value_of<S>(b.inertia[1], p), zz = value_of<S>(b.inertia[2], p);
  const S xy = value_of<S>(b.inertia[3], p), xz = value_of<S>(b.inertia[4], p), yz = value_of<S>(b.inertia[5], p);
  Mat3<S> J;
  J << xx, xy, xz, xy, yy, yz, xz, yz, zz;
  return J;
}

/// The 7 x 7 mass matrix of spatial body `body` (theory 10.2), with J' = J'_C - m s~ s~ the
/// inertia about the frame origin and s = s'_C the centre of mass in the body frame:
///   M = [m I, -2 m A s~ G; 2 m G^T s~ A^T, 4 G^T J' G].
/// Its null space is (0, p): the normalization row removes it.
template <class S>
Eigen::Matrix<S, 7, 7> spatial_mass_block(const SpatialBody& b, const Vec4<S>& euler, In<S> p) {
  // The products written out (product): the entries round alike in every scalar type.
  const S mass = value_of<S>(b.mass, p);
  const Mat3<S> s = skew(value3<S>(b.center, p));
  const Mat3<S> J = central_inertia<S>(b, p) - mass * product(s, s);
  const Mat3<S> A = rotation_matrix(euler);
  const Mat34<S> G = g_matrix(euler);
  const Eigen::Matrix<S, 4, 3> G_t = G.transpose();
  Eigen::Matrix<S, 7, 7> M;
  M.template topLeftCorner<3, 3>() = mass * Mat3<S>::Identity();
  const Mat34<S> coupling = -S(2.0) * mass * product(product(A, s), G);
  M.template topRightCorner<3, 4>() = coupling;
  M.template bottomLeftCorner<4, 3>() = coupling.transpose();
  M.template bottomRightCorner<4, 4>() = S(4.0) * product(product(G_t, J), G);
  return M;
}

/// The quadratic velocity forces of spatial body `body` (theory 10.2), with G' = G(p-dot):
///   L = [4 m E G'^T G' G^T s; -8 G'^T J' G p-dot].
template <class S>
Eigen::Matrix<S, 7, 1> spatial_velocity_forces(const SpatialBody& b, const SpatialPose<S>& pose, In<S> p) {
  const S mass = value_of<S>(b.mass, p);
  const Vec3<S> center = value3<S>(b.center, p);
  const Mat3<S> s = skew(center);
  const Mat3<S> J = central_inertia<S>(b, p) - mass * s * s;
  const Mat34<S> G = g_matrix(pose.p), G_dot = g_matrix(pose.p_dot);
  Eigen::Matrix<S, 7, 1> L;
  L.template head<3>() = S(4.0) * mass * (e_matrix(pose.p) * (G_dot.transpose() * (G_dot * (G.transpose() * center))));
  L.template tail<4>() = -S(8.0) * (G_dot.transpose() * (J * (G * pose.p_dot)));
  return L;
}

}  // namespace saltus::multibody
