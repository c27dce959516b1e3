"""patch_string.py FILE OLD NEW: replaces every NUL-terminated OLD in FILE
with NEW (the same length), in place. On a copy of a shared library, this
renames a library it needs or a symbol version it needs, so that the
dynamic loader refuses it the way it would on a system without them."""

import sys

path, old, new = sys.argv[1], sys.argv[2].encode(), sys.argv[3].encode()
if len(old) != len(new):
    sys.exit("patch_string.py: %r and %r differ in length" % (old, new))
with open(path, "rb") as f:
    data = f.read()
count = data.count(b"\0" + old + b"\0")
if not count:
    sys.exit("patch_string.py: %r is not in %s" % (old, path))
with open(path, "wb") as f:
    f.write(data.replace(b"\0" + old + b"\0", b"\0" + new + b"\0"))
