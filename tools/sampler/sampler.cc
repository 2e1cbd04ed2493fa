// Prints one rank's torch.utils.data.DistributedSampler indices (PyTorch 1.13
// semantics), space-separated on one line.
//
//   bazel run //tools:sampler -- --n 1003 --world 2 --rank 1 --seed 0
//       --epoch 0 --shuffle=true --drop_last=false   (one command line)
#include <charconv>
#include <cstdint>
#include <cstdio>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>

#include "core/data/sampler.h"

namespace {

constexpr char kUsage[] =
    "usage: sampler --n N --world W --rank R [--seed S] [--epoch E]\n"
    "               [--shuffle=true|false] [--drop_last=true|false]\n"
    "\n"
    "Prints the indices that rank R of W gets from\n"
    "torch.utils.data.DistributedSampler(dataset of length N, num_replicas=W,\n"
    "rank=R, shuffle, seed, drop_last) after set_epoch(E), as PyTorch 1.13\n"
    "computes them, on one line separated by spaces.\n"
    "\n"
    "  --n N          dataset length, integer >= 0 (required)\n"
    "  --world W      number of replicas, integer >= 1 (required)\n"
    "  --rank R       this replica, integer in [0, W-1] (required)\n"
    "  --seed S       integer, default 0 (torch seeds randperm with S + E)\n"
    "  --epoch E      integer, default 0\n"
    "  --shuffle      true|false, default true (PyTorch's default)\n"
    "  --drop_last    true|false, default false\n"
    "  --help         this text\n"
    "\n"
    "Flags take their value as --flag=V or --flag V. Exit status 2 on bad usage.\n";

[[noreturn]] void Usage(const std::string& message) {
  std::fprintf(stderr, "sampler: %s\n(run with --help for usage)\n", message.c_str());
  std::exit(2);
}

std::optional<int64_t> ParseInt(std::string_view text) {
  int64_t value = 0;
  if (!text.empty() && text.front() == '+') text.remove_prefix(1);
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (ec != std::errc() || end != text.data() + text.size() || text.empty()) return std::nullopt;
  return value;
}

int64_t IntFlag(const std::string& flag, const std::string& text, int64_t min, int64_t max,
                const std::string& allowed) {
  const std::optional<int64_t> value = ParseInt(text);
  if (!value || *value < min || *value > max) {
    Usage(flag + " must be " + allowed + ", got '" + text + "'");
  }
  return *value;
}

bool BoolFlag(const std::string& flag, const std::string& text) {
  if (text == "true" || text == "1") return true;
  if (text == "false" || text == "0") return false;
  Usage(flag + " must be true or false, got '" + text + "'");
}

}  // namespace

int main(int argc, char** argv) {
  std::optional<std::string> n_text, world_text, rank_text;
  std::string seed_text = "0", epoch_text = "0", shuffle_text = "true", drop_last_text = "false";
  for (int i = 1; i < argc; ++i) {
    std::string arg = argv[i];
    if (arg == "--help" || arg == "-h") {
      std::fputs(kUsage, stdout);
      return 0;
    }
    std::string name = arg, value;
    bool has_value = false;
    if (const size_t eq = arg.find('='); arg.rfind("--", 0) == 0 && eq != std::string::npos) {
      name = arg.substr(0, eq);
      value = arg.substr(eq + 1);
      has_value = true;
    }
    std::string* target = nullptr;
    if (name == "--n") target = &n_text.emplace();
    else if (name == "--world") target = &world_text.emplace();
    else if (name == "--rank") target = &rank_text.emplace();
    else if (name == "--seed") target = &seed_text;
    else if (name == "--epoch") target = &epoch_text;
    else if (name == "--shuffle") target = &shuffle_text;
    else if (name == "--drop_last") target = &drop_last_text;
    else {
      Usage("unknown flag '" + arg +
            "' (allowed: --n, --world, --rank, --seed, --epoch, --shuffle, --drop_last, --help)");
    }
    if (!has_value) {
      if (i + 1 >= argc) Usage(name + " needs a value");
      value = argv[++i];
    }
    *target = value;
  }
  if (!n_text) Usage("--n is required (dataset length, integer >= 0)");
  if (!world_text) Usage("--world is required (number of replicas, integer >= 1)");
  if (!rank_text) Usage("--rank is required (integer in [0, W-1])");
  constexpr int64_t kMax = INT64_MAX, kMin = INT64_MIN;
  const int64_t n = IntFlag("--n", *n_text, 0, kMax, "an integer >= 0");
  const int64_t world = IntFlag("--world", *world_text, 1, kMax, "an integer >= 1");
  const int64_t rank = IntFlag("--rank", *rank_text, 0, world - 1,
                               "an integer in [0, " + std::to_string(world - 1) + "] (--world " +
                                   std::to_string(world) + ")");
  ddp::data::DistributedSamplerOptions options;
  options.num_replicas = world;
  options.rank = rank;
  options.seed = IntFlag("--seed", seed_text, kMin, kMax, "an integer (64-bit)");
  const int64_t epoch = IntFlag("--epoch", epoch_text, kMin, kMax, "an integer (64-bit)");
  options.shuffle = BoolFlag("--shuffle", shuffle_text);
  options.drop_last = BoolFlag("--drop_last", drop_last_text);
  try {
    ddp::data::DistributedSampler sampler(n, options);
    sampler.SetEpoch(epoch);
    // Written in 1 MiB chunks: a rank of a large N has millions of indices.
    std::string line;
    bool first = true;
    for (int64_t index : sampler.Indices()) {
      if (!first) line += ' ';
      first = false;
      line += std::to_string(index);
      if (line.size() > (1 << 20)) {
        std::fwrite(line.data(), 1, line.size(), stdout);
        line.clear();
      }
    }
    line += '\n';
    std::fwrite(line.data(), 1, line.size(), stdout);
  } catch (const std::invalid_argument& e) {
    Usage(e.what());
  }
  return std::fflush(stdout) == 0 ? 0 : 1;
}
