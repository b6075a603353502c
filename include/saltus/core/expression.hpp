#pragma once
// Arithmetic expressions over named values, parsed once into a small tree and evaluated in
// every scalar type Saltus uses (double, Complex, Dual, Reverse), so that derivatives flow
// through them exactly: "L*cos(th0)", "m*l^2/12", "-0.5 * a + 0.1".
//
// The names an expression may read come in groups (parameters; or parameters, states, time and
// the rates of the states in equation model files): a name resolves once, at parsing, to (group,
// index), and evaluation reads values[group][index] from the arrays it is given, so evaluating
// allocates nothing (a right-hand side is evaluated at every step).
//
// Grammar (usual precedence; ^ binds tighter than unary minus and is right-associative, so
// -2^2 = -4 and 2^3^2 = 2^9):
//   expression := term (('+' | '-') term)*
//   term       := unary (('*' | '/') unary)*
//   unary      := ('-' | '+') unary | power
//   power      := primary ('^' unary)?
//   primary    := number | name | function '(' expression (',' expression)* ')' | '(' expression ')'
// Numbers: 2, 0.5, .5, 1e-3. Names: those of the groups given to parse(), and the constant pi;
// der(name) reads the name's entry in a group marked `derivative` (the rate of a state);
// pre(name) and pre(der(name)) read those of the groups marked `before` (the values before an
// event, in an implicit transition).
// Functions: sin cos tan asin acos atan sqrt exp log abs (one argument), atan2(y, x), min, max
// (two). Angles are in radians.
//
// Non-smooth functions (abs, min, max) take the branch of the real part; their derivative at the
// kink is that branch's. An integer exponent (a constant such as 2 or -3) is evaluated by
// repeated multiplication, which keeps the complex step exact and negative bases valid.
#include <saltus/core/error.hpp>
#include <saltus/core/scalar.hpp>

#include <cmath>
#include <span>
#include <stdexcept>
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

/// One group of names an expression may read. Group g of parse() is bound to values[g] at
/// evaluation; a name at position i of `names` reads values[g][i].
struct NameGroup {
  std::string_view kind;                    ///< named in messages: "parameters", "states", ...
  const std::vector<std::string>* names = nullptr;
  /// The names are written der(name) and read the rates of these names (of the states).
  bool derivative = false;
  /// The names are written pre(name), or pre(der(name)) with `derivative`: the values before an
  /// event (implicit transitions).
  bool before = false;
  /// The names an unknown name's message lists, where not all of `names` (an equation model's
  /// rates: der(z) of an algebraic z parses, to be refused with its own reason, but is not
  /// offered); null: all.
  const std::vector<std::string>* listed = nullptr;
};

class Expression {
 public:
  /// Parses `text`; names resolve to indices into `parameters` (one group). Throws
  /// ExpressionError.
  static Expression parse(std::string_view text, const std::vector<std::string>& parameters);
  /// Parses `text` with several groups of names; the first group holding a name wins (callers
  /// keep the groups' names distinct). Throws ExpressionError.
  static Expression parse(std::string_view text, std::span<const NameGroup> groups);

  /// The value at the parameter vector p (a one-group expression).
  template <class S>
  S evaluate(In<S> p) const {
    const S* values[] = {p.data()};
    return evaluate_in<S>(values, 1);
  }
  /// The value for the groups (parameters, states, time), in that order.
  template <class S>
  S evaluate(In<S> p, In<S> x, const S& t) const {
    const S* values[] = {p.data(), x.data(), &t};
    return evaluate_in<S>(values, 3);
  }
  /// The value with group g bound to values[g], g < n_groups. Throws std::invalid_argument if
  /// the expression reads a group past n_groups (a caller's bug, not bad input).
  template <class S>
  S evaluate_in(const S* const* values, int n_groups) const {
    if (max_group_ >= n_groups) {
      throw std::invalid_argument("Expression::evaluate_in: '" + text_ + "' reads a group that was not given");
    }
    if (shallow_) return evaluate_shallow<S>(values);
    return evaluate_node<S>(root_, values);
  }

  /// Indices of the parameters (group 0) it reads, ascending, each once.
  std::vector<int> parameters() const { return names_in(0); }
  /// Indices of the names of `group` it reads, ascending, each once.
  std::vector<int> names_in(int group) const;
  /// True if it reads no name at all.
  bool is_constant() const { return max_group_ < 0; }
  /// The text it was parsed from.
  const std::string& text() const { return text_; }

  /// The symbolic derivative with respect to the name at `index` of `group`, an expression over
  /// the same groups whose text reads "d(<text>)/d(<name>)" (`name` is for that text only), so
  /// that a function's slope can be evaluated, and differentiated again, in every scalar type.
  /// Throws ExpressionError if the expression uses abs, min or max, which have no derivative
  /// at their kink.
  Expression derivative(int group, int index, std::string_view name) const;

  enum class Op { Number, Name, Negate, Add, Subtract, Multiply, Divide, Power, IntegerPower,
                  Sin, Cos, Tan, Asin, Acos, Atan, Sqrt, Exp, Log, Abs, Atan2, Min, Max };
  struct Node {
    Op op = Op::Number;
    double number = 0.0;  ///< Number: the value; IntegerPower: the exponent
    int group = -1;       ///< Name: its group
    int index = -1;       ///< Name: its index in the group
    int a = -1, b = -1;   ///< operands (node indices)
  };

 private:
  friend class ExpressionParser;
  friend class ExpressionDifferentiator;

  template <class S>
  S evaluate_node(int index, const S* const* values) const;

  /// A number or a name: its value.
  template <class S>
  S leaf(const Node& n, const S* const* values) const {
    return n.op == Op::Number ? S(n.number) : values[n.group][n.index];
  }
  /// A shallow tree: a leaf, or one arithmetic operation on leaves ("m/64", "2*L", "-g"),
  /// the operands and their order as the tree walk takes them, so the value is the same to the
  /// bit. The walk through evaluate_node cost a 64-rod chain's dual evaluations 8 % of their
  /// time (a length and a mass expression per bar).
  template <class S>
  S evaluate_shallow(const S* const* values) const {
    const Node& n = nodes_[static_cast<size_t>(root_)];
    switch (n.op) {
      case Op::Negate: return -leaf<S>(nodes_[static_cast<size_t>(n.a)], values);
      case Op::Add: return leaf<S>(nodes_[static_cast<size_t>(n.a)], values) + leaf<S>(nodes_[static_cast<size_t>(n.b)], values);
      case Op::Subtract:
        return leaf<S>(nodes_[static_cast<size_t>(n.a)], values) - leaf<S>(nodes_[static_cast<size_t>(n.b)], values);
      case Op::Multiply:
        return leaf<S>(nodes_[static_cast<size_t>(n.a)], values) * leaf<S>(nodes_[static_cast<size_t>(n.b)], values);
      case Op::Divide:
        return leaf<S>(nodes_[static_cast<size_t>(n.a)], values) / leaf<S>(nodes_[static_cast<size_t>(n.b)], values);
      default: return leaf<S>(n, values);
    }
  }
  /// Whether the tree is shallow (evaluate_shallow), set once parsed.
  bool is_shallow() const;

  std::string text_;
  std::vector<Node> nodes_;
  int root_ = -1;
  int max_group_ = -1;  ///< the highest group it reads, -1 if none
  bool shallow_ = false;
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
S Expression::evaluate_node(int index, const S* const* values) const {
  using std::acos, std::asin, std::atan, std::cos, std::exp, std::log, std::pow, std::sin, std::sqrt,
      std::tan;
  const Node& n = nodes_[static_cast<size_t>(index)];
  switch (n.op) {
    case Op::Number: return S(n.number);
    case Op::Name: return values[n.group][n.index];
    case Op::Negate: return -evaluate_node<S>(n.a, values);
    case Op::Add: return evaluate_node<S>(n.a, values) + evaluate_node<S>(n.b, values);
    case Op::Subtract: return evaluate_node<S>(n.a, values) - evaluate_node<S>(n.b, values);
    case Op::Multiply: return evaluate_node<S>(n.a, values) * evaluate_node<S>(n.b, values);
    case Op::Divide: return evaluate_node<S>(n.a, values) / evaluate_node<S>(n.b, values);
    case Op::Power: return S(pow(evaluate_node<S>(n.a, values), evaluate_node<S>(n.b, values)));
    case Op::IntegerPower:
      return expression_detail::integer_power(evaluate_node<S>(n.a, values), static_cast<long>(n.number));
    case Op::Sin: return S(sin(evaluate_node<S>(n.a, values)));
    case Op::Cos: return S(cos(evaluate_node<S>(n.a, values)));
    case Op::Tan: return S(tan(evaluate_node<S>(n.a, values)));
    case Op::Asin: return S(asin(evaluate_node<S>(n.a, values)));
    case Op::Acos: return S(acos(evaluate_node<S>(n.a, values)));
    case Op::Atan: return S(atan(evaluate_node<S>(n.a, values)));
    case Op::Sqrt: return S(sqrt(evaluate_node<S>(n.a, values)));
    case Op::Exp: return S(exp(evaluate_node<S>(n.a, values)));
    case Op::Log: return S(log(evaluate_node<S>(n.a, values)));
    case Op::Abs: return expression_detail::abs_of(evaluate_node<S>(n.a, values));
    case Op::Atan2: return expression_detail::atan2_of(evaluate_node<S>(n.a, values), evaluate_node<S>(n.b, values));
    case Op::Min: {
      const S a = evaluate_node<S>(n.a, values), b = evaluate_node<S>(n.b, values);
      return real_part(a) <= real_part(b) ? a : b;
    }
    case Op::Max: {
      const S a = evaluate_node<S>(n.a, values), b = evaluate_node<S>(n.b, values);
      return real_part(a) >= real_part(b) ? a : b;
    }
  }
  return S(0.0);
}

}  // namespace saltus
