#pragma once
// An NLopt optimizer owned by a unique_ptr (nlopt_destroy on scope exit), for the design
// optimization (optimize.cpp) and the multipliers of its stationarity check (stationarity.cpp).
#include <nlopt.h>

#include <memory>
#include <type_traits>

namespace saltus::optimize_detail {

struct NloptDeleter {
  void operator()(nlopt_opt opt) const { nlopt_destroy(opt); }
};
using NloptHandle = std::unique_ptr<std::remove_pointer_t<nlopt_opt>, NloptDeleter>;

}  // namespace saltus::optimize_detail
