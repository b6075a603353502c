#pragma once
// Differentiating with respect to some parameters only (the command's --wrt NAME[,NAME...]).
#include <saltus/core/problem.hpp>

#include <string>
#include <vector>

namespace saltus {

/// The problem with only the parameters `names` free, in that order; every other parameter is
/// fixed at its current nominal value (set overrides first). Every solver run on the result
/// gives derivatives with respect to those parameters only, at the cost of that many: forward
/// sensitivities integrate names.size() columns, differences take 2 names.size() runs. Model
/// functions are wrapped (analytic Jacobians give way to AD); event and cost indices, modes,
/// options and notes are the problem's. Throws InputError on unknown or repeated names.
Problem with_free_parameters(const Problem& problem, const std::vector<std::string>& names);

}  // namespace saltus
