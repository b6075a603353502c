#pragma once
#ifdef __cplusplus
extern "C" {
#endif
/* robertson_dae (y3 = 1 - y1 - y2 as algebraic equation) in plain IDAS, with the settings of
 * Saltus's built-in: forward sensitivities, or the adjoint (check points every 100 steps, which
 * the bench then sets for Saltus too).
 * Each returns G = int_0^4e7 y3 dt and dG/dp (3). */
void robertson_plain_idas_forward(double* G, double* dG);
void robertson_plain_idas_adjoint(double* G, double* dG);
#ifdef __cplusplus
}
#endif
