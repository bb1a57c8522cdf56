// Whether this build runs under AddressSanitizer or ThreadSanitizer, and which: the allocator is
// then the sanitizer's, not glibc's. (GCC says so with __SANITIZE_*__, clang with __has_feature.)
#pragma once

namespace cuckood::core {

#if defined(__SANITIZE_ADDRESS__)
inline constexpr const char* kSanitizer = "asan";
#elif defined(__SANITIZE_THREAD__)
inline constexpr const char* kSanitizer = "tsan";
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
inline constexpr const char* kSanitizer = "asan";
#elif __has_feature(thread_sanitizer)
inline constexpr const char* kSanitizer = "tsan";
#else
inline constexpr const char* kSanitizer = nullptr;
#endif
#else
inline constexpr const char* kSanitizer = nullptr;
#endif

inline constexpr bool kSanitized = kSanitizer != nullptr;

}  // namespace cuckood::core
