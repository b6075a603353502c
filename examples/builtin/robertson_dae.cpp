// robertson_dae (docs/dae.md): the Robertson kinetics of `robertson` with the conservation law
// as the algebraic equation (SUNDIALS idasRoberts_FSA_dns):
//   y1' = -p1 y1 + p2 y2 y3,  y2' = p1 y1 - p2 y2 y3 - p3 y2^2,  0 = y1 + y2 + y3 - 1,
// y(0) = (1, 0, 0); cost G = integral of y3 over [0, 4e7]; the same tolerances as `robertson`,
// whose G and dG/dp it reproduces.
#include <saltus/examples/builtin.hpp>

#include <limits>

namespace saltus::examples {

Problem robertson_dae() {
  Problem pb("robertson_dae", "stiff chemical kinetics with the conservation law as algebraic equation (IDAS)");
  pb.set_states({"y1", "y2", "y3"});
  pb.set_algebraic_states({"y3"});
  pb.add_parameter("p1", 0.04, "rate constant of y1 -> y2 [1/s]");
  pb.add_parameter("p2", 1e4, "rate constant of y2 + y3 -> y1 + y3");
  pb.add_parameter("p3", 3e7, "rate constant of 2 y2 -> y2 + y3");
  // A negative rate constant makes the kinetics blow up (CVODES then fails after t + h = t).
  for (const char* rate : {"p1", "p2", "p3"}) pb.bound_parameter(rate, 0.0, std::numeric_limits<double>::infinity());
  pb.set_initial_state([](const auto&, auto y) {
    y[0] = 1.0;
    y[1] = 0.0;
    y[2] = 0.0;
  });
  pb.add_residual_mode("kinetics", [](auto, const auto& y, const auto& ydot, const auto& p, auto res) {
    res[0] = ydot[0] - (-p[0] * y[0] + p[1] * y[1] * y[2]);
    res[1] = ydot[1] - (p[0] * y[0] - p[1] * y[1] * y[2] - p[2] * y[1] * y[1]);
    res[2] = y[0] + y[1] + y[2] - 1.0;
  });
  pb.add_running_cost("G", [](auto, const auto& y, const auto&, const auto&) { return y[2]; });
  Options& o = pb.options();
  o.tf = 4e7;
  o.output_times = {0.0};
  for (double t = 0.4; t <= 4e7 * (1 + 1e-12); t *= 10.0) o.output_times.push_back(t);
  o.output_times.back() = 4e7;
  o.rtol = 1e-8;
  o.atol_per_state = {1e-12, 1e-18, 1e-10};
  o.cost_atol = 1e-6;
  return pb;
}

}  // namespace saltus::examples
