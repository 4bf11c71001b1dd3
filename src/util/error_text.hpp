// How an error is reported, shared by every place that reports one and ends the process
// (comm/report_error.cpp on the training thread, the background checkpoint writer).
#pragma once

#include <exception>
#include <string>

namespace ddpt {

// What follows "ddptrain: error: ": the message (for a LibTorch error, without the C++ stack
// trace of dozens of lines its what() carries), then " (at file:line)" where one of ours says
// where it was raised and `with_where` asks for it.
std::string error_text(const std::exception& error, bool with_where = true);

// The exit code the error ends the process with: its own, or kInternal for one not ours.
int exit_code_of(const std::exception& error);

// "[rank R host] ddptrain: error: TEXT" on stderr, flushed: an error only this rank knows.
void print_rank_error(const std::exception& error);

}  // namespace ddpt
