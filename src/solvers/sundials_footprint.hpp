#pragma once
// What SUNDIALS 6 (serial N_Vector, dense matrix and solver, CVODES) really allocates, in heap
// bytes, so that the adjoint's memory budget and its report count the memory a run holds rather
// than the 8 bytes per vector entry of its payload. Every count follows one allocation site of
// the SUNDIALS 6.4 sources (cvodes.c, cvodea.c, cvodes_ls.c, nvector_serial.c,
// sunmatrix_dense.c, sunlinsol_dense.c, sunnonlinsol_newton.c, sundials_context.c); the tests
// compare the total with the heap growth glibc reports.

namespace saltus::detail::footprint {

/// Heap bytes glibc takes for one malloc(request): an 8-byte header, 16-byte granularity and a
/// 32-byte minimum chunk (0 for an empty request, which SUNDIALS never makes).
long heap_block(long request);

/// One serial N_Vector of length n as the integrators clone it from Saltus' vectors
/// (vector_clones.hpp): its header on the heap and its data in the vector store, its operation
/// table shared. (The few vectors Saltus creates itself, with SUNDIALS' own layout, are not
/// counted.)
long nvector(long n);

/// A dense n x n SUNMatrix: structs, the data and the column pointers.
long dense_matrix(long n);

/// A dense SUNLinearSolver for n unknowns: structs and the pivots.
long dense_solver(long n);

/// block_dense_solver.hpp's solver for blocks of order `block`: structs, its content
/// (`content_bytes`), and the block's values, column pointers and pivots. The whole-matrix
/// factors it allocates only for a matrix without the structure are not counted.
long block_dense_solver(long block, long content_bytes);

/// SUNLinSol_SPGMR for n unknowns with SUNDIALS' default Krylov dimension (5), after the
/// SUNLinSolInitialize of the first solve: structs, content, xcor and vtemp, the Krylov basis
/// V (maxl + 1 vectors and their pointer array), the Hessenberg rows, the Givens rotations, yg,
/// and cv and Xv for the fused vector operations (sunlinsol_spgmr.c).
long gmres_solver(long n);
inline constexpr long kGmresKrylovDimension = 5;

/// A SUNContext: the context, its (inactive) logger and the logger's file table.
long context();

/// Largest order CVODES may use (its Nordsieck history has max_order + 1 vectors).
int max_order(bool bdf);

/// How an integrator's corrector solves: Newton with a dense LU (CVodeSetLinearSolver keeps a
/// saved Jacobian), Newton with matrix-free GMRES, or fixed-point iteration (no linear solver).
enum class Corrector { DenseNewton, KrylovNewton, FixedPoint };

/// Fixed-point nonlinear solver (SUNNonlinSol_FixedPoint, no acceleration) for n unknowns:
/// structs, content and its three vectors (yprev, gy, delta).
long fixed_point_solver(long n);

/// One CVODES integrator of n states after CVodeCreate, CVodeInit and its nonlinear solver:
/// CVodeInit's Newton solver with CVodeSetLinearSolver (a dense matrix: the saved Jacobian it
/// clones, not the matrix it is given; none for matrix-free GMRES), or a fixed-point solver in
/// its place (CVodeSetNonlinearSolver frees the Newton one; no linear solver interface); and,
/// if vector_atol, CVodeSVtolerances.
long integrator(long n, bool bdf, bool vector_atol, Corrector corrector = Corrector::DenseNewton);

/// CVodeQuadInit's vectors for nq quadratures, plus the tolerance vector of
/// CVodeQuadSVtolerances if vector_atol.
long quadratures(long nq, bool bdf, bool vector_atol);

/// CVodeRootInit's work arrays for nr root functions.
long roots(int nr);

/// CVodeAdjInit(steps, CV_HERMITE) and the Hermite buffer CVodeF allocates on its first call:
/// steps + 1 data points holding y and y' each.
long hermite_adjoint_memory(long n, long steps);
/// One more point of that buffer (IDAAdjInit's Hermite points hold the same y and y').
long hermite_point(long n);

/// One CVODES check point of order q: Nordsieck vectors zn[0..q] (plus zn[qmax] while
/// q < qmax) of the state and, if quadratures take part in the step control, of the nq
/// quadratures. `initial`: the first check point of a recording, which holds zn[0] and zn[1].
long checkpoint(long n, long nq, int order, bool bdf, bool initial);
/// The largest check point (q = qmax): what the next one may cost.
long largest_checkpoint(long n, long nq, bool bdf);

/// A backward problem (CVodeCreateB, CVodeInitB, dense or matrix-free linear solver interface,
/// CVodeQuadInitB with vector tolerances) of nB adjoint states and nqB quadratures, without the
/// vectors, the matrix and the linear solver the caller passes in.
long backward_problem(long nB, long nqB, bool bdf, Corrector corrector = Corrector::DenseNewton);

}  // namespace saltus::detail::footprint
