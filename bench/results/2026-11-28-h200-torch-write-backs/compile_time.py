import sys, time, os, tempfile, cProfile, pstats
sys.path.insert(0, "bench")
import torch, torch._dynamo, fusec, fusec.torch as ft
import torch_models
os.environ["FUSEC_CACHE_DIR"] = tempfile.mkdtemp()
model, args, _ = torch_models.make("resnet50", "cuda", False)
model = model.cuda().eval(); args = tuple(a.cuda() for a in args)
def once(prof=False):
    torch._dynamo.reset()
    fn = torch.compile(model, backend="fusec")
    pr = cProfile.Profile() if prof else None
    t = time.perf_counter()
    if pr: pr.enable()
    fn(*args); torch.cuda.synchronize()
    if pr: pr.disable()
    return time.perf_counter() - t, pr
with torch.no_grad(), torch.autocast("cuda", dtype=torch.bfloat16):
    model(*args)
    print("cold %.2f s" % once()[0])
    fusec.clear_memory_cache()
    print("cached %.2f s" % once()[0])
    fusec.clear_memory_cache()
    t, pr = once(True)
    print("cached, profiled %.2f s" % t)
st = pstats.Stats(pr); st.sort_stats("cumulative").print_stats(45)
