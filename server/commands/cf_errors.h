// The CF.* reply texts that stand for a storage::Reason, worded exactly as RedisBloom 2.8 words
// them (redisbloom-cf-reference.md). ErrorText (server/util.h) writes them; the argument-check
// texts, which storage never sees, are at the top of cf.cc.
#pragma once

#include <string_view>

namespace cuckood::server {

inline constexpr std::string_view kCfItemExists = "ERR item exists";
inline constexpr std::string_view kCfNotFound = "ERR not found";
inline constexpr std::string_view kCfDelNotFound = "Not found";
inline constexpr std::string_view kCfCompactNotFound = "Cuckoo filter was not found";
inline constexpr std::string_view kCfCreateTooLarge = "ERR Insufficient memory to create filter";
inline constexpr std::string_view kCfBadHeader = "Invalid header";
inline constexpr std::string_view kCfCreateFailed = "Couldn't create filter!";
inline constexpr std::string_view kCfBadChunk = "Couldn't load chunk!";

}  // namespace cuckood::server
