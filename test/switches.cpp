// The tests' way to a Device's switches and capabilities (test_util.h: ScopedSwitch). device.h
// comes first: it includes volk, which must precede any Vulkan header.
#include "device/device.h"
#include "test_util.h"

#include <algorithm>
#include <set>

namespace vt {

using vkdml::detail::DeviceImpl;
using vkdml::detail::Switches;

ScopedSwitch::ScopedSwitch(const char* name, const char* value, Device& device)
    : ScopedEnv(name, value), device_(device) {
  auto& impl = static_cast<DeviceImpl&>(device);
  old_ = impl.GetSwitches();
  Switches now;
  const Result r = Switches::Read(&now);
  INFO(name << "=" << (value ? value : "") << ": " << r.message);
  REQUIRE(r.ok());
  impl.SetSwitches(now);
}

ScopedSwitch::~ScopedSwitch() {
  static_cast<DeviceImpl&>(device_).SetSwitches(old_);
}

vkdml::detail::Capabilities CapabilitiesOf(const Device& device) {
  return static_cast<const DeviceImpl&>(device).Caps();
}

Switches SwitchesOf(const Device& device) {
  return static_cast<const DeviceImpl&>(device).GetSwitches();
}

vkdml::detail::KernelSet Chosen(const DML_OPERATOR_DESC& desc, UINT flags) {
  vkdml::detail::OperatorImpl op;
  REQUIRE(vkdml::detail::BuildOperator(desc, &op).ok());
  vkdml::detail::KernelSet set;
  const Result r = vkdml::detail::ChooseKernels(op, flags, CapabilitiesOf(Dev()), &set);
  INFO(Str(r));
  REQUIRE(r.ok());
  return set;
}

size_t WindowsHolding(const vkdml::detail::Kernel& k, UINT64 total,
                      const std::vector<UINT64>& firsts, UINT64 bytes) {
  std::set<UINT64> begins;
  for (const auto& d : k.large) {
    begins.insert(d.indexed.begin);
    const UINT64 bound = std::min(total, d.indexed.end + k.indexedReach);
    for (UINT64 first : firsts) {
      if (first < d.indexed.begin || first >= d.indexed.end) continue;
      INFO("a piece of " << bytes << " bytes from byte " << first << ", window [" << d.indexed.begin
                         << ", " << d.indexed.end << ")");
      CHECK((first + bytes + 3) / 4 * 4 <= bound);  // the words holding its bytes
    }
  }
  return begins.size();
}

}  // namespace vt
