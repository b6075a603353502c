#pragma once
// The mechanism of a URDF file (Unified Robot Description Format, read with Debian's urdfdom) as
// spatial bodies and joints (docs/model-files.md, "URDF"): every link but the root is a spatial
// body with the link's frame as its body frame, placed where the joints put it at zero joint
// positions; the root link is the ground, and a massless link on a fixed joint is a frame of its
// parent's body. Revolute and continuous joints become revolute joints, prismatic ones
// translational joints, fixed ones fixed joints; a floating joint leaves its child free. Each
// joint carries normals (perpendicular to its axis, equal at zero joint position), so that an
// angle measured with them is 0 there. Each body on a joint is placed at the start by forward
// kinematics from its parent (SpatialBody::tree_start), so that a model file can start the
// joints elsewhere than at zero.
#include <saltus/multibody/model.hpp>

#include <map>
#include <string>
#include <vector>

namespace saltus::multibody::detail {

struct UrdfMechanism {
  std::string robot;  ///< the robot's name
  std::string root;   ///< the root link (the ground)
  /// Bodies in the links' breadth-first order from the root; joint body indices refer to them
  /// (-1: the ground).
  std::vector<SpatialBody> bodies;
  std::vector<SpatialJoint> joints;
  /// What the import left out (joint limits, joint damping and friction), one sentence each,
  /// for the run's report.
  std::vector<std::string> notes;
  /// The links merged into their parent's body (no mass, on a fixed joint: tool and sensor
  /// frames), by name: where the frame sits, as a model file names that point ("{body: link2,
  /// at: [0.1, 0, 0]}", or "the ground" for a frame of the root).
  std::map<std::string, std::string> frames;
  /// The revolute, continuous and prismatic joints by name, with the body each one places
  /// (SpatialBody::tree_start): a model file's `urdf_start` gives their start.
  std::map<std::string, int> placing_joints;
  /// The other joints by name, with what they are, for the message that refuses a start on one.
  std::map<std::string, std::string> unplaced_joints;
};

/// Reads the URDF file at `path`. Throws InputError naming the file and the link or joint: an
/// unreadable or invalid file (with urdfdom's message), a body link without mass or with a
/// negative one, an inertia that is not positive definite, a zero joint axis, a planar or mimic
/// joint, links that do not form a tree from the root.
UrdfMechanism read_urdf(const std::string& path);

}  // namespace saltus::multibody::detail
