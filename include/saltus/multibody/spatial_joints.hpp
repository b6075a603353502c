#pragma once
// Spatial joints as constraint rows (theory multibody.md section 11), the angle and the travel
// of a joint, the drivers that prescribe them, and the rotational springs and bushings that act
// on them (section 12), templated on the Saltus scalar type in the KinRow form (value, jac,
// rate, bias; kinematics.hpp), element-local.
//
// A joint angle theta turns about the unit axis h_a (fixed on body a) from the normal n_a (on a)
// to the normal n_b (on b), both made perpendicular to their axes:
//   cos theta = (A_a n_a)^T (A_b n_b),   sin theta = (A_a (h_a x n_a))^T (A_b n_b),
// so theta = 0 when the normals are parallel and it grows right-handed about h_a.
#include <saltus/core/error.hpp>
#include <saltus/multibody/spatial.hpp>

#include <fmt/format.h>

#include <array>
#include <cmath>
#include <numbers>
#include <string>

namespace saltus::multibody {

/// The part of n perpendicular to the unit axis h, scaled to unit length [1].
template <class S>
Vec3<S> perpendicular_unit(const Vec3<S>& n, const Vec3<S>& h, const std::string& owner) {
  using std::sqrt;
  const Vec3<S> w = n - dot3(n, h) * h;
  const S size2 = dot3(w, w);
  if (!(real_part(size2) > 1e-16 * real_part(dot3(n, n)))) {
    throw ModelError(fmt::format("{}: its normal is parallel to its axis", owner));
  }
  return w / sqrt(size2);
}

/// cos theta and sin theta of a joint angle as rows (the header's definition).
template <class S>
struct AngleRows {
  KinRow<S> cos, sin;
};

template <class S>
AngleRows<S> joint_angle_rows(const Model& m, const MotionState<S>& st, In<S> p, int body_a, int body_b,
                              const Value3& axis_a, const Value3& normal_a, const Value3& axis_b,
                              const Value3& normal_b, const std::string& owner) {
  const Vec3<S> h_a = unit3<S>(axis_a, p);
  const Vec3<S> n_a = perpendicular_unit<S>(value3<S>(normal_a, p), h_a, owner);
  const Vec3<S> n_b = perpendicular_unit<S>(value3<S>(normal_b, p), unit3<S>(axis_b, p), owner);
  const Kin3<S> along_b = spatial_vector<S>(m, st, body_b, n_b, false);
  return {dot(spatial_vector<S>(m, st, body_a, n_a, false), along_b),
          dot(spatial_vector<S>(m, st, body_a, Vec3<S>(skew(h_a) * n_a), false), along_b)};
}

/// theta = atan2(sin, cos) in (-pi, pi] with its gradient, rate and bias, by theta_x = (cos
/// sin_x - sin cos_x) / r2 with r2 = cos^2 + sin^2 (exact also when the axes are not parallel):
/// with N = cos sin-dot - sin cos-dot, theta-dot = N / r2 and theta-ddot = (cos sin-ddot - sin
/// cos-ddot) / r2 - 2 N (cos cos-dot + sin sin-dot) / r2^2, whose velocity terms are the bias.
template <class S>
KinRow<S> angle_row(const AngleRows<S>& r) {
  const S c = r.cos.value, s = r.sin.value;
  const S size2 = c * c + s * s;
  KinRow<S> a;
  a.value = expression_detail::atan2_of(s, c);
  for (int k = 0; k < r.sin.jac.size(); ++k) a.jac.add_or_merge(r.sin.jac.coordinate(k), S(c / size2 * r.sin.jac.coefficient(k)));
  for (int k = 0; k < r.cos.jac.size(); ++k) a.jac.add_or_merge(r.cos.jac.coordinate(k), S(-s / size2 * r.cos.jac.coefficient(k)));
  const S turning = c * r.sin.rate - s * r.cos.rate;
  a.rate = turning / size2;
  a.phi_t = c * r.sin.phi_t - s * r.cos.phi_t;
  a.phi_t /= size2;
  a.bias = (c * r.sin.bias - s * r.cos.bias) / size2 -
           S(2.0) * turning * (c * r.cos.rate + s * r.sin.rate) / (size2 * size2);
  return a;
}

/// alpha(t) x + beta(t) y for rows x, y and time functions alpha, beta (value, first and second
/// time derivative), by the product rule on every field.
template <class S>
KinRow<S> time_combination(const TimeValue<S>& alpha, const KinRow<S>& x, const TimeValue<S>& beta, const KinRow<S>& y) {
  KinRow<S> r;
  r.value = alpha.f * x.value + beta.f * y.value;
  for (int k = 0; k < x.jac.size(); ++k) r.jac.add_or_merge(x.jac.coordinate(k), S(alpha.f * x.jac.coefficient(k)));
  for (int k = 0; k < y.jac.size(); ++k) r.jac.add_or_merge(y.jac.coordinate(k), S(beta.f * y.jac.coefficient(k)));
  r.phi_t = alpha.f * x.phi_t + alpha.df * x.value + beta.f * y.phi_t + beta.df * y.value;
  r.rate = alpha.f * x.rate + alpha.df * x.value + beta.f * y.rate + beta.df * y.value;
  r.bias = alpha.ddf * x.value + S(2.0) * alpha.df * x.rate + alpha.f * x.bias + beta.ddf * y.value +
           S(2.0) * beta.df * y.rate + beta.f * y.bias;
  return r;
}

/// The travel of a translational or cylindrical joint, (A_a h_a)^T (P_b - P_a) [m], as a row.
template <class S>
KinRow<S> joint_travel_row(const Model& m, const MotionState<S>& st, In<S> p, int body_a, int body_b,
                           const Value3& axis_a, const Value3& point_a, const Value3& point_b) {
  const Kin3<S> d = difference(spatial_vector<S>(m, st, body_b, value3<S>(point_b, p), true),
                               spatial_vector<S>(m, st, body_a, value3<S>(point_a, p), true));
  return dot(spatial_vector<S>(m, st, body_a, unit3<S>(axis_a, p), false), d);
}

/// A driver's row:
///   rotational     sin(theta - f(t)) = sin theta cos f - cos theta sin f = 0
///                  (its gradient is theta's at the solution, and it holds through any number of
///                  turns);
///   translational  travel - f(t) = 0.
template <class S>
KinRow<S> driver_row(const SpatialJoint& j, const Model& m, const MotionState<S>& st, In<S> p) {
  using std::cos, std::sin;
  const TimeValue<S> f = evaluate(j.drive, st.t, p);
  if (j.type == SpatialJointType::TranslationalDriver) {
    KinRow<S> r = joint_travel_row(m, st, p, j.body_a, j.body_b, j.axis_a, j.point_a, j.point_b);
    r.value -= f.f;
    r.phi_t -= f.df;
    r.rate -= f.df;
    r.bias -= f.ddf;
    return r;
  }
  const AngleRows<S> angle = joint_angle_rows(m, st, p, j.body_a, j.body_b, j.axis_a, j.normal_a, j.axis_b, j.normal_b, j.name);
  const S c = cos(f.f), s = sin(f.f);
  const S rate2 = f.df * f.df;
  const TimeValue<S> cos_f{c, S(-s * f.df), S(-c * rate2 - s * f.ddf)};
  const TimeValue<S> minus_sin_f{S(-s), S(-c * f.df), S(s * rate2 - c * f.ddf)};
  return time_combination(cos_f, angle.sin, minus_sin_f, angle.cos);
}

/// Appends spatial joint j's constraint rows (theory multibody.md section 11), with d = P_a -
/// P_b, h the axes and f_a, g_a perpendicular to h_a on a:
///   spherical      S: the three components of d;
///   revolute       S + dot-1 (f_a, h_b) + dot-1 (g_a, h_b);
///   universal      S + dot-1 (h_a, h_b);
///   distance       d^T d - length^2;
///   cylindrical    dot-1 (f_a, h_b), dot-1 (g_a, h_b), dot-2 (f_a, d), dot-2 (g_a, d);
///   translational  cylindrical + dot-1 (n_a, h_b x n_b) (the twist);
///   fixed          S + dot-1 (f_a, h_b) + dot-1 (g_a, h_b) + the twist;
///   drivers        driver_row.
template <class S, class Rows>
void append_joint_rows(const SpatialJoint& j, const Model& m, const MotionState<S>& st, In<S> p, Rows& rows) {
  using Type = SpatialJointType;
  if (j.type == Type::RotationalDriver || j.type == Type::TranslationalDriver) {
    rows.push_back(driver_row(j, m, st, p));
    return;
  }
  const Kin3<S> d = difference(spatial_vector<S>(m, st, j.body_a, value3<S>(j.point_a, p), true),
                               spatial_vector<S>(m, st, j.body_b, value3<S>(j.point_b, p), true));
  if (j.type == Type::Distance) {
    KinRow<S> r = dot(d, d);
    const S length = value_of<S>(j.length, p);
    r.value -= length * length;
    rows.push_back(r);
    return;
  }
  const bool coincident = j.type != Type::Cylindrical && j.type != Type::Translational;
  if (coincident) {
    for (int i = 0; i < 3; ++i) rows.push_back(component(d, i));
  }
  if (j.type == Type::Spherical) return;
  const Vec3<S> axis_b = unit3<S>(j.axis_b, p);
  const Kin3<S> h_b = spatial_vector<S>(m, st, j.body_b, axis_b, false);
  if (j.type == Type::Universal) {
    rows.push_back(dot(spatial_vector<S>(m, st, j.body_a, unit3<S>(j.axis_a, p), false), h_b));
    return;
  }
  const auto [f, g] = perpendicular_pair<S>(value3<S>(j.axis_a, p));
  const Kin3<S> f_a = spatial_vector<S>(m, st, j.body_a, f, false);
  const Kin3<S> g_a = spatial_vector<S>(m, st, j.body_a, g, false);
  rows.push_back(dot(f_a, h_b));
  rows.push_back(dot(g_a, h_b));
  if (!coincident) {
    rows.push_back(dot(f_a, d));
    rows.push_back(dot(g_a, d));
  }
  if (j.type == Type::Translational || j.type == Type::Fixed) {
    const Kin3<S> n_a = spatial_vector<S>(m, st, j.body_a, unit3<S>(j.normal_a, p), false);
    const Vec3<S> across = skew(axis_b) * unit3<S>(j.normal_b, p);
    rows.push_back(dot(n_a, spatial_vector<S>(m, st, j.body_b, across, false)));
  }
}


/// The state of a rotational spring-damper-actuator (SpatialForceType::RotationalSpring).
template <class S>
struct RotationalSpringState {
  KinRow<S> angle;  ///< theta in (-pi, pi] [rad], its gradient and rate [rad/s]
  S torque;         ///< n = k wrap(theta - rest) + c theta-dot + actuator [N m], against theta
};

/// theta - rest wrapped into (-pi, pi]: the spring's stiffness sees the shorter way round.
template <class S>
S wrapped_angle(const S& angle) {
  constexpr double turn = 2.0 * std::numbers::pi;
  return angle - S(turn * std::ceil((real_part(angle) - std::numbers::pi) / turn));
}

template <class S>
RotationalSpringState<S> rotational_spring_state(const Model& m, const SpatialForce& f, const MotionState<S>& st, In<S> p) {
  RotationalSpringState<S> s;
  s.angle = angle_row(joint_angle_rows(m, st, p, f.body_a, f.body_b, f.axis_a, f.normal_a, f.axis_b, f.normal_b, f.name));
  s.torque = value_of<S>(f.stiffness, p) * wrapped_angle<S>(S(s.angle.value - value_of<S>(f.rest_angle, p))) +
             value_of<S>(f.damping, p) * s.angle.rate + value_of<S>(f.actuator, p);
  return s;
}

/// The elastic energy k wrap(theta - rest)^2 / 2 of a rotational spring [J] (its actuator torque
/// is left out, as constant torques are).
template <class S>
S rotational_spring_energy(const Model& m, const SpatialForce& f, const MotionState<S>& st, In<S> p) {
  const RotationalSpringState<S> s = rotational_spring_state(m, f, st, p);
  const S twist = wrapped_angle<S>(S(s.angle.value - value_of<S>(f.rest_angle, p)));
  return S(0.5) * value_of<S>(f.stiffness, p) * twist * twist;
}

/// The deflections of a bushing (SpatialForceType::Bushing): the displacement u_i = (A_a
/// e_i)^T (P_b - P_a) [m] and the rotation phi = 2 G(p_a) p_b [rad to first order], each a row.
template <class S>
struct BushingState {
  std::array<KinRow<S>, 3> displacement, rotation;
};

/// phi = 2 G(p_a) p_b as three rows: d phi / d p_b = 2 G(p_a), d phi / d p_a = -2 G(p_b) (G(x) y
/// = -G(y) x), rate 2 G(p_a-dot) p_b + 2 G(p_a) p_b-dot, bias 4 G(p_a-dot) p_b-dot. The ground's
/// Euler parameters are (1, 0, 0, 0).
template <class S>
std::array<KinRow<S>, 3> relative_rotation_rows(const Model& m, const MotionState<S>& st, int body_a, int body_b) {
  const auto pose_of = [&](int body) {
    SpatialPose<S> pose;
    if (body >= 0) return spatial_pose(m, st, body);
    pose.offset = -1;
    pose.r.setZero();
    pose.r_dot.setZero();
    pose.p = Vec4<S>(S(1.0), S(0.0), S(0.0), S(0.0));
    pose.p_dot.setZero();
    return pose;
  };
  const SpatialPose<S> a = pose_of(body_a), b = pose_of(body_b);
  const Mat34<S> G_a = g_matrix(a.p), G_b = g_matrix(b.p);
  const Vec3<S> value = S(2.0) * (G_a * b.p);
  const Vec3<S> rate = S(2.0) * (g_matrix(a.p_dot) * b.p + G_a * b.p_dot);
  const Vec3<S> bias = S(4.0) * (g_matrix(a.p_dot) * b.p_dot);
  std::array<KinRow<S>, 3> rows;
  for (int i = 0; i < 3; ++i) {
    KinRow<S>& r = rows[static_cast<size_t>(i)];
    r.value = value[i];
    r.rate = rate[i];
    r.phi_t = S(0.0);
    r.bias = bias[i];
    for (int c = 0; c < 4; ++c) {
      if (body_b >= 0) r.jac.add(b.offset + 3 + c, S(2.0 * G_a(i, c)));
      if (body_a >= 0) r.jac.add(a.offset + 3 + c, S(-2.0 * G_b(i, c)));
    }
  }
  return rows;
}

template <class S>
BushingState<S> bushing_state(const Model& m, const SpatialForce& f, const MotionState<S>& st, In<S> p) {
  BushingState<S> s;
  const Kin3<S> d = difference(spatial_vector<S>(m, st, f.body_b, value3<S>(f.point_b, p), true),
                               spatial_vector<S>(m, st, f.body_a, value3<S>(f.point_a, p), true));
  for (int i = 0; i < 3; ++i) {
    s.displacement[static_cast<size_t>(i)] = dot(spatial_vector<S>(m, st, f.body_a, Vec3<S>(Vec3<S>::Unit(i)), false), d);
  }
  s.rotation = relative_rotation_rows(m, st, f.body_a, f.body_b);
  return s;
}

/// Adds a bushing's generalized forces, -(k_i u_i + c_i u_i-dot) grad u_i - (k_i phi_i + c_i
/// phi_i-dot) grad phi_i, to F: the gradient of its energy (bushing_energy) and the damping's
/// Rayleigh forces, so that a and b feel equal and opposite forces and moments.
template <class S>
void add_bushing_forces(const Model& m, const SpatialForce& f, const MotionState<S>& st, In<S> p, VectorX<S>& F) {
  const BushingState<S> s = bushing_state(m, f, st, p);
  const Vec3<S> k = value3<S>(f.linear_stiffness, p), c = value3<S>(f.linear_damping, p);
  const Vec3<S> kr = value3<S>(f.angular_stiffness, p), cr = value3<S>(f.angular_damping, p);
  for (size_t i = 0; i < 3; ++i) {
    const KinRow<S>& u = s.displacement[i];
    const KinRow<S>& phi = s.rotation[i];
    u.jac.add_transposed(F, S(-(k[i] * u.value + c[i] * u.rate)));
    phi.jac.add_transposed(F, S(-(kr[i] * phi.value + cr[i] * phi.rate)));
  }
}

/// The elastic energy of a bushing, sum over a's axes of (k_i u_i^2 + k_rot,i phi_i^2) / 2 [J].
template <class S>
S bushing_energy(const Model& m, const SpatialForce& f, const MotionState<S>& st, In<S> p) {
  const BushingState<S> s = bushing_state(m, f, st, p);
  const Vec3<S> k = value3<S>(f.linear_stiffness, p), kr = value3<S>(f.angular_stiffness, p);
  S e(0.0);
  for (size_t i = 0; i < 3; ++i) {
    e += k[i] * s.displacement[i].value * s.displacement[i].value + kr[i] * s.rotation[i].value * s.rotation[i].value;
  }
  return S(0.5) * e;
}

}  // namespace saltus::multibody
