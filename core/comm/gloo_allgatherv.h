// The Gloo backend's allgatherv, two ways on Gloo's own transport (unbound
// buffers, slots, deadlines): Gloo's ring with every block in pieces, and a
// direct exchange. CommOptions::gloo_allgatherv picks one per communicator.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>

#include "core/collective/types.h"
#include "gloo/context.h"

namespace ddp::comm {

// Gloo's own allgather (equal counts) sends each block around the ring in
// two halves, so one half is on the wire while the other is being read;
// gloo::allgatherv sends each block whole. PipelinedAllgatherv is the same
// ring, every block cut into the same number of pieces: at least two, and
// enough that none is much over kAllgathervPieceBytes. Measured by hand with
// bench/padding at W = 2, ranks pinned one per core, medians of 5-7
// repetitions (not a committed record; bench/padding/README.md has the
// committed tables): a 1 MiB + 0.5 MiB pair took 345-353 us whole and
// 174-184 us in pieces; a 2 MiB + 1 MiB pair 630-675 us whole, 827 us in two
// halves (Gloo allgather's choice) and 388 us in 512 KiB pieces. That machine
// runs bbr, under which a burst of 1 MiB or more on one connection costs
// much more per byte; under cubic 4 MiB pieces did better at 16 MiB per
// rank, not at 1 MiB (both in bench/padding/README.md, "The kernel's
// share"). So the piece size is a setting:
// CommOptions::gloo_allgatherv_piece_bytes or DDP_GLOO_ALLGATHERV_PIECE_KIB,
// default kAllgathervPieceBytes.
//
// A ring forwards: at every step each rank passes on the block it has just
// received, so with skewed counts every step waits for the longest block
// in flight. DirectAllgatherv has no forwarding: every rank sends its own
// block (in the same pieces) straight to every peer, all posted at once.
// Over the whole world both move the same bytes; the direct exchange makes
// the rank with the longest block send it W-1 times, the ring spreads that
// work but chains it. Which is faster depends on the machine (cores per
// rank above all); bench/padding times both in one run. At W = 2 they are
// the same exchange.
//
// `recv` holds the blocks back to back in rank order; `send`
// (byte_counts[rank] bytes) is copied into place first unless it is already
// there. The whole call is bounded by the context's timeout; throws what
// Gloo throws (timeouts included).
inline constexpr std::size_t kAllgathervMaxPieces = 64;

void PipelinedAllgatherv(const std::shared_ptr<gloo::Context>& context, const void* send,
                         void* recv, std::span<const std::size_t> byte_counts, uint32_t tag,
                         std::size_t piece_bytes = kAllgathervPieceBytes);
void DirectAllgatherv(const std::shared_ptr<gloo::Context>& context, const void* send,
                      void* recv, std::span<const std::size_t> byte_counts, uint32_t tag,
                      std::size_t piece_bytes = kAllgathervPieceBytes);

}  // namespace ddp::comm
