// Progress of a long sweep, for a person watching a terminal; nothing when
// output is redirected, so piped and logged output stays clean.
//
// Under mpirun the ranks' stderr is a pipe to mpirun even when mpirun runs
// on a terminal, so `auto` also accepts the controlling terminal when the
// process that launched this rank (mpirun) is in its foreground, and then
// writes there. --progress on forces stderr, off silences it.
#pragma once

#include <chrono>
#include <cstddef>
#include <string>

#include "bench_options.h"

namespace collective::bench {

class Progress {
 public:
  Progress(ProgressMode mode, bool reporting_rank);
  ~Progress();
  Progress(const Progress&) = delete;
  Progress& operator=(const Progress&) = delete;

  bool active() const { return fd_ >= 0; }
  // Sets the line, "[done/total] what"; shown by tick().
  void update(std::size_t done, std::size_t total, const std::string& what);
  // Called between iterations: shows the line once the current step has
  // run for half a second (by then mpirun has printed the rows before it,
  // which travel through mpirun while this line does not), then redraws it
  // at most twice a second.
  void tick();
  // Clears the line (before a row is printed).
  void finish();

 private:
  int fd_ = -1;
  bool owns_fd_ = false;
  bool shown_ = false;
  std::string line_;
  std::chrono::steady_clock::time_point step_start_{};
  std::chrono::steady_clock::time_point last_draw_{};
};

}  // namespace collective::bench
