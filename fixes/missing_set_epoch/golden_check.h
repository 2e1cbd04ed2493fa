// Compares what our DistributedSampler + DataLoader iterate, driven as
// scenario.h's modes drive them, with what PyTorch iterated in the same
// training loop (golden/loader_golden.txt, written by golden/gen_golden.py).
#pragma once

#include <string>

namespace ddp::missing_set_epoch {

struct GoldenComparison {
  int batches_checked = 0;
  int no_set_epoch_batches = 0;  // of which SET_EPOCH 0 (the bug)
  int set_epoch_batches = 0;     // of which SET_EPOCH 1 (the fix)
  std::string first_mismatch;    // empty when every batch matched
};

// Reads the golden file at `path` (throws std::runtime_error if unreadable).
GoldenComparison CompareWithTorchLoader(const std::string& path);

}  // namespace ddp::missing_set_epoch
