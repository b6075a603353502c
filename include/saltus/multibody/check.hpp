#pragma once
// `saltus check`: what a model file describes and whether it assembles, without integrating it.
#include <saltus/multibody/model.hpp>

#include <array>
#include <string>
#include <vector>

namespace saltus::multibody {

struct ModelCheck {
  std::string name;
  std::string source;  ///< the file
  std::string formulation;
  std::vector<std::string> coordinates;  ///< "p.x", "b.theta", ...
  int n_points = 0, n_bodies = 0, n_spatial_bodies = 0;
  struct Constraint {
    std::string element;  ///< describe_element(): "bar 'rod'"
    int rows = 0;
  };
  /// Elements with constraint rows, spatial joints, and each spatial body's normalization.
  std::vector<Constraint> constraints;
  int constraint_rows = 0;
  int rank = 0;                          ///< rank of Phi_q at the assembled configuration
  int degrees_of_freedom = 0;            ///< coordinates - rank
  std::vector<std::string> independent;  ///< the coordinates the formulations integrate
  struct ParameterUse {
    std::string name;
    double value = 0.0;
    std::vector<std::string> used_by;  ///< "field (file:line:col)"
    std::string description;           ///< the file's, or empty
  };
  std::vector<ParameterUse> parameters;
  struct ContactStart {
    std::string name;
    std::string what;              ///< "point 'P'", or the stop: "angle stop", "travel stop"
    std::string unit;              ///< of the gap: m, or rad for an angle stop
    double gap = 0.0;              ///< > 0 on the allowed side
    double normal_velocity = 0.0;  ///< the gap's rate, < 0 approaching
    /// Persistent contacts: "persistent, starts active" (closed at rest and pressed) or
    /// "persistent, starts open"; empty for an impact-only contact.
    std::string persistence;
  };
  std::vector<ContactStart> contacts;
  /// A compliant contact (a sphere against the ground) at the assembled start.
  struct CompliantStart {
    std::string name;
    std::string body;           ///< the spatial body carrying the sphere
    double radius = 0.0;        ///< [m]
    double penetration = 0.0;   ///< delta [m], < 0 clear of the ground
    double normal_force = 0.0;  ///< N [N]
  };
  std::vector<CompliantStart> compliant_contacts;
  /// A spatial body's assembled start (its frame origin, ground axes).
  struct SpatialStart {
    std::string name;
    std::array<double, 3> position{};          ///< [m]
    double turn = 0.0;                         ///< the rotation from the ground's axes [rad], in [0, pi]
    std::array<double, 3> axis{0.0, 0.0, 1.0};  ///< its unit axis (ground axes; z for no turn)
    std::array<double, 3> velocity{};          ///< of the frame origin [m/s]
    std::array<double, 3> angular_velocity{};  ///< ground axes [rad/s]
    /// A URDF link: the joint that places it, and that joint's given start position [rad or m]
    /// and rate [rad/s or m/s] (urdf_start's, a driver's, or 0: the pose above is where assembly
    /// put the link, which a constraint the model file adds may have moved); empty otherwise.
    std::string joint;
    std::string joint_unit;  ///< "rad" or "m"; empty for a fixed joint
    double joint_position = 0.0, joint_rate = 0.0;
  };
  std::vector<SpatialStart> spatial_starts;
  std::vector<std::string> notes;  ///< input a run would correct (warnings of `saltus run`)
  std::vector<std::string> remarks;  ///< what the input left out (notes of `saltus run`)
  double assembly_residual = 0.0;  ///< max |Phi| at the assembled configuration
  double largest_correction = 0.0; ///< max |q - q_given| over the coordinates [m or rad]
  std::string largest_correction_coordinate;
};

/// Checks `model` as make_problem would (structure, domains, partition, assembly, contacts,
/// initial velocities), then describes it. Throws InputError on the first problem.
ModelCheck check_model(const Model& model);

}  // namespace saltus::multibody
