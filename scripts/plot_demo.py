#!/usr/bin/python3
"""Plots of a `saltus run ... --out DIR` folder: the chosen states and their sensitivities to
every parameter against time, with the events marked (dashed lines). Writes PNG files into DIR.

Usage: scripts/plot_demo.py DIR STATE [STATE ...]
"""
import csv
import sys

import matplotlib

matplotlib.use("Agg")  # files only, no display
import matplotlib.pyplot as plt  # noqa: E402


def read_columns(path):
    with open(path, newline="") as f:
        rows = list(csv.reader(f))
    header, data = rows[0], rows[1:]
    columns = {name: [] for name in header}
    for row in data:
        for name, value in zip(header, row):
            columns[name].append(value)
    return columns


def numbers(values):
    return [float(v) for v in values]


def mark_events(axes, event_times):
    for t in event_times:
        axes.axvline(t, color="0.5", linestyle="--", linewidth=0.8)


def main():
    if len(sys.argv) < 3:
        sys.exit(__doc__)
    folder, states = sys.argv[1], sys.argv[2:]
    trajectory = read_columns(f"{folder}/trajectory.csv")
    sensitivities = read_columns(f"{folder}/sensitivities.csv")
    events = read_columns(f"{folder}/events.csv")
    event_times = numbers(events.get("time", []))
    t = numbers(trajectory["t"])
    for state in states:
        if state not in trajectory:
            sys.exit(f"plot_demo: no state '{state}' in {folder}/trajectory.csv")
        params = [c.split("/d", 1)[1] for c in sensitivities if c.startswith(f"d{state}/d")]
        fig, (top, bottom) = plt.subplots(2, 1, sharex=True, figsize=(8, 6))
        top.plot(t, numbers(trajectory[state]), color="C0")
        top.set_ylabel(state)
        top.set_title(f"{state} and its sensitivities (dashed: impacts)")
        mark_events(top, event_times)
        ts = numbers(sensitivities["t"])
        for i, param in enumerate(params):
            bottom.plot(ts, numbers(sensitivities[f"d{state}/d{param}"]), color=f"C{i + 1}", label=f"d{state}/d{param}")
        bottom.set_xlabel("t [s]")
        bottom.set_ylabel("sensitivity")
        bottom.legend(fontsize="small", ncol=2)
        mark_events(bottom, event_times)
        fig.tight_layout()
        out = f"{folder}/{state.replace('.', '_')}.png"
        fig.savefig(out, dpi=120)
        plt.close(fig)
        print(f"Wrote {out}")


if __name__ == "__main__":
    main()
