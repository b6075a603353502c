// Block tangents (core/dual_block.hpp, Problem::set_block_tangents): four tangent directions from
// one evaluation. DualBlock's functions against ceres' Jet (Dual, an independent forward-mode
// implementation) direction by direction; the multibody formulations' block tangents of their
// right-hand sides and DAE residuals against the complex step; the parameter subsets and Jacobians
// built on them.
#include <gtest/gtest.h>
#include <saltus/core/dual_block.hpp>
#include <saltus/core/error.hpp>
#include <saltus/core/parameter_subset.hpp>
#include <saltus/derivatives/residual.hpp>
#include <saltus/derivatives/tangent.hpp>
#include <saltus/multibody/formulation.hpp>
#include <saltus/multibody/model_file.hpp>
#include <saltus/verify/derivative_check.hpp>

#include <cmath>
#include <string>

using namespace saltus;

namespace {

std::string example(const std::string& name) { return std::string(SALTUS_SOURCE_DIR) + "/examples/" + name; }

/// f at x seeded with four different directions agrees with Dual, direction by direction.
template <class F>
void expect_like_dual(const char* name, const F& f, double x) {
  const double directions[kTangentBlock] = {1.0, -0.5, 0.0, 2.5};
  DualBlock u(x);
  for (int k = 0; k < kTangentBlock; ++k) u.v[static_cast<size_t>(k)] = directions[k];
  const DualBlock r = f(u);
  const Dual slope = f(make_dual(x, 1.0));
  EXPECT_EQ(r.a, f(x)) << name;
  for (int k = 0; k < kTangentBlock; ++k) {
    EXPECT_NEAR(r.v[static_cast<size_t>(k)], slope.v[0] * directions[k], 1e-15 * (1.0 + std::abs(slope.v[0] * directions[k])))
        << name << " direction " << k << " at " << x;
  }
}

/// The complex step of mode 0's right-hand side along (dx, dp): exact to round-off.
Eigen::VectorXd complex_step_tangent(const Problem& pb, double t, const Eigen::VectorXd& x, const Eigen::VectorXd& p,
                                     const Eigen::VectorXd& dx, const Eigen::VectorXd& dp) {
  const double h = 1e-30;
  const VectorX<Complex> xc = x.cast<Complex>() + Complex(0.0, h) * dx.cast<Complex>();
  const VectorX<Complex> pc = p.cast<Complex>() + Complex(0.0, h) * dp.cast<Complex>();
  VectorX<Complex> out(x.size());
  pb.mode(0).rhs.complex(Complex(t), xc, pc, out);
  return out.imag() / h;
}

/// Block tangents of mode 0 in six directions (a full block and a block of two: rhs_tangents
/// takes a lone last direction in a Dual, so two keep a partly seeded block) against the complex
/// step and against Dual's tangents one direction at a time (both to `tolerance` relative: Dual
/// and DualBlock differ by rounding only, which the penalty matrix amplifies), at the initial
/// state.
void expect_block_tangents_exact(const Problem& pb, double tolerance = 1e-10) {
  ASSERT_TRUE(static_cast<bool>(pb.mode(0).rhs_tangents)) << pb.name();
  const Eigen::VectorXd p = pb.nominal_parameters();
  const Eigen::VectorXd x = initial_state(pb, p);
  const double t = pb.options().t0;
  const int k = kTangentBlock + 2;
  std::srand(7);
  const Eigen::MatrixXd dx = Eigen::MatrixXd::Random(x.size(), k);
  const Eigen::MatrixXd dp = Eigen::MatrixXd::Random(p.size(), k);
  Eigen::MatrixXd out(x.size(), k);
  TangentWorkspace ws;
  rhs_tangents(pb, 0, t, x, p, dx, dp, out, ws);
  for (int j = 0; j < k; ++j) {
    const Eigen::VectorXd expected = complex_step_tangent(pb, t, x, p, dx.col(j), dp.col(j));
    const double scale = 1.0 + expected.cwiseAbs().maxCoeff();
    EXPECT_LT((out.col(j) - expected).cwiseAbs().maxCoeff(), tolerance * scale) << pb.name() << " direction " << j;
    Eigen::VectorXd dual(x.size());
    rhs_tangent(pb, 0, t, x, p, 0.0, dx.col(j), dp.col(j), dual, ws);
    EXPECT_LT((out.col(j) - dual).cwiseAbs().maxCoeff(), tolerance * scale) << pb.name() << " direction " << j;
  }
}

/// A point for a residual: the initial state and rates near its size (the residual is defined
/// off the solution too), and six directions in x, x-dot and p (a full block and a partial one).
struct ResidualProbe {
  double t;
  Eigen::VectorXd x, xdot, p;
  Eigen::MatrixXd dx, dxdot, dp;
};
ResidualProbe residual_probe(const Problem& pb) {
  ResidualProbe r;
  r.t = pb.options().t0;
  r.p = pb.nominal_parameters();
  r.x = initial_state(pb, r.p);
  const int k = kTangentBlock + 2;
  std::srand(11);
  r.xdot = 0.1 * Eigen::VectorXd::Random(r.x.size());
  r.dx = Eigen::MatrixXd::Random(r.x.size(), k);
  r.dxdot = Eigen::MatrixXd::Random(r.x.size(), k);
  r.dp = Eigen::MatrixXd::Random(r.p.size(), k);
  return r;
}

/// Block tangents of the residual of mode 0 in six directions against the complex step and
/// against Dual's residual_tangent one direction at a time.
void expect_block_residual_tangents_exact(const Problem& pb, double tolerance = 1e-10) {
  ASSERT_TRUE(has_block_residual_tangents(pb.mode(0))) << pb.name();
  const ResidualProbe r = residual_probe(pb);
  const Eigen::Index n = r.x.size(), k = r.dx.cols();
  Eigen::MatrixXd out(n, k);
  TangentWorkspace ws;
  residual_tangents(pb, 0, r.t, r.x, r.xdot, r.p, r.dx, r.dxdot, r.dp, out, ws);
  const double h = 1e-30;
  for (Eigen::Index j = 0; j < k; ++j) {
    const auto moved = [h](const Eigen::VectorXd& v, const Eigen::VectorXd& d) {
      return VectorX<Complex>(v.cast<Complex>() + Complex(0.0, h) * d.cast<Complex>());
    };
    VectorX<Complex> residual(n);
    mode_residual(pb, 0, Complex(r.t), moved(r.x, r.dx.col(j)), moved(r.xdot, r.dxdot.col(j)), moved(r.p, r.dp.col(j)),
                  residual);
    const Eigen::VectorXd expected = residual.imag() / h;
    const double scale = 1.0 + expected.cwiseAbs().maxCoeff();
    EXPECT_LT((out.col(j) - expected).cwiseAbs().maxCoeff(), tolerance * scale) << pb.name() << " direction " << j;
    Eigen::VectorXd dual(n);
    residual_tangent(pb, 0, r.t, r.x, r.xdot, r.p, 0.0, r.dx.col(j), r.dxdot.col(j), r.dp.col(j), dual, ws);
    EXPECT_LT((out.col(j) - dual).cwiseAbs().maxCoeff(), tolerance * scale) << pb.name() << " direction " << j;
  }
}

/// Block tangents of mode 0's completion in five directions against the complex step and
/// against Dual's completion_tangent one direction at a time.
void expect_block_completion_tangents_exact(const Problem& pb, double tolerance = 1e-10) {
  ASSERT_TRUE(static_cast<bool>(pb.mode(0).completion_tangents)) << pb.name();
  const ResidualProbe r = residual_probe(pb);
  const Eigen::Index n = r.x.size(), k = r.dx.cols();
  Eigen::MatrixXd x_out(n, k), xdot_out(n, k);
  TangentWorkspace ws;
  completion_tangents(pb, 0, r.t, r.x, r.p, r.dx, r.dp, x_out, xdot_out, ws);
  const double h = 1e-30;
  for (Eigen::Index j = 0; j < k; ++j) {
    const VectorX<Complex> xc = r.x.cast<Complex>() + Complex(0.0, h) * r.dx.col(j).cast<Complex>();
    const VectorX<Complex> pc = r.p.cast<Complex>() + Complex(0.0, h) * r.dp.col(j).cast<Complex>();
    VectorX<Complex> completed(n), rates(n);
    pb.mode(0).completion.complex(Complex(r.t), xc, pc, completed, rates);
    Eigen::VectorXd dual_x(n), dual_xdot(n);
    completion_tangent(pb, 0, r.t, r.x, r.p, 0.0, r.dx.col(j), r.dp.col(j), dual_x, dual_xdot, ws);
    const Eigen::VectorXd cs_x = completed.imag() / h, cs_xdot = rates.imag() / h;
    const double scale = 1.0 + cs_x.cwiseAbs().maxCoeff() + cs_xdot.cwiseAbs().maxCoeff();
    EXPECT_LT((x_out.col(j) - cs_x).cwiseAbs().maxCoeff(), tolerance * scale) << pb.name() << " direction " << j;
    EXPECT_LT((xdot_out.col(j) - cs_xdot).cwiseAbs().maxCoeff(), tolerance * scale) << pb.name() << " direction " << j;
    EXPECT_LT((x_out.col(j) - dual_x).cwiseAbs().maxCoeff(), tolerance * scale) << pb.name() << " direction " << j;
    EXPECT_LT((xdot_out.col(j) - dual_xdot).cwiseAbs().maxCoeff(), tolerance * scale) << pb.name() << " direction " << j;
  }
}

Problem with_formulation(const char* file, multibody::FormulationType type) {
  multibody::Model model = multibody::load_model(example(file));
  model.formulation.type = type;
  return multibody::make_problem(model);
}

}  // namespace

TEST(DualBlock, ElementaryFunctionsGiveDualsDerivativeInEveryDirection) {
  using std::abs, std::acos, std::asin, std::atan, std::atan2, std::cbrt, std::cos, std::cosh, std::exp, std::hypot,
      std::log, std::pow, std::sin, std::sinh, std::sqrt, std::tan, std::tanh;
  for (const double x : {0.3, 0.8, -0.6}) {
    expect_like_dual("product", [](auto u) { return u * u * 3.0 - 2.0 * u + 1.0; }, x);
    expect_like_dual("quotient", [](auto u) { return (u + 1.0) / (u * u + 2.0); }, x);
    expect_like_dual("scalar quotients", [](auto u) { return 1.5 / u - u / 4.0 - (3.0 - u); }, x);
    expect_like_dual("compound", [](auto u) {
      auto w = u;
      w += u;
      w *= u;
      w -= 0.5 * u;
      w /= (u * u + 1.0);
      return w;
    }, x);
    expect_like_dual("exp", [](auto u) { return exp(u); }, x);
    expect_like_dual("sin", [](auto u) { return sin(u); }, x);
    expect_like_dual("cos", [](auto u) { return cos(u); }, x);
    expect_like_dual("tan", [](auto u) { return tan(u); }, x);
    expect_like_dual("asin", [](auto u) { return asin(u); }, x);
    expect_like_dual("acos", [](auto u) { return acos(u); }, x);
    expect_like_dual("atan", [](auto u) { return atan(u); }, x);
    expect_like_dual("sinh", [](auto u) { return sinh(u); }, x);
    expect_like_dual("cosh", [](auto u) { return cosh(u); }, x);
    expect_like_dual("tanh", [](auto u) { return tanh(u); }, x);
    expect_like_dual("cbrt", [](auto u) { return cbrt(u); }, x);
    expect_like_dual("abs", [](auto u) { return abs(u); }, x);
    expect_like_dual("atan2 y", [](auto u) { return atan2(u, decltype(u)(-0.7)); }, x);
    expect_like_dual("atan2 x", [](auto u) { return atan2(decltype(u)(0.4), u); }, x);
    expect_like_dual("hypot", [](auto u) { return hypot(u, decltype(u)(0.9)); }, x);
    expect_like_dual("pow 3", [](auto u) { return pow(u, 3.0); }, x);
    expect_like_dual("2^u", [](auto u) { return pow(2.0, u); }, x);
  }
  for (const double x : {0.3, 0.8}) {
    expect_like_dual("sqrt", [](auto u) { return sqrt(u); }, x);
    expect_like_dual("log", [](auto u) { return log(u); }, x);
    expect_like_dual("log10", [](auto u) { return log10(u); }, x);
    expect_like_dual("pow 2.5", [](auto u) { return pow(u, 2.5); }, x);
    expect_like_dual("u^u", [](auto u) { return pow(u, u); }, x);
  }
}

TEST(DualBlock, AZeroDirectionStaysZeroWhereTheSlopeIsInfinite) {
  DualBlock u(0.0);
  u.v[0] = 1.0;  // the others are zero
  const DualBlock r = sqrt(u);
  EXPECT_EQ(r.a, 0.0);
  EXPECT_TRUE(std::isinf(r.v[0]));
  for (int k = 1; k < kTangentBlock; ++k) EXPECT_EQ(r.v[static_cast<size_t>(k)], 0.0) << k;
  EXPECT_FALSE(isfinite(r));
  EXPECT_TRUE(isfinite(sqrt(DualBlock(4.0))));
}

TEST(DualBlock, APowersExponentMovesOnlyItsOwnDirections) {
  DualBlock u(-2.0), w(3.0);
  u.v[0] = 1.0;  // the base moves along direction 0, the exponent along direction 1
  w.v[1] = 1.0;
  const DualBlock r = pow(u, w);
  EXPECT_EQ(r.a, -8.0);
  EXPECT_DOUBLE_EQ(r.v[0], 12.0);  // 3 (-2)^2
  EXPECT_TRUE(std::isnan(r.v[1]));  // log(-2): no derivative along the exponent
  EXPECT_EQ(r.v[2], 0.0);
  EXPECT_EQ(r.v[3], 0.0);
  DualBlock e(0.5);
  e.v[2] = 2.0;
  const DualBlock b = pow(2.0, e);
  EXPECT_DOUBLE_EQ(b.v[2], std::sqrt(2.0) * std::log(2.0) * 2.0);
  DualBlock s(3.0);
  s.v[1] = 1.5;
  s *= 2.0;
  s /= 4.0;
  EXPECT_DOUBLE_EQ(s.a, 1.5);
  EXPECT_DOUBLE_EQ(s.v[1], 0.75);
}

TEST(BlockTangents, MultibodyRightHandSidesMatchTheComplexStep) {
  for (const char* file : {"chain8.yaml", "slidercrank.yaml", "spatial_slidercrank.yaml", "urdf_arm.yaml"}) {
    expect_block_tangents_exact(multibody::make_problem(multibody::load_model(example(file))));
  }
  multibody::Model model = multibody::load_model(example("fivebar_floor.yaml"));
  model.formulation.type = multibody::FormulationType::Maggi;
  expect_block_tangents_exact(multibody::make_problem(model));
  // The penalty matrix M + Phi_q^T alpha Phi_q is conditioned like alpha / m: the complex step's
  // elimination keeps about 1e-8 of its tangent, and Dual and DualBlock, which round differently,
  // differ by 7e-9.
  model.formulation.type = multibody::FormulationType::Penalty;
  expect_block_tangents_exact(multibody::make_problem(model), 1e-7);
}

TEST(BlockTangents, AParameterSubsetKeepsThemWithItsOwnColumns) {
  const Problem full = multibody::make_problem(multibody::load_model(example("slidercrank.yaml")));
  ASSERT_GE(full.n_parameters(), 2);
  const std::string first = full.parameters().front().name, last = full.parameters().back().name;
  const Problem subset = with_free_parameters(full, {last, first});
  expect_block_tangents_exact(subset);
  // The subset's parameter columns are the full problem's, reordered.
  const Eigen::VectorXd p = full.nominal_parameters(), x = initial_state(full, p);
  const Eigen::MatrixXd zero_x = Eigen::MatrixXd::Zero(x.size(), 2);
  Eigen::MatrixXd sub_unit = Eigen::MatrixXd::Identity(2, 2), full_unit = Eigen::MatrixXd::Zero(p.size(), 2);
  full_unit(full.n_parameters() - 1, 0) = 1.0;
  full_unit(0, 1) = 1.0;
  Eigen::MatrixXd from_subset(x.size(), 2), from_full(x.size(), 2);
  TangentWorkspace ws;
  rhs_tangents(subset, 0, 0.0, x, subset.nominal_parameters(), zero_x, sub_unit, from_subset, ws);
  rhs_tangents(full, 0, 0.0, x, p, zero_x, full_unit, from_full, ws);
  EXPECT_EQ(from_subset, from_full);
}

TEST(BlockTangents, SubsetsOfSubsetsKeepThemToo) {
  const Problem full = multibody::make_problem(multibody::load_model(example("spatial_slidercrank.yaml")));
  ASSERT_GE(full.n_parameters(), 3);
  const auto& names = full.parameter_names();
  const Problem inner = with_free_parameters(full, {names[2], names[0], names[1]});
  const Problem outer = with_free_parameters(inner, {names[0], names[1]});
  expect_block_tangents_exact(outer);
}

TEST(BlockTangents, JacobiansThroughBlocksEqualThoseColumnByColumn) {
  const Problem pb = multibody::make_problem(multibody::load_model(example("spatial_slidercrank.yaml")));
  const Eigen::VectorXd p = pb.nominal_parameters(), x = initial_state(pb, p);
  const Eigen::Index n = x.size(), np = p.size();
  Eigen::MatrixXd fx(n, n), fp(n, np), fx_blocks(n, n), fp_blocks(n, np);
  TangentWorkspace ws;
  rhs_jacobians(pb, 0, 0.0, x, p, fx_blocks, fp_blocks, ws);
  for (Eigen::Index j = 0; j < n; ++j) {
    rhs_tangent(pb, 0, 0.0, x, p, 0.0, Eigen::VectorXd::Unit(n, j), Eigen::VectorXd::Zero(np), fx.col(j), ws);
  }
  for (Eigen::Index j = 0; j < np; ++j) {
    rhs_tangent(pb, 0, 0.0, x, p, 0.0, Eigen::VectorXd::Zero(n), Eigen::VectorXd::Unit(np, j), fp.col(j), ws);
  }
  const double scale = 1.0 + fx.cwiseAbs().maxCoeff() + fp.cwiseAbs().maxCoeff();
  EXPECT_LT((fx_blocks - fx).cwiseAbs().maxCoeff(), 1e-12 * scale);
  EXPECT_LT((fp_blocks - fp).cwiseAbs().maxCoeff(), 1e-12 * scale);
}

TEST(BlockTangents, TheDerivativeCheckProbesThem) {
  const Problem pb = multibody::make_problem(multibody::load_model(example("slidercrank.yaml")));
  const Eigen::VectorXd p = pb.nominal_parameters();
  const DerivativeCheck check = check_model_derivatives(pb, pb.options().t0, initial_state(pb, p), p);
  EXPECT_GT(check.entries_checked, 0);
  // (Its measure counts round-off on entries 1e-8 below the largest: 8e-9 for the Dual tangents.)
  EXPECT_LT(check.max_relative_error, 1e-7) << check.worst;
  // Block tangents of another function than the mode's are found.
  Problem wrong("wrong_blocks");
  wrong.set_states({"x"});
  wrong.add_parameter("k", 2.0);
  wrong.set_initial_state([](const auto&, auto x0) { x0[0] = 1.0; });
  const int mode = wrong.add_mode("decay", [](auto, const auto& x, const auto& q, auto xdot) { xdot[0] = -q[0] * x[0]; });
  wrong.set_block_tangents(mode, [](auto, const auto& x, const auto& q, auto xdot) { xdot[0] = -q[0] * x[0] * x[0]; });
  wrong.add_terminal_cost("x_T", [](const auto& x, const auto&) { return x[0]; });
  const DerivativeCheck found = check_model_derivatives(wrong, 0.0, Eigen::VectorXd::Constant(1, 0.5), wrong.nominal_parameters());
  EXPECT_GT(found.max_relative_error, 0.1);
  EXPECT_NE(found.worst.find("block tangents"), std::string::npos) << found.worst;
}

TEST(BlockTangents, AreRefusedForAResidualModeOrAnUnknownMode) {
  Problem pb("residual");
  pb.set_states({"x"});
  const auto f = [](auto, const auto& x, const auto&, auto xdot) { xdot[0] = -x[0]; };
  const int mode = pb.add_residual_mode("decay", [](auto, const auto& x, const auto& xdot, const auto&, auto r) {
    r[0] = xdot[0] + x[0];
  });
  EXPECT_THROW(pb.set_block_tangents(mode, f), InputError);
  EXPECT_THROW(pb.set_block_tangents(mode + 1, f), InputError);
}

TEST(BlockResidualTangents, DaeFormulationsResidualsAndCompletionsMatchTheComplexStep) {
  using FT = multibody::FormulationType;
  for (const char* file : {"fivebar_floor.yaml", "spatial_slidercrank.yaml", "urdf_arm.yaml"}) {
    for (const FT type : {FT::GGL, FT::StabilizedIndex1, FT::Index3}) {
      const Problem pb = with_formulation(file, type);
      expect_block_residual_tangents_exact(pb);
      expect_block_completion_tangents_exact(pb);
    }
  }
}

TEST(BlockResidualTangents, AnExplicitModeTakesItsRightHandSidesBlocks) {
  // F = x-dot - f: its tangents from f's block tangents.
  const Problem pb = multibody::make_problem(multibody::load_model(example("slidercrank.yaml")));
  ASSERT_FALSE(pb.mode(0).implicit());
  expect_block_residual_tangents_exact(pb);
}

TEST(BlockResidualTangents, AParameterSubsetKeepsThemWithItsOwnColumns) {
  const Problem full = with_formulation("fivebar_floor.yaml", multibody::FormulationType::GGL);
  ASSERT_GE(full.n_parameters(), 2);
  const std::string first = full.parameters().front().name, last = full.parameters().back().name;
  const Problem subset = with_free_parameters(full, {last, first});
  expect_block_residual_tangents_exact(subset);
  expect_block_completion_tangents_exact(subset);
  // The subset's parameter columns are the full problem's, reordered: the same evaluation.
  const ResidualProbe r = residual_probe(full);
  const Eigen::MatrixXd zero_x = Eigen::MatrixXd::Zero(r.x.size(), 2);
  Eigen::MatrixXd sub_unit = Eigen::MatrixXd::Identity(2, 2), full_unit = Eigen::MatrixXd::Zero(r.p.size(), 2);
  full_unit(full.n_parameters() - 1, 0) = 1.0;
  full_unit(0, 1) = 1.0;
  Eigen::MatrixXd from_subset(r.x.size(), 2), from_full(r.x.size(), 2);
  TangentWorkspace ws;
  residual_tangents(subset, 0, r.t, r.x, r.xdot, subset.nominal_parameters(), zero_x, zero_x, sub_unit, from_subset, ws);
  residual_tangents(full, 0, r.t, r.x, r.xdot, r.p, zero_x, zero_x, full_unit, from_full, ws);
  EXPECT_EQ(from_subset, from_full);
}

TEST(BlockResidualTangents, AreRefusedForAnExplicitModeOrAnUnknownMode) {
  Problem pb("explicit");
  pb.set_states({"x"});
  const int mode = pb.add_mode("decay", [](auto, const auto& x, const auto&, auto xdot) { xdot[0] = -x[0]; });
  const auto residual = [](auto, const auto& x, const auto& xdot, const auto&, auto r) { r[0] = xdot[0] + x[0]; };
  EXPECT_THROW(pb.set_block_residual_tangents(mode, residual), InputError);
  EXPECT_THROW(pb.set_block_residual_tangents(mode + 1, residual), InputError);
  const int implicit = pb.add_residual_mode("implicit_decay", residual);
  EXPECT_NO_THROW(pb.set_block_residual_tangents(implicit, residual));
  EXPECT_TRUE(static_cast<bool>(pb.mode(implicit).residual_tangents));
}

TEST(BlockResidualTangents, CompletionBlocksAreRefusedWithoutACompletion) {
  Problem pb("no_completion");
  pb.set_states({"x"});
  const auto residual = [](auto, const auto& x, const auto& xdot, const auto&, auto r) { r[0] = xdot[0] + x[0]; };
  const int mode = pb.add_residual_mode("decay", residual);
  const auto completion = [](auto, const auto& guess, const auto&, auto x, auto xdot) {
    x[0] = guess[0];
    xdot[0] = -guess[0];
  };
  EXPECT_THROW(pb.set_block_completion_tangents(mode, completion), InputError);
  EXPECT_THROW(pb.set_block_completion_tangents(mode + 1, completion), InputError);
  pb.set_completion(mode, completion);
  EXPECT_NO_THROW(pb.set_block_completion_tangents(mode, completion));
  EXPECT_TRUE(static_cast<bool>(pb.mode(mode).completion_tangents));
  // A new completion drops the previous one's block tangents.
  pb.set_completion(mode, completion);
  EXPECT_FALSE(static_cast<bool>(pb.mode(mode).completion_tangents));
}
