// circle_drift (docs/dae.md, "Index 2"): a Hessenberg index-2 hybrid DAE with a closed form. A
// point y = (x1, x2) is held on the circle |y| = R by the multiplier z while a horizontal drift
// d pushes it:
//   y' = (d, 0) + z y,   0 = (|y|^2 - R^2) / 2     (k_y f_z = |y|^2 = R^2: index 2),
// so that z = -d x1 / R^2 and the angle obeys theta' = -(d / R) sin theta. It starts at angle
// theta0 with d = +a (mode "push"); when x2 falls through h the drift reverses (mode "back").
// Costs G = integral of x1 dt and x2_T = x2(T); tests/test_dae.cpp checks them, the event time
// and their derivatives against the closed form tan(theta/2) = tan(theta0/2) exp(-a t / R).
// The completion (Problem::set_completion) projects y radially onto the circle and solves the
// hidden constraint for z.
#include <saltus/examples/builtin.hpp>

namespace saltus::examples {

namespace {

/// The mode with drift sign `sign` (+1 push, -1 back); p = (a, R, theta0, h).
auto residual(double sign) {
  return [sign](auto, const auto& x, const auto& xdot, const auto& p, auto r) {
    const auto d = sign * p[0];
    r[0] = xdot[0] - (d + x[2] * x[0]);
    r[1] = xdot[1] - x[2] * x[1];
    r[2] = 0.5 * (x[0] * x[0] + x[1] * x[1] - p[1] * p[1]);
  };
}

auto completion(double sign) {
  return [sign](auto, const auto& guess, const auto& p, auto x, auto xdot) {
    using std::sqrt;
    const auto d = sign * p[0];
    const auto radius = p[1];
    const auto scale = radius / sqrt(guess[0] * guess[0] + guess[1] * guess[1]);
    x[0] = guess[0] * scale;
    x[1] = guess[1] * scale;
    x[2] = -d * x[0] / (radius * radius);
    xdot[0] = d + x[2] * x[0];
    xdot[1] = x[2] * x[1];
    xdot[2] = -d * xdot[0] / (radius * radius);
  };
}

}  // namespace

Problem circle_drift() {
  Problem pb("circle_drift", "a point held on a circle by a multiplier, pushed by a drift that reverses (index-2 DAE)");
  pb.set_states({"x1", "x2", "z"});
  pb.set_algebraic_states({"z"});
  pb.add_parameter("a", 1.0, "drift speed [m/s]");
  pb.add_parameter("R", 1.0, "radius of the circle [m]");
  pb.add_parameter("theta0", 2.0, "initial angle [rad]");
  pb.add_parameter("h", 0.5, "height at which the drift reverses [m]");
  pb.add_parameter_check([](In<double> p) {
    if (!(p[0] > 0.0)) throw InputError("circle_drift needs a > 0");
    if (!(p[1] > 0.0)) throw InputError("circle_drift needs R > 0");
  });
  pb.set_initial_state([](const auto& p, auto x0) {
    using std::cos, std::sin;
    x0[0] = p[1] * cos(p[2]);
    x0[1] = p[1] * sin(p[2]);
    x0[2] = 0.0 * p[0];  // a guess: the completion solves for it
  });
  const int push = pb.add_residual_mode("push", residual(+1.0));
  const int back = pb.add_residual_mode("back", residual(-1.0));
  pb.set_completion(push, completion(+1.0));
  pb.set_completion(back, completion(-1.0));
  pb.add_event("reverse", Direction::Falling, [](auto, const auto& x, const auto& p) { return x[1] - p[3]; })
      .only_in({push})
      .switch_to(back);
  pb.add_running_cost("G", [](auto, const auto& x, const auto&, const auto&) { return x[0]; });
  pb.add_terminal_cost("x2_T", [](const auto& x, const auto&) { return x[1]; });
  pb.options().tf = 3.0;
  pb.options().rtol = 1e-10;
  pb.options().atol = 1e-12;
  return pb;
}

}  // namespace saltus::examples
