// Strict decimal numbers for flags and environment variables: the whole text,
// plain decimal notation only. strtod alone also takes "0x10" (16), "inf",
// "nan" and leading blanks, and strtoll takes " 5" and "+5": a value a user
// did not mean is accepted silently.
#pragma once

#include <cstdint>
#include <string>

namespace ddp::cli {

// [-]DIGITS[.DIGITS][(e|E)[+|-]DIGITS] (or [-].DIGITS...), finite. False
// for anything else, e.g. "", " 1", "+1", "0x10", "1e", "inf", "nan",
// "1e999".
bool ParseDecimal(const std::string& text, double* out);

// [-]DIGITS within int64. False for anything else ("+1", " 1", "0x10", "1.0").
bool ParseDecimalInt64(const std::string& text, std::int64_t* out);

}  // namespace ddp::cli
