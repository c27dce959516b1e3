"""A PEP 517 build backend for the fusec Python module, with no build
requirements: it builds the two libraries the module loads (or takes them
from an existing build) and writes the wheel itself.

Config settings (pip --config-settings key=value, or -C key=value):
  build-dir   ($FUSEC_BUILD_DIR) a configured fusec build to take libfusec_jit.so and
              libfusec_runtime.so from (default: build-python, configured
              with LLVM/MLIR linked statically, so that the wheel runs on
              machines without LLVM; built on first use)
  skip-build  1: take the libraries as they are, without running ninja
              (the lit test does, inside a running build)
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
import zipfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
PACKAGE = os.path.join(ROOT, "python", "fusec")


def _version():
    with open(os.path.join(ROOT, "CMakeLists.txt")) as f:
        return re.search(r"project\(fusec VERSION ([0-9.]+)", f.read()).group(1)


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
        if not os.path.exists(os.path.join(build_dir, "build.ninja")):
            _say("configuring %s with LLVM/MLIR linked statically "
                 "(./setup.sh); the first build takes a while" % build_dir)
            env = dict(os.environ, BUILD_DIR=build_dir,
                       FUSEC_CMAKE_ARGS="-DFUSEC_LINK_MLIR_DYLIB=OFF")
            subprocess.check_call([os.path.join(ROOT, "setup.sh"),
                                   targets[0]], cwd=ROOT, env=env,
                                  stdout=sys.stderr)
        _say("building %s in %s" % (" ".join(targets), build_dir))
        subprocess.check_call(["ninja", "-C", build_dir] + targets,
                              stdout=sys.stderr)
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


def _record_line(name, data):
    digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest())
    return "%s,sha256=%s,%d" % (name, digest.rstrip(b"=").decode(), len(data))


def _tag():
    return "py3-none-" + sysconfig.get_platform().replace("-", "_").replace(
        ".", "_")


def _metadata(version):
    return ("Metadata-Version: 2.1\nName: fusec\nVersion: %s\n"
            "Summary: Fused, tiled CUDA kernels from graphs of deep-learning "
            "operators\nRequires-Python: >=3.8\n" % version)


def get_requires_for_build_wheel(config_settings=None):
    return []


def prepare_metadata_for_build_wheel(metadata_directory,
                                     config_settings=None):
    version = _version()
    info = "fusec-%s.dist-info" % version
    os.makedirs(os.path.join(metadata_directory, info), exist_ok=True)
    with open(os.path.join(metadata_directory, info, "METADATA"), "w") as f:
        f.write(_metadata(version))
    return info


def build_wheel(wheel_directory, config_settings=None,
                metadata_directory=None):
    version = _version()
    jit, runtime = _libraries(config_settings)
    files = {}
    for name in sorted(os.listdir(PACKAGE)):
        if name.endswith(".py"):
            with open(os.path.join(PACKAGE, name), "rb") as f:
                files["fusec/" + name] = f.read()
    with tempfile.TemporaryDirectory() as tmp:
        for path in (jit, runtime):
            stripped = os.path.join(tmp, os.path.basename(path))
            shutil.copyfile(path, stripped)
            # Debug sections are most of libfusec_jit.so's size.
            if shutil.which("strip"):
                subprocess.check_call(["strip", "--strip-unneeded", stripped])
            with open(stripped, "rb") as f:
                files["fusec/" + os.path.basename(path)] = f.read()
    info = "fusec-%s.dist-info" % version
    files[info + "/METADATA"] = _metadata(version).encode()
    files[info + "/WHEEL"] = ("Wheel-Version: 1.0\nGenerator: fusec_build\n"
                              "Root-Is-Purelib: false\nTag: %s\n"
                              % _tag()).encode()
    record = [_record_line(n, d) for n, d in files.items()]
    record.append(info + "/RECORD,,")
    files[info + "/RECORD"] = ("\n".join(record) + "\n").encode()

    wheel = "fusec-%s-%s.whl" % (version, _tag())
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
