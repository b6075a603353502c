#pragma once
// saltus::Reverse, the reverse-mode AD scalar of the adjoint's vector-Jacobian products.
//
// A Reverse holds its value and the index of its node on a linearized tape: each operation
// appends one node with the indices of (at most two) operands and the local partial
// derivatives, evaluated while recording. A sweep seeds output adjoints and runs the tape
// backwards: adj[a] += da * adj[node], adj[b] += db * adj[node]. Constants (plain doubles, and
// Reverse values built from them) have no node and cost nothing.
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
  /// Appends a node and returns its index.
  static std::int32_t push(std::int32_t a, double da, std::int32_t b, double db) {
    auto& n = nodes();
    n.push_back({a, b, da, db});
    return static_cast<std::int32_t>(n.size() - 1);
  }
  static std::vector<Node>& nodes();
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
};

class Reverse {
 public:
  Reverse() = default;
  Reverse(double value) : value_(value) {}  // NOLINT(google-explicit-constructor): constants
  /// A new independent variable.
  static Reverse independent(double value) {
    return Reverse(value, ReverseTape::push(-1, 0.0, -1, 0.0));
  }
  /// The value of output node `node` (ReverseTape::push_operation).
  static Reverse output(double value, std::int32_t node) { return Reverse(value, node); }
  double value() const { return value_; }
  std::int32_t node() const { return node_; }
  bool is_constant() const { return node_ < 0; }

  /// Unary operation with partial `d`. An operand whose partial is exactly zero (a product
  /// with a constant zero, as a projection's zero velocities give) passes no adjoint: the result
  /// is then a constant and records no node.
  static Reverse unary(double value, const Reverse& x, double d) {
    if (x.node_ < 0 || d == 0.0) return Reverse(value);
    return Reverse(value, ReverseTape::push(x.node_, d, -1, 0.0));
  }
  /// Binary operation with partials `dx`, `dy` (operands with a zero partial dropped, as above).
  static Reverse binary(double value, const Reverse& x, double dx, const Reverse& y, double dy) {
    const bool x_passes = x.node_ >= 0 && dx != 0.0, y_passes = y.node_ >= 0 && dy != 0.0;
    if (!x_passes) return unary(value, y, dy);
    if (!y_passes) return unary(value, x, dx);
    return Reverse(value, ReverseTape::push(x.node_, dx, y.node_, dy));
  }

  Reverse& operator+=(const Reverse& y);
  Reverse& operator-=(const Reverse& y);
  Reverse& operator*=(const Reverse& y);
  Reverse& operator/=(const Reverse& y);

 private:
  Reverse(double value, std::int32_t node) : value_(value), node_(node) {}
  double value_ = 0.0;
  std::int32_t node_ = -1;
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
