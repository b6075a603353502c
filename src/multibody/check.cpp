#include <saltus/multibody/check.hpp>
#include <saltus/multibody/formulation.hpp>

#include <Eigen/LU>

#include <cmath>
#include <tuple>

#include "formulations.hpp"
#include "initial_checks.hpp"
#include "position_analysis.hpp"

namespace saltus::multibody {

namespace {

void describe_structure(const Model& model, ModelCheck& out) {
  out.name = model.name;
  out.source = model.source;
  out.formulation = to_string(model.formulation.type);
  out.coordinates = model.coordinate_names();
  out.n_points = static_cast<int>(model.points.size());
  out.n_bodies = static_cast<int>(model.bodies.size());
  for (size_t i = 0; i < model.elements.size(); ++i) {
    const int rows = model.elements[i].n_constraints();
    if (rows == 0) continue;
    out.constraints.push_back({model.describe_element(static_cast<int>(i)), rows});
    out.constraint_rows += rows;
  }
  out.n_spatial_bodies = static_cast<int>(model.spatial_bodies.size());
  int first = 0;
  for (const SpatialJoint& j : model.spatial_joints) {
    std::vector<int> left_out;
    for (const int r : model.redundant_joint_rows) {
      if (r >= first && r < first + j.n_constraints()) left_out.push_back(r - first);
    }
    first += j.n_constraints();
    const std::string redundant =
        left_out.empty() ? ""
                         : fmt::format(", redundant row{} {} left out", left_out.size() == 1 ? "" : "s", fmt::join(left_out, ", "));
    out.constraints.push_back({"joint '" + j.name + "'" + redundant, j.n_constraints() - static_cast<int>(left_out.size())});
    out.constraint_rows += j.n_constraints() - static_cast<int>(left_out.size());
  }
  for (const SpatialBody& b : model.spatial_bodies) {
    out.constraints.push_back({"normalization of spatial body '" + b.name + "'", 1});
    out.constraint_rows += 1;
  }
}

void describe_parameters(const Model& model, ModelCheck& out) {
  for (const Parameter& par : model.parameters) {
    ModelCheck::ParameterUse use{par.name, par.nominal, {}, par.description};
    for (const std::string& field : par.used_by) {
      const auto at = model.locations.find(field);
      use.used_by.push_back(at == model.locations.end() ? field : field + " (" + at->second + ")");
    }
    out.parameters.push_back(std::move(use));
  }
}

/// Each spatial body's assembled pose and velocity, and a URDF link's joint start.
void describe_spatial_starts(const Model& model, const MotionState<double>& start, const Eigen::VectorXd& p,
                             ModelCheck& out) {
  for (size_t b = 0; b < model.spatial_bodies.size(); ++b) {
    const SpatialBody& body = model.spatial_bodies[b];
    const int o = model.spatial_offset(static_cast<int>(b));
    ModelCheck::SpatialStart s;
    s.name = body.name;
    Eigen::Vector4d e = start.q.segment<4>(o + 3).normalized();
    if (e[0] < 0.0) e = -e;  // the same rotation, turned by at most pi
    // Rounding residue in (e1, e2, e3) is no turn (it printed "turned 1e-17 rad about (0.6, 0.8, 0)").
    const double sine = e.tail<3>().norm();  // sin(turn / 2)
    if (sine > 1e-12) {
      s.turn = 2.0 * std::atan2(sine, e[0]);
      const Eigen::Vector3d axis = e.tail<3>() / sine;
      s.axis = {axis[0], axis[1], axis[2]};
    }
    const Eigen::Vector3d omega = detail::spatial_angular_velocity(start.q, start.v, o);
    for (int k = 0; k < 3; ++k) {
      s.position[static_cast<size_t>(k)] = start.q[o + k];
      s.velocity[static_cast<size_t>(k)] = start.v[o + k];
      s.angular_velocity[static_cast<size_t>(k)] = omega[k];
    }
    if (body.tree_start) {
      using Motion = SpatialBody::TreeStart::Motion;
      s.joint = body.tree_start->joint;
      if (body.tree_start->motion != Motion::Fixed) {
        s.joint_unit = body.tree_start->motion == Motion::Turn ? "rad" : "m";
        std::tie(s.joint_position, s.joint_rate) = model.tree_start_position<double>(*body.tree_start, p);
      }
    }
    out.spatial_starts.push_back(std::move(s));
  }
}

/// Assembles the initial configuration as the formulations do and measures it: rank, residual,
/// the largest correction of a given coordinate, and the contacts' gaps and normal velocities.
void describe_start(const Model& model, const std::vector<int>& active, ModelCheck& out) {
  const Eigen::VectorXd p = model.nominal_parameters();
  const detail::Partition part = detail::choose_partition(model, p);
  for (const int k : part.independent) out.independent.push_back(out.coordinates[static_cast<size_t>(k)]);
  const Eigen::VectorXd given = model.initial_positions();
  const Eigen::VectorXd q = detail::solve_positions(model, part, model.t0, detail::select(part, given), p, given,
                                                    model.formulation);
  const VectorX<double> v = detail::velocities_from_independent<double>(
      model, part, MotionState<double>{model.t0, q, Eigen::VectorXd::Zero(part.n)},
      detail::select(part, model.initial_velocities()), p);
  const MotionState<double> start{model.t0, q, v};
  describe_spatial_starts(model, start, p, out);
  const ConstraintSet<double> cs = constraints<double>(model, start, p);
  out.rank = cs.jac.rows() > 0 ? static_cast<int>(Eigen::FullPivLU<Eigen::MatrixXd>(cs.dense_real_jacobian()).rank()) : 0;
  out.degrees_of_freedom = part.n - out.rank;
  out.assembly_residual = cs.phi.size() > 0 ? cs.phi.cwiseAbs().maxCoeff() : 0.0;
  for (Eigen::Index k = 0; k < q.size(); ++k) {
    const double correction = std::abs(q[k] - given[k]);
    if (correction > out.largest_correction || out.largest_correction_coordinate.empty()) {
      out.largest_correction = correction;
      out.largest_correction_coordinate = out.coordinates[static_cast<size_t>(k)];
    }
  }
  for (size_t i = 0; i < model.contacts.size(); ++i) {
    const Contact& c = model.contacts[i];
    const detail::ContactGeometry<double> g = detail::contact_geometry<double>(model, c, start, p);
    const std::string point = c.point.kind == PointRef::Kind::Body ? fmt::format("a point of body '{}'", c.point.label)
                                                                     : fmt::format("point '{}'", c.point.label);
    const std::string what = c.kind == ContactKind::PointLine    ? point
                             : c.kind == ContactKind::PointPlane ? fmt::format("a point of '{}'", model.spatial_bodies[static_cast<size_t>(c.spatial_body)].name)
                             : measures_angle(c.kind)             ? std::string("angle stop")
                                                                  : std::string("travel stop");
    const std::string persistence = !c.persistent ? ""
                                    : detail::contains(active, static_cast<int>(i)) ? "persistent, starts active"
                                                                                    : "persistent, starts open";
    out.contacts.push_back(
        {c.name, what, measures_angle(c.kind) ? "rad" : "m", g.gap.value, g.gap.rate, persistence});
  }
  for (const SpatialForce& f : model.spatial_forces) {
    if (f.type != SpatialForceType::CompliantContact) continue;
    const CompliantContactState<double> s = compliant_contact_state<double>(model, f, start, p);
    out.compliant_contacts.push_back({f.name, model.spatial_bodies[static_cast<size_t>(f.body_a)].name,
                                      value_of<double>(f.radius, p), s.penetration, s.normal_force});
  }
}

}  // namespace

ModelCheck check_model(const Model& given) {
  const Problem pb = make_problem(given);  // every check a run makes before integrating
  const Model model = detail::with_redundant_joint_rows_left_out(given, given.nominal_parameters());
  ModelCheck out;
  out.notes = pb.notes();
  out.remarks = pb.remarks();
  describe_structure(model, out);
  describe_parameters(model, out);
  // The persistent contacts that start active: the run's own initial state says it (with the
  // regimes that friction settles), read from its flags.
  std::vector<int> active;
  Eigen::VectorXd x0(pb.n_states());
  pb.initial_state().real(pb.nominal_parameters(), x0);
  for (size_t i = 0; i < model.contacts.size(); ++i) {
    if (model.contacts[i].persistent && x0[pb.state_index(model.contacts[i].name + ".active")] > 0.5) {
      active.push_back(static_cast<int>(i));
    }
  }
  describe_start(model, active, out);
  return out;
}

}  // namespace saltus::multibody
