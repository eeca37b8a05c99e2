// A launch script run symbolically, as bash would run it where the file alone decides (bash(1):
// QUOTING, PARAMETERS, EXPANSION, ARITHMETIC EVALUATION, CONDITIONAL EXPRESSIONS, Here
// Documents, Compound Commands). Nothing is executed: a command is recorded with its words, a
// condition on a value the file does not fix leaves its branches unread and says so, and a value
// the file cannot know (an unset variable, a command substitution) stays as written for the
// reader to name.
#include "megatron_shell.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <memory>
#include <optional>
#include <set>
#include <utility>

namespace shardplan::config {
namespace {

constexpr char kLiteral = '\x01';  // the next character is literal: no expansion, no splitting
constexpr int kMaxDepth = 6;       // bash -c / eval / heredoc / function calls inside each other
constexpr size_t kMaxValue = 1 << 16;   // characters a variable holds, all its items together
constexpr size_t kMaxItems = 4096;
constexpr long kMaxCommands = 100000;  // simple commands one file may run (functions calling
                                       // functions fan out)

// A word (raw, with its expansions still in it), an operator, or a NAME=( ... ) array.
struct Token {
  std::string text;
  std::string op;  // "\n" ";" "&&" "||" "|" "&" ";;" "(" ")" ">" "<" ">&" "<<"; empty: a word
  bool quoted = false;
  int line = 1;
  std::vector<Token> items;  // NAME=( items ) when is_array
  bool is_array = false;
};

bool name_char(char c) {
  return std::isalnum(static_cast<unsigned char>(c)) != 0 || c == '_';
}

bool valid_name(const std::string& s) {
  if (s.empty() || std::isdigit(static_cast<unsigned char>(s[0])) != 0) return false;
  for (char c : s)
    if (!name_char(c)) return false;
  return true;
}

// The index just past the ')' that closes the '(' at `open`, quotes respected.
size_t closing_paren(const std::string& s, size_t open) {
  int depth = 0;
  for (size_t i = open; i < s.size(); ++i) {
    const char c = s[i];
    if (c == '\\') {
      ++i;
    } else if (c == '\'') {
      const size_t q = s.find('\'', i + 1);
      if (q == std::string::npos) return s.size();
      i = q;
    } else if (c == '"') {
      for (++i; i < s.size() && s[i] != '"'; ++i)
        if (s[i] == '\\') ++i;
    } else if (c == '(') {
      ++depth;
    } else if (c == ')' && --depth == 0) {
      return i + 1;
    }
  }
  return s.size();
}

// The index just past the '}' that closes the "${" at `open`.
size_t closing_brace(const std::string& s, size_t open) {
  int depth = 0;
  for (size_t i = open; i < s.size(); ++i) {
    if (s[i] == kLiteral || s[i] == '\\') {
      ++i;
    } else if (s[i] == '{') {
      ++depth;
    } else if (s[i] == '}' && --depth == 0) {
      return i + 1;
    }
  }
  return s.size();
}

class Lexer {
 public:
  explicit Lexer(const std::string& s, int depth = 0) : s_(s), depth_(depth) {}

  std::vector<Token> tokens() {
    std::vector<Token> out;
    while (i_ < s_.size()) {
      const char c = s_[i_];
      if (c == '\\' && i_ + 1 < s_.size() && s_[i_ + 1] == '\n') {
        finish(out);
        i_ += 2;
        ++line_;
      } else if (c == ' ' || c == '\t' || c == '\r') {
        finish(out);
        ++i_;
      } else if (c == '#' && !in_word_) {
        while (i_ < s_.size() && s_[i_] != '\n') ++i_;
      } else if (c == '\n') {
        finish(out);
        out.push_back(op("\n"));
        ++i_;
        ++line_;
        read_heredocs(out);
      } else if (c == '<' && placeholder()) {
        start();
        const size_t close = s_.find('>', i_);
        w_.text += std::string(1, kLiteral) + s_.substr(i_, close + 1 - i_);
        i_ = close + 1;
      } else if (std::string(";&|()<>").find(c) != std::string::npos &&
                 !(c == '(' && in_word_ && !w_.text.empty() && w_.text.back() == '=')) {
        operator_at(out);
      } else if (c == '(' && in_word_) {
        array(out);
      } else {
        word_char();
      }
    }
    finish(out);
    out.push_back(op("\n"));
    return out;
  }

 private:
  // "<PATH TO CHECKPOINTS>": an example script's placeholder, one word, not a redirection.
  bool placeholder() const {
    const size_t close = s_.find('>', i_);
    const size_t eol = s_.find('\n', i_);
    if (close == std::string::npos || close > eol || close == i_ + 1) return false;
    if (std::isupper(static_cast<unsigned char>(s_[i_ + 1])) == 0) return false;
    for (size_t k = i_ + 1; k < close; ++k) {
      const char c = s_[k];
      if (std::isalnum(static_cast<unsigned char>(c)) == 0 && std::string(" _./:-").find(c) == std::string::npos)
        return false;
    }
    return true;
  }

  Token op(const std::string& o) const {
    Token t;
    t.op = o;
    t.line = line_;
    return t;
  }

  void finish(std::vector<Token>& out) {
    if (in_word_) out.push_back(w_);
    w_ = Token{};
    in_word_ = false;
  }

  void start() {
    if (!in_word_) {
      in_word_ = true;
      w_.line = line_;
    }
  }

  void operator_at(std::vector<Token>& out) {
    const char c = s_[i_];
    const char n = i_ + 1 < s_.size() ? s_[i_ + 1] : '\0';
    // "2>" and "2>&1": the descriptor is part of the redirection, not a word.
    if ((c == '>' || c == '<') && in_word_ && !w_.quoted && !w_.text.empty() &&
        std::all_of(w_.text.begin(), w_.text.end(),
                    [](char d) { return std::isdigit(static_cast<unsigned char>(d)) != 0; })) {
      w_ = Token{};
      in_word_ = false;
    }
    if (c == '(' && n == '(' && !in_word_) {  // (( arithmetic )) as one word
      const size_t end = closing_paren(s_, i_);
      start();
      w_.text = s_.substr(i_, end - i_);
      i_ = end;
      finish(out);
      return;
    }
    finish(out);
    std::string o(1, c);
    if ((c == '&' && n == '&') || (c == '|' && n == '|') || (c == ';' && n == ';') ||
        (c == '>' && n == '>') || (c == '&' && n == '>') || (c == '>' && n == '&') ||
        (c == '<' && n == '<')) {
      o += n;
    }
    i_ += o.size();
    if (o == ">>" || o == "&>") o = ">";
    if (o == "<<") {
      if (i_ < s_.size() && s_[i_] == '<') {  // <<< here-string: its word is no argument
        ++i_;
        out.push_back(op("<"));
        return;
      }
      heredoc(out);
      return;
    }
    out.push_back(op(o));
  }

  // << DELIM or <<-DELIM: the body is read when the line ends.
  void heredoc(std::vector<Token>& out) {
    bool strip_tabs = false;
    if (i_ < s_.size() && s_[i_] == '-') {
      strip_tabs = true;
      ++i_;
    }
    while (i_ < s_.size() && (s_[i_] == ' ' || s_[i_] == '\t')) ++i_;
    std::string delim;
    bool quoted = false;
    while (i_ < s_.size() && std::string(" \t\n;&|<>").find(s_[i_]) == std::string::npos) {
      if (s_[i_] == '\'' || s_[i_] == '"' || s_[i_] == '\\') {
        quoted = true;
      } else {
        delim += s_[i_];
      }
      ++i_;
    }
    Token t = op("<<");
    t.quoted = quoted;
    out.push_back(t);
    pending_.push_back({out.size() - 1, delim, strip_tabs});
  }

  void read_heredocs(std::vector<Token>& out) {
    for (const Pending& p : pending_) {
      std::string body;
      while (i_ < s_.size()) {
        size_t end = s_.find('\n', i_);
        if (end == std::string::npos) end = s_.size();
        std::string text = s_.substr(i_, end - i_);
        i_ = std::min(end + 1, s_.size());
        ++line_;
        if (p.strip_tabs) text.erase(0, text.find_first_not_of('\t'));
        if (!text.empty() && text.back() == '\r') text.pop_back();
        if (text == p.delim) break;
        body += text + "\n";
      }
      out[p.token].text = body;
    }
    pending_.clear();
  }

  // NAME=( words ) and NAME+=( words ): the words, newlines and comments inside.
  void array(std::vector<Token>& out) {
    const size_t end = closing_paren(s_, i_);
    const std::string inside = s_.substr(i_ + 1, end > i_ + 1 ? end - i_ - 2 : 0);
    for (char ch : inside)
      if (ch == '\n') ++line_;
    w_.is_array = true;
    if (depth_ < kMaxDepth) {
      for (Token& t : Lexer(inside, depth_ + 1).tokens())
        if (t.op.empty()) w_.items.push_back(std::move(t));
    }
    i_ = end;
    finish(out);
  }

  void word_char() {
    start();
    const char c = s_[i_];
    if (c == '\'') {
      w_.quoted = true;
      for (++i_; i_ < s_.size() && s_[i_] != '\''; ++i_) {
        if (s_[i_] == '\n') ++line_;
        w_.text += std::string(1, kLiteral) + s_[i_];
      }
      ++i_;
    } else if (c == '"') {
      w_.quoted = true;
      for (++i_; i_ < s_.size() && s_[i_] != '"'; ++i_) {
        if (s_[i_] == '\n') ++line_;
        if (s_[i_] == '\\' && i_ + 1 < s_.size() &&
            std::string("$`\"\\\n").find(s_[i_ + 1]) != std::string::npos) {
          if (s_[++i_] != '\n') w_.text += std::string(1, kLiteral) + s_[i_];
        } else if (s_[i_] == '$' && i_ + 1 < s_.size() && s_[i_ + 1] == '(') {
          const size_t end = closing_paren(s_, i_ + 1);
          w_.text += s_.substr(i_, end - i_);
          i_ = end - 1;
        } else {
          w_.text += s_[i_];
        }
      }
      ++i_;
    } else if (c == '\\' && i_ + 1 < s_.size()) {
      w_.text += std::string(1, kLiteral) + s_[i_ + 1];
      i_ += 2;
    } else if (c == '$' && i_ + 1 < s_.size() && s_[i_ + 1] == '(') {
      const size_t end = closing_paren(s_, i_ + 1);
      w_.text += s_.substr(i_, end - i_);
      i_ = end;
    } else if (c == '$' && i_ + 1 < s_.size() && s_[i_ + 1] == '{') {
      const size_t end = closing_brace(s_, i_ + 1);
      w_.text += s_.substr(i_, end - i_);
      i_ = end;
    } else if (c == '`') {
      const size_t end = s_.find('`', i_ + 1);
      const size_t stop = end == std::string::npos ? s_.size() : end + 1;
      w_.text += s_.substr(i_, stop - i_);
      i_ = stop;
    } else {
      w_.text += c;
      ++i_;
    }
  }

  struct Pending {
    size_t token;
    std::string delim;
    bool strip_tabs;
  };

  const std::string& s_;
  int depth_;  // arrays inside arrays, as far as kMaxDepth
  size_t i_ = 0;
  int line_ = 1;
  Token w_;
  bool in_word_ = false;
  std::vector<Pending> pending_;
};

// What a branch does: runs, is skipped, or cannot be decided from the file.
enum class Reach { runs, skipped, unknown };
using Tri = std::optional<bool>;

bool glob_match(const std::string& pattern, const std::string& s) {
  size_t p = 0, t = 0, star = std::string::npos, mark = 0;
  while (t < s.size()) {
    if (p < pattern.size() && (pattern[p] == '?' || pattern[p] == s[t])) {
      ++p;
      ++t;
    } else if (p < pattern.size() && pattern[p] == '*') {
      star = p++;
      mark = t;
    } else if (star != std::string::npos) {
      p = star + 1;
      t = ++mark;
    } else {
      return false;
    }
  }
  while (p < pattern.size() && pattern[p] == '*') ++p;
  return p == pattern.size();
}

bool is_blank(char c) {
  return c == ' ' || c == '\t' || c == '\n';
}

std::vector<std::string> split_blanks(const std::string& s) {
  std::vector<std::string> out;
  std::string cur;
  for (char c : s) {
    if (is_blank(c)) {
      if (!cur.empty()) out.push_back(cur);
      cur.clear();
    } else {
      cur += c;
    }
  }
  if (!cur.empty()) out.push_back(cur);
  return out;
}

bool unresolved(const std::string& s) {
  return s.find('$') != std::string::npos || s.find('`') != std::string::npos;
}

class Runner {
 public:
  explicit Runner(const ShellInputs& in) : in_(in) {
    for (const auto& [name, value] : in.fixed) vars_[name] = {value};
  }

  ShellRun take() { return std::move(run_); }

  void sbatch_lines(const std::string& script) {
    size_t pos = 0;
    while (pos < script.size()) {
      size_t end = script.find('\n', pos);
      if (end == std::string::npos) end = script.size();
      const std::string line = script.substr(pos, end - pos);
      pos = end + 1;
      if (line.rfind("#SBATCH", 0) != 0) continue;
      std::vector<std::string> words;
      for (const Token& t : Lexer(line.substr(7)).tokens())
        if (t.op.empty()) words.push_back(plain(t.text));
      for (size_t k = 0; k < words.size(); ++k) {
        std::string key = words[k], value;
        if (const size_t eq = key.find('='); eq != std::string::npos) {
          value = key.substr(eq + 1);
          key = key.substr(0, eq);
        } else if (k + 1 < words.size() && words[k + 1][0] != '-') {
          value = words[++k];
        }
        static const std::map<std::string, std::string> short_names = {
            {"-N", "--nodes"}, {"-n", "--ntasks"}, {"-G", "--gpus"}, {"-p", "--partition"}};
        if (const auto it = short_names.find(key); it != short_names.end()) key = it->second;
        run_.sbatch[key] = value;
      }
    }
    // Inside the job, Slurm sets these from the allocation (sbatch(1) OUTPUT ENVIRONMENT).
    if (run_.sbatch.count("--nodes") && !run_.sbatch.at("--nodes").empty()) {
      for (const char* v : {"SLURM_NNODES", "SLURM_JOB_NUM_NODES"})
        if (!in_.environment.count(v)) sbatch_env_[v] = run_.sbatch.at("--nodes");
    }
  }

  void run(const std::string& script, int depth, const std::string& via) {
    if (depth > kMaxDepth) {
      note(0, fmt::format("{} nests scripts more than {} deep; not read", via, kMaxDepth));
      return;
    }
    owned_.push_back(std::make_unique<std::vector<Token>>(Lexer(script).tokens()));
    const std::vector<Token>& tokens = *owned_.back();
    run_tokens(tokens, 0, tokens.size(), depth, via);
  }

 private:
  struct Frame {
    std::string kind;  // if, loop, case
    Reach parent = Reach::runs;
    Reach reach = Reach::runs;
    bool taken = false;      // a branch of this if ran already
    bool undecided = false;  // a condition before this branch could not be decided
    int pushed = 0;          // conditions it added to open_conditions_
    std::string word;        // case: the word the patterns match, when the file fixes it
    bool known_word = false;
    bool at_patterns = false;  // case: the next tokens are a pattern list
  };

  // One simple command: its words, the operator after it, heredoc and redirection.
  struct Simple {
    std::vector<const Token*> words;
    std::string end_op;
    const Token* heredoc = nullptr;
    std::string redirect_to;
    int line = 0;
  };

  Reach reach() const {
    return frames_.empty() ? Reach::runs : frames_.back().reach;
  }

  void note(int line, const std::string& what) {
    const std::string n = line > 0 ? fmt::format("line {}: {}", line, what) : what;
    for (const std::string& old : run_.notes)
      if (old == n) return;
    run_.notes.push_back(n);
  }

  // ---- expansion -------------------------------------------------------------------------

  const std::vector<std::string>* lookup(const std::string& name) const {
    if (const auto it = vars_.find(name); it != vars_.end()) return &it->second;
    if (unknown_.count(name)) return nullptr;
    if (const auto it = env_cache_.find(name); it != env_cache_.end()) return &it->second;
    std::string value;
    if (const auto it = in_.environment.find(name); it != in_.environment.end()) {
      value = it->second;
    } else if (const auto s = sbatch_env_.find(name); s != sbatch_env_.end()) {
      value = s->second;
    } else {
      return nullptr;
    }
    return &(env_cache_[name] = {value});
  }

  static std::string joined(const std::vector<std::string>& v) {
    std::string out;
    for (size_t k = 0; k < v.size(); ++k) out += (k ? " " : "") + v[k];
    return out;
  }

  // The text of ${inner}; `fields` gets an array's elements for "${A[@]}".
  std::string parameter(const std::string& inner, std::vector<std::string>* fields, int depth) {
    std::string raw = "${" + inner + "}";
    if (depth > 8 * kMaxDepth) return raw;  // ${a:-${b:-${c:-...}}} nested past reason
    ++depth;
    if (!inner.empty() && inner[0] == '#') {
      std::string name = inner.substr(1);
      const bool all = name.size() > 3 && name.compare(name.size() - 3, 3, "[@]") == 0;
      if (all) name.resize(name.size() - 3);
      const auto* v = lookup(name);
      if (!v) return raw;
      return std::to_string(all ? v->size() : (v->empty() ? 0 : (*v)[0].size()));
    }
    size_t k = 0;
    while (k < inner.size() && name_char(inner[k])) ++k;
    const std::string name = inner.substr(0, k);
    const bool positional = !name.empty() && std::all_of(name.begin(), name.end(), [](char c) {
      return std::isdigit(static_cast<unsigned char>(c)) != 0;
    });
    if (!valid_name(name) && !positional) return raw;
    std::string index;
    if (k < inner.size() && inner[k] == '[') {
      const size_t close = inner.find(']', k);
      if (close == std::string::npos) return raw;
      index = inner.substr(k + 1, close - k - 1);
      k = close + 1;
    }
    const std::string rest = inner.substr(k);
    const auto* v = lookup(name);
    auto value = [&]() -> std::string {
      if (index == "@" || index == "*") {
        if (fields && index == "@") *fields = *v;
        return joined(*v);
      }
      size_t at = 0;
      if (!index.empty()) {
        const std::string i = plain(expand_text(index, depth));
        if (i.empty() || !std::all_of(i.begin(), i.end(), [](char c) {
              return std::isdigit(static_cast<unsigned char>(c)) != 0;
            }))
          return raw;
        at = std::stoul(i.substr(0, 6));
      }
      return at < v->size() ? (*v)[at] : "";
    };
    if (rest.empty()) return v ? value() : raw;
    const bool colon = rest[0] == ':';
    const size_t o = colon ? 1 : 0;
    if (o >= rest.size()) return raw;
    const char kind = rest[o];
    if (std::string("-=+?").find(kind) == std::string::npos) return raw;  // %, #, /, substrings
    if (!v && unknown_.count(name)) return raw;  // set somewhere the file does not decide
    const bool set = v != nullptr && !(colon && (v->empty() || joined(*v).empty()));
    const std::string word = unquoted(rest.substr(o + 1));
    switch (kind) {
      case '-':
        if (!set && positional)
          note(0, fmt::format("the script's arguments are taken as not given: ${{{}}} is its "
                              "default here (--set {}=VALUE gives one)",
                              inner, name));
        return set ? value() : expand_text(word, depth);
      case '=':
        if (set) return value();
        if (!in_.fixed.count(name)) vars_[name] = {plain(expand_text(word, depth))};
        return vars_[name][0];
      case '+':
        return set ? expand_text(word, depth) : "";
      default:  // '?': unset stops the script; the word is a message
        return set ? value() : raw;
    }
  }

  // The word of ${NAME:-word} with its quotes applied: "1" is 1, '$x' is literal.
  static std::string unquoted(const std::string& w) {
    std::string out;
    for (size_t i = 0; i < w.size(); ++i) {
      if (w[i] == kLiteral || (w[i] == '\\' && i + 1 < w.size())) {
        out += std::string(1, kLiteral) + w[++i];
      } else if (w[i] == '\'') {
        for (++i; i < w.size() && w[i] != '\''; ++i) out += std::string(1, kLiteral) + w[i];
      } else if (w[i] != '"') {
        out += w[i];
      }
    }
    return out;
  }

  // $(( ... )) and (( ... )): bash's integer arithmetic, or nothing when it needs a value the
  // file does not fix.
  class Arithmetic {
   public:
    Arithmetic(const std::string& s, Runner& r) : s_(s), r_(r) {}
    std::optional<long long> value() {
      const auto v = ternary(0);
      skip();
      if (!v || p_ != s_.size()) return std::nullopt;
      return v;
    }

   private:
    void skip() {
      while (p_ < s_.size() && std::isspace(static_cast<unsigned char>(s_[p_])) != 0) ++p_;
    }
    bool eat(const char* o) {
      skip();
      const size_t n = std::char_traits<char>::length(o);
      if (s_.compare(p_, n, o) != 0) return false;
      // A one-character operator is not the start of a two-character one: "<" of "<=", "*" of
      // "**", "&" of "&&".
      if (n == 1 && p_ + 1 < s_.size()) {
        const char next = s_[p_ + 1];
        if (next == '=' && std::string("<>!=").find(o[0]) != std::string::npos) return false;
        if (next == o[0] && std::string("*&|<>").find(o[0]) != std::string::npos) return false;
      }
      p_ += n;
      return true;
    }
    using V = std::optional<long long>;
    static V both(V a, V b, long long (*f)(long long, long long)) {
      if (!a || !b) return std::nullopt;
      return f(*a, *b);
    }
    V ternary(int depth) {
      if (depth > 64) return std::nullopt;
      V c = logic_or(depth);
      if (eat("?")) {
        V a = ternary(depth + 1);
        if (!eat(":")) return std::nullopt;
        V b = ternary(depth + 1);
        if (!c || !a || !b) return std::nullopt;
        return *c ? a : b;
      }
      return c;
    }
    V logic_or(int d) {
      V a = logic_and(d);
      while (eat("||")) a = both(a, logic_and(d), [](long long x, long long y) -> long long { return (x || y) ? 1 : 0; });
      return a;
    }
    V logic_and(int d) {
      V a = equality(d);
      while (eat("&&")) a = both(a, equality(d), [](long long x, long long y) -> long long { return (x && y) ? 1 : 0; });
      return a;
    }
    V equality(int d) {
      V a = relation(d);
      for (;;) {
        if (eat("==")) {
          a = both(a, relation(d), [](long long x, long long y) -> long long { return x == y; });
        } else if (eat("!=")) {
          a = both(a, relation(d), [](long long x, long long y) -> long long { return x != y; });
        } else {
          return a;
        }
      }
    }
    V relation(int d) {
      V a = additive(d);
      for (;;) {
        if (eat("<=")) {
          a = both(a, additive(d), [](long long x, long long y) -> long long { return x <= y; });
        } else if (eat(">=")) {
          a = both(a, additive(d), [](long long x, long long y) -> long long { return x >= y; });
        } else if (eat("<")) {
          a = both(a, additive(d), [](long long x, long long y) -> long long { return x < y; });
        } else if (eat(">")) {
          a = both(a, additive(d), [](long long x, long long y) -> long long { return x > y; });
        } else {
          return a;
        }
      }
    }
    static bool fits(long double v) { return v > -9e18L && v < 9e18L; }
    V additive(int d) {
      V a = term(d);
      for (;;) {
        const bool plus = eat("+");
        if (!plus && !eat("-")) return a;
        V b = term(d);
        if (!a || !b) return std::nullopt;
        const long double r = plus ? static_cast<long double>(*a) + *b
                                   : static_cast<long double>(*a) - *b;
        if (!fits(r)) return std::nullopt;
        a = plus ? *a + *b : *a - *b;
      }
    }
    V term(int d) {
      V a = unary(d);
      for (;;) {
        char o = 0;
        if (eat("*")) {
          o = '*';
        } else if (eat("/")) {
          o = '/';
        } else if (eat("%")) {
          o = '%';
        } else {
          return a;
        }
        V b = unary(d);
        if (!a || !b) return std::nullopt;
        if (o == '*') {
          if (!fits(static_cast<long double>(*a) * *b)) return std::nullopt;
          a = *a * *b;
        } else {
          if (*b == 0) return std::nullopt;
          a = o == '/' ? *a / *b : *a % *b;
        }
      }
    }
    V unary(int d) {
      if (d > 64) return std::nullopt;
      if (eat("-")) {
        V v = unary(d + 1);
        return v ? V(-*v) : v;
      }
      if (eat("+")) return unary(d + 1);
      if (eat("!")) {
        V v = unary(d + 1);
        return v ? V(*v == 0 ? 1 : 0) : v;
      }
      return primary(d);
    }
    V primary(int d) {
      skip();
      if (eat("(")) {
        V v = ternary(d + 1);
        if (!eat(")")) return std::nullopt;
        return v;
      }
      if (p_ < s_.size() && std::isdigit(static_cast<unsigned char>(s_[p_])) != 0) {
        size_t e = p_;
        while (e < s_.size() && std::isalnum(static_cast<unsigned char>(s_[e])) != 0) ++e;
        const std::string digits = s_.substr(p_, e - p_);
        p_ = e;
        if (digits.size() > 18) return std::nullopt;
        try {
          size_t used = 0;
          const long long v = std::stoll(digits, &used, 0);
          if (used != digits.size()) return std::nullopt;
          return v;
        } catch (const std::exception&) {
          return std::nullopt;
        }
      }
      size_t e = p_;
      while (e < s_.size() && name_char(s_[e])) ++e;
      const std::string name = s_.substr(p_, e - p_);
      p_ = e;
      if (!valid_name(name)) return std::nullopt;
      const auto* v = r_.lookup(name);
      if (!v || v->empty()) return v ? V(0) : std::nullopt;
      const std::string& text = (*v)[0];
      if (text.empty()) return 0;
      if (text.size() > 18 || !std::all_of(text.begin(), text.end(), [](char c) {
            return std::isdigit(static_cast<unsigned char>(c)) != 0 || c == '-';
          }))
        return std::nullopt;
      try {
        return std::stoll(text);
      } catch (const std::exception&) {
        return std::nullopt;
      }
    }

    const std::string& s_;
    Runner& r_;
    size_t p_ = 0;
  };

  std::optional<long long> arithmetic(const std::string& expr, int depth) {
    if (depth > 8 * kMaxDepth) return std::nullopt;  // $(( $(( ... )) )) nested past reason
    return Arithmetic(plain(expand_text(expr, depth + 1)), *this).value();
  }

  // Expands `t` to one string (assignment values, conditions); literals stay marked.
  std::string expand_text(const std::string& t, int depth) {
    std::vector<std::string> f = expand(t, true, depth);
    std::string out;
    for (size_t k = 0; k < f.size(); ++k) out += (k ? " " : "") + f[k];
    return out;
  }

  // Removes the literal marks.
  static std::string plain(const std::string& t) {
    std::string out;
    for (size_t i = 0; i < t.size(); ++i) {
      if (t[i] == kLiteral) {
        if (++i < t.size()) out += t[i];
      } else {
        out += t[i];
      }
    }
    return out;
  }

  // A word's fields: an unquoted expansion splits on blanks; "${A[@]}" gives one field per item.
  std::vector<std::string> expand(const std::string& t, bool quoted, int depth) {
    std::vector<std::string> fields(1);
    auto add = [&](const std::string& value, const std::vector<std::string>* items) {
      if (items) {
        for (size_t k = 0; k < items->size(); ++k) {
          if (k > 0) fields.emplace_back();
          fields.back() += (*items)[k];
        }
        return;
      }
      if (quoted) {
        fields.back() += value;
        return;
      }
      if (value.empty()) return;
      const std::vector<std::string> parts = split_blanks(value);
      if (parts.empty()) {
        fields.emplace_back();
        return;
      }
      if (is_blank(value.front()) && !fields.back().empty()) fields.emplace_back();
      fields.back() += parts[0];
      for (size_t k = 1; k < parts.size(); ++k) fields.push_back(parts[k]);
      if (is_blank(value.back())) fields.emplace_back();
    };
    for (size_t i = 0; i < t.size(); ++i) {
      const char c = t[i];
      if (c == kLiteral) {
        fields.back() += t.substr(i, 2);
        ++i;
        continue;
      }
      if (c == '`') {
        const size_t end = t.find('`', i + 1);
        const size_t stop = end == std::string::npos ? t.size() : end + 1;
        fields.back() += t.substr(i, stop - i);
        i = stop - 1;
        continue;
      }
      if (c != '$' || i + 1 >= t.size()) {
        fields.back() += c;
        continue;
      }
      const char n = t[i + 1];
      if (n == '(' && i + 2 < t.size() && t[i + 2] == '(') {
        const size_t end = closing_paren(t, i + 1);
        const std::string expr = t.substr(i + 3, end >= i + 5 ? end - i - 5 : 0);
        const auto v = arithmetic(expr, depth);
        if (v) {
          add(std::to_string(*v), nullptr);
        } else {
          fields.back() += t.substr(i, end - i);
        }
        i = end - 1;
      } else if (n == '(') {
        const size_t end = closing_paren(t, i + 1);
        fields.back() += t.substr(i, end - i);  // command output: not known from the file
        i = end - 1;
      } else if (n == '{') {
        const size_t end = closing_brace(t, i + 1);
        const std::string inner = t.substr(i + 2, end >= i + 3 ? end - i - 3 : 0);
        std::vector<std::string> items;
        bool is_items = false;
        std::string value = parameter(inner, &items, depth);
        is_items = inner.size() > 3 && inner.compare(inner.size() - 3, 3, "[@]") == 0 &&
                   inner.find(':') == std::string::npos && value != "${" + inner + "}";
        add(value, is_items && quoted ? &items : nullptr);
        i = end - 1;
      } else if (name_char(n) && std::isdigit(static_cast<unsigned char>(n)) == 0) {
        size_t end = i + 1;
        while (end < t.size() && name_char(t[end])) ++end;
        const std::string name = t.substr(i + 1, end - i - 1);
        const auto* v = lookup(name);
        if (v) {
          add(v->empty() ? "" : (*v)[0], nullptr);
        } else {
          fields.back() += "${" + name + "}";
        }
        i = end - 1;
      } else if (n == '#') {
        // The script's own arguments are taken as not given (as ${1:-default} takes defaults).
        add("0", nullptr);
        ++i;
      } else if (in_condition_ && std::isdigit(static_cast<unsigned char>(n)) != 0) {
        ++i;  // in a test, an argument not given is empty ([[ $1 = --help ]] is false)
      } else {
        fields.back() += c;  // $1, $@: the script's own arguments, unknown here
      }
    }
    if (!quoted) {
      std::vector<std::string> out;
      for (std::string& f : fields)
        if (!f.empty()) out.push_back(std::move(f));
      return out;
    }
    return fields;
  }

  std::vector<std::string> words_of(const Token& w, int depth) {
    std::vector<std::string> out;
    for (const std::string& f : expand(w.text, w.quoted, depth)) out.push_back(plain(f));
    return out;
  }

  // ---- assignments -----------------------------------------------------------------------

  enum class Assign { replace, append_items, append_text };

  void set_var(const std::string& name, std::vector<std::string> value, Assign how, int line) {
    if (in_.fixed.count(name)) return;  // --set NAME=VALUE stands
    if (reach() == Reach::unknown) {
      if (how != Assign::replace && !unknown_.count(name)) {
        std::string words;
        for (const std::string& v : value) words += (words.empty() ? "" : " ") + v;
        note(line, fmt::format("{}+=({}) not read: it runs only when {}", name, words,
                               conditions()));
      } else {
        vars_.erase(name);
        unknown_.insert(name);
        if (std::find(run_.undecided.begin(), run_.undecided.end(), name) == run_.undecided.end())
          run_.undecided.push_back(name);
        note(line, fmt::format("{} is set only when {}; --set {}=VALUE says which", name,
                               conditions(), name));
      }
      return;
    }
    if (unknown_.count(name) && how != Assign::replace) return;  // still not known
    unknown_.erase(name);
    std::vector<std::string>& v = vars_[name];
    if (how == Assign::replace) v.clear();
    if (how == Assign::append_text && !v.empty()) {
      v[0] += value.empty() ? "" : value[0];
      if (v[0].size() > kMaxValue) v[0].resize(kMaxValue);
      return;
    }
    size_t total = 0;
    for (const std::string& item : v) total += item.size();
    for (std::string& item : value) {
      if (v.size() >= kMaxItems || total >= kMaxValue) break;
      if (item.size() > kMaxValue - total) item.resize(kMaxValue - total);
      total += item.size();
      v.push_back(std::move(item));
    }
  }

  // NAME=value, NAME+=value, NAME=( ... ), NAME+=( ... ); false when `w` is none.
  bool assignment(const Token& w, int depth) {
    const size_t eq = w.text.find('=');
    if (eq == std::string::npos || eq == 0) return false;
    const bool append = w.text[eq - 1] == '+';
    std::string name = w.text.substr(0, append ? eq - 1 : eq);
    if (const size_t b = name.find('['); b != std::string::npos && name.back() == ']')
      name = name.substr(0, b);  // A[2]=x: priced as an append
    if (!valid_name(name)) return false;
    if (w.is_array) {
      std::vector<std::string> items;
      for (const Token& item : w.items)
        for (std::string& f : words_of(item, depth)) items.push_back(std::move(f));
      set_var(name, std::move(items), append ? Assign::append_items : Assign::replace, w.line);
    } else {
      set_var(name, {plain(expand_text(w.text.substr(eq + 1), depth))},
              append ? Assign::append_text : Assign::replace, w.line);
    }
    return true;
  }

  // ---- conditions ------------------------------------------------------------------------

  std::string conditions() const {
    std::string out;
    for (const std::string& c : open_conditions_) out += (out.empty() ? "" : " and ") + c;
    return out.empty() ? "a condition the file does not decide" : out;
  }

  static bool integer_text(const std::string& s) {
    if (s.empty() || s.size() > 18) return false;
    const size_t start = s[0] == '-' ? 1 : 0;
    return start < s.size() && std::all_of(s.begin() + static_cast<long>(start), s.end(), [](char c) {
             return std::isdigit(static_cast<unsigned char>(c)) != 0;
           });
  }

  // One test: `[ ... ]`, `[[ ... ]]`, `test ...`, `(( ... ))`, true, false.
  Tri test(const std::vector<const Token*>& words, int depth) {
    if (words.empty()) return std::nullopt;
    const std::string head = words[0]->text;
    if (head == "true" || head == ":") return true;
    if (head == "false") return false;
    if (head.rfind("((", 0) == 0 && head.size() >= 4) {
      const auto v = arithmetic(head.substr(2, head.size() - 4), depth);
      if (!v) return std::nullopt;
      return *v != 0;
    }
    std::vector<std::string> w;
    in_condition_ = true;
    for (size_t k = 1; k < words.size(); ++k) {
      const bool q = words[k]->quoted || head == "[[";  // [[ ]] does not split words
      for (const std::string& f : expand(words[k]->text, q, depth)) w.push_back(plain(f));
    }
    in_condition_ = false;
    if (head == "[" || head == "[[") {
      const std::string close = head == "[" ? "]" : "]]";
      if (w.empty() || w.back() != close) return std::nullopt;
      w.pop_back();
    } else if (head != "test") {
      return std::nullopt;  // a command's exit status
    }
    bool negate = false;
    while (!w.empty() && w[0] == "!") {
      negate = !negate;
      w.erase(w.begin());
    }
    for (const std::string& s : w)
      if (unresolved(s)) return std::nullopt;
    Tri r;
    if (w.size() == 1) {
      r = !w[0].empty();
    } else if (w.size() == 2 && (w[0] == "-z" || w[0] == "-n")) {
      r = (w[0] == "-z") == w[1].empty();
    } else if (w.size() == 3) {
      const std::string& a = w[0];
      const std::string& o = w[1];
      const std::string& b = w[2];
      if (o == "=" || o == "==") {
        r = head == "[[" ? glob_match(b, a) : a == b;
      } else if (o == "!=") {
        r = head == "[[" ? !glob_match(b, a) : a != b;
      } else if (o == "-eq" || o == "-ne" || o == "-lt" || o == "-le" || o == "-gt" ||
                 o == "-ge") {
        if (!integer_text(a) || !integer_text(b)) return std::nullopt;
        const long long x = std::stoll(a), y = std::stoll(b);
        r = o == "-eq" ? x == y : o == "-ne" ? x != y : o == "-lt" ? x < y
            : o == "-le" ? x <= y : o == "-gt" ? x > y : x >= y;
      }
    }
    if (!r) return std::nullopt;
    return negate ? !*r : *r;
  }

  // `cond1 && cond2 || cond3`, left to right as bash does.
  Tri condition(const std::vector<Simple>& parts, int depth) {
    Tri r = test(parts[0].words, depth);
    for (size_t k = 1; k < parts.size(); ++k) {
      const Tri next = test(parts[k].words, depth);
      if (parts[k - 1].end_op == "&&") {
        if (r == false || next == false) {
          r = false;
        } else if (!r || !next) {
          r = std::nullopt;
        } else {
          r = true;
        }
      } else {
        if (r == true || next == true) {
          r = true;
        } else if (!r || !next) {
          r = std::nullopt;
        } else {
          r = false;
        }
      }
    }
    return r;
  }

  static std::string source_of(const std::vector<Simple>& parts) {
    std::string out;
    for (const Simple& s : parts) {
      for (const Token* w : s.words) {
        if (!out.empty()) out += ' ';
        out += plain(w->text);
      }
      if (&s != &parts.back()) {
        out += ' ';
        out += s.end_op;
      }
    }
    return out;
  }

  void open_branch(Frame& f, Tri decided, const std::string& text, int line) {
    if (f.parent == Reach::skipped || f.taken) {
      f.reach = Reach::skipped;
      return;
    }
    if (!decided) {
      // This branch's condition replaces the one of the branch before it: an elif runs when
      // the earlier conditions are false, which a note cannot say shorter than "a branch of".
      const bool first = !f.undecided;
      f.undecided = true;
      f.reach = Reach::unknown;
      note(line, fmt::format("the file does not decide `{}`; what its branches set is not read "
                             "(--set NAME=VALUE decides it)",
                             text));
      for (; f.pushed > 0 && !open_conditions_.empty(); --f.pushed) open_conditions_.pop_back();
      open_conditions_.push_back(first ? "`" + text + "`"
                                       : "`" + text + "` (an elif: the conditions before it fail)");
      ++f.pushed;
      return;
    }
    if (!*decided) {
      f.reach = Reach::skipped;
    } else if (f.undecided) {
      f.reach = Reach::unknown;  // an earlier branch may have run instead
    } else {
      f.reach = f.parent;
      f.taken = true;
    }
  }

  // ---- commands --------------------------------------------------------------------------

  static std::string base(const std::string& w) {
    const size_t slash = w.rfind('/');
    return slash == std::string::npos ? w : w.substr(slash + 1);
  }

  static bool shell_name(const std::string& w) {
    const std::string b = base(w);
    return b == "bash" || b == "sh" || b == "zsh" || b == "dash";
  }

  void command(const Simple& c, int depth, const std::string& via) {
    if (++commands_run_ > kMaxCommands) {
      if (commands_run_ == kMaxCommands + 1)
        note(c.line, fmt::format("more than {} commands run: the rest is not read", kMaxCommands));
      return;
    }
    std::vector<const Token*> words = c.words;
    size_t k = 0;
    std::vector<const Token*> prefix;
    while (k < words.size() && words[k]->op.empty() && valid_name(words[k]->text.substr(0, std::min(words[k]->text.find('='), words[k]->text.find("+=")))) &&
           words[k]->text.find('=') != std::string::npos)
      prefix.push_back(words[k++]);
    if (k == words.size()) {
      for (const Token* w : prefix) assignment(*w, depth);
      return;
    }
    const std::string head = plain(words[k]->text);
    if (head == "export" || head == "declare" || head == "local" || head == "readonly" ||
        head == "typeset") {
      for (size_t j = k + 1; j < words.size(); ++j)
        if (words[j]->text.rfind('-', 0) != 0) assignment(*words[j], depth);
      return;
    }
    if (reach() == Reach::unknown && functions_.count(head) == 0 && head != "eval") {
      const bool has_arguments = std::any_of(words.begin() + static_cast<long>(k), words.end(),
                                             [](const Token* w) { return w->text.rfind("--", 0) == 0; });
      if (has_arguments)
        note(c.line, fmt::format("`{} ...` not read: it runs only when {}", head, conditions()));
      return;
    }
    if (head == "unset") {
      for (size_t j = k + 1; j < words.size(); ++j) vars_.erase(plain(words[j]->text));
      return;
    }
    if (head == "source" || head == ".") {
      note(c.line, fmt::format("`{} {}` is not followed; what it sets is not read", head,
                               k + 1 < words.size() ? plain(words[k + 1]->text) : ""));
      return;
    }
    if (const auto f = functions_.find(head); f != functions_.end()) {
      if (depth >= kMaxDepth) return;
      run_tokens(*f->second.tokens, f->second.begin, f->second.end, depth + 1,
                 "function " + head);
      return;
    }
    std::vector<std::string> expanded;
    for (size_t j = k; j < words.size(); ++j)
      for (std::string& f : words_of(*words[j], depth)) expanded.push_back(std::move(f));
    if (expanded.empty()) return;
    if (head == "eval") {
      std::string text;
      for (size_t j = 1; j < expanded.size(); ++j) text += (j > 1 ? " " : "") + expanded[j];
      run(text, depth + 1, fmt::format("eval at line {}", c.line));
      return;
    }
    // A heredoc: a file the script writes (cat <<EOF > F), or a script a shell runs.
    if (c.heredoc) {
      std::string body = c.heredoc->text;
      if (!c.heredoc->quoted) {
        std::string marked;
        for (char ch : body) {
          if (ch == '"' || ch == '\'' || ch == '\\') marked += kLiteral;
          marked += ch;
        }
        body = plain(expand_text(marked, depth));
      }
      const std::string cmd = base(expanded[0]);
      if ((cmd == "cat" || cmd == "tee") && !c.redirect_to.empty()) {
        run_.files[plain(expand_text(c.redirect_to, depth))] = body;
      } else if (cmd == "tee" && expanded.size() > 1) {
        run_.files[expanded.back()] = body;
      } else if (std::any_of(expanded.begin(), expanded.end(), shell_name) || cmd == "sbatch") {
        run(body, depth + 1, fmt::format("the heredoc at line {}", c.line));
      }
    }
    // bash -c STRING (also under srun / docker / sh): the string is the script that runs.
    for (size_t j = 0; j < expanded.size(); ++j) {
      if (!shell_name(expanded[j])) continue;
      // Options before the string: bash -x -c STRING, bash -lc STRING.
      size_t k = j + 1;
      bool has_c = false;
      while (k < expanded.size() && expanded[k].size() > 1 && expanded[k][0] == '-' && !has_c) {
        has_c = expanded[k].find('c') != std::string::npos && expanded[k][1] != '-';
        ++k;
      }
      if (has_c && k < expanded.size()) {
        run(expanded[k], depth + 1, fmt::format("{} -c at line {}", base(expanded[j]), c.line));
        break;
      }
    }
    run_.commands.push_back({expanded, c.line, via});
  }

  struct Function {
    const std::vector<Token>* tokens;
    size_t begin, end;
  };

  // The tokens of one simple command from `i`, stopping at an operator that ends it.
  static Simple simple(const std::vector<Token>& t, size_t& i, size_t end) {
    Simple s;
    s.line = i < end ? t[i].line : 0;
    while (i < end) {
      const Token& x = t[i];
      if (x.op.empty()) {
        s.words.push_back(&x);
        ++i;
      } else if (x.op == "<<") {
        s.heredoc = &x;
        ++i;
      } else if (x.op == ">" || x.op == "<" || x.op == ">&") {
        ++i;
        if (i < end && t[i].op.empty()) {
          if (x.op == ">") s.redirect_to = t[i].text;
          ++i;
        }
      } else {
        s.end_op = x.op;
        ++i;
        return s;
      }
    }
    return s;
  }

  static std::string text_of(const std::vector<const Token*>& words) {
    std::string out;
    for (const Token* w : words) {
      if (!out.empty()) out += ' ';
      out += plain(w->text);
    }
    return out;
  }

  void close_frame() {
    Frame& top = frames_.back();
    for (int k = 0; k < top.pushed && !open_conditions_.empty(); ++k) open_conditions_.pop_back();
    frames_.pop_back();
  }

  void run_tokens(const std::vector<Token>& t, size_t i, size_t end, int depth,
                  const std::string& via) {
    const size_t frames_at_start = frames_.size();
    while (i < end) {
      if (frames_.size() > frames_at_start && frames_.back().kind == "case" &&
          frames_.back().at_patterns && case_patterns(t, i, end))
        continue;
      Simple s = simple(t, i, end);
      if (s.end_op == ";;" && frames_.size() > frames_at_start && frames_.back().kind == "case") {
        if (!s.words.empty() && reach() != Reach::skipped) command(s, depth, via);
        frames_.back().at_patterns = true;
        continue;
      }
      // name() { ... }: kept to run when called.
      if (s.end_op == "(" && i < end && t[i].op == ")" &&
          (s.words.size() == 1 || (s.words.size() == 2 && s.words[0]->text == "function"))) {
        ++i;
        define_function(plain(s.words.back()->text), t, i, end);
        continue;
      }
      // Keywords that start a list: "then cmd", "do cmd", "{ cmd".
      while (!s.words.empty()) {
        const std::string w = s.words[0]->quoted ? "" : s.words[0]->text;
        if (w != "then" && w != "do" && w != "{" && w != "}") break;
        s.words.erase(s.words.begin());
      }
      if (s.words.empty()) continue;
      const std::string head = s.words[0]->quoted ? "" : s.words[0]->text;
      if (head == "function" && s.words.size() == 2) {  // function name { ... }
        define_function(plain(s.words[1]->text), t, i, end);
        continue;
      }
      if (head == "if" || head == "elif") {
        s.words.erase(s.words.begin());
        std::vector<Simple> parts = {s};
        while ((parts.back().end_op == "&&" || parts.back().end_op == "||") && i < end)
          parts.push_back(simple(t, i, end));
        if (head == "if") {
          Frame f;
          f.kind = "if";
          f.parent = reach();
          frames_.push_back(f);
        } else if (frames_.size() <= frames_at_start || frames_.back().kind != "if") {
          continue;
        }
        Frame& top = frames_.back();
        const bool open = top.parent != Reach::skipped && !top.taken && !parts[0].words.empty();
        open_branch(top, open ? condition(parts, depth) : Tri(false), source_of(parts), s.line);
        continue;
      }
      if (head == "else" || head == "fi" || head == "done" || head == "esac") {
        if (frames_.size() > frames_at_start) {
          Frame& top = frames_.back();
          if (head != "else") {
            close_frame();
          } else if (top.kind == "if") {
            top.reach = top.parent == Reach::skipped || top.taken ? Reach::skipped
                        : top.undecided                           ? Reach::unknown
                                                                  : top.parent;
            if (top.reach == Reach::unknown && top.pushed > 0 && !open_conditions_.empty())
              open_conditions_.back() = "the else of " + open_conditions_.back();
          }
        }
        s.words.erase(s.words.begin());
        if (!s.words.empty() && reach() != Reach::skipped) command(s, depth, via);
        continue;
      }
      if (head == "case" && s.words.size() >= 3 && s.words.back()->text == "in") {
        Frame f;
        f.kind = "case";
        f.parent = reach();
        f.reach = Reach::skipped;
        f.at_patterns = true;
        const std::vector<std::string> w = words_of(*s.words[1], depth);
        f.word = w.empty() ? "" : w[0];
        f.known_word = !unresolved(f.word);
        if (!f.known_word && f.parent == Reach::runs) {
          const std::string text = text_of(s.words);
          note(s.line, fmt::format("the file does not decide `{}`; what its branches set is not "
                                   "read (--set NAME=VALUE decides it)",
                                   text));
          open_conditions_.push_back("`" + text + "` picks that branch");
          f.pushed = 1;
        }
        frames_.push_back(f);
        continue;
      }
      if (head == "for" || head == "while" || head == "until" || head == "select" ||
          head == "case") {
        Frame f;
        f.kind = head == "case" ? "case" : "loop";
        f.parent = reach();
        f.reach = f.parent == Reach::skipped ? Reach::skipped : Reach::unknown;
        // A while whose condition is false from the start (an argument loop on $# with no
        // arguments) never runs its body.
        if ((head == "while" || head == "until") && f.parent != Reach::skipped) {
          Simple cond = s;
          cond.words.erase(cond.words.begin());
          std::vector<Simple> parts = {cond};
          size_t j = i;
          while ((parts.back().end_op == "&&" || parts.back().end_op == "||") && j < end)
            parts.push_back(simple(t, j, end));
          const Tri runs = parts[0].words.empty() ? Tri() : condition(parts, depth);
          if (runs && *runs == (head == "until")) {
            f.reach = Reach::skipped;
            frames_.push_back(f);
            i = j;
            continue;
          }
        }
        if (f.parent == Reach::runs) {
          const std::string text = text_of(s.words);
          note(s.line, fmt::format("`{}` is not run: what its body sets is not read", text));
          open_conditions_.push_back("`" + text + "` runs its body");
          f.pushed = 1;
        }
        frames_.push_back(f);
        continue;
      }
      if (s.end_op == ")" && !frames_.empty() && frames_.back().kind == "case") continue;
      if (reach() == Reach::skipped) continue;
      command(s, depth, via);
    }
    while (frames_.size() > frames_at_start) close_frame();
  }

  // At "pattern|pattern)" of a case: the branch runs when a pattern matches the word and no
  // earlier branch ran. False when the tokens are no pattern list (esac, a stray word).
  bool case_patterns(const std::vector<Token>& t, size_t& i, size_t end) {
    size_t j = i;
    while (j < end && t[j].op == "\n") ++j;
    if (j < end && t[j].op == "(") ++j;
    std::vector<std::string> patterns;
    while (j < end && t[j].op.empty()) {
      if (t[j].text == "esac" && patterns.empty()) return false;
      patterns.push_back(plain(t[j].text));
      ++j;
      if (j < end && t[j].op == "|") ++j;
    }
    if (j >= end || t[j].op != ")" || patterns.empty()) return false;
    i = j + 1;
    Frame& f = frames_.back();
    f.at_patterns = false;
    if (f.parent == Reach::skipped || f.taken) {
      f.reach = Reach::skipped;
      return true;
    }
    if (!f.known_word) {
      f.reach = Reach::unknown;
      return true;
    }
    bool match = false;
    for (const std::string& p : patterns) match |= glob_match(p, f.word);
    f.reach = match ? f.parent : Reach::skipped;
    f.taken = match;
    return true;
  }

  void define_function(const std::string& name, const std::vector<Token>& t, size_t& i,
                       size_t end) {
    while (i < end && t[i].op == "\n") ++i;
    if (i >= end || t[i].text != "{") return;
    const size_t body = ++i;
    int braces = 1;
    bool at_start = true;
    for (; i < end; ++i) {
      if (!t[i].op.empty()) {
        at_start = t[i].op != "|";
        continue;
      }
      if (at_start && t[i].text == "{" && !t[i].quoted) ++braces;
      if (at_start && t[i].text == "}" && !t[i].quoted && --braces == 0) break;
      at_start = false;
    }
    functions_[name] = Function{&t, body, std::min(i, end)};
    if (i < end) ++i;
  }

  const ShellInputs& in_;
  ShellRun run_;
  std::map<std::string, std::vector<std::string>> vars_;
  mutable std::map<std::string, std::vector<std::string>> env_cache_;
  std::map<std::string, std::string> sbatch_env_;
  std::set<std::string> unknown_;
  std::vector<Frame> frames_;
  std::vector<std::string> open_conditions_;
  std::map<std::string, Function> functions_;
  std::vector<std::unique_ptr<std::vector<Token>>> owned_;
  bool in_condition_ = false;
  long commands_run_ = 0;  // scripts functions point into
};

}  // namespace

ShellRun run_script(const std::string& script, const ShellInputs& inputs) {
  Runner r(inputs);
  r.sbatch_lines(script);
  r.run(script, 0, "");
  return r.take();
}

}  // namespace shardplan::config
