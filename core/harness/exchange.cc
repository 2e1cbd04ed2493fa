#include "core/harness/exchange.h"

#include <cstdint>
#include <cstring>
#include <span>
#include <string>

namespace ddp::harness {

// The text as int64 words, each rank's length first.
std::vector<results::Json> ExchangeValues(comm::Comm& comm, const results::Json& mine) {
  const std::string text = Dump(mine);
  std::vector<int64_t> words((text.size() + 7) / 8, 0);
  std::memcpy(words.data(), text.data(), text.size());
  const int64_t length = static_cast<int64_t>(text.size());
  const std::vector<int64_t> lengths = comm.Allgather(std::span<const int64_t>(&length, 1));
  std::vector<std::size_t> counts;
  for (int64_t n : lengths) counts.push_back(static_cast<std::size_t>((n + 7) / 8));
  const std::vector<int64_t> all = comm.Allgatherv(std::span<const int64_t>(words), counts);
  std::vector<results::Json> values;
  std::size_t at = 0;
  for (std::size_t r = 0; r < lengths.size(); ++r) {
    std::string peer(static_cast<std::size_t>(lengths[r]), '\0');
    std::memcpy(peer.data(), all.data() + at, peer.size());
    at += counts[r];
    values.push_back(results::ParseJson(peer));
  }
  return values;
}

// The text as one int32 per character, its length first.
results::Json BroadcastFromRankZero(comm::Comm& comm, const results::Json& value) {
  const std::string text = comm.rank() == 0 ? Dump(value) : std::string();
  int64_t size = static_cast<int64_t>(text.size());
  comm.Broadcast(std::span<int64_t>(&size, 1), 0);
  std::vector<int32_t> chars(static_cast<std::size_t>(size));
  for (std::size_t i = 0; i < text.size(); ++i) chars[i] = static_cast<unsigned char>(text[i]);
  comm.Broadcast(std::span<int32_t>(chars), 0);
  std::string received(chars.size(), '\0');
  for (std::size_t i = 0; i < chars.size(); ++i) received[i] = static_cast<char>(chars[i]);
  return results::ParseJson(received);
}

}  // namespace ddp::harness
