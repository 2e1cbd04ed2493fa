#include "fixes/autograd_lost_gather/fix_run.h"
#include "core/testing/backend.h"
#include "gtest/gtest.h"
TEST(X, Y) { DDP_REQUIRE_BACKEND(); }
