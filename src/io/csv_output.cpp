#include <saltus/io/csv_output.hpp>

#include <saltus/core/error.hpp>
#include <saltus/io/atomic_file.hpp>

#include "csv_field.hpp"

#include <fmt/format.h>
#include <fmt/ostream.h>

#include <filesystem>
#include <memory>
#include <vector>

namespace saltus {

namespace {

/// The CSV files of one result, committed together once all are written.
using Files = std::vector<std::unique_ptr<AtomicFile>>;

std::ostream& open_file(Files& files, const std::filesystem::path& path) {
  files.push_back(std::make_unique<AtomicFile>(path));
  return files.back()->stream();
}

void write_trajectory(Files& files, const std::filesystem::path& folder, const Problem& pb, const Solution& s) {
  auto& out = open_file(files, folder / "trajectory.csv");
  fmt::print(out, "t,mode");
  for (const auto& n : pb.state_names()) fmt::print(out, ",{}", detail::csv_field(n));
  fmt::print(out, "\n");
  for (size_t i = 0; i < s.times.size(); ++i) {
    fmt::print(out, "{:.17g},{}", s.times[i], detail::csv_field(pb.mode(s.modes[i]).name));
    for (Eigen::Index j = 0; j < s.states.cols(); ++j) fmt::print(out, ",{:.17g}", s.states(static_cast<Eigen::Index>(i), j));
    fmt::print(out, "\n");
  }
}

void write_cost_history(Files& files, const std::filesystem::path& folder, const Problem& pb, const Solution& s) {
  if (s.cost_history.rows() != static_cast<Eigen::Index>(s.times.size())) return;
  auto& out = open_file(files, folder / "costs.csv");
  fmt::print(out, "t");
  for (const auto& c : pb.cost_names()) fmt::print(out, ",{}", detail::csv_field(c));
  fmt::print(out, "\n");
  for (size_t i = 0; i < s.times.size(); ++i) {
    fmt::print(out, "{:.17g}", s.times[i]);
    for (Eigen::Index c = 0; c < s.cost_history.cols(); ++c) fmt::print(out, ",{:.17g}", s.cost_history(static_cast<Eigen::Index>(i), c));
    fmt::print(out, "\n");
  }
}

void write_sensitivities(Files& files, const std::filesystem::path& folder, const Problem& pb, const Solution& s) {
  if (s.sensitivities.empty()) return;
  auto& out = open_file(files, folder / "sensitivities.csv");
  const auto params = pb.parameter_names();
  fmt::print(out, "t");
  for (const auto& x : pb.state_names()) {
    for (const auto& p : params) fmt::print(out, ",{}", detail::csv_field(fmt::format("d{}/d{}", x, p)));
  }
  fmt::print(out, "\n");
  for (size_t i = 0; i < s.times.size(); ++i) {
    fmt::print(out, "{:.17g}", s.times[i]);
    const auto& S = s.sensitivities[i];
    for (Eigen::Index r = 0; r < S.rows(); ++r) {
      for (Eigen::Index c = 0; c < S.cols(); ++c) fmt::print(out, ",{:.17g}", S(r, c));
    }
    fmt::print(out, "\n");
  }
}

void write_outputs(Files& files, const std::filesystem::path& folder, const Problem& pb, const RunResult& r) {
  const OutputTrajectory& y = r.outputs;
  if (y.empty()) return;
  const std::vector<double>& times = r.solution.times;
  auto& units = open_file(files, folder / "units.csv");
  fmt::print(units, "name,unit\n");
  for (size_t k = 0; k < y.names.size(); ++k) fmt::print(units, "{},{}\n", detail::csv_field(y.names[k]), detail::csv_field(y.units[k]));
  auto& out = open_file(files, folder / "outputs.csv");
  fmt::print(out, "t");
  for (const auto& name : y.names) fmt::print(out, ",{}", detail::csv_field(name));
  fmt::print(out, "\n");
  for (size_t i = 0; i < times.size(); ++i) {
    fmt::print(out, "{:.17g}", times[i]);
    for (Eigen::Index j = 0; j < y.values.cols(); ++j) fmt::print(out, ",{:.17g}", y.values(static_cast<Eigen::Index>(i), j));
    fmt::print(out, "\n");
  }
  if (y.sensitivities.empty()) return;
  auto& sens = open_file(files, folder / "output_sensitivities.csv");
  const auto params = pb.parameter_names();
  fmt::print(sens, "t");
  for (const auto& name : y.names) {
    for (const auto& p : params) fmt::print(sens, ",{}", detail::csv_field(fmt::format("d{}/d{}", name, p)));
  }
  fmt::print(sens, "\n");
  for (size_t i = 0; i < times.size(); ++i) {
    fmt::print(sens, "{:.17g}", times[i]);
    const Eigen::MatrixXd& dy = y.sensitivities[i];
    for (Eigen::Index row = 0; row < dy.rows(); ++row) {
      for (Eigen::Index c = 0; c < dy.cols(); ++c) fmt::print(sens, ",{:.17g}", dy(row, c));
    }
    fmt::print(sens, "\n");
  }
}

void write_events(Files& files, const std::filesystem::path& folder, const Problem& pb, const RunResult& r) {
  auto& out = open_file(files, folder / "events.csv");
  const auto params = pb.parameter_names();
  // Event-time sensitivities come with forward sensitivities (not from an adjoint run alone).
  const Eigen::MatrixXd tau = r.estimates.empty() ? Eigen::MatrixXd() : r.estimates.front().event_time_gradient;
  const bool with_tau = tau.rows() == static_cast<Eigen::Index>(r.solution.events.size()) && tau.cols() > 0;
  fmt::print(out, "time,name,mode_before,mode_after");
  for (const auto& x : pb.state_names()) {
    fmt::print(out, ",{},{}", detail::csv_field(x + "_before"), detail::csv_field(x + "_after"));
  }
  if (with_tau) {
    for (const auto& p : params) fmt::print(out, ",{}", detail::csv_field("dt/d" + p));
  }
  fmt::print(out, "\n");
  for (size_t i = 0; i < r.solution.events.size(); ++i) {
    const auto& e = r.solution.events[i];
    fmt::print(out, "{:.17g},{},{},{}", e.time, detail::csv_field(e.name), detail::csv_field(pb.mode(e.mode_before).name),
               detail::csv_field(pb.mode(e.mode_after).name));
    for (Eigen::Index j = 0; j < e.state_before.size(); ++j) fmt::print(out, ",{:.17g},{:.17g}", e.state_before[j], e.state_after[j]);
    for (Eigen::Index k = 0; with_tau && k < tau.cols(); ++k) fmt::print(out, ",{:.17g}", tau(static_cast<Eigen::Index>(i), k));
    fmt::print(out, "\n");
  }
}

void write_gradient(Files& files, const std::filesystem::path& folder, const Problem& pb, const RunResult& r) {
  if (r.estimates.empty()) return;  // a plain simulation
  auto& out = open_file(files, folder / "gradient.csv");
  fmt::print(out, "cost,parameter");
  for (const auto& e : r.estimates) fmt::print(out, ",{}", detail::csv_field(e.method));
  fmt::print(out, "\n");
  const auto params = pb.parameter_names();
  for (int c = 0; c < pb.n_costs(); ++c) {
    for (int k = 0; k < pb.n_parameters(); ++k) {
      fmt::print(out, "{},{}", detail::csv_field(pb.cost(c).name), detail::csv_field(params[static_cast<size_t>(k)]));
      for (const auto& e : r.estimates) fmt::print(out, ",{:.17g}", e.cost_gradient(c, k));
      fmt::print(out, "\n");
    }
  }
}

}  // namespace

void write_csv(const std::string& folder, const Problem& pb, const RunResult& r) {
  std::error_code ec;
  std::filesystem::create_directories(folder, ec);
  if (ec) throw InputError(fmt::format("cannot create output folder '{}': {}", folder, ec.message()));
  const std::filesystem::path dir(folder);
  Files files;
  write_trajectory(files, dir, pb, r.solution);
  write_cost_history(files, dir, pb, r.solution);
  write_sensitivities(files, dir, pb, r.solution);
  write_outputs(files, dir, pb, r);
  write_events(files, dir, pb, r);
  write_gradient(files, dir, pb, r);
  for (auto& file : files) file->commit();
}

}  // namespace saltus
