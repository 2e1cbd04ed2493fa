#include "core/results/json.h"

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <limits>
#include <stdexcept>

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

double Json::AsDouble() const {
  if (const double* d = std::get_if<double>(&value_)) return *d;
  if (const auto* i = std::get_if<std::int64_t>(&value_)) return static_cast<double>(*i);
  const std::string& s = std::get<std::string>(value_);
  if (s == "nan") return std::numeric_limits<double>::quiet_NaN();
  if (s == "inf") return std::numeric_limits<double>::infinity();
  if (s == "-inf") return -std::numeric_limits<double>::infinity();
  throw std::invalid_argument("not a number: " + s);
}

const Json* Json::Find(const std::string& key) const {
  const auto* obj = std::get_if<Object>(&value_);
  if (obj == nullptr) return nullptr;
  for (const auto& [k, v] : *obj) {
    if (k == key) return &v;
  }
  return nullptr;
}

namespace {

class Parser {
 public:
  explicit Parser(const std::string& text) : s_(text) {}

  Json ParseDocument() {
    Json v = ParseValue();
    SkipSpace();
    if (pos_ != s_.size()) Fail("trailing characters");
    return v;
  }

 private:
  [[noreturn]] void Fail(const std::string& what) const {
    throw std::invalid_argument("JSON: " + what + " at byte " + std::to_string(pos_));
  }
  void SkipSpace() {
    while (pos_ < s_.size() && (s_[pos_] == ' ' || s_[pos_] == '\n' || s_[pos_] == '\t' ||
                                s_[pos_] == '\r')) {
      ++pos_;
    }
  }
  bool Eat(const char* word) {
    const std::string w(word);
    if (s_.compare(pos_, w.size(), w) == 0) {
      pos_ += w.size();
      return true;
    }
    return false;
  }
  Json ParseValue() {
    SkipSpace();
    if (pos_ >= s_.size()) Fail("unexpected end");
    const char c = s_[pos_];
    if (c == '{') return ParseObject();
    if (c == '[') return ParseArray();
    if (c == '"') return Json(ParseString());
    if (Eat("true")) return Json(true);
    if (Eat("false")) return Json(false);
    if (Eat("null")) return Json(nullptr);
    return ParseNumber();
  }
  Json ParseObject() {
    ++pos_;
    Json obj = Json::MakeObject();
    SkipSpace();
    if (pos_ < s_.size() && s_[pos_] == '}') {
      ++pos_;
      return obj;
    }
    while (true) {
      SkipSpace();
      if (pos_ >= s_.size() || s_[pos_] != '"') Fail("expected a key");
      const std::string key = ParseString();
      SkipSpace();
      if (pos_ >= s_.size() || s_[pos_] != ':') Fail("expected ':'");
      ++pos_;
      obj[key] = ParseValue();
      SkipSpace();
      if (pos_ < s_.size() && s_[pos_] == ',') {
        ++pos_;
      } else if (pos_ < s_.size() && s_[pos_] == '}') {
        ++pos_;
        return obj;
      } else {
        Fail("expected ',' or '}'");
      }
    }
  }
  Json ParseArray() {
    ++pos_;
    Json arr = Json::MakeArray();
    SkipSpace();
    if (pos_ < s_.size() && s_[pos_] == ']') {
      ++pos_;
      return arr;
    }
    while (true) {
      arr.Push(ParseValue());
      SkipSpace();
      if (pos_ < s_.size() && s_[pos_] == ',') {
        ++pos_;
      } else if (pos_ < s_.size() && s_[pos_] == ']') {
        ++pos_;
        return arr;
      } else {
        Fail("expected ',' or ']'");
      }
    }
  }
  std::string ParseString() {
    ++pos_;
    std::string out;
    while (pos_ < s_.size() && s_[pos_] != '"') {
      char c = s_[pos_++];
      if (c == '\\') {
        if (pos_ >= s_.size()) Fail("bad escape");
        const char e = s_[pos_++];
        switch (e) {
          case 'n': c = '\n'; break;
          case 't': c = '\t'; break;
          case 'r': c = '\r'; break;
          case 'b': c = '\b'; break;
          case 'f': c = '\f'; break;
          case 'u': {
            if (pos_ + 4 > s_.size()) Fail("bad \\u escape");
            const long code = std::strtol(s_.substr(pos_, 4).c_str(), nullptr, 16);
            pos_ += 4;
            if (code >= 0x80) Fail("non-ASCII \\u escape");
            c = static_cast<char>(code);
            break;
          }
          default: c = e;
        }
      }
      out += c;
    }
    if (pos_ >= s_.size()) Fail("unterminated string");
    ++pos_;
    return out;
  }
  Json ParseNumber() {
    const std::size_t start = pos_;
    bool is_int = true;
    if (pos_ < s_.size() && (s_[pos_] == '-' || s_[pos_] == '+')) ++pos_;
    while (pos_ < s_.size()) {
      const char c = s_[pos_];
      if (c >= '0' && c <= '9') {
        ++pos_;
      } else if (c == '.' || c == 'e' || c == 'E' || c == '-' || c == '+') {
        is_int = false;
        ++pos_;
      } else {
        break;
      }
    }
    const std::string text = s_.substr(start, pos_ - start);
    if (text.empty() || text == "-") Fail("unexpected character");
    char* end = nullptr;
    if (is_int) {
      const long long v = std::strtoll(text.c_str(), &end, 10);
      if (*end != '\0') Fail("bad number");
      return Json(v);
    }
    const double d = std::strtod(text.c_str(), &end);
    if (*end != '\0') Fail("bad number");
    return Json(d);
  }

  const std::string& s_;
  std::size_t pos_ = 0;
};

}  // namespace

Json ParseJson(const std::string& text) { return Parser(text).ParseDocument(); }

std::string Json::Dump(int indent) const {
  std::string out;
  DumpTo(out, indent, 0);
  return out;
}

}  // namespace ddp::results
