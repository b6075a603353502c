#pragma once
// The plumbing of Saltus's own SUNDIALS direct linear solvers (internal): a SUNLinearSolver of
// type DIRECT and id CUSTOM whose content is a C++ object, with initialize, lastflag and free
// done once here. The solvers supply their content and their setup and solve.
#include <sundials/sundials_linearsolver.h>

#include <memory>

namespace saltus::detail {

/// `Content` has a member `last_flag` (what lastflag reports; initialize resets it) and frees
/// what it holds in its destructor. The solver owns `content`; SUNLinSolFree deletes it. Null
/// (and `content` deleted) when SUNDIALS cannot allocate the solver.
template <class Content>
SUNLinearSolver custom_direct_solver(SUNContext context, std::unique_ptr<Content> content,
                                     int (*setup)(SUNLinearSolver, SUNMatrix),
                                     int (*solve)(SUNLinearSolver, SUNMatrix, N_Vector, N_Vector, sunrealtype)) {
  SUNLinearSolver s = SUNLinSolNewEmpty(context);
  if (s == nullptr) return nullptr;
  s->content = content.release();
  s->ops->gettype = [](SUNLinearSolver) { return SUNLINEARSOLVER_DIRECT; };
  s->ops->getid = [](SUNLinearSolver) { return SUNLINEARSOLVER_CUSTOM; };
  s->ops->initialize = [](SUNLinearSolver solver) {
    static_cast<Content*>(solver->content)->last_flag = SUNLS_SUCCESS;
    return static_cast<int>(SUNLS_SUCCESS);
  };
  s->ops->setup = setup;
  s->ops->solve = solve;
  s->ops->lastflag = [](SUNLinearSolver solver) {
    return static_cast<sunindextype>(static_cast<Content*>(solver->content)->last_flag);
  };
  s->ops->free = [](SUNLinearSolver solver) {
    if (solver == nullptr) return static_cast<int>(SUNLS_SUCCESS);
    delete static_cast<Content*>(solver->content);
    solver->content = nullptr;
    SUNLinSolFreeEmpty(solver);
    return static_cast<int>(SUNLS_SUCCESS);
  };
  return s;
}

}  // namespace saltus::detail
