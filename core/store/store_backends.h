// The two store implementations behind OpenStore (store.h); internal to
// //core/store.
#pragma once

#include <chrono>
#include <memory>
#include <string>

#include "core/store/store.h"

namespace ddp::store {

// A directory: one file per key. Throws StoreError when it cannot be used.
std::shared_ptr<Store> MakeFileStore(const std::string& dir, std::chrono::milliseconds timeout);

// A Redis server: connects and PINGs within `timeout`; throws StoreError.
std::shared_ptr<Store> MakeRedisStore(const RedisAddress& addr, std::chrono::milliseconds timeout);

}  // namespace ddp::store
