#include "repro/autograd_lost_gather/variants.h"
#include "core/testing/backend.h"
#include "gtest/gtest.h"
TEST(X, Y) { DDP_REQUIRE_BACKEND(); }
