#include "core/peer_liveness.h"

#include "core/liveness_link.h"

#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <fstream>
#include <sstream>
#include <string>

namespace collective::internal {
namespace {

std::uint64_t fnv1a(const std::string& text, std::uint64_t hash = 1469598103934665603ull) {
  for (unsigned char c : text) hash = (hash ^ c) * 1099511628211ull;
  return hash;
}

struct StatLine {
  bool found = false;
  char state = '?';
  std::uint64_t start_ticks = 0;
};

// /proc/<pid>/stat: "pid (comm) S ppid ... starttime(22) ...". The command
// name may hold spaces and parentheses, so fields count from the last ')'.
StatLine read_stat(long long pid) {
  StatLine line;
  std::ifstream file(pid < 0 ? std::string("/proc/self/stat")
                             : "/proc/" + std::to_string(pid) + "/stat");
  std::string text;
  if (!file || !std::getline(file, text)) return line;
  const std::size_t close = text.rfind(')');
  if (close == std::string::npos) return line;
  std::istringstream fields(text.substr(close + 1));
  std::string field;
  fields >> line.state;  // field 3
  for (int index = 4; index <= 22 && fields >> field; ++index) {
    if (index == 22) line.start_ticks = std::strtoull(field.c_str(), nullptr, 10);
  }
  line.found = line.start_ticks != 0;
  return line;
}

std::uint64_t kernel_key() {
  std::ifstream boot("/proc/sys/kernel/random/boot_id");
  std::string boot_id;
  if (!boot || !std::getline(boot, boot_id) || boot_id.empty()) return 0;
  char namespace_link[128] = {0};
  const ssize_t length = readlink("/proc/self/ns/pid", namespace_link, sizeof(namespace_link) - 1);
  if (length <= 0) return 0;
  const std::uint64_t key =
      fnv1a(std::string(namespace_link, static_cast<std::size_t>(length)), fnv1a(boot_id));
  return key == 0 ? 1 : key;
}

}  // namespace

ProcessIdentity own_identity() {
  ProcessIdentity identity;
  identity.pid = static_cast<std::int64_t>(getpid());
  const StatLine self = read_stat(-1);
  identity.start_ticks = self.start_ticks;
  identity.kernel_key = self.found ? kernel_key() : 0;
  gethostname(identity.host, sizeof(identity.host) - 1);
  const LinkAddress link = own_link_address();
  identity.link_ipv4 = link.ipv4;
  identity.link_port = link.port;
  return identity;
}

void PeerLiveness::adopt(std::vector<ProcessIdentity> identities, int self) {
  identities_ = std::move(identities);
  self_ = self;
  judged_.assign(identities_.size(), false);
  linked_.assign(identities_.size(), false);
  if (self < 0 || static_cast<std::size_t>(self) >= identities_.size()) return;
  const ProcessIdentity& mine = identities_[static_cast<std::size_t>(self)];
  for (std::size_t r = 0; r < identities_.size(); ++r) {
    ProcessIdentity& peer = identities_[r];
    peer.host[sizeof(peer.host) - 1] = '\0';
    if (static_cast<int>(r) == self) continue;
    if (mine.kernel_key == 0 || peer.kernel_key != mine.kernel_key ||
        std::strcmp(peer.host, mine.host) != 0) {
      linked_[r] = peer.link_port != 0;
      continue;
    }
    // Only a peer that /proc shows as it announced itself is judged later:
    // anything else (a /proc from elsewhere) would give false deaths.
    const StatLine now = read_stat(peer.pid);
    judged_[r] = now.found && now.start_ticks == peer.start_ticks;
  }
}

ProcessStatus PeerLiveness::status(int rank) const {
  if (rank < 0 || static_cast<std::size_t>(rank) >= identities_.size()) {
    return ProcessStatus::kUnknown;
  }
  const ProcessIdentity& peer = identities_[static_cast<std::size_t>(rank)];
  if (linked_[static_cast<std::size_t>(rank)]) {
    switch (link_status({peer.link_ipv4, peer.link_port})) {
      case LinkStatus::kGone: return ProcessStatus::kGone;
      case LinkStatus::kAlive: return ProcessStatus::kRunning;
      case LinkStatus::kUnknown: return ProcessStatus::kUnknown;
    }
  }
  if (!judged_[static_cast<std::size_t>(rank)]) return ProcessStatus::kUnknown;
  const StatLine now = read_stat(peer.pid);
  if (!now.found || now.start_ticks != peer.start_ticks || now.state == 'Z' || now.state == 'X' ||
      now.state == 'x') {
    return ProcessStatus::kGone;
  }
  if (now.state == 'T' || now.state == 't') return ProcessStatus::kStopped;
  return ProcessStatus::kRunning;
}

int PeerLiveness::judged_count() const {
  return static_cast<int>(std::count(judged_.begin(), judged_.end(), true) +
                          std::count(linked_.begin(), linked_.end(), true));
}

std::vector<int> PeerLiveness::gone() const {
  std::vector<int> ranks;
  for (std::size_t r = 0; r < identities_.size(); ++r) {
    if ((judged_[r] || linked_[r]) && status(static_cast<int>(r)) == ProcessStatus::kGone) {
      ranks.push_back(static_cast<int>(r));
    }
  }
  return ranks;
}

std::string PeerLiveness::describe(int rank, int shown_rank) const {
  std::string text = "rank " + std::to_string(shown_rank >= 0 ? shown_rank : rank);
  if (rank >= 0 && static_cast<std::size_t>(rank) < identities_.size()) {
    const ProcessIdentity& peer = identities_[static_cast<std::size_t>(rank)];
    text += " (pid " + std::to_string(peer.pid) + " on " + peer.host + ")";
  }
  return text;
}

std::string PeerLiveness::status_note(int rank) const {
  switch (status(rank)) {
    case ProcessStatus::kStopped: return " (its process is stopped: SIGSTOP or a debugger)";
    case ProcessStatus::kGone: return " (its process is gone)";
    case ProcessStatus::kRunning:
    case ProcessStatus::kUnknown:
    default: return "";
  }
}

}  // namespace collective::internal
