#include "core/liveness_link.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <ifaddrs.h>
#include <net/if.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <map>
#include <mutex>
#include <utility>

namespace collective::internal {
namespace {

// Connections peers open and this process never accepts wait in the
// listen queue: room for every peer of a large job.
constexpr int kListenBacklog = 65535;

std::uint32_t published_ipv4() {
  ifaddrs* interfaces = nullptr;
  std::uint32_t chosen = htonl(INADDR_LOOPBACK);
  if (getifaddrs(&interfaces) != 0) return chosen;
  for (const ifaddrs* entry = interfaces; entry != nullptr; entry = entry->ifa_next) {
    if (entry->ifa_addr == nullptr || entry->ifa_addr->sa_family != AF_INET) continue;
    if ((entry->ifa_flags & IFF_UP) == 0 || (entry->ifa_flags & IFF_LOOPBACK) != 0) continue;
    chosen = reinterpret_cast<const sockaddr_in*>(entry->ifa_addr)->sin_addr.s_addr;
    break;
  }
  freeifaddrs(interfaces);
  return chosen;
}

LinkAddress make_listener() {
  const int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return {};
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_addr.s_addr = htonl(INADDR_ANY);
  address.sin_port = 0;
  socklen_t length = sizeof(address);
  if (bind(fd, reinterpret_cast<const sockaddr*>(&address), sizeof(address)) != 0 ||
      listen(fd, kListenBacklog) != 0 ||
      getsockname(fd, reinterpret_cast<sockaddr*>(&address), &length) != 0) {
    close(fd);
    return {};
  }
  // Kept open for the process's life: its end is the signal.
  return {published_ipv4(), address.sin_port};
}

struct Link {
  int fd = -1;
  bool connected = false;
  bool gone = false;
};

struct LinkRegistry {
  std::mutex mutex;
  std::map<std::pair<std::uint32_t, std::uint16_t>, Link> links;
};

LinkRegistry& link_registry() {
  static auto* instance = new LinkRegistry;  // used by the watcher thread to the end
  return *instance;
}

void start_connecting(Link& link, const LinkAddress& peer) {
  link.fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
  if (link.fd < 0) return;
  const int on = 1, idle = 1, interval = 1, probes = 3;
  setsockopt(link.fd, SOL_SOCKET, SO_KEEPALIVE, &on, sizeof(on));
  setsockopt(link.fd, IPPROTO_TCP, TCP_KEEPIDLE, &idle, sizeof(idle));
  setsockopt(link.fd, IPPROTO_TCP, TCP_KEEPINTVL, &interval, sizeof(interval));
  setsockopt(link.fd, IPPROTO_TCP, TCP_KEEPCNT, &probes, sizeof(probes));
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_addr.s_addr = peer.ipv4;
  address.sin_port = peer.port;
  if (connect(link.fd, reinterpret_cast<const sockaddr*>(&address), sizeof(address)) == 0) {
    link.connected = true;
  } else if (errno == ECONNREFUSED) {
    link.gone = true;
  } else if (errno != EINPROGRESS) {
    close(link.fd);
    link.fd = -1;  // tried again at the next ask
  }
}

}  // namespace

LinkAddress own_link_address() {
  static const LinkAddress address = make_listener();
  return address;
}

LinkStatus link_status(const LinkAddress& peer) {
  if (peer.port == 0) return LinkStatus::kUnknown;
  LinkRegistry& links = link_registry();
  const std::lock_guard<std::mutex> lock(links.mutex);
  Link& link = links.links[{peer.ipv4, peer.port}];
  if (link.gone) return LinkStatus::kGone;
  if (link.fd < 0) start_connecting(link, peer);
  if (link.gone) return LinkStatus::kGone;
  if (link.fd < 0) return LinkStatus::kUnknown;
  pollfd polled{link.fd, static_cast<short>(link.connected ? POLLIN | POLLRDHUP : POLLOUT), 0};
  if (poll(&polled, 1, 0) <= 0) return link.connected ? LinkStatus::kAlive : LinkStatus::kUnknown;
  if (!link.connected) {
    int error = 0;
    socklen_t length = sizeof(error);
    getsockopt(link.fd, SOL_SOCKET, SO_ERROR, &error, &length);
    if (error == 0) {
      link.connected = true;
      return LinkStatus::kAlive;
    }
    close(link.fd);
    link.fd = -1;
    // Refused: nothing listens there any more. Anything else (the host
    // unreachable for now): asked again later.
    link.gone = error == ECONNREFUSED;
    return link.gone ? LinkStatus::kGone : LinkStatus::kUnknown;
  }
  // The peer never writes: anything readable is its end (a reset or EOF).
  close(link.fd);
  link.fd = -1;
  link.gone = true;
  return LinkStatus::kGone;
}

}  // namespace collective::internal
