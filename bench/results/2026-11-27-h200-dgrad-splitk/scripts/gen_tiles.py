import sys, re, subprocess, itertools
sys.path.insert(0, './bench'); import training as t
layers = {l[0]: l for l in t.R50_LAYERS + t.R50_N256}
tiles = {
 'r50_c5_3x3': [(128,128,4),(128,128,3),(128,128,2),(128,256,3),(128,64,4),(64,128,4),(64,256,3),(128,192,3)],
 'r50_c3_3x3': [(128,128,4),(128,128,3),(128,64,4),(64,128,4),(128,64,3),(64,64,4)],
 'r50_c2_3x3': [(128,64,4),(128,64,3),(64,64,4),(256,64,3)],
 'r50_c2_3x3_n256': [(128,64,4),(128,64,3),(256,64,3),(256,64,4),(64,64,4)],
}
for name, ts in tiles.items():
    g = t.dgrad_graph(layers[name], 'bf16')
    m = re.search(r"func.func @(\S+)\((.*)\) -> (\S+) \{\n  %0 = (fuse.conv_transpose2d .*) : (.*), (.*)\n", g)
    fn, args, res, op, ty1, ty2 = m.groups()
    for bm, bn, st in ts:
        wm = 4 * (2 if bm >= 128 else 1)
        tile = f"#fuse.tile<bm = {bm}, bn = {bn}, bk = 64, warps_m = {wm}, warps_n = 1, stages = {st}>"
        body = (f"func.func @{fn}(%dy: {ty1}, %w: {ty2}) -> {res} {{\n"
                f"  %0 = fuse.kernel \"k0_conv_transpose2d\"(%dy, %w) {{tile = {tile}}} : ({ty1}, {ty2}) -> {res} {{\n"
                f"  ^bb0(%a: {ty1}, %b: {ty2}):\n"
                f"    %1 = {op.replace('%dy', '%a').replace('%w', '%b')} : {ty1}, {ty2}\n"
                f"    fuse.yield %1 : {res}\n  }}\n  return %0 : {res}\n}}\n")
        tag = f"{name}_{bm}x{bn}s{st}"
        open(f".gpu/tiles2/{tag}.mlir", "w").write(body)
        r = subprocess.run(["./build/bin/fusec", f".gpu/tiles2/{tag}.mlir", "--arch=sm_90a", "-o", f".gpu/tiles2/{tag}.ptx", "--remarks"], capture_output=True, text=True)
        grid = re.findall(r"blocks in \(([^)]*)\)", subprocess.run(["./build/bin/fusec", f".gpu/tiles2/{tag}.mlir", "--arch=sm_90a", "--emit=gpu"], capture_output=True, text=True).stdout)
        print(tag, r.returncode, r.stderr.strip().splitlines()[-1][:150] if r.returncode else "", [gg[:40] for gg in grid])
