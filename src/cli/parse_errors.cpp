// Rewrites CLI11's parse errors by reading the words themselves: CLI11's text names neither the
// nearest flag nor, for a repeated flag, that it was repeated.
#include "parse_errors.hpp"

#include <fmt/format.h>

#include <cctype>
#include <map>

#include "shardplan/error.hpp"
#include "shardplan/names.hpp"

namespace shardplan::cli {
namespace {

bool is_flag(const CLI::Option& opt) {
  return opt.get_type_size_max() == 0;
}

// "--model" -> its option; "-o" too.
std::map<std::string, const CLI::Option*> option_names(const CLI::App& sub) {
  std::map<std::string, const CLI::Option*> names;
  for (const CLI::Option* opt : sub.get_options()) {
    for (const std::string& l : opt->get_lnames()) names["--" + l] = opt;
    for (const std::string& s : opt->get_snames()) names["-" + s] = opt;
  }
  return names;
}

bool looks_like_number(const std::string& word) {
  return word.size() > 1 && word[0] == '-' &&
         (std::isdigit(static_cast<unsigned char>(word[1])) != 0 || word[1] == '.');
}

std::string help_hint(const CLI::App& sub) {
  return fmt::format("(`shardplan {} --help` lists every flag)", sub.get_name());
}

}  // namespace

std::string explain_parse_error(const CLI::App& sub, const std::vector<std::string>& args,
                                const std::string& cli11_text) {
  const auto names = option_names(sub);
  std::vector<std::string> candidates;
  for (const auto& [name, opt] : names) {
    if (name.rfind("--", 0) == 0 && name != "--help") candidates.push_back(name);
  }
  std::map<std::string, std::vector<std::string>> values;  // option name -> values given
  for (size_t i = 0; i < args.size(); ++i) {
    const std::string& word = args[i];
    if (word == "--") break;
    if (word.empty() || word[0] != '-' || looks_like_number(word)) continue;
    const auto eq = word.find('=');
    const std::string name = word.substr(0, eq);
    const auto it = names.find(name);
    if (it == names.end()) {
      return fmt::format("unknown flag '{}' for `shardplan {}`; did you mean '{}'? {}", name,
                         sub.get_name(), nearest_names(name, candidates, 1).front(),
                         help_hint(sub));
    }
    if (is_flag(*it->second)) continue;
    const std::string canonical = it->second->get_name();
    if (eq != std::string::npos) {
      values[canonical].push_back(word.substr(eq + 1));
    } else if (i + 1 < args.size()) {
      values[canonical].push_back(args[++i]);
    } else {
      return fmt::format("{} needs a value after it {}", name, help_hint(sub));
    }
  }
  for (const auto& [name, given] : values) {
    const CLI::Option* opt = sub.get_option_no_throw(name);
    if (given.size() > 1 && opt != nullptr && opt->get_expected_max() == 1) {
      return fmt::format("{} is given {} times ('{}' and '{}'); give it once", name, given.size(),
                         given[0], given[1]);
    }
  }
  return fmt::format("{} {}", cli11_text, help_hint(sub));
}

void refuse_empty_values(const CLI::App& sub) {
  for (const CLI::Option* opt : sub.get_options()) {
    if (opt->count() == 0 || is_flag(*opt)) continue;
    for (const std::string& value : opt->results()) {
      if (value.empty()) {
        const std::string help = opt->get_description();
        throw InputError(opt->get_name(),
                         fmt::format("is empty; give a value ({}) or leave the flag out",
                                     help.empty() ? "see --help" : help));
      }
    }
  }
}

}  // namespace shardplan::cli
