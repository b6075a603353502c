#pragma once
// Checks of a formulated model at its initial state, made once before any integration so that
// a model that cannot run is reported as bad input (file, field, element) rather than as a
// failed run minutes later: the partitioning law's coordinates, contacts that start closed or
// penetrating, initial velocities that the constraints overrule, and matrices that are singular
// at t0.
#include <saltus/multibody/dynamics.hpp>

#include <string>
#include <vector>

#include "position_analysis.hpp"

namespace saltus::multibody::detail {

/// Throws InputError if a partitioning contact's normal has a component along a dependent
/// coordinate (the law reverses independent velocities only).
/// The ground angular velocity omega = 2 E(e) e-dot [rad/s] of the spatial body whose
/// coordinates begin at offset o, from the positions q and velocities v.
Eigen::Vector3d spatial_angular_velocity(const Eigen::VectorXd& q, const Eigen::VectorXd& v, int o);

void check_partitioning_laws(const Model& model, const Partition& part);

/// Throws InputError for a contact whose point starts beyond its line (gap < 0), or on it
/// (gap = 0) while approaching, or at rest without moving away unless it is persistent (then it
/// is `active`, pressed, or pulled away): the falling guard would never fire from zero.
void check_initial_contacts(const Model& model, const MotionState<double>& start, const Eigen::VectorXd& p,
                            const std::vector<int>& active);

/// Notes (one line each) for stated initial velocities that the velocity constraints changed,
/// naming the field and the size of the correction; empty if the stated values were kept.
std::vector<std::string> initial_velocity_notes(const Model& model, const Partition& part,
                                                const MotionState<double>& start, const Eigen::VectorXd& p);

/// Fractions of the model's size (the diagonal of the box around its given positions: points,
/// body centres and ground points) and of a turn beyond which a correction that assembly made to
/// a given position is reported: the guess was far from an assembled configuration, and a
/// linkage may have been assembled on another branch than the one drawn.
inline constexpr double kAssemblyCorrectionFraction = 0.01;
inline constexpr double kAssemblyAngleCorrection = 0.01 * 2.0 * 3.141592653589793;

/// Notes (one line each) for given positions that assembly moved by more than the fractions
/// above, naming the field, the coordinate and the size of the correction.
std::vector<std::string> assembly_correction_notes(const Model& model, const Eigen::VectorXd& q,
                                                   const Eigen::VectorXd& p);

/// Turns a failure to build the initial state into an InputError at the model's source; where
/// the model declares its independent coordinates and [Phi_q; B] is singular, at `independent`,
/// saying that they do not parametrize the start.
[[noreturn]] void report_initial_state_failure(const Model& model, const std::string& what);

/// Turns an error of the formulation at t0 (a singular mass, KKT or reduced mass matrix) into
/// an InputError naming the model and, where it can, the coordinates that carry no mass.
[[noreturn]] void report_singular_start(const Model& model, const std::string& formulation,
                                        const std::string& what, const Eigen::VectorXd& p);

}  // namespace saltus::multibody::detail
