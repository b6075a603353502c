#pragma once
// Bitwise equality of values, by which Saltus's caches (the last rate, the completion memo,
// the dense factorizations) recognise the point they were filled at: -0.0 and 0.0 differ (a
// model may tell them apart) and a NaN equals its own bits.
#include <cstring>
#include <type_traits>

namespace saltus {

/// The n values at a and at b have the same bits. n may be 0 (the pointers may then be null:
/// memcmp must not see them). S holds its value in its own bytes: double and the AD scalars made
/// of doubles (Dual, DualBlock, Complex, Reverse). DualBlock's padding (before its aligned
/// derivatives) is compared too: values that differ there only are told apart, never values
/// that differ, so a cache may miss but not mistake.
template <class S>
bool same_bits(const S* a, const S* b, long n) {
  static_assert(std::is_standard_layout_v<S>, "same_bits compares values held in their own bytes");
  return n == 0 || std::memcmp(a, b, static_cast<size_t>(n) * sizeof(S)) == 0;
}

/// Two values with the same bits.
template <class S>
bool same_bits(const S& a, const S& b) {
  return same_bits(&a, &b, 1);
}

/// Two dense Eigen objects of the same shape with the same bits in every entry.
template <class A, class B>
bool same_bits_entries(const A& a, const B& b) {
  return a.rows() == b.rows() && a.cols() == b.cols() && same_bits(a.data(), b.data(), static_cast<long>(a.size()));
}

}  // namespace saltus
