// The Python module `saltus._saltus` (pybind11): models (built-ins, model files, equation models
// given as text), runs (simulation, forward sensitivities, adjoint, gradient checks,
// optimization) and their results as dictionaries of numpy arrays. The pure-Python package
// `saltus` (python/saltus/__init__.py) wraps it. Integration runs without the GIL. Public headers
// only (docs/python.md).
#include <saltus/core/error.hpp>
#include <saltus/core/heap_settings.hpp>
#include <saltus/core/parameter_subset.hpp>
#include <saltus/equations/equation_file.hpp>
#include <saltus/io/optimize_output.hpp>
#include <saltus/examples/builtin.hpp>
#include <saltus/multibody/formulation.hpp>
#include <saltus/multibody/model_file.hpp>
#include <saltus/multibody/shipped_models.hpp>
#include <saltus/optimize/optimize.hpp>
#include <saltus/solvers/adjoint.hpp>
#include <saltus/solvers/named_outputs.hpp>
#include <saltus/solvers/simulate.hpp>
#include <saltus/verify/gradient.hpp>

#include <fmt/format.h>

#include <cmath>

#include <pybind11/eigen.h>
#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <chrono>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace py = pybind11;
using namespace saltus;

namespace {

/// A problem with its run settings, as Python sees a model.
struct Model {
  Problem problem;
  Options options;
};

Model make_model(Problem problem) {
  Options options = problem.options();
  return Model{std::move(problem), std::move(options)};
}

/// A built-in name, a shipped mechanism's name, or a model file (equation model or mechanism,
/// `formulation` overriding the mechanism's).
Model load(const std::string& name, const std::string& formulation) {
  if (multibody::is_model_file(name) && equations::is_equation_file(name)) {
    if (!formulation.empty()) {
      throw InputError("formulation applies to mechanism model files, not to the equation model '" + name + "'");
    }
    return make_model(equations::load_equation_problem(name));
  }
  const multibody::ShippedModel* shipped = multibody::shipped_model(name);
  if (shipped || multibody::is_model_file(name)) {
    const multibody::Model model = shipped ? multibody::load_shipped_model(*shipped) : multibody::load_model(name);
    multibody::FormulationSettings settings = model.formulation;
    if (!formulation.empty()) settings.type = multibody::parse_formulation(formulation);
    return make_model(multibody::make_problem(model, settings));
  }
  examples::refuse_a_folder(name);  // before the formulation's message, which would call it an example
  if (!formulation.empty()) {
    throw InputError("formulation applies to model files (*.yaml), not to the built-in example '" + name + "'");
  }
  return make_model(examples::make_example(name));
}

py::dict named(const std::vector<std::string>& names, const Eigen::VectorXd& values) {
  py::dict d;
  for (size_t i = 0; i < names.size(); ++i) d[py::str(names[i])] = values[static_cast<Eigen::Index>(i)];
  return d;
}

/// {cost: {parameter: d cost / d parameter}}.
py::dict named_matrix(const std::vector<std::string>& rows, const std::vector<std::string>& cols,
                      const Eigen::MatrixXd& m) {
  py::dict d;
  for (size_t r = 0; r < rows.size(); ++r) {
    d[py::str(rows[r])] = named(cols, m.row(static_cast<Eigen::Index>(r)).transpose());
  }
  return d;
}

std::vector<std::string> mode_names(const Problem& pb) {
  std::vector<std::string> names;
  for (int m = 0; m < pb.n_modes(); ++m) names.push_back(pb.mode(m).name);
  return names;
}

/// S at the output times as one (n_t, n_x, n_p) array.
py::array_t<double> sensitivity_array(const std::vector<Eigen::MatrixXd>& s, int nx, int np) {
  py::array_t<double> a({static_cast<py::ssize_t>(s.size()), static_cast<py::ssize_t>(nx), static_cast<py::ssize_t>(np)});
  auto v = a.mutable_unchecked<3>();
  for (size_t k = 0; k < s.size(); ++k) {
    for (int i = 0; i < nx; ++i) {
      for (int j = 0; j < np; ++j) v(static_cast<py::ssize_t>(k), i, j) = s[k](i, j);
    }
  }
  return a;
}

template <class Run>
auto without_gil(Run&& run) {
  py::gil_scoped_release release;
  return run();
}

Eigen::VectorXd parameters_of(const Model& m) { return m.problem.nominal_parameters(); }

/// The model differentiated with respect to the parameters `wrt` only; none when `wrt` is
/// empty (then `m` itself is used, without a copy).
std::optional<Model> restricted(const Model& m, const std::vector<std::string>& wrt) {
  if (wrt.empty()) return std::nullopt;
  return Model{with_free_parameters(m.problem, wrt), m.options};
}

py::dict result_dict(const Model& model, const Solution& sol, const std::string& method,
                     OutputSensitivities output_sensitivities = OutputSensitivities::Skip) {
  const Problem& pb = model.problem;
  const auto params = pb.parameter_names();
  const auto costs = pb.cost_names();
  const auto modes = mode_names(pb);
  const bool has_gradient = method == "forward" || method == "adjoint";
  py::dict r;
  r["method"] = method;
  r["times"] = Eigen::VectorXd(Eigen::Map<const Eigen::VectorXd>(sol.times.data(), static_cast<Eigen::Index>(sol.times.size())));
  r["states"] = sol.states;
  std::vector<std::string> output_modes;
  for (int m : sol.modes) output_modes.push_back(modes[static_cast<size_t>(m)]);
  r["modes"] = output_modes;
  r["state_names"] = pb.state_names();
  r["parameter_names"] = params;
  r["cost_names"] = costs;
  r["parameters"] = named(params, pb.nominal_parameters());
  r["costs"] = named(costs, sol.costs);
  if (sol.cost_history.rows() > 0) r["cost_history"] = sol.cost_history;
  r["final_state"] = named(pb.state_names_at(sol.final_state), sol.final_state);
  py::list events;
  for (const EventRecord& e : sol.events) {
    py::dict ev;
    ev["time"] = e.time;
    ev["name"] = e.name;
    ev["mode_before"] = modes[static_cast<size_t>(e.mode_before)];
    ev["mode_after"] = modes[static_cast<size_t>(e.mode_after)];
    ev["state_before"] = named(pb.state_names(), e.state_before);
    ev["state_after"] = named(pb.state_names(), e.state_after);
    ev["grazing"] = e.grazing;
    ev["rest"] = e.rest;
    if (e.dtime_dp.size() > 0) ev["dtime_dp"] = named(params, e.dtime_dp.transpose());
    events.append(ev);
  }
  r["events"] = events;
  if (!sol.sensitivities.empty()) {
    r["sensitivities"] = sensitivity_array(sol.sensitivities, pb.n_states(), pb.n_parameters());
  }
  if (sol.cost_gradient.size() > 0 || (has_gradient && sol.cost_gradient.rows() == pb.n_costs())) {
    r["gradient"] = named_matrix(costs, params, sol.cost_gradient);  // {cost: {}} without parameters
    r["gradient_matrix"] = sol.cost_gradient;
  }
  if (sol.has_adjoint()) {
    r["initial_state_gradient"] = named_matrix(costs, pb.state_names(), sol.initial_state_gradient);
  }
  if (output_sensitivities == OutputSensitivities::Compute && pb.outputs().size() == 0) {
    throw InputError(fmt::format("output_sensitivities: '{}' has no named outputs (mechanism models have them)", pb.name()));
  }
  const OutputTrajectory y =
      without_gil([&] { return output_trajectory(pb, sol, parameters_of(model), output_sensitivities); });
  if (!y.empty()) {
    r["output_names"] = y.names;
    py::dict units;
    for (size_t k = 0; k < y.names.size(); ++k) units[py::str(y.names[k])] = y.units[k];
    r["output_units"] = units;
    r["outputs"] = y.values;
    if (!y.sensitivities.empty()) {
      r["output_sensitivities"] = sensitivity_array(y.sensitivities, static_cast<int>(y.names.size()), pb.n_parameters());
    }
  }
  py::dict stats;
  stats["integrator"] = sol.stats.integrator;
  stats["discrete"] = sol.stats.discrete;
  stats["steps"] = sol.stats.steps;
  stats["segments"] = sol.stats.segments;
  stats["linear_solver"] = sol.stats.linear_solver;
  r["stats"] = stats;
  return r;
}

py::dict estimate_dict(const Model& model, const GradientEstimate& e) {
  py::dict d;
  d["method"] = e.method;
  d["costs"] = named(model.problem.cost_names(), e.costs);
  d["gradient"] = named_matrix(model.problem.cost_names(), model.problem.parameter_names(), e.cost_gradient);
  d["gradient_matrix"] = e.cost_gradient;
  std::vector<std::string> changed;  // parameters whose perturbed runs took another event sequence
  for (size_t k = 0; k < e.event_sequence_changed.size(); ++k) {
    if (e.event_sequence_changed[k]) changed.push_back(model.problem.parameter_names()[k]);
  }
  d["event_sequence_changed"] = changed;
  d["notes"] = e.notes;
  return d;
}

void set_param(Model& m, const std::string& name, double value) { m.problem.set_nominal(name, value); }

/// An option's value as type T, or an InputError naming the option and what it takes (pybind11's
/// cast error said "Unable to cast Python instance to C++ type", a RuntimeError).
template <class T>
T option_value(const py::handle& value, const char* name, const char* expected) {
  const bool wrong_kind = std::is_arithmetic_v<T>
                              ? py::isinstance<py::str>(value) || value.is_none() || py::isinstance<py::bool_>(value)
                              : !py::isinstance<py::str>(value);
  if (!wrong_kind) {
    try {
      return value.cast<T>();
    } catch (const py::cast_error&) {
    }
  }
  throw InputError(fmt::format("{} must be {}, got {}", name, expected, py::repr(value).cast<std::string>()));
}

/// A number option as Python gives it: finite and positive (rtol, atol, tend's span), named with
/// its Python name (the library's checks name its own fields: tf, n_outputs).
double positive_option(const py::handle& value, const char* name) {
  const double v = option_value<double>(value, name, "a positive number");
  if (!(std::isfinite(v) && v > 0.0)) throw InputError(fmt::format("{} must be a positive number, got {}", name, v));
  return v;
}

/// Applies every keyword to a copy of the model's options and keeps them only if all are valid:
/// a refused value leaves the model as it was (it was kept, and every later run failed).
void set_options(Model& m, const py::kwargs& kw) {
  Options o = m.options;
  for (const auto& [key_handle, value] : kw) {
    const auto key = key_handle.cast<std::string>();
    if (key == "tend") {
      const double tend = option_value<double>(value, "tend", "a number");
      if (!(std::isfinite(tend) && tend > o.t0)) {
        throw InputError(fmt::format("tend must be a finite time after the start t0 = {}, got {}", o.t0, tend));
      }
      set_horizon(o, tend);
    } else if (key == "rtol") {
      o.rtol = positive_option(value, "rtol");
      if (o.rtol < kMinRtol) {
        throw InputError(fmt::format("rtol must be at least {} (double precision's limit), got {}", kMinRtol, o.rtol));
      }
    } else if (key == "atol") {
      o.atol = positive_option(value, "atol");  // as --atol: 0 would leave the error test no floor
      o.atol_per_state.clear();
    } else if (key == "integrator") {
      const auto name = option_value<std::string>(value, "integrator", "a string");
      if (name == "cvodes") {
        o.integrator = Integrator::Cvodes;
      } else if (name == "idas") {
        o.integrator = Integrator::Idas;
      } else if (name == "dopri5") {
        o.integrator = Integrator::Dopri5;
      } else if (name == "sdirk") {
        o.integrator = Integrator::Sdirk;
      } else if (name == "rosenbrock") {
        o.integrator = Integrator::Rosenbrock;
      } else if (name == "auto") {
        o.integrator = Integrator::Automatic;
      } else {
        throw InputError("integrator must be 'cvodes', 'idas', 'dopri5', 'sdirk', 'rosenbrock' or 'auto', got '" + name + "'");
      }
    } else if (key == "linear_solver") {
      const auto name = option_value<std::string>(value, "linear_solver", "a string");
      if (name == "dense") {
        o.linear_solver = LinearSolver::Dense;
      } else if (name == "krylov") {
        o.linear_solver = LinearSolver::Krylov;
      } else if (name == "sparse") {
        o.linear_solver = LinearSolver::Sparse;
      } else if (name == "auto") {
        o.linear_solver = LinearSolver::Automatic;
      } else {
        throw InputError("linear_solver must be 'dense', 'krylov', 'sparse' or 'auto', got '" + name + "'");
      }
    } else if (key == "nonlinear_solver") {
      const auto name = option_value<std::string>(value, "nonlinear_solver", "a string");
      if (name == "newton") {
        o.nonlinear_solver = NonlinearSolver::Newton;
      } else if (name == "fixed-point") {
        o.nonlinear_solver = NonlinearSolver::FixedPoint;
      } else if (name == "auto") {
        o.nonlinear_solver = NonlinearSolver::Automatic;
      } else {
        throw InputError("nonlinear_solver must be 'newton', 'fixed-point' or 'auto', got '" + name + "'");
      }
    } else if (key == "outputs") {
      if (!py::isinstance<py::int_>(value) || py::isinstance<py::bool_>(value)) {
        throw InputError(fmt::format("outputs must be an integer number of output times, got {}",
                                     py::repr(value).cast<std::string>()));
      }
      const int outputs = option_value<int>(value, "outputs", "an integer number of output times");
      if (outputs < 2 || outputs > kMaxOutputTimes) {
        throw InputError(fmt::format("outputs must be 2 ... {} (output times), got {}", kMaxOutputTimes, outputs));
      }
      o.output_times.clear();
      o.n_outputs = outputs;
    } else {
      throw InputError("unknown option '" + key + "' (known: tend, rtol, atol, integrator, linear_solver, nonlinear_solver, outputs)");
    }
  }
  validate(o, m.problem.n_states(), m.problem.n_parameters());
  check_run_options(m.problem, o);  // a combination every run would refuse (CVODES on a DAE)
  m.options = o;
}

py::dict check(const Model& m, const std::string& method, double fd_step, double cs_step) {
  const Eigen::VectorXd p = parameters_of(m);
  std::vector<GradientEstimate> estimates;
  const bool all = method == "all";
  if (!all && method != "fd" && method != "complex-step" && method != "adjoint") {
    // Forward sensitivities are the reference every check compares with: not a method of its own.
    throw InputError("method must be 'all', 'adjoint', 'fd' or 'complex-step', got '" + method + "'");
  }
  if (!(fd_step == 0.0 || (std::isfinite(fd_step) && fd_step > 0.0))) {
    throw InputError(fmt::format("fd_step must be a positive number (relative), or 0 for the default, got {}", fd_step));
  }
  if (!(std::isfinite(cs_step) && cs_step > 0.0)) {
    throw InputError(fmt::format("cs_step must be a positive number, got {}", cs_step));
  }
  {
    py::gil_scoped_release release;
    estimates.push_back(forward_estimate(forward_sensitivity(m.problem, p, m.options)));
    if (all || method == "adjoint") estimates.push_back(adjoint_estimate(adjoint(m.problem, p, m.options)));
    if (all || method == "fd") estimates.push_back(central_differences(m.problem, p, m.options, fd_step));
    if (all || method == "complex-step") estimates.push_back(complex_step(m.problem, p, m.options, cs_step));
  }
  py::dict d;
  py::list list;
  for (const auto& e : estimates) list.append(estimate_dict(m, e));
  d["estimates"] = list;
  if (estimates.size() > 1) {
    const GradientCheck c = compare_gradients(m.problem, estimates);
    py::dict largest;  // method -> largest relative difference against forward sensitivities
    for (size_t k = 1; k < c.methods.size(); ++k) largest[py::str(c.methods[k])] = c.max_relative_error[k];
    d["largest_relative_difference"] = largest;
  }
  return d;
}

py::dict run_optimize(const Model& m, const std::string& cost, const py::dict& vary, bool maximize,
                      const std::string& method, const std::vector<std::string>& constraints, int max_evaluations) {
  OptimizeOptions o;
  o.cost = cost;
  o.maximize = maximize;
  for (const auto& [name, bounds] : vary) {
    const auto b = bounds.cast<std::pair<double, double>>();
    o.vary.push_back(DesignVariable{name.cast<std::string>(), b.first, b.second});
  }
  for (const auto& text : constraints) o.constraints.push_back(parse_cost_constraint(text));
  if (method == "adjoint") {
    o.method = GradientMethod::Adjoint;
  } else if (method == "forward") {
    o.method = GradientMethod::Forward;
  } else {
    throw InputError("method must be 'adjoint' or 'forward', got '" + method + "'");
  }
  o.run = m.options;
  o.max_evaluations = max_evaluations;
  validate(m.problem, o);
  const OptimizeResult r = without_gil([&] { return optimize(m.problem, o); });
  // The command's --json fields (docs/optimize.md), so that both carry the same: the
  // constraints' values, each evaluation's feasibility and step (non-finite numbers None).
  py::dict d = py::module_::import("json").attr("loads")(to_json(m.problem, o, r).dump());
  for (py::handle h : d["history"]) h["index"] = h["evaluation"];  // the name this dict had first
  return d;
}

}  // namespace

PYBIND11_MODULE(_saltus, m) {
  m.doc() = "Saltus: forward and adjoint sensitivities of hybrid systems, exact through events";
  retain_freed_heap_memory();  // heap_settings.hpp: the dense formulations' matrix churn

  static py::exception<Error> error(m, "Error", PyExc_RuntimeError);
  static py::exception<InputError> input_error(m, "InputError", PyExc_ValueError);
  static py::exception<ModelError> model_error(m, "ModelError", error.ptr());
  static py::exception<SolverError> solver_error(m, "SolverError", error.ptr());
  static py::exception<ZenoError> zeno_error(m, "ZenoError", error.ptr());
  static py::exception<GrazingError> grazing_error(m, "GrazingError", error.ptr());
  py::register_exception_translator([](std::exception_ptr p) {
    try {
      if (p) std::rethrow_exception(p);
    } catch (const InputError& e) {
      PyErr_SetString(input_error.ptr(), e.what());
    } catch (const ModelError& e) {
      PyErr_SetString(model_error.ptr(), e.what());
    } catch (const SolverError& e) {
      PyErr_SetString(solver_error.ptr(), e.what());
    } catch (const ZenoError& e) {
      PyErr_SetString(zeno_error.ptr(), e.what());
    } catch (const GrazingError& e) {
      PyErr_SetString(grazing_error.ptr(), e.what());
    } catch (const Error& e) {
      PyErr_SetString(error.ptr(), e.what());
    }
  });

  m.def("builtins", [] {
    py::dict d;
    for (const auto& e : examples::builtin_examples()) d[py::str(e.name)] = e.summary;
    return d;
  }, "The built-in examples: {name: description}.");

  py::class_<Model>(m, "Model")
      .def_property_readonly("name", [](const Model& x) { return x.problem.name(); })
      .def_property_readonly("description", [](const Model& x) { return x.problem.description(); })
      .def_property_readonly("state_names", [](const Model& x) { return x.problem.state_names(); })
      .def_property_readonly("parameter_names", [](const Model& x) { return x.problem.parameter_names(); })
      .def_property_readonly("cost_names", [](const Model& x) { return x.problem.cost_names(); })
      .def_property_readonly("mode_names", [](const Model& x) { return mode_names(x.problem); })
      .def_property_readonly("parameters", [](const Model& x) { return named(x.problem.parameter_names(), parameters_of(x)); })
      .def_property_readonly("is_dae", [](const Model& x) { return x.problem.kind() == ProblemKind::Residual; })
      .def_property_readonly("options", [](const Model& x) {
        py::dict d;
        d["t0"] = x.options.t0;
        d["tend"] = x.options.tf;
        d["rtol"] = x.options.rtol;
        d["atol"] = x.options.atol;
        d["integrator"] = x.options.integrator == Integrator::Dopri5  ? "dopri5"
                          : x.options.integrator == Integrator::Sdirk ? "sdirk"
                          : x.options.integrator == Integrator::Rosenbrock ? "rosenbrock"
                          : x.options.integrator == Integrator::Idas ||
                                  (x.options.integrator == Integrator::Automatic && x.problem.kind() == ProblemKind::Residual)
                              ? "idas"
                              : "cvodes";
        d["linear_solver"] = x.options.linear_solver == LinearSolver::Dense    ? "dense"
                             : x.options.linear_solver == LinearSolver::Krylov ? "krylov"
                             : x.options.linear_solver == LinearSolver::Sparse ? "sparse"
                                                                               : "auto";
        d["nonlinear_solver"] = x.options.nonlinear_solver == NonlinearSolver::Newton       ? "newton"
                                : x.options.nonlinear_solver == NonlinearSolver::FixedPoint ? "fixed-point"
                                                                                            : "auto";
        return d;
      })
      .def("set_param", &set_param, py::arg("name"), py::arg("value"))
      .def("set_options", &set_options)
      .def("simulate", [](const Model& x) {
        const Solution s = without_gil([&] { return simulate(x.problem, parameters_of(x), x.options); });
        return result_dict(x, s, "simulation");
      })
      .def("forward", [](const Model& whole, bool output_sensitivities, const std::vector<std::string>& wrt) {
        const std::optional<Model> subset = restricted(whole, wrt);
        const Model& x = subset ? *subset : whole;
        const Solution s = without_gil([&] { return forward_sensitivity(x.problem, parameters_of(x), x.options); });
        return result_dict(x, s, "forward",
                           output_sensitivities ? OutputSensitivities::Compute : OutputSensitivities::Skip);
      }, py::arg("output_sensitivities") = false, py::arg("wrt") = std::vector<std::string>{})
      .def("adjoint", [](const Model& whole, const std::vector<std::string>& wrt) {
        const std::optional<Model> subset = restricted(whole, wrt);
        const Model& x = subset ? *subset : whole;
        const Solution s = without_gil([&] { return adjoint(x.problem, parameters_of(x), x.options); });
        return result_dict(x, s, "adjoint");
      }, py::arg("wrt") = std::vector<std::string>{})
      .def("check", &check, py::arg("method") = "all", py::arg("fd_step") = 0.0, py::arg("cs_step") = 1e-20)
      .def("optimize", &run_optimize, py::arg("cost"), py::arg("vary"), py::arg("maximize") = false,
           py::arg("method") = "adjoint", py::arg("constraints") = std::vector<std::string>{},
           py::arg("max_evaluations") = 200);

  m.def("load", [](const std::string& name, const std::string& formulation) { return load(name, formulation); },
        py::arg("name"), py::arg("formulation") = "");
  // For bench/python_loop.py: the same loop as a Python loop over model.set_param and
  // model.forward(), in C++ without converting results; returns the seconds it took.
  m.def("_loop_forward_seconds", [](Model& x, const std::string& name, const std::vector<double>& values) {
    py::gil_scoped_release release;
    const auto start = std::chrono::steady_clock::now();
    for (double v : values) {
      x.problem.set_nominal(name, v);
      (void)forward_sensitivity(x.problem, parameters_of(x), x.options);
    }
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  });
  m.def("parse_equations", [](const std::string& text, const std::string& source) {
    return make_model(equations::parse_equation_problem(text, source));
  }, py::arg("text"), py::arg("source") = "<dict>");
}
