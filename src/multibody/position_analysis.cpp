#include "position_analysis.hpp"

#include <Eigen/LU>
#include <Eigen/QR>
#include <fmt/ranges.h>

#include <algorithm>
#include <cmath>
#include <limits>

namespace saltus::multibody::detail {

int Partition::slot(int k) const {
  const auto it = std::find(independent.begin(), independent.end(), k);
  return it == independent.end() ? -1 : static_cast<int>(it - independent.begin());
}

namespace {

std::string describe_coordinates(const Model& model, const std::vector<int>& indices) {
  const std::vector<std::string> names = model.coordinate_names();
  std::string s;
  for (int k : indices) s += (s.empty() ? "" : ", ") + names[static_cast<size_t>(k)];
  return s;
}

/// The constraint rows that a column-pivoted QR of Phi_q^T leaves out of its leading rank, each
/// with the rows it is a combination of, named by their elements.
std::string describe_dependent_rows(const Model& model, const Eigen::MatrixXd& jac) {
  Eigen::ColPivHouseholderQR<Eigen::MatrixXd> qr(jac.transpose());
  const Eigen::Index rank = qr.rank();
  const Eigen::VectorXi order = qr.colsPermutation().indices();
  Eigen::MatrixXd basis(jac.cols(), rank);
  for (Eigen::Index k = 0; k < rank; ++k) basis.col(k) = jac.row(order[k]).transpose();
  // With rank 0 (every row zero, e.g. a bar between two ground points) the basis has no columns,
  // and Eigen's QR of a matrix without columns reads past the end of its empty norm vector.
  Eigen::ColPivHouseholderQR<Eigen::MatrixXd> basis_qr;
  if (rank > 0) basis_qr.compute(basis);
  auto name_row = [&](int row) {
    const int element = model.element_of_row(row);
    if (element < 0) return fmt::format("{} (row {} of Phi)", model.describe_row(row), row);
    return fmt::format("{} (row {} of Phi, {})", model.describe_element(element), row,
                       model.locate(fmt::format("elements[{}]", element)));
  };
  std::vector<std::string> rows;
  for (Eigen::Index i = rank; i < jac.rows(); ++i) {
    const Eigen::VectorXd weights =
        rank > 0 ? Eigen::VectorXd(basis_qr.solve(Eigen::VectorXd(jac.row(order[i]).transpose()))) : Eigen::VectorXd();
    std::vector<std::string> partners;
    for (Eigen::Index k = 0; k < rank; ++k) {
      if (std::abs(weights[k]) > 1e-9 * weights.cwiseAbs().maxCoeff()) partners.push_back(name_row(order[k]));
    }
    rows.push_back(fmt::format("{} with {}", name_row(order[i]),
                               partners.empty() ? "a zero row" : fmt::format("{}", fmt::join(partners, " and "))));
  }
  return fmt::format("{}", fmt::join(rows, "; "));
}

/// Where a dependent row of Phi_q is written, of rank `rank` (the partition's): the row the
/// column-pivoted QR of Phi_q^T leaves last among the first rank + 1 (describe_dependent_rows'
/// first), as "file:line:column: elements[k]" for an element's row, else the model file.
std::string locate_first_dependent_row(const Model& model, const Eigen::MatrixXd& jac, Eigen::Index rank) {
  const Eigen::ColPivHouseholderQR<Eigen::MatrixXd> qr(jac.transpose());
  const std::string file = model.source.empty() ? "model" : model.source;
  if (rank < 0 || rank >= jac.rows()) return file;
  const int element = model.element_of_row(qr.colsPermutation().indices()[rank]);
  return element < 0 ? file : model.locate(fmt::format("elements[{}]", element));
}

/// ", largest in bar 'x' (elements[2])" for the row of largest |Phi|, or "".
std::string worst_row(const Model& model, const Eigen::VectorXd& phi) {
  if (phi.size() == 0 || !phi.allFinite()) return "";
  Eigen::Index row = 0;
  phi.cwiseAbs().maxCoeff(&row);
  return ", largest in " + model.describe_row(static_cast<int>(row));
}

}  // namespace

namespace {

/// The index (in Phi, no row left out) of the first row of the joint that owns row `row`.
int first_joint_row_of(const Model& every_row, int row) {
  int first = every_row.n_element_constraints();
  for (const SpatialJoint& j : every_row.spatial_joints) {
    if (row < first + j.n_constraints()) return first;
    first += j.n_constraints();
  }
  return first;
}

}  // namespace

/// The spatial joint that row r of the joints' rows (0 = the first joint's first row) belongs to.
static int joint_of_row(const Model& m, int r) {
  int joint = 0;
  while (r >= m.spatial_joints[static_cast<size_t>(joint)].n_constraints()) r -= m.spatial_joints[static_cast<size_t>(joint++)].n_constraints();
  return joint;
}

namespace {

/// Refuses a rotational driver whose angle at `start` is not within a quarter turn of f(t0)
/// (cos(theta - f) at most `margin`): its row sin(theta - f) also holds at f + pi, and at a
/// quarter turn it has no gradient. `where` says which positions: "as drawn" or "once assembled".
void check_driver_angles(const Model& model, const MotionState<double>& start, const Eigen::VectorXd& p,
                         double margin, const char* where) {
  const In<double> params(p);
  for (size_t i = 0; i < model.spatial_joints.size(); ++i) {
    const SpatialJoint& j = model.spatial_joints[i];
    if (j.type != SpatialJointType::RotationalDriver) continue;
    const AngleRows<double> angle =
        joint_angle_rows<double>(model, start, params, j.body_a, j.body_b, j.axis_a, j.normal_a, j.axis_b, j.normal_b, j.name);
    const double theta = std::atan2(angle.sin.value, angle.cos.value);
    const double f = evaluate<double>(j.drive, start.t, params).f;
    if (!(std::cos(theta - f) > margin)) {
      throw InputError(fmt::format("{}: driver '{}' starts at the angle {} rad {} where f(t0) = {} rad: draw the bodies "
                                   "within a quarter turn of f(t0) (its row sin(theta - f) also holds at f + pi)",
                                   model.locate(fmt::format("spatial.joints[{}]", i)), j.name, theta, where, f));
    }
  }
}

}  // namespace

std::vector<int> find_redundant_joint_rows(const Model& model, const Eigen::VectorXd& p) {
  Model every_row = model;
  every_row.redundant_joint_rows.clear();
  const int n = every_row.n_coordinates();
  const MotionState<double> drawn{model.t0, model.initial_positions(), Eigen::VectorXd::Zero(n)};
  // A driver drawn a quarter turn or more from f(t0): its row has no gradient there (it would be
  // taken for redundant below) or the assembly would take it to f + pi.
  check_driver_angles(every_row, drawn, p, 1e-9, "as drawn");
  const ConstraintSet<double> c = constraints<double>(every_row, drawn, p);
  const Eigen::MatrixXd jac = c.dense_real_jacobian();
  const int first_joint = every_row.n_element_constraints(), joints = every_row.n_joint_constraints();
  std::vector<Eigen::VectorXd> basis;
  // Adds row r's direction to the basis if it has one beyond it; false if it depends on it.
  const auto extend = [&](Eigen::Index r) {
    const Eigen::VectorXd row = jac.row(r).transpose();
    Eigen::VectorXd rest = row;
    for (int pass = 0; pass < 2; ++pass) {  // twice: classical Gram-Schmidt loses orthogonality
      for (const Eigen::VectorXd& b : basis) rest -= b * b.dot(rest);
    }
    if (!(rest.norm() > kRedundantRowTolerance * row.norm())) return false;
    basis.push_back(rest / rest.norm());
    return true;
  };
  for (Eigen::Index r = 0; r < jac.rows(); ++r) {
    if (r < first_joint || r >= first_joint + joints) extend(r);
  }
  std::vector<int> redundant;
  for (int r = 0; r < joints; ++r) {
    const Eigen::Index row = first_joint + r;
    if (!(jac.row(row).norm() > 0.0)) {
      // A row without a gradient is a degenerate joint, not a redundant one: a distance joint
      // whose ends coincide, a universal joint whose axes are parallel, a normal along the axis.
      throw InputError(fmt::format("{}: its row {} has no gradient at the initial positions (ends that coincide, "
                                   "axes that are parallel where they must be perpendicular, or a normal along its "
                                   "axis)",
                                   every_row.describe_row(static_cast<int>(row)),
                                   static_cast<int>(row) - first_joint_row_of(every_row, static_cast<int>(row))));
    }
    if (!extend(row)) {
      const int joint = joint_of_row(every_row, r);
      const SpatialJoint& j = every_row.spatial_joints[static_cast<size_t>(joint)];
      if (j.type == SpatialJointType::RotationalDriver || j.type == SpatialJointType::TranslationalDriver) {
        // A driver's f(t) moves on: a row that merely agrees with the others at t0 would be
        // dropped for the whole run.
        throw InputError(fmt::format("{}: driver '{}' depends on the joints before it at the initial positions (it "
                                     "drives a motion they already fix)",
                                     every_row.locate(fmt::format("spatial.joints[{}]", joint)), j.name));
      }
      redundant.push_back(r);
    }
  }
  return redundant;
}


void check_drivers_on_their_branch(const Model& model, const MotionState<double>& start, const Eigen::VectorXd& p) {
  check_driver_angles(model, start, p, 0.0, "once assembled");
}

void check_redundant_rows_hold(const Model& model, const MotionState<double>& start, const Eigen::VectorXd& p) {
  if (model.redundant_joint_rows.empty()) return;
  std::vector<KinRow<double>> rows;
  for (const SpatialJoint& j : model.spatial_joints) append_joint_rows<double>(j, model, start, p, rows);
  const double tolerance = 1e-8 * std::max(1.0, start.q.cwiseAbs().maxCoeff());
  Model every_row = model;
  every_row.redundant_joint_rows.clear();
  for (const int r : model.redundant_joint_rows) {
    const double residual = rows[static_cast<size_t>(r)].value;
    if (std::abs(residual) <= tolerance) continue;
    const int row = every_row.n_element_constraints() + r;
    throw InputError(fmt::format("{}: its row {} depends on the other constraints at the initial positions but is not "
                                 "satisfied once they are (residual {:.3g}): conflicting joints",
                                 every_row.describe_row(row), row - first_joint_row_of(every_row, row), residual));
  }
}

Model with_redundant_joint_rows_left_out(const Model& model, const Eigen::VectorXd& p) {
  Model resolved = model;
  if (!model.spatial_joints.empty()) resolved.redundant_joint_rows = find_redundant_joint_rows(model, p);
  return resolved;
}

namespace {

/// A declared independent coordinate must not be one a coordinate driver prescribes: the
/// position analysis could not move it (its column of [Phi_q; B] would repeat the driver's row).
void require_free_independent_coordinates(const Model& model) {
  for (size_t i = 0; i < model.independent.size(); ++i) {
    for (size_t e = 0; e < model.elements.size(); ++e) {
      const Element& element = model.elements[e];
      if (element.type != ElementType::CoordinateDriver || element.coordinate != model.independent[i]) continue;
      throw InputError(fmt::format("{}: '{}' is prescribed by {}: an independent coordinate must be free to move "
                                   "(name one the drivers leave free)",
                                   model.locate(fmt::format("independent[{}]", i)),
                                   describe_coordinates(model, {model.independent[i]}),
                                   model.describe_element(static_cast<int>(e))));
    }
  }
}

}  // namespace

Partition choose_partition(const Model& model, const Eigen::VectorXd& p) {
  Partition part;
  part.n = model.n_coordinates();
  const int m = model.n_constraints();
  const int f = part.n - m;
  const auto refuse_dependent_rows = [&](const Eigen::MatrixXd& jac, int rank) {
    throw InputError(fmt::format("{}: model '{}': the constraint Jacobian at the initial guess has rank {} < {} "
                                 "constraint rows: redundant or conflicting constraints, or a singular "
                                 "configuration; dependent rows: {}",
                                 locate_first_dependent_row(model, jac, rank), model.name, rank, m,
                                 describe_dependent_rows(model, jac)));
  };
  const auto initial_jacobian = [&] {
    const ConstraintSet<double> c = constraints<double>(
        model, MotionState<double>{model.t0, model.initial_positions(), Eigen::VectorXd::Zero(part.n)}, p);
    return c.dense_real_jacobian();
  };
  if (f < 1) {
    // Rows that depend on others (a driver against a joint, a bar between two ground points)
    // are named as such: "no degree of freedom" sent the user looking for a missing one.
    if (m > 0) {
      const Eigen::MatrixXd jac = initial_jacobian();
      const Partition pivots = pivot_partition(jac);
      if (pivots.n - pivots.f() < m) refuse_dependent_rows(jac, pivots.n - pivots.f());
    }
    std::vector<std::string> owners;
    // The last element or spatial joint with rows: where the file ran out of freedom.
    std::string last = model.elements.empty() ? "spatial.joints" : "elements";
    for (size_t i = 0; i < model.elements.size(); ++i) {
      const int rows = model.elements[i].n_constraints();
      if (rows == 0) continue;
      owners.push_back(fmt::format("{} ({})", model.describe_element(static_cast<int>(i)), rows));
      last = fmt::format("elements[{}]", i);
    }
    int first_row = 0;  // of the joint, among the joint rows (redundant_joint_rows' numbering)
    for (size_t i = 0; i < model.spatial_joints.size(); ++i) {
      const SpatialJoint& j = model.spatial_joints[i];
      const int rows = j.n_constraints();
      const auto left_out = std::count_if(model.redundant_joint_rows.begin(), model.redundant_joint_rows.end(),
                                          [&](int r) { return r >= first_row && r < first_row + rows; });
      owners.push_back(left_out == 0 ? fmt::format("joint '{}' ({})", j.name, rows)
                                     : fmt::format("joint '{}' ({}; {} redundant rows left out)", j.name,
                                                   rows - left_out, left_out));
      first_row += rows;
      last = fmt::format("spatial.joints[{}]", i);
    }
    if (!model.spatial_bodies.empty()) owners.push_back(fmt::format("{} normalizations", model.spatial_bodies.size()));
    throw InputError(fmt::format("{}: model '{}': {} constraint rows on {} coordinates leave no degree of "
                                 "freedom (rows: {}); a model must keep one",
                                 model.locate(last), model.name, m, part.n, fmt::join(owners, ", ")));
  }
  if (!model.independent.empty()) {
    part.independent = model.independent;
    std::sort(part.independent.begin(), part.independent.end());
    if (static_cast<int>(part.independent.size()) != f) {
      throw InputError(fmt::format(
          "{}: {} independent coordinates given ({}), but the model has {} degrees of "
          "freedom ({} coordinates, {} constraints)",
          model.locate("independent"), part.independent.size(),
          describe_coordinates(model, part.independent), f, part.n, m));
    }
    require_free_independent_coordinates(model);
    return part;
  }
  const Eigen::MatrixXd jac = initial_jacobian();
  part = pivot_partition(jac);
  if (part.f() != f) refuse_dependent_rows(jac, part.n - part.f());
  return part;
}

double partition_gain(const Partition& part, const Eigen::MatrixXd& jac) {
  const Eigen::PartialPivLU<Eigen::MatrixXd> lu(augmented_jacobian(part, jac));
  if (!(std::abs(lu.determinant()) > 0.0) || !(lu.rcond() > 1e-13)) return std::numeric_limits<double>::infinity();
  Eigen::MatrixXd unit = Eigen::MatrixXd::Zero(part.n, part.f());
  unit.bottomRows(part.f()).setIdentity();
  return lu.solve(unit).squaredNorm() / part.f();
}

Partition pivot_partition_keeping(const Eigen::MatrixXd& jac, const std::vector<int>& keep) {
  std::vector<int> free_columns;
  for (int k = 0; k < static_cast<int>(jac.cols()); ++k) {
    if (std::find(keep.begin(), keep.end(), k) == keep.end()) free_columns.push_back(k);
  }
  Eigen::MatrixXd reduced(jac.rows(), static_cast<Eigen::Index>(free_columns.size()));
  for (size_t j = 0; j < free_columns.size(); ++j) reduced.col(static_cast<Eigen::Index>(j)) = jac.col(free_columns[j]);
  const Partition among_free = pivot_partition(reduced);
  Partition part;
  part.n = static_cast<int>(jac.cols());
  for (int k : keep) part.independent.push_back(k);
  for (int j : among_free.independent) part.independent.push_back(free_columns[static_cast<size_t>(j)]);
  std::sort(part.independent.begin(), part.independent.end());
  return part;
}

Partition pivot_partition(const Eigen::MatrixXd& jac) {
  // Gaussian elimination with complete pivoting, as Eigen's FullPivLU, whose pivot columns are
  // the best-conditioned dependent set; but pivots within kPivotTie (relative) of the largest
  // take the lowest column (then row). Exact ties are common (a symmetric vehicle's four wheels), and FullPivLU breaks
  // them on the last bit: a jump evaluated in double and again in Dual (its sensitivity
  // transfer), whose configurations differ in the last bit, would land in different sets.
  constexpr double kPivotTie = 1e-9;
  Eigen::Matrix<double, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor> a = jac;
  const Eigen::Index rows = a.rows(), cols = a.cols();
  std::vector<bool> row_done(static_cast<size_t>(rows), false), dependent(static_cast<size_t>(cols), false);
  const double largest = rows > 0 && cols > 0 ? a.cwiseAbs().maxCoeff() : 0.0;
  // Eigen's rank threshold: pivots below epsilon * min(rows, cols) of the largest are zero.
  const double negligible = largest * std::numeric_limits<double>::epsilon() * static_cast<double>(std::min(rows, cols));
  for (Eigen::Index step = 0; step < std::min(rows, cols); ++step) {
    double biggest = 0.0;
    for (Eigen::Index i = 0; i < rows; ++i) {
      if (row_done[static_cast<size_t>(i)]) continue;
      for (Eigen::Index j = 0; j < cols; ++j) {
        if (!dependent[static_cast<size_t>(j)]) biggest = std::max(biggest, std::abs(a(i, j)));
      }
    }
    if (!(biggest > negligible)) break;
    Eigen::Index pr = -1, pc = -1;
    for (Eigen::Index j = 0; j < cols && pc < 0; ++j) {
      if (dependent[static_cast<size_t>(j)]) continue;
      for (Eigen::Index i = 0; i < rows; ++i) {
        if (!row_done[static_cast<size_t>(i)] && std::abs(a(i, j)) >= biggest * (1.0 - kPivotTie)) {
          pr = i;
          pc = j;
          break;
        }
      }
    }
    row_done[static_cast<size_t>(pr)] = true;
    dependent[static_cast<size_t>(pc)] = true;
    for (Eigen::Index i = 0; i < rows; ++i) {
      if (row_done[static_cast<size_t>(i)] || a(i, pc) == 0.0) continue;
      a.row(i) -= (a(i, pc) / a(pr, pc)) * a.row(pr);
    }
  }
  Partition part;
  part.n = static_cast<int>(cols);
  for (int k = 0; k < part.n; ++k) {
    if (!dependent[static_cast<size_t>(k)]) part.independent.push_back(k);
  }
  return part;
}

namespace {

/// The last answer of completion_partition on this thread, with what it depends on: the
/// preferred set and Phi_q, kept sparse so that a hit costs O(nnz) (the LU factorizations of
/// partition_gain and pivot_partition cost O(n^3)).
struct CompletionPartitionMemo {
  std::vector<int> preferred;
  SparseMat<double> jac;
  Partition answer;
};
thread_local CompletionPartitionMemo completion_memo;

/// Same shape, pattern and values (both compressed).
bool identical(const SparseMat<double>& a, const SparseMat<double>& b) {
  if (a.rows() != b.rows() || a.cols() != b.cols() || a.nonZeros() != b.nonZeros()) return false;
  const auto outer = static_cast<size_t>(a.outerSize() + 1), nnz = static_cast<size_t>(a.nonZeros());
  return std::equal(a.outerIndexPtr(), a.outerIndexPtr() + outer, b.outerIndexPtr()) &&
         std::equal(a.innerIndexPtr(), a.innerIndexPtr() + nnz, b.innerIndexPtr()) &&
         std::equal(a.valuePtr(), a.valuePtr() + nnz, b.valuePtr());
}

}  // namespace

Partition completion_partition(const Model& model, const Partition& preferred, double t, const Eigen::VectorXd& q,
                               const Eigen::VectorXd& p) {
  ConstraintSet<double> cs = constraints<double>(model, MotionState<double>{t, q, Eigen::VectorXd::Zero(q.size())}, p);
  cs.jac.makeCompressed();
  CompletionPartitionMemo& memo = completion_memo;
  if (memo.preferred == preferred.independent && memo.answer.n == preferred.n && identical(memo.jac, cs.jac)) {
    return memo.answer;
  }
  Partition answer = preferred;
  if (cs.jac.rows() > 0) {
    const Eigen::MatrixXd jac = cs.dense_real_jacobian();
    if (partition_gain(preferred, jac) > kRepartitionGain) {
      Partition best = pivot_partition(jac);
      if (best.f() == preferred.f()) answer = std::move(best);
    }
  }
  memo = CompletionPartitionMemo{preferred.independent, std::move(cs.jac), answer};
  return answer;
}

Eigen::VectorXd solve_positions(const Model& model, const Partition& part, double t,
                                const Eigen::VectorXd& u, const Eigen::VectorXd& p,
                                const Eigen::VectorXd& guess, const FormulationSettings& settings) {
  Eigen::VectorXd q = guess;
  double residual_norm = 0.0;
  Eigen::VectorXd phi;  // constraint residuals of the last iterate, to name the worst element
  for (int it = 0; it <= settings.newton_iterations; ++it) {
    MotionState<double> st{t, q, Eigen::VectorXd::Zero(part.n)};
    const ConstraintSet<double> c = constraints<double>(model, st, p);
    Eigen::VectorXd residual(c.phi.size() + part.f());
    residual << c.phi, select(part, q) - u;
    residual_norm = residual.cwiseAbs().maxCoeff();
    phi = c.phi;
    if (!std::isfinite(residual_norm)) break;
    const double scale = 1.0 + q.cwiseAbs().maxCoeff();
    if (residual_norm <= settings.newton_tolerance * scale * scale) return q;
    if (part.n >= kSparseSolveMinRows) {
      // Large: KLU on the sparse [Phi_q; B]; a singular one ends Newton as the dense test does.
      try {
        q -= FactoredMatrix(augmented_jacobian(part, c.jac), "position-analysis matrix [Phi_q; B]").solve(residual);
      } catch (const ModelError&) {
        break;
      }
      continue;
    }
    Eigen::PartialPivLU<Eigen::MatrixXd> lu(augmented_jacobian(part, c.dense_real_jacobian()));
    if (!(lu.rcond() > 1e-13)) break;
    q -= lu.solve(residual);
  }
  throw ModelError(fmt::format(
      "the mechanism '{}' cannot be assembled at t = {:.17g} with independent coordinates ({}) = "
      "({}): Newton's method stopped at constraint residual {:.3e}{} (a position the linkage "
      "cannot reach, conflicting constraints, or a singular configuration)",
      model.name, t, describe_coordinates(model, part.independent),
      fmt::join(std::vector<double>(u.data(), u.data() + u.size()), ", "), residual_norm, worst_row(model, phi)));
}

}  // namespace saltus::multibody::detail
