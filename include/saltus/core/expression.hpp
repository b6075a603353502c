#pragma once
// Arithmetic expressions over named parameters, parsed once into a small tree and evaluated in
// every scalar type Saltus uses (double, Complex, Dual, Reverse), so that derivatives flow
// through them exactly: "L*cos(th0)", "m*l^2/12", "-0.5 * a + 0.1".
//
// Grammar (usual precedence; ^ binds tighter than unary minus and is right-associative, so
// -2^2 = -4 and 2^3^2 = 2^9):
//   expression := term (('+' | '-') term)*
//   term       := unary (('*' | '/') unary)*
//   unary      := ('-' | '+') unary | power
//   power      := primary ('^' unary)?
//   primary    := number | name | function '(' expression (',' expression)* ')' | '(' expression ')'
// Numbers: 2, 0.5, .5, 1e-3. Names: the parameters given to parse(), and the constant pi.
// Functions: sin cos tan asin acos atan sqrt exp log abs (one argument), atan2(y, x), min, max
// (two). Angles are in radians.
//
// Non-smooth functions (abs, min, max) take the branch of the real part; their derivative at the
// kink is that branch's. An integer exponent (a constant such as 2 or -3) is evaluated by
// repeated multiplication, which keeps the complex step exact and negative bases valid.
#include <saltus/core/error.hpp>
#include <saltus/core/scalar.hpp>

#include <cmath>
#include <string>
#include <string_view>
#include <vector>

namespace saltus {

/// A malformed expression: `position` is the 0-based offset of the offending token in the text.
class ExpressionError : public InputError {
 public:
  ExpressionError(size_t position, const std::string& what) : InputError(what), position_(position) {}
  size_t position() const { return position_; }

 private:
  size_t position_;
};

class Expression {
 public:
  /// Parses `text`; names resolve to indices into `parameters`. Throws ExpressionError.
  static Expression parse(std::string_view text, const std::vector<std::string>& parameters);

  /// The value at the parameter vector p (indices as given to parse()).
  template <class S>
  S evaluate(In<S> p) const {
    return evaluate_node<S>(root_, p);
  }

  /// Indices of the parameters it reads, ascending, each once.
  std::vector<int> parameters() const;
  bool is_constant() const { return parameters().empty(); }
  /// The text it was parsed from.
  const std::string& text() const { return text_; }

  enum class Op { Number, Parameter, Negate, Add, Subtract, Multiply, Divide, Power, IntegerPower,
                  Sin, Cos, Tan, Asin, Acos, Atan, Sqrt, Exp, Log, Abs, Atan2, Min, Max };
  struct Node {
    Op op = Op::Number;
    double number = 0.0;  ///< Number: the value; IntegerPower: the exponent
    int parameter = -1;   ///< Parameter: its index
    int a = -1, b = -1;   ///< operands (node indices)
  };

 private:
  friend class ExpressionParser;

  template <class S>
  S evaluate_node(int index, In<S> p) const;

  std::string text_;
  std::vector<Node> nodes_;
  int root_ = -1;
};

namespace expression_detail {

/// x^n for an integer n by repeated squaring (exact for the complex step, valid for x < 0).
template <class S>
S integer_power(const S& x, long n) {
  if (n < 0) return S(1.0) / integer_power(x, -n);
  S result(1.0), base = x;
  while (n > 0) {
    if (n & 1) result = result * base;
    n >>= 1;
    if (n > 0) base = base * base;
  }
  return result;
}

/// |x| with the sign of the real part (holomorphic on each side, so the complex step works).
template <class S>
S abs_of(const S& x) {
  return real_part(x) < 0.0 ? S(-x) : x;
}

/// atan2(y, x) for every scalar type: atan of the ratio whose magnitude is at most 1 (so it is
/// finite and analytic), shifted by the constant that puts it on atan2's branch.
template <class S>
S atan2_of(const S& y, const S& x) {
  using std::atan;
  const double ry = real_part(y), rx = real_part(x);
  if (std::abs(rx) >= std::abs(ry)) {
    if (rx == 0.0) return S(0.0) * x + S(std::atan2(ry, rx));  // the origin: no derivative
    return atan(S(y / x)) + S(std::atan2(ry, rx) - std::atan(ry / rx));
  }
  return -atan(S(x / y)) + S(std::atan2(ry, rx) + std::atan(rx / ry));
}

}  // namespace expression_detail

template <class S>
S Expression::evaluate_node(int index, In<S> p) const {
  using std::acos, std::asin, std::atan, std::cos, std::exp, std::log, std::pow, std::sin, std::sqrt,
      std::tan;
  const Node& n = nodes_[static_cast<size_t>(index)];
  switch (n.op) {
    case Op::Number: return S(n.number);
    case Op::Parameter: return p[n.parameter];
    case Op::Negate: return -evaluate_node<S>(n.a, p);
    case Op::Add: return evaluate_node<S>(n.a, p) + evaluate_node<S>(n.b, p);
    case Op::Subtract: return evaluate_node<S>(n.a, p) - evaluate_node<S>(n.b, p);
    case Op::Multiply: return evaluate_node<S>(n.a, p) * evaluate_node<S>(n.b, p);
    case Op::Divide: return evaluate_node<S>(n.a, p) / evaluate_node<S>(n.b, p);
    case Op::Power: return S(pow(evaluate_node<S>(n.a, p), evaluate_node<S>(n.b, p)));
    case Op::IntegerPower:
      return expression_detail::integer_power(evaluate_node<S>(n.a, p), static_cast<long>(n.number));
    case Op::Sin: return S(sin(evaluate_node<S>(n.a, p)));
    case Op::Cos: return S(cos(evaluate_node<S>(n.a, p)));
    case Op::Tan: return S(tan(evaluate_node<S>(n.a, p)));
    case Op::Asin: return S(asin(evaluate_node<S>(n.a, p)));
    case Op::Acos: return S(acos(evaluate_node<S>(n.a, p)));
    case Op::Atan: return S(atan(evaluate_node<S>(n.a, p)));
    case Op::Sqrt: return S(sqrt(evaluate_node<S>(n.a, p)));
    case Op::Exp: return S(exp(evaluate_node<S>(n.a, p)));
    case Op::Log: return S(log(evaluate_node<S>(n.a, p)));
    case Op::Abs: return expression_detail::abs_of(evaluate_node<S>(n.a, p));
    case Op::Atan2: return expression_detail::atan2_of(evaluate_node<S>(n.a, p), evaluate_node<S>(n.b, p));
    case Op::Min: {
      const S a = evaluate_node<S>(n.a, p), b = evaluate_node<S>(n.b, p);
      return real_part(a) <= real_part(b) ? a : b;
    }
    case Op::Max: {
      const S a = evaluate_node<S>(n.a, p), b = evaluate_node<S>(n.b, p);
      return real_part(a) >= real_part(b) ? a : b;
    }
  }
  return S(0.0);
}

}  // namespace saltus
