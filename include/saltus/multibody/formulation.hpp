#pragma once
// Turning a planar multibody Model into a Saltus hybrid Problem, so that every solver
// (simulation, forward sensitivities, adjoint, differences, complex step) applies.
//
//   Penalty  (Bayo - Garcia de Jalon): x = (q, v); (M + Phi_q^T alpha Phi_q) a =
//            F - Phi_q^T alpha (Phi_q-dot v + Phi_t-dot + 2 xi omega Phi-dot + omega^2 Phi).
//   Index1   (Baumgarte): x = (q, v); [M Phi_q^T; Phi_q 0] [a; mu] = [F; c - 2 xi omega
//            Phi-dot - omega^2 Phi].
//   Maggi    (null space, seed 003): x = (u, u-dot), u = independent coordinates;
//            R^T M R u-ddot = R^T (F - M S_Phi c), positions by Newton on Phi = 0, B q = u.
//
// Each contact becomes an event (guard n^T (P - O), falling) whose jump is the chosen impact
// law; each cost of the model becomes a Saltus cost with the same name; the model's design
// parameters become the problem's parameters (same names, same order). Two monitors report
// the constraint residuals max |Phi| and max |Phi_q v + Phi_t| along the output trajectory.
#include <saltus/core/problem.hpp>
#include <saltus/multibody/model.hpp>

namespace saltus::multibody {

/// The Saltus problem of `model` in the formulation `model.formulation` (or `settings`).
/// Throws InputError / ModelError if the model is inconsistent or cannot be assembled.
Problem make_problem(const Model& model);
Problem make_problem(const Model& model, const FormulationSettings& settings);

}  // namespace saltus::multibody
