#pragma once
// Numbers written as text on a command line or in an option: the whole text must be the number.
#include <cmath>
#include <cstdlib>
#include <optional>
#include <stdexcept>
#include <string>

namespace saltus {

/// `text` without the spaces and tabs before and after it ("" if it holds nothing else).
inline std::string trim(const std::string& text) {
  const auto first = text.find_first_not_of(" \t");
  if (first == std::string::npos) return "";
  return text.substr(first, text.find_last_not_of(" \t") - first + 1);
}

/// The number `text` spells, all of it ("2", "-1e-3", "inf"); nullopt for anything else
/// ("", "2x", "x").
inline std::optional<double> number_from_text(const std::string& text) {
  size_t used = 0;
  double value = 0.0;
  try {
    value = std::stod(text, &used);
  } catch (const std::out_of_range&) {
    // A number beyond double's range is an infinity, so that the caller's finiteness check names
    // it rather than "not a number"; one too small (rounded to zero or a subnormal) stays refused.
    char* end = nullptr;
    value = std::strtod(text.c_str(), &end);
    used = static_cast<size_t>(end - text.c_str());
    if (!std::isinf(value)) return std::nullopt;
  } catch (const std::exception&) {
    return std::nullopt;
  }
  if (used == 0 || used != text.size()) return std::nullopt;
  return value;
}

}  // namespace saltus
