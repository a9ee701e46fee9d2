// The tests' way to a Device's switches and capabilities (test_util.h: ScopedSwitch). device.h
// comes first: it includes volk, which must precede any Vulkan header.
#include "device.h"
#include "test_util.h"

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

}  // namespace vt
