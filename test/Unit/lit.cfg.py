# -*- Python -*-
# GoogleTest unit tests: every test of every *Tests binary is one lit test.

import os

import lit.formats

config.name = "FUSEC-Unit"
config.suffixes = []
config.test_source_root = os.path.join(config.fusec_obj_root, "test", "Unit")
config.test_exec_root = config.test_source_root
config.test_format = lit.formats.GoogleTest(".", "Tests")
