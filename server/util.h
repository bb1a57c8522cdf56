// Small helpers shared by the command families: Redis's strict integer parsing, case folding,
// and the one place where storage results become reply text.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "resp/writer.h"
#include "storage/status.h"

namespace cuckood::server {

inline constexpr std::string_view kWrongTypeError =
    "WRONGTYPE Operation against a key holding the wrong kind of value";
inline constexpr std::string_view kSyntaxError = "ERR syntax error";
inline constexpr std::string_view kNotIntegerError = "ERR value is not an integer or out of range";
// Redis's texts for storage reasons (ErrorText); the CF.* ones are in server/commands/cf_errors.h.
inline constexpr std::string_view kNoSuchKeyError = "ERR no such key";
inline constexpr std::string_view kSameObjectError =
    "ERR source and destination objects are the same";
inline constexpr std::string_view kBadDataFormatError = "ERR Bad data format";

// Redis string2ll: optional '-', digits, no '+', no spaces, no leading zeros, fits int64.
std::optional<int64_t> ParseInt64(std::string_view s);
// Redis string2ull-like for non-negative values.
std::optional<uint64_t> ParseUint64(std::string_view s);
// Redis's strtold-based parsing for doubles (no spaces, finite unless inf allowed).
std::optional<double> ParseDouble(std::string_view s);

std::string ToLower(std::string_view s);
std::string ToUpper(std::string_view s);
bool EqualsIgnoreCase(std::string_view a, std::string_view b);

// The one place where a failed storage status becomes reply text: the text of its reason
// (storage::Reason) when it has one; otherwise kWrongType -> the WRONGTYPE text, I/O, busy and
// corruption -> "ERR <diagnostic>", and a reasonless kInvalid / kNotFound / kExists (made outside
// storage, by cluster/) -> its message. kOk -> "ERR internal error".
std::string ErrorText(const storage::Status& status);
// The text of one reason; empty for kNone.
std::string_view ReasonText(storage::Reason reason);

// Writes ErrorText(status) as the error reply; I/O, busy and corruption statuses are logged.
void ReplyStatusError(resp::Writer& out, const storage::Status& status);

// Redis's "ERR wrong number of arguments for 'name' command".
std::string ArityError(std::string_view name);

}  // namespace cuckood::server
