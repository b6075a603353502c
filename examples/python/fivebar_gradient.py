"""A notebook-style tour of the Python module (run in `make test`): load the five-bar mechanism,
compute the adjoint gradient of its drift, compare it with central differences, and plot the
trajectory and the gradient. Usage: python3 examples/python/fivebar_gradient.py [out.png]"""
import os
import pathlib
import sys

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

import saltus  # noqa: E402

root = pathlib.Path(os.environ.get("SALTUS_SOURCE_DIR", pathlib.Path(__file__).resolve().parents[2]))
out = sys.argv[1] if len(sys.argv) > 1 else "fivebar_gradient.png"

model = saltus.load(str(root / "examples" / "fivebar.yaml"))
print(model)

adjoint = model.adjoint()
report = model.check("fd")
fd = report["estimates"][1]["gradient"]
print(f"{'cost':<10} {'parameter':<10} {'adjoint':>14} {'central diff.':>14}")
worst = 0.0
for cost, row in adjoint.gradient.items():
    scale = max(abs(v) for v in row.values()) or 1.0
    for parameter, value in row.items():
        print(f"{cost:<10} {parameter:<10} {value:14.6e} {fd[cost][parameter]:14.6e}")
        worst = max(worst, abs(value - fd[cost][parameter]) / scale)
print(f"largest difference relative to each cost's largest derivative: {worst:.2e}")
if worst > 1e-4:
    sys.exit(f"adjoint and central differences disagree: {worst:.2e}")

trajectory = model.simulate()
fig, (ax1, ax2) = plt.subplots(1, 2, figsize=(10, 4))
for i, name in enumerate(trajectory.state_names[:4]):
    ax1.plot(trajectory.times, trajectory.states[:, i], label=name)
ax1.set_xlabel("t [s]")
ax1.legend()
ax1.set_title("five-bar coordinates")
cost = model.cost_names[0]
names = list(adjoint.gradient[cost])
ax2.bar(names, [adjoint.gradient[cost][n] for n in names])
ax2.set_title(f"d {cost} / d parameter (adjoint)")
fig.tight_layout()
fig.savefig(out)
print(f"wrote {out}")
