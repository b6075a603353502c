#pragma once
// One field of a CSV file (RFC 4180), for the names Saltus writes in headers and rows: model
// files may name states, modes, events, costs and parameters freely, commas and quotes included.
#include <string>
#include <string_view>

namespace saltus::detail {

/// `text` as it is when it holds no comma, double quote, carriage return or line feed; else in
/// double quotes, each double quote inside doubled.
inline std::string csv_field(std::string_view text) {
  if (text.find_first_of(",\"\r\n") == std::string_view::npos) return std::string(text);
  std::string quoted = "\"";
  for (const char c : text) {
    if (c == '"') quoted += '"';
    quoted += c;
  }
  quoted += '"';
  return quoted;
}

}  // namespace saltus::detail
