import sys, torch, torch.nn.functional as F, torchvision, fusec.torch
torch.manual_seed(0)
m = torchvision.models.resnet18(num_classes=10).train()
x = torch.randn(8, 3, 64, 64); y = torch.randint(0, 10, (8,))
st = {k: v.clone() for k, v in m.state_dict().items()}
F.cross_entropy(m(x), y).backward()
want = {n: p.grad.clone() for n, p in m.named_parameters()}
bufs = {k: v.clone() for k, v in m.named_buffers()}
m.load_state_dict(st); m.zero_grad()
f = torch.compile(m, backend="fusec", options={"report": True, "compile_options": {"arch": "sm_90"}})
F.cross_entropy(f(x), y).backward()
worst = max((((p.grad - want[n]).norm() / want[n].norm()).item(), n) for n, p in m.named_parameters() if not n.endswith("conv1.bias") and want[n].norm() > 1e-6)
print("worst grad relerr", worst)
print("worst buffer", max((((v.float() - bufs[k].float()).norm() / max(bufs[k].float().norm(), 1e-12)).item(), k) for k, v in m.named_buffers()))
