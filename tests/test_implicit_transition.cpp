// Implicit transitions of DAE events (docs/dae.md, "Implicit transitions"; theory/hybrid-dae.md
// sections 1-2) against a closed form differentiated by complex step, independently of the
// transition code: a state relaxes towards c until it reaches h, then towards d, and the event
// sets the rate after it from the rate before it and the algebraic state z = y^2 on both sides:
//     T = y-dot+ + e y-dot- + kappa (z+ - z-) = 0.
#include <saltus/core/error.hpp>
#include <saltus/core/parameter_subset.hpp>
#include <saltus/equations/equation_file.hpp>
#include <saltus/solvers/adjoint.hpp>
#include <saltus/solvers/simulate.hpp>
#include <saltus/verify/gradient.hpp>

#include <fmt/format.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <string>

#include "support/expect_message.hpp"

using namespace saltus;
using saltus::test_support::expect_message;

namespace {

constexpr double kHorizon = 3.0;

/// p = (c, d, e, h, kappa, y0). With `algebraic`, z = y^2 is an algebraic state and T reads it;
/// without, the modes are explicit right-hand sides (an ODE run on IDAS) and kappa is unused.
Problem relaxation(bool algebraic) {
  Problem pb("relaxation", "relaxes towards c, then towards d after an implicit transition at y = h");
  pb.set_states(algebraic ? std::vector<std::string>{"y", "z"} : std::vector<std::string>{"y"});
  if (algebraic) pb.set_algebraic_states({"z"});
  for (const auto& [name, value] :
       {std::pair{"c", 2.0}, std::pair{"d", 0.5}, std::pair{"e", 0.6}, std::pair{"h", 1.5}, std::pair{"kappa", 0.1},
        std::pair{"y0", 0.0}}) {
    pb.add_parameter(name, value);
  }
  pb.set_initial_state([algebraic](const auto& p, auto x0) {
    x0[0] = p[5];
    if (algebraic) x0[1] = 0.0 * p[5];  // a guess: the consistent start makes it y0^2
  });
  int a = 0, b = 0;
  if (algebraic) {
    const auto mode = [](int target) {
      return [target](auto, const auto& x, const auto& xdot, const auto& p, auto r) {
        r[0] = xdot[0] - (p[target] - x[0]);
        r[1] = x[1] - x[0] * x[0];
      };
    };
    a = pb.add_residual_mode("towards_c", mode(0));
    b = pb.add_residual_mode("towards_d", mode(1));
  } else {
    a = pb.add_mode("towards_c", [](auto, const auto& x, const auto& p, auto xdot) { xdot[0] = p[0] - x[0]; });
    b = pb.add_mode("towards_d", [](auto, const auto& x, const auto& p, auto xdot) { xdot[0] = p[1] - x[0]; });
  }
  pb.add_event("reach_h", Direction::Rising, [](auto, const auto& x, const auto& p) { return x[0] - p[3]; })
      .only_in({a})
      .switch_to(b)
      .transition([algebraic](auto, const auto& x_plus, const auto& xdot_plus, const auto& x_minus,
                              const auto& xdot_minus, const auto& p, auto r) {
        r[0] = xdot_plus[0] + p[2] * xdot_minus[0];
        if (algebraic) r[0] += p[4] * (x_plus[1] - x_minus[1]);
      });
  pb.add_running_cost("G", [](auto, const auto& x, const auto&, const auto&) { return x[0]; });
  pb.add_terminal_cost("y_T", [](const auto& x, const auto&) { return x[0]; });
  if (algebraic) pb.add_terminal_cost("z_T", [](const auto& x, const auto&) { return x[1]; });
  pb.options().tf = kHorizon;
  pb.options().rtol = 1e-10;
  pb.options().atol = 1e-12;
  return pb;
}

/// The closed form: y = c + (y0 - c) e^-t until y = h at t_e = ln((c - y0) / (c - h)); then
/// y+ solves kappa y+^2 - y+ + q = 0, q = d + e (c - h) - kappa h^2 (the root near q), and
/// y = d + (y+ - d) e^-(t - t_e).
struct Closed {
  Complex t_e, y_plus, G, y_T, z_T;
};
Closed closed_form(const VectorX<Complex>& p, bool algebraic) {
  const Complex c = p[0], d = p[1], e = p[2], h = p[3], kappa = algebraic ? p[4] : Complex(0.0), y0 = p[5];
  Closed out;
  out.t_e = std::log((c - y0) / (c - h));
  const Complex q = d + e * (c - h) - kappa * h * h;
  out.y_plus = 2.0 * q / (1.0 + std::sqrt(1.0 - 4.0 * kappa * q));
  const Complex decay = std::exp(-(kHorizon - out.t_e));
  out.y_T = d + (out.y_plus - d) * decay;
  out.z_T = out.y_T * out.y_T;
  out.G = c * out.t_e + (y0 - c) * (1.0 - std::exp(-out.t_e)) + d * (kHorizon - out.t_e) +
          (out.y_plus - d) * (1.0 - decay);
  return out;
}

/// The closed form's derivatives by complex step, one parameter at a time: rows G, y_T, z_T,
/// t_e; columns the parameters.
Eigen::MatrixXd closed_form_gradient(const Eigen::VectorXd& p, bool algebraic) {
  Eigen::MatrixXd out(4, p.size());
  for (Eigen::Index j = 0; j < p.size(); ++j) {
    VectorX<Complex> q = p.cast<Complex>();
    q[j] += Complex(0.0, 1e-30);
    const Closed c = closed_form(q, algebraic);
    out.col(j) << c.G.imag(), c.y_T.imag(), c.z_T.imag(), c.t_e.imag();
  }
  return out / 1e-30;
}

void expect_near_relative(const Eigen::MatrixXd& value, const Eigen::MatrixXd& reference, double tolerance,
                          const std::string& what) {
  ASSERT_EQ(value.rows(), reference.rows()) << what;
  for (Eigen::Index i = 0; i < value.rows(); ++i) {
    for (Eigen::Index j = 0; j < value.cols(); ++j) {
      EXPECT_NEAR(value(i, j), reference(i, j), tolerance * std::max(1.0, std::abs(reference(i, j))))
          << what << " (" << i << ", " << j << ")";
    }
  }
}

class ImplicitTransition : public ::testing::TestWithParam<bool> {};

TEST_P(ImplicitTransition, EveryMethodMatchesTheClosedForm) {
  const bool algebraic = GetParam();
  const Problem pb = relaxation(algebraic);
  EXPECT_EQ(pb.kind(), ProblemKind::Residual);  // a transition runs on IDAS, ODE modes or not
  const Eigen::VectorXd p = pb.nominal_parameters();
  const Closed exact = closed_form(p.cast<Complex>(), algebraic);
  const Eigen::MatrixXd reference = closed_form_gradient(p, algebraic);
  const Eigen::Index nc = pb.n_costs();

  const Solution fwd = forward_sensitivity(pb);
  ASSERT_EQ(fwd.events.size(), 1u);
  EXPECT_NEAR(fwd.events[0].time, exact.t_e.real(), 3e-9);  // rtol 1e-10 on y, y-dot = 0.5 there
  EXPECT_NEAR(fwd.costs[0], exact.G.real(), 1e-8);
  EXPECT_NEAR(fwd.costs[1], exact.y_T.real(), 1e-8);
  if (algebraic) {
    EXPECT_NEAR(fwd.costs[2], exact.z_T.real(), 1e-8);
  }
  expect_near_relative(fwd.cost_gradient, reference.topRows(nc), 1e-7, "forward");
  expect_near_relative(Eigen::MatrixXd(fwd.events[0].dtime_dp.reshaped(1, p.size())), reference.row(3), 1e-7,
                       "event time");

  const Solution adj = adjoint(pb);
  expect_near_relative(adj.cost_gradient, reference.topRows(nc), 1e-7, "adjoint");
  const GradientEstimate cs = complex_step(pb, p, pb.options());
  expect_near_relative(cs.cost_gradient, reference.topRows(nc), 1e-7, "complex step");
  const GradientEstimate cd = central_differences(pb, p, pb.options());
  expect_near_relative(cd.cost_gradient, reference.topRows(nc), 1e-4, "central differences");
}

// Differentiating with respect to some parameters (the command's --wrt): the transition reads
// every parameter still, and the columns are those of the full gradient.
TEST_P(ImplicitTransition, ASubsetOfParametersGivesTheirColumns) {
  const bool algebraic = GetParam();
  const Problem full = relaxation(algebraic);
  const Problem subset = with_free_parameters(full, {"e", "kappa"});
  const Eigen::MatrixXd reference = closed_form_gradient(full.nominal_parameters(), algebraic);
  const Eigen::Index nc = full.n_costs();
  Eigen::MatrixXd columns(nc, 2);
  columns << reference.topRows(nc).col(2), reference.topRows(nc).col(4);
  expect_near_relative(forward_sensitivity(subset).cost_gradient, columns, 1e-7, "forward, subset");
  expect_near_relative(adjoint(subset).cost_gradient, columns, 1e-7, "adjoint, subset");
  const GradientEstimate cs = complex_step(subset, subset.nominal_parameters(), subset.options());
  expect_near_relative(cs.cost_gradient, columns, 1e-7, "complex step, subset");
}

INSTANTIATE_TEST_SUITE_P(Modes, ImplicitTransition, ::testing::Values(true, false),
                         [](const ::testing::TestParamInfo<bool>& info) {
                           return info.param ? std::string("Residual") : std::string("Explicit");
                         });

// The same model as an equation file, the transition written with pre(): the same closed form.
TEST(ImplicitTransitionFile, TheExampleMatchesTheClosedForm) {
  const Problem pb =
      equations::load_equation_problem(std::string(SALTUS_SOURCE_DIR) + "/examples/equations/relaxation_transition.yaml");
  const Eigen::VectorXd p = pb.nominal_parameters();
  const Closed exact = closed_form(p.cast<Complex>(), true);
  const Eigen::MatrixXd reference = closed_form_gradient(p, true);
  const Solution fwd = forward_sensitivity(pb);
  ASSERT_EQ(fwd.events.size(), 1u);
  EXPECT_NEAR(fwd.events[0].time, exact.t_e.real(), 1e-9);
  EXPECT_NEAR(fwd.costs[pb.cost_index("y_T")], exact.y_T.real(), 1e-8);
  expect_near_relative(fwd.cost_gradient, reference.topRows(3), 1e-7, "forward, file");
  expect_near_relative(adjoint(pb).cost_gradient, reference.topRows(3), 1e-7, "adjoint, file");
}

// pre() belongs to transitions; a transition has one equation per differential state and no
// jump beside it: each is one line naming the field.
TEST(ImplicitTransitionFile, BadTransitionsNameTheirField) {
  const std::string base = R"(name: bad
horizon: 1
parameters: {e: {value: 0.5}}
states: {y: 0, z: 0}
algebraic: z
modes:
  m: {residual: ["der(y) - 1", "z - y"]}
costs: {G: {running: y}}
events:
  e1:
    guard: y - 0.5
    direction: rising
)";
  expect_message([&] { equations::parse_equation_problem(base + "    jump: [pre(y), z]\n", "bad.yaml"); },
                 "pre(...) is only available in an implicit transition");
  expect_message([&] { equations::parse_equation_problem(base + "    transition: [\"y - pre(y)\", \"z\"]\n", "bad.yaml"); },
                 "events.e1.transition: expected a list of 1 equations, one per differential state (y), got 2");
  expect_message(
      [&] { equations::parse_equation_problem(base + "    transition: [\"der(y) + pre(der(z))\"]\n", "bad.yaml"); },
      "der(z): 'z' is an algebraic state");
  expect_message(
      [&] {
        equations::parse_equation_problem(base + "    jump: [y, z]\n    transition: [\"y - pre(y)\"]\n", "bad.yaml");
      },
      "an event has a jump or a transition, not both");
}

/// circle_drift (examples/builtin/circle_drift.cpp: a point held on |y| = R by the multiplier
/// z, pushed by a drift a that reverses when x2 falls to h) with an implicit transition into
/// the index-2 mode after the event: n_y - n_c = 2 - 1 = 1 equation,
///     T = x1+ - x1- + s + kappa x1-dot+ = 0,
/// the constraint |y+| = R the other. p = (a, R, theta0, h, s, kappa); costs G = integral of
/// x1 dt, x2_T = x2(T), z_T = z(T).
Problem circle_shift(double kappa) {
  Problem pb("circle_shift", "circle_drift whose point moves along the circle at the reversal");
  pb.set_states({"x1", "x2", "z"});
  pb.set_algebraic_states({"z"});
  for (const auto& [name, value] : {std::pair{"a", 1.0}, std::pair{"R", 1.0}, std::pair{"theta0", 2.0},
                                    std::pair{"h", 0.5}, std::pair{"s", 0.3}, std::pair{"kappa", kappa}}) {
    pb.add_parameter(name, value);
  }
  pb.set_initial_state([](const auto& p, auto x0) {
    x0[0] = p[1] * cos(p[2]);
    x0[1] = p[1] * sin(p[2]);
    x0[2] = 0.0 * p[0];
  });
  const auto residual = [](double sign) {
    return [sign](auto, const auto& x, const auto& xdot, const auto& p, auto r) {
      r[0] = xdot[0] - (sign * p[0] + x[2] * x[0]);
      r[1] = xdot[1] - x[2] * x[1];
      r[2] = 0.5 * (x[0] * x[0] + x[1] * x[1] - p[1] * p[1]);
    };
  };
  const auto completion = [](double sign) {  // radial projection, then the hidden constraint
    return [sign](auto, const auto& guess, const auto& p, auto x, auto xdot) {
      const auto scale = p[1] / sqrt(guess[0] * guess[0] + guess[1] * guess[1]);
      x[0] = guess[0] * scale;
      x[1] = guess[1] * scale;
      x[2] = -sign * p[0] * x[0] / (p[1] * p[1]);
      xdot[0] = sign * p[0] + x[2] * x[0];
      xdot[1] = x[2] * x[1];
      xdot[2] = -sign * p[0] * xdot[0] / (p[1] * p[1]);
    };
  };
  const int push = pb.add_residual_mode("push", residual(+1.0));
  const int back = pb.add_residual_mode("back", residual(-1.0));
  pb.set_completion(push, completion(+1.0));
  pb.set_completion(back, completion(-1.0));
  pb.add_event("reverse", Direction::Falling, [](auto, const auto& x, const auto& p) { return x[1] - p[3]; })
      .only_in({push})
      .switch_to(back)
      .transition([](auto, const auto& x_plus, const auto& xdot_plus, const auto& x_minus, const auto&,
                     const auto& p, auto r) { r[0] = x_plus[0] - x_minus[0] + p[4] + p[5] * xdot_plus[0]; });
  pb.add_running_cost("G", [](auto, const auto& x, const auto&, const auto&) { return x[0]; });
  pb.add_terminal_cost("x2_T", [](const auto& x, const auto&) { return x[1]; });
  pb.add_terminal_cost("z_T", [](const auto& x, const auto&) { return x[2]; });
  pb.options().tf = kHorizon;
  pb.options().rtol = 1e-10;
  pb.options().atol = 1e-12;
  return pb;
}

/// circle_shift's closed form: tan(theta/2) = tan(theta0/2) e^{-a t / R} until R sin theta = h;
/// then x1+ solves T = 0 with x1-dot+ = -a (1 - x1+^2 / R^2), the quadratic
/// (kappa a / R^2) x1+^2 + x1+ - (R cos theta_e - s + kappa a) = 0 (its root near R cos theta_e
/// - s), x2+ > 0, and tan(theta/2) grows like e^{+a (t - t_e) / R}. Rows G, x2_T, z_T, t_e.
Eigen::Vector4<Complex> circle_shift_closed_form(const VectorX<Complex>& p) {
  const Complex a = p[0], R = p[1], theta0 = p[2], h = p[3], s = p[4], kappa = p[5];
  const Complex lambda = a / R;
  const Complex u0 = std::tan(theta0 / 2.0), theta_e = std::asin(h / R), ue = std::tan(theta_e / 2.0);
  const Complex te = std::log(u0 / ue) / lambda;
  const Complex quadratic = kappa * a / (R * R), constant = R * std::cos(theta_e) - s + kappa * a;
  const Complex x1_plus = 2.0 * constant / (1.0 + std::sqrt(1.0 + 4.0 * quadratic * constant));
  const Complex u_plus = std::tan(std::acos(x1_plus / R) / 2.0);
  const Complex uT = u_plus * std::exp(lambda * (kHorizon - te));
  const auto F = [](Complex u) { return std::log(u) - std::log(1.0 + u * u); };
  const Complex x1_T = R * (1.0 - uT * uT) / (1.0 + uT * uT);
  return {R / lambda * (F(u0) - F(ue)) + R / lambda * (F(uT) - F(u_plus)), R * 2.0 * uT / (1.0 + uT * uT),
          a * x1_T / (R * R), te};
}

// An implicit transition into an index-2 mode (docs/dae.md, "Implicit transitions"): T gives one
// equation, the circle the other. The event time, the costs and every method's gradient against
// the closed form differentiated by complex step, with kappa = 0 (T reads states) and 0.2 (T
// reads the rate after the event, which the completion gives).
TEST(ImplicitTransitionIndex2, ShiftAlongTheCircleMatchesTheClosedForm) {
  for (const double kappa : {0.0, 0.2}) {
    const Problem pb = circle_shift(kappa);
    const Eigen::VectorXd p = pb.nominal_parameters();
    const Eigen::Vector4<Complex> exact = circle_shift_closed_form(p.cast<Complex>());
    Eigen::MatrixXd reference(4, p.size());
    for (Eigen::Index j = 0; j < p.size(); ++j) {
      VectorX<Complex> q = p.cast<Complex>();
      q[j] += Complex(0.0, 1e-30);
      reference.col(j) = circle_shift_closed_form(q).imag() / 1e-30;
    }
    const std::string what = fmt::format("kappa {}: ", kappa);
    const Solution fwd = forward_sensitivity(pb);
    ASSERT_EQ(fwd.events.size(), 1u);
    EXPECT_NEAR(fwd.events[0].time, exact[3].real(), 1e-9);
    EXPECT_NEAR(fwd.events[0].state_after.head(2).norm(), 1.0, 1e-12);
    if (kappa == 0.0) {
      EXPECT_NEAR(fwd.events[0].state_after[0], std::cos(std::asin(0.5)) - 0.3, 1e-10);
    }
    for (int c = 0; c < 3; ++c) EXPECT_NEAR(fwd.costs[c], exact[c].real(), 1e-8) << what << c;
    expect_near_relative(fwd.cost_gradient, reference.topRows(3), 1e-7, what + "forward");
    for (Eigen::Index j = 0; j < p.size(); ++j) {
      EXPECT_NEAR(fwd.events[0].dtime_dp[j], reference(3, j), 1e-7 * std::max(1.0, std::abs(reference(3, j))))
          << what << j;
    }
    expect_near_relative(adjoint(pb).cost_gradient, reference.topRows(3), 1e-7, what + "adjoint");
    expect_near_relative(complex_step(pb, p, pb.options()).cost_gradient, reference.topRows(3), 1e-7,
                         what + "complex step");
    expect_near_relative(central_differences(pb, p, pb.options()).cost_gradient, reference.topRows(3), 1e-5,
                         what + "central differences");
  }
}

// Into an index-2 mode T gives n_y - n_c equations: one that writes more is refused naming the
// count.
TEST(ImplicitTransitionIndex2, ATransitionWithTooManyEquationsIsRefused) {
  Problem pb = circle_shift(0.0);
  pb.add_event("again", Direction::Rising, [](auto t, const auto&, const auto&) { return t - 2.0; })
      .transition([](auto, const auto& x_plus, const auto&, const auto& x_minus, const auto&, const auto&, auto r) {
        r[0] = x_plus[0] - x_minus[0];
        r[1] = x_plus[1] - x_minus[1];
      });
  expect_message([&] { simulate(pb); }, "the transition of event 'again' writes more than 1 equations");
}

// A transition that does not determine the state after the event (it reads neither x+ nor its
// rate) is bad input naming the event, the mode and the time; so is an event with both a jump
// and a transition.
TEST(ImplicitTransitionErrors, AnUndeterminedTransitionOrTwoMapsAreRefused) {
  Problem pb = relaxation(false);
  Problem undetermined("undetermined", "");
  undetermined.set_states({"y"});
  undetermined.add_parameter("c", 2.0);
  undetermined.set_initial_state([](const auto& p, auto x0) { x0[0] = 0.0 * p[0]; });
  const int a = undetermined.add_mode("rise", [](auto, const auto&, const auto& p, auto xdot) { xdot[0] = p[0]; });
  undetermined.add_event("half", Direction::Rising, [](auto, const auto& x, const auto&) { return x[0] - 1.0; })
      .only_in({a})
      .transition([](auto, const auto&, const auto&, const auto&, const auto& xdot_minus, const auto&, auto r) {
        r[0] = xdot_minus[0] - 2.0;
      });
  undetermined.add_terminal_cost("y", [](const auto& x, const auto&) { return x[0]; });
  undetermined.options().tf = 1.0;
  expect_message([&] { simulate(undetermined); }, "implicit transition of event 'half' into mode 'rise' cannot be "
                                                  "solved at t = 0.5");
  EXPECT_THROW(simulate(undetermined), InputError);

  pb.add_event("twice", Direction::Rising, [](auto, const auto& x, const auto&) { return x[0] - 5.0; })
      .jump([](auto, const auto& x, const auto&, auto x_plus) { x_plus = x; })
      .transition([](auto, const auto&, const auto&, const auto&, const auto&, const auto&, auto r) { r[0] = 0.0; });
  expect_message([&] { simulate(pb); }, "event 'twice' has both a jump and an implicit transition");
}

}  // namespace

// A transition whose two rows repeat each other (x = pre(x) twice): the matrix
// [T_x+ T_ydot+; F_x F_ydot] is singular, and the message gives its reciprocal condition
// number as 0 (it said nan).
TEST(ImplicitTransition, ASingularTransitionGivesItsConditionNumber) {
  const Problem pb = equations::parse_equation_problem(R"yaml(
name: singular
horizon: 2
states: {x: 0, v: 1, z: 0}
algebraic: z
modes:
  m:
    residual: ["der(x) - v", "der(v) + z", "z - x"]
events:
  hit: {guard: x - 0.5, direction: rising, transition: ["x - pre(x)", "x - pre(x) - 0.0"]}
costs:
  X: {running: x}
)yaml",
                                                       "singular.yaml");
  expect_message([&] { simulate(pb); }, "is singular (reciprocal condition number 0)");
}
