// Discrete sensitivities benchmark, ratios measured in one run (medians):
//  1. per discrete integrator and problem: the discrete tangent-linear model (forward) and the
//     discrete adjoint relative to the same integrator's simulation;
//  2. at equal accuracy: the time for a gradient within a target of the continuous gradient
//     (CVODES forward at rtol 1e-12), by the CVODES adjoint and by each discrete adjoint, at the
//     loosest tolerance (decades from 1e-3) that reaches it.
// Usage: build/bench/saltus_discrete_bench [path/to/examples] [repetitions]
#include <saltus/core/heap_settings.hpp>
#include <saltus/examples/builtin.hpp>
#include <saltus/multibody/formulation.hpp>
#include <saltus/multibody/model_file.hpp>
#include <saltus/solvers/adjoint.hpp>
#include <saltus/solvers/simulate.hpp>

#include "timing.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <string>
#include <vector>

namespace {

using namespace saltus;
using saltus::bench::median_time;

struct Case {
  std::string name;
  Problem problem;
};

struct Discrete {
  const char* name;
  Integrator integrator;
};

const std::vector<Discrete>& discrete_integrators() {
  static const std::vector<Discrete> list = {{"dopri5", Integrator::Dopri5}, {"sdirk", Integrator::Sdirk},
                                                 {"rosenbrock", Integrator::Rosenbrock}};
  return list;
}

std::vector<Case> cases(const std::string& examples) {
  std::vector<Case> out;
  for (const char* name : {"ball1d", "galan", "box2d", "hiskens", "hysteretic"}) {
    out.push_back({name, examples::make_example(name)});
  }
  const multibody::Model model = multibody::load_model(examples + "/fivebar_floor.yaml");
  out.push_back({"fivebar_floor", multibody::make_problem(model, model.formulation)});
  out.push_back({"robertson", examples::make_example("robertson")});  // stiff: implicit integrators only
  return out;
}

/// max |a - b| / max |b| per cost row, over the rows.
double relative_difference(const Eigen::MatrixXd& a, const Eigen::MatrixXd& b) {
  double worst = 0.0;
  for (Eigen::Index c = 0; c < b.rows(); ++c) {
    const double scale = std::max(b.row(c).cwiseAbs().maxCoeff(), 1e-300);
    worst = std::max(worst, (a.row(c) - b.row(c)).cwiseAbs().maxCoeff() / scale);
  }
  return worst;
}

void ratio_table(const std::vector<Case>& all, int reps) {
  fmt::print("Discrete gradients relative to the integrator's own simulation (default tolerances; rosenbrock, of "
             "order 3, at rtol 1e-6 at most)\n");
  fmt::print("{:>10} {:>14} {:>4} {:>6} {:>8} {:>10} {:>12} {:>12}\n", "integrator", "problem", "n_p", "rtol", "steps",
             "sim s", "forward/sim", "adjoint/sim");
  for (const Discrete& d : discrete_integrators()) {
    for (const Case& c : all) {
      if (c.name == "robertson" && d.integrator == Integrator::Dopri5) continue;  // stiff
      Options o = c.problem.options();
      o.integrator = d.integrator;
      if (d.integrator == Integrator::Rosenbrock && o.rtol < 1e-6) {
        o.rtol = 1e-6;
        o.atol = std::max(o.atol, 1e-8);
      }
      const Eigen::VectorXd p = c.problem.nominal_parameters();
      Solution sim;
      const double t_sim = median_time(reps, [&] { sim = simulate(c.problem, p, o); });
      const double t_fwd = median_time(reps, [&] { forward_sensitivity(c.problem, p, o); });
      const double t_adj = median_time(reps, [&] { adjoint(c.problem, p, o); });
      fmt::print("{:>10} {:>14} {:>4} {:>6.0e} {:>8} {:>10.4f} {:>12.2f} {:>12.2f}\n", d.name, c.name,
                 c.problem.n_parameters(), o.rtol, sim.stats.steps, t_sim, t_fwd / t_sim, t_adj / t_sim);
      std::fflush(stdout);
    }
  }
}

/// The loosest decade of rtol (atol = rtol / 100) whose adjoint gradient is within `target` of
/// `reference`, and the median time of that adjoint.
struct Reached {
  double rtol = 0.0;
  double seconds = 0.0;
  double error = 0.0;
  long steps = 0;
};
Reached time_to_accuracy(const Problem& pb, Integrator integrator, const Eigen::MatrixXd& reference, double target,
                         int reps) {
  const Eigen::VectorXd p = pb.nominal_parameters();
  for (double rtol = 1e-3; rtol >= 1e-12; rtol /= 10.0) {
    Options o = pb.options();
    o.integrator = integrator;
    o.rtol = rtol;
    o.atol = rtol * 1e-2;
    Solution adj;
    try {
      adj = adjoint(pb, p, o);
    } catch (const Error&) {
      continue;  // too loose for this problem (an event missed, a step failure)
    }
    const double error = relative_difference(adj.cost_gradient, reference);
    if (error > target) continue;
    return {rtol, median_time(reps, [&] { adjoint(pb, p, o); }), error, adj.stats.steps};
  }
  return {};
}

void accuracy_table(const std::vector<Case>& all, int reps) {
  constexpr double kTarget = 1e-6;
  fmt::print("\nAdjoint gradient within {:.0e} of the continuous one (CVODES forward, rtol 1e-12): time at the loosest "
             "tolerance that reaches it\n",
             kTarget);
  fmt::print("{:>14} {:>10} {:>8} {:>8} {:>10} {:>10} {:>16}\n", "problem", "integrator", "rtol", "steps", "error",
             "seconds", "CVODES/discrete");
  for (const Case& c : all) {
    if (c.name != "galan" && c.name != "fivebar_floor" && c.name != "hiskens" && c.name != "robertson") continue;
    Options tight = c.problem.options();
    tight.rtol = 1e-12;
    tight.atol = 1e-14;
    const Eigen::MatrixXd reference = forward_sensitivity(c.problem, c.problem.nominal_parameters(), tight).cost_gradient;
    const Reached cvodes = time_to_accuracy(c.problem, Integrator::Cvodes, reference, kTarget, reps);
    fmt::print("{:>14} {:>10} {:>8.0e} {:>8} {:>10.2e} {:>10.4f} {:>16}\n", c.name, "cvodes", cvodes.rtol, cvodes.steps,
               cvodes.error, cvodes.seconds, "1.00");
    for (const Discrete& d : discrete_integrators()) {
      if (c.name == "robertson" && d.integrator == Integrator::Dopri5) {
        fmt::print("{:>14} {:>10}   stiff: more than Options::max_steps at every tolerance\n", c.name, d.name);
        continue;
      }
      const Reached r = time_to_accuracy(c.problem, d.integrator, reference, kTarget, reps);
      fmt::print("{:>14} {:>10} {:>8.0e} {:>8} {:>10.2e} {:>10.4f} {:>16.2f}\n", c.name, d.name, r.rtol, r.steps,
                 r.error, r.seconds, r.seconds > 0.0 ? cvodes.seconds / r.seconds : 0.0);
    }
    std::fflush(stdout);
  }
}

}  // namespace

int main(int argc, char** argv) {
  saltus::retain_freed_heap_memory();
  const std::string examples = argc > 1 ? argv[1] : "examples";
  const int reps = argc > 2 ? std::atoi(argv[2]) : 5;
  const std::vector<Case> all = cases(examples);
  ratio_table(all, reps);
  accuracy_table(all, reps);
  return 0;
}
