#include "core/results/record.h"

#include "core/results/output_file.h"

namespace ddp::results {

const char* ToString(Kind k) { return k == Kind::kRepro ? "repro" : "fix"; }

const char* ToString(Verdict v) {
  switch (v) {
    case Verdict::kReproduced: return "reproduced";
    case Verdict::kNotReproduced: return "not_reproduced";
    case Verdict::kExact: return "exact";
    case Verdict::kInexact: return "inexact";
    case Verdict::kControl: return "control";
    case Verdict::kControlFailed: return "control_failed";
    case Verdict::kError: return "error";
  }
  return "error";
}

Verdict ExpectedVerdict(const Record& r) {
  if (r.expected) return *r.expected;
  if (r.control) return Verdict::kControl;
  return r.kind == Kind::kRepro ? Verdict::kReproduced : Verdict::kExact;
}

int ExitStatus(const std::vector<Record>& records) {
  if (records.empty()) return 1;
  for (const Record& r : records) {
    if (r.verdict != ExpectedVerdict(r)) return 1;
  }
  return 0;
}

Json ToJson(const Record& r, const Provenance& p) {
  Json j;
  j["bug"] = r.bug;
  j["kind"] = ToString(r.kind);
  j["variant"] = r.variant;
  j["backend"] = r.backend;
  j["world_size"] = r.world_size;
  j["config"] = r.config;
  j["measured"] = r.measured;
  j["reference"] = r.reference;
  j["verdict"] = ToString(r.verdict);
  if (r.expected) j["expected_verdict"] = ToString(*r.expected);
  if (r.verdict == Verdict::kError) j["error"] = r.error;
  j["provenance"] = ToJson(p);
  return j;
}

std::string WriteRecords(const std::string& path, const std::vector<Record>& records,
                         const Provenance& p) {
  Json arr = Json::array();
  for (const Record& r : records) arr.push_back(ToJson(r, p));
  return WriteOutputFile(path, Dump(arr, 2) + "\n");
}

}  // namespace ddp::results
