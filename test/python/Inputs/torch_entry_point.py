# torch.compile(backend="fusec") from the installed package, without
# importing fusec: PyTorch finds the backend through the wheel's
# torch_dynamo_backends entry point.
import sys

import torch
from torch._dynamo.backends.registry import lookup_backend

backend = lookup_backend("fusec")
print("backend:", backend.__module__, backend.__name__)
model = torch.nn.Sequential(torch.nn.Linear(4, 8), torch.nn.ReLU())
f = torch.compile(model, backend="fusec",
                  options={"compile_options": {"arch": "sm_90"},
                           "report": True})
x = torch.randn(3, 4)
with torch.no_grad():
    print("max error:", (f(x) - model(x)).abs().max().item())
print("fusec loaded from:", sys.modules["fusec"].__file__)
