// COLLECTIVE_ALGORITHM replaces AUTO in every call (ctest runs this binary
// with the variable set to a valid and to an invalid name).
#include <gtest/gtest.h>

#include <cstdlib>
#include <string>
#include <vector>

#include "collective/collective.h"

namespace collective {
namespace {

TEST(EnvOverrideTest, AlgorithmVariableReplacesAuto) {
  const char* forced = std::getenv("COLLECTIVE_ALGORITHM");
  ASSERT_NE(forced, nullptr) << "ctest sets COLLECTIVE_ALGORITHM for this test";
  const auto expected = parse_algorithm(forced);
  if (!expected) {
    // The first call that reads the parameters refuses: creating the
    // communicator already does (its timeout comes from the environment).
    try {
      auto comm = Communicator::world();
      FAIL() << "expected InvalidArgumentError for COLLECTIVE_ALGORITHM=" << forced;
    } catch (const InvalidArgumentError& error) {
      EXPECT_NE(std::string(error.what()).find("COLLECTIVE_ALGORITHM"), std::string::npos)
          << error.what();
    }
    return;
  }
  auto comm = Communicator::world();
  std::vector<float> values(4096, 1.0f);
  comm.all_reduce(std::span<float>(values));
  EXPECT_EQ(comm.last_algorithm(), *expected);
  EXPECT_EQ(values[0], static_cast<float>(comm.size()));
  // A call that names its own algorithm keeps it.
  AllReduceOptions options;
  options.algorithm = Algorithm::kMpi;
  comm.all_reduce(values.data(), values.data(), values.size(), DataType::kFloat32, options);
  EXPECT_EQ(comm.last_algorithm(), Algorithm::kMpi);
  // The forced algorithm cannot serve broadcast when it is recursive
  // doubling: an error, never a silent fallback.
  if (*expected == Algorithm::kRecursiveDoubling) {
    EXPECT_THROW(comm.broadcast(std::span<float>(values)), UnsupportedError);
  }
}

}  // namespace
}  // namespace collective
