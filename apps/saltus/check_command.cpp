#include "check_command.hpp"

#include <saltus/examples/builtin.hpp>

#include "cli_common.hpp"

#include <saltus/equations/equation_file.hpp>
#include <saltus/multibody/check.hpp>
#include <saltus/multibody/formulation.hpp>
#include <saltus/multibody/model_file.hpp>
#include <saltus/multibody/shipped_models.hpp>
#include <saltus/solvers/dae_transfer.hpp>
#include <saltus/solvers/simulate.hpp>

#include <fmt/format.h>
#include <fmt/ostream.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <vector>

namespace saltus::cli {

namespace {

std::string join(const std::vector<std::string>& items) {
  std::string s;
  for (const auto& item : items) s += (s.empty() ? "" : ", ") + item;
  return s.empty() ? std::string("none") : s;
}

/// `saltus check FILE`: what the model describes and how it starts (docs/model-files.md).
void print_check(std::ostream& out, const multibody::ModelCheck& c) {
  fmt::print(out, "Model '{}' ({}), formulation {}\n", c.name, c.source, c.formulation);
  const std::string spatial = c.n_spatial_bodies > 0 ? fmt::format(", {} spatial bodies", c.n_spatial_bodies) : "";
  fmt::print(out, "Coordinates ({}; {} points, {} bodies{}): {}\n", c.coordinates.size(), c.n_points, c.n_bodies,
             spatial, join(c.coordinates));
  fmt::print(out, "Constraints ({} rows):", c.constraint_rows);
  if (c.constraints.empty()) fmt::print(out, " none");
  for (const auto& k : c.constraints) fmt::print(out, "\n  {} ({} row{})", k.element, k.rows, k.rows == 1 ? "" : "s");
  fmt::print(out, "\nDegrees of freedom: {} (rank of Phi_q at the initial configuration: {} of {} rows; redundant "
                  "constraints: {})\n",
             c.degrees_of_freedom, c.rank, c.constraint_rows, c.constraint_rows - c.rank);
  fmt::print(out, "Independent coordinates: {}\n", join(c.independent));
  fmt::print(out, "Parameters:{}\n", c.parameters.empty() ? " none" : "");
  for (const auto& p : c.parameters) {
    fmt::print(out, "  {} = {:g}{}: used by {}\n", p.name, p.value, p.description.empty() ? "" : " (" + p.description + ")",
               join(p.used_by));
  }
  fmt::print(out, "Contacts:{}\n", c.contacts.empty() ? " none" : "");
  for (const auto& k : c.contacts) {
    fmt::print(out, "  {}: {}, initial gap {:.6g} {}, normal velocity {:.6g} {}/s{}\n", k.name, k.what, k.gap + 0.0,
               k.unit, k.normal_velocity + 0.0, k.unit,  // + 0.0: no "-0"
               k.persistence.empty() ? "" : "; " + k.persistence);
  }
  if (!c.compliant_contacts.empty()) fmt::print(out, "Compliant contacts:\n");
  for (const auto& k : c.compliant_contacts) {
    fmt::print(out, "  {}: sphere of radius {:g} m on '{}', initial penetration {:.6g} m, normal force {:.6g} N\n",
               k.name, k.radius, k.body, k.penetration + 0.0, k.normal_force + 0.0);
  }
  if (!c.spatial_starts.empty()) fmt::print(out, "Spatial bodies at the start (assembled; ground axes):\n");
  for (const auto& b : c.spatial_starts) {
    // Rounding residue below 1e-12 of the vector's largest entry prints as 0 (+ 0.0: no "-0").
    const auto vec = [](const std::array<double, 3>& a) {
      const double size = std::max({std::abs(a[0]), std::abs(a[1]), std::abs(a[2])});
      const auto shown = [size](double x) { return std::abs(x) < 1e-12 * size ? 0.0 : x + 0.0; };
      return fmt::format("({:.6g}, {:.6g}, {:.6g})", shown(a[0]), shown(a[1]), shown(a[2]));
    };
    const std::string joint =
        b.joint.empty()        ? ""
        : b.joint_unit.empty() ? fmt::format("; fixed joint '{}'", b.joint)
                               : fmt::format("; joint '{}' given the start {:.6g} {}, rate {:.6g} {}/s", b.joint,
                                             b.joint_position + 0.0, b.joint_unit, b.joint_rate + 0.0, b.joint_unit);
    fmt::print(out, "  {}: position {} m, turned {:.6g} rad about {}, velocity {} m/s, angular velocity {} rad/s{}\n",
               b.name, vec(b.position), b.turn, vec(b.axis), vec(b.velocity), vec(b.angular_velocity), joint);
  }
  fmt::print(out, "Assembly: residual max |Phi| = {:.3g}; largest correction of a given position {:.3g} ({})\n",
             c.assembly_residual, c.largest_correction, c.largest_correction_coordinate);
  for (const auto& remark : c.remarks) fmt::print(out, "Note: {}\n", remark);
  for (const auto& note : c.notes) fmt::print(out, "Warning: {}\n", note);
  fmt::print(out, "OK: the model assembles and starts\n");
}

const char* direction_name(Direction d) {
  switch (d) {
    case Direction::Rising: return "rising";
    case Direction::Falling: return "falling";
    case Direction::Either: return "either";
  }
  return "either";
}

/// The modes an event is watched in, and where it leads from each.
std::string event_summary(const Problem& pb, const Event& e) {
  std::vector<std::string> watched, leads;
  for (int m = 0; m < pb.n_modes(); ++m) {
    if (!e.active_in(m)) continue;
    watched.push_back(pb.mode(m).name);
    const int next = e.mode_after(m);
    if (next != m) leads.push_back(pb.mode(m).name + " -> " + pb.mode(next).name);
  }
  std::string s = e.time_event ? fmt::format("at t = {:g}, watched in {}", -e.guard.real(0.0, Eigen::VectorXd::Zero(pb.n_states()), pb.nominal_parameters()), join(watched))
                               : fmt::format("{}, watched in {}", direction_name(e.direction), join(watched));
  if (!leads.empty()) s += ", switches " + join(leads);
  if (e.jump) s += ", with a jump";
  if (e.transition) s += ", with an implicit transition";
  if (e.rest_event >= 0) {
    const Event& rest = pb.event(e.rest_event);
    s += fmt::format(", comes to rest in {}", pb.mode(rest.target_mode).name);
  }
  return s;
}

/// An equation model: its states with their initial values, parameters, modes, events, costs.
/// A DAE (docs/dae.md) shows its consistent initial values and which states are algebraic.
void print_equation_check(std::ostream& out, const std::string& file, const Problem& pb) {
  const Eigen::VectorXd p = pb.nominal_parameters();
  pb.check_domains(p);
  check_start(pb, p, pb.options());  // what a run refuses before it integrates
  const double t0 = pb.options().t0;
  Eigen::VectorXd x0(pb.n_states());
  pb.initial_state().real(p, x0);
  const int mode = pb.initial_mode_for(x0, p);
  const bool dae = runs_on_idas(pb, pb.options());
  Eigen::VectorXd x = x0, xdot(pb.n_states());
  if (dae) {
    // The start a run makes: the algebraic entries of x0 are first guesses (check_start solved
    // this already, so it succeeds).
    TangentWorkspace ws;
    const ConsistentPoint start =
        consistent_point(pb, mode, t0, x0, Eigen::VectorXd::Zero(pb.n_states()), p, "at the start", ws);
    x = start.x;
    xdot = start.xdot;
  } else {
    pb.mode(mode).rhs.real(t0, x0, p, xdot);
  }
  fmt::print(out, "Model '{}' ({}), equation model{}\n", pb.name(), file, dae ? ", a DAE (runs on IDAS)" : "");
  fmt::print(out, "States ({}):\n", pb.n_states());
  for (int i = 0; i < pb.n_states(); ++i) {
    fmt::print(out, "  {} = {:.10g} at t0 = {:g}, rate {:.6g}{}\n", pb.state_names()[static_cast<size_t>(i)],
               x[i] + 0.0, t0, xdot[i] + 0.0,  // + 0.0: no "-0"
               pb.is_algebraic(i) ? fmt::format(", algebraic (first guess {:.10g})", x0[i] + 0.0) : "");
  }
  if (dae) {
    std::vector<std::string> algebraic;
    for (int i = 0; i < pb.n_states(); ++i) {
      if (pb.is_algebraic(i)) algebraic.push_back(pb.state_names()[static_cast<size_t>(i)]);
    }
    fmt::print(out, "Algebraic states: {}{}\n", join(algebraic),
               algebraic.empty() ? "" : fmt::format(" (values at t0 made consistent with the residual of mode '{}')",
                                                    pb.mode(mode).name));
  }
  fmt::print(out, "Parameters:{}\n", pb.n_parameters() == 0 ? " none" : "");
  for (const auto& q : pb.parameters()) {
    fmt::print(out, "  {} = {:g}{}\n", q.name, q.nominal, q.description.empty() ? "" : ": " + q.description);
  }
  std::vector<std::string> modes;
  for (int m = 0; m < pb.n_modes(); ++m) modes.push_back(pb.mode(m).name + (pb.mode(m).implicit() ? " (residual)" : ""));
  fmt::print(out, "Modes: {}; initial mode {}\n", join(modes), pb.mode(mode).name);
  fmt::print(out, "Events:{}\n", pb.n_events() == 0 ? " none" : "");
  for (int k = 0; k < pb.n_events(); ++k) {
    const Event& e = pb.event(k);
    if (e.watched) fmt::print(out, "  {}: {}\n", e.name, event_summary(pb, e));
  }
  fmt::print(out, "Costs: {}\n", join(pb.cost_names()));
  fmt::print(out, "Horizon: [{:g}, {:g}]\n", pb.options().t0, pb.options().tf);
  fmt::print(out, "OK: the model loads and starts\n");
}

/// `model` with the --param values as its parameters' nominal values, checked as a run checks
/// them (the problem a run would make takes them first: unknown names, bounds, the start).
multibody::Model with_overrides(multibody::Model model, const std::vector<std::string>& params) {
  if (params.empty()) return model;
  Problem pb = multibody::make_problem(model, model.formulation);
  apply_parameter_overrides(pb, params);
  const Eigen::VectorXd values = pb.nominal_parameters();
  for (multibody::Parameter& parameter : model.parameters) parameter.nominal = values[pb.parameter_index(parameter.name)];
  return model;
}

}  // namespace

int run_check(const std::string& file, const std::vector<std::string>& params, std::ostream& out) {
  if (const multibody::ShippedModel* shipped = multibody::shipped_model(file)) {
    print_check(out, multibody::check_model(with_overrides(multibody::load_shipped_model(*shipped), params)));
    return 0;
  }
  if (!multibody::is_model_file(file)) {
    const auto& builtins = examples::builtin_examples();
    if (std::any_of(builtins.begin(), builtins.end(), [&](const examples::ExampleInfo& e) { return e.name == file; })) {
      std::vector<std::string> shipped;
      for (const auto& m : multibody::shipped_models()) shipped.push_back(m.name);
      throw UsageError(fmt::format("'{}' is a built-in example defined in C++, with no model file to check: check takes "
                                   "a model file (*.yaml, *.yml or a URDF robot *.urdf) or a shipped model's name ({})",
                                   file, fmt::join(shipped, ", ")));
    }
    throw UsageError(fmt::format("check takes a model file (*.yaml, *.yml or a URDF robot *.urdf) or a shipped "
                                 "model's name (saltus list), got '{}'",
                                 file));
  }
  if (equations::is_equation_file(file)) {
    Problem pb = equations::load_equation_problem(file);
    apply_parameter_overrides(pb, params);
    print_equation_check(out, file, pb);
  } else {
    print_check(out, multibody::check_model(with_overrides(multibody::load_model(file), params)));
  }
  return 0;
}

}  // namespace saltus::cli
