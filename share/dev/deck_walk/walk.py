#!/usr/bin/env python3
"""The deck's walk through the source tree, from a call trace of one training run.

What reads the deck: a function with a parameter whose type is the deck (config/config.hpp's
Config), one of its sections (every struct of config/config.hpp and config/sections.hpp), or a
class that keeps one of those as a member (an options struct carrying a section carries the
deck); a member function of such a class whose body names that member; the walk's root,
train_command, which holds the Config parse_config returns. Not reads: parse_config's own
functions (the deck's making), copies, moves and destructors, and a lambda unless its own
parameters are of those types.

The walk is the sequence of files those functions are defined in, in the order the run's main
thread enters them; a function handed the deck is a read in its caller's file too (the caller
named what it passed), so the nearest reading caller's file comes first. Consecutive reads in
one file are one stay. A climb is a stay in a higher layer (tests/lint/source_rules.py's LAYERS)
than the stay before it: a return to a caller above, or a call up through an interface.

Usage: walk.py --binary DDPTRAIN --src SRC_DIR --trace TRACE [--verbose]
TRACE is what call_trace.c wrote for one rank; deck_walk.sh makes all three.
"""
import argparse
import pathlib
import re
import subprocess
import sys


def layers_of(src):
    rules = (src.parent / "tests/lint/source_rules.py").read_text()
    return re.findall(r'"(\w+)"', re.search(r"^LAYERS = \[(.*?)\]", rules, re.S | re.M).group(1))


def deck_types(src):
    names = set()
    for header in ("config/config.hpp", "config/sections.hpp"):
        path = src / header
        if path.exists():
            names.update(re.findall(r"^struct (\w+)\s*\{", path.read_text(), re.M))
    return names


def deck_holders(src, types):
    """Class name -> the names of its members whose type is the deck, a section, or (in turn)
    such a class: an options struct that carries a section carries the deck."""
    headers = [path.read_text() for path in src.rglob("*.hpp")
               if path.relative_to(src).parts[0] != "config"]
    holders = {}
    while True:
        member = re.compile(r"^\s+(?:const\s+)?(?:std::(?:optional|shared_ptr|unique_ptr)<)?"
                            r"(?:%s)>?\s*[&*]?\s+(\w+)\s*(?:\{[^}]*\}|=[^;(]*)?;"
                            % "|".join(sorted(types | set(holders))))
        found = {name: set(members) for name, members in holders.items()}
        for text in headers:
            current = None
            for line in text.split("\n"):
                opened = re.match(r"^(?:class|struct)\s+(\w+)\b[^;]*$", line)
                matched = member.match(line)
                if opened:
                    current = opened.group(1)
                elif current and matched:
                    found.setdefault(current, set()).add(matched.group(1))
        if found == holders:
            return holders
        holders = found


def resolve(binary, offsets):
    """offset -> (demangled name, file, line) for every function in the trace."""
    found = subprocess.run(["addr2line", "-f", "-C", "-e", binary] + offsets,
                           capture_output=True, text=True, check=True).stdout.split("\n")
    functions = {}
    for i, offset in enumerate(offsets):
        file, _, line = found[2 * i + 1].partition(" ")[0].rpartition(":")
        functions[offset] = (found[2 * i], file, int(line) if line.isdigit() else 0)
    return functions


def body_at(path, line):
    """The text of the function whose definition starts at `line` of `path`: up to the brace
    that closes the first one opened there."""
    text = pathlib.Path(path).read_text().split("\n")[max(line - 1, 0):]
    body, depth = [], 0
    for row in text:
        body.append(row)
        depth += row.count("{") - row.count("}")
        if depth <= 0 and "{" in "".join(body):
            break
    return "\n".join(body)


def split_name(name):
    """(qualified name, parameters) of a demangled function name."""
    name = name.replace("(anonymous namespace)", "{anonymous}")
    depth = 0
    for i, ch in enumerate(name):
        if ch in "<":
            depth += 1
        elif ch in ">":
            depth -= 1
        elif ch == "(" and depth == 0:
            return name[:i], name[i:]
    return name, ""


def kind_of(function, roots, types, holders):
    """'param' (handed the deck, or the walk's root), 'member' (reads the one it keeps) or None.
    Copies, moves and destructors are not reads."""
    name, path, line = function
    qualified, params = split_name(name)
    if "::~" in name:
        return None  # a destructor, a closure's too
    if "{lambda(" in params:  # a lambda is judged by its own parameters, not its enclosing one's
        params = params.rpartition("::operator()")[2]
    if qualified in roots:
        return "param"
    if path.endswith("config/parse_config.cpp"):
        return None  # the deck's making: the walk starts where parse_config returns it
    special = re.match(r"ddpt::(\w+)::(~?\w+|operator=)$", qualified)
    if special and (special.group(2) == "~" + special.group(1) or (
            special.group(2) in (special.group(1), "operator=") and
            re.match(r"\((ddpt::%s( const)?&&?)?\)" % special.group(1), params))):
        return None
    if re.search(r"\bddpt::(%s)\b" % "|".join(types | set(holders)), params):
        return "param"
    owner = re.match(r"ddpt::(\w+)::", qualified)
    if owner and owner.group(1) in holders and re.search(
            r"\b(%s)\b" % "|".join(holders[owner.group(1)]), body_at(path, line)):
        return "member"
    return None


def walk(trace, functions, src, roots, types, holders):
    reads, stack, kinds = [], [], {}
    for line in trace:
        if line.startswith(">"):
            function = functions[line[2:].strip()]
            name, path, _ = function
            file = relative_source(path, src)
            if name not in kinds:
                kinds[name] = kind_of(function, roots, types, holders) if file else None
            kind = kinds[name]
            if kind == "param":
                caller = next((f for f in reversed(stack) if f), None)
                if caller:
                    reads.append(caller)
            if kind:
                reads.append((file, name))
            stack.append((file, name) if kind else None)
        elif stack:
            stack.pop()
    stays = []
    for file, name in reads:
        if not stays or stays[-1][0] != file:
            stays.append((file, [name]))
        elif name not in stays[-1][1]:
            stays[-1][1].append(name)
    return stays


def relative_source(path, src):
    try:
        return pathlib.Path(path).resolve().relative_to(src.resolve()).as_posix()
    except ValueError:
        return None


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--binary", required=True)
    parser.add_argument("--src", required=True, type=pathlib.Path)
    parser.add_argument("--trace", required=True)
    parser.add_argument("--verbose", action="store_true", help="the functions of each stay")
    args = parser.parse_args()
    layers = layers_of(args.src)
    types = deck_types(args.src)
    holders = deck_holders(args.src, types)
    trace = open(args.trace).read().split("\n")
    offsets = sorted({line[2:].strip() for line in trace if line.startswith(">")})
    functions = resolve(args.binary, offsets)
    stays = walk(trace, functions, args.src, {"ddpt::train_command"}, types, holders)

    def layer(file):
        top = file.split("/")[0]
        return layers.index(top) if top in layers else -1

    climbs = 0
    for i, (file, names) in enumerate(stays):
        climb = i > 0 and layer(file) > layer(stays[i - 1][0])
        climbs += climb
        print(f"{i + 1:3d}. {file} [{file.split('/')[0]}]" + (f"  climb {climbs}" if climb else ""))
        if args.verbose:
            for name in names:
                print(f"       {name}")
    visits = sum(file == "app/train_command.cpp" for file, _ in stays)
    memory = sum(file == "setup/memory_check.cpp" for file, _ in stays)
    print(f"stays {len(stays)}, climbs {climbs}, train subcommand's file visited {visits}, "
          f"memory check entered {memory}")
    print(f"deck types: {', '.join(sorted(types))}; keep one: {', '.join(sorted(holders))}",
          file=sys.stderr)


if __name__ == "__main__":
    main()
