// collective_latency_floor: what a small all-reduce between two hosts can
// cost at best, beside what it costs. Under mpirun with exactly 2 ranks, for
// each size it alternates, in blocks of 100 calls timed one by one:
//   auto    Communicator::all_reduce (AUTO, cross-rank check as configured)
//   mpi     MPI_Allreduce on MPI_COMM_WORLD
//   p2p     the same exchange written directly with MPI: MPI_Isend,
//           MPI_Irecv, MPI_Test until both are done, then the sum
//   tcp     the same exchange over one TCP connection of our own (non-blocking
//           send, recv polled with MSG_DONTWAIT), then the sum: the kernel's
//           part, with no MPI at all
// and prints each one's median per-call time (rank 0's clock) and MPI's
// median over it. The last call of every block is checked element by
// element; the exit status is 1 if any element was wrong.
//
//   mpirun -np 2 collective_latency_floor [-b 8] [-e 1024] [-r 200] [--address A]
//
// Rank 1 listens on an ephemeral port and sends rank 0 its non-loopback IPv4
// addresses over MPI; rank 0 connects to the first that answers (--address
// picks one). docs/performance.md, "Across two hosts", uses it on
// scripts/netns_cluster.sh hosts. Not installed: a measuring tool.
#include <arpa/inet.h>
#include <ifaddrs.h>
#include <mpi.h>
#include <net/if.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sched.h>
#include <sys/socket.h>
#include <unistd.h>

#include <utility>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <sstream>
#include <string>
#include <vector>

#include <collective/collective.h>

#include "byte_size.h"
#include "time_stats.h"

namespace {

constexpr int kBlock = 100;  // calls of one variant before the next takes over
constexpr int kWarmup = 500;
constexpr int kTag = 7;
// Polls that spin before each further one yields: far past a call's
// microseconds, so the floors are measured spinning, yet two ranks that
// share a core with other work still let each other run.
constexpr int kTightPolls = 64;

double now_seconds() {
  timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return static_cast<double>(t.tv_sec) + static_cast<double>(t.tv_nsec) * 1e-9;
}

void idle(int& polls) {
  if (++polls > kTightPolls) sched_yield();
}

[[noreturn]] void fail(const std::string& what) {
  std::fprintf(stderr, "collective_latency_floor: %s\n", what.c_str());
  MPI_Abort(MPI_COMM_WORLD, 2);
  std::exit(2);
}

struct Options {
  std::size_t min_bytes = 8;
  std::size_t max_bytes = 1024;
  int rounds = 200;
  std::string address;  // rank 1's, as rank 0 should reach it; empty: its own list
};

Options parse(int argc, char** argv) {
  Options options;
  for (int i = 1; i < argc; ++i) {
    const std::string flag = argv[i];
    if (i + 1 >= argc) fail("flag " + flag + " needs a value");
    const char* value = argv[++i];
    if (flag == "-b" || flag == "-e") {
      const auto bytes = collective::bench::parse_byte_size(value);
      if (!bytes) fail("flag " + flag + ": '" + value + "' is not a byte size (8, 64K, 1M)");
      (flag == "-b" ? options.min_bytes : options.max_bytes) = *bytes;
    } else if (flag == "-r") {
      char* end = nullptr;
      const long rounds = std::strtol(value, &end, 10);
      if (*value == '\0' || *end != '\0' || rounds < 1 || rounds > 1000000) {
        fail("flag -r: '" + std::string(value) + "' is not a number of rounds in 1..1000000");
      }
      options.rounds = static_cast<int>(rounds);
    } else if (flag == "--address") {
      options.address = value;
    } else {
      fail("unknown flag " + flag + " (-b BYTES, -e BYTES, -r ROUNDS, --address IPV4)");
    }
  }
  if (options.min_bytes < 4 || options.min_bytes > options.max_bytes) {
    fail("need 4 <= -b <= -e");
  }
  return options;
}

// Rank 1's IPv4 addresses other than loopback, space-separated.
std::string own_addresses() {
  ifaddrs* list = nullptr;
  if (getifaddrs(&list) != 0) fail(std::string("getifaddrs: ") + std::strerror(errno));
  std::string out;
  for (ifaddrs* entry = list; entry != nullptr; entry = entry->ifa_next) {
    if (entry->ifa_addr == nullptr || entry->ifa_addr->sa_family != AF_INET) continue;
    if ((entry->ifa_flags & IFF_UP) == 0 || (entry->ifa_flags & IFF_LOOPBACK) != 0) continue;
    char text[INET_ADDRSTRLEN];
    const auto* address = reinterpret_cast<const sockaddr_in*>(entry->ifa_addr);
    inet_ntop(AF_INET, &address->sin_addr, text, sizeof(text));
    if (!out.empty()) out += ' ';
    out += text;
  }
  freeifaddrs(list);
  return out;
}

void set_no_delay(int fd) {
  const int one = 1;
  setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
}

// A connection to `address`:`port` within one second, or -1.
int try_connect(const std::string& address, int port) {
  sockaddr_in target{};
  target.sin_family = AF_INET;
  target.sin_port = htons(static_cast<std::uint16_t>(port));
  if (inet_pton(AF_INET, address.c_str(), &target.sin_addr) != 1) return -1;
  const int fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK, 0);
  if (fd < 0) return -1;
  if (connect(fd, reinterpret_cast<sockaddr*>(&target), sizeof(target)) != 0 &&
      errno != EINPROGRESS) {
    close(fd);
    return -1;
  }
  pollfd waiting{fd, POLLOUT, 0};
  int error = 0;
  socklen_t length = sizeof(error);
  if (poll(&waiting, 1, 1000) != 1 || getsockopt(fd, SOL_SOCKET, SO_ERROR, &error, &length) != 0 ||
      error != 0) {
    close(fd);
    return -1;
  }
  return fd;
}

// One TCP connection between ranks 0 and 1, non-blocking, no Nagle delay.
int connect_pair(int rank, const Options& options) {
  if (rank == 1) {
    const int listener = socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in any{};
    any.sin_family = AF_INET;
    any.sin_addr.s_addr = htonl(INADDR_ANY);
    socklen_t length = sizeof(any);
    if (listener < 0 || bind(listener, reinterpret_cast<sockaddr*>(&any), sizeof(any)) != 0 ||
        listen(listener, 1) != 0 ||
        getsockname(listener, reinterpret_cast<sockaddr*>(&any), &length) != 0) {
      fail(std::string("rank 1: cannot listen: ") + std::strerror(errno));
    }
    char offer[512] = {};
    std::snprintf(offer, sizeof(offer), "%d %s", ntohs(any.sin_port), own_addresses().c_str());
    MPI_Send(offer, sizeof(offer), MPI_CHAR, 0, kTag, MPI_COMM_WORLD);
    pollfd waiting{listener, POLLIN, 0};
    if (poll(&waiting, 1, 10000) != 1) fail("rank 1: rank 0 did not connect within 10 s");
    const int fd = accept4(listener, nullptr, nullptr, SOCK_NONBLOCK);
    if (fd < 0) fail(std::string("rank 1: accept: ") + std::strerror(errno));
    close(listener);
    set_no_delay(fd);
    return fd;
  }
  char offer[512] = {};
  MPI_Recv(offer, sizeof(offer), MPI_CHAR, 1, kTag, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
  std::istringstream words(offer);
  int port = 0;
  words >> port;
  std::vector<std::string> addresses;
  for (std::string address; words >> address;) addresses.push_back(address);
  if (!options.address.empty()) addresses = {options.address};
  for (const std::string& address : addresses) {
    const int fd = try_connect(address, port);
    if (fd >= 0) {
      set_no_delay(fd);
      return fd;
    }
  }
  fail(std::string("rank 0: could not connect to rank 1 at any of [") + (offer[0] ? offer : "") +
       "] (give --address)");
}

enum Variant { kAuto, kMpi, kPointToPoint, kTcp, kVariants };
const char* const kNames[kVariants] = {"auto", "mpi", "p2p", "tcp"};

struct Exchange {
  int rank = 0;
  int fd = -1;
  MPI_Comm comm = MPI_COMM_NULL;  // p2p's own, so its tags meet nothing else
  collective::Communicator* world = nullptr;
  std::vector<float> input, output, incoming;

  void tcp_round(std::size_t bytes) {
    const auto* out = reinterpret_cast<const char*>(input.data());
    auto* in = reinterpret_cast<char*>(incoming.data());
    std::size_t sent = 0;
    std::size_t received = 0;
    for (int polls = 0; sent < bytes || received < bytes; idle(polls)) {
      if (sent < bytes) {
        const ssize_t n = send(fd, out + sent, bytes - sent, MSG_DONTWAIT | MSG_NOSIGNAL);
        if (n > 0) sent += static_cast<std::size_t>(n);
        else if (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK) fail("tcp send failed");
      }
      if (received < bytes) {
        const ssize_t n = recv(fd, in + received, bytes - received, MSG_DONTWAIT);
        if (n > 0) received += static_cast<std::size_t>(n);
        else if (n == 0) fail("tcp: the other rank closed the connection");
        else if (errno != EAGAIN && errno != EWOULDBLOCK) fail("tcp recv failed");
      }
    }
  }

  void p2p_round(std::size_t bytes) {
    MPI_Request requests[2];
    const int count = static_cast<int>(bytes);
    MPI_Isend(input.data(), count, MPI_BYTE, 1 - rank, kTag, comm, &requests[0]);
    MPI_Irecv(incoming.data(), count, MPI_BYTE, 1 - rank, kTag, comm, &requests[1]);
    int done[2] = {0, 0};
    for (int polls = 0; !done[0] || !done[1]; idle(polls)) {
      for (int i = 0; i < 2; ++i) {
        if (!done[i]) MPI_Test(&requests[i], &done[i], MPI_STATUS_IGNORE);
      }
    }
  }

  void sum(std::size_t count) {
    for (std::size_t i = 0; i < count; ++i) output[i] = input[i] + incoming[i];
  }

  void run(Variant variant, std::size_t count) {
    const std::size_t bytes = count * sizeof(float);
    switch (variant) {
      case kAuto:
        world->all_reduce(input.data(), output.data(), count, collective::DataType::kFloat32);
        return;
      case kMpi:
        MPI_Allreduce(input.data(), output.data(), static_cast<int>(count), MPI_FLOAT, MPI_SUM,
                      MPI_COMM_WORLD);
        return;
      case kPointToPoint: p2p_round(bytes); return sum(count);
      case kTcp: tcp_round(bytes); return sum(count);
      case kVariants: return;
    }
  }
};

// Rank r's element i is r + 1 + i mod 7: every sum is exact in float.
float value(int rank, std::size_t i) {
  return static_cast<float>(rank + 1 + static_cast<int>(i % 7));
}

}  // namespace

int main(int argc, char** argv) {
  collective::Environment environment(argc, argv);
  int rank = 0;
  int size = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  if (size != 2) fail("runs with exactly 2 ranks (mpirun -np 2), one per host to be useful");
  const Options options = parse(argc, argv);
  auto world = collective::Communicator::world();

  Exchange exchange;
  exchange.rank = rank;
  exchange.world = &world;
  MPI_Comm_dup(MPI_COMM_WORLD, &exchange.comm);
  exchange.fd = connect_pair(rank, options);
  const std::size_t max_count = options.max_bytes / sizeof(float);
  exchange.input.resize(max_count);
  exchange.output.resize(max_count);
  exchange.incoming.resize(max_count);
  for (std::size_t i = 0; i < max_count; ++i) exchange.input[i] = value(rank, i);

  if (rank == 0) {
    std::printf(
        "# collective_latency_floor: all-reduce (float32 sum) between 2 ranks, %d rounds of "
        "%d calls per variant, alternating; p50 of single calls in us (rank 0's clock)\n",
        options.rounds, kBlock);
    std::printf(
        "# auto: Communicator::all_reduce  mpi: MPI_Allreduce  p2p: MPI_Isend/MPI_Irecv/"
        "MPI_Test + sum  tcp: one TCP connection, no MPI + sum\n");
    std::printf("%10s %9s %9s %9s %9s %9s %9s %9s %7s\n", "size(B)", "auto", "mpi", "p2p", "tcp",
                "mpi/auto", "mpi/p2p", "mpi/tcp", "#wrong");
  }
  long wrong_total = 0;
  for (std::size_t bytes = options.min_bytes; bytes <= options.max_bytes; bytes *= 2) {
    const std::size_t count = bytes / sizeof(float);
    std::vector<double> seconds[kVariants];
    long wrong = 0;
    for (int v = 0; v < kVariants; ++v) {
      for (int i = 0; i < kWarmup; ++i) exchange.run(static_cast<Variant>(v), count);
    }
    for (int round = 0; round < options.rounds; ++round) {
      for (int v = 0; v < kVariants; ++v) {
        for (int i = 0; i < kBlock; ++i) {
          const double start = now_seconds();
          exchange.run(static_cast<Variant>(v), count);
          seconds[v].push_back(now_seconds() - start);
        }
        for (std::size_t i = 0; i < count; ++i) {
          const float expected = value(0, i) + value(1, i);
          if (exchange.output[i] != expected) {
            if (wrong < 5) {
              std::fprintf(stderr, "rank %d: %s, %zu B: element %zu is %g, expected %g\n", rank,
                           kNames[v], bytes, i, static_cast<double>(exchange.output[i]),
                           static_cast<double>(expected));
            }
            ++wrong;
          }
          exchange.output[i] = -1.0f;
        }
      }
    }
    long wrong_both = 0;
    MPI_Reduce(&wrong, &wrong_both, 1, MPI_LONG, MPI_SUM, 0, MPI_COMM_WORLD);
    wrong_total += wrong_both;
    if (rank == 0) {
      double median[kVariants];
      for (int v = 0; v < kVariants; ++v) {
        median[v] = collective::bench::summarize(std::move(seconds[v])).p50_us;
      }
      std::printf("%10zu %9.2f %9.2f %9.2f %9.2f %9.3f %9.3f %9.3f %7ld\n", bytes, median[kAuto],
                  median[kMpi], median[kPointToPoint], median[kTcp], median[kMpi] / median[kAuto],
                  median[kMpi] / median[kPointToPoint], median[kMpi] / median[kTcp], wrong_both);
    }
  }
  close(exchange.fd);
  MPI_Comm_free(&exchange.comm);
  MPI_Bcast(&wrong_total, 1, MPI_LONG, 0, MPI_COMM_WORLD);
  if (rank == 0) {
    std::printf("# Out of bounds values : %ld %s\n", wrong_total,
                wrong_total == 0 ? "OK" : "FAILED");
  }
  return wrong_total == 0 ? 0 : 1;
}
