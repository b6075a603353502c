#pragma once
// Planar kinematics of a Model, templated on the Saltus scalar type (double, Complex, Dual,
// Reverse) so that every formulation built on it is differentiated exactly by the solvers.
//
// A kinematic quantity w(t, q) carries, along a motion with velocity v:
//   value  w,
//   jac    w_q               (rows x n, held sparse: the few coordinates w depends on),
//   rate   w_q v + w_t       (w-dot),
//   bias   w-ddot - w_q a    (everything in the second derivative but the acceleration term:
//                             (w_q v)_q v + 2 w_tq v + w_tt).
// Constraints are assembled row by row in this form: Phi, Phi_q, Phi_t and the bias, so that
// the velocity constraint is Phi_q v + Phi_t = 0 and the acceleration constraint
// Phi_q a = c with c = -bias (multibody.md section 1).
//
// Complex-step safety: no Eigen .norm() or .dot() (they conjugate); lengths are sqrt(x^2 + y^2).
#include <saltus/core/scalar.hpp>
#include <saltus/multibody/model.hpp>

#include <Eigen/Core>
#include <Eigen/SparseCore>

#include <algorithm>
#include <array>
#include <cmath>
#include <stdexcept>
#include <type_traits>
#include <vector>

namespace saltus::multibody {

template <class S>
using Vec2 = Eigen::Matrix<S, 2, 1>;
template <class S>
using MatX = Eigen::Matrix<S, Eigen::Dynamic, Eigen::Dynamic>;
/// The sparse matrices of a model (Phi_q, M, the KKT matrices): compressed rows.
template <class S>
using SparseMat = Eigen::SparseMatrix<S, Eigen::RowMajor, int>;

/// The Jacobian of a kinematic quantity over the few coordinates it depends on: entries
/// (coordinate, coefficient), the coefficient d w / d q_coordinate (a Vec2 for a vector
/// quantity, a scalar for a row). A coordinate may appear in several entries (they add), so
/// sums and products of quantities concatenate their entries. Fixed storage: at most Capacity
/// entries, no allocation; a body point depends on 3 coordinates, a difference of two on 6, a
/// product of two differences on 12.
template <class Coefficient, int Capacity>
class LocalJacobian {
 public:
  int size() const { return size_; }
  int coordinate(int k) const { return coordinates_[static_cast<size_t>(k)]; }
  const Coefficient& coefficient(int k) const { return coefficients_[static_cast<size_t>(k)]; }

  /// Adds to the entry on `coordinate` if there is one, else appends (rows whose factors share
  /// coordinates stay within Capacity).
  void add_or_merge(int coordinate, const Coefficient& coefficient) {
    for (int k = 0; k < size_; ++k) {
      if (coordinates_[static_cast<size_t>(k)] == coordinate) {
        coefficients_[static_cast<size_t>(k)] += coefficient;
        return;
      }
    }
    add(coordinate, coefficient);
  }
  void add(int coordinate, const Coefficient& coefficient) {
    if (size_ == Capacity) throw std::logic_error("LocalJacobian: more entries than its capacity");
    coordinates_[static_cast<size_t>(size_)] = coordinate;
    coefficients_[static_cast<size_t>(size_)] = coefficient;
    ++size_;
  }
  /// Adds factor * other's entries (factor maps other's coefficient to this one's).
  template <class OtherCoefficient, int OtherCapacity, class Factor>
  void add_mapped(const LocalJacobian<OtherCoefficient, OtherCapacity>& other, const Factor& map) {
    for (int k = 0; k < other.size(); ++k) add(other.coordinate(k), map(other.coefficient(k)));
  }
  template <class Scalar>
  LocalJacobian& operator*=(const Scalar& factor) {
    for (int k = 0; k < size_; ++k) coefficients_[static_cast<size_t>(k)] *= factor;
    return *this;
  }
  /// J x for a full vector x (n).
  template <class V>
  Coefficient times(const V& x) const {
    Coefficient sum = zero();
    for (int k = 0; k < size_; ++k) sum += coefficient(k) * x[coordinate(k)];
    return sum;
  }
  /// y += J^T f (y full, n): a force f on the quantity as generalized forces.
  template <class V, class F>
  void add_transposed(V& y, const F& f) const {
    for (int k = 0; k < size_; ++k) y[coordinate(k)] += inner(coefficient(k), f);
  }

 private:
  static Coefficient zero() {
    if constexpr (std::is_arithmetic_v<Coefficient> || !requires { Coefficient::Zero(); }) {
      return Coefficient(0.0);
    } else {
      return Coefficient::Zero();
    }
  }
  template <class F>
  static auto inner(const Coefficient& c, const F& f) {
    if constexpr (requires { Coefficient::RowsAtCompileTime; }) {
      auto sum = c[0] * f[0];
      for (int i = 1; i < Coefficient::RowsAtCompileTime; ++i) sum += c[i] * f[i];
      return sum;
    } else {
      return c * f;
    }
  }
  std::array<int, Capacity> coordinates_{};
  std::array<Coefficient, Capacity> coefficients_{};
  int size_ = 0;
};

/// d w / dq of a planar vector quantity (2 x n, sparse).
template <class S>
using VectorJacobian = LocalJacobian<Vec2<S>, 6>;
/// d w / dq of a scalar quantity (1 x n, sparse).
template <class S>
using RowJacobian = LocalJacobian<S, 16>;

/// The dense form of a row Jacobian (n entries): for tests and small dense paths.
template <class S>
VectorX<S> dense_row(const RowJacobian<S>& jac, int n) {
  VectorX<S> row = VectorX<S>::Zero(n);
  jac.add_transposed(row, S(1.0));
  return row;
}

template <class S>
S value_of(const Value& v, In<S> p) {
  return v.template at<S>(p);
}

/// The state of the motion at which kinematics are evaluated.
template <class S>
struct MotionState {
  S t;
  VectorX<S> q, v;
};

/// A planar vector quantity (a point position or a body-fixed direction).
template <class S>
struct Kin2 {
  Vec2<S> value, rate, bias;
  VectorJacobian<S> jac;
};

template <class S>
Vec2<S> perp(const Vec2<S>& w) {
  return Vec2<S>(-w[1], w[0]);
}

/// A(theta) w: rotation of a body-frame vector into the global frame.
template <class S>
Vec2<S> rotate(const S& theta, const Vec2<S>& w) {
  using std::cos;
  using std::sin;
  const S c = cos(theta), s = sin(theta);
  return Vec2<S>(c * w[0] - s * w[1], s * w[0] + c * w[1]);
}

/// A vector fixed on body `body` (given in its frame), or a constant global vector (body -1).
/// With `with_origin` it is the body point r + A w instead of the direction A w.
template <class S>
Kin2<S> body_vector(const Model& m, const MotionState<S>& st, int body, const Vec2<S>& w,
                    bool with_origin) {
  Kin2<S> k;
  if (body < 0) {
    k.value = w;
    k.rate.setZero();
    k.bias.setZero();
    return k;
  }
  const int o = m.body_offset(body);
  const S theta = st.q[o + 2], omega = st.v[o + 2];
  const Vec2<S> aw = rotate(theta, w);
  const Vec2<S> daw = perp(aw);  // d(A w)/d(theta)
  k.value = aw;
  k.rate = omega * daw;
  k.bias = -(omega * omega) * aw;
  k.jac.add(o + 2, daw);
  if (with_origin) {
    k.value += Vec2<S>(st.q[o], st.q[o + 1]);
    k.rate += Vec2<S>(st.v[o], st.v[o + 1]);
    k.jac.add(o, Vec2<S>(S(1.0), S(0.0)));
    k.jac.add(o + 1, Vec2<S>(S(0.0), S(1.0)));
  }
  return k;
}

/// Position of a point reference.
template <class S>
Kin2<S> point_kinematics(const Model& m, const MotionState<S>& st, const PointRef& r, In<S> p) {
  const Vec2<S> local(value_of<S>(r.x, p), value_of<S>(r.y, p));
  switch (r.kind) {
    case PointRef::Kind::Ground:
      return body_vector<S>(m, st, -1, local, true);
    case PointRef::Kind::Body:
      return body_vector<S>(m, st, r.index, local, true);
    case PointRef::Kind::Point: {
      Kin2<S> k;
      const int o = m.point_offset(r.index);
      k.value = Vec2<S>(st.q[o], st.q[o + 1]);
      k.rate = Vec2<S>(st.v[o], st.v[o + 1]);
      k.bias.setZero();
      k.jac.add(o, Vec2<S>(S(1.0), S(0.0)));
      k.jac.add(o + 1, Vec2<S>(S(0.0), S(1.0)));
      return k;
    }
  }
  return {};
}

template <class S>
Kin2<S> difference(const Kin2<S>& a, const Kin2<S>& b) {
  Kin2<S> d{a.value - b.value, a.rate - b.rate, a.bias - b.bias, a.jac};
  d.jac.add_mapped(b.jac, [](const Vec2<S>& c) { return Vec2<S>(-c); });
  return d;
}

/// One scalar constraint row (or any scalar kinematic quantity).
template <class S>
struct KinRow {
  S value;
  RowJacobian<S> jac;  ///< 1 x n, sparse
  S rate;          ///< jac v + phi_t
  S phi_t;
  S bias;
};

/// a^T b of two vector quantities (a product rule for every field).
template <class S>
KinRow<S> dot(const Kin2<S>& a, const Kin2<S>& b) {
  KinRow<S> r;
  r.value = a.value[0] * b.value[0] + a.value[1] * b.value[1];
  const auto along = [](const Vec2<S>& w) {
    return [&w](const Vec2<S>& c) { return S(c[0] * w[0] + c[1] * w[1]); };
  };
  r.jac.add_mapped(a.jac, along(b.value));
  r.jac.add_mapped(b.jac, along(a.value));
  r.rate = a.rate[0] * b.value[0] + a.rate[1] * b.value[1] + a.value[0] * b.rate[0] +
           a.value[1] * b.rate[1];
  r.phi_t = S(0.0);
  r.bias = a.bias[0] * b.value[0] + a.bias[1] * b.value[1] +
           S(2.0) * (a.rate[0] * b.rate[0] + a.rate[1] * b.rate[1]) + a.value[0] * b.bias[0] +
           a.value[1] * b.bias[1];
  return r;
}

/// One component of a vector quantity as a row.
template <class S>
KinRow<S> component(const Kin2<S>& a, int i) {
  KinRow<S> r{a.value[i], {}, a.rate[i], S(0.0), a.bias[i]};
  r.jac.add_mapped(a.jac, [i](const Vec2<S>& c) { return c[i]; });
  return r;
}

/// Sparse rows stacked into a matrix: whole sparse matrices and row Jacobians, top to bottom,
/// written straight into compressed rows (a row Jacobian's entries sorted by coordinate, those on
/// one coordinate added): no triplets, no sort of the whole matrix.
template <class S>
class SparseRowStack {
 public:
  explicit SparseRowStack(int columns, int expected_rows = 0) : columns_(columns) {
    starts_.reserve(static_cast<size_t>(expected_rows + 1));
    columns_of_.reserve(static_cast<size_t>(6 * expected_rows));
    values_.reserve(static_cast<size_t>(6 * expected_rows));
    starts_.push_back(0);
  }
  template <int Capacity>
  void push(const LocalJacobian<S, Capacity>& row) {
    std::array<int, Capacity> order;
    for (int k = 0; k < row.size(); ++k) order[static_cast<size_t>(k)] = k;
    // Insertion sort of a handful of entries by coordinate.
    for (int k = 1; k < row.size(); ++k) {
      const int entry = order[static_cast<size_t>(k)];
      int at = k;
      for (; at > 0 && row.coordinate(order[static_cast<size_t>(at - 1)]) > row.coordinate(entry); --at) {
        order[static_cast<size_t>(at)] = order[static_cast<size_t>(at - 1)];
      }
      order[static_cast<size_t>(at)] = entry;
    }
    const size_t row_start = columns_of_.size();
    for (int k = 0; k < row.size(); ++k) {
      const int entry = order[static_cast<size_t>(k)];
      const int coordinate = row.coordinate(entry);
      if (columns_of_.size() > row_start && columns_of_.back() == coordinate) {
        values_.back() += row.coefficient(entry);
      } else {
        columns_of_.push_back(coordinate);
        values_.push_back(row.coefficient(entry));
      }
    }
    starts_.push_back(static_cast<int>(columns_of_.size()));
  }
  void push(const SparseMat<S>& matrix) {
    for (int i = 0; i < matrix.outerSize(); ++i) {
      for (typename SparseMat<S>::InnerIterator it(matrix, i); it; ++it) {
        columns_of_.push_back(static_cast<int>(it.col()));
        values_.push_back(it.value());
      }
      starts_.push_back(static_cast<int>(columns_of_.size()));
    }
  }
  int rows() const { return static_cast<int>(starts_.size()) - 1; }
  /// The stacked matrix (compressed rows).
  SparseMat<S> matrix() const {
    SparseMat<S> stacked(rows(), columns_);
    stacked.resizeNonZeros(static_cast<Eigen::Index>(values_.size()));
    std::copy(starts_.begin(), starts_.end(), stacked.outerIndexPtr());
    std::copy(columns_of_.begin(), columns_of_.end(), stacked.innerIndexPtr());
    std::copy(values_.begin(), values_.end(), stacked.valuePtr());
    return stacked;
  }

 private:
  int columns_;
  std::vector<int> starts_, columns_of_;
  std::vector<S> values_;
};

/// Phi, Phi_q, Phi_t and the acceleration bias of every constraint, stacked in element order.
template <class S>
struct ConstraintSet {
  VectorX<S> phi, phi_t, bias;
  SparseMat<S> jac;  ///< m x n
  /// m x n: the rows' generalized force directions (the constraint force is -force^T mu) where
  /// they differ from jac (a persistent contact sliding with friction); empty: jac.
  SparseMat<S> force;
  /// Phi-dot = Phi_q v + Phi_t.
  VectorX<S> rate(const VectorX<S>& v) const { return jac * v + phi_t; }
  const SparseMat<S>& force_directions() const { return force.rows() > 0 ? force : jac; }
  /// Phi_q dense (m x n): for the small dense analyses (rank, partitions).
  Eigen::MatrixXd dense_real_jacobian() const {
    Eigen::MatrixXd dense = Eigen::MatrixXd::Zero(jac.rows(), jac.cols());
    for (int i = 0; i < jac.outerSize(); ++i) {
      for (typename SparseMat<S>::InnerIterator it(jac, i); it; ++it) dense(it.row(), it.col()) += real_part(it.value());
    }
    return dense;
  }
};

/// Appends element e's constraint rows to `rows` (anything with push_back(KinRow<S>)).
template <class S, class Rows>
void append_rows(const Element& e, const Model& m, const MotionState<S>& st, In<S> p, Rows& rows) {
  switch (e.type) {
    case ElementType::Bar: {
      const Kin2<S> d = difference(point_kinematics(m, st, e.a, p), point_kinematics(m, st, e.b, p));
      KinRow<S> r = dot(d, d);
      const S length = value_of<S>(e.length, p);
      r.value -= length * length;
      rows.push_back(r);
      break;
    }
    case ElementType::Revolute: {
      const Kin2<S> d = difference(point_kinematics(m, st, e.a, p), point_kinematics(m, st, e.b, p));
      rows.push_back(component(d, 0));
      rows.push_back(component(d, 1));
      break;
    }
    case ElementType::PointOnLine:
    case ElementType::Prismatic: {
      // b carries the line (through P_b, along `dir` in b's frame); P_a stays on it.
      const int line_body = e.type == ElementType::Prismatic
                                ? e.body_a
                                : (e.b.kind == PointRef::Kind::Body ? e.b.index : -1);
      const Vec2<S> dir(value_of<S>(e.dir_x, p), value_of<S>(e.dir_y, p));
      const Kin2<S> normal = body_vector<S>(m, st, line_body, perp(dir), false);
      const Kin2<S> d = difference(point_kinematics(m, st, e.a, p), point_kinematics(m, st, e.b, p));
      rows.push_back(dot(normal, d));
      if (e.type == ElementType::Prismatic) {
        KinRow<S> r;
        r.value = -value_of<S>(e.angle, p);
        r.rate = S(0.0);
        r.phi_t = S(0.0);
        r.bias = S(0.0);
        if (e.body_b >= 0) {
          const int ob = m.body_offset(e.body_b) + 2;
          r.value += st.q[ob];
          r.rate += st.v[ob];
          r.jac.add(ob, S(1.0));
        }
        if (e.body_a >= 0) {
          const int oa = m.body_offset(e.body_a) + 2;
          r.value -= st.q[oa];
          r.rate -= st.v[oa];
          r.jac.add(oa, S(-1.0));
        }
        rows.push_back(r);
      }
      break;
    }
    case ElementType::CoordinateDriver: {
      const TimeValue<S> f = evaluate(e.drive, st.t, p);
      KinRow<S> r;
      r.jac.add(e.coordinate, S(1.0));
      r.value = st.q[e.coordinate] - f.f;
      r.phi_t = -f.df;
      r.rate = st.v[e.coordinate] + r.phi_t;
      r.bias = -f.ddf;
      rows.push_back(r);
      break;
    }
    case ElementType::DistanceDriver: {
      const TimeValue<S> f = evaluate(e.drive, st.t, p);
      const Kin2<S> d = difference(point_kinematics(m, st, e.a, p), point_kinematics(m, st, e.b, p));
      KinRow<S> r = dot(d, d);
      r.value -= f.f * f.f;
      r.phi_t = -S(2.0) * f.f * f.df;
      r.rate += r.phi_t;
      r.bias -= S(2.0) * (f.df * f.df + f.f * f.ddf);
      rows.push_back(r);
      break;
    }
    default:
      break;  // force and mass elements carry no constraint
  }
}

}  // namespace saltus::multibody
