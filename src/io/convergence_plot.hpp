#pragma once
// The convergence plot of an optimization (PNG, drawn with PLplot's cairo driver): the cost and
// the projected gradient norm (log scale) against the evaluation number, best points marked.
#include <saltus/optimize/optimize.hpp>

#include <filesystem>
#include <string>
#include <vector>

namespace saltus {

/// Writes the plot to `path` whole or not at all (a temporary file renamed over it). Throws
/// Error if PLplot's PNG driver is missing (Debian package plplot-driver-cairo) or the file
/// cannot be written.
void write_convergence_plot(const std::filesystem::path& path, const std::string& title,
                            const std::vector<OptimizeIterate>& history);

}  // namespace saltus
