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
  /// The guard (.value), its gradient r_q (.jac) and rate; .bias (the acceleration's velocity
  /// terms) for point-line contacts and travel stops only (NaN for angle stops).
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
    g.gap.bias = S(std::numeric_limits<double>::quiet_NaN());  // not computed: nothing reads it
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

/// Contacts whose gap is within this of zero (relative to 1 + max |q|) when another one fires
/// close together with it: one simultaneous impact.
inline constexpr double kSimultaneousGap = 1e-9;

/// The impulse-law contacts that take part in the impact of contact `c` at `st`: c and every
/// other impulse-law contact closed with it (gap within kSimultaneousGap) and approaching
/// (r_q v < 0), in declaration order. Empty if c itself is not approaching: an impact resolved
/// with another one a moment ago (the same instant) left it separating. Decided on real parts,
/// so every scalar type takes the same set.
template <class S>
std::vector<int> simultaneous_contacts(const Model& m, const Contact& c, const MotionState<S>& st, In<S> p) {
  std::vector<int> set;
  double scale = 1.0;
  for (Eigen::Index i = 0; i < st.q.size(); ++i) scale = std::max(scale, 1.0 + std::abs(real_part(st.q[i])));
  for (size_t j = 0; j < m.contacts.size(); ++j) {
    const Contact& other = m.contacts[j];
    if (other.law != ImpactLaw::Impulse) continue;
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

/// Post-impact velocities by Newton restitution through the KKT impulse system
/// (multibody.md 9.3): M v+ + Phi_q^T Pi + R_q^T pi = M v-, Phi_q v+ + Phi_t = 0,
/// r_k v+ = -e_k r_k v- for every contact k of the impact (simultaneous_contacts: c and those
/// closed with it, resolved as one system). v- itself if c is no longer approaching.
template <class S>
VectorX<S> impulse_velocity(const Model& m, const Contact& c, const MotionState<S>& st, In<S> p) {
  const std::vector<int> impact = simultaneous_contacts(m, c, st, p);
  if (impact.empty()) return st.v;
  const int n = m.n_coordinates(), k = static_cast<int>(impact.size());
  const ConstraintSet<S> cs = constraints(m, st, p);
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
    const Contact& contact = m.contacts[static_cast<size_t>(impact[static_cast<size_t>(i)])];
    const VectorX<S> r_q = contact_geometry(m, contact, st, p).gap.jac;
    K.block(0, n + rows + i, n, 1) = r_q;
    K.block(n + rows + i, 0, 1, n) = r_q.transpose();
    S normal_velocity(0.0);
    for (int j = 0; j < n; ++j) normal_velocity += r_q[j] * st.v[j];
    rhs[n + rows + i] = -value_of<S>(contact.restitution, p) * normal_velocity;
  }
  std::string what = "impact (KKT impulse) matrix";
  if (k > 1) {
    std::vector<std::string> names;
    for (int j : impact) names.push_back(m.contacts[static_cast<size_t>(j)].name);
    what = fmt::format("simultaneous impact (KKT impulse) matrix of contacts {} (if singular, their gradients are "
                       "dependent and the impulses not unique)",
                       fmt::join(names, ", "));
  }
  const MatX<S> sol = solve_dense<S>(K, rhs, what.c_str());
  return sol.col(0).head(n);
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

/// Shared data of both formulations.
struct FormBase {
  std::shared_ptr<const Model> model;
  Partition part;
  FormulationSettings settings;
  int n = 0;
  Eigen::VectorXd q_guess, v_guess;

  FormBase(std::shared_ptr<const Model> m, Partition p, FormulationSettings s)
      : model(std::move(m)), part(std::move(p)), settings(s), n(model->n_coordinates()),
        q_guess(model->initial_positions()), v_guess(model->initial_velocities()) {}

  const Contact& contact(int i) const { return model->contacts[static_cast<size_t>(i)]; }

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
};

/// Index-1 with Baumgarte stabilization, or the penalty (Bayo - Garcia de Jalon) ODE, in
/// full coordinates x = (q, v).
struct CartesianForm : FormBase {
  using FormBase::FormBase;

  int n_states() const { return 2 * n; }
  std::vector<std::string> state_names() const {
    std::vector<std::string> names = model->coordinate_names();
    for (int i = 0; i < n; ++i) names.push_back(names[static_cast<size_t>(i)] + "_dot");
    return names;
  }

  template <class S>
  MotionState<S> motion(const S& t, In<S> x) const {
    return MotionState<S>{t, x.head(n), x.tail(n)};
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
    x0.tail(n) = velocities_from_independent(*model, part, MotionState<S>{t0, q, VectorX<S>::Zero(n)}, u_dot0, p);
  }

  /// Accelerations a and multipliers mu (penalty: the estimate mu*) at a motion state.
  template <class S>
  std::pair<VectorX<S>, VectorX<S>> accelerations(const MotionState<S>& st, In<S> p) const {
    const ConstraintSet<S> cs = constraints(*model, st, p);
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
  void rhs(const S& t, In<S> x, In<S> p, Out<S> xdot) const {
    const MotionState<S> st = motion(t, x);
    xdot.head(n) = st.v;
    xdot.tail(n) = accelerations(st, p).first;
  }

  template <class S>
  FullState<S> full_state(const S& t, In<S> x, In<S> p, const VectorX<S>* xdot, bool need_mu) const {
    FullState<S> fs{motion(t, x), {}, {}};
    if (xdot != nullptr) fs.a = xdot->tail(n);
    if (need_mu) {
      auto [a, mu] = accelerations(fs.motion, p);
      if (xdot == nullptr) fs.a = a;
      fs.mu = mu;
    }
    return fs;
  }

  template <class S>
  S guard(int contact_index, const S& t, In<S> x, In<S> p) const {
    return contact_geometry(*model, contact(contact_index), motion(t, x), p).gap.value;
  }

  template <class S>
  void jump(int contact_index, const S& t, In<S> x, In<S> p, Out<S> x_plus) const {
    const Contact& c = contact(contact_index);
    const MotionState<S> st = motion(t, x);
    x_plus.head(n) = st.q;
    if (c.law == ImpactLaw::Impulse) {
      x_plus.tail(n) = impulse_velocity(*model, c, st, p);
    } else {
      const VectorX<S> u_dot = partitioned_velocity(*model, part, c, select(part, st.v), p);
      x_plus.tail(n) = velocities_from_independent(*model, part, st, u_dot, p);
    }
  }
};

/// Maggi / null-space formulation (multibody.md section 7): x = (u, u-dot), positions by
/// Newton, R and S_Phi c from one factorization of A = [Phi_q; B], R^T M R u-ddot =
/// R^T (F - M S_Phi c).
struct MaggiForm : FormBase {
  /// Last converged positions: the Newton start of the next evaluation.
  std::shared_ptr<Eigen::VectorXd> last_positions;

  MaggiForm(std::shared_ptr<const Model> m, Partition p, FormulationSettings s)
      : FormBase(std::move(m), std::move(p), s),
        last_positions(std::make_shared<Eigen::VectorXd>(q_guess)) {}

  int f() const { return part.f(); }
  int n_states() const { return 2 * f(); }
  std::vector<std::string> state_names() const {
    const std::vector<std::string> all = model->coordinate_names();
    std::vector<std::string> names;
    for (int k : part.independent) names.push_back(all[static_cast<size_t>(k)]);
    for (int k : part.independent) names.push_back(all[static_cast<size_t>(k)] + "_dot");
    return names;
  }

  template <class S>
  void initial_state(In<S> p, Out<S> x0) const {
    x0.head(f()) = select(part, model->initial_positions<S>(p));
    x0.tail(f()) = select(part, model->initial_velocities<S>(p));
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
    const VectorX<S> u = x.head(f()), u_dot = x.tail(f());
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
  VectorX<S> independent_accelerations(const Kinematics<S>& k, In<S> p) const {
    const MatX<S> M = mass_matrix<S>(*model, p);
    const VectorX<S> F = applied_forces(*model, k.st, p);
    const MatX<S> M_bar = k.R.transpose() * M * k.R;
    const VectorX<S> F_bar = k.R.transpose() * (F - M * k.s_c);
    return solve_dense<S>(M_bar, F_bar, "reduced mass matrix R^T M R");
  }

  template <class S>
  void rhs(const S& t, In<S> x, In<S> p, Out<S> xdot) const {
    const Kinematics<S> k = kinematics(t, x, p);
    xdot.head(f()) = x.tail(f());
    xdot.tail(f()) = independent_accelerations(k, p);
  }

  template <class S>
  FullState<S> full_state(const S& t, In<S> x, In<S> p, const VectorX<S>* xdot, bool need_mu) const {
    const Kinematics<S> k = kinematics(t, x, p);
    FullState<S> fs{k.st, {}, {}};
    if (xdot != nullptr || need_mu) {
      const VectorX<S> u_ddot = xdot != nullptr ? VectorX<S>(xdot->tail(f())) : independent_accelerations(k, p);
      fs.a = k.R * u_ddot + k.s_c;
    }
    if (need_mu) {
      // Phi_q^T mu = F - M a, solved in the least-squares sense on the rows of Phi_q.
      const MatX<S> M = mass_matrix<S>(*model, p);
      const VectorX<S> residual = applied_forces(*model, k.st, p) - M * fs.a;
      fs.mu = solve_dense<S>(MatX<S>(k.cs.jac * k.cs.jac.transpose()), k.cs.jac * residual, "Gram matrix Phi_q Phi_q^T");
    }
    return fs;
  }

  template <class S>
  S guard(int contact_index, const S& t, In<S> x, In<S> p) const {
    const MotionState<S> st{t, positions(t, VectorX<S>(x.head(f())), p), VectorX<S>::Zero(n)};
    return contact_geometry(*model, contact(contact_index), st, p).gap.value;
  }

  template <class S>
  void jump(int contact_index, const S& t, In<S> x, In<S> p, Out<S> x_plus) const {
    const Contact& c = contact(contact_index);
    x_plus.head(f()) = x.head(f());
    if (c.law == ImpactLaw::Partitioning) {
      x_plus.tail(f()) = partitioned_velocity(*model, part, c, VectorX<S>(x.tail(f())), p);
    } else {
      const Kinematics<S> k = kinematics(t, x, p);
      x_plus.tail(f()) = select(part, impulse_velocity(*model, c, k.st, p));
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
    FullState<S> fs{motion(t, x), {}, {}};
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
  S guard(int contact_index, const S& t, In<S> x, In<S> p) const {
    return contact_geometry(*model, contact(contact_index), motion(t, x), p).gap.value;
  }

  template <class S>
  void jump(int contact_index, const S& t, In<S> x, In<S> p, Out<S> x_plus) const {
    const Contact& c = contact(contact_index);
    const MotionState<S> st = motion(t, x);
    x_plus = x;  // q continuous; the multipliers are guesses the completion replaces
    if (c.law == ImpactLaw::Impulse) {
      x_plus.segment(n, n) = impulse_velocity(*model, c, st, p);
    } else {
      const VectorX<S> u_dot = partitioned_velocity(*model, part, c, select(part, st.v), p);
      x_plus.segment(n, n) = velocities_from_independent(*model, part, st, u_dot, p);
    }
  }

  /// The rates at the start (check_start): the completion's.
  template <class S>
  void start_rates(const S& t, In<S> x, In<S> p, Out<S> xdot) const {
    VectorX<S> xc(n_states());
    completion<S>(t, x, p, xc, xdot);
  }
};

}  // namespace saltus::multibody::detail
