import sys, torch, torch.nn.functional as F
sys.path.insert(0, "bench")
import torch_models as tm
from torch.utils.flop_counter import FlopCounterMode
for name in ["resnet50", "mobilenet_v2", "vit_b", "llama_layer", "resnet18_cifar", "gpt2_small6"]:
    model, args, labels = tm.make(name, "cpu")
    model = model.to_empty(device="meta")
    args = [a.to("meta") for a in args]
    with FlopCounterMode(display=False) as fc, torch.no_grad():
        model(*args)
    inf = fc.get_total_flops()
    tr = None
    if labels is not None:
        model.train()
        with FlopCounterMode(display=False) as fc2:
            logits = model(args[0])
            loss = F.cross_entropy(logits.float().flatten(0, -2) if logits.dim() > 2 else logits.float(), labels.to("meta").flatten())
            loss.backward()
        tr = fc2.get_total_flops()
    print(name, "forward GFLOP %.1f" % (inf / 1e9), "train step GFLOP %s" % (None if tr is None else "%.1f" % (tr / 1e9)))
