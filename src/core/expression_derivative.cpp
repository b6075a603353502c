// Symbolic differentiation of an Expression tree. The derivative is built as new nodes appended
// to a copy of the original tree, so it reads the original's subexpressions (sin(a) in the
// derivative of cos(a) reuses a), and evaluates in every scalar type like any expression: a
// height field's slopes are evaluated in the scalar of the right-hand side, whose own
// derivatives (Jacobians, sensitivities, adjoints) then flow through them exactly.
#include <saltus/core/expression.hpp>

#include <fmt/format.h>

#include <vector>

namespace saltus {

class ExpressionDifferentiator {
 public:
  using Op = Expression::Op;
  using Node = Expression::Node;

  ExpressionDifferentiator(const Expression& f, int group, int index, std::string_view name)
      : f_(f), group_(group), index_(index), name_(name) {}

  Expression run() {
    out_ = f_;
    out_.text_ = fmt::format("d({})/d({})", f_.text_, name_);
    memo_.assign(f_.nodes_.size(), kUnknown);
    const int d = derivative(f_.root_);
    out_.root_ = d == kZero ? constant(0.0) : d;
    out_.shallow_ = out_.is_shallow();
    return out_;
  }

 private:
  static constexpr int kZero = -1;     ///< a derivative known to vanish
  static constexpr int kUnknown = -2;  ///< not yet differentiated

  int add(Op op, int a, int b = -1, double number = 0.0) {
    out_.nodes_.push_back(Node{op, number, -1, -1, a, b});
    return static_cast<int>(out_.nodes_.size()) - 1;
  }
  int constant(double c) { return add(Op::Number, -1, -1, c); }
  int sum(int a, int b) {
    if (a == kZero) return b;
    if (b == kZero) return a;
    return add(Op::Add, a, b);
  }
  int difference(int a, int b) {
    if (b == kZero) return a;
    if (a == kZero) return add(Op::Negate, b);
    return add(Op::Subtract, a, b);
  }
  int product(int a, int b) {
    if (a == kZero || b == kZero) return kZero;
    return add(Op::Multiply, a, b);
  }
  int quotient(int a, int b) { return a == kZero ? kZero : add(Op::Divide, a, b); }
  int square(int a) { return add(Op::IntegerPower, a, -1, 2.0); }

  const Node& node(int i) const { return f_.nodes_[static_cast<size_t>(i)]; }

  /// The node index of d(node i)/d(name), or kZero.
  int derivative(int i) {
    int& known = memo_[static_cast<size_t>(i)];
    if (known == kUnknown) known = differentiate(i);
    return known;
  }

  int differentiate(int i) {
    const Node n = node(i);
    switch (n.op) {
      case Op::Number: return kZero;
      case Op::Name: return n.group == group_ && n.index == index_ ? constant(1.0) : kZero;
      default: break;
    }
    const int da = derivative(n.a);
    const int db = n.b >= 0 ? derivative(n.b) : kZero;
    switch (n.op) {
      case Op::Negate: return da == kZero ? kZero : add(Op::Negate, da);
      case Op::Add: return sum(da, db);
      case Op::Subtract: return difference(da, db);
      case Op::Multiply: return sum(product(da, n.b), product(n.a, db));
      case Op::Divide:  // (a' - (a/b) b') / b
        return quotient(difference(da, product(i, db)), n.b);
      case Op::Power: {  // a^b (b' log a + b a' / a); a constant b gives b a^(b-1) a'
        if (db == kZero) return product(product(n.b, add(Op::Power, n.a, difference(n.b, constant(1.0)))), da);
        return product(i, sum(product(db, add(Op::Log, n.a)), quotient(product(n.b, da), n.a)));
      }
      case Op::IntegerPower: {
        if (n.number == 0.0) return kZero;
        if (n.number == 1.0) return da;
        const int lower = n.number == 2.0 ? n.a : add(Op::IntegerPower, n.a, -1, n.number - 1.0);
        return product(product(constant(n.number), lower), da);
      }
      case Op::Sin: return product(add(Op::Cos, n.a), da);
      case Op::Cos: return product(add(Op::Negate, add(Op::Sin, n.a)), da);
      case Op::Tan: return product(sum(constant(1.0), square(i)), da);
      case Op::Asin: return quotient(da, add(Op::Sqrt, difference(constant(1.0), square(n.a))));
      case Op::Acos: return quotient(da == kZero ? kZero : add(Op::Negate, da), add(Op::Sqrt, difference(constant(1.0), square(n.a))));
      case Op::Atan: return quotient(da, sum(constant(1.0), square(n.a)));
      case Op::Sqrt: return quotient(da, product(constant(2.0), i));
      case Op::Exp: return product(i, da);
      case Op::Log: return quotient(da, n.a);
      case Op::Atan2:  // atan2(y, x)' = (x y' - y x') / (x^2 + y^2)
        return quotient(difference(product(n.b, da), product(n.a, db)), sum(square(n.a), square(n.b)));
      case Op::Abs:
      case Op::Min:
      case Op::Max:
        throw ExpressionError(0, fmt::format("in expression '{}': abs, min and max have no derivative at their "
                                             "kink; write a smooth function",
                                             f_.text_));
      default: break;
    }
    return kZero;
  }

  const Expression& f_;
  int group_, index_;
  std::string_view name_;
  Expression out_;
  std::vector<int> memo_;
};

Expression Expression::derivative(int group, int index, std::string_view name) const {
  return ExpressionDifferentiator(*this, group, index, name).run();
}

}  // namespace saltus
