#include "guard_excursions.hpp"

#include <algorithm>
#include <cmath>
#include <limits>

namespace saltus::detail {

namespace {

/// Where `f` (of one sign at a, the other at b) changes sign, to round-off of t.
template <class F>
double sign_change(double a, double b, F f) {
  const bool positive_at_a = f(a) > 0.0;
  for (int k = 0; k < 200 && b - a > 4.0 * std::numeric_limits<double>::epsilon() * std::max(1.0, std::abs(b)); ++k) {
    const double mid = 0.5 * (a + b);
    const double value = f(mid);
    if (!std::isfinite(value)) break;
    ((value > 0.0) == positive_at_a ? a : b) = mid;
  }
  return b;  // on the far side: the crossing has happened there
}

}  // namespace

void GuardExcursions::reset() {
  has_point_ = false;
  has_before_ = false;
  side_ = 1.0;
  guard_ = -1;
  direction_ = 0;
}

bool GuardExcursions::might_reach_zero(size_t i, double t0, double r0, double t1, double r1) const {
  if (!has_before_ || !(t0 > t_before_)) return true;  // a segment's first interval: always probed
  const double pace = std::max(std::abs(r1 - r0) / (t1 - t0), std::abs(r0 - g_before_[i]) / (t0 - t_before_));
  return std::abs(r0) + std::abs(r1) <= kReach * pace * (t1 - t0);
}

double GuardExcursions::guard_at(const Problem& problem, const WatchedEvents& watched, int i, double t,
                                 In<double> p, const Interpolate& interpolate) {
  if (!interpolate(t, x_, xdot_)) return std::numeric_limits<double>::quiet_NaN();
  const double level = static_cast<size_t>(i) < watched.level.size() ? watched.level[static_cast<size_t>(i)] : 0.0;
  return problem.event(watched.events[static_cast<size_t>(i)]).guard_at<double>(t, x_, xdot_, p) - level;
}

bool GuardExcursions::examine(const Problem& problem, const WatchedEvents& watched, int i, double t0, double r0,
                              double t1, double r1, In<double> p, const Interpolate& interpolate) {
  if (r0 == 0.0 || r1 == 0.0 || (r0 > 0.0) != (r1 > 0.0) || !(t1 > t0)) return false;
  if (!might_reach_zero(static_cast<size_t>(i), t0, r0, t1, r1)) return false;
  const double s = r0 > 0.0 ? 1.0 : -1.0;
  const auto away = [&](double t) { return s * guard_at(problem, watched, i, t, p, interpolate); };
  // Everything on the interpolant of this step (r0 may come from the step before): on the same
  // side at both ends, towards zero just after t0 and away from it just before t1, so with an
  // extremum towards zero inside.
  const double h = t1 - t0, probe = 1e-3 * h;
  const double start = away(t0), end = away(t1);
  if (!(start > 0.0 && end > 0.0 && away(t0 + probe) < start && end > away(t1 - probe))) return false;
  // Its lowest point on the interpolant (golden section), stopping at the first point past zero.
  const double shrink = 0.5 * (std::sqrt(5.0) - 1.0);
  double lo = t0, hi = t1;
  double x1 = hi - shrink * (hi - lo), x2 = lo + shrink * (hi - lo);
  double f1 = away(x1), f2 = away(x2);
  for (int k = 0; k < 80 && f1 >= 0.0 && f2 >= 0.0 && std::isfinite(f1) && std::isfinite(f2); ++k) {
    if (f1 < f2) {
      hi = x2, x2 = x1, f2 = f1;
      x1 = hi - shrink * (hi - lo), f1 = away(x1);
    } else {
      lo = x1, x1 = x2, f1 = f2;
      x2 = lo + shrink * (hi - lo), f2 = away(x2);
    }
  }
  const bool first = std::isfinite(f1) && (!std::isfinite(f2) || f1 < f2);
  const double t_past = first ? x1 : x2;
  if (!((first ? f1 : f2) < 0.0)) return false;
  // The crossing the event watches: the way past zero, or only the way back.
  const int past = s > 0.0 ? -1 : 1;
  const int direction = watched.directions[static_cast<size_t>(i)];
  double t_cross = 0.0;
  int crossing = 0;
  if (direction == 0 || direction == past) {
    t_cross = sign_change(t0, t_past, away), crossing = past;
  } else if (direction == -past) {
    t_cross = sign_change(t_past, t1, away), crossing = -past;
  } else {
    return false;
  }
  if (guard_ >= 0 && t_cross >= t_cross_) return true;  // a crossing before it is marked already
  guard_ = i, direction_ = crossing, t_cross_ = t_cross, t_from_ = t0, t_to_ = t1;
  return true;
}

std::vector<int> GuardExcursions::guard_roots(std::vector<int> info, size_t n_watched) const {
  if (info.size() > n_watched && info[n_watched] != 0 && guard_ >= 0) info[static_cast<size_t>(guard_)] = direction_;
  info.resize(n_watched);
  return info;
}

double GuardExcursions::sentinel(const Problem& problem, const WatchedEvents& watched, double t, const double* g,
                                 In<double> p, const Interpolate& interpolate) {
  const size_t n = watched.events.size();
  // A new point is the run's first, or one past every earlier one inside the integrator's last
  // step (a step's end, an output time): not the integrators' look just past a root or past a
  // start on a guard (cvRcheck1/2's t + small h, an extrapolation beyond the step).
  if (!has_point_ || (t > t_last_ && interpolate(t, x_, xdot_))) {
    // Past a marked crossing the sentinel stays on its other side: no root where nothing is.
    if (guard_ >= 0) side_ = -side_;
    guard_ = -1, direction_ = 0;
    if (has_point_) {
      for (size_t i = 0; i < n; ++i) {
        // A held guard reads its band, not its value, at either end: nothing to compare.
        if (held_last_[i] != 0 || (i < watched.held.size() && watched.held[i] != 0.0)) continue;
        examine(problem, watched, static_cast<int>(i), t_last_, g_last_[i], t, g[i], p, interpolate);
      }
    }
    held_last_.assign(n, 0);
    for (size_t i = 0; i < n && i < watched.held.size(); ++i) held_last_[i] = watched.held[i] != 0.0;
    if (has_point_) {
      has_before_ = true;
      t_before_ = t_last_;
      g_before_ = g_last_;
    }
    has_point_ = true;
    t_last_ = t;
    g_last_.assign(g, g + n);
  }
  if (guard_ < 0) return side_;
  // Linear in t through the crossing: the integrator's root location finds it there.
  return side_ * (t_cross_ - t) / (t_to_ - t_from_);
}

}  // namespace saltus::detail
