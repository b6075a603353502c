"""The Python module against references that did not come from it: published and closed-form
values (docs/benchmarks.md, theory), and the same runs through the C++ command's numbers."""
import math
import os
import pathlib
import time

import numpy as np
import pytest

import saltus

ROOT = pathlib.Path(os.environ.get("SALTUS_SOURCE_DIR", pathlib.Path(__file__).resolve().parents[2]))


def test_builtins_lists_the_examples():
    names = saltus.builtins()
    for name in ("ball1d", "galan", "robertson", "robertson_dae", "hysteretic"):
        assert name in names and names[name]


def test_galan_forward_matches_the_closed_form():
    # theory hybrid-dae.md section 6: dG/dp = -2.31195310744389, G = 20.0290746533596
    r = saltus.load("galan").forward()
    assert r.costs["G"] == pytest.approx(20.0290746533596, rel=1e-9)
    assert r.gradient["G"]["p"] == pytest.approx(-2.31195310744389, rel=1e-7)
    taus = [e["dtime_dp"]["p"] for e in r.events]
    assert taus == pytest.approx([0.315707550098, 0.025508077526, 0.744917151578], abs=1e-7)
    assert r.sensitivities.shape == (len(r.times), 1, 1)
    assert r.sensitivities[-1, 0, 0] == pytest.approx(-0.00157410794767, abs=1e-8)
    assert r.states.shape == (len(r.times), 1)
    assert r.modes[0] == "A"


def test_adjoint_and_parameter_overrides():
    # A drag-free ball dropped from h0 = 50 (g = 9.8): the first impact at sqrt(2 h0 / g).
    model = saltus.load("ball1d", params={"c": 0, "h0": 50, "g": 9.8})
    model.set_options(tend=4.0)
    forward = model.forward()
    adjoint = model.adjoint()
    assert forward.events[0]["time"] == pytest.approx(math.sqrt(2 * 50 / 9.8), rel=1e-9)
    for cost in model.cost_names:
        for p in model.parameter_names:
            f, a = forward.gradient[cost][p], adjoint.gradient[cost][p]
            assert a == pytest.approx(f, rel=1e-5, abs=1e-7), (cost, p)
    assert set(adjoint.initial_state_gradient["h_T"]) == {"h", "v"}


def test_dae_on_idas_agrees_with_the_published_gradient():
    # cvsRoberts_ASAi_dns: dG/dp = (7.6842e+05, -3.0691e+00, 5.1144e-04)
    model = saltus.load("robertson_dae")
    assert model.is_dae and model.options["integrator"] == "idas"
    g = model.adjoint().gradient["G"]
    assert [g["p1"], g["p2"], g["p3"]] == pytest.approx([7.6842e+05, -3.0691e+00, 5.1144e-04], rel=2e-4)


def test_an_implicit_transition_from_a_file():
    # examples/equations/relaxation_transition.yaml: T = y-dot+ + e y-dot- + kappa (z+ - z-); the
    # closed form's y(3) and its derivative with respect to e, and the adjoint agreeing.
    model = saltus.load(str(ROOT / "examples" / "equations" / "relaxation_transition.yaml"))
    c, d, e, h, kappa = 2.0, 0.5, 0.6, 1.5, 0.1

    def y_T(e):
        q = d + e * (c - h) - kappa * h * h
        y_plus = 2 * q / (1 + math.sqrt(1 - 4 * kappa * q))
        return d + (y_plus - d) * math.exp(-(3 - math.log((c - 0.0) / (c - h))))

    forward, adjoint = model.forward(), model.adjoint()
    assert forward.costs["y_T"] == pytest.approx(y_T(e), rel=1e-8)
    slope = (y_T(e + 1e-6) - y_T(e - 1e-6)) / 2e-6
    assert forward.gradient["y_T"]["e"] == pytest.approx(slope, rel=1e-6)
    assert adjoint.gradient["y_T"]["e"] == pytest.approx(forward.gradient["y_T"]["e"], rel=1e-7)


def test_the_chain_file_is_what_its_generator_writes():
    # examples/chain8.yaml comes from examples/chain_yaml.py (the chain of docs/benchmarks.md).
    import importlib.util

    spec = importlib.util.spec_from_file_location("chain_yaml", ROOT / "examples" / "chain_yaml.py")
    generator = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(generator)
    assert generator.chain_yaml(8) == (ROOT / "examples" / "chain8.yaml").read_text()
    model = saltus.load(str(ROOT / "examples" / "chain8.yaml"))
    assert sorted(model.parameters) == ["e", "g", "m"]


def test_ggl_adjoint_gives_the_published_slider_crank_gradient():
    # idasSlCrank_FSA_dns (GGL on IDAS, rtol 1e-6, atol 1e-7): dG/d(k, c) = (3.3346e-01, -3.6375e-01)
    model = saltus.load(str(ROOT / "examples" / "slidercrank.yaml"), formulation="ggl")
    model.set_options(rtol=1e-6, atol=1e-7)
    g = model.adjoint().gradient["G"]
    assert [g["k"], g["c"]] == pytest.approx([3.3346e-01, -3.6375e-01], abs=3e-5)
    # index3 and stabilized_index1 take the adjoint through the completion: at the file's
    # tolerances, the published gradient too (index3's accuracy limits: docs/multibody.md).
    for formulation in ("index3", "stabilized_index1"):
        other = saltus.load(str(ROOT / "examples" / "slidercrank.yaml"), formulation=formulation)
        h = other.adjoint().gradient["G"]
        assert [h["k"], h["c"]] == pytest.approx([3.3346e-01, -3.6375e-01], abs=3e-5), formulation


def test_discrete_integrator_gives_the_derivatives_of_its_steps():
    # galan's closed form (theory hybrid-dae.md section 6) within dopri5's accuracy; the discrete
    # forward and adjoint agree to round-off, being the derivatives of the same computed steps.
    model = saltus.load("galan").set_options(integrator="dopri5", rtol=1e-10, atol=1e-12)
    assert model.options["integrator"] == "dopri5"
    forward, adjoint = model.forward(), model.adjoint()
    assert forward.stats["integrator"] == "dopri5" and forward.stats["discrete"]
    assert forward.costs["G"] == pytest.approx(20.0290746533596, rel=1e-8)
    assert forward.gradient["G"]["p"] == pytest.approx(-2.31195310744389, rel=1e-7)
    assert adjoint.gradient["G"]["p"] == pytest.approx(forward.gradient["G"]["p"], rel=1e-13)
    with pytest.raises(ValueError, match="dopri5"):
        saltus.load("galan").set_options(integrator="rk45")


def test_krylov_linear_solver_gives_the_same_gradient():
    # Matrix-free GMRES for CVODES's Newton systems: galan's closed form as with the dense LU.
    model = saltus.load("galan").set_options(linear_solver="krylov", rtol=1e-10, atol=1e-12)
    assert model.options["linear_solver"] == "krylov"
    forward, adjoint = model.forward(), model.adjoint()
    assert forward.stats["linear_solver"] == "GMRES (matrix-free)"
    assert forward.gradient["G"]["p"] == pytest.approx(-2.31195310744389, rel=1e-7)
    assert adjoint.gradient["G"]["p"] == pytest.approx(-2.31195310744389, rel=1e-7)
    with pytest.raises(saltus.InputError, match="linear_solver must be"):
        saltus.load("galan").set_options(linear_solver="lu")


def test_fixed_point_corrector_gives_the_same_gradient():
    # Fixed-point iteration in CVODES's corrector (no linear solver): galan's closed form as
    # with Newton; IDAS refuses it.
    model = saltus.load("galan").set_options(nonlinear_solver="fixed-point", rtol=1e-10, atol=1e-12)
    assert model.options["nonlinear_solver"] == "fixed-point"
    forward, adjoint = model.forward(), model.adjoint()
    assert forward.stats["linear_solver"] == "none (fixed-point iteration)"
    assert forward.gradient["G"]["p"] == pytest.approx(-2.31195310744389, rel=1e-7)
    assert adjoint.gradient["G"]["p"] == pytest.approx(-2.31195310744389, rel=1e-7)
    with pytest.raises(saltus.InputError, match="nonlinear_solver must be"):
        saltus.load("galan").set_options(nonlinear_solver="picard")
    with pytest.raises(saltus.InputError, match="is for CVODES runs"):
        saltus.load("galan").set_options(nonlinear_solver="fixed-point", integrator="idas").forward()


def test_sparse_linear_solver_runs_on_idas():
    # KLU on IDAS's sparse Newton matrix: galan's closed form; CVODES refuses it.
    model = saltus.load("galan").set_options(linear_solver="sparse", integrator="idas", rtol=1e-10, atol=1e-12)
    assert model.options["linear_solver"] == "sparse"
    forward = model.forward()
    assert forward.stats["linear_solver"].startswith("KLU on the sparse Newton matrix")
    assert forward.gradient["G"]["p"] == pytest.approx(-2.31195310744389, rel=1e-7)
    with pytest.raises(saltus.InputError, match="is for IDAS runs"):
        saltus.load("galan").set_options(linear_solver="sparse").forward()


def test_check_compares_the_methods():
    report = saltus.load("galan").check("all")
    methods = [e["method"] for e in report["estimates"]]
    assert methods[0] == "forward sensitivity" and len(methods) == 4
    for method, difference in report["largest_relative_difference"].items():
        assert difference < 1e-4, method


def test_check_notes_central_differences_outside_a_parameters_domain():
    # ball1d's restitution e lies in [0, 1]: from 0.995 a relative step of 0.01 runs at e = 1.00495.
    model = saltus.load("ball1d")
    model.set_param("e", 0.995)
    fd = model.check("fd", fd_step=0.01)["estimates"][1]
    assert fd["method"] == "central differences"
    assert len(fd["notes"]) == 1 and "for 'e' ran at e = 1.00495" in fd["notes"][0]
    assert isinstance(fd["event_sequence_changed"], list)
    assert model.check("fd", fd_step=1e-4)["estimates"][1]["notes"] == []


def test_equation_model_from_a_dict_reproduces_the_built_in():
    model = saltus.from_dict({
        "name": "galan", "horizon": 5, "tolerances": {"rtol": 1e-10, "atol": 1e-12},
        "parameters": {"p": 2.9}, "states": {"x": 0},
        "modes": {"A": {"rhs": ["4 - x"]}, "B": {"rhs": ["10 - 2*x"]}},
        "events": {
            "A_to_B": {"guard": "x^3 - 5*x^2 + 7*x - p", "direction": "rising", "only_in": "A", "next": "B"},
            "B_to_A": {"guard": "x^3 - 5*x^2 + 7*x - p", "direction": "falling", "only_in": "B", "next": "A"}},
        "costs": {"G": {"running": "x"}}})
    assert model.adjoint().gradient["G"]["p"] == pytest.approx(-2.31195310744389, rel=1e-7)


def test_optimize_finds_the_best_restitution():
    # docs/optimize.md: e* = 0.866554105436910791627 maximizes h(15) of the drag-free ball.
    model = saltus.load("ball1d", params={"c": 0, "h0": 50, "g": 9.8, "e": 0.82}).set_options(tend=15)
    result = model.optimize("h_T", {"e": (0.78, 0.92)}, maximize=True)
    assert result["optimum"]["e"] == pytest.approx(0.866554105436910791627, rel=1e-6)
    assert result["converged"] and result["iterations"] == len(result["history"])


def test_errors_raise_with_saltus_messages():
    with pytest.raises(saltus.InputError, match="unknown example 'nope'"):
        saltus.load("nope")
    # A folder is named as one, as the command line names it (it said "unknown example").
    with pytest.raises(saltus.InputError, match="is a directory: a model is"):
        saltus.load(str(ROOT))
    with pytest.raises(ValueError, match="restitution|e"):
        saltus.load("ball1d", params={"e": 1.5})
    with pytest.raises(saltus.InputError, match="unknown option 'tfinal'"):
        saltus.load("galan").set_options(tfinal=3)
    with pytest.raises(saltus.InputError, match=r"model\.yaml|No such|cannot"):
        saltus.load(str(ROOT / "does_not_exist" / "model.yaml"))
    # A failed run is a saltus.Error (not bad input): x' = x^2 from 1 blows up at t = 1.
    model = saltus.from_dict({"horizon": 2, "states": {"x": 1}, "modes": {"m": {"rhs": ["x^2"]}},
                              "costs": {"X": {"terminal": "x"}}})
    with pytest.raises(saltus.Error):
        model.simulate()
    # A rate that is no number at the start is bad input, named before the run integrates.
    model = saltus.from_dict({"horizon": 1, "states": {"x": 1}, "modes": {"m": {"rhs": ["log(x - 2)"]}},
                              "costs": {"X": {"terminal": "x"}}})
    with pytest.raises(saltus.InputError, match="the rate of state 'x' at the start"):
        model.simulate()


def test_a_refused_option_leaves_the_options_as_they_were():
    # A refused rtol was kept (every later run failed), atol = 0 was accepted (the command refuses
    # it), and the messages named the library's fields (tf, n_outputs).
    model = saltus.load("galan")
    before = dict(model.options)
    for options, message in (({"rtol": -1}, "rtol must be a positive number"),
                             ({"tend": 2, "rtol": -1}, "rtol must be a positive number"),
                             ({"atol": 0}, "atol must be a positive number"),
                             ({"tend": -1}, "tend must be a finite time after the start"),
                             ({"outputs": 1}, r"outputs must be 2 \.\.\. 1000000"),
                             ({"outputs": 10**9}, r"outputs must be 2 \.\.\. 1000000"),
                             ({"rtol": 1e-300}, "rtol must be at least 1e-15")):
        with pytest.raises(saltus.InputError, match=message):
            model.set_options(**options)
        assert dict(model.options) == before
    assert model.forward().costs["G"] == pytest.approx(20.0290746533596, rel=1e-9)
    # Combinations a run refuses are refused at set_options, and the options stay readable.
    dae = saltus.load("robertson_dae")
    dae_before = dict(dae.options)
    for options, message in (({"integrator": "cvodes"}, "CVODES cannot integrate it"),
                             ({"integrator": "sdirk"}, "the sdirk integrator runs explicit problems only"),
                             ({"nonlinear_solver": "fixed-point"}, "is for CVODES runs")):
        with pytest.raises(saltus.InputError, match=message):
            dae.set_options(**options)
        assert dict(dae.options) == dae_before
    with pytest.raises(saltus.InputError, match="is for IDAS runs"):
        model.set_options(linear_solver="sparse")
    assert dict(model.options) == before
    with pytest.raises(saltus.InputError, match="from_dict: the fields must hold"):
        saltus.from_dict({"horizon": 1, "states": {"x": object()}})
    with pytest.raises(KeyError, match="none: this model has no named outputs"):
        model.simulate().output("x")


def test_results_convert_to_pandas_when_present():
    r = saltus.load("galan").simulate()
    try:
        import pandas  # noqa: F401
    except ImportError:
        with pytest.raises(ImportError, match="pandas"):
            r.to_pandas()
        return
    frame = r.to_pandas()
    assert list(frame.columns) == ["time", "mode", "x"]


def test_a_python_loop_runs_at_the_speed_of_its_runs():
    # 100 parameter sets: the Python overhead per run (conversion of results) stays small
    # against the runs themselves, measured in one process (docs/python.md).
    model = saltus.load("galan")
    values = np.linspace(2.5, 3.1, 100)
    start = time.perf_counter()
    gradients = []
    for v in values:
        model.set_param("p", v)
        gradients.append(model.forward().gradient["G"]["p"])
    elapsed = time.perf_counter() - start
    assert all(math.isfinite(g) for g in gradients)
    assert elapsed < 60.0


def test_mechanism_outputs_follow_the_laws_of_motion():
    # The five-bar without dampers keeps its total energy until its first impact (at t = 1.47;
    # its partitioning impact law is kinematic and changes it); a bar's length is its
    # constraint; the outputs' sensitivities match central differences of runs.
    model = saltus.load(str(ROOT / "examples" / "fivebar_floor.yaml"))
    model.set_options(tend=2.0, outputs=9, rtol=1e-12, atol=1e-13)
    r = model.forward(output_sensitivities=True)
    assert r.output_units["total_energy"] == "J" and r.output_units["spring1.force"] == "N"
    energy = r.output("total_energy")[r.times < 1.47]
    assert len(energy) == 6 and np.ptp(energy) < 1e-7 * abs(energy[0])
    p1 = np.stack([r.output("p1.x"), r.output("p1.y")], axis=1)
    assert np.allclose(np.linalg.norm(p1 - np.array([-0.5, 0.0]), axis=1), 1.4142135623730951, atol=1e-9)
    assert r.cost_history.shape == (9, 3)
    assert r.cost_history[-1] == pytest.approx([r.costs[c] for c in r.cost_names], rel=1e-14)
    h = 1e-4
    values = {}
    for sign in (+1, -1):
        model.set_param("L02", 2.0615528128088303 + sign * h)
        values[sign] = model.simulate().output("spring2.force")
    model.set_param("L02", 2.0615528128088303)
    difference = (values[1] - values[-1]) / (2 * h)
    assert r.output_sensitivity("spring2.force", "L02") == pytest.approx(difference, rel=1e-5, abs=1e-6)
    with pytest.raises(KeyError, match="unknown output 'nope'"):
        r.output("nope")
    with pytest.raises(KeyError, match="come from forward runs"):
        model.simulate().output_sensitivity("p1.x", "e")
    with pytest.raises(saltus.InputError, match="no named outputs"):
        saltus.load("galan").forward(output_sensitivities=True)


def test_wrt_differentiates_the_named_parameters_only():
    model = saltus.load("ball1d")
    full = model.forward()
    subset = model.forward(wrt=["e"])
    adjoint = model.adjoint(wrt=("e", "g"))
    assert subset.parameter_names == ["e"] and subset.sensitivities.shape[2] == 1
    for cost in full.cost_names:
        assert subset.gradient[cost]["e"] == pytest.approx(full.gradient[cost]["e"], rel=1e-6)
        assert adjoint.gradient[cost]["g"] == pytest.approx(full.gradient[cost]["g"], rel=1e-5)
    with pytest.raises(saltus.InputError, match="unknown parameter 'nope'"):
        model.forward(wrt=["nope"])
    # One name as a string is that name (it was split into letters: "unknown parameter 'h'").
    assert model.forward(wrt="e").parameter_names == ["e"]
    with pytest.raises(saltus.InputError, match="wrt must be a name or a list of names"):
        model.forward(wrt=3)


def test_options_of_the_wrong_type_are_input_errors_naming_the_option():
    # pybind11's cast said "Unable to cast Python instance to C++ type" (a RuntimeError).
    model = saltus.load("galan")
    before = dict(model.options)
    for options, message in (({"outputs": 2.5}, "outputs must be an integer"),
                             ({"outputs": 10**12}, "outputs must be an integer"),
                             ({"tend": "3"}, "tend must be a number"),
                             ({"tend": None}, "tend must be a number"),
                             ({"rtol": "abc"}, "rtol must be a positive number"),
                             ({"integrator": 3}, "integrator must be a string")):
        with pytest.raises(saltus.InputError, match=message):
            model.set_options(**options)
        assert dict(model.options) == before
    # check(): forward sensitivities are its reference, and its steps must be positive (a
    # negative or NaN fd_step silently meant the default).
    with pytest.raises(saltus.InputError, match="method must be 'all', 'adjoint', 'fd' or 'complex-step'"):
        model.check("forward")
    for step in (-1.0, float("nan")):
        with pytest.raises(saltus.InputError, match="fd_step must be a positive number"):
            model.check("fd", fd_step=step)
    with pytest.raises(saltus.InputError, match="cs_step must be a positive number"):
        model.check("complex-step", cs_step=0.0)
    # Parameter values and optimize's counts: a string, a bool or None is no number ("0.5" and
    # True were taken as numbers, 2.5 evaluations as 2, None raised TypeError).
    nominal = dict(model.parameters)
    for value in ("0.5", True, None):
        with pytest.raises(saltus.InputError, match="parameter 'p' must be a number"):
            model.set_param("p", value)
        with pytest.raises(saltus.InputError, match="parameter 'p' must be a number"):
            saltus.load("galan", params={"p": value})
    assert dict(model.parameters) == nominal
    for count in (2.5, True):
        with pytest.raises(saltus.InputError, match="max_evaluations must be an integer"):
            model.optimize("G", {"p": (1.0, 3.0)}, max_evaluations=count)
    with pytest.raises(saltus.InputError, match="vary must map names to"):
        model.optimize("G", {"p": ("1", 3.0)})


def test_parameter_overrides_apply_in_any_order_as_on_the_command_line(tmp_path):
    # h = -2 is above the floor only once f = -3: load(params=) refused it in this order, the
    # command's --param retries a refused value after the others.
    path = tmp_path / "drop.yaml"
    path.write_text("""name: drop
horizon: 1
parameters: {h: 1, f: 0, e: 0.7}
points:
  p: {position: [0, h]}
elements:
  - {type: point_mass, point: p, mass: 1}
contacts:
  - {name: floor, point: p, line: {point: [0, f], normal: [0, 1]}, restitution: e}
costs:
  y_T: {terminal: [{signal: y, of: p}]}
""")
    model = saltus.load(str(path), params={"h": -2, "f": -3})
    assert model.parameters["h"] == -2 and model.parameters["f"] == -3
    with pytest.raises(saltus.InputError, match="starts penetrating"):
        saltus.load(str(path), params={"h": -5, "f": -3})


def test_a_model_without_parameters_has_an_empty_gradient():
    model = saltus.from_dict({"horizon": 1, "states": {"x": 0}, "modes": {"A": {"rhs": ["1 - x"]}},
                              "costs": {"G": {"running": "x"}}})
    for result in (model.forward(), model.adjoint()):
        assert result.gradient == {"G": {}}
        assert result.gradient_matrix.shape == (1, 0)


def test_optimize_returns_the_fields_of_the_command_json():
    model = saltus.load("ball1d", params={"c": 0, "h0": 50, "g": 9.8, "e": 0.82}).set_options(tend=15)
    result = model.optimize("h_T", {"e": (0.78, 0.92)}, maximize=True, constraints="h_T<=15")
    for key in ("optimum", "cost", "cost_name", "maximize", "method", "gradient", "projected_gradient_norm",
                "bounds", "constraints", "parameters", "iterations", "history", "converged", "stop_reason"):
        assert key in result, key
    assert result["constraints"][0]["cost"] == "h_T" and result["constraints"][0]["sense"] == "<="
    assert result["constraints"][0]["value"] <= 15 + 1e-8
    entry = result["history"][0]
    for key in ("evaluation", "index", "x", "cost", "step", "feasible", "best", "failed"):
        assert key in entry, key
    assert any(h["best"] for h in result["history"])


def test_the_shipped_mechanisms_load_by_name():
    # docs/benchmarks.md's mechanisms, as its other problems, by name.
    for name in ("fivebar", "fivebar_floor", "slidercrank", "chain"):
        assert name in saltus.builtins()
    by_name = saltus.load("fivebar_floor", params={"e": 0.5}).set_options(tend=1.0).forward()
    by_file = saltus.load(str(ROOT / "examples" / "fivebar_floor.yaml"), params={"e": 0.5}).set_options(tend=1.0).forward()
    assert by_name.costs == by_file.costs
    # An independent integration of the benchmark's equations (scipy, rtol 1e-12): 3.336606799483.
    assert saltus.load("slidercrank", formulation="index1").simulate().costs["G"] == pytest.approx(3.336606799483, rel=1e-7)


def test_params_must_be_a_mapping():
    # A list of pairs raised AttributeError ('list' object has no attribute 'items').
    with pytest.raises(saltus.InputError, match="params must be a mapping"):
        saltus.load("ball1d", params=[("e", 0.5)])
