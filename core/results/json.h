// The JSON value of result records, rank results and benchmark side files:
// nlohmann::json (Debian's nlohmann-json3-dev, header-only), in its
// insertion-ordered form, so records read the same way every run.
//
// Two choices are ours, and both live in the type, so no call site can
// forget them:
//  - non-finite numbers, which JSON cannot hold, are stored as the strings
//    "nan", "inf", "-inf" (nlohmann would write null and lose which one), and
//    get<double>() reads those strings back as the numbers;
//  - Dump() replaces invalid UTF-8 (a rank's stderr can carry any bytes)
//    instead of throwing, as nlohmann's dump() would.
// Doubles are written in the shortest form that reads back to the same
// double (nlohmann's Grisu2), so every double round-trips exactly; an
// integral one (|d| <= 2^53, not -0) is stored and written as an integer.
//
// Access: j.at("key") throws json::out_of_range naming the missing key (an
// error record, never a crash); Find() is the lookup for keys that may be
// absent.
#pragma once

#include <cmath>
#include <cstdint>
#include <limits>
#include <map>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

namespace ddp::results {

// Everything but double converts as nlohmann does by default.
template <typename T, typename SFINAE = void>
struct JsonSerializer : nlohmann::adl_serializer<T, SFINAE> {};

template <>
struct JsonSerializer<double, void> {
  template <typename BasicJson>
  static void to_json(BasicJson& j, double d) {
    if (std::isnan(d)) {
      j = "nan";
    } else if (std::isinf(d)) {
      j = d > 0 ? "inf" : "-inf";
    } else if (d == std::trunc(d) && std::fabs(d) <= kMaxExactInteger &&
               !(d == 0 && std::signbit(d))) {
      // An integral double prints as an integer ("3", not "3.0"), as the
      // records have always read; get<double>() gives the same double back.
      nlohmann::to_json(j, static_cast<std::int64_t>(d));
    } else {
      nlohmann::to_json(j, d);  // the number itself (not through this serializer)
    }
  }
  template <typename BasicJson>
  static void from_json(const BasicJson& j, double& d) {
    if (j.is_string()) {
      d = NonFiniteFromString(j.template get_ref<const std::string&>());
    } else {
      nlohmann::from_json(j, d);  // any number; other types throw type_error
    }
  }
  static constexpr double kMaxExactInteger = 9007199254740992.0;  // 2^53
  // "nan", "inf" or "-inf"; anything else throws json::type_error.
  static double NonFiniteFromString(const std::string& s);
};

using Json = nlohmann::basic_json<nlohmann::ordered_map, std::vector, std::string, bool,
                                  std::int64_t, std::uint64_t, double, std::allocator,
                                  JsonSerializer>;

// The member `key` of `j`, or nullptr when `j` is not an object or lacks it.
const Json* Find(const Json& j, std::string_view key);

// Serialises: indent < 0 gives one line, otherwise pretty-printed with that
// many spaces; invalid UTF-8 in strings becomes U+FFFD.
std::string Dump(const Json& j, int indent = -1);

// Parses JSON text. Throws std::invalid_argument naming the line and column
// on malformed input.
Json ParseJson(const std::string& text);

// Quotes and escapes a string for JSON.
std::string JsonQuote(const std::string& s);

}  // namespace ddp::results

// A struct's JSON form both ways, from one list of its members (each key is
// the member's name), so the writer and the reader of a rank result cannot
// disagree on a key:
//
//   struct RowResult { double auc = 0; std::int64_t steps = 0; };
//   DDP_JSON_FIELDS(RowResult, auc, steps)   // beside it, same namespace
//
//   results::Json j = row;                      // rank side
//   RowResult back = j.get<RowResult>();        // reader; a missing key
//                                               // throws naming it
#define DDP_JSON_FIELDS(Type, ...)                                                    \
  inline void to_json(::ddp::results::Json& nlohmann_json_j, const Type& nlohmann_json_t) { \
    NLOHMANN_JSON_EXPAND(NLOHMANN_JSON_PASTE(NLOHMANN_JSON_TO, __VA_ARGS__))          \
  }                                                                                   \
  inline void from_json(const ::ddp::results::Json& nlohmann_json_j, Type& nlohmann_json_t) { \
    NLOHMANN_JSON_EXPAND(NLOHMANN_JSON_PASTE(NLOHMANN_JSON_FROM, __VA_ARGS__))        \
  }
