#include "core/harness/error_record.h"

#include <utility>

namespace ddp::harness {

bool KeptAsError(const WorldResult& world, const results::Record& rec,
                 std::vector<results::Record>& records) {
  if (world.ok) return false;
  results::Record error = rec;
  error.verdict = results::Verdict::kError;
  error.error = world.failure;
  records.push_back(std::move(error));
  return true;
}

}  // namespace ddp::harness
