/* Plain IDAS reference for the Saltus benchmark: robertson_dae, the Robertson kinetics with the
 * conservation law as algebraic equation, in the style of the SUNDIALS examples
 * idasRoberts_FSA_dns and idasRoberts_ASAi_dns, with analytic Jacobians and sensitivity
 * residuals, and the settings of Saltus's built-in `robertson_dae`: rtol 1e-8, atol (1e-12,
 * 1e-18, 1e-10), G = int y3 dt with cost atol 1e-6, outputs 0.4 * 10^k up to 4e7, staggered
 * forward sensitivities with full error control and pbar = p; the adjoint with check points
 * every 100 steps, adjoint atol 1e-10 and quadrature atol 1e-6 / p_k, in Saltus's sign
 * (F_xdot^T lambda' - F_x^T lambda + g_x^T = 0, q' = F_p^T lambda - g_p backwards). */
#include "robertson_plain_idas.h"

#include <idas/idas.h>
#include <nvector/nvector_serial.h>
#include <sunlinsol/sunlinsol_dense.h>
#include <sunmatrix/sunmatrix_dense.h>

#include <stdio.h>
#include <stdlib.h>

typedef struct {
  double p[3];
} UserData;

static const double kP[3] = {0.04, 1e4, 3e7};

static void check(int flag, const char* what) {
  if (flag < 0) {
    fprintf(stderr, "plain IDAS: %s failed with %d\n", what, flag);
    exit(1);
  }
}

static int res(sunrealtype t, N_Vector y, N_Vector yp, N_Vector r, void* user_data) {
  const double* p = ((UserData*)user_data)->p;
  const double y1 = NV_Ith_S(y, 0), y2 = NV_Ith_S(y, 1), y3 = NV_Ith_S(y, 2);
  (void)t;
  NV_Ith_S(r, 0) = NV_Ith_S(yp, 0) - (-p[0] * y1 + p[1] * y2 * y3);
  NV_Ith_S(r, 1) = NV_Ith_S(yp, 1) - (p[0] * y1 - p[1] * y2 * y3 - p[2] * y2 * y2);
  NV_Ith_S(r, 2) = y1 + y2 + y3 - 1.0;
  return 0;
}

/* dF/dy (n x n) into fy (row-major 3x3). */
static void residual_y(const double* p, N_Vector y, double fy[3][3]) {
  const double y2 = NV_Ith_S(y, 1), y3 = NV_Ith_S(y, 2);
  fy[0][0] = p[0];  fy[0][1] = -p[1] * y3;                   fy[0][2] = -p[1] * y2;
  fy[1][0] = -p[0]; fy[1][1] = p[1] * y3 + 2.0 * p[2] * y2;  fy[1][2] = p[1] * y2;
  fy[2][0] = 1.0;   fy[2][1] = 1.0;                          fy[2][2] = 1.0;
}

/* dF/dp (row-major 3x3). */
static void residual_p(N_Vector y, double fp[3][3]) {
  const double y1 = NV_Ith_S(y, 0), y2 = NV_Ith_S(y, 1), y3 = NV_Ith_S(y, 2);
  fp[0][0] = y1;  fp[0][1] = -y2 * y3; fp[0][2] = 0.0;
  fp[1][0] = -y1; fp[1][1] = y2 * y3;  fp[1][2] = y2 * y2;
  fp[2][0] = 0.0; fp[2][1] = 0.0;      fp[2][2] = 0.0;
}

static int jac(sunrealtype t, sunrealtype cj, N_Vector y, N_Vector yp, N_Vector r, SUNMatrix J, void* user_data,
               N_Vector t1, N_Vector t2, N_Vector t3) {
  double fy[3][3];
  (void)t; (void)yp; (void)r; (void)t1; (void)t2; (void)t3;
  residual_y(((UserData*)user_data)->p, y, fy);
  for (int i = 0; i < 3; ++i) {
    for (int j = 0; j < 3; ++j) SM_ELEMENT_D(J, i, j) = fy[i][j] + (i == j && i < 2 ? cj : 0.0);
  }
  return 0;
}

static int resS(int Ns, sunrealtype t, N_Vector y, N_Vector yp, N_Vector r, N_Vector* yS, N_Vector* ypS,
                N_Vector* rS, void* user_data, N_Vector t1, N_Vector t2, N_Vector t3) {
  double fy[3][3], fp[3][3];
  (void)t; (void)yp; (void)r; (void)t1; (void)t2; (void)t3;
  residual_y(((UserData*)user_data)->p, y, fy);
  residual_p(y, fp);
  for (int k = 0; k < Ns; ++k) {
    for (int i = 0; i < 3; ++i) {
      double v = fp[i][k] + (i < 2 ? NV_Ith_S(ypS[k], i) : 0.0);
      for (int j = 0; j < 3; ++j) v += fy[i][j] * NV_Ith_S(yS[k], j);
      NV_Ith_S(rS[k], i) = v;
    }
  }
  return 0;
}

static int rhsQ(sunrealtype t, N_Vector y, N_Vector yp, N_Vector q, void* user_data) {
  (void)t; (void)yp; (void)user_data;
  NV_Ith_S(q, 0) = NV_Ith_S(y, 2);
  return 0;
}

static int rhsQS(int Ns, sunrealtype t, N_Vector y, N_Vector yp, N_Vector* yS, N_Vector* ypS, N_Vector q,
                 N_Vector* qS, void* user_data, N_Vector t1, N_Vector t2, N_Vector t3) {
  (void)t; (void)y; (void)yp; (void)ypS; (void)q; (void)user_data; (void)t1; (void)t2; (void)t3;
  for (int k = 0; k < Ns; ++k) NV_Ith_S(qS[k], 0) = NV_Ith_S(yS[k], 2);
  return 0;
}

/* The forward problem with its settings; y, yp consistent at t = 0. */
static void* create_forward(SUNContext ctx, UserData* data, N_Vector y, N_Vector yp, N_Vector q, SUNMatrix* A,
                            SUNLinearSolver* LS) {
  N_Vector atol = N_VNew_Serial(3, ctx), id = N_VNew_Serial(3, ctx);
  NV_Ith_S(y, 0) = 1.0; NV_Ith_S(y, 1) = 0.0; NV_Ith_S(y, 2) = 0.0;
  NV_Ith_S(yp, 0) = -data->p[0]; NV_Ith_S(yp, 1) = data->p[0]; NV_Ith_S(yp, 2) = 0.0;
  NV_Ith_S(atol, 0) = 1e-12; NV_Ith_S(atol, 1) = 1e-18; NV_Ith_S(atol, 2) = 1e-10;
  NV_Ith_S(id, 0) = 1.0; NV_Ith_S(id, 1) = 1.0; NV_Ith_S(id, 2) = 0.0;
  NV_Ith_S(q, 0) = 0.0;
  void* mem = IDACreate(ctx);
  check(IDAInit(mem, res, 0.0, y, yp), "IDAInit");
  check(IDASetUserData(mem, data), "IDASetUserData");
  check(IDASVtolerances(mem, 1e-8, atol), "IDASVtolerances");
  check(IDASetId(mem, id), "IDASetId");
  check(IDASetMaxNumSteps(mem, 500000), "IDASetMaxNumSteps");
  check(IDASetStopTime(mem, 4e7), "IDASetStopTime");
  *A = SUNDenseMatrix(3, 3, ctx);
  *LS = SUNLinSol_Dense(y, *A, ctx);
  check(IDASetLinearSolver(mem, *LS, *A), "IDASetLinearSolver");
  check(IDASetJacFn(mem, jac), "IDASetJacFn");
  check(IDAQuadInit(mem, rhsQ, q), "IDAQuadInit");
  check(IDAQuadSStolerances(mem, 1e-8, 1e-6), "IDAQuadSStolerances");
  check(IDASetQuadErrCon(mem, SUNTRUE), "IDASetQuadErrCon");
  N_VDestroy(atol);
  N_VDestroy(id);
  return mem;
}

void robertson_plain_idas_forward(double* G, double* dG) {
  SUNContext ctx;
  check(SUNContext_Create(NULL, &ctx), "SUNContext_Create");
  UserData data = {{kP[0], kP[1], kP[2]}};
  N_Vector y = N_VNew_Serial(3, ctx), yp = N_VNew_Serial(3, ctx), q = N_VNew_Serial(1, ctx);
  SUNMatrix A;
  SUNLinearSolver LS;
  void* mem = create_forward(ctx, &data, y, yp, q, &A, &LS);
  N_Vector* yS = N_VCloneVectorArray(3, y);
  N_Vector* ypS = N_VCloneVectorArray(3, y);
  N_Vector* qS = N_VCloneVectorArray(3, q);
  for (int k = 0; k < 3; ++k) { N_VConst(0.0, yS[k]); N_VConst(0.0, ypS[k]); N_VConst(0.0, qS[k]); }
  /* S(0) = 0: S-dot(0) = -F_p (differential rows); only the p1 column is non-zero. */
  NV_Ith_S(ypS[0], 0) = -1.0;
  NV_Ith_S(ypS[0], 1) = 1.0;
  check(IDASensInit(mem, 3, IDA_STAGGERED, resS, yS, ypS), "IDASensInit");
  double pbar[3] = {kP[0], kP[1], kP[2]};
  check(IDASetSensParams(mem, NULL, pbar, NULL), "IDASetSensParams");
  check(IDASensEEtolerances(mem), "IDASensEEtolerances");
  check(IDASetSensErrCon(mem, SUNTRUE), "IDASetSensErrCon");
  check(IDAQuadSensInit(mem, rhsQS, qS), "IDAQuadSensInit");
  check(IDAQuadSensEEtolerances(mem), "IDAQuadSensEEtolerances");
  check(IDASetQuadSensErrCon(mem, SUNTRUE), "IDASetQuadSensErrCon");
  double t = 0.0;
  for (double tout = 0.4; tout < 4.0001e7; tout *= 10.0) {
    check(IDASolve(mem, tout > 4e7 ? 4e7 : tout, &t, y, yp, IDA_NORMAL), "IDASolve");
    check(IDAGetSens(mem, &t, yS), "IDAGetSens");
  }
  check(IDAGetQuad(mem, &t, q), "IDAGetQuad");
  check(IDAGetQuadSens(mem, &t, qS), "IDAGetQuadSens");
  *G = NV_Ith_S(q, 0);
  for (int k = 0; k < 3; ++k) dG[k] = NV_Ith_S(qS[k], 0);
  N_VDestroyVectorArray(yS, 3);
  N_VDestroyVectorArray(ypS, 3);
  N_VDestroyVectorArray(qS, 3);
  IDAFree(&mem);
  SUNLinSolFree(LS);
  SUNMatDestroy(A);
  N_VDestroy(y); N_VDestroy(yp); N_VDestroy(q);
  SUNContext_Free(&ctx);
}

/* lambda' part: F_xdot^T lambda' - F_x^T lambda + g_x^T with F_xdot = diag(1, 1, 0), g_x = e3. */
static int resB(sunrealtype t, N_Vector y, N_Vector yp, N_Vector yB, N_Vector ypB, N_Vector rB, void* user_data) {
  double fy[3][3];
  (void)t; (void)yp;
  residual_y(((UserData*)user_data)->p, y, fy);
  for (int i = 0; i < 3; ++i) {
    double v = (i < 2 ? NV_Ith_S(ypB, i) : 0.0) + (i == 2 ? 1.0 : 0.0);
    for (int j = 0; j < 3; ++j) v -= fy[j][i] * NV_Ith_S(yB, j);
    NV_Ith_S(rB, i) = v;
  }
  return 0;
}

static int jacB(sunrealtype t, sunrealtype cj, N_Vector y, N_Vector yp, N_Vector yB, N_Vector ypB, N_Vector rB,
                SUNMatrix J, void* user_data, N_Vector t1, N_Vector t2, N_Vector t3) {
  double fy[3][3];
  (void)t; (void)yp; (void)yB; (void)ypB; (void)rB; (void)t1; (void)t2; (void)t3;
  residual_y(((UserData*)user_data)->p, y, fy);
  for (int i = 0; i < 3; ++i) {
    for (int j = 0; j < 3; ++j) SM_ELEMENT_D(J, i, j) = -fy[j][i] + (i == j && i < 2 ? cj : 0.0);
  }
  return 0;
}

static int rhsQB(sunrealtype t, N_Vector y, N_Vector yp, N_Vector yB, N_Vector ypB, N_Vector qdot, void* user_data) {
  double fp[3][3];
  (void)t; (void)yp; (void)ypB; (void)user_data;
  residual_p(y, fp);
  for (int k = 0; k < 3; ++k) {
    double v = 0.0;
    for (int i = 0; i < 3; ++i) v += fp[i][k] * NV_Ith_S(yB, i);
    NV_Ith_S(qdot, k) = v;
  }
  return 0;
}

void robertson_plain_idas_adjoint(double* G, double* dG) {
  SUNContext ctx;
  check(SUNContext_Create(NULL, &ctx), "SUNContext_Create");
  UserData data = {{kP[0], kP[1], kP[2]}};
  N_Vector y = N_VNew_Serial(3, ctx), yp = N_VNew_Serial(3, ctx), q = N_VNew_Serial(1, ctx);
  SUNMatrix A;
  SUNLinearSolver LS;
  void* mem = create_forward(ctx, &data, y, yp, q, &A, &LS);
  check(IDAAdjInit(mem, 100, IDA_HERMITE), "IDAAdjInit");
  double t = 0.0;
  int ncheck = 0;
  for (double tout = 0.4; tout < 4.0001e7; tout *= 10.0) {
    check(IDASolveF(mem, tout > 4e7 ? 4e7 : tout, &t, y, yp, IDA_NORMAL, &ncheck), "IDASolveF");
  }
  check(IDAGetQuad(mem, &t, q), "IDAGetQuad");
  *G = NV_Ith_S(q, 0);
  /* lambda(tf) from [F_ydot | F_z]^T lambda = (0, 0, g_z = 1): lambda = (0, 0, 1); its rate
   * lambda' = F_x^T lambda - g_x^T on the differential rows = (1, 1). */
  N_Vector yB = N_VNew_Serial(3, ctx), ypB = N_VNew_Serial(3, ctx), qB = N_VNew_Serial(3, ctx),
           qatol = N_VNew_Serial(3, ctx);
  NV_Ith_S(yB, 0) = 0.0; NV_Ith_S(yB, 1) = 0.0; NV_Ith_S(yB, 2) = 1.0;
  NV_Ith_S(ypB, 0) = 1.0; NV_Ith_S(ypB, 1) = 1.0; NV_Ith_S(ypB, 2) = 0.0;
  N_VConst(0.0, qB);
  for (int k = 0; k < 3; ++k) NV_Ith_S(qatol, k) = 1e-6 / kP[k];
  int which = 0;
  check(IDACreateB(mem, &which), "IDACreateB");
  check(IDAInitB(mem, which, resB, 4e7, yB, ypB), "IDAInitB");
  check(IDASetUserDataB(mem, which, &data), "IDASetUserDataB");
  check(IDASStolerancesB(mem, which, 1e-8, 1e-10), "IDASStolerancesB");
  check(IDASetMaxNumStepsB(mem, which, 500000), "IDASetMaxNumStepsB");
  SUNMatrix AB = SUNDenseMatrix(3, 3, ctx);
  SUNLinearSolver LSB = SUNLinSol_Dense(yB, AB, ctx);
  check(IDASetLinearSolverB(mem, which, LSB, AB), "IDASetLinearSolverB");
  check(IDASetJacFnB(mem, which, jacB), "IDASetJacFnB");
  check(IDAQuadInitB(mem, which, rhsQB, qB), "IDAQuadInitB");
  check(IDAQuadSVtolerancesB(mem, which, 1e-8, qatol), "IDAQuadSVtolerancesB");
  check(IDASetQuadErrConB(mem, which, SUNTRUE), "IDASetQuadErrConB");
  check(IDASolveB(mem, 0.0, IDA_NORMAL), "IDASolveB");
  check(IDAGetB(mem, which, &t, yB, ypB), "IDAGetB");
  check(IDAGetQuadB(mem, which, &t, qB), "IDAGetQuadB");
  /* S(0) = 0: the gradient is the quadrature alone. */
  for (int k = 0; k < 3; ++k) dG[k] = NV_Ith_S(qB, k);
  IDAFree(&mem);
  SUNLinSolFree(LS); SUNMatDestroy(A);
  SUNLinSolFree(LSB); SUNMatDestroy(AB);
  N_VDestroy(y); N_VDestroy(yp); N_VDestroy(q);
  N_VDestroy(yB); N_VDestroy(ypB); N_VDestroy(qB); N_VDestroy(qatol);
  SUNContext_Free(&ctx);
}
