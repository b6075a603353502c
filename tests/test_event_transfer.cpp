// The event transfer (saltus/solvers/event_transfer.hpp) on its own, away from any integrator:
// the sensitivity jump of a bouncing ball against its closed form; the forward transfer against
// the complex-step transfer (complex event time) on a problem where the guard, the jump and the
// costs depend on t, x, x-dot and p and the event switches mode; and the adjoint transfer as the
// exact transpose of the forward one (dot-product test).
#include <saltus/core/error.hpp>
#include <saltus/solvers/event_transfer.hpp>

#include <gtest/gtest.h>

#include <cmath>

namespace {

using namespace saltus;

/// h' = v, v' = -g; impact at h = 0 (falling) with v+ = -e v.
Problem ball() {
  Problem pb("ball");
  pb.set_states({"h", "v"});
  pb.add_parameter("g", 9.81);
  pb.add_parameter("e", 0.8);
  pb.set_initial_state([](const auto&, auto x) { x << 1.0, 0.0; });
  pb.add_mode("flight", [](auto, const auto& x, const auto& p, auto xdot) {
    xdot[0] = x[1];
    xdot[1] = -p[0];
  });
  pb.add_event("impact", Direction::Falling, [](auto, const auto& x, const auto&) { return x[0]; })
      .jump([](auto, const auto& x, const auto& p, auto xp) { xp << x[0], -p[1] * x[1]; });
  pb.add_terminal_cost("h", [](const auto& x, const auto&) { return x[0]; });
  return pb;
}

TEST(EventTransfer, BouncingBallSensitivityJumpHasItsClosedForm) {
  const Problem pb = ball();
  const Eigen::Vector2d p(9.81, 0.8);
  const Eigen::Vector2d x_minus(0.0, -3.0);  // on the floor, falling at 3 m/s
  TangentWorkspace ws;
  const EventValues v = fire_event(pb, 0, 0, 1.2, x_minus, p, ws);
  EXPECT_EQ(v.x_plus[0], 0.0);
  EXPECT_NEAR(v.x_plus[1], 2.4, 1e-15);
  EXPECT_DOUBLE_EQ(v.guard_rate, -3.0);
  Eigen::Matrix2d s_minus;
  s_minus << 0.3, -0.7,
             1.1, 0.4;
  const SensitivityTransfer t = transfer_sensitivities(pb, v, p, s_minus, ws);
  // tau = -S_h / v; h+ = -e h- to first order; v+ = -e v- + (1 + e) g tau - v- de.
  const double g = p[0], e = p[1], vm = x_minus[1];
  for (int j = 0; j < 2; ++j) {
    const double tau = -s_minus(0, j) / vm;
    EXPECT_NEAR(t.tau[j], tau, 1e-15);
    EXPECT_NEAR(t.s_plus(0, j), -e * s_minus(0, j), 1e-15);
    const double de = j == 1 ? 1.0 : 0.0;
    EXPECT_NEAR(t.s_plus(1, j), -e * s_minus(1, j) + (1.0 + e) * g * tau - vm * de, 1e-14);
  }
}

/// Three states, two modes; the guard depends on t, x and p, the jump on t, x and p, and the
/// running costs on x-dot (through the mode's right-hand side) and differ between the modes.
Problem switching() {
  Problem pb("switching");
  pb.set_states({"h", "v", "w"});
  pb.add_parameter("g", 9.81);
  pb.add_parameter("e", 0.7);
  pb.add_parameter("a", 0.3);
  pb.add_parameter("b", 0.2);
  pb.set_initial_state([](const auto&, auto x) { x << 1.0, 0.0, 0.5; });
  pb.add_mode("before", [](auto, const auto& x, const auto& p, auto xdot) {
    xdot[0] = x[1];
    xdot[1] = -p[0] + p[2] * x[2];
    xdot[2] = -p[3] * x[0] * x[1];
  });
  const int after = pb.add_mode("after", [](auto t, const auto& x, const auto& p, auto xdot) {
    xdot[0] = p[2] * x[1];
    xdot[1] = -p[0] * x[0] + sin(t);
    xdot[2] = sin(x[1]);
  });
  pb.add_event("switch", Direction::Falling,
               [](auto t, const auto& x, const auto& p) { return x[0] - 0.1 * p[2] * t - p[3] * x[2]; })
      .jump([](auto t, const auto& x, const auto& p, auto xp) {
        xp << x[0], -p[1] * x[1] + p[2] * x[2] * t, x[2] * x[0] + p[3];
      })
      .switch_to(after);
  pb.add_running_cost("energy", [](auto, const auto& x, const auto& xdot, const auto& p) {
    return 0.5 * x[1] * x[1] + p[0] * x[0] + xdot[1] * x[2];
  });
  pb.add_running_cost("w2", [](auto t, const auto& x, const auto&, const auto& p) {
    return x[2] * x[2] * (1.0 + p[3] * t);
  });
  pb.add_terminal_cost("h", [](const auto& x, const auto&) { return x[0]; });
  return pb;
}

struct SwitchingEvent {
  Problem pb = switching();
  Eigen::Vector4d p{9.81, 0.7, 0.3, 0.2};
  double t = 0.9;
  Eigen::Vector3d x_minus;
  TangentWorkspace ws;
  SwitchingEvent() {
    // On the guard: h = 0.1 a t + b w.
    const double w = 0.4;
    x_minus << 0.1 * p[2] * t + p[3] * w, -2.5, w;
  }
};

TEST(EventTransfer, ForwardTransferAgreesWithTheComplexEventTime) {
  SwitchingEvent s;
  const EventValues v = fire_event(s.pb, 0, 0, s.t, s.x_minus, s.p, s.ws);
  EXPECT_EQ(v.mode_after, 1);
  EXPECT_FALSE(v.grazing(1e-10));
  Eigen::MatrixXd s_minus(3, 4);
  s_minus << 0.3, -0.7, 0.2, 0.05,
             1.1, 0.4, -0.6, 0.3,
             -0.2, 0.9, 0.1, -0.8;
  const SensitivityTransfer forward = transfer_sensitivities(s.pb, v, s.p, s_minus, s.ws);
  // Complex step through the event: x- + i h S-_j, p + i h e_j; the event time becomes complex
  // and the imaginary parts of the transferred state and cost jumps are h times their
  // derivatives.
  const double h = 1e-20;
  for (int j = 0; j < 4; ++j) {
    VectorX<Complex> xc(3), pc(4);
    for (int i = 0; i < 3; ++i) xc[i] = Complex(s.x_minus[i], h * s_minus(i, j));
    for (int i = 0; i < 4; ++i) pc[i] = Complex(s.p[i], i == j ? h : 0.0);
    const ComplexTransfer c = transfer_complex(s.pb, 0, 0, s.t, xc, pc, v.guard_rate);
    EXPECT_NEAR(c.time.imag() / h, forward.tau[j], 1e-12 * (1.0 + std::abs(forward.tau[j]))) << j;
    for (int i = 0; i < 3; ++i) {
      EXPECT_NEAR(c.x_plus[i].real(), v.x_plus[i], 1e-14);
      EXPECT_NEAR(c.x_plus[i].imag() / h, forward.s_plus(i, j), 1e-12 * (1.0 + std::abs(forward.s_plus(i, j))))
          << "S+(" << i << ", " << j << ")";
    }
    for (int k = 0; k < 2; ++k) {
      EXPECT_NEAR(c.cost_integral_jump[k].imag() / h, forward.cost_integral_jump(k, j),
                  1e-12 * (1.0 + std::abs(forward.cost_integral_jump(k, j))))
          << "cost " << k << ", parameter " << j;
    }
  }
}

TEST(EventTransfer, AdjointTransferIsTheTransposeOfTheForwardOne) {
  // For any S- and lambda+: lambda+^T S+ + (the cost-integral jump) = lambda-^T S- + the
  // adjoint's gradient contribution, column by column.
  SwitchingEvent s;
  const EventValues v = fire_event(s.pb, 0, 0, s.t, s.x_minus, s.p, s.ws);
  Eigen::MatrixXd s_minus(3, 4), lambda_plus(3, 3);
  s_minus << 0.3, -0.7, 0.2, 0.05,
             1.1, 0.4, -0.6, 0.3,
             -0.2, 0.9, 0.1, -0.8;
  lambda_plus << 0.5, -1.2, 1.0,
                 2.0, 0.3, 0.0,
                 -0.4, 0.8, 0.0;
  const SensitivityTransfer forward = transfer_sensitivities(s.pb, v, s.p, s_minus, s.ws);
  const AdjointTransfer adjoint = transfer_adjoint(s.pb, v, s.p, lambda_plus, s.ws);
  // The third cost (terminal only) has no running jump; its column of the cost jump is zero.
  Eigen::MatrixXd integral_jump = Eigen::MatrixXd::Zero(3, 4);
  integral_jump.topRows(2) = forward.cost_integral_jump.topRows(2);
  EXPECT_TRUE(forward.cost_integral_jump.row(2).isZero());
  const Eigen::MatrixXd lhs = lambda_plus.transpose() * forward.s_plus + integral_jump;
  const Eigen::MatrixXd rhs = adjoint.lambda_minus.transpose() * s_minus + adjoint.gradient;
  for (int c = 0; c < 3; ++c) {
    for (int j = 0; j < 4; ++j) EXPECT_NEAR(lhs(c, j), rhs(c, j), 1e-12 * (1.0 + std::abs(lhs(c, j)))) << c << ", " << j;
  }
}

TEST(EventTransfer, RecordedEventGivesTheFiredValues) {
  SwitchingEvent s;
  const EventValues fired = fire_event(s.pb, 0, 0, s.t, s.x_minus, s.p, s.ws);
  EventRecord rec;
  rec.event = 0;
  rec.time = s.t;
  rec.mode_before = 0;
  rec.mode_after = 1;
  rec.state_before = fired.x_minus;
  rec.state_after = fired.x_plus;
  rec.guard_rate = fired.guard_rate;
  rec.guard_rate_scale = fired.guard_rate_scale;
  const EventValues recorded = recorded_event(s.pb, rec, s.p);
  EXPECT_EQ(recorded.f_minus, fired.f_minus);
  EXPECT_EQ(recorded.f_plus, fired.f_plus);
  EXPECT_EQ(recorded.grazing(1e-10), fired.grazing(1e-10));
}

TEST(EventTransfer, GrazingAndNonFiniteJumpsAreNamed) {
  const Problem pb = ball();
  const Eigen::Vector2d p(9.81, 0.8);
  TangentWorkspace ws;
  const EventValues resting = fire_event(pb, 0, 0, 0.5, Eigen::Vector2d(0.0, 0.0), p, ws);
  EXPECT_TRUE(resting.grazing(1e-10));
  try {
    require_transversal(pb, resting, 1e-10, "no sensitivity exists");
    FAIL() << "a grazing event passed";
  } catch (const GrazingError& e) {
    EXPECT_NE(std::string(e.what()).find("event 'impact' at t = 0.5 grazes its guard"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("no sensitivity exists"), std::string::npos) << e.what();
  }
  const Eigen::Vector2d p_nan(9.81, std::nan(""));
  EXPECT_THROW(fire_event(pb, 0, 0, 0.5, Eigen::Vector2d(0.0, -1.0), p_nan, ws), ModelError);
}

}  // namespace
