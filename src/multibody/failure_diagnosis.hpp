#pragma once
// What a mechanism's state says about an integration that failed there (Problem::
// add_failure_diagnosis): springs whose ends all but coincide, impact contacts left closed,
// distance drivers driven through zero.
#include <saltus/multibody/kinematics.hpp>
#include <saltus/multibody/model.hpp>

#include <string>

namespace saltus::multibody::detail {

/// The springs (planar `spring` elements and spatial `spring` forces) whose length at `st` is
/// below 1e-7 of their size (the largest of the rest length, the ends' distances from the origin
/// and 1 mm), named with their lengths in one clause, or "" when there are none. There a
/// spring's direction, and with a rest length or an actuator force its force, flips as the
/// ends pass each other; a force that pulls them back from both sides makes the ends chatter
/// about coincidence, and the integrator's steps shrink until it gives up.
std::string coincident_spring_ends(const Model& m, const MotionState<double>& st, In<double> p);

/// The contacts and stops that are not persistent and whose gap at `st` is within
/// kClosedGap of zero, in one clause with the hint to make them persistent, or "": where a
/// run fails with such a contact closed, its impacts have most likely accumulated (bounces
/// ever shorter, a Zeno cascade the integrator cannot step through), and only a persistent
/// contact can come to rest. Those opening faster than kLeavingSpeed have just bounced: then
/// the clause says the failure followed an impact, not an accumulation.
std::string closed_impact_contacts(const Model& m, const MotionState<double>& st, In<double> p);

/// The distance drivers whose distance f(t) at `t` is within kVanishingDistance of zero
/// relative to their size (offset and amplitude, at least 1 mm) or below it, in one clause, or
/// "": a distance driver's row |P_a - P_b|^2 - f^2 has a zero gradient where the distance is
/// zero, so its reaction grows without bound there and the integrator gives up.
std::string vanishing_driver_distances(const Model& m, double t, In<double> p);

/// |f(t)| relative to the driver's size below which vanishing_driver_distances names it.
inline constexpr double kVanishingDistance = 1e-2;

/// |gap| [m or rad] below which closed_impact_contacts names a contact.
inline constexpr double kClosedGap = 1e-6;
/// |gap rate| [m/s or rad/s] above which a closed contact is one that has just bounced, not
/// one whose impacts accumulated (their rates shrink towards zero).
inline constexpr double kLeavingSpeed = 1e-2;

}  // namespace saltus::multibody::detail
