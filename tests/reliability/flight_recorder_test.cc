// The flight recorder (issue 18) inside one job: every call is recorded
// with its exact arguments and state, the ring keeps the last 512 calls
// (COLLECTIVE_FLIGHT_RECORDER's default), dump_flight_record writes the
// documented format on demand, and a mismatch dumps by itself. The dumps
// of real hangs and their reading by collective_trace: fault_driver.py.
#include <gtest/gtest.h>
#include <mpi.h>
#include <unistd.h>

#include <cstdint>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "collective/collective.h"
#include "expect_error.h"
#include "util/json.h"

namespace collective {
namespace {

using internal::json::Value;

Value read_dump(const std::string& path) {
  std::ifstream file(path);
  EXPECT_TRUE(file.good()) << "cannot open " << path;
  std::stringstream text;
  text << file.rdbuf();
  return internal::json::parse(text.str(), path);
}

std::string text_of(const Value& object, const char* key) {
  const Value* value = object.find(key);
  return value != nullptr && value->is_string() ? value->text() : "<absent>";
}

std::int64_t integer_of(const Value& object, const char* key) {
  const Value* value = object.find(key);
  return value != nullptr && value->integer() ? *value->integer() : -1;
}

// The newest communicator in a dump: the one this test just made.
const Value& newest_communicator(const Value& dump) {
  const Value* communicators = dump.find("communicators");
  EXPECT_TRUE(communicators != nullptr && communicators->is_array() &&
              !communicators->items().empty());
  return communicators->items().back();
}

class FlightRecorderTest : public ::testing::Test {
 protected:
  void SetUp() override {
    rank = world.rank();
    size = world.size();
    comm = world.split(0, rank);
    char pattern[] = "/tmp/flight-test-XXXXXX";
    ASSERT_NE(mkdtemp(pattern), nullptr);
    directory = pattern;
  }
  void TearDown() override {
    std::system(("rm -rf '" + directory + "'").c_str());
    MPI_Barrier(MPI_COMM_WORLD);
  }

  Communicator world = Communicator::world();
  Communicator comm = world;
  int rank = 0;
  int size = 1;
  std::string directory;
};

TEST_F(FlightRecorderTest, RecordsEveryCallWithItsArguments) {
  std::vector<float> f32(5, 1.0f);
  std::vector<std::int32_t> i32(3, rank);
  std::vector<double> f64(7, 2.0), f64_out(7);
  std::vector<std::uint8_t> u8(2, 1), u8_all(2 * static_cast<std::size_t>(size));
  std::vector<std::int64_t> i64(4 * static_cast<std::size_t>(size), 3), i64_out(4);
  comm.all_reduce(f32.data(), f32.data(), 5, DataType::kFloat32);
  BroadcastOptions broadcast;
  broadcast.root = size - 1;
  comm.broadcast(i32.data(), 3, DataType::kInt32, broadcast);
  ReduceOptions reduce;
  reduce.op = ReduceOp::kMax;
  comm.reduce(f64.data(), f64_out.data(), 7, DataType::kFloat64, reduce);
  comm.all_gather(u8.data(), u8_all.data(), 2, DataType::kUInt8);
  ReduceScatterOptions scatter;
  scatter.op = ReduceOp::kMin;
  comm.reduce_scatter(i64.data(), i64_out.data(), 4, DataType::kInt64, scatter);
  comm.barrier();

  const std::string path = dump_flight_record(directory);
  EXPECT_EQ(path, directory + "/collective_flight_record." + std::to_string(rank) + ".json");
  const Value dump = read_dump(path);
  EXPECT_EQ(text_of(dump, "format"), "collective-flight-record");
  EXPECT_EQ(integer_of(dump, "version"), 1);
  EXPECT_EQ(text_of(dump, "reason"), "dump_flight_record (on demand)");
  EXPECT_EQ(integer_of(dump, "world_rank"), rank);
  EXPECT_EQ(integer_of(dump, "world_size"), size);
  EXPECT_EQ(integer_of(dump, "pid"), getpid());
  const Value& mine = newest_communicator(dump);
  EXPECT_EQ(text_of(mine, "origin"), "Communicator::split");
  EXPECT_EQ(integer_of(mine, "rank"), rank);
  EXPECT_EQ(integer_of(mine, "size"), size);
  EXPECT_EQ(integer_of(mine, "capacity"), 512);
  EXPECT_EQ(integer_of(mine, "calls_started"), 6);
  std::string members;
  for (int r = 0; r < size; ++r) members += (r > 0 ? "," : "") + std::to_string(r);
  EXPECT_EQ(text_of(mine, "id").rfind("[" + members + "]#", 0), 0u) << text_of(mine, "id");

  struct Expected {
    const char* collective;
    std::int64_t count;
    const char* dtype;
    const char* op;     // nullptr: no op field
    std::int64_t root;  // -1: no root field
  };
  const Expected expected[] = {
      {"all_reduce", 5, "float32", "sum", -1},   {"broadcast", 3, "int32", nullptr, size - 1},
      {"reduce", 7, "float64", "max", 0},        {"all_gather", 2, "uint8", nullptr, -1},
      {"reduce_scatter", 4, "int64", "min", -1}, {"barrier", 0, "uint8", nullptr, -1}};
  const std::vector<Value>& calls = mine.find("calls")->items();
  ASSERT_EQ(calls.size(), 6u) << "rank " << rank;
  for (std::size_t i = 0; i < calls.size(); ++i) {
    const Value& call = calls[i];
    const Expected& want = expected[i];
    SCOPED_TRACE("rank " + std::to_string(rank) + " call " + std::to_string(i));
    EXPECT_EQ(integer_of(call, "seq"), static_cast<std::int64_t>(i));
    EXPECT_EQ(text_of(call, "collective"), want.collective);
    EXPECT_EQ(integer_of(call, "count"), want.count);
    EXPECT_EQ(text_of(call, "dtype"), want.dtype);
    EXPECT_EQ(text_of(call, "op"), want.op != nullptr ? want.op : "<absent>");
    EXPECT_EQ(integer_of(call, "root"), want.root);
    EXPECT_EQ(text_of(call, "state"), "finished");
    EXPECT_EQ(text_of(call, "requested"), "auto");
    EXPECT_NE(text_of(call, "algorithm"), "none");
    ASSERT_TRUE(call.find("start")->is_number() && call.find("end")->is_number());
    EXPECT_LE(call.find("start")->number(), call.find("end")->number());
    EXPECT_EQ(call.find("why"), nullptr);
  }
}

// Calls in flight are recorded queued when issued, then started and
// finished on the thread that runs them: each `_async` call and each plan
// start has its queue time, no later than its start; a blocking call has
// none. Every result is checked too (the recorder must not disturb them).
TEST_F(FlightRecorderTest, RecordsCallsInFlightWithTheirQueueTime) {
  constexpr std::size_t kCount = 9;
  std::vector<std::vector<std::int32_t>> reduced(3, std::vector<std::int32_t>(kCount));
  std::vector<std::int32_t> broadcast(kCount), planned(kCount);
  for (std::size_t k = 0; k < reduced.size(); ++k) {
    for (std::size_t i = 0; i < kCount; ++i) reduced[k][i] = rank + static_cast<int>(k + i);
  }
  for (std::size_t i = 0; i < kCount; ++i) {
    broadcast[i] = rank == 0 ? static_cast<int>(7 * i) : -1;
    planned[i] = 1;
  }
  // #0, the plan's creation, is recorded as all_reduce_init.
  Plan plan = comm.all_reduce_init(planned.data(), planned.data(), kCount, DataType::kInt32);
  std::vector<Work> works;
  works.push_back(comm.all_reduce_async(reduced[0].data(), reduced[0].data(), kCount,
                                        DataType::kInt32));                           // #1
  works.push_back(comm.broadcast_async(broadcast.data(), kCount, DataType::kInt32));  // #2
  works.push_back(plan.start());                                                      // #3
  works.push_back(comm.all_reduce_async(reduced[1].data(), reduced[1].data(), kCount,
                                        DataType::kInt32));                         // #4
  comm.all_reduce(reduced[2].data(), reduced[2].data(), kCount, DataType::kInt32);  // #5
  for (Work& work : works) work.wait();
  for (std::size_t i = 0; i < kCount; ++i) {
    for (std::size_t k = 0; k < reduced.size(); ++k) {
      const int expected = size * (size - 1) / 2 + size * static_cast<int>(k + i);
      ASSERT_EQ(reduced[k][i], expected) << "rank " << rank << " call " << k << " index " << i;
    }
    ASSERT_EQ(broadcast[i], static_cast<int>(7 * i)) << "rank " << rank << " index " << i;
    ASSERT_EQ(planned[i], size) << "rank " << rank << " index " << i;
  }

  const Value dump = read_dump(dump_flight_record(directory));
  const Value& mine = newest_communicator(dump);
  EXPECT_EQ(integer_of(mine, "calls_started"), 6);
  EXPECT_EQ(integer_of(mine, "not_recorded"), 0);
  const std::vector<Value>& calls = mine.find("calls")->items();
  ASSERT_EQ(calls.size(), 6u) << "rank " << rank;
  const char* collectives[] = {"all_reduce_init", "all_reduce", "broadcast",
                               "all_reduce",      "all_reduce", "all_reduce"};
  const bool was_queued[] = {false, true, true, true, true, false};
  for (std::size_t i = 0; i < calls.size(); ++i) {
    const Value& call = calls[i];
    SCOPED_TRACE("rank " + std::to_string(rank) + " call " + std::to_string(i));
    EXPECT_EQ(integer_of(call, "seq"), static_cast<std::int64_t>(i));
    EXPECT_EQ(text_of(call, "collective"), collectives[i]);
    EXPECT_EQ(integer_of(call, "count"), static_cast<std::int64_t>(kCount));
    EXPECT_EQ(text_of(call, "state"), "finished");
    EXPECT_NE(text_of(call, "algorithm"), "none");
    ASSERT_TRUE(call.find("start")->is_number() && call.find("end")->is_number());
    EXPECT_LE(call.find("start")->number(), call.find("end")->number());
    const Value* queued = call.find("queued");
    if (was_queued[i]) {
      ASSERT_TRUE(queued != nullptr && queued->is_number()) << "no queue time";
      EXPECT_LE(queued->number(), call.find("start")->number());
    } else {
      EXPECT_EQ(queued, nullptr) << "a blocking call has no queue time";
    }
  }
}

TEST_F(FlightRecorderTest, KeepsTheLast512Calls) {
  std::int32_t value = 1;
  for (int i = 0; i < 600; ++i) comm.all_reduce(&value, &value, 1, DataType::kInt32);
  const Value dump = read_dump(dump_flight_record(directory));
  const Value& mine = newest_communicator(dump);
  EXPECT_EQ(integer_of(mine, "calls_started"), 600);
  const std::vector<Value>& calls = mine.find("calls")->items();
  ASSERT_EQ(calls.size(), 512u) << "rank " << rank;
  for (std::size_t i = 0; i < calls.size(); ++i) {
    ASSERT_EQ(integer_of(calls[i], "seq"), static_cast<std::int64_t>(88 + i))
        << "rank " << rank << " index " << i;
  }
}

TEST_F(FlightRecorderTest, AMismatchDumpsOnEveryRank) {
  if (size == 1) GTEST_SKIP() << "one rank cannot disagree with itself";
  const char* configured = std::getenv("COLLECTIVE_FLIGHT_RECORDER_DIR");
  const std::string path = std::string(configured != nullptr ? configured : ".") +
                           "/collective_flight_record." + std::to_string(rank) + ".json";
  std::remove(path.c_str());
  std::vector<float> data(8, 1.0f);
  const std::size_t count = rank == 0 ? 4 : 8;
  testing::expect_raises<MismatchError>(
      [&] { comm.all_reduce(data.data(), data.data(), count, DataType::kFloat32); }, {"disagree"},
      rank);
  const Value dump = read_dump(path);
  EXPECT_NE(text_of(dump, "reason").find("the ranks disagree"), std::string::npos)
      << text_of(dump, "reason");
  const std::vector<Value>& calls = newest_communicator(dump).find("calls")->items();
  ASSERT_EQ(calls.size(), 1u);
  EXPECT_EQ(text_of(calls[0], "state"), "failed");
  EXPECT_EQ(integer_of(calls[0], "count"), static_cast<std::int64_t>(count));
  EXPECT_NE(text_of(calls[0], "why").find("disagree"), std::string::npos);
  std::remove(path.c_str());
}

}  // namespace
}  // namespace collective
