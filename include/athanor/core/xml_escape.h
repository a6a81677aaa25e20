// xml_escape: text made safe for HTML/XML text and attribute values — what every HTML page and
// SVG picture athanor writes (the Trainer's report, the compiler's debug page) puts user-given
// names through.
//
//   assert(xml_escape("a < b & \"c\"") == "a &lt; b &amp; &quot;c&quot;");
#pragma once

#include <string>

namespace ath {

// Escapes & < > " ' as entities; every other character is copied.
std::string xml_escape(const std::string& s);

}  // namespace ath
