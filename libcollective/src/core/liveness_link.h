// Telling whether a peer process on another host (or in another pid
// namespace, where /proc cannot) still exists, by TCP.
//
// Every process listens on one socket, made with its first communicator and
// never accepted from: the kernel completes the connections that peers open
// to it, and resets every one of them when the process ends, killed or not.
// A survivor that must judge a peer connects once (one connection per peer
// process, shared by every communicator) and polls it: an error or a
// hang-up means the process is gone; a refused connection means nothing
// listens there any more. TCP keepalive (1 s idle, then 3 probes 1 s apart)
// ends the connection to a host that vanished without a reset.
#pragma once

#include <cstdint>

namespace collective::internal {

struct LinkAddress {
  std::uint32_t ipv4 = 0;  // network byte order; 0: no listener
  std::uint16_t port = 0;  // network byte order
};

// This process's listener, made on first use: bound to every interface,
// published as the first non-loopback IPv4 address of an interface that is
// up (127.0.0.1 when there is none). {0, 0} when it cannot be made: the
// peers then judge this process by /proc only, or not at all.
LinkAddress own_link_address();

enum class LinkStatus { kUnknown, kAlive, kGone };

// What the connection to `peer` says now, connecting on the first ask
// (never blocks). kUnknown while connecting or when the address is none.
LinkStatus link_status(const LinkAddress& peer);

}  // namespace collective::internal
