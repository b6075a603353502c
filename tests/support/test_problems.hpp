#pragma once
// Small problems several tests share.
#include <saltus/core/problem.hpp>
#include <saltus/examples/builtin.hpp>
#include <saltus/verify/gradient.hpp>

#include <gtest/gtest.h>

#include <cmath>

#include <map>

namespace saltus::testing {

// theory/hybrid-ode.md section 10: x1' = x2' = 1; guard x1 = p1 switches x2' to 2, guard
// x2 = p2 switches x1' to 3. Modes are bit masks of the events that have fired.
inline Problem two_switches(double p1, double p2) {
  Problem pb("two_switches");
  pb.set_states({"x1", "x2"});
  pb.add_parameter("p1", p1);
  pb.add_parameter("p2", p2);
  pb.set_initial_state([](const auto&, auto x) {
    x[0] = 0.0;
    x[1] = 0.0;
  });
  const char* names[4] = {"none", "first_fired", "second_fired", "both_fired"};
  for (int m = 0; m < 4; ++m) {
    pb.add_mode(names[m], [m](auto, const auto&, const auto&, auto xdot) {
      xdot[0] = (m & 2) ? 3.0 : 1.0;
      xdot[1] = (m & 1) ? 2.0 : 1.0;
    });
  }
  pb.add_event("first", Direction::Rising,
               [](auto, const auto& x, const auto& p) { return x[0] - p[0]; })
      .only_in({0, 2})
      .switch_to(std::map<int, int>{{0, 1}, {2, 3}});
  pb.add_event("second", Direction::Rising,
               [](auto, const auto& x, const auto& p) { return x[1] - p[1]; })
      .only_in({0, 1})
      .switch_to(std::map<int, int>{{0, 2}, {1, 3}});
  pb.add_terminal_cost("x1_T", [](const auto& x, const auto&) { return x[0]; });
  pb.options().tf = 2.0;
  pb.options().rtol = 1e-10;
  pb.options().atol = 1e-12;
  return pb;
}


/// box2d without drag or friction, aimed so that the right wall and the floor are hit at the
/// same instant: x = 0.2 + vx0 t reaches 1 when y = 1 - g t^2 / 2 reaches 0. The two resets
/// commute (mu = 0, c = 0), so the gradient exists.
inline Problem corner_impact_box2d() {
  Problem pb = examples::box2d();
  pb.set_nominal("c", 0.0);
  pb.set_nominal("mu", 0.0);
  pb.set_nominal("vx0", 0.8 / std::sqrt(2.0 / 9.81));
  pb.options().tf = 0.8;
  return pb;
}

/// Asserts a gradient of corner_impact_box2d() against central differences with step 1e-6:
/// the differences straddle the corner (one event each side) and the resets commute, so they
/// agree to 1e-4 (1 + |dpsi/dp|).
inline void expect_corner_impact_differences(const Problem& pb, const Eigen::MatrixXd& gradient) {
  const Eigen::VectorXd p = pb.nominal_parameters();
  // Tight tolerances for the differenced runs: their integration error divided by the step
  // (rtol / 1e-6) must stay well below the 1e-4 asserted.
  Options tight = pb.options();
  tight.rtol = 1e-12;
  tight.atol = 1e-14;
  const GradientEstimate fd = central_differences(pb, p, tight, 1e-6);
  for (int c = 0; c < pb.n_costs(); ++c) {
    for (int k = 0; k < pb.n_parameters(); ++k) {
      EXPECT_NEAR(gradient(c, k), fd.cost_gradient(c, k),
                  1e-4 * (1.0 + std::abs(fd.cost_gradient(c, k))))
          << pb.cost(c).name << " / " << pb.parameter_names()[static_cast<size_t>(k)];
    }
  }
}

/// b = k (t - 1)^3 crosses zero at an inflection point at t = 1, where r-dot = 0 (grazing),
/// while a = t keeps the state moving.
inline Problem inflection_crossing() {
  Problem pb("inflection");
  pb.set_states({"a", "b"});
  pb.add_parameter("k", 1.0);
  pb.set_initial_state([](const auto& p, auto x) {
    x[0] = 0.0 * p[0];
    x[1] = -1.0;
  });
  pb.add_mode("m", [](auto t, const auto&, const auto& p, auto xdot) {
    xdot[0] = 1.0;
    xdot[1] = 3.0 * p[0] * (t - 1.0) * (t - 1.0);
  });
  pb.add_event("touch", Direction::Either, [](auto, const auto& x, const auto&) { return x[1]; });
  pb.add_terminal_cost("b_T", [](const auto& x, const auto&) { return x[1]; });
  pb.options().tf = 2.0;
  // Tight tolerances so that the numerical crossing lies close to the inflection point (an
  // error eps in b moves the crossing by eps^(1/3) and its speed to 3 eps^(2/3)).
  pb.options().rtol = 1e-12;
  pb.options().atol = 1e-14;
  return pb;
}

}  // namespace saltus::testing
