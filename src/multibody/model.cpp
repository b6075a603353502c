#include <saltus/multibody/model.hpp>

#include <saltus/core/error.hpp>

#include <fmt/format.h>

#include <cmath>
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

bool CostTerm::needs_acceleration() const {
  return signal == Signal::AX || signal == Signal::AY || signal == Signal::Alpha ||
         signal == Signal::Reaction;
}

int Model::n_constraints() const {
  int m = 0;
  for (const Element& e : elements) m += e.n_constraints();
  return m;
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
  return names;
}

Eigen::VectorXd Model::nominal_parameters() const {
  Eigen::VectorXd p(static_cast<Eigen::Index>(parameters.size()));
  for (size_t k = 0; k < parameters.size(); ++k) p[static_cast<Eigen::Index>(k)] = parameters[k].nominal;
  return p;
}

namespace {

/// q-shaped vector from per-point (x, y) and per-body (x, y, theta) initial data.
template <class PointData, class BodyData>
Eigen::VectorXd gather(const Model& m, PointData point_data, BodyData body_data) {
  Eigen::VectorXd q(m.n_coordinates());
  for (size_t i = 0; i < m.points.size(); ++i) q.segment(m.point_offset(static_cast<int>(i)), 2) = point_data(m.points[i]);
  for (size_t b = 0; b < m.bodies.size(); ++b) q.segment(m.body_offset(static_cast<int>(b)), 3) = body_data(m.bodies[b]);
  return q;
}

}  // namespace

Eigen::VectorXd Model::initial_positions() const {
  return gather(*this, [](const Point& p) { return Eigen::Vector2d(p.x0, p.y0); },
                [](const Body& b) { return Eigen::Vector3d(b.x0, b.y0, b.theta0); });
}

Eigen::VectorXd Model::initial_velocities() const {
  return gather(*this, [](const Point& p) { return Eigen::Vector2d(p.vx0, p.vy0); },
                [](const Body& b) { return Eigen::Vector3d(b.vx0, b.vy0, b.omega0); });
}

namespace {

std::string where(const Model& m) { return m.source.empty() ? "model '" + m.name + "'" : m.source; }

bool is_rod_end(const PointRef& r) { return r.kind != PointRef::Kind::Body; }

}  // namespace

void Model::validate() const {
  if (n_coordinates() == 0) throw InputError(fmt::format("{}: the model has no points and no bodies", where(*this)));
  if (!(tf > t0)) throw InputError(fmt::format("{}: the horizon [{}, {}] is empty", where(*this), t0, tf));
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
  for (const Element& e : elements) {
    if (e.type == ElementType::Bar && !(is_rod_end(e.a) && is_rod_end(e.b))) {
      // A rod's natural-coordinate mass matrix needs both ends as points or ground; a bar
      // between body points is a massless distance constraint.
      if (e.mass.is_parameter() || e.mass.constant != 0.0) {
        throw InputError(fmt::format("{}: bar '{}' has a mass but an end on a body; give the mass to "
                                     "the body instead",
                                     where(*this), e.name));
      }
    }
  }
  for (const CostSpec& c : costs) {
    for (const CostTerm& t : c.terminal) {
      if (t.needs_acceleration()) {
        throw InputError(fmt::format("{}: cost '{}': a terminal term cannot use accelerations or "
                                     "reactions (they are not functions of the final state)",
                                     where(*this), c.name));
      }
    }
  }
}

std::string to_string(FormulationType type) {
  switch (type) {
    case FormulationType::Penalty:
      return "penalty";
    case FormulationType::Index1:
      return "index1";
    case FormulationType::Maggi:
      return "maggi";
  }
  return "?";
}

FormulationType parse_formulation(const std::string& name) {
  if (name == "penalty") return FormulationType::Penalty;
  if (name == "index1") return FormulationType::Index1;
  if (name == "maggi") return FormulationType::Maggi;
  throw InputError(fmt::format("unknown formulation '{}' (choose penalty, index1 or maggi)", name));
}

}  // namespace saltus::multibody
