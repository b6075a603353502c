// Compliant contact of a sphere on a spatial body with the ground (docs/multibody.md, "Compliant
// contact"): its generalized force against its definition written out independently here, the
// height field's symbolic slopes and the force's Jacobians against the complex step, a height field that is a plane against the plane, and the dynamics against closed
// forms: a sphere resting at the static penetration (m g / k)^(1/e), a sphere rolling without
// slip at constant speed, a sliding sphere that friction brings to rolling at 5/7 of its speed,
// and a frictionless undamped bounce that keeps its energy. Gradients of a wheel rolling over a
// bump and of the vehicle example agree across forward sensitivities, the adjoint and the
// complex step (the vehicle: central differences).
#include <saltus/core/parameter_subset.hpp>
#include <saltus/multibody/check.hpp>
#include <saltus/multibody/dynamics.hpp>
#include <saltus/multibody/formulation.hpp>
#include <saltus/multibody/model_file.hpp>
#include <saltus/solvers/adjoint.hpp>
#include <saltus/solvers/simulate.hpp>
#include <saltus/verify/gradient.hpp>

#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <utility>

namespace {

using namespace saltus;
using namespace saltus::multibody;

constexpr double kStep = 1e-30;

std::string example(const std::string& name) { return std::string(SALTUS_SOURCE_DIR) + "/examples/" + name; }

/// A ball of radius 0.1 on the ground `ground` (a plane: or height: entry), with friction mu.
std::string ball(const std::string& ground, const std::string& extra_parameters = "",
                 const std::string& velocity = "[0, 0, 0]", const std::string& spin = "[0, 0, 0]",
                 const std::string& z0 = "0.5", double horizon = 1.0) {
  return "name: ball\nhorizon: " + std::to_string(horizon) +
         "\ntolerances: {rtol: 1.0e-9, atol: 1.0e-11}\nparameters: {m: 2, k: 1.0e5, d: 0.4, mu: 0.3" +
         extra_parameters + "}\n" + R"(gravity: [0, 0, -9.81]
spatial:
  bodies:
    ball: {mass: m, inertia: ["0.4*m*0.1^2", "0.4*m*0.1^2", "0.4*m*0.1^2"], position: [0, 0, )" +
         z0 + "], velocity: " + velocity + ", angular_velocity: " + spin + R"(}
  forces:
    - {type: compliant_contact, name: floor, body: ball, radius: 0.1, )" +
         ground + R"(, stiffness: k, damping: d, friction: mu, slip_velocity: 0.01}
costs:
  x_T: {terminal: [{signal: x, of: ball}]}
  vx_T: {terminal: [{signal: vx, of: ball}]}
  z_T: {terminal: [{signal: z, of: ball}]}
  load: {running: [{signal: normal_force, of: floor, power: 2}]}
  depth_T: {terminal: [{signal: penetration, of: floor}]}
)";
}

/// The contact's generalized force on the ball, written out from its definition: the ground
/// normal n and distance of the centre C = r (at = origin), delta = R - distance, N = k
/// delta^1.5 (1 + d delta-dot) with delta-dot = -n . r-dot; at the contact point P = C - R n,
/// fixed in the body at s_P = -R A^T n, the force f = N n - mu N v_t / sqrt(|v_t|^2 + vs^2)
/// with v_t the tangential part of P's velocity d/dt (r + A s_P); the generalized force is
/// J^T f with J = d(r + A(p) s_P)/d(r, p) taken column by column from A(p) alone.
template <class S>
VectorX<S> written_out_force(const VectorX<S>& q, const VectorX<S>& v, const Vec3<S>& n, const S& distance) {
  const double R = 0.1, k = 1e5, d = 0.4, mu = 0.3, vs = 0.01;
  using std::pow, std::sqrt;
  const Vec4<S> e = q.template segment<4>(3);
  const S delta = S(R) - distance;
  const S delta_dot = -(n[0] * v[0] + n[1] * v[1] + n[2] * v[2]);
  const S N = S(k) * pow(delta, S(1.5)) * (S(1.0) + S(d) * delta_dot);
  const Mat3<S> A = rotation_matrix<S>(e);
  const Vec3<S> s = -S(R) * Vec3<S>(A.transpose() * n);  // P in the body frame
  // The material point's velocity and its virtual displacements per coordinate, by the
  // product rule on A(p) s (A is quadratic in p): dA/de_i s.
  Eigen::Matrix<S, 3, 7> J = Eigen::Matrix<S, 3, 7>::Zero();
  J.template leftCols<3>().setIdentity();
  for (int i = 0; i < 4; ++i) {
    Vec4<S> de = Vec4<S>::Zero();
    de[i] = S(1.0);
    // A(e + t de) s is quadratic in t: its slope at 0 is (A(e + de) - A(e - de)) s / 2.
    J.col(3 + i) = (rotation_matrix<S>(Vec4<S>(e + de)) - rotation_matrix<S>(Vec4<S>(e - de))) * s / S(2.0);
  }
  const Vec3<S> vp = J * v;
  const Vec3<S> vt = vp - (n[0] * vp[0] + n[1] * vp[1] + n[2] * vp[2]) * n;
  const Vec3<S> f = N * n - S(mu) * N / sqrt(vt.squaredNorm() + S(vs * vs)) * vt;
  return J.transpose() * f;
}

/// A state of the ball pressed into the ground, spinning and sliding.
MotionState<double> pressed_state() {
  MotionState<double> st;
  st.t = 0.0;
  st.q.resize(7);
  st.v.resize(7);
  const Eigen::Vector4d e = Eigen::Vector4d(0.9, 0.2, -0.3, 0.25).normalized();
  st.q << 0.3, -0.2, 0.04, e[0], e[1], e[2], e[3];
  st.v << 1.2, -0.4, -0.3, 0.5, -0.7, 0.2, 0.9;
  return st;
}

TEST(CompliantContact, ForceOnAPlaneIsItsDefinition) {
  const Model m = parse_model(ball("plane: {point: [0, 0, 0.05], normal: [0.1, -0.2, 1]}"), "ball");
  const MotionState<double> st = pressed_state();
  const Eigen::VectorXd p = m.nominal_parameters();
  Model no_gravity = m;
  no_gravity.gravity_z = 0.0;
  const Eigen::VectorXd F = applied_forces<double>(no_gravity, st, p);
  // The quadratic velocity forces of the body, without the contact.
  Model free = no_gravity;
  free.spatial_forces.clear();
  const Eigen::VectorXd L = applied_forces<double>(free, st, p);
  const Eigen::Vector3d n = Eigen::Vector3d(0.1, -0.2, 1).normalized();
  const double distance = n.dot(st.q.head<3>() - Eigen::Vector3d(0, 0, 0.05));
  ASSERT_LT(distance, 0.1);  // pressed in
  const Eigen::VectorXd expected = written_out_force<double>(st.q, st.v, n, distance);
  for (int i = 0; i < 7; ++i) EXPECT_NEAR(F[i] - L[i], expected[i], 1e-9 * expected.norm()) << "coordinate " << i;
}

// A linear height field is a plane: h = 0.05 + 0.1 x - 0.2 y has the normal (-0.1, 0.2, 1).
TEST(CompliantContact, LinearHeightFieldIsThePlane) {
  const Model plane = parse_model(ball("plane: {point: [0, 0, 0.05], normal: [-0.1, 0.2, 1]}"), "plane");
  const Model field = parse_model(ball("height: \"0.05 + 0.1*x - 0.2*y\""), "field");
  const MotionState<double> st = pressed_state();
  const Eigen::VectorXd p = plane.nominal_parameters();
  const Eigen::VectorXd a = applied_forces<double>(plane, st, p), b = applied_forces<double>(field, st, p);
  for (int i = 0; i < 7; ++i) EXPECT_NEAR(a[i], b[i], 1e-9 * a.norm()) << "coordinate " << i;
}

// The height field's symbolic slopes against the complex step of h itself, on a curved field.
TEST(CompliantContact, HeightFieldSlopesMatchTheComplexStep) {
  const Model m = parse_model(ball("height: \"0.02*sin(3*x + 1)*cos(2*y) + bump*exp(-((x - 0.2)/0.3)^2)\"", ", bump: 0.04"),
                              "ball");
  const SpatialForce& f = m.spatial_forces[0];
  const Eigen::VectorXcd p = m.nominal_parameters().cast<Complex>();
  for (const auto& [x, y] : {std::pair{0.3, -0.2}, std::pair{-0.7, 1.1}, std::pair{0.2, 0.0}}) {
    for (int axis = 0; axis < 2; ++axis) {
      Complex xy[2] = {Complex(x), Complex(y)};
      xy[axis] += Complex(0.0, kStep);
      const Complex* values[] = {xy, p.data()};
      const double slope_cs = f.height->evaluate_in<Complex>(values, 2).imag() / kStep;
      const double xy_real[2] = {x, y};
      const Eigen::VectorXd pr = m.nominal_parameters();
      const double* real_values[] = {xy_real, pr.data()};
      const double slope = (axis == 0 ? f.height_x : f.height_y)->evaluate_in<double>(real_values, 2);
      EXPECT_NEAR(slope, slope_cs, 1e-13) << "axis " << axis << " at " << x << ", " << y;
    }
  }
}

// The force's Jacobians (q, v and the parameters) in Dual against the complex step, on a curved
// height field with friction (the slopes are symbolic derivatives of h, differentiated again).
TEST(CompliantContact, DerivativesMatchTheComplexStep) {
  const Model m = parse_model(ball("height: \"0.02*sin(3*x + 1)*cos(2*y) + bump*exp(-((x - 0.2)/0.3)^2)\"", ", bump: 0.04"),
                              "ball");
  const MotionState<double> st = pressed_state();
  const Eigen::VectorXd p = m.nominal_parameters();
  ASSERT_GT(compliant_contact_state<double>(m, m.spatial_forces[0], st, p).normal_force, 0.0);
  const int n = 7, np = static_cast<int>(p.size());
  for (int j = 0; j < 2 * n + np; ++j) {
    MotionState<Complex> sc{Complex(st.t), st.q.cast<Complex>(), st.v.cast<Complex>()};
    MotionState<Dual> sd{Dual(st.t), st.q.cast<Dual>(), st.v.cast<Dual>()};
    VectorX<Complex> pc = p.cast<Complex>();
    VectorX<Dual> pd = p.cast<Dual>();
    if (j < n) {
      sc.q[j] += Complex(0.0, kStep);
      sd.q[j].v[0] = 1.0;
    } else if (j < 2 * n) {
      sc.v[j - n] += Complex(0.0, kStep);
      sd.v[j - n].v[0] = 1.0;
    } else {
      pc[j - 2 * n] += Complex(0.0, kStep);
      pd[j - 2 * n].v[0] = 1.0;
    }
    const VectorX<Complex> Fc = applied_forces<Complex>(m, sc, pc);
    const VectorX<Dual> Fd = applied_forces<Dual>(m, sd, pd);
    for (int i = 0; i < n; ++i) {
      const double cs = Fc[i].imag() / kStep;
      EXPECT_NEAR(Fd[i].v[0], cs, 1e-8 * (1.0 + std::abs(cs))) << "dF[" << i << "]/dx[" << j << "]";
    }
  }
}

Solution run(const Model& model) {
  const Problem pb = make_problem(model);
  return simulate(pb, pb.nominal_parameters(), pb.options());
}

// Resting on the floor (well damped), the ball sinks to delta = (m g / k)^(1/1.5).
TEST(CompliantContact, RestsAtTheStaticPenetration) {
  Model m = parse_model(ball("plane: {point: [0, 0, 0], normal: [0, 0, 1]}", "", "[0, 0, 0]", "[0, 0, 0]", "0.1", 2.0),
                        "ball");
  m.spatial_forces[0].damping = 30.0;  // settles in a tenth of a second
  const Solution s = run(m);
  const double delta = std::pow(2.0 * 9.81 / 1e5, 1.0 / 1.5);
  EXPECT_NEAR(s.costs[4], delta, 1e-6 * delta);
  EXPECT_NEAR(s.costs[2], 0.1 - delta, 1e-8);
}

// Rolling without slip (omega = v / R about y), the ball keeps its speed: friction does no work.
TEST(CompliantContact, RollingBallKeepsItsSpeed) {
  const double delta = std::pow(2.0 * 9.81 / 1e5, 1.0 / 1.5);
  const Solution s = run(parse_model(ball("plane: {point: [0, 0, 0], normal: [0, 0, 1]}", "", "[1.5, 0, 0]", "[0, 15, 0]",
                                          std::to_string(0.1 - delta), 1.0),
                                     "ball"));
  EXPECT_NEAR(s.costs[1], 1.5, 1e-6);
  EXPECT_NEAR(s.costs[0], 1.5, 1e-6);
}

// Sliding without spin, friction mu N slows the ball and spins it up until it rolls at 5/7 of
// its initial speed (a solid sphere, J = 2/5 m R^2); the regularization leaves a slip of about
// the slip velocity times the rolling resistance it needs, none here.
TEST(CompliantContact, SlidingBallRollsAtFiveSeventhsOfItsSpeed) {
  const double delta = std::pow(2.0 * 9.81 / 1e5, 1.0 / 1.5);
  const Solution s = run(parse_model(ball("plane: {point: [0, 0, 0], normal: [0, 0, 1]}", "", "[2, 0, 0]", "[0, 0, 0]",
                                          std::to_string(0.1 - delta), 1.0),
                                     "ball"));
  // Sliding lasts 2 v0 / (7 mu g) = 0.194 s, well inside the horizon.
  EXPECT_NEAR(s.costs[1], 2.0 * 5.0 / 7.0, 2e-4);
}

// Frictionless and undamped, a bounce keeps the total energy (kinetic, gravity and the
// contact's k delta^2.5 / 2.5).
TEST(CompliantContact, UndampedBounceKeepsItsEnergy) {
  Model m = parse_model(ball("plane: {point: [0, 0, 0], normal: [0, 0, 1]}", "", "[0.5, 0, 0]", "[0, 0, 3]", "0.3", 0.8),
                        "ball");
  m.spatial_forces[0].damping = 0.0;
  m.spatial_forces[0].friction = 0.0;
  const Problem pb = make_problem(m);
  const Solution s = simulate(pb, pb.nominal_parameters(), pb.options());
  // Energy at the start (0.3 m up, at rest vertically) and at the end, from the state.
  const auto energy = [&](const Eigen::VectorXd& x) {
    MotionState<double> st{0.0, x.head(7), x.segment(7, 7)};
    const Eigen::VectorXd p = m.nominal_parameters();
    return kinetic_energy<double>(m, st, p) + 2.0 * 9.81 * st.q[2] +
           compliant_contact_energy<double>(m, m.spatial_forces[0], st, p);
  };
  ASSERT_GT(s.costs[3], 0.0);  // it bounced
  EXPECT_NEAR(energy(s.final_state), energy(s.states.row(0).transpose()), 1e-6);
}

// A ball rolling over a bump of the height field, which throws it up: gradients agree across
// methods (index1) to the integration's accuracy (the contact force k delta^1.5 has a
// continuous slope at touch-down but no continuous second derivative, which bounds the error
// control there; a wrong derivative would be off by its own size).
TEST(CompliantContact, GradientsOverABumpAgree) {
  const double delta = std::pow(2.0 * 9.81 / 1e5, 1.0 / 1.5);
  const Model m = parse_model(ball("height: \"bump*exp(-((x - 0.6)/0.2)^2)\"", ", bump: 0.03", "[1.5, 0, 0]",
                                   "[0, 15, 0]", std::to_string(0.1 - delta), 0.8),
                              "ball");
  const Problem pb = make_problem(m);
  const Eigen::VectorXd p = pb.nominal_parameters();
  const Options o = pb.options();
  const GradientCheck cmp = compare_gradients(
      pb, {forward_estimate(forward_sensitivity(pb, p, o)), adjoint_estimate(adjoint(pb, p, o)), complex_step(pb, p, o)});
  EXPECT_LT(cmp.max_relative_error[1], 1e-3) << "adjoint";
  EXPECT_LT(cmp.max_relative_error[2], 1e-3) << "complex step";
}

// The vehicle's front wheels over the bump (its first 0.6 s), with respect to the front spring
// and the bump height: forward, adjoint and central differences (the complex step agrees too,
// to 7e-6, but takes 8 s a parameter on 63 coordinates).
TEST(CompliantContact, VehicleGradientsAgree) {
  Model model = load_model(example("vehicle.yaml"));
  model.tf = 0.6;
  const Problem pb = with_free_parameters(make_problem(model), {"k_front", "bump"});
  const Eigen::VectorXd p = pb.nominal_parameters();
  const Options o = pb.options();
  const GradientCheck cmp = compare_gradients(pb, {forward_estimate(forward_sensitivity(pb, p, o)),
                                                   adjoint_estimate(adjoint(pb, p, o)), central_differences(pb, p, o)});
  EXPECT_LT(cmp.max_relative_error[1], 1e-4) << "adjoint";
  EXPECT_LT(cmp.max_relative_error[2], 5e-3) << "central differences";
}

// saltus check reports each tyre at the vehicle's static equilibrium: the load m_body g / 4 +
// (m_hub + m_wheel) g and the penetration (load / k_tyre)^(2/3).
TEST(CompliantContact, CheckReportsTheStartingLoad) {
  const ModelCheck c = check_model(load_model(example("vehicle.yaml")));
  ASSERT_EQ(c.compliant_contacts.size(), 4u);
  const double load = 1000.0 * 9.81 / 4.0 + (15.0 + 20.0) * 9.81;
  for (const auto& tyre : c.compliant_contacts) {
    EXPECT_NEAR(tyre.normal_force, load, 1e-6 * load) << tyre.name;
    EXPECT_NEAR(tyre.penetration, std::pow(load / 1.5e6, 2.0 / 3.0), 1e-12) << tyre.name;
    EXPECT_EQ(tyre.radius, 0.3);
  }
  EXPECT_EQ(c.compliant_contacts[0].name, "tyre_fl");
  EXPECT_EQ(c.compliant_contacts[0].body, "wheel_fl");
}

// The forward sensitivities' tolerance floor (Options::sensitivity_atol_from_states, set by
// index1 with compliant contacts) follows the motion's size, not the distance from the origin:
// the same ball rolling at 1 m/s at x = 0 or x = 1000 has the scale 1 (|x0|_inf gave 1000 far
// away), and both runs take the same steps to the same gradient.
TEST(CompliantContact, SensitivityToleranceIgnoresWhereTheModelSits) {
  const std::string near = ball("plane: {point: [0, 0, 0], normal: [0, 0, 1]}", "", "[1, 0, 0]", "[0, 10, 0]", "0.1", 0.3);
  std::string far = near;
  far.replace(far.find("position: [0, 0,"), 16, "position: [1000, 0,");
  const Problem a = make_problem(parse_model(near, "near")), b = make_problem(parse_model(far, "far"));
  ASSERT_TRUE(a.options().sensitivity_atol_from_states);
  const Eigen::VectorXd p = a.nominal_parameters();
  Eigen::VectorXd x_a(a.n_states()), x_b(b.n_states());
  a.initial_state().real(p, x_a);
  b.initial_state().real(p, x_b);
  ASSERT_NEAR(x_b[0] - x_a[0], 1000.0, 1e-12);
  EXPECT_EQ(a.state_scale(x_a), 10.0 * 0.5);  // the spin's Euler-parameter rate, 10/2 per unit
  EXPECT_EQ(b.state_scale(x_b), a.state_scale(x_a));
  const Solution sa = forward_sensitivity(a, p, a.options()), sb = forward_sensitivity(b, p, b.options());
  EXPECT_NEAR(static_cast<double>(sb.stats.steps), static_cast<double>(sa.stats.steps), 0.1 * static_cast<double>(sa.stats.steps));
  for (Eigen::Index k = 0; k < p.size(); ++k) {
    for (Eigen::Index j = 0; j < sa.cost_gradient.rows(); ++j) {
      EXPECT_NEAR(sb.cost_gradient(j, k), sa.cost_gradient(j, k), 1e-6 * (1e-3 + sa.cost_gradient.row(j).cwiseAbs().maxCoeff()))
          << "cost " << j << ", parameter " << k;
    }
  }
}

// Bad input names the field: both grounds, no ground, a kink in the height field, a radius out
// of its domain, a signal of something that is not a compliant contact.
TEST(CompliantContact, BadInputIsNamed) {
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
  const std::string plane = "plane: {point: [0, 0, 0], normal: [0, 0, 1]}";
  EXPECT_EQ(error_of(ball(plane + ", height: \"0\"")).rfind("bad.yaml:10:", 0), 0u) << error_of(ball(plane + ", height: \"0\""));
  EXPECT_NE(error_of(ball(plane + ", height: \"0\"")).find("give either 'plane' or 'height', not both"), std::string::npos);
  EXPECT_NE(error_of(ball("height: \"x\"", ", x: 2")).find("rename the parameter 'x'"), std::string::npos);
  EXPECT_NE(error_of(ball("exponent: 1.5")).find("needs its ground"), std::string::npos);
  EXPECT_NE(error_of(ball("height: \"max(x, 0)\"")).find("abs, min and max have no derivative"), std::string::npos);
  EXPECT_NE(error_of(ball("height: \"z\"")).find("unknown name 'z'"), std::string::npos);
  // The height and its slopes are checked below the sphere at the start, not at the origin: a
  // road stepping down at x = 1016 overflows at x = 0 (a nan slope) but not under a ball at
  // x = 1000, and a road that is not finite under the ball is refused there.
  std::string far = ball("height: \"-0.5/(1 + exp(-(x - 1016)/0.15))\"");
  far.replace(far.find("position: [0, 0,"), 16, "position: [1000, 0,");
  EXPECT_EQ(error_of(far), "no error");
  const std::string undefined = error_of(ball("height: \"sqrt(x - 1)\""));
  EXPECT_NE(undefined.find("bad.yaml:10:79: spatial.forces[0].height: 'sqrt(x - 1)' is not finite below the sphere's "
                           "centre at the start, x = 0, y = 0 (got nan)"),
            std::string::npos)
      << undefined;
  std::string text = ball(plane);
  text.replace(text.find("radius: 0.1"), 11, "radius: -0.1");
  EXPECT_NE(error_of(text).find("needs radius > 0"), std::string::npos) << error_of(text);
  text = ball(plane);
  text.replace(text.find("of: floor"), 9, "of: ball");
  EXPECT_NE(error_of(text).find("'ball' is a spatial body, not a compliant contact"), std::string::npos) << error_of(text);
}

}  // namespace
