#include "initial_checks.hpp"

#include <saltus/core/error.hpp>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cmath>

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
    const double normal[2] = {value_of<double>(c.normal_x, p), value_of<double>(c.normal_y, p)};
    const int o = model.point_offset(c.point.index);
    for (int k = 0; k < 2; ++k) {
      if (normal[k] == 0.0 || part.slot(o + k) >= 0) continue;
      std::vector<std::string> independent;
      for (int j : part.independent) independent.push_back(names[static_cast<size_t>(j)]);
      throw InputError(fmt::format(
          "{}: contact '{}': the partitioning law reverses independent velocities, but '{}' is a "
          "dependent coordinate (independent: {}); list it in 'independent' or use law: impulse",
          model.locate(fmt::format("contacts[{}].law", i)), c.name, names[static_cast<size_t>(o + k)],
          fmt::join(independent, ", ")));
    }
  }
}

void check_initial_contacts(const Model& model, const MotionState<double>& start, const Eigen::VectorXd& p) {
  const double tolerance = 1e-10 * length_scale(start);
  for (size_t i = 0; i < model.contacts.size(); ++i) {
    const Contact& c = model.contacts[i];
    const ContactGeometry<double> g = contact_geometry<double>(model, c, start, p);
    const std::string at = model.locate(fmt::format("contacts[{}]", i));
    if (g.gap < -tolerance) {
      throw InputError(fmt::format(
          "{}: contact '{}' starts penetrating: the point '{}' at ({:.9g}, {:.9g}) is {:.3g} m beyond "
          "its line (gap {:.3g} m < 0); start it on the allowed side (the normal points there)",
          at, c.name, c.point.label, g.point.value[0], g.point.value[1], -g.gap, g.gap));
    }
    if (g.gap > tolerance) continue;
    const double normal_velocity = g.normal.dot(g.point.rate);
    if (normal_velocity > 1e-10 * (1.0 + start.v.cwiseAbs().maxCoeff())) continue;  // leaves the line
    throw InputError(fmt::format(
        "{}: contact '{}' starts closed: the point '{}' is on its line (gap {:.3g} m) with normal "
        "velocity {:.3g} m/s, so it rests on or moves into the line at t0; Saltus has no persistent "
        "contact yet: start the point above the line or moving away from it",
        at, c.name, c.point.label, g.gap, normal_velocity));
  }
}

std::vector<std::string> initial_velocity_notes(const Model& model, const Partition& part,
                                                const MotionState<double>& start, const Eigen::VectorXd& p) {
  std::vector<std::string> notes;
  const Eigen::VectorXd stated = model.initial_velocities();
  const std::vector<std::string> names = model.coordinate_names();
  const ConstraintSet<double> cs = constraints<double>(model, MotionState<double>{start.t, start.q, stated}, p);
  const double violation = cs.phi.size() > 0 ? cs.rate(stated).cwiseAbs().maxCoeff() : 0.0;
  const double tolerance = 1e-9 * (1.0 + stated.cwiseAbs().maxCoeff());
  auto note = [&](const std::string& field, int offset, int count) {
    double change = 0.0;
    for (int k = 0; k < count; ++k) change = std::max(change, std::abs(start.v[offset + k] - stated[offset + k]));
    if (change <= tolerance) return;
    std::vector<std::string> independent;
    for (int j : part.independent) independent.push_back(names[static_cast<size_t>(j)] + "_dot");
    notes.push_back(fmt::format(
        "{}: the stated initial velocity violates the velocity constraints (max |Phi_q v + Phi_t| = "
        "{:.3g}); Saltus keeps the independent velocities ({}) and derives the others, which changes "
        "this one by up to {:.3g}",
        model.locate(field), violation, fmt::join(independent, ", "), change));
  };
  for (size_t i = 0; i < model.points.size(); ++i) {
    if (model.points[i].velocity_given) note("points." + model.points[i].name + ".velocity", model.point_offset(static_cast<int>(i)), 2);
  }
  for (size_t b = 0; b < model.bodies.size(); ++b) {
    if (model.bodies[b].velocity_given) note("bodies." + model.bodies[b].name + ".velocity", model.body_offset(static_cast<int>(b)), 3);
  }
  return notes;
}

void report_singular_start(const Model& model, const std::string& formulation, const std::string& what,
                           const Eigen::VectorXd& p) {
  const Eigen::MatrixXd M = mass_matrix<double>(model, p);
  const std::vector<std::string> names = model.coordinate_names();
  std::vector<std::string> massless;
  std::string at = model_label(model);
  for (int k = 0; k < M.rows(); ++k) {
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
