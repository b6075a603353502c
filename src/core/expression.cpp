#include <saltus/core/expression.hpp>

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdlib>
#include <numbers>
#include <optional>

namespace saltus {

namespace {

struct Function {
  const char* name;
  Expression::Op op;
  int arity;
};

constexpr Function kFunctions[] = {
    {"sin", Expression::Op::Sin, 1},     {"cos", Expression::Op::Cos, 1},   {"tan", Expression::Op::Tan, 1},
    {"asin", Expression::Op::Asin, 1},   {"acos", Expression::Op::Acos, 1}, {"atan", Expression::Op::Atan, 1},
    {"sqrt", Expression::Op::Sqrt, 1},   {"exp", Expression::Op::Exp, 1},   {"log", Expression::Op::Log, 1},
    {"abs", Expression::Op::Abs, 1},     {"atan2", Expression::Op::Atan2, 2}, {"min", Expression::Op::Min, 2},
    {"max", Expression::Op::Max, 2},
};

/// Nesting deeper than this is not an expression a person writes; the bound keeps the recursive
/// parser and evaluator off the end of the stack.
constexpr int kMaxDepth = 64;
/// Integer exponents up to this magnitude are evaluated by repeated multiplication.
constexpr double kMaxIntegerExponent = 64.0;

}  // namespace

/// Recursive descent over the grammar in expression.hpp.
class ExpressionParser {
 public:
  ExpressionParser(std::string_view text, const std::vector<std::string>& parameters)
      : text_(text), parameters_(parameters) {}

  Expression parse() {
    skip_space();
    if (at_end()) fail(0, "empty expression");
    Expression e;
    e.text_ = std::string(text_);
    out_ = &e;
    e.root_ = expression(0);
    skip_space();
    if (!at_end()) fail(pos_, fmt::format("unexpected '{}'", text_[pos_]));
    return e;
  }

 private:
  using Op = Expression::Op;

  [[noreturn]] void fail(size_t position, const std::string& what) const {
    throw ExpressionError(position, fmt::format("in expression '{}': {} (at character {})", text_, what, position + 1));
  }

  bool at_end() const { return pos_ >= text_.size(); }
  void skip_space() {
    while (!at_end() && std::isspace(static_cast<unsigned char>(text_[pos_]))) ++pos_;
  }
  /// Consumes `c` (after spaces) if it comes next.
  bool accept(char c) {
    skip_space();
    if (at_end() || text_[pos_] != c) return false;
    ++pos_;
    return true;
  }

  int add(Expression::Node node) {
    out_->nodes_.push_back(node);
    return static_cast<int>(out_->nodes_.size()) - 1;
  }
  int binary(Op op, int a, int b) { return add({op, 0.0, -1, a, b}); }

  void enter(int depth) const {
    if (depth > kMaxDepth) fail(pos_, fmt::format("nested more than {} levels deep", kMaxDepth));
  }

  /// One left-associative level: operand ((first | second) operand)*.
  template <class Operand>
  int left_associative(int depth, Operand operand, char first, Op first_op, char second, Op second_op) {
    enter(depth);
    int left = (this->*operand)(depth + 1);
    for (;;) {
      if (accept(first)) {
        left = binary(first_op, left, (this->*operand)(depth + 1));
      } else if (accept(second)) {
        left = binary(second_op, left, (this->*operand)(depth + 1));
      } else {
        return left;
      }
    }
  }

  int expression(int depth) {
    return left_associative(depth, &ExpressionParser::term, '+', Op::Add, '-', Op::Subtract);
  }
  int term(int depth) {
    return left_associative(depth, &ExpressionParser::unary, '*', Op::Multiply, '/', Op::Divide);
  }

  int unary(int depth) {
    enter(depth);
    if (accept('-')) return add({Op::Negate, 0.0, -1, unary(depth + 1), -1});
    if (accept('+')) return unary(depth + 1);
    return power(depth + 1);
  }

  int power(int depth) {
    enter(depth);
    const int base = primary(depth + 1);
    if (!accept('^')) return base;
    const int exponent = unary(depth + 1);
    if (const auto n = integer_constant(exponent)) return add({Op::IntegerPower, *n, -1, base, -1});
    return binary(Op::Power, base, exponent);
  }

  /// The value of a node that is an integer constant (k or -k) small enough for repeated
  /// multiplication.
  std::optional<double> integer_constant(int index) const {
    const Expression::Node& n = out_->nodes_[static_cast<size_t>(index)];
    double value = 0.0;
    if (n.op == Op::Number) {
      value = n.number;
    } else if (n.op == Op::Negate && out_->nodes_[static_cast<size_t>(n.a)].op == Op::Number) {
      value = -out_->nodes_[static_cast<size_t>(n.a)].number;
    } else {
      return std::nullopt;
    }
    if (value != std::floor(value) || std::abs(value) > kMaxIntegerExponent) return std::nullopt;
    return value;
  }

  int primary(int depth) {
    enter(depth);
    skip_space();
    if (at_end()) fail(pos_, "expected a number, a name or '(' at the end");
    const char c = text_[pos_];
    if (c == '(') {
      ++pos_;
      const int inner = expression(depth + 1);
      if (!accept(')')) fail(pos_, "expected ')'");
      return inner;
    }
    if (std::isdigit(static_cast<unsigned char>(c)) || c == '.') return number();
    if (std::isalpha(static_cast<unsigned char>(c)) || c == '_') return name(depth);
    fail(pos_, fmt::format("unexpected '{}'", c));
  }

  int number() {
    const size_t start = pos_;
    while (!at_end() && (std::isdigit(static_cast<unsigned char>(text_[pos_])) || text_[pos_] == '.')) ++pos_;
    if (!at_end() && (text_[pos_] == 'e' || text_[pos_] == 'E')) {
      size_t k = pos_ + 1;
      if (k < text_.size() && (text_[k] == '+' || text_[k] == '-')) ++k;
      if (k < text_.size() && std::isdigit(static_cast<unsigned char>(text_[k]))) {
        pos_ = k;
        while (!at_end() && std::isdigit(static_cast<unsigned char>(text_[pos_]))) ++pos_;
      }
    }
    const std::string token(text_.substr(start, pos_ - start));
    char* end = nullptr;
    const double value = std::strtod(token.c_str(), &end);
    if (end != token.c_str() + token.size()) fail(start, fmt::format("'{}' is not a number", token));
    if (!std::isfinite(value)) fail(start, fmt::format("'{}' is not a finite number", token));
    return add({Op::Number, value, -1, -1, -1});
  }

  int name(int depth) {
    const size_t start = pos_;
    while (!at_end() && (std::isalnum(static_cast<unsigned char>(text_[pos_])) || text_[pos_] == '_')) ++pos_;
    const std::string word(text_.substr(start, pos_ - start));
    skip_space();
    if (!at_end() && text_[pos_] == '(') {
      const auto f = std::find_if(std::begin(kFunctions), std::end(kFunctions),
                                  [&](const Function& fn) { return word == fn.name; });
      if (f == std::end(kFunctions)) {
        fail(start, fmt::format("unknown function '{}' (functions: sin cos tan asin acos atan atan2 sqrt exp log "
                                "abs min max)",
                                word));
      }
      ++pos_;
      const int a = expression(depth + 1);
      int b = -1;
      if (f->arity == 2) {
        if (!accept(',')) fail(pos_, fmt::format("'{}' takes two arguments: expected ','", word));
        b = expression(depth + 1);
      }
      if (!accept(')')) {
        fail(pos_, f->arity == 1 ? fmt::format("'{}' takes one argument: expected ')'", word)
                                 : std::string("expected ')'"));
      }
      return add({f->op, 0.0, -1, a, b});
    }
    const auto it = std::find(parameters_.begin(), parameters_.end(), word);
    if (it != parameters_.end()) return add({Op::Parameter, 0.0, static_cast<int>(it - parameters_.begin()), -1, -1});
    if (word == "pi") return add({Op::Number, std::numbers::pi, -1, -1, -1});
    std::string known;
    for (const auto& p : parameters_) known += (known.empty() ? "" : ", ") + p;
    fail(start, fmt::format("unknown name '{}' (parameters: {}; constant: pi)", word,
                            known.empty() ? "none declared" : known));
  }

  std::string_view text_;
  const std::vector<std::string>& parameters_;
  size_t pos_ = 0;
  Expression* out_ = nullptr;
};

Expression Expression::parse(std::string_view text, const std::vector<std::string>& parameters) {
  return ExpressionParser(text, parameters).parse();
}

std::vector<int> Expression::parameters() const {
  std::vector<int> used;
  for (const Node& n : nodes_) {
    if (n.op == Op::Parameter) used.push_back(n.parameter);
  }
  std::sort(used.begin(), used.end());
  used.erase(std::unique(used.begin(), used.end()), used.end());
  return used;
}

}  // namespace saltus
