#pragma once
// Seeding forward-mode AD: Dual vectors holding a value and one direction, and reading the
// tangent back. Shared by the tangent functions of explicit and residual modes.
#include <saltus/core/dual_block.hpp>
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

/// Of k directions, how many a mode's block tangents take (the rest, one Dual evaluation
/// each): all but a last block of one direction. A block costs its value once and all its
/// kTangentBlock lanes however few are seeded, so one direction costs less in a Dual (the
/// vehicle's right-hand side: double 36 us, Dual 60 us, DualBlock 131 us with 1 to 4 lanes;
/// its nine parameters' forward sensitivities took three blocks).
inline Eigen::Index blocked_directions(Eigen::Index k) { return k % kTangentBlock == 1 ? k - 1 : k; }

inline void tangent_of(const VectorX<Dual>& v, Out<double> tangent) {
  for (Eigen::Index i = 0; i < v.size(); ++i) tangent[i] = v[i].v[0];
}

}  // namespace saltus::detail
