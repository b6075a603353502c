// box2d (docs/benchmarks.md): point mass in the box -1 <= x <= 1, y >= 0 with quadratic drag.
// At an impact the normal velocity becomes -e times itself and the tangential one is scaled by
// (1 - mu).
#include <saltus/examples/builtin.hpp>

#include <limits>

namespace saltus::examples {

Problem box2d() {
  Problem pb("box2d", "point mass bouncing in a box with quadratic drag");
  pb.set_states({"x", "y", "vx", "vy"});
  pb.add_parameter("c", 0.05, "quadratic drag coefficient [1/m]");
  pb.add_parameter("e", 0.9, "coefficient of restitution [-]");
  pb.add_parameter("mu", 0.1, "tangential velocity loss at impact [-]");
  pb.add_parameter("vx0", 2.5, "initial horizontal velocity [m/s]");
  pb.add_parameter("g", 9.81, "gravity [m/s^2]");
  pb.bound_parameter("c", 0.0, std::numeric_limits<double>::infinity());
  pb.bound_parameter("e", 0.0, 1.0);
  pb.bound_parameter("mu", 0.0, 1.0);
  enum { c, e, mu, vx0, g };
  pb.set_initial_state([](const auto& p, auto x0) {
    x0[0] = 0.2;
    x0[1] = 1.0;
    x0[2] = p[vx0];
    x0[3] = 0.0;
  });
  pb.add_mode("flight", [](auto, const auto& x, const auto& p, auto xdot) {
    using std::sqrt;
    const auto speed = sqrt(x[2] * x[2] + x[3] * x[3]);
    xdot[0] = x[2];
    xdot[1] = x[3];
    xdot[2] = -p[c] * speed * x[2];
    xdot[3] = -p[g] - p[c] * speed * x[3];
  });
  const auto wall_bounce = [](auto, const auto& x, const auto& p, auto xp) {
    xp = x;
    xp[2] = -p[e] * x[2];
    xp[3] = (1.0 - p[mu]) * x[3];
  };
  pb.add_event("right_wall", Direction::Rising,
               [](auto, const auto& x, const auto&) { return x[0] - 1.0; })
      .jump(wall_bounce);
  pb.add_event("left_wall", Direction::Falling,
               [](auto, const auto& x, const auto&) { return x[0] + 1.0; })
      .jump(wall_bounce);
  pb.add_event("floor", Direction::Falling, [](auto, const auto& x, const auto&) { return x[1]; })
      .jump([](auto, const auto& x, const auto& p, auto xp) {
        xp = x;
        xp[2] = (1.0 - p[mu]) * x[2];
        xp[3] = -p[e] * x[3];
      });
  pb.add_terminal_cost("dist_T", [](const auto& x, const auto&) {
    return x[0] * x[0] + x[1] * x[1];
  });
  pb.add_running_cost("kinetic", [](auto, const auto& x, const auto&, const auto&) {
    return x[2] * x[2] + x[3] * x[3];
  });
  pb.options().tf = 3.0;
  pb.options().rtol = 1e-10;
  pb.options().atol = 1e-12;
  return pb;
}

}  // namespace saltus::examples
