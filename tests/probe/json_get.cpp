// Prints the JSON value at a dotted path (numbers as numbers, strings bare), for shell tests:
//   json_get FILE fit.tiers.inter.collectives.send_recv.busbw_gb_per_s
// `-` reads stdin. Exit 1 when the path is missing.
#include <fstream>
#include <iostream>
#include <nlohmann/json.hpp>
#include <sstream>

int main(int argc, char** argv) {
  if (argc != 3) {
    std::cerr << "usage: json_get FILE|- a.b.0.c\n";
    return 2;
  }
  nlohmann::json j;
  try {
    if (std::string(argv[1]) == "-") {
      j = nlohmann::json::parse(std::cin);
    } else {
      std::ifstream in(argv[1]);
      j = nlohmann::json::parse(in);
    }
  } catch (const std::exception& e) {
    std::cerr << "json_get: " << argv[1] << ": " << e.what() << "\n";
    return 2;
  }
  const nlohmann::json* at = &j;
  std::stringstream path(argv[2]);
  for (std::string key; std::getline(path, key, '.');) {
    if (at->is_array() && !key.empty() &&
        key.find_first_not_of("0123456789") == std::string::npos && std::stoul(key) < at->size()) {
      at = &(*at)[std::stoul(key)];
    } else if (at->is_object() && at->contains(key)) {
      at = &(*at)[key];
    } else {
      std::cerr << "json_get: no '" << key << "' in " << argv[2] << "\n";
      return 1;
    }
  }
  std::cout << (at->is_string() ? at->get<std::string>() : at->dump()) << "\n";
  return 0;
}
