// The drop-in's recursion guard. libcollective itself calls MPI_Allreduce,
// MPI_Bcast, ... on its private communicators; with the drop-in loaded those
// names resolve to the drop-in again. While a thread is inside the drop-in
// (serving a call, creating or freeing a mapped communicator) every
// intercepted entry point it reaches goes straight to PMPI_, uncounted.
#pragma once

namespace collective::pmpi {

class ReentryGuard {
 public:
  ReentryGuard() { ++depth(); }
  ~ReentryGuard() { --depth(); }
  ReentryGuard(const ReentryGuard&) = delete;
  ReentryGuard& operator=(const ReentryGuard&) = delete;

  // True on a thread that is already inside the drop-in.
  static bool active() { return depth() > 0; }

 private:
  // initial-exec: read without a call to __tls_get_addr on every
  // intercepted call (the drop-in is loaded at start-up, LD_PRELOADed or
  // linked, where static TLS has room for it).
  static int& depth() {
    thread_local int value __attribute__((tls_model("initial-exec"))) = 0;
    return value;
  }
};

}  // namespace collective::pmpi
