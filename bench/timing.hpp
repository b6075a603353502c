#pragma once
// Wall-clock timing for the bench programs: medians of repeated runs, since the machines are
// shared and noisy (ratios are taken within one run).
#include <algorithm>
#include <chrono>
#include <functional>
#include <vector>

namespace saltus::bench {

inline double seconds(const std::function<void()>& f) {
  const auto start = std::chrono::steady_clock::now();
  f();
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

/// Median of `repetitions` timings of f.
inline double median_time(int repetitions, const std::function<void()>& f) {
  std::vector<double> t;
  for (int i = 0; i < repetitions; ++i) t.push_back(seconds(f));
  std::sort(t.begin(), t.end());
  return t[t.size() / 2];
}

}  // namespace saltus::bench
