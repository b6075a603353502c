#include <saltus/io/json_output.hpp>

#include <saltus/io/atomic_file.hpp>
#include <saltus/io/report.hpp>

#include <saltus/core/error.hpp>

#include <fmt/format.h>

#include <cmath>
#include <fstream>

#include "json_values.hpp"

namespace saltus {

namespace {

using io_detail::finite_or_null;
using io_detail::named;

nlohmann::json gradient_json(const Problem& pb, const Eigen::MatrixXd& grad) {
  nlohmann::json j = nlohmann::json::object();
  const auto params = pb.parameter_names();
  for (int c = 0; c < pb.n_costs(); ++c) j[pb.cost(c).name] = named(params, grad.row(c).transpose());
  return j;
}

/// {"times": [...], "<name>": {"unit", "values", "sensitivities": {"<param>": [...]}}}: the
/// named outputs at the output times, non-finite entries null.
nlohmann::json outputs_json(const Problem& pb, const RunResult& r) {
  const OutputTrajectory& y = r.outputs;
  nlohmann::json j = nlohmann::json::object();
  j["times"] = r.solution.times;
  const auto params = pb.parameter_names();
  const auto n_t = static_cast<Eigen::Index>(r.solution.times.size());
  for (size_t k = 0; k < y.names.size(); ++k) {
    const auto col = static_cast<Eigen::Index>(k);
    nlohmann::json entry = {{"unit", y.units[k]}};
    nlohmann::json values = nlohmann::json::array();
    for (Eigen::Index i = 0; i < n_t; ++i) values.push_back(finite_or_null(y.values(i, col)));
    entry["values"] = std::move(values);
    if (!y.sensitivities.empty()) {
      nlohmann::json sens = nlohmann::json::object();
      for (size_t q = 0; q < params.size(); ++q) {
        nlohmann::json column = nlohmann::json::array();
        for (const Eigen::MatrixXd& dy : y.sensitivities) column.push_back(finite_or_null(dy(col, static_cast<Eigen::Index>(q))));
        sens[params[q]] = std::move(column);
      }
      entry["sensitivities"] = std::move(sens);
    }
    j[y.names[k]] = std::move(entry);
  }
  return j;
}

}  // namespace

nlohmann::json to_json(const Problem& pb, const RunResult& r) {
  const Solution& s = r.solution;
  const auto params = pb.parameter_names();
  const GradientEstimate primary = r.estimates.empty() ? GradientEstimate{} : r.estimates.front();
  nlohmann::json j;
  j["problem"] = pb.name();
  j["method"] = r.method;
  j["parameters"] = named(params, r.parameters);
  if (!r.fixed_parameters.empty()) {
    nlohmann::json fixed = nlohmann::json::object();
    for (const auto& [name, value] : r.fixed_parameters) fixed[name] = value;
    j["fixed_parameters"] = fixed;
  }
  j["costs"] = named(pb.cost_names(), s.costs);
  if (!r.estimates.empty()) j["gradient"] = gradient_json(pb, primary.cost_gradient);  // none for simulate
  j["final_state"] = named(pb.state_names_at(s.final_state), s.final_state);
  j["final_time"] = s.times.back();
  j["final_mode"] = pb.mode(s.final_mode).name;
  nlohmann::json events = nlohmann::json::array();
  for (size_t i = 0; i < s.events.size(); ++i) {
    const auto& e = s.events[i];
    nlohmann::json ev;
    ev["time"] = e.time;
    ev["name"] = e.name;
    ev["mode_before"] = pb.mode(e.mode_before).name;
    ev["mode_after"] = pb.mode(e.mode_after).name;
    ev["grazing"] = e.grazing;
    if (e.rest) {
      ev["rest"] = true;
      ev["accumulation_time"] = e.accumulation_time;
      if (e.daccumulation_dp.size() == pb.n_parameters()) {
        ev["daccumulation_dp"] = named(params, e.daccumulation_dp.transpose());
      }
    }
    const auto row = static_cast<Eigen::Index>(i);
    ev["dtime_dp"] = row < primary.event_time_gradient.rows()
                         ? named(params, primary.event_time_gradient.row(row).transpose())
                         : nlohmann::json::object();
    events.push_back(ev);
  }
  j["events"] = events;
  nlohmann::json methods = nlohmann::json::object();
  for (size_t m = 0; m < r.estimates.size(); ++m) {
    nlohmann::json mj;
    mj["gradient"] = gradient_json(pb, r.estimates[m].cost_gradient);
    mj["seconds"] = r.seconds[m];
    if (r.check) {
      mj["max_relative_error"] = r.check->max_relative_error[m];
      nlohmann::json unchecked = nlohmann::json::array();
      for (const GradientCheckEntry& e : r.check->entries) {
        if (m < e.unchecked.size() && e.unchecked[m]) unchecked.push_back({{"cost", e.cost}, {"parameter", e.parameter}});
      }
      mj["unchecked"] = unchecked;
    }
    nlohmann::json changed = nlohmann::json::array();
    for (size_t k = 0; k < r.estimates[m].event_sequence_changed.size(); ++k) {
      if (r.estimates[m].event_sequence_changed[k]) changed.push_back(params[k]);
    }
    mj["event_sequence_changed"] = changed;
    mj["notes"] = r.estimates[m].notes;
    methods[r.estimates[m].method] = mj;
  }
  j["methods"] = methods;
  if (r.adjoint) {
    const AdjointStats& a = *r.adjoint;
    nlohmann::json x0 = nlohmann::json::object();
    for (int c = 0; c < pb.n_costs(); ++c) {
      x0[pb.cost(c).name] = named(pb.state_names(), r.initial_state_gradient.row(c).transpose());
    }
    j["adjoint"] = {{"initial_state_gradient", x0},
                    {"checkpoint_steps", a.checkpoint_steps},
                    {"checkpoints", a.checkpoints},
                    {"stored_bytes", a.stored_bytes},
                    {"peak_stored_bytes", a.peak_stored_bytes},
                    {"memory_budget", a.memory_budget},
                    {"recomputed_segments", a.recomputed_segments},
                    {"tape_recordings", a.tape_recordings},
                    {"backward_steps", a.backward.steps},
                    {"backward_rhs_evals", a.backward.rhs_evals}};
  }
  if (!pb.monitors().empty()) {
    const std::vector<double> maxima = monitor_maxima(pb, r);
    nlohmann::json monitors;
    for (size_t i = 0; i < maxima.size(); ++i) monitors[pb.monitors()[i].name] = maxima[i];
    j["monitors"] = monitors;
  }
  if (!r.outputs.empty()) j["outputs"] = outputs_json(pb, r);
  j["stats"] = {{"integrator", s.stats.integrator},
                {"discrete", s.stats.discrete},
                {"segments", s.stats.segments},
                {"steps", s.stats.steps},
                {"rhs_evals", s.stats.rhs_evals},
                {"jacobian_evals", s.stats.jacobian_evals},
                {"root_evals", s.stats.root_evals},
                {"error_test_failures", s.stats.error_test_failures},
                {"sensitivity_rhs_evals", s.stats.sensitivity_rhs_evals},
                {"linear_solver", s.stats.linear_solver},
                {"linear_iterations", s.stats.linear_iterations}};
  return j;
}

void write_json(const std::string& path, const Problem& pb, const RunResult& r) {
  AtomicFile file(path);
  file.stream() << to_json(pb, r).dump(2) << "\n";
  file.commit();
}

}  // namespace saltus
