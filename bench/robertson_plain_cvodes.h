#pragma once
#ifdef __cplusplus
extern "C" {
#endif
/* Solves robertson with forward sensitivities in plain CVODES; returns G and dG/dp (3). */
void robertson_plain_cvodes(double* G, double* dG);
#ifdef __cplusplus
}
#endif
