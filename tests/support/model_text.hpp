#pragma once
// Model-file text for tests: the error a text gives, and a text with one part replaced.
#include <saltus/core/error.hpp>
#include <saltus/multibody/formulation.hpp>
#include <saltus/multibody/model_file.hpp>

#include <gtest/gtest.h>

#include <string>

namespace saltus::test {

/// The message of the saltus::Error that parsing `text` (as "model.yaml") and building its
/// problem raises, or "" if it builds.
inline std::string model_error(const std::string& text) {
  try {
    multibody::make_problem(multibody::parse_model(text, "model.yaml"));
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

/// `text` with the first occurrence of `from` replaced by `to` (a test failure if absent).
inline std::string replace_once(std::string text, const std::string& from, const std::string& to) {
  const auto at = text.find(from);
  EXPECT_NE(at, std::string::npos) << from;
  return at == std::string::npos ? text : text.replace(at, from.size(), to);
}

}  // namespace saltus::test
