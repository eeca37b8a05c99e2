// One description of a JSON object's fields that its writer and its strict reader both use, as
// Calculon's Execution.fields() drives both its parser and its printer: a field is one row
// (its key, how it is written, how it is read and checked, what its absence means).
#pragma once

#include <functional>
#include <nlohmann/json.hpp>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "json_reader.hpp"
#include "shardplan/error.hpp"

namespace shardplan {

template <class T>
struct JsonField {
  std::string key;
  /// The value written under `key`; a discarded value (left_out()) leaves the key out.
  std::function<nlohmann::json(const T&)> write;
  /// Reads the key when it holds a value, with the field's check and message.
  std::function<void(StrictObject&, const std::string& key, T&)> read;
  /// What an absent (or null) key means; empty: the key is required, and reading names it.
  std::function<void(T&)> absent;
};

template <class T>
using JsonFields = std::vector<JsonField<T>>;

inline nlohmann::json left_out() { return nlohmann::json(nlohmann::json::value_t::discarded); }

template <class T>
nlohmann::json write_fields(const JsonFields<T>& fields, const T& value) {
  nlohmann::json j = nlohmann::json::object();
  for (const JsonField<T>& f : fields) {
    nlohmann::json v = f.write(value);
    if (!v.is_discarded()) j[f.key] = std::move(v);
  }
  return j;
}

/// Reads the rows in order (a row may use what an earlier one read); the caller finishes `o`.
template <class T>
void read_fields(const JsonFields<T>& fields, StrictObject& o, T& value) {
  for (const JsonField<T>& f : fields) {
    if (f.absent && !o.present(f.key)) {
      f.absent(value);
    } else {
      f.read(o, f.key, value);
    }
  }
}

/// A value of the member's type: a boolean, a whole number >= 0, a finite number or a string.
template <class M>
M read_value(StrictObject& o, const std::string& key) {
  if constexpr (std::is_same_v<M, bool>) {
    return o.boolean(key);
  } else if constexpr (std::is_same_v<M, int>) {
    return o.integer(key);
  } else if constexpr (std::is_same_v<M, double>) {
    return o.number(key);
  } else {
    return o.string(key);
  }
}

/// A member written as it is, required when read.
template <class T, class M>
JsonField<T> member(const char* key, M T::*m) {
  return {key, [m](const T& v) { return nlohmann::json(v.*m); },
          [m](StrictObject& o, const std::string& k, T& v) { v.*m = read_value<M>(o, k); }, {}};
}

/// A number that must be greater than zero.
template <class T>
JsonField<T> positive(const char* key, double T::*m) {
  return {key, [m](const T& v) { return nlohmann::json(v.*m); },
          [m](StrictObject& o, const std::string& k, T& v) { v.*m = o.positive(k); }, {}};
}

/// An enum member written by its name and read by its parser (which names the valid ones).
template <class T, class E>
JsonField<T> named(const char* key, E T::*m, const char* (*name)(E),
                   E (*parse)(const std::string&, const std::string&)) {
  return {key, [m, name](const T& v) { return nlohmann::json(name(v.*m)); },
          [m, parse](StrictObject& o, const std::string& k, T& v) {
            v.*m = parse(o.string(k), o.field(k));
          },
          {}};
}

/// A row whose key may be absent (or null): the member keeps its default.
template <class T>
JsonField<T> may_be_absent(JsonField<T> f) {
  f.absent = [](T&) {};
  return f;
}

/// A row written only when `written` holds; absent, the member keeps its default.
template <class T>
JsonField<T> only_when(JsonField<T> f,
                       std::type_identity_t<std::function<bool(const T&)>> written) {
  f.write = [w = std::move(f.write), written](const T& v) { return written(v) ? w(v) : left_out(); };
  return may_be_absent(std::move(f));
}

/// A row whose value read must satisfy `ok`; else an InputError naming the key with `message`.
template <class T>
JsonField<T> checked(JsonField<T> f, std::type_identity_t<std::function<bool(const T&)>> ok,
                     std::string message) {
  f.read = [r = std::move(f.read), ok, message](StrictObject& o, const std::string& k, T& v) {
    r(o, k, v);
    if (!ok(v)) throw InputError(o.field(k), message);
  };
  return f;
}

/// An int member with "none" below zero: written as null, and absent or null read as -1.
template <class T>
JsonField<T> or_null(const char* key, int T::*m) {
  return {key,
          [m](const T& v) { return v.*m >= 0 ? nlohmann::json(v.*m) : nlohmann::json(); },
          [m](StrictObject& o, const std::string& k, T& v) { v.*m = o.integer(k); },
          [m](T& v) { v.*m = -1; }};
}

/// A member struct written as a nested object by its own rows.
template <class T, class M>
JsonField<T> nested(const char* key, M T::*m, const JsonFields<M>& (*rows)()) {
  return {key, [m, rows](const T& v) { return write_fields(rows(), v.*m); },
          [m, rows](StrictObject& o, const std::string& k, T& v) {
            StrictObject inner = o.object(k);
            read_fields(rows(), inner, v.*m);
            inner.finish();
          },
          {}};
}

}  // namespace shardplan
