// Configuration files: TOML text checked before the parser sees it, and turned into the
// command-line arguments it stands for, checked against the same option definitions as the CLI.

#include "apps/options/config_file.hpp"

#include <toml.hpp>

#include <cstdio>
#include <fstream>
#include <sstream>
#include <string_view>
#include <utility>
#include <vector>

namespace shardopt::apps {

namespace {

/// How deep a configuration may nest arrays and inline tables, counting the dots of the keys on
/// the way (`a.b = [[1]]` is 3 deep). Real configurations need 3 ([sweep] with `grid = { lambda =
/// [...] }`). toml11 3.7 parses nesting by recursion and dotted keys in quadratic time: a 40 KB file
/// of '[' overflows the stack, a 60 KB dotted key takes 12 s. Deeper files are refused before it
/// sees them.
constexpr std::size_t max_config_depth = 32;

/// The length of the UTF-8 sequence at the start of `text`; 0 when it is not one (a stray
/// continuation byte, a truncated sequence, an overlong form, a surrogate, past U+10FFFF).
std::size_t utf8_length(std::string_view text) {
  const auto byte = [&](std::size_t i) { return static_cast<unsigned char>(text[i]); };
  const unsigned char first = byte(0);
  if (first < 0x80)
    return 1;
  std::size_t length = 0;
  unsigned char low = 0x80;  // the range of the second byte, narrowed against overlong forms,
  unsigned char high = 0xbf; // surrogates and code points past U+10FFFF
  if (first >= 0xc2 && first <= 0xdf)
    length = 2;
  else if (first >= 0xe0 && first <= 0xef) {
    length = 3;
    low = first == 0xe0 ? 0xa0 : 0x80;
    high = first == 0xed ? 0x9f : 0xbf;
  } else if (first >= 0xf0 && first <= 0xf4) {
    length = 4;
    low = first == 0xf0 ? 0x90 : 0x80;
    high = first == 0xf4 ? 0x8f : 0xbf;
  } else
    return 0;
  if (text.size() < length || byte(1) < low || byte(1) > high)
    return 0;
  for (std::size_t i = 2; i < length; ++i)
    if (byte(i) < 0x80 || byte(i) > 0xbf)
      return 0;
  return length;
}

/// The index just past the TOML string whose opening quote is `text[start]` (basic "..." with
/// escapes, literal '...', and their multi-line forms with three quotes), counting the newlines it
/// holds into `line`. A single-line string ends at the end of its line at the latest; an
/// unterminated multi-line string at the end of the text.
std::size_t string_end(std::string_view text, std::size_t start, std::size_t& line) {
  const char quote = text[start];
  const std::string triple(3, quote);
  const bool multiline = text.compare(start, 3, triple) == 0;
  for (std::size_t i = start + (multiline ? 3 : 1); i < text.size(); ++i) {
    const char c = text[i];
    if (c == '\\' && quote == '"' && i + 1 < text.size()) {
      if (text[++i] == '\n') {
        if (!multiline)
          return i;
        ++line;
      }
    } else if (c == '\n') {
      if (!multiline)
        return i;
      ++line;
    } else if (c == quote && !multiline) {
      return i + 1;
    } else if (c == quote && text.compare(i, 3, triple) == 0) {
      // Up to two more quotes belong to the string: """a""""" ends with a quote inside.
      std::size_t end = i + 3;
      while (end < text.size() && end < i + 5 && text[end] == quote)
        ++end;
      return end;
    }
  }
  return text.size();
}

/// Checks what toml11 3.7 must not be given: text that is not valid UTF-8 (as TOML requires; toml11
/// reads out of bounds on invalid UTF-8 in a literal string) and nesting deeper than
/// `max_config_depth`. Brackets, braces and dots inside strings and comments do not count. Errors:
/// "<name>:<line>: not valid UTF-8 ...", "<name>:<line>: nested more than 32 levels deep ...".
result<void> check_config_text(std::string_view text, const std::string& name) {
  std::size_t line = 1;
  const auto at = [&] { return name + ":" + std::to_string(line) + ": "; };
  for (std::size_t i = 0; i < text.size();) {
    const auto length = utf8_length(text.substr(i));
    if (length == 0)
      return fail_invalid(at() + "not valid UTF-8 (a TOML file must be)");
    line += text[i] == '\n' ? 1 : 0;
    i += length;
  }

  // The depth is the open arrays and inline tables plus the dots of the keys leading into them.
  // Each open one remembers the key dots counted when it opened.
  line = 1;
  std::vector<std::pair<char, std::size_t>> open;
  bool at_key = true;  // a line's start outside values, or in an inline table after '{' or ','
  std::size_t key_dots = 0;
  const auto too_deep = [&] { return open.size() + key_dots > max_config_depth; };
  const auto deep = [&] {
    return fail_invalid(at() + "nested more than " + std::to_string(max_config_depth) +
                " levels deep (arrays, inline tables and dotted keys); a configuration needs a few");
  };
  for (std::size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (c == '\n') {
      ++line;
      if (open.empty()) {
        at_key = true;
        key_dots = 0;
      }
    } else if (c == '#') {
      const auto newline = text.find('\n', i);
      if (newline == std::string_view::npos)
        break;
      i = newline - 1;
    } else if (c == '"' || c == '\'') {
      i = string_end(text, i, line) - 1;
    } else if (c == '}' && !open.empty() && open.back().first == '{') {
      key_dots = open.back().second;
      open.pop_back();
      at_key = false;
    } else if (at_key) {
      // Brackets here belong to a table header ([a.b] or [[a.b]]), not to a value.
      if (c == '.' && (++key_dots, too_deep()))
        return deep();
      if (c == '=')
        at_key = false;
    } else if (c == '[' || c == '{') {
      open.emplace_back(c, key_dots);
      if (too_deep())
        return deep();
      at_key = c == '{';
    } else if (c == ']' && !open.empty()) {
      key_dots = open.back().second;
      open.pop_back();
    } else if (c == ',' && !open.empty() && open.back().first == '{') {
      key_dots = open.back().second;
      at_key = true;
    }
  }
  return {};
}

/// One TOML value as command-line text; empty optional for `false` flags.
result<std::vector<std::string>> value_arguments(const std::string& key, const toml::value& value,
                                                 const CLI::Option& option) {
  const bool flag = option.get_expected_max() == 0;
  if (flag) {
    if (!value.is_boolean())
      return fail_invalid("expected true or false for the flag --" + key);
    if (value.as_boolean())
      return std::vector<std::string>{"--" + key};
    return std::vector<std::string>{};
  }
  std::string text;
  if (value.is_string())
    text = value.as_string().str;
  else if (value.is_integer())
    text = std::to_string(value.as_integer());
  else if (value.is_floating()) {
    char buffer[64];
    std::snprintf(buffer, sizeof buffer, "%.17g", value.as_floating());
    text = buffer;
  } else if (value.is_boolean())
    return fail_invalid("--" + key + " takes a value, not true or false");
  else
    return fail_invalid("--" + key + " takes a single value (a string or a number)");
  return std::vector<std::string>{"--" + key, text};
}

std::string where(const std::string& name, const toml::value& value) {
  return name + ":" + std::to_string(value.location().line());
}
} // namespace

result<std::vector<std::string>> config_text_arguments(const std::string& text, const std::string& name,
                                                       const std::string& command, const std::string& skip) {
  if (auto checked = check_config_text(text, name); !checked)
    return checked.error();
  using table_value = toml::basic_value<toml::discard_comments, std::map, std::vector>;
  table_value document;
  try {
    std::istringstream stream{text};
    document = toml::parse<toml::discard_comments, std::map, std::vector>(stream, name);
  } catch (const std::exception& e) {
    return fail_invalid(std::string{e.what()});
  }
  std::vector<std::string> args;
  for (const auto& [key, value] : document.as_table()) {
    if (key == skip || key == "command")
      continue;
    const toml::value plain = toml::get<toml::value>(value);
    auto converted = option_arguments(command, key, plain, "key");
    if (!converted)
      return converted.error().with_context(where(name, plain));
    args.insert(args.end(), converted->begin(), converted->end());
  }
  return args;
}

result<std::vector<std::string>> option_arguments(const std::string& command, const std::string& key,
                                                  const toml::value& value, const std::string& noun) {
  // A parse per key, from the defaults: unknown keys and bad values are caught here, one at a time.
  auto& parser = thread_parser();
  const auto* option = parser.app().get_subcommand(command)->get_option_no_throw("--" + key);
  if (!option || option->get_positional())
    return fail_invalid("unknown " + noun + " '" + key + "' (`shardopt " + command + "` has no option --" + key + ")");
  auto converted = value_arguments(key, value, *option);
  if (!converted)
    return converted.error().with_context(noun + " '" + key + "'");
  std::vector<std::string> probe{command};
  probe.insert(probe.end(), converted->begin(), converted->end());
  try {
    parser.parse(probe);
  } catch (const CLI::RequiredError&) {
    // Other required options are missing from this one-key probe; the value itself is fine.
  } catch (const CLI::ParseError& e) {
    return fail_invalid(noun + " '" + key + "': " + e.what());
  }
  return converted;
}

result<std::string> read_config_text(const std::string& path) {
  std::ifstream stream{path, std::ios::binary};
  if (!stream)
    return fail_runtime(path + ": cannot open the configuration file");
  std::ostringstream text;
  text << stream.rdbuf();
  if (auto checked = check_config_text(text.str(), path); !checked)
    return checked.error();
  return text.str();
}

result<std::vector<std::string>> config_arguments(const std::string& path, const std::string& command,
                                                  const std::string& skip) {
  auto text = read_config_text(path);
  if (!text)
    return text.error();
  return config_text_arguments(*text, path, command, skip);
}

result<std::string> config_command(const std::string& path) {
  auto text = read_config_text(path);
  if (!text)
    return text.error();
  try {
    std::istringstream stream{*text};
    const auto document = toml::parse(stream, path);
    if (!document.contains("command"))
      return std::string{"train"};
    const auto& value = toml::find(document, "command");
    if (!value.is_string() || (value.as_string().str != "train" && value.as_string().str != "ps-task"))
      return fail_invalid(path + ":" + std::to_string(value.location().line()) +
                  ": command must be \"train\" or \"ps-task\"");
    return value.as_string().str;
  } catch (const std::exception& e) {
    return fail_invalid(std::string{e.what()});
  }
}
} // namespace shardopt::apps
