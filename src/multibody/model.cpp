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

Eigen::VectorXd Model::initial_positions() const {
  Eigen::VectorXd q(n_coordinates());
  for (size_t i = 0; i < points.size(); ++i) {
    q[point_offset(static_cast<int>(i))] = points[i].x0;
    q[point_offset(static_cast<int>(i)) + 1] = points[i].y0;
  }
  for (size_t b = 0; b < bodies.size(); ++b) {
    const int o = body_offset(static_cast<int>(b));
    q.segment(o, 3) << bodies[b].x0, bodies[b].y0, bodies[b].theta0;
  }
  return q;
}

Eigen::VectorXd Model::initial_velocities() const {
  Eigen::VectorXd v(n_coordinates());
  for (size_t i = 0; i < points.size(); ++i) {
    v[point_offset(static_cast<int>(i))] = points[i].vx0;
    v[point_offset(static_cast<int>(i)) + 1] = points[i].vy0;
  }
  for (size_t b = 0; b < bodies.size(); ++b) {
    const int o = body_offset(static_cast<int>(b));
    v.segment(o, 3) << bodies[b].vx0, bodies[b].vy0, bodies[b].omega0;
  }
  return v;
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
