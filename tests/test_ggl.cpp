// The DAE formulations on IDAS (GGL, stabilized index 2; Anantharaman-Hiller, stabilized
// index 1; index 3) against the index-1 ODE on the shipped mechanisms, and the slider-crank against the
// SUNDIALS example it comes from.
#include <saltus/core/error.hpp>
#include <saltus/multibody/formulation.hpp>
#include <saltus/multibody/model_file.hpp>
#include <saltus/solvers/adjoint.hpp>
#include <saltus/solvers/simulate.hpp>
#include <saltus/verify/gradient.hpp>

#include <gtest/gtest.h>

#include "support/example_files.hpp"

#include <algorithm>
#include <cmath>
#include <string>
#include <utility>

using namespace saltus;

namespace {

Problem load(const std::string& file, multibody::FormulationType type) { return saltus::testing::example_in(file, type); }

struct Case {
  const char* file;
  multibody::FormulationType type;
};

class DaeFormulationsAgreeWithIndex1 : public ::testing::TestWithParam<Case> {};

TEST_P(DaeFormulationsAgreeWithIndex1, CostsEventsAndGradients) {
  const Problem ggl = load(GetParam().file, GetParam().type);
  const Problem index1 = load(GetParam().file, multibody::FormulationType::Index1);
  EXPECT_TRUE(ggl.has_index2_modes());
  EXPECT_EQ(ggl.n_algebraic(), ggl.n_states() - index1.n_states());
  const Solution a = forward_sensitivity(ggl);
  const Solution b = forward_sensitivity(index1);
  ASSERT_EQ(a.events.size(), b.events.size());
  for (size_t i = 0; i < a.events.size(); ++i) {
    EXPECT_NEAR(a.events[i].time, b.events[i].time, 1e-8);
    for (int j = 0; j < ggl.n_parameters(); ++j) {
      EXPECT_NEAR(a.events[i].dtime_dp[j], b.events[i].dtime_dp[j], 1e-6 * std::max(1.0, std::abs(b.events[i].dtime_dp[j])));
    }
  }
  for (int c = 0; c < ggl.n_costs(); ++c) {
    EXPECT_NEAR(a.costs[c], b.costs[c], 1e-7 * std::max(1.0, std::abs(b.costs[c]))) << ggl.cost(c).name;
    for (int j = 0; j < ggl.n_parameters(); ++j) {
      const double scale = std::max(1.0, std::abs(b.cost_gradient(c, j)));
      EXPECT_NEAR(a.cost_gradient(c, j), b.cost_gradient(c, j), 2e-6 * scale) << ggl.cost(c).name << " " << j;
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Mechanisms, DaeFormulationsAgreeWithIndex1,
                         ::testing::Values(Case{"fivebar.yaml", multibody::FormulationType::GGL},
                                           Case{"fivebar_floor.yaml", multibody::FormulationType::GGL},
                                           Case{"slidercrank.yaml", multibody::FormulationType::GGL},
                                           Case{"fivebar.yaml", multibody::FormulationType::StabilizedIndex1},
                                           Case{"fivebar_floor.yaml", multibody::FormulationType::StabilizedIndex1},
                                           Case{"slidercrank.yaml", multibody::FormulationType::StabilizedIndex1}));

// index3 (theory multibody 2) on IDAS, its velocities and multipliers out of the error test:
// the costs and event times converge to the index-1 ODE's as the tolerances tighten, at a lower
// order, and so do the gradients, through impacts too since index3 takes the motion's first step
// after each impact (Options::motion_first_step_at_restarts; with IDAS's own step fivebar_floor's
// gradients were 2e-4 off at the file's tolerances and 1e-3 at rtol 1e-12; docs/multibody.md,
// "Index 3"). The bounds are the measured differences rounded up, per file.
TEST(DaeFormulations, Index3ConvergesToIndex1) {
  struct Bound {
    const char* file;
    double at_file, tight;  // costs and event times, relative
    double gradient;        // at the file's tolerances and at 1e-12, relative
  };
  // The ladder starts at rest with running costs: its first step 1e-3 of the way to the first
  // output (completed_first_step) put its costs and event times at rtol 1e-8 3.3e-6 from
  // index1's (1.5e-6 with IDAS's own, smaller first step, which failed another mechanism at rest:
  // Index3StartsAtRestWithACostOnAReaction), its gradient
  // 1.4e-5 (1.8e-5), and at rtol 1e-12 3.9e-10 (1.9e-10).
  for (const Bound& b : {Bound{"fivebar.yaml", 2e-7, 1e-8, 1e-6}, Bound{"slidercrank.yaml", 2e-7, 2e-8, 1e-5},
                         Bound{"ladder.yaml", 5e-6, 1e-8, 1e-4}, Bound{"fivebar_floor.yaml", 3e-6, 3e-7, 2e-5}}) {
    const Problem index3 = load(b.file, multibody::FormulationType::Index3);
    const Problem index1 = load(b.file, multibody::FormulationType::Index1);
    EXPECT_TRUE(index3.has_index2_modes());
    Options tight = index3.options();
    tight.rtol = 1e-12;
    tight.atol = 1e-14;
    const Solution reference = forward_sensitivity(index1, index1.nominal_parameters(), tight);
    double last = 0.0;
    for (const Options& o : {index3.options(), tight}) {
      const bool at_file = o.rtol != tight.rtol;
      const Solution s = forward_sensitivity(index3, index3.nominal_parameters(), o);
      ASSERT_EQ(s.events.size(), reference.events.size()) << b.file;
      double worst = 0.0;
      for (size_t i = 0; i < s.events.size(); ++i) worst = std::max(worst, std::abs(s.events[i].time - reference.events[i].time));
      for (int c = 0; c < index3.n_costs(); ++c) {
        worst = std::max(worst, std::abs(s.costs[c] - reference.costs[c]) / std::max(1.0, std::abs(reference.costs[c])));
      }
      EXPECT_LT(worst, at_file ? b.at_file : b.tight) << b.file << " rtol " << o.rtol;
      if (!at_file) {
        EXPECT_LT(worst, last) << b.file;  // converges
      }
      last = worst;
      const Eigen::ArrayXXd scale = reference.cost_gradient.array().abs().max(1.0);
      EXPECT_LT(((s.cost_gradient - reference.cost_gradient).array().abs() / scale).maxCoeff(), b.gradient)
          << b.file << " rtol " << o.rtol << "\n" << s.cost_gradient << "\n" << reference.cost_gradient;
    }
    // The complex step through the same DAE agrees with its forward sensitivities.
    const Solution fwd = forward_sensitivity(index3);
    const GradientEstimate cs = complex_step(index3, index3.nominal_parameters(), index3.options());
    const Eigen::ArrayXXd scale = fwd.cost_gradient.array().abs().max(1.0);
    EXPECT_LT(((cs.cost_gradient - fwd.cost_gradient).array().abs() / scale).maxCoeff(), 3 * b.gradient) << b.file;
  }
}

// A compound pendulum on a revolute joint with a rotational spring, damper and torque, started
// at angle th0 with angular velocity w/2: index3's forward sensitivities at rtol 1e-10. IDAS's
// own first step (about rtol |q| / |v|, 2e-11 s) gave d theta_T / d th0 = 0.70449 and d
// theta_T / d l = 0.09992 (its index-3 Newton matrix's condition grows like h^-3), and a run at
// atol 1e-14 made no progress past t = 2.4e-12; the run now starts at the motion's scale
// (completed_first_step, run_support.hpp). Reference: I theta'' = -m g l/2 sin theta - k (theta - thr) -
// c theta' - tau, I = m l^2 / 3, integrated by scipy's DOP853 at rtol 1e-13 (central differences
// of 1e-5): theta_T = 0.523273234460, d/d th0 = 0.7070352534, d/d l = 0.1008365528.
TEST(DaeFormulations, Index3ForwardSensitivitiesOfAMechanismThatStartsMoving) {
  const multibody::Model model = multibody::parse_model(R"yaml(name: moving_pendulum
horizon: 1.3
tolerances: {rtol: 1.0e-10, atol: 1.0e-12}
parameters: {l: 0.8, th0: 0.7, m: 2, g: 9.81, k: 3, c: 0.2, tau: 0.5, thr: 0.1, w: 1.5}
gravity: [0, -g]
ground: {O: [0, 0]}
bodies:
  rod: {mass: m, inertia: "m*l^2/12", position: ["l/2*sin(th0)", "-l/2*cos(th0)"], angle: th0, angular_velocity: "w/2"}
elements:
  - {type: revolute, name: pin, a: {body: rod, at: [0, "l/2"]}, b: O}
  - {type: rotational_spring, name: rs, body_a: ground, body_b: rod, stiffness: k, damping: c, rest_angle: thr, torque: tau}
costs:
  theta_T: {terminal: [{signal: theta, of: rod}]}
)yaml",
                                                        "moving_pendulum.yaml");
  multibody::FormulationSettings settings = model.formulation;
  settings.type = multibody::FormulationType::Index3;
  const Problem pb = multibody::make_problem(model, settings);
  const Eigen::VectorXd p = pb.nominal_parameters();
  const auto column = [&](const char* name) {
    const auto names = pb.parameter_names();
    return static_cast<int>(std::find(names.begin(), names.end(), name) - names.begin());
  };
  for (const double atol : {1e-12, 1e-14}) {
    Options o = pb.options();
    o.atol = atol;
    const Solution s = forward_sensitivity(pb, p, o);
    EXPECT_NEAR(s.costs[0], 0.523273234460, 5e-7) << "atol " << atol;  // index3: 1e-7 .. 2.4e-7 off
    EXPECT_NEAR(s.cost_gradient(0, column("th0")), 0.7070352534, 5e-5 * 0.7070352534) << "atol " << atol;
    EXPECT_NEAR(s.cost_gradient(0, column("l")), 0.1008365528, 5e-5 * 0.1008365528) << "atol " << atol;
  }
}

// A sleeve on a tilted cylindrical joint with a pendulum hinged on it, at rest, and a running
// cost on the hinge's reaction: the cost's rate (0.40 N) weighed by its tolerance made IDAS
// start index3 with 8e-12 s, where its Newton matrix (condition ~ h^-3) failed every step down to
// 2e-10 s (IDA_CONV_FAIL at every rtol; found by model files written from the docs). index3 now
// starts as it would without the cost, and agrees with ggl.
TEST(DaeFormulations, Index3StartsAtRestWithACostOnAReaction) {
  const multibody::Model model = multibody::parse_model(R"yaml(name: sleeve
horizon: 2
outputs: 5
tolerances: {rtol: 1.0e-9, atol: 1.0e-12}
parameters: {m1: 1.2, m2: 0.6, g: 9.81}
gravity: [0, 0, "-g"]
spatial:
  bodies:
    sleeve:
      mass: m1
      inertia: [0.01, 0.02, 0.015, 0.002, -0.001, 0.0015]
      center: [0.05, 0.1, 0]
      position: [0, 0, 0.5]
      orientation: {axis: [1, 0, 1], angle: 0.4}
    bob:
      mass: m2
      inertia: [0.004, 0.003, 0.002, 0.0003, 0.0002, -0.0001]
      center: [0, 0.01, -0.25]
      position: [0.19210609940028853, 0.05507207011297419, 0.5078939005997115]
      orientation: {sequence: zyx, angles: [0.4257327229723199, 0.43991781135328534, 0.3092426729893534]}
  joints:
    - {type: cylindrical, name: cyl, a: ground, b: sleeve, point_a: [0, 0, 0.5], point_b: [0, 0, 0], axis_a: [1, 0, 1], axis_b: [1, 0, 1]}
    - {type: revolute, name: hinge, a: sleeve, b: bob, point_a: [0.2, 0, 0], point_b: [0, 0, 0], axis_a: [0, 1, 0], axis_b: [0, 1, 0]}
costs:
  hinge_z: {running: [{signal: reaction, of: hinge, row: 2}]}
)yaml",
                                                        "sleeve.yaml");
  const auto run = [&](multibody::FormulationType type) {
    multibody::FormulationSettings settings = model.formulation;
    settings.type = type;
    const Problem pb = multibody::make_problem(model, settings);
    return simulate(pb, pb.nominal_parameters(), pb.options()).costs[0];
  };
  const double ggl = run(multibody::FormulationType::GGL);
  EXPECT_NEAR(run(multibody::FormulationType::Index3), ggl, 1e-5 * std::abs(ggl));
}

// stabilized_index1 and index3 are not semi-explicit index 2: their adjoint runs through the
// completion (completed_adjoint.hpp). Through fivebar_floor's three impacts, with a cost that reads
// accelerations, both agree with index1's forward gradient (a separate integrator, CVODES, on the
// ODE form). Measured at the file's rtol 1e-10: stabilized_index1 8e-9, index3 1.2e-5 relative to
// the largest entry of each cost's row (1.7e-6 while index3 took IDAS's own first step after
// impacts, when its forward sensitivities were 3e-4 off; with the motion's first step they are
// within 6e-6: docs/multibody.md, "Index 3").
TEST(DaeFormulations, TheAdjointThroughTheCompletionAgreesWithIndex1ThroughImpacts) {
  const Problem index1 = load("fivebar_floor.yaml", multibody::FormulationType::Index1);
  const Solution reference = forward_sensitivity(index1);
  for (const auto& [type, tolerance] : {std::pair{multibody::FormulationType::StabilizedIndex1, 1e-7},
                                        std::pair{multibody::FormulationType::Index3, 2e-5}}) {
    const Problem pb = load("fivebar_floor.yaml", type);
    const Solution adj = adjoint(pb);
    ASSERT_EQ(adj.events.size(), reference.events.size());
    for (int c = 0; c < pb.n_costs(); ++c) {
      const double scale = reference.cost_gradient.row(c).cwiseAbs().maxCoeff();
      EXPECT_LT((adj.cost_gradient.row(c) - reference.cost_gradient.row(c)).cwiseAbs().maxCoeff(), tolerance * scale)
          << pb.cost(c).name << "\n" << adj.cost_gradient << "\n" << reference.cost_gradient;
    }
  }
}

// A running cost on a joint's reaction, recorded by the backward pass at the rate completion's
// state and rates (its reactions as they are: stabilized_index1 read them from psi', index3 from
// lambda, not from a second completion). urdf_arm's motor_torque and tip_height against index1's
// forward gradient at rtol 1e-12, largest difference relative to each cost's largest entry,
// measured: stabilized_index1 2.6e-7 (1.4e-6 through a second completion: the bound tells them
// apart); index3 3.5e-5 (4.3e-5 through its own completion, before it recorded the rate
// completion: a bound on regressions only).
TEST(DaeFormulations, AReactionCostsAdjointReadsTheRateCompletion) {
  const Problem index1 = load("urdf_arm.yaml", multibody::FormulationType::Index1);
  Options tight = index1.options();
  tight.rtol = 1e-12;
  const Solution reference = forward_sensitivity(index1, index1.nominal_parameters(), tight);
  for (const auto& [type, tolerance] : {std::pair{multibody::FormulationType::StabilizedIndex1, 1e-6},
                                        std::pair{multibody::FormulationType::Index3, 6e-5}}) {
    const Problem pb = load("urdf_arm.yaml", type);
    const Solution adj = adjoint(pb);
    for (int c = 0; c < pb.n_costs(); ++c) {
      const double scale = reference.cost_gradient.row(c).cwiseAbs().maxCoeff();
      EXPECT_LT((adj.cost_gradient.row(c) - reference.cost_gradient.row(c)).cwiseAbs().maxCoeff(), tolerance * scale)
          << pb.cost(c).name << "\n" << adj.cost_gradient << "\n" << reference.cost_gradient;
    }
  }
}

// The chain of 8 rods names the rods' tips' y as its independent coordinates; they degrade as the
// rods pass the vertical. GGL's completion projects onto the constraints, which needs no
// independent set, and index3's takes the best-conditioned set where the model's has degraded
// (completion_partition), so the GGL adjoint through the completion and index3's run go through
// the whole second (before, with the model's set throughout, the adjoint's backward pass crept
// with |lambda| past 1e16 and did not finish, and index3 stopped at the first degraded point).
// Measured at the file's rtol 1e-10: the GGL adjoint 9.3e-9 of each cost's largest entry off
// index1's forward gradient (9.1e-9 with matrix-free GMRES in its backward pass); index3's simulated costs 4.1e-5 of index1's (relative to
// max(1, |cost|): index3 keeps its velocities out of the error test).
TEST(DaeFormulations, TheCompletionStaysWellConditionedAlongTheChain) {
  const Problem index1 = load("chain8.yaml", multibody::FormulationType::Index1);
  const Solution reference = forward_sensitivity(index1);
  const Problem ggl = load("chain8.yaml", multibody::FormulationType::GGL);
  // The backward Newton systems by the dense LU (48 states: below krylov_min_states) and by
  // matrix-free GMRES on reverse sweeps of the completion (the threshold lowered).
  ASSERT_NE(ggl.options().linear_solver, LinearSolver::Dense);  // else both runs would be dense
  Options matrix_free = ggl.options();
  matrix_free.krylov_min_states = 1;
  for (const Options& o : {ggl.options(), matrix_free}) {
    const Solution adj = adjoint(ggl, ggl.nominal_parameters(), o);
    ASSERT_EQ(adj.events.size(), reference.events.size());
    for (int c = 0; c < ggl.n_costs(); ++c) {
      const double scale = reference.cost_gradient.row(c).cwiseAbs().maxCoeff();
      EXPECT_LT((adj.cost_gradient.row(c) - reference.cost_gradient.row(c)).cwiseAbs().maxCoeff(), 1e-7 * scale)
          << ggl.cost(c).name << " krylov_min_states " << o.krylov_min_states << "\n"
          << adj.cost_gradient << "\n" << reference.cost_gradient;
    }
  }
  const Problem index3 = load("chain8.yaml", multibody::FormulationType::Index3);
  const Solution run = simulate(index3);
  ASSERT_EQ(run.events.size(), reference.events.size());
  for (int c = 0; c < index3.n_costs(); ++c) {
    EXPECT_NEAR(run.costs[c], reference.costs[c], 1e-4 * std::max(1.0, std::abs(reference.costs[c]))) << index3.cost(c).name;
  }
  // index3's adjoint records the rate completion (velocities projected in the kinetic metric),
  // smooth where the independent set switches: 1.3e-5 of each cost's largest entry off index1's
  // forward gradient, in 10,981 backward steps (through index3's own completion, whose Jacobian
  // jumps at each switch of the set: 2.1e-4, in 13,583 steps).
  const Solution adj = adjoint(index3);
  ASSERT_EQ(adj.events.size(), reference.events.size());
  for (int c = 0; c < index3.n_costs(); ++c) {
    const double scale = reference.cost_gradient.row(c).cwiseAbs().maxCoeff();
    EXPECT_LT((adj.cost_gradient.row(c) - reference.cost_gradient.row(c)).cwiseAbs().maxCoeff(), 5e-5 * scale)
        << index3.cost(c).name << "\n" << adj.cost_gradient << "\n" << reference.cost_gradient;
  }
}

TEST(DaeFormulations, FormulationNames) {
  EXPECT_EQ(multibody::parse_formulation("index3"), multibody::FormulationType::Index3);
  try {
    (void)multibody::parse_formulation("index2");
    FAIL() << "no error";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("ggl, stabilized_index1 or index3"), std::string::npos) << e.what();
  }
}

TEST(SliderCrankGgl, ThePublishedExampleAndConvergence) {
  // idasSlCrank_FSA_dns (GGL on IDAS, rtol 1e-6, atol 1e-7): G = 3.3366157997761721,
  // dG/d(k, c) = (3.3346e-01, -3.6375e-01). Its own error against the converged value below is
  // 2.7e-6; at the same tolerances this run's is 1.2e-6.
  Problem pb = load("slidercrank.yaml", multibody::FormulationType::GGL);
  Options loose = pb.options();
  loose.rtol = 1e-6;
  loose.atol = 1e-7;
  const Solution s = forward_sensitivity(pb, pb.nominal_parameters(), loose);
  EXPECT_NEAR(s.costs[0], 3.3366157997761721, 3e-6 * 3.34);
  EXPECT_NEAR(s.cost_gradient(0, pb.parameter_index("k")), 3.3346e-01, 3e-5);
  EXPECT_NEAR(s.cost_gradient(0, pb.parameter_index("c")), -3.6375e-01, 3e-5);
  // Converges as the tolerances tighten, to the index-1 ODE's value.
  const Solution tight = forward_sensitivity(pb);
  const Solution ode = forward_sensitivity(load("slidercrank.yaml", multibody::FormulationType::Index1));
  EXPECT_NEAR(tight.costs[0], ode.costs[0], 1e-8);
  EXPECT_LT(std::abs(tight.costs[0] - ode.costs[0]), std::abs(s.costs[0] - ode.costs[0]));
  // The complex step through the GGL DAE agrees with its forward sensitivities.
  const GradientEstimate cs = complex_step(pb, pb.nominal_parameters(), pb.options());
  for (int j = 0; j < pb.n_parameters(); ++j) {
    EXPECT_NEAR(cs.cost_gradient(0, j), tight.cost_gradient(0, j), 1e-6 * std::max(1.0, std::abs(tight.cost_gradient(0, j))));
  }
}

// The complex step through both DAE formulations of the five-bar, smooth and with its floor
// impacts, agrees with their forward sensitivities, for every parameter and cost. Without the
// coupling blocks J_i in its iteration matrix (docs/dae.md, "Complex step"), its IDAS steps
// collapsed to 1e-5 s with respect to the spring rest length L01 (minutes, or IDA_CONV_FAIL),
// and without those of the cost rows, fivebar_floor's effort (it reads an acceleration) failed
// with respect to g near t = 3.98.
TEST(DaeFormulations, ComplexStepAgreesWithForwardOnTheFivebars) {
  for (const char* file : {"fivebar.yaml", "fivebar_floor.yaml"}) {
    for (auto type : {multibody::FormulationType::GGL, multibody::FormulationType::StabilizedIndex1}) {
      const Problem pb = load(file, type);
      const Solution fwd = forward_sensitivity(pb);
      const GradientEstimate cs = complex_step(pb, pb.nominal_parameters(), pb.options());
      const Eigen::ArrayXXd scale = fwd.cost_gradient.array().abs().max(1.0);
      const Eigen::ArrayXXd relative = (cs.cost_gradient - fwd.cost_gradient).array().abs() / scale;
      EXPECT_LT(relative.maxCoeff(), 1e-7) << file << " " << multibody::to_string(type) << "\n"
                                           << cs.cost_gradient << "\n" << fwd.cost_gradient;
    }
  }
}

// The adjoint of ggl (through the completion, docs/dae.md "Adjoint through the completion"):
// at the published
// tolerances it gives the published gradient; at the file's it agrees with forward
// sensitivities on the slider-crank and on both five-bars (fivebar_floor: impacts, and the
// running cost `effort` that reads an acceleration).
TEST(SliderCrankGgl, TheAdjointGivesThePublishedGradient) {
  Problem pb = load("slidercrank.yaml", multibody::FormulationType::GGL);
  Options loose = pb.options();
  loose.rtol = 1e-6;
  loose.atol = 1e-7;
  const Solution a = adjoint(pb, pb.nominal_parameters(), loose);
  EXPECT_NEAR(a.cost_gradient(0, pb.parameter_index("k")), 3.3346e-01, 3e-5);
  EXPECT_NEAR(a.cost_gradient(0, pb.parameter_index("c")), -3.6375e-01, 3e-5);
}

TEST(DaeFormulations, GglAdjointAgreesWithForwardThroughImpacts) {
  for (const char* file : {"slidercrank.yaml", "fivebar.yaml", "fivebar_floor.yaml"}) {
    const Problem pb = load(file, multibody::FormulationType::GGL);
    const Solution fwd = forward_sensitivity(pb);
    const Solution adj = adjoint(pb);
    ASSERT_EQ(adj.events.size(), fwd.events.size()) << file;
    const Eigen::ArrayXXd scale = fwd.cost_gradient.array().abs().max(1.0);
    const Eigen::ArrayXXd relative = (adj.cost_gradient - fwd.cost_gradient).array().abs() / scale;
    EXPECT_LT(relative.maxCoeff(), 1e-6) << file << "\n" << adj.cost_gradient << "\n" << fwd.cost_gradient;
  }
}


}  // namespace

// A two-bar linkage whose tip strikes a floor once, with a running cost on an acceleration, at
// tight tolerances: right after the impact the cost integral's sensitivity to the restitution
// (zero before it) has an absolute tolerance of 1e-13 to meet, through a rate that IDAS's BDF
// formula gives with an error no step met; ggl and stabilized_index1 stopped with IDA_ERR_FAIL
// at the impact, their complex step too (found by a model file written from the docs). The cost
// integrals' sensitivities (the complex run's imaginary parts) then leave the error test, and the
// gradient agrees with index1's.
TEST(DaeFormulations, ACostOnAnAccelerationThroughAnImpactAtTightTolerances) {
  const char* kLinkage = R"yaml(
name: linkage
horizon: 0.6
tolerances: {rtol: 1.0e-11, atol: 1.0e-13}
parameters: {e: 0.8}
ground: {O: [0, 0]}
points:
  p1: {position: [0.932039, -0.362358]}
  p2: {position: [1.931613, -0.333158]}
independent: [p2.x, p2.y]
elements:
  - {type: bar, name: b01, from: O, to: p1, length: 1, mass: 1}
  - {type: bar, name: b12, from: p1, to: p2, length: 1, mass: 1.5}
contacts:
  - {name: floor, point: p2, line: {point: [0, -1.6], normal: [0, 1]}, restitution: e, law: partitioning}
costs:
  ay1: {running: [{signal: ay, of: p1, power: 2}]}
  y2T: {terminal: [{signal: y, of: p2}]}
)yaml";
  multibody::Model model = multibody::parse_model(kLinkage, "linkage.yaml");
  model.formulation.type = multibody::FormulationType::Index1;
  const Problem index1 = multibody::make_problem(model);
  const Solution reference = forward_sensitivity(index1);
  ASSERT_EQ(reference.events.size(), 1u);
  for (const auto type : {multibody::FormulationType::GGL, multibody::FormulationType::StabilizedIndex1}) {
    model.formulation.type = type;
    const Problem pb = multibody::make_problem(model);
    SCOPED_TRACE(multibody::to_string(type));
    const Solution fwd = forward_sensitivity(pb);
    ASSERT_EQ(fwd.events.size(), 1u);
    EXPECT_NEAR(fwd.costs[0], reference.costs[0], 1e-8 * reference.costs[0]);
    EXPECT_NEAR(fwd.cost_gradient(0, 0), reference.cost_gradient(0, 0), 1e-6 * std::abs(reference.cost_gradient(0, 0)));
    if (type == multibody::FormulationType::StabilizedIndex1) {  // ggl's complex step: still IDA_CONV_FAIL
      const GradientEstimate cs = complex_step(pb, pb.nominal_parameters(), pb.options());
      EXPECT_NEAR(cs.cost_gradient(0, 0), reference.cost_gradient(0, 0), 1e-6 * std::abs(reference.cost_gradient(0, 0)));
    }
  }
}
