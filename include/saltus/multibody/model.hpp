#pragma once
// A multibody model: planar moving points (natural coordinates) and rigid bodies, spatial rigid
// bodies with Euler parameters (spatial.hpp), the elements that constrain them or act on them,
// contacts and costs. The model is data; a formulation (formulation.hpp) turns it into a Saltus
// hybrid Problem.
//
// Coordinates q (n entries, SI units): for each point (x, y) [m], in declaration order, then
// for each body (x, y, theta) of its centre of mass [m, m, rad], then for each spatial body
// (x, y, z) of its frame origin [m] and its Euler parameters (e0, e1, e2, e3). Velocities
// v = q-dot. Equations of motion: M(q) q-ddot + Phi_q^T mu = F(t, q, v, p) (planar masses are
// constant; a spatial body's depends on its orientation and adds quadratic velocity forces to
// F), constraints Phi(t, q, p) = 0 (multibody.md conventions: mu > 0 pushes along -Phi_q^T).
#include <saltus/core/expression.hpp>

#include <Eigen/Core>

#include <array>
#include <cmath>
#include <limits>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

namespace saltus::multibody {

/// A numeric field of the model: a constant, a named design parameter (index into the model's
/// parameter list) times a scale, or an expression over the parameters ("m*l^2/12"). Every
/// field of every element is a Value.
struct Value {
  double constant = 0.0;
  int parameter = -1;  ///< index into Model::parameters, or -1 for a constant
  double scale = 1.0;  ///< a parameter enters as scale * p (e.g. -1 for "-g")
  /// An expression that reads at least one parameter (constant ones are folded into `constant`).
  std::shared_ptr<const Expression> expression;

  Value() = default;
  Value(double c) : constant(c) {}  // NOLINT(google-explicit-constructor)
  static Value of_parameter(int index, double scale = 1.0) {
    Value v;
    v.parameter = index;
    v.scale = scale;
    return v;
  }
  static Value of_expression(Expression e) {
    Value v;
    v.expression = std::make_shared<const Expression>(std::move(e));
    return v;
  }
  bool is_parameter() const { return parameter >= 0; }
  /// Whether the value changes with some parameter.
  bool depends_on_parameters() const { return parameter >= 0 || expression != nullptr; }
  /// Whether the value is 0 whatever the parameters.
  bool is_zero() const { return !depends_on_parameters() && constant == 0.0; }
  /// The value at the parameter vector p.
  template <class S>
  S at(const Eigen::Ref<const VectorX<S>>& p) const {
    if (expression) return expression->template evaluate<S>(p);
    return parameter >= 0 ? S(scale) * p[parameter] : S(constant);
  }
};

struct Parameter {
  std::string name;
  double nominal = 0.0;
  /// Field paths of the model file that read it ("elements[0].length"), as the reader met them.
  std::vector<std::string> used_by;
  std::string description;  ///< free text, shown by `saltus check`
  /// Bounds of every value the parameter may take (the file's and each override), inclusive.
  double lower = -std::numeric_limits<double>::infinity();
  double upper = std::numeric_limits<double>::infinity();
  bool bounded() const { return lower > -std::numeric_limits<double>::infinity() || upper < std::numeric_limits<double>::infinity(); }
};

/// Where a point of an element sits: a fixed location, a moving point, or a point fixed on a
/// body (given in the body frame, relative to its centre of mass).
struct PointRef {
  enum class Kind { Ground, Point, Body };
  Kind kind = Kind::Ground;
  int index = -1;     ///< point or body index (unused for Ground)
  Value x, y;         ///< Ground: global position; Body: body-frame offset; Point: unused
  std::string label;  ///< for messages
};

/// A moving point: two natural coordinates.
struct Point {
  std::string name;
  Value x0 = 0.0, y0 = 0.0;    ///< initial position (exact if independent, else a guess)
  Value vx0 = 0.0, vy0 = 0.0;  ///< initial velocity (used on independent coordinates)
  bool velocity_given = false;  ///< the model states the velocity (else it is derived)
};

/// A rigid body: centre-of-mass position and angle, mass and inertia about the centre of mass.
struct Body {
  std::string name;
  Value mass, inertia;  ///< [kg], [kg m^2]
  Value x0 = 0.0, y0 = 0.0, theta0 = 0.0;
  Value vx0 = 0.0, vy0 = 0.0, omega0 = 0.0;
  bool velocity_given = false;          ///< velocity stated (else derived)
  bool angular_velocity_given = false;  ///< angular_velocity stated (else derived)
};

/// A vector of three Values: a point or a direction in a body frame (or the ground frame), a
/// velocity, a force [SI units of what it holds].
struct Value3 {
  Value x = 0.0, y = 0.0, z = 0.0;
  bool is_zero() const { return x.is_zero() && y.is_zero() && z.is_zero(); }
};

/// f(t) = offset + rate t + amplitude sin(frequency t + phase), for driving constraints.
struct TimeFunction {
  Value offset, rate, amplitude, frequency, phase;
};

/// f(t), f'(t), f''(t) of a driving function.
template <class S>
struct TimeValue {
  S f, df, ddf;
};

/// A driving function and its first two time derivatives at t, its Values read from p.
template <class S>
TimeValue<S> evaluate(const TimeFunction& fn, const S& t, const Eigen::Ref<const VectorX<S>>& p) {
  using std::cos;
  using std::sin;
  const S a = fn.amplitude.template at<S>(p), w = fn.frequency.template at<S>(p);
  const S arg = w * t + fn.phase.template at<S>(p);
  const S s = sin(arg), c = cos(arg);
  return TimeValue<S>{fn.offset.template at<S>(p) + fn.rate.template at<S>(p) * t + a * s,
                      fn.rate.template at<S>(p) + a * w * c, -a * w * w * s};
}

/// A spatial rigid body (docs/multibody.md, "Spatial bodies"; theory multibody.md section 10).
/// Coordinates (7): the origin r = (x, y, z) of the body frame [m] and the Euler parameters
/// (e0, e1, e2, e3) of its orientation, A(p) = (e0^2 - e^T e) I + 2 e e^T + 2 e0 e~ mapping body
/// to ground axes; the normalization p^T p - 1 = 0 is one constraint row of the body. The
/// frame need not sit at the centre of mass.
struct SpatialBody {
  std::string name;
  Value mass;  ///< [kg]
  /// Inertia tensor about the centre of mass in body axes [kg m^2]: xx, yy, zz, xy, xz, yz
  /// (the products of inertia as tensor entries: J_xy = -integral of x y dm).
  std::array<Value, 6> inertia;
  Value3 center;  ///< the centre of mass in the body frame [m]
  Value3 position0;                  ///< initial frame origin [m]
  /// A turn by `angle` [rad] about `axis` (normalized at use).
  struct Turn {
    Value3 axis{0.0, 0.0, 1.0};
    Value angle = 0.0;
  };
  /// Initial orientation: these turns in order, each about the body's axes as the turns before
  /// left them (intrinsic: A = A_1 A_2 ...; the first about ground axes); none: aligned with
  /// the ground.
  std::vector<Turn> orientation0;
  Value3 velocity0;                  ///< initial velocity of the frame origin [m/s]
  Value3 angular_velocity0;          ///< initial angular velocity, ground axes [rad/s]
  bool velocity_given = false;       ///< velocity or angular_velocity stated (else derived)
  /// A body placed at the start by the joint that carries it in a tree (a URDF link,
  /// docs/model-files.md "URDF"): its initial pose and velocity follow from its parent's and
  /// from the joint's start position and rate, by forward kinematics in the scalar type of the
  /// evaluation (so their parameter derivatives follow); position0, orientation0, velocity0 and
  /// angular_velocity0 are then not used.
  struct TreeStart {
    std::string joint;  ///< the joint's name in the robot's file (for messages)
    int parent = -1;    ///< the parent spatial body (-1: the ground); it comes before this one
    /// The joint frame in the parent's body frame: its Euler parameters (e0, e1, e2, e3) and
    /// its origin [m]. At zero joint position the joint frame is this body's frame.
    std::array<double, 4> joint_rotation{1.0, 0.0, 0.0, 0.0};
    std::array<double, 3> joint_origin{0.0, 0.0, 0.0};
    std::array<double, 3> axis{0.0, 0.0, 1.0};  ///< the joint's unit axis in the joint frame
    /// Fixed: no motion (position and rate unused); Turn: a rotation by `position` [rad] about
    /// the axis; Slide: a translation by `position` [m] along it.
    enum class Motion { Fixed, Turn, Slide };
    Motion motion = Motion::Fixed;
    Value position = 0.0;  ///< the joint's position at t0 [rad or m]
    Value rate = 0.0;      ///< its rate at t0 [rad/s or m/s]
    /// A driven joint's f(t) (its driver's, measuring from the joint's zero): then position
    /// and rate are f(t0) and f'(t0), and `position`, `rate` are not used.
    std::optional<TimeFunction> driven_by;
  };
  std::optional<TreeStart> tree_start;
};

/// Joints between spatial bodies (theory multibody.md section 11), built from the primitives
/// spherical (3 rows), dot-1 and distance.
enum class SpatialJointType {
  Spherical,  ///< P_a = P_b (3 rows)
  Revolute,   ///< P_a = P_b and axis_a parallel to axis_b (5 rows)
  Universal,  ///< P_a = P_b and axis_a perpendicular to axis_b (4 rows)
  Distance,   ///< |P_a - P_b|^2 - length^2 = 0 (1 row)
  Cylindrical,    ///< axis_b parallel to axis_a, P_b on the line through P_a along it (4 rows)
  Translational,  ///< cylindrical without the twist: normal_b stays along normal_a (5 rows)
  Fixed,          ///< P_a = P_b, axes parallel, no twist (6 rows)
  /// The angle of a revolute or cylindrical joint about its axis equals f(t) (1 row,
  /// sin(theta - f(t)) = 0; theta as for a rotational spring: spatial_joints.hpp).
  RotationalDriver,
  /// The travel of a translational or cylindrical joint along its axis, (A_a h_a)^T (P_b - P_a),
  /// equals f(t) (1 row).
  TranslationalDriver,
};

/// A joint between spatial bodies a and b (-1: the ground). Points and axes are given in each
/// body's frame (in ground axes for the ground).
struct SpatialJoint {
  SpatialJointType type = SpatialJointType::Spherical;
  std::string name;
  int body_a = -1, body_b = -1;
  Value3 point_a, point_b;  ///< [m]
  Value3 axis_a, axis_b;    ///< all but Spherical and Distance (scaled to unit length at use)
  /// Translational and Fixed: a direction perpendicular to the axis in each frame; the twist
  /// rows hold (A_a normal_a) . (A_b (axis_b x normal_b)) = 0, so the normals stay parallel.
  Value3 normal_a, normal_b;
  Value length;             ///< Distance [m]
  /// Drivers: the driven joint (index into Model::spatial_joints) whose bodies, points and axes
  /// the driver copies (the angle's normals are the driver's own), and f(t) [rad or m].
  int driven = -1;
  TimeFunction drive;
  int n_constraints() const;
};

/// Force elements on spatial bodies.
enum class SpatialForceType {
  Spring,  ///< translational spring-damper-actuator between point_a and point_b
  Force,   ///< a constant force (ground axes) [N] at point_a of body_a
  Torque,  ///< a constant torque (ground axes) [N m] on body_a
  /// A sphere on body_a (centre point_a, `radius`) against the ground, a plane or a height
  /// field z = h(x, y): Hunt-Crossley normal force and regularized Coulomb friction
  /// (docs/multibody.md, "Compliant contact").
  CompliantContact,
  /// A rotational spring-damper-actuator about axis_a between bodies a and b: torque
  /// k wrap(theta - rest angle) + c theta-dot + actuator against the angle theta from normal_a
  /// (on a) to normal_b (on b) about axis_a (spatial_joints.hpp; wrap into (-pi, pi]).
  RotationalSpring,
  /// A bushing between frames at point_a on a and point_b on b: linear springs and dampers on
  /// the displacement u = A_a^T (P_b - P_a) and on the rotation phi = 2 G(p_a) p_b (the vector
  /// part of the relative Euler parameters doubled), both in a's axes.
  Bushing,
};

struct SpatialForce {
  SpatialForceType type = SpatialForceType::Spring;
  std::string name;
  int body_a = -1, body_b = -1;  ///< -1: the ground
  Value3 point_a, point_b;       ///< in the bodies' frames [m]
  Value stiffness = 0.0, damping = 0.0, rest_length = 0.0, actuator = 0.0;  ///< Spring
  Value3 vector;                 ///< Force [N] or Torque [N m]; the plane's normal (ground axes)
  /// Force / Torque: `vector` is in the body's axes and turns with it (a follower load, not
  /// conservative) instead of ground axes.
  bool body_axes = false;
  /// CompliantContact: normal force k delta^exponent (1 + damping delta-dot) >= 0 on a
  /// penetration delta > 0 [m], friction mu N along -v_t / sqrt(|v_t|^2 + slip_velocity^2).
  Value radius = 0.0, exponent = 1.5, friction = 0.0, slip_velocity = 0.1;
  /// The ground of a CompliantContact: the plane through point_b with normal `vector` (ground
  /// axes), or, when `height` is set, the height field z = h(x, y) with its slopes h_x, h_y
  /// (expressions over the groups {x, y} then the parameters).
  std::shared_ptr<const Expression> height, height_x, height_y;
  /// RotationalSpring: the axes and the normals that measure its angle (in a's and b's frames;
  /// normal_b is made perpendicular to axis_b), the rest angle [rad]; `actuator` is its torque
  /// [N m].
  Value3 axis_a, axis_b, normal_a, normal_b;
  Value rest_angle = 0.0;
  /// Bushing: per axis of a's frame, stiffness [N/m] and damping [N s/m] on u, rotational
  /// stiffness [N m/rad] and damping [N m s/rad] on phi.
  Value3 linear_stiffness, linear_damping, angular_stiffness, angular_damping;
};

enum class ElementType {
  Bar,               ///< |P_a - P_b|^2 - L^2 = 0, optionally a uniform rod of mass m
  Revolute,          ///< P_a - P_b = 0 (two rows); a fixed point is a revolute to the ground
  PointOnLine,       ///< n^T (P_a - P_b) = 0, n normal to `direction` (ground or b's frame)
  Prismatic,         ///< relative angle fixed + point on line, between two bodies (or ground)
  CoordinateDriver,  ///< q_k - f(t) = 0
  DistanceDriver,    ///< |P_a - P_b|^2 - f(t)^2 = 0
  Spring,            ///< translational spring-damper-actuator between P_a and P_b
  RotationalSpring,  ///< rotational spring-damper between bodies a and b (-1 ground), or two bars
  PointMass,         ///< mass on a moving point
  Force,             ///< constant force (fx, fy) applied at P_a [N]
};

struct Element {
  ElementType type = ElementType::Bar;
  std::string name;
  PointRef a, b;
  int body_a = -1, body_b = -1;  ///< bodies for Prismatic / RotationalSpring (-1: ground)
  /// RotationalSpring between two bars instead (element indices, -1: bodies): the angle from
  /// bar_a's direction (from -> to) to bar_b's, counter-clockwise, in (-pi, pi].
  int bar_a = -1, bar_b = -1;
  int coordinate = -1;           ///< CoordinateDriver: index into q
  Value length;                  ///< Bar
  Value mass;                    ///< Bar (uniform rod; 0: massless), PointMass
  Value dir_x, dir_y;            ///< PointOnLine / Prismatic direction (frame of b / body_a)
  Value angle;                   ///< Prismatic: theta_b - theta_a; RotationalSpring rest angle
  Value stiffness, damping, rest_length, actuator;  ///< Spring / RotationalSpring
  Value fx, fy;                  ///< Force
  TimeFunction drive;            ///< drivers
  /// A Revolute written as `fixed_point` (a point held at a ground location): messages and
  /// reports give it that type.
  bool fixed_point = false;
  int n_constraints() const;
  /// The element's type as a model file writes it ("fixed_point" or to_string(type)).
  std::string type_name() const;
};

enum class ImpactLaw {
  Partitioning,  ///< reverse the normal independent velocity times e, recompute the rest
  Impulse,       ///< Newton restitution through the KKT impulse system
};

/// What a contact's gap measures.
enum class ContactKind {
  PointLine,  ///< n^T (P - O) [m]: a point against a line
  AngleStop,  ///< +-(angle - limit) [rad]: a relative rotation against its limit
  TravelStop, ///< +-(travel - limit) [m]: a prismatic joint's travel against its limit
  PointPlane, ///< n^T (P - O) [m]: a point of a spatial body against a ground plane
  /// +-(theta - limit) [rad]: a spatial revolute or cylindrical joint's angle theta in (-pi, pi]
  /// (spatial_joints.hpp: about axis_a from normal_a to normal_b) against its limit
  SpatialAngleStop,
  /// +-(travel - limit) [m]: a spatial translational or cylindrical joint's travel (A_a h_a)^T
  /// (P_b - P_a) against its limit
  SpatialTravelStop,
};

/// Whether a contact's gap is an angle [rad] (else a length [m]).
inline bool measures_angle(ContactKind kind) {
  return kind == ContactKind::AngleStop || kind == ContactKind::SpatialAngleStop;
}
/// Whether a contact is a joint stop (planar or spatial).
inline bool is_joint_stop(ContactKind kind) {
  return kind != ContactKind::PointLine && kind != ContactKind::PointPlane;
}

/// A point hitting a line, fixed or carried by a body (guard n^T (P - O) falling through zero),
/// or a joint stop (guard angle - min, max - angle, travel - min or max - travel).
struct Contact {
  std::string name;
  ContactKind kind = ContactKind::PointLine;
  /// Joint stops: the joint measured, as a RotationalSpring (body_a, body_b or bar_a, bar_b;
  /// the angle theta_b - theta_a or the angle from bar_a to bar_b) or a Prismatic element
  /// (travel = dir_a^T (P_b - P_a), dir_a the unit direction in body_a's frame).
  Element joint;
  /// Spatial joint stops: the joint measured (a copy of its bodies, points, axes and the normals
  /// that measure its angle; `driven` is its index in Model::spatial_joints).
  SpatialJoint spatial_joint;
  Value limit;        ///< the stop's limit [rad or m]
  double side = 1.0;  ///< +1: a lower limit (gap = q - limit); -1: an upper one (gap = limit - q)
  PointRef point;
  /// The body carrying the line (-1: the ground). O and n are given in its frame and move
  /// with it: O = r_b + A(theta_b) O_local, n = A(theta_b) n_local.
  int line_body = -1;
  Value line_x, line_y;  ///< a point O of the line
  Value normal_x, normal_y;  ///< the side the point lives on (normalized at use)
  /// PointPlane: the spatial body carrying the point, the point in its frame, and the ground
  /// plane through plane_point with normal plane_normal (to the allowed side, normalized at use).
  int spatial_body = -1;
  Value3 spatial_at, plane_point, plane_normal;
  Value restitution;
  ImpactLaw law = ImpactLaw::Partitioning;
  /// Persistent contact (docs/multibody.md, "Persistent contact"): when an impact leaves the
  /// gap closed with zero rate (restitution 0, or bounces that accumulate), or the model starts
  /// closed at rest with a compressive force, the gap becomes an active unilateral constraint
  /// (gap = 0, its multiplier the contact force) until that force falls through zero.
  bool persistent = false;
  /// Coulomb friction coefficient mu_f >= 0 of a persistent point-line contact (0: none): while
  /// active the contact slides with the force mu_f N against its slip velocity, or sticks
  /// (docs/multibody.md, "Friction").
  Value friction = 0.0;
  bool frictional() const { return friction.depends_on_parameters() || friction.constant != 0.0; }
};

/// Model quantities a cost can use.
enum class Signal {
  X, Y, VX, VY, AX, AY,  ///< of a point reference (or a spatial body point)
  Z, VZ, AZ,              ///< of a spatial body point
  Theta, Omega, Alpha,    ///< of a body
  SpringLength, SpringForce,  ///< of a Spring element or spatial spring (tension positive)
  Penetration, NormalForce,   ///< of a spatial compliant contact [m], [N]
  Reaction,               ///< multiplier of row `row` of a constraint element or spatial joint
  KineticEnergy,          ///< of the whole model
  Time,
};

/// weight * (signal - offset)^power.
struct CostTerm {
  Signal signal = Signal::X;
  PointRef point;
  int body = -1;
  int element = -1;
  int joint = -1;          ///< Reaction of a spatial joint (index into Model::spatial_joints)
  int spatial_force = -1;  ///< SpringLength ... NormalForce of a spatial force (index)
  int spatial_body = -1;   ///< X ... AZ of a point on this spatial body (index), else of `point`
  Value3 spatial_at;       ///< that point in the body frame [m]
  int row = 0;
  Value weight = 1.0;
  Value offset = 0.0;
  int power = 1;
  bool needs_acceleration() const;
};

struct CostSpec {
  std::string name;
  std::vector<CostTerm> running;   ///< integrated over [t0, tf]
  std::vector<CostTerm> terminal;  ///< evaluated at tf (no accelerations or reactions)
};

/// Penalty and Index1 (ODEs in q, v), Maggi (ODE in the independent coordinates), and the DAEs
/// in q, v and the multipliers run on IDAS: GGL (stabilized index 2) and StabilizedIndex1
/// (Anantharaman-Hiller).
enum class FormulationType { Penalty, Index1, Maggi, GGL, StabilizedIndex1, Index3 };

/// Formulation settings with their defaults (docs/multibody.md explains the choices).
struct FormulationSettings {
  FormulationType type = FormulationType::Index1;
  /// Penalty (Bayo - Garcia de Jalon): alpha I penalty, xi damping ratio, omega natural
  /// frequency [rad/s] of the constraint-violation dynamics.
  double penalty_alpha = 1e7, penalty_xi = 1.0, penalty_omega = 10.0;
  /// Index-1 Baumgarte stabilization: Phi'' + 2 xi omega Phi' + omega^2 Phi = 0.
  double baumgarte_xi = 1.0, baumgarte_omega = 10.0;
  /// Position (assembly / Maggi) Newton: tolerance on |Phi| and iteration limit.
  double newton_tolerance = 1e-12;
  int newton_iterations = 50;
};

struct Model {
  std::string name;
  std::string description;  ///< the file's free text (description:), may be empty
  std::string source;  ///< file the model came from (for messages), may be empty
  /// What reading the model left out without correcting anything (a URDF's joint limits,
  /// damping and friction), for the run's report (Problem::remarks).
  std::vector<std::string> notes;
  std::vector<Parameter> parameters;
  /// The file's fields given as expressions of parameters, with their expressions (field path as
  /// in `locations`): check_domains evaluates each at the run's parameters, so that one that is
  /// not finite at an override is refused where it is written.
  std::vector<std::pair<std::string, std::shared_ptr<const Expression>>> expression_fields;
  std::vector<Point> points;
  std::vector<Body> bodies;
  std::vector<Element> elements;
  std::vector<SpatialBody> spatial_bodies;
  std::vector<SpatialJoint> spatial_joints;
  std::vector<SpatialForce> spatial_forces;
  /// Spatial joint rows left out of Phi because they depend on the others (a closed loop of
  /// revolute joints with parallel axes: a planar linkage built spatially), as indices into the
  /// joints' rows (0 = the first joint's first row), increasing. Set by make_problem
  /// (find_redundant_joint_rows), not by model files; their reactions are zero.
  std::vector<int> redundant_joint_rows;
  std::vector<Contact> contacts;
  std::vector<CostSpec> costs;
  /// [m/s^2]; gravity_z acts on spatial bodies only (planar models live in the x-y plane).
  Value gravity_x = 0.0, gravity_y = -9.81, gravity_z = 0.0;
  /// Independent coordinates (indices into q) for Maggi and the partitioning impact law;
  /// empty: chosen by pivoted LU of Phi_q at the initial configuration.
  std::vector<int> independent;
  FormulationSettings formulation;
  double t0 = 0.0, tf = 1.0;
  double rtol = 1e-8, atol = 1e-10;
  int n_outputs = 101;
  /// Where each field was written, by field path ("elements[2].length" ->
  /// "model.yaml:14:40"), for messages; empty for models built in C++.
  std::map<std::string, std::string> locations;

  int n_coordinates() const {
    return 2 * static_cast<int>(points.size()) + 3 * static_cast<int>(bodies.size()) +
           7 * static_cast<int>(spatial_bodies.size());
  }
  /// The most coordinates validate() accepts: the spatial chain of 128 bodies (896) and some
  /// room. The index-1 and penalty forms and the DAE forms' forward Newton matrices are sparse
  /// (O(nnz) per evaluation), but Maggi's reduced mass matrix stays dense, O(n^3) per
  /// factorization, and the DAE adjoints' backward passes linearize densely, O(n^2) per point
  /// (docs/multibody.md, "Limits"): far larger models would only stall.
  static constexpr int max_coordinates = 1000;
  /// The most contacts validate() accepts: each is an event whose guard every step evaluates
  /// (in Maggi with a position analysis of its own).
  static constexpr int max_contacts = 1000;
  /// A q-shaped vector of per-point and per-body fields evaluated at p (spatial bodies' entries
  /// zero: see initial_positions).
  template <class S>
  VectorX<S> gather(const Eigen::Ref<const VectorX<S>>& p, std::array<Value Point::*, 2> point_fields,
                    std::array<Value Body::*, 3> body_fields) const {
    VectorX<S> q = VectorX<S>::Zero(n_coordinates());
    for (size_t i = 0; i < points.size(); ++i) {
      for (int k = 0; k < 2; ++k) q[point_offset(static_cast<int>(i)) + k] = (points[i].*point_fields[static_cast<size_t>(k)]).template at<S>(p);
    }
    for (size_t b = 0; b < bodies.size(); ++b) {
      for (int k = 0; k < 3; ++k) q[body_offset(static_cast<int>(b)) + k] = (bodies[b].*body_fields[static_cast<size_t>(k)]).template at<S>(p);
    }
    return q;
  }
  int n_constraints() const;
  /// The diagonal of the box around the positions q of points, body centres (spatial bodies'
  /// frame origins, in 3D) and the ground points that elements, spatial joints and contacts use,
  /// at parameters p [m]: the model's size, wherever it sits.
  double extent(const Eigen::VectorXd& q, const Eigen::VectorXd& p) const;
  /// The size of a motion (q, v) that does not depend on where the origin is [SI]: the larger of
  /// |v|_inf (for a spatial body v holds its Euler parameters' rates, half its angular velocity)
  /// and half the extent of q with the ground points at the nominal parameters. The index-1 and
  /// penalty forms' forward sensitivities take their tolerance floor from it
  /// (Options::sensitivity_atol_from_states): |x0|_inf made a vehicle placed at x = 1000 m
  /// resolve them 60 times more coarsely than the same vehicle at the origin.
  double motion_scale(const Eigen::VectorXd& q, const Eigen::VectorXd& v) const;
  /// Names of the coordinates: "<point>.x", "<point>.y", "<body>.x", "<body>.y", "<body>.theta",
  /// then for each spatial body "<body>.x", "<body>.y", "<body>.z", "<body>.e0" ... "<body>.e3".
  std::vector<std::string> coordinate_names() const;
  int point_offset(int point) const { return 2 * point; }
  int body_offset(int body) const { return 2 * static_cast<int>(points.size()) + 3 * body; }
  int spatial_offset(int body) const {
    return 2 * static_cast<int>(points.size()) + 3 * static_cast<int>(bodies.size()) + 7 * body;
  }
  /// The constraint rows of the spatial joints start after the elements' rows; each spatial
  /// body's normalization row follows them, in body order.
  int n_element_constraints() const;
  int n_joint_constraints() const;
  Eigen::VectorXd nominal_parameters() const;
  /// Initial guess q0 and velocity v0 from the points' and bodies' initial data at the nominal
  /// parameters.
  Eigen::VectorXd initial_positions() const;
  Eigen::VectorXd initial_velocities() const;
  /// The same at parameters p (positions and velocities may be expressions of p), in any
  /// scalar type, so that dq0/dp and dv0/dp follow.
  template <class S>
  VectorX<S> initial_positions(const Eigen::Ref<const VectorX<S>>& p) const {
    VectorX<S> q = gather<S>(p, {&Point::x0, &Point::y0}, {&Body::x0, &Body::y0, &Body::theta0});
    for (size_t b = 0; b < spatial_bodies.size(); ++b) {
      const SpatialBody& body = spatial_bodies[b];
      q.segment(spatial_offset(static_cast<int>(b)), 7) =
          body.tree_start ? tree_initial_pose<S>(*body.tree_start, p, q) : spatial_initial_pose<S>(body, p);
    }
    return q;
  }
  template <class S>
  VectorX<S> initial_velocities(const Eigen::Ref<const VectorX<S>>& p) const {
    return initial_velocities<S>(p, initial_positions<S>(p));
  }
  /// The same with the spatial bodies' Euler-parameter rates p-dot = E(p)^T omega / 2 taken at
  /// the Euler parameters of `q` (n_q): at an assembled configuration that turned a given
  /// orientation, the stated angular velocity is kept (at the given one it would not be).
  template <class S>
  VectorX<S> initial_velocities(const Eigen::Ref<const VectorX<S>>& p, const Eigen::Ref<const VectorX<S>>& q) const {
    VectorX<S> v = gather<S>(p, {&Point::vx0, &Point::vy0}, {&Body::vx0, &Body::vy0, &Body::omega0});
    // Each spatial body's frame-origin velocity and angular velocity (ground axes), for the
    // bodies placed by a tree joint after their parent.
    std::vector<Eigen::Matrix<S, 3, 1>> origin_velocity(spatial_bodies.size()), angular_velocity(spatial_bodies.size());
    for (size_t b = 0; b < spatial_bodies.size(); ++b) {
      const SpatialBody& body = spatial_bodies[b];
      const int o = spatial_offset(static_cast<int>(b));
      if (body.tree_start) {
        std::tie(origin_velocity[b], angular_velocity[b]) =
            tree_initial_velocity<S>(*body.tree_start, p, q, origin_velocity, angular_velocity, o);
      } else {
        origin_velocity[b] = {body.velocity0.x.template at<S>(p), body.velocity0.y.template at<S>(p),
                              body.velocity0.z.template at<S>(p)};
        angular_velocity[b] = {body.angular_velocity0.x.template at<S>(p), body.angular_velocity0.y.template at<S>(p),
                               body.angular_velocity0.z.template at<S>(p)};
      }
      v.segment(o, 7) = spatial_rate<S>(origin_velocity[b], angular_velocity[b], q.template segment<4>(o + 3));
    }
    return v;
  }
  /// The Euler parameters of the product q_1 q_2 (A(q_1 q_2) = A(q_1) A(q_2)), written out:
  /// Eigen's dot conjugates a Complex operand, which the complex step must not.
  template <class S>
  static Eigen::Matrix<S, 4, 1> euler_product(const Eigen::Matrix<S, 4, 1>& a, const Eigen::Matrix<S, 4, 1>& u) {
    return Eigen::Matrix<S, 4, 1>(a[0] * u[0] - (a[1] * u[1] + a[2] * u[2] + a[3] * u[3]),
                                  a[0] * u[1] + u[0] * a[1] + (a[2] * u[3] - a[3] * u[2]),
                                  a[0] * u[2] + u[0] * a[2] + (a[3] * u[1] - a[1] * u[3]),
                                  a[0] * u[3] + u[0] * a[3] + (a[1] * u[2] - a[2] * u[1]));
  }
  /// A(e) a: the vector a of a frame with Euler parameters e, in ground axes.
  template <class S>
  static Eigen::Matrix<S, 3, 1> euler_rotate(const Eigen::Matrix<S, 4, 1>& e, const Eigen::Matrix<S, 3, 1>& a) {
    const Eigen::Matrix<S, 4, 1> pure(S(0.0), a[0], a[1], a[2]);
    const Eigen::Matrix<S, 4, 1> conjugate(e[0], -e[1], -e[2], -e[3]);
    const Eigen::Matrix<S, 4, 1> turned = euler_product<S>(euler_product<S>(e, pure), conjugate);
    return {turned[1], turned[2], turned[3]};
  }
  /// The parent's frame of a tree start in q: its origin and Euler parameters (the ground's:
  /// zero and the identity).
  template <class S>
  std::pair<Eigen::Matrix<S, 3, 1>, Eigen::Matrix<S, 4, 1>> tree_parent_frame(const SpatialBody::TreeStart& start,
                                                                               const Eigen::Ref<const VectorX<S>>& q) const {
    if (start.parent < 0) return {Eigen::Matrix<S, 3, 1>::Zero(), Eigen::Matrix<S, 4, 1>(S(1.0), S(0.0), S(0.0), S(0.0))};
    const int o = spatial_offset(start.parent);
    return {q.template segment<3>(o), q.template segment<4>(o + 3)};
  }
  /// The joint frame's Euler parameters and the joint axis in ground axes, for the parent at
  /// Euler parameters `parent`.
  template <class S>
  static std::pair<Eigen::Matrix<S, 4, 1>, Eigen::Matrix<S, 3, 1>> tree_joint_frame(const SpatialBody::TreeStart& start,
                                                                                    const Eigen::Matrix<S, 4, 1>& parent) {
    const auto& r = start.joint_rotation;
    const Eigen::Matrix<S, 4, 1> joint = euler_product<S>(parent, Eigen::Matrix<S, 4, 1>(S(r[0]), S(r[1]), S(r[2]), S(r[3])));
    return {joint, euler_rotate<S>(joint, Eigen::Matrix<S, 3, 1>(S(start.axis[0]), S(start.axis[1]), S(start.axis[2])))};
  }
  /// A tree joint's position and rate at t0: its own, or its driver's f(t0) and f'(t0).
  template <class S>
  std::pair<S, S> tree_start_position(const SpatialBody::TreeStart& start, const Eigen::Ref<const VectorX<S>>& p) const {
    if (!start.driven_by) return {start.position.template at<S>(p), start.rate.template at<S>(p)};
    const TimeValue<S> f = evaluate<S>(*start.driven_by, S(t0), p);
    return {f.f, f.df};
  }
  /// (r, e0, e1, e2, e3) of a body placed by a tree joint, its parent's pose read from q:
  /// r = r_parent + A_parent o (+ d h for a slide), e = e_parent e_joint (e_turn(theta, h) for a
  /// turn), with o and e_joint the joint frame in the parent, h the axis.
  template <class S>
  Eigen::Matrix<S, 7, 1> tree_initial_pose(const SpatialBody::TreeStart& start, const Eigen::Ref<const VectorX<S>>& p,
                                           const Eigen::Ref<const VectorX<S>>& q) const {
    using std::cos;
    using std::sin;
    const auto [r_parent, e_parent] = tree_parent_frame<S>(start, q);
    const auto [e_joint, axis] = tree_joint_frame<S>(start, e_parent);
    const auto& o = start.joint_origin;
    Eigen::Matrix<S, 3, 1> r = r_parent + euler_rotate<S>(e_parent, Eigen::Matrix<S, 3, 1>(S(o[0]), S(o[1]), S(o[2])));
    Eigen::Matrix<S, 4, 1> e = e_joint;
    const S position = tree_start_position<S>(start, p).first;
    if (start.motion == SpatialBody::TreeStart::Motion::Slide) r += position * axis;
    if (start.motion == SpatialBody::TreeStart::Motion::Turn) {
      const S half = position / S(2.0), s = sin(half);
      const auto& h = start.axis;
      e = euler_product<S>(e_joint, Eigen::Matrix<S, 4, 1>(cos(half), s * h[0], s * h[1], s * h[2]));
    }
    Eigen::Matrix<S, 7, 1> pose;
    pose << r, e;
    return pose;
  }
  /// The frame-origin velocity and angular velocity (ground axes) of a body placed by a tree
  /// joint, from its parent's (earlier in `velocity`, `omega`; the ground's are zero) and the
  /// joint's rate: omega = omega_parent (+ theta-dot h), v = v_parent + omega_parent x
  /// (r - r_parent) (+ d-dot h), with h the axis in ground axes; positions from q (the body at
  /// coordinate offset o).
  template <class S>
  std::pair<Eigen::Matrix<S, 3, 1>, Eigen::Matrix<S, 3, 1>> tree_initial_velocity(
      const SpatialBody::TreeStart& start, const Eigen::Ref<const VectorX<S>>& p, const Eigen::Ref<const VectorX<S>>& q,
      const std::vector<Eigen::Matrix<S, 3, 1>>& velocity, const std::vector<Eigen::Matrix<S, 3, 1>>& omega, int o) const {
    const auto [r_parent, e_parent] = tree_parent_frame<S>(start, q);
    const auto axis = tree_joint_frame<S>(start, e_parent).second;
    const bool grounded = start.parent < 0;
    const Eigen::Matrix<S, 3, 1> w_parent = grounded ? Eigen::Matrix<S, 3, 1>::Zero() : omega[static_cast<size_t>(start.parent)];
    Eigen::Matrix<S, 3, 1> v = grounded ? Eigen::Matrix<S, 3, 1>::Zero() : velocity[static_cast<size_t>(start.parent)];
    const Eigen::Matrix<S, 3, 1> d = q.template segment<3>(o) - r_parent;
    v += Eigen::Matrix<S, 3, 1>(w_parent[1] * d[2] - w_parent[2] * d[1], w_parent[2] * d[0] - w_parent[0] * d[2],
                                w_parent[0] * d[1] - w_parent[1] * d[0]);
    Eigen::Matrix<S, 3, 1> w = w_parent;
    const S rate = tree_start_position<S>(start, p).second;
    if (start.motion == SpatialBody::TreeStart::Motion::Slide) v += rate * axis;
    if (start.motion == SpatialBody::TreeStart::Motion::Turn) w += rate * axis;
    return {v, w};
  }
  /// (r, e0, e1, e2, e3) of a spatial body's initial pose: the product of its turns' Euler
  /// parameters, each (cos(angle/2), sin(angle/2) axis/|axis|).
  template <class S>
  static Eigen::Matrix<S, 7, 1> spatial_initial_pose(const SpatialBody& b, const Eigen::Ref<const VectorX<S>>& p) {
    using std::cos;
    using std::sin;
    using std::sqrt;
    Eigen::Matrix<S, 7, 1> pose;
    pose << b.position0.x.template at<S>(p), b.position0.y.template at<S>(p), b.position0.z.template at<S>(p), S(0.0),
        S(0.0), S(0.0), S(0.0);
    // The quaternion product q_1 q_2 ... of the turns' Euler parameters: A(q_1 q_2) = A_1 A_2.
    Eigen::Matrix<S, 4, 1> q(S(1.0), S(0.0), S(0.0), S(0.0));
    for (const SpatialBody::Turn& turn : b.orientation0) {
      const S ax = turn.axis.x.template at<S>(p), ay = turn.axis.y.template at<S>(p), az = turn.axis.z.template at<S>(p);
      const S half = turn.angle.template at<S>(p) / S(2.0);
      const S size = sqrt(ax * ax + ay * ay + az * az);
      const S c = cos(half), s0 = sin(half) / size;
      q = euler_product<S>(q, Eigen::Matrix<S, 4, 1>(c, s0 * ax, s0 * ay, s0 * az));
    }
    pose.template tail<4>() = q;
    return pose;
  }
  /// (r-dot, p-dot) from the frame origin's velocity and the angular velocity omega (ground
  /// axes): p-dot = E(p)^T omega / 2 at the Euler parameters `euler` (e0, e1, e2, e3).
  template <class S>
  static Eigen::Matrix<S, 7, 1> spatial_rate(const Eigen::Matrix<S, 3, 1>& velocity, const Eigen::Matrix<S, 3, 1>& omega,
                                             const Eigen::Matrix<S, 4, 1>& euler) {
    const S e0 = euler[0], e1 = euler[1], e2 = euler[2], e3 = euler[3];
    const S wx = omega[0], wy = omega[1], wz = omega[2];
    Eigen::Matrix<S, 7, 1> rate;
    rate.template head<3>() = velocity;
    // E^T = [-e^T; e~^T + e0 I] = [-e^T; -e~ + e0 I].
    rate[3] = S(0.5) * (-e1 * wx - e2 * wy - e3 * wz);
    rate[4] = S(0.5) * (e0 * wx + e3 * wy - e2 * wz);
    rate[5] = S(0.5) * (-e3 * wx + e0 * wy + e1 * wz);
    rate[6] = S(0.5) * (e2 * wx - e1 * wy + e0 * wz);
    return rate;
  }
  /// Throws InputError naming the element or field that is inconsistent: the structure
  /// (names, references, a bar from a point to itself, ...) and check_domains at the nominal
  /// parameters.
  void validate() const;
  /// The structure of the spatial part: body indices in range, joints between two different
  /// bodies, names used once.
  void validate_spatial() const;
  /// Throws InputError unless stop c (contacts[index], on a spatial joint) is well formed.
  void validate_spatial_stop(const Contact& c, size_t index) const;
  /// Throws InputError unless every field with a physical domain lies in it at parameters p
  /// (docs/model-files.md, "Domains"): masses, inertias and bar lengths > 0, rod masses,
  /// stiffnesses, dampings and rest lengths >= 0, restitutions in [0, 1], line normals and
  /// directions non-zero. The message names the location, the field, the value and the
  /// parameter it came from.
  void check_domains(const Eigen::VectorXd& p) const;
  /// Throws InputError, located at the driver, when a distance driver's f(t) reaches zero
  /// within [run_t0, run_tf] [s] at p (a distance has no direction at zero). check_domains
  /// checks the file's horizon; every run checks its own (Problem::check_horizon), `--tend`
  /// included.
  void check_horizon(const Eigen::VectorXd& p, double run_t0, double run_tf) const;
  /// Throws InputError unless every parameter lies in its [min, max] (Parameter::lower, upper),
  /// located at the parameter's entry in the file.
  void check_parameter_bounds(const Eigen::VectorXd& p) const;
  /// A cost term reading a spatial force (penetration, normal_force, or a spatial spring's
  /// length or force) must name one of the right type.
  void check_spatial_force_signal(const CostSpec& c, const CostTerm& t) const;
  /// "file:line:col: field" (or "file: field", or "model 'name': field") for messages.
  std::string locate(const std::string& field) const;
  /// "elements[i] 'name'" / "contacts[i] 'name'" for messages.
  std::string describe_element(int element) const;
  /// The element that owns constraint row `row` (Phi stacks the elements' rows in order), or -1
  /// for a spatial joint's or a normalization row.
  int element_of_row(int row) const;
  /// "bar 'rod' (file:line:col: elements[2])", "joint 'R' (...: spatial.joints[0])" or
  /// "the normalization of spatial body 'top'": the owner of row `row` of Phi, for messages.
  std::string describe_row(int row) const;
};

std::string to_string(FormulationType type);
/// The model-file spelling of an element type: "bar", "revolute", "spring", ...
std::string to_string(ElementType type);
/// "penalty" | "index1" | "maggi" | "ggl" | "stabilized_index1" | "index3"; throws InputError
/// listing the choices otherwise.
FormulationType parse_formulation(const std::string& name);

}  // namespace saltus::multibody
