// Multibody benchmark, ratios measured in one run (medians):
//  1. fivebar_floor and spatial_slidercrank: forward sensitivity / simulation and adjoint /
//     simulation per formulation;
//  2. the chain of N rods of issue 12 (N = 8 ... 256, index-1): simulation time per step, and the
//     gradient cost (forward for L, m, g; adjoint for all four parameters) relative to
//     simulation, up to N = max_gradient_n (default 64; the forward runs grow fastest);
//  3. the same chain in the GGL formulation on IDAS: simulation with the dense Newton matrix
//     against the sparse one (KLU, coloured AD tangents), and the sparse forward and adjoint runs'
//     costs (up to 32 rods);
//  4. the spatial chain of N rods on spherical joints (issue 14; N = 8 ... 128, index-1):
//     simulation time per step and the forward (l, m) and adjoint costs relative to it;
//  5. examples/vehicle.yaml (issue 14): simulation, forward and adjoint time per simulated
//     second and their ratios, the adjoint's stored bytes and the process's peak memory, in
//     index1, maggi, ggl and stabilized_index1 (one run each: the forward run takes tens of seconds).
// Usage: build/bench/saltus_multibody_bench [path/to/examples] [max_gradient_n]
//        build/bench/saltus_multibody_bench --chain-yaml N   (prints the chain's model file)
//        build/bench/saltus_multibody_bench --spatial-chain-yaml N   (the spatial chain's file)
//        build/bench/saltus_multibody_bench --spatial [path/to/examples]   (tables 4 and 5 alone)
#include <saltus/core/heap_settings.hpp>
#include <saltus/core/parameter_subset.hpp>
#include <saltus/multibody/formulation.hpp>
#include <saltus/multibody/model_file.hpp>
#include <saltus/solvers/adjoint.hpp>
#include <saltus/solvers/simulate.hpp>

#include "timing.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <functional>
#include <string>
#include <vector>

#include <sys/resource.h>

namespace {

using saltus::bench::median_time;

using namespace saltus;

/// The chain of issue 12: N uniform rods of total length L and mass m pinned at the origin,
/// released from horizontal; the tip strikes a floor 1 m below the pin (restitution e).
std::string chain_yaml(int rods) {
  std::string points, elements, independent;
  for (int k = 1; k <= rods; ++k) {
    points += fmt::format("  p{}: {{position: [\"{}*L/{}\", 0]}}\n", k, k, rods);
    const std::string from = k == 1 ? "O" : fmt::format("p{}", k - 1);
    elements += fmt::format("  - {{type: bar, from: {}, to: p{}, length: L/{}, mass: m/{}}}\n", from, k, rods, rods);
    independent += fmt::format("{}p{}.y", k == 1 ? "" : ", ", k);
  }
  return fmt::format(
      "# Chain of {0} rods pinned at O, released from horizontal, tip striking a floor\n"
      "# (saltus_multibody_bench --chain-yaml {0}).\n"
      "name: chain{0}\nhorizon: 1\noutputs: 101\ntolerances: {{rtol: 1.0e-6, atol: 1.0e-8}}\nformulation: index1\n"
      "parameters: {{L: 2, m: 1, g: 9.81, e: 1}}\ngravity: [0, -g]\nground: {{O: [0, 0]}}\npoints:\n{1}"
      "independent: [{2}]\nelements:\n{3}"
      "contacts:\n  - {{name: floor, point: p{0}, line: {{point: [0, -1], normal: [0, 1]}}, restitution: e}}\n"
      "costs:\n  tip_height: {{running: [{{signal: y, of: p{0}}}]}}\n",
      rods, points, independent, elements);
}

/// One example in every formulation: simulation time and the gradients' cost relative to it.
void formulation_table(const std::string& examples, const std::string& name) {
  const multibody::Model model = multibody::load_model(examples + "/" + name + ".yaml");
  fmt::print("{} (rtol {:g}, {} parameters): gradient cost relative to simulation, per formulation\n", name, model.rtol,
             model.parameters.size());
  fmt::print("{:>10} {:>12} {:>12} {:>12} {:>8}\n", "formulation", "simulation", "forward/sim", "adjoint/sim", "steps");
  for (auto type : {multibody::FormulationType::Maggi, multibody::FormulationType::Index1,
                    multibody::FormulationType::Penalty, multibody::FormulationType::GGL,
                    multibody::FormulationType::StabilizedIndex1, multibody::FormulationType::Index3}) {
    multibody::FormulationSettings settings = model.formulation;
    settings.type = type;
    const Problem pb = multibody::make_problem(model, settings);
    const int reps = type == multibody::FormulationType::Penalty ? 1 : 3;
    Solution sim;
    const double t_sim = median_time(reps, [&] { sim = simulate(pb); });
    const double t_fwd = median_time(reps, [&] { forward_sensitivity(pb); });
    const double t_adj = median_time(reps, [&] { adjoint(pb, pb.nominal_parameters(), pb.options()); });
    fmt::print("{:>10} {:>10.3f} s {:>12.2f} {:>12.2f} {:>8}\n", multibody::to_string(type), t_sim, t_fwd / t_sim,
               t_adj / t_sim, sim.stats.steps);
    std::fflush(stdout);
  }
}

void chain_table(int max_gradient_n) {
  fmt::print("\nchain of N rods (issue 12; index-1, rtol 1e-6, 1 s, tip hits the floor; forward for L, m, g)\n");
  fmt::print("{:>4} {:>6} {:>8} {:>10} {:>12} {:>10} {:>12} {:>12}\n", "N", "states", "steps", "sim s", "sim ms/step",
             "forward s", "forward/sim", "adjoint/sim");
  for (int rods : {8, 16, 32, 64, 128, 256}) {
    const Problem pb = multibody::make_problem(multibody::parse_model(chain_yaml(rods), "chain"));
    const int reps = rods <= 8 ? 5 : 1;
    Solution sim;
    const double t_sim = median_time(reps, [&] { sim = simulate(pb); });
    std::string fwd = "-", fwd_ratio = "-", adj = "-";
    if (rods <= max_gradient_n) {
      const Problem three = with_free_parameters(pb, {"L", "m", "g"});
      const double t_fwd = median_time(reps, [&] { forward_sensitivity(three); });
      fwd = fmt::format("{:.2f}", t_fwd);
      fwd_ratio = fmt::format("{:.2f}", t_fwd / t_sim);
      adj = fmt::format("{:.2f}", median_time(reps, [&] { adjoint(pb, pb.nominal_parameters(), pb.options()); }) / t_sim);
    }
    fmt::print("{:>4} {:>6} {:>8} {:>10.3f} {:>12.3f} {:>10} {:>12} {:>12}\n", rods, pb.n_states(), sim.stats.steps, t_sim,
               1e3 * t_sim / sim.stats.steps, fwd, fwd_ratio, adj);
    std::fflush(stdout);
  }
}

/// The chain in GGL on IDAS: dense against sparse Newton matrix (docs/dae.md).
void dae_chain_table() {
  fmt::print("\nchain of N rods in GGL (IDAS, rtol 1e-6, 1 s): dense LU against KLU on the sparse Newton matrix\n");
  fmt::print("{:>4} {:>10} {:>10} {:>10} {:>14} {:>10} {:>12} {:>12}\n", "N", "components", "dense s", "sparse s",
             "sparse ms/step", "dense/sparse", "forward/sim", "adjoint/sim");
  for (int rods : {8, 16, 32, 64, 128}) {
    const multibody::Model model = multibody::parse_model(chain_yaml(rods), "chain");
    multibody::FormulationSettings settings = model.formulation;
    settings.type = multibody::FormulationType::GGL;
    const Problem pb = multibody::make_problem(model, settings);
    const int reps = rods <= 8 ? 5 : 1;
    Options dense = pb.options();
    dense.linear_solver = LinearSolver::Dense;
    Solution sim;
    const double t_sparse = median_time(reps, [&] { sim = simulate(pb); });
    std::string t_dense = "-", ratio = "-", forward = "-", backward = "-";
    if (rods <= 32) {
      const double t = median_time(reps, [&] { simulate(pb, pb.nominal_parameters(), dense); });
      t_dense = fmt::format("{:.3f}", t);
      ratio = fmt::format("{:.1f}", t / t_sparse);
      const Problem three = with_free_parameters(pb, {"L", "m", "g"});
      forward = fmt::format("{:.2f}", median_time(reps, [&] { forward_sensitivity(three); }) / t_sparse);
    }
    if (rods <= 32) {
      backward =
          fmt::format("{:.2f}", median_time(reps, [&] { adjoint(pb, pb.nominal_parameters(), pb.options()); }) / t_sparse);
    }
    fmt::print("{:>4} {:>10} {:>10} {:>10.3f} {:>14.3f} {:>10} {:>12} {:>12}\n", rods, pb.n_states(), t_dense, t_sparse,
               1e3 * t_sparse / sim.stats.steps, ratio, forward, backward);
    std::fflush(stdout);
  }
}

}  // namespace

/// The spatial chain of issue 14: N uniform rods, each of length l and mass m (a cylinder of
/// radius l/10), each joined to the next by a spherical joint, the first to the ground at the
/// origin, released from along x with gravity along -z, the whole chain turning about z at
/// 0.5 rad/s so that the motion is not planar. Every rod is the same at every N, so the
/// conditioning of the KKT matrix does not change with N.
std::string spatial_chain_yaml(int rods) {
  std::string bodies, joints;
  for (int k = 1; k <= rods; ++k) {
    bodies += fmt::format(
        "    r{0}: {{mass: m, inertia: [\"m*(l/10)^2/2\", \"m*l^2/12\", \"m*l^2/12\"], position: [\"{1}*l\", 0, 0], "
        "angular_velocity: [0, 0, 0.5], velocity: [0, \"0.5*{1}*l\", 0]}}\n",
        k, k - 0.5);
    joints += fmt::format("    - {{type: spherical, a: {}, b: r{}, point_a: [{}, 0, 0], point_b: [\"-l/2\", 0, 0]}}\n",
                          k == 1 ? "ground" : fmt::format("r{}", k - 1), k, k == 1 ? "0" : "\"l/2\"");
  }
  return fmt::format(
      "# Spatial chain of {0} rods on spherical joints (saltus_multibody_bench --spatial-chain-yaml {0}).\n"
      "name: spatial_chain{0}\nhorizon: 1\noutputs: 101\ntolerances: {{rtol: 1.0e-6, atol: 1.0e-8}}\n"
      "formulation: index1\nparameters: {{l: 0.1, m: 0.1}}\ngravity: [0, 0, -9.81]\nspatial:\n  bodies:\n{1}"
      "  joints:\n{2}costs:\n  tip_height: {{running: [{{signal: z, of: {{body: r{0}, at: [\"l/2\", 0, 0]}}}}]}}\n",
      rods, bodies, joints);
}

void spatial_chain_table() {
  fmt::print("\nspatial chain of N rods on spherical joints (issue 14; index-1, rtol 1e-6, 1 s; forward for l, m)\n");
  fmt::print("{:>4} {:>6} {:>8} {:>10} {:>12} {:>12} {:>12}\n", "N", "states", "steps", "sim s", "sim ms/step",
             "forward/sim", "adjoint/sim");
  for (int rods : {8, 16, 32, 64, 128}) {
    const Problem pb = multibody::make_problem(multibody::parse_model(spatial_chain_yaml(rods), "spatial_chain"));
    const int reps = rods <= 16 ? 3 : 1;
    Solution sim;
    const double t_sim = median_time(reps, [&] { sim = simulate(pb); });
    const double t_fwd = median_time(reps, [&] { forward_sensitivity(pb); });
    const double t_adj = median_time(reps, [&] { adjoint(pb, pb.nominal_parameters(), pb.options()); });
    fmt::print("{:>4} {:>6} {:>8} {:>10.3f} {:>12.3f} {:>12.2f} {:>12.2f}\n", rods, pb.n_states(), sim.stats.steps, t_sim,
               1e3 * t_sim / sim.stats.steps, t_fwd / t_sim, t_adj / t_sim);
    std::fflush(stdout);
  }
}

/// The vehicle over its bump and off its step: cost per simulated second, per formulation.
void vehicle_table(const std::string& examples) {
  const multibody::Model model = multibody::load_model(examples + "/vehicle.yaml");
  const double horizon = model.tf - model.t0;
  fmt::print("vehicle ({} coordinates, rtol {:g}, {} parameters, {:g} s simulated): time per simulated second\n",
             model.n_coordinates(), model.rtol, model.parameters.size(), horizon);
  fmt::print("{:>18} {:>10} {:>10} {:>10} {:>12} {:>12} {:>14} {:>8}\n", "formulation", "sim s/s", "fwd s/s", "adj s/s",
             "forward/sim", "adjoint/sim", "adjoint MiB", "steps");
  for (auto type : {multibody::FormulationType::Index1, multibody::FormulationType::Maggi,
                    multibody::FormulationType::GGL, multibody::FormulationType::StabilizedIndex1}) {
    multibody::FormulationSettings settings = model.formulation;
    settings.type = type;
    const Problem pb = multibody::make_problem(model, settings);
    Solution sim, adj;
    std::vector<std::string> failures;
    // Each run on its own: a failed adjoint keeps the simulation and forward columns.
    const auto timed = [&](const char* what, const std::function<void()>& run) {
      try {
        return median_time(1, run);
      } catch (const std::exception& e) {
        failures.push_back(fmt::format("{} failed: {}", what, e.what()));
        return std::nan("");
      }
    };
    const double t_sim = timed("simulation", [&] { sim = simulate(pb); });
    const double t_fwd = timed("forward", [&] { forward_sensitivity(pb); });
    const double t_adj = timed("adjoint", [&] { adj = adjoint(pb, pb.nominal_parameters(), pb.options()); });
    fmt::print("{:>18} {:>10.3f} {:>10.3f} {:>10.3f} {:>12.2f} {:>12.2f} {:>14.1f} {:>8}\n", multibody::to_string(type),
               t_sim / horizon, t_fwd / horizon, t_adj / horizon, t_fwd / t_sim, t_adj / t_sim,
               static_cast<double>(adj.adjoint.peak_stored_bytes) / (1024.0 * 1024.0), sim.stats.steps);
    for (const std::string& f : failures) fmt::print("{:>18} {}\n", "", f);
    std::fflush(stdout);
  }
  rusage usage{};
  getrusage(RUSAGE_SELF, &usage);
  fmt::print("peak resident memory of the process so far: {:.0f} MiB\n", static_cast<double>(usage.ru_maxrss) / 1024.0);
}

namespace {

int run_tables(int argc, char** argv) {
  if (argc == 3 && std::string(argv[1]) == "--chain-yaml") {
    fmt::print("{}", chain_yaml(std::atoi(argv[2])));
    return 0;
  }
  if (argc == 3 && std::string(argv[1]) == "--spatial-chain-yaml") {
    fmt::print("{}", spatial_chain_yaml(std::atoi(argv[2])));
    return 0;
  }
  if (argc >= 2 && std::string(argv[1]) == "--spatial") {
    spatial_chain_table();
    vehicle_table(argc > 2 ? argv[2] : "examples");
    return 0;
  }
  const std::string examples = argc > 1 ? argv[1] : "examples";
  const int max_gradient_n = argc > 2 ? std::atoi(argv[2]) : 64;
  formulation_table(examples, "fivebar_floor");
  formulation_table(examples, "spatial_slidercrank");
  chain_table(max_gradient_n);
  dae_chain_table();
  spatial_chain_table();
  vehicle_table(examples);
  return 0;
}

constexpr const char* kUsage =
    "usage: saltus_multibody_bench [path/to/examples] [max_gradient_n]\n"
    "       saltus_multibody_bench --chain-yaml N | --spatial-chain-yaml N | --spatial [path/to/examples]\n";

}  // namespace

int main(int argc, char** argv) {
  saltus::retain_freed_heap_memory();  // as the saltus command does
  if (argc > 1 && (std::string(argv[1]) == "--help" || std::string(argv[1]) == "-h")) {
    fmt::print("{}", kUsage);
    return 0;
  }
  try {
    return run_tables(argc, argv);
  } catch (const std::exception& e) {
    fmt::print(stderr, "saltus_multibody_bench: {}\n{}", e.what(), kUsage);
    return 1;
  }
}
