# Sourced by scripts/sanitize.sh and bench/gpu-session.sh: how the ASan and
# UBSan builds of fusec run (a value already in the environment wins).
#
# LeakSanitizer stays on: a leak is a finding. MLIR's and LLVM's process-wide
# registries are reachable at exit, which LeakSanitizer does not report.
# alloc_dealloc_mismatch=0: Debian's LLVM code generator (not instrumented)
# frees with sized operator delete[] what operator new gave
# (RegisterClassInfo, under MachineSinking), which ASan's interceptors in the
# executable see as a mismatch on every kernel compiled.
# allow_user_poisoning=0: LLVM's headers poison and unpoison allocator memory
# in inline code when compiled with ASan, and the linker mixes those copies
# with the uninstrumented ones in LLVM's and MLIR's libraries, so memory one
# poisons the other touches (use-after-poison at MLIRContext creation).
export ASAN_OPTIONS=${ASAN_OPTIONS:-abort_on_error=1:detect_stack_use_after_return=1:alloc_dealloc_mismatch=0:allow_user_poisoning=0}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}
