#include "initial_checks.hpp"

#include <saltus/core/error.hpp>
#include <saltus/multibody/spatial.hpp>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cmath>
#include <limits>

#include "formulations.hpp"

namespace saltus::multibody::detail {

namespace {

std::string model_label(const Model& m) {
  return fmt::format("{}model '{}'", m.source.empty() ? "" : m.source + ": ", m.name);
}

/// Distances are judged against the size of the model's coordinates.
double length_scale(const MotionState<double>& st) { return 1.0 + st.q.cwiseAbs().maxCoeff(); }

}  // namespace

void check_partitioning_laws(const Model& model, const Partition& part) {
  const std::vector<std::string> names = model.coordinate_names();
  const Eigen::VectorXd p = model.nominal_parameters();
  for (size_t i = 0; i < model.contacts.size(); ++i) {
    const Contact& c = model.contacts[i];
    if (c.law != ImpactLaw::Partitioning) continue;
    for (const int k : partitioning_coordinates(model, c, p)) {
      if (part.slot(k) >= 0) continue;
      std::vector<std::string> independent;
      for (int j : part.independent) independent.push_back(names[static_cast<size_t>(j)]);
      throw InputError(fmt::format(
          "{}: contact '{}': the partitioning law reverses independent velocities, but '{}' is a "
          "dependent coordinate (independent: {}); list it in 'independent' or use law: impulse",
          model.locate(fmt::format("contacts[{}].law", i)), c.name, names[static_cast<size_t>(k)],
          fmt::join(independent, ", ")));
    }
  }
}

void check_initial_contacts(const Model& model, const MotionState<double>& start, const Eigen::VectorXd& p,
                            const std::vector<int>& active) {
  const double tolerance = 1e-10 * length_scale(start);
  const double rate_tolerance = 1e-10 * (1.0 + start.v.cwiseAbs().maxCoeff());
  for (size_t i = 0; i < model.contacts.size(); ++i) {
    const Contact& c = model.contacts[i];
    if (contains(active, static_cast<int>(i))) continue;  // a persistent contact closed at rest, pressed
    const ContactGeometry<double> g = contact_geometry<double>(model, c, start, p);
    const std::string at = model.locate(fmt::format("contacts[{}]", i));
    // A persistent contact closed at rest but not active is pulled away from its line.
    const bool leaves = g.gap.rate > rate_tolerance || (c.persistent && g.gap.rate >= -rate_tolerance);
    if (c.kind != ContactKind::PointLine) {
      const char* unit = measures_angle(c.kind) ? "rad" : "m";
      const bool plane = c.kind == ContactKind::PointPlane;
      if (g.gap.value < -tolerance) {
        throw InputError(fmt::format("{}: contact '{}' starts beyond its {} (gap {:.3g} {} < 0): start {} on the allowed "
                                     "side",
                                     at, c.name, plane ? "plane" : "stop", g.gap.value, unit,
                                     plane ? "the point" : "the joint"));
      }
      if (g.gap.value <= tolerance && !leaves) {
        throw InputError(fmt::format("{}: contact '{}' starts at its {} (gap {:.3g} {}) with the gap changing at {:.3g} {}/s, so it "
                                     "{} at t0: start {} off it or moving away from it{}",
                                     at, c.name, plane ? "plane" : "stop", g.gap.value, unit, g.gap.rate, unit,
                                     c.persistent ? "moves into it" : "rests on or moves into it",
                                     plane ? "the point" : "the joint", c.persistent ? "" : ", or make the contact persistent: true"));
      }
      continue;
    }
    if (g.gap.value < -tolerance) {
      throw InputError(fmt::format(
          "{}: contact '{}' starts penetrating: the point '{}' at ({:.9g}, {:.9g}) is {:.3g} m beyond "
          "its line (gap {:.3g} m < 0); start it on the allowed side (the normal points there)",
          at, c.name, c.point.label, g.point.value[0], g.point.value[1], -g.gap.value, g.gap.value));
    }
    if (g.gap.value > tolerance || leaves) continue;
    throw InputError(fmt::format(
        "{}: contact '{}' starts closed: the point '{}' is on its line (gap {:.3g} m) with normal "
        "velocity {:.3g} m/s, so it {} the line at t0: start the point above the line or moving away from it{}",
        at, c.name, c.point.label, g.gap.value, g.gap.rate, c.persistent ? "moves into" : "rests on or moves into",
        c.persistent ? "" : ", or make the contact persistent: true"));
  }
}

namespace {

/// The field that states a spatial body's initial velocity: `velocity`, or `angular_velocity`
/// where only that is given; for a body placed by a tree joint (a URDF link), that joint's
/// urdf_start velocity.
std::string stated_velocity_field(const Model& model, const SpatialBody& body) {
  if (body.tree_start) return "urdf_start." + body.tree_start->joint + ".velocity";
  const std::string field = "spatial.bodies." + body.name + ".velocity";
  return model.locations.count(field) != 0 ? field : "spatial.bodies." + body.name + ".angular_velocity";
}

/// The field where a spatial body's start is given: `spatial.bodies.NAME.<given>`; for a body
/// placed by a tree joint (a URDF link), that joint's urdf_start entry where the file has one,
/// else the `urdf` key that imports the robot (the link starts at the joint's zero).
std::string start_field(const Model& model, const SpatialBody& body, const std::string& given) {
  if (!body.tree_start) return "spatial.bodies." + body.name + "." + given;
  const std::string field = "urdf_start." + body.tree_start->joint;
  return model.locations.count(field) != 0 ? field : "urdf";
}

/// How a message names a spatial body: "link 'arm' (placed by joint 'elbow')" for a URDF link.
std::string body_label(const SpatialBody& body) {
  if (!body.tree_start) return body.name;
  return fmt::format("link '{}' (placed by joint '{}')", body.name, body.tree_start->joint);
}

}  // namespace

Eigen::Vector3d spatial_angular_velocity(const Eigen::VectorXd& q, const Eigen::VectorXd& v, int o) {
  return 2.0 * e_matrix<double>(Vec4<double>(q.segment<4>(o + 3))) * Vec4<double>(v.segment<4>(o + 3));
}

std::vector<std::string> initial_velocity_notes(const Model& model, const Partition& part,
                                                const MotionState<double>& start, const Eigen::VectorXd& p) {
  std::vector<std::string> notes;
  // The Euler parameters' rates from the stated angular velocities at the assembled orientation,
  // as the initial state takes them (Model::initial_velocities).
  const Eigen::VectorXd stated = model.initial_velocities<double>(p, start.q);
  const std::vector<std::string> names = model.coordinate_names();
  const ConstraintSet<double> cs = constraints<double>(model, MotionState<double>{start.t, start.q, stated}, p);
  const double violation = cs.phi.size() > 0 ? cs.rate(stated).cwiseAbs().maxCoeff() : 0.0;
  const double tolerance = 1e-9 * (1.0 + stated.cwiseAbs().maxCoeff());
  std::vector<std::string> independent;
  for (int j : part.independent) independent.push_back(names[static_cast<size_t>(j)] + "_dot");
  // A note where the derived velocities differ from the stated ones by more than the tolerance.
  auto note = [&](const std::string& field, double change, const char* what) {
    if (change <= tolerance) return;
    notes.push_back(fmt::format(
        "{}: the stated initial {} the velocity constraints (max |Phi_q v + Phi_t| = {:.3g}); Saltus keeps the "
        "independent velocities ({}) and derives the others, which changes {} by up to {:.3g}",
        model.locate(field), what, violation, fmt::join(independent, ", "),
        std::string(what).find(" and ") != std::string::npos ? "them" : "this one", change));
  };
  auto change_in = [&](int offset, int count) {
    return (start.v.segment(offset, count) - stated.segment(offset, count)).cwiseAbs().maxCoeff();
  };
  for (size_t i = 0; i < model.points.size(); ++i) {
    if (!model.points[i].velocity_given) continue;
    note("points." + model.points[i].name + ".velocity", change_in(model.point_offset(static_cast<int>(i)), 2),
         "velocity violates");
  }
  // A planar body's velocity and angular velocity, each where stated: an unstated one is not
  // the user's (0 where its coordinate is independent, else derived).
  for (size_t b = 0; b < model.bodies.size(); ++b) {
    const Body& body = model.bodies[b];
    const int o = model.body_offset(static_cast<int>(b));
    if (body.velocity_given) note("bodies." + body.name + ".velocity", change_in(o, 2), "velocity violates");
    if (body.angular_velocity_given) {
      note("bodies." + body.name + ".angular_velocity", change_in(o + 2, 1), "angular velocity violates");
    }
  }
  // A spatial body's velocity and angular velocity (its Euler parameters' rates, 2 E e-dot in
  // ground axes, compared as the angular velocity the file states) [m/s or rad/s].
  for (size_t b = 0; b < model.spatial_bodies.size(); ++b) {
    if (!model.spatial_bodies[b].velocity_given) continue;
    const int o = model.spatial_offset(static_cast<int>(b));
    const double change = std::max(
        change_in(o, 3),
        (spatial_angular_velocity(start.q, start.v, o) - spatial_angular_velocity(start.q, stated, o)).cwiseAbs().maxCoeff());
    const SpatialBody& body = model.spatial_bodies[b];
    note(stated_velocity_field(model, body), change,
         body.tree_start ? "joint velocity (with its parents' motion) violates"
                         : "velocity and angular velocity (an unstated one is 0) violate");
  }
  return notes;
}

std::vector<std::string> assembly_correction_notes(const Model& model, const Eigen::VectorXd& q,
                                                   const Eigen::VectorXd& p) {
  std::vector<std::string> notes;
  const Eigen::VectorXd given = model.initial_positions<double>(p);
  const double size = model.extent(given, p);
  const std::vector<std::string> names = model.coordinate_names();
  const int n_point_coordinates = 2 * static_cast<int>(model.points.size());
  const int first_spatial = model.spatial_offset(0);
  for (size_t b = 0; b < model.spatial_bodies.size(); ++b) {
    // The rotation between the given and the assembled orientation: 2 acos |<e_given, e>|.
    const int o = model.spatial_offset(static_cast<int>(b));
    const double cosine = std::min(1.0, std::abs(given.segment<4>(o + 3).dot(q.segment<4>(o + 3))) /
                                            (given.segment<4>(o + 3).norm() * q.segment<4>(o + 3).norm()));
    const double turn = 2.0 * std::acos(cosine);
    if (!(turn > kAssemblyAngleCorrection)) continue;
    // The orientation field where the file has one (an unstated one is aligned with the ground).
    const SpatialBody& body = model.spatial_bodies[b];
    const std::string stated = start_field(model, body, "orientation");
    const std::string field = model.locations.count(stated) != 0 || body.tree_start
                                  ? stated
                                  : "spatial.bodies." + body.name;
    notes.push_back(fmt::format(
        "{}: assembly turned the orientation of {} by {:.3g} rad (more than 1 % of a turn) to satisfy the "
        "constraints: the given orientation is far from an assembled configuration, so the mechanism may be "
        "assembled on another branch than the one drawn",
        model.locate(field), body_label(body), turn));
  }
  for (Eigen::Index k = 0; k < q.size(); ++k) {
    const bool spatial = k >= first_spatial;
    // A spatial body's Euler parameters: the orientation's correction is not a coordinate's.
    if (spatial && (k - first_spatial) % 7 >= 3) continue;
    const bool angle = !spatial && k >= n_point_coordinates && (k - n_point_coordinates) % 3 == 2;
    const double limit = angle ? kAssemblyAngleCorrection : kAssemblyCorrectionFraction * size;
    const double correction = std::abs(q[k] - given[k]);
    if (!(correction > limit) || (!angle && size == 0.0)) continue;
    const std::string& name = names[static_cast<size_t>(k)];
    const std::string owner = name.substr(0, name.rfind('.'));
    const SpatialBody* body =
        spatial ? &model.spatial_bodies[static_cast<size_t>((k - first_spatial) / 7)] : nullptr;
    const std::string field = spatial  ? start_field(model, *body, "position")
                              : angle ? "bodies." + owner + ".angle"
                                      : (k < n_point_coordinates ? "points." : "bodies.") + owner + ".position";
    notes.push_back(fmt::format(
        "{}: assembly moved {}{} from {:.6g} to {:.6g} (by {:.3g} {}, more than {}) to satisfy the constraints: "
        "the given position is far from an assembled configuration, so the mechanism may be assembled on another "
        "branch than the one drawn",
        model.locate(field), name, body && body->tree_start ? " of " + body_label(*body) : std::string(), given[k],
        q[k], correction, angle ? "rad" : "m",
        angle ? std::string("1 % of a turn") : fmt::format("1 % of the model's size, {:.3g} m", size)));
  }
  return notes;
}

void report_initial_state_failure(const Model& model, const std::string& what) {
  if (!model.independent.empty() && what.find("[Phi_q; B]") != std::string::npos) {
    const std::vector<std::string> names = model.coordinate_names();
    std::vector<std::string> declared;
    for (int k : model.independent) declared.push_back(names[static_cast<size_t>(k)]);
    throw InputError(fmt::format("{}: the coordinates declared independent ({}) do not parametrize the "
                                 "mechanism at its start: {} (choose coordinates that move freely there, or leave "
                                 "'independent' out and Saltus chooses them)",
                                 model.locate("independent"), fmt::join(declared, ", "), what));
  }
  throw InputError(fmt::format("{}: {}", model.source.empty() ? "model '" + model.name + "'" : model.source, what));
}

void report_singular_start(const Model& model, const std::string& formulation, const std::string& what,
                           const Eigen::VectorXd& p) {
  const Eigen::VectorXd q = model.initial_positions<double>(p);
  const Eigen::MatrixXd M(mass_matrix<double>(model, q, p));
  const std::vector<std::string> names = model.coordinate_names();
  std::vector<std::string> massless;
  std::string at = model_label(model);
  // A spatial body's mass block is singular along its Euler parameters (the normalization row
  // removes that direction): only planar coordinates can lack mass.
  for (int k = 0; k < std::min<int>(static_cast<int>(M.rows()), model.spatial_offset(0)); ++k) {
    if (M.row(k).cwiseAbs().maxCoeff() != 0.0) continue;
    if (massless.empty()) {
      const std::string& name = names[static_cast<size_t>(k)];
      const std::string owner = name.substr(0, name.rfind('.'));
      const bool body = k >= 2 * static_cast<int>(model.points.size());
      at = model.locate((body ? "bodies." : "points.") + owner) + ": model '" + model.name + "'";
    }
    massless.push_back(names[static_cast<size_t>(k)]);
  }
  const std::string hint =
      massless.empty() ? ""
                       : fmt::format("; coordinates without mass: {} (give each moving point a point_mass "
                                     "or a bar with mass, unless constraints fix it)",
                                     fmt::join(massless, ", "));
  throw InputError(fmt::format("{}: the {} formulation cannot start at t0: {}{}", at, formulation,
                               what, hint));
}

}  // namespace saltus::multibody::detail
