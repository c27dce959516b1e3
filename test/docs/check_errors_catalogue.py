# RUN: %python %s --self-test | FileCheck %s --check-prefix=SELF
# SELF: self-test passed
#
# Checks docs/Errors.md, the error catalogue, against the tests that back it
# (test/docs/errors-catalogue.test runs it on the real catalogue; the RUN line
# above checks the checker on catalogues that are wrong on purpose).
#
#   check_errors_catalogue.py CATALOGUE REPO_ROOT
#   check_errors_catalogue.py --self-test
#
# An entry is a row of a table whose header is exactly
#
#   | What went wrong | Message | Code | Test |
#
# Message holds one or more code spans, each a message (or its distinctive
# part) as a user sees it; `…` (U+2026) stands for a variable part (a file
# name, a number, a shape). Test holds code spans naming files by their path
# from the repository root: at least one test (under test/ or python/tests/),
# optionally the source that emits the message. Code may hold code spans: a
# fusec::runtime::StatusCode name or a FUSEC_* constant must exist in the
# headers that define them.
#
# An entry passes when every listed file exists and every message is found in
# one listed file: its literal parts (the text between the `…`) in order, each
# within a short gap of the one before, on one line (in C++ and Python, after
# adjacent string literals are joined and \" unescaped, so a message split
# over several literals is found whole). A message found only in a listed
# source file, not in a test, is allowed where its test checks a keyword or
# the exception type only; the summary counts those entries.
#
# Prints "N catalogue entries backed by tests" and exits 0, or prints every
# entry that fails and exits 1.

import os
import re
import sys
import tempfile

HEADER = ["What went wrong", "Message", "Code", "Test"]
PLACEHOLDER = "\u2026"
# The most characters between two literal parts of one message.
MAX_GAP = 200
# A message must say this much literally to identify anything.
MIN_LITERAL = 6
TEST_DIRS = ("test/", "python/tests/")
CODE_SUFFIXES = (".cpp", ".h", ".c", ".py")
STATUS_HEADER = "runtime/include/fusec/runtime/Status.h"
C_HEADERS = ("runtime/include/fusec/runtime/fusec_runtime.h",
             "include/fusec/fusec_jit.h")
PYTHON_NAMES = {"TypeError", "ValueError", "ImportError", "MemoryError",
                "RuntimeWarning", "fusec.Error"}


def split_cells(line):
    """The cells of a table row: split on | outside code spans, \\| kept."""
    cells, cur, i, n = [], [], 0, len(line)
    while i < n:
        c = line[i]
        if c == "\\" and i + 1 < n and line[i + 1] == "|":
            cur.append("\\|")
            i += 2
        elif c == "`":
            j = i
            while j < n and line[j] == "`":
                j += 1
            fence = line[i:j]
            end = line.find(fence, j)
            # An unmatched run of backticks is literal text.
            stop = j if end < 0 else end + len(fence)
            cur.append(line[i:stop])
            i = stop
        elif c == "|":
            cells.append("".join(cur))
            cur = []
            i += 1
        else:
            cur.append(c)
            i += 1
    cells.append("".join(cur))
    # A row starts and ends with |: drop the empty outer cells.
    if cells and not cells[0].strip():
        cells = cells[1:]
    if cells and not cells[-1].strip():
        cells = cells[:-1]
    return [c.strip() for c in cells]


def code_spans(cell):
    """The contents of the code spans of a cell, in order."""
    spans, i, n = [], 0, len(cell)
    while i < n:
        if cell[i] != "`":
            i += 1
            continue
        j = i
        while j < n and cell[j] == "`":
            j += 1
        fence = cell[i:j]
        end = cell.find(fence, j)
        if end < 0:
            break
        text = cell[j:end]
        # CommonMark strips one space each side when both are there (so
        # that a span can start or end with a backtick).
        if len(text) >= 2 and text[0] == " " and text[-1] == " " and \
                text.strip():
            text = text[1:-1]
        spans.append(text.replace("\\|", "|"))
        i = end + len(fence)
    return spans


def parse(catalogue_text):
    """[(line number, cells)] of every entry of every catalogue table, and
    [(line number, problem)] for malformed rows."""
    entries, problems = [], []
    in_table = False
    for number, line in enumerate(catalogue_text.splitlines(), 1):
        stripped = line.strip()
        if not stripped.startswith("|"):
            in_table = False
            continue
        cells = split_cells(stripped)
        if cells == HEADER:
            in_table = True
            continue
        if not in_table:
            continue
        if all(re.fullmatch(r":?-+:?", c) for c in cells):
            continue  # the delimiter row
        if len(cells) != len(HEADER):
            problems.append((number, "a catalogue row needs %d cells, this "
                             "one has %d" % (len(HEADER), len(cells))))
            continue
        entries.append((number, cells))
    return entries, problems


def normalize(text, path):
    """The text a message is looked up in: adjacent string literals joined
    and quotes unescaped in code; runs of blanks made one space."""
    if path.endswith(CODE_SUFFIXES):
        text = re.sub(r'"[ \t]*\n\s*"', "", text)   # "abc "\n   "def"
        text = re.sub(r'"[ \t]+"', "", text)        # "abc " "def"
        text = re.sub(r"'[ \t]*\n\s*'", "", text)   # Python's '...'\n'...'
        text = re.sub(r'\\(["\'\\])', r"\1", text)
    return re.sub(r"[ \t]+", " ", text)


def literal_parts(message):
    return [p for p in re.sub(r"[ \t]+", " ", message).split(PLACEHOLDER)
            if p]


def find(message, text, path):
    """Whether the literal parts of `message` occur in `text` in order, each
    within MAX_GAP characters of the previous one (and on its line outside
    code)."""
    parts = literal_parts(message)
    code = path.endswith(CODE_SUFFIXES)
    start = text.find(parts[0])
    while start >= 0:
        pos = start + len(parts[0])
        for part in parts[1:]:
            at = text.find(part, pos)
            if at < 0 or at - pos > MAX_GAP or \
                    (not code and "\n" in text[pos:at]):
                break
            pos = at + len(part)
        else:
            return True
        start = text.find(parts[0], start + 1)
    return False


def known_codes(root):
    """StatusCode enumerators and FUSEC_* constants, from the headers."""
    status, constants = set(), set()
    try:
        with open(os.path.join(root, STATUS_HEADER), encoding="utf-8") as f:
            body = f.read().split("enum class StatusCode", 1)[1]
            body = body.split("};", 1)[0]
            status = set(re.findall(r"^\s*([A-Z]\w*)\s*=", body, re.M))
    except (OSError, IndexError):
        pass
    for header in C_HEADERS:
        try:
            with open(os.path.join(root, header), encoding="utf-8") as f:
                constants |= set(re.findall(r"\b(FUSEC_[A-Z0-9_]+)\s*=",
                                            f.read()))
        except OSError:
            pass
    return status, constants


def check(catalogue, root):
    """(entries, failures, source-quoted entries), failures as
    [(line, message, why)]."""
    with open(catalogue, encoding="utf-8") as f:
        entries, problems = parse(f.read())
    failures = [(n, "", why) for n, why in problems]
    status, constants = known_codes(root)
    cache = {}

    def text_of(path):
        if path not in cache:
            with open(os.path.join(root, path), encoding="utf-8",
                      errors="replace") as f:
                cache[path] = normalize(f.read(), path)
        return cache[path]

    from_source = 0
    for number, (what, message_cell, code_cell, test_cell) in entries:
        messages = code_spans(message_cell)
        paths = code_spans(test_cell)
        label = messages[0] if messages else what
        if not messages:
            failures.append((number, what, "no message in backticks"))
            continue
        tests = [p for p in paths if p.startswith(TEST_DIRS)]
        if not tests:
            failures.append((number, label, "no backing test (a path under "
                             "test/ or python/tests/ in backticks)"))
            continue
        missing = [p for p in paths
                   if not os.path.isfile(os.path.join(root, p))]
        if missing:
            failures.append((number, label, "no such file: " +
                             ", ".join(missing)))
            continue
        for code in code_spans(code_cell):
            if code.startswith("FUSEC_"):
                if code not in constants:
                    failures.append((number, label, "%s is not defined in %s"
                                     % (code, " or ".join(C_HEADERS))))
            elif re.fullmatch(r"[A-Z][A-Za-z]+", code) and \
                    code not in PYTHON_NAMES and code not in status:
                failures.append((number, label, "%s is not a "
                                 "fusec::runtime::StatusCode (%s)"
                                 % (code, STATUS_HEADER)))
        quoted_from_source = False
        for message in messages:
            literal = "".join(literal_parts(message)).strip()
            if len(literal) < MIN_LITERAL:
                failures.append((number, message, "too little literal text "
                                 "to identify a message"))
                continue
            if any(find(message, text_of(p), p) for p in tests):
                continue
            if any(find(message, text_of(p), p) for p in paths
                   if p not in tests):
                quoted_from_source = True
                continue
            failures.append((number, message, "not found in " +
                             ", ".join(paths)))
        from_source += quoted_from_source
    return entries, failures, from_source


def report(catalogue, root):
    entries, failures, from_source = check(catalogue, root)
    bad_lines = {n for n, _, _ in failures}
    backed = sum(1 for n, _ in entries if n not in bad_lines)
    if not failures and entries:
        extra = ""
        if from_source:
            extra = (" (%d quote the source of a failure that their test "
                     "checks by keyword or exception type)" % from_source)
        print("%d catalogue entries backed by tests%s" % (backed, extra))
        return 0
    for number, message, why in failures:
        print("%s:%d: %s%s" % (catalogue, number,
                               "`%s`: " % message if message else "", why))
    print("%d of %d catalogue entries backed by tests; %d problems"
          % (backed, len(entries), len(failures)))
    return 1


def self_test():
    """The checker refuses what it must refuse."""
    with tempfile.TemporaryDirectory() as root:
        os.makedirs(os.path.join(root, "test"))
        os.makedirs(os.path.join(root, "lib"))
        os.makedirs(os.path.join(root, os.path.dirname(STATUS_HEADER)))
        with open(os.path.join(root, STATUS_HEADER), "w") as f:
            f.write("enum class StatusCode {\n  Ok = 0,\n  NoDriver = 4,\n};\n")
        with open(os.path.join(root, "test", "a.test"), "w") as f:
            f.write("CHECK: fusec: error: cannot open input file "
                    "'{{.*}}x.mlir': No such file\n"
                    "CHECK: first half\nCHECK: second half\n")
        with open(os.path.join(root, "test", "b.cpp"), "w") as f:
            f.write('EXPECT_EQ(m, "device 3 does not exist: this "\n'
                    '             "machine has \\"1\\" device");\n')
        with open(os.path.join(root, "lib", "c.cpp"), "w") as f:
            f.write('error = "Fortran-ordered arrays are not supported";\n')
        rows = [
            ("ok", "`fusec: error: cannot open input file '\u2026': "
             "No such file`", "exit 1", "`test/a.test`"),
            ("ok", "`this machine has \"1\" device`", "`NoDriver`",
             "`test/b.cpp`"),
            ("ok", "`Fortran-ordered arrays`", "", "`test/b.cpp` `lib/c.cpp`"),
            ("bad", "`first half\u2026second half`", "", "`test/a.test`"),
            ("bad", "`no such message`", "", "`test/a.test`"),
            ("bad", "`first half`", "", "`test/missing.test`"),
            ("bad", "`Fortran-ordered arrays`", "", "`lib/c.cpp`"),
            ("bad", "`first half`", "`NoSuchCode`", "`test/a.test`"),
            ("bad", "`err\u2026or`", "", "`test/a.test`"),
            ("bad", "no backticks", "", "`test/a.test`"),
        ]
        catalogue = os.path.join(root, "Errors.md")
        with open(catalogue, "w") as f:
            f.write("| " + " | ".join(HEADER) + " |\n|---|---|---|---|\n")
            for row in rows:
                f.write("| " + " | ".join(row) + " |\n")
            f.write("| too | few |\n")
        entries, failures, from_source = check(catalogue, root)
        failed = {n for n, _, _ in failures}
        # Rows are on lines 3...; the short row is the last line.
        expect = {3 + i for i, row in enumerate(rows) if row[0] == "bad"}
        expect.add(3 + len(rows))
        if len(entries) != len(rows) or failed != expect or from_source != 1:
            print("self-test FAILED: entries %d, failing lines %s (expected "
                  "%s), from source %d" % (len(entries), sorted(failed),
                                           sorted(expect), from_source))
            for failure in failures:
                print("  %d: %s: %s" % failure)
            return 1
    print("self-test passed")
    return 0


def main(argv):
    if argv[1:] == ["--self-test"]:
        return self_test()
    if len(argv) != 3:
        print("usage: check_errors_catalogue.py CATALOGUE REPO_ROOT | "
              "--self-test", file=sys.stderr)
        return 2
    return report(argv[1], argv[2])


if __name__ == "__main__":
    sys.exit(main(sys.argv))
