// Deterministic reductions (AllReduceOptions::deterministic and
// COLLECTIVE_DETERMINISTIC): random inputs whose sums round, every
// algorithm, sizes that take different paths and chunkings, one node and
// virtual node layouts. Every result must be bitwise the reference each rank
// computes itself from every rank's seeded inputs, reduced in rank order:
// ((x0 op x1) op x2) ..., float32 in float32, float16/bfloat16 accumulated
// in float32 and rounded once, MEAN divided before that rounding.
//
// Registered (tests/mpi/CMakeLists.txt) at 1-4 ranks with 4 KiB ring
// segments and shared-memory slots, so small buffers are cut into many
// pieces; at 3 ranks with COLLECTIVE_DETERMINISTIC=1 instead of the option
// and the default sizes; and on 2 network-namespace hosts x 2 ranks.
#include <gtest/gtest.h>
#include <mpi.h>

#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <sstream>
#include <string>
#include <vector>

#include "collective/collective.h"
#include "collective/in_tree/half_precision.h"
#include "virtual_nodes.h"

namespace collective {
namespace {

// Set by the environment (then the test leaves the option off, so that the
// variable alone must make the calls deterministic).
bool deterministic_from_environment() {
  const char* value = std::getenv("COLLECTIVE_DETERMINISTIC");
  return value != nullptr && std::string(value) == "1";
}

std::uint64_t mix(std::uint64_t x) {  // splitmix64
  x += 0x9E3779B97F4A7C15ull;
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
  return x ^ (x >> 31);
}

// Rank `rank`'s input at `index`: in [-1.5, 1.5), with every mantissa bit
// of the type in use, so sums and products round.
float input_float(int rank, std::size_t index, std::uint64_t seed) {
  const std::uint64_t bits =
      mix(seed * 1000003ull + static_cast<std::uint64_t>(rank) * 7919ull + mix(index));
  return static_cast<float>(static_cast<double>(bits >> 11) * 0x1.0p-53 * 3.0 - 1.5);
}

std::uint32_t stored_bits(DataType type, float value) {
  switch (type) {
    case DataType::kFloat16: return ::collective::float_to_float16(value);
    case DataType::kBFloat16: return ::collective::float_to_bfloat16(value);
    case DataType::kFloat32:
    case DataType::kFloat64:
    case DataType::kInt8:
    case DataType::kUInt8:
    case DataType::kInt32:
    case DataType::kInt64:
    default: return std::bit_cast<std::uint32_t>(value);
  }
}

float loaded(DataType type, std::uint32_t bits) {
  switch (type) {
    case DataType::kFloat16:
      return ::collective::float16_to_float(static_cast<std::uint16_t>(bits));
    case DataType::kBFloat16:
      return ::collective::bfloat16_to_float(static_cast<std::uint16_t>(bits));
    case DataType::kFloat32:
    case DataType::kFloat64:
    case DataType::kInt8:
    case DataType::kUInt8:
    case DataType::kInt32:
    case DataType::kInt64:
    default: return std::bit_cast<float>(bits);
  }
}

// `count` elements of rank `rank`'s input, as the type stores them.
std::vector<std::byte> make_input(DataType type, int rank, std::size_t count, std::uint64_t seed) {
  const std::size_t element = element_size(type);
  std::vector<std::byte> buffer(count * element);
  for (std::size_t i = 0; i < count; ++i) {
    const std::uint32_t bits = stored_bits(type, input_float(rank, i, seed));
    std::memcpy(buffer.data() + i * element, &bits, element);  // little-endian
  }
  return buffer;
}

std::uint32_t bits_at(DataType type, const std::vector<std::byte>& buffer, std::size_t index) {
  std::uint32_t bits = 0;
  std::memcpy(&bits, buffer.data() + index * element_size(type), element_size(type));
  return bits;
}

float combine(ReduceOp op, float a, float b) {
  switch (op) {
    case ReduceOp::kSum:
    case ReduceOp::kMean: return a + b;
    case ReduceOp::kProd: return a * b;
    case ReduceOp::kMin: return b < a ? b : a;
    case ReduceOp::kMax: return b > a ? b : a;
    case ReduceOp::kBitwiseAnd:
    case ReduceOp::kBitwiseOr:
    case ReduceOp::kBitwiseXor: break;  // floating inputs only here
  }
  ADD_FAILURE() << "no float reference for " << to_string(op);
  return 0;
}

// The fixed-order reduction of every rank's input, element by element.
std::vector<std::byte> reference(DataType type, ReduceOp op, int ranks, std::size_t count,
                                 std::uint64_t seed) {
  std::vector<std::vector<std::byte>> inputs;
  for (int q = 0; q < ranks; ++q) inputs.push_back(make_input(type, q, count, seed));
  const std::size_t element = element_size(type);
  std::vector<std::byte> result(count * element);
  for (std::size_t i = 0; i < count; ++i) {
    float accumulator = loaded(type, bits_at(type, inputs[0], i));
    for (int q = 1; q < ranks; ++q) {
      accumulator = combine(op, accumulator, loaded(type, bits_at(type, inputs[q], i)));
    }
    if (op == ReduceOp::kMean && ranks > 1) accumulator /= static_cast<float>(ranks);
    const std::uint32_t bits = stored_bits(type, accumulator);
    std::memcpy(result.data() + i * element, &bits, element);
  }
  return result;
}

std::string hex(std::uint32_t bits, std::size_t element) {
  std::ostringstream out;
  out << "0x" << std::hex;
  out.width(static_cast<int>(2 * element));
  out.fill('0');
  out << bits;
  return out.str();
}

// Every element bitwise; the first few differences named.
void expect_bitwise(const std::vector<std::byte>& expected, const std::byte* actual,
                    std::size_t expected_offset, std::size_t count, DataType type, int rank,
                    const std::string& what) {
  const std::size_t element = element_size(type);
  std::size_t wrong = 0;
  for (std::size_t i = 0; i < count; ++i) {
    std::uint32_t want = 0;
    std::uint32_t got = 0;
    std::memcpy(&want, expected.data() + (expected_offset + i) * element, element);
    std::memcpy(&got, actual + i * element, element);
    if (want == got) continue;
    if (++wrong <= 3) {
      ADD_FAILURE() << what << ": rank " << rank << " index " << i << " expected "
                    << hex(want, element) << " (" << loaded(type, want) << ") actual "
                    << hex(got, element) << " (" << loaded(type, got) << ")";
    }
  }
  if (wrong > 3) ADD_FAILURE() << what << ": rank " << rank << ": " << wrong << " elements differ";
}

std::string describe(const char* collective, Algorithm algorithm, DataType type, ReduceOp op,
                     std::size_t count) {
  return std::string(collective) + " " + std::string(to_string(algorithm)) + " " +
         std::string(to_string(type)) + " " + std::string(to_string(op)) +
         " count=" + std::to_string(count);
}

const DataType kFloatingTypes[] = {DataType::kFloat32, DataType::kFloat16, DataType::kBFloat16};
// PROD only in float32 (the 16-bit types take the same float32 path).
std::vector<ReduceOp> ops_for(DataType type) {
  if (type == DataType::kFloat32) return {ReduceOp::kSum, ReduceOp::kMean, ReduceOp::kProd};
  return {ReduceOp::kSum, ReduceOp::kMean};
}
// Nothing; 1 element (less than a rank each); inline boxes; more than a
// 4 KiB segment or slot and the shared-memory split form; many segments.
const std::size_t kCounts[] = {0, 1, 33, 5003, 20011};

// The algorithms a deterministic all_reduce may be forced to on one node.
const Algorithm kHonouring[] = {Algorithm::kAuto, Algorithm::kRing, Algorithm::kRecursiveDoubling,
                                Algorithm::kSharedMemory, Algorithm::kHierarchical};

template <typename Options>
Options deterministic_options(Algorithm algorithm, ReduceOp op) {
  Options options;
  options.algorithm = algorithm;
  options.op = op;
  options.deterministic = !deterministic_from_environment();
  return options;
}

// all_reduce with every honouring algorithm, in place too, and reduced in
// two halves, against the reference.
void check_all_reduce(Communicator& comm, const std::vector<Algorithm>& algorithms,
                      const std::vector<std::size_t>& counts, const std::string& layout) {
  const int rank = comm.rank();
  const int size = comm.size();
  for (DataType type : kFloatingTypes) {
    for (ReduceOp op : ops_for(type)) {
      for (std::size_t count : counts) {
        const std::uint64_t seed =
            count * 31 + static_cast<std::uint64_t>(type) * 7 + static_cast<std::uint64_t>(op);
        const std::vector<std::byte> input = make_input(type, rank, count, seed);
        const std::vector<std::byte> expected = reference(type, op, size, count, seed);
        const std::size_t element = element_size(type);
        for (Algorithm algorithm : algorithms) {
          const std::string what = layout + describe("all_reduce", algorithm, type, op, count);
          SCOPED_TRACE(what);
          const auto options = deterministic_options<AllReduceOptions>(algorithm, op);
          std::vector<std::byte> output(count * element, std::byte{0x5A});
          comm.all_reduce(input.data(), output.data(), count, type, options);
          expect_bitwise(expected, output.data(), 0, count, type, rank, what);
          if (op != ReduceOp::kSum) continue;  // in place and halves: SUM stands for all

          std::vector<std::byte> in_place = input;
          comm.all_reduce(in_place.data(), in_place.data(), count, type, options);
          expect_bitwise(expected, in_place.data(), 0, count, type, rank, what + " in place");

          // Two halves: each element's result must not depend on the
          // buffer it was reduced in.
          const std::size_t half = count / 2;
          std::vector<std::byte> halves(count * element, std::byte{0x5A});
          comm.all_reduce(input.data(), halves.data(), half, type, options);
          comm.all_reduce(input.data() + half * element, halves.data() + half * element,
                          count - half, type, options);
          expect_bitwise(output, halves.data(), 0, count, type, rank, what + " in two halves");
        }
      }
    }
  }
}

// Forced hierarchical across nodes refuses, naming why, before any buffer
// is touched.
void expect_hierarchical_refused(Communicator& comm, const std::string& layout) {
  std::vector<float> buffer(64, 1.0f);
  const auto options =
      deterministic_options<AllReduceOptions>(Algorithm::kHierarchical, ReduceOp::kSum);
  try {
    comm.all_reduce(buffer.data(), buffer.data(), buffer.size(), DataType::kFloat32, options);
    ADD_FAILURE() << layout << ": forced hierarchical served a deterministic all_reduce";
  } catch (const UnsupportedError& error) {
    EXPECT_NE(std::string(error.what()).find("hierarchical cannot be deterministic"),
              std::string::npos)
        << error.what();
  }
  for (float value : buffer) ASSERT_EQ(value, 1.0f);
}

TEST(DeterministicReductionTest, AllReduceEveryAlgorithmBitwiseTheReference) {
  auto comm = Communicator::world();
  std::vector<Algorithm> algorithms{std::begin(kHonouring), std::end(kHonouring)};
  if (comm.topology().node_count() > 1) {
    // Real hosts (scripts/netns_cluster.sh): the node algorithms step aside.
    algorithms = {Algorithm::kAuto, Algorithm::kRing, Algorithm::kRecursiveDoubling};
    expect_hierarchical_refused(comm, "hosts");
  }
  check_all_reduce(comm, algorithms, {std::begin(kCounts), std::end(kCounts)}, "");
}

TEST(DeterministicReductionTest, ReduceScatterAndReduceBitwiseTheReference) {
  auto comm = Communicator::world();
  const int rank = comm.rank();
  const int size = comm.size();
  for (DataType type : kFloatingTypes) {
    for (ReduceOp op : ops_for(type)) {
      for (std::size_t count :
           {std::size_t{0}, std::size_t{1}, std::size_t{257}, std::size_t{5003}}) {
        const std::uint64_t seed =
            count * 17 + static_cast<std::uint64_t>(type) * 5 + static_cast<std::uint64_t>(op) + 1;
        const std::size_t element = element_size(type);
        const std::size_t total = count * static_cast<std::size_t>(size);
        const std::vector<std::byte> input = make_input(type, rank, total, seed);
        const std::vector<std::byte> expected = reference(type, op, size, total, seed);
        for (Algorithm algorithm : {Algorithm::kAuto, Algorithm::kRing}) {
          {
            const std::string what = describe("reduce_scatter", algorithm, type, op, count);
            SCOPED_TRACE(what);
            const auto options = deterministic_options<ReduceScatterOptions>(algorithm, op);
            std::vector<std::byte> output(count * element, std::byte{0x5A});
            comm.reduce_scatter(input.data(), output.data(), count, type, options);
            expect_bitwise(expected, output.data(), static_cast<std::size_t>(rank) * count, count,
                           type, rank, what);
            // In place: recv == send + rank * count.
            std::vector<std::byte> in_place = input;
            std::byte* own = in_place.data() + static_cast<std::size_t>(rank) * count * element;
            comm.reduce_scatter(in_place.data(), own, count, type, options);
            expect_bitwise(expected, own, static_cast<std::size_t>(rank) * count, count, type, rank,
                           what + " in place");
          }
          {
            const std::string what = describe("reduce", algorithm, type, op, total);
            SCOPED_TRACE(what);
            auto options = deterministic_options<ReduceOptions>(algorithm, op);
            options.root = size - 1;
            std::vector<std::byte> output(total * element, std::byte{0x5A});
            comm.reduce(input.data(), output.data(), total, type, options);
            if (rank == options.root) {
              expect_bitwise(expected, output.data(), 0, total, type, rank, what);
            }
          }
        }
      }
    }
  }
}

// Nodes change which algorithms may serve the call, never the bits.
TEST(DeterministicReductionTest, VirtualNodeLayoutsGiveTheSameBits) {
  const Communicator world = Communicator::world();
  // Virtual nodes must lie inside real ones: on real hosts the hosts are
  // the layout (AllReduceEveryAlgorithmBitwiseTheReference).
  if (world.topology().node_count() > 1) GTEST_SKIP() << "ranks on several hosts already";
  const int size = world.size();
  for (const std::vector<int>& nodes : testing_support::node_layouts(size)) {
    if (nodes.size() < 2) continue;  // one node: the tests above
    auto comm = testing_support::with_virtual_nodes(nodes);
    std::string layout = "nodes";
    for (int n : nodes) layout += " " + std::to_string(n);
    check_all_reduce(comm, {Algorithm::kAuto, Algorithm::kRing, Algorithm::kRecursiveDoubling},
                     {33, 5003}, layout + ": ");
    // Across nodes, hierarchical sums each node first: refused when forced.
    expect_hierarchical_refused(comm, layout);
  }
}

TEST(DeterministicReductionTest, ForcedMpiRefusesNamingWhy) {
  auto comm = Communicator::world();
  std::vector<float> buffer(16, 1.0f);
  const auto options = deterministic_options<AllReduceOptions>(Algorithm::kMpi, ReduceOp::kSum);
  try {
    comm.all_reduce(buffer.data(), buffer.data(), buffer.size(), DataType::kFloat32, options);
    ADD_FAILURE() << "forced mpi served a deterministic all_reduce";
  } catch (const UnsupportedError& error) {
    const std::string message = error.what();
    EXPECT_NE(message.find("mpi passthrough cannot be deterministic"), std::string::npos)
        << message;
  }
  // Untouched: refused before any buffer was read or written.
  for (float value : buffer) ASSERT_EQ(value, 1.0f);
  // Other collectives are not reductions: the flag is no concern of theirs.
  comm.barrier(BarrierOptions{});
}

}  // namespace
}  // namespace collective
