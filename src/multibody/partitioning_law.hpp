#pragma once
// The partitioning impact law (theory multibody.md 9.2, docs/multibody.md "Impact laws"): the
// contact point's velocity along the normal, read from the independent velocities, becomes -e
// times itself; the other independent velocities are kept. It applies where the point's
// coordinates are coordinates of the model: a planar point's (x, y), or a spatial body's frame
// origin (x, y, z) when the contact point is that origin (Model::validate refuses other points).
#include <saltus/core/error.hpp>

#include <fmt/format.h>

#include <array>
#include <cmath>
#include <vector>

#include "position_analysis.hpp"

namespace saltus::multibody::detail {

/// The coordinates the law of contact c acts on, with the unit normal's components along them
/// (zero components left out: those coordinates need not be independent).
template <class S>
struct LawAxes {
  std::array<int, 3> coordinate{};
  std::array<S, 3> normal{};
  int size = 0;
};

template <class S>
LawAxes<S> partitioning_axes(const Model& m, const Contact& c, In<S> p) {
  using std::sqrt;
  const bool spatial = c.kind == ContactKind::PointPlane;
  const int dim = spatial ? 3 : 2;
  const int offset = spatial ? m.spatial_offset(c.spatial_body) : m.point_offset(c.point.index);
  std::array<S, 3> n{};
  if (spatial) {
    n = {value_of<S>(c.plane_normal.x, p), value_of<S>(c.plane_normal.y, p), value_of<S>(c.plane_normal.z, p)};
  } else {
    n = {value_of<S>(c.normal_x, p), value_of<S>(c.normal_y, p), S(0.0)};
  }
  const S length = sqrt(n[0] * n[0] + n[1] * n[1] + n[2] * n[2]);
  LawAxes<S> axes;
  for (int i = 0; i < dim; ++i) {
    if (real_part(n[static_cast<size_t>(i)]) == 0.0) continue;
    axes.coordinate[static_cast<size_t>(axes.size)] = offset + i;
    axes.normal[static_cast<size_t>(axes.size)] = n[static_cast<size_t>(i)] / length;
    ++axes.size;
  }
  return axes;
}

/// The coordinates the law of contact c needs independent (at the nominal normal's pattern).
inline std::vector<int> partitioning_coordinates(const Model& m, const Contact& c, const Eigen::VectorXd& p) {
  const LawAxes<double> axes = partitioning_axes<double>(m, c, p);
  return std::vector<int>(axes.coordinate.begin(), axes.coordinate.begin() + axes.size);
}

/// Post-impact independent velocities u-dot by the partitioning law of contact c.
template <class S>
VectorX<S> partitioned_velocity(const Model& m, const Partition& part, const Contact& c, VectorX<S> u_dot, In<S> p) {
  const LawAxes<S> axes = partitioning_axes<S>(m, c, p);
  std::array<int, 3> slot{};
  S normal_velocity(0.0);
  for (int i = 0; i < axes.size; ++i) {
    const int k = axes.coordinate[static_cast<size_t>(i)];
    slot[static_cast<size_t>(i)] = part.slot(k);
    if (slot[static_cast<size_t>(i)] < 0) {
      throw ModelError(fmt::format("contact '{}': the partitioning impact law needs coordinate '{}' "
                                   "to be independent (use law: impulse, or list it in 'independent')",
                                   c.name, m.coordinate_names()[static_cast<size_t>(k)]));
    }
    normal_velocity += axes.normal[static_cast<size_t>(i)] * u_dot[slot[static_cast<size_t>(i)]];
  }
  const S change = -(S(1.0) + value_of<S>(c.restitution, p)) * normal_velocity;
  for (int i = 0; i < axes.size; ++i) u_dot[slot[static_cast<size_t>(i)]] += change * axes.normal[static_cast<size_t>(i)];
  return u_dot;
}

}  // namespace saltus::multibody::detail
