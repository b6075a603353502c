#pragma once
// Contacts of a planar Model: their gaps (point against a line, joint stops), the tangential
// coordinate of a point-line contact (slip), the constraint rows of the persistent contacts in
// force (ContactSet, with sliding friction on their force columns), the KKT impulse of impacts
// and the contacts a model starts resting on. Templated on the scalar type like the
// formulations that use them (formulations.hpp).
#include <saltus/multibody/spatial_joints.hpp>

#include "patterned_assembly.hpp"
#include "position_analysis.hpp"

#include <algorithm>
#include <cmath>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

namespace saltus::multibody::detail {

template <class S>
struct ContactGeometry {
  Vec2<S> normal = Vec2<S>::Zero();  ///< unit normal of the line, to the allowed side (global; point-line only)
  Kin2<S> point;                     ///< the contact point (point-line only)
  /// The guard (.value), its gradient r_q (.jac), rate and bias (the acceleration's velocity
  /// terms): an active persistent contact is the constraint row gap = 0.
  KinRow<S> gap;
};

/// A point-line contact's line: its origin O and unit normal n and tangent t = (n_y, -n_x)
/// (perp(t) = n), turning with the line's body.
template <class S>
struct LineFrame {
  Kin2<S> origin, normal, tangent;
};

template <class S>
LineFrame<S> line_frame(const Model& m, const Contact& c, const MotionState<S>& st, In<S> p) {
  using std::sqrt;
  const S nx = value_of<S>(c.normal_x, p), ny = value_of<S>(c.normal_y, p);
  const S length = sqrt(nx * nx + ny * ny);
  PointRef origin;
  origin.kind = c.line_body < 0 ? PointRef::Kind::Ground : PointRef::Kind::Body;
  origin.index = c.line_body;
  origin.x = c.line_x;
  origin.y = c.line_y;
  return LineFrame<S>{point_kinematics(m, st, origin, p),
                      body_vector<S>(m, st, c.line_body, Vec2<S>(nx / length, ny / length), false),
                      body_vector<S>(m, st, c.line_body, Vec2<S>(ny / length, -nx / length), false)};
}

/// The gap of a contact and its derivatives: for a line carried by a body both O and n turn
/// with it, so r_q has a term on the body's angle, (P - O)^T dn/dtheta. A joint stop's gap is
/// its angle or travel less the limit (times `side`).
template <class S>
ContactGeometry<S> contact_geometry(const Model& m, const Contact& c, const MotionState<S>& st, In<S> p) {
  using std::sqrt;
  ContactGeometry<S> g;
  if (c.kind == ContactKind::PointPlane) {
    Vec3<S> n = value3<S>(c.plane_normal, p);
    n /= sqrt(dot3(n, n));
    const Kin3<S> point = spatial_vector<S>(m, st, c.spatial_body, value3<S>(c.spatial_at, p), true);
    const Kin3<S> origin = spatial_vector<S>(m, st, -1, value3<S>(c.plane_point, p), true);
    g.gap = dot(spatial_vector<S>(m, st, -1, n, false), difference(point, origin));
    return g;
  }
  const S limit = c.kind == ContactKind::PointLine ? S(0.0) : value_of<S>(c.limit, p);
  if (c.kind == ContactKind::SpatialAngleStop || c.kind == ContactKind::SpatialTravelStop) {
    const SpatialJoint& j = c.spatial_joint;
    g.gap = c.kind == ContactKind::SpatialAngleStop
                ? angle_row(joint_angle_rows(m, st, p, j.body_a, j.body_b, j.axis_a, j.normal_a, j.axis_b, j.normal_b,
                                             c.name))
                : joint_travel_row(m, st, p, j.body_a, j.body_b, j.axis_a, j.point_a, j.point_b);
    g.gap.value = c.side * (g.gap.value - limit);
    g.gap.jac *= S(c.side);
    g.gap.rate *= c.side;
    g.gap.phi_t *= c.side;
    g.gap.bias *= c.side;
    return g;
  }
  if (c.kind == ContactKind::AngleStop) {
    const Rotation<S> r = relative_rotation(m, c.joint, st, p);
    g.gap.value = c.side * (r.angle - limit);
    g.gap.jac = r.jac;
    g.gap.jac *= S(c.side);
    g.gap.rate = c.side * r.rate;
    g.gap.phi_t = S(0.0);
    g.gap.bias = c.side * r.bias;
    return g;
  }
  if (c.kind == ContactKind::TravelStop) {
    const S dx = value_of<S>(c.joint.dir_x, p), dy = value_of<S>(c.joint.dir_y, p);
    const S length = sqrt(dx * dx + dy * dy);
    const Kin2<S> direction = body_vector<S>(m, st, c.joint.body_a, Vec2<S>(dx / length, dy / length), false);
    g.gap = dot(direction, difference(point_kinematics(m, st, c.joint.a, p), point_kinematics(m, st, c.joint.b, p)));
    g.gap.value = c.side * (g.gap.value - limit);
    g.gap.jac *= S(c.side);
    g.gap.rate *= c.side;
    g.gap.bias *= c.side;
    return g;
  }
  const LineFrame<S> line = line_frame(m, c, st, p);
  g.normal = line.normal.value;
  g.point = point_kinematics(m, st, c.point, p);
  g.gap = dot(line.normal, difference(g.point, line.origin));
  return g;
}

/// The tangential coordinate s = t^T (P - O) of a point-line contact. At a closed contact (gap
/// 0) s_q is the generalized direction of a tangential force pair on the point and the line's
/// body, and s-dot the slip velocity (s-dot = t^T (P-dot - O-dot) + omega n^T (P - O), whose
/// last term is omega times the gap).
template <class S>
KinRow<S> tangential_row(const Model& m, const Contact& c, const MotionState<S>& st, In<S> p) {
  const LineFrame<S> line = line_frame(m, c, st, p);
  return dot(line.tangent, difference(point_kinematics(m, st, c.point, p), line.origin));
}

/// The constraint set of a mode: the model's rows Phi followed by the rows of the persistent
/// contacts in force (ContactSet): the gap row of every active contact, whose multiplier mu_c is
/// its normal force (the push on the point is N = -mu_c), then the slip-velocity row of every
/// sticking one (value 0: the tangential position is free, only its rate is held), whose
/// multiplier is the friction force -mu_t along t. A sliding contact's friction force mu_f N
/// against its slide direction sigma rides on its normal row: the generalized force of that row
/// is -(r_q - mu_f sigma s_q)^T mu_c, so `force` (the rows' force directions) differs from `jac`.
template <class S>
ConstraintSet<S> with_contacts(const Model& m, ConstraintSet<S> cs, const ContactSet& set, const MotionState<S>& st,
                               In<S> p) {
  if (set.empty()) return cs;
  const int n = m.n_coordinates();
  const Eigen::Index rows = cs.phi.size(), k = static_cast<Eigen::Index>(set.active.size());
  const Eigen::Index total = rows + set.rows();
  cs.phi.conservativeResize(total);
  cs.phi_t.conservativeResize(total);
  cs.bias.conservativeResize(total);
  SparseRowStack<S> jac(n);
  jac.push(cs.jac);
  const auto put = [&cs, &jac](Eigen::Index row, const KinRow<S>& r) {
    cs.phi[row] = r.value;
    cs.phi_t[row] = r.phi_t;
    cs.bias[row] = r.bias;
    jac.push(r.jac);
  };
  bool slides = false;
  std::vector<RowJacobian<S>> gap_jacobians;  // the active contacts' r_q, for their force rows
  gap_jacobians.reserve(static_cast<size_t>(k));
  for (Eigen::Index i = 0; i < k; ++i) {
    const KinRow<S> gap =
        contact_geometry(m, m.contacts[static_cast<size_t>(set.active[static_cast<size_t>(i)])], st, p).gap;
    put(rows + i, gap);
    gap_jacobians.push_back(gap.jac);
    slides = slides || set.sliding[static_cast<size_t>(i)] != 0.0;
  }
  for (size_t j = 0; j < set.sticking.size(); ++j) {
    KinRow<S> row = tangential_row(m, m.contacts[static_cast<size_t>(set.sticking[j])], st, p);
    row.value = S(0.0);
    put(rows + k + static_cast<Eigen::Index>(j), row);
  }
  cs.jac = jac.matrix();
  if (slides) {
    // A sliding contact's normal row carries its friction: r_q - mu_f sigma s_q.
    SparseRowStack<S> force(n);
    force.push(SparseMat<S>(cs.jac.topRows(rows)));
    for (Eigen::Index i = 0; i < k; ++i) {
      const double sigma = set.sliding[static_cast<size_t>(i)];
      const Contact& c = m.contacts[static_cast<size_t>(set.active[static_cast<size_t>(i)])];
      RowJacobian<S> row = gap_jacobians[static_cast<size_t>(i)];
      if (sigma != 0.0) {
        const S along = value_of<S>(c.friction, p) * S(sigma);
        row.add_mapped(tangential_row(m, c, st, p).jac, [&along](const S& entry) { return S(-along * entry); });
      }
      force.push(row);
    }
    force.push(SparseMat<S>(cs.jac.bottomRows(static_cast<Eigen::Index>(set.sticking.size()))));
    cs.force = force.matrix();
  }
  return cs;
}

/// Solves [M force^T extra^T; jac 0 0; extra 0 0] X = rhs (n + m + k square; `extra` the
/// impacting contacts' gradients, k x n, may be empty): assembled sparse for KLU from
/// kSparseSolveMinRows rows, straight into a dense matrix below (as fast as the dense LU is).
template <class S, class Rhs>
MatX<S> solve_kkt(const Model& m, In<S> q, In<S> p, const SparseMat<S>& force, const SparseMat<S>& jac, const SparseMat<S>& extra,
                  const Rhs& rhs, const char* what) {
  const int n = m.n_coordinates(), rows = static_cast<int>(jac.rows()), k = static_cast<int>(extra.rows());
  const int size = n + rows + k;
  if (force.rows() != jac.rows() || force.cols() != n || jac.cols() != n || (k > 0 && extra.cols() != n)) {
    throw std::logic_error("solve_kkt: the force directions, Phi_q and the impact rows must have the model's columns "
                           "and as many force as constraint rows");
  }
  const auto scatter = [&](auto&& put) {
    for_each_mass_entry<S>(m, q, p, put);
    for (int r = 0; r < rows; ++r) {
      for (typename SparseMat<S>::InnerIterator it(force, r); it; ++it) put(static_cast<int>(it.col()), n + r, it.value());
      for (typename SparseMat<S>::InnerIterator it(jac, r); it; ++it) put(n + r, static_cast<int>(it.col()), it.value());
    }
    for (int r = 0; r < k; ++r) {
      for (typename SparseMat<S>::InnerIterator it(extra, r); it; ++it) {
        put(static_cast<int>(it.col()), n + rows + r, it.value());
        put(n + rows + r, static_cast<int>(it.col()), it.value());
      }
    }
  };
  if (size < kSparseSolveMinRows) {
    MatX<S> K = MatX<S>::Zero(size, size);
    scatter([&K](int i, int j, const S& v) { K(i, j) += v; });
    return solve_dense<S>(K, rhs, what);
  }
  // Large: into the pattern kept from the previous call (patterned_assembly.hpp).
  const SparseMat<S>& K = thread_assembly<S, KktAssemblySite>().assemble(size, size, scatter);
  return solve_sparse<S>(K, rhs, what);
}

/// Solves the KKT system of the rows of `cs`, [M force^T; Phi_q 0] [y; mu] = [top; bottom]
/// (`force` the rows' force directions: Phi_q unless sliding friction rides on a row).
template <class S>
std::pair<VectorX<S>, VectorX<S>> kkt_solve(const Model& m, const ConstraintSet<S>& cs, In<S> q, In<S> p, const VectorX<S>& top,
                                            const VectorX<S>& bottom, const char* what) {
  const int n = m.n_coordinates(), rows = static_cast<int>(cs.phi.size());
  VectorX<S> rhs(n + rows);
  rhs << top, bottom;
  const VectorX<S> sol = solve_kkt<S>(m, q, p, cs.force_directions(), cs.jac, SparseMat<S>(0, n), rhs, what).col(0);
  return {sol.head(n), sol.tail(rows)};
}

/// Accelerations a and multipliers mu of a constrained motion (the rows of `cs`, active contacts
/// included): [M force^T; Phi_q 0] [a; mu] = [F; -target], where `target` holds the rows'
/// acceleration terms (their bias, plus a stabilization's), Phi_q a + target = 0.
template <class S>
std::pair<VectorX<S>, VectorX<S>> kkt_accelerations(const Model& m, const ConstraintSet<S>& cs, const MotionState<S>& st,
                                                    In<S> p, const VectorX<S>& target,
                                                    const char* what = "KKT matrix [M Phi_q^T; Phi_q 0]") {
  return kkt_solve<S>(m, cs, st.q, p, applied_forces(m, st, p), VectorX<S>(-target), what);
}

/// Contacts whose gap is within this of zero (relative to 1 + max |q|) when another one fires
/// close together with it: one simultaneous impact. Also the tolerance on gap and normal rate
/// below which a persistent contact starts closed at rest.
inline constexpr double kSimultaneousGap = 1e-9;
/// A sticking contact's slip velocity, relative to the velocities' size, below which settling
/// keeps it sticking (ContactEvents::settle_once): index3's velocity noise is about 1e-9 of it.
inline constexpr double kStickingSlipBand = 1e-6;

inline bool contains(const std::vector<int>& set, int i) { return std::find(set.begin(), set.end(), i) != set.end(); }

/// The impulse-law contacts that take part in the impact of contact `c` at `st`: c and every
/// other impulse-law contact closed with it (gap within kSimultaneousGap) and approaching
/// (r_q v < 0), in declaration order, leaving out the active persistent contacts (`held`: they
/// stay closed through the impact). Empty if c itself is not approaching: an impact
/// resolved with another one a moment ago (the same instant) left it separating. Decided on
/// real parts, so every scalar type takes the same set.
template <class S>
std::vector<int> simultaneous_contacts(const Model& m, const Contact& c, const MotionState<S>& st, In<S> p,
                                       const ContactSet& held) {
  std::vector<int> set;
  double scale = 1.0;
  for (Eigen::Index i = 0; i < st.q.size(); ++i) scale = std::max(scale, 1.0 + std::abs(real_part(st.q[i])));
  for (size_t j = 0; j < m.contacts.size(); ++j) {
    const Contact& other = m.contacts[j];
    if (&other != &c && (other.law != ImpactLaw::Impulse || held.slot(static_cast<int>(j)) >= 0)) continue;
    const ContactGeometry<S> g = contact_geometry(m, other, st, p);
    const S rate = g.gap.jac.times(st.v);
    const bool approaching = real_part(rate) < 0.0;
    if (&other == &c) {
      if (!approaching) return {};
    } else if (!approaching || std::abs(real_part(g.gap.value)) > kSimultaneousGap * scale) {
      continue;
    }
    set.push_back(static_cast<int>(j));
  }
  return set;
}

/// Post-impact velocities through the KKT impulse system (multibody.md 9.3):
/// M v+ + Phi_q^T Pi + R_q^T pi = M v-, Phi_q v+ + Phi_t = 0, r_a v+ = 0 for the active persistent
/// contacts a (`held`, closed before and after), r_k v+ = -e_k r_k v- for the impacting contacts
/// k (`impact`), with e_k = 0 for contact `plastic` (a persistent contact coming to rest; -1:
/// none). Impacts are frictionless: no tangential impulse, sticking contacts included.
template <class S>
VectorX<S> kkt_impulse(const Model& m, const MotionState<S>& st, In<S> p, const ContactSet& held,
                       const std::vector<int>& impact, int plastic) {
  const int n = m.n_coordinates(), k = static_cast<int>(impact.size());
  const ConstraintSet<S> cs = with_contacts(m, constraints(m, st, p), held.normals(), st, p);
  const int rows = static_cast<int>(cs.phi.size());
  VectorX<S> rhs(n + rows + k);
  rhs.head(n) = mass_times_vector<S>(m, st.q, p, st.v);
  rhs.segment(n, rows) = -cs.phi_t;
  SparseRowStack<S> gradients(n);
  for (int i = 0; i < k; ++i) {
    const int index = impact[static_cast<size_t>(i)];
    const Contact& contact = m.contacts[static_cast<size_t>(index)];
    const RowJacobian<S> r_q = contact_geometry(m, contact, st, p).gap.jac;
    gradients.push(r_q);
    const S e = index == plastic ? S(0.0) : value_of<S>(contact.restitution, p);
    rhs[n + rows + i] = -e * r_q.times(st.v);
  }
  std::string what = "impact (KKT impulse) matrix";
  if (k > 1 || !held.empty()) {
    std::vector<std::string> names;
    for (int j : impact) names.push_back(m.contacts[static_cast<size_t>(j)].name);
    for (int j : held.active) names.push_back(m.contacts[static_cast<size_t>(j)].name + " (active)");
    what = fmt::format("simultaneous impact (KKT impulse) matrix of contacts {} (if singular, their gradients "
                       "are dependent and the impulses not unique)",
                       fmt::join(names, ", "));
  }
  const MatX<S> sol = solve_kkt<S>(m, st.q, p, cs.jac, cs.jac, gradients.matrix(), rhs, what.c_str());
  return sol.col(0).head(n);
}

/// Post-impact velocities by Newton restitution (kkt_impulse) for the impact of contact c and
/// those closed with it (simultaneous_contacts), the active persistent contacts held closed.
/// v- itself if c is no longer approaching.
template <class S>
VectorX<S> impulse_velocity(const Model& m, const Contact& c, const MotionState<S>& st, In<S> p,
                            const ContactSet& held) {
  const std::vector<int> impact = simultaneous_contacts(m, c, st, p, held);
  if (impact.empty()) return st.v;
  return kkt_impulse(m, st, p, held, impact, -1);
}

/// The velocities with which persistent contact `c` comes to rest: the impact with c's
/// restitution taken as 0 (a plastic impact; no impulse if c is already at rest on its line).
template <class S>
VectorX<S> resting_velocity(const Model& m, int c, const MotionState<S>& st, In<S> p, const ContactSet& held) {
  std::vector<int> impact = simultaneous_contacts(m, m.contacts[static_cast<size_t>(c)], st, p, held);
  if (impact.empty()) impact.push_back(c);
  return kkt_impulse(m, st, p, held, impact, c);
}

/// The persistent contacts active at the start: those closed at rest (gap and normal rate within
/// kSimultaneousGap of the model's size) whose force, with them all active and frictionless, is
/// compressive (> 0); one that would pull or carries no force is left out (the most tensile
/// first) and the rest solved again. Decided on real values (the formulation then chooses the frictional ones' regimes).
inline std::vector<int> starting_contacts(const Model& m, const MotionState<double>& st, const Eigen::VectorXd& p) {
  std::vector<int> active;
  const double q_scale = 1.0 + st.q.cwiseAbs().maxCoeff(), v_scale = 1.0 + st.v.cwiseAbs().maxCoeff();
  for (size_t j = 0; j < m.contacts.size(); ++j) {
    const Contact& c = m.contacts[j];
    if (!c.persistent) continue;
    const KinRow<double> g = contact_geometry<double>(m, c, st, p).gap;
    if (std::abs(g.value) <= kSimultaneousGap * q_scale && std::abs(g.rate) <= kSimultaneousGap * v_scale) {
      active.push_back(static_cast<int>(j));
    }
  }
  while (!active.empty()) {
    const ContactSet set{active, {}, std::vector<double>(active.size(), 0.0)};
    const ConstraintSet<double> cs = with_contacts<double>(m, constraints<double>(m, st, p), set, st, p);
    const Eigen::VectorXd push =
        -kkt_accelerations<double>(m, cs, st, p, cs.bias, "KKT matrix of the contacts closed at the start")
             .second.tail(static_cast<Eigen::Index>(active.size()));
    Eigen::Index weakest = 0;
    if (push.minCoeff(&weakest) > 0.0) break;  // a contact without force starts open
    active.erase(active.begin() + weakest);
  }
  return active;
}

}  // namespace saltus::multibody::detail
