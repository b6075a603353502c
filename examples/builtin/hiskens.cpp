// hiskens (docs/benchmarks.md; Hiskens & Pai 2000, the PETSc TSAdjoint hybrid tutorial):
// u' = A1 u in mode 1, u' = A2 u in mode 2; 1 -> 2 when u2 - lambda1 u1 crosses zero, 2 -> 1
// when u2 - lambda2 u1 crosses zero (either direction); no state reset.
#include <saltus/examples/builtin.hpp>

namespace saltus::examples {

Problem hiskens() {
  Problem pb("hiskens", "switched linear system (Hiskens & Pai 2000)");
  pb.set_states({"u1", "u2"});
  pb.add_parameter("lambda1", 2.75, "slope of the switching line 1 -> 2");
  pb.add_parameter("lambda2", 0.36, "slope of the switching line 2 -> 1");
  pb.add_parameter("u1_0", 0.0, "initial u1");
  pb.add_parameter("u2_0", 1.0, "initial u2");
  enum { lambda1, lambda2, u1_0, u2_0 };
  pb.set_initial_state([](const auto& p, auto u) {
    u[0] = p[u1_0];
    u[1] = p[u2_0];
  });
  const int mode1 = pb.add_mode("mode1", [](auto, const auto& u, const auto&, auto udot) {
    udot[0] = u[0] - 100.0 * u[1];
    udot[1] = 10.0 * u[0] + u[1];
  });
  const int mode2 = pb.add_mode("mode2", [](auto, const auto& u, const auto&, auto udot) {
    udot[0] = u[0] + 10.0 * u[1];
    udot[1] = -100.0 * u[0] + u[1];
  });
  pb.add_event("to_mode2", Direction::Either,
               [](auto, const auto& u, const auto& p) { return u[1] - p[lambda1] * u[0]; })
      .only_in({mode1})
      .switch_to(mode2);
  pb.add_event("to_mode1", Direction::Either,
               [](auto, const auto& u, const auto& p) { return u[1] - p[lambda2] * u[0]; })
      .only_in({mode2})
      .switch_to(mode1);
  pb.add_terminal_cost("u1_T", [](const auto& u, const auto&) { return u[0]; });
  pb.add_terminal_cost("u2_T", [](const auto& u, const auto&) { return u[1]; });
  pb.options().tf = 0.125;
  pb.options().rtol = 1e-10;
  pb.options().atol = 1e-12;
  return pb;
}

}  // namespace saltus::examples
