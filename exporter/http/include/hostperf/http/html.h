#pragma once

#include <string>
#include <string_view>

namespace hostperf::http {

// The HTML pages' building blocks, free of any page's content.

// `text` safe inside HTML text and quoted attribute values (& < > " ').
std::string HtmlEscape(std::string_view text);

}  // namespace hostperf::http
