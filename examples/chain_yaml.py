#!/usr/bin/env python3
"""The chain of N uniform rods of docs/benchmarks.md ("chain") as a model file.

N rods of length 1/N and mass m = 1/N each (natural coordinates: `bar` elements), the first
pinned at the origin, all on the positive x-axis at rest at t = 0, gravity g along -y; the last
point strikes a floor at y = -0.95 with restitution e (impulse law). Horizon 1; costs `y_T`, the
last point's height at T, and `kinetic`, the integral of the kinetic energy. Parameters g, e, m.

Usage: python3 examples/chain_yaml.py N [--persistent] > chainN.yaml   (examples/chain8.yaml is N = 8)

From about N = 60 the rest of the chain presses the tip onto the floor after its first impact: its
bounces accumulate (Zeno) at t = 0.444, and a run of the impulse-law model stops there with a
ZenoError. `--persistent` makes the floor a persistent contact (`persistent: true`, docs/model-
files.md): the same impacts, and where the bounces accumulate the tip rests on the floor until its
contact force falls through zero.
"""
import sys


def chain_yaml(rods: int, persistent: bool = False) -> str:
    points = "".join(f'  p{k}: {{position: ["{k}/{rods}", 0]}}\n' for k in range(1, rods + 1))
    elements = "".join(
        f"  - {{type: bar, from: {'O' if k == 1 else f'p{k - 1}'}, to: p{k}, length: 1/{rods}, mass: m}}\n"
        for k in range(1, rods + 1))
    independent = ", ".join(f"p{k}.y" for k in range(1, rods + 1))
    return (f"# The chain of {rods} rods of docs/benchmarks.md (python3 examples/chain_yaml.py {rods}).\n"
            f"name: chain{rods}\n"
            "description: planar chain of uniform rods pinned at the origin, released from horizontal onto a floor\n"
            "horizon: 1\n"
            "tolerances: {rtol: 1.0e-10, atol: 1.0e-12}\n"
            "formulation: index1\n"
            f"parameters: {{g: 9.81, e: 0.5, m: {1.0 / rods!r}}}\n"
            "gravity: [0, -g]\n"
            "ground: {O: [0, 0]}\n"
            f"points:\n{points}"
            f"independent: [{independent}]\n"
            f"elements:\n{elements}"
            f"contacts:\n  - {{name: floor, point: p{rods}, line: {{point: [0, -0.95], normal: [0, 1]}}, restitution: e{', persistent: true' if persistent else ''}}}\n"
            "costs:\n"
            f"  y_T: {{terminal: [{{signal: y, of: p{rods}}}]}}\n"
            "  kinetic: {running: [{signal: kinetic_energy}]}\n")


if __name__ == "__main__":
    arguments = sys.argv[1:]
    persistent = "--persistent" in arguments
    if persistent:
        arguments.remove("--persistent")
    if len(arguments) != 1 or not arguments[0].isdigit() or int(arguments[0]) < 1:
        sys.exit("usage: chain_yaml.py N [--persistent]   (N >= 1 rods)")
    sys.stdout.write(chain_yaml(int(arguments[0]), persistent))
