#include "core/results/table.h"

#include <algorithm>
#include <cstdio>
#include <map>
#include <set>

namespace ddp::results {
namespace {

std::string Number(double v, const char* format) {
  char buf[48];
  std::snprintf(buf, sizeof buf, format, v);
  return buf;
}

// One value on one line: numbers %.4g, strings up to their first newline,
// arrays of more than 8 values (training curves) as their length, anything
// else as compact JSON.
std::string Short(const Json& v) {
  if (v.is_number()) return Number(v.get<double>(), "%.4g");
  if (v.is_string()) return v.get<std::string>().substr(0, v.get<std::string>().find('\n'));
  if (v.is_array() && v.size() > 8) return "(" + std::to_string(v.size()) + " values)";
  return Dump(v);
}

std::string Pairs(const std::vector<std::pair<std::string, std::string>>& kv) {
  std::string out;
  for (const auto& [k, v] : kv) out += (out.empty() ? "" : " ") + k + "=" + v;
  return out;
}

std::string Cut(const std::string& s, std::size_t width) {
  if (s.size() <= width) return s;
  if (width < 4) return s.substr(0, width);
  return s.substr(0, width - 3) + "...";
}

// Breaks a long legend line at spaces into lines of at most `width`,
// continuation lines indented.
std::vector<std::string> Wrap(const std::string& text, std::size_t width) {
  std::vector<std::string> lines;
  std::string line;
  std::size_t start = 0;
  while (start < text.size()) {
    std::size_t end = text.find(' ', start);
    if (end == std::string::npos) end = text.size();
    const std::string word = text.substr(start, end - start);
    if (!line.empty() && line.size() + 1 + word.size() > width) {
      lines.push_back(line);
      line = "    " + word;
    } else {
      line += (line.empty() ? "" : " ") + word;
    }
    start = end + 1;
  }
  if (!line.empty()) lines.push_back(line);
  return lines;
}

// Config entries every record shares (printed once), by key.
std::set<std::string> CommonConfigKeys(const std::vector<Record>& records) {
  std::set<std::string> common;
  if (records.empty() || !records[0].config.is_object()) return common;
  for (const auto& [k, v] : records[0].config.items()) {
    const std::string text = Dump(v);
    bool same = true;
    for (const Record& r : records) {
      const Json* other = Find(r.config, k);
      if (other == nullptr || Dump(*other) != text) same = false;
    }
    if (same) common.insert(k);
  }
  return common;
}

bool IsKeyField(const std::string& name, const Record& r) {
  const std::string key = KeyNumber(r);
  return !key.empty() && key.compare(0, name.size() + 1, name + "=") == 0;
}

// A row that failed, hung or desynchronised: its details go under the table.
bool NeedsDetails(const Record& r) {
  if (r.verdict == Verdict::kError || r.verdict != ExpectedVerdict(r)) return true;
  if (!r.measured.is_object()) return false;
  if (Find(r.measured, "report") != nullptr) return true;
  for (const char* flag : {"timed_out", "ranks_failed"}) {
    const Json* f = Find(r.measured, flag);
    if (f != nullptr && f->is_boolean() && f->get<bool>()) return true;
  }
  return false;
}

void Indented(std::string& out, const std::string& label, const std::string& text) {
  if (text.find('\n') == std::string::npos) {
    out += "    " + label + ": " + text + "\n";
    return;
  }
  out += "    " + label + ":\n";
  std::size_t start = 0;
  while (start <= text.size()) {
    std::size_t end = text.find('\n', start);
    if (end == std::string::npos) end = text.size();
    if (end > start) out += "      " + text.substr(start, end - start) + "\n";
    start = end + 1;
  }
}

void Fields(std::string& out, const std::string& section, const Json& j) {
  if (!j.is_object()) {
    Indented(out, section, Dump(j));
    return;
  }
  for (const auto& [k, v] : j.items()) {
    Indented(out, section + "." + k, v.is_string() ? v.get<std::string>() : Dump(v));
  }
}

}  // namespace

std::string KeyNumber(const Record& r) {
  if (!r.measured.is_object()) return "";
  const Json* e = Find(r.measured, "error");
  if (e != nullptr && e->is_number()) return "error=" + Number(e->get<double>(), "%.6g");
  // An error of some kind (rel_error, max_rel_grad_error) is what a fix row
  // is judged by; else the first number the pair chose to measure.
  for (bool errors_only : {true, false}) {
    for (const auto& [k, v] : r.measured.items()) {
      if (v.is_number() && (!errors_only || k.find("error") != std::string::npos)) {
        return k + "=" + Number(v.get<double>(), "%.6g");
      }
    }
  }
  for (const auto& [k, v] : r.measured.items()) {
    if (v.is_boolean()) return k + "=" + (v.get<bool>() ? "true" : "false");
  }
  return "";
}

std::string FormatTable(const std::vector<Record>& records, const TableOptions& options) {
  const std::set<std::string> common = CommonConfigKeys(records);
  std::string out;
  if (records.size() > 1 && !common.empty()) {
    std::vector<std::pair<std::string, std::string>> kv;
    for (const auto& [k, v] : records[0].config.items()) {
      if (common.count(k)) kv.emplace_back(k, Short(v));
    }
    for (const auto& line : Wrap("config, every row: " + Pairs(kv), options.width)) out += line + "\n";
  }
  struct Row {
    std::vector<std::string> fixed;  // kind, variant, W, verdict, key: never cut
    std::string config, rest;
  };
  std::vector<Row> rows;
  rows.push_back({{"kind", "variant", "W", "verdict", "key number"}, "config", "measured"});
  for (const Record& r : records) {
    std::vector<std::pair<std::string, std::string>> config, rest;
    if (r.config.is_object()) {
      for (const auto& [k, v] : r.config.items()) {
        if (records.size() == 1 || !common.count(k)) config.emplace_back(k, Short(v));
      }
    }
    if (r.measured.is_object()) {
      for (const auto& [k, v] : r.measured.items()) {
        if (!IsKeyField(k, r)) rest.emplace_back(k, Short(v));
      }
    }
    rows.push_back({{ToString(r.kind), r.variant, std::to_string(r.world_size), ToString(r.verdict),
                     KeyNumber(r)},
                    Pairs(config), Pairs(rest)});
  }
  // The fixed columns take what they need; config and the other measured
  // fields share the rest, config first up to half of it.
  std::vector<std::size_t> width(5, 0);
  std::size_t config_w = 0;
  for (const Row& row : rows) {
    for (std::size_t c = 0; c < 5; ++c) width[c] = std::max(width[c], row.fixed[c].size());
    config_w = std::max(config_w, row.config.size());
  }
  std::size_t used = 0;
  for (std::size_t w : width) used += w + 2;
  const std::size_t left = options.width > used ? options.width - used : 0;
  config_w = std::min(config_w, std::max<std::size_t>(left / 2, 8));
  std::map<std::string, std::string> tags;  // config text -> "c1"
  std::vector<std::string> legend;
  // One row's config too long: every row gets a tag, so the column reads
  // one way.
  bool tag_all = false;
  for (std::size_t i = 1; i < rows.size(); ++i) tag_all |= rows[i].config.size() > config_w;
  for (std::size_t i = 1; i < rows.size() && tag_all; ++i) {
    Row& row = rows[i];
    if (row.config.empty()) continue;
    auto [it, fresh] = tags.emplace(row.config, "c" + std::to_string(tags.size() + 1));
    if (fresh) legend.push_back(it->second + ": " + row.config);
    row.config = it->second;
  }
  // Tags are short: the other measured fields get what config left over.
  std::size_t config_used = 0;
  for (const Row& row : rows) config_used = std::max(config_used, row.config.size());
  const std::size_t rest_w = left > config_used + 2 ? left - config_used - 2 : 0;
  for (const Row& row : rows) {
    std::string line;
    for (std::size_t c = 0; c < 5; ++c) {
      std::string cell = row.fixed[c];
      cell.resize(width[c], ' ');
      line += cell + "  ";
    }
    std::string cfg = row.config;
    cfg.resize(config_used, ' ');
    line += cfg;
    if (rest_w > 0) line += "  " + Cut(row.rest, rest_w);
    while (!line.empty() && line.back() == ' ') line.pop_back();
    out += line + "\n";
  }
  for (const auto& l : legend) {
    for (const auto& w : Wrap(l, options.width)) out += w + "\n";
  }
  for (std::size_t i = 0; i < records.size(); ++i) {
    const Record& r = records[i];
    if (!NeedsDetails(r)) continue;
    out += std::string("! ") + r.variant + " (" + ToString(r.kind) + ", W=" +
           std::to_string(r.world_size) + "): " + ToString(r.verdict) +
           (r.verdict == ExpectedVerdict(r) ? "" : std::string(", expected ") +
                                                        ToString(ExpectedVerdict(r))) + "\n";
    if (!r.error.empty()) Indented(out, "error", r.error);
    for (const char* field : {"message", "outcome", "rank_exits", "report"}) {
      const Json* f = r.measured.is_object() ? Find(r.measured, field) : nullptr;
      if (f != nullptr && f->is_string()) Indented(out, field, f->get<std::string>());
    }
  }
  if (options.verbose) {
    for (std::size_t i = 0; i < records.size(); ++i) {
      const Record& r = records[i];
      out += "[" + std::to_string(i + 1) + "] " + ToString(r.kind) + " " + r.variant + " " +
             r.backend + " W=" + std::to_string(r.world_size) + ": " + ToString(r.verdict) + "\n";
      if (!r.error.empty()) Indented(out, "error", r.error);
      Fields(out, "config", r.config);
      Fields(out, "reference", r.reference);
      Fields(out, "measured", r.measured);
    }
  }
  return out;
}

}  // namespace ddp::results
