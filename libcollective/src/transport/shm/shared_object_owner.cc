#include "transport/shm/shared_object_owner.h"

#include <dirent.h>
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdio>
#include <fstream>
#include <sstream>
#include <vector>

#include "core/log.h"

namespace collective::internal {
namespace {

// Field 22 of /proc/<pid>/stat, after the parenthesized command name
// (which may itself hold spaces and parentheses); "" when unreadable or
// when the process has exited (a zombie not yet reaped: its objects will
// never be unlinked by it).
std::string start_time_of(std::int64_t pid) {
  std::ifstream stat("/proc/" + std::to_string(pid) + "/stat");
  std::string text;
  if (!stat || !std::getline(stat, text)) return "";
  const std::size_t close = text.rfind(')');
  if (close == std::string::npos) return "";
  std::istringstream fields(text.substr(close + 1));
  std::string field;
  // Fields 3 (state) to 22 (starttime) follow the name.
  for (int index = 3; index <= 22; ++index) {
    if (!(fields >> field)) return "";
    if (index == 3 && (field == "Z" || field == "X")) return "";
  }
  return field;
}

bool parse_number(const std::string& text, std::uint64_t& value) {
  if (text.empty() || text.size() > 19) return false;
  value = 0;
  for (char c : text) {
    if (c < '0' || c > '9') return false;
    value = value * 10 + static_cast<std::uint64_t>(c - '0');
  }
  return true;
}

std::vector<std::string> split_dashes(const std::string& text) {
  std::vector<std::string> parts;
  std::size_t begin = 0;
  while (true) {
    const std::size_t dash = text.find('-', begin);
    parts.push_back(text.substr(begin, dash - begin));
    if (dash == std::string::npos) return parts;
    begin = dash + 1;
  }
}

// Whether the object named `entry` (without the leading slash) belongs
// to a process that is no longer running.
bool owner_is_gone(const std::string& entry) {
  std::string rest;
  for (const char* prefix : {"collective-seg-", "collective-mem-"}) {
    const std::string p(prefix);
    if (entry.compare(0, p.size(), p) == 0) rest = entry.substr(p.size());
  }
  if (rest.empty()) return false;
  const std::vector<std::string> parts = split_dashes(rest);
  std::uint64_t pid = 0;
  std::uint64_t number = 0;
  if (parts.size() < 2 || parts.size() > 3 || !parse_number(parts[0], pid)) return false;
  for (std::size_t i = 1; i < parts.size(); ++i) {
    if (!parse_number(parts[i], number)) return false;
  }
  const std::string running_since = start_time_of(static_cast<std::int64_t>(pid));
  if (running_since.empty()) return true;
  // <pid>-<start>-<n>: the same pid, started at another time, is another
  // process. <pid>-<n> (older names): a running pid is given the benefit.
  return parts.size() == 3 && running_since != parts[1];
}

}  // namespace

const std::string& owner_tag() {
  static const std::string tag = owner_tag_of(getpid());
  return tag;
}

std::string owner_tag_of(std::int64_t pid) {
  const std::string start = start_time_of(pid);
  if (start.empty()) return "";
  return std::to_string(pid) + "-" + start;
}

int reclaim_stale_shared_objects() {
  DIR* directory = opendir("/dev/shm");
  if (directory == nullptr) return 0;
  int reclaimed = 0;
  const uid_t me = geteuid();
  while (const dirent* item = readdir(directory)) {
    const std::string entry = item->d_name;
    if (entry.compare(0, 11, "collective-") != 0) continue;
    struct stat info {};
    if (fstatat(dirfd(directory), item->d_name, &info, AT_SYMLINK_NOFOLLOW) != 0) continue;
    if (info.st_uid != me || !S_ISREG(info.st_mode) || !owner_is_gone(entry)) continue;
    if (shm_unlink(("/" + entry).c_str()) == 0) {
      ++reclaimed;
      COLLECTIVE_LOG(kInfo, "removed /dev/shm/" << entry << " (" << info.st_size
                                                << " bytes), left by a process that is gone");
    }
  }
  closedir(directory);
  return reclaimed;
}

}  // namespace collective::internal
