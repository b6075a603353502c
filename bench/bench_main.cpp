// Saltus benchmarks, reported as ratios measured in one run (the machines are shared and noisy):
//  1. robertson forward sensitivities: Saltus vs a plain CVODES C program solving the same
//     problem with the same method, tolerances, outputs and cost quadrature (target <= 1.25).
//  2. box2d: cost of forward sensitivities relative to simulation alone, and per parameter.
// Timings interleave the contenders and take the median of the repetitions.
#include <saltus/examples/builtin.hpp>
#include <saltus/solvers/adjoint.hpp>
#include <saltus/solvers/simulate.hpp>

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <functional>
#include <vector>

#include "robertson_plain_cvodes.h"
#include "robertson_plain_idas.h"

namespace {

double seconds(const std::function<void()>& f) {
  const auto start = std::chrono::steady_clock::now();
  f();
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

/// Median times of `a` and `b`, run alternately `repetitions` times.
std::pair<double, double> interleaved(int repetitions, const std::function<void()>& a,
                                      const std::function<void()>& b) {
  std::vector<double> ta, tb;
  for (int i = 0; i < repetitions; ++i) {
    ta.push_back(seconds(a));
    tb.push_back(seconds(b));
  }
  return {median(ta), median(tb)};
}

}  // namespace

int main(int argc, char** argv) {
  const int repetitions = argc > 1 ? std::max(3, std::atoi(argv[1])) : 31;
  using namespace saltus;

  // 1. robertson: Saltus vs plain CVODES.
  const Problem rob = examples::robertson();
  Solution saltus_solution;
  double G = 0.0, dG[3] = {0, 0, 0};
  const auto [t_saltus, t_plain] = interleaved(
      repetitions, [&] { saltus_solution = forward_sensitivity(rob); },
      [&] { robertson_plain_cvodes(&G, dG); });
  double max_rel = std::abs(saltus_solution.costs[0] - G) / std::abs(G);
  for (int k = 0; k < 3; ++k) {
    max_rel = std::max(max_rel, std::abs(saltus_solution.cost_gradient(0, k) - dG[k]) / std::abs(dG[k]));
  }
  fmt::print("robertson forward sensitivity (3 parameters, G = int y3 dt to 4e7, rtol 1e-8)\n");
  fmt::print("  plain CVODES            {:9.3f} ms\n", 1e3 * t_plain);
  fmt::print("  Saltus                  {:9.3f} ms\n", 1e3 * t_saltus);
  fmt::print("  ratio Saltus / CVODES   {:9.3f}   (target <= 1.25)\n", t_saltus / t_plain);
  fmt::print("  largest relative difference of G, dG/dp between the two: {:.2e}\n\n", max_rel);

  // 2. box2d: forward sensitivity vs simulation.
  const Problem box = examples::box2d();
  const auto [t_fwd, t_sim] = interleaved(
      repetitions, [&] { (void)forward_sensitivity(box); }, [&] { (void)simulate(box); });
  const int np = box.n_parameters();
  fmt::print("box2d ({} parameters, {} events)\n", np, simulate(box).events.size());
  fmt::print("  simulation              {:9.3f} ms\n", 1e3 * t_sim);
  fmt::print("  forward sensitivity     {:9.3f} ms\n", 1e3 * t_fwd);
  fmt::print("  ratio forward / simulation             {:7.3f}\n", t_fwd / t_sim);
  fmt::print("  extra cost per parameter / simulation  {:7.3f}\n\n", (t_fwd / t_sim - 1.0) / np);

  // 3. robertson_dae: Saltus on IDAS vs plain IDAS, forward sensitivities and the adjoint.
  const Problem dae = examples::robertson_dae();
  fmt::print("robertson_dae on IDAS (3 parameters, G = int y3 dt to 4e7, rtol 1e-8)\n");
  const auto compare = [&](const char* what, const std::function<Solution()>& saltus_run,
                           void (*plain)(double*, double*)) {
    Solution s;
    double Gp = 0.0, dGp[3] = {0, 0, 0};
    const auto [ts, tp] = interleaved(repetitions, [&] { s = saltus_run(); }, [&] { plain(&Gp, dGp); });
    double rel = std::abs(s.costs[0] - Gp) / std::abs(Gp);
    for (int k = 0; k < 3; ++k) rel = std::max(rel, std::abs(s.cost_gradient(0, k) - dGp[k]) / std::abs(dGp[k]));
    fmt::print("  {:<8} plain IDAS {:8.3f} ms   Saltus {:8.3f} ms   ratio {:6.3f} (target <= 1.10)   "
               "largest relative difference {:.2e}\n",
               what, 1e3 * tp, 1e3 * ts, ts / tp, rel);
  };
  compare("forward", [&] { return forward_sensitivity(dae); }, robertson_plain_idas_forward);
  // The plain program's check points every 100 steps (IDAAdjInit), as Saltus's fixed spacing.
  Options every_hundred = dae.options();
  every_hundred.checkpoint_steps = 100;
  compare("adjoint", [&] { return adjoint(dae, dae.nominal_parameters(), every_hundred); },
          robertson_plain_idas_adjoint);
  fmt::print("\n");

  // 4. hysteretic: gradient cost relative to simulation.
  const Problem hys = examples::hysteretic();
  const auto [t_hfwd, t_hsim] = interleaved(
      std::max(3, repetitions / 4), [&] { (void)forward_sensitivity(hys); }, [&] { (void)simulate(hys); });
  const auto [t_hadj, t_hsim2] = interleaved(
      std::max(3, repetitions / 4), [&] { (void)adjoint(hys); }, [&] { (void)simulate(hys); });
  fmt::print("hysteretic ({} parameters, 19 reversals)\n", hys.n_parameters());
  fmt::print("  simulation              {:9.3f} ms\n", 1e3 * t_hsim);
  fmt::print("  forward / simulation    {:9.3f}\n", t_hfwd / t_hsim);
  fmt::print("  adjoint / simulation    {:9.3f}\n", t_hadj / t_hsim2);
  return 0;
}
