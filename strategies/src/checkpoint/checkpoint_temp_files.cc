#include "checkpoint/checkpoint_temp_files.h"

#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cctype>
#include <climits>
#include <cstdint>
#include <fstream>
#include <optional>
#include <sstream>

#include "base/log.h"

namespace collective::distribute::detail {
namespace {

constexpr const char* kTempMark = ".tmp.";

// Field 22 of /proc/<pid>/stat (starttime), after the parenthesized command
// name, which may hold spaces and parentheses; "" when there is no such
// process or it has exited (a zombie will never finish its save).
std::string start_time_of(long pid) {
  std::ifstream stat("/proc/" + std::to_string(pid) + "/stat");
  std::string text;
  if (!stat || !std::getline(stat, text)) return "";
  const std::size_t close = text.rfind(')');
  if (close == std::string::npos) return "";
  std::istringstream fields(text.substr(close + 1));
  std::string field;
  for (int index = 3; index <= 22; ++index) {
    if (!(fields >> field)) return "";
    if (index == 3 && (field == "Z" || field == "X")) return "";
  }
  return field;
}

std::string host_name() {
  char name[HOST_NAME_MAX + 1] = {0};
  if (::gethostname(name, sizeof name - 1) != 0) return "unknown-host";
  return name;
}

bool all_digits(const std::string& text) {
  if (text.empty() || text.size() > 19) return false;
  for (char c : text) {
    if (!std::isdigit(static_cast<unsigned char>(c))) return false;
  }
  return true;
}

// Whether the final name is one a save writes: ckpt-<digits> or latest.
bool is_checkpoint_name(const std::string& name) {
  return name == "latest" || (name.rfind("ckpt-", 0) == 0 && all_digits(name.substr(5)));
}

struct Owner {
  long pid = 0;
  std::optional<std::string> start;  // absent in the older "<name>.tmp.<pid>"
  std::string host;
};

// The writer a temporary's name records; nullopt for any other file.
std::optional<Owner> owner_of(const std::string& entry) {
  const std::size_t mark = entry.find(kTempMark);
  if (mark == std::string::npos || !is_checkpoint_name(entry.substr(0, mark))) return std::nullopt;
  const std::string rest = entry.substr(mark + std::string(kTempMark).size());
  Owner owner;
  const std::size_t first = rest.find('.');
  const std::string pid = rest.substr(0, first);
  if (!all_digits(pid)) return std::nullopt;
  owner.pid = std::stol(pid);
  if (first == std::string::npos) return owner;  // the older name: this host assumed
  const std::size_t second = rest.find('.', first + 1);
  if (second == std::string::npos) return std::nullopt;
  const std::string start = rest.substr(first + 1, second - first - 1);
  if (!all_digits(start)) return std::nullopt;
  owner.start = start;
  owner.host = rest.substr(second + 1);
  if (owner.host.empty()) return std::nullopt;
  return owner;
}

bool is_gone(const Owner& owner, const std::string& this_host) {
  if (owner.start && owner.host != this_host) return false;  // not ours to judge
  const std::string running_since = start_time_of(owner.pid);
  if (running_since.empty()) return true;
  // The same pid started at another time is another process; an older
  // name without a start time gives a running pid the benefit.
  return owner.start && *owner.start != running_since;
}

}  // namespace

std::filesystem::path checkpoint_temp_path(const std::filesystem::path& directory,
                                           const std::string& final_name) {
  // Not cached: a forked child is another writer.
  const long pid = static_cast<long>(::getpid());
  std::string start = start_time_of(pid);
  if (start.empty()) start = "0";
  return directory /
         (final_name + kTempMark + std::to_string(pid) + "." + start + "." + host_name());
}

int remove_abandoned_checkpoint_temps(const std::filesystem::path& directory) {
  DIR* listing = ::opendir(directory.c_str());
  if (listing == nullptr) return 0;
  const std::string this_host = host_name();
  int removed = 0;
  while (const dirent* item = ::readdir(listing)) {
    const std::string entry = item->d_name;
    const std::optional<Owner> owner = owner_of(entry);
    if (!owner || !is_gone(*owner, this_host)) continue;
    struct stat info {};
    if (::fstatat(::dirfd(listing), item->d_name, &info, AT_SYMLINK_NOFOLLOW) != 0 ||
        !S_ISREG(info.st_mode)) {
      continue;
    }
    if (::unlinkat(::dirfd(listing), item->d_name, 0) == 0) {
      ++removed;
      DISTRIBUTE_LOG(kInfo, "removed "
                                << (directory / entry).string() << " (" << info.st_size
                                << " bytes), the temporary of a checkpoint save whose process "
                                << owner->pid << " is gone");
    }
  }
  ::closedir(listing);
  return removed;
}

}  // namespace collective::distribute::detail
