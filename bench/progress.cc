#include "progress.h"

#include <fcntl.h>
#include <unistd.h>

#include <cstdlib>

namespace collective::bench {
namespace {

void write_all(int fd, const std::string& text) {
  const char* data = text.data();
  std::size_t left = text.size();
  while (left > 0) {
    const ssize_t written = ::write(fd, data, left);
    if (written <= 0) return;  // progress is best effort
    data += written;
    left -= static_cast<std::size_t>(written);
  }
}

// The terminal of an mpirun running in the foreground, or -1.
int foreground_launcher_terminal() {
  if (std::getenv("OMPI_COMM_WORLD_RANK") == nullptr && std::getenv("PMI_RANK") == nullptr) {
    return -1;
  }
  const int fd = ::open("/dev/tty", O_WRONLY | O_NOCTTY | O_CLOEXEC);
  if (fd < 0) return -1;
  const pid_t foreground = ::tcgetpgrp(fd);
  if (foreground < 0 || foreground != ::getpgid(::getppid())) {
    ::close(fd);
    return -1;
  }
  return fd;
}

}  // namespace

Progress::Progress(ProgressMode mode, bool reporting_rank) {
  if (!reporting_rank || mode == ProgressMode::kOff) return;
  if (mode == ProgressMode::kOn || ::isatty(STDERR_FILENO)) {
    fd_ = STDERR_FILENO;
    return;
  }
  fd_ = foreground_launcher_terminal();
  owns_fd_ = fd_ >= 0;
}

Progress::~Progress() {
  finish();
  if (owns_fd_) ::close(fd_);
}

void Progress::update(std::size_t done, std::size_t total, const std::string& what) {
  if (fd_ < 0) return;
  line_ = '[';
  line_ += std::to_string(done + 1);
  line_ += '/';
  line_ += std::to_string(total);
  line_ += "] ";
  line_ += what;
  step_start_ = std::chrono::steady_clock::now();
}

void Progress::tick() {
  if (fd_ < 0 || line_.empty()) return;
  const auto now = std::chrono::steady_clock::now();
  if (now - step_start_ < std::chrono::milliseconds(500)) return;
  if (shown_ && now - last_draw_ < std::chrono::milliseconds(500)) return;
  last_draw_ = now;
  shown_ = true;
  std::string text = "\r\033[K";
  text += line_;
  write_all(fd_, text);
}

void Progress::finish() {
  line_.clear();
  if (fd_ < 0 || !shown_) return;
  write_all(fd_, "\r\033[K");
  shown_ = false;
}

}  // namespace collective::bench
