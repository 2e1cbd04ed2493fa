#include "core/comm/gloo_allgatherv.h"

#include <algorithm>
#include <cstring>
#include <vector>

#include "gloo/transport/unbound_buffer.h"
#include "gloo/types.h"

namespace ddp::comm {

void PipelinedAllgatherv(const std::shared_ptr<gloo::Context>& context, const void* send,
                         void* recv, std::span<const std::size_t> byte_counts, uint32_t tag) {
  const int w = context->size;
  const int rank = context->rank;
  std::vector<std::size_t> offsets(byte_counts.size());
  std::size_t total = 0;
  for (std::size_t r = 0; r < byte_counts.size(); ++r) {
    offsets[r] = total;
    total += byte_counts[r];
  }
  auto* out_bytes = static_cast<std::uint8_t*>(recv);
  const auto me = static_cast<std::size_t>(rank);
  if (byte_counts[me] > 0 && send != out_bytes + offsets[me]) {
    std::memcpy(out_bytes + offsets[me], send, byte_counts[me]);
  }
  if (w == 1 || total == 0) return;

  std::unique_ptr<gloo::transport::UnboundBuffer> out =
      context->createUnboundBuffer(recv, total);
  const auto slot = gloo::Slot::build(gloo::kAllgatherSlotPrefix, tag);
  const int send_rank = (rank + 1) % w;
  const int recv_rank = (rank + w - 1) % w;
  const auto timeout = context->getTimeout();
  // Every block in the same number of pieces, so that what a rank forwards
  // at step s is piece for piece what it received at step s-1.
  std::size_t max_bytes = 0;
  for (std::size_t b : byte_counts) max_bytes = std::max(max_bytes, b);
  const int pieces = static_cast<int>(std::clamp<std::size_t>(
      (max_bytes + kAllgathervPieceBytes - 1) / kAllgathervPieceBytes, 2, kAllgathervMaxPieces));
  auto piece = [&](std::size_t b, int k, std::size_t* offset) {
    const std::size_t n = byte_counts[b];
    const std::size_t lo = n * static_cast<std::size_t>(k) / static_cast<std::size_t>(pieces);
    const std::size_t hi = n * static_cast<std::size_t>(k + 1) / static_cast<std::size_t>(pieces);
    *offset = offsets[b] + lo;
    return hi - lo;
  };
  const int ops = pieces * (w - 1);
  for (int i = 0; i < ops; ++i) {
    const int step = i / pieces;
    const int k = i % pieces;
    const auto send_block = static_cast<std::size_t>((rank - step + w) % w);
    const auto recv_block = static_cast<std::size_t>((rank - step - 1 + 2 * w) % w);
    // Piece k of step s travels on once piece k of step s-1 has arrived:
    // `pieces` messages in flight each way at most.
    if (i >= pieces) {
      out->waitSend(timeout);
      out->waitRecv(timeout);
    }
    std::size_t send_offset = 0;
    std::size_t recv_offset = 0;
    const std::size_t send_size = piece(send_block, k, &send_offset);
    const std::size_t recv_size = piece(recv_block, k, &recv_offset);
    out->send(send_rank, slot, send_offset, send_size);
    out->recv(recv_rank, slot, recv_offset, recv_size);
  }
  for (int i = 0; i < std::min(ops, pieces); ++i) {
    out->waitSend(timeout);
    out->waitRecv(timeout);
  }
}

}  // namespace ddp::comm
