// Helpers of the reliability tests: run a call that must raise, check the
// exception's class and message, and measure how long it took.
#pragma once

#include <gtest/gtest.h>

#include <chrono>
#include <initializer_list>
#include <string>

#include "collective/errors.h"

namespace collective::testing {

struct Raised {
  bool raised = false;
  std::string message;
  double seconds = 0;
};

// Runs `call`; expects exactly an exception of type E (or derived) whose
// what() contains every needle. Records a failure naming the rank
// otherwise.
template <typename E, typename Call>
Raised expect_raises(Call&& call, std::initializer_list<std::string> needles, int rank) {
  Raised result;
  const auto start = std::chrono::steady_clock::now();
  try {
    call();
    ADD_FAILURE() << "rank " << rank << ": the call returned; expected an error containing '"
                  << (needles.size() ? *needles.begin() : std::string()) << "'";
  } catch (const E& error) {
    result.raised = true;
    result.message = error.what();
    for (const std::string& needle : needles) {
      EXPECT_NE(result.message.find(needle), std::string::npos)
          << "rank " << rank << ": '" << needle << "' missing from: " << result.message;
    }
  } catch (const std::exception& error) {
    ADD_FAILURE() << "rank " << rank << ": wrong error class: " << error.what();
  }
  result.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return result;
}

}  // namespace collective::testing
