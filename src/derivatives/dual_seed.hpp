#pragma once
// Seeding forward-mode AD: Dual vectors holding a value and one direction, and reading the
// tangent back. Shared by the tangent functions of explicit and residual modes.
#include <saltus/core/scalar.hpp>

namespace saltus::detail {

inline void seed(VectorX<Dual>& out, In<double> value, In<double> direction) {
  out.resize(value.size());
  for (Eigen::Index i = 0; i < value.size(); ++i) out[i] = make_dual(value[i], direction[i]);
}

inline void seed_constant(VectorX<Dual>& out, In<double> value) {
  out.resize(value.size());
  for (Eigen::Index i = 0; i < value.size(); ++i) out[i] = Dual(value[i]);
}

/// Seeds the unit direction e_j (j < 0: none) without a temporary vector.
inline void seed_unit(VectorX<Dual>& out, In<double> value, Eigen::Index j, double weight = 1.0) {
  seed_constant(out, value);
  if (j >= 0) out[j].v[0] = weight;
}

inline void tangent_of(const VectorX<Dual>& v, Out<double> tangent) {
  for (Eigen::Index i = 0; i < v.size(); ++i) tangent[i] = v[i].v[0];
}

}  // namespace saltus::detail
