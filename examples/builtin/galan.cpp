// galan (docs/benchmarks.md; seed 002 Sec. 5.1): x' = 4 - x while x^3 - 5x^2 + 7x <= p, else
// x' = 10 - 2x. The guard r = x^3 - 5x^2 + 7x - p rises A -> B and falls B -> A.
#include <saltus/examples/builtin.hpp>

namespace saltus::examples {

Problem galan() {
  Problem pb("galan", "switched scalar ODE (Galan et al.; seed 002 Sec. 5.1)");
  pb.set_states({"x"});
  pb.add_parameter("p", 2.9, "switching threshold of x^3 - 5x^2 + 7x");
  pb.set_initial_state([](const auto&, auto x0) { x0[0] = 0.0; });
  const int mode_a = pb.add_mode("A", [](auto, const auto& x, const auto&, auto xdot) {
    xdot[0] = 4.0 - x[0];
  });
  const int mode_b = pb.add_mode("B", [](auto, const auto& x, const auto&, auto xdot) {
    xdot[0] = 10.0 - 2.0 * x[0];
  });
  const auto guard = [](auto, const auto& x, const auto& p) {
    return x[0] * x[0] * x[0] - 5.0 * x[0] * x[0] + 7.0 * x[0] - p[0];
  };
  // The mode follows from the logical state: A while r <= 0 (also for overrides of p).
  pb.set_initial_mode_rule([mode_a, mode_b, guard](In<double> x0, In<double> p) {
    return guard(0.0, x0, p) <= 0.0 ? mode_a : mode_b;
  });
  pb.add_event("A_to_B", Direction::Rising, guard).only_in({mode_a}).switch_to(mode_b);
  pb.add_event("B_to_A", Direction::Falling, guard).only_in({mode_b}).switch_to(mode_a);
  pb.add_running_cost("G", [](auto, const auto& x, const auto&, const auto&) { return x[0]; });
  pb.options().tf = 5.0;
  pb.options().rtol = 1e-10;
  pb.options().atol = 1e-12;
  return pb;
}

}  // namespace saltus::examples
