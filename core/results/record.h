// Result records: what every repro/fix binary writes with --json PATH.
// Schema (README.md, "Result records"):
//   {"bug", "kind": "repro"|"fix", "variant", "backend", "world_size",
//    "config": {...}, "measured": {...}, "reference": {...}, "verdict",
//    "error" (only when verdict is "error"), "provenance": {...}}
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "core/results/json.h"
#include "core/results/provenance.h"

namespace ddp::results {

enum class Kind { kRepro, kFix };

enum class Verdict {
  kReproduced,     // repro: the documented symptom appeared, at the expected size
  kNotReproduced,  // repro: it did not
  kExact,          // fix: agrees with the one-process computation
  kInexact,        // fix: does not
  kControl,        // control row: the expected symptom-free outcome held
  kControlFailed,  // control row: it did not
  kError,          // the run itself failed (message in `error`)
};

const char* ToString(Kind k);
const char* ToString(Verdict v);

struct Record {
  std::string bug;      // e.g. "wrong_all_gather"
  Kind kind = Kind::kRepro;
  std::string variant;  // e.g. "pad_no_trim"
  std::string backend;  // "gloo" | "nccl"
  int world_size = 0;
  bool control = false;  // a control row: expects kControl, not the kind's verdict
  // Overrides both: a row that shows a known-inexact setting (a fix's
  // variant run the way PyTorch defaults to, expected `inexact`).
  std::optional<Verdict> expected;
  Json config = Json::object();
  Json measured = Json::object();
  Json reference = Json::object();
  Verdict verdict = Verdict::kError;
  std::string error;
};

// The verdict a record must have for its binary to succeed.
Verdict ExpectedVerdict(const Record& r);

// 0 when every record has its expected verdict (and there is at least one),
// 1 otherwise: the exit status of a repro/fix binary (2 is bad usage).
int ExitStatus(const std::vector<Record>& records);

Json ToJson(const Record& r, const Provenance& p);

// Writes the JSON array to `path` (output_file.h: atomically for a file,
// through for a device or FIFO, symlinks followed). Returns "" on success, or
// the error message.
std::string WriteRecords(const std::string& path, const std::vector<Record>& records,
                         const Provenance& p);

}  // namespace ddp::results
