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
// much over kAllgathervPieceBytes. Measured with bench/padding at W = 2, ranks
// pinned one per core (bench/padding/README.md): a 1 MiB and a 0.5 MiB block
// took 1.9x as long whole as in pieces, a 2 MiB and a 1 MiB block 2.1x; two
// halves alone (Gloo allgather's choice) helped the first and hurt the
// second, because above about 0.75 MiB a message on this machine's loopback
// costs more per byte. `recv` holds the blocks back to back in rank order;
// `send` (byte_counts[rank] bytes) is copied into place first unless it is
// already there. Throws what Gloo throws (timeouts included).
inline constexpr std::size_t kAllgathervPieceBytes = 512 * 1024;
inline constexpr std::size_t kAllgathervMaxPieces = 64;

void PipelinedAllgatherv(const std::shared_ptr<gloo::Context>& context, const void* send,
                         void* recv, std::span<const std::size_t> byte_counts, uint32_t tag);

}  // namespace ddp::comm
