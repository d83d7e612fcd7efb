"""census_table.py — reads Nsight Compute's CSV (ncu --metrics ... --csv --print-units base, as
call.sh writes it) and prints each kernel kind's count, time, DRAM bytes and rate, largest
first: python3 census_table.py census_main.log (after unxz)."""
import csv, sys, re, collections
def load(path):
    rows = {}
    with open(path, errors="replace") as f:
        lines = [l for l in f if l.startswith('"')]
    r = csv.reader(lines)
    hdr = next(r)
    for row in r:
        if len(row) < 15: continue
        kid = int(row[0]) if row[0].isdigit() else row[0]
        d = rows.setdefault(kid, {"name": row[4], "grid": row[8]})
        v = row[-1].replace(",", "")
        try: v = float(v)
        except: pass
        d[row[-3]] = v
    return rows
def short(n):
    n = re.sub(r"\(.*", "", n)
    if "cutlass" in n or "device_kernel" in n:
        tags = []
        for t in ("Conv", "Gemm", "bn_stats", "Wgrad", "kFprop", "kDgrad", "kWgrad"):
            if t in n: tags.append(t)
        return "cutlass:" + "/".join(tags)
    return n[:60]
if __name__ == "__main__":
    rows = load(sys.argv[1])
    ks = sorted(k for k in rows if isinstance(k, int))
    agg = collections.OrderedDict()
    tot = 0
    for k in ks:
        d = rows[k]
        t = d.get("gpu__time_duration.sum", 0) / 1e3
        tot += t
        a = agg.setdefault(short(d["name"]), [0, 0.0, 0.0, 0.0])
        a[0] += 1; a[1] += t
        a[2] += (d.get("dram__bytes_read.sum", 0) + d.get("dram__bytes_write.sum", 0)) / 1e9
    print(f"{len(ks)} kernels, {tot/1e3:.2f} ms")
    for n, (c, t, gb, _) in sorted(agg.items(), key=lambda x: -x[1][1]):
        print(f"{n:62s} {c:4d} {t/1e3:8.3f} ms {gb:7.2f} GB  {gb/(t/1e6) if t else 0:6.0f} GB/s")
