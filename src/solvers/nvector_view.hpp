#pragma once
// An Eigen view of a serial SUNDIALS vector (no copy).
#include <nvector/nvector_serial.h>

#include <Eigen/Core>

namespace saltus::detail {

inline Eigen::Map<Eigen::VectorXd> view(N_Vector v) {
  return {N_VGetArrayPointer(v), static_cast<Eigen::Index>(N_VGetLength(v))};
}

}  // namespace saltus::detail
