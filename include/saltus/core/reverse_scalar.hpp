#pragma once
// saltus::Reverse, the reverse-mode AD scalar of the adjoint's vector-Jacobian products.
//
// A Reverse holds its value and a linear form c * v_k of one node k of a linearized tape: its
// derivative with respect to anything is c times node k's. A unary operation (sin, a product
// with a constant, x + 1) only scales c and records nothing; an operation of two variables
// appends one node with the indices of its operands and its partial derivatives times their
// coefficients, evaluated while recording. A sweep seeds output adjoints (times their
// coefficients) and runs the tape backwards: adj[a] += da * adj[node], adj[b] += db *
// adj[node]. Constants (plain doubles, and Reverse values built from them) have no node and
// cost nothing. Folding unary operations into coefficients: the vehicle's index-1 right-hand
// side recorded 20,904 nodes of which 17,836 were unary; its tape now holds the rest.
//
// Why not a packaged library: ADOL-C (libadolc-dev) must re-tape at every point because model
// functions branch on real_part(), and a re-tape plus sweep of a 2-state right-hand side costs
// 5.5 us against 0.25 us here; Sacado's RAD (libtrilinos-sacado-dev) returns node references
// from its operators, so a generic lambda with a deduced return type (`return x[0] - p[0];`)
// copies and slices the node and loses the derivative.
//
// The tape is thread-local: one recording at a time per thread (ReverseTape).
#include <cmath>
#include <cstdint>
#include <memory>
#include <vector>

namespace saltus {

/// An operation recorded on the tape as one block (a linear solve): its outputs are consecutive
/// nodes, and the sweep calls `backward` once, when it reaches the last of them, to add its
/// inputs' adjoints from its outputs'. Its cost then follows the operation's own structure (two
/// sparse triangular solves) instead of one node per scalar operation of an elimination.
class ReverseOperation {
 public:
  virtual ~ReverseOperation() = default;
  /// Adds to the adjoints of every input node, reading those of its outputs: `columns`
  /// adjoint vectors interleaved, node i's in adjoint[i * columns + c] (ReverseTape::sweep).
  virtual void backward(std::vector<double>& adjoint, int columns) const = 0;
};

/// The tape of the current thread.
class ReverseTape {
 public:
  struct Node {
    std::int32_t a, b;  ///< operand nodes, -1 if none
    double da, db;      ///< partial derivatives with respect to them
  };
  /// Clears the tape: the nodes of earlier recordings become invalid.
  static void clear();
  /// Appends a node and returns its index (inline: a recording is mostly pushes).
  static std::int32_t push(std::int32_t a, double da, std::int32_t b, double db);
  /// Number of nodes on the tape.
  static std::int32_t size();
  /// The nodes, size() of them (valid until the next push or clear()).
  static const Node* data();
  /// Appends `outputs` nodes for the outputs of `operation` (kept until clear()) and returns the
  /// first one's index.
  static std::int32_t push_operation(std::unique_ptr<ReverseOperation> operation, std::int32_t outputs);
  /// Node::a of an operation's output node (Node::b is the operation's index, Node::da 1 on its
  /// last output).
  static constexpr std::int32_t kOperationOutput = -2;
  /// Number of clear() calls so far: a recording made in generation g is valid while
  /// generation() == g.
  static long generation();
  /// Adjoints of every node after seeding `adjoint[node]` for the outputs: runs the tape
  /// backwards in place (adjoint has one entry per node).
  static void sweep(std::vector<double>& adjoint) { sweep(adjoint, 1); }
  /// The same for `columns` adjoint vectors at once, interleaved: node i's adjoint in column c
  /// is adjoint[i * columns + c]. One pass over the tape for all of them: the tape's reads and
  /// an operation's factorization are shared (a backward Newton product of the vehicle sweeps
  /// one column per cost).
  static void sweep(std::vector<double>& adjoint, int columns);

 private:
  /// Makes room for more nodes (doubling the storage).
  static void grow();
};

namespace detail {
/// Where the current thread's tape writes its next node. Constant-initialized and of the
/// initial-exec TLS model, so that a push reads it with one thread-pointer load: a recording is
/// about 20,000 pushes for the vehicle, and through a function returning the thread's vector
/// (with __tls_get_addr) they took 60 % of it (measured: 356 us per recording of the vehicle's
/// index-1 right-hand side). The storage behind it is the thread's vector (reverse_scalar.cpp).
struct ReverseTapeCursor {
  ReverseTape::Node* nodes = nullptr;
  std::int32_t size = 0;
  std::int32_t capacity = 0;
};
extern constinit thread_local ReverseTapeCursor reverse_tape_cursor __attribute__((tls_model("initial-exec")));
}  // namespace detail

inline std::int32_t ReverseTape::push(std::int32_t a, double da, std::int32_t b, double db) {
  detail::ReverseTapeCursor& cursor = detail::reverse_tape_cursor;
  if (cursor.size == cursor.capacity) [[unlikely]] grow();
  cursor.nodes[cursor.size] = {a, b, da, db};
  return cursor.size++;
}

inline std::int32_t ReverseTape::size() { return detail::reverse_tape_cursor.size; }
inline const ReverseTape::Node* ReverseTape::data() { return detail::reverse_tape_cursor.nodes; }

class Reverse {
 public:
  Reverse() = default;
  Reverse(double value) : value_(value) {}  // NOLINT(google-explicit-constructor): constants
  /// A new independent variable.
  static Reverse independent(double value) {
    return Reverse(value, ReverseTape::push(-1, 0.0, -1, 0.0), 1.0);
  }
  /// The value of output node `node` (ReverseTape::push_operation).
  static Reverse output(double value, std::int32_t node) { return Reverse(value, node, 1.0); }
  double value() const { return value_; }
  /// The node this variable is a multiple of (-1 for a constant).
  std::int32_t node() const { return node_; }
  /// The multiple: d(this)/d(node) (1 for an independent and an operation's output). Seeds of
  /// an output and an operation's input adjoints are scaled by it.
  double coefficient() const { return coefficient_; }
  bool is_constant() const { return node_ < 0; }

  /// Unary operation with partial `d`: the same node, its coefficient times d (no node is
  /// recorded). An operand whose partial is exactly zero (a product with a constant zero, as a
  /// projection's zero velocities give) passes no adjoint: the result is then a constant (also
  /// where the operand's coefficient is infinite, as sqrt's at 0: the old tape's behaviour).
  static Reverse unary(double value, const Reverse& x, double d) {
    if (x.node_ < 0 || d == 0.0) return Reverse(value);  // d first: an infinite coefficient times 0
    return Reverse(value, x.node_, x.coefficient_ * d);
  }
  /// Binary operation with partials `dx`, `dy`: one node when both operands pass an adjoint,
  /// otherwise a unary operation of the one that does (operands with a zero partial dropped).
  static Reverse binary(double value, const Reverse& x, double dx, const Reverse& y, double dy) {
    const bool x_passes = x.node_ >= 0 && dx != 0.0, y_passes = y.node_ >= 0 && dy != 0.0;
    if (!x_passes) return unary(value, y, dy);
    if (!y_passes) return unary(value, x, dx);
    return Reverse(value, ReverseTape::push(x.node_, x.coefficient_ * dx, y.node_, y.coefficient_ * dy), 1.0);
  }

  Reverse& operator+=(const Reverse& y);
  Reverse& operator-=(const Reverse& y);
  Reverse& operator*=(const Reverse& y);
  Reverse& operator/=(const Reverse& y);

 private:
  Reverse(double value, std::int32_t node, double coefficient) : value_(value), coefficient_(coefficient), node_(node) {}
  double value_ = 0.0;
  double coefficient_ = 1.0;
  std::int32_t node_ = -1;
  [[maybe_unused]] std::int32_t unused_ = 0;  // explicit: GCC 12 warns (-Wstringop-overflow) on fills of the padded layout
};

inline Reverse operator+(const Reverse& x) { return x; }
inline Reverse operator-(const Reverse& x) { return Reverse::unary(-x.value(), x, -1.0); }
inline Reverse operator+(const Reverse& x, const Reverse& y) {
  return Reverse::binary(x.value() + y.value(), x, 1.0, y, 1.0);
}
inline Reverse operator-(const Reverse& x, const Reverse& y) {
  return Reverse::binary(x.value() - y.value(), x, 1.0, y, -1.0);
}
inline Reverse operator*(const Reverse& x, const Reverse& y) {
  return Reverse::binary(x.value() * y.value(), x, y.value(), y, x.value());
}
inline Reverse operator/(const Reverse& x, const Reverse& y) {
  const double q = x.value() / y.value();
  return Reverse::binary(q, x, 1.0 / y.value(), y, -q / y.value());
}
inline Reverse operator+(const Reverse& x, double y) { return Reverse::unary(x.value() + y, x, 1.0); }
inline Reverse operator+(double x, const Reverse& y) { return Reverse::unary(x + y.value(), y, 1.0); }
inline Reverse operator-(const Reverse& x, double y) { return Reverse::unary(x.value() - y, x, 1.0); }
inline Reverse operator-(double x, const Reverse& y) { return Reverse::unary(x - y.value(), y, -1.0); }
inline Reverse operator*(const Reverse& x, double y) { return Reverse::unary(x.value() * y, x, y); }
inline Reverse operator*(double x, const Reverse& y) { return Reverse::unary(x * y.value(), y, x); }
inline Reverse operator/(const Reverse& x, double y) {
  return Reverse::unary(x.value() / y, x, 1.0 / y);
}
inline Reverse operator/(double x, const Reverse& y) {
  const double q = x / y.value();
  return Reverse::unary(q, y, -q / y.value());
}

inline Reverse& Reverse::operator+=(const Reverse& y) { return *this = *this + y; }
inline Reverse& Reverse::operator-=(const Reverse& y) { return *this = *this - y; }
inline Reverse& Reverse::operator*=(const Reverse& y) { return *this = *this * y; }
inline Reverse& Reverse::operator/=(const Reverse& y) { return *this = *this / y; }

// Comparisons look at values only (branches follow the recorded point).
#define SALTUS_REVERSE_COMPARISON(op)                                                         \
  inline bool operator op(const Reverse& x, const Reverse& y) { return x.value() op y.value(); } \
  inline bool operator op(const Reverse& x, double y) { return x.value() op y; }              \
  inline bool operator op(double x, const Reverse& y) { return x op y.value(); }
SALTUS_REVERSE_COMPARISON(<)
SALTUS_REVERSE_COMPARISON(>)
SALTUS_REVERSE_COMPARISON(<=)
SALTUS_REVERSE_COMPARISON(>=)
SALTUS_REVERSE_COMPARISON(==)
SALTUS_REVERSE_COMPARISON(!=)
#undef SALTUS_REVERSE_COMPARISON

// Elementary functions, found by argument-dependent lookup after `using std::sin;`.
inline Reverse sin(const Reverse& x) {
  return Reverse::unary(std::sin(x.value()), x, std::cos(x.value()));
}
inline Reverse cos(const Reverse& x) {
  return Reverse::unary(std::cos(x.value()), x, -std::sin(x.value()));
}
inline Reverse tan(const Reverse& x) {
  const double t = std::tan(x.value());
  return Reverse::unary(t, x, 1.0 + t * t);
}
inline Reverse exp(const Reverse& x) {
  const double e = std::exp(x.value());
  return Reverse::unary(e, x, e);
}
inline Reverse log(const Reverse& x) { return Reverse::unary(std::log(x.value()), x, 1.0 / x.value()); }
inline Reverse log10(const Reverse& x) {
  return Reverse::unary(std::log10(x.value()), x, 1.0 / (x.value() * std::log(10.0)));
}
inline Reverse sqrt(const Reverse& x) {
  const double s = std::sqrt(x.value());
  return Reverse::unary(s, x, 0.5 / s);
}
inline Reverse cbrt(const Reverse& x) {
  const double c = std::cbrt(x.value());
  return Reverse::unary(c, x, 1.0 / (3.0 * c * c));
}
inline Reverse abs(const Reverse& x) {
  return Reverse::unary(std::abs(x.value()), x, x.value() < 0.0 ? -1.0 : 1.0);
}
inline Reverse fabs(const Reverse& x) { return abs(x); }
inline Reverse sinh(const Reverse& x) {
  return Reverse::unary(std::sinh(x.value()), x, std::cosh(x.value()));
}
inline Reverse cosh(const Reverse& x) {
  return Reverse::unary(std::cosh(x.value()), x, std::sinh(x.value()));
}
inline Reverse tanh(const Reverse& x) {
  const double t = std::tanh(x.value());
  return Reverse::unary(t, x, 1.0 - t * t);
}
inline Reverse asin(const Reverse& x) {
  return Reverse::unary(std::asin(x.value()), x, 1.0 / std::sqrt(1.0 - x.value() * x.value()));
}
inline Reverse acos(const Reverse& x) {
  return Reverse::unary(std::acos(x.value()), x, -1.0 / std::sqrt(1.0 - x.value() * x.value()));
}
inline Reverse atan(const Reverse& x) {
  return Reverse::unary(std::atan(x.value()), x, 1.0 / (1.0 + x.value() * x.value()));
}
inline Reverse atan2(const Reverse& y, const Reverse& x) {
  const double r2 = x.value() * x.value() + y.value() * y.value();
  return Reverse::binary(std::atan2(y.value(), x.value()), y, x.value() / r2, x,
                         -y.value() / r2);
}
inline Reverse pow(const Reverse& x, double a) {
  return Reverse::unary(std::pow(x.value(), a), x, a * std::pow(x.value(), a - 1.0));
}
inline Reverse pow(double a, const Reverse& x) {
  const double v = std::pow(a, x.value());
  return Reverse::unary(v, x, v * std::log(a));
}
inline Reverse pow(const Reverse& x, const Reverse& y) {
  const double v = std::pow(x.value(), y.value());
  const double dy = x.value() > 0.0 ? v * std::log(x.value()) : 0.0;
  return Reverse::binary(v, x, y.value() * std::pow(x.value(), y.value() - 1.0), y, dy);
}
inline Reverse hypot(const Reverse& x, const Reverse& y) {
  const double h = std::hypot(x.value(), y.value());
  return Reverse::binary(h, x, x.value() / h, y, y.value() / h);
}
inline bool isfinite(const Reverse& x) { return std::isfinite(x.value()); }
inline bool isnan(const Reverse& x) { return std::isnan(x.value()); }

}  // namespace saltus
