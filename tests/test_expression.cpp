// Expressions (saltus/core/expression.hpp): values against hand-computed numbers, precedence,
// errors with their positions, and derivatives in Dual and Reverse against the complex step and
// against closed forms.
#include <saltus/core/expression.hpp>
#include <saltus/core/reverse_scalar.hpp>

#include <gtest/gtest.h>

#include <cmath>
#include <numbers>
#include <string>

namespace {

using namespace saltus;

const std::vector<std::string> kNames = {"L", "th0", "m", "l", "a"};

Eigen::VectorXd nominal() {
  Eigen::VectorXd p(5);
  p << 2.0, 0.3, 1.5, 0.8, -1.25;
  return p;
}

double value(const std::string& text) { return Expression::parse(text, kNames).evaluate<double>(nominal()); }

TEST(Expression, ValuesAndPrecedence) {
  EXPECT_DOUBLE_EQ(value("L*cos(th0)"), 2.0 * std::cos(0.3));
  EXPECT_DOUBLE_EQ(value("m*l^2/12"), 1.5 * 0.64 / 12.0);
  EXPECT_DOUBLE_EQ(value("-0.5 * a + 0.1"), 0.725);
  EXPECT_DOUBLE_EQ(value("-2^2"), -4.0);
  EXPECT_DOUBLE_EQ(value("2^3^2"), 512.0);
  EXPECT_DOUBLE_EQ(value("2^-1"), 0.5);
  EXPECT_DOUBLE_EQ(value("a^2"), 1.5625);  // a negative base with an integer exponent
  EXPECT_DOUBLE_EQ(value("a^3"), -1.953125);
  EXPECT_DOUBLE_EQ(value("l^0.5"), std::sqrt(0.8));
  EXPECT_DOUBLE_EQ(value("(1 + 2) * 3 - 4 / 2"), 7.0);
  EXPECT_DOUBLE_EQ(value("1 - 2 - 3"), -4.0);
  EXPECT_DOUBLE_EQ(value("8 / 4 / 2"), 1.0);
  EXPECT_DOUBLE_EQ(value("pi"), std::numbers::pi);
  EXPECT_DOUBLE_EQ(value(".5e1 + 1E-1"), 5.1);
  EXPECT_DOUBLE_EQ(value("atan2(-1, -1)"), std::atan2(-1.0, -1.0));
  EXPECT_DOUBLE_EQ(value("atan2(1, 0)"), std::numbers::pi / 2);
  EXPECT_DOUBLE_EQ(value("min(L, a) + max(L, a)"), 0.75);
  EXPECT_DOUBLE_EQ(value("abs(a)"), 1.25);
  EXPECT_DOUBLE_EQ(value("sqrt(exp(log(4)))"), 2.0);
  EXPECT_DOUBLE_EQ(value("asin(0.5) + acos(0.5) + atan(1) + tan(0.2) + sin(0.1)"),
                   std::asin(0.5) + std::acos(0.5) + std::atan(1.0) + std::tan(0.2) + std::sin(0.1));
}

// One operation on names and numbers ("m/64", "2*L", "-g") skips the tree walk
// (Expression::evaluate_shallow): the same operations on the same operands, so the same values to
// the bit, and the same tangents, as written out by hand.
TEST(Expression, ShallowExpressionsGiveTheOperationsValues) {
  const Eigen::VectorXd p = nominal();
  EXPECT_EQ(value("m/64"), 1.5 / 64.0);
  EXPECT_EQ(value("L/3"), 2.0 / 3.0);
  EXPECT_EQ(value("3/L"), 3.0 / 2.0);
  EXPECT_EQ(value("2*l"), 2.0 * 0.8);
  EXPECT_EQ(value("l*0.1"), 0.8 * 0.1);
  EXPECT_EQ(value("-a"), 1.25);
  EXPECT_EQ(value("th0 + 0.1"), 0.3 + 0.1);
  EXPECT_EQ(value("0.1 - th0"), 0.1 - 0.3);
  EXPECT_EQ(value("L*m"), 3.0);
  EXPECT_EQ(value("m"), 1.5);
  EXPECT_EQ(value("2.5"), 2.5);
  // A tangent along every parameter at once: d(L/3) = dL/3, d(L*m) = m dL + L dm.
  VectorX<Dual> pd(p.size());
  for (Eigen::Index i = 0; i < p.size(); ++i) pd[i] = make_dual(p[i], 1.0);
  EXPECT_EQ(Expression::parse("L/3", kNames).evaluate<Dual>(pd).v[0], (make_dual(2.0, 1.0) / Dual(3.0)).v[0]);
  EXPECT_DOUBLE_EQ(Expression::parse("L*m", kNames).evaluate<Dual>(pd).v[0], 1.5 + 2.0);
  EXPECT_DOUBLE_EQ(Expression::parse("-a", kNames).evaluate<Dual>(pd).v[0], -1.0);
  // Deeper trees still walk: one level more than shallow.
  EXPECT_EQ(value("m/64/2"), 1.5 / 64.0 / 2.0);
  EXPECT_EQ(value("-(L/3)"), -(2.0 / 3.0));
}

TEST(Expression, ParametersItReads) {
  const Expression e = Expression::parse("L*cos(th0) + L - pi", kNames);
  EXPECT_EQ(e.parameters(), (std::vector<int>{0, 1}));
  EXPECT_FALSE(e.is_constant());
  EXPECT_TRUE(Expression::parse("2*pi", kNames).is_constant());
}

/// The error message and the position of the offending token.
std::pair<std::string, size_t> error_of(const std::string& text) {
  try {
    Expression::parse(text, kNames);
  } catch (const ExpressionError& e) {
    return {e.what(), e.position()};
  }
  return {"", 0};
}

TEST(Expression, ErrorsNameTheTokenAndItsPosition) {
  auto [msg, at] = error_of("L*cos(th1)");
  EXPECT_NE(msg.find("unknown name 'th1' (parameters: L, th0, m, l, a; constant: pi)"), std::string::npos) << msg;
  EXPECT_EQ(at, 6u);
  std::tie(msg, at) = error_of("2*sinh(L)");
  EXPECT_NE(msg.find("unknown function 'sinh'"), std::string::npos) << msg;
  EXPECT_EQ(at, 2u);
  std::tie(msg, at) = error_of("(L + 1");
  EXPECT_NE(msg.find("expected ')'"), std::string::npos) << msg;
  EXPECT_EQ(at, 6u);
  std::tie(msg, at) = error_of("L + * 2");
  EXPECT_NE(msg.find("unexpected '*'"), std::string::npos) << msg;
  EXPECT_EQ(at, 4u);
  std::tie(msg, at) = error_of("L 2");
  EXPECT_NE(msg.find("unexpected '2'"), std::string::npos) << msg;
  std::tie(msg, at) = error_of("atan2(L)");
  EXPECT_NE(msg.find("'atan2' takes two arguments"), std::string::npos) << msg;
  std::tie(msg, at) = error_of("sin(L, a)");
  EXPECT_NE(msg.find("'sin' takes one argument"), std::string::npos) << msg;
  std::tie(msg, at) = error_of("   ");
  EXPECT_NE(msg.find("empty expression"), std::string::npos) << msg;
  std::tie(msg, at) = error_of("1e999");
  EXPECT_NE(msg.find("not a finite number"), std::string::npos) << msg;
  std::tie(msg, at) = error_of("L +");
  EXPECT_NE(msg.find("at the end"), std::string::npos) << msg;
  std::tie(msg, at) = error_of(std::string(200, '(') + "1" + std::string(200, ')'));
  EXPECT_NE(msg.find("nested more than"), std::string::npos) << msg;
  std::tie(msg, at) = error_of("1.2.3");
  EXPECT_NE(msg.find("'1.2.3' is not a number"), std::string::npos) << msg;
}

/// d/dp_k of the expression at the nominal p by the complex step.
double complex_step(const Expression& e, int k) {
  const double h = 1e-20;
  VectorX<Complex> p = nominal().cast<Complex>();
  p[k] += Complex(0.0, h);
  return e.evaluate<Complex>(p).imag() / h;
}

TEST(Expression, DerivativesInEveryScalarTypeAgree) {
  const std::vector<std::string> texts = {
      "L*cos(th0)", "m*l^2/12", "a^3 - a^-2", "l^L", "atan2(a, L) + atan2(L, a) + atan2(-L, a)",
      "abs(a) * min(L, m) / max(l, th0)", "sqrt(L) * exp(-th0) * log(m)", "asin(th0) + acos(l - 0.5) + tan(a)",
      "-(L - 2*a)^2 / (1 + m)"};
  for (const auto& text : texts) {
    const Expression e = Expression::parse(text, kNames);
    const Eigen::VectorXd p = nominal();
    for (int k = 0; k < 5; ++k) {
      const double reference = complex_step(e, k);
      VectorX<Dual> pd = p.cast<Dual>();
      pd[k] = make_dual(p[k], 1.0);
      EXPECT_NEAR(e.evaluate<Dual>(pd).v[0], reference, 1e-13 * (1.0 + std::abs(reference))) << text << " d/dp" << k;
    }
    ReverseTape::clear();
    VectorX<Reverse> pr(5);
    for (int k = 0; k < 5; ++k) pr[k] = Reverse::independent(p[k]);
    const Reverse y = e.evaluate<Reverse>(pr);
    EXPECT_NEAR(y.value(), e.evaluate<double>(p), 1e-15 * (1.0 + std::abs(y.value()))) << text;
    ASSERT_FALSE(y.is_constant()) << text;  // a recorded output (a zero partial records no node)
    std::vector<double> adjoint(static_cast<size_t>(ReverseTape::size()), 0.0);
    adjoint[static_cast<size_t>(y.node())] = y.coefficient();
    ReverseTape::sweep(adjoint);
    for (int k = 0; k < 5; ++k) {
      const double reference = complex_step(e, k);
      EXPECT_NEAR(adjoint[static_cast<size_t>(pr[k].node())], reference, 1e-13 * (1.0 + std::abs(reference)))
          << text << " reverse d/dp" << k;
    }
    ReverseTape::clear();
  }
}

TEST(Expression, DerivativesHaveTheirClosedForms) {
  const Eigen::VectorXd p = nominal();
  const Expression inertia = Expression::parse("m*l^2/12", kNames);
  VectorX<Dual> pd = p.cast<Dual>();
  pd[3] = make_dual(p[3], 1.0);  // d/dl = m l / 6
  EXPECT_NEAR(inertia.evaluate<Dual>(pd).v[0], 1.5 * 0.8 / 6.0, 1e-15);
  // d/da atan2(a, L) = L / (L^2 + a^2), also across the negative x axis.
  const Expression angle = Expression::parse("atan2(a, -L)", kNames);
  EXPECT_NEAR(complex_step(angle, 4), -2.0 / (4.0 + 1.5625), 1e-15);
  EXPECT_NEAR(angle.evaluate<double>(p), std::atan2(-1.25, -2.0), 1e-15);
}

// Names in groups (equation models: parameters, states, time, rates of the states): each name
// reads its own vector, der(x) reads the rates, and the derivatives flow through every group.
TEST(Expression, GroupsOfNames) {
  const std::vector<std::string> params = {"k", "c"}, states = {"x", "v"}, time = {"t"};
  const NameGroup groups[] = {{"parameters", &params}, {"states", &states}, {"time", &time}, {"rates", &states, true}};
  const Expression e = Expression::parse("-k*x - c*v + sin(t) + 2*der(v)", groups);
  EXPECT_EQ(e.parameters(), (std::vector<int>{0, 1}));
  EXPECT_EQ(e.names_in(1), (std::vector<int>{0, 1}));
  EXPECT_EQ(e.names_in(3), (std::vector<int>{1}));
  EXPECT_FALSE(e.is_constant());
  const Eigen::Vector2d p(3.0, 0.5), x(0.2, -1.5), xdot(-1.5, 4.0);
  const double t = 0.7;
  const double* values[] = {p.data(), x.data(), &t, xdot.data()};
  EXPECT_DOUBLE_EQ(e.evaluate_in(values, 4), -3.0 * 0.2 + 0.5 * 1.5 + std::sin(0.7) + 8.0);
  EXPECT_THROW((void)e.evaluate_in(values, 3), std::invalid_argument);  // der(v) needs the rates
  // d/dx = -k, d/dt = cos(t), d/dk = -x, in Dual and against the closed forms.
  const VectorX<Dual> pd = p.cast<Dual>(), vd = xdot.cast<Dual>();
  VectorX<Dual> xd = x.cast<Dual>();
  xd[0] = make_dual(x[0], 1.0);
  Dual td(t);
  const Dual* dual_values[] = {pd.data(), xd.data(), &td, vd.data()};
  EXPECT_DOUBLE_EQ(e.evaluate_in(dual_values, 4).v[0], -3.0);
  xd[0] = Dual(x[0]);
  td = make_dual(t, 1.0);
  EXPECT_DOUBLE_EQ(e.evaluate_in(dual_values, 4).v[0], std::cos(0.7));
  // (parameters, states, time) overload.
  const Expression r = Expression::parse("x - k*t", std::span<const NameGroup>(groups, 3));
  EXPECT_DOUBLE_EQ(r.evaluate<double>(p, x, t), 0.2 - 2.1);
}

TEST(Expression, GroupErrorsListEveryGroup) {
  const std::vector<std::string> params = {"k"}, states = {"x"}, time = {"t"};
  const NameGroup groups[] = {{"parameters", &params}, {"states", &states}, {"time", &time}, {"rates", &states, true}};
  try {
    (void)Expression::parse("k*y", groups);
    FAIL();
  } catch (const ExpressionError& e) {
    EXPECT_NE(std::string(e.what()).find("unknown name 'y' (parameters: k; states: x; time: t; rates: der(x); "
                                         "constant: pi)"),
              std::string::npos)
        << e.what();
    EXPECT_EQ(e.position(), 2u);
  }
  try {
    (void)Expression::parse("der(x)", std::span<const NameGroup>(groups, 3));
    FAIL();
  } catch (const ExpressionError& e) {
    EXPECT_NE(std::string(e.what()).find("der(...) is not available"), std::string::npos) << e.what();
  }
}

}  // namespace

namespace {

/// d(text)/d(name) by the complex step at the nominal parameters.
double complex_step_slope(const std::string& text, int index) {
  const Expression f = Expression::parse(text, kNames);
  Eigen::VectorXcd p = nominal().cast<Complex>();
  const double h = 1e-30;
  p[index] += Complex(0.0, h);
  return f.evaluate<Complex>(p).imag() / h;
}

}  // namespace

TEST(Expression, SymbolicDerivativesMatchTheComplexStep) {
  const std::vector<std::string> texts = {
      "L*cos(th0)",        "m*l^2/12",          "-0.5 * a + 0.1",         "l^0.5",
      "l^L",               "a^3 - 2*a^2 + a",   "sin(L*a)/(1 + exp(-a/l))", "tan(th0)*atan(a)",
      "asin(th0) + acos(l)", "sqrt(L + m) * log(l)", "a^0 + L^1",         "atan2(a, L) + atan2(L, a)",
      "-(a - L)^-2",        "exp(-((a - 1)/0.5)^2) * m", "L / (1 + exp(-(a - th0)/0.05))", "3"};
  for (const std::string& text : texts) {
    const Expression f = Expression::parse(text, kNames);
    for (int k = 0; k < static_cast<int>(kNames.size()); ++k) {
      const Expression df = f.derivative(0, k, kNames[static_cast<size_t>(k)]);
      const double slope = df.evaluate<double>(nominal());
      EXPECT_NEAR(slope, complex_step_slope(text, k), 1e-12 * (1.0 + std::abs(slope))) << df.text();
      // The derivative differentiates again: its symbolic derivative in every name against
      // the complex step of the derivative's value.
      for (int j = 0; j < static_cast<int>(kNames.size()); ++j) {
        const Expression ddf = df.derivative(0, j, kNames[static_cast<size_t>(j)]);
        Eigen::VectorXcd pc = nominal().cast<Complex>();
        pc[j] += Complex(0.0, 1e-30);
        const double second = ddf.evaluate<double>(nominal());
        EXPECT_NEAR(second, df.evaluate<Complex>(pc).imag() / 1e-30, 1e-10 * (1.0 + std::abs(second))) << ddf.text();
      }
    }
  }
  EXPECT_EQ(Expression::parse("L*a", kNames).derivative(0, 4, "a").text(), "d(L*a)/d(a)");
}

TEST(Expression, SymbolicDerivativesRefuseAbsMinAndMax) {
  for (const std::string text : {"max(a, 0) + 1", "min(L, a)", "2*abs(a)"}) {
    const Expression f = Expression::parse(text, kNames);
    try {
      (void)f.derivative(0, 4, "a");
      ADD_FAILURE() << text << " was differentiated";
    } catch (const ExpressionError& e) {
      EXPECT_NE(std::string(e.what()).find("abs, min and max have no derivative"), std::string::npos) << e.what();
    }
  }
}
