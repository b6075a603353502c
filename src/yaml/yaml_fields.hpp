#pragma once
// Reading model files (YAML) with errors that point into the file: the helpers the mechanism
// reader (multibody/model_file.cpp) and the equation reader (equations/) share. Every error is
// one InputError line "file:line:column: field: what is wrong"; the field is the path of keys
// from the root ("events.impact.jump[1]").
//
// Internal (src/): it needs yaml-cpp, which the libraries link privately. Header-only so that
// each library compiles its own inline copy and no third library is needed.
#include <saltus/core/error.hpp>
#include <saltus/core/expression.hpp>
#include <saltus/core/number_text.hpp>
#include <saltus/core/options.hpp>

#include <fmt/format.h>
#include <yaml-cpp/eventhandler.h>
#include <yaml-cpp/parser.h>
#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cstring>
#include <initializer_list>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <optional>
#include <set>
#include <span>
#include <sstream>
#include <string>
#include <vector>

namespace saltus::yaml {

/// The whole of `text` as a finite number, if it is one.
inline std::optional<double> parse_number(const std::string& text) {
  try {
    size_t used = 0;
    const double v = std::stod(text, &used);
    if (used == text.size() && std::isfinite(v)) return v;
  } catch (const std::exception&) {
  }
  return std::nullopt;
}

/// NaN or an infinity as YAML (.nan, .inf, -.Inf) or C (nan, inf, infinity) writes them.
inline bool non_finite_number(const std::string& text) {
  std::string t;
  for (const char c : text) t += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  if (!t.empty() && (t[0] == '+' || t[0] == '-')) t.erase(0, 1);
  return t == ".nan" || t == ".inf" || t == "nan" || t == "inf" || t == "infinity";
}

/// Where the first document after the first one that holds anything starts (a trailing `---`
/// holds nothing), read as parser events without building its nodes: a text of many documents
/// costs one pass, not a node tree per document (YAML::LoadAll took over 5 s on a fuzzer's).
inline std::optional<YAML::Mark> second_document(const std::string& text) {
  struct Events : YAML::EventHandler {
    std::optional<YAML::Mark> content;  // the first content of the current document
    int start = -1;                     // where the current document starts (a character count)
    void note(const YAML::Mark& mark) {
      if (!content) content = mark;
    }
    void OnDocumentStart(const YAML::Mark& mark) override {
      content.reset();
      start = mark.pos;
    }
    void OnDocumentEnd() override {}
    void OnNull(const YAML::Mark&, YAML::anchor_t) override {}
    void OnAlias(const YAML::Mark& mark, YAML::anchor_t) override { note(mark); }
    void OnScalar(const YAML::Mark& mark, const std::string&, YAML::anchor_t, const std::string&) override {
      note(mark);
    }
    void OnSequenceStart(const YAML::Mark& mark, const std::string&, YAML::anchor_t, YAML::EmitterStyle::value) override {
      note(mark);
    }
    void OnSequenceEnd() override {}
    void OnMapStart(const YAML::Mark& mark, const std::string&, YAML::anchor_t, YAML::EmitterStyle::value) override {
      note(mark);
    }
    void OnMapEnd() override {}
  };
  std::istringstream in(text);
  YAML::Parser parser(in);
  Events events;
  if (!parser.HandleNextDocument(events)) return std::nullopt;  // the first document
  // yaml-cpp 0.7 can report empty documents at one place forever (a NUL character in the text:
  // YAML::LoadAll never returns): a document that starts where the previous one did ends the walk.
  for (int previous = events.start; parser.HandleNextDocument(events); previous = events.start) {
    if (events.content) return events.content;
    if (events.start == previous) break;
  }
  return std::nullopt;
}

/// The first tab in the leading whitespace of lines first_line ... last_line of `text` (0-based),
/// if any.
inline std::optional<YAML::Mark> indentation_tab(const std::string& text, int first_line, int last_line) {
  int line = 0;
  size_t start = 0;
  while (start <= text.size() && line <= last_line) {
    for (size_t i = start; line >= first_line && i < text.size() && (text[i] == ' ' || text[i] == '\t'); ++i) {
      if (text[i] != '\t') continue;
      YAML::Mark mark = YAML::Mark::null_mark();
      mark.line = line;
      mark.column = static_cast<int>(i - start);
      return mark;
    }
    const size_t end = text.find('\n', start);
    if (end == std::string::npos) break;
    start = end + 1;
    ++line;
  }
  return std::nullopt;
}

/// The root node of YAML `text`; malformed YAML is an InputError at its line and column. A model
/// file is one document: a second one (after `---`) is refused rather than ignored.
inline YAML::Node load_text(const std::string& text, const std::string& source) {
  try {
    if (const std::optional<YAML::Mark> second = second_document(text)) {
      throw InputError(fmt::format("{}:{}:{}: a second YAML document ('---'): a model file holds one", source,
                                   second->line + 1, second->column + 1));
    }
    return YAML::Load(text);
  } catch (const YAML::ParserException& e) {
    // yaml-cpp reports a tab in the indentation where it gives up, a line later ("illegal map
    // value"): the tab itself is the reason. Only there: tabs are allowed elsewhere (in flow
    // collections, in block scalars), and one of those is not this error's reason.
    if (const std::optional<YAML::Mark> tab = indentation_tab(text, e.mark.line - 1, e.mark.line)) {
      throw InputError(fmt::format("{}:{}:{}: malformed YAML: a tab in the indentation (YAML indents with spaces only)",
                                   source, tab->line + 1, tab->column + 1));
    }
    throw InputError(fmt::format("{}:{}:{}: malformed YAML: {}", source, e.mark.line + 1, e.mark.column + 1, e.msg));
  }
}

/// `Reader(root, source).read()` for the root of the YAML `text`.
template <class Reader>
auto read_text(const std::string& text, const std::string& source) {
  const YAML::Node root = load_text(text, source);
  return Reader(root, source).read();
}

/// The contents of the model file `path`; an unreadable file is an InputError naming it.
inline std::string read_file(const std::string& path) {
  std::error_code ec;
  if (std::filesystem::is_directory(path, ec)) {
    throw InputError(fmt::format("cannot read model file '{}': it is a directory", path));
  }
  errno = 0;
  std::ifstream in(path);
  if (!in) {
    const int error = errno;
    throw InputError(error != 0 ? fmt::format("cannot read model file '{}': {}", path, std::strerror(error))
                                : fmt::format("cannot read model file '{}'", path));
  }
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

/// Field access with errors located in the file `source`.
class Fields {
 public:
  explicit Fields(std::string source) : source_(std::move(source)) {}

  const std::string& source() const { return source_; }

  /// "file:line:column" of a node (just "file" for a node without a position).
  std::string location(const YAML::Node& node, size_t column_offset = 0) const {
    const YAML::Mark mark = mark_of(node);
    if (mark.is_null()) return source_;
    return fmt::format("{}:{}:{}", source_, mark.line + 1, static_cast<size_t>(mark.column) + 1 + column_offset);
  }

  /// Where a node starts; a null mark for a key the file lacks (yaml-cpp's Mark() throws on the
  /// invalid node that a const mapping's operator[] returns for a missing key).
  static YAML::Mark mark_of(const YAML::Node& node) {
    return node.IsDefined() ? node.Mark() : YAML::Mark::null_mark();
  }

  /// `column_offset`: characters from the node's start to the offending one (a token inside it).
  [[noreturn]] void fail(const YAML::Node& node, const std::string& field, const std::string& what,
                         size_t column_offset = 0) const {
    const std::string at = location(node, column_offset);
    throw InputError(field.empty() ? fmt::format("{}: {}", at, what) : fmt::format("{}: {}: {}", at, field, what));
  }

  /// YAML parsers keep one of two equal keys without a word; a key given twice is an error.
  /// The walk is bounded: aliases can make the node graph expand exponentially (b: &b [*a, *a],
  /// c: &c [*b, *b], ...) or a cycle (&a [*a]), and a model file is shallow.
  void reject_duplicate_keys(const YAML::Node& node, const std::string& field = "") const {
    size_t nodes = 0;
    reject_duplicate_keys(node, field, 0, nodes);
  }

  /// The checks of a file's root: a mapping (`shape` names its usual keys for the message), no key
  /// twice anywhere, no unknown key at the top.
  void check_root(const YAML::Node& root, const std::string& shape, const std::set<std::string>& known) const {
    // An empty file has no position: its first line and column are where the mapping is missing.
    if (root.IsNull() && root.Mark().is_null()) {
      // Nothing in it says which kind of model it was meant to be: both are named.
      throw InputError(fmt::format("{}:1:1: the file is empty: a model file is a YAML mapping (an equation model: "
                                   "horizon:, states:, modes:, ...; a mechanism: points:, elements:, ...)",
                                   source_));
    }
    if (!root.IsMap()) fail(root, "", fmt::format("the file must be a YAML mapping ({})", shape));
    reject_duplicate_keys(root);
    check_keys(root, "", known);
  }

  /// Unknown keys of a mapping are errors listing the known ones.
  void check_keys(const YAML::Node& map, const std::string& field, const std::set<std::string>& known) const {
    // Indexing or iterating a scalar or a list as a mapping throws yaml-cpp's own exceptions.
    if (!map.IsMap()) fail(map, field, "expected a mapping");
    for (const auto& kv : map) {
      const std::string key = kv.first.as<std::string>();
      if (known.count(key) == 0) {
        std::string list;
        for (const auto& k : known) list += (list.empty() ? "" : ", ") + k;
        // A key with a parenthesis is the rest of an expression that a comma split in a flow
        // mapping ({running: max(x, 0)^2} reads as the keys 'running' and '0)^2').
        const bool split = key.find_first_of("()") != std::string::npos;
        fail(kv.first, field.empty() ? key : field + "." + key,
             fmt::format("unknown field (known: {}){}", list,
                         split ? " (quote an expression that contains a comma: \"max(x, 0)^2\")" : ""));
      }
    }
  }

  YAML::Node require(const YAML::Node& map, const std::string& key, const std::string& field) const {
    if (!map.IsMap()) fail(map, field, "expected a mapping");
    const YAML::Node n = map[key];
    if (!n) fail(map, field.empty() ? key : field + "." + key, "missing field");
    return n;
  }

  std::string scalar(const YAML::Node& n, const std::string& field) const {
    if (n.IsNull()) fail(n, field, "no value (the key is followed by nothing)");
    if (!n.IsScalar()) fail(n, field, "expected a single value");
    return n.Scalar();
  }

  /// tolerances.rtol's value `v`, read at `n`, unless it is below kMinRtol.
  double relative_tolerance(const YAML::Node& n, double v) const {
    if (v < kMinRtol) fail(n, "tolerances.rtol", fmt::format("must be at least {} (double precision's limit), got {}", kMinRtol, v));
    return v;
  }

  /// A name field that labels something (check_label), read as a string.
  std::string label(const YAML::Node& n, const std::string& field) const {
    std::string name = scalar(n, field);
    check_label(n, field, name);
    return name;
  }

  /// A name that only labels (a mode, an event, a cost, an element): any text but an empty one
  /// or one holding a control character (a line break, a tab), which would break the report's
  /// tables and the CSV rows.
  void check_label(const YAML::Node& node, const std::string& field, const std::string& name) const {
    if (name.empty()) fail(node, field, "a name may not be empty");
    const auto control = std::find_if(name.begin(), name.end(), [](char c) {
      return std::iscntrl(static_cast<unsigned char>(c)) != 0;
    });
    if (control != name.end()) {
      fail(node, escaped(field),
           fmt::format("a name may not hold a control character (a line break, a tab): byte {} of the name is "
                       "code {}",
                       control - name.begin() + 1, static_cast<int>(static_cast<unsigned char>(*control))));
    }
  }

  /// `text` with its control characters written as escapes (\n, \t, \xNN), for a message of one line.
  static std::string escaped(const std::string& text) {
    std::string out;
    for (const char c : text) {
      const auto u = static_cast<unsigned char>(c);
      if (c == '\n') {
        out += "\\n";
      } else if (c == '\t') {
        out += "\\t";
      } else if (std::iscntrl(u) != 0) {
        out += fmt::format("\\x{:02x}", u);
      } else {
        out += c;
      }
    }
    return out;
  }

  /// A name that expressions read (a parameter, a state): letters, digits and _, not starting
  /// with a digit, and none of `reserved` (names that already mean something there, with the
  /// meaning in `meaning`: "t: time, pi, der(x): rate of x").
  void check_identifier(const YAML::Node& key, const std::string& field, const std::string& name,
                        std::initializer_list<const char*> reserved, const char* meaning) const {
    const bool identifier = !name.empty() && !std::isdigit(static_cast<unsigned char>(name[0])) &&
                            std::all_of(name.begin(), name.end(), [](char c) {
                              return std::isalnum(static_cast<unsigned char>(c)) || c == '_';
                            });
    if (!identifier) fail(key, field, "a name must be letters, digits and _, not starting with a digit");
    for (const char* word : reserved) {
      if (name == word) fail(key, field, fmt::format("'{}' is reserved ({})", name, meaning));
    }
  }

  /// `true` or `false` (exactly those words).
  bool boolean(const YAML::Node& n, const std::string& field) const {
    const std::string text = scalar(n, field);
    if (text != "true" && text != "false") fail(n, field, fmt::format("expected true or false, got '{}'", text));
    return text == "true";
  }

  /// Parses the scalar `n` (its trimmed text `text`) as an expression over `groups`; an error
  /// points at the offending token.
  Expression expression(const YAML::Node& n, const std::string& field, const std::string& text,
                        std::span<const NameGroup> groups) const {
    try {
      return Expression::parse(text, groups);
    } catch (const ExpressionError& e) {
      fail(n, field, e.what(), token_column(n, e.position()));
    }
  }

  /// An error about the token at `position` of the expression `text` (the trimmed scalar `n`)
  /// that parsed but may not be used here, worded as the parser words its own errors.
  [[noreturn]] void fail_in_expression(const YAML::Node& n, const std::string& field, const std::string& text,
                                       size_t position, const std::string& what) const {
    fail(n, field, fmt::format("in expression '{}': {} (at character {})", text, what, position + 1),
         token_column(n, position));
  }

  /// A number or a constant expression ("2*pi", "1/3"), for fields that cannot depend on the
  /// names of `groups` (which are given only for a clearer message).
  double constant(const YAML::Node& n, const std::string& field, std::span<const NameGroup> groups) const {
    const std::string text = trim(scalar(n, field));
    if (const auto v = parse_number(text)) return *v;
    if (text.empty() || non_finite_number(text)) fail(n, field, fmt::format("expected a finite number, got '{}'", text));
    const Expression e = constant_expression(n, field, text, groups);
    if (!e.is_constant()) {
      fail(n, field, fmt::format("'{}' depends on parameters, but this field takes a number or a constant "
                                 "expression (such as 2*pi)",
                                 text));
    }
    const double v = e.evaluate<double>(Eigen::VectorXd());
    if (!std::isfinite(v)) fail(n, field, fmt::format("expected a finite number, got '{}' = {}", text, v));
    return v;
  }
  /// The expression `text` over `groups`. A name unknown there is reported among the constants
  /// only when it is the name the error is about without the groups as well (a field that takes
  /// no parameter: those that name one are refused by constant), else as the groups see it.
  Expression constant_expression(const YAML::Node& n, const std::string& field, const std::string& text,
                                 std::span<const NameGroup> groups) const {
    try {
      return Expression::parse(text, groups);
    } catch (const ExpressionError& with_groups) {
      try {
        Expression::parse(text, std::span<const NameGroup>());
      } catch (const ExpressionError& constants_only) {
        if (constants_only.position() == with_groups.position()) {
          fail(n, field, constants_only.what(), token_column(n, constants_only.position()));
        }
      }
      fail(n, field, with_groups.what(), token_column(n, with_groups.position()));
    }
  }


 private:
  /// Characters from the scalar node's start to `position` of its trimmed text: after the
  /// opening quote, if any, and the leading spaces.
  static size_t token_column(const YAML::Node& n, size_t position) {
    const std::string& raw = n.Scalar();
    const size_t lead = raw.find_first_not_of(" \t");
    const size_t quote = n.Tag() == "!" ? 1 : 0;
    return quote + (lead == std::string::npos ? 0 : lead) + position;
  }

  void reject_duplicate_keys(const YAML::Node& node, const std::string& field, int depth, size_t& nodes) const {
    constexpr int kMaxDepth = 32;         // a model file needs 8 (costs.c.running[0].of.at[0])
    constexpr size_t kMaxNodes = 200000;  // after aliases are expanded
    if (depth > kMaxDepth) {
      fail(node, field, fmt::format("nested more than {} levels deep (an alias inside its own anchor?)", kMaxDepth));
    }
    if (++nodes > kMaxNodes) {
      fail(node, field, fmt::format("the file expands to more than {} YAML nodes (aliases repeated?)", kMaxNodes));
    }
    if (node.IsSequence()) {
      for (size_t i = 0; i < node.size(); ++i) {
        reject_duplicate_keys(node[i], fmt::format("{}[{}]", field, i), depth + 1, nodes);
      }
      return;
    }
    if (!node.IsMap()) return;
    std::set<std::string> seen;
    for (const auto& kv : node) {
      const std::string key = kv.first.IsScalar() ? kv.first.Scalar() : "";
      const std::string path = field.empty() ? key : field + "." + key;
      if (!kv.first.IsScalar()) fail(kv.first, field, "a key must be a plain name");
      if (!seen.insert(key).second) fail(kv.first, path, "given twice (each key may appear once)");
      reject_duplicate_keys(kv.second, path, depth + 1, nodes);
    }
  }

  std::string source_;
};

}  // namespace saltus::yaml
