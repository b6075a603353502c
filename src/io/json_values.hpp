#pragma once
// JSON values the result files share: non-finite numbers as null, vectors as {name: value}.
#include <Eigen/Core>
#include <nlohmann/json.hpp>

#include <cmath>
#include <string>
#include <vector>

namespace saltus::io_detail {

inline nlohmann::json finite_or_null(double v) { return std::isfinite(v) ? nlohmann::json(v) : nlohmann::json(); }

/// {names[i]: v[i]}, non-finite entries null.
inline nlohmann::json named(const std::vector<std::string>& names, const Eigen::Ref<const Eigen::VectorXd>& v) {
  nlohmann::json j = nlohmann::json::object();
  for (size_t i = 0; i < names.size(); ++i) j[names[i]] = finite_or_null(v[static_cast<Eigen::Index>(i)]);
  return j;
}

}  // namespace saltus::io_detail
