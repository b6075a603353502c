// URDF import (docs/model-files.md, "URDF"): a robot with a rotated joint frame, a rotated
// inertial frame, a prismatic and a fixed joint runs exactly as the same mechanism written by
// hand as spatial bodies and joints; a model file adds drivers, springs, parameters and costs
// to a URDF, and its gradients agree across methods; bad files are named.
#include <saltus/core/error.hpp>
#include <saltus/multibody/dynamics.hpp>
#include <saltus/multibody/formulation.hpp>
#include <saltus/multibody/check.hpp>
#include <saltus/multibody/model_file.hpp>
#include <saltus/solvers/adjoint.hpp>
#include <saltus/solvers/simulate.hpp>
#include <saltus/verify/gradient.hpp>

#include <Eigen/Geometry>
#include <fmt/format.h>
#include <fmt/ranges.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <string>

namespace {

using namespace saltus;
using namespace saltus::multibody;

std::string example(const std::string& name) { return std::string(SALTUS_SOURCE_DIR) + "/examples/" + name; }

/// Writes `text` to a file in a directory of this process's own and returns its path.
std::string write(const std::string& name, const std::string& text) {
  const std::filesystem::path dir = std::filesystem::temp_directory_path() / ("saltus_test_urdf_" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  const std::filesystem::path path = dir / ("saltus_test_urdf_" + name);
  std::ofstream(path) << text;
  return path.string();
}

// A link hinged 1 m up with its joint frame turned a quarter turn about z (the hinge's axis y
// there is the ground's -x) and its inertial frame turned a quarter turn about x (in the link's
// axes the tensor [a d e; d b f; e f c] is [a -e d; -e c -f; d -f b]); a slider along the
// link's x; a tip welded to it; a massless tool frame on the tip (part of the tip's body).
const char* kRobot = R"(<?xml version="1.0"?>
<robot name="pendulum">
  <link name="world"/>
  <link name="arm">
    <inertial>
      <origin xyz="0.3 0 0" rpy="1.5707963267948966 0 0"/>
      <mass value="1"/>
      <inertia ixx="0.01" ixy="0.001" ixz="0.002" iyy="0.03" iyz="-0.003" izz="0.04"/>
    </inertial>
  </link>
  <link name="slider">
    <inertial><mass value="0.5"/><inertia ixx="0.002" ixy="0" ixz="0" iyy="0.003" iyz="0" izz="0.004"/></inertial>
  </link>
  <link name="tip">
    <inertial><mass value="0.2"/><inertia ixx="0.001" ixy="0" ixz="0" iyy="0.001" iyz="0" izz="0.001"/></inertial>
  </link>
  <joint name="hinge" type="revolute">
    <parent link="world"/><child link="arm"/>
    <origin xyz="0 0 1" rpy="0 0 1.5707963267948966"/>
    <axis xyz="0 1 0"/>
    <limit lower="-1" upper="1" effort="1" velocity="1"/>
  </joint>
  <joint name="rail" type="prismatic">
    <parent link="arm"/><child link="slider"/>
    <origin xyz="0.6 0 0"/>
    <axis xyz="1 0 0"/>
    <limit lower="-1" upper="1" effort="1" velocity="1"/>
  </joint>
  <link name="tool"/>
  <joint name="weld" type="fixed">
    <parent link="slider"/><child link="tip"/>
    <origin xyz="0.1 0 0"/>
  </joint>
  <joint name="mount" type="fixed">
    <parent link="tip"/><child link="tool"/>
    <origin xyz="0.05 0 0" rpy="0.3 0 0"/>
  </joint>
</robot>
)";

const std::string kCosts = R"(costs:
  tip_z: {terminal: [{signal: z, of: tip}]}
  tip_y: {terminal: [{signal: y, of: tip}]}
  hinge_load: {running: [{signal: reaction, of: hinge, row: 2, power: 2}]}
)";

// The same mechanism by hand: every link frame turned a quarter turn about z, at its place.
const std::string kByHand = R"(name: by_hand
horizon: 0.8
tolerances: {rtol: 1.0e-10, atol: 1.0e-12}
spatial:
  bodies:
    arm: {mass: 1, inertia: [0.01, 0.04, 0.03, -0.002, 0.001, 0.003], center: [0.3, 0, 0], position: [0, 0, 1],
          orientation: {axis: [0, 0, 1], angle: 1.5707963267948966}}
    slider: {mass: 0.5, inertia: [0.002, 0.003, 0.004], position: [0, 0.6, 1],
             orientation: {axis: [0, 0, 1], angle: 1.5707963267948966}}
    tip: {mass: 0.2, inertia: [0.001, 0.001, 0.001], position: [0, 0.7, 1],
          orientation: {axis: [0, 0, 1], angle: 1.5707963267948966}}
  joints:
    - {type: revolute, name: hinge, a: ground, b: arm, point_a: [0, 0, 1], axis_a: [-1, 0, 0], axis_b: [0, 1, 0]}
    - {type: translational, name: rail, a: arm, b: slider, point_a: [0.6, 0, 0], axis_a: [1, 0, 0], normal_a: [0, 1, 0]}
    - {type: fixed, name: weld, a: slider, b: tip, point_a: [0.1, 0, 0], axis_a: [0, 0, 1], normal_a: [1, 0, 0]}
)" + kCosts;

Eigen::VectorXd costs_of(const Model& model) {
  const Problem pb = make_problem(model);
  return simulate(pb, pb.nominal_parameters(), pb.options()).costs;
}

TEST(Urdf, RunsAsTheSameMechanismWrittenByHand) {
  const std::string urdf = write("pendulum.urdf", kRobot);
  const std::string file = write("pendulum.yaml", "name: from_urdf\nhorizon: 0.8\ntolerances: {rtol: 1.0e-10, atol: "
                                                  "1.0e-12}\nurdf: saltus_test_urdf_pendulum.urdf\n" +
                                                      kCosts);
  const Model imported = load_model(file);
  ASSERT_EQ(imported.spatial_bodies.size(), 3u);
  ASSERT_EQ(imported.spatial_joints.size(), 3u);
  ASSERT_EQ(imported.notes.size(), 1u);
  EXPECT_NE(imported.notes[0].find("limits ignored (hinge, rail)"), std::string::npos) << imported.notes[0];
  const Eigen::VectorXd by_urdf = costs_of(imported);
  const Eigen::VectorXd by_hand = costs_of(parse_model(kByHand, "by_hand"));
  ASSERT_GT(std::abs(by_hand[0] - 1.0), 0.05);  // the arm swung down and the slider slid
  for (Eigen::Index i = 0; i < by_hand.size(); ++i) {
    EXPECT_NEAR(by_urdf[i], by_hand[i], 1e-9 * (1.0 + std::abs(by_hand[i]))) << "cost " << i;
  }
}

// Joint origins compose parent first: a quarter turn about z, then one about y, put the second
// link's frame at Rz Ry (its z along the ground's y). A rotational spring on the second joint
// measures its angle from the URDF's zero position, and so does a stop on it.
TEST(Urdf, ComposesFramesInOrderAndAnglesStartAtZero) {
  const std::string urdf = write("turns.urdf", R"(<robot name="turns">
  <link name="world"/>
  <link name="one"><inertial><mass value="1"/><inertia ixx="0.1" ixy="0" ixz="0" iyy="0.1" iyz="0" izz="0.1"/></inertial></link>
  <link name="two"><inertial><mass value="1"/><inertia ixx="0.1" ixy="0" ixz="0" iyy="0.1" iyz="0" izz="0.1"/></inertial></link>
  <joint name="first" type="continuous"><parent link="world"/><child link="one"/>
    <origin xyz="0 0 1" rpy="0 0 1.5707963267948966"/><axis xyz="1 0 0"/></joint>
  <joint name="second" type="continuous"><parent link="one"/><child link="two"/>
    <origin xyz="0.5 0 0" rpy="0 1.5707963267948966 0"/><axis xyz="0 0 1"/></joint>
</robot>
)");
  const Model m = load_model(write("turns.yaml", "name: turns\nhorizon: 1\nurdf: saltus_test_urdf_turns.urdf\n"
                                                  "spatial:\n  forces:\n    - {type: rotational_spring, name: s, "
                                                  "joint: second, stiffness: 10}\n"
                                                  "contacts:\n  - {name: second_max, stop: {joint: second, max: 0.2}, "
                                                  "restitution: 0.5}\n"
                                                  "costs:\n  z_T: {terminal: [{signal: z, of: two}]}\n"));
  const SpatialBody& two = m.spatial_bodies[1];
  ASSERT_EQ(two.orientation0.size(), 1u);  // one axis-angle turn
  const SpatialBody::Turn& turn = two.orientation0[0];
  const Eigen::Vector3d axis(turn.axis.x.constant, turn.axis.y.constant, turn.axis.z.constant);
  const Eigen::Matrix3d A = Eigen::AngleAxisd(turn.angle.constant, axis.normalized()).toRotationMatrix();
  Eigen::Matrix3d expected;
  expected << 0, -1, 0, 0, 0, 1, -1, 0, 0;  // Rz(pi/2) Ry(pi/2)
  EXPECT_LT((A - expected).cwiseAbs().maxCoeff(), 1e-12) << A;
  EXPECT_NEAR(two.position0.y.constant, 0.5, 1e-12);  // one's x is the ground's y
  const MotionState<double> start{0.0, m.initial_positions(), Eigen::VectorXd::Zero(m.n_coordinates())};
  EXPECT_NEAR(rotational_spring_state<double>(m, m.spatial_forces[0], start, m.nominal_parameters()).angle.value, 0.0, 1e-12);
  // A stop on the imported joint measures from the URDF's zero too: its gap starts at the limit.
  const ModelCheck check = check_model(m);
  ASSERT_EQ(check.contacts.size(), 1u);
  EXPECT_EQ(check.contacts[0].unit, "rad");
  EXPECT_NEAR(check.contacts[0].gap, 0.2, 1e-12);
}

// A URDF alone runs 1 s with its kinetic energy at the end as the cost.
TEST(Urdf, AFileAloneRunsWithItsKineticEnergy) {
  const Model m = load_model(write("alone.urdf", kRobot));
  EXPECT_EQ(m.tf, 1.0);
  ASSERT_EQ(m.costs.size(), 1u);
  EXPECT_EQ(m.costs[0].name, "kinetic_energy");
  EXPECT_EQ(m.gravity_z.constant, -9.81);
  EXPECT_TRUE(is_model_file("robot.urdf"));
}

// The example: gradients of the arm with its motor and servos agree across methods.
TEST(Urdf, ExampleArmGradientsAgree) {
  Model model = load_model(example("urdf_arm.yaml"));
  model.tf = 0.5;
  const Problem pb = make_problem(model);
  const Eigen::VectorXd p = pb.nominal_parameters();
  const Options o = pb.options();
  const GradientCheck cmp = compare_gradients(
      pb, {forward_estimate(forward_sensitivity(pb, p, o)), adjoint_estimate(adjoint(pb, p, o)), complex_step(pb, p, o)});
  EXPECT_LT(cmp.max_relative_error[1], 1e-4) << "adjoint";
  EXPECT_LT(cmp.max_relative_error[2], 1e-4) << "complex step";
}

// urdf_start moves and sets in motion the robot's joints at t0: the same pendulum written by
// hand with its bodies turned by the hinge angle th0 and slid by d0, moving with the hinge
// rate w0 and the slide rate s0 (each body's pose and velocity worked out by hand), runs to
// the same costs and the same gradients with respect to the four start parameters. The hinge's
// axis y in its joint frame is the ground's -x, and the rail runs along the arm's x axis,
// (0, cos th0, -sin th0) in the ground.
const std::string kStartParameters = "parameters: {th0: 0.4, d0: 0.15, w0: -1.2, s0: 0.3}\n";

const std::string kStartedByHand = R"(name: started_by_hand
horizon: 0.6
tolerances: {rtol: 1.0e-10, atol: 1.0e-12}
)" + kStartParameters + R"yaml(spatial:
  bodies:
    arm: {mass: 1, inertia: [0.01, 0.04, 0.03, -0.002, 0.001, 0.003], center: [0.3, 0, 0], position: [0, 0, 1],
          orientation: {sequence: zy, angles: [1.5707963267948966, th0]}, angular_velocity: ["-w0", 0, 0]}
    slider: {mass: 0.5, inertia: [0.002, 0.003, 0.004],
             position: [0, "(0.6 + d0)*cos(th0)", "1 - (0.6 + d0)*sin(th0)"],
             orientation: {sequence: zy, angles: [1.5707963267948966, th0]},
             velocity: [0, "-w0*(0.6 + d0)*sin(th0) + s0*cos(th0)", "-w0*(0.6 + d0)*cos(th0) - s0*sin(th0)"],
             angular_velocity: ["-w0", 0, 0]}
    tip: {mass: 0.2, inertia: [0.001, 0.001, 0.001],
          position: [0, "(0.7 + d0)*cos(th0)", "1 - (0.7 + d0)*sin(th0)"],
          orientation: {sequence: zy, angles: [1.5707963267948966, th0]},
          velocity: [0, "-w0*(0.7 + d0)*sin(th0) + s0*cos(th0)", "-w0*(0.7 + d0)*cos(th0) - s0*sin(th0)"],
          angular_velocity: ["-w0", 0, 0]}
  joints:
    - {type: revolute, name: hinge, a: ground, b: arm, point_a: [0, 0, 1], axis_a: [-1, 0, 0], axis_b: [0, 1, 0]}
    - {type: translational, name: rail, a: arm, b: slider, point_a: [0.6, 0, 0], axis_a: [1, 0, 0], normal_a: [0, 1, 0]}
    - {type: fixed, name: weld, a: slider, b: tip, point_a: [0.1, 0, 0], axis_a: [0, 0, 1], normal_a: [1, 0, 0]}
)yaml" + kCosts;

TEST(Urdf, StartsItsJointsWhereTheModelFileSays) {
  write("started.urdf", kRobot);
  const Model imported = load_model(write("started.yaml", "name: started\nhorizon: 0.6\ntolerances: {rtol: 1.0e-10, "
                                                          "atol: 1.0e-12}\n" + kStartParameters +
                                                              "urdf: saltus_test_urdf_started.urdf\n"
                                                              "urdf_start:\n  hinge: {position: th0, velocity: w0}\n"
                                                              "  rail: {position: d0, velocity: s0}\n" + kCosts));
  const Model by_hand = parse_model(kStartedByHand, "started_by_hand");
  const Eigen::VectorXd p = imported.nominal_parameters();
  // The start itself, before any run: the tip's frame where the hand computation puts it.
  const Eigen::VectorXd q0 = imported.initial_positions<double>(p);
  const int tip = imported.spatial_offset(2);
  EXPECT_NEAR(q0[tip + 1], 0.85 * std::cos(0.4), 1e-14);
  EXPECT_NEAR(q0[tip + 2], 1.0 - 0.85 * std::sin(0.4), 1e-14);
  const Eigen::VectorXd v0 = imported.initial_velocities<double>(p);
  EXPECT_NEAR(v0[tip + 1], 1.2 * 0.85 * std::sin(0.4) + 0.3 * std::cos(0.4), 1e-14);
  EXPECT_NEAR(v0[tip + 2], 1.2 * 0.85 * std::cos(0.4) - 0.3 * std::sin(0.4), 1e-14);
  // The runs and their gradients with respect to the start.
  const Problem from_urdf = make_problem(imported), from_hand = make_problem(by_hand);
  const Options o = from_urdf.options();
  const Solution a = forward_sensitivity(from_urdf, p, o), b = forward_sensitivity(from_hand, p, from_hand.options());
  ASSERT_GT(std::abs(b.costs[0] - 1.0), 0.05);
  for (Eigen::Index k = 0; k < p.size(); ++k) {
    EXPECT_GT(std::abs(b.cost_gradient(0, k)), 1e-3) << "d tip_z / d parameter " << k << " is not exercised";
  }
  for (Eigen::Index i = 0; i < b.costs.size(); ++i) {
    EXPECT_NEAR(a.costs[i], b.costs[i], 1e-9 * (1.0 + std::abs(b.costs[i]))) << "cost " << i;
    for (Eigen::Index k = 0; k < p.size(); ++k) {
      const double ref = b.cost_gradient(i, k);
      EXPECT_NEAR(a.cost_gradient(i, k), ref, 1e-7 * (1.0 + std::abs(ref))) << "cost " << i << ", parameter " << k;
    }
  }
  // A rotational spring on the hinge measures its angle from the URDF's zero: th0 at the start.
  const Model sprung = load_model(write("sprung.yaml", "name: sprung\nhorizon: 0.6\n" + kStartParameters +
                                                           "urdf: saltus_test_urdf_started.urdf\nurdf_start: {hinge: th0}\n"
                                                           "spatial:\n  forces:\n    - {type: rotational_spring, name: s, "
                                                           "joint: hinge, stiffness: 10}\n" + kCosts));
  const MotionState<double> start{0.0, sprung.initial_positions<double>(p), Eigen::VectorXd::Zero(sprung.n_coordinates())};
  EXPECT_NEAR(rotational_spring_state<double>(sprung, sprung.spatial_forces[0], start, p).angle.value, 0.4, 1e-12);
}

// A driven joint starts where its driver puts it, f(t0) = th0 moving at f'(t0) = 0.2 + 0.1 * 3,
// and the other joints where urdf_start puts them: the run starts from the pose and velocities
// of the same robot started by urdf_start alone. (Assembly alone kept a body's coordinates and
// moved the rail to fit the driver's rate.) A urdf_start entry for the driven joint is refused.
TEST(Urdf, ADrivenJointStartsWhereItsDriverPutsIt) {
  write("driven.urdf", kRobot);
  const std::string head = "name: driven\nhorizon: 0.6\n" + kStartParameters + "urdf: saltus_test_urdf_driven.urdf\n";
  const std::string driver = "spatial:\n  joints:\n    - {type: rotational_driver, name: drv, joint: hinge, "
                             "function: {offset: th0, rate: 0.2, amplitude: 0.1, frequency: 3}}\n";
  const Model driven = load_model(write("driven.yaml", head + "urdf_start: {rail: {position: d0, velocity: s0}}\n" +
                                                           driver + kCosts));
  const Model started = load_model(write("undriven.yaml", head + "urdf_start: {hinge: {position: th0, velocity: 0.5}, "
                                                                 "rail: {position: d0, velocity: s0}}\n" + kCosts));
  const Problem pb = make_problem(driven);
  const Eigen::VectorXd p = pb.nominal_parameters();
  Eigen::VectorXd x0(pb.n_states());
  pb.initial_state().real(p, x0);
  const int n = started.n_coordinates();
  const Eigen::VectorXd q = started.initial_positions<double>(p), v = started.initial_velocities<double>(p);
  EXPECT_LT((x0.head(n) - q).cwiseAbs().maxCoeff(), 1e-12) << x0.head(n).transpose() << "\n" << q.transpose();
  EXPECT_LT((x0.segment(n, n) - v).cwiseAbs().maxCoeff(), 1e-12) << x0.segment(n, n).transpose() << "\n" << v.transpose();
  try {
    load_model(write("twice.yaml", head + "urdf_start: {hinge: th0}\n" + driver + kCosts));
    ADD_FAILURE() << "no error for a start of a driven joint";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("saltus_test_urdf_twice.yaml:5:14: urdf_start.hinge: joint 'hinge' is driven by "
                                         "'drv', so it starts where the driver puts it"),
              std::string::npos)
        << e.what();
  }
}

// A tether from the hinge to the tip holds the rail, so the stated rail velocity s0 is changed:
// the warning names the urdf_start entry that states it (not a spatial body's field, which the
// file does not have) and the link with its joint. `saltus check` shows each link's start and
// its joint's position and rate.
TEST(Urdf, NotesNameTheStartEntriesAndCheckShowsTheLinks) {
  write("tethered.urdf", kRobot);
  const std::string head = "horizon: 0.6\n" + kStartParameters + "urdf: saltus_test_urdf_tethered.urdf\n"
                           "urdf_start:\n  hinge: {position: th0, velocity: w0}\n  rail: {position: d0, velocity: s0}\n";
  const Model tethered = load_model(write(
      "tethered.yaml", "name: tethered\n" + head +
                           "spatial:\n  joints:\n    - {type: distance, name: tether, a: ground, b: tip, point_a: [0, 0, 1], "
                           "length: 0.85}\n" + kCosts));
  // The tether leaves one degree of freedom (tip.z_dot independent): both stated rates change.
  const std::vector<std::string> notes = check_model(tethered).notes;
  ASSERT_EQ(notes.size(), 2u) << fmt::format("{}", fmt::join(notes, "\n"));
  EXPECT_NE(notes[0].find("saltus_test_urdf_tethered.yaml:6:36: urdf_start.hinge.velocity: the stated initial joint "
                          "velocity (with its parents' motion) violates"),
            std::string::npos)
      << notes[0];
  EXPECT_NE(notes[1].find("saltus_test_urdf_tethered.yaml:7:34: urdf_start.rail.velocity: the stated initial joint "
                          "velocity"),
            std::string::npos)
      << notes[1];
  for (const std::string& note : notes) EXPECT_EQ(note.find("spatial.bodies"), std::string::npos) << note;
  // Untethered, the links start where forward kinematics puts them.
  const ModelCheck c = check_model(load_model(write("untethered.yaml", "name: untethered\n" + head + kCosts)));
  EXPECT_TRUE(c.notes.empty()) << fmt::format("{}", fmt::join(c.notes, "\n"));
  ASSERT_EQ(c.spatial_starts.size(), 3u);
  const ModelCheck::SpatialStart& arm = c.spatial_starts[0];
  EXPECT_EQ(arm.name, "arm");
  EXPECT_EQ(arm.joint, "hinge");
  EXPECT_EQ(arm.joint_unit, "rad");
  EXPECT_DOUBLE_EQ(arm.joint_position, 0.4);
  EXPECT_DOUBLE_EQ(arm.joint_rate, -1.2);
  // The arm's frame: a quarter turn about z, then th0 about its y (the ground's -x), turning at
  // w0 about the ground's -x.
  const Eigen::AngleAxisd expected(Eigen::Quaterniond(Eigen::AngleAxisd(M_PI / 2, Eigen::Vector3d::UnitZ())) *
                                   Eigen::Quaterniond(Eigen::AngleAxisd(0.4, Eigen::Vector3d::UnitY())));
  EXPECT_NEAR(arm.turn, expected.angle(), 1e-12);
  for (int k = 0; k < 3; ++k) {
    const size_t i = static_cast<size_t>(k);
    EXPECT_NEAR(arm.axis[i], expected.axis()[k], 1e-12);
    EXPECT_NEAR(arm.position[i], k == 2 ? 1.0 : 0.0, 1e-12);
    EXPECT_NEAR(arm.velocity[i], 0.0, 1e-12);
    EXPECT_NEAR(arm.angular_velocity[i], k == 0 ? 1.2 : 0.0, 1e-12);
  }
  // The tip: 0.85 m along the arm, moving as in Urdf.StartsItsJointsWhereTheModelFileSays.
  const ModelCheck::SpatialStart& tip = c.spatial_starts[2];
  EXPECT_NEAR(tip.position[1], 0.85 * std::cos(0.4), 1e-12);
  EXPECT_NEAR(tip.position[2], 1.0 - 0.85 * std::sin(0.4), 1e-12);
  EXPECT_NEAR(tip.velocity[1], 1.2 * 0.85 * std::sin(0.4) + 0.3 * std::cos(0.4), 1e-12);
  EXPECT_EQ(c.spatial_starts[1].joint, "rail");
  EXPECT_EQ(c.spatial_starts[1].joint_unit, "m");
  EXPECT_DOUBLE_EQ(c.spatial_starts[1].joint_rate, 0.3);
  EXPECT_EQ(tip.joint, "weld");
  EXPECT_TRUE(tip.joint_unit.empty());
}

TEST(Urdf, BadStartsAreNamed) {
  write("start.urdf", kRobot);
  const auto error_of = [](const std::string& start) {
    try {
      load_model(write("start.yaml", "name: bad\nhorizon: 1\nurdf: saltus_test_urdf_start.urdf\n" + start + kCosts));
    } catch (const InputError& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  EXPECT_NE(error_of("urdf_start: {elbow: 1}\n").find("urdf_start.elbow: no joint 'elbow' in the URDF (its revolute, "
                                                      "continuous and prismatic joints: hinge, rail)"),
            std::string::npos)
      << error_of("urdf_start: {elbow: 1}\n");
  EXPECT_NE(error_of("urdf_start: {weld: 1}\n").find("saltus_test_urdf_start.yaml:4:14: urdf_start.weld: joint 'weld' is a "
                                                     "fixed joint: only revolute"),
            std::string::npos)
      << error_of("urdf_start: {weld: 1}\n");
  EXPECT_NE(error_of("urdf_start: {mount: 1}\n").find("joint 'mount' is a fixed joint to a link without mass"),
            std::string::npos);
  EXPECT_NE(error_of("urdf_start: {hinge: {angle: 1}}\n").find("urdf_start.hinge"), std::string::npos)
      << error_of("urdf_start: {hinge: {angle: 1}}\n");
  EXPECT_NE(error_of("urdf_start: {hinge: {position: nope}}\n").find("urdf_start.hinge.position"), std::string::npos)
      << error_of("urdf_start: {hinge: {position: nope}}\n");
  EXPECT_NE(error_of("urdf_start: [1, 2]\n").find("urdf_start: expected a mapping"), std::string::npos);
  try {
    parse_model("name: bad\nhorizon: 1\nurdf_start: {hinge: 1}\n", "bad.yaml");
    ADD_FAILURE() << "no error for urdf_start without urdf";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("urdf_start: needs a robot"), std::string::npos) << e.what();
  }
}

TEST(Urdf, BadFilesAreNamed) {
  const auto error_of = [](const std::string& urdf_text) {
    const std::string urdf = write("bad.urdf", urdf_text);
    try {
      load_model(write("bad.yaml", "name: bad\nhorizon: 1\nurdf: saltus_test_urdf_bad.urdf\n" + kCosts));
    } catch (const InputError& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  const std::string invalid = error_of("<robot name='r'><link name='a'/><joint name='j' type='revolute'></joint></robot>");
  EXPECT_NE(invalid.find("saltus_test_urdf_bad.yaml:3:7: urdf:"), std::string::npos) << invalid;
  EXPECT_NE(invalid.find("not a valid URDF robot"), std::string::npos) << invalid;
  const auto replaced = [](const std::string& from, const std::string& to) {
    std::string text = kRobot;
    return text.replace(text.find(from), from.size(), to);
  };
  const std::string massless = error_of(replaced("<mass value=\"0.5\"/>", "<mass value=\"0\"/>"));
  EXPECT_NE(massless.find("link 'slider' has no mass but is a body"), std::string::npos) << massless;
  const std::string mimic = error_of(replaced("<axis xyz=\"1 0 0\"/>", "<axis xyz=\"1 0 0\"/><mimic joint=\"hinge\"/>"));
  EXPECT_NE(mimic.find("joint 'rail' mimics joint 'hinge'"), std::string::npos) << mimic;
  // A loop back to the arm: refused, by urdfdom (the arm has two parents) or by the import.
  const std::string cycle = error_of(replaced("<link name=\"tool\"/>", "<link name=\"tool\"/><joint name=\"loop\" "
                                                                        "type=\"fixed\"><parent link=\"tip\"/><child "
                                                                        "link=\"arm\"/></joint>"));
  EXPECT_TRUE(cycle.find("must form a tree") != std::string::npos || cycle.find("not a valid URDF") != std::string::npos)
      << cycle;
  const std::string no_axis = error_of(replaced("<axis xyz=\"1 0 0\"/>", "<axis xyz=\"0 0 0\"/>"));
  EXPECT_NE(no_axis.find("joint 'rail' has a zero axis"), std::string::npos) << no_axis;
  // Messages about a link or a joint say where it begins in the URDF (line and column of its
  // '<'), and XML that is not well-formed says where it breaks.
  const auto place_of = [](const std::string& text, const std::string& element) {
    const size_t at = text.find(element);
    const size_t line_start = text.rfind('\n', at);
    const long line = std::count(text.begin(), text.begin() + static_cast<long>(at), '\n') + 1;
    const size_t column = at - (line_start == std::string::npos ? 0 : line_start + 1) + 1;
    return fmt::format("saltus_test_urdf_bad.urdf:{}:{}: ", line, column);
  };
  EXPECT_NE(no_axis.find(place_of(kRobot, "<joint name=\"rail\"") + "joint 'rail'"), std::string::npos) << no_axis;
  EXPECT_NE(massless.find(place_of(kRobot, "<link name=\"slider\"") + "link 'slider'"), std::string::npos) << massless;
  // urdfdom's own errors are placed at the joint or link they name: a revolute joint without
  // limits, and a link named twice (at its second element).
  const std::string unlimited = error_of(replaced("<limit lower=\"-1\" upper=\"1\" effort=\"1\" velocity=\"1\"/>", ""));
  EXPECT_NE(unlimited.find(place_of(kRobot, "<joint name=\"hinge\"") + "not a valid URDF robot (Joint [hinge]"),
            std::string::npos)
      << unlimited;
  const std::string twice_text = replaced("<link name=\"tool\"/>", "<link name=\"tool\"/>\n  <link name=\"tip\"/>");
  const std::string twice = error_of(twice_text);
  EXPECT_NE(twice.find(place_of(twice_text, "<link name=\"tip\"/>") + "not a valid URDF robot"), std::string::npos)
      << twice;
  // A negative mass is given as it is (it was "has no mass"), and an inertia that is not
  // positive definite is named at its link (it was named by a YAML field the file does not have).
  const std::string negative = error_of(replaced("<mass value=\"0.5\"/>", "<mass value=\"-0.5\"/>"));
  EXPECT_NE(negative.find(place_of(kRobot, "<link name=\"slider\"") + "link 'slider' has the mass -0.5"),
            std::string::npos)
      << negative;
  const std::string indefinite = error_of(replaced("ixx=\"0.002\" ixy=\"0\"", "ixx=\"0.002\" ixy=\"0.01\""));
  EXPECT_NE(indefinite.find(place_of(kRobot, "<link name=\"slider\"") + "link 'slider' needs a positive definite <inertia>"),
            std::string::npos)
      << indefinite;
  // An element left open: TinyXML stops at the end tag that does not close it, the robot's.
  const std::string broken = error_of(replaced("<link name=\"tool\"/>", "<link name=\"tool\">"));
  EXPECT_NE(broken.find(place_of(kRobot, "</robot>") + "not well-formed XML"), std::string::npos) << broken;
  // An empty file has no position: the bare path.
  const std::string empty = error_of("");
  EXPECT_NE(empty.find("saltus_test_urdf_bad.urdf: not well-formed XML"), std::string::npos) << empty;
  // The massless tool frame is part of the tip's body: naming it as a body says where it is.
  write("robot.urdf", kRobot);
  try {
    load_model(write("tool.yaml", "name: tool\nhorizon: 1\nurdf: saltus_test_urdf_robot.urdf\n"
                                  "costs:\n  z: {terminal: [{signal: z, of: tool}]}\n"));
    ADD_FAILURE() << "no error for the tool frame as a body";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("unknown spatial body 'tool': the URDF link 'tool' has no mass on a fixed "
                                         "joint, so it is {body: tip, at: [0.05, 0, 0]}, not a body"),
              std::string::npos)
        << e.what();
  }
  // So does naming it as the body of a point.
  try {
    load_model(write("tool_point.yaml", "name: tool\nhorizon: 1\nurdf: saltus_test_urdf_robot.urdf\n"
                                        "costs:\n  z: {terminal: [{signal: z, of: {body: tool, at: [0.1, 0, 0]}}]}\n"));
    ADD_FAILURE() << "no error for the tool frame as a point's body";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("the URDF link 'tool' has no mass on a fixed joint, so it is {body: tip, at: "
                                         "[0.05, 0, 0]}, not a body"),
              std::string::npos)
        << e.what();
  }
  try {
    load_model(write("missing.yaml", "name: bad\nhorizon: 1\nurdf: no_such_robot.urdf\n" + kCosts));
    ADD_FAILURE() << "no error for a missing file";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("no_such_robot.urdf: no such file"), std::string::npos) << e.what();
  }
}

}  // namespace
