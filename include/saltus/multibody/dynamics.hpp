#pragma once
// Constraints, mass matrix, applied forces and cost signals of a Model, templated on the Saltus
// scalar type. Units SI; generalized forces F act on q (N on positions, N m on angles).
//
// Every planar mass is constant in q (centre-of-mass body coordinates, uniform rods and point
// masses in natural coordinates). A spatial body's 7 x 7 block depends on its Euler parameters
// (spatial.hpp), so M = M(q, p) and F holds its quadratic velocity forces.
#include <saltus/multibody/dense_solve.hpp>
#include <saltus/multibody/kinematics.hpp>
#include <saltus/multibody/spatial_joints.hpp>

#include <fmt/format.h>

#include <saltus/core/error.hpp>

#include <algorithm>
#include <cmath>
#include <utility>
#include <vector>

namespace saltus::multibody {

/// Phi, Phi_q, Phi_t and the bias of every constraint: the elements' rows, the spatial joints'
/// rows, then one normalization row per spatial body.
template <class S>
ConstraintSet<S> constraints(const Model& m, const MotionState<S>& st, In<S> p) {
  // Each row goes straight into the set: its values, and its Jacobian into compressed rows.
  struct Sink {
    ConstraintSet<S>& set;
    SparseRowStack<S>& jac;
    void push_back(const KinRow<S>& r) {
      const int i = jac.rows();
      if (i >= set.phi.size()) throw std::logic_error("constraints: more rows than Model::n_constraints()");
      set.phi[i] = r.value;
      set.phi_t[i] = r.phi_t;
      set.bias[i] = r.bias;
      jac.push(r.jac);
    }
  };
  const int rows_n = m.n_constraints();
  ConstraintSet<S> c;
  c.phi.resize(rows_n);
  c.phi_t.resize(rows_n);
  c.bias.resize(rows_n);
  SparseRowStack<S> jac(m.n_coordinates(), rows_n);
  Sink sink{c, jac};
  for (const Element& e : m.elements) append_rows(e, m, st, p, sink);
  // The joints' rows but the redundant ones.
  struct JointSink {
    Sink& sink;
    const std::vector<int>& skip;
    int row = 0;
    size_t next_skip = 0;
    void push_back(const KinRow<S>& r) {
      if (next_skip < skip.size() && skip[next_skip] == row) {
        ++next_skip;
      } else {
        sink.push_back(r);
      }
      ++row;
    }
  };
  JointSink joint_sink{sink, m.redundant_joint_rows};
  for (const SpatialJoint& j : m.spatial_joints) append_joint_rows(j, m, st, p, joint_sink);
  for (size_t b = 0; b < m.spatial_bodies.size(); ++b) sink.push_back(normalization_row(m, st, static_cast<int>(b)));
  if (jac.rows() != rows_n) throw std::logic_error("constraints: fewer rows than Model::n_constraints()");
  c.jac = jac.matrix();
  return c;
}

/// Calls put(i, j, value) for every entry of M(p) that a mass element adds on its own
/// coordinates (bodies' and point masses' diagonals, a bar's 2 x 2 blocks; an entry may come
/// from several elements: they add). M(p) is built, multiplied or scattered into a larger
/// matrix from this one list.
template <class S, class Put>
void for_each_mass_entry(const Model& m, In<S> q, In<S> p, Put&& put) {
  for (size_t b = 0; b < m.bodies.size(); ++b) {
    const int o = m.body_offset(static_cast<int>(b));
    const S mass = value_of<S>(m.bodies[b].mass, p);
    put(o, o, mass);
    put(o + 1, o + 1, mass);
    put(o + 2, o + 2, value_of<S>(m.bodies[b].inertia, p));
  }
  for (size_t b = 0; b < m.spatial_bodies.size(); ++b) {
    const int o = m.spatial_offset(static_cast<int>(b));
    const Eigen::Matrix<S, 7, 7> block = spatial_mass_block<S>(m.spatial_bodies[b], Vec4<S>(q.template segment<4>(o + 3)), p);
    for (int i = 0; i < 3; ++i) put(o + i, o + i, block(i, i));  // m I: off-diagonal zeros left out
    for (int i = 0; i < 7; ++i) {
      for (int j = 3; j < 7; ++j) {
        put(o + i, o + j, block(i, j));
        if (i < 3) put(o + j, o + i, block(j, i));
      }
    }
  }
  for (const Element& e : m.elements) {
    if (e.type == ElementType::PointMass) {
      const int o = m.point_offset(e.a.index);
      const S mass = value_of<S>(e.mass, p);
      put(o, o, mass);
      put(o + 1, o + 1, mass);
    } else if (e.type == ElementType::Bar) {
      // Uniform rod in natural coordinates: (m/6) [[2I, I], [I, 2I]]; a fixed end drops out.
      const S rod = value_of<S>(e.mass, p) / S(6.0);
      const bool a_moves = e.a.kind == PointRef::Kind::Point;
      const bool b_moves = e.b.kind == PointRef::Kind::Point;
      const int oa = a_moves ? m.point_offset(e.a.index) : -1;
      const int ob = b_moves ? m.point_offset(e.b.index) : -1;
      for (int i = 0; i < 2; ++i) {
        if (a_moves) put(oa + i, oa + i, S(2.0) * rod);
        if (b_moves) put(ob + i, ob + i, S(2.0) * rod);
        if (a_moves && b_moves) {
          put(oa + i, ob + i, rod);
          put(ob + i, oa + i, rod);
        }
      }
    }
  }
}

/// M(q, p), n x n, sparse.
template <class S>
SparseMat<S> mass_matrix(const Model& m, In<S> q, In<S> p) {
  std::vector<Eigen::Triplet<S, int>> entries;
  entries.reserve(static_cast<size_t>(3 * m.bodies.size() + 8 * m.elements.size()));
  for_each_mass_entry<S>(m, q, p, [&entries](int i, int j, const S& v) { entries.emplace_back(i, j, v); });
  SparseMat<S> M(m.n_coordinates(), m.n_coordinates());
  M.setFromTriplets(entries.begin(), entries.end());
  return M;
}

/// M(p) X for X with n rows (a vector or a matrix), without forming M.
template <class S, class X>
MatX<S> mass_times(const Model& m, In<S> q, In<S> p, const X& x) {
  MatX<S> y = MatX<S>::Zero(x.rows(), x.cols());
  for_each_mass_entry<S>(m, q, p, [&y, &x](int i, int j, const S& v) { y.row(i) += v * x.row(j); });
  return y;
}

/// M(p) v for a velocity-shaped vector, without forming M.
template <class S, class V>
VectorX<S> mass_times_vector(const Model& m, In<S> q, In<S> p, const V& v) {
  VectorX<S> y = VectorX<S>::Zero(v.size());
  for_each_mass_entry<S>(m, q, p, [&y, &v](int i, int j, const S& value) { y[i] += value * v[j]; });
  return y;
}

/// Length, rate and tension of a Spring element.
template <class S>
struct SpringState {
  S length, rate, force;  ///< l [m], l-dot [m/s], f = k (l - l0) + c l-dot + actuator [N]
  Vec2<S> unit;           ///< (P_a - P_b) / l
  Kin2<S> a, b;
};

template <class S>
SpringState<S> spring_state(const Model& m, const Element& e, const MotionState<S>& st, In<S> p) {
  using std::sqrt;
  SpringState<S> s;
  s.a = point_kinematics(m, st, e.a, p);
  s.b = point_kinematics(m, st, e.b, p);
  const Vec2<S> d = s.a.value - s.b.value;
  const Vec2<S> dd = s.a.rate - s.b.rate;
  s.length = sqrt(d[0] * d[0] + d[1] * d[1]);
  if (real_part(s.length) <= 0.0) {
    throw ModelError(fmt::format("spring '{}' has zero length (its ends coincide)", e.name));
  }
  s.unit = d / s.length;
  s.rate = s.unit[0] * dd[0] + s.unit[1] * dd[1];
  s.force = value_of<S>(e.stiffness, p) * (s.length - value_of<S>(e.rest_length, p)) +
            value_of<S>(e.damping, p) * s.rate + value_of<S>(e.actuator, p);
  return s;
}

/// The relative angle of a RotationalSpring [rad], its rate, its gradient d angle / dq (n) and
/// its bias (angle-ddot - jac a: the velocity terms of the second derivative, as KinRow::bias).
template <class S>
struct Rotation {
  S angle, rate;
  RowJacobian<S> jac;
  S bias = S(0.0);
};

/// The velocity terms of the second derivative of a vector's direction angle atan2(d_y, d_x):
/// with d-ddot = d_q a + bias_d, angle-ddot = (d x d-ddot) / |d|^2 - 2 (d . d-dot)(d x d-dot) / |d|^4.
template <class S>
S direction_angle_bias(const Kin2<S>& d) {
  const S size = d.value[0] * d.value[0] + d.value[1] * d.value[1];
  const S cross_bias = d.value[0] * d.bias[1] - d.value[1] * d.bias[0];
  const S cross_rate = d.value[0] * d.rate[1] - d.value[1] * d.rate[0];
  const S dot_rate = d.value[0] * d.rate[0] + d.value[1] * d.rate[1];
  return cross_bias / size - S(2.0) * dot_rate * cross_rate / (size * size);
}

/// Bar `bar`'s vector P_to - P_from.
template <class S>
Kin2<S> bar_vector(const Model& m, int bar, const MotionState<S>& st, In<S> p) {
  const Element& e = m.elements[static_cast<size_t>(bar)];
  return difference(point_kinematics(m, st, e.b, p), point_kinematics(m, st, e.a, p));
}

/// theta_b - theta_a between bodies (-1: ground), or between two bars the angle from u (bar_a)
/// to w (bar_b): atan2(u x w, u . w), whose gradient is (u.w (w_y, -w_x) - (u x w) w) / (|u|^2
/// |w|^2) with respect to u and (u.w (-u_y, u_x) - (u x w) u) / (|u|^2 |w|^2) to w.
template <class S>
Rotation<S> relative_rotation(const Model& m, const Element& e, const MotionState<S>& st, In<S> p) {
  Rotation<S> r{S(0.0), S(0.0), {}};
  if (e.bar_a >= 0) {
    const Kin2<S> u = bar_vector(m, e.bar_a, st, p), w = bar_vector(m, e.bar_b, st, p);
    const S cross = u.value[0] * w.value[1] - u.value[1] * w.value[0];
    const S dot = u.value[0] * w.value[0] + u.value[1] * w.value[1];
    const S size = cross * cross + dot * dot;  // |u|^2 |w|^2
    if (real_part(size) <= 0.0) {
      throw ModelError(fmt::format("rotational spring '{}': a bar has zero length", e.name));
    }
    r.angle = expression_detail::atan2_of(cross, dot);
    const Vec2<S> d_u((dot * w.value[1] - cross * w.value[0]) / size, (-dot * w.value[0] - cross * w.value[1]) / size);
    const Vec2<S> d_w((-dot * u.value[1] - cross * u.value[0]) / size, (dot * u.value[0] - cross * u.value[1]) / size);
    const auto along = [](const Vec2<S>& d) {
      return [&d](const Vec2<S>& c) { return S(c[0] * d[0] + c[1] * d[1]); };
    };
    r.jac.add_mapped(u.jac, along(d_u));
    r.jac.add_mapped(w.jac, along(d_w));
    r.rate = d_u[0] * u.rate[0] + d_u[1] * u.rate[1] + d_w[0] * w.rate[0] + d_w[1] * w.rate[1];
    r.bias = direction_angle_bias(w) - direction_angle_bias(u);  // the angle is theta_w - theta_u
    return r;
  }
  if (e.body_b >= 0) r.jac.add(m.body_offset(e.body_b) + 2, S(1.0));
  if (e.body_a >= 0) r.jac.add(m.body_offset(e.body_a) + 2, S(-1.0));
  r.angle = r.jac.times(st.q);
  r.rate = r.jac.times(st.v);
  return r;
}

/// The torque of a RotationalSpring [N m]: k (angle - rest angle) + c angle-dot + torque.
template <class S>
S rotational_spring_torque(const Element& e, const Rotation<S>& r, In<S> p) {
  return value_of<S>(e.stiffness, p) * (r.angle - value_of<S>(e.angle, p)) + value_of<S>(e.damping, p) * r.rate +
         value_of<S>(e.actuator, p);
}

/// T = v^T M v / 2 [J].
template <class S>
S kinetic_energy(const Model& m, const MotionState<S>& st, In<S> p) {
  const VectorX<S> Mv = mass_times_vector<S>(m, st.q, p, st.v);
  S e(0.0);
  for (Eigen::Index i = 0; i < Mv.size(); ++i) e += st.v[i] * Mv[i];
  return S(0.5) * e;
}

/// Adds J^T f to the generalized forces (a force f applied at a point with Jacobian J).
template <class S>
void add_point_force(VectorX<S>& F, const Kin2<S>& at, const Vec2<S>& f) {
  at.jac.add_transposed(F, f);
}

/// Length, rate and tension of a spatial spring.
template <class S>
struct SpatialSpringState {
  S length, rate, force;  ///< l [m], l-dot [m/s], f = k (l - l0) + c l-dot + actuator [N]
  Vec3<S> unit;           ///< (P_a - P_b) / l
  Kin3<S> a, b;
};

template <class S>
SpatialSpringState<S> spatial_spring_state(const Model& m, const SpatialForce& e, const MotionState<S>& st, In<S> p) {
  using std::sqrt;
  SpatialSpringState<S> s;
  s.a = spatial_vector<S>(m, st, e.body_a, value3<S>(e.point_a, p), true);
  s.b = spatial_vector<S>(m, st, e.body_b, value3<S>(e.point_b, p), true);
  const Vec3<S> d = s.a.value - s.b.value;
  s.length = sqrt(dot3(d, d));
  if (real_part(s.length) <= 0.0) {
    throw ModelError(fmt::format("spring '{}' has zero length (its ends coincide)", e.name));
  }
  s.unit = d / s.length;
  s.rate = dot3(s.unit, Vec3<S>(s.a.rate - s.b.rate));
  s.force = value_of<S>(e.stiffness, p) * (s.length - value_of<S>(e.rest_length, p)) +
            value_of<S>(e.damping, p) * s.rate + value_of<S>(e.actuator, p);
  return s;
}

/// A compliant contact (SpatialForceType::CompliantContact) at one instant: how deep the
/// sphere sits in the ground and the force at its contact point (docs/multibody.md,
/// "Compliant contact").
template <class S>
struct CompliantContactState {
  S penetration = S(0.0);   ///< delta = radius - distance of the centre to the ground [m]
  S rate = S(0.0);          ///< delta-dot = -n . (velocity of the centre) [m/s]
  S normal_force = S(0.0);  ///< N = k delta^e (1 + d delta-dot) while positive, else 0 [N]
  S slip = S(0.0);          ///< |v_t|, the tangential speed of the contact point [m/s]
  Vec3<S> normal = Vec3<S>::Zero();    ///< unit ground normal there (ground axes)
  Vec3<S> friction = Vec3<S>::Zero();  ///< friction force on the sphere (ground axes) [N]
  Kin3<S> point;                       ///< the sphere's material point at the contact
  bool pressing = false;               ///< N > 0 (point, slip and friction are set)
};

/// The unit normal of the ground under a point C and the distance of C from the ground along
/// it: a plane (distance n . (C - O)), or a height field z = h(x, y) taken as its tangent plane
/// at (C_x, C_y): n = (-h_x, -h_y, 1) / w and distance (C_z - h) / w, w = sqrt(1 + h_x^2 + h_y^2).
template <class S>
std::pair<Vec3<S>, S> ground_under(const SpatialForce& f, const Vec3<S>& c, In<S> p) {
  using std::sqrt;
  if (!f.height) {
    const Vec3<S> n = unit3<S>(f.vector, p);
    return {n, dot3(n, Vec3<S>(c - value3<S>(f.point_b, p)))};
  }
  const S xy[2] = {c[0], c[1]};
  const S* values[] = {xy, p.data()};
  const S h = f.height->template evaluate_in<S>(values, 2);
  const S hx = f.height_x->template evaluate_in<S>(values, 2);
  const S hy = f.height_y->template evaluate_in<S>(values, 2);
  const S w = sqrt(S(1.0) + hx * hx + hy * hy);
  return {Vec3<S>(-hx / w, -hy / w, S(1.0) / w), S((c[2] - h) / w)};
}

template <class S>
CompliantContactState<S> compliant_contact_state(const Model& m, const SpatialForce& f, const MotionState<S>& st,
                                                 In<S> p) {
  using std::pow, std::sqrt;
  CompliantContactState<S> s;
  const Kin3<S> centre = spatial_vector<S>(m, st, f.body_a, value3<S>(f.point_a, p), true);
  const auto [normal, distance] = ground_under(f, centre.value, p);
  const S radius = value_of<S>(f.radius, p);
  s.normal = normal;
  s.penetration = radius - distance;
  s.rate = -dot3(normal, centre.rate);
  if (real_part(s.penetration) <= 0.0) return s;
  const S force = value_of<S>(f.stiffness, p) * pow(s.penetration, value_of<S>(f.exponent, p)) *
                  (S(1.0) + value_of<S>(f.damping, p) * s.rate);
  if (real_part(force) <= 0.0) return s;  // separating fast: the ground does not pull
  s.normal_force = force;
  s.pressing = true;
  // The contact point, radius along -n from the centre, as a point of the body (its velocity is
  // the material point's, the slip).
  const SpatialPose<S> pose = spatial_pose(m, st, f.body_a);
  const Vec3<S> local = value3<S>(f.point_a, p) - radius * Vec3<S>(rotation_matrix(pose.p).transpose() * normal);
  s.point = spatial_vector<S>(m, st, f.body_a, local, true);
  const Vec3<S> tangential = s.point.rate - dot3(normal, s.point.rate) * normal;
  const S speed2 = dot3(tangential, tangential);
  const S slip_velocity = value_of<S>(f.slip_velocity, p);
  s.slip = sqrt(speed2 + S(1e-300));
  s.friction = (-value_of<S>(f.friction, p) * force / sqrt(speed2 + slip_velocity * slip_velocity)) * tangential;
  return s;
}

/// The elastic energy of a compliant contact, k delta^(e+1) / (e+1) while delta > 0 [J] (its
/// damping and friction dissipate).
template <class S>
S compliant_contact_energy(const Model& m, const SpatialForce& f, const MotionState<S>& st, In<S> p) {
  using std::pow;
  const CompliantContactState<S> c = compliant_contact_state(m, f, st, p);
  if (real_part(c.penetration) <= 0.0) return S(0.0);
  const S e1 = value_of<S>(f.exponent, p) + S(1.0);
  return value_of<S>(f.stiffness, p) * pow(c.penetration, e1) / e1;
}

/// The vector of a Force [N] or Torque [N m] in ground axes: as given, or turned by its body's
/// rotation A(p) when given in the body's axes (SpatialForce::body_axes).
template <class S>
Vec3<S> applied_load_in_ground_axes(const Model& m, const SpatialForce& e, const MotionState<S>& st, In<S> p) {
  const Vec3<S> given = value3<S>(e.vector, p);
  if (!e.body_axes) return given;
  return rotate(spatial_pose(m, st, e.body_a).p, given);
}

/// Generalized forces of the spatial bodies: gravity on each centre of mass, the quadratic
/// velocity forces, springs, applied forces (J^T f at their point) and torques (2 G^T A^T n on
/// the Euler parameters), in ground axes or turned by the body (applied_load_in_ground_axes).
template <class S>
void add_spatial_forces(const Model& m, const MotionState<S>& st, In<S> p, VectorX<S>& F) {
  const Vec3<S> g(value_of<S>(m.gravity_x, p), value_of<S>(m.gravity_y, p), value_of<S>(m.gravity_z, p));
  for (size_t b = 0; b < m.spatial_bodies.size(); ++b) {
    const SpatialBody& body = m.spatial_bodies[b];
    const SpatialPose<S> pose = spatial_pose(m, st, static_cast<int>(b));
    F.template segment<7>(pose.offset) += spatial_velocity_forces<S>(body, pose, p);
    const Kin3<S> centre = spatial_vector<S>(m, st, static_cast<int>(b), value3<S>(body.center, p), true);
    centre.jac.add_transposed(F, Vec3<S>(value_of<S>(body.mass, p) * g));
  }
  for (const SpatialForce& e : m.spatial_forces) {
    switch (e.type) {
      case SpatialForceType::Spring: {
        const SpatialSpringState<S> s = spatial_spring_state(m, e, st, p);
        const Vec3<S> pull = s.force * s.unit;  // tension pulls a towards b
        s.a.jac.add_transposed(F, Vec3<S>(-pull));
        s.b.jac.add_transposed(F, pull);
        break;
      }
      case SpatialForceType::Force: {
        const Kin3<S> at = spatial_vector<S>(m, st, e.body_a, value3<S>(e.point_a, p), true);
        at.jac.add_transposed(F, applied_load_in_ground_axes(m, e, st, p));
        break;
      }
      case SpatialForceType::Torque: {
        // Virtual work n^T omega = n^T 2 E p-dot: the generalized force on p is 2 E^T n.
        const SpatialPose<S> pose = spatial_pose(m, st, e.body_a);
        F.template segment<4>(pose.offset + 3) +=
            S(2.0) * (e_matrix(pose.p).transpose() * applied_load_in_ground_axes(m, e, st, p));
        break;
      }
      case SpatialForceType::CompliantContact: {
        const CompliantContactState<S> c = compliant_contact_state(m, e, st, p);
        if (c.pressing) c.point.jac.add_transposed(F, Vec3<S>(c.normal_force * c.normal + c.friction));
        break;
      }
      case SpatialForceType::RotationalSpring: {
        const RotationalSpringState<S> s = rotational_spring_state(m, e, st, p);
        s.angle.jac.add_transposed(F, S(-s.torque));  // against the angle: -dV/dq
        break;
      }
      case SpatialForceType::Bushing:
        add_bushing_forces(m, e, st, p, F);
        break;
    }
  }
}

/// F(t, q, v, p), n: gravity, springs, dampers, actuators and applied forces; on spatial bodies
/// also the quadratic velocity forces.
template <class S>
VectorX<S> applied_forces(const Model& m, const MotionState<S>& st, In<S> p) {
  const int n = m.n_coordinates();
  VectorX<S> F = VectorX<S>::Zero(n);
  if (!m.spatial_bodies.empty()) add_spatial_forces<S>(m, st, p, F);
  const Vec2<S> g(value_of<S>(m.gravity_x, p), value_of<S>(m.gravity_y, p));
  for (size_t b = 0; b < m.bodies.size(); ++b) {
    const int o = m.body_offset(static_cast<int>(b));
    const S mass = value_of<S>(m.bodies[b].mass, p);
    F[o] += mass * g[0];
    F[o + 1] += mass * g[1];
  }
  for (const Element& e : m.elements) {
    switch (e.type) {
      case ElementType::PointMass: {
        const int o = m.point_offset(e.a.index);
        F[o] += value_of<S>(e.mass, p) * g[0];
        F[o + 1] += value_of<S>(e.mass, p) * g[1];
        break;
      }
      case ElementType::Bar: {
        // A uniform rod's weight: half on each end (the fixed end's half goes to the ground).
        const S half = value_of<S>(e.mass, p) / S(2.0);
        for (const PointRef* end : {&e.a, &e.b}) {
          if (end->kind != PointRef::Kind::Point) continue;
          const int o = m.point_offset(end->index);
          F[o] += half * g[0];
          F[o + 1] += half * g[1];
        }
        break;
      }
      case ElementType::Spring: {
        const SpringState<S> s = spring_state(m, e, st, p);
        const Vec2<S> pull = s.force * s.unit;  // tension pulls a towards b
        add_point_force<S>(F, s.a, Vec2<S>(-pull));
        add_point_force<S>(F, s.b, pull);
        break;
      }
      case ElementType::RotationalSpring: {
        const Rotation<S> r = relative_rotation(m, e, st, p);
        r.jac.add_transposed(F, S(-rotational_spring_torque(e, r, p)));  // against the angle: -dV/dq
        break;
      }
      case ElementType::Force: {
        const Kin2<S> at = point_kinematics(m, st, e.a, p);
        add_point_force<S>(F, at, Vec2<S>(value_of<S>(e.fx, p), value_of<S>(e.fy, p)));
        break;
      }
      default:
        break;
    }
  }
  return F;
}

/// Index of the constraint row where element `element` starts.
inline int first_row(const Model& m, int element) {
  int row = 0;
  for (int i = 0; i < element; ++i) row += m.elements[static_cast<size_t>(i)].n_constraints();
  return row;
}

/// The full kinematic state and multipliers a cost term may read.
/// The persistent contacts in force at a state (docs/multibody.md, "Persistent contact",
/// "Friction"): every active one holds its gap closed (a normal constraint row); a frictional
/// one either sticks (a tangential row on its slip velocity) or slides (its friction force
/// mu_f N against the slip direction rides on its normal row). Multipliers follow the model's
/// rows: one normal row per active contact, then one tangential row per sticking one.
struct ContactSet {
  std::vector<int> active;      ///< contact indices (Model::contacts), declaration order
  std::vector<int> sticking;    ///< the sticking ones among them, declaration order
  std::vector<double> sliding;  ///< per active contact: its slide direction (+1 or -1), 0 if not sliding
  bool empty() const { return active.empty(); }
  int rows() const { return static_cast<int>(active.size() + sticking.size()); }
  /// Index of contact c in `active` (or in `sticking`), or -1.
  int slot(int c) const { return index_in(active, c); }
  int sticking_slot(int c) const { return index_in(sticking, c); }
  /// The same contacts, frictionless (normal rows only): what an impact holds closed.
  ContactSet normals() const { return ContactSet{active, {}, std::vector<double>(active.size(), 0.0)}; }

 private:
  static int index_in(const std::vector<int>& list, int c) {
    for (size_t i = 0; i < list.size(); ++i) {
      if (list[i] == c) return static_cast<int>(i);
    }
    return -1;
  }
};

template <class S>
struct FullState {
  MotionState<S> motion;
  VectorX<S> a;   ///< accelerations (empty if unknown)
  /// Multipliers (empty if unknown): the model's constraint rows, then the rows of `contacts`
  /// (ContactSet: the normal ones, whose push on the point is -mu, then the sticking ones').
  VectorX<S> mu;
  ContactSet contacts;  ///< the persistent contacts in force
};

/// The index in Phi of row `row` of spatial joint `joint` (after the elements' rows, the
/// redundant joint rows left out), or -1 if that row is redundant.
inline int joint_row_index(const Model& m, int joint, int row) {
  int among_joints = row;
  for (int i = 0; i < joint; ++i) among_joints += m.spatial_joints[static_cast<size_t>(i)].n_constraints();
  int dropped_before = 0;
  for (const int r : m.redundant_joint_rows) {
    if (r == among_joints) return -1;
    if (r < among_joints) ++dropped_before;
  }
  return m.n_element_constraints() + among_joints - dropped_before;
}

/// A translational signal (x ... az) of a point on a spatial body.
template <class S>
S spatial_point_signal(const Model& m, const CostTerm& term, const FullState<S>& fs, In<S> p) {
  const Kin3<S> k = spatial_vector<S>(m, fs.motion, term.spatial_body, value3<S>(term.spatial_at, p), true);
  switch (term.signal) {
    case Signal::X: return k.value[0];
    case Signal::Y: return k.value[1];
    case Signal::Z: return k.value[2];
    case Signal::VX: return k.rate[0];
    case Signal::VY: return k.rate[1];
    case Signal::VZ: return k.rate[2];
    default: break;
  }
  const int axis = term.signal == Signal::AX ? 0 : term.signal == Signal::AY ? 1 : 2;
  return k.jac.times(fs.a)[axis] + k.bias[axis];
}

template <class S>
S signal_value(const Model& m, const CostTerm& term, const FullState<S>& fs, In<S> p) {
  const MotionState<S>& st = fs.motion;
  if (term.spatial_body >= 0) return spatial_point_signal(m, term, fs, p);
  switch (term.signal) {
    case Signal::X:
    case Signal::Y:
    case Signal::VX:
    case Signal::VY:
    case Signal::AX:
    case Signal::AY: {
      const Kin2<S> k = point_kinematics(m, st, term.point, p);
      const int axis = (term.signal == Signal::X || term.signal == Signal::VX || term.signal == Signal::AX) ? 0 : 1;
      if (term.signal == Signal::X || term.signal == Signal::Y) return k.value[axis];
      if (term.signal == Signal::VX || term.signal == Signal::VY) return k.rate[axis];
      return k.jac.times(fs.a)[axis] + k.bias[axis];
    }
    case Signal::Theta:
      return st.q[m.body_offset(term.body) + 2];
    case Signal::Omega:
      return st.v[m.body_offset(term.body) + 2];
    case Signal::Alpha:
      return fs.a[m.body_offset(term.body) + 2];
    case Signal::SpringLength:
    case Signal::SpringForce: {
      if (term.spatial_force >= 0) {
        const SpatialSpringState<S> s = spatial_spring_state(m, m.spatial_forces[static_cast<size_t>(term.spatial_force)], st, p);
        return term.signal == Signal::SpringLength ? s.length : s.force;
      }
      const SpringState<S> s = spring_state(m, m.elements[static_cast<size_t>(term.element)], st, p);
      return term.signal == Signal::SpringLength ? s.length : s.force;
    }
    case Signal::Penetration:
    case Signal::NormalForce: {
      const CompliantContactState<S> c =
          compliant_contact_state(m, m.spatial_forces[static_cast<size_t>(term.spatial_force)], st, p);
      return term.signal == Signal::Penetration ? c.penetration : c.normal_force;
    }
    case Signal::Reaction: {
      if (term.joint < 0) return fs.mu[first_row(m, term.element) + term.row];
      const int row = joint_row_index(m, term.joint, term.row);
      return row < 0 ? S(0.0) : S(fs.mu[row]);  // a redundant row carries no load
    }
    case Signal::Z:
    case Signal::VZ:
    case Signal::AZ:
      return S(0.0);  // a planar point (the parser allows z only on spatial bodies)
    case Signal::KineticEnergy:
      return kinetic_energy(m, st, p);
    case Signal::Time:
      return st.t;
  }
  return S(0.0);
}

/// Sum of weight * (signal - offset)^power over the terms.
template <class S>
S cost_terms(const Model& m, const std::vector<CostTerm>& terms, const FullState<S>& fs, In<S> p) {
  S total(0.0);
  for (const CostTerm& term : terms) {
    const S base = signal_value(m, term, fs, p) - value_of<S>(term.offset, p);
    S power(1.0);
    for (int i = 0; i < term.power; ++i) power *= base;
    total += value_of<S>(term.weight, p) * power;
  }
  return total;
}

}  // namespace saltus::multibody
