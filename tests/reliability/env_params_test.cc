// The environment parser: defaults, accepted spellings, and refusals that
// name the variable (never a silent clamp or a wrapped-around number).
#include <gtest/gtest.h>

#include <cstdlib>
#include <functional>
#include <map>
#include <string>

#include "collective/errors.h"
#include "collective/in_tree/parameters.h"
#include "core/agreed_params.h"
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
    EXPECT_NE(std::string(error.what()).find(name + "=" + value), std::string::npos)
        << error.what();
  }
}

TEST(EnvParamsTest, Defaults) {
  const EnvParams params = parse({});
  EXPECT_EQ(params.timeout, std::chrono::seconds(300));
  EXPECT_EQ(params.stall_warning_fraction, 0.5);
  EXPECT_EQ(params.peer_check_interval, std::chrono::milliseconds(250));
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
  EXPECT_EQ(parse({{"COLLECTIVE_PEER_CHECK_INTERVAL", "0.001"}}).peer_check_interval,
            std::chrono::milliseconds(1));
  EXPECT_EQ(parse({{"COLLECTIVE_PEER_CHECK_INTERVAL", "60"}}).peer_check_interval,
            std::chrono::seconds(60));
  // The smallest limit: a whole fingerprint of the cross-rank check.
  EXPECT_EQ(parse({{"COLLECTIVE_MAX_MESSAGE_BYTES", "256"}}).max_message_bytes, 256u);
  EXPECT_EQ(parse({{"COLLECTIVE_SHM_HANDOFF", "memory"}}).shm_handoff, Handoff::kThroughMemory);
  EXPECT_EQ(parse({{"COLLECTIVE_SHM_HANDOFF", "cache"}}).shm_handoff, Handoff::kThroughCache);
  EXPECT_EQ(parse({{"COLLECTIVE_SHM_HANDOFF", "auto"}}).shm_handoff, std::nullopt);
  EXPECT_EQ(parse({}).flight_recorder_calls, 512u);
  EXPECT_EQ(parse({{"COLLECTIVE_FLIGHT_RECORDER", "0"}}).flight_recorder_calls, 0u);
  EXPECT_EQ(parse({{"COLLECTIVE_FLIGHT_RECORDER", "1048576"}}).flight_recorder_calls, 1048576u);
  EXPECT_EQ(parse({{"COLLECTIVE_FLIGHT_RECORDER_DIR", "/tmp/x"}}).flight_recorder_dir, "/tmp/x");
  EXPECT_EQ(parse({{"COLLECTIVE_TRACE", "/tmp/t"}}).trace_dir, "/tmp/t");
  EXPECT_EQ(parse({}).flight_recorder_signal, std::nullopt);
  EXPECT_EQ(parse({{"COLLECTIVE_FLIGHT_RECORDER_SIGNAL", "0"}}).flight_recorder_signal, false);
  EXPECT_EQ(parse({{"COLLECTIVE_FLIGHT_RECORDER_SIGNAL", "on"}}).flight_recorder_signal, true);
  expect_refused("COLLECTIVE_FLIGHT_RECORDER_SIGNAL", "dump");
  EXPECT_FALSE(parse({}).deterministic);
  EXPECT_TRUE(parse({{"COLLECTIVE_DETERMINISTIC", "1"}}).deterministic);
  EXPECT_FALSE(parse({{"COLLECTIVE_DETERMINISTIC", "0"}}).deterministic);
}

// Deterministic ranks run other protocols (and AUTO other algorithms).
TEST(EnvParamsTest, DeterministicMustAgree) {
  EXPECT_NE(agreed_parameters_text(parse({{"COLLECTIVE_DETERMINISTIC", "1"}})),
            agreed_parameters_text(parse({})));
  for (const char* value : {"2", "yes please"}) expect_refused("COLLECTIVE_DETERMINISTIC", value);
}

TEST(EnvParamsTest, RefusedValues) {
  for (const char* value : {"0", "-1", "abc", "inf", "nan", "1e300", "2e6", "5s"}) {
    expect_refused("COLLECTIVE_TIMEOUT", value);
  }
  for (const char* value : {"1", "-0.1", "0.9999", "half"})
    expect_refused("COLLECTIVE_STALL_WARNING", value);
  for (const char* value : {"2", "maybe"}) expect_refused("COLLECTIVE_VALIDATE", value);
  for (const char* value : {"0", "0.0009", "-1", "61", "nan", "1s"}) {
    expect_refused("COLLECTIVE_PEER_CHECK_INTERVAL", value);
  }
  // A sign wraps around in strtoull; a suffix can overflow size_t; above
  // 2^30 an MPI count could overflow; below 256 a fingerprint of the
  // cross-rank check would be split.
  for (const char* value : {"-1", "+5", "18446744073709551615G", "99999999999999999999", "2G", "32",
                            "64", "255", "4X", "1 K"}) {
    expect_refused("COLLECTIVE_MAX_MESSAGE_BYTES", value);
  }
  for (const char* value : {"0", "65", "1.5", "3x", "08"}) {
    expect_refused("COLLECTIVE_RING_PIPELINE_DEPTH", value);
  }
  expect_refused("COLLECTIVE_ALGORITHM", "fastest");
  for (const char* value : {"-1", "1048577", "2.5", "lots", "08"}) {
    expect_refused("COLLECTIVE_FLIGHT_RECORDER", value);
  }
  for (const char* value : {"Memory", "nt", "cache "})
    expect_refused("COLLECTIVE_SHM_HANDOFF", value);
  // Issue 13: these were accepted silently (read outside the one parser).
  for (const char* value : {"avx512", "Generic", "avx2"})
    expect_refused("COLLECTIVE_KERNELS", value);
  for (const char* value : {"maybe", "on", "1"})
    expect_refused("COLLECTIVE_NCCL_HIERARCHICAL", value);
  for (const char* value : {"abc", "0", "-2", "2.5", "1048577", "4 "}) {
    expect_refused("COLLECTIVE_NCCL_RANKS_PER_NODE", value);
  }
  for (const char* value : {"loud", "4", "Info"}) expect_refused("COLLECTIVE_DEBUG", value);
}

TEST(EnvParamsTest, EveryVariableThroughTheOneParser) {
  const EnvParams params = parse({{"COLLECTIVE_KERNELS", "generic"},
                                  {"COLLECTIVE_NCCL_HIERARCHICAL", "off"},
                                  {"COLLECTIVE_NCCL_RANKS_PER_NODE", "4"},
                                  {"COLLECTIVE_DEBUG", "DEBUG"},
                                  {"COLLECTIVE_TOPOLOGY_FILE", "/tmp/t.json"},
                                  {"COLLECTIVE_TOPOLOGY_DUMP", "/tmp/d.json"},
                                  {"COLLECTIVE_RULES_FILE", "/tmp/r.json"}});
  EXPECT_TRUE(params.generic_kernels);
  EXPECT_TRUE(params.nccl_hierarchical_off);
  EXPECT_EQ(params.nccl_ranks_per_node, 4);
  EXPECT_EQ(params.log_level, LogLevel::kDebug);
  EXPECT_EQ(params.topology_file, "/tmp/t.json");
  EXPECT_EQ(params.topology_dump, "/tmp/d.json");
  EXPECT_EQ(params.rules_file, "/tmp/r.json");
  const EnvParams defaults =
      parse({{"COLLECTIVE_KERNELS", "auto"}, {"COLLECTIVE_NCCL_HIERARCHICAL", "auto"}});
  EXPECT_FALSE(defaults.generic_kernels);
  EXPECT_FALSE(defaults.nccl_hierarchical_off);
  EXPECT_EQ(defaults.nccl_ranks_per_node, 0);
  EXPECT_EQ(defaults.log_level, LogLevel::kWarn);
  EXPECT_TRUE(defaults.rules_file.empty());
}

// The parameters that must agree are compared by value, whatever their
// spelling; the error names each one that differs and which ranks hold what.
TEST(EnvParamsTest, AgreedParametersNameTheDifference) {
  const std::string a = agreed_parameters_text(parse({{"COLLECTIVE_RING_SEGMENT_BYTES", "512K"}}));
  const std::string same =
      agreed_parameters_text(parse({{"COLLECTIVE_RING_SEGMENT_BYTES", "524288"}}));
  const std::string b = agreed_parameters_text(
      parse({{"COLLECTIVE_RING_SEGMENT_BYTES", "64K"}, {"COLLECTIVE_VALIDATE", "0"}}));
  // Local parameters do not take part.
  const std::string local = agreed_parameters_text(parse({{"COLLECTIVE_TIMEOUT", "5"},
                                                          {"COLLECTIVE_RING_PIPELINE_DEPTH", "2"},
                                                          {"COLLECTIVE_KERNELS", "generic"},
                                                          {"COLLECTIVE_DEBUG", "TRACE"}}));
  EXPECT_EQ(a, same);
  EXPECT_EQ(agreed_parameters_text(parse({})), local);
  EXPECT_NO_THROW(check_agreed_parameters({a, same, a}, "Communicator::world", 0));
  try {
    check_agreed_parameters({a, b, same, b, b}, "Communicator::world", 2);
    ADD_FAILURE() << "differing parameters were accepted";
  } catch (const InvalidArgumentError& error) {
    const std::string message = error.what();
    for (const char* needle :
         {"Communicator::world (rank 2)",
          "COLLECTIVE_RING_SEGMENT_BYTES differs: 524288 on ranks 0 and 2, 65536 on ranks 1 and "
          "3-4",
          "COLLECTIVE_VALIDATE differs: 1 on ranks 0 and 2, 0 on ranks 1 and 3-4"}) {
      EXPECT_NE(message.find(needle), std::string::npos) << needle << " missing from " << message;
    }
    EXPECT_EQ(message.find("COLLECTIVE_MAX_MESSAGE_BYTES"), std::string::npos) << message;
  }
}

}  // namespace
// The public reader the layers above use (strategies, the MPI drop-in): the
// same strictness and the same message, on the live environment.
std::string refusal(const std::function<void()>& read) {
  try {
    read();
  } catch (const InvalidArgumentError& error) {
    return error.cause();
  }
  return "accepted";
}

TEST(PublicParameters, ReadTheLiveEnvironmentStrictly) {
  const char* name = "COLLECTIVE_TEST_PUBLIC_PARAMETER";
  ::unsetenv(name);
  EXPECT_EQ(seconds_parameter(name, 10), std::nullopt);
  EXPECT_EQ(integer_parameter(name, 0, 10), std::nullopt);
  EXPECT_EQ(switch_parameter(name), std::nullopt);
  ::setenv(name, "", 1);
  EXPECT_EQ(seconds_parameter(name, 10), std::nullopt);

  ::setenv(name, "2.5", 1);
  EXPECT_EQ(seconds_parameter(name, 10), 2.5);
  for (const char* bad : {"3s", "inf", "-1", "0", "1e1", "0x1", " 1", "11"}) {
    ::setenv(name, bad, 1);
    EXPECT_EQ(refusal([&] { seconds_parameter(name, 10); }),
              std::string(name) + "=" + bad + " is not a number of seconds in (0, 10]");
  }

  ::setenv(name, "7", 1);
  EXPECT_EQ(integer_parameter(name, 1, 10), 7);
  for (const char* bad : {"2x", " 2", "-1", "+3", "0", "11", "99999999999999999999999"}) {
    ::setenv(name, bad, 1);
    EXPECT_EQ(refusal([&] { integer_parameter(name, 1, 10); }),
              std::string(name) + "=" + bad + " is not a decimal integer in [1, 10]");
  }

  ::setenv(name, "64K", 1);
  EXPECT_EQ(bytes_parameter(name, 0, 1 << 20), std::size_t{65536});
  for (const char* bad : {"64Q", "-1", " 1", "2M"}) {
    ::setenv(name, bad, 1);
    EXPECT_EQ(refusal([&] { bytes_parameter(name, 0, 1 << 20); }),
              std::string(name) + "=" + bad +
                  " is not a byte count in [0, 1048576] (suffix K, M or G allowed)");
  }

  ::setenv(name, "yes", 1);
  EXPECT_EQ(switch_parameter(name), true);
  ::setenv(name, "0", 1);
  EXPECT_EQ(switch_parameter(name), false);
  ::setenv(name, "maybe", 1);
  EXPECT_NE(
      refusal([&] { switch_parameter(name); }).find(std::string(name) + "=maybe is not 0 or 1"),
      std::string::npos);
  ::unsetenv(name);
}

}  // namespace collective::internal
