// A minimal JSON value for writing result records: objects keep insertion
// order (so records read the same way every run), numbers print with 17
// significant digits (so a double round-trips exactly), and non-finite
// numbers, which JSON cannot hold, are written as strings ("nan", "inf").
#pragma once

#include <cstdint>
#include <initializer_list>
#include <string>
#include <utility>
#include <variant>
#include <vector>

namespace ddp::results {

class Json {
 public:
  using Array = std::vector<Json>;
  using Object = std::vector<std::pair<std::string, Json>>;

  Json() : value_(nullptr) {}
  Json(std::nullptr_t) : value_(nullptr) {}
  Json(bool b) : value_(b) {}
  Json(int i) : value_(static_cast<std::int64_t>(i)) {}
  Json(long i) : value_(static_cast<std::int64_t>(i)) {}
  Json(long long i) : value_(static_cast<std::int64_t>(i)) {}
  Json(unsigned i) : value_(static_cast<std::int64_t>(i)) {}
  Json(unsigned long i) : value_(static_cast<std::int64_t>(i)) {}
  Json(double d) : value_(d) {}
  Json(const char* s) : value_(std::string(s)) {}
  Json(std::string s) : value_(std::move(s)) {}
  Json(Array a) : value_(std::move(a)) {}

  static Json MakeObject() { return Json(Object{}); }
  static Json MakeArray() { return Json(Array{}); }

  // Object access: appends the key if absent (keeps first-insertion order).
  Json& operator[](const std::string& key);
  // Array append.
  void Push(Json v);

  bool IsNull() const { return std::holds_alternative<std::nullptr_t>(value_); }
  bool IsNumber() const {
    return std::holds_alternative<double>(value_) || std::holds_alternative<std::int64_t>(value_);
  }
  bool IsString() const { return std::holds_alternative<std::string>(value_); }
  bool IsBool() const { return std::holds_alternative<bool>(value_); }
  bool IsObject() const { return std::holds_alternative<Object>(value_); }
  bool IsArray() const { return std::holds_alternative<Array>(value_); }
  const Object& AsObject() const { return std::get<Object>(value_); }
  const Array& AsArray() const { return std::get<Array>(value_); }
  const std::string& AsString() const { return std::get<std::string>(value_); }
  bool AsBool() const { return std::get<bool>(value_); }
  // Numbers (and the strings "nan", "inf", "-inf" that Dump writes for them).
  double AsDouble() const;
  // Object lookup without inserting; nullptr when absent or not an object.
  const Json* Find(const std::string& key) const;

  // Serialises; indent < 0 gives one line, otherwise pretty-printed.
  std::string Dump(int indent = -1) const;

 private:
  explicit Json(Object o) : value_(std::move(o)) {}
  void DumpTo(std::string& out, int indent, int depth) const;

  std::variant<std::nullptr_t, bool, std::int64_t, double, std::string, Array, Object> value_;
};

// Parses JSON text (as written by Dump, or any standard JSON). Throws
// std::invalid_argument with the byte offset on malformed input.
Json ParseJson(const std::string& text);

// Quotes and escapes a string for JSON.
std::string JsonQuote(const std::string& s);

}  // namespace ddp::results
