"""Table and SVG chart of a fixed-rate sweep (sweep.sh): p50 and p99 latency
(log scale) against the rate asked for, with the rate achieved beside it."""
import json
import math
import sys

out, rates = sys.argv[1], [int(r) for r in sys.argv[2:]]
rows = []
for r in rates:
    with open(f"{out}/rate-{r}.json") as f:
        s = json.load(f)
    rows.append((r, s["op_rate"], s["latency_ms"]["p50"], s["latency_ms"]["p99"], s["latency_ms"]["max"]))

print("| target op/s | achieved op/s | p50 ms | p99 ms | max ms |")
print("|---:|---:|---:|---:|---:|")
for r, got, p50, p99, mx in rows:
    print(f"| {r:,} | {got:,.0f} | {p50:.3f} | {p99:.3f} | {mx:.1f} |")

# The chart: x = target rate (linear), y = latency ms (log10), legend above
# the plot area, outside the data.
W, H, L, R, T, B = 720, 420, 70, 20, 60, 50
xmax = max(rates) * 1.05
lat = [v for row in rows for v in (row[2], row[3])]
ylo = math.floor(math.log10(max(min(lat), 1e-3)))
yhi = math.ceil(math.log10(max(lat)))
yhi = max(yhi, ylo + 1)


def X(v):
    return L + (W - L - R) * v / xmax


def Y(ms):
    return T + (H - T - B) * (1 - (math.log10(max(ms, 1e-3)) - ylo) / (yhi - ylo))


svg = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{W}" height="{H}" font-family="sans-serif" font-size="12">',
       f'<rect width="{W}" height="{H}" fill="white"/>',
       f'<text x="{W/2}" y="18" text-anchor="middle" font-size="14">strata stress write at a fixed rate: latency from the intended start</text>']
for e in range(ylo, yhi + 1):
    y = Y(10 ** e)
    svg.append(f'<line x1="{L}" y1="{y:.1f}" x2="{W-R}" y2="{y:.1f}" stroke="#ddd"/>')
    svg.append(f'<text x="{L-6}" y="{y+4:.1f}" text-anchor="end">{10**e:g}</text>')
step = 10 ** math.floor(math.log10(xmax / 5))
step *= 2 if xmax / step > 10 else 1
v = 0
while v <= xmax:
    x = X(v)
    svg.append(f'<line x1="{x:.1f}" y1="{T}" x2="{x:.1f}" y2="{H-B}" stroke="#eee"/>')
    svg.append(f'<text x="{x:.1f}" y="{H-B+16}" text-anchor="middle">{int(v/1000)}k</text>')
    v += step
svg.append(f'<text x="{(L+W-R)/2}" y="{H-12}" text-anchor="middle">target rate, operations per second</text>')
svg.append(f'<text x="16" y="{(T+H-B)/2}" text-anchor="middle" transform="rotate(-90 16 {(T+H-B)/2})">latency, ms (log scale)</text>')
for idx, (name, color) in enumerate([("p50", "#1f77b4"), ("p99", "#d62728")]):
    pts = " ".join(f"{X(r):.1f},{Y(row[2 + idx]):.1f}" for r, row in zip(rates, rows))
    svg.append(f'<polyline points="{pts}" fill="none" stroke="{color}" stroke-width="2"/>')
    for r, row in zip(rates, rows):
        svg.append(f'<circle cx="{X(r):.1f}" cy="{Y(row[2 + idx]):.1f}" r="3" fill="{color}"/>')
    lx = L + 10 + idx * 90
    svg.append(f'<line x1="{lx}" y1="{T-14}" x2="{lx+24}" y2="{T-14}" stroke="{color}" stroke-width="2"/>')
    svg.append(f'<text x="{lx+30}" y="{T-10}">{name}</text>')
svg.append(f'<rect x="{L}" y="{T}" width="{W-L-R}" height="{H-T-B}" fill="none" stroke="#333"/>')
svg.append("</svg>")
with open(f"{out}/stress_fixed_rate_latency.svg", "w") as f:
    f.write("\n".join(svg))
print(f"\nchart: {out}/stress_fixed_rate_latency.svg")
