#pragma once
// The formulations that turn a planar Model into the functions of a Saltus hybrid Problem
// (right-hand side or residual, guards, jumps, costs, initial state), templated on the scalar
// type so that forward sensitivities, complex steps and adjoints differentiate them exactly.
//
//   CartesianForm (index-1 with Baumgarte, or penalty): state x = (q, v), 2n entries.
//   MaggiForm (null space, seed 003): state x = (u, u-dot) with u = B q, 2f entries.
//   DaeForm (DAEs on IDAS: GGL, stabilized index-1, index 3): x = (q, v, multipliers, flags).
#include <saltus/core/reverse_scalar.hpp>
#include <saltus/core/same_bits.hpp>

#include "contacts.hpp"
#include "partitioning_law.hpp"
#include "patterned_assembly.hpp"
#include "recorded_product.hpp"

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstdint>
#include <limits>
#include <numbers>
#include <stdexcept>
#include <memory>
#include <string>
#include <tuple>
#include <type_traits>
#include <utility>
#include <vector>

namespace saltus::multibody::detail {

/// The same Reverse variable: value, node and coefficient (Reverse's padding is not compared).
inline bool same_variable(const Reverse& a, const Reverse& b) {
  return a.node() == b.node() && same_bits(a.value(), b.value()) && same_bits(a.coefficient(), b.coefficient());
}
inline bool same_variables(const VectorX<Reverse>& a, In<Reverse> b) {
  if (a.size() != b.size()) return false;
  for (Eigen::Index i = 0; i < a.size(); ++i) {
    if (!same_variable(a[i], b[i])) return false;
  }
  return true;
}

/// The last value of type Value a thread computed in scalar type S at one point: a form (its
/// id: a later form may reuse an address), a time, a state and the parameters, recognised by
/// their bits (same_bits). begin() forgets the old value and keys the new point before it is
/// computed (the caller's output may alias the state it reads); complete() marks it computed, so
/// a computation that throws leaves nothing remembered.
/// In Reverse, a value refers to nodes of the tape it was recorded on: it is remembered for that
/// recording only (its tape generation), for the same variables (nodes and coefficients, not only
/// values). Reusing it there records nothing twice: the vehicle's maggi adjoint computed its
/// kinematics four times per recording (right-hand side and three costs), 16,614 for 4,114.
template <class S, class Value>
struct PointMemo {
  std::uint64_t form = 0;  ///< 0: empty
  S t{};
  VectorX<S> at, p;
  Value value;
  long tape = -1;  ///< S = Reverse: the tape generation the value was recorded in

  bool holds(std::uint64_t id, const S& time, In<S> point, In<S> params) const {
    if constexpr (std::is_same_v<S, Reverse>) {
      return form == id && tape == ReverseTape::generation() && same_variable(t, time) &&
             same_variables(at, point) && same_variables(p, params);
    } else {
      return form == id && same_bits(t, time) && same_bits_entries(at, point) && same_bits_entries(p, params);
    }
  }
  void begin(const S& time, In<S> point, In<S> params) {
    form = 0;
    t = time;
    at = point;
    p = params;
    if constexpr (std::is_same_v<S, Reverse>) tape = ReverseTape::generation();
  }
  void complete(std::uint64_t id) { form = id; }
  static PointMemo& of_this_thread() {
    // On the heap, a pointer in thread-local storage: the library's TLS block is allocated from
    // the loader's small static surplus when Python loads the module (memos held in it made
    // `import saltus` fail: "cannot allocate memory in static TLS block").
    thread_local std::unique_ptr<PointMemo> memo;
    if (!memo) memo = std::make_unique<PointMemo>();
    return *memo;
  }
};

/// Shared data of the formulations.
struct FormBase {
  std::shared_ptr<const Model> model;
  Partition part;
  FormulationSettings settings;
  int n = 0;
  Eigen::VectorXd q_guess, v_guess;
  /// The persistent contacts (indices into the model's contacts), in declaration order. The
  /// state ends with their flags, in this order: `<contact>.active` (1 while its gap is a
  /// constraint row, else 0) and, for a frictional contact, `<contact>.stick` (1 while it sticks)
  /// and `<contact>.slide` (its slide direction +1 or -1 while it slides, else 0). The flags
  /// change only at events, and are read on real parts.
  std::vector<int> persistent;
  std::vector<int> flag_offset;  ///< per persistent contact: its first flag, from the first flag
  int n_flags_ = 0;
  /// Names this form in the per-thread memos (CompletionMemo, KinematicsMemo): copies of a form
  /// compute the same functions and share it.
  std::uint64_t id = next_id();
  static std::uint64_t next_id() {
    static std::atomic<std::uint64_t> counter{0};
    return ++counter;
  }

  FormBase(std::shared_ptr<const Model> m, Partition p, FormulationSettings s)
      : model(std::move(m)), part(std::move(p)), settings(s), n(model->n_coordinates()),
        q_guess(model->initial_positions()), v_guess(model->initial_velocities()) {
    for (size_t i = 0; i < model->contacts.size(); ++i) {
      if (!model->contacts[i].persistent) continue;
      persistent.push_back(static_cast<int>(i));
      flag_offset.push_back(n_flags_);
      n_flags_ += model->contacts[i].frictional() ? 3 : 1;
    }
  }

  const Contact& contact(int i) const { return model->contacts[static_cast<size_t>(i)]; }

  int n_flags() const { return n_flags_; }
  std::vector<std::string> flag_names() const {
    std::vector<std::string> names;
    for (int c : persistent) {
      names.push_back(contact(c).name + ".active");
      if (contact(c).frictional()) {
        names.push_back(contact(c).name + ".stick");
        names.push_back(contact(c).name + ".slide");
      }
    }
    return names;
  }
  /// The `.active` flag of persistent contact `c` (its index in a state of n_states entries),
  /// or -1; a frictional contact's `.stick` and `.slide` follow it.
  int flag_of(int c, Eigen::Index n_states) const {
    const auto it = std::find(persistent.begin(), persistent.end(), c);
    if (it == persistent.end()) return -1;
    return static_cast<int>(n_states - n_flags_ + flag_offset[static_cast<size_t>(it - persistent.begin())]);
  }
  template <class S>
  bool is_active(int c, In<S> x) const {
    const int flag = flag_of(c, x.size());
    return flag >= 0 && real_part(x[flag]) > 0.5;
  }
  /// The persistent contacts in force at state x, read from its flags.
  template <class S>
  ContactSet contact_set(In<S> x) const {
    ContactSet set;
    for (int c : persistent) {
      const int flag = flag_of(c, x.size());
      if (real_part(x[flag]) <= 0.5) continue;
      set.active.push_back(c);
      const bool frictional = contact(c).frictional();
      if (frictional && real_part(x[flag + 1]) > 0.5) set.sticking.push_back(c);
      set.sliding.push_back(frictional ? real_part(x[flag + 2]) : 0.0);
    }
    return set;
  }
  /// Sets the flags of contact c: active or not, sticking, slide direction (frictional only).
  template <class S>
  void set_flags(int c, Out<S> x, bool active, bool stick = false, double slide = 0.0) const {
    const int flag = flag_of(c, x.size());
    x[flag] = S(active ? 1.0 : 0.0);
    if (!contact(c).frictional()) return;
    x[flag + 1] = S(active && stick ? 1.0 : 0.0);
    x[flag + 2] = S(active ? slide : 0.0);
  }
  /// Writes the flags of the contacts active at the start (starting_contacts; frictional ones
  /// sliding or sticking as ContactEvents::settle then decides) into x0's tail.
  template <class S>
  void start_flags(const MotionState<S>& st, In<S> p, Out<S> x0) const {
    if (persistent.empty()) return;
    const MotionState<double> real{real_part(st.t), real_parts<S>(st.q), real_parts<S>(st.v)};
    const std::vector<int> active = starting_contacts(*model, real, real_parts<S>(p));
    for (int c : persistent) set_flags<S>(c, x0, contains(active, c));
  }

  /// Assembled positions for independent coordinates u at time t (double Newton from
  /// `start`, then one step in S).
  template <class S>
  VectorX<S> assemble(const S& t, const VectorX<S>& u, In<S> p, const Eigen::VectorXd& start) const {
    return assemble<S>(part, t, u, p, start);
  }
  /// The same for the independent coordinates u of the set `set`.
  template <class S>
  VectorX<S> assemble(const Partition& set, const S& t, const VectorX<S>& u, In<S> p, const Eigen::VectorXd& start) const {
    const Eigen::VectorXd q_star =
        solve_positions(*model, set, real_part(t), real_parts<S>(u), real_parts<S>(p), start, settings);
    return refine_positions<S>(*model, set, t, u, p, q_star);
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
  VectorX<S> impact_velocity(int c, const MotionState<S>& st, In<S> p, const ContactSet& held) const {
    if (measures_angle(contact(c).kind)) refuse_wrapped_angle(c, st, p);
    if (contact(c).law == ImpactLaw::Impulse || !held.empty()) return impulse_velocity(*model, contact(c), st, p, held);
    const Partition law = law_partition<S>(c, st, p);
    const VectorX<S> u_dot = partitioned_velocity(*model, law, contact(c), select(law, st.v), p);
    return velocities_from_independent(*model, law, st, u_dot, p);
  }

  /// An angle measured in (-pi, pi] (a spatial joint's, the angle between two bars) jumps by
  /// 2 pi where the joint passes +-pi, and its stop's guard changes sign there too: that firing
  /// is no impact, and past it the guard's sign no longer tells the allowed side (the limit
  /// would be crossed unseen). The run stops there with the reason rather than go on wrong. A
  /// wrapped firing has the angle at +-pi (within kWrapBand) and its gap at least the limit's
  /// distance to +-pi; a firing at the limit has a gap of the solver's tolerance (the root
  /// finder's, and in the DAE forms the consistent point's projection, ~rtol |q|), far below
  /// half that distance, and a jump evaluated away from any firing (a derivative check at x0)
  /// passes unless its angle sits at +-pi. Decided on real parts, in double: no tape nodes.
  template <class S>
  void refuse_wrapped_angle(int c, const MotionState<S>& st, In<S> p) const {
    constexpr double kWrapBand = 1e-3;  // [rad]
    const Eigen::VectorXd p_real = real_parts<S>(p);
    const MotionState<double> real{real_part(st.t), real_parts<S>(st.q), real_parts<S>(st.v)};
    const Contact& stop = contact(c);
    const double gap = contact_geometry<double>(*model, stop, real, p_real).gap.value;
    const double limit = value_of<double>(stop.limit, p_real);
    const double angle = limit + stop.side * gap;
    const double to_wrap = std::numbers::pi - std::abs(limit);
    if (!(std::numbers::pi - std::abs(angle) < kWrapBand && std::abs(gap) > 0.5 * to_wrap)) return;
    throw ModelError(fmt::format(
        "joint stop '{}' fired {:.6g} rad from its limit at t = {:.17g}: the joint's angle passed +-pi, where "
        "it jumps by 2 pi (angles are measured in (-pi, pi]), so the stop cannot tell its side any more; keep the "
        "motion inside (-pi, pi) ({} set where the angle is 0)",
        stop.name, std::abs(gap), real.t,
        stop.kind == ContactKind::SpatialAngleStop ? "a spatial joint's normal_a and normal_b" : "the bars' directions"));
  }

  /// The independent set the partitioning law of contact c applies at st (decided on real
  /// parts): the model's own (`independent:` or the initial choice), unless it has degraded
  /// there (partition_gain past kRepartitionGain), then the best-conditioned set that keeps the
  /// contact point's coordinates independent.
  template <class S>
  Partition law_partition(int c, const MotionState<S>& st, In<S> p) const {
    const MotionState<double> real{real_part(st.t), real_parts<S>(st.q), Eigen::VectorXd::Zero(n)};
    const Eigen::MatrixXd jac = constraints<double>(*model, real, real_parts<S>(p)).dense_real_jacobian();
    if (jac.rows() == 0 || partition_gain(part, jac) <= kRepartitionGain) return part;
    // Keep the coordinates the law reverses: the point's along the normal's non-zero components.
    const Partition kept = pivot_partition_keeping(jac, partitioning_coordinates(*model, contact(c), real_parts<S>(p)));
    if (kept.f() != part.f()) {
      throw ModelError(fmt::format("contact '{}': the partitioning law's independent coordinates have degraded at the "
                                   "impact (|dq/du|^2 / f past {:g}) and no other set keeps the contact point's "
                                   "coordinates independent; use law: impulse",
                                   contact(c).name, kRepartitionGain));
    }
    return kept;
  }
};

/// The events of persistent contacts that every formulation shares, on top of its `Form`
/// (docs/multibody.md, "Persistent contact", "Friction"). Guards that do not apply in the
/// state's contact regime are 1 (they never fire), so one mode carries every regime.
///   impact:  the gap while the contact is open;
///   release: while active, its push N = -mu_c, falling through zero (theory 9.4);
///   stick:   while sliding, sigma s-dot (the slip velocity in the slide direction) reaching zero;
///   slip:    while sticking, mu_f N - |mu_t| (the friction force leaving its cone).
/// Each jump keeps q and v but the impacts', and ends with settle.
template <class Form>
struct ContactEvents {
  /// The normal and, if sticking, tangential multipliers of contact c among mu (the model's
  /// rows first).
  static std::pair<Eigen::Index, Eigen::Index> rows_of(const ContactSet& set, int c, Eigen::Index n_mu) {
    const Eigen::Index base = n_mu - set.rows();
    const int stick = set.sticking_slot(c);
    return {base + set.slot(c), stick < 0 ? -1 : base + static_cast<Eigen::Index>(set.active.size()) + stick};
  }

  template <class S>
  static S guard(const Form& form, int c, const S& t, In<S> x, In<S> p) {
    if (form.template is_active<S>(c, x)) return S(1.0);
    return contact_geometry(*form.model, form.contact(c), form.template positions_state<S>(t, x, p), p).gap.value;
  }
  template <class S>
  static S release_guard(const Form& form, int c, const S& t, In<S> x, In<S> p) {
    if (!form.template is_active<S>(c, x)) return S(1.0);
    const ContactSet set = form.template contact_set<S>(x);
    const VectorX<S> mu = form.template multipliers<S>(t, x, p, set);
    return -mu[rows_of(set, c, mu.size()).first];
  }
  template <class S>
  static S stick_guard(const Form& form, int c, const S& t, In<S> x, In<S> p) {
    const ContactSet set = form.template contact_set<S>(x);
    const int slot = set.slot(c);
    if (slot < 0 || set.sliding[static_cast<size_t>(slot)] == 0.0) return S(1.0);
    const MotionState<S> st = form.template motion_state<S>(t, x, p);
    return S(set.sliding[static_cast<size_t>(slot)]) * tangential_row(*form.model, form.contact(c), st, p).rate;
  }
  template <class S>
  static S slip_guard(const Form& form, int c, const S& t, In<S> x, In<S> p) {
    const ContactSet set = form.template contact_set<S>(x);
    if (set.sticking_slot(c) < 0) return S(1.0);
    const VectorX<S> mu = form.template multipliers<S>(t, x, p, set);
    const auto [normal, tangential] = rows_of(set, c, mu.size());
    const S mu_t = mu[tangential];
    const S cone = value_of<S>(form.contact(c).friction, p) * (-mu[normal]);
    return real_part(mu_t) >= 0.0 ? S(cone - mu_t) : S(cone + mu_t);
  }

  /// The plastic impact with which contact c comes to rest, and c active (sliding or sticking
  /// as settle decides).
  template <class S>
  static void rest(const Form& form, int c, const S& t, In<S> x, In<S> p, Out<S> x_plus) {
    const ContactSet held = form.template contact_set<S>(x);
    x_plus = x;
    if (held.slot(c) >= 0) return;  // already resting: the event does not apply
    const MotionState<S> st = form.template motion_state<S>(t, x, p);
    form.template write_velocities<S>(resting_velocity(*form.model, c, st, p, held), x_plus);
    form.template set_flags<S>(c, x_plus, true);
    settle<S>(form, t, x_plus, p);
  }
  /// The impact of contact c (the form's impact law), then settle.
  template <class S>
  static void impact(const Form& form, int c, const S& t, In<S> x, In<S> p, Out<S> x_plus) {
    form.template jump<S>(c, t, x, p, x_plus);
    settle<S>(form, t, x_plus, p);
  }
  template <class S>
  static void release(const Form& form, int c, const S& t, In<S> x, In<S> p, Out<S> x_plus) {
    x_plus = x;
    if (!form.template is_active<S>(c, x)) return;  // open: the event does not apply
    form.template set_flags<S>(c, x_plus, false);
    settle<S>(form, t, x_plus, p);
  }
  /// Slide to stick: c sticks (settle turns it back to sliding, the other way, if the force to
  /// hold it lies outside the cone).
  template <class S>
  static void stick(const Form& form, int c, const S& t, In<S> x, In<S> p, Out<S> x_plus) {
    x_plus = x;
    const ContactSet set = form.template contact_set<S>(x);
    if (set.slot(c) < 0 || set.sticking_slot(c) >= 0) return;  // not sliding: the event does not apply
    form.template set_flags<S>(c, x_plus, true, true);
    settle<S>(form, t, x_plus, p);  // it now sticks: its slip is judged against kStickingSlipBand
  }
  /// Stick to slip: c slides the way its sticking force pointed (the friction force keeps its
  /// value mu_f N, so the accelerations are continuous: theory 9.5).
  template <class S>
  static void slip(const Form& form, int c, const S& t, In<S> x, In<S> p, Out<S> x_plus) {
    const ContactSet set = form.template contact_set<S>(x);
    x_plus = x;
    if (set.sticking_slot(c) < 0) return;  // not sticking: the event does not apply
    const VectorX<S> mu = form.template multipliers<S>(t, x, p, set);
    form.template set_flags<S>(c, x_plus, true, false, real_part(mu[rows_of(set, c, mu.size()).second]) >= 0.0 ? 1.0 : -1.0);
    settle<S>(form, t, x_plus, p, {c});  // its direction is decided: it sits on the cone's edge
  }

  /// Makes the contact regimes of x consistent after an event, decided on real parts (so every
  /// scalar type takes the same modes), one change at a time until none applies:
  ///  - a frictional active contact slips if its slip velocity is not zero (within 1e-9 of the
  ///    velocities' size), in that direction; with zero slip velocity it sticks, unless its
  ///    direction was decided in this settling (`decided`: a slip event's contact, or one the
  ///    cone test below turned to sliding), so that a stale direction never pushes along the
  ///    motion;
  ///  - an active contact whose force would pull opens (the most tensile first): its release
  ///    guard would start below zero and never fire (a line accelerating away, a force turned by
  ///    an impact elsewhere);
  ///  - a sticking contact whose force lies outside its cone slides the way the force points.
  template <class S>
  static void settle(const Form& form, const S& t, Out<S> x, In<S> p, std::vector<int> decided = {}) {
    if (form.persistent.empty()) return;
    for (int pass = 0; pass < 4 * form.n_flags() + 4; ++pass) {
      if (!settle_once<S>(form, t, x, p, decided)) return;
    }
    throw ModelError("the persistent contacts' regimes do not settle after an event (contact forces changing sign "
                     "back and forth)");
  }

 private:
  /// Two sticking contacts of one body (or one point) on lines of one carrier are at least four
  /// rows on the body's three (the point's two) coordinates relative to the carrier: the KKT
  /// matrix is singular and the static friction forces indeterminate, which Saltus does not
  /// resolve. Named here rather than left to the singular factorization.
  static void refuse_indeterminate_sticking(const Form& form, const ContactSet& set, double t) {
    for (size_t i = 0; i < set.sticking.size(); ++i) {
      for (size_t j = i + 1; j < set.sticking.size(); ++j) {
        const Contact& a = form.contact(set.sticking[i]);
        const Contact& b = form.contact(set.sticking[j]);
        // The same point or body on the same line carrier (the ground, or one body): lines
        // carried by two other bodies give rows on their columns too, which may be independent.
        if (a.point.kind == PointRef::Kind::Ground || a.point.kind != b.point.kind || a.point.index != b.point.index ||
            a.line_body != b.line_body) {
          continue;
        }
        throw ModelError(fmt::format(
            "the frictional contacts '{}' and '{}' both stick on {} '{}' at t = {:.10g}: two frictional contacts of one "
            "body cannot stick at once (the static friction forces are indeterminate and the KKT matrix singular; "
            "docs/multibody.md, \"Friction\"): give it one frictional contact",
            a.name, b.name, a.point.kind == PointRef::Kind::Body ? "body" : "point", a.point.label, t));
      }
    }
  }

  template <class S>
  static bool settle_once(const Form& form, const S& t, Out<S> x, In<S> p, std::vector<int>& decided) {
    const ContactSet set = form.template contact_set<S>(In<S>(x));
    if (set.empty()) return false;
    refuse_indeterminate_sticking(form, set, real_part(t));
    const MotionState<S> st = form.template motion_state<S>(t, In<S>(x), p);
    double v_scale = 1.0;
    for (Eigen::Index i = 0; i < st.v.size(); ++i) v_scale = std::max(v_scale, 1.0 + std::abs(real_part(st.v[i])));
    for (size_t i = 0; i < set.active.size(); ++i) {
      const int c = set.active[i];
      if (!form.contact(c).frictional()) continue;
      const double w = real_part(tangential_row(*form.model, form.contact(c), st, p).rate);
      const bool sticking = set.sticking_slot(c) >= 0;
      // A sticking contact (one a stick event has just stuck too) slides only for a slip
      // velocity beyond the integration's noise: index3's velocities are out of the error test,
      // and its 3.9e-9 at a conveyor's stick root, judged moving, made the block slide on the
      // way it went, with friction pushing it along the slip (x_T 12.8 for 2.83). A real slip
      // after an impact elsewhere (impacts are frictionless) is far beyond it.
      const bool moving = std::abs(w) > (sticking ? kStickingSlipBand : kSimultaneousGap) * v_scale;
      const double sigma = set.sliding[i];
      if (moving && (sticking || sigma * w <= 0.0)) {
        form.template set_flags<S>(c, x, true, false, w > 0.0 ? 1.0 : -1.0);
        return true;
      }
      if (!moving && !sticking && (sigma == 0.0 || !contains(decided, c))) {
        form.template set_flags<S>(c, x, true, true);
        decided.push_back(c);
        return true;
      }
    }
    const VectorX<S> mu = form.template multipliers<S>(t, In<S>(x), p, set);
    int weakest = -1;
    double pull = 0.0;
    for (int c : set.active) {
      const double push = -real_part(mu[rows_of(set, c, mu.size()).first]);
      if (push < pull) {
        pull = push;
        weakest = c;
      }
    }
    if (weakest >= 0) {
      form.template set_flags<S>(weakest, x, false);
      return true;
    }
    for (int c : set.sticking) {
      const auto [normal, tangential] = rows_of(set, c, mu.size());
      const double mu_t = real_part(mu[tangential]);
      if (std::abs(mu_t) <= real_part(value_of<S>(form.contact(c).friction, p)) * -real_part(mu[normal])) continue;
      form.template set_flags<S>(c, x, true, false, mu_t >= 0.0 ? 1.0 : -1.0);
      if (!contains(decided, c)) decided.push_back(c);
      return true;
    }
    return false;
  }
};

/// The formulations whose state starts with all the coordinates and velocities, x = (q, v, ...).
struct FullCoordinateForm : FormBase {
  using FormBase::FormBase;

  /// The names of q and v: the coordinates, then `<coordinate>_dot`.
  std::vector<std::string> coordinate_and_velocity_names() const {
    std::vector<std::string> names = model->coordinate_names();
    for (int i = 0; i < n; ++i) names.push_back(names[static_cast<size_t>(i)] + "_dot");
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
  /// The motion's size at state x (Model::motion_scale; Problem::state_scale).
  double motion_scale(In<double> x) const { return model->motion_scale(x.head(n), x.segment(n, n)); }
};

/// Index-1 with Baumgarte stabilization, or the penalty (Bayo - Garcia de Jalon) ODE, in
/// full coordinates x = (q, v, flags).
struct CartesianForm : FullCoordinateForm {
  using FullCoordinateForm::FullCoordinateForm;

  int n_states() const { return 2 * n + n_flags(); }
  std::vector<std::string> state_names() const {
    std::vector<std::string> names = coordinate_and_velocity_names();
    for (std::string& flag : flag_names()) names.push_back(std::move(flag));
    return names;
  }

  template <class S>
  void initial_state(In<S> p, Out<S> x0) const {
    const S t0(model->t0);
    // Positions and velocities may be expressions of p: the independent ones carry their
    // derivatives, the guess for the others is taken at the real parts of p.
    const VectorX<S> guess = model->initial_positions<S>(p);
    const VectorX<S> u0 = select(part, guess);
    const VectorX<S> q = assemble(t0, u0, p, real_parts<S>(guess));
    const VectorX<S> u_dot0 = select(part, model->initial_velocities<S>(p, q));
    x0.head(n) = q;
    x0.segment(n, n) = velocities_from_independent(*model, part, MotionState<S>{t0, q, VectorX<S>::Zero(n)}, u_dot0, p);
    start_flags<S>(motion<S>(t0, x0), p, x0);
    ContactEvents<CartesianForm>::settle<S>(*this, t0, x0, p);
  }

  /// Accelerations a and multipliers mu (penalty: the estimate mu*) at a motion state, the
  /// active persistent contacts' rows after the model's.
  template <class S>
  std::pair<VectorX<S>, VectorX<S>> accelerations(const MotionState<S>& st, In<S> p, const ContactSet& set) const {
    const ConstraintSet<S> cs = with_contacts(*model, constraints(*model, st, p), set, st, p);
    const bool penalty = settings.type == FormulationType::Penalty;
    const double xi = penalty ? settings.penalty_xi : settings.baumgarte_xi;
    const double omega = penalty ? settings.penalty_omega : settings.baumgarte_omega;
    // Phi'' + 2 xi omega Phi' + omega^2 Phi = 0 is Phi_q a + target = 0.
    const VectorX<S> target = cs.bias + S(2.0 * xi * omega) * cs.rate(st.v) + S(omega * omega) * cs.phi;
    if (penalty) {
      const SparseMat<S>& force = cs.force_directions();
      const S alpha(settings.penalty_alpha);
      const VectorX<S> rhs = applied_forces(*model, st, p) - alpha * (force.transpose() * target);
      const char* what = "penalty mass matrix M + Phi_q^T alpha Phi_q";
      VectorX<S> a;
      if (n < kSparseSolveMinRows) {  // small: the dense LU is faster
        MatX<S> M_alpha = MatX<S>::Zero(n, n);
        for_each_mass_entry<S>(*model, st.q, p, [&M_alpha](int i, int j, const S& v) { M_alpha(i, j) += v; });
        if constexpr (std::is_same_v<S, double>) {
          const MatX<S> force_dense(force), jac_dense(cs.jac);
          M_alpha.noalias() += alpha * (force_dense.transpose() * jac_dense);
        } else {
          // An AD scalar's dense product visits every structural zero with the scalar's own
          // operations: the spatial five-bar's 35 x 35 penalty term took 40 % of its penalty
          // adjoint that way; the sparse product visits the nonzeros only.
          const SparseMat<S> penalty_term = force.transpose() * cs.jac;
          for (Eigen::Index i = 0; i < penalty_term.outerSize(); ++i) {
            for (typename SparseMat<S>::InnerIterator it(penalty_term, i); it; ++it) M_alpha(it.row(), it.col()) += alpha * it.value();
          }
        }
        a = solve_dense<S>(M_alpha, rhs, what);
      } else {
        // M + alpha force^T Phi_q: each constraint row adds the outer product of its force
        // direction and its gradient, into the pattern kept from the previous call.
        if (force.rows() != cs.jac.rows()) throw std::logic_error("accelerations: as many force directions as constraint rows");
        const auto scatter = [&](auto&& put) {
          for_each_mass_entry<S>(*model, st.q, p, put);
          for (Eigen::Index r = 0; r < force.outerSize(); ++r) {
            for (typename SparseMat<S>::InnerIterator f(force, r); f; ++f) {
              const S scaled = alpha * f.value();
              for (typename SparseMat<S>::InnerIterator g(cs.jac, r); g; ++g) {
                put(static_cast<int>(f.col()), static_cast<int>(g.col()), scaled * g.value());
              }
            }
          }
        };
        a = solve_sparse<S>(thread_assembly<S, PenaltyAssemblySite>().assemble(n, n, scatter), rhs, what);
      }
      const VectorX<S> mu = alpha * (cs.jac * a + target);
      return {a, mu};
    }
    return kkt_accelerations<S>(*model, cs, st, p, target);
  }

  template <class S>
  VectorX<S> multipliers(const S& t, In<S> x, In<S> p, const ContactSet& set) const {
    return accelerations(motion(t, x), p, set).second;
  }

  template <class S>
  void rhs(const S& t, In<S> x, In<S> p, Out<S> xdot) const {
    const MotionState<S> st = motion(t, x);
    xdot.head(n) = st.v;
    xdot.segment(n, n) = accelerations(st, p, contact_set<S>(x)).first;
    xdot.tail(n_flags()).setZero();
  }

  template <class S>
  FullState<S> full_state(const S& t, In<S> x, In<S> p, const VectorX<S>* xdot, bool need_mu) const {
    FullState<S> fs{motion(t, x), {}, {}, contact_set<S>(x)};
    if (xdot != nullptr) fs.a = xdot->segment(n, n);
    if (need_mu) {
      auto [a, mu] = accelerations(fs.motion, p, fs.contacts);
      if (xdot == nullptr) fs.a = a;
      fs.mu = mu;
    }
    return fs;
  }

  template <class S>
  void jump(int c, const S& t, In<S> x, In<S> p, Out<S> x_plus) const {
    x_plus = x;
    x_plus.segment(n, n) = impact_velocity(c, motion(t, x), p, contact_set<S>(x));
  }
};

/// Maggi / null-space formulation (multibody.md section 7): x = (u, u-dot, flags), positions by
/// Newton, R and S_Phi c from one factorization of A = [Phi_q; B], R^T M R u-ddot =
/// R^T (F - M S_Phi c). Active persistent contacts G (gap rows) add the reduced KKT rows
/// [R^T M R, (G R)^T; G R, 0] [u-ddot; lambda] = [R^T (F - M S_Phi c); -(G S_Phi c + bias_G +
/// 2 xi omega G-dot + omega^2 G)] (Baumgarte on the gaps), keeping the state's size.
///
/// Positions from u: a model with constraints carries, after u and u-dot, every coordinate
/// again as `<coordinate>.ref` (q_ref' = v): the Newton start of its position analysis, so that
/// the branch of the linkage (u alone may fit several) is a function of the state, the same in
/// every run and every recomputation of the adjoint; the positions' derivatives do not depend on
/// it (the Newton solution does not depend on its start).
///
/// Re-partitioning (docs/multibody.md, "Maggi"): such a model carries next its current
/// independent set as a bit mask over the coordinates (`independent_set`: bit k for coordinate
/// k, in words of kSetBits coordinates, exact in a double; one word up to 50 coordinates, so few
/// states that never change between events), and the event
/// `repartition` watches kRepartitionGain - |R|_F^2 / f, the mean squared gain dq/du of the
/// current set (R = dq/du grows without bound as the set degrades). When it falls through zero
/// the jump takes the pivot columns of a fully pivoted LU of Phi_q at that configuration as the
/// new set and maps the state: u+ = B+ q(u-), u-dot+ = B+ v: the same configuration in new
/// coordinates, so the sensitivities and adjoints transfer exactly through the jump's Jacobian.
/// The state's names stay those of the initial set; the flags tell which coordinates the entries
/// hold after a switch.
struct MaggiForm : FormBase {
  /// Coordinates per word of the independent-set mask.
  static constexpr int kSetBits = 50;

  using FormBase::FormBase;

  int f() const { return part.f(); }
  /// Whether the independent set can change: the model has constraints.
  bool repartitions() const { return f() < n; }
  int n_set_words() const { return (n + kSetBits - 1) / kSetBits; }
  /// The entries after u and u-dot: q_ref and the set's mask (none without constraints).
  int n_reference() const { return repartitions() ? n + n_set_words() : 0; }
  int flags_at() const { return 2 * f() + n; }
  int n_states() const { return 2 * f() + n_reference() + n_flags(); }
  std::vector<std::string> state_names() const { return state_names_in(part); }
  /// The names of state x's entries: its first 2f entries are the coordinates of its own
  /// independent set (partition_of), which a repartition changes.
  std::vector<std::string> state_names_at(In<double> x) const { return state_names_in(partition_of<double>(x)); }
  std::vector<std::string> state_names_in(const Partition& set) const {
    const std::vector<std::string> all = model->coordinate_names();
    std::vector<std::string> names;
    for (int k : set.independent) names.push_back(all[static_cast<size_t>(k)]);
    for (int k : set.independent) names.push_back(all[static_cast<size_t>(k)] + "_dot");
    if (repartitions()) {
      for (const std::string& name : all) names.push_back(name + ".ref");
      for (int w = 0; w < n_set_words(); ++w) {
        names.push_back(n_set_words() == 1 ? std::string("independent_set") : fmt::format("independent_set[{}]", w));
      }
    }
    for (std::string& flag : flag_names()) names.push_back(std::move(flag));
    return names;
  }
  /// The motion's size at state x (Model::motion_scale; Problem::state_scale): the positions
  /// are q_ref where the state carries it (u where it holds every coordinate), the velocities
  /// u-dot. The independent set's mask is no size.
  double motion_scale(In<double> x) const {
    const Eigen::VectorXd q = repartitions() ? Eigen::VectorXd(x.segment(2 * f(), n)) : Eigen::VectorXd(x.head(n));
    return model->motion_scale(q, x.segment(f(), f()));
  }
  /// The Newton start of the position analysis at state x.
  template <class S>
  Eigen::VectorXd reference_positions(In<S> x) const {
    return repartitions() ? real_parts<S>(x.segment(2 * f(), n)) : q_guess;
  }

  /// The independent set of state x, read from its flags (the initial set without constraints,
  /// or if the flags do not hold f coordinates).
  template <class S>
  Partition partition_of(In<S> x) const {
    if (!repartitions()) return part;
    Partition current;
    current.n = n;
    for (int w = 0; w < n_set_words(); ++w) {
      const double word = real_part(x[flags_at() + w]);
      if (!(word >= 0.0 && word < 1125899906842624.0)) return part;  // 2^50: not a mask
      const auto bits = static_cast<std::uint64_t>(std::llround(word));
      for (int b = 0; b < kSetBits && w * kSetBits + b < n; ++b) {
        if ((bits >> b) & 1U) current.independent.push_back(w * kSetBits + b);
      }
    }
    return current.f() == f() ? current : part;
  }
  /// Writes the state of the configuration (q, v) in the independent set `next`.
  template <class S>
  void write_partition(const Partition& next, const MotionState<S>& st, Out<S> x) const {
    x.head(f()) = select(next, st.q);
    x.segment(f(), f()) = select(next, st.v);
    if (!repartitions()) return;
    x.segment(2 * f(), n) = st.q;
    write_set<S>(next, x);
  }
  template <class S>
  void write_set(const Partition& set, Out<S> x) const {
    for (int w = 0; w < n_set_words(); ++w) {
      std::uint64_t bits = 0;
      for (int b = 0; b < kSetBits && w * kSetBits + b < n; ++b) {
        if (set.slot(w * kSetBits + b) >= 0) bits |= std::uint64_t{1} << b;
      }
      x[flags_at() + w] = S(static_cast<double>(bits));
    }
  }

  template <class S>
  void initial_state(In<S> p, Out<S> x0) const {
    const VectorX<S> guess = model->initial_positions<S>(p);
    const S t0(model->t0);
    const VectorX<S> q = assemble(t0, select(part, guess), p, real_parts<S>(guess));
    x0.head(f()) = select(part, guess);
    x0.segment(f(), f()) = select(part, model->initial_velocities<S>(p, q));
    if (repartitions()) {
      x0.segment(2 * f(), n) = q;
      write_set<S>(part, x0);
    }
    if (persistent.empty()) return;
    start_flags<S>(motion_state<S>(S(model->t0), x0, p), p, x0);
    ContactEvents<MaggiForm>::settle<S>(*this, S(model->t0), x0, p);
  }

  /// Positions for independent coordinates u in the set `set`, by Newton from `start` (the
  /// state's q_ref): a function of the state alone, as CVODES's recomputation of forward steps
  /// in the adjoint pass requires.
  template <class S>
  VectorX<S> positions(const Partition& set, const S& t, const VectorX<S>& u, In<S> p,
                       const Eigen::VectorXd& start) const {
    const Eigen::VectorXd q_star =
        solve_positions(*model, set, real_part(t), real_parts<S>(u), real_parts<S>(p), start, settings);
    return refine_positions<S>(*model, set, t, u, p, q_star);
  }

  template <class S>
  struct Kinematics {
    MotionState<S> st;
    ConstraintSet<S> cs;
    MatX<S> R;          ///< n x f, Phi_q R = 0, B R = I
    VectorX<S> s_c;     ///< S_Phi c, n
  };

  /// The last kinematics a thread computed in scalar type S (double, Dual, Complex, DualBlock, and
  /// Reverse within one tape recording), by form and point: a step's cost integrand reads the
  /// kinematics of the right-hand side it has just evaluated at the same point (a position
  /// Newton, its constraints and the Maggi solve: a third of a fivebar_floor simulation).
  template <class S>
  using KinematicsMemo = PointMemo<S, Kinematics<S>>;

  /// The kinematics at (t, x): remembered per thread (KinematicsMemo) in double, Dual, Complex,
  /// DualBlock and, within one tape recording, Reverse (a step's right-hand side and its costs
  /// read one point).
  template <class S>
  Kinematics<S> kinematics(const S& t, In<S> x, In<S> p) const {
    if constexpr (std::is_same_v<S, double> || std::is_same_v<S, Dual> || std::is_same_v<S, Complex> ||
                  std::is_same_v<S, DualBlock> || std::is_same_v<S, Reverse>) {
      KinematicsMemo<S>& memo = KinematicsMemo<S>::of_this_thread();
      if (memo.holds(id, t, x, p)) return memo.value;
      memo.begin(t, x, p);
      memo.value = computed_kinematics<S>(t, x, p);
      memo.complete(id);
      return memo.value;
    } else {
      return computed_kinematics<S>(t, x, p);
    }
  }

  template <class S>
  Kinematics<S> computed_kinematics(const S& t, In<S> x, In<S> p) const {
    Kinematics<S> k;
    const Partition set = partition_of<S>(x);
    const VectorX<S> u = x.head(f()), u_dot = x.segment(f(), f());
    k.st.t = t;
    k.st.q = positions(set, t, u, p, reference_positions<S>(x));
    k.st.v = velocities_from_independent(*model, set, k.st, u_dot, p);
    k.cs = constraints(*model, k.st, p);
    const int rows = static_cast<int>(k.cs.phi.size());
    MatX<S> rhs = MatX<S>::Zero(n, f() + 1);
    rhs.bottomLeftCorner(f(), f()) = MatX<S>::Identity(f(), f());
    rhs.col(f()).head(rows) = -k.cs.bias;  // Phi_q a = c = -bias
    const MatX<S> sol = solve_augmented<S>(set, k.cs.jac, rhs, "Maggi matrix [Phi_q; B]");
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
    return MotionState<S>{t, positions(partition_of<S>(x), t, VectorX<S>(x.head(f())), p, reference_positions<S>(x)),
                          VectorX<S>::Zero(n)};
  }
  template <class S>
  void write_velocities(const VectorX<S>& v, Out<S> x) const {
    x.segment(f(), f()) = select(partition_of<S>(In<S>(x)), v);
  }

  /// The repartition guard: kRepartitionGain - |R|_F^2 / f.
  template <class S>
  S repartition_guard(const S& t, In<S> x, In<S> p) const {
    const Kinematics<S> k = kinematics(t, x, p);
    S gain(0.0);
    for (Eigen::Index j = 0; j < k.R.cols(); ++j) {
      for (Eigen::Index i = 0; i < k.R.rows(); ++i) gain += k.R(i, j) * k.R(i, j);
    }
    return S(kRepartitionGain) - gain / S(f());
  }
  /// The state in the best-conditioned independent set at its configuration (pivot_partition of
  /// Phi_q there, decided on real parts).
  template <class S>
  void repartition(const S& t, In<S> x, In<S> p, Out<S> x_plus) const {
    const Kinematics<S> k = kinematics(t, x, p);
    Partition next = pivot_partition(k.cs.dense_real_jacobian());
    if (next.f() != f()) next = partition_of<S>(x);  // a singular configuration: keep the set
    x_plus = x;
    write_partition<S>(next, k.st, x_plus);
  }

  /// The reduced mass matrix R^T M R and forces R^T (F - M S_Phi c). In Reverse each of the two
  /// products (M [R, S_Phi c], then R^T [M R, F - M S_Phi c]) is one operation on the tape
  /// (recorded_product.hpp) instead of a node per multiply and add.
  template <class S>
  std::pair<MatX<S>, VectorX<S>> reduced_dynamics(const Kinematics<S>& k, In<S> p) const {
    const VectorX<S> F = applied_forces(*model, k.st, p);
    if constexpr (std::is_same_v<S, Reverse>) {
      std::vector<ProductEntry> mass;
      for_each_mass_entry<S>(*model, k.st.q, p, [&mass](int i, int j, const S& v) { mass.push_back({i, j, v}); });
      MatX<S> R_s(n, f() + 1);
      R_s << k.R, k.s_c;
      MatX<S> M_R_s = recorded_product(n, mass, R_s);
      M_R_s.col(f()) = F - M_R_s.col(f());
      const MatX<S> reduced = recorded_product(f(), transposed_entries(k.R), M_R_s);
      return {reduced.leftCols(f()), reduced.col(f())};
    } else {
      const MatX<S> MR = mass_times<S>(*model, k.st.q, p, k.R);
      return {k.R.transpose() * MR, k.R.transpose() * (F - mass_times_vector<S>(*model, k.st.q, p, k.s_c))};
    }
  }

  /// u-ddot and the multipliers of the persistent contacts' rows (empty without any).
  template <class S>
  std::pair<VectorX<S>, VectorX<S>> independent_accelerations(const Kinematics<S>& k, In<S> p,
                                                              const ContactSet& set) const {
    const auto [M_bar, F_bar] = reduced_dynamics(k, p);
    if (set.empty()) return {solve_dense<S>(M_bar, F_bar, "reduced mass matrix R^T M R"), VectorX<S>()};
    const ConstraintSet<S> cs = with_contacts(*model, k.cs, set, k.st, p);
    const int a = set.rows();
    const SparseMat<S> contact_force = cs.force_directions().bottomRows(a);
    const SparseMat<S> contact_jac = cs.jac.bottomRows(a);
    MatX<S> K = MatX<S>::Zero(f() + a, f() + a);
    K.topLeftCorner(f(), f()) = M_bar;
    K.topRightCorner(f(), a) = (contact_force * k.R).transpose();
    K.bottomLeftCorner(a, f()) = contact_jac * k.R;
    VectorX<S> rhs(f() + a);
    rhs.head(f()) = F_bar;
    const double xi = settings.baumgarte_xi, omega = settings.baumgarte_omega;
    rhs.tail(a) = -(contact_jac * k.s_c + cs.bias.tail(a) + S(2.0 * xi * omega) * cs.rate(k.st.v).tail(a) +
                    S(omega * omega) * cs.phi.tail(a));
    const VectorX<S> sol =
        solve_dense<S>(K, rhs, "reduced KKT matrix of the active contacts [R^T M R, (G R)^T; G R, 0]").col(0);
    return {sol.head(f()), sol.tail(a)};
  }

  template <class S>
  VectorX<S> multipliers(const S& t, In<S> x, In<S> p, const ContactSet& set) const {
    const Kinematics<S> k = kinematics(t, x, p);
    VectorX<S> mu(k.cs.phi.size() + set.rows());
    mu.head(k.cs.phi.size()).setZero();  // not computed: the contact events read the contacts' rows only
    mu.tail(set.rows()) = independent_accelerations(k, p, set).second;
    return mu;
  }

  template <class S>
  void rhs(const S& t, In<S> x, In<S> p, Out<S> xdot) const {
    const Kinematics<S> k = kinematics(t, x, p);
    xdot.head(f()) = x.segment(f(), f());
    xdot.segment(f(), f()) = independent_accelerations(k, p, contact_set<S>(x)).first;
    xdot.tail(n_reference() + n_flags()).setZero();
    if (repartitions()) xdot.segment(2 * f(), n) = k.st.v;
  }

  template <class S>
  FullState<S> full_state(const S& t, In<S> x, In<S> p, const VectorX<S>* xdot, bool need_mu) const {
    const Kinematics<S> k = kinematics(t, x, p);
    const ContactSet set = contact_set<S>(x);
    FullState<S> fs{k.st, {}, {}, set};
    if (xdot != nullptr || need_mu) {
      const VectorX<S> u_ddot =
          xdot != nullptr ? VectorX<S>(xdot->segment(f(), f())) : independent_accelerations(k, p, set).first;
      fs.a = k.R * u_ddot + k.s_c;
    }
    if (need_mu) {
      // [Phi_q; G]^T mu = F - M a, solved in the least-squares sense on the rows of Phi_q and
      // of the active contacts.
      const ConstraintSet<S> cs = with_contacts(*model, k.cs, set, k.st, p);
      const SparseMat<S>& force = cs.force_directions();
      const VectorX<S> residual = applied_forces(*model, k.st, p) - mass_times_vector<S>(*model, k.st.q, p, fs.a);
      const SparseMat<S> gram = force * force.transpose();
      fs.mu = cs.phi.size() == 0
                  ? VectorX<S>()
                  : VectorX<S>(solve_sparse<S>(gram, VectorX<S>(force * residual), "Gram matrix Phi_q Phi_q^T").col(0));
    }
    return fs;
  }

  template <class S>
  void jump(int c, const S& t, In<S> x, In<S> p, Out<S> x_plus) const {
    x_plus = x;
    const ContactSet held = contact_set<S>(x);
    if (contact(c).law == ImpactLaw::Partitioning && held.empty() &&
        partition_of<S>(x).independent == part.independent &&
        law_partition<S>(c, kinematics(t, x, p).st, p).independent == part.independent) {
      // The law's own coordinates are the state's: reverse the normal one exactly.
      x_plus.segment(f(), f()) = partitioned_velocity(*model, part, contact(c), VectorX<S>(x.segment(f(), f())), p);
      return;
    }
    write_velocities<S>(impact_velocity(c, kinematics(t, x, p).st, p, held), x_plus);
  }
};

/// The DAE formulations run on IDAS (docs/multibody.md, docs/dae.md "Index 2"), with
/// x = (q, v, w1, w2, flags) and the multiplier blocks w1, w2 of one slot per constraint row
/// that can be in force: the model's m rows, then per persistent contact its normal row and, if
/// frictional, its sticking (slip-velocity) row. Over the rows in force (position rows: the
/// model's and the active gaps; velocity rows: all of them, sticking included):
///   ggl (GGL):         q' - v + Phi_q^T w2 = 0,      M v' - F + force^T w1 = 0,   Phi = 0,
///                      Phi_q v + Phi_t = 0           (w1 = lambda, w2 = mu = 0 on the solution);
///   stabilized_index1 (Anantharaman-Hiller, theory multibody 4):
///                      q' - v + Phi_q^T w1' = 0,     M v' + force^T w2' - F = 0,
///                      Phi_q v + Phi_t = 0,          Phi = 0     (w1 = chi, w2 = psi, chi' = 0,
///                      psi' = lambda on the solution),
///   index3 (theory multibody 2): x = (q, v, lambda, flags), one block,
///                      q' - v = 0,   M v' - F + force^T lambda = 0,   Phi = 0 on the position
///                      rows and Phi_q v + Phi_t = 0 on the sticking rows (they have no position
///                      level); v and lambda are left out of the error test (Petzold's remedy
///                      for index 3: their Newton corrections grow like 1/h and 1/h^2),
/// with `force` the rows' force directions (Phi_q but for sliding friction on a normal row). A
/// slot without a row in force has the residual w = 0 (ggl) or w' = 0 (stabilized), so the
/// state keeps its size through every contact regime.
/// Their completion projects a guess onto the constraints in the kinetic metric: the positions
/// onto the position rows in force (the model's and the active gaps), the velocities onto every
/// row in force (index3 keeps independent coordinates instead: completed_by_independent_set),
/// then solves the accelerations and reactions from the KKT system
/// [M force^T; Phi_q 0]. The multiplier blocks are left out of IDAS's error test (they are the
/// problem's "algebraic" states).
/// The last completion a thread computed in scalar type S (double, Dual, Complex), by form and point:
/// every running cost of a point reads the same completion (an arm's five costs on reactions
/// completed it five times per residual and per Jacobian colour in index3 and stabilized_index1:
/// 3.5 s against ggl's 0.19 s). Bitwise-equal inputs only; a form's id, not its address, names it
/// (a later form may reuse the address).
template <class S>
struct CompletedPoint;
template <class S>
using CompletionMemo = PointMemo<S, CompletedPoint<S>>;
/// A completion's consistent state and its rates.
template <class S>
struct CompletedPoint {
  VectorX<S> x, xdot;
};

struct DaeForm : FullCoordinateForm {
  FormulationType kind;
  int m = 0;       ///< the model's constraint rows
  int slots = 0;   ///< multiplier slots per block: m, then the persistent contacts' rows
  std::vector<int> contact_slot;  ///< per persistent contact (FormBase::persistent order): its normal slot

  DaeForm(std::shared_ptr<const Model> mod, Partition p, FormulationSettings s)
      : FullCoordinateForm(std::move(mod), std::move(p), s), kind(s.type) {
    const Eigen::VectorXd p0 = model->nominal_parameters();
    m = static_cast<int>(constraints<double>(*model, MotionState<double>{model->t0, q_guess, v_guess}, p0).phi.size());
    slots = m;
    for (int c : persistent) {
      contact_slot.push_back(slots);
      slots += contact(c).frictional() ? 2 : 1;
    }
  }

  bool stabilized() const { return kind == FormulationType::StabilizedIndex1; }
  bool index3() const { return kind == FormulationType::Index3; }
  /// Multiplier blocks: lambda (index3); w1 and w2 (ggl, stabilized_index1).
  int blocks() const { return index3() ? 1 : 2; }
  int n_states() const { return 2 * n + blocks() * slots + n_flags(); }
  std::vector<std::string> state_names() const {
    std::vector<std::string> names = coordinate_and_velocity_names();
    const std::vector<const char*> block_names =
        index3() ? std::vector<const char*>{"lambda"}
                 : std::vector<const char*>{stabilized() ? "chi" : "lambda", stabilized() ? "psi" : "mu"};
    for (const char* block : block_names) {
      for (int k = 0; k < m; ++k) names.push_back(fmt::format("{}{}", block, k + 1));
      for (int c : persistent) {
        names.push_back(fmt::format("{}.{}", contact(c).name, block));
        if (contact(c).frictional()) names.push_back(fmt::format("{}.{}_t", contact(c).name, block));
      }
    }
    for (std::string& flag : flag_names()) names.push_back(std::move(flag));
    return names;
  }
  /// The states left out of the error test: the multipliers, in index3 the velocities too.
  std::vector<std::string> algebraic_names() const {
    const std::vector<std::string> all = state_names();
    return std::vector<std::string>(all.begin() + (index3() ? n : 2 * n), all.begin() + 2 * n + blocks() * slots);
  }

  /// The slot of row `row` of `with_contacts(..., set, ...)`: the model's rows, then the active
  /// contacts' normal rows, then the sticking ones' slip rows. The first m + |active| rows are
  /// position rows, the sticking ones velocity rows only.
  int row_slot(const ContactSet& set, Eigen::Index row) const {
    if (row < m) return static_cast<int>(row);
    const auto k = static_cast<size_t>(row - m);
    if (k < set.active.size()) return normal_slot(set.active[k]);
    return normal_slot(set.sticking[k - set.active.size()]) + 1;
  }
  int normal_slot(int c) const {
    const auto it = std::find(persistent.begin(), persistent.end(), c);
    return contact_slot[static_cast<size_t>(it - persistent.begin())];
  }

  template <class S>
  void initial_state(In<S> p, Out<S> x0) const {
    CartesianForm cartesian(model, part, settings);
    VectorX<S> start(cartesian.n_states());
    cartesian.initial_state<S>(p, start);  // q, v and the contacts' starting regimes
    x0.head(2 * n) = start.head(2 * n);
    x0.segment(2 * n, blocks() * slots).setZero();  // guesses (ggl, index3) or the integrals chi, psi from 0
    x0.tail(n_flags()) = start.tail(n_flags());
  }

  template <class S>
  void residual(const S& t, In<S> x, In<S> xdot, In<S> p, Out<S> r) const {
    const MotionState<S> st = motion(t, x);
    const ContactSet set = contact_set<S>(x);
    const ConstraintSet<S> cs = with_contacts(*model, constraints(*model, st, p), set, st, p);
    const Eigen::Index positions = m + static_cast<Eigen::Index>(set.active.size());
    if (index3()) {
      index3_residual<S>(st, xdot, x.segment(2 * n, slots), p, set, cs, r);
      return;
    }
    // w1 and w2 (ggl) or their rates (stabilized): the multipliers of the position and
    // velocity rows, and the residual rows of each kind.
    const Eigen::Index w1 = 2 * n, w2 = 2 * n + slots;
    const auto position_w = stabilized() ? xdot.segment(w1, slots) : x.segment(w2, slots);
    const auto velocity_w = stabilized() ? xdot.segment(w2, slots) : x.segment(w1, slots);
    const Eigen::Index position_rows = stabilized() ? w2 : w1, velocity_rows = stabilized() ? w1 : w2;
    // Slots without a row in force: w = 0 (ggl), w' = 0 (stabilized).
    r.segment(position_rows, slots) = position_w;
    r.segment(velocity_rows, slots) = velocity_w;
    r.head(n) = xdot.head(n) - st.v;
    r.segment(n, n) = mass_times_vector<S>(*model, st.q, p, xdot.segment(n, n)) - applied_forces(*model, st, p);
    const VectorX<S> rate = cs.rate(st.v);
    VectorX<S> velocity_row_w(cs.phi.size()), position_row_w = VectorX<S>::Zero(cs.phi.size());
    for (Eigen::Index row = 0; row < cs.phi.size(); ++row) {
      const int k = row_slot(set, row);
      velocity_row_w[row] = velocity_w[k];
      r[velocity_rows + k] = rate[row];
      if (row >= positions) continue;
      position_row_w[row] = position_w[k];
      r[position_rows + k] = cs.phi[row];
    }
    r.segment(n, n) += cs.force_directions().transpose() * velocity_row_w;
    r.head(n) += cs.jac.transpose() * position_row_w;
    r.tail(n_flags()) = xdot.tail(n_flags());
  }

  /// index3: the slots' lambda on the rows in force, each row at its lowest level (position rows
  /// Phi, sticking rows their slip rate); a slot without a row has lambda = 0.
  template <class S>
  void index3_residual(const MotionState<S>& st, In<S> xdot, In<S> lambda, In<S> p, const ContactSet& set,
                       const ConstraintSet<S>& cs, Out<S> r) const {
    const Eigen::Index positions = m + static_cast<Eigen::Index>(set.active.size());
    r.head(n) = xdot.head(n) - st.v;
    r.segment(n, n) = mass_times_vector<S>(*model, st.q, p, xdot.segment(n, n)) - applied_forces(*model, st, p);
    r.segment(2 * n, slots) = lambda;
    const VectorX<S> rate = cs.rate(st.v);
    VectorX<S> row_lambda(cs.phi.size());
    for (Eigen::Index row = 0; row < cs.phi.size(); ++row) {
      const int k = row_slot(set, row);
      row_lambda[row] = lambda[k];
      r[2 * n + k] = row < positions ? cs.phi[row] : rate[row];
    }
    r.segment(n, n) += cs.force_directions().transpose() * row_lambda;
    r.tail(n_flags()) = xdot.tail(n_flags());
  }

  /// Accelerations and multipliers (model rows, then the contact rows of `set`) at a motion
  /// state: the KKT system, as the DAE's hidden constraints give them.
  template <class S>
  std::pair<VectorX<S>, VectorX<S>> accelerations(const MotionState<S>& st, In<S> p, const ContactSet& set) const {
    const ConstraintSet<S> cs = with_contacts(*model, constraints(*model, st, p), set, st, p);
    return kkt_accelerations<S>(*model, cs, st, p, cs.bias);
  }
  template <class S>
  VectorX<S> multipliers(const S& t, In<S> x, In<S> p, const ContactSet& set) const {
    return accelerations(motion(t, x), p, set).second;
  }

  /// The consistent state nearest `guess` (index3: through its independent coordinates and
  /// velocities), its rates, and the multipliers; remembered per thread (CompletionMemo) in double,
  /// Dual and Complex (Reverse must record every use on its tape).
  template <class S>
  void completion(const S& t, In<S> guess, In<S> p, Out<S> x, Out<S> xdot) const {
    if constexpr (std::is_same_v<S, double> || std::is_same_v<S, Dual> || std::is_same_v<S, Complex>) {
      CompletionMemo<S>& memo = CompletionMemo<S>::of_this_thread();
      if (memo.holds(id, t, guess, p)) {
        x = memo.value.x;
        xdot = memo.value.xdot;
        return;
      }
      memo.begin(t, guess, p);  // before x is written: x may alias guess
      complete<S>(t, guess, p, x, xdot);
      memo.value.x = x;
      memo.value.xdot = xdot;
      memo.complete(id);
    } else {
      complete<S>(t, guess, p, x, xdot);
    }
  }

  /// What complete() does with the guess's positions: Projected, the completion of every form
  /// (index3's by its independent set); Kept, the rate completion's (velocities projected).
  enum class Positions { Projected, Kept };

  /// The map whose rates the adjoint's backward pass records at every point
  /// (Problem::set_rate_completion, completed_adjoint.hpp): ggl's completion without its position
  /// projection, in every DAE form. The positions of ggl, stabilized_index1 and index3 satisfy
  /// their constraints as equations of the DAE, and the velocities this projects in the kinetic
  /// metric satisfy Phi_q v + Phi_t = 0 (index3's, which IDAS leaves out of its error test, drift
  /// off it), so its rates keep Phi = 0 and every consistent state consistent: its ODE has the
  /// completion's motions, sensitivities and gradient. It leaves out, per backward point, the
  /// projection's constraint evaluations, Newton iterations and KKT factorization; in index3 the
  /// independent set's choice and its dense solves, and that set's switches along the motion,
  /// where the completion's Jacobian jumps and the backward steps shrank (the chain of 32 rods:
  /// 16,541 backward steps through index3's completion, 10,199 through this one).
  template <class S>
  void rate_completion(const S& t, In<S> guess, In<S> p, Out<S> x, Out<S> xdot) const {
    complete<S>(t, guess, p, x, xdot, Positions::Kept);
  }

  template <class S>
  void complete(const S& t, In<S> guess, In<S> p, Out<S> x, Out<S> xdot,
                Positions positions = Positions::Projected) const {
    const ContactSet set = contact_set<S>(guess);
    VectorX<S> q, v;
    if (index3() && positions == Positions::Projected) {
      std::tie(q, v) = completed_by_independent_set<S>(t, guess, p, set);
    } else {
      q = positions == Positions::Kept ? VectorX<S>(guess.head(n))
                                       : projected_positions<S>(t, VectorX<S>(guess.head(n)), p, set);
      v = projected_velocities<S>(MotionState<S>{t, q, VectorX<S>(guess.segment(n, n))}, p, set);
    }
    const MotionState<S> st{t, q, v};
    const auto [a, lambda] = accelerations<S>(st, p, set);
    x.head(n) = q;
    x.segment(n, n) = v;
    xdot.head(n) = v;
    xdot.segment(n, n) = a;
    xdot.segment(2 * n, blocks() * slots).setZero();
    if (stabilized()) {
      // chi and psi enter only through their rates: their values continue; psi' = lambda.
      x.segment(2 * n, 2 * slots) = guess.segment(2 * n, 2 * slots);
      for (Eigen::Index row = 0; row < lambda.size(); ++row) xdot[2 * n + slots + row_slot(set, row)] = lambda[row];
    } else {
      x.segment(2 * n, blocks() * slots).setZero();
      for (Eigen::Index row = 0; row < lambda.size(); ++row) x[2 * n + row_slot(set, row)] = lambda[row];
    }
    x.tail(n_flags()) = guess.tail(n_flags());
    xdot.tail(n_flags()).setZero();
  }

  /// index3's completion of the positions and velocities: the guess's independent coordinates
  /// and velocities kept, the dependent ones solved, in the model's independent set or, where
  /// that has degraded, the best-conditioned set at the guess (completion_partition); then
  /// projected onto the active contacts' rows. The projection that the other forms take made index3's complex
  /// step through fivebar_floor's first impact fail (IDA_CONV_FAIL at the restart, at every
  /// rtol from 3e-11 to 1e-9) and its adjoint there agree with index1's to 1.1e-5 instead of
  /// 1.7e-6: index3's velocities are IDAS's, held to the position rows only, and the projection
  /// mixes their drift into every component.
  template <class S>
  std::pair<VectorX<S>, VectorX<S>> completed_by_independent_set(const S& t, In<S> guess, In<S> p,
                                                                const ContactSet& contacts) const {
    const VectorX<S> q_guess = guess.head(n), v_guess = guess.segment(n, n);
    const Partition independent =
        completion_partition(*model, part, real_part(t), real_parts<S>(q_guess), real_parts<S>(p));
    VectorX<S> q = assemble(independent, t, select(independent, q_guess), p, real_parts<S>(q_guess));
    if (!contacts.empty()) q = projected_positions<S>(t, q, p, contacts);
    VectorX<S> v = velocities_from_independent(*model, independent, MotionState<S>{t, q, VectorX<S>::Zero(n)},
                                               select(independent, v_guess), p);
    if (!contacts.empty()) v = projected_velocities<S>(MotionState<S>{t, q, v}, p, contacts);
    return {std::move(q), std::move(v)};
  }

  /// The configuration nearest q in the kinetic metric on the position rows in force (the
  /// model's and the active gaps): the solution q_c of
  ///     M (q_c - q) + J(q_c)^T mu = 0,   Phi(q_c) = 0
  /// by Newton's method in double with the matrix [M J^T; J 0] (without the curvature term
  /// (J^T mu)_q, which vanishes with mu as q nears the manifold), then one such step in S from
  /// the converged q*. That step's tangent is the projection's derivative up to O(|Phi(q)|): the
  /// tangent plane's projector on consistent states. A projection needs no independent set, so
  /// it stays well conditioned wherever J has full rank (a fixed set of independent coordinates
  /// degrades along the chain of rods' motion, and with it an adjoint through the completion).
  /// The gaps are closed to round-off, not to the event's tolerance: without that, the first
  /// step after a landing counted the constraints' pull on the leftover gap as local error.
  /// Newton stops on |Phi| alone: the completion is asked within the integrator's drift of the
  /// manifold, where the curvature term it drops is of that drift's size. HyperDual would need
  /// a second step in S (refine_positions takes two); completions run in the other types only
  /// (the Runge-Kutta integrators, which use HyperDual, refuse residual modes).
  template <class S>
  VectorX<S> projected_positions(const S& t, const VectorX<S>& q, In<S> p, const ContactSet& set) const {
    const char* what = "position projection matrix [M Phi_q^T; Phi_q 0]";
    const Eigen::VectorXd q_guess = real_parts<S>(q), p_real = real_parts<S>(p);
    const double t_real = real_part(t);
    const double scale = 1.0 + q_guess.cwiseAbs().maxCoeff();
    Eigen::VectorXd q_star = q_guess;
    for (int it = 0;; ++it) {
      const MotionState<double> st{t_real, q_star, Eigen::VectorXd::Zero(n)};
      ConstraintSet<double> cs = with_contacts<double>(*model, constraints<double>(*model, st, p_real), set.normals(), st, p_real);
      if (cs.phi.size() == 0) return q;
      const double residual = cs.phi.allFinite() ? cs.phi.cwiseAbs().maxCoeff() : std::numeric_limits<double>::infinity();
      if (residual <= settings.newton_tolerance * scale * scale) break;
      bool stopped = it == settings.newton_iterations || !std::isfinite(residual);
      if (!stopped) {
        cs.force.resize(0, 0);  // the symmetric [M Phi_q^T; Phi_q 0]
        const Eigen::VectorXd pull = mass_times_vector<double>(*model, q_star, p_real, Eigen::VectorXd(q_guess - q_star));
        try {
          q_star += kkt_solve<double>(*model, cs, q_star, p_real, pull, Eigen::VectorXd(-cs.phi), what).first;
        } catch (const ModelError&) {
          stopped = true;  // a singular matrix ends Newton, as in solve_positions
        }
      }
      if (stopped) {
        throw ModelError(fmt::format("the mechanism '{}' cannot be projected onto its constraints at t = {:.17g}: Newton's "
                                     "method stopped at constraint residual {:.3e} (a position the linkage cannot reach, "
                                     "or a singular configuration)",
                                     model->name, t_real, residual));
      }
    }
    const VectorX<S> q_star_s = q_star.cast<S>();
    const MotionState<S> st{t, q_star_s, VectorX<S>::Zero(n)};
    ConstraintSet<S> cs = with_contacts(*model, constraints(*model, st, p), set.normals(), st, p);
    cs.force.resize(0, 0);
    const VectorX<S> pull = mass_times_vector<S>(*model, q_star_s, p, VectorX<S>(q - q_star_s));
    return q_star_s + kkt_solve<S>(*model, cs, q_star_s, p, pull, VectorX<S>(-cs.phi), what).first;
  }

  /// The velocities nearest v in the kinetic metric that satisfy every row in force:
  /// [M Phi_q^T; Phi_q 0] [v+; nu] = [M v; -Phi_t] (in index3 v already satisfies the model's rows; this
  /// removes what the contact rows' rates hold of the event's root tolerance).
  template <class S>
  VectorX<S> projected_velocities(const MotionState<S>& st, In<S> p, const ContactSet& set) const {
    ConstraintSet<S> cs = with_contacts(*model, constraints(*model, st, p), set, st, p);
    cs.force.resize(0, 0);  // a projection in the kinetic metric: the symmetric [M Phi_q^T; Phi_q 0]
    const VectorX<S> top = mass_times_vector<S>(*model, st.q, p, st.v);
    return kkt_solve<S>(*model, cs, st.q, p, top, VectorX<S>(-cs.phi_t), "velocity projection matrix [M Phi_q^T; Phi_q 0]").first;
  }

  /// The reactions of the state: the model's rows, then the contact rows in force, from the
  /// state's lambda (ggl) or from the completion's rates psi' (stabilized: `completed_rates`).
  template <class S>
  VectorX<S> reactions(In<S> x, const VectorX<S>& completed_rates) const {
    const ContactSet set = contact_set<S>(x);
    const Eigen::Index base = stabilized() ? 2 * n + slots : 2 * n;
    VectorX<S> mu(m + set.rows());
    for (Eigen::Index row = 0; row < mu.size(); ++row) {
      const Eigen::Index k = base + row_slot(set, row);
      mu[row] = stabilized() ? completed_rates[k] : S(x[k]);
    }
    return mu;
  }

  /// Where the x-dot handed to full_state comes from.
  enum class Rates {
    Integrator,  ///< IDAS's, or any caller's that does not say (the forward pass; the Dual
                 ///< tangents of a completed point, which a second completion leaves as they are):
                 ///< index3's v' and lambda are out of IDAS's error test
    Completion,  ///< a completion's or the rate completion's, with x its completed state (the
                 ///< completed adjoint's recording): accelerations and reactions as they are
  };

  template <class S>
  FullState<S> full_state(const S& t, In<S> x, In<S> p, const VectorX<S>* xdot, bool need_mu,
                          Rates rates = Rates::Integrator) const {
    // The completion's rates: the accelerations without x-dot, the reactions in stabilized. In
    // index3 both always: IDAS's v' and lambda, left out of its error test, carry errors of
    // O(1/h) and O(1/h^2) (a running cost on an acceleration failed its first step). The
    // velocities stay IDAS's: the completion's (dependent ones solved from the independent)
    // moved fivebar's drift from 8.8e-9 to 5.6e-7 of index1's at rtol 1e-10. Rates that a
    // completion gave are read as they are: completing again would only repeat it.
    const bool given = xdot != nullptr && rates == Rates::Completion;
    VectorX<S> xc(n_states()), xdc(n_states());
    const bool completed = xdot == nullptr || (!given && (index3() || (need_mu && stabilized())));
    if (completed) completion<S>(t, x, p, xc, xdc);
    FullState<S> fs{motion(t, x), {}, {}, contact_set<S>(x)};
    fs.a = xdot != nullptr && (given || !index3()) ? VectorX<S>(xdot->segment(n, n)) : VectorX<S>(xdc.segment(n, n));
    if (need_mu) fs.mu = given ? reactions<S>(x, *xdot) : reactions<S>(index3() ? In<S>(xc) : x, xdc);
    return fs;
  }

  template <class S>
  void jump(int c, const S& t, In<S> x, In<S> p, Out<S> x_plus) const {
    x_plus = x;  // q continuous; the multipliers are guesses the completion replaces
    x_plus.segment(n, n) = impact_velocity(c, motion(t, x), p, contact_set<S>(x));
  }

  /// The rates at the start (check_start): the completion's.
  template <class S>
  void start_rates(const S& t, In<S> x, In<S> p, Out<S> xdot) const {
    VectorX<S> xc(n_states());
    completion<S>(t, x, p, xc, xdot);
  }
};

}  // namespace saltus::multibody::detail
