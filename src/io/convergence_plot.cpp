#include "convergence_plot.hpp"

#include <saltus/core/error.hpp>

#include <fmt/format.h>
#include <plplot/plplot.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <system_error>
#include <unistd.h>

namespace saltus {

namespace {

constexpr const char* kDevice = "pngcairo";

/// PLplot selects an unknown device by asking on stdin; ask it first which devices it has.
bool png_device_available() {
  std::vector<const char*> menus(256), names(256);
  const char** m = menus.data();
  const char** d = names.data();
  int n = static_cast<int>(names.size());
  plgFileDevs(&m, &d, &n);
  for (int i = 0; i < n; ++i) {
    if (names[static_cast<size_t>(i)] && std::strcmp(names[static_cast<size_t>(i)], kDevice) == 0) return true;
  }
  return false;
}

struct Series {
  std::vector<PLFLT> x, y;
};

/// [lo, hi] of the values, widened when flat so that PLplot can draw an axis.
std::pair<PLFLT, PLFLT> range_of(const std::vector<PLFLT>& v) {
  auto [lo, hi] = std::minmax_element(v.begin(), v.end());
  PLFLT a = *lo, b = *hi;
  const PLFLT pad = b > a ? 0.05 * (b - a) : std::max<PLFLT>(1.0, std::abs(a)) * 0.05;
  return {a - pad, b + pad};
}

void draw_panel(const Series& all, const Series& marked, PLFLT x_max, const char* y_label, const char* title,
                bool log_y) {
  plcol0(15);
  const auto [y0, y1] = range_of(all.y);
  plenv(0.5, x_max + 0.5, y0, y1, 0, log_y ? 20 : 0);
  pllab("evaluation", y_label, title);
  plcol0(1);
  if (all.x.size() > 1) plline(static_cast<PLINT>(all.x.size()), all.x.data(), all.y.data());
  plpoin(static_cast<PLINT>(all.x.size()), all.x.data(), all.y.data(), 17);
  plcol0(9);
  if (!marked.x.empty()) plpoin(static_cast<PLINT>(marked.x.size()), marked.x.data(), marked.y.data(), 4);
}

}  // namespace

void write_convergence_plot(const std::filesystem::path& path, const std::string& title,
                            const std::vector<OptimizeIterate>& history) {
  if (!png_device_available()) {
    throw Error(fmt::format("cannot draw {}: PLplot's PNG driver '{}' is missing (Debian package "
                            "plplot-driver-cairo)",
                            path.string(), kDevice));
  }
  Series cost, best_cost, gradient, best_gradient;
  for (const OptimizeIterate& it : history) {
    if (it.failed) continue;
    const auto k = static_cast<PLFLT>(it.index);
    cost.x.push_back(k);
    cost.y.push_back(it.cost);
    if (it.best) best_cost.x.push_back(k), best_cost.y.push_back(it.cost);
    if (it.projected_gradient_norm > 0.0) {  // log scale: an exact zero is left out
      const PLFLT g = std::log10(it.projected_gradient_norm);
      gradient.x.push_back(k), gradient.y.push_back(g);
      if (it.best) best_gradient.x.push_back(k), best_gradient.y.push_back(g);
    }
  }
  const auto x_max = static_cast<PLFLT>(history.empty() ? 1 : history.back().index);
  // PLplot leaves a partly written file behind if it fails: write next to the target and rename.
  const std::filesystem::path temporary = path.string() + fmt::format(".tmp-{}", ::getpid());
  plsdev(kDevice);
  plsfnam(temporary.c_str());
  plsetopt("geometry", "900x700");
  plscol0(0, 255, 255, 255);   // background
  plscol0(15, 0, 0, 0);        // axes and labels
  plscol0(1, 31, 119, 180);    // series
  plscol0(9, 214, 39, 40);     // best points
  plssub(1, 2);
  plinit();
  if (!cost.x.empty()) draw_panel(cost, best_cost, x_max, "cost", title.c_str(), false);
  if (!gradient.x.empty()) draw_panel(gradient, best_gradient, x_max, "projected gradient norm", "", true);
  plend();
  std::error_code ec;
  if (!std::filesystem::exists(temporary, ec)) throw Error(fmt::format("PLplot did not write {}", path.string()));
  std::filesystem::rename(temporary, path, ec);
  if (ec) {
    std::filesystem::remove(temporary, ec);
    throw InputError(fmt::format("cannot write {}: {}", path.string(), ec.message()));
  }
}

}  // namespace saltus
