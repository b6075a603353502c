// time_events (docs/benchmarks.md): x' = 1, x(0) = x0; at t = alpha x <- x t, at t = beta
// x <- delta x, at t = gamma x <- 2 x^2. The event times are parameters.
#include <saltus/examples/builtin.hpp>

#include <fmt/format.h>

#include <utility>

namespace saltus::examples {

Problem time_events() {
  Problem pb("time_events", "time-triggered events with state-dependent jumps");
  pb.set_states({"x"});
  pb.add_parameter("x0", 1.0, "initial state");
  pb.add_parameter("alpha", 1.5, "time of the jump x <- x t [s]");
  pb.add_parameter("beta", 2.5, "time of the jump x <- delta x [s]");
  pb.add_parameter("delta", 5.5, "gain of the second jump");
  pb.add_parameter("gamma", 3.5, "time of the jump x <- 2 x^2 [s]");
  enum { x0, alpha, beta, delta, gamma };
  // An event time at or before the start never fires (a guard t - t_e that starts at or past zero).
  pb.add_parameter_check([](In<double> p) {
    for (const auto& [name, index] : {std::pair{"alpha", int{alpha}}, {"beta", int{beta}}, {"gamma", int{gamma}}}) {
      if (!(p[index] > 0.0)) {
        throw InputError(fmt::format("time_events needs {} > 0 (its event fires after the start t0 = 0), got {}", name, p[index]));
      }
    }
  });
  pb.set_initial_state([](const auto& p, auto x) { x[0] = p[x0]; });
  pb.add_mode("ramp", [](auto, const auto&, const auto&, auto xdot) { xdot[0] = 1.0; });
  pb.add_event("at_alpha", Direction::Rising,
               [](auto t, const auto&, const auto& p) { return t - p[alpha]; })
      .jump([](auto t, const auto& x, const auto&, auto xp) { xp[0] = x[0] * t; });
  pb.add_event("at_beta", Direction::Rising,
               [](auto t, const auto&, const auto& p) { return t - p[beta]; })
      .jump([](auto, const auto& x, const auto& p, auto xp) { xp[0] = p[delta] * x[0]; });
  pb.add_event("at_gamma", Direction::Rising,
               [](auto t, const auto&, const auto& p) { return t - p[gamma]; })
      .jump([](auto, const auto& x, const auto&, auto xp) { xp[0] = 2.0 * x[0] * x[0]; });
  pb.add_terminal_cost("x_T", [](const auto& x, const auto&) { return x[0]; });
  pb.options().tf = 5.0;
  pb.options().rtol = 1e-10;
  pb.options().atol = 1e-12;
  return pb;
}

}  // namespace saltus::examples
