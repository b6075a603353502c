#pragma once
// Implicit transitions of DAE events (theory/hybrid-dae.md sections 1-2; docs/dae.md, "Implicit
// transitions"). At an event with T(t, x+, x-dot+, x-, x-dot-, p) = 0 (EventBuilder::transition)
// the values after it solve the square system
//     T(t, x+, x-dot+, x-, x-dot-, p) = 0   (n_y rows),      F+(t, x+, x-dot+, p) = 0   (n_x rows)
// in the unknowns u = (x+, y-dot+) (n_x + n_y), from the consistent point (x-, x-dot-) before
// the event. Its matrix A = [T_x+  T_ydot+; F+_x  F+_ydot] is theory's consistent-reinitialization
// matrix (4) and must be nonsingular.
//
// As a map x+ = Phi(t, x-, p) the transition reads the differential states of x- only: x-dot-
// and z- follow y- through the old mode (its index-1 matrix M-, or its completion). The tangent
// along (dt, dx-, dp) is one solve with A:
//     M- (dy-dot-, dz-) = -(F-_t dt + F-_y dy- + F-_p dp),
//     A du = -(T_t dt + T_x- (dy-, dz-) + T_ydot- dy-dot- + T_p dp ;  F+_t dt + F+_p dp),
// and dx+ is du's first n_x entries. The event transfer uses these Jacobians as a jump's
// (event_transfer.hpp, JumpLinearization): forward sensitivities, the adjoint's transposed
// transfer and its leftover terms follow unchanged (theory section 2's A u = B S- + C, read as
// Phi_x and Phi_p).
#include <saltus/solvers/dae_transfer.hpp>
#include <saltus/solvers/event_transfer.hpp>

namespace saltus::detail {

/// The consistent point after event `event` (into `mode_after`) from the consistent point
/// `before`: Newton on A, or into an index-2 mode Gauss-Newton on T with the completion's
/// constraints (index2_transition.hpp; T then gives n_y - n_c equations). Throws InputError
/// naming the event, the time and the state when A (or [T_y+; k_y]) is singular at the start or
/// the iteration does not converge; ModelError when T or F is not finite.
ConsistentPoint solve_transition(const Problem& problem, int event, int mode_after, double t,
                                 const ConsistentPoint& before, In<double> p, TangentWorkspace& ws);

/// The same in complex arithmetic at a possibly complex time: the real parts as the real solve
/// finds them, then the imaginary parts by Newton with A at the real parts.
ComplexConsistentPoint solve_transition_complex(const Problem& problem, int event, int mode_after, Complex t,
                                                const ComplexConsistentPoint& before, const VectorX<Complex>& p,
                                                TangentWorkspace& ws);

/// Phi_x, Phi_t and Phi_p at a firing whose values (x-, x-dot-, x+, x-dot+) are consistent.
JumpLinearization linearize_transition(const Problem& problem, const EventValues& event, In<double> p,
                                       TangentWorkspace& ws);

}  // namespace saltus::detail
