// Every element's analytic kinematics against the complex step: the constraint Jacobian Phi_q,
// the time partial Phi_t, the acceleration bias (Phi_q v)_q v + 2 Phi_tq v + Phi_tt, and the
// spring forces against the gradient of the spring's potential energy. One model holds every
// element type on points and bodies, in a generic (non-symmetric) state.
#include <saltus/multibody/dynamics.hpp>
#include <saltus/multibody/model_file.hpp>

#include <gtest/gtest.h>

namespace {

using namespace saltus;
using namespace saltus::multibody;

const char* kEveryElement = R"(
name: every_element
horizon: 1
parameters: {L: 1.3, k: 40, r: 0.7, w: 2.0}
ground: {O: [0, 0], G: [0.4, -0.3]}
points:
  p1: {position: [0.9, 0.2]}
  p2: {position: [1.7, -0.4]}
bodies:
  b1: {mass: 2, inertia: 0.3, position: [0.3, 0.8], angle: 0.4}
  b2: {mass: 1, inertia: 0.2, position: [1.1, 1.4], angle: -0.7}
elements:
  - {type: bar, name: bar, from: O, to: p1, length: L, mass: 1}
  - {type: bar, name: bar_bodies, from: {body: b1, at: [0.2, 0.1]}, to: {body: b2, at: [-0.3, 0.05]}, length: 1}
  - {type: revolute, name: rev, a: p2, b: {body: b1, at: [0.5, -0.2]}}
  - {type: point_on_line, name: pol_ground, point: p2, line_point: G, direction: [0.6, 0.8]}
  - {type: point_on_line, name: pol_body, point: p1, line_point: {body: b2, at: [0.1, 0.2]}, direction: [1, 0.3]}
  - {type: prismatic, name: pri, body_a: b1, body_b: b2, point_a: [0.1, 0], point_b: [0, 0.2], direction: [0.2, 1], angle: 0.3}
  - {type: coordinate_driver, name: cdrv, coordinate: b1.theta, function: {offset: 0.1, rate: 0.5, amplitude: r, frequency: w, phase: 0.2}}
  - {type: distance_driver, name: ddrv, from: p1, to: {body: b2, at: [0.3, 0]}, function: {offset: 1.2, rate: 0.1, amplitude: 0.2, frequency: 3}}
  - {type: spring, name: s1, from: p1, to: {body: b2, at: [0.2, -0.1]}, stiffness: k, damping: 0, rest_length: 0.5}
  - {type: rotational_spring, name: rs, body_a: b1, body_b: b2, stiffness: 7, rest_angle: 0.2}
  - {type: rotational_spring, name: knee, bar_a: bar, bar_b: bar_bodies, stiffness: 5, rest_angle: -0.4, torque: 0.3}
  - {type: point_mass, name: pm, point: p2, mass: 0.5}
  - {type: force, name: push, point: {body: b1, at: [0, 0.3]}, force: [1.5, -2]}
costs:
  c: {terminal: [{signal: x, of: p1}]}
)";

Model model() { return parse_model(kEveryElement, "every_element"); }

// A generic state: positions off the constraint manifold (kinematics hold everywhere).
MotionState<Complex> state(const Model& m, double t, Complex h, const Eigen::VectorXd& dq, double dt) {
  Eigen::VectorXd q0 = m.initial_positions();
  Eigen::VectorXd v(m.n_coordinates());
  for (Eigen::Index i = 0; i < v.size(); ++i) v[i] = 0.3 * std::sin(1.7 * static_cast<double>(i) + 0.4);
  MotionState<Complex> st;
  st.t = Complex(t) + h * dt;
  st.q = q0.cast<Complex>() + h * dq.cast<Complex>();
  st.v = v.cast<Complex>();
  return st;
}

constexpr double kStep = 1e-30;

TEST(MultibodyElements, ConstraintJacobianTimePartialAndBiasMatchComplexStep) {
  const Model m = model();
  const int n = m.n_coordinates();
  const Eigen::VectorXcd p = m.nominal_parameters().cast<Complex>();
  const double t = 0.37;
  const MotionState<Complex> base = state(m, t, 0.0, Eigen::VectorXd::Zero(n), 0.0);
  const ConstraintSet<Complex> c = constraints<Complex>(m, base, p);
  ASSERT_EQ(c.phi.size(), m.n_constraints());
  const Complex ih(0.0, kStep);
  for (int j = 0; j < n; ++j) {
    const ConstraintSet<Complex> cj = constraints<Complex>(m, state(m, t, ih, Eigen::VectorXd::Unit(n, j), 0.0), p);
    for (Eigen::Index i = 0; i < c.phi.size(); ++i) {
      EXPECT_NEAR(c.jac.coeff(i, j).real(), cj.phi[i].imag() / kStep, 1e-12) << "Phi_q row " << i << " col " << j;
    }
  }
  // Phi_t: perturb time only.
  const ConstraintSet<Complex> ct = constraints<Complex>(m, state(m, t, ih, Eigen::VectorXd::Zero(n), 1.0), p);
  for (Eigen::Index i = 0; i < c.phi.size(); ++i) EXPECT_NEAR(c.phi_t[i].real(), ct.phi[i].imag() / kStep, 1e-12);
  // Bias: d/ds of Phi-dot = Phi_q v + Phi_t along (q + s v, t + s) with v fixed.
  Eigen::VectorXd v(n);
  for (int i = 0; i < n; ++i) v[i] = base.v[i].real();
  const MotionState<Complex> moved = state(m, t, ih, v, 1.0);
  const ConstraintSet<Complex> cm = constraints<Complex>(m, moved, p);
  const Eigen::VectorXcd rate = cm.rate(moved.v);
  for (Eigen::Index i = 0; i < c.phi.size(); ++i) {
    EXPECT_NEAR(c.bias[i].real(), rate[i].imag() / kStep, 1e-11) << "bias row " << i;
  }
}

// Conservative forces are minus the gradient of their potential: the translational spring
// V = k (l - l0)^2 / 2, the rotational spring V = k (theta - theta0)^2 / 2, gravity on bodies,
// point masses and uniform rods (weight at the midpoint) and the constant force V = -F^T P.
TEST(MultibodyElements, ForcesAreMinusThePotentialGradient) {
  const Model m = model();
  const int n = m.n_coordinates();
  const Eigen::VectorXcd p = m.nominal_parameters().cast<Complex>();
  auto potential = [&](const MotionState<Complex>& st) {
    Complex V(0.0);
    const Vec2<Complex> g(value_of<Complex>(m.gravity_x, p), value_of<Complex>(m.gravity_y, p));
    auto height = [&](const Kin2<Complex>& at) { return -(g[0] * at.value[0] + g[1] * at.value[1]); };
    for (size_t b = 0; b < m.bodies.size(); ++b) {
      PointRef centre;
      centre.kind = PointRef::Kind::Body;
      centre.index = static_cast<int>(b);
      V += value_of<Complex>(m.bodies[b].mass, p) * height(point_kinematics<Complex>(m, st, centre, p));
    }
    for (const Element& e : m.elements) {
      if (e.type == ElementType::Spring) {
        const SpringState<Complex> s = spring_state<Complex>(m, e, st, p);
        const Complex stretch = s.length - value_of<Complex>(e.rest_length, p);
        V += 0.5 * value_of<Complex>(e.stiffness, p) * stretch * stretch;
      } else if (e.type == ElementType::RotationalSpring && e.bar_a >= 0) {
        // The angle from one bar's vector to the other's, written out from the end points.
        auto vector_of = [&](int bar) {
          const Element& b = m.elements[static_cast<size_t>(bar)];
          return Vec2<Complex>(point_kinematics<Complex>(m, st, b.b, p).value - point_kinematics<Complex>(m, st, b.a, p).value);
        };
        const Vec2<Complex> u = vector_of(e.bar_a), w = vector_of(e.bar_b);
        const Complex angle = expression_detail::atan2_of<Complex>(u[0] * w[1] - u[1] * w[0], u[0] * w[0] + u[1] * w[1]);
        const Complex twist = angle - value_of<Complex>(e.angle, p);
        V += 0.5 * value_of<Complex>(e.stiffness, p) * twist * twist + value_of<Complex>(e.actuator, p) * angle;
      } else if (e.type == ElementType::RotationalSpring) {
        const Complex angle = st.q[m.body_offset(e.body_b) + 2] - st.q[m.body_offset(e.body_a) + 2] - value_of<Complex>(e.angle, p);
        V += 0.5 * value_of<Complex>(e.stiffness, p) * angle * angle;
      } else if (e.type == ElementType::Bar) {  // uniform rod: weight at its midpoint
        const Complex mid = 0.5 * (height(point_kinematics<Complex>(m, st, e.a, p)) +
                                   height(point_kinematics<Complex>(m, st, e.b, p)));
        V += value_of<Complex>(e.mass, p) * mid;
      } else if (e.type == ElementType::PointMass) {
        V += value_of<Complex>(e.mass, p) * height(point_kinematics<Complex>(m, st, e.a, p));
      } else if (e.type == ElementType::Force) {
        const Kin2<Complex> at = point_kinematics<Complex>(m, st, e.a, p);
        V -= value_of<Complex>(e.fx, p) * at.value[0] + value_of<Complex>(e.fy, p) * at.value[1];
      }
    }
    return V;
  };
  MotionState<Complex> st = state(m, 0.2, 0.0, Eigen::VectorXd::Zero(n), 0.0);
  st.v.setZero();  // no damping forces
  const Eigen::VectorXcd F = applied_forces<Complex>(m, st, p);
  for (int j = 0; j < n; ++j) {
    MotionState<Complex> moved = st;
    moved.q[j] += Complex(0.0, kStep);
    EXPECT_NEAR(F[j].real(), -potential(moved).imag() / kStep, 1e-11) << "coordinate " << j;
  }
}

// The uniform rod's natural-coordinate mass matrix gives the kinetic energy of the rod: check
// (1/2) v^T M v against the rod's exact energy m/2 |v_c|^2 + J/2 omega^2 with J = m L^2 / 12.
TEST(MultibodyElements, UniformRodMassMatrixGivesTheRodKineticEnergy) {
  const Model m = parse_model(R"(
name: rod
horizon: 1
points: {a: {position: [0, 0]}, b: {position: [1.2, 0.5]}}
elements: [{type: bar, from: a, to: b, length: 1.3, mass: 2.5}]
costs: {c: {terminal: [{signal: x, of: a}]}}
)",
                              "rod");
  const Eigen::VectorXd p(0);
  const Eigen::MatrixXd M(mass_matrix<double>(m, m.initial_positions(), p));
  const Eigen::Vector2d va(0.3, -0.8), vb(-0.4, 0.9);  // velocities of the ends (rigid: ignore)
  Eigen::VectorXd v(4);
  v << va, vb;
  const Eigen::Vector2d d(1.2, 0.5);
  // A rigid motion needs (vb - va) perpendicular to d; project it to make one.
  Eigen::Vector2d rel = vb - va;
  rel -= d * (rel.dot(d) / d.squaredNorm());
  v.tail(2) = va + rel;
  const double mass = 2.5, length = std::sqrt(d.squaredNorm());
  const Eigen::Vector2d vc = 0.5 * (v.head(2) + v.tail(2));
  const double omega = (d.x() * rel.y() - d.y() * rel.x()) / d.squaredNorm();
  const double exact = 0.5 * mass * vc.squaredNorm() + 0.5 * (mass * length * length / 12.0) * omega * omega;
  EXPECT_NEAR(0.5 * v.dot(M * v), exact, 1e-14);
}

}  // namespace

// The rotational springs' angle rate and gradient: d angle / ds along q + s v is the rate, and
// along q + s e_j the gradient entry j (complex step), for the bar-angle and the body springs.
TEST(MultibodyElements, RotationalSpringRateAndGradientMatchComplexStep) {
  const Model m = model();
  const int n = m.n_coordinates();
  const Eigen::VectorXcd p = m.nominal_parameters().cast<Complex>();
  const MotionState<Complex> base = state(m, 0.2, 0.0, Eigen::VectorXd::Zero(n), 0.0);
  Eigen::VectorXd v(n);
  for (int i = 0; i < n; ++i) v[i] = base.v[i].real();
  const Complex ih(0.0, kStep);
  int checked = 0;
  for (const Element& e : m.elements) {
    if (e.type != ElementType::RotationalSpring) continue;
    const Rotation<Complex> r = relative_rotation<Complex>(m, e, base, p);
    const Rotation<Complex> along_v = relative_rotation<Complex>(m, e, state(m, 0.2, ih, v, 0.0), p);
    EXPECT_NEAR(r.rate.real(), along_v.angle.imag() / kStep, 1e-12) << e.name;
    for (int j = 0; j < n; ++j) {
      const Rotation<Complex> along_j =
          relative_rotation<Complex>(m, e, state(m, 0.2, ih, Eigen::VectorXd::Unit(n, j), 0.0), p);
      EXPECT_NEAR(dense_row(r.jac, n)[j].real(), along_j.angle.imag() / kStep, 1e-12) << e.name << " coordinate " << j;
    }
    ++checked;
  }
  EXPECT_EQ(checked, 2);
}

namespace {

// Row Jacobians carry entries in any order and may name a coordinate twice (a difference of two
// points on one body); the stacked compressed rows are sorted with those entries added, as KLU
// and Eigen's sparse products need, and a whole sparse matrix stacks below unchanged.
TEST(SparseRows, RowsAreSortedAndRepeatedCoordinatesAdded) {
  using namespace saltus::multibody;
  RowJacobian<double> row;
  row.add(5, 1.5);
  row.add(2, -2.0);
  row.add(5, 0.25);
  row.add(0, 3.0);
  RowJacobian<double> empty;
  SparseRowStack<double> top(7);
  top.push(row);
  top.push(empty);
  const SparseMat<double> first = top.matrix();
  SparseRowStack<double> stack(7);
  stack.push(first);
  stack.push(row);
  const SparseMat<double> A = stack.matrix();
  Eigen::MatrixXd expected = Eigen::MatrixXd::Zero(3, 7);
  expected.row(0) << 3.0, 0, -2.0, 0, 0, 1.75, 0;
  expected.row(2) = expected.row(0);
  EXPECT_EQ(Eigen::MatrixXd(A), expected);
  ASSERT_TRUE(A.isCompressed());
  for (int i = 0; i < A.outerSize(); ++i) {
    for (int k = A.outerIndexPtr()[i] + 1; k < A.outerIndexPtr()[i + 1]; ++k) {
      EXPECT_LT(A.innerIndexPtr()[k - 1], A.innerIndexPtr()[k]) << "row " << i;
    }
  }
  // The dense form of a row adds its repeated entries too.
  EXPECT_EQ(dense_row(row, 7), Eigen::VectorXd(expected.row(0).transpose()));
}

}  // namespace
