// Adjoint scaling benchmark (issue: adjoint cost flat in the number of parameters).
//
// A bouncing ball driven by a p-term forcing series,
//     h' = v,   v' = -g - c v + sum_k a_k sin(w_k t),   impact at h = 0 (falling): v+ = -e v-,
// with the p amplitudes a_k as parameters and the cost psi = int h^2 dt + h(T). Every
// right-hand side costs O(p), so simulation time grows with p; the question is how the
// gradient methods grow relative to it. Printed, in one run, for p = 1, 10, 100, 1000:
//     adjoint / simulation, forward sensitivity / simulation, central differences / simulation.
// Two forcing families:
//   fixed band:   w_k in [3, 9] rad/s, a_k = 2 / p. More parameters, same dynamics: this row
//                 isolates the cost of the parameter count (the adjoint target: flat, < 5).
//   growing band: w_k = 3 (k + 1), a_k = 0.5 / (k + 1). Every new parameter adds a higher
//                 frequency the steps must resolve (up to p = 100 by default: at p = 1000 the
//                 forward sensitivities alone take minutes).
// Forward and central differences are O(p) simulations; the adjoint should stay flat.
// Usage: build/bench/saltus_adjoint_bench [max_p]
#include <saltus/solvers/adjoint.hpp>
#include <saltus/solvers/simulate.hpp>
#include <saltus/verify/gradient.hpp>

#include "timing.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <functional>
#include <string>
#include <vector>

namespace {

using saltus::bench::median_time;

enum class Band { Fixed, Growing };

saltus::Problem forced_ball(int p, Band band) {
  using namespace saltus;
  Problem pb("forced_ball", "bouncing ball driven by a forcing series");
  pb.set_states({"h", "v"});
  std::vector<double> omega;
  for (int k = 0; k < p; ++k) {
    const bool fixed = band == Band::Fixed;
    pb.add_parameter(fmt::format("a{}", k + 1), fixed ? 2.0 / p : 0.5 / (k + 1));
    omega.push_back(fixed ? 3.0 + 6.0 * k / std::max(p - 1, 1) : 3.0 * (k + 1));
  }
  pb.set_initial_state([](const auto&, auto x) {
    x[0] = 1.0;
    x[1] = 0.0;
  });
  pb.add_mode("flight", [omega](auto t, const auto& x, const auto& a, auto xdot) {
    using std::sin;
    using S = std::decay_t<decltype(t)>;
    S force = 0.0;
    for (Eigen::Index k = 0; k < a.size(); ++k) force += a[k] * sin(omega[static_cast<size_t>(k)] * t);
    xdot[0] = x[1];
    xdot[1] = -9.81 - 0.1 * x[1] + force;
  });
  pb.add_event("impact", Direction::Falling, [](auto, const auto& x, const auto&) { return x[0]; })
      .jump([](auto, const auto& x, const auto&, auto xp) {
        xp[0] = x[0];
        xp[1] = -0.8 * x[1];
      });
  pb.add_cost("energy", [](auto, const auto& x, const auto&, const auto&) { return x[0] * x[0]; },
              [](const auto& x, const auto&) { return x[0]; });
  pb.options().tf = 3.0;
  pb.options().rtol = 1e-8;
  pb.options().atol = 1e-10;
  pb.options().n_outputs = 2;
  return pb;
}

void print_row(int p, Band band) {
  const saltus::Problem pb = forced_ball(p, band);
  const Eigen::VectorXd a = pb.nominal_parameters();
  const int reps = p >= 1000 ? 3 : p >= 100 ? 5 : 21;
  saltus::Solution sim, adj, fwd;
  const double t_sim = median_time(reps, [&] { sim = saltus::simulate(pb, a, pb.options()); });
  const double t_adj = median_time(reps, [&] { adj = saltus::adjoint(pb, a, pb.options()); });
  const double t_fwd =
      median_time(p >= 1000 ? 1 : reps, [&] { fwd = saltus::forward_sensitivity(pb, a, pb.options()); });
  const double t_fd = median_time(1, [&] { saltus::central_differences(pb, a, pb.options()); });
  const double err = (adj.cost_gradient - fwd.cost_gradient).cwiseAbs().maxCoeff() /
                     fwd.cost_gradient.cwiseAbs().maxCoeff();
  fmt::print("{:>8} {:>6} {:>10.2f}ms {:>10.2f} {:>10.1f} {:>10.1f} {:>7} {:>12.1e} {:>8} {:>10}\n",
             band == Band::Fixed ? "fixed" : "growing", p, 1e3 * t_sim, t_adj / t_sim, t_fwd / t_sim,
             t_fd / t_sim, sim.events.size(), err, sim.stats.steps, adj.adjoint.backward.steps);
  std::fflush(stdout);
}

}  // namespace

int main(int argc, char** argv) {
  const int max_p = argc > 1 ? std::atoi(argv[1]) : 1000;
  fmt::print("forced_ball: p forcing amplitudes, horizon 3 s, rtol 1e-8; times are medians\n");
  fmt::print("{:>8} {:>6} {:>12} {:>10} {:>10} {:>10} {:>7} {:>12} {:>8} {:>10}\n", "band", "p", "simulation",
             "adjoint/sim", "forward/sim", "fd/sim", "events", "adj-fwd err", "steps", "back steps");
  for (int p : {1, 10, 100, 1000}) {
    if (p <= max_p) print_row(p, Band::Fixed);
  }
  for (int p : {1, 10, 100}) {
    if (p <= max_p) print_row(p, Band::Growing);
  }
  return 0;
}
