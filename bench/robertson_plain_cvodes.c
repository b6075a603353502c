/* Plain CVODES reference for the Saltus benchmark: the Robertson problem with forward
 * sensitivities (staggered corrector, full error control, pbar = p), analytic Jacobian and
 * analytic sensitivity right-hand side, and the cost G = int y3 dt with its quadrature
 * sensitivities, integrated to the same output times with the same tolerances as Saltus's
 * built-in `robertson` example. Written in the style of the SUNDIALS example
 * cvsRoberts_FSA_dns. */
#include "robertson_plain_cvodes.h"

#include <cvodes/cvodes.h>
#include <nvector/nvector_serial.h>
#include <sunlinsol/sunlinsol_dense.h>
#include <sunmatrix/sunmatrix_dense.h>

#include <stdio.h>
#include <stdlib.h>

typedef struct {
  double p[3];
} UserData;

static int f(sunrealtype t, N_Vector y, N_Vector ydot, void* user_data) {
  const double* p = ((UserData*)user_data)->p;
  const double y1 = NV_Ith_S(y, 0), y2 = NV_Ith_S(y, 1), y3 = NV_Ith_S(y, 2);
  const double yd1 = -p[0] * y1 + p[1] * y2 * y3;
  const double yd3 = p[2] * y2 * y2;
  (void)t;
  NV_Ith_S(ydot, 0) = yd1;
  NV_Ith_S(ydot, 1) = -yd1 - yd3;
  NV_Ith_S(ydot, 2) = yd3;
  return 0;
}

static int jac(sunrealtype t, N_Vector y, N_Vector fy, SUNMatrix J, void* user_data,
               N_Vector tmp1, N_Vector tmp2, N_Vector tmp3) {
  const double* p = ((UserData*)user_data)->p;
  const double y2 = NV_Ith_S(y, 1), y3 = NV_Ith_S(y, 2);
  (void)t; (void)fy; (void)tmp1; (void)tmp2; (void)tmp3;
  SM_ELEMENT_D(J, 0, 0) = -p[0];
  SM_ELEMENT_D(J, 0, 1) = p[1] * y3;
  SM_ELEMENT_D(J, 0, 2) = p[1] * y2;
  SM_ELEMENT_D(J, 1, 0) = p[0];
  SM_ELEMENT_D(J, 1, 1) = -p[1] * y3 - 2 * p[2] * y2;
  SM_ELEMENT_D(J, 1, 2) = -p[1] * y2;
  SM_ELEMENT_D(J, 2, 0) = 0.0;
  SM_ELEMENT_D(J, 2, 1) = 2 * p[2] * y2;
  SM_ELEMENT_D(J, 2, 2) = 0.0;
  return 0;
}

static int fS(int Ns, sunrealtype t, N_Vector y, N_Vector ydot, N_Vector* yS, N_Vector* ySdot,
              void* user_data, N_Vector tmp1, N_Vector tmp2) {
  const double* p = ((UserData*)user_data)->p;
  const double y1 = NV_Ith_S(y, 0), y2 = NV_Ith_S(y, 1), y3 = NV_Ith_S(y, 2);
  (void)t; (void)ydot; (void)tmp1; (void)tmp2;
  for (int iS = 0; iS < Ns; ++iS) {
    const double s1 = NV_Ith_S(yS[iS], 0), s2 = NV_Ith_S(yS[iS], 1), s3 = NV_Ith_S(yS[iS], 2);
    double sd1 = -p[0] * s1 + p[1] * y3 * s2 + p[1] * y2 * s3;
    double sd3 = 2 * p[2] * y2 * s2;
    double sd2 = -sd1 - sd3;
    switch (iS) {
      case 0: sd1 += -y1; sd2 += y1; break;
      case 1: sd1 += y2 * y3; sd2 += -y2 * y3; break;
      default: sd2 += -y2 * y2; sd3 += y2 * y2; break;
    }
    NV_Ith_S(ySdot[iS], 0) = sd1;
    NV_Ith_S(ySdot[iS], 1) = sd2;
    NV_Ith_S(ySdot[iS], 2) = sd3;
  }
  return 0;
}

static int fQ(sunrealtype t, N_Vector y, N_Vector qdot, void* user_data) {
  (void)t; (void)user_data;
  NV_Ith_S(qdot, 0) = NV_Ith_S(y, 2);
  return 0;
}

static int fQS(int Ns, sunrealtype t, N_Vector y, N_Vector* yS, N_Vector yQdot, N_Vector* yQSdot,
               void* user_data, N_Vector tmp, N_Vector tmpQ) {
  (void)t; (void)y; (void)yQdot; (void)user_data; (void)tmp; (void)tmpQ;
  for (int iS = 0; iS < Ns; ++iS) NV_Ith_S(yQSdot[iS], 0) = NV_Ith_S(yS[iS], 2);
  return 0;
}

static void check(int flag, const char* what) {
  if (flag < 0) {
    fprintf(stderr, "plain CVODES: %s failed with %d\n", what, flag);
    exit(1);
  }
}

void robertson_plain_cvodes(double* G, double* dG) {
  SUNContext ctx;
  check(SUNContext_Create(NULL, &ctx), "SUNContext_Create");
  UserData data = {{0.04, 1e4, 3e7}};
  N_Vector y = N_VNew_Serial(3, ctx), atol = N_VNew_Serial(3, ctx), q = N_VNew_Serial(1, ctx);
  NV_Ith_S(y, 0) = 1.0; NV_Ith_S(y, 1) = 0.0; NV_Ith_S(y, 2) = 0.0;
  NV_Ith_S(atol, 0) = 1e-12; NV_Ith_S(atol, 1) = 1e-18; NV_Ith_S(atol, 2) = 1e-10;
  NV_Ith_S(q, 0) = 0.0;
  void* mem = CVodeCreate(CV_BDF, ctx);
  check(CVodeInit(mem, f, 0.0, y), "CVodeInit");
  check(CVodeSetUserData(mem, &data), "CVodeSetUserData");
  check(CVodeSVtolerances(mem, 1e-8, atol), "CVodeSVtolerances");
  check(CVodeSetMaxNumSteps(mem, 500000), "CVodeSetMaxNumSteps");
  check(CVodeSetStopTime(mem, 4e7), "CVodeSetStopTime");
  SUNMatrix A = SUNDenseMatrix(3, 3, ctx);
  SUNLinearSolver LS = SUNLinSol_Dense(y, A, ctx);
  check(CVodeSetLinearSolver(mem, LS, A), "CVodeSetLinearSolver");
  check(CVodeSetJacFn(mem, jac), "CVodeSetJacFn");
  check(CVodeQuadInit(mem, fQ, q), "CVodeQuadInit");
  check(CVodeQuadSStolerances(mem, 1e-8, 1e-6), "CVodeQuadSStolerances");
  check(CVodeSetQuadErrCon(mem, SUNTRUE), "CVodeSetQuadErrCon");
  N_Vector* yS = N_VCloneVectorArray(3, y);
  N_Vector* qS = N_VCloneVectorArray(3, q);
  for (int i = 0; i < 3; ++i) { N_VConst(0.0, yS[i]); N_VConst(0.0, qS[i]); }
  check(CVodeSensInit(mem, 3, CV_STAGGERED, fS, yS), "CVodeSensInit");
  double pbar[3] = {0.04, 1e4, 3e7};
  check(CVodeSetSensParams(mem, NULL, pbar, NULL), "CVodeSetSensParams");
  check(CVodeSensEEtolerances(mem), "CVodeSensEEtolerances");
  check(CVodeSetSensErrCon(mem, SUNTRUE), "CVodeSetSensErrCon");
  check(CVodeQuadSensInit(mem, fQS, qS), "CVodeQuadSensInit");
  check(CVodeQuadSensEEtolerances(mem), "CVodeQuadSensEEtolerances");
  check(CVodeSetQuadSensErrCon(mem, SUNTRUE), "CVodeSetQuadSensErrCon");
  double t = 0.0;
  for (double tout = 0.4; tout < 4.0001e7; tout *= 10.0) {
    check(CVode(mem, tout > 4e7 ? 4e7 : tout, y, &t, CV_NORMAL), "CVode");
    check(CVodeGetSens(mem, &t, yS), "CVodeGetSens");
  }
  check(CVodeGetQuad(mem, &t, q), "CVodeGetQuad");
  check(CVodeGetQuadSens(mem, &t, qS), "CVodeGetQuadSens");
  *G = NV_Ith_S(q, 0);
  for (int i = 0; i < 3; ++i) dG[i] = NV_Ith_S(qS[i], 0);
  N_VDestroyVectorArray(yS, 3);
  N_VDestroyVectorArray(qS, 3);
  CVodeFree(&mem);
  SUNLinSolFree(LS);
  SUNMatDestroy(A);
  N_VDestroy(y); N_VDestroy(atol); N_VDestroy(q);
  SUNContext_Free(&ctx);
}
