#include "named_outputs.hpp"

#include <fmt/format.h>

namespace saltus::multibody::detail {

namespace {

/// Units of row `row` of constraint element e: its residual's and its multiplier's. A row's
/// multiplier has the unit of force work per unit of the row (N per m, N m per rad, N per m^2).
std::pair<std::string, std::string> row_units(const Model& m, const Element& e, int row) {
  switch (e.type) {
    case ElementType::Bar:
    case ElementType::DistanceDriver:
      return {"m^2", "N/m"};
    case ElementType::Revolute:
      return {"m", "N"};
    case ElementType::Prismatic:
      if (row == 1) return {"rad", "N m"};
      return {"m", "N"};
    case ElementType::CoordinateDriver: {
      const bool angle = e.coordinate >= m.body_offset(0) && e.coordinate < m.spatial_offset(0) &&
                         (e.coordinate - m.body_offset(0)) % 3 == 2;
      return angle ? std::pair<std::string, std::string>{"rad", "N m"} : std::pair<std::string, std::string>{"m", "N"};
    }
    default:
      return {"m", "N"};
  }
}

/// Units of row `row` of spatial joint j: its residual's and its multiplier's.
std::pair<std::string, std::string> joint_row_units(const SpatialJoint& j, int row) {
  const std::pair<std::string, std::string> length{"m", "N"}, cosine{"1", "N m"};
  switch (j.type) {
    case SpatialJointType::Distance:
      return {"m^2", "N/m"};
    case SpatialJointType::RotationalDriver:
      return cosine;  // sin(theta - f): the multiplier is minus the driving torque
    case SpatialJointType::TranslationalDriver:
      return length;
    case SpatialJointType::Cylindrical:
    case SpatialJointType::Translational:
      return row == 2 || row == 3 ? length : cosine;  // rows 2, 3: the point on the axis
    default:
      return row < 3 ? length : cosine;  // the coincident points, then dot-1 rows
  }
}

}  // namespace

std::pair<std::vector<std::string>, std::vector<std::string>> output_names_and_units(const Model& m) {
  std::vector<std::string> names, units;
  auto add = [&](std::string name, std::string unit) {
    names.push_back(std::move(name));
    units.push_back(std::move(unit));
  };
  for (const Point& pt : m.points) {
    for (const char* axis : {"x", "y"}) add(fmt::format("{}.{}", pt.name, axis), "m");
    for (const char* axis : {"x", "y"}) add(fmt::format("{}.{}_dot", pt.name, axis), "m/s");
  }
  for (const Body& b : m.bodies) {
    add(b.name + ".x", "m");
    add(b.name + ".y", "m");
    add(b.name + ".theta", "rad");
    add(b.name + ".x_dot", "m/s");
    add(b.name + ".y_dot", "m/s");
    add(b.name + ".theta_dot", "rad/s");
  }
  for (const SpatialBody& b : m.spatial_bodies) {
    for (const char* c : {"x", "y", "z"}) add(fmt::format("{}.{}", b.name, c), "m");
    for (const char* c : {"e0", "e1", "e2", "e3"}) add(fmt::format("{}.{}", b.name, c), "1");
    for (const char* c : {"x", "y", "z"}) add(fmt::format("{}.{}_dot", b.name, c), "m/s");
    for (const char* c : {"e0", "e1", "e2", "e3"}) add(fmt::format("{}.{}_dot", b.name, c), "1/s");
  }
  // Every constraint row in Phi's order: elements, spatial joints, normalizations.
  for (const char* field : {"reaction", "phi"}) {
    const bool reaction = std::string(field) == "reaction";
    for (const Element& e : m.elements) {
      for (int row = 0; row < e.n_constraints(); ++row) {
        const auto [phi_unit, reaction_unit] = row_units(m, e, row);
        add(fmt::format("{}.{}[{}]", e.name, field, row), reaction ? reaction_unit : phi_unit);
      }
    }
    for (const SpatialJoint& j : m.spatial_joints) {
      for (int row = 0; row < j.n_constraints(); ++row) {
        const auto [phi_unit, reaction_unit] = joint_row_units(j, row);
        add(fmt::format("{}.{}[{}]", j.name, field, row), reaction ? reaction_unit : phi_unit);
      }
    }
    for (const SpatialBody& b : m.spatial_bodies) add(fmt::format("{}.normalization.{}[0]", b.name, field), reaction ? "N m" : "1");
  }
  for (const Element& e : m.elements) {
    if (e.type == ElementType::Spring) {
      add(e.name + ".length", "m");
      add(e.name + ".force", "N");
    } else if (e.type == ElementType::RotationalSpring) {
      add(e.name + ".angle", "rad");
      add(e.name + ".torque", "N m");
    }
  }
  for (const SpatialForce& f : m.spatial_forces) {
    if (f.type == SpatialForceType::Spring) {
      add(f.name + ".length", "m");
      add(f.name + ".force", "N");
    } else if (f.type == SpatialForceType::CompliantContact) {
      add(f.name + ".penetration", "m");
      add(f.name + ".normal_force", "N");
      add(f.name + ".friction", "N");
      add(f.name + ".slip", "m/s");
    } else if (f.type == SpatialForceType::RotationalSpring) {
      add(f.name + ".angle", "rad");
      add(f.name + ".torque", "N m");
    } else if (f.type == SpatialForceType::Bushing) {
      for (int i = 0; i < 3; ++i) add(fmt::format("{}.displacement[{}]", f.name, i), "m");
      for (int i = 0; i < 3; ++i) add(fmt::format("{}.rotation[{}]", f.name, i), "1");  // 2 sin(theta/2) n
    }
  }
  for (const Contact& c : m.contacts) add(c.name + ".gap", measures_angle(c.kind) ? "rad" : "m");
  for (const Contact& c : m.contacts) {
    if (c.persistent) add(c.name + ".force", measures_angle(c.kind) ? "N m" : "N");
    if (c.frictional()) add(c.name + ".friction", "N");
  }
  add("kinetic_energy", "J");
  add("potential_energy", "J");
  add("total_energy", "J");
  return {names, units};
}

}  // namespace saltus::multibody::detail
