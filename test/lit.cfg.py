# -*- Python -*-
# Configuration of the fusec lit suite. Tests mirror lib/: Dialect/,
# Reference/, fusec/ (the driver); Unit/ holds the GoogleTest unit tests.

import os
import shutil
import subprocess

import lit.formats
import lit.util
from lit.llvm import llvm_config
from lit.llvm.subst import ToolSubst

config.name = "FUSEC"
config.test_format = lit.formats.ShTest(not llvm_config.use_lit_shell)
config.suffixes = [".mlir", ".test", ".py"]
config.excludes = ["Inputs", "Utils", "lit.cfg.py", "lit.site.cfg.py",
                   "CMakeLists.txt", "README.md"]
config.test_source_root = os.path.dirname(__file__)
config.test_exec_root = os.path.join(config.fusec_obj_root, "test")

llvm_config.with_system_environment(["HOME", "INCLUDE", "LIB", "TMP", "TEMP"])
llvm_config.use_default_substitutions()
# FileCheck, not, count, split-file and our tools, whichever shell runs RUN.
llvm_config.with_environment("PATH", config.llvm_tools_dir, append_path=True)
llvm_config.with_environment("PATH", config.fusec_tools_dir, append_path=True)

config.substitutions.append(("%python", config.python_executable))
config.substitutions.append(("%fusec_src_root", config.fusec_src_root))
config.substitutions.append(("%fusec_obj_root", config.fusec_obj_root))
config.substitutions.append(("%npy-relerr", config.python_executable + " " + os.path.join(config.fusec_src_root, "test", "Utils", "npy-relerr.py")))
config.substitutions.append(("%examples", os.path.join(config.fusec_src_root, "examples")))

tool_dirs = [config.fusec_tools_dir, config.llvm_tools_dir]
tools = [
    ToolSubst("%fusec", os.path.join(config.fusec_tools_dir, "fusec"), unresolved="fatal"),
    "fusec",
    "fusec-gradcheck",
    "fusec-opt",
    "fusec-runner",
    "fusec-translate",
    "fusec-nvrtc-check",
    "fusec-fuzz-npy",
    "fusec-fuzz-plan",
    "fusec-fuzz-pipeline",
    "fusec-fuzz-builder",
]
llvm_config.add_tool_substitutions(tools, tool_dirs)

# Features: what this machine can run.
try:
    subprocess.check_call([config.python_executable, "-c", "import numpy"],
                          stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    config.available_features.add("numpy")
except (OSError, subprocess.CalledProcessError):
    pass
# PyTorch (fusec.torch's tests): its own virtual environment, which
# ./setup.sh check-fusec makes, or $FUSEC_TORCH_PYTHON.
torch_python = os.environ.get("FUSEC_TORCH_PYTHON") or os.path.expanduser(
    "~/.cache/fusec/torch-venv/bin/python")
try:
    subprocess.check_call([torch_python, "-c", "import torch, numpy"],
                          stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    config.available_features.add("torch")
    config.substitutions.append(("%torch_python", torch_python))
except (OSError, subprocess.CalledProcessError):
    pass
if shutil.which("ptxas"):
    config.available_features.add("ptxas")
# NVRTC (CUDA toolkit): CUDA C artifacts compile without a GPU.
import ctypes
for nvrtc in [os.path.join(d, "lib64", "libnvrtc.so")
              for d in (os.environ.get("CUDA_HOME"), "/usr/local/cuda") if d] + ["libnvrtc.so"]:
    try:
        ctypes.CDLL(nvrtc)
        config.available_features.add("nvrtc")
        break
    except OSError:
        pass
# The NVIDIA driver: GPU tests need it; the no-driver tests run without it.
try:
    import ctypes
    ctypes.CDLL("libcuda.so.1")
    config.available_features.add("cuda-driver")
except OSError:
    pass

# A user's tuning database must not change what the tests compile: tests
# that want one name it.
config.environment["FUSEC_TUNING_DB"] = "none"
