// The environment parser: defaults, accepted spellings, and refusals that
// name the variable (never a silent clamp or a wrapped-around number).
#include <gtest/gtest.h>

#include <map>
#include <string>

#include "collective/errors.h"
#include "core/env_params.h"

namespace collective::internal {
namespace {

EnvParams parse(const std::map<std::string, std::string>& values) {
  return parse_env_params([&](const char* name) -> const char* {
    const auto found = values.find(name);
    return found == values.end() ? nullptr : found->second.c_str();
  });
}

void expect_refused(const std::string& name, const std::string& value) {
  try {
    parse({{name, value}});
    ADD_FAILURE() << name << "=" << value << " was accepted";
  } catch (const InvalidArgumentError& error) {
    EXPECT_NE(std::string(error.what()).find(name + "=" + value), std::string::npos) << error.what();
  }
}

TEST(EnvParamsTest, Defaults) {
  const EnvParams params = parse({});
  EXPECT_EQ(params.timeout, std::chrono::seconds(300));
  EXPECT_EQ(params.stall_warning_fraction, 0.5);
  EXPECT_TRUE(params.validate);
  EXPECT_FALSE(params.forced_algorithm.has_value());
  EXPECT_EQ(params.max_message_bytes, std::size_t{1} << 30);
  EXPECT_EQ(params.shm_handoff, std::nullopt);
}

TEST(EnvParamsTest, AcceptedValues) {
  const EnvParams params = parse({{"COLLECTIVE_TIMEOUT", "2.5"},
                                  {"COLLECTIVE_STALL_WARNING", "0"},
                                  {"COLLECTIVE_VALIDATE", "off"},
                                  {"COLLECTIVE_ALGORITHM", "ring"},
                                  {"COLLECTIVE_MAX_MESSAGE_BYTES", "64K"},
                                  {"COLLECTIVE_RING_PIPELINE_DEPTH", "8"}});
  EXPECT_EQ(params.timeout, std::chrono::milliseconds(2500));
  EXPECT_EQ(params.stall_warning_fraction, 0.0);
  EXPECT_FALSE(params.validate);
  EXPECT_EQ(params.forced_algorithm, Algorithm::kRing);
  EXPECT_EQ(params.max_message_bytes, 65536u);
  EXPECT_EQ(params.ring_pipeline_depth, 8);
  EXPECT_TRUE(parse({{"COLLECTIVE_VALIDATE", "1"}}).validate);
  EXPECT_EQ(parse({{"COLLECTIVE_SHM_HANDOFF", "memory"}}).shm_handoff, Handoff::kThroughMemory);
  EXPECT_EQ(parse({{"COLLECTIVE_SHM_HANDOFF", "cache"}}).shm_handoff, Handoff::kThroughCache);
  EXPECT_EQ(parse({{"COLLECTIVE_SHM_HANDOFF", "auto"}}).shm_handoff, std::nullopt);
}

TEST(EnvParamsTest, RefusedValues) {
  for (const char* value : {"0", "-1", "abc", "inf", "nan", "1e300", "2e6", "5s"}) {
    expect_refused("COLLECTIVE_TIMEOUT", value);
  }
  for (const char* value : {"1", "-0.1", "0.9999", "half"}) expect_refused("COLLECTIVE_STALL_WARNING", value);
  for (const char* value : {"2", "maybe"}) expect_refused("COLLECTIVE_VALIDATE", value);
  // A sign wraps around in strtoull; a suffix can overflow size_t; above
  // 2^30 an MPI count could overflow.
  for (const char* value : {"-1", "+5", "18446744073709551615G", "99999999999999999999",
                            "2G", "32", "4X", "1 K"}) {
    expect_refused("COLLECTIVE_MAX_MESSAGE_BYTES", value);
  }
  for (const char* value : {"0", "65", "1.5", "3x", "08"}) {
    expect_refused("COLLECTIVE_RING_PIPELINE_DEPTH", value);
  }
  expect_refused("COLLECTIVE_ALGORITHM", "fastest");
  for (const char* value : {"Memory", "nt", "cache "}) expect_refused("COLLECTIVE_SHM_HANDOFF", value);
}

}  // namespace
}  // namespace collective::internal
