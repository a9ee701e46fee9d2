// lib/'s floors (lib/README.md, "The floors"): every room includes only rooms on its floor or
// below, every lib source file is placed on a floor, and none is over 600 lines.
#include <filesystem>
#include <fstream>
#include <map>
#include <regex>
#include <set>
#include <sstream>
#include <string>

#include "test_util.h"

using namespace vt;
namespace fs = std::filesystem;

namespace {

const fs::path kLib = fs::path(VKDML_TEST_SOURCE_DIR) / "lib";

std::string Read(const fs::path& p) {
  std::ifstream in(p);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

// The floors table of lib/README.md: each room's floor.
std::map<std::string, int> Floors() {
  std::map<std::string, int> floors;
  const std::string readme = Read(kLib / "README.md");
  const size_t at = readme.find("## The floors");
  REQUIRE(at != std::string::npos);
  std::istringstream lines(readme.substr(at));
  const std::regex row(R"(^\| (\d+) [^|]*\| (.*) \|$)"), room("`([a-z_0-9]+\\.(h|cpp))`");
  std::string line;
  while (std::getline(lines, line)) {
    std::smatch m;
    if (!std::regex_match(line, m, row)) continue;
    const int floor = std::stoi(m[1]);
    const std::string rooms = m[2];
    for (std::sregex_iterator r(rooms.begin(), rooms.end(), room), end; r != end; ++r) {
      INFO((*r)[1] << " is placed twice");
      CHECK(floors.emplace((*r)[1], floor).second);
    }
  }
  return floors;
}

}  // namespace

TEST_CASE("Floors: lib/'s includes point down, every file placed, none over 600 lines",
          "[floors]") {
  const std::map<std::string, int> floors = Floors();
  REQUIRE(floors.size() > 40);
  // An include of a lib/ header, with or without the folder it sits in (lib/'s include root).
  const std::regex include(R"(#include "(?:[a-z_]+/)?([a-z_0-9]+\.h)\")");
  int files = 0, includes = 0;
  for (const auto& entry : fs::recursive_directory_iterator(kLib)) {
    const std::string name = entry.path().filename().string();
    const std::string ext = entry.path().extension().string();
    if (ext != ".h" && ext != ".cpp") continue;
    ++files;
    INFO(name);
    const auto own = floors.find(name);
    CHECK(own != floors.end());  // placed in lib/README.md's table
    if (own == floors.end()) continue;
    const std::string text = Read(entry.path());
    CHECK(std::count(text.begin(), text.end(), '\n') <= 600);
    for (std::sregex_iterator i(text.begin(), text.end(), include), end; i != end; ++i) {
      const std::string target = (*i)[1];
      const auto to = floors.find(target);
      if (to == floors.end()) continue;  // not lib/'s: interface.h, spirv_table.h
      ++includes;
      INFO(name << " (floor " << own->second << ") includes " << target << " (floor " << to->second
                << ")");
      CHECK(to->second <= own->second);
    }
  }
  CHECK(files == int(floors.size()));  // no room in the table that lib/ lacks
  CHECK(includes > 60);
}

// VK_KHR_portability_subset (MoltenVK) may leave out events, image-view reinterpretation and
// swizzles, some samplers, triangle fans, tessellation modes, stencil and blend details:
// vkdml, buffers and compute only, must call none of that (lib/device_plan.cpp enables the
// subset where a device has it).
TEST_CASE("Floors: lib/ uses nothing VK_KHR_portability_subset may leave out", "[floors]") {
  const std::regex call(R"(\bvk(Cmd)?[A-Z][A-Za-z0-9]+)");
  const std::regex restricted(
      "Event|Image|Sampler|Graphics|RenderPass|Framebuffer|Draw|Blend|Stencil|Tessellation|Vertex");
  std::set<std::string> calls;
  for (const auto& entry : fs::recursive_directory_iterator(kLib)) {
    const std::string ext = entry.path().extension().string();
    if (ext != ".h" && ext != ".cpp") continue;
    const std::string text = Read(entry.path());
    for (std::sregex_iterator i(text.begin(), text.end(), call), end; i != end; ++i)
      calls.insert(i->str());
  }
  CHECK(calls.count("vkCmdDispatch") == 1);  // the walk sees the calls
  CHECK(calls.size() > 50);
  for (const std::string& c : calls) {
    INFO(c);
    CHECK(!std::regex_search(c, restricted));
  }
}
