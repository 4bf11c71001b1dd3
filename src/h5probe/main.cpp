// ddptrain-h5probe FILE: walks the HDF5 structure of FILE as ddptrain's readers will (every group,
// dataset and attribute, with the chunk index of every dataset and the value of every one-value
// attribute), in a process of its own, before ddptrain opens the file itself (h5/h5_probe.hpp).
//
// Why a separate process: libhdf5 itself crashes on some damaged files, whatever its caller does.
// Found by tests/fuzz (inputs in tests/fuzz/hdf5_crashes): HDF5 1.10 reads a damaged global heap
// (variable-length strings) with a wild memcpy, frees a bad pointer after a failed allocation in
// H5Fopen, uses freed memory in H5Aexists, and allocates without end for two damaged object
// headers (the kernel's OOM killer ended ddptrain at 24 GiB); HDF5 1.14 still does the last.
// A crash, an exhausted memory limit or time limit here costs this process only, and ddptrain
// refuses the file with one line (exit 3).
//
// Exit status: 0 when the walk ended (a file HDF5 refuses cleanly is the caller's to report, as
// is every ordinary error); 4 when HDF5 failed to allocate memory under the limit below; anything
// else (a signal, an abort) means the file is not safe to read.
// It prints nothing unless asked (DDPTRAIN_H5PROBE_VERBOSE=1 shows HDF5's error stack).
#include <hdf5.h>
#include <sys/resource.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "../h5/h5_probe_contract.hpp"  // the probe target has no include path of ddptrain_core

namespace {

// Address space the walk may take (the damaged headers in tests/fuzz/hdf5_crashes asked for 1.7 GB
// at once, then more).
constexpr rlim_t kAddressSpaceBytes = ddpt::probe::kAddressSpaceBytes;
// CPU time the walk may take, beyond any deadline of its caller.
constexpr rlim_t kCpuSeconds = 600;
// Beyond these a file is not one ddptrain wrote or reads; a cycle of hard links would not end.
constexpr int kMaxDepth = 64;
constexpr hsize_t kMaxLinksPerGroup = 1000000;
constexpr int kNeedsTooMuchMemory = ddpt::probe::kNeedsTooMuchMemory;

#if defined(__has_feature)
#if __has_feature(address_sanitizer)
#define DDPT_PROBE_ASAN 1
#endif
#endif
#if defined(__SANITIZE_ADDRESS__)
#define DDPT_PROBE_ASAN 1
#endif

#ifdef DDPT_PROBE_ASAN
constexpr bool kAddressSanitizer = true;
#else
constexpr bool kAddressSanitizer = false;
#endif

// Set when HDF5 reported an allocation that failed (under the limit above): a file whose
// structure needs gigabytes is damaged, and ddptrain, which has no such limit, would grow until
// the kernel kills it (two of the inputs above: 24 GiB).
bool allocation_failed = false;
bool print_errors = false;  // DDPTRAIN_H5PROBE_VERBOSE=1

herr_t note_allocation_failure(unsigned /*depth*/, const H5E_error2_t* error, void* /*data*/) {
  // "No space available for allocation" (H5MM) and "Can't allocate space" (the metadata cache's
  // image buffers, under any major error class); a read-only walk allocates no file space.
  if (error->min_num == H5E_NOSPACE || error->min_num == H5E_CANTALLOC) {
    allocation_failed = true;
  }
  return 0;
}

// HDF5 calls this for every API call that fails, with its error stack.
herr_t on_hdf5_error(hid_t stack, void* /*data*/) {
  H5Ewalk2(stack, H5E_WALK_DOWNWARD, note_allocation_failure, nullptr);
  if (print_errors) H5Eprint2(stack, stderr);
  return 0;
}

herr_t read_attribute(hid_t object, const char* name, const H5A_info_t* /*info*/, void* /*data*/) {
  const hid_t attribute = H5Aopen(object, name, H5P_DEFAULT);
  if (attribute < 0) return 0;
  const hid_t type = H5Aget_type(attribute);
  const hid_t space = H5Aget_space(attribute);
  // The readers read one-value attributes only (h5_attribute.cpp), in these memory types.
  if (type >= 0 && space >= 0 && H5Sget_simple_extent_npoints(space) == 1) {
    const H5T_class_t type_class = H5Tget_class(type);
    if (type_class == H5T_STRING) {
      const hid_t text_type = H5Tcopy(H5T_C_S1);
      H5Tset_size(text_type, H5T_VARIABLE);
      H5Tset_cset(text_type, H5T_CSET_UTF8);
      char* text = nullptr;
      if (H5Aread(attribute, text_type, &text) >= 0) H5free_memory(text);
      H5Tclose(text_type);
    } else if (type_class == H5T_INTEGER || type_class == H5T_FLOAT) {
      int64_t integer = 0;
      double real = 0;
      H5Aread(attribute, H5T_NATIVE_INT64, &integer);
      H5Aread(attribute, H5T_NATIVE_DOUBLE, &real);
    }
  }
  if (space >= 0) H5Sclose(space);
  if (type >= 0) H5Tclose(type);
  H5Aclose(attribute);
  return 0;
}

void read_attributes(hid_t object) {
  hsize_t position = 0;
  H5Aiterate2(object, H5_INDEX_NAME, H5_ITER_INC, &position, read_attribute, nullptr);
  // The readers ask for names that may be missing (a checkpoint's optional state): such a
  // lookup searches the whole attribute and link storage.
  H5Aexists(object, "ddptrain-h5probe: a missing name");
  if (H5Iget_type(object) == H5I_GROUP) {
    H5Lexists(object, "ddptrain-h5probe: a missing name", H5P_DEFAULT);
  }
}

void walk_dataset(hid_t dataset) {
  const hid_t type = H5Dget_type(dataset);
  const hid_t space = H5Dget_space(dataset);
  const hid_t creation = H5Dget_create_plist(dataset);
  if (space >= 0) {
    std::vector<hsize_t> dims(H5S_MAX_RANK);
    H5Sget_simple_extent_dims(space, dims.data(), nullptr);
  }
  if (creation >= 0) {
    const int filters = H5Pget_nfilters(creation);
    for (int i = 0; i < filters && i < 32; ++i) {
      unsigned flags = 0;
      size_t values = 0;
      unsigned config = 0;
      H5Pget_filter2(creation, static_cast<unsigned>(i), &flags, &values, nullptr, 0, nullptr,
                     &config);
    }
    H5Pclose(creation);
  }
  H5Dget_storage_size(dataset);  // walks the chunk index
  if (space >= 0) H5Sclose(space);
  if (type >= 0) H5Tclose(type);
  read_attributes(dataset);
}

void walk_group(hid_t group, int depth) {
  read_attributes(group);
  if (depth >= kMaxDepth) return;
  H5G_info_t info{};
  if (H5Gget_info(group, &info) < 0) return;
  for (hsize_t i = 0; i < info.nlinks && i < kMaxLinksPerGroup; ++i) {
    const ssize_t length =
        H5Lget_name_by_idx(group, ".", H5_INDEX_NAME, H5_ITER_INC, i, nullptr, 0, H5P_DEFAULT);
    if (length < 0) continue;
    std::string name(static_cast<size_t>(length) + 1, '\0');
    H5Lget_name_by_idx(group, ".", H5_INDEX_NAME, H5_ITER_INC, i, name.data(), name.size(),
                       H5P_DEFAULT);
    name.resize(static_cast<size_t>(length));
    const hid_t object = H5Oopen(group, name.c_str(), H5P_DEFAULT);
    if (object < 0) continue;
    switch (H5Iget_type(object)) {
      case H5I_GROUP:
        walk_group(object, depth + 1);
        break;
      case H5I_DATASET:
        walk_dataset(object);
        break;
      default:
        break;
    }
    H5Oclose(object);
  }
}

}  // namespace

#ifdef DDPT_PROBE_ASAN
// The fuzzing build: AddressSanitizer reserves terabytes of address space for its shadow, so the
// address-space limit below cannot apply; its own limits do (ASAN_OPTIONS may override them).
// One allocation above 1 GiB fails at once (HDF5 reports it, and the walk ends with
// kNeedsTooMuchMemory) instead of growing towards the RSS limit, which takes seconds.
extern "C" const char* __asan_default_options() {
  return "max_allocation_size_mb=1024:hard_rss_limit_mb=2048:allocator_may_return_null=1:"
         "detect_leaks=0";
}
#endif

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: ddptrain-h5probe FILE\n");
    return 2;
  }
  if (!kAddressSanitizer) {
    const rlimit limit{kAddressSpaceBytes, kAddressSpaceBytes};
    setrlimit(RLIMIT_AS, &limit);
  }
  // The caller kills the probe at its deadline (h5/h5_probe.cpp); this ends one whose caller died
  // first, looping in a damaged file.
  const rlimit cpu{kCpuSeconds, kCpuSeconds};
  setrlimit(RLIMIT_CPU, &cpu);
  const char* verbose = std::getenv("DDPTRAIN_H5PROBE_VERBOSE");
  print_errors = verbose != nullptr && std::string(verbose) == "1";
  H5Eset_auto2(H5E_DEFAULT, on_hdf5_error, nullptr);
  hid_t file = H5Fopen(argv[1], H5F_ACC_RDONLY, H5P_DEFAULT);
  if (file < 0) {  // a file a writer holds in SWMR mode opens so (H5File::open_read)
    const hid_t access = H5Pcreate(H5P_FILE_ACCESS);
    H5Pset_metadata_read_attempts(access, ddpt::probe::kSwmrReadAttempts);
    file = H5Fopen(argv[1], H5F_ACC_RDONLY | H5F_ACC_SWMR_READ, access);
    H5Pclose(access);
  }
  // _Exit: no HDF5 shutdown at exit, which after a damaged file prints "infinite loop closing
  // library" on the user's terminal.
  if (file < 0) std::_Exit(allocation_failed ? kNeedsTooMuchMemory : 0);  // else the caller says
  const hid_t root = H5Gopen2(file, "/", H5P_DEFAULT);
  if (root >= 0) {
    walk_group(root, 0);
    H5Gclose(root);
  }
  H5Fclose(file);
  std::_Exit(allocation_failed ? kNeedsTooMuchMemory : 0);
}
