// Bad input is rejected before any buffer is touched, with a message that
// names the operation, the rank and what was wrong. Every rank passes the
// same bad input, so every rank raises and nobody waits.
#include <gtest/gtest.h>

#include <cstdint>
#include <limits>
#include <string>
#include <vector>

#include "collective/collective.h"

namespace collective {
namespace {

class InvalidArgumentTest : public ::testing::Test {
 protected:
  void SetUp() override {
    send.assign(64, 1.0f);
    recv.assign(64 * static_cast<std::size_t>(comm.size()), -7.0f);
  }
  // Runs `call` and expects InvalidArgumentError whose message holds
  // `needle`, the operation name and this rank.
  template <typename Call>
  void expect_invalid(Call call, const std::string& operation, const std::string& needle) {
    try {
      call();
      ADD_FAILURE() << operation << ": expected InvalidArgumentError containing '" << needle << "'";
    } catch (const InvalidArgumentError& error) {
      const std::string text = error.what();
      EXPECT_NE(text.find(needle), std::string::npos) << text;
      EXPECT_NE(text.find(operation), std::string::npos) << text;
      EXPECT_NE(text.find("rank " + std::to_string(comm.rank())), std::string::npos) << text;
    }
  }
  // expect_invalid, and the fixture's buffers left untouched.
  template <typename Call>
  void expect_rejected(Call call, const std::string& operation, const std::string& needle) {
    expect_invalid(call, operation, needle);
    for (float v : recv) ASSERT_EQ(v, -7.0f) << operation << " touched the output";
    for (float v : send) ASSERT_EQ(v, 1.0f) << operation << " touched the input";
  }

  Communicator comm = Communicator::world();
  std::vector<float> send;
  std::vector<float> recv;
};

TEST_F(InvalidArgumentTest, NullBuffers) {
  expect_rejected([&] { comm.all_reduce(nullptr, recv.data(), 4, DataType::kFloat32); },
                  "all_reduce", "send buffer is null");
  expect_rejected([&] { comm.all_reduce(send.data(), nullptr, 4, DataType::kFloat32); },
                  "all_reduce", "recv buffer is null");
  expect_rejected([&] { comm.broadcast(nullptr, 4, DataType::kFloat32); }, "broadcast",
                  "buffer is null");
  expect_rejected([&] { comm.reduce_scatter(nullptr, recv.data(), 4, DataType::kFloat32); },
                  "reduce_scatter", "send buffer is null");
  expect_rejected([&] { comm.all_gather(send.data(), nullptr, 4, DataType::kFloat32); },
                  "all_gather", "recv buffer is null");
  // Zero elements with null buffers is a valid no-op.
  comm.all_reduce(nullptr, nullptr, 0, DataType::kFloat32);
}

TEST_F(InvalidArgumentTest, OverlappingButNotInPlace) {
  expect_rejected([&] { comm.all_reduce(recv.data(), recv.data() + 1, 8, DataType::kFloat32); },
                  "all_reduce", "overlap");
  if (comm.size() > 1) {
    // all_gather's in-place form is send == recv + rank * count; anything
    // else overlapping is refused.
    const int wrong_slot = (comm.rank() + 1) % comm.size();
    expect_rejected(
        [&] { comm.all_gather(recv.data() + wrong_slot * 4, recv.data(), 4, DataType::kFloat32); },
        "all_gather", "send == recv + rank * send_count");
  }
}

TEST_F(InvalidArgumentTest, BadRoot) {
  for (int root : {-1, comm.size(), 1 << 20}) {
    BroadcastOptions broadcast_options;
    broadcast_options.root = root;
    expect_rejected([&] { comm.broadcast(recv.data(), 4, DataType::kFloat32, broadcast_options); },
                    "broadcast", "root " + std::to_string(root) + " is outside");
    ReduceOptions reduce_options;
    reduce_options.root = root;
    expect_rejected(
        [&] { comm.reduce(send.data(), recv.data(), 4, DataType::kFloat32, reduce_options); },
        "reduce", "outside the communicator");
  }
}

// The bitwise ops reduce integers only: every reducing collective, every
// floating type, every algorithm that would serve the call.
TEST_F(InvalidArgumentTest, BitwiseOpOnAFloatingType) {
  for (const ReduceOp op : {ReduceOp::kBitwiseAnd, ReduceOp::kBitwiseOr, ReduceOp::kBitwiseXor}) {
    const std::string name(to_string(op));
    for (const DataType type :
         {DataType::kFloat16, DataType::kBFloat16, DataType::kFloat32, DataType::kFloat64}) {
      const std::string needle = "reduce op " + name +
                                 " combines bits, of integer types only (int8, uint8, int32, "
                                 "int64), not " +
                                 std::string(to_string(type));
      for (const Algorithm algorithm : {Algorithm::kAuto, Algorithm::kRing, Algorithm::kMpi}) {
        AllReduceOptions all_reduce;
        all_reduce.op = op;
        all_reduce.algorithm = algorithm;
        expect_rejected([&] { comm.all_reduce(send.data(), recv.data(), 4, type, all_reduce); },
                        "all_reduce", needle);
        ReduceOptions reduce;
        reduce.op = op;
        reduce.algorithm = algorithm;
        expect_rejected([&] { comm.reduce(send.data(), recv.data(), 4, type, reduce); }, "reduce",
                        needle);
        ReduceScatterOptions reduce_scatter;
        reduce_scatter.op = op;
        reduce_scatter.algorithm = algorithm;
        expect_rejected(
            [&] { comm.reduce_scatter(recv.data(), send.data(), 2, type, reduce_scatter); },
            "reduce_scatter", needle);
      }
    }
  }
}

TEST_F(InvalidArgumentTest, UnknownTypeOpAndAlgorithm) {
  expect_rejected([&] { comm.all_reduce(send.data(), recv.data(), 4, static_cast<DataType>(42)); },
                  "all_reduce", "unknown data type (DataType value 42)");
  AllReduceOptions bad_op;
  bad_op.op = static_cast<ReduceOp>(-3);
  expect_rejected([&] { comm.all_reduce(send.data(), recv.data(), 4, DataType::kFloat32, bad_op); },
                  "all_reduce", "unknown reduce op (ReduceOp value -3)");
  AllReduceOptions bad_algorithm;
  bad_algorithm.algorithm = static_cast<Algorithm>(99);
  expect_rejected(
      [&] { comm.all_reduce(send.data(), recv.data(), 4, DataType::kFloat32, bad_algorithm); },
      "all_reduce", "unknown algorithm");
  AllReduceOptions bad_timeout;
  bad_timeout.timeout = std::chrono::milliseconds(-5);
  expect_rejected(
      [&] { comm.all_reduce(send.data(), recv.data(), 4, DataType::kFloat32, bad_timeout); },
      "all_reduce", "negative timeout");
}

TEST_F(InvalidArgumentTest, CountOverflowsBytes) {
  const std::size_t huge = std::numeric_limits<std::size_t>::max() / 2;
  expect_rejected([&] { comm.all_reduce(send.data(), recv.data(), huge, DataType::kFloat64); },
                  "all_reduce", "overflows the byte size");
  const std::size_t per_rank = std::numeric_limits<std::size_t>::max() / 4 / 2;
  if (comm.size() > 2) {
    expect_rejected(
        [&] { comm.all_gather(send.data(), recv.data(), per_rank, DataType::kFloat32); },
        "all_gather", "overflows the byte size");
  }
}

TEST_F(InvalidArgumentTest, CommunicatorStaysUsable) {
  expect_rejected([&] { comm.all_reduce(nullptr, recv.data(), 4, DataType::kFloat32); },
                  "all_reduce", "null");
  std::vector<float> values(8, 2.0f);
  comm.all_reduce(std::span<float>(values));
  for (float v : values) EXPECT_EQ(v, 2.0f * comm.size());
}

// The repeat-call fast path (core/checked_call_memo.h) reuses the checks of
// the last call that passed: after a run of valid calls, a call that
// differs from them in one argument is still checked (and touches
// nothing), and the valid call goes on working after each.
TEST_F(InvalidArgumentTest, ARepeatedCallStillChecksEachChangedArgument) {
  // Input at [0, 8), output at [16, 24).
  std::vector<float> buffer(32, -1.0f);
  float* in = buffer.data();
  float* out = buffer.data() + 16;
  const auto valid_calls = [&] {
    for (int repeat = 0; repeat < 3; ++repeat) {
      for (int i = 0; i < 8; ++i) in[i] = static_cast<float>(comm.rank() + i + repeat);
      comm.all_reduce(in, out, 8, DataType::kFloat32);
      for (int i = 0; i < 8; ++i) {
        const float expected =
            static_cast<float>(comm.size() * (comm.size() - 1) / 2 + comm.size() * (i + repeat));
        ASSERT_EQ(out[i], expected) << "rank " << comm.rank() << " index " << i;
      }
    }
  };
  const auto untouched_rejection = [&](auto call, const std::string& operation,
                                       const std::string& needle) {
    const std::vector<float> before = buffer;
    expect_invalid(call, operation, needle);
    for (std::size_t i = 0; i < buffer.size(); ++i) {
      ASSERT_EQ(buffer[i], before[i])
          << "rank " << comm.rank() << ": " << operation << " touched index " << i;
    }
  };
  const auto rejected = [&](auto call, const std::string& operation, const std::string& needle) {
    valid_calls();
    untouched_rejection(call, operation, needle);
  };
  rejected([&] { comm.all_reduce(in, nullptr, 8, DataType::kFloat32); }, "all_reduce",
           "recv buffer is null");
  rejected([&] { comm.all_reduce(in, in + 4, 8, DataType::kFloat32); }, "all_reduce", "overlap");
  rejected([&] { comm.all_reduce(in, out, 8, static_cast<DataType>(42)); }, "all_reduce",
           "unknown data type");
  AllReduceOptions bad_op;
  bad_op.op = static_cast<ReduceOp>(-3);
  rejected([&] { comm.all_reduce(in, out, 8, DataType::kFloat32, bad_op); }, "all_reduce",
           "unknown reduce op");
  AllReduceOptions bad_algorithm;
  bad_algorithm.algorithm = static_cast<Algorithm>(99);
  rejected([&] { comm.all_reduce(in, out, 8, DataType::kFloat32, bad_algorithm); }, "all_reduce",
           "unknown algorithm");
  AllReduceOptions bad_timeout;
  bad_timeout.timeout = std::chrono::milliseconds(-5);
  rejected([&] { comm.all_reduce(in, out, 8, DataType::kFloat32, bad_timeout); }, "all_reduce",
           "negative timeout");
  rejected(
      [&] {
        comm.all_reduce(in, out, std::numeric_limits<std::size_t>::max() / 2, DataType::kFloat64);
      },
      "all_reduce", "overflows the byte size");
  // A broadcast remembered, then the same broadcast with another root.
  BroadcastOptions root_zero;
  comm.broadcast(in, 8, DataType::kFloat32, root_zero);
  comm.broadcast(in, 8, DataType::kFloat32, root_zero);
  BroadcastOptions bad_root;
  bad_root.root = comm.size();
  untouched_rejection([&] { comm.broadcast(in, 8, DataType::kFloat32, bad_root); }, "broadcast",
                      "is outside");
  valid_calls();
}

// The fast path remembers the v-forms' counts and displacements by value:
// the same arrays rewritten in place between calls are checked again.
TEST_F(InvalidArgumentTest, ARepeatedVFormStillChecksCountsRewrittenInPlace) {
  const std::size_t ranks = static_cast<std::size_t>(comm.size());
  std::vector<std::int32_t> send(ranks), recv(ranks, -1);
  std::vector<std::size_t> counts(ranks, 1), displacements(ranks);
  for (std::size_t q = 0; q < ranks; ++q) displacements[q] = q;
  const auto call = [&] {
    comm.all_to_all_v(send.data(), counts, displacements, recv.data(), counts, displacements,
                      DataType::kInt32);
  };
  const auto valid_calls = [&] {
    for (int repeat = 0; repeat < 3; ++repeat) {
      for (std::size_t q = 0; q < ranks; ++q) {
        send[q] = static_cast<std::int32_t>(comm.rank() * 100 + static_cast<int>(q) + repeat);
      }
      call();
      for (std::size_t q = 0; q < ranks; ++q) {
        ASSERT_EQ(recv[q],
                  static_cast<std::int32_t>(static_cast<int>(q) * 100 + comm.rank() + repeat))
            << "rank " << comm.rank() << " index " << q;
      }
    }
  };
  valid_calls();
  const std::vector<std::int32_t> before = recv;
  displacements[0] = std::numeric_limits<std::size_t>::max() - 1;
  expect_invalid(call, "all_to_all_v", "overflows the byte size");
  EXPECT_EQ(recv, before) << "rank " << comm.rank() << ": a refused all_to_all_v wrote";
  displacements[0] = 0;
  valid_calls();
}

}  // namespace
}  // namespace collective
