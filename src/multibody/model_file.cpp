#include <saltus/multibody/model_file.hpp>

#include <saltus/core/error.hpp>
#include <saltus/core/options.hpp>

#include <fmt/format.h>
#include <yaml-cpp/yaml.h>

#include "../yaml/yaml_fields.hpp"
#include "urdf_import.hpp"

#include <algorithm>
#include <array>
#include <cmath>
#include <filesystem>
#include <map>
#include <memory>
#include <optional>
#include <set>

namespace saltus::multibody {

namespace {

using yaml::non_finite_number;
using yaml::parse_number;

/// Reads one YAML document into a Model, keeping the field path for messages.
class Reader : yaml::Fields {
 public:
  Reader(const YAML::Node& root, std::string source) : Fields(std::move(source)), root_(root) {}

  Model read() {
    check_root(root_, "name:, points:, elements:, ...",
               {"name", "description", "horizon", "outputs", "tolerances", "formulation", "gravity", "parameters",
                "ground", "points", "bodies", "urdf", "urdf_start", "spatial", "independent", "elements", "contacts",
                "costs"});
    model_.source = source();
    model_.name = root_["name"] ? label(root_["name"], "name") : "model";
    if (root_["description"]) model_.description = scalar(root_["description"], "description");
    read_parameters();
    read_ground();
    read_points();
    read_bodies();
    read_urdf_mechanism();
    read_urdf_start();
    read_spatial_bodies();
    check_size();
    read_settings();
    read_elements();
    read_spatial_joints_and_forces();
    read_contacts();
    read_independent();
    read_costs();
    model_.locations = locations_;
    for (size_t k = 0; k < uses_.size(); ++k) model_.parameters[k].used_by = uses_[k];
    model_.expression_fields = expression_fields_;
    return model_;
  }

 private:
  /// "file:line:col" of a node, remembered under its field path for later messages (domain
  /// checks at other parameter values, assembly errors).
  void note(const YAML::Node& node, const std::string& field) const {
    if (!mark_of(node).is_null()) locations_[field] = location(node);
  }

  /// A number or a constant expression ("2*pi", "1/3"), for fields that cannot depend on the
  /// parameters.
  double number(const YAML::Node& n, const std::string& field) const {
    note(n, field);
    return constant(n, field, parameter_group());
  }

  int integer(const YAML::Node& n, const std::string& field) const {
    const double v = number(n, field);
    if (v != std::floor(v)) fail(n, field, fmt::format("expected an integer, got '{}'", n.Scalar()));
    // Converting a double outside int's range is undefined behaviour.
    if (std::abs(v) > 1e9) fail(n, field, fmt::format("integer out of range (|n| <= 1e9), got '{}'", n.Scalar()));
    return static_cast<int>(v);
  }

  /// A number, a parameter name, a scaled parameter ("-name", "0.5*name", "-0.5 * name"), or an
  /// expression over the parameters ("m*l^2/12", core/expression.hpp).
  Value value(const YAML::Node& n, const std::string& field) const {
    note(n, field);
    const std::string text = trim(scalar(n, field));
    if (const auto v = parse_number(text)) return Value(*v);
    if (const auto v = scaled_parameter(text)) {
      uses_[static_cast<size_t>(v->parameter)].push_back(field);
      return *v;
    }
    if (text.empty() || non_finite_number(text)) fail(n, field, fmt::format("expected a finite number, got '{}'", text));
    const Expression e = expression(n, field, text);
    const double nominal = e.evaluate<double>(model_.nominal_parameters());
    if (!std::isfinite(nominal)) {
      fail(n, field, fmt::format("'{}' is not finite at the nominal parameters (got {})", text,
                                 std::isnan(nominal) ? "nan" : fmt::format("{}", nominal)));  // not "-nan"
    }
    for (const int k : e.parameters()) uses_[static_cast<size_t>(k)].push_back(field);
    if (e.is_constant()) return Value(nominal);
    Value v = Value::of_expression(e);
    expression_fields_.emplace_back(field, v.expression);
    return v;
  }

  /// "name", "-name" or "factor*name" for a declared parameter.
  std::optional<Value> scaled_parameter(const std::string& text) const {
    double scale = 1.0;
    std::string name = text;
    if (const auto star = text.find('*'); star != std::string::npos) {
      const auto factor = parse_number(trim(text.substr(0, star)));
      if (!factor) return std::nullopt;
      scale = *factor;
      name = trim(text.substr(star + 1));
    } else if (!text.empty() && text[0] == '-') {
      scale = -1.0;
      name = trim(text.substr(1));
    }
    const auto it = parameter_index_.find(name);
    if (it == parameter_index_.end()) return std::nullopt;
    return Value::of_parameter(it->second, scale);
  }

  /// Parses an expression over the declared parameters; an error points at the offending token.
  Expression expression(const YAML::Node& n, const std::string& field, const std::string& text) const {
    return Fields::expression(n, field, text, parameter_group());
  }

  std::span<const NameGroup> parameter_group() const {
    parameter_names_.clear();
    for (const auto& p : model_.parameters) parameter_names_.push_back(p.name);
    group_ = NameGroup{"parameters", &parameter_names_};
    return {&group_, 1};
  }

  Value optional_value(const YAML::Node& map, const std::string& key, const std::string& field, double fallback) const {
    const YAML::Node n = map[key];
    return n ? value(n, field + "." + key) : Value(fallback);
  }

  std::pair<Value, Value> pair_of_values(const YAML::Node& n, const std::string& field) const {
    note(n, field);
    if (!n.IsSequence() || n.size() != 2) fail(n, field, "expected [x, y]");
    return {value(n[0], field + "[0]"), value(n[1], field + "[1]")};
  }

  std::pair<double, double> pair_of_numbers(const YAML::Node& n, const std::string& field) const {
    note(n, field);
    if (!n.IsSequence() || n.size() != 2) fail(n, field, "expected [x, y]");
    return {number(n[0], field + "[0]"), number(n[1], field + "[1]")};
  }

  void read_parameters() {
    const YAML::Node ps = root_["parameters"];
    if (!ps) return;
    if (!ps.IsMap()) fail(ps, "parameters", "expected a mapping name: value (or name: {value:, description:, min:, max:})");
    for (const auto& kv : ps) {
      const std::string name = kv.first.as<std::string>();
      const std::string field = "parameters." + name;
      // A parameter named pi took the place of the constant in every expression.
      check_identifier(kv.first, field, name, {"pi"}, "the constant pi of expressions");
      if (parameter_index_.count(name) != 0) fail(kv.first, field, "declared twice");
      parameter_index_[name] = static_cast<int>(model_.parameters.size());
      model_.parameters.push_back(read_parameter(kv.second, name, field));
      uses_.emplace_back();
    }
  }

  /// `value`, or `{value, description, min, max}` (as in equation model files).
  Parameter read_parameter(const YAML::Node& n, const std::string& name, const std::string& field) const {
    Parameter par;
    par.name = name;
    if (!n.IsMap()) {
      par.nominal = number(n, field);
      return par;
    }
    note(n, field);
    check_keys(n, field, {"value", "description", "min", "max"});
    if (!n["value"]) fail(n, field, "missing 'value'");
    par.nominal = number(n["value"], field + ".value");
    if (n["description"]) par.description = scalar(n["description"], field + ".description");
    if (n["min"]) par.lower = number(n["min"], field + ".min");
    if (n["max"]) par.upper = number(n["max"], field + ".max");
    if (!(par.lower <= par.upper)) fail(n, field, fmt::format("min {} is above max {}", par.lower, par.upper));
    if (!(par.nominal >= par.lower && par.nominal <= par.upper)) {
      fail(n, field, fmt::format("the value {} is outside [min, max] = [{}, {}]", par.nominal, par.lower, par.upper));
    }
    return par;
  }

  void read_ground() {
    const YAML::Node g = root_["ground"];
    if (!g) return;
    if (!g.IsMap()) fail(g, "ground", "expected a mapping name: [x, y]");
    for (const auto& kv : g) {
      const std::string name = kv.first.as<std::string>();
      const auto [x, y] = pair_of_values(kv.second, "ground." + name);
      claim_name(kv.first, "ground." + name, name);
      PointRef r;
      r.kind = PointRef::Kind::Ground;
      r.x = x;
      r.y = y;
      r.label = name;
      refs_[name] = r;
    }
  }

  /// Ground points, points and bodies share one namespace (a point reference names any of them).
  void claim_name(const YAML::Node& n, const std::string& field, const std::string& name) {
    check_label(n, field, name);
    const std::string owner = field.substr(0, field.find('.'));  // ground, points, bodies, spatial, urdf
    const auto [it, fresh] = names_.emplace(name, owner);
    if (fresh) return;
    static const std::map<std::string, std::string> kinds = {{"ground", "a ground point"}, {"points", "a point"},
                                                             {"bodies", "a body"}, {"spatial", "a spatial body"},
                                                             {"urdf", "a URDF link"}};
    const auto kind = kinds.find(it->second);
    fail(n, field, fmt::format("the name '{}' is already used by {} (ground points, points and bodies share their names)",
                               name, kind != kinds.end() ? kind->second : it->second));
  }

  void read_points() {
    const YAML::Node ps = root_["points"];
    if (!ps) return;
    if (!ps.IsMap()) fail(ps, "points", "expected a mapping name: {position: [x, y]}");
    for (const auto& kv : ps) {
      const std::string name = kv.first.as<std::string>();
      const std::string field = "points." + name;
      claim_name(kv.first, field, name);
      note(kv.first, field);
      check_keys(kv.second, field, {"position", "velocity"});
      Point p;
      p.name = name;
      std::tie(p.x0, p.y0) = pair_of_values(require(kv.second, "position", field), field + ".position");
      if (kv.second["velocity"]) {
        std::tie(p.vx0, p.vy0) = pair_of_values(kv.second["velocity"], field + ".velocity");
        p.velocity_given = true;
      }
      PointRef r;
      r.kind = PointRef::Kind::Point;
      r.index = static_cast<int>(model_.points.size());
      r.label = name;
      refs_[name] = r;
      model_.points.push_back(p);
    }
  }

  void read_bodies() {
    const YAML::Node bs = root_["bodies"];
    if (!bs) return;
    if (!bs.IsMap()) fail(bs, "bodies", "expected a mapping name: {mass:, inertia:, position:, angle:}");
    for (const auto& kv : bs) {
      const std::string name = kv.first.as<std::string>();
      const std::string field = "bodies." + name;
      claim_name(kv.first, field, name);
      note(kv.first, field);
      check_keys(kv.second, field, {"mass", "inertia", "position", "angle", "velocity", "angular_velocity"});
      Body b;
      b.name = name;
      b.mass = value(require(kv.second, "mass", field), field + ".mass");
      b.inertia = value(require(kv.second, "inertia", field), field + ".inertia");
      std::tie(b.x0, b.y0) = pair_of_values(require(kv.second, "position", field), field + ".position");
      if (kv.second["angle"]) b.theta0 = value(kv.second["angle"], field + ".angle");
      if (kv.second["velocity"]) std::tie(b.vx0, b.vy0) = pair_of_values(kv.second["velocity"], field + ".velocity");
      if (kv.second["angular_velocity"]) b.omega0 = value(kv.second["angular_velocity"], field + ".angular_velocity");
      b.velocity_given = static_cast<bool>(kv.second["velocity"]);
      b.angular_velocity_given = static_cast<bool>(kv.second["angular_velocity"]);
      body_index_[name] = static_cast<int>(model_.bodies.size());
      PointRef r;
      r.kind = PointRef::Kind::Body;
      r.index = body_index_[name];
      r.label = name;
      refs_[name] = r;
      model_.bodies.push_back(b);
    }
  }

  Value3 triple(const YAML::Node& n, const std::string& field) const {
    note(n, field);
    if (!n.IsSequence() || n.size() != 3) fail(n, field, "expected [x, y, z]");
    return Value3{value(n[0], field + "[0]"), value(n[1], field + "[1]"), value(n[2], field + "[2]")};
  }

  Value3 optional_triple(const YAML::Node& map, const std::string& key, const std::string& field, Value3 fallback) const {
    const YAML::Node n = map[key];
    return n ? triple(n, field + "." + key) : fallback;
  }

  /// urdf: path (relative to the model file): the links and joints of a URDF robot as spatial
  /// bodies and joints, before the file's own (docs/model-files.md, "URDF").
  void read_urdf_mechanism() {
    const YAML::Node u = root_["urdf"];
    if (!u) return;
    note(u, "urdf");
    std::filesystem::path path = scalar(u, "urdf");
    if (path.is_relative()) path = std::filesystem::path(source()).parent_path() / path;
    detail::UrdfMechanism mechanism;
    try {
      mechanism = detail::read_urdf(path.string());
    } catch (const InputError& e) {
      fail(u, "urdf", e.what());
    }
    for (SpatialBody& b : mechanism.bodies) {
      claim_name(u, "urdf", b.name);
      spatial_index_[b.name] = static_cast<int>(model_.spatial_bodies.size());
      model_.spatial_bodies.push_back(std::move(b));
    }
    urdf_joints_ = mechanism.joints.size();
    urdf_frames_ = std::move(mechanism.frames);
    urdf_placing_joints_ = std::move(mechanism.placing_joints);
    urdf_unplaced_joints_ = std::move(mechanism.unplaced_joints);
    model_.spatial_joints = std::move(mechanism.joints);
    model_.notes = std::move(mechanism.notes);
  }

  /// urdf_start: {joint: position, joint: {position:, velocity:}, ...}: where the URDF's
  /// revolute, continuous and prismatic joints start [rad or m] and their rates [rad/s or m/s]
  /// (docs/model-files.md, "URDF"); 0 for a joint not listed.
  void read_urdf_start() {
    const YAML::Node s = root_["urdf_start"];
    if (!s) return;
    if (!root_["urdf"]) fail(s, "urdf_start", "needs a robot: give 'urdf: robot.urdf' (urdf_start sets its joints' start)");
    if (!s.IsMap()) fail(s, "urdf_start", "expected a mapping joint: position or joint: {position:, velocity:}");
    for (const auto& kv : s) {
      const std::string joint = kv.first.as<std::string>();
      const std::string field = "urdf_start." + joint;
      const auto placing = urdf_placing_joints_.find(joint);
      if (placing == urdf_placing_joints_.end()) {
        const auto other = urdf_unplaced_joints_.find(joint);
        fail(kv.first, field,
             other != urdf_unplaced_joints_.end()
                 ? fmt::format("joint '{}' is {}: only revolute, continuous and prismatic joints have a start ({})",
                               joint, other->second, urdf_joint_list())
                 : fmt::format("no joint '{}' in the URDF (its revolute, continuous and prismatic joints: {})", joint,
                               urdf_joint_list()));
      }
      urdf_started_[joint] = kv.first;
      SpatialBody& body = model_.spatial_bodies[static_cast<size_t>(placing->second)];
      SpatialBody::TreeStart& start = *body.tree_start;
      if (kv.second.IsMap()) {
        note(kv.first, field);  // the entry itself, for messages about the link it starts
        check_keys(kv.second, field, {"position", "velocity"});
        if (kv.second["position"]) start.position = value(kv.second["position"], field + ".position");
        if (const YAML::Node rate = kv.second["velocity"]) {
          // The stated rate is the user's: a driver or joint that changes it gets the note of a
          // stated velocity (docs/model-files.md, "Initial state"), located at this field.
          start.rate = value(rate, field + ".velocity");
          body.velocity_given = true;
        }
      } else {
        start.position = value(kv.second, field);
      }
    }
  }

  /// "shoulder, elbow" (or "none"): the URDF's joints that a urdf_start may set.
  std::string urdf_joint_list() const {
    std::string out;
    for (const auto& [name, body] : urdf_placing_joints_) out += (out.empty() ? "" : ", ") + name;
    return out.empty() ? std::string("none") : out;
  }

  /// spatial: {bodies: {name: {mass:, inertia:, center:, position:, orientation:, velocity:,
  /// angular_velocity:}}, joints: [...], forces: [...]} (docs/model-files.md, "Spatial bodies").
  void read_spatial_bodies() {
    const YAML::Node sp = root_["spatial"];
    if (!sp) return;
    if (!sp.IsMap()) fail(sp, "spatial", "expected a mapping {bodies:, joints:, forces:}");
    check_keys(sp, "spatial", {"bodies", "joints", "forces"});
    if (!sp["bodies"] && root_["urdf"]) return;  // the URDF's links are the bodies
    const YAML::Node bs = require(sp, "bodies", "spatial");
    if (!bs.IsMap()) fail(bs, "spatial.bodies", "expected a mapping name: {mass:, inertia:, position:, ...}");
    for (const auto& kv : bs) {
      const std::string name = kv.first.as<std::string>();
      const std::string field = "spatial.bodies." + name;
      claim_name(kv.first, field, name);
      note(kv.first, field);
      const YAML::Node b = kv.second;
      if (!b.IsMap()) fail(b, field, "expected {mass:, inertia:, position:, ...}");
      check_keys(b, field, {"mass", "inertia", "center", "position", "orientation", "velocity", "angular_velocity"});
      SpatialBody body;
      body.name = name;
      body.mass = value(require(b, "mass", field), field + ".mass");
      const YAML::Node j = require(b, "inertia", field);
      note(j, field + ".inertia");
      if (!j.IsSequence() || (j.size() != 3 && j.size() != 6)) {
        fail(j, field + ".inertia", "expected [xx, yy, zz] or [xx, yy, zz, xy, xz, yz] about the centre of mass");
      }
      for (size_t k = 0; k < j.size(); ++k) body.inertia[k] = value(j[k], fmt::format("{}.inertia[{}]", field, k));
      body.center = optional_triple(b, "center", field, Value3{});
      body.position0 = triple(require(b, "position", field), field + ".position");
      if (const YAML::Node o = b["orientation"]) body.orientation0 = orientation(o, field + ".orientation");
      body.velocity0 = optional_triple(b, "velocity", field, Value3{});
      body.angular_velocity0 = optional_triple(b, "angular_velocity", field, Value3{});
      body.velocity_given = b["velocity"] || b["angular_velocity"];
      spatial_index_[name] = static_cast<int>(model_.spatial_bodies.size());
      model_.spatial_bodies.push_back(body);
    }
  }

  /// A spatial body's initial orientation: {axis: [x, y, z], angle: radians}, or a rotation
  /// sequence {sequence: zyx, angles: [a1, a2, a3]}, turns about the body's own axes in order
  /// (intrinsic: A = A_z(a1) A_y(a2) A_x(a3) for zyx).
  std::vector<SpatialBody::Turn> orientation(const YAML::Node& o, const std::string& field) const {
    constexpr const char* kExpected = "expected {axis: [x, y, z], angle: radians} or {sequence: zyx, angles: [a1, a2, a3]}";
    if (!o.IsMap()) fail(o, field, kExpected);
    note(o, field);
    check_keys(o, field, {"axis", "angle", "sequence", "angles"});
    if (o.size() == 0) fail(o, field, kExpected);  // neither form begun: name both
    if (!o["sequence"] && !o["angles"]) {
      return {{triple(require(o, "axis", field), field + ".axis"), value(require(o, "angle", field), field + ".angle")}};
    }
    if (o["axis"] || o["angle"]) fail(o, field, "give either axis and angle or sequence and angles, not both");
    const YAML::Node sequence = require(o, "sequence", field);
    const std::string axes = scalar(sequence, field + ".sequence");
    if (axes.empty() || axes.size() > 3 || axes.find_first_not_of("xyz") != std::string::npos) {
      fail(sequence, field + ".sequence", fmt::format("'{}': expected one to three of the body axes x, y, z (lowercase), in order (e.g. zyx)", axes));
    }
    const YAML::Node angles = require(o, "angles", field);
    note(angles, field + ".angles");
    if (!angles.IsSequence() || angles.size() != axes.size()) {
      fail(angles, field + ".angles", fmt::format("expected {} angle{} [rad], one per axis of sequence '{}'", axes.size(),
                                                  axes.size() == 1 ? "" : "s", axes));
    }
    std::vector<SpatialBody::Turn> turns;
    for (size_t k = 0; k < axes.size(); ++k) {
      const int axis = axes[k] - 'x';
      turns.push_back({Value3{axis == 0 ? 1.0 : 0.0, axis == 1 ? 1.0 : 0.0, axis == 2 ? 1.0 : 0.0},
                       value(angles[k], fmt::format("{}.angles[{}]", field, k))});
    }
    return turns;
  }

  /// "unknown spatial body 'name'", saying what the name is when it is no spatial body: a URDF
  /// frame merged into its parent's body, or a planar body.
  std::string unknown_spatial_body(const std::string& name) const {
    const auto frame = urdf_frames_.find(name);
    if (frame != urdf_frames_.end()) {
      return fmt::format("unknown spatial body '{}': the URDF link '{}' has no mass on a fixed joint, so it is {}, "
                         "not a body",
                         name, name, frame->second);
    }
    if (body_index_.count(name) != 0) {
      return fmt::format("unknown spatial body '{}': '{}' is a planar body (planar and spatial parts are not joined)",
                         name, name);
    }
    return fmt::format("unknown spatial body '{}'", name);
  }

  /// A spatial body's name, or "ground" (-1).
  int spatial_body_or_ground(const YAML::Node& n, const std::string& field) const {
    const std::string name = scalar(n, field);
    if (name == "ground") return -1;
    const auto it = spatial_index_.find(name);
    if (it == spatial_index_.end()) fail(n, field, unknown_spatial_body(name) + " (or 'ground')");
    return it->second;
  }

  void read_spatial_joints_and_forces() {
    const YAML::Node sp = root_["spatial"];
    std::set<std::string> names;
    const auto claim = [&](const YAML::Node& n, const std::string& field, const std::string& name) {
      if (!names.insert(name).second) fail(n, field, fmt::format("the name '{}' is already used by a joint or force", name));
    };
    for (size_t i = 0; i < urdf_joints_; ++i) {  // the URDF's joints come first
      const std::string& name = model_.spatial_joints[i].name;
      claim(root_["urdf"], "urdf", name);
      joint_index_[name] = static_cast<int>(i);
    }
    if (!sp) return;
    if (const YAML::Node js = sp["joints"]) {
      if (!js.IsSequence()) fail(js, "spatial.joints", "expected a list of joints");
      // A joint's field path is its place in the model's list (after the URDF's joints).
      const auto field_of = [this](size_t i) { return fmt::format("spatial.joints[{}]", urdf_joints_ + i); };
      for (size_t i = 0; i < js.size(); ++i) {
        model_.spatial_joints.push_back(spatial_joint(js[i], field_of(i)));
        claim(js[i], field_of(i) + ".name", model_.spatial_joints.back().name);
        joint_index_[model_.spatial_joints.back().name] = static_cast<int>(urdf_joints_ + i);
      }
      for (size_t i = 0; i < js.size(); ++i) {
        SpatialJoint& j = model_.spatial_joints[urdf_joints_ + i];
        if (j.type == SpatialJointType::RotationalDriver || j.type == SpatialJointType::TranslationalDriver) {
          attach_driver(js[i], field_of(i), j);
          start_driven_urdf_joint(js[i], j);
        }
      }
    }
    if (const YAML::Node fs = sp["forces"]) {
      if (!fs.IsSequence()) fail(fs, "spatial.forces", "expected a list of force elements");
      for (size_t i = 0; i < fs.size(); ++i) {
        model_.spatial_forces.push_back(spatial_force(fs[i], fmt::format("spatial.forces[{}]", i)));
        claim(fs[i], fmt::format("spatial.forces[{}].name", i), model_.spatial_forces.back().name);
      }
    }
  }

  SpatialJoint spatial_joint(const YAML::Node& n, const std::string& field) const {
    if (!n.IsMap()) fail(n, field, "expected a mapping with a 'type'");
    note(n, field);
    const std::string type = scalar(require(n, "type", field), field + ".type");
    SpatialJoint j;
    j.name = n["name"] ? label(n["name"], field + ".name") : field;
    if (type == "spherical") {
      j.type = SpatialJointType::Spherical;
      check_keys(n, field, {"type", "name", "a", "b", "point_a", "point_b"});
    } else if (type == "revolute" || type == "universal") {
      j.type = type == "revolute" ? SpatialJointType::Revolute : SpatialJointType::Universal;
      check_keys(n, field, {"type", "name", "a", "b", "point_a", "point_b", "axis_a", "axis_b"});
      j.axis_a = triple(require(n, "axis_a", field), field + ".axis_a");
      j.axis_b = j.type == SpatialJointType::Universal ? triple(require(n, "axis_b", field), field + ".axis_b")
                                                       : optional_triple(n, "axis_b", field, j.axis_a);
    } else if (type == "cylindrical" || type == "translational" || type == "fixed") {
      j.type = type == "cylindrical" ? SpatialJointType::Cylindrical
               : type == "translational" ? SpatialJointType::Translational
                                         : SpatialJointType::Fixed;
      const bool twist = j.type != SpatialJointType::Cylindrical;
      check_keys(n, field, twist ? std::set<std::string>{"type", "name", "a", "b", "point_a", "point_b", "axis_a",
                                                          "axis_b", "normal_a", "normal_b"}
                                 : std::set<std::string>{"type", "name", "a", "b", "point_a", "point_b", "axis_a",
                                                          "axis_b"});
      j.axis_a = triple(require(n, "axis_a", field), field + ".axis_a");
      j.axis_b = optional_triple(n, "axis_b", field, j.axis_a);
      if (twist) {
        j.normal_a = triple(require(n, "normal_a", field), field + ".normal_a");
        j.normal_b = optional_triple(n, "normal_b", field, j.normal_a);
      }
    } else if (type == "distance") {
      j.type = SpatialJointType::Distance;
      check_keys(n, field, {"type", "name", "a", "b", "point_a", "point_b", "length"});
      j.length = value(require(n, "length", field), field + ".length");
    } else if (type == "rotational_driver" || type == "translational_driver") {
      // The driven joint's geometry is copied once every joint is read (attach_driver).
      j.type = type == "rotational_driver" ? SpatialJointType::RotationalDriver : SpatialJointType::TranslationalDriver;
      check_keys(n, field, j.type == SpatialJointType::RotationalDriver
                               ? std::set<std::string>{"type", "name", "joint", "function", "normal_a", "normal_b"}
                               : std::set<std::string>{"type", "name", "joint", "function"});
      require(n, "joint", field);
      j.drive = time_function(require(n, "function", field), field + ".function");
      return j;
    } else {
      fail(n["type"], field + ".type",
           fmt::format("unknown spatial joint type '{}' (spherical, revolute, universal, cylindrical, "
                       "translational, fixed, distance, rotational_driver, translational_driver)",
                       type));
    }
    j.body_a = spatial_body_or_ground(require(n, "a", field), field + ".a");
    j.body_b = spatial_body_or_ground(require(n, "b", field), field + ".b");
    j.point_a = optional_triple(n, "point_a", field, Value3{});
    j.point_b = optional_triple(n, "point_b", field, Value3{});
    return j;
  }

  /// The joint named by n's `joint` field, which must be of one of `allowed` (named in `kinds`).
  int driven_joint(const YAML::Node& n, const std::string& field, std::initializer_list<SpatialJointType> allowed,
                   const char* kinds) const {
    const YAML::Node name_node = require(n, "joint", field);
    const std::string name = scalar(name_node, field + ".joint");
    const auto it = joint_index_.find(name);
    if (it == joint_index_.end()) fail(name_node, field + ".joint", fmt::format("unknown spatial joint '{}'", name));
    const SpatialJointType type = model_.spatial_joints[static_cast<size_t>(it->second)].type;
    if (std::find(allowed.begin(), allowed.end(), type) == allowed.end()) {
      fail(name_node, field + ".joint", fmt::format("joint '{}' is not a {} joint", name, kinds));
    }
    return it->second;
  }

  /// The first of a frame's axes x, y, z least aligned with `axis` (at the nominal parameters):
  /// the default normal that measures an angle about it (made perpendicular to it at use).
  Value3 default_normal(const Value3& axis) const {
    const Eigen::VectorXd p = model_.nominal_parameters();
    const Eigen::Vector3d h(axis.x.at<double>(p), axis.y.at<double>(p), axis.z.at<double>(p));
    int least = 0;
    for (int c = 1; c < 3; ++c) {
      if (std::abs(h[c]) < std::abs(h[least])) least = c;
    }
    return Value3{least == 0 ? 1.0 : 0.0, least == 1 ? 1.0 : 0.0, least == 2 ? 1.0 : 0.0};
  }

  /// The normals that measure an angle about axis_a and axis_b: given; else normal_b is
  /// normal_a when that is given (as for translational joints), and default_normal otherwise.
  void read_angle_normals(const YAML::Node& n, const std::string& field, Value3& normal_a, Value3& normal_b,
                          const Value3& axis_a, const Value3& axis_b) const {
    normal_a = optional_triple(n, "normal_a", field, default_normal(axis_a));
    normal_b = optional_triple(n, "normal_b", field, n["normal_a"] ? normal_a : default_normal(axis_b));
  }

  /// A joint that carries normals of its own (a URDF joint: they coincide at its zero
  /// position) gives them to the drivers and springs on it as their defaults.
  static bool has_normals(const SpatialJoint& j) { return !j.normal_a.is_zero() && !j.normal_b.is_zero(); }

  /// The normals of an angle about joint j: given, else j's own, else read_angle_normals'.
  void read_joint_angle_normals(const YAML::Node& n, const std::string& field, const SpatialJoint& j, Value3& normal_a,
                                Value3& normal_b) const {
    if (has_normals(j) && !n["normal_a"] && !n["normal_b"]) {
      normal_a = j.normal_a;
      normal_b = j.normal_b;
      return;
    }
    read_angle_normals(n, field, normal_a, normal_b, j.axis_a, j.axis_b);
  }

  /// A driven URDF joint starts where its driver puts it, f(t0), moving at f'(t0), so that the
  /// robot starts assembled with its other joints where urdf_start puts them (assembly would
  /// otherwise hold some body's coordinates and move the other joints to fit the driver). A
  /// rotational driver with normals of its own measures from another zero: assembly fits it.
  /// A urdf_start entry for the joint would be a second start: refused.
  void start_driven_urdf_joint(const YAML::Node& n, const SpatialJoint& driver) {
    if (driver.driven >= static_cast<int>(urdf_joints_)) return;
    const std::string& joint = model_.spatial_joints[static_cast<size_t>(driver.driven)].name;
    const auto placing = urdf_placing_joints_.find(joint);
    if (placing == urdf_placing_joints_.end()) return;
    if (const auto stated = urdf_started_.find(joint); stated != urdf_started_.end()) {
      fail(stated->second, "urdf_start." + joint,
           fmt::format("joint '{}' is driven by '{}', so it starts where the driver puts it (f(t0), moving at "
                       "f'(t0)): leave it out of urdf_start",
                       joint, driver.name));
    }
    if (driver.type == SpatialJointType::RotationalDriver && (n["normal_a"] || n["normal_b"])) return;
    SpatialBody::TreeStart& start = *model_.spatial_bodies[static_cast<size_t>(placing->second)].tree_start;
    if (!start.driven_by) start.driven_by = driver.drive;  // a second driver conflicts with the first anyway
  }

  /// A driver takes the bodies, points and axes of the joint it drives.
  void attach_driver(const YAML::Node& n, const std::string& field, SpatialJoint& j) const {
    const bool rotational = j.type == SpatialJointType::RotationalDriver;
    j.driven = rotational ? driven_joint(n, field, {SpatialJointType::Revolute, SpatialJointType::Cylindrical},
                                         "revolute or cylindrical")
                          : driven_joint(n, field, {SpatialJointType::Translational, SpatialJointType::Cylindrical},
                                         "translational or cylindrical");
    const SpatialJoint& driven = model_.spatial_joints[static_cast<size_t>(j.driven)];
    j.body_a = driven.body_a;
    j.body_b = driven.body_b;
    j.point_a = driven.point_a;
    j.point_b = driven.point_b;
    j.axis_a = driven.axis_a;
    j.axis_b = driven.axis_b;
    if (rotational) read_joint_angle_normals(n, field, driven, j.normal_a, j.normal_b);
  }

  SpatialForce spatial_force(const YAML::Node& n, const std::string& field) const {
    if (!n.IsMap()) fail(n, field, "expected a mapping with a 'type'");
    note(n, field);
    const std::string type = scalar(require(n, "type", field), field + ".type");
    SpatialForce f;
    f.name = n["name"] ? label(n["name"], field + ".name") : field;
    if (type == "spring") {
      check_keys(n, field, {"type", "name", "a", "b", "point_a", "point_b", "stiffness", "damping", "rest_length",
                            "actuator_force"});
      f.type = SpatialForceType::Spring;
      read_ends(n, field, f);
      f.stiffness = value(require(n, "stiffness", field), field + ".stiffness");
      f.damping = optional_value(n, "damping", field, 0.0);
      f.rest_length = value(require(n, "rest_length", field), field + ".rest_length");
      f.actuator = optional_value(n, "actuator_force", field, 0.0);
    } else if (type == "force") {
      check_keys(n, field, {"type", "name", "body", "at", "force", "frame"});
      f.type = SpatialForceType::Force;
      f.body_a = spatial_body_or_ground(require(n, "body", field), field + ".body");
      f.point_a = optional_triple(n, "at", field, Value3{});
      f.vector = triple(require(n, "force", field), field + ".force");
      f.body_axes = load_in_body_axes(n, field);
    } else if (type == "torque") {
      check_keys(n, field, {"type", "name", "body", "torque", "frame"});
      f.type = SpatialForceType::Torque;
      f.body_a = spatial_body_or_ground(require(n, "body", field), field + ".body");
      f.vector = triple(require(n, "torque", field), field + ".torque");
      f.body_axes = load_in_body_axes(n, field);
    } else if (type == "compliant_contact") {
      read_compliant_contact(n, field, f);
    } else if (type == "rotational_spring") {
      read_rotational_spring(n, field, f);
    } else if (type == "bushing") {
      read_bushing(n, field, f);
    } else {
      fail(n["type"], field + ".type",
           fmt::format("unknown spatial force type '{}' (spring, force, torque, compliant_contact, rotational_spring, "
                       "bushing)",
                       type));
    }
    const bool between_two = f.type == SpatialForceType::Spring || f.type == SpatialForceType::RotationalSpring ||
                             f.type == SpatialForceType::Bushing;
    if (!between_two && f.body_a < 0) fail(n["body"], field + ".body", "expected a spatial body");
    return f;
  }

  /// A force's or torque's `frame`: `ground` (default: the vector keeps its direction) or `body`
  /// (the vector is in the body's axes and turns with it).
  bool load_in_body_axes(const YAML::Node& n, const std::string& field) const {
    if (!n["frame"]) return false;
    const std::string frame = scalar(n["frame"], field + ".frame");
    if (frame != "ground" && frame != "body") {
      fail(n["frame"], field + ".frame", fmt::format("unknown frame '{}' (ground, body)", frame));
    }
    return frame == "body";
  }

  /// A rotational spring-damper-actuator about a revolute or cylindrical joint's axis (`joint`),
  /// or about `axis_a` between bodies `a` and `b`.
  void read_rotational_spring(const YAML::Node& n, const std::string& field, SpatialForce& f) const {
    check_keys(n, field, {"type", "name", "joint", "a", "b", "axis_a", "axis_b", "normal_a", "normal_b", "stiffness",
                          "damping", "rest_angle", "torque"});
    f.type = SpatialForceType::RotationalSpring;
    if (n["joint"]) {
      for (const char* key : {"a", "b", "axis_a", "axis_b"}) {
        if (n[key]) fail(n[key], field + "." + key, "give either 'joint' or the bodies and axes, not both");
      }
      const SpatialJoint& j = model_.spatial_joints[static_cast<size_t>(
          driven_joint(n, field, {SpatialJointType::Revolute, SpatialJointType::Cylindrical}, "revolute or cylindrical"))];
      f.body_a = j.body_a;
      f.body_b = j.body_b;
      f.axis_a = j.axis_a;
      f.axis_b = j.axis_b;
      read_joint_angle_normals(n, field, j, f.normal_a, f.normal_b);
    } else {
      if (!n["a"]) fail(n, field, "a rotational spring needs 'joint' (a revolute or cylindrical joint) or 'a', 'b' and 'axis_a'");
      f.body_a = spatial_body_or_ground(require(n, "a", field), field + ".a");
      f.body_b = spatial_body_or_ground(require(n, "b", field), field + ".b");
      f.axis_a = triple(require(n, "axis_a", field), field + ".axis_a");
      f.axis_b = optional_triple(n, "axis_b", field, f.axis_a);
      read_angle_normals(n, field, f.normal_a, f.normal_b, f.axis_a, f.axis_b);
    }
    f.stiffness = value(require(n, "stiffness", field), field + ".stiffness");
    f.damping = optional_value(n, "damping", field, 0.0);
    f.rest_angle = optional_value(n, "rest_angle", field, 0.0);
    f.actuator = optional_value(n, "torque", field, 0.0);
  }

  /// The two ends of a force between bodies: `a`, `b` (spatial bodies or `ground`) and the
  /// points `point_a`, `point_b` in their frames (default their origins).
  void read_ends(const YAML::Node& n, const std::string& field, SpatialForce& f) const {
    f.body_a = spatial_body_or_ground(require(n, "a", field), field + ".a");
    f.body_b = spatial_body_or_ground(require(n, "b", field), field + ".b");
    f.point_a = optional_triple(n, "point_a", field, Value3{});
    f.point_b = optional_triple(n, "point_b", field, Value3{});
  }

  /// Linear springs and dampers on the relative displacement and rotation of two frames.
  void read_bushing(const YAML::Node& n, const std::string& field, SpatialForce& f) const {
    check_keys(n, field, {"type", "name", "a", "b", "point_a", "point_b", "stiffness", "damping",
                          "rotational_stiffness", "rotational_damping"});
    f.type = SpatialForceType::Bushing;
    read_ends(n, field, f);
    f.linear_stiffness = triple(require(n, "stiffness", field), field + ".stiffness");
    f.linear_damping = optional_triple(n, "damping", field, Value3{});
    f.angular_stiffness = triple(require(n, "rotational_stiffness", field), field + ".rotational_stiffness");
    f.angular_damping = optional_triple(n, "rotational_damping", field, Value3{});
  }

  /// A sphere against the ground: `plane: {point, normal}` or `height: "h(x, y)"`.
  void read_compliant_contact(const YAML::Node& n, const std::string& field, SpatialForce& f) const {
    check_keys(n, field, {"type", "name", "body", "at", "radius", "plane", "height", "stiffness", "exponent",
                          "damping", "friction", "slip_velocity"});
    f.type = SpatialForceType::CompliantContact;
    f.body_a = spatial_body_or_ground(require(n, "body", field), field + ".body");
    f.point_a = optional_triple(n, "at", field, Value3{});
    f.radius = value(require(n, "radius", field), field + ".radius");
    f.stiffness = value(require(n, "stiffness", field), field + ".stiffness");
    f.exponent = optional_value(n, "exponent", field, 1.5);
    f.damping = optional_value(n, "damping", field, 0.0);
    f.friction = optional_value(n, "friction", field, 0.0);
    f.slip_velocity = optional_value(n, "slip_velocity", field, 0.1);
    if (n["plane"] && n["height"]) fail(n["height"], field + ".height", "give either 'plane' or 'height', not both");
    if (const YAML::Node plane = n["plane"]) {
      const std::string pf = field + ".plane";
      if (!plane.IsMap()) fail(plane, pf, "expected {point: [x, y, z], normal: [nx, ny, nz]}");
      check_keys(plane, pf, {"point", "normal"});
      f.point_b = optional_triple(plane, "point", pf, Value3{});
      f.vector = triple(require(plane, "normal", pf), pf + ".normal");
    } else if (const YAML::Node height = n["height"]) {
      read_height_field(height, field + ".height", f);
    } else {
      fail(n, field, "a compliant contact needs its ground: 'plane: {point, normal}' or 'height: \"h(x, y)\"'");
    }
  }

  /// z = h(x, y) over the ground coordinates x, y and the parameters, with its two slopes.
  void read_height_field(const YAML::Node& n, const std::string& field, SpatialForce& f) const {
    note(n, field);
    const std::string text = trim(scalar(n, field));
    if (text.empty()) fail(n, field, "expected an expression h(x, y) [m]");
    static const std::vector<std::string> ground_names = {"x", "y"};
    for (const std::string& name : ground_names) {
      if (parameter_index_.count(name) != 0) {
        fail(n, field, fmt::format("a height field reads the ground coordinate '{}': rename the parameter '{}'", name, name));
      }
    }
    parameter_group();  // fills parameter_names_
    const std::array<NameGroup, 2> groups = {NameGroup{"ground coordinates", &ground_names},
                                             NameGroup{"parameters", &parameter_names_}};
    const Expression h = Fields::expression(n, field, text, groups);
    try {
      f.height = std::make_shared<const Expression>(h);
      f.height_x = std::make_shared<const Expression>(h.derivative(0, 0, "x"));
      f.height_y = std::make_shared<const Expression>(h.derivative(0, 1, "y"));
    } catch (const ExpressionError& e) {
      fail(n, field, e.what());
    }
    for (const int k : h.names_in(1)) uses_[static_cast<size_t>(k)].push_back(field);
    // Checked below the sphere's centre at the start (a road far from the origin may overflow
    // there: a step 0.5/(1 + exp(-(x - 1016)/0.15)) has a nan slope at x = 0).
    const Eigen::VectorXd p = model_.nominal_parameters();
    const Eigen::Vector2d at = sphere_start(f, p);
    const double ground[2] = {at[0], at[1]};
    const double* values[] = {ground, p.data()};
    for (const auto& e : {f.height, f.height_x, f.height_y}) {
      const double v = e->evaluate_in<double>(values, 2);
      if (!std::isfinite(v)) {
        fail(n, field, fmt::format("'{}' is not finite below the sphere's centre at the start, x = {}, y = {} (got {})",
                                   e->text(), at[0], at[1], std::isnan(v) ? std::string("nan") : fmt::format("{}", v)));
      }
    }
  }

  /// The ground coordinates (x, y) of a compliant contact's sphere centre at the start, at
  /// parameters p (its body's initial frame turned and moved; 0, 0 where they are not finite:
  /// the body's own fields are refused elsewhere).
  Eigen::Vector2d sphere_start(const SpatialForce& f, const Eigen::VectorXd& p) const {
    if (f.body_a < 0) return Eigen::Vector2d::Zero();
    const Eigen::VectorXd q = model_.initial_positions<double>(p);
    const int o = model_.spatial_offset(f.body_a);
    const Eigen::Vector3d at(f.point_a.x.at<double>(p), f.point_a.y.at<double>(p), f.point_a.z.at<double>(p));
    const Eigen::Vector3d centre = q.segment<3>(o) + Model::euler_rotate<double>(q.segment<4>(o + 3), at);
    return centre.allFinite() ? Eigen::Vector2d(centre[0], centre[1]) : Eigen::Vector2d::Zero();
  }

  static std::string spatial_count(const Model& m) {
    return m.spatial_bodies.empty() ? "" : fmt::format(", {} spatial bodies", m.spatial_bodies.size());
  }

  /// Model::validate's size limit, checked as soon as the points and bodies are known: the
  /// lookups of the elements, costs and independent coordinates scale with the coordinates.
  void check_size() const {
    const int n = model_.n_coordinates();
    if (n <= Model::max_coordinates) return;
    const char* field = !model_.points.empty() ? "points" : !model_.bodies.empty() ? "bodies"
                        : root_["spatial"] && root_["spatial"]["bodies"] ? "spatial"
                                                                         : "urdf";
    fail(root_[field], field,
         fmt::format("the model has {} coordinates ({} points, {} bodies{}); Saltus's formulations take at most {} "
                     "(docs/multibody.md, \"Limits\")",
                     n, model_.points.size(), model_.bodies.size(), spatial_count(model_), Model::max_coordinates));
  }

  /// "unknown body 'name'", saying so when the name is a spatial body's (a planar field: a
  /// point-line contact, a planar element).
  std::string unknown_planar_body(const std::string& name) const {
    if (spatial_index_.count(name) != 0) {
      return fmt::format("unknown body '{}': '{}' is a spatial body, and this field takes a planar one (a spatial "
                         "body's contacts are plane: contacts, its points {{body: {}, at: [x, y, z]}})",
                         name, name, name);
    }
    if (urdf_frames_.count(name) != 0) return unknown_spatial_body(name);  // a URDF tool frame: where it is
    return fmt::format("unknown body '{}'", name);
  }

  /// "name" (ground point, point or body centre) or {body: name, at: [x, y]}.
  PointRef point_ref(const YAML::Node& n, const std::string& field) const {
    if (n.IsMap()) {
      check_keys(n, field, {"body", "at"});
      const std::string body = scalar(require(n, "body", field), field + ".body");
      const auto it = body_index_.find(body);
      if (it == body_index_.end()) fail(n["body"], field + ".body", unknown_planar_body(body));
      PointRef r;
      r.kind = PointRef::Kind::Body;
      r.index = it->second;
      std::tie(r.x, r.y) = pair_of_values(require(n, "at", field), field + ".at");
      r.label = body;
      return r;
    }
    const std::string name = scalar(n, field);
    const auto it = refs_.find(name);
    if (it == refs_.end()) {
      fail(n, field, fmt::format("unknown point '{}' (a ground point, a point, a body, or {{body: name, at: [x, y]}})", name));
    }
    return it->second;
  }

  int body_or_ground(const YAML::Node& n, const std::string& field) const {
    const std::string name = scalar(n, field);
    if (name == "ground") return -1;
    const auto it = body_index_.find(name);
    if (it == body_index_.end()) fail(n, field, unknown_planar_body(name) + " (or 'ground')");
    return it->second;
  }

  int coordinate(const YAML::Node& n, const std::string& field) const {
    const std::string name = scalar(n, field);
    if (coordinate_names_.empty()) coordinate_names_ = model_.coordinate_names();  // points and bodies are read
    const std::vector<std::string>& names = coordinate_names_;
    for (size_t k = 0; k < names.size(); ++k) {
      if (names[k] == name) return static_cast<int>(k);
    }
    fail(n, field, fmt::format("unknown coordinate '{}' (write point.x, point.y, body.x, body.y or body.theta)", name));
  }

  TimeFunction time_function(const YAML::Node& n, const std::string& field) const {
    if (!n.IsMap()) fail(n, field, "expected {offset:, rate:, amplitude:, frequency:, phase:}");
    check_keys(n, field, {"offset", "rate", "amplitude", "frequency", "phase"});
    TimeFunction f;
    f.offset = optional_value(n, "offset", field, 0.0);
    f.rate = optional_value(n, "rate", field, 0.0);
    f.amplitude = optional_value(n, "amplitude", field, 0.0);
    f.frequency = optional_value(n, "frequency", field, 0.0);
    f.phase = optional_value(n, "phase", field, 0.0);
    return f;
  }

  void read_settings() {
    // No default horizon: a silent 1 s would hide a forgotten field.
    const YAML::Node h = root_["horizon"];
    if (!h) fail(root_, "horizon", "missing field (the final time tf, or [t0, tf])");
    if (h.IsSequence()) {
      std::tie(model_.t0, model_.tf) = pair_of_numbers(h, "horizon");
    } else {
      model_.tf = number(h, "horizon");
    }
    note(h, "horizon");
    if (!(model_.tf > model_.t0)) fail(h, "horizon", fmt::format("the final time must exceed the initial time (got [{}, {}])", model_.t0, model_.tf));
    if (const YAML::Node o = root_["outputs"]) {
      model_.n_outputs = integer(o, "outputs");
      if (model_.n_outputs < 2 || model_.n_outputs > kMaxOutputTimes) {
        fail(o, "outputs", fmt::format("expected 2 ... {} output times, got {}", kMaxOutputTimes, model_.n_outputs));
      }
    }
    if (const YAML::Node t = root_["tolerances"]) {
      check_keys(t, "tolerances", {"rtol", "atol"});
      if (t["rtol"]) model_.rtol = relative_tolerance(t["rtol"], positive(t["rtol"], "tolerances.rtol"));
      if (t["atol"]) model_.atol = positive(t["atol"], "tolerances.atol");
    }
    if (const YAML::Node g = root_["gravity"]) {
      if (g.IsSequence() && g.size() == 3) {
        const Value3 g3 = triple(g, "gravity");
        model_.gravity_x = g3.x;
        model_.gravity_y = g3.y;
        model_.gravity_z = g3.z;
      } else if (g.IsSequence() && g.size() != 2) {
        fail(g, "gravity", fmt::format("expected [x, y] (planar) or [x, y, z] (spatial), got {} entries", g.size()));
      } else {
        std::tie(model_.gravity_x, model_.gravity_y) = pair_of_values(g, "gravity");
      }
    } else if (!model_.spatial_bodies.empty() && model_.points.empty() && model_.bodies.empty()) {
      model_.gravity_y = 0.0;  // spatial models: gravity along -z unless given
      model_.gravity_z = -9.81;
    }
    if (const YAML::Node f = root_["formulation"]) read_formulation(f);
  }

  double non_negative(const YAML::Node& n, const std::string& field) const {
    const double v = number(n, field);
    if (!(v >= 0.0)) fail(n, field, fmt::format("must be >= 0, got {}", v));
    return v;
  }



  double positive(const YAML::Node& n, const std::string& field) const {
    const double v = number(n, field);
    if (!(v > 0.0)) fail(n, field, fmt::format("must be positive, got {}", v));
    return v;
  }

  void read_formulation(const YAML::Node& f) {
    FormulationSettings& s = model_.formulation;
    const YAML::Node type = f.IsMap() ? require(f, "type", "formulation") : f;
    try {
      s.type = parse_formulation(scalar(type, "formulation.type"));
    } catch (const InputError& e) {
      fail(type, "formulation.type", e.what());
    }
    if (!f.IsMap()) return;
    check_keys(f, "formulation", {"type", "alpha", "xi", "omega", "newton_tolerance"});
    const bool penalty = s.type == FormulationType::Penalty;
    if (f["alpha"]) s.penalty_alpha = positive(f["alpha"], "formulation.alpha");
    // Negative values turn the stabilization into an amplification of the drift (xi -1 on a
    // pendulum: the tip 400 m from its pivot, exit 0).
    if (f["xi"]) (penalty ? s.penalty_xi : s.baumgarte_xi) = non_negative(f["xi"], "formulation.xi");
    if (f["omega"]) (penalty ? s.penalty_omega : s.baumgarte_omega) = non_negative(f["omega"], "formulation.omega");
    if (f["newton_tolerance"]) s.newton_tolerance = positive(f["newton_tolerance"], "formulation.newton_tolerance");
  }

  void read_elements() {
    const YAML::Node es = root_["elements"];
    if (!es) return;
    if (!es.IsSequence()) fail(es, "elements", "expected a list of elements");
    for (size_t i = 0; i < es.size(); ++i) {
      const std::string field = fmt::format("elements[{}]", i);
      model_.elements.push_back(element(es[i], field));
    }
    for (size_t i = 0; i < es.size(); ++i) {
      const std::string field = fmt::format("elements[{}]", i);
      Element& e = model_.elements[i];
      if (e.type != ElementType::RotationalSpring || !es[i]["bar_a"]) continue;
      e.bar_a = bar_named(es[i]["bar_a"], field + ".bar_a");
      e.bar_b = bar_named(es[i]["bar_b"], field + ".bar_b");
      if (e.bar_a == e.bar_b) fail(es[i]["bar_b"], field + ".bar_b", "the two bars of a rotational spring must differ");
    }
  }

  /// The index of the bar element named by node n.
  int bar_named(const YAML::Node& n, const std::string& field) const {
    const std::string name = scalar(n, field);
    for (size_t k = 0; k < model_.elements.size(); ++k) {
      if (model_.elements[k].name != name) continue;
      if (model_.elements[k].type != ElementType::Bar) fail(n, field, fmt::format("'{}' is not a bar", name));
      return static_cast<int>(k);
    }
    fail(n, field, fmt::format("unknown bar '{}'", name));
  }

  Element element(const YAML::Node& n, const std::string& field) const {
    if (!n.IsMap()) fail(n, field, "expected a mapping with a 'type'");
    note(n, field);
    if (n["name"]) note(n["name"], field + ".name");
    const std::string type = scalar(require(n, "type", field), field + ".type");
    Element e;
    e.name = n["name"] ? label(n["name"], field + ".name") : field;
    if (type == "bar") {
      check_keys(n, field, {"type", "name", "from", "to", "length", "mass"});
      e.type = ElementType::Bar;
      e.a = point_ref(require(n, "from", field), field + ".from");
      e.b = point_ref(require(n, "to", field), field + ".to");
      e.length = value(require(n, "length", field), field + ".length");
      e.mass = optional_value(n, "mass", field, 0.0);
    } else if (type == "revolute" || type == "fixed_point") {
      const bool fixed = type == "fixed_point";
      check_keys(n, field, fixed ? std::set<std::string>{"type", "name", "point", "at"}
                                 : std::set<std::string>{"type", "name", "a", "b"});
      e.type = ElementType::Revolute;
      e.fixed_point = fixed;
      e.a = point_ref(require(n, fixed ? "point" : "a", field), field + (fixed ? ".point" : ".a"));
      if (fixed) {
        e.b.kind = PointRef::Kind::Ground;
        std::tie(e.b.x, e.b.y) = pair_of_values(require(n, "at", field), field + ".at");
      } else {
        e.b = point_ref(require(n, "b", field), field + ".b");
      }
    } else if (type == "point_on_line") {
      check_keys(n, field, {"type", "name", "point", "line_point", "direction"});
      e.type = ElementType::PointOnLine;
      e.a = point_ref(require(n, "point", field), field + ".point");
      e.b = point_ref(require(n, "line_point", field), field + ".line_point");
      std::tie(e.dir_x, e.dir_y) = pair_of_values(require(n, "direction", field), field + ".direction");
    } else if (type == "prismatic") {
      check_keys(n, field, {"type", "name", "body_a", "body_b", "point_a", "point_b", "direction", "angle"});
      e.type = ElementType::Prismatic;
      e.body_a = body_or_ground(require(n, "body_a", field), field + ".body_a");
      e.body_b = body_or_ground(require(n, "body_b", field), field + ".body_b");
      if (e.body_b < 0) fail(n["body_b"], field + ".body_b", "must be a body (the slider), got 'ground'");
      e.b = body_point(n, "point_a", e.body_a, field);
      e.a = body_point(n, "point_b", e.body_b, field);
      std::tie(e.dir_x, e.dir_y) = pair_of_values(require(n, "direction", field), field + ".direction");
      e.angle = optional_value(n, "angle", field, 0.0);
    } else if (type == "coordinate_driver") {
      check_keys(n, field, {"type", "name", "coordinate", "function"});
      e.type = ElementType::CoordinateDriver;
      e.coordinate = coordinate(require(n, "coordinate", field), field + ".coordinate");
      e.drive = time_function(require(n, "function", field), field + ".function");
    } else if (type == "distance_driver") {
      check_keys(n, field, {"type", "name", "from", "to", "function"});
      e.type = ElementType::DistanceDriver;
      e.a = point_ref(require(n, "from", field), field + ".from");
      e.b = point_ref(require(n, "to", field), field + ".to");
      e.drive = time_function(require(n, "function", field), field + ".function");
    } else if (type == "spring") {
      check_keys(n, field, {"type", "name", "from", "to", "stiffness", "damping", "rest_length", "actuator_force"});
      e.type = ElementType::Spring;
      e.a = point_ref(require(n, "from", field), field + ".from");
      e.b = point_ref(require(n, "to", field), field + ".to");
      e.stiffness = value(require(n, "stiffness", field), field + ".stiffness");
      e.damping = optional_value(n, "damping", field, 0.0);
      e.rest_length = value(require(n, "rest_length", field), field + ".rest_length");
      e.actuator = optional_value(n, "actuator_force", field, 0.0);
      if (e.a.kind == PointRef::Kind::Ground && e.b.kind == PointRef::Kind::Ground) {
        fail(n["to"], field + ".to", fmt::format("a spring between the ground points '{}' and '{}' acts on nothing", e.a.label, e.b.label));
      }
    } else if (type == "rotational_spring") {
      check_keys(n, field,
                 {"type", "name", "body_a", "body_b", "bar_a", "bar_b", "stiffness", "damping", "rest_angle", "torque"});
      e.type = ElementType::RotationalSpring;
      if (n["bar_a"] || n["bar_b"]) {
        // Between two bars: resolved by name once every element is read (read_elements).
        if (n["body_a"] || n["body_b"]) {
          fail(n["body_a"] ? n["body_a"] : n["body_b"], field,
               "a rotational spring joins two bodies (body_a, body_b) or two bars (bar_a, bar_b), not both");
        }
        require(n, "bar_a", field);
        require(n, "bar_b", field);
      } else {
        e.body_a = body_or_ground(require(n, "body_a", field), field + ".body_a");
        e.body_b = body_or_ground(require(n, "body_b", field), field + ".body_b");
        if (e.body_a < 0 && e.body_b < 0) {
          fail(n["body_b"], field + ".body_b", "a rotational spring between the ground and the ground acts on nothing (give a body)");
        }
      }
      e.stiffness = value(require(n, "stiffness", field), field + ".stiffness");
      e.damping = optional_value(n, "damping", field, 0.0);
      e.angle = optional_value(n, "rest_angle", field, 0.0);
      e.actuator = optional_value(n, "torque", field, 0.0);
    } else if (type == "point_mass") {
      check_keys(n, field, {"type", "name", "point", "mass"});
      e.type = ElementType::PointMass;
      e.a = point_ref(require(n, "point", field), field + ".point");
      if (e.a.kind != PointRef::Kind::Point) {
        fail(n["point"], field + ".point",
             fmt::format("a point mass sits on a moving point (one of 'points'), got {} '{}'",
                         e.a.kind == PointRef::Kind::Ground ? "the ground point" : "a body point", e.a.label));
      }
      e.mass = value(require(n, "mass", field), field + ".mass");
    } else if (type == "force") {
      check_keys(n, field, {"type", "name", "point", "force"});
      e.type = ElementType::Force;
      e.a = point_ref(require(n, "point", field), field + ".point");
      std::tie(e.fx, e.fy) = pair_of_values(require(n, "force", field), field + ".force");
      // A force on a fixed point does nothing: the model meant another point.
      if (e.a.kind == PointRef::Kind::Ground) {
        fail(n["point"], field + ".point", fmt::format("a force on the ground point '{}' moves nothing (apply it to a point or a body)", e.a.label));
      }
    } else {
      fail(n["type"], field + ".type",
           fmt::format("unknown element type '{}' (bar, revolute, fixed_point, point_on_line, prismatic, "
                       "coordinate_driver, distance_driver, spring, rotational_spring, point_mass, force)",
                       type));
    }
    return e;
  }

  /// A point on body `body` (or the ground) in its frame: field `key` = [x, y], default origin.
  PointRef body_point(const YAML::Node& n, const std::string& key, int body, const std::string& field) const {
    PointRef r;
    r.kind = body < 0 ? PointRef::Kind::Ground : PointRef::Kind::Body;
    r.index = body;
    if (n[key]) std::tie(r.x, r.y) = pair_of_values(n[key], field + "." + key);
    return r;
  }

  void read_contacts() {
    const YAML::Node cs = root_["contacts"];
    if (!cs) return;
    if (!cs.IsSequence()) fail(cs, "contacts", "expected a list of contacts");
    note(cs, "contacts");
    for (size_t i = 0; i < cs.size(); ++i) {
      const YAML::Node n = cs[i];
      const std::string field = fmt::format("contacts[{}]", i);
      check_keys(n, field, {"name", "point", "line", "plane", "stop", "restitution", "law", "persistent", "friction"});
      note(n, field);
      if (n["name"]) note(n["name"], field + ".name");
      Contact c;
      c.name = n["name"] ? label(n["name"], field + ".name") : fmt::format("contact{}", i + 1);
      if (n["stop"]) {
        if (n["point"] || n["line"]) {
          fail(n["point"] ? n["point"] : n["line"], field,
               "a contact is a point against a line (point, line) or a joint stop (stop), not both");
        }
        read_stop(n["stop"], field + ".stop", c);
      } else if (n["plane"]) {
        if (n["line"]) fail(n["line"], field, "a contact is a point against a line or against a plane, not both");
        read_plane_contact(n, field, c);
      } else {
        const YAML::Node point = require(n, "point", field);
        const YAML::Node owner = point.IsMap() ? point["body"] : point;
        if (owner && owner.IsScalar() && spatial_index_.count(owner.Scalar()) != 0 && !n["line"]) {
          fail(n, field + ".plane", fmt::format("missing field: a contact of a point of spatial body '{}' is against a "
                                                "plane: {{point: [x, y, z], normal: [nx, ny, nz]}}",
                                                owner.Scalar()));
        }
        c.point = point_ref(point, field + ".point");
        const YAML::Node line = require(n, "line", field);
        check_keys(line, field + ".line", {"point", "normal", "body"});
        if (line["body"]) c.line_body = body_or_ground(line["body"], field + ".line.body");
        std::tie(c.line_x, c.line_y) = pair_of_values(require(line, "point", field + ".line"), field + ".line.point");
        std::tie(c.normal_x, c.normal_y) =
            pair_of_values(require(line, "normal", field + ".line"), field + ".line.normal");
      }
      c.restitution = value(require(n, "restitution", field), field + ".restitution");
      const std::string law = n["law"] ? scalar(n["law"], field + ".law") : "impulse";
      if (n["law"]) note(n["law"], field + ".law");
      if (law == "partitioning") {
        c.law = ImpactLaw::Partitioning;
        if (is_joint_stop(c.kind)) {
          fail(n["law"], field + ".law", "the partitioning law is for a point against a ground line or plane; a stop "
                                         "uses law: impulse");
        }
        if (c.kind == ContactKind::PointPlane) {
          if (!c.spatial_at.is_zero()) {
            fail(n["point"]["at"], field + ".point.at",
                 "the partitioning law reverses the velocity of the body's frame origin: the contact point must be "
                 "that origin (point: body; place the frame there, with the centre of mass in center), or use "
                 "law: impulse");
          }
        } else if (c.point.kind != PointRef::Kind::Point) {
          fail(n["point"], field + ".point", "the partitioning law needs a moving point (use law: impulse)");
        }
        if (c.line_body >= 0) {
          fail(n["law"], field + ".law",
               "the partitioning law needs a ground line (this line is carried by a body); use law: impulse");
        }
      } else if (law == "impulse") {
        c.law = ImpactLaw::Impulse;
      } else {
        fail(n["law"], field + ".law", fmt::format("unknown impact law '{}' (partitioning or impulse)", law));
      }
      if (n["persistent"]) {
        note(n["persistent"], field + ".persistent");
        c.persistent = boolean(n["persistent"], field + ".persistent");
      }
      if (n["friction"]) c.friction = value(n["friction"], field + ".friction");
      model_.contacts.push_back(c);
    }
  }

  /// A point of a spatial body against a ground plane: `point: body` (its frame origin) or
  /// `{body: name, at: [x, y, z]}`, `plane: {point: [x, y, z], normal: [nx, ny, nz]}`.
  void read_plane_contact(const YAML::Node& n, const std::string& field, Contact& c) const {
    c.kind = ContactKind::PointPlane;
    const YAML::Node point = require(n, "point", field);
    const YAML::Node body = point.IsMap() ? require(point, "body", field + ".point") : point;
    if (point.IsMap()) check_keys(point, field + ".point", {"body", "at"});
    const std::string name = scalar(body, field + ".point");
    const auto it = spatial_index_.find(name);
    if (it == spatial_index_.end()) {
      fail(body, field + ".point", unknown_spatial_body(name) + " (a plane contact's point is on a spatial body)");
    }
    c.spatial_body = it->second;
    if (point.IsMap()) c.spatial_at = triple(require(point, "at", field + ".point"), field + ".point.at");
    const YAML::Node plane = n["plane"];
    if (!plane.IsMap()) fail(plane, field + ".plane", "expected {point: [x, y, z], normal: [nx, ny, nz]}");
    check_keys(plane, field + ".plane", {"point", "normal"});
    c.plane_point = triple(require(plane, "point", field + ".plane"), field + ".plane.point");
    c.plane_normal = triple(require(plane, "normal", field + ".plane"), field + ".plane.normal");
  }

  /// A joint stop: `{body_a, body_b | bar_a, bar_b | slider | joint, min | max}`.
  void read_stop(const YAML::Node& n, const std::string& field, Contact& c) const {
    if (!n.IsMap()) fail(n, field, "expected a mapping {body_a, body_b | bar_a, bar_b | slider | joint, min | max}");
    check_keys(n, field, {"body_a", "body_b", "bar_a", "bar_b", "slider", "joint", "measure", "normal_a", "normal_b",
                          "min", "max"});
    if (n["min"] && n["max"]) {
      fail(n["max"], field + ".max", "a stop has one limit, min or max: write two contacts for the two sides");
    }
    if (!n["min"] && !n["max"]) fail(n, field, "a stop needs its limit: min or max");
    const char* side = n["min"] ? "min" : "max";
    c.side = n["min"] ? 1.0 : -1.0;
    c.limit = value(n[side], field + "." + side);
    const int kinds = (n["slider"] ? 1 : 0) + (n["bar_a"] || n["bar_b"] ? 1 : 0) + (n["body_a"] || n["body_b"] ? 1 : 0) +
                      (n["joint"] ? 1 : 0);
    if (kinds != 1) {
      fail(n, field, "a stop limits one joint: the angle between two bodies (body_a, body_b), between two bars "
                     "(bar_a, bar_b), the travel of a prismatic joint (slider), or a spatial joint (joint)");
    }
    if (n["joint"]) {
      read_spatial_stop(n, field, c);
      return;
    }
    for (const char* key : {"measure", "normal_a", "normal_b"}) {
      if (n[key]) fail(n[key], field + "." + key, fmt::format("'{}' belongs to a stop on a spatial joint (joint)", key));
    }
    if (n["slider"]) {
      const std::string name = scalar(n["slider"], field + ".slider");
      for (const Element& e : model_.elements) {
        if (e.name != name) continue;
        if (e.type != ElementType::Prismatic) fail(n["slider"], field + ".slider", fmt::format("'{}' is not a prismatic joint", name));
        c.kind = ContactKind::TravelStop;
        c.joint = e;
        return;
      }
      fail(n["slider"], field + ".slider", fmt::format("unknown prismatic joint '{}'", name));
    }
    c.kind = ContactKind::AngleStop;
    c.joint.type = ElementType::RotationalSpring;
    c.joint.name = c.name;
    if (n["bar_a"] || n["bar_b"]) {
      c.joint.bar_a = bar_named(require(n, "bar_a", field), field + ".bar_a");
      c.joint.bar_b = bar_named(require(n, "bar_b", field), field + ".bar_b");
      if (c.joint.bar_a == c.joint.bar_b) fail(n["bar_b"], field + ".bar_b", "the two bars of a stop must differ");
    } else {
      c.joint.body_a = body_or_ground(require(n, "body_a", field), field + ".body_a");
      c.joint.body_b = body_or_ground(require(n, "body_b", field), field + ".body_b");
      if (c.joint.body_a == c.joint.body_b) fail(n["body_b"], field + ".body_b", "the two bodies of a stop must differ");
    }
  }

  /// A stop on a spatial joint: its angle (revolute; cylindrical with `measure: angle`), measured
  /// as a rotational spring's with the same default normals, or its travel (translational;
  /// cylindrical with `measure: travel`).
  void read_spatial_stop(const YAML::Node& n, const std::string& field, Contact& c) const {
    const int index = driven_joint(n, field,
                                   {SpatialJointType::Revolute, SpatialJointType::Cylindrical,
                                    SpatialJointType::Translational},
                                   "revolute, cylindrical or translational");
    const SpatialJoint& j = model_.spatial_joints[static_cast<size_t>(index)];
    std::string measure = j.type == SpatialJointType::Revolute ? "angle" : "travel";
    if (n["measure"]) {
      measure = scalar(n["measure"], field + ".measure");
      const bool allowed = (measure == "angle" && j.type != SpatialJointType::Translational) ||
                           (measure == "travel" && j.type != SpatialJointType::Revolute);
      if (!allowed) {
        fail(n["measure"], field + ".measure",
             fmt::format("joint '{}' has no {} to stop (a revolute joint has an angle, a translational one a travel, "
                         "a cylindrical one both)",
                         j.name, measure));
      }
    } else if (j.type == SpatialJointType::Cylindrical) {
      fail(n, field, fmt::format("joint '{}' is cylindrical: say which it stops, measure: angle or measure: travel", j.name));
    }
    c.kind = measure == "angle" ? ContactKind::SpatialAngleStop : ContactKind::SpatialTravelStop;
    c.spatial_joint = j;
    c.spatial_joint.driven = index;
    if (c.kind == ContactKind::SpatialAngleStop) {
      read_joint_angle_normals(n, field, j, c.spatial_joint.normal_a, c.spatial_joint.normal_b);
    } else {
      for (const char* key : {"normal_a", "normal_b"}) {
        if (n[key]) fail(n[key], field + "." + key, "a travel stop has no normals (they measure an angle)");
      }
    }
  }

  void read_independent() {
    const YAML::Node ind = root_["independent"];
    if (!ind) return;
    if (!ind.IsSequence()) fail(ind, "independent", "expected a list of coordinates, e.g. [p2.x, p2.y]");
    note(ind, "independent");
    for (size_t i = 0; i < ind.size(); ++i) {
      const std::string field = fmt::format("independent[{}]", i);
      note(ind[i], field);
      const int k = coordinate(ind[i], field);
      if (std::find(model_.independent.begin(), model_.independent.end(), k) != model_.independent.end()) {
        fail(ind[i], field, fmt::format("'{}' is listed twice", ind[i].Scalar()));
      }
      model_.independent.push_back(k);
    }
  }

  void read_costs() {
    const YAML::Node cs = root_["costs"];
    if (!cs) fail(root_, "costs", "missing field (at least one cost)");
    if (!cs.IsMap() || cs.size() == 0) {
      fail(cs, "costs", "expected a mapping name: {running: [...], terminal: [...]} (at least one cost)");
    }
    for (const auto& kv : cs) {
      CostSpec c;
      c.name = kv.first.as<std::string>();
      const std::string field = "costs." + c.name;
      check_label(kv.first, field, c.name);
      check_keys(kv.second, field, {"running", "terminal"});
      if (kv.second["running"]) c.running = terms(kv.second["running"], field + ".running");
      if (kv.second["terminal"]) c.terminal = terms(kv.second["terminal"], field + ".terminal");
      if (c.running.empty() && c.terminal.empty()) fail(kv.second, field, "needs running or terminal terms");
      model_.costs.push_back(c);
    }
  }

  std::vector<CostTerm> terms(const YAML::Node& n, const std::string& field) const {
    if (!n.IsSequence()) fail(n, field, "expected a list of terms {signal:, of:, weight:, offset:, power:}");
    std::vector<CostTerm> out;
    static const std::map<std::string, Signal> signals = {
        {"x", Signal::X}, {"y", Signal::Y}, {"z", Signal::Z}, {"vx", Signal::VX}, {"vy", Signal::VY},
        {"vz", Signal::VZ}, {"ax", Signal::AX}, {"ay", Signal::AY}, {"az", Signal::AZ}, {"theta", Signal::Theta}, {"omega", Signal::Omega}, {"alpha", Signal::Alpha},
        {"spring_length", Signal::SpringLength}, {"spring_force", Signal::SpringForce},
        {"reaction", Signal::Reaction}, {"kinetic_energy", Signal::KineticEnergy}, {"time", Signal::Time},
        {"penetration", Signal::Penetration}, {"normal_force", Signal::NormalForce}};
    for (size_t i = 0; i < n.size(); ++i) {
      const YAML::Node t = n[i];
      const std::string tf = fmt::format("{}[{}]", field, i);
      check_keys(t, tf, {"signal", "of", "row", "weight", "offset", "power"});
      CostTerm term;
      note(t["signal"], tf + ".signal");
      const std::string name = scalar(require(t, "signal", tf), tf + ".signal");
      const auto it = signals.find(name);
      if (it == signals.end()) {
        fail(t["signal"], tf + ".signal",
             fmt::format("unknown signal '{}' (x, y, z, vx, vy, vz, ax, ay, az, theta, omega, alpha, spring_length, "
                         "spring_force, reaction, kinetic_energy, time, penetration, normal_force)",
                         name));
      }
      term.signal = it->second;
      bind_signal(t, tf, term);
      if (t["weight"]) term.weight = value(t["weight"], tf + ".weight");
      if (t["offset"]) term.offset = value(t["offset"], tf + ".offset");
      if (t["power"]) {
        term.power = integer(t["power"], tf + ".power");
        if (term.power < 1 || term.power > 8) fail(t["power"], tf + ".power", "expected 1 ... 8");
      }
      out.push_back(term);
    }
    return out;
  }

  /// Resolves `of:` (and `row:`) for the signal's kind.
  void bind_signal(const YAML::Node& t, const std::string& tf, CostTerm& term) const {
    // A field the signal does not read would be ignored: a reader takes it for a selection.
    const std::string signal = t["signal"].Scalar();
    if (t["row"] && term.signal != Signal::Reaction) {
      fail(t["row"], tf + ".row", fmt::format("only a reaction has rows; signal '{}' takes none", signal));
    }
    switch (term.signal) {
      case Signal::KineticEnergy:
      case Signal::Time:
        if (t["of"]) {
          fail(t["of"], tf + ".of",
               fmt::format("signal '{}' is the whole model's and takes no of: (remove it)", signal));
        }
        return;
      case Signal::Theta:
      case Signal::Omega:
      case Signal::Alpha: {
        const YAML::Node of = require(t, "of", tf);
        const YAML::Node named = of.IsMap() ? of["body"] : of;
        const std::string name = named && named.IsScalar() ? named.Scalar() : "";
        if (spatial_index_.count(name) != 0) {
          fail(of, tf + ".of", fmt::format("theta, omega and alpha are signals of planar bodies; '{}' is a spatial body "
                                           "(its signals: x, y, z, vx, vy, vz, ax, ay, az of points on it)", name));
        }
        if (body_index_.count(name) == 0 && refs_.count(name) != 0) {
          fail(of, tf + ".of", fmt::format("theta, omega and alpha are signals of bodies; '{}' is a point", name));
        }
        if (of.IsMap()) {
          fail(of, tf + ".of", "theta, omega and alpha are signals of a whole planar body: of: takes its name, not a point on it");
        }
        const int b = body_or_ground(of, tf + ".of");
        if (b < 0) fail(t["of"], tf + ".of", "expected a body");
        term.body = b;
        return;
      }
      case Signal::Penetration:
      case Signal::NormalForce: {
        const std::string name = scalar(require(t, "of", tf), tf + ".of");
        term.spatial_force = spatial_force_named(name, SpatialForceType::CompliantContact);
        if (term.spatial_force < 0) fail_kind(t["of"], tf + ".of", name, "a compliant contact");
        return;
      }
      case Signal::SpringLength:
      case Signal::SpringForce:
      case Signal::Reaction: {
        const std::string name = scalar(require(t, "of", tf), tf + ".of");
        if (term.signal != Signal::Reaction) {
          term.spatial_force = spatial_force_named(name, SpatialForceType::Spring);
          if (term.spatial_force >= 0) return;
        }
        for (size_t k = 0; k < model_.elements.size(); ++k) {
          const Element& e = model_.elements[k];
          if (e.name != name) continue;
          const bool spring = term.signal != Signal::Reaction;
          if (spring && e.type != ElementType::Spring) fail_kind(t["of"], tf + ".of", name, kTranslationalSpring);
          if (!spring && e.n_constraints() == 0) fail_kind(t["of"], tf + ".of", name, kConstraint);
          term.element = static_cast<int>(k);
          if (t["row"]) term.row = integer(t["row"], tf + ".row");
          if (!spring && (term.row < 0 || term.row >= e.n_constraints())) {
            fail(t["row"], tf + ".row", fmt::format("row {} is not a row of element '{}', which has {} constraint rows (0 to {})", term.row, name,
                                                    e.n_constraints(), e.n_constraints() - 1));
          }
          return;
        }
        if (term.signal == Signal::Reaction) {
          for (size_t k = 0; k < model_.spatial_joints.size(); ++k) {
            const SpatialJoint& j = model_.spatial_joints[k];
            if (j.name != name) continue;
            term.joint = static_cast<int>(k);
            if (t["row"]) term.row = integer(t["row"], tf + ".row");
            if (term.row < 0 || term.row >= j.n_constraints()) {
              fail(t["row"], tf + ".row", fmt::format("row {} is not a row of joint '{}', which has {} constraint rows (0 to {})", term.row, name,
                                                      j.n_constraints(), j.n_constraints() - 1));
            }
            return;
          }
        }
        fail_kind(t["of"], tf + ".of", name, term.signal == Signal::Reaction ? kConstraint : kTranslationalSpring);
      }
      default:
        if (bind_spatial_point(t, tf, term)) return;
        if (term.signal == Signal::Z || term.signal == Signal::VZ || term.signal == Signal::AZ) {
          const YAML::Node of = require(t, "of", tf);
          const YAML::Node name = of.IsMap() ? of["body"] : of;
          fail(of, tf + ".of",
               fmt::format("z, vz and az are signals of spatial bodies (a name or {{body:, at: [x, y, z]}}){}",
                           name && name.IsScalar() ? ": " + unknown_spatial_body(name.Scalar()) : ""));
        }
        term.point = point_ref(require(t, "of", tf), tf + ".of");
        return;
    }
  }

  /// What `name` names, for a message about a name of the wrong kind ("a bushing", "a body"),
  /// or "" if nothing in the model has that name.
  std::string kind_of(const std::string& name) const {
    for (const Element& e : model_.elements) {
      if (e.name == name) return fmt::format("a {} element", e.type_name());
    }
    static const std::map<SpatialForceType, const char*> force_kinds = {
        {SpatialForceType::Spring, "a spatial spring"}, {SpatialForceType::Force, "a force"},
        {SpatialForceType::Torque, "a torque"}, {SpatialForceType::CompliantContact, "a compliant contact"},
        {SpatialForceType::RotationalSpring, "a rotational spring"}, {SpatialForceType::Bushing, "a bushing"}};
    for (const SpatialForce& f : model_.spatial_forces) {
      if (f.name == name) return force_kinds.at(f.type);
    }
    if (joint_index_.count(name) != 0) return "a spatial joint";
    if (spatial_index_.count(name) != 0) return "a spatial body";
    if (body_index_.count(name) != 0) return "a body";
    if (refs_.count(name) != 0) return "a point";
    for (const Contact& c : model_.contacts) {
      if (c.name == name) return "a contact";
    }
    return "";
  }

  static constexpr const char* kTranslationalSpring = "a (translational) spring";
  static constexpr const char* kConstraint = "a joint or constraint element";

  /// Fails on `of`: `name` is not `wanted` ("'mount' is a bushing, not a spring") or names nothing.
  [[noreturn]] void fail_kind(const YAML::Node& of, const std::string& field, const std::string& name,
                              const char* wanted) const {
    const std::string kind = kind_of(name);
    if (kind.empty()) fail(of, field, fmt::format("unknown name '{}' (expected {})", name, wanted));
    fail(of, field, fmt::format("'{}' is {}, not {}", name, kind, wanted));
  }

  /// The index of the spatial force `name` of type `type`, or -1.
  int spatial_force_named(const std::string& name, SpatialForceType type) const {
    for (size_t k = 0; k < model_.spatial_forces.size(); ++k) {
      const SpatialForce& f = model_.spatial_forces[k];
      if (f.name == name && f.type == type) return static_cast<int>(k);
    }
    return -1;
  }

  /// `of:` a spatial body (its frame origin) or {body: name, at: [x, y, z]} on one: true if so.
  bool bind_spatial_point(const YAML::Node& t, const std::string& tf, CostTerm& term) const {
    const YAML::Node of = require(t, "of", tf);
    const YAML::Node name_node = of.IsMap() ? of["body"] : of;
    if (!name_node || !name_node.IsScalar()) return false;
    const auto it = spatial_index_.find(name_node.Scalar());
    if (it == spatial_index_.end()) return false;
    if (of.IsMap()) {
      check_keys(of, tf + ".of", {"body", "at"});
      term.spatial_at = triple(require(of, "at", tf + ".of"), tf + ".of.at");
    }
    term.spatial_body = it->second;
    return true;
  }

  const YAML::Node& root_;
  Model model_;
  std::map<std::string, int> parameter_index_;
  std::map<std::string, int> body_index_;
  std::map<std::string, int> spatial_index_;
  std::map<std::string, int> joint_index_;  ///< spatial joints by name
  size_t urdf_joints_ = 0;                  ///< joints read from the URDF (the first ones)
  std::map<std::string, std::string> urdf_frames_;  ///< the URDF's merged frames (UrdfMechanism::frames)
  std::map<std::string, int> urdf_placing_joints_;  ///< UrdfMechanism::placing_joints
  std::map<std::string, std::string> urdf_unplaced_joints_;  ///< UrdfMechanism::unplaced_joints
  std::map<std::string, YAML::Node> urdf_started_;  ///< the joints urdf_start names, with their keys
  std::map<std::string, PointRef> refs_;
  std::map<std::string, std::string> names_;  ///< ground point, point and body names: who took each
  mutable std::map<std::string, std::string> locations_;
  mutable std::vector<std::string> coordinate_names_;
  mutable std::vector<std::string> parameter_names_;  ///< parameter_group()'s names
  mutable NameGroup group_;
  mutable std::vector<std::pair<std::string, std::shared_ptr<const Expression>>> expression_fields_;
  mutable std::vector<std::vector<std::string>> uses_;  ///< per parameter: the fields that read it  ///< model_.coordinate_names(), once read
};

}  // namespace

Model parse_model(const std::string& text, const std::string& source) { return yaml::read_text<Reader>(text, source); }

namespace {

bool ends_with(const std::string& name, const std::string& suffix) {
  return name.size() > suffix.size() && name.compare(name.size() - suffix.size(), suffix.size(), suffix) == 0;
}

/// A URDF file alone: its mechanism for 1 s under gravity -z, with the kinetic energy at the end
/// as its cost (docs/model-files.md, "URDF").
std::string urdf_alone(const std::string& path) {
  // Single-quoted YAML scalars: a quote doubles; a line break cannot occur in them.
  const auto quoted = [](const std::string& text) {
    std::string out;
    for (const char c : text) {
      if (c == '\n' || c == '\r') throw InputError(fmt::format("{}: a line break in the file's path", text));
      out += c == '\'' ? std::string("''") : std::string(1, c);
    }
    return out;
  };
  return fmt::format("name: '{}'\nhorizon: 1\nurdf: '{}'\ncosts:\n  kinetic_energy: {{terminal: [{{signal: kinetic_energy}}]}}\n",
                     quoted(std::filesystem::path(path).stem().string()), quoted(std::filesystem::absolute(path).string()));
}

}  // namespace

Model load_model(const std::string& path) {
  if (ends_with(path, ".urdf")) {
    detail::read_urdf(path);  // its errors name the URDF file alone, not the model made around it
    return parse_model(urdf_alone(path), path);
  }
  return parse_model(yaml::read_file(path), path);
}

bool is_model_file(const std::string& name) {
  return ends_with(name, ".yaml") || ends_with(name, ".yml") || ends_with(name, ".urdf");
}

}  // namespace saltus::multibody
