#pragma once
// An Eigen view of a serial SUNDIALS vector (no copy).
#include <nvector/nvector_serial.h>

#include <Eigen/Core>

#include <new>
#include <stdexcept>
#include <vector>

namespace saltus::detail {

inline Eigen::Map<Eigen::VectorXd> view(N_Vector v) {
  return {N_VGetArrayPointer(v), static_cast<Eigen::Index>(N_VGetLength(v))};
}

/// Hands `values` to SUNDIALS in a temporary vector shaped like `like` (SUNDIALS copies what it
/// keeps, e.g. tolerances): returns set(v)'s flag. Throws std::logic_error if the sizes differ.
template <class Set>
int pass_as_vector(N_Vector like, const std::vector<double>& values, Set set) {
  if (values.size() != static_cast<size_t>(N_VGetLength(like))) {
    throw std::logic_error("a vector handed to SUNDIALS has the wrong size");
  }
  N_Vector v = N_VClone(like);
  if (v == nullptr) throw std::bad_alloc();
  view(v) = Eigen::Map<const Eigen::VectorXd>(values.data(), static_cast<Eigen::Index>(values.size()));
  const int flag = set(v);
  N_VDestroy(v);
  return flag;
}

}  // namespace saltus::detail
