#pragma once
// The event log entries of a real run and the check that the motion leaves the guards it just
// crossed, shared by the explicit (CVODES) and the residual (IDAS) runs.
#include <saltus/solvers/event_transfer.hpp>
#include <saltus/solvers/solution.hpp>

#include <optional>
#include <vector>

#include "run_support.hpp"

namespace saltus::detail {

/// The log entry of a firing (times, modes, states, crossing speed, rest), without
/// sensitivities.
EventRecord event_record(const Problem& problem, const EventValues& event, double grazing_tolerance,
                         const std::optional<Accumulation>& rest);

/// Adds the forward-sensitivity part to `record`: tau, S- and S+, and where the motion comes to
/// rest the derivative of the accumulation time from the earlier firings in `log`.
void record_sensitivities(EventRecord& record, const Eigen::RowVectorXd& tau, const Eigen::MatrixXd& s_before,
                          const Eigen::MatrixXd& s_after, const std::optional<Accumulation>& rest,
                          const std::vector<EventRecord>& log);

/// Throws ZenoError if, after the firings `applied` (the last applied.size() entries of `log`),
/// the state (t, x) with rate xdot in `mode` sits on one of their guards without leaving it: the
/// next crossing is undefined. Firings that grazed or came to rest are not judged.
void require_leaving_guards(const Problem& problem, const std::vector<int>& applied,
                            const std::vector<EventRecord>& log, int mode, double t, In<double> x,
                            In<double> xdot, In<double> p, double grazing_tolerance, TangentWorkspace& ws);

/// require_leaving_guards for an explicit mode, its rate x-dot = f(t, x, p) evaluated here
/// (nothing to check if `applied` is empty).
void require_leaving_guards(const Problem& problem, const std::vector<int>& applied,
                            const std::vector<EventRecord>& log, int mode, double t, In<double> x, In<double> p,
                            double grazing_tolerance, TangentWorkspace& ws);

/// The event to apply for a firing of `event` at (t, x) in `mode` of an explicit problem: the
/// event itself, or its resting variant where the motion comes to rest (the firings accumulate
/// by `zeno`, or the jump would leave the state on the guard), with `rest` set.
int resolve_rest(const Problem& problem, const ZenoWatch& zeno, int event, int mode, double t, In<double> x,
                 In<double> p, double grazing_tolerance, TangentWorkspace& ws, std::optional<Accumulation>& rest);

}  // namespace saltus::detail
