#pragma once
// The named outputs of a planar Model (Problem::set_outputs): what a person wants to see of a
// mechanism besides its state, whatever the formulation. In order:
//   <point>.x <point>.y <point>.x_dot <point>.y_dot            every point [m, m/s]
//   <body>.x <body>.y <body>.theta and their _dot               every body (centre of mass)
//   <body>.x .y .z .e0 .e1 .e2 .e3 and their _dot                every spatial body (frame origin,
//                                                               Euler parameters)
//   <element>.reaction[k]   multiplier of row k of a constraint element (multibody.md sign
//                           convention: mu > 0 pushes along -Phi_q^T)
//   <element>.phi[k]        residual of row k of a constraint element
//                           (the same for spatial joints, then <body>.normalization.reaction[0]
//                           and .phi[0] of each spatial body)
//   <spring>.length <spring>.force     translational springs, planar (tension positive)
//                                      [m, N]
//   <spring>.angle <spring>.torque     rotational springs (theta_b - theta_a) [rad, N m]
//   then the spatial forces in their order: <spring>.length <spring>.force of a spatial
//   spring; <contact>.penetration .normal_force .friction .slip of a compliant contact:
//   delta [m], N [N], |friction| [N], |v_t| [m/s]; <spring>.angle .torque of a spatial
//   rotational spring [rad, N m]; <bushing>.displacement[k] [m] and .rotation[k] [1] (phi)
//   <contact>.gap           normal distance of the contact point to its line [m]
//   <contact>.force         persistent contacts: the push while active (>= 0), else 0 [N, N m]
//   <contact>.friction      frictional contacts: the friction force on the point along the
//                           line's tangent t = (n_y, -n_x), else 0 [N]
//   kinetic_energy potential_energy total_energy                [J]
// The potential energy holds gravity, springs (k (l - l0)^2 / 2 + actuator l), rotational
// springs, constant forces and compliant contacts (k delta^(e+1) / (e+1)); dampers dissipate, and drivers, impacts and applied torques on
// spatial bodies change the total.
#include "formulations.hpp"

#include <string>
#include <utility>
#include <vector>

namespace saltus::multibody::detail {

/// Names and units of the outputs, in the order output_values writes them.
std::pair<std::vector<std::string>, std::vector<std::string>> output_names_and_units(const Model& m);

/// Whether the outputs need the multipliers (the model has constraints or persistent contacts).
inline bool outputs_need_reactions(const Model& m) {
  return m.n_constraints() > 0 ||
         std::any_of(m.contacts.begin(), m.contacts.end(), [](const Contact& c) { return c.persistent; });
}

/// V(q, p) [J]: gravity, springs, rotational springs, constant forces.
template <class S>
S potential_energy(const Model& m, const MotionState<S>& st, In<S> p) {
  const Vec2<S> g(value_of<S>(m.gravity_x, p), value_of<S>(m.gravity_y, p));
  auto weight = [&](const S& mass, const Vec2<S>& at) { return -mass * (g[0] * at[0] + g[1] * at[1]); };
  S v(0.0);
  const Vec3<S> g3(g[0], g[1], value_of<S>(m.gravity_z, p));
  for (size_t b = 0; b < m.spatial_bodies.size(); ++b) {
    const SpatialBody& body = m.spatial_bodies[b];
    const Vec3<S> centre = spatial_vector<S>(m, st, static_cast<int>(b), value3<S>(body.center, p), true).value;
    v -= value_of<S>(body.mass, p) * dot3(g3, centre);
  }
  for (const SpatialForce& f : m.spatial_forces) {
    if (f.type == SpatialForceType::Spring) {
      const SpatialSpringState<S> s = spatial_spring_state(m, f, st, p);
      const S stretch = s.length - value_of<S>(f.rest_length, p);
      v += S(0.5) * value_of<S>(f.stiffness, p) * stretch * stretch + value_of<S>(f.actuator, p) * s.length;
    } else if (f.type == SpatialForceType::Force && !f.body_axes) {  // a follower force has no potential
      v -= dot3(value3<S>(f.vector, p), spatial_vector<S>(m, st, f.body_a, value3<S>(f.point_a, p), true).value);
    } else if (f.type == SpatialForceType::CompliantContact) {
      v += compliant_contact_energy(m, f, st, p);
    } else if (f.type == SpatialForceType::RotationalSpring) {
      v += rotational_spring_energy(m, f, st, p);
    } else if (f.type == SpatialForceType::Bushing) {
      v += bushing_energy(m, f, st, p);
    }
  }
  for (size_t b = 0; b < m.bodies.size(); ++b) {
    const int o = m.body_offset(static_cast<int>(b));
    v += weight(value_of<S>(m.bodies[b].mass, p), Vec2<S>(st.q[o], st.q[o + 1]));
  }
  for (const Element& e : m.elements) {
    switch (e.type) {
      case ElementType::PointMass:
        v += weight(value_of<S>(e.mass, p), point_kinematics(m, st, e.a, p).value);
        break;
      case ElementType::Bar: {
        const Vec2<S> mid = S(0.5) * (point_kinematics(m, st, e.a, p).value + point_kinematics(m, st, e.b, p).value);
        v += weight(value_of<S>(e.mass, p), mid);
        break;
      }
      case ElementType::Spring: {
        const SpringState<S> s = spring_state(m, e, st, p);
        const S stretch = s.length - value_of<S>(e.rest_length, p);
        v += S(0.5) * value_of<S>(e.stiffness, p) * stretch * stretch + value_of<S>(e.actuator, p) * s.length;
        break;
      }
      case ElementType::RotationalSpring: {
        const S angle = relative_rotation(m, e, st, p).angle;
        const S twist = angle - value_of<S>(e.angle, p);
        v += S(0.5) * value_of<S>(e.stiffness, p) * twist * twist + value_of<S>(e.actuator, p) * angle;
        break;
      }
      case ElementType::Force: {
        const Vec2<S> at = point_kinematics(m, st, e.a, p).value;
        v -= value_of<S>(e.fx, p) * at[0] + value_of<S>(e.fy, p) * at[1];
        break;
      }
      default:
        break;
    }
  }
  return v;
}

/// Writes the outputs of the full state `fs` (multipliers present when the model has
/// constraints) into y, in the order of output_names_and_units.
template <class S>
void output_values(const Model& m, const FullState<S>& fs, In<S> p, Out<S> y) {
  const MotionState<S>& st = fs.motion;
  Eigen::Index k = 0;
  // Coordinates and velocities, point by point and body by body.
  for (size_t i = 0; i < m.points.size(); ++i) {
    const int o = m.point_offset(static_cast<int>(i));
    for (int j = 0; j < 2; ++j) y[k++] = st.q[o + j];
    for (int j = 0; j < 2; ++j) y[k++] = st.v[o + j];
  }
  for (size_t b = 0; b < m.bodies.size(); ++b) {
    const int o = m.body_offset(static_cast<int>(b));
    for (int j = 0; j < 3; ++j) y[k++] = st.q[o + j];
    for (int j = 0; j < 3; ++j) y[k++] = st.v[o + j];
  }
  for (size_t b = 0; b < m.spatial_bodies.size(); ++b) {
    const int o = m.spatial_offset(static_cast<int>(b));
    for (int j = 0; j < 7; ++j) y[k++] = st.q[o + j];
    for (int j = 0; j < 7; ++j) y[k++] = st.v[o + j];
  }
  const ConstraintSet<S> cs = constraints<S>(m, st, p);
  // Every row, in Phi's order with the redundant joint rows in place (reaction 0, residual
  // evaluated): elements, joints, normalizations.
  const int n_elements = m.n_element_constraints(), n_joints = m.n_joint_constraints();
  const auto every_joint_row = [&](auto&& write) {
    for (size_t j = 0; j < m.spatial_joints.size(); ++j) {
      for (int row = 0; row < m.spatial_joints[j].n_constraints(); ++row) write(static_cast<int>(j), row);
    }
  };
  for (int r = 0; r < n_elements; ++r) y[k++] = fs.mu[r];
  every_joint_row([&](int j, int row) {
    const int at = joint_row_index(m, j, row);
    y[k++] = at < 0 ? S(0.0) : S(fs.mu[at]);
  });
  for (Eigen::Index r = n_elements + n_joints; r < cs.phi.size(); ++r) y[k++] = fs.mu[r];
  for (int r = 0; r < n_elements; ++r) y[k++] = cs.phi[r];
  std::vector<KinRow<S>> joint_rows;
  for (const SpatialJoint& j : m.spatial_joints) append_joint_rows(j, m, st, p, joint_rows);
  for (const KinRow<S>& r : joint_rows) y[k++] = r.value;
  for (Eigen::Index r = n_elements + n_joints; r < cs.phi.size(); ++r) y[k++] = cs.phi[r];
  for (const Element& e : m.elements) {
    if (e.type == ElementType::Spring) {
      const SpringState<S> s = spring_state(m, e, st, p);
      y[k++] = s.length;
      y[k++] = s.force;
    } else if (e.type == ElementType::RotationalSpring) {
      const Rotation<S> r = relative_rotation(m, e, st, p);
      y[k++] = r.angle;
      y[k++] = rotational_spring_torque(e, r, p);
    }
  }
  for (const SpatialForce& f : m.spatial_forces) {
    if (f.type == SpatialForceType::Spring) {
      const SpatialSpringState<S> s = spatial_spring_state(m, f, st, p);
      y[k++] = s.length;
      y[k++] = s.force;
    } else if (f.type == SpatialForceType::CompliantContact) {
      using std::sqrt;
      const CompliantContactState<S> c = compliant_contact_state(m, f, st, p);
      y[k++] = c.penetration;
      y[k++] = c.normal_force;
      y[k++] = sqrt(dot3(c.friction, c.friction) + S(1e-300));
      y[k++] = c.slip;
    } else if (f.type == SpatialForceType::RotationalSpring) {
      const RotationalSpringState<S> s = rotational_spring_state(m, f, st, p);
      y[k++] = s.angle.value;
      y[k++] = s.torque;
    } else if (f.type == SpatialForceType::Bushing) {
      const BushingState<S> s = bushing_state(m, f, st, p);
      for (const KinRow<S>& u : s.displacement) y[k++] = u.value;
      for (const KinRow<S>& phi : s.rotation) y[k++] = phi.value;
    }
  }
  for (const Contact& c : m.contacts) y[k++] = contact_geometry(m, c, st, p).gap.value;
  const ContactSet& set = fs.contacts;
  for (size_t c = 0; c < m.contacts.size(); ++c) {
    const Contact& contact = m.contacts[c];
    if (!contact.persistent) continue;
    const int slot = set.slot(static_cast<int>(c)), stick = set.sticking_slot(static_cast<int>(c));
    const S normal = slot < 0 ? S(0.0) : S(fs.mu[cs.phi.size() + slot]);
    y[k++] = -normal;
    if (!contact.frictional()) continue;
    // The friction force along t = (n_y, -n_x): -mu_t while sticking, -mu_f N sigma sliding.
    if (stick >= 0) {
      y[k++] = -fs.mu[cs.phi.size() + static_cast<Eigen::Index>(set.active.size()) + stick];
    } else {
      y[k++] = slot < 0 ? S(0.0) : S(value_of<S>(contact.friction, p) * normal * S(set.sliding[static_cast<size_t>(slot)]));
    }
  }
  const S kinetic = kinetic_energy(m, st, p);
  const S potential = potential_energy(m, st, p);
  y[k++] = kinetic;
  y[k++] = potential;
  y[k++] = kinetic + potential;
}

}  // namespace saltus::multibody::detail
