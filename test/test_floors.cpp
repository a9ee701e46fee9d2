// lib/'s folders and floors (lib/README.md, "The folders" and "The floors"): the folders run one
// way (a folder includes only itself and those before it), every room includes only rooms on its
// floor or below and names the folder of what it includes, every lib source file is placed in
// its folder on a floor, and none is over 600 lines.
#include <filesystem>
#include <fstream>
#include <map>
#include <regex>
#include <set>
#include <sstream>
#include <string>
#include <vector>

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

// The rows of one of lib/README.md's tables, from its heading to the next.
std::vector<std::string> Rows(const std::string& heading) {
  const std::string readme = Read(kLib / "README.md");
  const size_t at = readme.find("\n## " + heading + "\n");
  REQUIRE(at != std::string::npos);
  const size_t end = readme.find("\n## ", at + 1);
  std::istringstream lines(readme.substr(at, end == std::string::npos ? end : end - at));
  std::vector<std::string> rows;
  for (std::string line; std::getline(lines, line);)
    if (line.rfind("| ", 0) == 0) rows.push_back(line);
  return rows;
}

// The folders table: each folder's place in the order, bottom first.
std::map<std::string, int> Folders() {
  std::map<std::string, int> folders;
  const std::regex row(R"(^\| (\d+) \| `([a-z_]+)/` \|.*\|$)");
  for (const std::string& line : Rows("The folders")) {
    std::smatch m;
    if (!std::regex_match(line, m, row)) continue;
    INFO(m[2] << " is listed twice");
    CHECK(folders.emplace(m[2], std::stoi(m[1])).second);
  }
  return folders;
}

struct Room {
  int floor;
  std::string folder;
};

// The floors table: each room (its path from lib/) with its floor and folder.
std::map<std::string, Room> Floors() {
  std::map<std::string, Room> floors;
  const std::regex row(R"(^\| (\d+) [^|]*\| `([a-z_]+)/` \| (.*) \|$)"),
      room("`([a-z_0-9]+\\.(h|cpp))`");
  for (const std::string& line : Rows("The floors")) {
    std::smatch m;
    if (!std::regex_match(line, m, row)) continue;
    const int floor = std::stoi(m[1]);
    const std::string folder = m[2], rooms = m[3];
    for (std::sregex_iterator r(rooms.begin(), rooms.end(), room), end; r != end; ++r) {
      const std::string path = folder + "/" + (*r)[1].str();
      INFO(path << " is placed twice");
      CHECK(floors.emplace(path, Room{floor, folder}).second);
    }
  }
  return floors;
}

}  // namespace

TEST_CASE("Floors: lib/'s includes point down, every file placed, none over 600 lines",
          "[floors]") {
  const std::map<std::string, int> folders = Folders();
  REQUIRE(folders.size() == 3);
  const std::map<std::string, Room> floors = Floors();
  REQUIRE(floors.size() > 40);
  std::set<std::string> names;  // the rooms' file names, to catch an include without its folder
  for (const auto& [path, room] : floors) names.insert(fs::path(path).filename().string());

  // Each room's folder is one the folders table lists, and the floors run through the folders in
  // order: a room of an earlier folder is on a lower floor than any room of a later one.
  for (const auto& [path, room] : floors) {
    INFO(path << ": its folder is not in the folders table");
    REQUIRE(folders.count(room.folder) == 1);
  }
  for (const auto& [a, ra] : floors)
    for (const auto& [b, rb] : floors)
      if (folders.at(ra.folder) < folders.at(rb.folder)) {
        INFO(a << " (floor " << ra.floor << ", " << ra.folder << "/) and " << b << " (floor "
               << rb.floor << ", " << rb.folder << "/)");
        CHECK(ra.floor < rb.floor);
      }

  // An include of a lib/ header, by its path from lib/ (interface.h, spirv_table.h and
  // vkdml/vkdml.h are not lib/'s).
  const std::regex include(R"(#include "([a-z_0-9/]+\.h)\")");
  int files = 0, includes = 0, acrossFolders = 0;
  for (const auto& entry : fs::recursive_directory_iterator(kLib)) {
    const std::string ext = entry.path().extension().string();
    if (ext != ".h" && ext != ".cpp") continue;
    const std::string name = entry.path().lexically_relative(kLib).generic_string();
    ++files;
    INFO(name);
    const auto own = floors.find(name);
    CHECK(own != floors.end());  // placed in lib/README.md's table, in the folder it sits in
    if (own == floors.end()) continue;
    const std::string text = Read(entry.path());
    CHECK(std::count(text.begin(), text.end(), '\n') <= 600);
    for (std::sregex_iterator i(text.begin(), text.end(), include), end; i != end; ++i) {
      const std::string target = (*i)[1];
      const auto to = floors.find(target);
      if (to == floors.end()) {
        INFO(name << " includes " << target << ": a lib/ header is included by its path from lib/");
        CHECK(names.count(fs::path(target).filename().string()) == 0);
        continue;
      }
      ++includes;
      acrossFolders += to->second.folder != own->second.folder;
      INFO(name << " (floor " << own->second.floor << ") includes " << target << " (floor "
                << to->second.floor << ")");
      CHECK(to->second.floor <= own->second.floor);
      CHECK(folders.at(to->second.folder) <= folders.at(own->second.folder));
    }
  }
  CHECK(files == int(floors.size()));  // no room in the table that lib/ lacks
  CHECK(includes > 60);
  CHECK(acrossFolders > 10);  // the folders' order is checked on real includes
}

// VK_KHR_portability_subset (MoltenVK) may leave out events, image-view reinterpretation and
// swizzles, some samplers, triangle fans, tessellation modes, stencil and blend details:
// vkdml, buffers and compute only, must call none of that (lib/device/device_plan.cpp enables the
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
