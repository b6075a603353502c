#pragma once
// The check that a call fails with a Saltus error whose message names what went wrong.
#include <saltus/core/error.hpp>

#include <gtest/gtest.h>

#include <functional>
#include <string>

namespace saltus::test_support {

/// `f` throws a saltus::Error whose message contains `part`.
inline void expect_message(const std::function<void()>& f, const std::string& part) {
  try {
    f();
    ADD_FAILURE() << "no error; expected one mentioning '" << part << "'";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find(part), std::string::npos) << e.what();
  }
}

}  // namespace saltus::test_support
