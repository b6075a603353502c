// The README's example: define a hybrid ODE in C++ and get exact gradients through its events.
#include <saltus/solvers/simulate.hpp>

#include <cstdio>

int main() {
  using namespace saltus;
  Problem ball("ball");
  ball.set_states({"h", "v"});
  ball.add_parameter("g", 9.81);
  ball.add_parameter("e", 0.8);
  ball.set_initial_state([](const auto&, auto x) { x << 1.0, 0.0; });
  ball.add_mode("flight", [](auto, const auto& x, const auto& p, auto xdot) {
    xdot[0] = x[1];
    xdot[1] = -p[0];
  });
  ball.add_event("impact", Direction::Falling, [](auto, const auto& x, const auto&) { return x[0]; })
      .jump([](auto, const auto& x, const auto& p, auto xp) { xp << x[0], -p[1] * x[1]; });
  ball.add_running_cost("energy", [](auto, const auto& x, const auto&, const auto&) { return 0.5 * x[1] * x[1]; });
  ball.options().tf = 1.5;

  const Solution s = forward_sensitivity(ball);
  std::printf("energy = %.6f, d/dg = %.6f, d/de = %.6f, first impact at t = %.6f\n", s.costs[0],
              s.cost_gradient(0, 0), s.cost_gradient(0, 1), s.events[0].time);
}
