#include "core/cli/number.h"

#include <cerrno>
#include <cmath>
#include <cstdlib>

namespace ddp::cli {
namespace {

bool IsDigit(char c) { return c >= '0' && c <= '9'; }

// Skips digits from `i`; returns how many.
std::size_t Digits(const std::string& s, std::size_t* i) {
  const std::size_t start = *i;
  while (*i < s.size() && IsDigit(s[*i])) ++*i;
  return *i - start;
}

}  // namespace

bool ParseDecimal(const std::string& text, double* out) {
  std::size_t i = 0;
  if (i < text.size() && text[i] == '-') ++i;
  std::size_t mantissa = Digits(text, &i);
  if (i < text.size() && text[i] == '.') {
    ++i;
    mantissa += Digits(text, &i);
  }
  if (mantissa == 0) return false;
  if (i < text.size() && (text[i] == 'e' || text[i] == 'E')) {
    ++i;
    if (i < text.size() && (text[i] == '+' || text[i] == '-')) ++i;
    if (Digits(text, &i) == 0) return false;
  }
  if (i != text.size()) return false;
  // Overflow gives inf (refused); underflow a tiny or zero value, which the
  // caller's range check judges.
  const double v = std::strtod(text.c_str(), nullptr);
  if (!std::isfinite(v)) return false;
  *out = v;
  return true;
}

bool ParseDecimalInt64(const std::string& text, std::int64_t* out) {
  std::size_t i = 0;
  if (i < text.size() && text[i] == '-') ++i;
  if (Digits(text, &i) == 0 || i != text.size()) return false;
  errno = 0;
  const long long v = std::strtoll(text.c_str(), nullptr, 10);
  if (errno == ERANGE) return false;
  *out = v;
  return true;
}

}  // namespace ddp::cli
