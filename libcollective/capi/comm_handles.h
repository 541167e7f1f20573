// The C API's communicator handles: a registry of the live ones, so that a
// handle that was freed (through any copy of it) or never issued gives a
// status and a message naming the function, never a dereference of freed
// memory. A handle is a serial number dressed as the opaque pointer type:
// serials are never reused, so a stale copy cannot alias a later
// communicator, and the handle is never dereferenced.
#pragma once

#include <memory>
#include <string>

#include "collective/collective.h"
#include "collective/collective_c.h"

namespace collective::capi {

// What a handle stands for; shared so that a call in flight keeps its
// communicator alive while another thread frees the handle.
struct CommEntry {
  Communicator communicator;
};

// Registers `communicator` and returns its new handle.
collective_comm_t issue_handle(Communicator communicator);

// The live entry of `handle`, or nullptr (a NULL handle is the caller's to
// refuse). The entry is borrowed: this thread holds a reference to it until
// its next lookup, so a free on another thread meanwhile cannot end it. The
// last handle this thread looked up is found again with one atomic load
// while no handle has been freed since (a small call costs what it did).
CommEntry* borrow_handle(collective_comm_t handle);
// Why `handle` is not live: "communicator handle 0x... was freed ..." or
// "... was never issued ...".
std::string why_not_live(collective_comm_t handle);

// Removes `handle` from the registry and returns its entry (nullptr with
// `why` set when it is not live): exactly one caller frees a handle.
std::shared_ptr<CommEntry> retire_handle(collective_comm_t handle, std::string& why);

// This process's rank in its world communicator once collective_comm_world
// issued a handle (-1 before): the rank in messages about a handle that
// names no communicator.
int process_rank();
void note_process_rank(int rank);

}  // namespace collective::capi
