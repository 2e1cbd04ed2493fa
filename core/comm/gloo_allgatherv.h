// The Gloo backend's allgatherv: Gloo's ring, with every block in pieces.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>

#include "gloo/context.h"

namespace ddp::comm {

// Gloo's own allgather (equal counts) sends each block around the ring in
// two halves, so one half is on the wire while the other is being read;
// gloo::allgatherv sends each block whole. This is the same ring on the same
// transport (Gloo's unbound buffers, slots and timeouts), every block cut
// into the same number of pieces: at least two, and enough that none is
// much over kAllgathervPieceBytes. Measured by hand with bench/padding at
// W = 2, ranks pinned one per core, medians of 5-7 repetitions (not a
// committed record; bench/padding/README.md has the committed tables): a
// 1 MiB + 0.5 MiB pair took 345-353 us whole and 174-184 us in pieces; a
// 2 MiB + 1 MiB pair 630-675 us whole, 827 us in two halves (Gloo
// allgather's choice) and 388 us in 512 KiB pieces. Above about 0.75 MiB a
// loopback message on that machine costs more per byte.
//
// `recv` holds the blocks back to back in rank order; `send`
// (byte_counts[rank] bytes) is copied into place first unless it is already
// there. Throws what Gloo throws (timeouts included).
inline constexpr std::size_t kAllgathervPieceBytes = 512 * 1024;
inline constexpr std::size_t kAllgathervMaxPieces = 64;

void PipelinedAllgatherv(const std::shared_ptr<gloo::Context>& context, const void* send,
                         void* recv, std::span<const std::size_t> byte_counts, uint32_t tag);

}  // namespace ddp::comm
