// Stops on spatial joints (docs/model-files.md, "Contacts"; docs/multibody.md, "Joint stops"):
// a rod pendulum on a revolute joint released against an angle stop at the vertical, bouncing or
// coming to rest on it (persistent), and a block on a translational joint falling onto an end
// stop, each built from spatial bodies, give the planar models' results (their stops are planar
// code: the angle theta_b - theta_a, a prismatic element's travel): event times, costs and
// gradients through the impacts. The angle's acceleration bias against the complex step, and the
// stops' bad input, one line each.
#include <saltus/core/error.hpp>
#include <saltus/multibody/formulation.hpp>
#include <saltus/multibody/model_file.hpp>
#include <saltus/multibody/spatial_joints.hpp>
#include <saltus/solvers/adjoint.hpp>
#include <saltus/solvers/simulate.hpp>

#include <gtest/gtest.h>

#include "support/model_text.hpp"
#include "support/stop_models.hpp"

#include <cmath>
#include <string>

namespace {

using namespace saltus;
using namespace saltus::multibody;

using test::model_error;
using test::replace_once;

// The planar models, with costs the spatial ones can state (no theta of a spatial body).
const std::string kPlanarPendulum =
    replace_once(test::kPendulum, "  theta_T: {terminal: [{signal: theta, of: rod}]}\n",
                 "  x_T: {terminal: [{signal: x, of: rod}]}\n  vx_int: {running: [{signal: vx, of: rod}]}\n");
const std::string kPlanarRail = replace_once(test::kRail, "  y_T: {terminal: [{signal: y, of: block}]}\n",
                                             "  y_T: {terminal: [{signal: y, of: block}]}\n"
                                             "  vy_int: {running: [{signal: vy, of: block}]}\n");

// The same rod in space: its long axis is the body's y, the hinge turns about z, and the stop
// measures the hinge's angle from the ground's x to the rod's x (the default normals).
const std::string kSpatialPendulum = R"yaml(
name: stopped_pendulum_3d
horizon: 1.6
tolerances: {rtol: 1.0e-11, atol: 1.0e-13}
parameters: {l: 0.8, th0: 0.9, e: 0.5, g: 9.81}
gravity: [0, -g, 0]
spatial:
  bodies:
    rod: {mass: 2, inertia: ["2*l^2/12", "2*l^2/1200", "2*l^2/12"], position: ["l/2*sin(th0)", "-l/2*cos(th0)", 0],
          orientation: {axis: [0, 0, 1], angle: th0}}
  joints:
    - {type: revolute, name: hinge, a: ground, b: rod, point_b: [0, "l/2", 0], axis_a: [0, 0, 1]}
contacts:
  - {name: vertical, stop: {joint: hinge, min: 0}, restitution: e}
costs:
  x_T: {terminal: [{signal: x, of: rod}]}
  vx_int: {running: [{signal: vx, of: rod}]}
)yaml";

const std::string kSpatialRail = R"yaml(
name: rail_3d
horizon: 0.5
tolerances: {rtol: 1.0e-11, atol: 1.0e-13}
parameters: {L: 0.4, e: 0.6, g: 9.81}
gravity: [0, -g, 0]
spatial:
  bodies:
    block: {mass: 1.5, inertia: [0.1, 0.1, 0.1], position: [0, 0, 0]}
  joints:
    - {type: translational, name: rail, a: ground, b: block, axis_a: [0, -1, 0], normal_a: [1, 0, 0]}
contacts:
  - {name: end, stop: {joint: rail, max: L}, restitution: e}
costs:
  y_T: {terminal: [{signal: y, of: block}]}
  vy_int: {running: [{signal: vy, of: block}]}
)yaml";

Problem problem_of(const std::string& text, FormulationType type) {
  Model model = parse_model(text, "model.yaml");
  model.formulation.type = type;
  return make_problem(model);
}

/// Events (to `time_tolerance` s), costs and their gradients of the spatial model against the
/// planar one.
void expect_same(const std::string& planar, const std::string& spatial, FormulationType type, size_t min_events,
                 double time_tolerance = 1e-9) {
  const Solution a = forward_sensitivity(problem_of(planar, type));
  const Problem pb = problem_of(spatial, type);
  const Solution b = forward_sensitivity(pb);
  ASSERT_GE(a.events.size(), min_events);
  ASSERT_EQ(b.events.size(), a.events.size());
  for (size_t k = 0; k < a.events.size(); ++k) {
    EXPECT_EQ(b.events[k].name, a.events[k].name);
    EXPECT_NEAR(b.events[k].time, a.events[k].time, time_tolerance) << a.events[k].name;
  }
  for (Eigen::Index c = 0; c < a.cost_gradient.rows(); ++c) {
    EXPECT_NEAR(b.costs[c], a.costs[c], 1e-9 * (1.0 + std::abs(a.costs[c]))) << "cost " << c;
    const double scale = 1.0 + a.cost_gradient.row(c).cwiseAbs().maxCoeff();
    EXPECT_LT((b.cost_gradient.row(c) - a.cost_gradient.row(c)).cwiseAbs().maxCoeff() / scale, 1e-7) << "cost " << c;
  }
  // The adjoint through the same impacts.
  const Solution adj = adjoint(pb, pb.nominal_parameters(), pb.options());
  for (Eigen::Index c = 0; c < b.cost_gradient.rows(); ++c) {
    const double scale = 1.0 + b.cost_gradient.row(c).cwiseAbs().maxCoeff();
    EXPECT_LT((adj.cost_gradient.row(c) - b.cost_gradient.row(c)).cwiseAbs().maxCoeff() / scale, 1e-6)
        << "adjoint, cost " << c;
  }
}

class SpatialStops : public ::testing::TestWithParam<FormulationType> {};

TEST_P(SpatialStops, AngleStopBouncesAsThePlanarOne) {
  expect_same(kPlanarPendulum, kSpatialPendulum, GetParam(), 2);
}

TEST_P(SpatialStops, PersistentAngleStopHoldsThePendulumAsThePlanarOne) {
  // The stop at 0.3 rad, restitution 1/2, persistent: the bounces accumulate and the rod comes
  // to rest on the stop, pressed against it by gravity (the stop row held closed by its bias)
  // for the rest of the run, its centre at x = l/2 sin 0.3. At rtol 1e-10: at 1e-11 and 1e-12
  // ggl's forward run misses the accumulation of the spatial model's bounces and stops with a
  // Zeno error (docs/multibody.md, "Joint stops"). The last bounces' times are ill-conditioned
  // (1e-9 s apart, each doubling the error of the one before), so they are compared to 1e-7 s.
  const auto persistent = [](const std::string& text, const std::string& stop) {
    std::string t = replace_once(text, "restitution: e}", "restitution: e, persistent: true}");
    t = replace_once(t, "horizon: 1.6", "horizon: 2");
    t = replace_once(t, "tolerances: {rtol: 1.0e-11, atol: 1.0e-13}", "tolerances: {rtol: 1.0e-10, atol: 1.0e-12}");
    return replace_once(t, stop + "min: 0}", stop + "min: 0.3}");
  };
  const std::string planar = persistent(kPlanarPendulum, "body_b: rod, ");
  const std::string spatial = persistent(kSpatialPendulum, "joint: hinge, ");
  expect_same(planar, spatial, GetParam(), 3, 1e-7);
  const Solution sim = simulate(problem_of(spatial, GetParam()));
  ASSERT_FALSE(sim.events.empty());
  EXPECT_EQ(sim.events.back().name, "vertical (rest)");
  EXPECT_LT(sim.events.back().time, 1.5);
  EXPECT_NEAR(sim.costs[0], 0.4 * std::sin(0.3), 1e-8);
}

TEST_P(SpatialStops, TravelStopBouncesAsThePlanarOne) {
  expect_same(kPlanarRail, kSpatialRail, GetParam(), 1);
}

std::string formulation_name(const ::testing::TestParamInfo<FormulationType>& info) { return to_string(info.param); }

INSTANTIATE_TEST_SUITE_P(Formulations, SpatialStops,
                         ::testing::Values(FormulationType::Index1, FormulationType::Maggi, FormulationType::GGL),
                         formulation_name);

// index3 restarts after the pendulum's impact (docs/dae.md, "Restarts"): IDAS's own first step
// there, about rtol |y| / |y'|, was so small that the index-3 corrector failed (IDA_CONV_FAIL
// at the impact) or not with the output grid and the tolerance: simulations at rtol 1e-10 and
// forward runs at 1e-8 failed. Its gradients at rtol 1e-11 then agree with the planar model's in
// index1 to index3's accuracy.
TEST(SpatialStops, Index3RestartsAfterTheImpact) {
  const auto at = [](const std::string& text, const char* tolerances) {
    return replace_once(text, "tolerances: {rtol: 1.0e-11, atol: 1.0e-13}", tolerances);
  };
  EXPECT_EQ(simulate(problem_of(at(kSpatialPendulum, "tolerances: {rtol: 1.0e-10, atol: 1.0e-12}"), FormulationType::Index3))
                .events.size(),
            2U);
  const Solution loose =
      forward_sensitivity(problem_of(at(kSpatialPendulum, "tolerances: {rtol: 1.0e-8, atol: 1.0e-12}"), FormulationType::Index3));
  const Problem pb = problem_of(kSpatialPendulum, FormulationType::Index3);
  const Solution fwd = forward_sensitivity(pb);
  const Solution adj = adjoint(pb, pb.nominal_parameters(), pb.options());
  const Solution planar = forward_sensitivity(problem_of(kPlanarPendulum, FormulationType::Index1));
  for (Eigen::Index c = 0; c < planar.cost_gradient.rows(); ++c) {
    const double scale = 1.0 + planar.cost_gradient.row(c).cwiseAbs().maxCoeff();
    EXPECT_LT((loose.cost_gradient.row(c) - planar.cost_gradient.row(c)).cwiseAbs().maxCoeff() / scale, 1e-4) << c;
    EXPECT_LT((fwd.cost_gradient.row(c) - planar.cost_gradient.row(c)).cwiseAbs().maxCoeff() / scale, 1e-6) << c;
    EXPECT_LT((adj.cost_gradient.row(c) - planar.cost_gradient.row(c)).cwiseAbs().maxCoeff() / scale, 1e-6) << c;
  }
  // The same impact as a plane contact of the rod's lower end (the wall x = 0, from the side the
  // rod swings from): forward and adjoint agree to index3's accuracy at rtol 1e-10.
  const Problem wall = problem_of(
      at(replace_once(kSpatialPendulum, "  - {name: vertical, stop: {joint: hinge, min: 0}, restitution: e}",
                      "  - {name: vertical, point: {body: rod, at: [0, \"-l/2\", 0]}, plane: {point: [0, 0, 0], "
                      "normal: [1, 0, 0]}, restitution: e}"),
         "tolerances: {rtol: 1.0e-10, atol: 1.0e-12}"),
      FormulationType::Index3);
  const Solution wall_fwd = forward_sensitivity(wall);
  ASSERT_FALSE(wall_fwd.events.empty());
  const Solution wall_adj = adjoint(wall, wall.nominal_parameters(), wall.options());
  const double scale = wall_fwd.cost_gradient.cwiseAbs().maxCoeff();
  EXPECT_LT((wall_adj.cost_gradient - wall_fwd.cost_gradient).cwiseAbs().maxCoeff(), 1e-5 * scale);
}

// The angle row's gradient, rate and bias (its acceleration's velocity terms) against the
// complex step, on a joint whose axes are not parallel (the angle of two frames in general).
TEST(SpatialStops, AngleRowMatchesTheComplexStep) {
  const Model m = parse_model(R"yaml(
name: angle
horizon: 1
gravity: [0, 0, 0]
spatial:
  bodies:
    a: {mass: 1, inertia: [1, 1, 1], position: [0.1, 0.2, 0.3], orientation: {axis: [1, 2, 3], angle: 0.7}}
    b: {mass: 1, inertia: [1, 1, 1], position: [0.5, -0.2, 0.1], orientation: {axis: [-1, 0.5, 0.2], angle: 1.1}}
costs: {c: {terminal: [{signal: z, of: a}]}}
)yaml",
                              "angle.yaml");
  const int n = m.n_coordinates();
  const Eigen::VectorXcd p = m.nominal_parameters().cast<Complex>();
  const Value3 axis_a{0.3, 1.0, 0.2}, normal_a{1.0, 0.0, 0.0}, axis_b{0.1, 0.9, -0.3}, normal_b{0.0, 0.2, 1.0};
  const double h = 1e-30;
  Eigen::VectorXd v(n);
  for (int i = 0; i < n; ++i) v[i] = 0.4 * std::sin(1.3 * i + 0.2);
  const auto angle_at = [&](const Eigen::VectorXcd& q) {
    MotionState<Complex> st;
    st.t = 0.3;
    st.q = q;
    st.v = v.cast<Complex>();
    return angle_row(joint_angle_rows<Complex>(m, st, p, 0, 1, axis_a, normal_a, axis_b, normal_b, "angle"));
  };
  const Eigen::VectorXcd q0 = m.initial_positions().cast<Complex>();
  const KinRow<Complex> base = angle_at(q0);
  double rate = 0.0;
  for (int j = 0; j < n; ++j) {
    const KinRow<Complex> moved = angle_at(q0 + Complex(0.0, h) * Eigen::VectorXcd::Unit(n, j));
    double coefficient = 0.0;
    for (int k = 0; k < base.jac.size(); ++k) {
      if (base.jac.coordinate(k) == j) coefficient += base.jac.coefficient(k).real();
    }
    EXPECT_NEAR(coefficient, moved.value.imag() / h, 1e-12) << "column " << j;
    rate += coefficient * v[j];
  }
  EXPECT_NEAR(base.rate.real(), rate, 1e-12);
  // The bias is d/ds of the rate along q + s v with v fixed (no acceleration).
  const KinRow<Complex> along = angle_at(q0 + Complex(0.0, h) * v.cast<Complex>());
  EXPECT_NEAR(base.bias.real(), along.rate.imag() / h, 1e-11);
  EXPECT_GT(std::abs(base.bias.real()), 1e-3);  // the check is not of a vanishing term
}

// A pendulum spinning over the top passes the hinge angle's +-pi, where the angle (measured in
// (-pi, pi]) and with it the stop's guard jump by 2 pi. That firing is no impact, and past it the
// rod would swing through its stop at the bottom unseen: the run stops at the top (x = 0, y =
// +l/2) with the reason, in the ODE, Maggi and DAE forms and in the sensitivity runs.
TEST(SpatialStops, AnAnglePassingPiStopsTheRunWithTheReason) {
  std::string spinning = replace_once(kSpatialPendulum, "parameters: {l: 0.8, th0: 0.9, e: 0.5, g: 9.81}",
                                      "parameters: {l: 0.8, th0: 2.5, e: 0.5, g: 9.81, w0: 12}");
  spinning = replace_once(spinning, "orientation: {axis: [0, 0, 1], angle: th0}}",
                          "orientation: {axis: [0, 0, 1], angle: th0},\n"
                          "          velocity: [\"w0*l/2*cos(th0)\", \"w0*l/2*sin(th0)\", 0], angular_velocity: [0, 0, w0]}");
  spinning = replace_once(spinning, "tolerances: {rtol: 1.0e-11, atol: 1.0e-13}", "tolerances: {rtol: 1.0e-8, atol: 1.0e-10}");
  for (const FormulationType type : {FormulationType::Index1, FormulationType::Maggi, FormulationType::GGL}) {
    const Problem pb = problem_of(spinning, type);
    for (const bool sensitivities : {false, true}) {
      try {
        if (sensitivities) {
          forward_sensitivity(pb);
        } else {
          simulate(pb);
        }
        ADD_FAILURE() << "no error, formulation " << static_cast<int>(type);
      } catch (const ModelError& e) {
        const std::string what = e.what();
        EXPECT_NE(what.find("joint stop 'vertical' fired"), std::string::npos) << what;
        EXPECT_NE(what.find("passed +-pi"), std::string::npos) << what;
        // Where: the rod upright, a quarter turn of the spin after the start (2.5 -> pi at 12 rad/s).
        const double t = std::stod(what.substr(what.find("at t = ") + 7));
        EXPECT_GT(t, 0.03) << what;
        EXPECT_LT(t, 0.08) << what;
      }
    }
  }
  // A stop hit at its limit is no wrap, also where the jump sees the DAE forms' projected
  // consistent point (its angle off the root by ~rtol |q|) at a loose tolerance.
  const std::string loose =
      replace_once(kSpatialPendulum, "tolerances: {rtol: 1.0e-11, atol: 1.0e-13}", "tolerances: {rtol: 1.0e-4, atol: 1.0e-4}");
  for (const FormulationType type : {FormulationType::GGL, FormulationType::StabilizedIndex1, FormulationType::Index1}) {
    EXPECT_GE(simulate(problem_of(loose, type)).events.size(), 2u) << static_cast<int>(type);
  }
}

// Bad stops on spatial joints: one InputError each, naming the field.
TEST(SpatialStops, BadStopsAreNamed) {
  const auto expect_error = [&](const std::string& text, const std::string& field, const std::string& part) {
    const std::string message = model_error(text);
    EXPECT_NE(message.find("model.yaml:"), std::string::npos) << message;
    EXPECT_NE(message.find(field), std::string::npos) << field << ": " << message;
    EXPECT_NE(message.find(part), std::string::npos) << message;
    EXPECT_EQ(message.find('\n'), std::string::npos) << message;
  };
  const std::string stop = "stop: {joint: hinge, min: 0}";
  expect_error(replace_once(kSpatialPendulum, stop, "stop: {joint: door, min: 0}"), "contacts[0].stop.joint",
               "unknown spatial joint 'door'");
  expect_error(replace_once(kSpatialPendulum, stop, "stop: {joint: hinge, min: 3.5}"), "contacts[0].stop.min",
               "within (-pi, pi)");
  expect_error(replace_once(kSpatialPendulum, stop, "stop: {joint: hinge, measure: travel, min: 0}"),
               "contacts[0].stop.measure", "joint 'hinge' has no travel to stop");
  expect_error(replace_once(kSpatialPendulum, "restitution: e}", "restitution: e, law: partitioning}"), "contacts[0].law",
               "stop uses law: impulse");
  expect_error(replace_once(kSpatialRail, "stop: {joint: rail, max: L}", "stop: {joint: rail, max: L, normal_a: [1, 0, 0]}"),
               "contacts[0].stop.normal_a", "a travel stop has no normals");
  expect_error(replace_once(kSpatialPendulum, stop, "stop: {joint: hinge, normal_a: [0, 0, 1], min: 0}"),
               "contacts[0].stop.normal_a", "needs normal_a across its axis_a");
  // A translational joint's normal along its axis left its twist row redundant: the joint was
  // silently cylindrical (found by a model file written from the docs).
  expect_error(replace_once(kSpatialRail, "normal_a: [1, 0, 0]", "normal_a: [0, 2, 0]"), "spatial.joints[0].normal_a",
               "needs normal_a across its axis_a");
  expect_error(replace_once(replace_once(kSpatialPendulum, stop, "stop: {joint: hinge, min: lim}"), "g: 9.81}",
                            "g: 9.81, lim: -3.2}"),
               "contacts[0].stop.min", "within (-pi, pi)");
  // A stop built in C++ names its joint by index (`driven`): a wrong one is refused.
  Model built = parse_model(kSpatialPendulum, "model.yaml");
  built.contacts[0].spatial_joint.driven = 3;
  try {
    make_problem(built);
    ADD_FAILURE() << "a stop on joint 3 of 1 was accepted";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("its joint (index 3) is not a spatial revolute or cylindrical joint"),
              std::string::npos)
        << e.what();
  }
  const std::string cylinder =
      replace_once(kSpatialRail, "{type: translational, name: rail, a: ground, b: block, axis_a: [0, -1, 0], normal_a: [1, 0, 0]}",
               "{type: cylindrical, name: rail, a: ground, b: block, axis_a: [0, -1, 0]}");
  expect_error(cylinder, "contacts[0].stop", "say which it stops, measure: angle or measure: travel");
  EXPECT_EQ(model_error(replace_once(cylinder, "stop: {joint: rail, max: L}", "stop: {joint: rail, measure: travel, max: L}")),
            "");
  const std::string spherical =
      replace_once(kSpatialPendulum, "{type: revolute, name: hinge, a: ground, b: rod, point_b: [0, \"l/2\", 0], axis_a: [0, 0, 1]}",
               "{type: spherical, name: hinge, a: ground, b: rod, point_b: [0, \"l/2\", 0]}");
  expect_error(spherical, "contacts[0].stop.joint", "joint 'hinge' is not a revolute, cylindrical or translational joint");
}

}  // namespace
