// Helpers shared by the strategies tests: tensors from doubles, and checks
// that compare every element and name the index, expected and actual value.
#pragma once

#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

#include "collective/distribute/distribute.h"
#include "collective/errors.h"

namespace collective::distribute::testing {

inline Tensor floats(std::vector<float> values) {
  const auto size = static_cast<std::int64_t>(values.size());
  return Tensor(std::move(values), Shape{size});
}

// Every element of actual equals expected exactly (NaN equals NaN).
inline ::testing::AssertionResult tensor_equals(const Tensor& actual, DataType dtype,
                                                const Shape& shape,
                                                const std::vector<double>& expected,
                                                const std::string& what = "") {
  if (actual.dtype() != dtype || actual.shape() != shape) {
    return ::testing::AssertionFailure() << what << ": got " << actual.debug_string()
                                         << ", expected " << Tensor(dtype, shape).debug_string();
  }
  const std::vector<double> values = actual.to_doubles();
  for (std::size_t i = 0; i < values.size(); ++i) {
    const bool both_nan = std::isnan(values[i]) && std::isnan(expected[i]);
    if (!both_nan && values[i] != expected[i]) {
      return ::testing::AssertionFailure()
             << what << ": index " << i << " expected " << expected[i] << " actual " << values[i];
    }
  }
  return ::testing::AssertionSuccess();
}

// Runs fn and expects an exception of type E whose message contains needle.
template <typename E, typename Fn>
::testing::AssertionResult throws_with(Fn&& fn, const std::string& needle) {
  try {
    fn();
  } catch (const E& error) {
    const std::string message = error.what();
    if (message.find(needle) == std::string::npos) {
      return ::testing::AssertionFailure()
             << "the error \"" << message << "\" does not mention \"" << needle << "\"";
    }
    return ::testing::AssertionSuccess();
  } catch (const std::exception& other) {
    return ::testing::AssertionFailure() << "a different error: " << other.what();
  }
  return ::testing::AssertionFailure() << "no error (expected one mentioning \"" << needle << "\")";
}

}  // namespace collective::distribute::testing
