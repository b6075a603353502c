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
  ExpressionParser(std::string_view text, std::span<const NameGroup> groups) : text_(text), groups_(groups) {}

  Expression parse() {
    skip_space();
    if (at_end()) fail(0, "empty expression");
    Expression e;
    e.text_ = std::string(text_);
    out_ = &e;
    e.root_ = expression(0);
    skip_space();
    if (!at_end()) fail(pos_, fmt::format("unexpected '{}'", text_[pos_]));
    e.shallow_ = e.is_shallow();
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
  int binary(Op op, int a, int b) { return add({op, 0.0, -1, -1, a, b}); }
  int unary_node(Op op, int a) { return add({op, 0.0, -1, -1, a, -1}); }
  int constant(double value) { return add({Op::Number, value, -1, -1, -1, -1}); }
  int name_node(int group, int index) {
    out_->max_group_ = std::max(out_->max_group_, group);
    return add({Op::Name, 0.0, group, index, -1, -1});
  }

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
    if (accept('-')) return unary_node(Op::Negate, unary(depth + 1));
    if (accept('+')) return unary(depth + 1);
    return power(depth + 1);
  }

  int power(int depth) {
    enter(depth);
    const int base = primary(depth + 1);
    if (!accept('^')) return base;
    const int exponent = unary(depth + 1);
    if (const auto n = integer_constant(exponent)) return add({Op::IntegerPower, *n, -1, -1, base, -1});
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
    return constant(value);
  }

  int name(int depth) {
    const size_t start = pos_;
    const std::string word = identifier();
    skip_space();
    if (!at_end() && text_[pos_] == '(') {
      if (word == "der") return derivative(start, false);
      if (word == "pre") return before_event(start);
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
      return add({f->op, 0.0, -1, -1, a, b});
    }
    for (size_t g = 0; g < groups_.size(); ++g) {
      if (groups_[g].derivative || groups_[g].before) continue;
      const std::vector<std::string>& names = *groups_[g].names;
      const auto it = std::find(names.begin(), names.end(), word);
      if (it != names.end()) return name_node(static_cast<int>(g), static_cast<int>(it - names.begin()));
    }
    if (word == "pi") return constant(std::numbers::pi);
    fail(start, fmt::format("unknown name '{}' ({}constant: pi)", word, known_names()));
  }

  std::string identifier() {
    const size_t start = pos_;
    while (!at_end() && (std::isalnum(static_cast<unsigned char>(text_[pos_])) || text_[pos_] == '_')) ++pos_;
    return std::string(text_.substr(start, pos_ - start));
  }

  /// The group marked (derivative, before), or groups_.end().
  std::span<const NameGroup>::iterator group_of(bool derivative, bool before) const {
    return std::find_if(groups_.begin(), groups_.end(),
                        [&](const NameGroup& g) { return g.derivative == derivative && g.before == before; });
  }

  /// A name of `group` at the current position, up to and including the closing ')' of
  /// `call` ("der", "pre").
  int name_in(std::span<const NameGroup>::iterator group, const char* call) {
    skip_space();
    const size_t name_start = pos_;
    const std::string word = identifier();
    const std::vector<std::string>& names = *group->names;
    const auto it = std::find(names.begin(), names.end(), word);
    if (it == names.end()) {
      fail(name_start, fmt::format("{}(...) takes a name of the {} ({}), got '{}'", call, group->kind, join(names),
                                   word));
    }
    if (!accept(')')) fail(pos_, fmt::format("{}(...) takes one name: expected ')'", call));
    return name_node(static_cast<int>(group - groups_.begin()), static_cast<int>(it - names.begin()));
  }

  /// der(name), after "der": the rate of a name of the derivative group (before the event with
  /// `before`, inside pre(...)).
  int derivative(size_t start, bool before) {
    const auto group = group_of(true, before);
    if (group == groups_.end()) {
      fail(start, "der(...) is not available in this expression (in an equation model, rates are read by "
                  "residuals, guards, running costs and transitions only: not by right-hand sides, jumps, initial "
                  "values, terminal or event costs)");
    }
    ++pos_;  // '('
    return name_in(group, "der");
  }

  /// pre(name) or pre(der(name)), after "pre": a value before the event.
  int before_event(size_t start) {
    if (group_of(false, true) == groups_.end()) {
      fail(start, "pre(...) is only available in an implicit transition (the values before the event)");
    }
    ++pos_;  // '('
    skip_space();
    const size_t inner = pos_;
    const std::string word = identifier();
    skip_space();
    if (word == "der" && !at_end() && text_[pos_] == '(') {
      const int node = derivative(inner, true);
      if (!accept(')')) fail(pos_, "pre(...) takes one name or der(name): expected ')'");
      return node;
    }
    pos_ = inner;
    return name_in(group_of(false, true), "pre");
  }

  static std::string join(const std::vector<std::string>& names) {
    std::string list;
    for (const auto& n : names) list += (list.empty() ? "" : ", ") + n;
    return list.empty() ? "none declared" : list;
  }

  /// "parameters: a, b; states: x, y; " for the message of an unknown name.
  std::string known_names() const {
    std::string known;
    for (const NameGroup& g : groups_) {
      const std::vector<std::string>& listed = g.listed != nullptr ? *g.listed : *g.names;
      std::string names = join(listed);
      if (g.derivative || g.before) {
        const std::string open = std::string(g.before ? "pre(" : "") + (g.derivative ? "der(" : "");
        const std::string close = std::string(g.derivative ? ")" : "") + (g.before ? ")" : "");
        names.clear();
        for (const auto& n : listed) names += (names.empty() ? "" : ", ") + open + n + close;
        if (names.empty()) continue;
      }
      known += fmt::format("{}: {}; ", g.kind, names);
    }
    return known;
  }

  std::string_view text_;
  std::span<const NameGroup> groups_;
  size_t pos_ = 0;
  Expression* out_ = nullptr;
};

Expression Expression::parse(std::string_view text, const std::vector<std::string>& parameters) {
  const NameGroup group{"parameters", &parameters};
  return ExpressionParser(text, std::span<const NameGroup>(&group, 1)).parse();
}

Expression Expression::parse(std::string_view text, std::span<const NameGroup> groups) {
  return ExpressionParser(text, groups).parse();
}

bool Expression::is_shallow() const {
  const auto is_leaf = [this](int index) {
    const Op op = nodes_[static_cast<size_t>(index)].op;
    return op == Op::Number || op == Op::Name;
  };
  const Node& root = nodes_[static_cast<size_t>(root_)];
  switch (root.op) {
    case Op::Number:
    case Op::Name: return true;
    case Op::Negate: return is_leaf(root.a);
    case Op::Add:
    case Op::Subtract:
    case Op::Multiply:
    case Op::Divide: return is_leaf(root.a) && is_leaf(root.b);
    default: return false;
  }
}

std::vector<int> Expression::names_in(int group) const {
  std::vector<int> used;
  for (const Node& n : nodes_) {
    if (n.op == Op::Name && n.group == group) used.push_back(n.index);
  }
  std::sort(used.begin(), used.end());
  used.erase(std::unique(used.begin(), used.end()), used.end());
  return used;
}

}  // namespace saltus
