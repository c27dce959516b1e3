"""A PEP 517 build backend for the fusec Python module, with no build
requirements: it builds the two libraries the module loads (or takes them
from an existing build) and writes the wheel itself.

Config settings (pip --config-settings key=value; -C key=value from pip 23.1):
  build-dir   ($FUSEC_BUILD_DIR) a configured fusec build to take libfusec_jit.so and
              libfusec_runtime.so from (default: build-python, configured
              with LLVM/MLIR linked statically, so that the wheel runs on
              machines without LLVM; built on first use)
  skip-build  1: take the libraries as they are, without running ninja
              (the lit test does, inside a running build)
  progress    0 ($FUSEC_BUILD_PROGRESS=0): no progress lines on the terminal

pip shows a backend's output only with -v. The first build takes minutes,
so while pip hides it the build's stage and percentage also go to the
user's terminal (/dev/tty), when there is one.

The wheel's platform tag is the manylinux_2_N tag (PEP 600) that the
libraries' ELF version needs allow (the glibc, libstdc++ and libgcc_s
versions they need, and only libraries every such system has), else
linux_x86_64 with a warning that says why.
"""

import base64
import hashlib
import os
import re
import shutil
import subprocess
import sys
import sysconfig
import tempfile
import time
import zipfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
PACKAGE = os.path.join(ROOT, "python", "fusec")

# The metadata pyproject.toml's [project] table also states (checked in
# _check_pyproject): NumPy for fusec.reference, the `fusec` command.
SUMMARY = "Fused, tiled CUDA kernels from graphs of deep-learning operators"
REQUIRES_PYTHON = ">=3.8"
DEPENDENCIES = ["numpy"]
SCRIPTS = {"fusec": "fusec.__main__:main"}
# torch.compile(backend="fusec") finds the backend through this entry point.
ENTRY_POINTS = {"torch_dynamo_backends": {"fusec": "fusec.torch:backend"}}


def _version():
    with open(os.path.join(ROOT, "CMakeLists.txt")) as f:
        return re.search(r"project\(fusec VERSION ([0-9.]+)", f.read()).group(1)


class _Progress:
    """Says what the build is doing. Everything goes to stderr, which pip
    shows only with -v; while stderr is not a terminal (pip has it), the
    stages and the build's percentage (at each tenth, or each minute) also
    go to the user's terminal, if there is one."""

    def __init__(self, settings):
        self.tty = None
        self.fresh = True
        self.start = time.monotonic()
        self.last = (-1, 0.0)
        enabled = (settings.get("progress") or os.environ.get(
            "FUSEC_BUILD_PROGRESS") or "1") not in ("0", "false", "no")
        if enabled and not _isatty(sys.stderr):
            try:
                self.tty = open("/dev/tty", "w")
            except OSError:
                pass

    def say(self, message):
        print("fusec_build: " + message, file=sys.stderr, flush=True)
        self.terminal(message)

    def terminal(self, message):
        if not self.tty:
            return
        try:
            # pip's spinner sits at the end of its line: the first message
            # starts a new line, later ones write over the spinner's mark.
            self.tty.write(("\n" if self.fresh else "\r\033[K") +
                           "  fusec_build: " + message + "\n")
            self.tty.flush()
            self.fresh = False
        except OSError:
            self.tty = None

    def elapsed(self):
        seconds = int(time.monotonic() - self.start)
        return "%d:%02d" % (seconds // 60, seconds % 60)

    def run(self, command, **kwargs):
        """Runs `command`, its output to stderr line by line, with ninja's
        "[done/total]" lines as percentages on the terminal."""
        process = subprocess.Popen(command, stdout=subprocess.PIPE,
                                   stderr=subprocess.STDOUT, **kwargs)
        for raw in process.stdout:
            sys.stderr.write(raw.decode("utf-8", "replace"))
            sys.stderr.flush()
            m = re.match(rb"\[(\d+)/(\d+)\]", raw)
            if m and self.tty:
                done, total = int(m.group(1)), int(m.group(2))
                tenth = done * 10 // max(total, 1)
                now = time.monotonic()
                if tenth > self.last[0] or now - self.last[1] >= 60:
                    self.last = (tenth, now)
                    self.terminal("%3d%% (%d/%d steps), %s elapsed" % (
                        done * 100 // max(total, 1), done, total,
                        self.elapsed()))
        if process.wait():
            raise subprocess.CalledProcessError(process.returncode, command)


def _isatty(stream):
    try:
        return stream.isatty()
    except (AttributeError, ValueError):
        return False


def _say(message):
    print("fusec_build: " + message, file=sys.stderr, flush=True)


def _libraries(config_settings):
    """Paths of libfusec_jit.so and libfusec_runtime.so, built if needed."""
    settings = config_settings or {}
    build_dir = (settings.get("build-dir") or os.environ.get("FUSEC_BUILD_DIR")
                 or os.path.join(ROOT, "build-python"))
    build_dir = os.path.abspath(build_dir)
    targets = ["fusec_jit", "fusec_runtime"]
    if settings.get("skip-build") not in ("1", "true", "yes"):
        progress = _Progress(settings)
        if not os.path.exists(os.path.join(build_dir, "build.ninja")):
            progress.say(
                "first build: ./setup.sh installs what is missing, then "
                "configures %s with LLVM/MLIR linked statically and builds "
                "libfusec_jit.so: minutes (about 5 on two free cores once "
                "LLVM is installed); pip install -v . shows the build"
                % build_dir)
            env = dict(os.environ, BUILD_DIR=build_dir,
                       FUSEC_CMAKE_ARGS="-DFUSEC_LINK_MLIR_DYLIB=OFF")
            progress.run([os.path.join(ROOT, "setup.sh"), targets[0]],
                         cwd=ROOT, env=env)
        progress.say("building %s in %s" % (" ".join(targets), build_dir))
        progress.run(["ninja", "-C", build_dir] + targets)
        progress.say("built in %s" % progress.elapsed())
    jit = os.path.join(build_dir, "lib", "JIT", "libfusec_jit.so")
    runtime = os.path.join(build_dir, "runtime", "libfusec_runtime.so")
    for path in (jit, runtime):
        if not os.path.exists(path):
            raise RuntimeError("fusec_build: %s was not built" % path)
    needed = subprocess.run(["readelf", "-d", jit], capture_output=True,
                            text=True).stdout
    if "libMLIR" in needed or "libLLVM" in needed:
        _say("warning: %s links LLVM/MLIR dynamically; this wheel runs only "
             "where LLVM 22 is installed" % jit)
    return jit, runtime


# Libraries every Linux system of a manylinux tag has (PEP 600, as
# auditwheel's policies list them), beside the wheel's own.
SYSTEM_LIBRARIES = {
    "libc.so.6", "libm.so.6", "libdl.so.2", "librt.so.1", "libpthread.so.0",
    "libgcc_s.so.1", "libstdc++.so.6", "ld-linux-x86-64.so.2",
}
# From auditwheel's x86_64 manylinux policies: for manylinux_2_N (from N on,
# until the next row), the newest libstdc++ (GLIBCXX_) and libgcc_s (GCC_)
# symbol versions a library may need.
CXX_LIMITS = [(17, "3.4.19", "4.8.0"), (24, "3.4.22", "4.8.0"),
              (27, "3.4.24", "7.0.0"), (31, "3.4.28", "7.0.0"),
              (34, "3.4.29", "7.0.0"), (35, "3.4.30", "12.0.0"),
              (39, "3.4.33", "14.0.0")]


def _version_tuple(text):
    return tuple(int(x) for x in re.findall(r"\d+", text))


def _elf_needs(path):
    """The NEEDED libraries of a shared library and the symbol versions it
    needs of them (readelf)."""
    def readelf(flag):
        return subprocess.run(["readelf", "-W", flag, path],
                              capture_output=True, text=True,
                              check=True).stdout
    needed = re.findall(r"\(NEEDED\)\s+Shared library: \[([^\]]+)\]",
                        readelf("-d"))
    versions = readelf("-V")
    versions = versions[versions.find("Version needs section"):] \
        if "Version needs section" in versions else ""
    return needed, set(re.findall(r"Name: (\S+)", versions))


def _platform(paths):
    """The wheel's platform tag, what its libraries need of the system
    ({"TAG", "GLIBC", "GLIBCXX": "2.34", "3.4.29" or None, "LIBRARIES"})
    and why the tag is not manylinux (None where it is)."""
    platform = sysconfig.get_platform().replace("-", "_").replace(".", "_")
    needed, versions = set(), set()
    try:
        for path in paths:
            n, v = _elf_needs(path)
            needed.update(n)
            versions.update(v)
    except (OSError, subprocess.CalledProcessError) as e:
        return ({"TAG": platform, "GLIBC": None, "GLIBCXX": None,
                 "LIBRARIES": []},
                "readelf (binutils) could not read the libraries: %s" % e)
    own = {os.path.basename(p) for p in paths}

    def newest(prefix):
        found = [_version_tuple(v[len(prefix):]) for v in versions
                 if v.startswith(prefix)]
        return max(found) if found else ()

    glibc, glibcxx, gcc = newest("GLIBC_"), newest("GLIBCXX_"), newest("GCC_")
    needs = {"TAG": platform,
             "GLIBC": ".".join(map(str, glibc)) or None,
             "GLIBCXX": ".".join(map(str, glibcxx)) or None,
             "LIBRARIES": sorted(needed - own)}
    if platform != "linux_x86_64":
        return needs, "manylinux tags are worked out for x86_64 only"
    foreign = sorted(needed - own - SYSTEM_LIBRARIES)
    if foreign:
        return needs, ("the libraries need %s, which not every Linux system "
                       "has" % ", ".join(foreign))
    for n in range(max(glibc[1] if len(glibc) > 1 else 17, 17), 100):
        row = [r for r in CXX_LIMITS if r[0] <= n][-1]
        if glibcxx <= _version_tuple(row[1]) and gcc <= _version_tuple(row[2]):
            needs["TAG"] = "manylinux_2_%d_x86_64" % n
            return needs, None
    return needs, ("no manylinux policy allows libstdc++ %s and libgcc_s %s"
                   % (needs["GLIBCXX"], ".".join(map(str, gcc))))


def _record_line(name, data):
    digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest())
    return "%s,sha256=%s,%d" % (name, digest.rstrip(b"=").decode(), len(data))


def _metadata(version):
    return ("Metadata-Version: 2.1\nName: fusec\nVersion: %s\n"
            "Summary: %s\nRequires-Python: %s\n" % (
                version, SUMMARY, REQUIRES_PYTHON) +
            "".join("Requires-Dist: %s\n" % d for d in DEPENDENCIES))


def _entry_points():
    groups = dict(ENTRY_POINTS, console_scripts=SCRIPTS)
    return "\n".join("[%s]\n" % group + "".join(
        "%s = %s\n" % item for item in sorted(groups[group].items()))
        for group in sorted(groups))


def _check_pyproject():
    """pyproject.toml's [project] table states the same metadata (tools
    read it without asking the backend); fail where the two disagree."""
    try:
        import tomllib
    except ImportError:  # Python < 3.11: not checked
        return
    with open(os.path.join(ROOT, "pyproject.toml"), "rb") as f:
        project = tomllib.load(f)["project"]
    stated = (project.get("dependencies", []), project.get("scripts", {}),
              project.get("entry-points", {}),
              project.get("requires-python"), project.get("description"))
    if stated != (DEPENDENCIES, SCRIPTS, ENTRY_POINTS, REQUIRES_PYTHON,
                  SUMMARY):
        raise RuntimeError(
            "fusec_build: pyproject.toml's [project] (dependencies, scripts, "
            "entry-points, requires-python, description) differs from what python/"
            "fusec_build.py writes into the wheel; change both together")


def _platform_module(needs):
    return ("# Written by python/fusec_build.py: what this wheel's libraries "
            "need of the system\n# (readelf -V); the ImportError of "
            "_capi.py states it when they fail to load.\n" +
            "".join("%s = %r\n" % (k, needs[k]) for k in
                    ("TAG", "GLIBC", "GLIBCXX", "LIBRARIES"))).encode()


def get_requires_for_build_wheel(config_settings=None):
    return []


def prepare_metadata_for_build_wheel(metadata_directory,
                                     config_settings=None):
    _check_pyproject()
    version = _version()
    info = "fusec-%s.dist-info" % version
    os.makedirs(os.path.join(metadata_directory, info), exist_ok=True)
    with open(os.path.join(metadata_directory, info, "METADATA"), "w") as f:
        f.write(_metadata(version))
    with open(os.path.join(metadata_directory, info, "entry_points.txt"),
              "w") as f:
        f.write(_entry_points())
    return info


def build_wheel(wheel_directory, config_settings=None,
                metadata_directory=None):
    _check_pyproject()
    version = _version()
    jit, runtime = _libraries(config_settings)
    needs, why = _platform([jit, runtime])
    if why:
        _say("warning: tagged %s, not manylinux: %s" % (needs["TAG"], why))
    files = {}
    for name in sorted(os.listdir(PACKAGE)):
        if name.endswith(".py") and name != "_platform.py":
            with open(os.path.join(PACKAGE, name), "rb") as f:
                files["fusec/" + name] = f.read()
    files["fusec/_platform.py"] = _platform_module(needs)
    with tempfile.TemporaryDirectory() as tmp:
        for path in (jit, runtime):
            stripped = os.path.join(tmp, os.path.basename(path))
            shutil.copyfile(path, stripped)
            # Debug sections are most of libfusec_jit.so's size.
            if shutil.which("strip"):
                subprocess.check_call(["strip", "--strip-unneeded", stripped])
            with open(stripped, "rb") as f:
                files["fusec/" + os.path.basename(path)] = f.read()
    tag = "py3-none-" + needs["TAG"]
    info = "fusec-%s.dist-info" % version
    files[info + "/METADATA"] = _metadata(version).encode()
    files[info + "/entry_points.txt"] = _entry_points().encode()
    files[info + "/WHEEL"] = ("Wheel-Version: 1.0\nGenerator: fusec_build\n"
                              "Root-Is-Purelib: false\nTag: %s\n"
                              % tag).encode()
    record = [_record_line(n, d) for n, d in files.items()]
    record.append(info + "/RECORD,,")
    files[info + "/RECORD"] = ("\n".join(record) + "\n").encode()

    wheel = "fusec-%s-%s.whl" % (version, tag)
    # Written beside the target and renamed: no half-written wheel is left.
    partial = os.path.join(wheel_directory, wheel + ".partial")
    with zipfile.ZipFile(partial, "w", zipfile.ZIP_DEFLATED) as z:
        for name, data in files.items():
            zi = zipfile.ZipInfo(name, date_time=(2020, 1, 1, 0, 0, 0))
            zi.external_attr = (0o755 if name.endswith(".so") else 0o644) << 16
            zi.compress_type = zipfile.ZIP_DEFLATED
            z.writestr(zi, data)
    os.replace(partial, os.path.join(wheel_directory, wheel))
    _say("wrote %s" % wheel)
    return wheel
