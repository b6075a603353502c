#include "urdf_import.hpp"

#include <saltus/core/error.hpp>

#include <Eigen/Eigenvalues>
#include <Eigen/Geometry>
#include <console_bridge/console.h>
#include <fmt/format.h>
#include <tinyxml.h>
#include <urdf_parser/urdf_parser.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdint>
#include <deque>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <map>
#include <sstream>
#include <vector>

namespace saltus::multibody::detail {

namespace {

/// Collects urdfdom's messages (it logs through console_bridge instead of throwing) while a
/// file is parsed, so that an invalid file's reason goes into the one error line. One capture
/// lives for the whole process: console_bridge keeps a pointer to the handler it replaced, so a
/// handler must outlive every later swap. Model files are read from one thread at a time.
class MessageCapture : public console_bridge::OutputHandler {
 public:
  void log(const std::string& text, console_bridge::LogLevel level, const char*, int) override {
    if (level >= console_bridge::CONSOLE_BRIDGE_LOG_WARN) text_ += (text_.empty() ? "" : "; ") + text;
  }
  /// Parses `text`, returning urdfdom's model (null if invalid) and its messages.
  std::pair<urdf::ModelInterfaceSharedPtr, std::string> parse(const std::string& text) {
    text_.clear();
    console_bridge::useOutputHandler(this);
    urdf::ModelInterfaceSharedPtr robot;
    try {
      robot = urdf::parseURDF(text);
    } catch (...) {
      console_bridge::restorePreviousOutputHandler();
      throw;
    }
    console_bridge::restorePreviousOutputHandler();
    return {robot, text_};
  }

 private:
  std::string text_;
};

/// Where each <link> and <joint> of a URDF text begins ("path:line:column"), for the messages
/// about them: urdfdom's model keeps no positions, so TinyXML (urdfdom's own parser) reads the
/// text once more for them, at the first question only (a file that loads is read once).
/// Columns count characters from 1, a tab as one. Holds references to `path` and `text`.
class ElementPlaces {
 public:
  ElementPlaces(const std::string& path, const std::string& text) : path_(path), text_(text) {}
  /// "path:line:column" of the first element `kind` ("link", "joint") named `name`, else the path.
  const std::string& of(const std::string& kind, const std::string& name) const {
    read();
    const auto found = places_.equal_range({kind, name});  // the first of that name
    return found.first == found.second ? path_ : found.first->second;
  }
  /// "path:line:column" of the element that urdfdom's messages `text` ("; "-separated, the error
  /// last) are about: in the last message naming one, the first name in [...] or '...' that is
  /// a joint or a link of the text ("Joint [j1] is of type ...", "parent link [base] of joint
  /// [j1] not found"), looked up first as the kind the word before it says; for "not unique",
  /// its second element. Else the path.
  const std::string& of_message(const std::string& text) const {
    read();
    std::vector<std::string> messages;
    for (size_t from = 0; from <= text.size();) {
      const size_t end = std::min(text.find("; ", from), text.size());
      messages.push_back(text.substr(from, end - from));
      from = end + 2;
    }
    for (auto m = messages.rbegin(); m != messages.rend(); ++m) {
      if (const std::string* place = place_named_in(*m)) return *place;
    }
    return path_;
  }
  /// The place of the first joint or link that `message` names, or null.
  const std::string* place_named_in(const std::string& message) const {
    const bool twice = message.find("not unique") != std::string::npos;
    for (size_t open = message.find_first_of("['"); open != std::string::npos; open = message.find_first_of("['", open + 1)) {
      const size_t close = message.find(message[open] == '[' ? ']' : '\'', open + 1);
      if (close == std::string::npos) continue;  // a stray apostrophe: look on
      const std::string name = message.substr(open + 1, close - open - 1);
      // "link [x]", "joint 'x'": that kind first (a joint and a link may share a name).
      const std::string before = message.substr(open >= 6 ? open - 6 : 0, open >= 6 ? 6 : open);
      const bool link_first = before.find("ink") != std::string::npos;
      for (const char* kind : link_first ? std::array<const char*, 2>{"link", "joint"} : std::array<const char*, 2>{"joint", "link"}) {
        const auto found = places_.equal_range({kind, name});
        if (found.first == found.second) continue;
        const auto second = std::next(found.first);
        return &(twice && second != found.second ? second : found.first)->second;
      }
    }
    return nullptr;
  }
  /// "path:line:column: not well-formed XML (...)" for a text TinyXML cannot read (the bare path
  /// where TinyXML gives no position), else empty.
  const std::string& xml_error() const {
    read();
    return xml_error_;
  }

 private:
  void read() const {
    if (read_) return;
    read_ = true;
    TiXmlDocument document;
    document.SetTabSize(1);
    // The encoding urdfdom's parse takes (the file's declaration, else byte by byte), so that
    // both read the same text.
    document.Parse(text_.c_str(), nullptr, TIXML_DEFAULT_ENCODING);
    if (document.Error()) {
      // Some errors (an empty document) have no position.
      const std::string where =
          document.ErrorRow() > 0 ? fmt::format("{}:{}:{}", path_, document.ErrorRow(), document.ErrorCol()) : path_;
      xml_error_ = fmt::format("{}: not well-formed XML ({})", where, document.ErrorDesc());
      return;
    }
    const TiXmlElement* robot = document.RootElement();
    for (const TiXmlElement* e = robot ? robot->FirstChildElement() : nullptr; e; e = e->NextSiblingElement()) {
      const char* name = e->Attribute("name");
      if (name) places_.emplace(std::make_pair(e->ValueStr(), std::string(name)), fmt::format("{}:{}:{}", path_, e->Row(), e->Column()));
    }
  }

  const std::string& path_;
  const std::string& text_;
  mutable bool read_ = false;
  mutable std::string xml_error_;
  mutable std::multimap<std::pair<std::string, std::string>, std::string> places_;  ///< in the text's order
};

/// A rigid transform: rotation (body to parent axes) and translation [m].
struct Frame {
  Eigen::Quaterniond rotation = Eigen::Quaterniond::Identity();
  Eigen::Vector3d origin = Eigen::Vector3d::Zero();
  Frame then(const Frame& inner) const { return {rotation * inner.rotation, origin + rotation * inner.origin}; }
};

Frame frame_of(const urdf::Pose& pose) {
  Frame f;
  f.rotation = Eigen::Quaterniond(pose.rotation.w, pose.rotation.x, pose.rotation.y, pose.rotation.z).normalized();
  f.origin = Eigen::Vector3d(pose.position.x, pose.position.y, pose.position.z);
  return f;
}

Value3 value3_of(const Eigen::Vector3d& v) { return Value3{v[0], v[1], v[2]}; }

Eigen::Vector3d vector_of(const urdf::Vector3& v) { return {v.x, v.y, v.z}; }

/// A unit vector perpendicular to the unit vector h: the frame axis least aligned with it,
/// made perpendicular.
Eigen::Vector3d perpendicular_to(const Eigen::Vector3d& h) {
  Eigen::Index least = 0;
  h.cwiseAbs().minCoeff(&least);
  const Eigen::Vector3d e = Eigen::Vector3d::Unit(least);
  return (e - e.dot(h) * h).normalized();
}

/// The spatial body of a link: its mass and inertia (URDF gives the inertia tensor's
/// entries about the centre of mass in the inertial frame, turned here into the link's axes),
/// placed at `world`. `places` locate the link for messages.
SpatialBody body_of(const urdf::Link& link, const Frame& world, const ElementPlaces& places) {
  if (!link.inertial || link.inertial->mass == 0.0) {
    throw InputError(fmt::format("{}: link '{}' has no mass but is a body (it moves, or carries a moving link): "
                                 "give it an <inertial> with a mass > 0 and its inertia",
                                 places.of("link", link.name), link.name));
  }
  const urdf::Inertial& in = *link.inertial;
  if (!(in.mass > 0.0 && std::isfinite(in.mass))) {
    throw InputError(fmt::format("{}: link '{}' has the mass {}: a body's <mass value> must be positive and finite",
                                 places.of("link", link.name), link.name, in.mass));
  }
  const Frame inertial = frame_of(in.origin);
  Eigen::Matrix3d J;
  J << in.ixx, in.ixy, in.ixz, in.ixy, in.iyy, in.iyz, in.ixz, in.iyz, in.izz;
  const Eigen::Vector3d principal =
      J.allFinite() ? Eigen::SelfAdjointEigenSolver<Eigen::Matrix3d>(J, Eigen::EigenvaluesOnly).eigenvalues()
                    : Eigen::Vector3d::Constant(NAN);
  if (!(principal.minCoeff() > 0.0)) {
    throw InputError(fmt::format("{}: link '{}' needs a positive definite <inertia>, got ixx {}, iyy {}, izz {}, ixy {}, "
                                 "ixz {}, iyz {} (principal moments {}, {}, {})",
                                 places.of("link", link.name), link.name, in.ixx, in.iyy, in.izz, in.ixy, in.ixz, in.iyz,
                                 principal[0], principal[1], principal[2]));
  }
  const Eigen::Matrix3d R = inertial.rotation.toRotationMatrix();
  const Eigen::Matrix3d J_link = R * J * R.transpose();
  SpatialBody b;
  b.name = link.name;
  b.mass = in.mass;
  b.inertia = {J_link(0, 0), J_link(1, 1), J_link(2, 2), J_link(0, 1), J_link(0, 2), J_link(1, 2)};
  b.center = value3_of(inertial.origin);
  b.position0 = value3_of(world.origin);
  const Eigen::AngleAxisd turn(world.rotation);
  if (turn.angle() != 0.0) b.orientation0.push_back({value3_of(turn.axis()), turn.angle()});
  return b;
}

/// The spatial joint of a URDF joint between the bodies a (parent, -1 the ground) and b (child):
/// the joint frame sits at `origin` in a's body frame and is the child's frame. `places` locate
/// the joint for messages.
SpatialJoint joint_of(const urdf::Joint& j, int a, int b, const Frame& origin, const ElementPlaces& places) {
  SpatialJoint s;
  s.name = j.name;
  s.body_a = a;
  s.body_b = b;
  s.point_a = value3_of(origin.origin);
  s.point_b = Value3{0.0, 0.0, 0.0};
  Eigen::Vector3d axis = j.type == urdf::Joint::FIXED ? Eigen::Vector3d::UnitZ() : vector_of(j.axis);
  if (!(axis.norm() > 0.0) || !axis.allFinite()) {
    throw InputError(fmt::format("{}: joint '{}' has a zero axis", places.of("joint", j.name), j.name));
  }
  axis.normalize();
  const Eigen::Vector3d normal = perpendicular_to(axis);
  s.axis_a = value3_of(origin.rotation * axis);
  s.axis_b = value3_of(axis);
  s.normal_a = value3_of(origin.rotation * normal);
  s.normal_b = value3_of(normal);
  switch (j.type) {
    case urdf::Joint::REVOLUTE:
    case urdf::Joint::CONTINUOUS:
      s.type = SpatialJointType::Revolute;
      break;
    case urdf::Joint::PRISMATIC:
      s.type = SpatialJointType::Translational;
      break;
    case urdf::Joint::FIXED:
      s.type = SpatialJointType::Fixed;
      break;
    default:
      throw InputError(fmt::format("{}: joint '{}': planar joints are not supported (revolute, continuous, prismatic, "
                                   "fixed and floating are)",
                                   places.of("joint", j.name), j.name));
  }
  return s;
}

/// How joint j places its child body at the start: the joint frame `origin` in the frame of
/// the parent body `parent` (-1: the ground), the axis in the joint frame, the motion of its
/// type; its position and rate at the start are 0 until a model file's `urdf_start` sets them.
SpatialBody::TreeStart tree_start_of(const urdf::Joint& j, int parent, const Frame& origin) {
  SpatialBody::TreeStart start;
  start.joint = j.name;
  start.parent = parent;
  const Eigen::Quaterniond& r = origin.rotation;
  start.joint_rotation = {r.w(), r.x(), r.y(), r.z()};
  start.joint_origin = {origin.origin[0], origin.origin[1], origin.origin[2]};
  if (j.type == urdf::Joint::FIXED) return start;
  const Eigen::Vector3d axis = vector_of(j.axis).normalized();  // non-zero: joint_of checked it
  start.axis = {axis[0], axis[1], axis[2]};
  start.motion = j.type == urdf::Joint::PRISMATIC ? SpatialBody::TreeStart::Motion::Slide : SpatialBody::TreeStart::Motion::Turn;
  return start;
}

/// The file's text: a regular file of at most 64 MiB (not a device or a pipe that never ends).
std::string read_text(const std::string& path) {
  std::error_code error;
  if (!std::filesystem::exists(path, error)) throw InputError(fmt::format("{}: no such file", path));
  if (!std::filesystem::is_regular_file(path, error)) throw InputError(fmt::format("{}: not a regular file", path));
  const std::uintmax_t size = std::filesystem::file_size(path, error);
  if (error) throw InputError(fmt::format("{}: cannot read the file ({})", path, error.message()));
  if (size > (std::uintmax_t{64} << 20)) throw InputError(fmt::format("{}: larger than 64 MiB", path));
  std::ifstream in(path);
  if (!in) throw InputError(fmt::format("{}: cannot read the file", path));
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

}  // namespace

/// Clears every link's children when it goes out of scope: urdfdom's links own their children
/// (shared pointers), so a loop in a malformed file would otherwise keep them alive for ever.
class ChildLinksRelease {
 public:
  explicit ChildLinksRelease(urdf::ModelInterface& robot) : robot_(robot) {}
  ~ChildLinksRelease() {
    for (auto& [name, link] : robot_.links_) {
      link->child_links.clear();
      link->child_joints.clear();
    }
  }
  ChildLinksRelease(const ChildLinksRelease&) = delete;
  ChildLinksRelease& operator=(const ChildLinksRelease&) = delete;

 private:
  urdf::ModelInterface& robot_;
};

/// Where a link's frame is fixed: on a body (-1: the ground) at an offset in that body's frame.
struct Attachment {
  int body = -1;
  Frame offset;
};

UrdfMechanism read_urdf(const std::string& path) {
  const std::string text = read_text(path);
  static MessageCapture capture;
  const ElementPlaces places(path, text);
  const auto [robot, messages] = capture.parse(text);
  if (!robot) {
    if (!places.xml_error().empty()) throw InputError(places.xml_error());
    throw InputError(fmt::format("{}: not a valid URDF robot ({})", places.of_message(messages),
                                 messages.empty() ? "urdfdom gave no reason" : messages));
  }
  const ChildLinksRelease release(*robot);
  UrdfMechanism m;
  m.robot = robot->getName();
  const urdf::LinkConstSharedPtr root = robot->getRoot();
  m.root = root->name;
  std::vector<std::string> limited, with_dynamics;
  // Breadth-first from the root: each link's frame is its parent's then the joint's origin. A
  // link without mass on a fixed joint is a frame of its parent's body (a tool or sensor frame).
  std::map<std::string, Attachment> attached{{root->name, Attachment{}}};
  std::map<std::string, Frame> world{{root->name, Frame{}}};
  std::deque<urdf::LinkConstSharedPtr> queue{root};
  while (!queue.empty()) {
    const urdf::LinkConstSharedPtr parent = queue.front();
    queue.pop_front();
    for (const urdf::JointSharedPtr& j : parent->child_joints) {
      if (j->mimic) {
        throw InputError(fmt::format("{}: joint '{}' mimics joint '{}': mimic joints are not supported",
                                     places.of("joint", j->name), j->name, j->mimic->joint_name));
      }
      const urdf::LinkConstSharedPtr child = robot->getLink(j->child_link_name);
      if (!child || world.count(child->name) != 0) {
        throw InputError(fmt::format("{}: joint '{}' leads to link '{}', which is missing or reached twice (the links "
                                     "must form a tree)",
                                     places.of("joint", j->name), j->name, j->child_link_name));
      }
      const Frame origin = frame_of(j->parent_to_joint_origin_transform);
      const Frame placed = world.at(parent->name).then(origin);
      world[child->name] = placed;
      const Attachment& from = attached.at(parent->name);
      const bool massless = !child->inertial || child->inertial->mass == 0.0;
      if (j->type == urdf::Joint::FIXED && massless) {
        m.unplaced_joints[j->name] = "a fixed joint to a link without mass (a frame of its parent's body)";
        attached[child->name] = Attachment{from.body, from.offset.then(origin)};
        const Eigen::Vector3d at = attached[child->name].offset.origin;
        m.frames[child->name] = from.body < 0 ? std::string("a frame of the ground (the root link)")
                                              : fmt::format("{{body: {}, at: [{}, {}, {}]}}",
                                                            m.bodies[static_cast<size_t>(from.body)].name, at[0], at[1], at[2]);
      } else {
        const int body = static_cast<int>(m.bodies.size());
        attached[child->name] = Attachment{body, Frame{}};
        m.bodies.push_back(body_of(*child, placed, places));
        if (j->type == urdf::Joint::FLOATING) {
          m.unplaced_joints[j->name] = "a floating joint (its child starts where the URDF's zero position puts it)";
        } else {
          m.joints.push_back(joint_of(*j, from.body, body, from.offset.then(origin), places));
          m.bodies.back().tree_start = tree_start_of(*j, from.body, from.offset.then(origin));
          if (j->type == urdf::Joint::FIXED) {
            m.unplaced_joints[j->name] = "a fixed joint";
          } else {
            m.placing_joints[j->name] = body;
          }
        }
      }
      if (!placed.origin.allFinite()) {
        throw InputError(fmt::format("{}: link '{}' is placed at a non-finite position", places.of("link", child->name),
                                     child->name));
      }
      if (j->limits && (j->type == urdf::Joint::REVOLUTE || j->type == urdf::Joint::PRISMATIC)) limited.push_back(j->name);
      if (j->dynamics && (j->dynamics->damping != 0.0 || j->dynamics->friction != 0.0)) with_dynamics.push_back(j->name);
      queue.push_back(child);
    }
  }
  if (world.size() != robot->links_.size()) {
    throw InputError(fmt::format("{}: {} of the robot's {} links are not connected to its root '{}'", path,
                                 robot->links_.size() - world.size(), robot->links_.size(), m.root));
  }
  if (m.bodies.empty()) throw InputError(fmt::format("{}: the robot has no moving link (only its root '{}')", path, m.root));
  const auto listed = [](const std::vector<std::string>& names) {
    std::string out;
    for (const std::string& n : names) out += (out.empty() ? "" : ", ") + n;
    return out;
  };
  if (!limited.empty()) {
    m.notes.push_back(fmt::format("{}: URDF joint limits ignored ({}): a model file adds them as joint stops, e.g. "
                                  "contacts: [{{name: {}_max, stop: {{joint: {}, max: ...}}, restitution: 0}}]",
                                  path, listed(limited), limited.front(), limited.front()));
  }
  if (!with_dynamics.empty()) {
    m.notes.push_back(fmt::format("{}: URDF joint damping and friction ignored ({}): add a rotational_spring's damping "
                                  "(or a spring's along a prismatic joint) in the model file",
                                  path, listed(with_dynamics)));
  }
  return m;
}

}  // namespace saltus::multibody::detail
