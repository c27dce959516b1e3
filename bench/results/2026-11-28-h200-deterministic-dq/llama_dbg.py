"""Which contender of the LLaMA (g) row faults: each alone, synced."""
import os, sys, traceback
sys.path.insert(0, "bench")
import torch
import training as T
import timing

torch.backends.cuda.matmul.allow_tf32 = False
torch.manual_seed(0)
b = T.Bench(torch, "cuda", False, 500)
fz = T.Fusec(b)
row, dt = T.TRANSFORMERS[1], "bf16"
which = sys.argv[1:2] or ["fusec", "eager", "graph", "compile", "compile_ro"]
p = T.transformer_params(b, row, dt)
names = list(p)
wrt_names = [k for k in names if k not in T.TRANSFORMER_CONSTANTS]
model = T.make_transformer(torch, row, p)
params = model.weights()
x = p["x"].requires_grad_()
dy = b.randn(row[2], row[3], row[4], dtype=dt)
wrt = [x] + params

def eager_step():
    return torch.autograd.grad(model(x), wrt, dy)

def attempt(name, fn, n):
    for i in range(n):
        try:
            fn()
            torch.cuda.synchronize()
        except Exception as e:
            print(f"{name}: call {i} failed: {T.reason(e)}", flush=True)
            return False
    print(f"{name}: {n} calls ok", flush=True)
    return True

for w in which:
    if w == "fusec":
        step = fz.train(T.transformer_graph(row, dt), wrt=[names.index(k) for k in wrt_names])
        args = model.fusec_args(x)
        ok = attempt("fusec forward", lambda: step.forward(*args), 1) and \
            attempt("fusec backward", lambda: step.backward(dy), 1) and \
            attempt("fusec fwd+bwd", lambda: (step.forward(*args), step.backward(dy)), 30)
    elif w == "eager":
        attempt("eager", eager_step, 5)
    elif w == "graph":
        # As the row does: an eager step first (its saved-bytes probe).
        T.eager_saved_bytes(torch, model, [x], params, dy)
        replay, outs = timing.cuda_graph(torch, eager_step)
        attempt("graph replay", replay, 10)
    elif w in ("compile", "compile_ro"):
        mode = "reduce-overhead" if w == "compile_ro" else None
        cm = torch.compile(model, mode=mode) if mode else torch.compile(model)
        def cstep():
            if mode:
                torch.compiler.cudagraph_mark_step_begin()
            return torch.autograd.grad(cm(x), wrt, dy)
        attempt(w, cstep, 6)

if which == ["all"]:
    T.eager_saved_bytes(torch, model, [x], params, dy)
    fns = {"eager": eager_step}
    replay, outs = timing.cuda_graph(torch, eager_step)
    fns["graph"] = replay
    for mode, cname in ((None, "compile"), ("reduce-overhead", "compile_ro")):
        cm = torch.compile(model, mode=mode) if mode else torch.compile(model)
        def cstep(cm=cm, ro=mode is not None):
            if ro:
                torch.compiler.cudagraph_mark_step_begin()
            return torch.autograd.grad(cm(x), wrt, dy)
        for _ in range(3):
            cstep()
        torch.cuda.synchronize()
        fns[cname] = cstep
    step = fz.train(T.transformer_graph(row, dt), wrt=[names.index(k) for k in wrt_names])
    args = model.fusec_args(x)
    step.forward(*args); step.backward(dy); torch.cuda.synchronize()
    print("set up", flush=True)
    fns["fusec"] = lambda: (step.forward(*args), step.backward(dy))
    order = sys.argv[2].split(",") if len(sys.argv) > 2 else list(fns)
    for r in range(4):
        for name in order:
            if not attempt(f"round {r} {name}", fns[name], 3):
                sys.exit(1)
