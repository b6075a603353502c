#include "run_book.hpp"

#include "event_log.hpp"

#include <fmt/format.h>

#include <cmath>

namespace saltus::detail {

RunBook::RunBook(const Problem& problem, const Eigen::VectorXd& p, const Options& options, bool sensitivities,
                 const char* phase)
    : pb_(problem),
      p_(p),
      opt_(options),
      sens_(sensitivities),
      phase_(phase),
      nc_(problem.n_costs()),
      np_(problem.n_parameters()),
      identity_p_(Eigen::MatrixXd::Identity(np_, np_)),
      cascade_(problem, options),
      zeno_(options) {}

void RunBook::start(size_t n_outputs) {
  cost_integral_ = Eigen::VectorXd::Zero(nc_);
  cost_integral_sens_ = Eigen::MatrixXd::Zero(nc_, np_);
  sol_.states.resize(static_cast<Eigen::Index>(n_outputs), pb_.n_states());
  sol_.cost_history.resize(static_cast<Eigen::Index>(n_outputs), nc_);
}

void RunBook::record_output(double t, int mode, In<double> x, const Eigen::MatrixXd& S, In<double> integrals) {
  const auto row = static_cast<Eigen::Index>(sol_.times.size());
  sol_.times.push_back(t);
  sol_.states.row(row) = x.transpose();
  sol_.cost_history.row(row) = costs_to_date(pb_, t, x, p_, integrals).transpose();
  sol_.modes.push_back(mode);
  if (sens_) sol_.sensitivities.push_back(S);
  report_progress(opt_, phase_, t, static_cast<long>(sol_.events.size()));
}

EventRecord RunBook::open_event(const EventValues& event, const std::optional<Accumulation>& rest) {
  cost_integral_ += event_cost_values(pb_, event, p_);  // the next segment's integrals start here
  return event_record(pb_, event, opt_.grazing_tolerance, rest);
}

void RunBook::book_sensitivities(EventRecord& record, const SensitivityTransfer& transfer,
                                 const Eigen::MatrixXd& s_before, const std::optional<Accumulation>& rest) {
  cost_integral_sens_ += transfer.cost_integral_jump;
  record_sensitivities(record, transfer.tau, s_before, transfer.s_plus, rest, sol_.events);
}

void RunBook::close_event(EventRecord record, double t) {
  cascade_.record(t, record.event, record.mode_before, record.state_before, record.mode_after, record.state_after);
  sol_.events.push_back(std::move(record));
}

void RunBook::finish(double tf, In<double> x, int mode, const Eigen::MatrixXd& S, TangentWorkspace& ws) {
  sol_.costs.resize(nc_);
  for (int c = 0; c < nc_; ++c) sol_.costs[c] = cost_integral_[c] + terminal_cost(pb_, c, tf, x, p_);
  sol_.final_state = x;
  sol_.final_mode = mode;
  if (sens_) {
    sol_.final_sensitivity = S;
    sol_.cost_gradient.resize(nc_, np_);
    for (int c = 0; c < nc_; ++c) {
      for (int j = 0; j < np_; ++j) {
        sol_.cost_gradient(c, j) = cost_integral_sens_(c, j) + terminal_cost_tangent(pb_, c, tf, x, p_, 0.0, S.col(j),
                                                                                     identity_p_.col(j), ws);
      }
    }
  }
  for (int c = 0; c < nc_; ++c) {
    if (!std::isfinite(sol_.costs[c])) {
      throw ModelError(fmt::format("the cost '{}' of problem '{}' is {} at t = {:.17g}", pb_.cost(c).name, pb_.name(),
                                   std::isnan(sol_.costs[c]) ? "nan" : "infinite", tf));
    }
  }
}

}  // namespace saltus::detail
