// Spatial drivers, rotational spring-damper-actuators and bushings (docs/model-files.md,
// "Spatial bodies"; docs/multibody.md, "Drivers, rotational springs and bushings"): the drivers'
// rows (Phi_q, Phi_t and the acceleration bias with its time terms) against the complex step;
// the forces against the gradient of their energies written out here from the definitions
// (quaternion product and rotation matrix by hand), their damping against its power, their
// Jacobians in Dual against the complex step; and the dynamics against closed forms: the torque
// that drives a pendulum along f(t), the force that lifts a slider along f(t), a damped torsion
// oscillator with a constant torque, and a body hanging on a bushing with a torque on it. The
// arm example's gradients agree across methods and its costs across formulations.
#include <saltus/core/parameter_subset.hpp>
#include <saltus/multibody/dynamics.hpp>
#include <saltus/multibody/formulation.hpp>
#include <saltus/multibody/model_file.hpp>
#include <saltus/solvers/adjoint.hpp>
#include <saltus/solvers/simulate.hpp>
#include <saltus/verify/gradient.hpp>

#include <Eigen/Geometry>
#include <gtest/gtest.h>

#include <cmath>
#include <numbers>
#include <string>

namespace {

using namespace saltus;
using namespace saltus::multibody;

constexpr double kStep = 1e-30;
const Complex kI(0.0, kStep);

std::string example(const std::string& name) { return std::string(SALTUS_SOURCE_DIR) + "/examples/" + name; }

// Two bodies, a revolute and a cylindrical joint, three drivers on them, two rotational springs
// (one on a joint, one between a body and the ground with its own axis and normals) and a
// bushing, all with generic data.
const char* kElements = R"(
name: spatial_elements
horizon: 1
parameters: {k: 30, c: 0.7, w: 2.5, kb: 800}
gravity: [0, 0, 0]
spatial:
  bodies:
    b1: {mass: 2, inertia: [0.3, 0.4, 0.5, 0.01, -0.02, 0.03], center: [0.1, -0.2, 0.05], position: [0.2, 0.1, 0.3],
         orientation: {axis: [1, 2, 3], angle: 0.7}}
    b2: {mass: 1.5, inertia: [0.2, 0.25, 0.1], position: [0.9, -0.4, 0.6], orientation: {axis: [-1, 0.5, 0.2], angle: 1.1}}
  joints:
    - {type: revolute, name: r, a: ground, b: b1, point_a: [0.1, 0, 0.2], point_b: [-0.3, 0.2, 0.1], axis_a: [0, 0.3, 1],
       axis_b: [1, 0, 0.2]}
    - {type: cylindrical, name: cy, a: b1, b: b2, point_a: [0.1, 0.2, 0], point_b: [0, -0.1, 0.3], axis_a: [0.2, 1, 0.1]}
    - {type: rotational_driver, name: spin, joint: r, function: {offset: 0.2, rate: w, amplitude: 0.3, frequency: 4, phase: 0.1}}
    - {type: rotational_driver, name: turn, joint: cy, normal_a: [1, 0, 0.3], normal_b: [0, 0, 1],
       function: {offset: -0.4, amplitude: 0.2, frequency: 3}}
    - {type: translational_driver, name: slide, joint: cy, function: {offset: 0.05, rate: 0.2, amplitude: 0.1, frequency: w}}
  forces:
    - {type: rotational_spring, name: rs, joint: r, stiffness: k, damping: c, rest_angle: 0.3, torque: 0.5}
    - {type: rotational_spring, name: rs2, a: b2, b: ground, axis_a: [0.3, 1, 0.2], normal_a: [1, 0, 0],
       normal_b: [0, 0.2, 1], stiffness: 12, damping: 0.2}
    - {type: bushing, name: bu, a: b1, b: b2, point_a: [0.2, -0.1, 0.3], point_b: [-0.1, 0.2, 0], stiffness: [kb, 600, 900],
       damping: [3, 4, 5], rotational_stiffness: [40, 50, 60], rotational_damping: [0.4, 0.5, 0.6]}
costs:
  c: {terminal: [{signal: z, of: b1}]}
)";

Model elements() { return parse_model(kElements, "spatial_elements"); }

/// A generic state off the constraint manifold at time t, moved by h along dq (and t by h when
/// `move_time`).
MotionState<Complex> state(const Model& m, Complex h, const Eigen::VectorXd& dq, bool move_time = false) {
  const Eigen::VectorXd q0 = m.initial_positions();
  MotionState<Complex> st;
  st.t = Complex(0.3) + (move_time ? h : Complex(0.0));
  st.q = q0.cast<Complex>() + h * dq.cast<Complex>();
  st.v.resize(q0.size());
  for (Eigen::Index i = 0; i < q0.size(); ++i) st.v[i] = 0.4 * std::sin(1.3 * static_cast<double>(i) + 0.2);
  return st;
}

TEST(SpatialElements, DriverRowsMatchTheComplexStep) {
  const Model m = elements();
  m.validate();
  const int n = m.n_coordinates();
  ASSERT_EQ(m.n_constraints(), 5 + 4 + 3 + 2);
  const Eigen::VectorXcd p = m.nominal_parameters().cast<Complex>();
  const MotionState<Complex> base = state(m, 0.0, Eigen::VectorXd::Zero(n));
  const ConstraintSet<Complex> c = constraints<Complex>(m, base, p);
  for (int j = 0; j < n; ++j) {
    const ConstraintSet<Complex> cj = constraints<Complex>(m, state(m, kI, Eigen::VectorXd::Unit(n, j)), p);
    for (Eigen::Index i = 0; i < c.phi.size(); ++i) {
      EXPECT_NEAR(c.jac.coeff(i, j).real(), cj.phi[i].imag() / kStep, 1e-12) << "Phi_q row " << i << " col " << j;
    }
  }
  const ConstraintSet<Complex> later = constraints<Complex>(m, state(m, kI, Eigen::VectorXd::Zero(n), true), p);
  Eigen::VectorXd v(n);
  for (int i = 0; i < n; ++i) v[i] = base.v[i].real();
  // The bias is d/ds of Phi_q v + Phi_t along (t + s, q + s v) with v fixed (a = 0).
  const MotionState<Complex> moved = state(m, kI, v, true);
  const Eigen::VectorXcd rate = constraints<Complex>(m, moved, p).rate(moved.v);
  for (Eigen::Index i = 0; i < c.phi.size(); ++i) {
    EXPECT_NEAR(c.phi_t[i].real(), later.phi[i].imag() / kStep, 1e-12) << "Phi_t row " << i;
    EXPECT_NEAR(c.bias[i].real(), rate[i].imag() / kStep, 1e-11) << "bias row " << i;
  }
}

// The rotation by hand: A(p) = (e0^2 - e^T e) I + 2 e e^T + 2 e0 e~, for any p.
template <class S>
Mat3<S> rotation(const Vec4<S>& p) {
  const Vec3<S> e(p[1], p[2], p[3]);
  Mat3<S> tilde;
  tilde << S(0.0), -e[2], e[1], e[2], S(0.0), -e[0], -e[1], e[0], S(0.0);
  return (p[0] * p[0] - (e[0] * e[0] + e[1] * e[1] + e[2] * e[2])) * Mat3<S>::Identity() + S(2.0) * e * e.transpose() +
         S(2.0) * p[0] * tilde;
}

Vec3<Complex> unit(const Eigen::Vector3d& w) { return w.normalized().cast<Complex>(); }

/// The part of n perpendicular to the unit axis h, unit length.
Vec3<Complex> across(const Eigen::Vector3d& n, const Eigen::Vector3d& axis) {
  const Eigen::Vector3d h = axis.normalized();
  return unit(n - n.dot(h) * h);
}

Complex dot(const Vec3<Complex>& a, const Vec3<Complex>& b) { return a[0] * b[0] + a[1] * b[1] + a[2] * b[2]; }

/// a x b without conjugation (Eigen's cross conjugates complex entries).
Vec3<Complex> cross(const Vec3<Complex>& a, const Vec3<Complex>& b) {
  return Vec3<Complex>(a[1] * b[2] - a[2] * b[1], a[2] * b[0] - a[0] * b[2], a[0] * b[1] - a[1] * b[0]);
}

/// The model's angles, bushing deflections and their energy, written out from the definitions.
struct Written {
  Complex rs, rs2;  ///< the two springs' angles [rad]
  Vec3<Complex> u, phi;
};

Written written_out(const MotionState<Complex>& st) {
  const Vec3<Complex> r1 = st.q.segment<3>(0), r2 = st.q.segment<3>(7);
  const Mat3<Complex> A1 = rotation<Complex>(st.q.segment<4>(3)), A2 = rotation<Complex>(st.q.segment<4>(10));
  const auto angle = [](const Vec3<Complex>& na, const Vec3<Complex>& ga, const Vec3<Complex>& nb) {
    // atan2 on its branch, analytic: atan of the ratio plus the branch's constant.
    const Complex y = dot(ga, nb), x = dot(na, nb);
    return std::atan(y / x) + (std::atan2(y.real(), x.real()) - std::atan(y.real() / x.real()));
  };
  Written w;
  // rs: ground (axis (0, 0.3, 1), default normal x) to b1 (axis (1, 0, 0.2), default normal y).
  const Vec3<Complex> h = unit(Eigen::Vector3d(0, 0.3, 1)), na = across(Eigen::Vector3d(1, 0, 0), Eigen::Vector3d(0, 0.3, 1));
  w.rs = angle(na, cross(h, na), A1 * across(Eigen::Vector3d(0, 1, 0), Eigen::Vector3d(1, 0, 0.2)));
  // rs2: b2 (axis (0.3, 1, 0.2), normal x) to the ground (normal (0, 0.2, 1)).
  const Eigen::Vector3d h2(0.3, 1, 0.2);
  const Vec3<Complex> na2 = across(Eigen::Vector3d(1, 0, 0), h2);
  w.rs2 = angle(A2 * na2, A2 * cross(unit(h2), na2), across(Eigen::Vector3d(0, 0.2, 1), h2));
  const Vec3<Complex> Pa = r1 + A1 * Eigen::Vector3d(0.2, -0.1, 0.3).cast<Complex>();
  const Vec3<Complex> Pb = r2 + A2 * Eigen::Vector3d(-0.1, 0.2, 0).cast<Complex>();
  w.u = A1.transpose() * (Pb - Pa);
  // The vector part of conj(p1) p2 (Hamilton product), doubled.
  const Complex a0 = st.q[3], b0 = st.q[10];
  const Vec3<Complex> a = st.q.segment<3>(4), b = st.q.segment<3>(11);
  w.phi = Complex(2.0) * (a0 * b - b0 * a - cross(a, b));
  return w;
}

Complex wrapped(const Complex& x) {
  return x - 2.0 * std::numbers::pi * std::round(x.real() / (2.0 * std::numbers::pi));
}

Complex energy(const MotionState<Complex>& st) {
  const Written w = written_out(st);
  const Complex twist = wrapped(w.rs - 0.3), twist2 = wrapped(w.rs2);
  Complex e = 0.5 * 30.0 * twist * twist + 0.5 * 12.0 * twist2 * twist2;
  const double k[3] = {800, 600, 900}, kr[3] = {40, 50, 60};
  for (int i = 0; i < 3; ++i) e += 0.5 * (k[i] * w.u[i] * w.u[i] + kr[i] * w.phi[i] * w.phi[i]);
  return e;
}

// At rest and without the actuator torque, the forces are minus the gradient of the energy
// written out above; the model's potential energy agrees with it.
TEST(SpatialElements, ForcesAreMinusTheGradientOfTheirEnergy) {
  Model m = elements();
  m.spatial_forces[0].actuator = 0.0;
  const int n = m.n_coordinates();
  const Eigen::VectorXcd p = m.nominal_parameters().cast<Complex>();
  MotionState<Complex> st = state(m, 0.0, Eigen::VectorXd::Zero(n));
  st.v.setZero();
  const Eigen::VectorXcd F = applied_forces<Complex>(m, st, p);
  for (int j = 0; j < n; ++j) {
    MotionState<Complex> moved = st;
    moved.q[j] += kI;
    EXPECT_NEAR(F[j].real(), -energy(moved).imag() / kStep, 1e-10 * (1.0 + std::abs(F[j].real()))) << "coordinate " << j;
  }
  const MotionState<double> at{0.3, m.initial_positions(), Eigen::VectorXd::Zero(n)};
  const Eigen::VectorXd pd = m.nominal_parameters();
  double written = energy(st).real();
  EXPECT_NEAR(rotational_spring_energy<double>(m, m.spatial_forces[0], at, pd) +
                  rotational_spring_energy<double>(m, m.spatial_forces[1], at, pd) +
                  bushing_energy<double>(m, m.spatial_forces[2], at, pd),
              written, 1e-12 * written);
  // The outputs' angle: the written-out one.
  EXPECT_NEAR(rotational_spring_state<double>(m, m.spatial_forces[0], at, pd).angle.value, written_out(st).rs.real(), 1e-14);
}

// With only damping, the forces' power is minus the damping's dissipation: -(c theta-dot^2 + ...)
// with every rate taken by the complex step of the written-out angles and deflections.
TEST(SpatialElements, DampingDissipatesItsPower) {
  Model m = elements();
  for (SpatialForce& f : m.spatial_forces) {
    f.stiffness = 0.0;
    f.actuator = 0.0;
    f.linear_stiffness = Value3{};
    f.angular_stiffness = Value3{};
  }
  Model free = m;
  free.spatial_forces.clear();
  const int n = m.n_coordinates();
  const Eigen::VectorXd p = m.nominal_parameters();
  const MotionState<Complex> sc = state(m, 0.0, Eigen::VectorXd::Zero(n));
  MotionState<double> st{0.3, m.initial_positions(), Eigen::VectorXd(n)};
  for (int i = 0; i < n; ++i) st.v[i] = sc.v[i].real();
  const Eigen::VectorXd F = applied_forces<double>(m, st, p) - applied_forces<double>(free, st, p);
  const Written rate = [&] {
    const Written w = written_out(state(m, kI, st.v));
    Written r;
    r.rs = w.rs.imag() / kStep;
    r.rs2 = w.rs2.imag() / kStep;
    for (int i = 0; i < 3; ++i) {
      r.u[i] = w.u[i].imag() / kStep;
      r.phi[i] = w.phi[i].imag() / kStep;
    }
    return r;
  }();
  double dissipation = 0.7 * std::norm(rate.rs) + 0.2 * std::norm(rate.rs2);
  const double c[3] = {3, 4, 5}, cr[3] = {0.4, 0.5, 0.6};
  for (int i = 0; i < 3; ++i) dissipation += c[i] * std::norm(rate.u[i]) + cr[i] * std::norm(rate.phi[i]);
  ASSERT_GT(dissipation, 0.1);
  EXPECT_NEAR(F.dot(st.v), -dissipation, 1e-12 * dissipation);
}

// The forces' Jacobians in q, v and the parameters (Dual) against the complex step.
void expect_force_derivatives_match_the_complex_step(const Model& m) {
  const int n = m.n_coordinates();
  const Eigen::VectorXd p = m.nominal_parameters();
  const MotionState<Complex> base = state(m, 0.0, Eigen::VectorXd::Zero(n));
  const int np = static_cast<int>(p.size());
  for (int j = 0; j < 2 * n + np; ++j) {
    MotionState<Complex> sc = base;
    MotionState<Dual> sd{Dual(0.3), VectorX<Dual>(n), VectorX<Dual>(n)};
    for (int i = 0; i < n; ++i) {
      sd.q[i] = Dual(base.q[i].real());
      sd.v[i] = Dual(base.v[i].real());
    }
    VectorX<Complex> pc = p.cast<Complex>();
    VectorX<Dual> pd = p.cast<Dual>();
    if (j < n) {
      sc.q[j] += kI;
      sd.q[j].v[0] = 1.0;
    } else if (j < 2 * n) {
      sc.v[j - n] += kI;
      sd.v[j - n].v[0] = 1.0;
    } else {
      pc[j - 2 * n] += kI;
      pd[j - 2 * n].v[0] = 1.0;
    }
    const VectorX<Complex> Fc = applied_forces<Complex>(m, sc, pc);
    const VectorX<Dual> Fd = applied_forces<Dual>(m, sd, pd);
    for (int i = 0; i < n; ++i) {
      const double cs = Fc[i].imag() / kStep;
      EXPECT_NEAR(Fd[i].v[0], cs, 1e-9 * (1.0 + std::abs(cs))) << "dF[" << i << "]/dx[" << j << "]";
    }
  }
}

TEST(SpatialElements, ForceDerivativesMatchTheComplexStep) { expect_force_derivatives_match_the_complex_step(elements()); }

// A force at a body point and a torque given in the body's axes (`frame: body`), on a body off
// its centre, with parameters in their components.
const char* kFollowerLoads = R"(
name: follower_loads
horizon: 1
parameters: {F: 3, n: 0.7}
gravity: [0, 0, -9.81]
spatial:
  bodies:
    b: {mass: 2, inertia: [0.3, 0.4, 0.5, 0.01, -0.02, 0.03], center: [0.1, -0.2, 0.05], position: [0.2, 0.1, 0.3],
        orientation: {axis: [1, 2, 3], angle: 0.7}, angular_velocity: [0.5, -1, 2]}
  forces:
    - {type: force, name: thrust, body: b, at: [0.3, 0.1, -0.2], force: [F, -1, 0.5], frame: body}
    - {type: torque, name: motor, body: b, torque: [0.2, n, -0.4], frame: body}
costs:
  c: {terminal: [{signal: z, of: b}]}
)";

TEST(SpatialElements, LoadsInBodyAxesHaveTheirDerivatives) {
  expect_force_derivatives_match_the_complex_step(parse_model(kFollowerLoads, "follower_loads"));
}

// The power of loads in body axes is (A f_b) . v_P + (A n_b) . w, with A (Eigen's quaternion),
// the body angular velocity w' = 2 G(e) e-dot and w = A w' written out here.
TEST(SpatialElements, LoadsInBodyAxesHaveThePowerOfTheirTurnedVectors) {
  Model m = parse_model(kFollowerLoads, "follower_loads");
  m.gravity_x = m.gravity_y = m.gravity_z = 0.0;
  const int n = m.n_coordinates();
  MotionState<double> st{0.3, m.initial_positions(), Eigen::VectorXd(n)};
  const Eigen::Vector4d e = st.q.segment<4>(3);
  Eigen::Vector4d e_dot(0.2, 0.7, -0.4, 0.3);
  e_dot -= e * e.dot(e_dot);
  st.v << 0.3, -0.5, 0.8, e_dot;
  Model still = m;
  still.spatial_forces.clear();
  const Eigen::VectorXd p = m.nominal_parameters();
  // The velocity forces depend on v alone: the loads' part is the difference.
  const Eigen::VectorXd Q = applied_forces<double>(m, st, p) - applied_forces<double>(still, st, p);
  Eigen::Matrix<double, 3, 4> G;
  G << -e[1], e[0], e[3], -e[2], -e[2], -e[3], e[0], e[1], -e[3], e[2], -e[1], e[0];
  const Eigen::Matrix3d A = Eigen::Quaterniond(e[0], e[1], e[2], e[3]).toRotationMatrix();
  const Eigen::Vector3d w_body = 2.0 * G * e_dot, s(0.3, 0.1, -0.2);
  const Eigen::Vector3d v_point = st.v.head<3>() + A * w_body.cross(s);
  const double power = (A * Eigen::Vector3d(3, -1, 0.5)).dot(v_point) + (A * Eigen::Vector3d(0.2, 0.7, -0.4)).dot(A * w_body);
  ASSERT_GT(std::abs(power), 0.1);
  EXPECT_NEAR(Q.dot(st.v), power, 1e-13);
}

// A body spinning at w about its symmetry axis z (no gravity, no torque) pushed at its centre by
// a force F along its own x axis: the force turns with it, F (cos wt, sin wt, 0) in ground axes,
// so the body drifts on x = F / (m w^2) (1 - cos wT), y = F / (m w) (T - sin(wT) / w); the same
// force in ground axes moves it F T^2 / (2 m) along x. Gradients in F and m agree across methods.
TEST(SpatialElements, AForceInBodyAxesTurnsWithTheBody) {
  const auto spinning = [](const std::string& frame) {
    return parse_model(R"(
name: spinning
horizon: 1.7
parameters: {F: 1.5, m: 2}
tolerances: {rtol: 1.0e-11, atol: 1.0e-12}
gravity: [0, 0, 0]
spatial:
  bodies:
    b: {mass: m, inertia: [0.2, 0.2, 0.3], position: [0, 0, 0], angular_velocity: [0, 0, 4]}
  forces:
    - {type: force, name: push, body: b, force: [F, 0, 0], frame: )" + frame + R"(}
costs:
  x_T: {terminal: [{signal: x, of: b}]}
  y_T: {terminal: [{signal: y, of: b}]}
)",
                       "spinning.yaml");
  };
  const double F = 1.5, m = 2, w = 4, T = 1.7;
  const Problem follower = make_problem(spinning("body"));
  const Solution s = simulate(follower, follower.nominal_parameters(), follower.options());
  EXPECT_NEAR(s.costs[0], F / (m * w * w) * (1 - std::cos(w * T)), 1e-9);
  EXPECT_NEAR(s.costs[1], F / (m * w) * (T - std::sin(w * T) / w), 1e-9);
  const Problem fixed = make_problem(spinning("ground"));
  const Solution g = simulate(fixed, fixed.nominal_parameters(), fixed.options());
  EXPECT_NEAR(g.costs[0], F * T * T / (2 * m), 1e-9);
  EXPECT_NEAR(g.costs[1], 0.0, 1e-9);
  // d x_T / dF = x_T / F, d x_T / dm = -x_T / m (both costs are F / m times a function of T).
  const Solution fwd = forward_sensitivity(follower, follower.nominal_parameters(), follower.options());
  const Solution adj = adjoint(follower, follower.nominal_parameters(), follower.options());
  for (int c = 0; c < 2; ++c) {
    const double cost = s.costs[static_cast<size_t>(c)];
    EXPECT_NEAR(fwd.cost_gradient(c, 0), cost / F, 1e-8) << "forward, cost " << c;
    EXPECT_NEAR(fwd.cost_gradient(c, 1), -cost / m, 1e-8) << "forward, cost " << c;
    EXPECT_NEAR(adj.cost_gradient(c, 0), cost / F, 1e-7) << "adjoint, cost " << c;
    EXPECT_NEAR(adj.cost_gradient(c, 1), -cost / m, 1e-7) << "adjoint, cost " << c;
  }
}

// A top on a spherical joint driven by a torque in its own axes (tumbling, with gravity): forward
// sensitivities, the adjoint and the complex step agree (measured: 8.5e-7 and 1.7e-6; at rtol
// 1e-12, 1.4e-7 and 1.6e-8).
TEST(SpatialElements, TopDrivenInBodyAxesHasAgreeingGradients) {
  const Model model = parse_model(R"(
name: driven_top
horizon: 1
parameters: {n: 0.3, m: 1.2}
tolerances: {rtol: 1.0e-9, atol: 1.0e-11}
gravity: [0, 0, -9.81]
spatial:
  bodies:
    top: {mass: m, inertia: [0.02, 0.03, 0.01], center: [0, 0, 0.1], position: [0, 0, 0],
          orientation: {axis: [1, 0.2, 0], angle: 0.3}, angular_velocity: [0, 0, 20]}
  joints:
    - {type: spherical, name: tip, a: ground, b: top}
  forces:
    - {type: torque, name: drive, body: top, torque: [n, 0, 0.05], frame: body}
    - {type: force, name: kick, body: top, at: [0, 0.05, 0.2], force: [0, 0.4, n], frame: body}
costs:
  x_T: {terminal: [{signal: x, of: {body: top, at: [0, 0, 0.2]}}]}
  z_T: {terminal: [{signal: z, of: {body: top, at: [0, 0, 0.2]}}]}
)",
                                  "driven_top.yaml");
  const Problem pb = make_problem(model);
  const Eigen::VectorXd p = pb.nominal_parameters();
  const Options o = pb.options();
  const GradientCheck cmp = compare_gradients(
      pb, {forward_estimate(forward_sensitivity(pb, p, o)), adjoint_estimate(adjoint(pb, p, o)), complex_step(pb, p, o)});
  EXPECT_LT(cmp.max_relative_error[1], 1e-5) << "adjoint";
  EXPECT_LT(cmp.max_relative_error[2], 1e-5) << "complex step";
}

Solution run(const std::string& text) {
  const Problem pb = make_problem(parse_model(text, "closed_form"));
  return simulate(pb, pb.nominal_parameters(), pb.options());
}

/// Composite Simpson's rule of f over [0, T] with 2000 intervals.
template <class F>
double simpson(F f, double T) {
  const int N = 2000;
  const double h = T / N;
  double sum = f(0.0) + f(T);
  for (int i = 1; i < N; ++i) sum += (i % 2 == 1 ? 4.0 : 2.0) * f(i * h);
  return sum * h / 3.0;
}

/// A uniform rod hinged to the ground about y, driven along f(t) = offset + 1.2 t + 0.5 sin 3t;
/// `more` adds joints.
std::string driven_pendulum(const std::string& offset = "0", const std::string& more = "") {
  std::string text = R"(
name: driven_pendulum
horizon: 1.5
tolerances: {rtol: 1.0e-10, atol: 1.0e-12}
parameters: {m: 2, L: 0.8}
gravity: [0, 0, -9.81]
spatial:
  bodies:
    rod: {mass: m, inertia: [0.001, "m*L^2/12", "m*L^2/12"], center: ["L/2", 0, 0], position: [0, 0, 0]}
    # A model needs a degree of freedom: a free ball, falling apart from the rest.
    ball: {mass: 1, inertia: [0.1, 0.1, 0.1], position: [5, 0, 0]}
  joints:
    - {type: revolute, name: hinge, a: ground, b: rod, axis_a: [0, 1, 0]}
    - {type: rotational_driver, name: motor, joint: hinge, function: {rate: 1.2, amplitude: 0.5, frequency: 3}}
costs:
  reaction: {running: [{signal: reaction, of: motor, row: 0}]}
  tip_x: {terminal: [{signal: x, of: {body: rod, at: [L, 0, 0]}}]}
  tip_z: {terminal: [{signal: z, of: {body: rod, at: [L, 0, 0]}}]}
)";
  text.replace(text.find("function: {rate"), 15, "function: {offset: " + offset + ", rate");
  text.replace(text.find("costs:"), 6, more + "costs:");
  return text;
}

// A uniform rod hinged to the ground about y, its angle driven along f(t) = 1.2 t + 0.5 sin 3t:
// the motor's torque is I_pivot f'' - m g (L/2) cos f, and the driver's reaction is minus it.
TEST(SpatialElements, RotationalDriverTorqueIsTheClosedForm) {
  const Solution s = run(driven_pendulum());
  const double m = 2, L = 0.8, g = 9.81, T = 1.5;
  const auto f = [](double t) { return 1.2 * t + 0.5 * std::sin(3 * t); };
  const auto torque = [&](double t) { return m * L * L / 3 * (-4.5 * std::sin(3 * t)) - m * g * L / 2 * std::cos(f(t)); };
  const double expected = -simpson(torque, T);
  EXPECT_NEAR(s.costs[0], expected, 1e-6 * std::abs(expected));
  EXPECT_NEAR(s.costs[1], L * std::cos(f(T)), 1e-8);
  EXPECT_NEAR(s.costs[2], -L * std::sin(f(T)), 1e-8);
}

// A slider on a vertical rail lifted along f(t) = 0.2 sin 5t: the force is m (f'' + g) and
// the reaction's integral -m (f'(T) - f'(0)) - m g T.
TEST(SpatialElements, TranslationalDriverForceIsTheClosedForm) {
  const Solution s = run(R"(
name: lift
horizon: 1.3
tolerances: {rtol: 1.0e-10, atol: 1.0e-12}
parameters: {m: 3}
gravity: [0, 0, -9.81]
spatial:
  bodies:
    slider: {mass: m, inertia: [0.1, 0.2, 0.3], position: [0, 0, 0]}
    ball: {mass: 1, inertia: [0.1, 0.1, 0.1], position: [5, 0, 0]}
  joints:
    - {type: translational, name: rail, a: ground, b: slider, axis_a: [0, 0, 1], normal_a: [1, 0, 0]}
    - {type: translational_driver, name: lift, joint: rail, function: {amplitude: 0.2, frequency: 5}}
costs:
  reaction: {running: [{signal: reaction, of: lift, row: 0}]}
  z_T: {terminal: [{signal: z, of: slider}]}
)");
  const double m = 3, T = 1.3;
  EXPECT_NEAR(s.costs[0], -m * (std::cos(5 * T) - 1.0) - m * 9.81 * T, 1e-7);
  EXPECT_NEAR(s.costs[1], 0.2 * std::sin(5 * T), 1e-9);
}

// A body on a vertical hinge with a torsion spring-damper and a constant torque, released at
// 0.5 rad: I theta'' = -(k (theta - rest) + c theta' + torque), a damped oscillation about
// rest - torque / k.
TEST(SpatialElements, TorsionOscillatorIsTheClosedForm) {
  const Solution s = run(R"(
name: torsion
horizon: 2
tolerances: {rtol: 1.0e-10, atol: 1.0e-12}
gravity: [0, 0, -9.81]
spatial:
  bodies:
    disc: {mass: 1, inertia: [0.3, 0.3, 0.5], position: [0, 0, 0], orientation: {axis: [0, 0, 1], angle: 0.5}}
  joints:
    - {type: revolute, name: hinge, a: ground, b: disc, axis_a: [0, 0, 1]}
  forces:
    - {type: rotational_spring, name: torsion, joint: hinge, stiffness: 20, damping: 0.4, rest_angle: 0.1, torque: 0.3}
costs:
  x_T: {terminal: [{signal: x, of: {body: disc, at: [1, 0, 0]}}]}
  y_T: {terminal: [{signal: y, of: {body: disc, at: [1, 0, 0]}}]}
)");
  const double I = 0.5, k = 20, c = 0.4, T = 2.0;
  const double centre = 0.1 - 0.3 / k, w0 = std::sqrt(k / I), zeta = c / (2.0 * std::sqrt(k * I));
  const double wd = w0 * std::sqrt(1.0 - zeta * zeta), a0 = 0.5 - centre;
  const double theta = centre + a0 * std::exp(-zeta * w0 * T) * (std::cos(wd * T) + zeta * w0 / wd * std::sin(wd * T));
  EXPECT_NEAR(s.costs[0], std::cos(theta), 1e-8);
  EXPECT_NEAR(s.costs[1], std::sin(theta), 1e-8);
}

// The point rows of a spatial joint are P_a - P_b in ground axes: a body hanging at rest from the
// ground by a spherical joint holds its weight in row 2, +m g (docs/model-files.md).
TEST(SpatialElements, APointRowsReactionIsTheForceOnBInGroundAxes) {
  const Solution s = run(R"(
name: hanging
horizon: 0.5
gravity: [0, 0, -9.81]
spatial:
  bodies:
    b: {mass: 2, inertia: [0.1, 0.1, 0.1], position: [0, 0, -1]}
  joints:
    - {type: spherical, name: pin, a: ground, b: b, point_b: [0, 0, 1]}
costs:
  rx: {running: [{signal: reaction, of: pin, row: 0}]}
  rz: {running: [{signal: reaction, of: pin, row: 2}]}
)");
  EXPECT_NEAR(s.costs[0], 0.0, 1e-9);
  EXPECT_NEAR(s.costs[1], 0.5 * 2 * 9.81, 1e-7);
}

// A body on a bushing under gravity with a torque about x settles where k_z z = -m g and the
// rotational stiffness's torque k sin(theta) balances the applied one.
TEST(SpatialElements, BushingSettlesAtTheClosedForm) {
  const Solution s = run(R"(
name: hanging
horizon: 14
parameters: {m: 5}
gravity: [0, 0, -9.81]
spatial:
  bodies:
    block: {mass: m, inertia: [0.1, 0.1, 0.1], position: [0, 0, 0]}
  forces:
    - {type: bushing, name: mount, a: ground, b: block, stiffness: [3.0e4, 3.0e4, 2.0e4], damping: [800, 800, 800],
       rotational_stiffness: [2, 3, 3], rotational_damping: [1.2, 1.2, 1.2]}
    - {type: torque, name: twist, body: block, torque: [0.8, 0, 0]}
costs:
  z_T: {terminal: [{signal: z, of: block}]}
  y_T: {terminal: [{signal: y, of: {body: block, at: [0, 1, 0]}}]}
  zy_T: {terminal: [{signal: z, of: {body: block, at: [0, 1, 0]}}]}
)");
  const double sag = -5 * 9.81 / 2e4, theta = std::asin(0.8 / 2.0);
  EXPECT_NEAR(s.costs[0], sag, 1e-7);
  EXPECT_NEAR(s.costs[1], std::cos(theta), 1e-7);
  EXPECT_NEAR(s.costs[2], sag + std::sin(theta), 1e-7);
}

// The arm example: forward sensitivities, the adjoint and the complex step agree (its first
// second, three parameters).
TEST(SpatialElements, ArmGradientsAgree) {
  Model model = load_model(example("spatial_arm.yaml"));
  model.tf = 1.0;
  const Problem pb = with_free_parameters(make_problem(model), {"k_joint", "spin", "k_mount"});
  const Eigen::VectorXd p = pb.nominal_parameters();
  const Options o = pb.options();
  const GradientCheck cmp = compare_gradients(
      pb, {forward_estimate(forward_sensitivity(pb, p, o)), adjoint_estimate(adjoint(pb, p, o)), complex_step(pb, p, o)});
  EXPECT_LT(cmp.max_relative_error[1], 1e-4) << "adjoint";
  EXPECT_LT(cmp.max_relative_error[2], 1e-4) << "complex step";
}

// The arm's costs agree across the formulations (its first half second).
TEST(SpatialElements, ArmCostsAgreeAcrossFormulations) {
  Model model = load_model(example("spatial_arm.yaml"));
  model.tf = 0.5;
  const auto costs_in = [&](FormulationType type) {
    FormulationSettings settings = model.formulation;
    settings.type = type;
    const Problem pb = make_problem(model, settings);
    return simulate(pb, pb.nominal_parameters(), pb.options()).costs;
  };
  const Eigen::VectorXd reference = costs_in(FormulationType::Index1);
  for (const FormulationType type : {FormulationType::Penalty, FormulationType::Maggi, FormulationType::GGL,
                                     FormulationType::StabilizedIndex1}) {
    const Eigen::VectorXd c = costs_in(type);
    for (Eigen::Index i = 0; i < c.size(); ++i) {
      EXPECT_NEAR(c[i], reference[i], 2e-5 * std::abs(reference[i])) << to_string(type) << " cost " << i;
    }
  }
}

// The spring's wrap takes the shorter way round, into (-pi, pi].
TEST(SpatialElements, WrapIsIntoMinusPiToPi) {
  const double pi = std::numbers::pi;
  EXPECT_EQ(wrapped_angle<double>(pi), pi);
  EXPECT_NEAR(wrapped_angle<double>(-pi), pi, 1e-15);
  EXPECT_NEAR(wrapped_angle<double>(1.5 * pi), -0.5 * pi, 1e-15);
  EXPECT_NEAR(wrapped_angle<double>(-7.0), -7.0 + 2.0 * pi, 1e-15);
  EXPECT_EQ(wrapped_angle<double>(0.25), 0.25);
}

// A driver drawn more than a quarter turn from f(t0) would follow f + pi; a second driver on
// one joint would be dropped as redundant: both are refused, naming the driver.
TEST(SpatialElements, DriversOffTheirBranchOrRedundantAreRefused) {
  const auto error_of = [](const std::string& text) {
    try {
      make_problem(parse_model(text, "bad.yaml"));
    } catch (const InputError& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  EXPECT_EQ(error_of(driven_pendulum("1.4")), "no error");
  const std::string flipped = error_of(driven_pendulum("2.0"));
  EXPECT_NE(flipped.find("driver 'motor' starts at the angle"), std::string::npos) << flipped;
  EXPECT_NE(flipped.find("within a quarter turn"), std::string::npos) << flipped;
  EXPECT_NE(flipped.find("at the angle 0 rad as drawn where f(t0) = 2 rad"), std::string::npos) << flipped;
  // Exactly a quarter turn: the driver's row has no gradient there, which was taken for a
  // driver depending on the joints before it.
  const std::string quarter = error_of(driven_pendulum("1.5707963267948966"));
  EXPECT_NE(quarter.find("driver 'motor' starts at the angle 0 rad as drawn where f(t0) = 1.5707963267948966 rad"),
            std::string::npos)
      << quarter;
  const std::string twice = error_of(driven_pendulum(
      "0", "    - {type: rotational_driver, name: second, joint: hinge, function: {rate: 1.2, amplitude: 0.5, frequency: 3}}\n"));
  EXPECT_NE(twice.find("driver 'second' depends on the joints before it"), std::string::npos) << twice;
}

// Maggi's reactions come from its accelerations: the motor torque's gradient by forward
// sensitivities and by the adjoint agree (a running cost on a reaction, declared not to read
// x-dot).
TEST(SpatialElements, ArmReactionGradientAgreesInMaggi) {
  Model model = load_model(example("spatial_arm.yaml"));
  model.tf = 0.4;
  model.costs.erase(model.costs.begin());  // motor_torque, tip_x
  FormulationSettings settings = model.formulation;
  settings.type = FormulationType::Maggi;
  const Problem pb = with_free_parameters(make_problem(model, settings), {"spin", "k_joint"});
  const Eigen::VectorXd p = pb.nominal_parameters();
  const Options o = pb.options();
  const GradientCheck cmp = compare_gradients(pb, {forward_estimate(forward_sensitivity(pb, p, o)), adjoint_estimate(adjoint(pb, p, o)),
                                                   central_differences(pb, p, o)});
  EXPECT_LT(cmp.max_relative_error[1], 1e-4) << "adjoint";
  EXPECT_LT(cmp.max_relative_error[2], 1e-3) << "central differences";
}

// Bad input names its field: an unknown or wrong joint, a joint and bodies both, a normal along
// the axis, a negative bushing stiffness.
TEST(SpatialElements, BadInputIsNamed) {
  const auto error_of = [](const std::string& text) {
    try {
      const Model m = parse_model(text, "bad.yaml");
      m.validate();
      m.check_domains(m.nominal_parameters());
    } catch (const InputError& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  const auto with = [](const std::string& from, const std::string& to) {
    std::string text = kElements;
    const size_t at = text.find(from);
    if (at == std::string::npos) return std::string("pattern not found: ") + from;
    return text.replace(at, from.size(), to);
  };
  EXPECT_NE(error_of(with("joint: r, function", "joint: q, function")).find("unknown spatial joint 'q'"), std::string::npos);
  EXPECT_NE(error_of(with("name: slide, joint: cy", "name: slide, joint: r")).find("joint 'r' is not a translational or cylindrical joint"),
            std::string::npos);
  const std::string both = error_of(with("name: rs, joint: r,", "name: rs, joint: r, a: b1,"));
  EXPECT_EQ(both.rfind("bad.yaml:", 0), 0u) << both;
  EXPECT_NE(both.find("give either 'joint' or the bodies and axes"), std::string::npos) << both;
  const std::string parallel = error_of(with("normal_a: [1, 0, 0],\n       normal_b", "normal_a: [0.3, 1, 0.2],\n       normal_b"));
  EXPECT_NE(parallel.find("spatial.forces[1].normal_a"), std::string::npos) << parallel;
  EXPECT_NE(parallel.find("parallel to"), std::string::npos) << parallel;
  const std::string negative = error_of(with("stiffness: [kb, 600, 900]", "stiffness: [kb, -600, 900]"));
  EXPECT_NE(negative.find("spatial.forces[2].stiffness[1]"), std::string::npos) << negative;
  EXPECT_NE(error_of(with("type: bushing, name: bu, a: b1, b: b2", "type: bushing, name: bu, a: b1, b: b1")).find("to itself"),
            std::string::npos);
  std::string follower = kFollowerLoads;
  follower.replace(follower.find("frame: body}"), 11, "frame: local");
  const std::string frame = error_of(follower);
  EXPECT_EQ(frame.rfind("bad.yaml:11:", 0), 0u) << frame;
  EXPECT_NE(frame.find("spatial.forces[0].frame: unknown frame 'local' (ground, body)"), std::string::npos) << frame;
  // An axis whose squared length underflows is no zero one: the message said "needs a non-zero
  // axis_a, got [0, 1e-300, 0]".
  const std::string tiny = error_of(with("axis_a: [0.2, 1, 0.1]", "axis_a: [0, 1.0e-300, 0]"));
  EXPECT_NE(tiny.find("needs a longer axis_a, got [0, 1e-300, 0] (its squared length underflows"), std::string::npos)
      << tiny;
  // One whose squared length overflows normalized to zero without a word.
  const std::string huge = error_of(with("axis_a: [0.2, 1, 0.1]", "axis_a: [0, 1.0e200, 0]"));
  EXPECT_NE(huge.find("needs a shorter axis_a, got [0, 1e+200, 0] (its squared length overflows"), std::string::npos)
      << huge;
  // Messages found unclear by model files written from the docs: a contact without its plane
  // ("contacts[0].point.body: unknown body 'b'"), a misspelt body in a cost ("z, vz and az are
  // signals of spatial bodies" without the name), gravity of four entries ("expected [x, y]").
  const std::string base = kFollowerLoads;
  const std::string no_plane =
      error_of(base + "contacts:\n  - {name: foot, point: {body: b, at: [0, 0, -0.1]}, restitution: 0.5}\n");
  EXPECT_NE(no_plane.find("bad.yaml:16:5: contacts[0].plane: missing field: a contact of a point of spatial body 'b' "
                          "is against a plane"),
            std::string::npos)
      << no_plane;
  std::string misspelt = base;
  misspelt.replace(misspelt.find("of: b}"), 6, "of: bb}");
  EXPECT_NE(error_of(misspelt).find("costs.c.terminal[0].of: z, vz and az are signals of spatial bodies (a name or "
                                    "{body:, at: [x, y, z]}): unknown spatial body 'bb'"),
            std::string::npos)
      << error_of(misspelt);
  std::string gravity = base;
  gravity.replace(gravity.find("[0, 0, -9.81]"), 13, "[0, 0, -9.81, 1]");
  EXPECT_NE(error_of(gravity).find("gravity: expected [x, y] (planar) or [x, y, z] (spatial), got 4 entries"),
            std::string::npos)
      << error_of(gravity);
  // A spatial body in a planar contact's point was "unknown body 'b'".
  const std::string line_contact = error_of(
      base + "contacts:\n  - {name: foot, point: {body: b, at: [0, 0]}, line: {point: [0, 0], normal: [0, 1]}, "
             "restitution: 0.5}\n");
  EXPECT_NE(line_contact.find("contacts[0].point.body: unknown body 'b': 'b' is a spatial body, and this field takes a "
                              "planar one"),
            std::string::npos)
      << line_contact;
  // A reaction row out of range gives the row and the range.
  std::string row = kElements;
  row += "  r_load: {running: [{signal: reaction, of: r, row: -1}]}\n";
  EXPECT_NE(error_of(row).find("row -1 is not a row of joint 'r', which has 5 constraint rows (0 to 4)"),
            std::string::npos)
      << error_of(row);
}

// A model left without freedom counts only the rows it keeps: a redundant joint's rows are left
// out (the message added them back: "7 rows (rows: joint 'weld' (6), joint 'dummy' (3), ...)").
TEST(SpatialElements, NoFreedomCountsTheRedundantRowsLeftOut) {
  const char* kWelded = R"(
name: welded
horizon: 0.2
spatial:
  bodies:
    bob: {mass: 2, inertia: [0.01, 0.01, 0.01], center: [0.3, 0, -0.5], position: [0, 0, 1]}
  joints:
    - {type: fixed, name: weld, a: ground, b: bob, point_a: [0, 0, 1], axis_a: [0, 0, 1], normal_a: [1, 0, 0]}
    - {type: spherical, name: dummy, a: ground, b: bob, point_a: [0, 0, 1]}
costs:
  z: {terminal: [{signal: z, of: bob}]}
)";
  try {
    make_problem(parse_model(kWelded, "welded.yaml"));
    ADD_FAILURE() << "no error for a model without freedom";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("7 constraint rows on 7 coordinates leave no degree of freedom (rows: joint "
                                         "'weld' (6), joint 'dummy' (0; 3 redundant rows left out), 1 normalizations)"),
              std::string::npos)
        << e.what();
  }
}

}  // namespace
