"""Benchmark: a Python loop over 100 parameter sets (model.set_param, model.forward(), reading a
gradient) against the same loop run inside C++ without converting results, interleaved, median of
the repetitions; prints the ratio (goal: within 10 %, docs/python.md).
Usage: PYTHONPATH=build/python /usr/bin/python3 bench/python_loop.py [repetitions] [model]"""
import statistics
import sys
import time

import numpy as np

import saltus
from saltus import _saltus

repetitions = int(sys.argv[1]) if len(sys.argv) > 1 else 7
name = sys.argv[2] if len(sys.argv) > 2 else "galan"
model = saltus.load(name)
parameter = model.parameter_names[0]
nominal = model.parameters[parameter]
values = list(np.linspace(0.98 * nominal, 1.02 * nominal, 100))

python_times, cpp_times = [], []
for _ in range(repetitions):
    start = time.perf_counter()
    for v in values:
        model.set_param(parameter, v)
        _ = model.forward().gradient
    python_times.append(time.perf_counter() - start)
    cpp_times.append(_saltus._loop_forward_seconds(model._native, parameter, values))
python_median, cpp_median = statistics.median(python_times), statistics.median(cpp_times)
print(f"{name}: 100 forward runs varying {parameter}")
print(f"  C++ loop     {1e3 * cpp_median:9.2f} ms")
print(f"  Python loop  {1e3 * python_median:9.2f} ms")
print(f"  ratio Python / C++ {python_median / cpp_median:6.3f}   (goal <= 1.10)")
