#include "core/results/json.h"

#include <cmath>
#include <cstdio>

namespace ddp::results {

Json& Json::operator[](const std::string& key) {
  if (std::holds_alternative<std::nullptr_t>(value_)) value_ = Object{};
  auto& obj = std::get<Object>(value_);
  for (auto& [k, v] : obj) {
    if (k == key) return v;
  }
  obj.emplace_back(key, Json());
  return obj.back().second;
}

void Json::Push(Json v) {
  if (std::holds_alternative<std::nullptr_t>(value_)) value_ = Array{};
  std::get<Array>(value_).push_back(std::move(v));
}

std::string JsonQuote(const std::string& s) {
  std::string out = "\"";
  for (const char c : s) {
    switch (c) {
      case '"': out += "\\\""; break;
      case '\\': out += "\\\\"; break;
      case '\n': out += "\\n"; break;
      case '\r': out += "\\r"; break;
      case '\t': out += "\\t"; break;
      default:
        if (static_cast<unsigned char>(c) < 0x20) {
          char buf[8];
          std::snprintf(buf, sizeof buf, "\\u%04x", c);
          out += buf;
        } else {
          out += c;
        }
    }
  }
  return out + "\"";
}

namespace {

std::string NumberText(double d) {
  if (std::isnan(d)) return "\"nan\"";
  if (std::isinf(d)) return d > 0 ? "\"inf\"" : "\"-inf\"";
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.17g", d);
  return buf;
}

void Newline(std::string& out, int indent, int depth) {
  if (indent < 0) return;
  out += '\n';
  out.append(static_cast<std::size_t>(indent * depth), ' ');
}

}  // namespace

void Json::DumpTo(std::string& out, int indent, int depth) const {
  if (std::holds_alternative<std::nullptr_t>(value_)) {
    out += "null";
  } else if (const bool* b = std::get_if<bool>(&value_)) {
    out += *b ? "true" : "false";
  } else if (const auto* i = std::get_if<std::int64_t>(&value_)) {
    out += std::to_string(*i);
  } else if (const double* d = std::get_if<double>(&value_)) {
    out += NumberText(*d);
  } else if (const auto* s = std::get_if<std::string>(&value_)) {
    out += JsonQuote(*s);
  } else if (const auto* a = std::get_if<Array>(&value_)) {
    out += '[';
    for (std::size_t k = 0; k < a->size(); ++k) {
      if (k > 0) out += ',';
      Newline(out, indent, depth + 1);
      (*a)[k].DumpTo(out, indent, depth + 1);
    }
    if (!a->empty()) Newline(out, indent, depth);
    out += ']';
  } else {
    const auto& o = std::get<Object>(value_);
    out += '{';
    for (std::size_t k = 0; k < o.size(); ++k) {
      if (k > 0) out += ',';
      Newline(out, indent, depth + 1);
      out += JsonQuote(o[k].first);
      out += indent < 0 ? ":" : ": ";
      o[k].second.DumpTo(out, indent, depth + 1);
    }
    if (!o.empty()) Newline(out, indent, depth);
    out += '}';
  }
}

std::string Json::Dump(int indent) const {
  std::string out;
  DumpTo(out, indent, 0);
  return out;
}

}  // namespace ddp::results
