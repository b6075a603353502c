#include "progress_line.hpp"

#include <fmt/format.h>

#include <cstdio>

namespace saltus::cli {

namespace {
constexpr std::chrono::milliseconds kQuietStart{2000};  // short runs show nothing
constexpr std::chrono::milliseconds kInterval{100};
constexpr int kWidth = 78;
}  // namespace

ProgressLine::ProgressLine(bool enabled)
    : enabled_(enabled), start_(std::chrono::steady_clock::now()), last_(start_) {}

ProgressLine::~ProgressLine() { clear(); }

std::function<void(const RunProgress&)> ProgressLine::callback() {
  if (!enabled_) return {};
  return [this](const RunProgress& progress) { show(progress); };
}

void ProgressLine::show(const RunProgress& progress) {
  const auto now = std::chrono::steady_clock::now();
  if (now - start_ < kQuietStart || now - last_ < kInterval) return;
  last_ = now;
  std::string text = fmt::format("saltus: {} [{}] t = {:.4g} of {:.4g} s, {} events", method_, progress.phase,
                                 progress.t, progress.tf, progress.events);
  if (text.size() > kWidth) text.resize(kWidth);
  std::fprintf(stderr, "\r%-*s", kWidth, text.c_str());
  std::fflush(stderr);
  shown_ = true;
}

void ProgressLine::clear() {
  if (!shown_) return;
  std::fprintf(stderr, "\r%*s\r", kWidth, "");
  std::fflush(stderr);
  shown_ = false;
}

}  // namespace saltus::cli
