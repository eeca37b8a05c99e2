// The words of a launch script as bash would pass them: comments, line continuations, quotes,
// NAME=value and NAME=( ... ) assignments, and $NAME / ${NAME} / ${NAME:-default} /
// "${NAME[@]}" expansions. Enough for Megatron-LM launch scripts; command substitution and
// arithmetic are left unexpanded (a plan value that needs them is refused by the reader).
#include "launcher_config_shell.hpp"

#include <cctype>
#include <map>

namespace shardplan::config {
namespace {

struct Word {
  std::string text;       // with expansions still in it
  bool quoted = false;    // any part in quotes (not split after expansion)
  bool line_start = false;
};

bool name_char(char c) {
  return std::isalnum(static_cast<unsigned char>(c)) != 0 || c == '_';
}

// Splits the script into words; a word's expansions are kept as written, with the characters
// single quotes protect marked by a \x01 prefix so that expansion leaves them alone.
std::vector<Word> lex(const std::string& s) {
  std::vector<Word> out;
  Word w;
  bool in_word = false, line_start = true;
  auto finish = [&] {
    if (in_word) out.push_back(w);
    w = Word{};
    in_word = false;
  };
  for (size_t i = 0; i < s.size(); ++i) {
    const char c = s[i];
    if (c == '\\' && i + 1 < s.size() && s[i + 1] == '\n') {
      ++i;  // a continued line
      continue;
    }
    if (c == '\n' || c == ';' || c == '&' || c == '|') {
      finish();
      line_start = c != '|' || line_start;
      if (c == '\n' || c == ';') line_start = true;
      continue;
    }
    if (c == ' ' || c == '\t' || c == '\r') {
      finish();
      continue;
    }
    if (c == '#' && !in_word) {
      while (i < s.size() && s[i] != '\n') ++i;
      --i;
      continue;
    }
    if (!in_word) {
      in_word = true;
      w.line_start = line_start;
      line_start = false;
    }
    if (c == '\'') {
      w.quoted = true;
      for (++i; i < s.size() && s[i] != '\''; ++i) w.text += std::string("\x01") + s[i];
    } else if (c == '"') {
      w.quoted = true;
      for (++i; i < s.size() && s[i] != '"'; ++i) {
        if (s[i] == '\\' && i + 1 < s.size()) ++i;
        w.text += s[i];
      }
    } else if (c == '\\' && i + 1 < s.size()) {
      w.text += std::string("\x01") + s[++i];
    } else {
      w.text += c;
    }
  }
  finish();
  return out;
}

using Vars = std::map<std::string, std::vector<std::string>>;

// $NAME, ${NAME}, ${NAME[@]}, ${NAME:-default}, ${NAME:?message}, ${NAME:=default}; an unset
// name without a default stays as written, so a reader can say which value it could not know.
std::string expand(const std::string& t, const Vars& vars) {
  std::string out;
  for (size_t i = 0; i < t.size(); ++i) {
    if (t[i] == '\x01') {
      out += t[++i];
      continue;
    }
    if (t[i] != '$' || i + 1 >= t.size()) {
      out += t[i];
      continue;
    }
    std::string name, fallback;
    bool has_fallback = false;
    size_t end = i + 1;
    if (t[end] == '{') {
      const size_t close = t.find('}', end);
      if (close == std::string::npos) {
        out += t.substr(i);
        break;
      }
      std::string inner = t.substr(end + 1, close - end - 1);
      if (const size_t b = inner.find('['); b != std::string::npos) inner = inner.substr(0, b);
      const size_t colon = inner.find(':');
      name = inner.substr(0, colon);
      if (colon != std::string::npos && colon + 1 < inner.size() &&
          (inner[colon + 1] == '-' || inner[colon + 1] == '=')) {
        fallback = expand(inner.substr(colon + 2), vars);
        has_fallback = true;
      }
      end = close + 1;
      // ${NAME:?message} unset: the script stops there; the message is no argument.
      if (vars.count(name) == 0 && !has_fallback) {
        out += "${" + name + "}";
        i = end - 1;
        continue;
      }
    } else {
      while (end < t.size() && name_char(t[end])) name += t[end++];
      if (name.empty()) {
        out += '$';
        continue;
      }
    }
    const auto it = vars.find(name);
    if (it != vars.end()) {
      for (size_t k = 0; k < it->second.size(); ++k) out += (k ? " " : "") + it->second[k];
    } else if (has_fallback) {
      out += fallback;
    } else {
      out += t.substr(i, end - i);
    }
    i = end - 1;
  }
  return out;
}

// NAME=value at the start of a command (after export/local/declare/readonly).
bool assignment(const Word& w, std::string& name, std::string& value) {
  const size_t eq = w.text.find('=');
  if (eq == std::string::npos || eq == 0) return false;
  for (size_t i = 0; i < eq; ++i)
    if (!name_char(w.text[i])) return false;
  name = w.text.substr(0, eq);
  value = w.text.substr(eq + 1);
  return true;
}

std::vector<std::string> split_words(const std::string& s) {
  std::vector<std::string> out;
  std::string cur;
  for (char c : s) {
    if (c == ' ' || c == '\t' || c == '\n') {
      if (!cur.empty()) out.push_back(cur);
      cur.clear();
    } else {
      cur += c;
    }
  }
  if (!cur.empty()) out.push_back(cur);
  return out;
}

}  // namespace

std::vector<std::string> shell_words(const std::string& script) {
  const std::vector<Word> words = lex(script);
  Vars vars;
  std::vector<std::string> out;
  bool command_start = true;
  for (size_t i = 0; i < words.size(); ++i) {
    const Word& w = words[i];
    if (w.line_start) command_start = true;
    if (command_start && (w.text == "export" || w.text == "local" || w.text == "declare" ||
                          w.text == "readonly")) {
      continue;
    }
    std::string name, value;
    if (command_start && assignment(w, name, value)) {
      if (value == "(" || (value.size() > 1 && value[0] == '(')) {  // NAME=( ... )
        std::vector<std::string> items;
        std::string first = value.substr(1);
        if (!first.empty()) items.push_back(expand(first, vars));
        for (++i; i < words.size() && words[i].text != ")"; ++i) {
          std::string t = expand(words[i].text, vars);
          if (!t.empty() && t.back() == ')' && !words[i].quoted) {
            t.pop_back();
            if (!t.empty()) items.push_back(t);
            break;
          }
          for (const std::string& part : words[i].quoted ? std::vector<std::string>{t}
                                                         : split_words(t))
            items.push_back(part);
        }
        vars[name] = items;
      } else {
        vars[name] = {expand(value, vars)};
      }
      continue;
    }
    command_start = false;
    const std::string t = expand(w.text, vars);
    if (w.quoted && w.text.find("[@]") == std::string::npos) {
      out.push_back(t);
    } else {
      for (const std::string& part : split_words(t)) out.push_back(part);
    }
  }
  return out;
}

}  // namespace shardplan::config
