// Multibody benchmark, ratios measured in one run (medians):
//  1. fivebar_floor: forward sensitivity / simulation and adjoint / simulation per formulation;
//  2. a hanging chain of N bars (N = 2 ... 64, index-1): time per simulated second, and the
//     gradient cost (forward, adjoint) relative to simulation, with one parameter per bar mass
//     plus g. Gradients stop at N = max_gradient_n (default 16): beyond it the dense O((n+m)^3)
//     KKT solve in every dual-number direction makes forward runs take minutes.
// Usage: build/bench/saltus_multibody_bench [path/to/examples] [max_gradient_n]
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

namespace {

using saltus::bench::median_time;

using namespace saltus;

/// A chain of N uniform bars hanging from the origin, released from a bent configuration.
std::string chain_yaml(int bars) {
  std::string params = "g: 9.81";
  std::string points, elements, independent;
  const double length = 2.0 / bars;
  double x = 0.0, y = 0.0;
  for (int k = 1; k <= bars; ++k) {
    const double angle = -0.6 + 0.5 * std::sin(1.3 * k);
    x += length * std::cos(angle);
    y += length * std::sin(angle);
    params += fmt::format(", m{}: {}", k, 1.0 / bars);
    points += fmt::format("  p{}: {{position: [{:.17g}, {:.17g}]}}\n", k, x, y);
    const std::string from = k == 1 ? "O" : fmt::format("p{}", k - 1);
    elements += fmt::format("  - {{type: bar, from: {}, to: p{}, length: {:.17g}, mass: m{}}}\n", from, k, length, k);
    independent += fmt::format("{}p{}.y", k == 1 ? "" : ", ", k);
  }
  return fmt::format(
      "name: chain{}\nhorizon: 1\noutputs: 11\ntolerances: {{rtol: 1.0e-6, atol: 1.0e-8}}\nformulation: index1\n"
      "parameters: {{{}}}\ngravity: [0, -g]\nground: {{O: [0, 0]}}\npoints:\n{}independent: [{}]\nelements:\n{}"
      "costs:\n  tip_height: {{running: [{{signal: y, of: p{}}}]}}\n",
      bars, params, points, independent, elements, bars);
}

void fivebar_table(const std::string& examples) {
  fmt::print("fivebar_floor (rtol 1e-10): gradient cost relative to simulation, per formulation\n");
  fmt::print("{:>10} {:>12} {:>12} {:>12} {:>8}\n", "formulation", "simulation", "forward/sim", "adjoint/sim", "steps");
  const multibody::Model model = multibody::load_model(examples + "/fivebar_floor.yaml");
  for (auto type : {multibody::FormulationType::Maggi, multibody::FormulationType::Index1,
                    multibody::FormulationType::Penalty, multibody::FormulationType::GGL,
                    multibody::FormulationType::StabilizedIndex1}) {
    multibody::FormulationSettings settings = model.formulation;
    settings.type = type;
    const Problem pb = multibody::make_problem(model, settings);
    const int reps = type == multibody::FormulationType::Penalty ? 1 : 3;
    Solution sim;
    const double t_sim = median_time(reps, [&] { sim = simulate(pb); });
    const double t_fwd = median_time(reps, [&] { forward_sensitivity(pb); });
    // The DAE formulations (on IDAS) are index 2 or not semi-explicit: no adjoint yet.
    const bool has_adjoint = !pb.has_index2_modes();
    const double t_adj = has_adjoint ? median_time(reps, [&] { adjoint(pb, pb.nominal_parameters(), pb.options()); }) : 0.0;
    fmt::print("{:>10} {:>10.3f} s {:>12.2f} {:>12} {:>8}\n", multibody::to_string(type), t_sim, t_fwd / t_sim,
               has_adjoint ? fmt::format("{:.2f}", t_adj / t_sim) : "-", sim.stats.steps);
    std::fflush(stdout);
  }
}

void chain_table(int max_gradient_n) {
  fmt::print("\nchain of N bars (index-1, rtol 1e-6, horizon 1 s, N + 1 parameters)\n");
  fmt::print("{:>4} {:>6} {:>16} {:>12} {:>12} {:>8}\n", "N", "n+m", "sim s per sim s", "forward/sim", "adjoint/sim", "steps");
  for (int bars : {2, 4, 8, 16, 32, 64}) {
    const Problem pb = multibody::make_problem(multibody::parse_model(chain_yaml(bars), "chain"));
    const int reps = bars <= 8 ? 5 : 1;
    Solution sim;
    const double t_sim = median_time(reps, [&] { sim = simulate(pb); });
    std::string fwd = "-", adj = "-";
    if (bars <= max_gradient_n) {
      fwd = fmt::format("{:.2f}", median_time(reps, [&] { forward_sensitivity(pb); }) / t_sim);
      adj = fmt::format("{:.2f}", median_time(reps, [&] { adjoint(pb, pb.nominal_parameters(), pb.options()); }) / t_sim);
    }
    fmt::print("{:>4} {:>6} {:>16.4f} {:>12} {:>12} {:>8}\n", bars, 3 * bars, t_sim / pb.options().tf, fwd, adj,
               sim.stats.steps);
    std::fflush(stdout);
  }
}

}  // namespace

int main(int argc, char** argv) {
  const std::string examples = argc > 1 ? argv[1] : "examples";
  const int max_gradient_n = argc > 2 ? std::atoi(argv[2]) : 16;
  fivebar_table(examples);
  chain_table(max_gradient_n);
  return 0;
}
