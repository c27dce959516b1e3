"""Imports fusec from wherever the running Python finds it and evaluates a
relu on the reference interpreter (NumPy): the module and its declared
dependency, as installed."""

import fusec

g = fusec.Graph("g")
x = g.input([2], "f32")
g.output(g.relu(x))
print(fusec.__file__)
print(fusec.reference(g, [-1.0, 2.0]))
