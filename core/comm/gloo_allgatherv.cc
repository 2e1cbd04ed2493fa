#include "core/comm/gloo_allgatherv.h"

#include <algorithm>
#include <chrono>
#include <cstring>
#include <vector>

#include "gloo/transport/unbound_buffer.h"
#include "gloo/types.h"

namespace ddp::comm {
namespace {

// What both algorithms share: the block layout, this rank's own block
// copied into place, the piece count, and one deadline for the whole call.
class Layout {
 public:
  Layout(const std::shared_ptr<gloo::Context>& context, const void* send, void* recv,
         std::span<const std::size_t> byte_counts, std::size_t piece_bytes, int min_pieces)
      : byte_counts_(byte_counts),
        offsets_(byte_counts.size()),
        deadline_(std::chrono::steady_clock::now() + context->getTimeout()) {
    std::size_t max_bytes = 0;
    for (std::size_t r = 0; r < byte_counts.size(); ++r) {
      offsets_[r] = total_;
      total_ += byte_counts[r];
      max_bytes = std::max(max_bytes, byte_counts[r]);
    }
    pieces_ = static_cast<int>(std::clamp<std::size_t>(
        (max_bytes + piece_bytes - 1) / piece_bytes,
        static_cast<std::size_t>(min_pieces), kAllgathervMaxPieces));
    auto* out = static_cast<std::uint8_t*>(recv);
    const auto me = static_cast<std::size_t>(context->rank);
    if (byte_counts[me] > 0 && send != out + offsets_[me]) {
      std::memcpy(out + offsets_[me], send, byte_counts[me]);
    }
  }

  std::size_t total() const { return total_; }
  int pieces() const { return pieces_; }

  // Piece k of block b: its size, and its offset in the output.
  std::size_t Piece(std::size_t b, int k, std::size_t* offset) const {
    const std::size_t n = byte_counts_[b];
    const auto p = static_cast<std::size_t>(pieces_);
    const std::size_t lo = n * static_cast<std::size_t>(k) / p;
    const std::size_t hi = n * static_cast<std::size_t>(k + 1) / p;
    *offset = offsets_[b] + lo;
    return hi - lo;
  }

  // What is left of the call's deadline; at least 1 ms, since Gloo reads a
  // negative timeout as "unset" (the context default) rather than "expired".
  std::chrono::milliseconds Remaining() const {
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
        deadline_ - std::chrono::steady_clock::now());
    return std::max(left, std::chrono::milliseconds(1));
  }

 private:
  std::span<const std::size_t> byte_counts_;
  std::vector<std::size_t> offsets_;
  std::size_t total_ = 0;
  int pieces_ = 1;
  std::chrono::steady_clock::time_point deadline_;
};

}  // namespace

void PipelinedAllgatherv(const std::shared_ptr<gloo::Context>& context, const void* send,
                         void* recv, std::span<const std::size_t> byte_counts, uint32_t tag,
                         std::size_t piece_bytes) {
  const int w = context->size;
  const int rank = context->rank;
  // Every block in the same number of pieces, so that what a rank forwards
  // at step s is piece for piece what it received at step s-1.
  const Layout layout(context, send, recv, byte_counts, piece_bytes, /*min_pieces=*/2);
  if (w == 1 || layout.total() == 0) return;

  std::unique_ptr<gloo::transport::UnboundBuffer> out =
      context->createUnboundBuffer(recv, layout.total());
  const auto slot = gloo::Slot::build(gloo::kAllgatherSlotPrefix, tag);
  const int send_rank = (rank + 1) % w;
  const int recv_rank = (rank + w - 1) % w;
  const int pieces = layout.pieces();
  const int ops = pieces * (w - 1);
  for (int i = 0; i < ops; ++i) {
    const int step = i / pieces;
    const int k = i % pieces;
    const auto send_block = static_cast<std::size_t>((rank - step + w) % w);
    const auto recv_block = static_cast<std::size_t>((rank - step - 1 + 2 * w) % w);
    // Piece k of step s travels on once piece k of step s-1 has arrived:
    // `pieces` messages in flight each way at most.
    if (i >= pieces) {
      out->waitSend(layout.Remaining());
      out->waitRecv(layout.Remaining());
    }
    std::size_t send_offset = 0;
    std::size_t recv_offset = 0;
    const std::size_t send_size = layout.Piece(send_block, k, &send_offset);
    const std::size_t recv_size = layout.Piece(recv_block, k, &recv_offset);
    out->send(send_rank, slot, send_offset, send_size);
    out->recv(recv_rank, slot, recv_offset, recv_size);
  }
  for (int i = 0; i < std::min(ops, pieces); ++i) {
    out->waitSend(layout.Remaining());
    out->waitRecv(layout.Remaining());
  }
}

void DirectAllgatherv(const std::shared_ptr<gloo::Context>& context, const void* send,
                      void* recv, std::span<const std::size_t> byte_counts, uint32_t tag,
                      std::size_t piece_bytes) {
  const int w = context->size;
  const int rank = context->rank;
  // Pieces here only interleave the peers: no piece waits for another.
  const Layout layout(context, send, recv, byte_counts, piece_bytes, /*min_pieces=*/1);
  if (w == 1 || layout.total() == 0) return;

  std::unique_ptr<gloo::transport::UnboundBuffer> out =
      context->createUnboundBuffer(recv, layout.total());
  const auto slot = gloo::Slot::build(gloo::kAllgatherSlotPrefix, tag);
  const auto me = static_cast<std::size_t>(rank);
  int sends = 0;
  int recvs = 0;
  for (int k = 0; k < layout.pieces(); ++k) {
    // Peer d steps away first, so the ranks do not all write to one peer.
    for (int d = 1; d < w; ++d) {
      const int to = (rank + d) % w;
      const int from = (rank - d + w) % w;
      std::size_t offset = 0;
      // Empty pieces (an empty block) are neither sent nor awaited: both
      // sides skip them, since both know every count.
      if (const std::size_t n = layout.Piece(me, k, &offset); n > 0) {
        out->send(to, slot, offset, n);
        ++sends;
      }
      if (const std::size_t n = layout.Piece(static_cast<std::size_t>(from), k, &offset); n > 0) {
        out->recv(from, slot, offset, n);
        ++recvs;
      }
    }
  }
  for (int i = 0; i < sends; ++i) out->waitSend(layout.Remaining());
  for (int i = 0; i < recvs; ++i) out->waitRecv(layout.Remaining());
}

}  // namespace ddp::comm
