#include "event_log.hpp"

#include <saltus/core/error.hpp>

#include <fmt/format.h>

#include "guard_rate.hpp"

namespace saltus::detail {

EventRecord event_record(const Problem& problem, const EventValues& v, double grazing_tolerance,
                         const std::optional<Accumulation>& rest) {
  EventRecord rec;
  rec.time = v.time;
  rec.event = v.event;
  rec.name = problem.event(v.event).name;
  rec.mode_before = v.mode_before;
  rec.mode_after = v.mode_after;
  rec.state_before = v.x_minus;
  rec.state_after = v.x_plus;
  rec.guard_rate = v.guard_rate;
  rec.guard_rate_scale = v.guard_rate_scale;
  rec.grazing = v.grazing(grazing_tolerance);
  rec.rest = rest.has_value();
  if (rest) rec.accumulation_time = rest->time;
  return rec;
}

void record_sensitivities(EventRecord& rec, const Eigen::RowVectorXd& tau, const Eigen::MatrixXd& s_before,
                          const Eigen::MatrixXd& s_after, const std::optional<Accumulation>& rest,
                          const std::vector<EventRecord>& log) {
  rec.dtime_dp = tau;
  if (rest) {
    // dt_inf/dp = w_a tau_a + w_b tau_b + w_c tau_c: exact for the extrapolation.
    rec.daccumulation_dp = rest->weight_c * tau;
    if (rest->record_a >= 0) rec.daccumulation_dp += rest->weight_a * log[static_cast<size_t>(rest->record_a)].dtime_dp;
    if (rest->record_b >= 0) rec.daccumulation_dp += rest->weight_b * log[static_cast<size_t>(rest->record_b)].dtime_dp;
  }
  rec.sensitivity_before = s_before;
  rec.sensitivity_after = s_after;
}

void require_leaving_guards(const Problem& problem, const std::vector<int>& applied,
                            const std::vector<EventRecord>& log, int mode, double t, In<double> x,
                            In<double> xdot, In<double> p, double grazing_tolerance, TangentWorkspace& ws) {
  for (size_t i = 0; i < applied.size(); ++i) {
    const int k = applied[i];
    const EventRecord& rec = log[log.size() - applied.size() + i];
    if (rec.grazing || rec.rest || !problem.event(k).active_in(mode)) continue;
    const GuardRate after = dae_guard_rate(problem, k, mode, t, x, xdot, p, ws);
    if (!after.grazing(grazing_tolerance) || off_guard(problem.event(k).guard_at<double>(t, x, xdot, p), after) ||
        curves_off_guard(problem, k, mode, t, x, xdot, p, grazing_tolerance, after, ws)) {
      continue;
    }
    const Event& ev = problem.event(k);
    const std::string remedy =
        !ev.zeno_remedy.empty()
            ? ev.zeno_remedy
            : fmt::format("Saltus cannot continue past this point unless the event has a resting variant ({})",
                          kRestingVariantHint);
    throw ZenoError(fmt::format(
        "after event '{}' at t = {:.17g} the state {} stays on its guard (r-dot+ = {:.3g}, grazing against its scale {:.3g}): "
        "the motion neither leaves nor crosses it (a resting contact, or the limit of a Zeno sequence); {}",
        ev.name, t, describe_state(problem, Eigen::VectorXd(x)), after.rate, after.scale, remedy));
  }
}

void require_leaving_guards(const Problem& problem, const std::vector<int>& applied,
                            const std::vector<EventRecord>& log, int mode, double t, In<double> x, In<double> p,
                            double grazing_tolerance, TangentWorkspace& ws) {
  if (applied.empty()) return;
  Eigen::VectorXd xdot(x.size());
  problem.mode(mode).rhs.real(t, x, p, xdot);
  require_leaving_guards(problem, applied, log, mode, t, x, xdot, p, grazing_tolerance, ws);
}

int resolve_rest(const Problem& problem, const ZenoWatch& zeno, int event, int mode, double t, In<double> x,
                 In<double> p, double grazing_tolerance, TangentWorkspace& ws, std::optional<Accumulation>& rest) {
  const Event& ev = problem.event(event);
  if (ev.rest_event < 0) return event;
  rest = zeno.accumulation(event, t);
  if (!rest && jump_stays_on_guard(problem, event, mode, t, x, p, grazing_tolerance, ws)) rest = Accumulation{t};
  return rest ? ev.rest_event : event;
}

}  // namespace saltus::detail
