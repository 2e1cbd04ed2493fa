#include "core/results/json.h"

#include <cmath>
#include <limits>
#include <stdexcept>

#include "gtest/gtest.h"

namespace ddp::results {
namespace {

struct RowResult {
  double auc = 0;
  std::int64_t steps = 0;
  std::vector<double> curve;
  bool skipped = false;
};
DDP_JSON_FIELDS(RowResult, auc, steps, curve, skipped)

TEST(JsonTest, ObjectsKeepInsertionOrderAndNest) {
  Json j;
  j["b"] = 1;
  j["a"] = "x\"y\n";
  j["b"] = 2;  // overwrite keeps position
  Json arr;
  arr.push_back(true);
  arr.push_back(nullptr);
  j["c"] = arr;
  EXPECT_EQ(Dump(j), R"({"b":2,"a":"x\"y\n","c":[true,null]})");
}

TEST(JsonTest, DoublesRoundTripExactly) {
  for (const double d : {0.1, 1.0 / 3.0, -2.5e-300, 1e300, 5e-324, 0.30000000000000004,
                         std::numeric_limits<double>::max()}) {
    EXPECT_EQ(ParseJson(Dump(Json(d))).get<double>(), d) << Dump(Json(d));
  }
  EXPECT_EQ(Dump(Json(0.1)), "0.1");  // the shortest text that reads back the same
}

TEST(JsonTest, IntegralDoublesPrintAsIntegers) {
  EXPECT_EQ(Dump(Json(3.0)), "3");
  EXPECT_EQ(Dump(Json(-1e15)), "-1000000000000000");
  EXPECT_EQ(Dump(Json(-0.0)), "-0.0");                 // the sign survives
  EXPECT_EQ(Dump(Json(1e300)), "1e+300");              // beyond 2^53: a double
  EXPECT_EQ(Json(3.0).get<double>(), 3.0);
}

TEST(JsonTest, NonFiniteNumbersBecomeStringsAndReadBack) {
  EXPECT_EQ(Dump(Json(std::numeric_limits<double>::quiet_NaN())), "\"nan\"");
  EXPECT_EQ(Dump(Json(-std::numeric_limits<double>::infinity())), "\"-inf\"");
  EXPECT_TRUE(std::isnan(Json("nan").get<double>()));
  EXPECT_EQ(Json("inf").get<double>(), std::numeric_limits<double>::infinity());
  EXPECT_THROW((void)Json("abc").get<double>(), Json::type_error);
}

TEST(JsonTest, PrettyPrint) {
  Json j;
  j["k"] = Json::array({1, 2});
  EXPECT_EQ(Dump(j, 2), "{\n  \"k\": [\n    1,\n    2\n  ]\n}");
  EXPECT_EQ(Dump(Json::object(), 2), "{}");
}

TEST(JsonTest, ParseRoundTrips) {
  Json j;
  j["a"] = 1;
  j["b"] = Json::array({0.1, "x\"\n", true, nullptr, Json::object()});
  j["c"] = -2.5e-300;
  j["d"] = std::numeric_limits<double>::quiet_NaN();
  const Json back = ParseJson(Dump(j, 2));
  EXPECT_EQ(Dump(back), Dump(j));
  EXPECT_EQ(back.at("c").get<double>(), -2.5e-300);
  EXPECT_TRUE(std::isnan(back.at("d").get<double>()));
  EXPECT_EQ(Find(back, "zz"), nullptr);
  EXPECT_EQ(Find(back.at("a"), "zz"), nullptr);  // not an object
}

TEST(JsonTest, AWrongKeyIsAnErrorNamingIt) {
  const Json j = ParseJson(R"({"auc": 0.5})");
  try {
    (void)j.at("acu");
    FAIL() << "no exception";
  } catch (const std::exception& e) {
    EXPECT_NE(std::string(e.what()).find("'acu'"), std::string::npos) << e.what();
  }
}

TEST(JsonTest, StructsBothWaysFromOneFieldList) {
  const RowResult row{0.25, 7, {1.5, std::numeric_limits<double>::quiet_NaN()}, true};
  const Json j = row;
  EXPECT_EQ(Dump(j), R"({"auc":0.25,"steps":7,"curve":[1.5,"nan"],"skipped":true})");
  const RowResult back = ParseJson(Dump(j)).get<RowResult>();
  EXPECT_EQ(back.auc, 0.25);
  EXPECT_EQ(back.steps, 7);
  ASSERT_EQ(back.curve.size(), 2u);
  EXPECT_TRUE(std::isnan(back.curve[1]));
  EXPECT_TRUE(back.skipped);
  try {
    (void)ParseJson(R"({"auc":0.25,"steps":7,"curve":[]})").get<RowResult>();
    FAIL() << "no exception";
  } catch (const Json::out_of_range& e) {
    EXPECT_NE(std::string(e.what()).find("'skipped'"), std::string::npos) << e.what();
  }
}

TEST(JsonTest, InvalidUtf8IsReplacedNotThrown) {
  const std::string bad = "rank 1: \xff\xfe";
  EXPECT_EQ(Dump(Json(bad)), "\"rank 1: \xEF\xBF\xBD\xEF\xBF\xBD\"");
}

TEST(JsonTest, ParseRejectsMalformedText) {
  for (const char* bad : {"", "{", "[1,", "{\"a\" 1}", "tru", "\"abc", "1 2", "{1:2}"}) {
    EXPECT_THROW(ParseJson(bad), std::invalid_argument) << bad;
  }
}

}  // namespace
}  // namespace ddp::results
