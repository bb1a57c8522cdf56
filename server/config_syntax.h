// The syntax of config file lines, shared by the loader (config.cc) and CONFIG REWRITE
// (config_rewrite.cc). Not for the command handlers: they see options through OptionRow.
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace cuckood::server {

// Splits a line into arguments as Redis config lines are split (quotes and escapes); nullopt on
// unbalanced quotes.
std::optional<std::vector<std::string>> SplitConfigArgs(std::string_view line);
// One argument as a config line writes it: plain when safe, otherwise double-quoted.
std::string QuoteConfigArg(const std::string& arg);
// How many arguments (min, max) a directive takes on one line.
std::pair<size_t, size_t> ConfigArgCount(const std::string& name);

}  // namespace cuckood::server
