// Building Results with readable messages.
#pragma once

#include <sstream>
#include <string>
#include <utility>

#include "vkdml/vkdml.h"

namespace vkdml::detail {

template <typename... Args>
std::string Str(Args&&... args) {
  std::ostringstream s;
  (s << ... << std::forward<Args>(args));
  return s.str();
}

template <typename... Args>
Result Fail(Status status, Args&&... args) {
  return Result{status, Str(std::forward<Args>(args)...)};
}

#define VKDML_TRY(expr)          \
  do {                           \
    ::vkdml::Result r_ = (expr); \
    if (!r_.ok()) return r_;     \
  } while (0)

}  // namespace vkdml::detail
