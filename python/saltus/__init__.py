"""Saltus: forward and adjoint sensitivities of hybrid and constrained systems, exact through events.

    import saltus
    model = saltus.load("examples/fivebar.yaml")          # a model file, or a built-in name
    result = model.adjoint()                              # a Result: numpy arrays and named values
    result.gradient["drift"]["L01"]

Models: built-in examples (saltus.builtins()), mechanism and equation model files, and equation
models given as a Python dict with the fields of the YAML format (saltus.from_dict). Runs release
the GIL while they integrate. Errors raise saltus.InputError (a ValueError: bad input) or
saltus.Error subclasses (ModelError, SolverError, ZenoError, GrazingError: a failed run) with
Saltus's one-line message. See docs/python.md.
"""
import json
import numbers

from ._saltus import (Error, GrazingError, InputError, ModelError, SolverError, ZenoError,
                      builtins)
from . import _saltus

__all__ = ["load", "from_dict", "builtins", "Model", "Result", "Error", "InputError", "ModelError",
           "SolverError", "ZenoError", "GrazingError"]


class Result:
    """The outcome of a run. Attributes (numpy arrays where numeric):

    times (n_t,), states (n_t, n_x), modes (mode name per output time), costs {cost: value},
    cost_history (n_t, n_c) = each cost as if the horizon ended at that output time,
    final_state {state: value}, events (list of dicts: time, name, mode_before, mode_after,
    state_before, state_after, grazing, rest, and dtime_dp {parameter: dt/dp} for forward runs),
    and for forward runs sensitivities (n_t, n_x, n_p) = dx/dp at the output times, for forward
    and adjoint runs gradient {cost: {parameter: dcost/dp}} and gradient_matrix (n_c, n_p) (a
    model without parameters: {cost: {}} and (n_c, 0)), for adjoint runs initial_state_gradient
    {cost: {state: dcost/dx0}}.

    Mechanisms also have named outputs (docs/multibody.md, "Named outputs"): output_names,
    output_units {name: unit}, outputs (n_t, n_y) and for forward runs output_sensitivities
    (n_t, n_y, n_p) = dy/dp; result.output("p2.y") is one column, result.output_sensitivity(
    "p2.y", "e") one derivative over time.
    """

    def __init__(self, data):
        self._data = data
        for key, value in data.items():
            setattr(self, key, value)

    def __repr__(self):
        return f"<saltus.Result {self._data['method']}: costs {self._data['costs']}>"

    def output(self, name):
        """The named output `name` at the output times, shape (n_t,)."""
        index = self._output_index(name)  # a KeyError naming the known outputs (or none)
        return self.outputs[:, index]

    def output_sensitivity(self, name, parameter):
        """d output / d parameter at the output times, shape (n_t,) (forward runs)."""
        if "output_sensitivities" not in self._data:
            raise KeyError("output sensitivities come from forward runs that ask for them: "
                           "model.forward(output_sensitivities=True)")
        if parameter not in self.parameter_names:
            raise KeyError(f"unknown parameter '{parameter}' (known: {', '.join(self.parameter_names)})")
        return self.output_sensitivities[:, self._output_index(name), self.parameter_names.index(parameter)]

    def _output_index(self, name):
        names = self._data.get("output_names", [])
        if name not in names:
            known = ", ".join(names) if names else "none: this model has no named outputs"
            raise KeyError(f"unknown output '{name}' (known: {known})")
        return names.index(name)

    def as_dict(self):
        return dict(self._data)

    def to_pandas(self):
        """The trajectory as a pandas DataFrame (time, mode, states), if pandas is installed."""
        try:
            import pandas
        except ImportError as missing:
            raise ImportError("Result.to_pandas needs pandas (Debian: python3-pandas)") from missing
        frame = pandas.DataFrame(self.states, columns=self.state_names)
        frame.insert(0, "mode", self.modes)
        frame.insert(0, "time", self.times)
        return frame


class Model:
    """A problem with its run settings. Parameters are changed with set_param (or the params
    argument of load), run settings with set_options(tend=..., rtol=..., atol=..., integrator=...,
    outputs=...)."""

    def __init__(self, native):
        self._native = native

    def __repr__(self):
        return f"<saltus.Model {self.name}: states {self.state_names}, parameters {self.parameters}>"

    name = property(lambda self: self._native.name)
    description = property(lambda self: self._native.description)
    state_names = property(lambda self: self._native.state_names)
    parameter_names = property(lambda self: self._native.parameter_names)
    cost_names = property(lambda self: self._native.cost_names)
    mode_names = property(lambda self: self._native.mode_names)
    parameters = property(lambda self: self._native.parameters, doc="{parameter: nominal value}")
    options = property(lambda self: self._native.options,
                       doc="t0, tend, rtol, atol, integrator, linear_solver, nonlinear_solver")
    is_dae = property(lambda self: self._native.is_dae)

    def set_param(self, name, value):
        """Sets a parameter's value (checked against its domain)."""
        self._native.set_param(name, _number(value, f"parameter '{name}'"))
        return self

    def set_options(self, **options):
        """tend, rtol, atol (all states), integrator ('cvodes', 'idas', 'dopri5', 'sdirk',
        'rosenbrock', 'auto'), linear_solver ('dense', 'krylov', 'sparse', 'auto'),
        nonlinear_solver ('newton', 'fixed-point', 'auto'), outputs (the number of output
        times). A refused value raises InputError and leaves the options as they were."""
        self._native.set_options(**options)
        return self

    def simulate(self):
        """States, events and costs."""
        return Result(self._native.simulate())

    def forward(self, output_sensitivities=False, wrt=()):
        """Forward sensitivities: also sensitivities (n_t, n_x, n_p), gradient, event dt/dp;
        with output_sensitivities=True (mechanisms) the named outputs' dy/dp too. wrt: names of
        the parameters to differentiate with respect to (default all; the others stay fixed), a
        list or one name."""
        return Result(self._native.forward(output_sensitivities, _names(wrt, "wrt")))

    def adjoint(self, wrt=()):
        """The adjoint: costs, gradient and initial_state_gradient (wrt as for forward)."""
        return Result(self._native.adjoint(_names(wrt, "wrt")))

    def check(self, method="all", fd_step=0.0, cs_step=1e-20):
        """Gradients by forward sensitivities (the reference) and `method` ('all', 'adjoint',
        'fd', 'complex-step'): {'estimates': [...], 'largest_relative_difference': {method:
        value}}. fd_step: the relative step of central differences (0: cbrt(rtol)); cs_step: the
        complex step (absolute); both positive."""
        return self._native.check(method, _number(fd_step, "fd_step"), _number(cs_step, "cs_step"))

    def optimize(self, cost, vary, maximize=False, method="adjoint", constraints=(), max_evaluations=200):
        """Minimizes (or maximizes) a cost over parameters within bounds, vary = {name: (lo, hi)},
        constraints like ['h_T<=15'] (or one string): the fields of `saltus optimize --json`
        (docs/optimize.md): {'optimum', 'cost', 'gradient', 'projected_gradient_norm',
        'parameters', 'constraints', 'iterations', 'history', 'converged', 'stop_reason', ...}."""
        if not isinstance(vary, dict):
            raise InputError(f"optimize: vary must be a dict {{name: (lower, upper)}}, got {vary!r}")
        try:
            vary = {name: (_number(lo, "a bound"), _number(hi, "a bound")) for name, (lo, hi) in vary.items()}
        except (TypeError, ValueError, InputError):
            raise InputError(f"optimize: vary must map names to (lower, upper) numbers, got {vary!r}") from None
        return self._native.optimize(cost, vary, maximize, method, _names(constraints, "constraints"),
                                     _integer(max_evaluations, "max_evaluations"))


def _names(value, what):
    """A list of strings from a list, a tuple or one string (a string is one name, not its
    letters)."""
    if isinstance(value, str):
        return [value]
    try:
        names = list(value)
    except TypeError:
        raise InputError(f"{what} must be a name or a list of names, got {value!r}") from None
    for name in names:
        if not isinstance(name, str):
            raise InputError(f"{what} must be a name or a list of names, got {value!r}")
    return names


def _number(value, what):
    if isinstance(value, bool) or not isinstance(value, numbers.Real):  # numpy scalars too
        raise InputError(f"{what} must be a number, got {value!r}")
    return float(value)


def _integer(value, what):
    if isinstance(value, bool) or not isinstance(value, numbers.Integral):  # numpy integers too
        raise InputError(f"{what} must be an integer, got {value!r}")
    return int(value)


def _with_params(native, params):
    """Applies the overrides as the command's --param does: an override refused in one pass (a
    value valid only with another one, set later) is retried after the others, until a pass
    changes nothing; then the first refusal is raised."""
    model = Model(native)
    if params is not None and not hasattr(params, "items"):
        raise InputError(f"params must be a mapping {{name: value}}, got {type(params).__name__}")
    pending = list((params or {}).items())
    while pending:
        refused, first_error = [], None
        for name, value in pending:
            try:
                model.set_param(name, value)
            except InputError as error:
                refused.append((name, value))
                first_error = first_error or error
        if len(refused) == len(pending):
            raise first_error
        pending = refused
    return model


def load(name, params=None, formulation=None):
    """A built-in example by name (saltus.builtins()) or a model file (*.yaml: a mechanism, in its
    own formulation or `formulation`, or an equation model), with parameter overrides."""
    return _with_params(_saltus.load(str(name), formulation or ""), params)


def from_dict(fields, params=None):
    """An equation model from a dict with the fields of the YAML format (docs/model-files.md,
    "Equation models"), e.g. {"horizon": 5, "states": {"x": 0}, "modes": {"A": {"rhs": ["4 - x"]}},
    "costs": {"G": {"running": "x"}}}. Values are numbers or expression strings."""
    try:
        text = json.dumps(fields)
    except (TypeError, ValueError) as error:  # a value that is neither a number nor a string
        raise InputError(f"from_dict: the fields must hold numbers, strings, lists and dicts ({error})") from None
    return _with_params(_saltus.parse_equations(text, "<dict>"), params)
