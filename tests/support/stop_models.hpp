#pragma once
// Models with joint stops shared by the tests of planar stops (test_joint_stops.cpp) and of
// stops on spatial joints (test_spatial_stops.cpp, which rebuilds them from spatial bodies).
namespace saltus::test {

// A rod pendulum released from th0 against an angle stop at the vertical.
inline const char* kPendulum = R"yaml(
name: stopped_pendulum
horizon: 1.6
tolerances: {rtol: 1.0e-11, atol: 1.0e-13}
parameters: {l: 0.8, th0: 0.9, e: 0.5, g: 9.81}
gravity: [0, -g]
ground: {O: [0, 0]}
bodies:
  rod: {mass: 2, inertia: "2*l^2/12", position: ["l/2*sin(th0)", "-l/2*cos(th0)"], angle: th0}
elements:
  - {type: revolute, a: {body: rod, at: [0, "l/2"]}, b: O}
contacts:
  - {name: vertical, stop: {body_a: ground, body_b: rod, min: 0}, restitution: e}
costs:
  theta_T: {terminal: [{signal: theta, of: rod}]}
)yaml";

// A block falling along a vertical prismatic rail onto an end stop.
inline const char* kRail = R"yaml(
name: rail
horizon: 0.5
tolerances: {rtol: 1.0e-11, atol: 1.0e-13}
parameters: {L: 0.4, e: 0.6, g: 9.81}
gravity: [0, -g]
bodies:
  block: {mass: 1.5, inertia: 0.1, position: [0, 0]}
elements:
  - {type: prismatic, name: rail, body_a: ground, body_b: block, direction: [0, -1]}
contacts:
  - {name: end, stop: {slider: rail, max: L}, restitution: e}
costs:
  y_T: {terminal: [{signal: y, of: block}]}
)yaml";

}  // namespace saltus::test
