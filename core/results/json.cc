#include "core/results/json.h"

#include <stdexcept>

namespace ddp::results {

double JsonSerializer<double, void>::NonFiniteFromString(const std::string& s) {
  if (s == "nan") return std::numeric_limits<double>::quiet_NaN();
  if (s == "inf") return std::numeric_limits<double>::infinity();
  if (s == "-inf") return -std::numeric_limits<double>::infinity();
  throw Json::type_error::create(302, "type must be number, but is string \"" + s + "\"",
                                 nullptr);
}

const Json* Find(const Json& j, std::string_view key) {
  if (!j.is_object()) return nullptr;
  const auto it = j.find(std::string(key));
  return it == j.end() ? nullptr : &*it;
}

std::string Dump(const Json& j, int indent) {
  return j.dump(indent, ' ', false, Json::error_handler_t::replace);
}

Json ParseJson(const std::string& text) {
  try {
    return Json::parse(text);
  } catch (const Json::parse_error& e) {
    // e.what() names the byte offset and what was expected there.
    throw std::invalid_argument(std::string("JSON: ") + e.what());
  }
}

std::string JsonQuote(const std::string& s) { return Dump(Json(s)); }

}  // namespace ddp::results
