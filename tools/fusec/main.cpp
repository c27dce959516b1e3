//===- main.cpp - The fusec executable ------------------------------------===//
//
// The driver (fusec.cpp) is compiled once and linked both here and into
// libfusec_jit.so, which exports fusec_main for the wheel's `fusec` command.
//
//===----------------------------------------------------------------------===//

extern "C" int fusec_main(int argc, char **argv);

int main(int argc, char **argv) { return fusec_main(argc, argv); }
