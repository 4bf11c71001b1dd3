#!/usr/bin/env python3
"""Rules of the source tree that a compiler does not check.

1. Layers: a file in src/LAYER/ includes only its own layer and the layers below it:
   util -> config -> state -> runtime -> comm, h5 -> data -> models -> ddp -> optim -> step -> run
   -> io -> setup -> app.
   The engine (ddp/) sits above the models it runs: a model calls its blocks through the
   interface models/unit_runner.hpp, which ddp/ implements.
2. Length: no function body in src/ is longer than 60 lines, apart from the declarative option
   table (config/parse_config.cpp's make_table).
3. Agreements: outside comm/ and runtime/, no MPI collective is called directly (nor the raw
   string helpers of runtime/gather_strings.hpp): ranks agree through comm/host_group.hpp, whose
   collectives the watchdog watches, so a rank that never arrives ends the job with exit code 5
   naming it instead of leaving the others waiting.
4. HDF5: outside h5/, no HDF5 identifier, type or constant and no <hdf5.h>: files, groups and
   datasets are objects (h5/h5_object.hpp, h5/h5_node.hpp) whose methods make the HDF5 calls.
   h5probe/ is the exception: the probe program walks a file with the C library alone, in a
   process of its own, on purpose (h5/h5_probe.hpp).
5. Reads back: in ddp/, state/, optim/, step/ and run/, no tensor value is read back to the
   host (.item(), .cpu(), a copy to kCPU) except through util/host_read.hpp, which counts them:
   on a GPU each read waits for the queued work, and the test of train.step_checks = device
   counts the reads of a step (tests/mpi/test_guards.cpp).
6. Faults: no production type keeps a member for a test. Outside setup/test_faults.*, which reads
   the DDPTRAIN_TEST_* variables into a util/fault_injector.hpp injector, no string is a
   DDPTRAIN_TEST_ variable's name alone (what getenv() is given; a message may name one) and no
   identifier starts with test_ or ends in _for_test.
7. The deck: outside config/, setup/ and app/, no file includes config/config.hpp or the headers
   of its sections (config/sections.hpp, config/batch_size.hpp, config/parse_config.hpp). Each
   component takes options of its own, which setup/ fills from the deck in one place
   (setup/run_options.cpp, and the factories setup/make_datasets.cpp and setup/make_model.cpp),
   so what a part reads of the deck is in its options and nothing below setup/ reads a section.
   share/dev/deck_walk/ shows the walk this keeps short.

Usage: source_rules.py SRC_DIR. Prints every violation; exit status 1 if there is one.
"""
import pathlib
import re
import sys

LAYERS = ["util", "config", "state", "runtime", "comm", "h5", "data", "models", "ddp", "optim",
          "step", "run", "generate", "io", "setup", "app"]
# Layers side by side: neither includes the other.
PEERS = {frozenset({"comm", "h5"})}
MAX_LINES = 60
EXEMPT_FUNCTIONS = {("config/parse_config.cpp", "make_table")}
COLLECTIVE_LAYERS = {"comm", "runtime"}
HDF5_DIRECTORIES = {"h5", "h5probe"}
COUNTED_READ_LAYERS = {"ddp", "optim", "step", "run", "state"}
RAW_READ = re.compile(r"(\.item\s*(<[^>]*>)?\s*\(|\.cpu\s*\(|\bto\s*\(\s*(torch|at|c10)::kCPU\b)")
WHOLE_DECK_LAYERS = {"config", "setup", "app"}
WHOLE_DECK = re.compile(
    r'^[ \t]*#[ \t]*include[ \t]*"(config/(?:config|sections|batch_size|parse_config)\.hpp)"', re.M)
TEST_FAULT_FILES = {"setup/test_faults.hpp", "setup/test_faults.cpp"}
TEST_MEMBER = re.compile(r"\b(test_\w+|\w+_for_test)\b")
TEST_VARIABLE = re.compile(r'"(DDPTRAIN_TEST_\w*)"')  # the name alone: what getenv() is given
RAW_HDF5 = re.compile(r"\b(hid_t|hsize_t|herr_t|htri_t|hdf5_id|H5[A-Z]_[A-Z0-9_]+)\b")
HDF5_HEADER = re.compile(r"^[ \t]*#[ \t]*include[ \t]*<(hdf5|H5[A-Za-z_]*)\.h>", re.M)
RAW_COLLECTIVE = re.compile(
    r"\b(MPI_(?:I?(?:Allreduce|Reduce|Bcast|Barrier|Allgatherv?|Gatherv?|Scatterv?|Alltoallv?|"
    r"Reduce_scatter(?:_block)?|Scan|Exscan)|Comm_dup|Comm_split(?:_type)?|Comm_create)"
    r"|all_gather_strings|broadcast_string)\s*\(")


def blank_comments_and_strings(text):
    text = re.sub(r"//[^\n]*", "", text)
    text = re.sub(r"^[ \t]*#.*$", "", text, flags=re.M)  # not \s: it would eat blank lines
    text = re.sub(r"/\*.*?\*/", lambda m: re.sub(r"[^\n]", "", m.group(0)), text, flags=re.S)
    text = re.sub(r'"(\\.|[^"\\\n])*"', '""', text)
    return re.sub(r"'(\\.|[^'\\\n])*'", "''", text)


def long_functions(path, text):
    """(first line, lines, header) of every function body longer than MAX_LINES."""
    found, stack, starts, header, line = [], [], [], "", 1
    for ch in blank_comments_and_strings(text):
        if ch == "\n":
            line += 1
        if ch == "{":
            h = " ".join(header.split())
            at_scope = all(kind in ("namespace", "class") for kind in stack)
            if re.match(r"^namespace\b", h) or h.startswith('extern ""'):
                kind = "namespace"
            elif re.search(r"\b(class|struct|union)\b", h) and "(" not in h:
                kind = "class"
            elif at_scope and "(" in h and not re.match(r"^(if|for|while|switch|return)\b", h) \
                    and not h.endswith("="):
                kind = "function"
            else:
                kind = "block"
            stack.append(kind)
            starts.append((line, h))
            header = ""
        elif ch == "}":
            kind = stack.pop()
            first, h = starts.pop()
            if kind == "function" and line - first + 1 > MAX_LINES:
                found.append((first, line - first + 1, h))
            header = ""
        elif ch == ";":
            header = ""
        else:
            header += ch
    return found


def raw_hdf5(relative, text):
    """Rule 4: every HDF5 identifier, type, constant or header outside h5/."""
    found = [f"{relative}:{text.count(chr(10), 0, m.start()) + 1}: <{m.group(1)}.h> outside h5/"
             for m in HDF5_HEADER.finditer(text)]
    for i, row in enumerate(blank_comments_and_strings(text).split("\n"), 1):
        for match in RAW_HDF5.finditer(row):
            found.append(f"{relative}:{i}: {match.group(1)} outside h5/: use the objects of "
                         f"h5/h5_node.hpp and h5/h5_object.hpp")
    return found


def test_hooks(relative, text):
    """Rule 6: a test's member or variable outside setup/test_faults.*."""
    found = []
    code = blank_comments_and_strings(text)
    for i, (row, raw) in enumerate(zip(code.split("\n"), text.split("\n")), 1):
        for match in TEST_MEMBER.finditer(row):
            found.append(f"{relative}:{i}: {match.group(1)}: a test's member in production code; "
                         f"ask util/fault_injector.hpp's FaultInjector instead")
        if not raw.lstrip().startswith("//"):
            for match in TEST_VARIABLE.finditer(raw):
                found.append(f"{relative}:{i}: {match.group(1)} read outside "
                             f"setup/test_faults.cpp, which makes the faults tests ask for")
    return found


def main():
    src = pathlib.Path(sys.argv[1])
    problems = []
    for path in sorted(src.rglob("*.[ch]pp")):
        relative = path.relative_to(src).as_posix()
        text = path.read_text()
        layer = relative.split("/")[0] if "/" in relative else None
        if layer in LAYERS:
            for i, row in enumerate(text.split("\n"), 1):
                match = re.match(r'#include "([a-z_]+)/', row)
                if not match or match.group(1) not in LAYERS:
                    continue
                target = match.group(1)
                if frozenset({layer, target}) in PEERS or \
                        LAYERS.index(target) > LAYERS.index(layer):
                    problems.append(f"{relative}:{i}: layer {layer}/ includes {target}/, which "
                                    f"sits above it ({' -> '.join(LAYERS)})")
        if layer not in COLLECTIVE_LAYERS:
            code = blank_comments_and_strings(text)
            for i, row in enumerate(code.split("\n"), 1):
                for match in RAW_COLLECTIVE.finditer(row):
                    problems.append(f"{relative}:{i}: {match.group(1)} outside comm/ and "
                                    f"runtime/: agree through HostGroup (comm/host_group.hpp), "
                                    f"which the watchdog watches")
        if layer not in HDF5_DIRECTORIES:
            problems += raw_hdf5(relative, text)
        if layer in COUNTED_READ_LAYERS:
            code = blank_comments_and_strings(text)
            for i, row in enumerate(code.split("\n"), 1):
                for match in RAW_READ.finditer(row):
                    problems.append(f"{relative}:{i}: {match.group(1).strip()} in {layer}/: read "
                                    f"back through util/host_read.hpp, which counts the reads")
        if relative not in TEST_FAULT_FILES:
            problems += test_hooks(relative, text)
        if layer not in WHOLE_DECK_LAYERS and relative != "main.cpp":
            for match in WHOLE_DECK.finditer(text):
                line = text.count("\n", 0, match.start()) + 1
                problems.append(f"{relative}:{line}: includes {match.group(1)}, the deck's: take "
                                f"options of the component's own, filled in setup/run_options.cpp")
        for first, lines, header in long_functions(path, text):
            name = re.sub(r"\(.*", "", header).split()[-1].split("::")[-1]
            if (relative, name) in EXEMPT_FUNCTIONS:
                continue
            problems.append(f"{relative}:{first}: {header[:70]}... is {lines} lines "
                            f"(at most {MAX_LINES})")
    for problem in problems:
        print(problem)
    print(f"source rules: {len(problems)} violation(s) in {src}")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
