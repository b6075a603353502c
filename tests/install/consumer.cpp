// Uses an installed Saltus: a problem defined here, a built-in, an equation model from text and
// the optimizer, through find_package(saltus) or pkg-config.
#include <saltus/equations/equation_file.hpp>
#include <saltus/examples/builtin.hpp>
#include <saltus/optimize/optimize.hpp>
#include <saltus/solvers/adjoint.hpp>
#include <saltus/solvers/simulate.hpp>

#include <cstdio>

int main() {
  // x' = -k x, x(0) = 1: x(1) = exp(-k), d/dk = -exp(-k).
  saltus::Problem decay("decay");
  decay.set_states({"x"});
  decay.add_parameter("k", 0.5);
  decay.set_initial_state([](const auto&, auto x0) { x0[0] = 1.0; });
  decay.add_mode("m", [](auto, const auto& x, const auto& p, auto xdot) { xdot[0] = -p[0] * x[0]; });
  decay.add_terminal_cost("x_T", [](const auto& x, const auto&) { return x[0]; });
  const saltus::Solution a = saltus::adjoint(decay);
  std::printf("decay x_T = %.6f, d/dk = %.6f\n", a.costs[0], a.cost_gradient(0, 0));

  const saltus::Solution galan = saltus::forward_sensitivity(saltus::examples::make_example("galan"));
  std::printf("galan G = %.6f, dG/dp = %.6f\n", galan.costs[0], galan.cost_gradient(0, 0));

  const saltus::Problem file = saltus::equations::parse_equation_problem(
      "horizon: 1\nparameters: {k: 0.5}\nstates: {x: 1}\nmodes: {m: {rhs: [-k*x]}}\ncosts: {x_T: {terminal: x}}\n",
      "decay.yaml");
  std::printf("equations x_T = %.6f\n", saltus::simulate(file).costs[0]);

  saltus::OptimizeOptions o;
  o.cost = "x_T";
  o.vary = {{"k", 0.1, 2.0}};
  o.run = decay.options();
  std::printf("optimum k = %.6f\n", saltus::optimize(decay, o).optimum[0]);
  return 0;
}
