// The files of `saltus optimize`: JSON results, the history CSV and the convergence plot.
#include <saltus/io/optimize_output.hpp>

#include <saltus/io/atomic_file.hpp>

#include "csv_field.hpp"

#include <fmt/format.h>
#include <fmt/ostream.h>

#include <cmath>
#include <filesystem>

#include "convergence_plot.hpp"
#include "json_values.hpp"

namespace saltus {

namespace {

using io_detail::finite_or_null;
using io_detail::named;

nlohmann::json iterate_json(const std::vector<std::string>& names, const OptimizeIterate& it) {
  nlohmann::json j;
  j["evaluation"] = it.index;
  j["x"] = named(names, it.x);
  j["cost"] = finite_or_null(it.cost);
  j["projected_gradient_norm"] = finite_or_null(it.projected_gradient_norm);
  j["step"] = it.step;
  j["events"] = it.events;
  j["event_sequence_changed"] = it.event_sequence_changed;
  j["feasible"] = it.feasible;
  j["best"] = it.best;
  j["failed"] = it.failed;
  if (it.failed) j["failure"] = it.failure;
  return j;
}

}  // namespace

nlohmann::json to_json(const Problem& pb, const OptimizeOptions& o, const OptimizeResult& r) {
  nlohmann::json j;
  j["problem"] = pb.name();
  j["cost_name"] = o.cost;
  j["maximize"] = o.maximize;
  j["method"] = o.method == GradientMethod::Adjoint ? "adjoint" : "forward";
  j["algorithm"] = r.algorithm;
  j["optimum"] = named(r.names, r.optimum);
  j["cost"] = finite_or_null(r.cost);
  j["gradient"] = named(r.names, r.gradient);
  j["projected_gradient_norm"] = finite_or_null(r.projected_gradient_norm);
  nlohmann::json bounds = nlohmann::json::object();
  for (const auto& v : o.vary) bounds[v.name] = {v.lower, v.upper};
  j["bounds"] = bounds;
  nlohmann::json constraints = nlohmann::json::array();
  for (size_t k = 0; k < o.constraints.size(); ++k) {
    const auto& c = o.constraints[k];
    constraints.push_back({{"cost", c.cost},
                           {"sense", c.sense == CostConstraint::Sense::AtMost ? "<=" : ">="},
                           {"bound", c.bound},
                           {"value", finite_or_null(r.constraint_values[static_cast<Eigen::Index>(k)])}});
  }
  j["constraints"] = constraints;
  j["parameters"] = named(pb.parameter_names(), r.parameters);
  j["converged"] = r.converged;
  j["stop_reason"] = r.stop_reason;
  j["iterations"] = r.evaluations;
  nlohmann::json history = nlohmann::json::array();
  for (const auto& it : r.history) history.push_back(iterate_json(r.names, it));
  j["history"] = history;
  return j;
}

void write_optimize_json(const std::string& path, const Problem& pb, const OptimizeOptions& o,
                         const OptimizeResult& r) {
  AtomicFile file(path);
  file.stream() << to_json(pb, o, r).dump(2) << "\n";
  file.commit();
}

void write_optimize_history(const std::string& folder, const OptimizeOptions& o, const OptimizeResult& r) {
  std::error_code ec;
  std::filesystem::create_directories(folder, ec);
  if (ec) throw InputError(fmt::format("cannot create output folder '{}': {}", folder, ec.message()));
  const std::filesystem::path dir(folder);
  AtomicFile csv(dir / "history.csv");
  auto& out = csv.stream();
  fmt::print(out, "evaluation");
  for (const auto& name : r.names) fmt::print(out, ",{}", detail::csv_field(name));
  fmt::print(out, ",cost,projected_gradient_norm,step,events,event_sequence_changed,feasible,failed\n");
  for (const auto& it : r.history) {
    fmt::print(out, "{}", it.index);
    for (Eigen::Index i = 0; i < it.x.size(); ++i) fmt::print(out, ",{:.17g}", it.x[i]);
    fmt::print(out, ",{:.17g},{:.17g},{:.17g},{},{},{},{}\n", it.cost, it.projected_gradient_norm, it.step, it.events,
               int(it.event_sequence_changed), int(it.feasible), int(it.failed));
  }
  write_convergence_plot(dir / "convergence.png", fmt::format("{} '{}'", o.maximize ? "maximizing" : "minimizing", o.cost),
                         r.history);
  csv.commit();  // after the plot: a failed plot leaves neither file
}

}  // namespace saltus
