// The closing table every repro/fix binary prints: one row per record that
// fits a terminal (120 columns by default) and keeps each row's key number
// whole. Config shared by every row goes to one legend line above the
// table; a row's config that does not fit becomes a tag ("c1") explained in a
// legend line under it; only the other measured fields are ever cut. Rows
// that failed, hung or desynchronised get their error, message and desync
// report printed under the table, in full. Verbose mode adds every field of
// every record.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

#include "core/results/record.h"

namespace ddp::results {

struct TableOptions {
  std::size_t width = 120;  // columns the table itself must fit
  bool verbose = false;     // add every field of every record
};

// The key number of a row: measured "error" when it is a number, else the
// first numeric measured field whose name has "error" in it, else the first
// numeric measured field, as "name=value" (%.6g); else the first boolean
// ("ranks_failed=true"); "" when none.
std::string KeyNumber(const Record& r);

std::string FormatTable(const std::vector<Record>& records, const TableOptions& options = {});

}  // namespace ddp::results
