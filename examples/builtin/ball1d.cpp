// ball1d (docs/benchmarks.md): state (h, v); h' = v, v' = -g - c v; impact when h - r falls
// through zero, v+ = -e v-. When the bounces accumulate (a Zeno sequence, docs/events.md) the
// ball rests at h = r, v = 0.
#include <saltus/examples/builtin.hpp>

#include <fmt/format.h>

#include <limits>

namespace saltus::examples {

Problem ball1d() {
  Problem pb("ball1d", "bouncing ball with linear drag");
  pb.set_states({"h", "v"});
  pb.add_parameter("g", 9.81, "gravity [m/s^2]");
  pb.add_parameter("c", 0.3, "linear drag coefficient [1/s]");
  pb.add_parameter("e", 0.8, "coefficient of restitution [-]");
  pb.add_parameter("h0", 1.0, "initial height [m]");
  pb.add_parameter("v0", 0.0, "initial velocity [m/s]");
  pb.add_parameter("r", 0.0, "height of the contact (ball radius) [m]");
  pb.bound_parameter("c", 0.0, std::numeric_limits<double>::infinity());
  pb.bound_parameter("e", 0.0, 1.0);
  enum { g, c, e, h0, v0, r };
  // Below its floor the ball would fall for ever, its guard never crossing from above.
  pb.add_parameter_check([](In<double> p) {
    if (!(p[h0] >= p[r])) {
      throw InputError(fmt::format("ball1d needs h0 >= r (the ball starts above its floor), got h0 = {}, r = {}", p[h0], p[r]));
    }
  });
  pb.set_initial_state([](const auto& p, auto x0) {
    x0[0] = p[h0];
    x0[1] = p[v0];
  });
  const int flight = pb.add_mode("flight", [](auto, const auto& x, const auto& p, auto xdot) {
    xdot[0] = x[1];
    xdot[1] = -p[g] - p[c] * x[1];
  });
  // Resting on the floor: the contact force balances gravity, nothing moves.
  const int rest = pb.add_mode("rest", [](auto, const auto&, const auto&, auto xdot) {
    xdot[0] = 0.0;
    xdot[1] = 0.0;
  });
  pb.add_event("impact", Direction::Falling, [](auto, const auto& x, const auto& p) {
      return x[0] - p[r];
    }).jump([](auto, const auto& x, const auto& p, auto xp) {
    xp[0] = x[0];
    xp[1] = -p[e] * x[1];
  }).only_in({flight})
    // The bounces accumulate (Zeno): the ball comes to rest on the contact height.
    .rests_in(rest, [](auto, const auto&, const auto& p, auto xp) {
      xp[0] = p[r];
      xp[1] = 0.0;
    });
  // It lifts off if the floor would have to pull: the free acceleration -g turns upward.
  pb.add_event("lift_off", Direction::Rising, [](auto, const auto&, const auto& p) { return -p[g]; })
      .only_in({rest})
      .switch_to(flight);
  pb.add_running_cost("energy_rate", [](auto, const auto& x, const auto& xdot, const auto&) {
    return x[1] * x[1] + xdot[1] * x[1];
  });
  pb.add_terminal_cost("h_T", [](const auto& x, const auto&) { return x[0]; });
  pb.add_running_cost("h_mean", [](auto, const auto& x, const auto&, const auto&) { return x[0]; });
  pb.add_terminal_cost("v_T", [](const auto& x, const auto&) { return x[1]; });
  pb.options().tf = 2.0;
  pb.options().rtol = 1e-10;
  pb.options().atol = 1e-12;
  return pb;
}

}  // namespace saltus::examples
