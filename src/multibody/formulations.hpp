#pragma once
// The formulations that turn a planar Model into the functions of a Saltus hybrid Problem
// (right-hand side or residual, guards, jumps, costs, initial state), templated on the scalar
// type so that forward sensitivities, complex steps and adjoints differentiate them exactly.
//
//   CartesianForm (index-1 with Baumgarte, or penalty): state x = (q, v), 2n entries.
//   MaggiForm (null space, seed 003): state x = (u, u-dot) with u = B q, 2f entries.
//   DaeForm (DAEs on IDAS: GGL, stabilized index-1): x = (q, v, multipliers), 2n + 2m entries.
#include "position_analysis.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <memory>
#include <string>
#include <vector>
#include <utility>

namespace saltus::multibody::detail {

template <class S>
struct ContactGeometry {
  Vec2<S> normal = Vec2<S>::Zero();  ///< unit normal of the line, to the allowed side (global; point-line only)
  Kin2<S> point;                     ///< the contact point (point-line only)
  /// The guard (.value), its gradient r_q (.jac), rate and bias (the acceleration's velocity
  /// terms): an active persistent contact is the constraint row gap = 0.
  KinRow<S> gap;
};

/// The gap of a contact and its derivatives: for a line carried by a body both O and n turn
/// with it, so r_q has a term on the body's angle, (P - O)^T dn/dtheta. A joint stop's gap is
/// its angle or travel less the limit (times `side`).
template <class S>
ContactGeometry<S> contact_geometry(const Model& m, const Contact& c, const MotionState<S>& st, In<S> p) {
  using std::sqrt;
  ContactGeometry<S> g;
  const S limit = c.kind == ContactKind::PointLine ? S(0.0) : value_of<S>(c.limit, p);
  if (c.kind == ContactKind::AngleStop) {
    const Rotation<S> r = relative_rotation(m, c.joint, st, p);
    g.gap.value = c.side * (r.angle - limit);
    g.gap.jac = c.side * r.jac;
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
    g.gap.jac *= c.side;
    g.gap.rate *= c.side;
    g.gap.bias *= c.side;
    return g;
  }
  const S nx = value_of<S>(c.normal_x, p), ny = value_of<S>(c.normal_y, p);
  const S length = sqrt(nx * nx + ny * ny);
  const Kin2<S> normal = body_vector<S>(m, st, c.line_body, Vec2<S>(nx / length, ny / length), false);
  PointRef origin;
  origin.kind = c.line_body < 0 ? PointRef::Kind::Ground : PointRef::Kind::Body;
  origin.index = c.line_body;
  origin.x = c.line_x;
  origin.y = c.line_y;
  g.normal = normal.value;
  g.point = point_kinematics(m, st, c.point, p);
  g.gap = dot(normal, difference(g.point, point_kinematics(m, st, origin, p)));
  return g;
}

/// The constraint set of a mode: the model's rows Phi followed by the gap rows of the active
/// persistent contacts (`active`, contact indices), whose multipliers are the contact forces
/// (mu_c < 0 pushes the point to the allowed side: the force is -r_q^T mu_c).
template <class S>
ConstraintSet<S> with_contacts(const Model& m, ConstraintSet<S> cs, const std::vector<int>& active,
                               const MotionState<S>& st, In<S> p) {
  if (active.empty()) return cs;
  const Eigen::Index rows = cs.phi.size(), k = static_cast<Eigen::Index>(active.size());
  cs.phi.conservativeResize(rows + k);
  cs.phi_t.conservativeResize(rows + k);
  cs.bias.conservativeResize(rows + k);
  cs.jac.conservativeResize(rows + k, m.n_coordinates());
  for (Eigen::Index i = 0; i < k; ++i) {
    const KinRow<S> g = contact_geometry(m, m.contacts[static_cast<size_t>(active[static_cast<size_t>(i)])], st, p).gap;
    cs.phi[rows + i] = g.value;
    cs.phi_t[rows + i] = g.phi_t;
    cs.bias[rows + i] = g.bias;
    cs.jac.row(rows + i) = g.jac.transpose();
  }
  return cs;
}

/// Contacts whose gap is within this of zero (relative to 1 + max |q|) when another one fires
/// close together with it: one simultaneous impact. Also the tolerance on gap and normal rate
/// below which a persistent contact starts closed at rest.
inline constexpr double kSimultaneousGap = 1e-9;

inline bool contains(const std::vector<int>& set, int i) { return std::find(set.begin(), set.end(), i) != set.end(); }

/// The impulse-law contacts that take part in the impact of contact `c` at `st`: c and every
/// other impulse-law contact closed with it (gap within kSimultaneousGap) and approaching
/// (r_q v < 0), in declaration order, leaving out the active persistent contacts (`active`:
/// they stay closed through the impact). Empty if c itself is not approaching: an impact
/// resolved with another one a moment ago (the same instant) left it separating. Decided on
/// real parts, so every scalar type takes the same set.
template <class S>
std::vector<int> simultaneous_contacts(const Model& m, const Contact& c, const MotionState<S>& st, In<S> p,
                                       const std::vector<int>& active) {
  std::vector<int> set;
  double scale = 1.0;
  for (Eigen::Index i = 0; i < st.q.size(); ++i) scale = std::max(scale, 1.0 + std::abs(real_part(st.q[i])));
  for (size_t j = 0; j < m.contacts.size(); ++j) {
    const Contact& other = m.contacts[j];
    if (&other != &c && (other.law != ImpactLaw::Impulse || contains(active, static_cast<int>(j)))) continue;
    const ContactGeometry<S> g = contact_geometry(m, other, st, p);
    S rate(0.0);
    for (Eigen::Index i = 0; i < st.v.size(); ++i) rate += g.gap.jac[i] * st.v[i];
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
/// contacts a (closed before and after), r_k v+ = -e_k r_k v- for the impacting contacts k
/// (`impact`), with e_k = 0 for contact `plastic` (a persistent contact coming to rest; -1: none).
template <class S>
VectorX<S> kkt_impulse(const Model& m, const MotionState<S>& st, In<S> p, const std::vector<int>& active,
                       const std::vector<int>& impact, int plastic) {
  const int n = m.n_coordinates(), k = static_cast<int>(impact.size());
  const ConstraintSet<S> cs = with_contacts(m, constraints(m, st, p), active, st, p);
  const int rows = static_cast<int>(cs.phi.size());
  const MatX<S> M = mass_matrix<S>(m, p);
  MatX<S> K = MatX<S>::Zero(n + rows + k, n + rows + k);
  K.topLeftCorner(n, n) = M;
  K.block(0, n, n, rows) = cs.jac.transpose();
  K.block(n, 0, rows, n) = cs.jac;
  VectorX<S> rhs(n + rows + k);
  rhs.head(n) = M * st.v;
  rhs.segment(n, rows) = -cs.phi_t;
  for (int i = 0; i < k; ++i) {
    const int index = impact[static_cast<size_t>(i)];
    const Contact& contact = m.contacts[static_cast<size_t>(index)];
    const VectorX<S> r_q = contact_geometry(m, contact, st, p).gap.jac;
    K.block(0, n + rows + i, n, 1) = r_q;
    K.block(n + rows + i, 0, 1, n) = r_q.transpose();
    S normal_velocity(0.0);
    for (int j = 0; j < n; ++j) normal_velocity += r_q[j] * st.v[j];
    const S e = index == plastic ? S(0.0) : value_of<S>(contact.restitution, p);
    rhs[n + rows + i] = -e * normal_velocity;
  }
  std::string what = "impact (KKT impulse) matrix";
  if (k > 1 || !active.empty()) {
    std::vector<std::string> names;
    for (int j : impact) names.push_back(m.contacts[static_cast<size_t>(j)].name);
    for (int j : active) names.push_back(m.contacts[static_cast<size_t>(j)].name + " (active)");
    what = fmt::format("simultaneous impact (KKT impulse) matrix of contacts {} (if singular, their gradients "
                       "are dependent and the impulses not unique)",
                       fmt::join(names, ", "));
  }
  const MatX<S> sol = solve_dense<S>(K, rhs, what.c_str());
  return sol.col(0).head(n);
}

/// Post-impact velocities by Newton restitution (kkt_impulse) for the impact of contact c and
/// those closed with it (simultaneous_contacts), the active persistent contacts held closed.
/// v- itself if c is no longer approaching.
template <class S>
VectorX<S> impulse_velocity(const Model& m, const Contact& c, const MotionState<S>& st, In<S> p,
                            const std::vector<int>& active) {
  const std::vector<int> impact = simultaneous_contacts(m, c, st, p, active);
  if (impact.empty()) return st.v;
  return kkt_impulse(m, st, p, active, impact, -1);
}

/// The velocities with which persistent contact `c` comes to rest: the impact with c's
/// restitution taken as 0 (a plastic impact; no impulse if c is already at rest on its line).
template <class S>
VectorX<S> resting_velocity(const Model& m, int c, const MotionState<S>& st, In<S> p, const std::vector<int>& active) {
  std::vector<int> impact = simultaneous_contacts(m, m.contacts[static_cast<size_t>(c)], st, p, active);
  if (impact.empty()) impact.push_back(c);
  return kkt_impulse(m, st, p, active, impact, c);
}

/// The persistent contacts active at the start: those closed at rest (gap and normal rate within
/// kSimultaneousGap of the model's size) whose force, with them all active, is compressive; one
/// that would pull is left out (the most tensile first) and the rest solved again. Decided on
/// real values.
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
  const int n = m.n_coordinates();
  const Eigen::MatrixXd M = mass_matrix<double>(m, p);
  const Eigen::VectorXd F = applied_forces<double>(m, st, p);
  while (!active.empty()) {
    const ConstraintSet<double> cs = with_contacts<double>(m, constraints<double>(m, st, p), active, st, p);
    const int rows = static_cast<int>(cs.phi.size()), k = static_cast<int>(active.size());
    Eigen::MatrixXd K = Eigen::MatrixXd::Zero(n + rows, n + rows);
    K.topLeftCorner(n, n) = M;
    K.topRightCorner(n, rows) = cs.jac.transpose();
    K.bottomLeftCorner(rows, n) = cs.jac;
    Eigen::VectorXd rhs(n + rows);
    rhs << F, -cs.bias;
    const Eigen::VectorXd push =
        -solve_dense<double>(K, rhs, "KKT matrix of the contacts closed at the start").col(0).tail(k);
    Eigen::Index weakest = 0;
    if (push.minCoeff(&weakest) >= 0.0) break;
    active.erase(active.begin() + weakest);
  }
  return active;
}

/// Post-impact independent velocities by the partitioning law (multibody.md 9.2): the contact
/// point's normal velocity, read from the independent velocities, is reversed and scaled by e.
template <class S>
VectorX<S> partitioned_velocity(const Model& m, const Partition& part, const Contact& c,
                                VectorX<S> u_dot, In<S> p) {
  using std::sqrt;
  const S nx = value_of<S>(c.normal_x, p), ny = value_of<S>(c.normal_y, p);
  const S length = sqrt(nx * nx + ny * ny);
  const Vec2<S> normal(nx / length, ny / length);
  const int o = m.point_offset(c.point.index);
  S normal_velocity(0.0);
  for (int i = 0; i < 2; ++i) {
    if (real_part(normal[i]) == 0.0) continue;
    const int slot = part.slot(o + i);
    if (slot < 0) {
      throw ModelError(fmt::format("contact '{}': the partitioning impact law needs coordinate '{}' "
                                   "to be independent (use law: impulse, or list it in "
                                   "'independent')",
                                   c.name, m.coordinate_names()[static_cast<size_t>(o + i)]));
    }
    normal_velocity += normal[i] * u_dot[slot];
  }
  const S change = -(S(1.0) + value_of<S>(c.restitution, p)) * normal_velocity;
  for (int i = 0; i < 2; ++i) {
    if (real_part(normal[i]) != 0.0) u_dot[part.slot(o + i)] += change * normal[i];
  }
  return u_dot;
}

/// Shared data of the formulations.
struct FormBase {
  std::shared_ptr<const Model> model;
  Partition part;
  FormulationSettings settings;
  int n = 0;
  Eigen::VectorXd q_guess, v_guess;
  /// The persistent contacts (indices into the model's contacts), in declaration order. The
  /// state ends with one flag per persistent contact, in this order: 1 while it is active (its
  /// gap a constraint row), else 0. The flags change only at events, and are read on real parts.
  std::vector<int> persistent;

  FormBase(std::shared_ptr<const Model> m, Partition p, FormulationSettings s)
      : model(std::move(m)), part(std::move(p)), settings(s), n(model->n_coordinates()),
        q_guess(model->initial_positions()), v_guess(model->initial_velocities()) {
    for (size_t i = 0; i < model->contacts.size(); ++i) {
      if (model->contacts[i].persistent) persistent.push_back(static_cast<int>(i));
    }
  }

  const Contact& contact(int i) const { return model->contacts[static_cast<size_t>(i)]; }

  int n_flags() const { return static_cast<int>(persistent.size()); }
  std::vector<std::string> flag_names() const {
    std::vector<std::string> names;
    for (int c : persistent) names.push_back(contact(c).name + ".active");
    return names;
  }
  /// The flag of persistent contact `c` (its index in the state), or -1.
  int flag_of(int c, Eigen::Index n_states) const {
    const auto it = std::find(persistent.begin(), persistent.end(), c);
    return it == persistent.end() ? -1 : static_cast<int>(n_states - n_flags() + (it - persistent.begin()));
  }
  template <class S>
  bool is_active(int c, In<S> x) const {
    const int flag = flag_of(c, x.size());
    return flag >= 0 && real_part(x[flag]) > 0.5;
  }
  /// The active persistent contacts of state x, in declaration order.
  template <class S>
  std::vector<int> active_contacts(In<S> x) const {
    std::vector<int> active;
    for (int c : persistent) {
      if (is_active<S>(c, x)) active.push_back(c);
    }
    return active;
  }
  /// Writes the flags of the contacts active at the start (starting_contacts) into x0's tail.
  template <class S>
  void start_flags(const MotionState<S>& st, In<S> p, Out<S> x0) const {
    if (persistent.empty()) return;
    const MotionState<double> real{real_part(st.t), real_parts<S>(st.q), real_parts<S>(st.v)};
    const std::vector<int> active = starting_contacts(*model, real, real_parts<S>(p));
    for (int c : persistent) x0[flag_of(c, x0.size())] = S(contains(active, c) ? 1.0 : 0.0);
  }

  /// Assembled positions for independent coordinates u at time t (double Newton from
  /// `start`, then one step in S).
  template <class S>
  VectorX<S> assemble(const S& t, const VectorX<S>& u, In<S> p, const Eigen::VectorXd& start) const {
    const Eigen::VectorXd q_star =
        solve_positions(*model, part, real_part(t), real_parts<S>(u), real_parts<S>(p), start, settings);
    return refine_positions<S>(*model, part, t, u, p, q_star);
  }

  template <class S, class V>
  static Eigen::VectorXd real_parts(const V& v) {
    Eigen::VectorXd r(v.size());
    for (Eigen::Index i = 0; i < v.size(); ++i) r[i] = real_part(S(v[i]));
    return r;
  }

  /// The velocities after the impact of contact c at st (the active contacts held closed): its
  /// impact law, or the impulse law while some persistent contact is active (the partitioning
  /// law knows only the model's constraints).
  template <class S>
  VectorX<S> impact_velocity(int c, const MotionState<S>& st, In<S> p, const std::vector<int>& active) const {
    if (contact(c).law == ImpactLaw::Impulse || !active.empty()) return impulse_velocity(*model, contact(c), st, p, active);
    const VectorX<S> u_dot = partitioned_velocity(*model, part, contact(c), select(part, st.v), p);
    return velocities_from_independent(*model, part, st, u_dot, p);
  }
};

/// The events of a persistent contact that every formulation shares, on top of its `Form`:
/// the impact guard (the gap while the contact is open, 1 while active: never fires), the
/// release guard (while active, the contact's push -mu_c, falling through zero when the force
/// would pull; 1 while open), the resting projection (plastic impact, flag set) and the release
/// (flag cleared, the state continuous: multibody.md 9.4). After each of them, a contact whose
/// force would pull is opened (release_pulling).
template <class Form>
struct ContactEvents {
  template <class S>
  static S guard(const Form& form, int c, const S& t, In<S> x, In<S> p) {
    if (form.template is_active<S>(c, x)) return S(1.0);
    return contact_geometry(*form.model, form.contact(c), form.template positions_state<S>(t, x, p), p).gap.value;
  }
  template <class S>
  static S release_guard(const Form& form, int c, const S& t, In<S> x, In<S> p) {
    if (!form.template is_active<S>(c, x)) return S(1.0);
    const std::vector<int> active = form.template active_contacts<S>(x);
    const VectorX<S> mu = form.template multipliers<S>(t, x, p, active);
    const auto slot = std::find(active.begin(), active.end(), c) - active.begin();
    return -mu[mu.size() - static_cast<Eigen::Index>(active.size()) + slot];
  }
  template <class S>
  static void rest(const Form& form, int c, const S& t, In<S> x, In<S> p, Out<S> x_plus) {
    const std::vector<int> active = form.template active_contacts<S>(x);
    const MotionState<S> st = form.template motion_state<S>(t, x, p);
    x_plus = x;
    form.template write_velocities<S>(resting_velocity(*form.model, c, st, p, active), x_plus);
    x_plus[form.flag_of(c, x.size())] = S(1.0);
    release_pulling<S>(form, t, x_plus, p);
  }
  /// The impact of contact c (the form's impact law), then release_pulling.
  template <class S>
  static void impact(const Form& form, int c, const S& t, In<S> x, In<S> p, Out<S> x_plus) {
    form.template jump<S>(c, t, x, p, x_plus);
    release_pulling<S>(form, t, x_plus, p);
  }
  template <class S>
  static void release(const Form& form, int c, const S& t, In<S> x, In<S> p, Out<S> x_plus) {
    x_plus = x;
    x_plus[form.flag_of(c, x.size())] = S(0.0);
    release_pulling<S>(form, t, x_plus, p);
  }
  /// Opens the active contacts whose force would pull after an event (the most tensile first,
  /// then the others solved again): a contact coming to rest on a line that accelerates away, or
  /// one whose force an impact elsewhere turned. Its release guard would start below zero and
  /// never fire; open, the point leaves its line at second order. Decided on real parts, as
  /// every mode choice, so each scalar type takes the same modes.
  template <class S>
  static void release_pulling(const Form& form, const S& t, Out<S> x, In<S> p) {
    for (;;) {
      const std::vector<int> active = form.template active_contacts<S>(In<S>(x));
      if (active.empty()) return;
      const VectorX<S> mu = form.template multipliers<S>(t, In<S>(x), p, active);
      const Eigen::Index base = mu.size() - static_cast<Eigen::Index>(active.size());
      size_t weakest = 0;
      for (size_t i = 1; i < active.size(); ++i) {
        if (real_part(mu[base + static_cast<Eigen::Index>(i)]) > real_part(mu[base + static_cast<Eigen::Index>(weakest)])) weakest = i;
      }
      if (real_part(mu[base + static_cast<Eigen::Index>(weakest)]) <= 0.0) return;  // every push -mu >= 0
      x[form.flag_of(active[weakest], x.size())] = S(0.0);
    }
  }
};

/// Index-1 with Baumgarte stabilization, or the penalty (Bayo - Garcia de Jalon) ODE, in
/// full coordinates x = (q, v, flags).
struct CartesianForm : FormBase {
  using FormBase::FormBase;

  int n_states() const { return 2 * n + n_flags(); }
  std::vector<std::string> state_names() const {
    std::vector<std::string> names = model->coordinate_names();
    for (int i = 0; i < n; ++i) names.push_back(names[static_cast<size_t>(i)] + "_dot");
    for (std::string& flag : flag_names()) names.push_back(std::move(flag));
    return names;
  }

  template <class S>
  MotionState<S> motion(const S& t, In<S> x) const {
    return MotionState<S>{t, x.head(n), x.segment(n, n)};
  }
  template <class S>
  MotionState<S> motion_state(const S& t, In<S> x, In<S>) const {
    return motion(t, x);
  }
  template <class S>
  MotionState<S> positions_state(const S& t, In<S> x, In<S>) const {
    return motion(t, x);
  }
  template <class S>
  void write_velocities(const VectorX<S>& v, Out<S> x) const {
    x.segment(n, n) = v;
  }

  template <class S>
  void initial_state(In<S> p, Out<S> x0) const {
    const S t0(model->t0);
    // Positions and velocities may be expressions of p: the independent ones carry their
    // derivatives, the guess for the others is taken at the real parts of p.
    const VectorX<S> guess = model->initial_positions<S>(p);
    const VectorX<S> u0 = select(part, guess);
    const VectorX<S> q = assemble(t0, u0, p, real_parts<S>(guess));
    const VectorX<S> u_dot0 = select(part, model->initial_velocities<S>(p));
    x0.head(n) = q;
    x0.segment(n, n) = velocities_from_independent(*model, part, MotionState<S>{t0, q, VectorX<S>::Zero(n)}, u_dot0, p);
    start_flags<S>(motion<S>(t0, x0), p, x0);
  }

  /// Accelerations a and multipliers mu (penalty: the estimate mu*) at a motion state, the
  /// active persistent contacts' rows after the model's.
  template <class S>
  std::pair<VectorX<S>, VectorX<S>> accelerations(const MotionState<S>& st, In<S> p, const std::vector<int>& active) const {
    const ConstraintSet<S> cs = with_contacts(*model, constraints(*model, st, p), active, st, p);
    const MatX<S> M = mass_matrix<S>(*model, p);
    const VectorX<S> F = applied_forces(*model, st, p);
    const int rows = static_cast<int>(cs.phi.size());
    const bool penalty = settings.type == FormulationType::Penalty;
    const double xi = penalty ? settings.penalty_xi : settings.baumgarte_xi;
    const double omega = penalty ? settings.penalty_omega : settings.baumgarte_omega;
    // Phi'' + 2 xi omega Phi' + omega^2 Phi = 0 is Phi_q a + target = 0.
    const VectorX<S> target = cs.bias + S(2.0 * xi * omega) * cs.rate(st.v) + S(omega * omega) * cs.phi;
    if (penalty) {
      const S alpha(settings.penalty_alpha);
      const MatX<S> M_alpha = M + alpha * cs.jac.transpose() * cs.jac;
      const VectorX<S> a = solve_dense<S>(M_alpha, F - alpha * (cs.jac.transpose() * target), "penalty mass matrix M + Phi_q^T alpha Phi_q");
      const VectorX<S> mu = alpha * (cs.jac * a + target);
      return {a, mu};
    }
    MatX<S> K = MatX<S>::Zero(n + rows, n + rows);
    K.topLeftCorner(n, n) = M;
    K.topRightCorner(n, rows) = cs.jac.transpose();
    K.bottomLeftCorner(rows, n) = cs.jac;
    VectorX<S> rhs(n + rows);
    rhs << F, -target;
    const MatX<S> sol = solve_dense<S>(K, rhs, "KKT matrix [M Phi_q^T; Phi_q 0]");
    return {sol.col(0).head(n), sol.col(0).tail(rows)};
  }

  template <class S>
  VectorX<S> multipliers(const S& t, In<S> x, In<S> p, const std::vector<int>& active) const {
    return accelerations(motion(t, x), p, active).second;
  }

  template <class S>
  void rhs(const S& t, In<S> x, In<S> p, Out<S> xdot) const {
    const MotionState<S> st = motion(t, x);
    xdot.head(n) = st.v;
    xdot.segment(n, n) = accelerations(st, p, active_contacts<S>(x)).first;
    xdot.tail(n_flags()).setZero();
  }

  template <class S>
  FullState<S> full_state(const S& t, In<S> x, In<S> p, const VectorX<S>* xdot, bool need_mu) const {
    FullState<S> fs{motion(t, x), {}, {}, active_contacts<S>(x)};
    if (xdot != nullptr) fs.a = xdot->segment(n, n);
    if (need_mu) {
      auto [a, mu] = accelerations(fs.motion, p, fs.active);
      if (xdot == nullptr) fs.a = a;
      fs.mu = mu;
    }
    return fs;
  }

  template <class S>
  void jump(int c, const S& t, In<S> x, In<S> p, Out<S> x_plus) const {
    x_plus = x;
    x_plus.segment(n, n) = impact_velocity(c, motion(t, x), p, active_contacts<S>(x));
  }
};

/// Maggi / null-space formulation (multibody.md section 7): x = (u, u-dot, flags), positions by
/// Newton, R and S_Phi c from one factorization of A = [Phi_q; B], R^T M R u-ddot =
/// R^T (F - M S_Phi c). Active persistent contacts G (gap rows) add the reduced KKT rows
/// [R^T M R, (G R)^T; G R, 0] [u-ddot; lambda] = [R^T (F - M S_Phi c); -(G S_Phi c + bias_G +
/// 2 xi omega G-dot + omega^2 G)] (Baumgarte on the gaps), keeping the state's size.
struct MaggiForm : FormBase {
  /// Last converged positions: the Newton start of the next evaluation.
  std::shared_ptr<Eigen::VectorXd> last_positions;

  MaggiForm(std::shared_ptr<const Model> m, Partition p, FormulationSettings s)
      : FormBase(std::move(m), std::move(p), s),
        last_positions(std::make_shared<Eigen::VectorXd>(q_guess)) {}

  int f() const { return part.f(); }
  int n_states() const { return 2 * f() + n_flags(); }
  std::vector<std::string> state_names() const {
    const std::vector<std::string> all = model->coordinate_names();
    std::vector<std::string> names;
    for (int k : part.independent) names.push_back(all[static_cast<size_t>(k)]);
    for (int k : part.independent) names.push_back(all[static_cast<size_t>(k)] + "_dot");
    for (std::string& flag : flag_names()) names.push_back(std::move(flag));
    return names;
  }

  template <class S>
  void initial_state(In<S> p, Out<S> x0) const {
    x0.head(f()) = select(part, model->initial_positions<S>(p));
    x0.segment(f(), f()) = select(part, model->initial_velocities<S>(p));
    if (!persistent.empty()) start_flags<S>(motion_state<S>(S(model->t0), x0, p), p, x0);
  }

  /// Positions for independent coordinates u. The result must be a function of (t, u, p)
  /// alone: CVODES recomputes forward steps between check points during the adjoint pass and
  /// assumes they repeat exactly (a different step sequence overruns its step storage). So the
  /// Newton solution from the last positions is snapped to a 2^-20 grid and polished from
  /// there, which gives bitwise the same positions whichever start was used (unless a
  /// coordinate sits on a grid boundary, a 1e-10 chance per evaluation).
  template <class S>
  VectorX<S> positions(const S& t, const VectorX<S>& u, In<S> p) const {
    const Eigen::VectorXd ur = real_parts<S>(u), pr = real_parts<S>(p);
    const double tr = real_part(t);
    Eigen::VectorXd q;
    try {
      q = solve_positions(*model, part, tr, ur, pr, *last_positions, settings);
    } catch (const ModelError&) {
      q = solve_positions(*model, part, tr, ur, pr, q_guess, settings);  // another basin
    }
    *last_positions = q;
    const double grid = 1048576.0;  // 2^20
    const Eigen::VectorXd snapped = (q * grid).array().round().matrix() / grid;
    const Eigen::VectorXd q_star = solve_positions(*model, part, tr, ur, pr, snapped, settings);
    return refine_positions<S>(*model, part, t, u, p, q_star);
  }

  template <class S>
  struct Kinematics {
    MotionState<S> st;
    ConstraintSet<S> cs;
    MatX<S> R;          ///< n x f, Phi_q R = 0, B R = I
    VectorX<S> s_c;     ///< S_Phi c, n
  };

  template <class S>
  Kinematics<S> kinematics(const S& t, In<S> x, In<S> p) const {
    Kinematics<S> k;
    const VectorX<S> u = x.head(f()), u_dot = x.segment(f(), f());
    k.st.t = t;
    k.st.q = positions(t, u, p);
    k.st.v = velocities_from_independent(*model, part, k.st, u_dot, p);
    k.cs = constraints(*model, k.st, p);
    const int rows = static_cast<int>(k.cs.phi.size());
    MatX<S> rhs = MatX<S>::Zero(n, f() + 1);
    rhs.bottomLeftCorner(f(), f()) = MatX<S>::Identity(f(), f());
    rhs.col(f()).head(rows) = -k.cs.bias;  // Phi_q a = c = -bias
    const MatX<S> sol = solve_dense<S>(augmented_jacobian(part, k.cs.jac), rhs, "Maggi matrix [Phi_q; B]");
    k.R = sol.leftCols(f());
    k.s_c = sol.col(f());
    return k;
  }

  template <class S>
  MotionState<S> motion_state(const S& t, In<S> x, In<S> p) const {
    return kinematics(t, x, p).st;
  }
  template <class S>
  MotionState<S> positions_state(const S& t, In<S> x, In<S> p) const {
    return MotionState<S>{t, positions(t, VectorX<S>(x.head(f())), p), VectorX<S>::Zero(n)};
  }
  template <class S>
  void write_velocities(const VectorX<S>& v, Out<S> x) const {
    x.segment(f(), f()) = select(part, v);
  }

  /// u-ddot and the multipliers of the active contacts' rows (empty without any).
  template <class S>
  std::pair<VectorX<S>, VectorX<S>> independent_accelerations(const Kinematics<S>& k, In<S> p,
                                                              const std::vector<int>& active) const {
    const MatX<S> M = mass_matrix<S>(*model, p);
    const VectorX<S> F = applied_forces(*model, k.st, p);
    const MatX<S> M_bar = k.R.transpose() * M * k.R;
    const VectorX<S> F_bar = k.R.transpose() * (F - M * k.s_c);
    if (active.empty()) return {solve_dense<S>(M_bar, F_bar, "reduced mass matrix R^T M R"), VectorX<S>()};
    const int a = static_cast<int>(active.size());
    MatX<S> K = MatX<S>::Zero(f() + a, f() + a);
    K.topLeftCorner(f(), f()) = M_bar;
    VectorX<S> rhs(f() + a);
    rhs.head(f()) = F_bar;
    const double xi = settings.baumgarte_xi, omega = settings.baumgarte_omega;
    for (int i = 0; i < a; ++i) {
      const KinRow<S> g = contact_geometry(*model, contact(active[static_cast<size_t>(i)]), k.st, p).gap;
      const VectorX<S> g_bar = k.R.transpose() * g.jac;
      K.block(0, f() + i, f(), 1) = g_bar;
      K.block(f() + i, 0, 1, f()) = g_bar.transpose();
      S g_s(0.0);
      for (int j = 0; j < n; ++j) g_s += g.jac[j] * k.s_c[j];
      rhs[f() + i] = -(g_s + g.bias + S(2.0 * xi * omega) * g.rate + S(omega * omega) * g.value);
    }
    const VectorX<S> sol = solve_dense<S>(K, rhs, "reduced KKT matrix of the active contacts [R^T M R, (G R)^T; G R, 0]").col(0);
    return {sol.head(f()), sol.tail(a)};
  }

  template <class S>
  VectorX<S> multipliers(const S& t, In<S> x, In<S> p, const std::vector<int>& active) const {
    return independent_accelerations(kinematics(t, x, p), p, active).second;
  }

  template <class S>
  void rhs(const S& t, In<S> x, In<S> p, Out<S> xdot) const {
    const Kinematics<S> k = kinematics(t, x, p);
    xdot.head(f()) = x.segment(f(), f());
    xdot.segment(f(), f()) = independent_accelerations(k, p, active_contacts<S>(x)).first;
    xdot.tail(n_flags()).setZero();
  }

  template <class S>
  FullState<S> full_state(const S& t, In<S> x, In<S> p, const VectorX<S>* xdot, bool need_mu) const {
    const Kinematics<S> k = kinematics(t, x, p);
    const std::vector<int> active = active_contacts<S>(x);
    FullState<S> fs{k.st, {}, {}, active};
    if (xdot != nullptr || need_mu) {
      const VectorX<S> u_ddot =
          xdot != nullptr ? VectorX<S>(xdot->segment(f(), f())) : independent_accelerations(k, p, active).first;
      fs.a = k.R * u_ddot + k.s_c;
    }
    if (need_mu) {
      // [Phi_q; G]^T mu = F - M a, solved in the least-squares sense on the rows of Phi_q and
      // of the active contacts.
      const ConstraintSet<S> cs = with_contacts(*model, k.cs, active, k.st, p);
      const MatX<S> M = mass_matrix<S>(*model, p);
      const VectorX<S> residual = applied_forces(*model, k.st, p) - M * fs.a;
      fs.mu = cs.phi.size() == 0 ? VectorX<S>()
                                 : VectorX<S>(solve_dense<S>(MatX<S>(cs.jac * cs.jac.transpose()), cs.jac * residual,
                                                             "Gram matrix Phi_q Phi_q^T").col(0));
    }
    return fs;
  }

  template <class S>
  void jump(int c, const S& t, In<S> x, In<S> p, Out<S> x_plus) const {
    const std::vector<int> active = active_contacts<S>(x);
    x_plus = x;
    if (contact(c).law == ImpactLaw::Partitioning && active.empty()) {
      x_plus.segment(f(), f()) = partitioned_velocity(*model, part, contact(c), VectorX<S>(x.segment(f(), f())), p);
    } else {
      write_velocities<S>(impulse_velocity(*model, contact(c), kinematics(t, x, p).st, p, active), x_plus);
    }
  }
};

/// The DAE formulations run on IDAS (docs/multibody.md, docs/dae.md "Index 2"), with
/// x = (q, v, w1, w2) and the multiplier blocks w1, w2 of m entries each:
///   ggl (GGL):         q' - v + Phi_q^T w2 = 0,      M v' - F + Phi_q^T w1 = 0,   Phi = 0,
///                      Phi_q v + Phi_t = 0           (w1 = lambda, w2 = mu = 0 on the solution);
///   stabilized_index1 (Anantharaman-Hiller, theory multibody 4):
///                      q' - v + Phi_q^T w1' = 0,     M v' + Phi_q^T w2' - F = 0,
///                      Phi_q v + Phi_t = 0,          Phi = 0     (w1 = chi, w2 = psi, chi' = 0,
///                      psi' = lambda on the solution).
/// Their completion keeps the independent coordinates and velocities of a guess, solves the
/// dependent ones from the constraints, and the accelerations and reactions from the KKT system
/// [M Phi_q^T; Phi_q 0]. The multiplier blocks are left out of IDAS's error test (they are the
/// problem's "algebraic" states).
struct DaeForm : FormBase {
  FormulationType kind;
  int m = 0;  ///< constraint rows

  DaeForm(std::shared_ptr<const Model> mod, Partition p, FormulationSettings s)
      : FormBase(std::move(mod), std::move(p), s), kind(s.type) {
    const Eigen::VectorXd p0 = model->nominal_parameters();
    m = static_cast<int>(constraints<double>(*model, MotionState<double>{model->t0, q_guess, v_guess}, p0).phi.size());
  }

  int n_states() const { return 2 * n + 2 * m; }
  std::vector<std::string> state_names() const {
    std::vector<std::string> names = model->coordinate_names();
    for (int i = 0; i < n; ++i) names.push_back(names[static_cast<size_t>(i)] + "_dot");
    const bool ah = kind == FormulationType::StabilizedIndex1;
    for (int k = 0; k < m; ++k) names.push_back(fmt::format("{}{}", ah ? "chi" : "lambda", k + 1));
    for (int k = 0; k < m; ++k) names.push_back(fmt::format("{}{}", ah ? "psi" : "mu", k + 1));
    return names;
  }
  /// The states left out of the error test: the multipliers.
  std::vector<std::string> algebraic_names() const {
    const std::vector<std::string> all = state_names();
    return std::vector<std::string>(all.begin() + 2 * n, all.end());
  }

  template <class S>
  MotionState<S> motion(const S& t, In<S> x) const {
    return MotionState<S>{t, x.head(n), x.segment(n, n)};
  }

  template <class S>
  void initial_state(In<S> p, Out<S> x0) const {
    CartesianForm cartesian(model, part, settings);
    cartesian.initial_state<S>(p, x0.head(2 * n));
    x0.tail(2 * m).setZero();  // guesses (ggl) or the integrals chi, psi from 0
  }

  template <class S>
  void residual(const S& t, In<S> x, In<S> xdot, In<S> p, Out<S> r) const {
    const MotionState<S> st = motion(t, x);
    const ConstraintSet<S> cs = constraints(*model, st, p);
    const MatX<S> M = mass_matrix<S>(*model, p);
    const VectorX<S> F = applied_forces(*model, st, p);
    const auto q_dot = xdot.head(n);
    const auto v_dot = xdot.segment(n, n);
    if (kind == FormulationType::StabilizedIndex1) {
      r.head(n) = q_dot - st.v + cs.jac.transpose() * xdot.segment(2 * n, m);
      r.segment(n, n) = M * v_dot + cs.jac.transpose() * xdot.tail(m) - F;
      r.segment(2 * n, m) = cs.rate(st.v);
      r.tail(m) = cs.phi;
    } else {  // GGL
      r.head(n) = q_dot - st.v + cs.jac.transpose() * x.tail(m);
      r.segment(n, n) = M * v_dot - F + cs.jac.transpose() * x.segment(2 * n, m);
      r.segment(2 * n, m) = cs.phi;
      r.tail(m) = cs.rate(st.v);
    }
  }

  /// The consistent state through the independent coordinates and velocities of `guess`.
  template <class S>
  void completion(const S& t, In<S> guess, In<S> p, Out<S> x, Out<S> xdot) const {
    const VectorX<S> q_guess_s = guess.head(n);
    const VectorX<S> q = assemble(t, select(part, q_guess_s), p, real_parts<S>(q_guess_s));
    const MotionState<S> at_q{t, q, VectorX<S>::Zero(n)};
    const VectorX<S> v = velocities_from_independent(*model, part, at_q, select(part, VectorX<S>(guess.segment(n, n))), p);
    const MotionState<S> st{t, q, v};
    const ConstraintSet<S> cs = constraints(*model, st, p);
    const int rows = static_cast<int>(cs.phi.size());
    MatX<S> K = MatX<S>::Zero(n + rows, n + rows);
    K.topLeftCorner(n, n) = mass_matrix<S>(*model, p);
    K.topRightCorner(n, rows) = cs.jac.transpose();
    K.bottomLeftCorner(rows, n) = cs.jac;
    VectorX<S> rhs(n + rows);
    rhs << applied_forces(*model, st, p), -cs.bias;  // Phi_q a = -bias: the hidden constraint
    const VectorX<S> sol = solve_dense<S>(K, rhs, "KKT matrix [M Phi_q^T; Phi_q 0]").col(0);
    x.head(n) = q;
    x.segment(n, n) = v;
    xdot.head(n) = v;
    xdot.segment(n, n) = sol.head(n);
    xdot.tail(2 * m).setZero();
    if (kind == FormulationType::StabilizedIndex1) {
      // chi and psi enter only through their rates: their values continue; psi' = lambda.
      x.tail(2 * m) = guess.tail(2 * m);
      xdot.tail(m) = sol.tail(rows);
    } else {
      x.segment(2 * n, m) = sol.tail(rows);
      x.tail(m).setZero();
    }
  }

  /// The reactions lambda of the state (the KKT multipliers).
  template <class S>
  VectorX<S> reactions(const S& t, In<S> x, In<S> p) const {
    if (kind != FormulationType::StabilizedIndex1) return x.segment(2 * n, m);
    VectorX<S> xc(n_states()), xdc(n_states());
    completion<S>(t, x, p, xc, xdc);
    return xdc.tail(m);
  }

  template <class S>
  FullState<S> full_state(const S& t, In<S> x, In<S> p, const VectorX<S>* xdot, bool need_mu) const {
    FullState<S> fs{motion(t, x), {}, {}, {}};
    if (xdot != nullptr) {
      fs.a = xdot->segment(n, n);
    } else {
      VectorX<S> xc(n_states()), xdc(n_states());
      completion<S>(t, x, p, xc, xdc);
      fs.a = xdc.segment(n, n);
    }
    if (need_mu) fs.mu = reactions<S>(t, x, p);
    return fs;
  }

  template <class S>
  MotionState<S> positions_state(const S& t, In<S> x, In<S>) const {
    return motion(t, x);
  }
  /// Never true: make_problem refuses persistent contacts in the DAE formulations.
  template <class S>
  bool is_active(int, In<S>) const {
    return false;
  }

  template <class S>
  void jump(int c, const S& t, In<S> x, In<S> p, Out<S> x_plus) const {
    x_plus = x;  // q continuous; the multipliers are guesses the completion replaces
    x_plus.segment(n, n) = impact_velocity(c, motion(t, x), p, std::vector<int>());
  }

  /// The rates at the start (check_start): the completion's.
  template <class S>
  void start_rates(const S& t, In<S> x, In<S> p, Out<S> xdot) const {
    VectorX<S> xc(n_states());
    completion<S>(t, x, p, xc, xdot);
  }
};

}  // namespace saltus::multibody::detail
