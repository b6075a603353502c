#include <saltus/multibody/model.hpp>

#include <saltus/core/error.hpp>

#include <fmt/format.h>

#include <Eigen/Eigenvalues>

#include <array>
#include <cmath>
#include <limits>
#include <numbers>
#include <set>

namespace saltus::multibody {

int Element::n_constraints() const {
  switch (type) {
    case ElementType::Bar:
    case ElementType::PointOnLine:
    case ElementType::CoordinateDriver:
    case ElementType::DistanceDriver:
      return 1;
    case ElementType::Revolute:
    case ElementType::Prismatic:
      return 2;
    default:
      return 0;
  }
}

int SpatialJoint::n_constraints() const {
  switch (type) {
    case SpatialJointType::Spherical:
      return 3;
    case SpatialJointType::Revolute:
      return 5;
    case SpatialJointType::Universal:
      return 4;
    case SpatialJointType::Distance:
      return 1;
    case SpatialJointType::Cylindrical:
      return 4;
    case SpatialJointType::Translational:
      return 5;
    case SpatialJointType::Fixed:
      return 6;
    case SpatialJointType::RotationalDriver:
    case SpatialJointType::TranslationalDriver:
      return 1;
  }
  return 0;
}

bool CostTerm::needs_acceleration() const {
  return signal == Signal::AX || signal == Signal::AY || signal == Signal::AZ || signal == Signal::Alpha ||
         signal == Signal::Reaction;
}

int Model::n_element_constraints() const {
  int m = 0;
  for (const Element& e : elements) m += e.n_constraints();
  return m;
}

int Model::n_joint_constraints() const {
  int m = 0;
  for (const SpatialJoint& j : spatial_joints) m += j.n_constraints();
  return m - static_cast<int>(redundant_joint_rows.size());
}

double Model::extent(const Eigen::VectorXd& q_given, const Eigen::VectorXd& p) const {
  Eigen::Vector3d low = Eigen::Vector3d::Constant(std::numeric_limits<double>::infinity());
  Eigen::Vector3d high = -low;
  auto include = [&](double x, double y, double z = 0.0) {
    low = low.cwiseMin(Eigen::Vector3d(x, y, z));
    high = high.cwiseMax(Eigen::Vector3d(x, y, z));
  };
  for (size_t i = 0; i < points.size(); ++i) {
    const int o = point_offset(static_cast<int>(i));
    include(q_given[o], q_given[o + 1]);
  }
  for (size_t b = 0; b < bodies.size(); ++b) {
    const int o = body_offset(static_cast<int>(b));
    include(q_given[o], q_given[o + 1]);
  }
  for (size_t b = 0; b < spatial_bodies.size(); ++b) {
    const int o = spatial_offset(static_cast<int>(b));
    include(q_given[o], q_given[o + 1], q_given[o + 2]);
  }
  for (const SpatialJoint& j : spatial_joints) {  // their ground points (a spherical pendulum's pivot)
    if (j.body_a < 0) include(j.point_a.x.at<double>(p), j.point_a.y.at<double>(p), j.point_a.z.at<double>(p));
    if (j.body_b < 0) include(j.point_b.x.at<double>(p), j.point_b.y.at<double>(p), j.point_b.z.at<double>(p));
  }
  auto include_ground = [&](const PointRef& r) {
    if (r.kind == PointRef::Kind::Ground) include(r.x.at<double>(p), r.y.at<double>(p));
  };
  for (const Element& e : elements) {
    include_ground(e.a);
    include_ground(e.b);
  }
  for (const Contact& c : contacts) {
    if (c.kind == ContactKind::PointLine) include_ground(c.point);
  }
  return (high.array() >= low.array()).all() ? (high - low).norm() : 0.0;  // 0: nothing placed
}

double Model::motion_scale(const Eigen::VectorXd& q, const Eigen::VectorXd& v) const {
  const double velocity = v.size() > 0 ? v.lpNorm<Eigen::Infinity>() : 0.0;
  return std::max(velocity, 0.5 * extent(q, nominal_parameters()));
}

int Model::n_constraints() const {
  return n_element_constraints() + n_joint_constraints() + static_cast<int>(spatial_bodies.size());
}

std::vector<std::string> Model::coordinate_names() const {
  std::vector<std::string> names;
  for (const Point& p : points) {
    names.push_back(p.name + ".x");
    names.push_back(p.name + ".y");
  }
  for (const Body& b : bodies) {
    names.push_back(b.name + ".x");
    names.push_back(b.name + ".y");
    names.push_back(b.name + ".theta");
  }
  for (const SpatialBody& b : spatial_bodies) {
    for (const char* c : {".x", ".y", ".z", ".e0", ".e1", ".e2", ".e3"}) names.push_back(b.name + c);
  }
  return names;
}

Eigen::VectorXd Model::nominal_parameters() const {
  Eigen::VectorXd p(static_cast<Eigen::Index>(parameters.size()));
  for (size_t k = 0; k < parameters.size(); ++k) p[static_cast<Eigen::Index>(k)] = parameters[k].nominal;
  return p;
}

Eigen::VectorXd Model::initial_positions() const {
  const Eigen::VectorXd p = nominal_parameters();
  return initial_positions<double>(p);
}

Eigen::VectorXd Model::initial_velocities() const {
  const Eigen::VectorXd p = nominal_parameters();
  return initial_velocities<double>(p);
}

namespace {

std::string where(const Model& m) { return m.source.empty() ? "model '" + m.name + "'" : m.source; }

bool is_rod_end(const PointRef& r) { return r.kind != PointRef::Kind::Body; }

const char* type_name(ElementType type) {
  switch (type) {
    case ElementType::Bar: return "bar";
    case ElementType::Revolute: return "revolute";
    case ElementType::PointOnLine: return "point_on_line";
    case ElementType::Prismatic: return "prismatic";
    case ElementType::CoordinateDriver: return "coordinate_driver";
    case ElementType::DistanceDriver: return "distance_driver";
    case ElementType::Spring: return "spring";
    case ElementType::RotationalSpring: return "rotational_spring";
    case ElementType::PointMass: return "point_mass";
    case ElementType::Force: return "force";
  }
  return "element";
}

/// Two references to the same place of the same thing (a point, a body point, a ground point).
bool same_place(const PointRef& a, const PointRef& b) {
  if (a.kind != b.kind) return false;
  if (a.kind == PointRef::Kind::Point) return a.index == b.index;
  const auto same = [](const Value& u, const Value& v) {
    if (u.expression || v.expression) {
      return u.expression && v.expression && u.expression->text() == v.expression->text();
    }
    return u.parameter == v.parameter && u.constant == v.constant && u.scale == v.scale;
  };
  return (a.kind == PointRef::Kind::Ground || a.index == b.index) && same(a.x, b.x) && same(a.y, b.y);
}

/// Checks of one model at one parameter vector: each names the field, its owner and the value.
class DomainCheck {
 public:
  DomainCheck(const Model& m, const Eigen::VectorXd& p) : m_(m), p_(p) {}

  /// A distance driver's f(t) = offset + rate t + amplitude sin(frequency t + phase) stays
  /// positive over the horizon [t0, tf]: at zero distance its row |P_a - P_b|^2 - f^2 has a zero
  /// gradient, and the motion through it is not unique (index1 and penalty ran through such a
  /// zero with exit 0 and disagreed, also past the file's horizon with --tend). The minimum is
  /// exact: the ends and every critical point, where cos(frequency t + phase) = -rate /
  /// (amplitude frequency). Over more than kMaxPeriods periods T, f(t + T) = f(t) + rate T
  /// places the first zero: in the first period, or in the first whose minimum (the first
  /// period's, lowered by -rate T per period) reaches zero.
  void positive_over_horizon(const TimeFunction& f, const std::string& field, const std::string& owner, double t0,
                             double tf) const {
    const auto value = [&](double t) { return evaluate<double>(f, t, p_).f; };
    const double rate = eval(f.rate), frequency = eval(f.frequency);
    const double touching =
        1e-9 * (std::abs(eval(f.offset)) + std::abs(eval(f.amplitude)) + std::abs(rate) * (tf - t0));
    constexpr double kMaxPeriods = 1e5;  // more critical points than a model file's driver has
    const double period = 2.0 * std::numbers::pi / std::abs(frequency);  // inf without a swing
    double lo = t0, hi = tf;
    if (tf - t0 > kMaxPeriods * period) {
      const std::vector<double> first = candidates(f, t0, t0 + period);
      double lowest = value(first.front());
      for (const double t : first) lowest = std::min(lowest, value(t));
      const double drop = -rate * period;
      double k = 0.0;
      if (lowest > touching) {
        if (!(drop > 0.0)) return;
        k = std::ceil((lowest - touching) / drop);
      }
      lo = t0 + k * period;
      if (!(lo < tf)) return;
      hi = std::min(tf, lo + period);
    }
    // f between two neighbouring candidates is monotone: the first candidate at or below zero
    // (a touch within round-off counts) ends the interval holding the first zero.
    const std::vector<double> points = candidates(f, lo, hi);
    for (size_t i = 0; i < points.size(); ++i) {
      if (value(points[i]) > touching) continue;
      double below = i == 0 ? points[0] : points[i - 1], at = points[i];
      for (int it = 0; it < 100 && value(below) > touching; ++it) {
        (value(0.5 * (below + at)) > touching ? below : at) = 0.5 * (below + at);
      }
      throw InputError(fmt::format("{}: {} drives the distance to f(t) = {:.3g} at t = {:.6g} within the horizon [{}, {}]: "
                                   "a distance has no direction at zero, so f(t) must stay positive (a sign change of "
                                   "the distance is a driver through the other point: use coordinate drivers)",
                                   m_.locate(field), owner, value(at), at, t0, tf));
    }
  }
  /// lo, hi and the critical points of f between them, sorted (at most a few per period).
  std::vector<double> candidates(const TimeFunction& f, double lo, double hi) const {
    const double rate = eval(f.rate), frequency = eval(f.frequency), phase = eval(f.phase);
    const double swing = eval(f.amplitude) * frequency;
    std::vector<double> points = {lo, hi};
    if (swing != 0.0 && std::abs(rate / swing) <= 1.0) {
      const double angle = std::acos(-rate / swing);
      const double periods = std::abs(frequency) * (hi - lo) / (2.0 * std::numbers::pi);
      const double turns = (std::min(frequency * lo, frequency * hi) + phase) / (2.0 * std::numbers::pi);
      for (double k = std::floor(turns) - 1.0; k <= std::floor(turns) + periods + 2.0; ++k) {
        for (const double theta : {angle, -angle}) {
          const double t = (theta + 2.0 * std::numbers::pi * k - phase) / frequency;
          if (t > lo && t < hi) points.push_back(t);
        }
      }
    }
    std::sort(points.begin(), points.end());
    return points;
  }

  void positive(const Value& v, const std::string& field, const std::string& owner, const char* what) const {
    const double x = eval(v);
    if (!(x > 0.0)) fail(field, fmt::format("{} needs {} > 0", owner, what), x, v);
  }
  void non_negative(const Value& v, const std::string& field, const std::string& owner, const char* what) const {
    const double x = eval(v);
    if (!(x >= 0.0)) fail(field, fmt::format("{} needs {} >= 0", owner, what), x, v);
  }
  void at_least_one(const Value& v, const std::string& field, const std::string& owner, const char* what) const {
    const double x = eval(v);
    if (!(x >= 1.0)) fail(field, fmt::format("{} needs {} >= 1", owner, what), x, v);
  }
  /// An angle stop's limit: the joint angle lives in (-pi, pi], so a limit at or beyond +-pi is
  /// never met from inside.
  void within_half_turn(const Value& v, const std::string& field, const std::string& owner) const {
    const double x = eval(v);
    if (!(std::abs(x) < std::numbers::pi)) {
      fail(field, fmt::format("{} needs its angle limit within (-pi, pi) (the joint angle is measured in (-pi, pi]: "
                              "choose the normals so that the motion stays inside)",
                              owner),
           x, v);
    }
  }
  void unit_interval(const Value& v, const std::string& field, const std::string& owner, const char* what) const {
    const double x = eval(v);
    if (!(x >= 0.0 && x <= 1.0)) fail(field, fmt::format("{} needs {} in [0, 1]", owner, what), x, v);
  }
  void non_zero(const Value& vx, const Value& vy, const std::string& field, const std::string& owner,
                const char* what) const {
    const double x = eval(vx), y = eval(vy);
    if (!(std::hypot(x, y) > 0.0)) {
      throw InputError(fmt::format("{}: {} needs a non-zero {}, got [{}, {}]{}", m_.locate(field), owner, what, x,
                                   y, origin(vx) + origin(vy)));
    }
  }
  void non_zero(const Value3& v, const std::string& field, const std::string& owner, const char* what) const {
    const double x = eval(v.x), y = eval(v.y), z = eval(v.z);
    const double squared = x * x + y * y + z * z;
    // It is normalized where it is used: its squared length must be a normal double (not 0, not
    // denormal, whose square root keeps a few bits only, not overflowing to inf).
    if (squared >= std::numeric_limits<double>::min() && std::isfinite(squared)) return;
    const bool finite = std::isfinite(x) && std::isfinite(y) && std::isfinite(z);
    const bool zero = x == 0.0 && y == 0.0 && z == 0.0;
    const char* kind = !finite ? "finite" : zero ? "non-zero" : squared < 1.0 ? "longer" : "shorter";
    const char* why = !finite || zero ? ""
                      : squared < 1.0 ? " (its squared length underflows: scale it up)"
                                      : " (its squared length overflows: scale it down)";
    throw InputError(fmt::format("{}: {} needs a {} {}, got [{}, {}, {}]{}", m_.locate(field), owner, kind, what, x, y,
                                 z, why));
  }
  /// A normal that measures an angle about an axis must not lie along it (its part across the
  /// axis is what counts; 1e-8 of its length).
  void across_axis(const Value3& normal, const Value3& axis, const std::string& field, const std::string& owner,
                   const char* what, const char* axis_name) const {
    const Eigen::Vector3d n(eval(normal.x), eval(normal.y), eval(normal.z));
    const Eigen::Vector3d h(eval(axis.x), eval(axis.y), eval(axis.z));
    if (!(n.cross(h).norm() > 1e-8 * n.norm() * h.norm())) {
      throw InputError(fmt::format("{}: {} needs {} across {}, got [{}, {}, {}] parallel to [{}, {}, {}]", m_.locate(field),
                                   owner, what, axis_name, n[0], n[1], n[2], h[0], h[1], h[2]));
    }
  }
  /// The inertia tensor (xx, yy, zz, xy, xz, yz) must be symmetric positive definite.
  void positive_definite(const std::array<Value, 6>& j, const std::string& field, const std::string& owner) const {
    Eigen::Matrix3d J;
    J << eval(j[0]), eval(j[3]), eval(j[4]), eval(j[3]), eval(j[1]), eval(j[5]), eval(j[4]), eval(j[5]), eval(j[2]);
    const Eigen::Vector3d principal = Eigen::SelfAdjointEigenSolver<Eigen::Matrix3d>(J, Eigen::EigenvaluesOnly).eigenvalues();
    if (!(principal.minCoeff() > 0.0) || !J.allFinite()) {
      throw InputError(fmt::format("{}: {} needs a positive definite inertia tensor, got [xx {}, yy {}, zz {}, xy {}, "
                                   "xz {}, yz {}] (principal moments {}, {}, {})",
                                   m_.locate(field), owner, J(0, 0), J(1, 1), J(2, 2), J(0, 1), J(0, 2), J(1, 2),
                                   principal[0], principal[1], principal[2]));
    }
  }

 private:
  double eval(const Value& v) const { return v.at<double>(p_); }

  std::string origin(const Value& v) const {
    if (v.expression) {
      std::string values;
      for (const int k : v.expression->parameters()) {
        values += fmt::format("{}{} = {}", values.empty() ? "" : ", ", m_.parameters[static_cast<size_t>(k)].name, p_[k]);
      }
      return fmt::format(" (from expression '{}' with {})", v.expression->text(), values);
    }
    if (!v.is_parameter()) return "";
    const Parameter& par = m_.parameters[static_cast<size_t>(v.parameter)];
    if (v.scale == 1.0) return fmt::format(" (from parameter '{}' = {})", par.name, p_[v.parameter]);
    // A scaled parameter ("-2*c") names its factor: "got -4 (from parameter 'c' = 2)" reads as a contradiction.
    const std::string term = v.scale == -1.0 ? "-" + par.name : fmt::format("{}*{}", v.scale, par.name);
    return fmt::format(" (from '{}' with {} = {})", term, par.name, p_[v.parameter]);
  }

  [[noreturn]] void fail(const std::string& field, const std::string& rule, double x, const Value& v) const {
    throw InputError(fmt::format("{}: {}, got {}{}", m_.locate(field), rule, x, origin(v)));
  }

  const Model& m_;
  const Eigen::VectorXd& p_;
};

}  // namespace

std::string Model::locate(const std::string& field) const {
  const auto it = locations.find(field);
  if (it != locations.end()) return it->second + ": " + field;
  return where(*this) + ": " + field;
}

std::string Model::describe_element(int element) const {
  const Element& e = elements[static_cast<size_t>(element)];
  const std::string index = fmt::format("elements[{}]", element);
  return e.name.empty() || e.name == index ? fmt::format("{} ({})", index, e.type_name())
                                           : fmt::format("{} '{}'", e.type_name(), e.name);
}

std::string Element::type_name() const { return fixed_point ? "fixed_point" : to_string(type); }

int Model::element_of_row(int row) const {
  for (size_t i = 0; i < elements.size(); ++i) {
    row -= elements[i].n_constraints();
    if (row < 0) return static_cast<int>(i);
  }
  return -1;
}

std::string Model::describe_row(int row) const {
  const int element = element_of_row(row);
  if (element >= 0) return fmt::format("{} ({})", describe_element(element), locate(fmt::format("elements[{}]", element)));
  int among_joints = row - n_element_constraints();
  // Phi holds the joints' rows but the redundant ones: count them back in.
  for (const int r : redundant_joint_rows) {
    if (r <= among_joints) ++among_joints;
  }
  for (size_t j = 0; j < spatial_joints.size(); ++j) {
    const int rows = spatial_joints[j].n_constraints();
    if (among_joints < rows) {
      return fmt::format("joint '{}' ({})", spatial_joints[j].name, locate(fmt::format("spatial.joints[{}]", j)));
    }
    among_joints -= rows;
  }
  if (among_joints >= 0 && among_joints < static_cast<int>(spatial_bodies.size())) {
    return fmt::format("the normalization of spatial body '{}'", spatial_bodies[static_cast<size_t>(among_joints)].name);
  }
  return fmt::format("row {} of Phi", row);
}

void Model::check_parameter_bounds(const Eigen::VectorXd& p) const {
  for (size_t k = 0; k < parameters.size(); ++k) {
    const Parameter& par = parameters[k];
    const double value = p[static_cast<Eigen::Index>(k)];
    if (value >= par.lower && value <= par.upper) continue;
    const std::string field = "parameters." + par.name;
    throw InputError(fmt::format("{}: the value {} is outside [min, max] = [{}, {}]", locate(field), value, par.lower,
                                 par.upper));
  }
}

void Model::check_horizon(const Eigen::VectorXd& p, double run_t0, double run_tf) const {
  const DomainCheck check(*this, p);
  for (size_t i = 0; i < elements.size(); ++i) {
    if (elements[i].type != ElementType::DistanceDriver) continue;
    check.positive_over_horizon(elements[i].drive, fmt::format("elements[{}]", i), describe_element(static_cast<int>(i)),
                                run_t0, run_tf);
  }
}

void Model::check_domains(const Eigen::VectorXd& p) const {
  check_parameter_bounds(p);
  // Checked at the file's values when it was read; an override may leave an expression's domain
  // (sqrt(th0 - 0.5) at th0 = 0.3 failed assembly naming "(-nan)" and no field).
  for (const auto& [field, expression] : expression_fields) {
    const double v = expression->evaluate<double>(p);
    if (std::isfinite(v)) continue;
    throw InputError(fmt::format("{}: '{}' is not finite at the parameters' values (got {})", locate(field),
                                 expression->text(), std::isnan(v) ? "nan" : fmt::format("{}", v)));
  }
  const DomainCheck check(*this, p);
  for (const Body& b : bodies) {
    const std::string field = "bodies." + b.name;
    const std::string owner = "body '" + b.name + "'";
    check.positive(b.mass, field + ".mass", owner, "mass");
    check.positive(b.inertia, field + ".inertia", owner, "inertia");
  }
  for (const SpatialBody& b : spatial_bodies) {
    const std::string field = "spatial.bodies." + b.name;
    const std::string owner = "spatial body '" + b.name + "'";
    check.positive(b.mass, field + ".mass", owner, "mass");
    check.positive_definite(b.inertia, field + ".inertia", owner);
    for (const SpatialBody::Turn& turn : b.orientation0) check.non_zero(turn.axis, field + ".orientation.axis", owner, "rotation axis");
  }
  for (size_t i = 0; i < spatial_joints.size(); ++i) {
    const SpatialJoint& j = spatial_joints[i];
    const std::string field = fmt::format("spatial.joints[{}]", i);
    const std::string owner = "joint '" + j.name + "'";
    if (j.type != SpatialJointType::Spherical && j.type != SpatialJointType::Distance) {
      check.non_zero(j.axis_a, field + ".axis_a", owner, "axis_a");
      check.non_zero(j.axis_b, field + ".axis_b", owner, "axis_b");
    }
    if (j.type == SpatialJointType::Translational || j.type == SpatialJointType::Fixed ||
        j.type == SpatialJointType::RotationalDriver) {
      check.non_zero(j.normal_a, field + ".normal_a", owner, "normal_a");
      check.non_zero(j.normal_b, field + ".normal_b", owner, "normal_b");
    }
    // A translational or fixed joint's twist row holds the normals parallel: one along the axis
    // left that row redundant, and the joint was silently a cylindrical one.
    if (j.type == SpatialJointType::RotationalDriver || j.type == SpatialJointType::Translational ||
        j.type == SpatialJointType::Fixed) {
      check.across_axis(j.normal_a, j.axis_a, field + ".normal_a", owner, "normal_a", "its axis_a");
      check.across_axis(j.normal_b, j.axis_b, field + ".normal_b", owner, "normal_b", "its axis_b");
    }
    if (j.type == SpatialJointType::Distance) check.positive(j.length, field + ".length", owner, "length");
  }
  for (size_t i = 0; i < spatial_forces.size(); ++i) {
    const SpatialForce& f = spatial_forces[i];
    const std::string field = fmt::format("spatial.forces[{}]", i);
    if (f.type == SpatialForceType::CompliantContact) {
      const std::string owner = "compliant contact '" + f.name + "'";
      check.positive(f.radius, field + ".radius", owner, "radius");
      check.non_negative(f.stiffness, field + ".stiffness", owner, "stiffness");
      check.at_least_one(f.exponent, field + ".exponent", owner, "exponent");
      check.non_negative(f.damping, field + ".damping", owner, "damping");
      check.non_negative(f.friction, field + ".friction", owner, "friction");
      check.positive(f.slip_velocity, field + ".slip_velocity", owner, "slip_velocity");
      if (!f.height) check.non_zero(f.vector, field + ".plane.normal", owner, "plane normal");
      if (f.height && (!f.height_x || !f.height_y)) {
        throw InputError(fmt::format("{}: {} has a height field without its slopes (height_x, height_y: "
                                     "Expression::derivative of it in x and y)",
                                     locate(field + ".height"), owner));
      }
      continue;
    }
    if (f.type == SpatialForceType::RotationalSpring) {
      const std::string owner = "rotational spring '" + f.name + "'";
      check.non_zero(f.axis_a, field + ".axis_a", owner, "axis_a");
      check.non_zero(f.axis_b, field + ".axis_b", owner, "axis_b");
      check.non_zero(f.normal_a, field + ".normal_a", owner, "normal_a");
      check.non_zero(f.normal_b, field + ".normal_b", owner, "normal_b");
      check.across_axis(f.normal_a, f.axis_a, field + ".normal_a", owner, "normal_a", "its axis_a");
      check.across_axis(f.normal_b, f.axis_b, field + ".normal_b", owner, "normal_b", "its axis_b");
      check.non_negative(f.stiffness, field + ".stiffness", owner, "stiffness");
      check.non_negative(f.damping, field + ".damping", owner, "damping");
      continue;
    }
    if (f.type == SpatialForceType::Bushing) {
      const std::string owner = "bushing '" + f.name + "'";
      const std::pair<const Value3*, const char*> fields[] = {{&f.linear_stiffness, "stiffness"},
                                                              {&f.linear_damping, "damping"},
                                                              {&f.angular_stiffness, "rotational_stiffness"},
                                                              {&f.angular_damping, "rotational_damping"}};
      for (const auto& [values, key] : fields) {
        const Value* entries[] = {&values->x, &values->y, &values->z};
        for (int i = 0; i < 3; ++i) {
          check.non_negative(*entries[i], fmt::format("{}.{}[{}]", field, key, i), owner, key);
        }
      }
      continue;
    }
    if (f.type != SpatialForceType::Spring) continue;
    const std::string owner = "spring '" + f.name + "'";
    check.non_negative(f.stiffness, field + ".stiffness", owner, "stiffness");
    check.non_negative(f.damping, field + ".damping", owner, "damping");
    check.non_negative(f.rest_length, field + ".rest_length", owner, "rest_length");
  }
  for (size_t i = 0; i < elements.size(); ++i) {
    const Element& e = elements[i];
    const std::string field = fmt::format("elements[{}]", i);
    const std::string owner = describe_element(static_cast<int>(i));
    switch (e.type) {
      case ElementType::Bar:
        check.positive(e.length, field + ".length", owner, "length");
        check.non_negative(e.mass, field + ".mass", owner, "mass");
        break;
      case ElementType::PointMass:
        check.positive(e.mass, field + ".mass", owner, "mass");
        break;
      case ElementType::Spring:
        check.non_negative(e.stiffness, field + ".stiffness", owner, "stiffness");
        check.non_negative(e.damping, field + ".damping", owner, "damping");
        check.non_negative(e.rest_length, field + ".rest_length", owner, "rest_length");
        break;
      case ElementType::RotationalSpring:
        check.non_negative(e.stiffness, field + ".stiffness", owner, "stiffness");
        check.non_negative(e.damping, field + ".damping", owner, "damping");
        break;
      case ElementType::PointOnLine:
      case ElementType::Prismatic:
        check.non_zero(e.dir_x, e.dir_y, field + ".direction", owner, "direction");
        break;
      case ElementType::DistanceDriver:
        check.positive_over_horizon(e.drive, field, owner, t0, tf);
        break;
      default:
        break;
    }
  }
  for (size_t i = 0; i < contacts.size(); ++i) {
    const Contact& c = contacts[i];
    const std::string field = fmt::format("contacts[{}]", i);
    const std::string owner = "contact '" + c.name + "'";
    check.unit_interval(c.restitution, field + ".restitution", owner, "restitution");
    if (c.frictional()) check.non_negative(c.friction, field + ".friction", owner, "friction");
    if (c.kind == ContactKind::PointLine) check.non_zero(c.normal_x, c.normal_y, field + ".line.normal", owner, "normal");
    if (c.kind == ContactKind::PointPlane) check.non_zero(c.plane_normal, field + ".plane.normal", owner, "normal");
    if (c.kind == ContactKind::SpatialAngleStop || c.kind == ContactKind::SpatialTravelStop) {
      const SpatialJoint& j = c.spatial_joint;
      check.non_zero(j.axis_a, field + ".stop.joint", owner, "axis_a");
    }
    if (c.kind == ContactKind::SpatialAngleStop) {
      const SpatialJoint& j = c.spatial_joint;
      check.non_zero(j.axis_b, field + ".stop.joint", owner, "axis_b");
      check.non_zero(j.normal_a, field + ".stop.normal_a", owner, "normal_a");
      check.non_zero(j.normal_b, field + ".stop.normal_b", owner, "normal_b");
      check.across_axis(j.normal_a, j.axis_a, field + ".stop.normal_a", owner, "normal_a", "its axis_a");
      check.across_axis(j.normal_b, j.axis_b, field + ".stop.normal_b", owner, "normal_b", "its axis_b");
      check.within_half_turn(c.limit, fmt::format("{}.stop.{}", field, c.side > 0 ? "min" : "max"), owner);
    }
  }
}

void Model::validate() const {
  if (n_coordinates() == 0) throw InputError(fmt::format("{}: the model has no points and no bodies", where(*this)));
  if (n_coordinates() > max_coordinates) {
    throw InputError(fmt::format("{}: the model has {} coordinates ({} points, {} bodies{}); Saltus's "
                                 "formulations take at most {} (docs/multibody.md, \"Limits\")",
                                 where(*this), n_coordinates(), points.size(), bodies.size(),
                                 spatial_bodies.empty() ? "" : fmt::format(", {} spatial bodies", spatial_bodies.size()),
                                 max_coordinates));
  }
  if (contacts.size() > static_cast<size_t>(max_contacts)) {
    throw InputError(fmt::format("{}: the model has {} contacts; Saltus takes at most {} (each is an event "
                                 "that every integration step checks)",
                                 locate("contacts"), contacts.size(), max_contacts));
  }
  if (!std::isfinite(t0) || !std::isfinite(tf) || !(tf > t0)) {
    throw InputError(fmt::format("{}: the horizon [{}, {}] must be finite with tf > t0", locate("horizon"), t0, tf));
  }
  if (costs.empty()) throw InputError(fmt::format("{}: the model has no costs", where(*this)));
  std::set<std::string> names;
  for (const Parameter& p : parameters) {
    if (!std::isfinite(p.nominal)) {
      throw InputError(fmt::format("{}: parameter '{}' has a non-finite value", where(*this), p.name));
    }
    if (!names.insert(p.name).second) {
      throw InputError(fmt::format("{}: parameter '{}' is declared twice", where(*this), p.name));
    }
  }
  std::set<std::string> element_names;
  for (size_t i = 0; i < elements.size(); ++i) {
    const Element& e = elements[i];
    const std::string field = fmt::format("elements[{}]", i);
    if (!e.name.empty() && !element_names.insert(e.name).second) {
      throw InputError(fmt::format("{}: the element name '{}' is used twice (costs refer to elements by name)",
                                   locate(field + ".name"), e.name));
    }
    const bool two_ends = e.type == ElementType::Bar || e.type == ElementType::Revolute ||
                          e.type == ElementType::Spring || e.type == ElementType::DistanceDriver;
    if (two_ends && same_place(e.a, e.b)) {
      throw InputError(fmt::format("{}: {} connects '{}' to itself", locate(field), describe_element(static_cast<int>(i)),
                                   e.a.label.empty() ? "the same point" : e.a.label));
    }
    if (e.type == ElementType::RotationalSpring && (e.bar_a >= 0 || e.bar_b >= 0)) {
      const auto is_bar = [&](int k) {
        return k >= 0 && k < static_cast<int>(elements.size()) && elements[static_cast<size_t>(k)].type == ElementType::Bar;
      };
      if (!is_bar(e.bar_a) || !is_bar(e.bar_b) || e.bar_a == e.bar_b) {
        throw InputError(fmt::format("{}: rotational spring '{}' needs two different bars (bar_a, bar_b)", locate(field),
                                     e.name));
      }
    }
    if (e.type == ElementType::Bar && !(is_rod_end(e.a) && is_rod_end(e.b))) {
      // A rod's natural-coordinate mass matrix needs both ends as points or ground; a bar
      // between body points is a massless distance constraint.
      if (e.mass.depends_on_parameters() || e.mass.constant != 0.0) {
        throw InputError(fmt::format("{}: bar '{}' has a mass but an end on a body; give the mass to "
                                     "the body instead",
                                     locate(field + ".mass"), e.name));
      }
    }
  }
  validate_spatial();
  std::set<std::string> contact_names;
  for (size_t i = 0; i < contacts.size(); ++i) {
    const Contact& c = contacts[i];
    if (!contact_names.insert(c.name).second) {
      throw InputError(fmt::format("{}: the contact name '{}' is used twice", locate(fmt::format("contacts[{}].name", i)),
                                   c.name));
    }
    if (c.line_body < -1 || c.line_body >= static_cast<int>(bodies.size())) {
      throw InputError(fmt::format("{}: contact '{}': line body index {} out of range (-1 for the ground, or 0 to {})",
                                   locate(fmt::format("contacts[{}].line.body", i)), c.name, c.line_body,
                                   static_cast<int>(bodies.size()) - 1));
    }
    if (is_joint_stop(c.kind) && c.law == ImpactLaw::Partitioning) {
      throw InputError(fmt::format("{}: contact '{}': a joint stop uses the impulse law (law: impulse)",
                                   locate(fmt::format("contacts[{}].law", i)), c.name));
    }
    if (c.kind == ContactKind::PointPlane) {
      if (c.spatial_body < 0 || c.spatial_body >= static_cast<int>(spatial_bodies.size())) {
        throw InputError(fmt::format("{}: contact '{}': spatial body index {} out of range",
                                     locate(fmt::format("contacts[{}].point", i)), c.name, c.spatial_body));
      }
      if (c.law == ImpactLaw::Partitioning && !c.spatial_at.is_zero()) {
        throw InputError(fmt::format("{}: contact '{}': the partitioning law reverses the velocity of the frame origin of body "
                                     "'{}', so the contact point must be that origin (place the frame there, with "
                                     "the centre of mass in center), or use law: impulse",
                                     locate(fmt::format("contacts[{}].point", i)), c.name,
                                     spatial_bodies[static_cast<size_t>(c.spatial_body)].name));
      }
    } else if (c.kind == ContactKind::SpatialAngleStop || c.kind == ContactKind::SpatialTravelStop) {
      validate_spatial_stop(c, i);
    } else if (c.kind != ContactKind::PointLine) {
      const int n_bodies = static_cast<int>(bodies.size()), n_elements = static_cast<int>(elements.size());
      const Element& j = c.joint;
      const bool bodies_ok = j.body_a >= -1 && j.body_a < n_bodies && j.body_b >= -1 && j.body_b < n_bodies;
      const bool bars_ok = (j.bar_a < 0 && j.bar_b < 0) ||
                           (j.bar_a >= 0 && j.bar_a < n_elements && j.bar_b >= 0 && j.bar_b < n_elements &&
                            elements[static_cast<size_t>(j.bar_a)].type == ElementType::Bar &&
                            elements[static_cast<size_t>(j.bar_b)].type == ElementType::Bar && j.bar_a != j.bar_b);
      const bool type_ok = c.kind == ContactKind::AngleStop ? j.type == ElementType::RotationalSpring
                                                            : j.type == ElementType::Prismatic;
      // An angle between a body and itself (or ground and ground) has no gradient.
      const bool distinct = c.kind != ContactKind::AngleStop || j.bar_a >= 0 || j.body_a != j.body_b;
      const bool side_ok = c.side == 1.0 || c.side == -1.0;
      if (!bodies_ok || !bars_ok || !type_ok || !distinct || !side_ok) {
        throw InputError(fmt::format("{}: contact '{}': its joint is not a valid {} (bodies, bars or prismatic element "
                                     "out of range, the same body twice, or a side other than +1 / -1)",
                                     locate(fmt::format("contacts[{}].stop", i)), c.name,
                                     c.kind == ContactKind::AngleStop ? "rotation" : "prismatic joint"));
      }
    }
    if (c.frictional() && (!c.persistent || c.kind != ContactKind::PointLine)) {
      // The hint names what is missing: persistence on a point-line contact, or another contact kind.
      const std::string hint = c.kind == ContactKind::PointLine    ? "add persistent: true"
                               : c.kind == ContactKind::PointPlane ? "a point against a plane has no friction yet"
                                                                   : "a joint stop has no friction";
      throw InputError(fmt::format("{}: contact '{}': friction acts on a persistent contact of a point against a "
                                   "line ({})",
                                   locate(fmt::format("contacts[{}].friction", i)), c.name, hint));
    }
    if (c.line_body >= 0 && c.law == ImpactLaw::Partitioning) {
      throw InputError(fmt::format("{}: contact '{}': the partitioning law needs a ground line (its line is carried "
                                   "by body '{}'); use law: impulse",
                                   locate(fmt::format("contacts[{}].law", i)), c.name,
                                   bodies[static_cast<size_t>(c.line_body)].name));
    }
  }
  for (const CostSpec& c : costs) {
    for (const auto* terms : {&c.running, &c.terminal}) {
      for (const CostTerm& t : *terms) check_spatial_force_signal(c, t);
    }
    for (size_t i = 0; i < c.terminal.size(); ++i) {
      if (c.terminal[i].needs_acceleration()) {
        throw InputError(fmt::format("{}: cost '{}': a terminal term cannot use accelerations or "
                                     "reactions (they are not functions of the final state; use a running term)",
                                     locate(fmt::format("costs.{}.terminal[{}].signal", c.name, i)), c.name));
      }
    }
  }
  check_domains(nominal_parameters());
}

void Model::check_spatial_force_signal(const CostSpec& c, const CostTerm& t) const {
  const bool of_contact = t.signal == Signal::Penetration || t.signal == Signal::NormalForce;
  if (!of_contact && t.spatial_force < 0) return;  // a planar spring's or another signal
  const SpatialForceType wanted = of_contact ? SpatialForceType::CompliantContact : SpatialForceType::Spring;
  if (t.spatial_force < 0 || t.spatial_force >= static_cast<int>(spatial_forces.size()) ||
      spatial_forces[static_cast<size_t>(t.spatial_force)].type != wanted) {
    throw InputError(fmt::format("{}: cost '{}': a term's spatial force index {} is not a {}", where(*this), c.name,
                                 t.spatial_force, of_contact ? "compliant contact" : "spatial spring"));
  }
}

void Model::validate_spatial_stop(const Contact& c, size_t index) const {
  const std::string field = fmt::format("contacts[{}].stop", index);
  const SpatialJoint& j = c.spatial_joint;
  const int n_spatial = static_cast<int>(spatial_bodies.size());
  const bool bodies_ok = j.body_a >= -1 && j.body_a < n_spatial && j.body_b >= -1 && j.body_b < n_spatial &&
                         j.body_a != j.body_b;
  if (!bodies_ok || (c.side != 1.0 && c.side != -1.0)) {
    throw InputError(fmt::format("{}: contact '{}': its joint's bodies ({} and {}; -1 the ground, 0 to {}) are out of "
                                 "range or the same, or its side {} is not +1 / -1",
                                 locate(field), c.name, j.body_a, j.body_b, n_spatial - 1, c.side));
  }
  // The stop measures joint `driven` (its copy's geometry is what the gap reads).
  const bool angle = c.kind == ContactKind::SpatialAngleStop;
  const auto type_fits = [&](SpatialJointType t) {
    return t == SpatialJointType::Cylindrical ||
           (angle ? t == SpatialJointType::Revolute : t == SpatialJointType::Translational);
  };
  if (j.driven < 0 || j.driven >= static_cast<int>(spatial_joints.size()) ||
      !type_fits(spatial_joints[static_cast<size_t>(j.driven)].type)) {
    throw InputError(fmt::format("{}: contact '{}': its joint (index {}) is not a spatial {} joint", locate(field), c.name,
                                 j.driven, angle ? "revolute or cylindrical" : "translational or cylindrical"));
  }
}

void Model::validate_spatial() const {
  const int n_spatial = static_cast<int>(spatial_bodies.size());
  const auto check_body = [&](int body, const std::string& field, const std::string& owner) {
    if (body < -1 || body >= n_spatial) {
      throw InputError(fmt::format("{}: {}: spatial body index {} out of range (-1 for the ground, or 0 to {})",
                                   locate(field), owner, body, n_spatial - 1));
    }
  };
  for (int b = 0; b < n_spatial; ++b) {
    const std::optional<SpatialBody::TreeStart>& start = spatial_bodies[static_cast<size_t>(b)].tree_start;
    if (!start) continue;
    const std::string owner = "spatial body '" + spatial_bodies[static_cast<size_t>(b)].name + "'";
    // Forward kinematics places the bodies in order: the parent's pose must be known first.
    if (start->parent < -1 || start->parent >= b) {
      throw InputError(fmt::format("{}: {}: tree_start.parent {} must be -1 (the ground) or an earlier body (0 to {})",
                                   locate("spatial.bodies." + spatial_bodies[static_cast<size_t>(b)].name), owner,
                                   start->parent, b - 1));
    }
    const Eigen::Vector4d rotation(start->joint_rotation.data());
    const Eigen::Vector3d axis(start->axis.data()), origin(start->joint_origin.data());
    if (!origin.allFinite() || !(std::abs(rotation.norm() - 1.0) < 1e-12) || !(std::abs(axis.norm() - 1.0) < 1e-12)) {
      throw InputError(fmt::format("{}: {}: tree_start needs a finite joint_origin and unit joint_rotation and axis",
                                   locate("spatial.bodies." + spatial_bodies[static_cast<size_t>(b)].name), owner));
    }
  }
  std::set<std::string> joint_names;
  for (const Element& e : elements) joint_names.insert(e.name);  // costs name elements and joints alike
  for (size_t i = 0; i < spatial_joints.size(); ++i) {
    const SpatialJoint& j = spatial_joints[i];
    const std::string field = fmt::format("spatial.joints[{}]", i);
    const std::string owner = "joint '" + j.name + "'";
    if (!joint_names.insert(j.name).second) {
      throw InputError(fmt::format("{}: the name '{}' is used twice (by elements or joints)", locate(field + ".name"),
                                   j.name));
    }
    check_body(j.body_a, field + ".a", owner);
    check_body(j.body_b, field + ".b", owner);
    if (j.body_a == j.body_b) {
      throw InputError(fmt::format("{}: {} joins {} to itself", locate(field), owner,
                                   j.body_a < 0 ? std::string("the ground") : "body '" + spatial_bodies[static_cast<size_t>(j.body_a)].name + "'"));
    }
  }
  for (size_t i = 0; i < spatial_forces.size(); ++i) {
    const SpatialForce& f = spatial_forces[i];
    const std::string field = fmt::format("spatial.forces[{}]", i);
    if (!joint_names.insert(f.name).second) {
      throw InputError(fmt::format("{}: the name '{}' is used twice (by elements, joints or forces)",
                                   locate(field + ".name"), f.name));
    }
    check_body(f.body_a, field + ".a", "force '" + f.name + "'");
    check_body(f.body_b, field + ".b", "force '" + f.name + "'");
    const bool between_two = f.type == SpatialForceType::Spring || f.type == SpatialForceType::RotationalSpring ||
                             f.type == SpatialForceType::Bushing;
    if (!between_two && f.body_a < 0) {
      throw InputError(fmt::format("{}: force '{}' acts on the ground; give it a body", locate(field), f.name));
    }
    if (between_two && f.type != SpatialForceType::Spring && f.body_a == f.body_b) {
      throw InputError(fmt::format("{}: force '{}' joins {} to itself", locate(field), f.name,
                                   f.body_a < 0 ? std::string("the ground")
                                                : "body '" + spatial_bodies[static_cast<size_t>(f.body_a)].name + "'"));
    }
  }
}

std::string to_string(ElementType type) { return type_name(type); }

std::string to_string(FormulationType type) {
  switch (type) {
    case FormulationType::Penalty:
      return "penalty";
    case FormulationType::Index1:
      return "index1";
    case FormulationType::Maggi:
      return "maggi";
    case FormulationType::GGL:
      return "ggl";
    case FormulationType::StabilizedIndex1:
      return "stabilized_index1";
    case FormulationType::Index3:
      return "index3";
  }
  return "?";
}

FormulationType parse_formulation(const std::string& name) {
  if (name == "penalty") return FormulationType::Penalty;
  if (name == "index1") return FormulationType::Index1;
  if (name == "maggi") return FormulationType::Maggi;
  if (name == "ggl") return FormulationType::GGL;
  if (name == "stabilized_index1") return FormulationType::StabilizedIndex1;
  if (name == "index3") return FormulationType::Index3;
  throw InputError(fmt::format(
      "unknown formulation '{}' (choose penalty, index1, maggi, ggl, stabilized_index1 or index3)", name));
}

}  // namespace saltus::multibody
