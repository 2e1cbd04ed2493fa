#include "core/results/json.h"

#include <cmath>
#include <limits>

#include "gtest/gtest.h"

namespace ddp::results {
namespace {

TEST(JsonTest, ObjectsKeepInsertionOrderAndNest) {
  Json j;
  j["b"] = 1;
  j["a"] = "x\"y\n";
  j["b"] = 2;  // overwrite keeps position
  Json arr;
  arr.Push(true);
  arr.Push(nullptr);
  j["c"] = arr;
  EXPECT_EQ(j.Dump(), R"({"b":2,"a":"x\"y\n","c":[true,null]})");
}

TEST(JsonTest, DoublesRoundTripWith17Digits) {
  Json j = 0.1;
  EXPECT_EQ(j.Dump(), "0.10000000000000001");
  const double third = 1.0 / 3.0;
  EXPECT_EQ(std::stod(Json(third).Dump()), third);
}

TEST(JsonTest, NonFiniteNumbersBecomeStrings) {
  EXPECT_EQ(Json(std::numeric_limits<double>::quiet_NaN()).Dump(), "\"nan\"");
  EXPECT_EQ(Json(-std::numeric_limits<double>::infinity()).Dump(), "\"-inf\"");
}

TEST(JsonTest, PrettyPrint) {
  Json j;
  j["k"] = Json::Array{1, 2};
  EXPECT_EQ(j.Dump(2), "{\n  \"k\": [\n    1,\n    2\n  ]\n}");
  EXPECT_EQ(Json::MakeObject().Dump(2), "{}");
}

TEST(JsonTest, ParseRoundTrips) {
  Json j;
  j["a"] = 1;
  j["b"] = Json::Array{0.1, "x\"\n", true, nullptr, Json::MakeObject()};
  j["c"] = -2.5e-300;
  j["d"] = std::numeric_limits<double>::quiet_NaN();
  const Json back = ParseJson(j.Dump(2));
  EXPECT_EQ(back.Dump(), j.Dump());
  EXPECT_EQ(back.Find("c")->AsDouble(), -2.5e-300);
  EXPECT_TRUE(std::isnan(back.Find("d")->AsDouble()));
  EXPECT_EQ(back.Find("zz"), nullptr);
}

TEST(JsonTest, ParseRejectsMalformedText) {
  for (const char* bad : {"", "{", "[1,", "{\"a\" 1}", "tru", "\"abc", "1 2", "{1:2}"}) {
    EXPECT_THROW(ParseJson(bad), std::invalid_argument) << bad;
  }
}

}  // namespace
}  // namespace ddp::results
