// Springs whose ends coincide and closed impact contacts where an integration failed:
// failure_diagnosis.hpp.
#include "failure_diagnosis.hpp"

#include "contacts.hpp"

#include <saltus/multibody/spatial.hpp>

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <vector>

namespace saltus::multibody::detail {

namespace {

/// "spring 'name' (length 3.1e-10 m)" when the ends at `a` and `b` are within 1e-5 of the
/// spring's size of each other, else "".
template <class Vec>
std::string when_coincident(const std::string& name, const Vec& a, const Vec& b, double rest_length) {
  const double length = (a - b).norm();
  // The chatter about coincidence is of the integration's noise, about rtol times the
  // positions, but the state where the integrator gives up may be at any phase of it: 1e-7 of
  // the spring's size missed it at 2 of 8 step limits on a chattering tether
  // (tests/test_failure_diagnosis.cpp); 1e-5 of the size (its rest length, its ends' distances
  // from the origin, at least a millimetre) holds every one, and no spring in use.
  const double size = std::max({rest_length, a.norm(), b.norm(), 1e-3});
  if (length > 1e-5 * size) return "";
  return fmt::format("spring '{}' (length {:.1e} m)", name, length);
}

}  // namespace

std::string vanishing_driver_distances(const Model& m, double t, In<double> p) {
  std::vector<std::string> drivers;
  for (const Element& e : m.elements) {
    if (e.type != ElementType::DistanceDriver) continue;
    const double distance = evaluate<double>(e.drive, t, p).f;
    const double size = std::max({std::abs(value_of<double>(e.drive.offset, p)),
                                  std::abs(value_of<double>(e.drive.amplitude, p)), 1e-3});
    if (distance > kVanishingDistance * size) continue;
    drivers.push_back(fmt::format("distance_driver '{}' (f(t) = {:.3g} m)", e.name, distance));
  }
  if (drivers.empty()) return "";
  return fmt::format("{} drives its distance to zero there: a distance constraint has no direction at zero distance "
                     "(its row's gradient vanishes and its reaction grows without bound), so f(t) must stay positive "
                     "over the run; a motion through the other point is driven by coordinate drivers",
                     fmt::join(drivers, ", "));
}

std::string coincident_spring_ends(const Model& m, const MotionState<double>& st, In<double> p) {
  std::vector<std::string> springs;
  for (const Element& e : m.elements) {
    if (e.type != ElementType::Spring) continue;
    const std::string found = when_coincident(e.name, point_kinematics<double>(m, st, e.a, p).value,
                                              point_kinematics<double>(m, st, e.b, p).value,
                                              value_of<double>(e.rest_length, p));
    if (!found.empty()) springs.push_back(found);
  }
  for (const SpatialForce& f : m.spatial_forces) {
    if (f.type != SpatialForceType::Spring) continue;
    const std::string found =
        when_coincident(f.name, spatial_vector<double>(m, st, f.body_a, value3<double>(f.point_a, p), true).value,
                        spatial_vector<double>(m, st, f.body_b, value3<double>(f.point_b, p), true).value,
                        value_of<double>(f.rest_length, p));
    if (!found.empty()) springs.push_back(found);
  }
  if (springs.empty()) return "";
  return fmt::format("the ends of {} coincide there: a spring's direction, and with a rest length or an actuator force "
                     "its force, flips as its ends pass each other, and a force that pulls them back from both sides "
                     "makes them chatter about coincidence (keep the ends apart, or give the spring rest_length 0 and "
                     "no actuator force)",
                     fmt::join(springs, ", "));
}

std::string closed_impact_contacts(const Model& m, const MotionState<double>& st, In<double> p) {
  std::vector<std::string> closed, leaving;
  for (const Contact& c : m.contacts) {
    if (c.persistent) continue;
    const KinRow<double> gap = contact_geometry<double>(m, c, st, p).gap;
    if (!(std::abs(gap.value) <= kClosedGap)) continue;
    // Bounces that accumulate come and go ever slower; a contact closed there at speed is at an
    // impact (just bounced, or about to).
    if (std::abs(gap.rate) > kLeavingSpeed) {
      leaving.push_back(fmt::format("'{}' (gap {:.1e}, {} at {:.3g})", c.name, gap.value,
                                    gap.rate > 0.0 ? "opening" : "closing", std::abs(gap.rate)));
    } else {
      closed.push_back(fmt::format("'{}' (gap {:.1e})", c.name, gap.value));
    }
  }
  if (closed.empty() && leaving.empty()) return "";
  if (closed.empty()) {
    return fmt::format("the contact{} {} {} at {} impact there, not at an accumulation of impacts: the integration "
                       "failed at it",
                       leaving.size() > 1 ? "s" : "", fmt::join(leaving, ", "), leaving.size() > 1 ? "are" : "is",
                       leaving.size() > 1 ? "their" : "an");
  }
  const bool several = closed.size() > 1;
  return fmt::format("the contact{} {} {} closed there: {} impacts have most likely accumulated, bounces ever shorter "
                     "(a Zeno cascade); `persistent: true` on {} lets {} come to rest (docs/model-files.md, contacts)",
                     several ? "s" : "", fmt::join(closed, ", "), several ? "are" : "is", several ? "their" : "its",
                     several ? "each" : "it", several ? "them" : "it");
}

}  // namespace saltus::multibody::detail
