"""Times the layout-transform kernel on a real GPU (run on the lent machine through
scripts/measure_on_device.sh's environment): for every distinct input tensor of
ResNet-50's convolutions at batches 1, 8 and 32, both directions, the numba.cuda kernel
is checked against numpy's transpose and timed back to back with the host's launch
latency hidden (harness.time_launch). Buffers are reused: a tensor that fits in the L2
is timed warm, as repeated launches see it. Writes JSON with provenance to the path in
argv[1] and prints a short table.

    python3 scripts/probe_layout_transform.py $OUT/layout_transform.json
"""
import dataclasses
import json
import sys
import time

import numpy as np


def main(path):
    import workloads
    from simulator.measure import harness
    from simulator.measure.suites import device_arrays
    from simulator.simt.kernels import layout_transform as lt
    c = harness.require_gpu()
    rng = np.random.default_rng(0)
    records, seen = [], set()
    t0 = time.time()
    for batch in (1, 8, 32):
        for op in workloads.resnet50(batch=batch).ops:
            if op.kind != "conv2d":
                continue
            key = (op.N, op.C, op.H, op.W)
            if key in seen:
                continue
            seen.add(key)
            for layout in ("nhwc", "nchw"):
                conv = dataclasses.replace(op, layout=layout)
                problem = lt.SPEC.problem(conv=conv)
                dev = lt.device(problem)
                host = dev.inputs(rng)
                arrays = device_arrays(c, dev, host)
                dev.launch(arrays)
                c.synchronize()
                y = arrays["y"].copy_to_host()
                ref = dev.reference(host)["y"]
                ok = bool(np.array_equal(y, ref.astype(np.float32)))
                t = harness.time_launch(lambda s: dev.launch(arrays, s))
                n = op.N * op.C * op.H * op.W
                records.append({"kernel": lt.NAME, "layer": op.name, "batch": batch,
                                "layout": layout, "tensor": list(key), "elements": n,
                                "grid": list(dev.shapes[0][0]), "block": list(dev.shapes[0][1]),
                                "ok": ok, **t,
                                "bandwidth_bytes_per_s": 8 * n / t["median_s"]})
                r = records[-1]
                print(f"{op.name:20s} b{batch:<3d} {'x'.join(map(str, key)):16s} -> {layout}: "
                      f"{r['median_s'] * 1e6:9.1f} us  {r['bandwidth_bytes_per_s'] / 1e9:7.1f} GB/s"
                      f"  {'ok' if ok else 'WRONG'}", flush=True)
    doc = {"suite": "layout_transform_probe", "schema_version": 1,
           "provenance": harness.provenance("python3 scripts/probe_layout_transform.py"),
           "wall_seconds": time.time() - t0, "records": records}
    with open(path, "w") as fh:
        json.dump(doc, fh, indent=1)
    print(f"wrote {path}: {len(records)} launches in {doc['wall_seconds']:.0f} s")


if __name__ == "__main__":
    main(sys.argv[1])
