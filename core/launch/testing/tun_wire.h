// A userspace "wire" between test hosts (network namespaces) that adds a
// fixed one-way delay to every packet: what `tc qdisc ... netem delay`
// does, for kernels built without sch_netem (this suite's CI VM has only
// pfifo, htb and tbf, and tbf delays only a backlog, not every packet).
//
// One process (forked; it dies with its parent) creates a TUN device named
// tun0 in each namespace and then, forever: reads an IPv4 packet from one
// host's tun0, holds it `delay`, and writes it unchanged into the tun0 of
// the host owning its destination address ("<subnet>.<k+1>" is host k).
// The kernels at both ends run their real TCP over it (handshakes,
// retransmissions, congestion control); only the link is emulated. Packets
// keep their order; nothing is dropped unless a destination is unknown or
// more than 65536 packets are in flight. Not IPv6.
#pragma once

#include <chrono>
#include <string>
#include <vector>

#include "core/launch/supervise.h"

namespace ddp::launch::testing {

// `netns_paths`: "/run/netns/<name>" of host 0, 1, ...; `subnet`: the first
// three octets ("10.77.0"). The devices exist once the caller sees tun0 in
// every namespace (they are unconfigured: the caller adds the addresses and
// sets them up). They vanish with the process.
ChildProcess StartDelayWire(const std::vector<std::string>& netns_paths, const std::string& subnet,
                            std::chrono::milliseconds delay);

}  // namespace ddp::launch::testing
