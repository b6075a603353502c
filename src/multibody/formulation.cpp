#include <saltus/multibody/formulation.hpp>

#include "failure_diagnosis.hpp"
#include "formulations.hpp"
#include "initial_checks.hpp"
#include "named_outputs.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <memory>
#include <type_traits>

namespace saltus::multibody {

namespace {

template <class X>
using ScalarOf = typename std::decay_t<X>::Scalar;

bool needs_reactions(const std::vector<CostTerm>& terms) {
  for (const CostTerm& t : terms) {
    if (t.signal == Signal::Reaction) return true;
  }
  return false;
}

/// Whether a running cost reads the accelerations, which it takes from x-dot (a reaction is
/// computed by the formulation itself).
bool reads_accelerations(const std::vector<CostTerm>& terms) {
  for (const CostTerm& t : terms) {
    if (t.signal == Signal::AX || t.signal == Signal::AY || t.signal == Signal::AZ || t.signal == Signal::Alpha) return true;
  }
  return false;
}

template <class Form>
void add_costs(Problem& pb, const Model& model, const std::shared_ptr<const Form>& form) {
  for (size_t i = 0; i < model.costs.size(); ++i) {
    const CostSpec& spec = model.costs[i];
    const bool mu = needs_reactions(spec.running);
    const bool reads_rates = reads_accelerations(spec.running);
    // Maggi's reactions come from its accelerations: a cost declared not to read x-dot takes
    // them from the state (the other formulations' reactions never read x-dot).
    const bool pass_rates = reads_rates || !std::is_same_v<Form, detail::MaggiForm>;
    auto running = [form, i, mu, pass_rates](auto t, const auto& x, const auto& xdot, const auto& p) {
      using S = ScalarOf<decltype(x)>;
      const VectorX<S> xd = xdot;
      const VectorX<S>* rates = pass_rates ? &xd : nullptr;
      const FullState<S> fs = [&] {
        if constexpr (std::is_same_v<Form, detail::DaeForm>) {
          // In Reverse a DAE form's running costs are recorded by the completed adjoint alone
          // (CompletionRateProducts::record), at the (rate) completion's state and rates.
          using Rates = detail::DaeForm::Rates;
          return form->template full_state<S>(t, x, p, rates, mu, std::is_same_v<S, Reverse> ? Rates::Completion : Rates::Integrator);
        } else {
          return form->template full_state<S>(t, x, p, rates, mu);
        }
      }();
      return cost_terms(*form->model, form->model->costs[i].running, fs, p);
    };
    // At the run's final time (a driving constraint in Maggi makes positions depend on t).
    auto terminal = [form, i](auto t, const auto& x, const auto& p) {
      using S = ScalarOf<decltype(x)>;
      const FullState<S> fs = form->template full_state<S>(t, x, p, nullptr, false);
      return cost_terms(*form->model, form->model->costs[i].terminal, fs, p);
    };
    const RateUse rates = reads_rates ? RateUse::Reads : RateUse::Ignores;
    if (!spec.running.empty() && !spec.terminal.empty()) {
      pb.add_cost(spec.name, running, terminal, rates);
    } else if (!spec.running.empty()) {
      pb.add_running_cost(spec.name, running, rates);
    } else {
      pb.add_terminal_cost(spec.name, terminal);
    }
  }
}

template <class Form>
void add_residual_monitors(Problem& pb, const std::shared_ptr<const Form>& form) {
  auto residual = [form](double t, In<double> x, In<double> p, bool velocity) {
    const FullState<double> fs = form->template full_state<double>(t, x, p, nullptr, false);
    const ConstraintSet<double> c = constraints<double>(*form->model, fs.motion, p);
    if (c.phi.size() == 0) return 0.0;  // a model without constraints (free points and bodies)
    return velocity ? c.rate(fs.motion.v).cwiseAbs().maxCoeff() : c.phi.cwiseAbs().maxCoeff();
  };
  pb.add_monitor("constraint residual |Phi|",
                 [residual](double t, In<double> x, In<double> p) { return residual(t, x, p, false); });
  pb.add_monitor("velocity residual |Phi_q v + Phi_t|",
                 [residual](double t, In<double> x, In<double> p) { return residual(t, x, p, true); });
}

/// Where an integration fails, springs whose ends coincide and impact contacts left closed are
/// named (failure_diagnosis.hpp), where the model has them.
template <class Form>
void add_failure_diagnoses(Problem& pb, const std::shared_ptr<const Form>& form) {
  const Model& model = *form->model;
  const bool has_springs =
      std::any_of(model.elements.begin(), model.elements.end(), [](const Element& e) { return e.type == ElementType::Spring; }) ||
      std::any_of(model.spatial_forces.begin(), model.spatial_forces.end(),
                  [](const SpatialForce& f) { return f.type == SpatialForceType::Spring; });
  const bool has_impacts =
      std::any_of(model.contacts.begin(), model.contacts.end(), [](const Contact& c) { return !c.persistent; });
  const auto diagnose = [form](auto&& clause) {
    return [form, clause](double t, In<double> x, In<double> p) {
      const FullState<double> fs = form->template full_state<double>(t, x, p, nullptr, false);
      return clause(*form->model, fs.motion, p);
    };
  };
  if (has_springs) pb.add_failure_diagnosis(diagnose(detail::coincident_spring_ends));
  if (has_impacts) pb.add_failure_diagnosis(diagnose(detail::closed_impact_contacts));
  // From t and p alone: the state there may be one its full state cannot be computed at.
  const bool has_distance_drivers = std::any_of(model.elements.begin(), model.elements.end(), [](const Element& e) {
    return e.type == ElementType::DistanceDriver;
  });
  if (has_distance_drivers) {
    pb.add_failure_diagnosis([model = form->model](double t, In<double>, In<double> p) {
      return detail::vanishing_driver_distances(*model, t, p);
    });
  }
}

/// The mechanism's named outputs (named_outputs.hpp), the same in every formulation.
template <class Form>
void add_named_outputs(Problem& pb, const Model& model, const std::shared_ptr<const Form>& form) {
  auto [names, units] = detail::output_names_and_units(model);
  const bool mu = detail::outputs_need_reactions(model);
  pb.set_outputs(std::move(names), std::move(units), [form, mu](auto t, const auto& x, const auto& p, auto y) {
    using S = ScalarOf<decltype(x)>;
    const FullState<S> fs = form->template full_state<S>(t, x, p, nullptr, mu);
    detail::output_values<S>(*form->model, fs, p, y);
  });
}

/// A persistent contact's events besides its impact (multibody.md 9.3-9.5; docs/multibody.md,
/// "Persistent contact", "Friction"): the resting variant of its impact (the plastic impact that
/// activates it), its release and, with friction, its stick and slip.
template <class Form>
void add_persistent_events(Problem& pb, const std::shared_ptr<const Form>& form, int c, EventBuilder& impact) {
  using Events = detail::ContactEvents<Form>;
  const Contact& contact = form->contact(c);
  // A persistent contact may start closed and pulled away from its line (not active): its
  // guard is zero at t0 and grows only at second order.
  impact.starts_on_guard();
  impact.rests_in(0, [form, c](auto t, const auto& x, const auto& p, auto x_plus) {
    using S = ScalarOf<decltype(x)>;
    Events::template rest<S>(*form, c, t, x, p, x_plus);
  });
  pb.add_event(contact.name + " release", Direction::Falling,
               [form, c](auto t, const auto& x, const auto& p) {
                 using S = ScalarOf<decltype(x)>;
                 return Events::template release_guard<S>(*form, c, t, x, p);
               })
      .jump([form, c](auto t, const auto& x, const auto& p, auto x_plus) {
        using S = ScalarOf<decltype(x)>;
        Events::template release<S>(*form, c, t, x, p, x_plus);
      });
  if (!contact.frictional()) return;
  // Stick and slip alternating ever faster: the tangential velocity's integration noise crossing
  // zero next to the switch (index3's velocities are out of its error test), not a bounce that
  // a resting variant would settle.
  const std::string chatter = fmt::format(
      "contact '{}' sticks and slips again ever faster, its tangential velocity within the integration's noise of "
      "zero; tighten rtol, or, in index3 (its velocities are out of the error test), use index1, ggl or "
      "stabilized_index1",
      contact.name);
  pb.add_event(contact.name + " stick", Direction::Falling,
               [form, c](auto t, const auto& x, const auto& p) {
                 using S = ScalarOf<decltype(x)>;
                 return Events::template stick_guard<S>(*form, c, t, x, p);
               })
      .jump([form, c](auto t, const auto& x, const auto& p, auto x_plus) {
        using S = ScalarOf<decltype(x)>;
        Events::template stick<S>(*form, c, t, x, p, x_plus);
      })
      .zeno_remedy(chatter);
  pb.add_event(contact.name + " slip", Direction::Falling,
               [form, c](auto t, const auto& x, const auto& p) {
                 using S = ScalarOf<decltype(x)>;
                 return Events::template slip_guard<S>(*form, c, t, x, p);
               })
      .jump([form, c](auto t, const auto& x, const auto& p, auto x_plus) {
        using S = ScalarOf<decltype(x)>;
        Events::template slip<S>(*form, c, t, x, p, x_plus);
      })
      .zeno_remedy(chatter);
}

/// The impact event of contact c (its guard, its impact law, then the contact regimes settled)
/// and, for a persistent contact, add_persistent_events.
template <class Form>
void add_contact_events(Problem& pb, const std::shared_ptr<const Form>& form, int c) {
  using Events = detail::ContactEvents<Form>;
  EventBuilder impact = pb.add_event(form->contact(c).name, Direction::Falling,
                                     [form, c](auto t, const auto& x, const auto& p) {
                                       using S = ScalarOf<decltype(x)>;
                                       return Events::template guard<S>(*form, c, t, x, p);
                                     });
  impact.jump([form, c](auto t, const auto& x, const auto& p, auto x_plus) {
    using S = ScalarOf<decltype(x)>;
    Events::template impact<S>(*form, c, t, x, p, x_plus);
  });
  if (form->contact(c).persistent) add_persistent_events<Form>(pb, form, c, impact);
}

/// Maggi's switch of independent coordinates when the current set degrades (MaggiForm).
void add_repartition_event(Problem& pb, const std::shared_ptr<const detail::MaggiForm>& form) {
  pb.add_event("repartition", Direction::Falling,
               [form](auto t, const auto& x, const auto& p) {
                 using S = ScalarOf<decltype(x)>;
                 return form->template repartition_guard<S>(t, x, p);
               })
      .jump([form](auto t, const auto& x, const auto& p, auto x_plus) {
        using S = ScalarOf<decltype(x)>;
        form->template repartition<S>(t, x, p, x_plus);
      });
}

/// The formulation's main linear system and how it is solved: sparse by KLU from
/// kSparseSolveMinRows rows, else dense LU (active persistent contacts add rows to a KKT matrix).
std::string matrix_path(const Model& model, FormulationType type) {
  const int n = model.n_coordinates();
  const bool reduced = type == FormulationType::Penalty || type == FormulationType::Maggi;
  const int rows = reduced ? n : n + model.n_constraints();
  const char* name = type == FormulationType::Penalty ? "penalty matrix" : type == FormulationType::Maggi ? "matrix [Phi_q; B]" : "KKT matrix";
  return fmt::format("{} {} x {} {}", name, rows, rows, rows >= kSparseSolveMinRows ? "sparse (KLU)" : "dense (LU)");
}

/// Whether the model has a compliant contact (SpatialForceType::CompliantContact).
bool has_compliant_contacts(const Model& model) {
  return std::any_of(model.spatial_forces.begin(), model.spatial_forces.end(),
                     [](const SpatialForce& f) { return f.type == SpatialForceType::CompliantContact; });
}

template <class Form>
Problem build(const Model& model, std::shared_ptr<const Form> form, const FormulationSettings& settings) {
  const char* kind = model.spatial_bodies.empty() ? "planar" : "spatial";
  // The file's own description first (Python's Model.description, the report's first line).
  const std::string described = model.description.empty() ? "" : model.description + "; ";
  Problem pb(model.name, fmt::format("{}{} multibody model ({} formulation, {}{})", described, kind, to_string(settings.type),
                                     matrix_path(model, settings.type),
                                     model.source.empty() ? "" : ", from " + model.source));
  pb.set_states(form->state_names());
  if constexpr (std::is_same_v<Form, detail::MaggiForm>) {
    if (form->repartitions()) pb.set_state_names_at([form](In<double> x) { return form->state_names_at(x); });
  }
  // Their bounds are checked with the model's domains (Model::check_domains).
  for (const Parameter& par : model.parameters) pb.add_parameter(par.name, par.nominal, par.description);
  pb.set_initial_state([form](const auto& p, auto x0) {
    using S = ScalarOf<decltype(p)>;
    form->template initial_state<S>(p, x0);
  });
  if constexpr (std::is_same_v<Form, detail::DaeForm>) {
    // A DAE on IDAS: the residual, the algebraic multipliers and the model's completion.
    pb.set_algebraic_states(form->algebraic_names());
    const auto residual = [form](auto t, const auto& x, const auto& xdot, const auto& p, auto r) {
      using S = ScalarOf<decltype(x)>;
      form->template residual<S>(t, x, xdot, p, r);
    };
    const int mode = pb.add_residual_mode("motion", residual);
    // The sparse Newton matrix's colours and the forward sensitivities' directions share one
    // assembly per block (docs/benchmarks.md, "Block tangents").
    pb.set_block_residual_tangents(mode, residual);
    const auto completion = [form](auto t, const auto& guess, const auto& p, auto x, auto xdot) {
      using S = ScalarOf<decltype(guess)>;
      form->template completion<S>(t, guess, p, x, xdot);
    };
    pb.set_completion(mode, completion);
    pb.set_block_completion_tangents(mode, completion);
    pb.set_rate_completion(mode, [form](Reverse t, In<Reverse> guess, In<Reverse> p, Out<Reverse> x, Out<Reverse> xdot) {
      form->template rate_completion<Reverse>(t, guess, p, x, xdot);
    });
  } else {
    const auto rhs = [form](auto t, const auto& x, const auto& p, auto xdot) {
      using S = ScalarOf<decltype(x)>;
      form->template rhs<S>(t, x, p, xdot);
    };
    // The forward sensitivities' directions share one assembly and factorization per block
    // (docs/benchmarks.md, "Block tangents").
    pb.set_block_tangents(pb.add_mode("motion", rhs), rhs);
  }
  // A mechanism's one mode is the model file's: a message about it found during a run (a rate
  // that is not finite at the start) names the file.
  if (!model.source.empty()) pb.declare_mode_at(0, model.source);
  for (size_t i = 0; i < model.contacts.size(); ++i) add_contact_events<Form>(pb, form, static_cast<int>(i));
  if constexpr (std::is_same_v<Form, detail::MaggiForm>) {
    if (form->repartitions()) add_repartition_event(pb, form);
  }
  add_costs<Form>(pb, model, form);
  add_named_outputs<Form>(pb, model, form);
  if (model.n_constraints() > 0) add_residual_monitors<Form>(pb, form);
  add_failure_diagnoses<Form>(pb, form);
  Options& o = pb.options();
  o.t0 = model.t0;
  o.tf = model.tf;
  o.rtol = model.rtol;
  o.atol = model.atol;
  o.n_outputs = model.n_outputs;
  // The penalty form's stiff constraint directions carry near-zero adjoint components that a
  // state-sized absolute tolerance would make the backward pass resolve (Options).
  // Likewise the forward sensitivities' stiff directions (Options::sensitivity_atol_from_states).
  // And index3's (Options::adjoint_atol_from_costs): the same accuracy in a third to half the
  // backward steps, and a large cost no longer makes its backward pass give up.
  o.adjoint_atol_from_costs = settings.type == FormulationType::Penalty || settings.type == FormulationType::Index3;
  o.sensitivity_atol_from_states = settings.type == FormulationType::Penalty;
  o.motion_first_step_at_restarts = settings.type == FormulationType::Index3;
  // The index-1 and Maggi forms solve their constraints inside the right-hand side: their Newton
  // matrix is well conditioned, and matrix-free GMRES beats the dense LU from 64 states on
  // (docs/benchmarks.md, the chain of rods; with forward sensitivities from 192, "The linear
  // solver of forward runs"). The penalty form is stiff: dense. The DAE forms
  // (IDAS) take Automatic as KLU on the sparse Newton matrix from Options::sparse_min_states
  // components on: their residuals couple few coordinates per equation.
  if (settings.type != FormulationType::Penalty) o.linear_solver = LinearSolver::Automatic;
  // And where GMRES would run, fixed-point iteration instead: no Krylov products at all (the
  // 64-rod chain: simulation 1.17 s -> 0.68 s, forward sensitivities 10.2 s -> 7.1 s).
  if (settings.type != FormulationType::Penalty) o.nonlinear_solver = NonlinearSolver::Automatic;
  // Except with compliant contacts, stiff by design (a tyre's spring under a wheel's mass):
  // fixed-point iteration converges only for steps below their time scale, and CVODES cut every
  // step to it (the vehicle: 11,884 steps, 1.93 s; with Newton and GMRES 1,405 steps, 0.41 s,
  // its forward sensitivities 23.4 s -> 12.1 s and its adjoint 6.65 s -> 5.37 s).
  // (The penalty form keeps its own: Newton with the dense LU, lambda held to the costs at rtol;
  // a tenth of rtol made its backward pass six times longer on fivebar_floor.)
  if (has_compliant_contacts(model) && settings.type != FormulationType::Penalty) {
    o.nonlinear_solver = NonlinearSolver::Newton;
    // Their adjoints, like the penalty form's, carry near-zero components in the contacts' stiff
    // directions, which a state-sized absolute tolerance made the backward pass resolve (the
    // vehicle's: 9,163 backward steps against 1,405 forward); lambda's tolerance scaled with each
    // cost, and a tenth of rtol, gives 2,860 steps and a gradient closer to a tight reference
    // (largest entry error 7.2e-4 against 2.9e-3; adjoint 2.2 s against 5.4 s; multibody.md).
    o.adjoint_atol_from_costs = true;
    o.adjoint_rtol_scale = 0.1;
    // Their forward sensitivities likewise in index1: the vehicle's took 6,304 steps where its
    // simulation takes 1,420, 7.2 s; with the sensitivities' absolute tolerance raised to the
    // states' scale 2,844 steps, 2.9 s, the gradient within 1.1e-5 of an rtol 1e-11 reference
    // (4.1e-6 before; the adjoint's 1.0e-4). Not in maggi: measured on the vehicle, its forward
    // run takes 42 s instead of 96 s, but its worst gradient entry moves from 3.3e-4 to 1.9e-3 of
    // an rtol 1e-10 reference (index1's: 4.4e-4).
    o.sensitivity_atol_from_states = settings.type == FormulationType::Index1;
  }
  // That floor follows the motion's own size, wherever the model sits (Model::motion_scale).
  pb.set_state_scale([form](In<double> x0) { return form->motion_scale(x0); });
  return pb;
}

/// The settings' numbers in their domains (a model file's reader checks its own fields with
/// their locations; these are the C++ API's): a negative xi or omega amplifies the constraint
/// drift instead of damping it.
void validate(const FormulationSettings& s) {
  const auto require = [](bool ok, const char* field, double value, const char* rule) {
    if (!ok) throw InputError(fmt::format("FormulationSettings::{} = {} is invalid: {}", field, value, rule));
  };
  require(s.penalty_alpha > 0.0 && std::isfinite(s.penalty_alpha), "penalty_alpha", s.penalty_alpha, "must be > 0");
  for (const auto& [field, value] : {std::pair{"penalty_xi", s.penalty_xi}, std::pair{"penalty_omega", s.penalty_omega},
                                     std::pair{"baumgarte_xi", s.baumgarte_xi}, std::pair{"baumgarte_omega", s.baumgarte_omega}}) {
    require(value >= 0.0 && std::isfinite(value), field, value, "must be >= 0");
  }
  require(s.newton_tolerance > 0.0 && std::isfinite(s.newton_tolerance), "newton_tolerance", s.newton_tolerance, "must be > 0");
  require(s.newton_iterations >= 1, "newton_iterations", s.newton_iterations, "must be >= 1");
}

/// Assembles and starts the model once in double at the parameters p, so that a model that
/// cannot run fails here as bad input, naming the model and the element, rather than as a
/// failed run inside a solver: assembly, contacts at t0, singular matrices at t0. With `notes`,
/// given positions that assembly moved far and stated initial velocities that the constraints
/// overrule are appended to it.
template <class Form>
void check_start(const Form& form, const Eigen::VectorXd& p, const FormulationSettings& settings,
                 std::vector<std::string>* notes) {
  const Model& model = *form.model;
  Eigen::VectorXd x0(form.n_states()), xdot(form.n_states());
  try {
    form.template initial_state<double>(p, x0);
  } catch (const ModelError& e) {
    detail::report_initial_state_failure(model, e.what());
  }
  if (!x0.allFinite()) {
    throw InputError(fmt::format("model '{}': the initial state is not finite", model.name));
  }
  FullState<double> start;
  try {
    start = form.template full_state<double>(model.t0, x0, p, nullptr, false);
  } catch (const ModelError& e) {
    detail::report_singular_start(model, to_string(settings.type), e.what(), p);
  }
  detail::check_redundant_rows_hold(model, start.motion, p);
  detail::check_drivers_on_their_branch(model, start.motion, p);
  detail::check_initial_contacts(model, start.motion, p, form.template contact_set<double>(x0).active);
  if (notes) {
    for (const std::string& note : detail::assembly_correction_notes(model, start.motion.q, p)) notes->push_back(note);
    for (const std::string& note : detail::initial_velocity_notes(model, form.part, start.motion, p)) {
      notes->push_back(note);
    }
  }
  try {
    if constexpr (std::is_same_v<Form, detail::DaeForm>) {
      form.template start_rates<double>(model.t0, x0, p, xdot);
    } else {
      form.template rhs<double>(model.t0, x0, p, xdot);
    }
  } catch (const ModelError& e) {
    detail::report_singular_start(model, to_string(settings.type), e.what(), p);
  }
}

/// The start checks at the nominal parameters (with their notes), and the model's domain
/// checks then the start checks as parameter checks, run by Problem::set_nominal and the
/// command's --param: a contact that starts penetrating, a stop started beyond its limit or a
/// driver off its branch is bad input at any parameter values, not only the file's.
template <class Form>
void add_start_checks(Problem& pb, const std::shared_ptr<const Form>& form, const std::shared_ptr<const Model>& model,
                      const FormulationSettings& settings) {
  for (const std::string& note : model->notes) pb.add_remark(note);
  pb.add_parameter_check([model](In<double> p) { model->check_domains(p); });
  pb.add_parameter_check([form, settings](In<double> p) { check_start(*form, Eigen::VectorXd(p), settings, nullptr); });
  // Every run over its own horizon (a --tend past the file's).
  pb.add_horizon_check([model](In<double> p, double t0, double tf) { model->check_horizon(Eigen::VectorXd(p), t0, tf); });
  // At the nominal values (the start checked here first) and at every override (--param): a
  // value given there is noted as the file's own would be (an override that assembly moved far
  // ran without a warning).
  pb.set_parameter_notes([form, settings](In<double> p) {
    std::vector<std::string> notes;
    check_start(*form, Eigen::VectorXd(p), settings, &notes);
    return notes;
  });
}

}  // namespace

Problem make_problem(const Model& model) { return make_problem(model, model.formulation); }

Problem make_problem(const Model& given, const FormulationSettings& settings) {
  given.validate();
  validate(settings);
  const Eigen::VectorXd p = given.nominal_parameters();
  const Model model = detail::with_redundant_joint_rows_left_out(given, p);
  auto shared = std::make_shared<const Model>(model);
  detail::Partition part = detail::choose_partition(model, p);
  detail::check_partitioning_laws(model, part);
  if (settings.type == FormulationType::Maggi) {
    auto form = std::make_shared<const detail::MaggiForm>(shared, part, settings);
    // The Maggi state starts at the given independent coordinates: they must assemble.
    try {
      detail::solve_positions(model, part, model.t0, detail::select(part, Eigen::VectorXd(form->q_guess)), p,
                              form->q_guess, settings);
    } catch (const ModelError& e) {
      detail::report_initial_state_failure(model, e.what());
    }
    Problem pb = build<detail::MaggiForm>(model, form, settings);
    add_start_checks(pb, form, shared, settings);
    return pb;
  }
  if (settings.type == FormulationType::GGL || settings.type == FormulationType::StabilizedIndex1 ||
      settings.type == FormulationType::Index3) {
    auto form = std::make_shared<const detail::DaeForm>(shared, part, settings);
    Problem pb = build<detail::DaeForm>(model, form, settings);
    add_start_checks(pb, form, shared, settings);
    return pb;
  }
  auto form = std::make_shared<const detail::CartesianForm>(shared, part, settings);
  Problem pb = build<detail::CartesianForm>(model, form, settings);
  add_start_checks(pb, form, shared, settings);
  return pb;
}

}  // namespace saltus::multibody
