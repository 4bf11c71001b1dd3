// The text of an error line, shared by every place that reports an error and ends the process
// (app/report_error.cpp on the training thread, the background checkpoint writer).
#pragma once

#include <exception>
#include <string>

namespace ddpt {

// What follows "ddptrain: error: ": the message (for a LibTorch error, without the C++ stack
// trace of dozens of lines its what() carries), then " (at file:line)" where one of ours says
// where it was raised and `with_where` asks for it.
std::string error_text(const std::exception& error, bool with_where = true);

}  // namespace ddpt
