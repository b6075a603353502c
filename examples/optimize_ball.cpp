// The restitution that maximizes the height at t = 15 of a drag-free ball dropped from 50 m
// (docs/optimize.md). The closed form gives e* = 0.866554105437, h* = 19.3679028155.
#include <saltus/examples/builtin.hpp>
#include <saltus/optimize/optimize.hpp>

#include <cstdio>

int main() {
  saltus::Problem ball = saltus::examples::make_example("ball1d");
  ball.set_nominal("c", 0.0);  // no drag
  ball.set_nominal("h0", 50.0);
  ball.set_nominal("g", 9.8);
  ball.set_nominal("e", 0.82);  // the start

  saltus::OptimizeOptions o;
  o.cost = "h_T";
  o.maximize = true;
  o.vary = {{"e", 0.78, 0.92}};                 // name, lower, upper
  o.method = saltus::GradientMethod::Adjoint;  // or Forward
  o.run = ball.options();
  saltus::set_horizon(o.run, 15.0);
  o.on_iterate = [](const saltus::OptimizeIterate& it) {
    std::printf("run %d: e = %.12f, h_T = %.10f\n", it.index, it.x[0], it.cost);
  };

  const saltus::OptimizeResult r = saltus::optimize(ball, o);
  std::printf("optimum e = %.9f, h_T = %.7f after %d runs (%s)\n", r.optimum[0], r.cost, r.evaluations,
              r.converged ? "converged" : "not converged");
  return r.converged ? 0 : 1;
}
