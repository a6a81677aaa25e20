// Writes one C++ source that compiles the usage examples of a directory's public headers, so CI
// builds (and runs) what each header shows its reader. Build-time tool of
// tests/header_examples/; no athanor dependency.
//
//   extract_examples OUT.cpp INCLUDE_ROOT athanor/nn/module.h athanor/nn/linear.h ...
//
// The example of a header is the code in its opening comment: every run of lines indented by
// three or more spaces after the `//` that follows a blank comment line (`//`) or a line ending
// in ':'. (A bullet's continuation lines are indented too, but follow the bullet, not a blank.)
// Examples are written as user code after `#include "athanor/athanor.h"` and
// `using namespace ath;`; whatever else they use they define or include themselves.
// Their top-level items are sorted by their first line:
// - `#include` lines go to the top of the file;
// - `struct`, `class`, `enum`, `template`, `static`, `namespace` items, function definitions
//   (`Type name(args) {`) and argument-less macros (`ATH_SHORT_OPENMP_SPIN();`) go to namespace
//   scope, one namespace per header;
// - everything else is a statement of that namespace's run(), in order.
// `#line` directives point every line back into its header, so a compile error names the header.
// assert() is live (NDEBUG undefined): an example states a result as `assert(numel(s) == 6);`.
#include <cstdio>
#include <fstream>
#include <iostream>
#include <regex>
#include <sstream>
#include <string>
#include <vector>

namespace {

struct CodeLine {
  int header_line;   // 1-based line number in the header
  std::string text;  // without the `//   ` prefix (deeper indentation kept)
};

// One top-level item of an example: its first line and the deeper-indented lines that follow,
// with a closing top-level `}` / `)` line.
struct Item {
  std::vector<CodeLine> lines;
  bool at_namespace_scope = false;
  bool is_include = false;
};

bool starts_with(const std::string& s, const std::string& prefix) {
  return s.compare(0, prefix.size(), prefix) == 0;
}

bool is_blank_comment(const std::string& line) {
  return line.find_first_not_of("/ \t") == std::string::npos && starts_with(line, "//");
}

bool is_code_line(const std::string& line) { return starts_with(line, "//   "); }

bool ends_with_colon(const std::string& line) {
  size_t end = line.find_last_not_of(" \t");
  return end != std::string::npos && line[end] == ':';
}

// The opening comment's code lines, in order.
std::vector<CodeLine> example_lines(const std::string& path) {
  std::ifstream in(path);
  if (!in) throw std::runtime_error("cannot open " + path);
  std::vector<CodeLine> code;
  std::string line, previous = "//";
  bool in_block = false;
  for (int number = 1; std::getline(in, line) && starts_with(line, "//"); ++number) {
    if (is_code_line(line)) {
      if (!in_block) in_block = is_blank_comment(previous) || ends_with_colon(previous);
      if (in_block) code.push_back({number, line.substr(5)});
    } else {
      in_block = false;
    }
    previous = line;
  }
  return code;
}

bool opens_namespace_item(const std::string& first) {
  static const std::regex keyword(R"(^(struct|class|enum|template|static|namespace|union)\b)");
  // `Type name(args) [const] [noexcept] [override] {`: a function definition. Statements that end
  // in `) {` are control flow (excluded by name) or lambdas (they contain '=' or '[').
  static const std::regex function(
      R"(^[A-Za-z_][\w:<>,*& ]*[\s*&]([A-Za-z_]\w*)\([^=\[]*\)\s*(const\s*)?(noexcept\s*)?\{\s*$)");
  static const std::regex control(R"(^(if|for|while|switch|do|else|return)\b)");
  static const std::regex declaring_macro(R"(^[A-Z][A-Z0-9_]*\(\);)");
  if (std::regex_search(first, keyword) || std::regex_search(first, declaring_macro)) return true;
  return std::regex_search(first, function) && !std::regex_search(first, control);
}

std::vector<Item> split_items(const std::vector<CodeLine>& code) {
  std::vector<Item> items;
  for (const CodeLine& line : code) {
    bool top_level = !line.text.empty() && line.text[0] != ' ';
    bool closes = top_level && (line.text[0] == '}' || line.text[0] == ')');
    if (top_level && !closes) {
      Item item;
      item.is_include = starts_with(line.text, "#include");
      item.at_namespace_scope = opens_namespace_item(line.text);
      items.push_back(item);
    } else if (items.empty()) {
      items.emplace_back();  // an indented first line: a statement continued
    }
    items.back().lines.push_back(line);
  }
  return items;
}

std::string namespace_name(const std::string& header) {
  std::string name = "header_example_";
  for (char c : header.substr(0, header.size() - 2)) name += std::isalnum(c) ? c : '_';
  return name;
}

void write_lines(std::ostream& out, const std::string& path, const std::vector<CodeLine>& lines,
                 const std::string& indent) {
  int expected = -1;
  for (const CodeLine& line : lines) {
    if (line.header_line != expected)
      out << "#line " << line.header_line << " \"" << path << "\"\n";
    out << indent << line.text << "\n";
    expected = line.header_line + 1;
  }
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 3) {
    std::cerr << "usage: extract_examples OUT.cpp INCLUDE_ROOT HEADER...\n";
    return 2;
  }
  std::string root = argv[2];
  std::ostringstream includes, bodies;
  includes << "// Generated by tests/header_examples/extract_examples.cpp: do not edit.\n"
           << "#undef NDEBUG\n#include <cassert>\n"
           << "#include \"athanor/athanor.h\"\n#include \"header_example_registry.h\"\n";
  for (int i = 3; i < argc; ++i) {
    std::string header = argv[i];
    std::string path = root + "/" + header;
    std::vector<Item> items = split_items(example_lines(path));
    includes << "#include \"" << header << "\"\n";
    if (items.empty()) continue;
    std::string ns = namespace_name(header);
    bodies << "\nnamespace " << ns << " {\nusing namespace ath;\n";
    for (const Item& item : items) {
      if (item.is_include) write_lines(includes, path, item.lines, "");
      if (!item.is_include && item.at_namespace_scope) write_lines(bodies, path, item.lines, "");
    }
    bodies << "void run() {\n";
    for (const Item& item : items) {
      if (!item.is_include && !item.at_namespace_scope) write_lines(bodies, path, item.lines, "  ");
    }
    // The registrar's line would otherwise be counted on from the header's last example line.
    bodies << "}\n#line 1 \"header_examples_registration\"\nconst bool registered = "
           << "header_examples::add(\"" << header << "\", &run);\n}  // namespace " << ns << "\n";
  }
  std::ostringstream text;
  text << includes.str() << bodies.str();
  // Rewrite only on change, so an unchanged directory is not recompiled.
  std::ifstream old(argv[1]);
  std::stringstream old_text;
  old_text << old.rdbuf();
  if (old && old_text.str() == text.str()) return 0;
  std::ofstream(argv[1]) << text.str();
  return 0;
}
