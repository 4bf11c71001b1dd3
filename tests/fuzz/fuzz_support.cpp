#include "fuzz_support.hpp"

#include <spdlog/spdlog.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <new>
#include <typeinfo>

#include "h5/h5_check.hpp"
#include "util/error.hpp"

namespace ddpt::fuzz {
namespace {

std::string make_scratch_dir() {
  // share/dev/fuzz.sh names a directory it removes afterwards: a crash skips the removal below.
  const char* named = std::getenv("DDPTRAIN_FUZZ_SCRATCH");
  const char* base = named                                       ? named
                     : std::filesystem::is_directory("/dev/shm") ? "/dev/shm"
                                                                 : "/tmp";
  std::string pattern = std::string(base) + "/ddptrain_fuzz_XXXXXX";
  if (mkdtemp(pattern.data()) == nullptr) {
    std::perror("mkdtemp");
    std::abort();
  }
  // Removed at exit, so that a fuzzing campaign of hours leaves nothing behind in /dev/shm.
  static const std::string removed_at_exit = pattern;
  std::atexit([] {
    std::error_code ec;
    std::filesystem::remove_all(removed_at_exit, ec);
  });
  return pattern;
}

[[noreturn]] void violated(const char* what, const std::string& message) {
  std::fprintf(stderr, "\n*** fuzz contract violated: %s: %s\n", what, message.c_str());
  std::fflush(stderr);
  std::abort();
}

}  // namespace

const std::string& scratch_dir() {
  static const std::string dir = make_scratch_dir();
  return dir;
}

std::string write_input(const uint8_t* data, size_t size, const std::string& name) {
  const std::string path = scratch_dir() + "/" + name;
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(reinterpret_cast<const char*>(data), static_cast<std::streamsize>(size));
  out.close();
  if (!out) violated("scratch file", "cannot write " + path);
  return path;
}

void quiet_logging() {
  spdlog::set_level(spdlog::level::off);
  detail::silence_hdf5_error_printing();
}

void check_contract(void (*body)(void*), void* context) {
  try {
    body(context);
  } catch (const Error& e) {
    const int code = static_cast<int>(e.code());
    if (code == static_cast<int>(ExitCode::kUsage) || code == static_cast<int>(ExitCode::kData))
      return;
    violated(("ddpt::Error with exit code " + std::to_string(code)).c_str(), e.what());
  } catch (const std::bad_alloc& e) {
    violated("std::bad_alloc", e.what());
  } catch (const std::exception& e) {
    violated(typeid(e).name(), e.what());
  } catch (...) {
    violated("unknown exception", "(not derived from std::exception)");
  }
}

}  // namespace ddpt::fuzz
