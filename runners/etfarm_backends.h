// Which delegate backends this runtime registered, and a one-line check that a
// method's delegates are among them. Without it a .pte whose delegate the runtime
// lacks (a QNN or Vulkan program on the wheel's runtime) fails inside load_method
// with a runtime log and a bare NotFound; here it fails naming the backend.
// Backends register themselves from static initialisers, so the list is complete
// when main() starts.
#pragma once

#include <cstdio>
#include <string>
#include <vector>

#include <executorch/runtime/backend/interface.h>
#include <executorch/runtime/executor/method_meta.h>

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

// The first backend the method delegates to that this runtime does not register; "" when none.
inline std::string missing_backend(const ::executorch::runtime::MethodMeta& meta) {
  for (size_t i = 0; i < meta.num_backends(); ++i) {
    auto name = meta.get_backend_name(i);
    if (name.ok() && ::executorch::runtime::get_backend_class(name.get()) == nullptr) return name.get();
  }
  return "";
}

inline std::string missing_backend_message(const std::string& program, const std::string& backend) {
  std::string registered;
  for (const auto& name : registered_backends()) registered += (registered.empty() ? "" : ", ") + name;
  return "program '" + program + "' is delegated to " + backend + ", which this runtime does not register (registered: " +
         (registered.empty() ? "none" : registered) + "); build the runner against a runtime that has it";
}

}  // namespace etfarm
