"""The `fusec` command of the wheel: `fusec graph.mlir -o kernel.ptx`,
`fusec run`, `fusec tune`, ... as build/bin/fusec has them (README.md,
"The driver"). pip installs it as a console script; `python -m fusec` is
the same.

The driver's code is inside libfusec_jit.so (with the one copy of
LLVM/MLIR the wheel carries), which exports its entry, fusec_main(argc,
argv); this calls it and exits with its status.
"""

import ctypes
import os
import signal
import sys


def main(argv=None):
    args = sys.argv[1:] if argv is None else list(argv)
    from . import _capi
    try:
        entry = _capi.jit.fusec_main
    except AttributeError:
        sys.stderr.write(
            "fusec: %s has no fusec_main (a library built before the "
            "driver was part of it); rebuild and reinstall the package, or "
            "point FUSEC_LIBRARY_DIR at a newer build\n"
            % os.path.join(_capi._library_dir(), "libfusec_jit.so"))
        return 1
    entry.restype = ctypes.c_int
    entry.argtypes = [ctypes.c_int, ctypes.POINTER(ctypes.c_char_p)]
    # argv[0] as the executable's: the script's path (LLVM's messages name
    # it: "Try: '/usr/local/bin/fusec --help'"), plain fusec for -m.
    program = sys.argv[0] if argv is None and os.path.basename(
        sys.argv[0]) == "fusec" else "fusec"
    argv_c = [os.fsencode(a) for a in [program] + args]
    array = (ctypes.c_char_p * (len(argv_c) + 1))(*argv_c, None)
    # As for the executable: Ctrl-C and a closed pipe end the process.
    # Python would note SIGINT and wait for the call to return, and it
    # ignores SIGPIPE; a SIGINT ignored by the parent (a background job)
    # stays ignored, as it would for the executable.
    if signal.getsignal(signal.SIGINT) is signal.default_int_handler:
        signal.signal(signal.SIGINT, signal.SIG_DFL)
    if hasattr(signal, "SIGPIPE"):
        signal.signal(signal.SIGPIPE, signal.SIG_DFL)
    sys.stdout.flush()
    sys.stderr.flush()
    return entry(len(argv_c), array)


if __name__ == "__main__":
    sys.exit(main())
