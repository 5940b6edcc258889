// Which delegate backends this runtime registered: printed at start (ETFARM_BACKENDS) and in the
// result line, so the manifest says what the runtime could run. The one-line refusal of a program
// whose delegate is not registered is `unsupported()` in etfarm_runner.cpp (from the .pte itself).
// Backends register themselves from static initialisers, so the list is complete
// when main() starts.
#pragma once

#include <cstdio>
#include <string>
#include <vector>

#include <executorch/runtime/backend/interface.h>

namespace etfarm {

inline std::vector<std::string> registered_backends() {
  std::vector<std::string> names;
  const size_t count = ::executorch::runtime::get_num_registered_backends();
  for (size_t i = 0; i < count; ++i) {
    auto name = ::executorch::runtime::get_backend_name(i);
    if (name.ok() && name.get() != nullptr) names.emplace_back(name.get());
  }
  return names;
}

// ["XnnpackBackend", ...]: backend names are C identifiers, no escaping needed.
inline std::string backends_json() {
  std::string out = "[";
  for (const auto& name : registered_backends()) out += (out.size() > 1 ? ", \"" : "\"") + name + "\"";
  return out + "]";
}

// One line on stdout: "ETFARM_BACKENDS [...]".
inline void print_backends() {
  std::printf("ETFARM_BACKENDS %s\n", backends_json().c_str());
  std::fflush(stdout);
}

}  // namespace etfarm
