#!/usr/bin/env python3
"""Plot one company's mark series with its 80% and 95% bands and its events, into a PNG.

A notebook in script form: run it whole, or cell by cell (`# %%`) in VS Code, Jupyter
(jupytext) or Spyder.

Usage:
    python plot_series.py --base-url http://127.0.0.1:8080 --api-key vmk_demo_pro --slug stripe --out stripe.png

Needs a pro key or above (coverage 95 and the event history), the SDK with its pandas extra
(pip install './clients/python[pandas]') and matplotlib.
"""

# %% Parameters
from __future__ import annotations

import argparse
import textwrap

import matplotlib

matplotlib.use("Agg")  # files, no window

import matplotlib.pyplot as plt
from matplotlib.ticker import FuncFormatter
from valuation_marks import Client

parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
parser.add_argument("--base-url", default=None, help="default: $MARKS_BASE_URL, else http://127.0.0.1:8080")
parser.add_argument("--api-key", default=None, help="default: $MARKS_API_KEY")
parser.add_argument("--slug", default="stripe")
parser.add_argument("--out", default=None, help="PNG to write (default: SLUG.png)")
args = parser.parse_args()
out = args.out or f"{args.slug}.png"

# %% Fetch: the series at both coverages (one row per day) and the events, as DataFrames
with Client(api_key=args.api_key, base_url=args.base_url) as client:
    profile = client.company(args.slug)
    band_80 = client.series(args.slug, coverage=80).to_pandas()
    band_95 = client.series(args.slug, coverage=95).to_pandas()
    events = client.events(args.slug).to_pandas()
meta = profile.meta  # read it before using any value: these are illustrative backtest marks
print(f"{profile.name}: {len(band_80)} days, {len(events)} events ({meta.data_mode}, {meta.provenance})")

# %% Plot: bands behind, mark on top, events as markers with their type
billions = 1e9
fig, ax = plt.subplots(figsize=(11, 6))
fig.subplots_adjust(left=0.09, right=0.98, top=0.93, bottom=0.17)
ax.fill_between(
    band_95.index, band_95["lower_usd"] / billions, band_95["upper_usd"] / billions,
    color="tab:blue", alpha=0.12, linewidth=0, label="95% band",
)  # fmt: skip
ax.fill_between(
    band_80.index, band_80["lower_usd"] / billions, band_80["upper_usd"] / billions,
    color="tab:blue", alpha=0.25, linewidth=0, label="80% band",
)  # fmt: skip
ax.plot(band_80.index, band_80["mark_usd"] / billions, color="tab:blue", linewidth=1.6, label="mark")
ax.scatter(
    events.index, events["valuation_usd"] / billions,
    color="tab:red", edgecolor="white", zorder=3, s=42, label="reported events",
)  # fmt: skip
for day, event in events.iterrows():
    ax.annotate(
        str(event["event_type"]).replace("_", " "), (day, event["valuation_usd"] / billions),
        textcoords="offset points", xytext=(4, 6), fontsize=8, color="tab:red",
    )  # fmt: skip
ax.set_yscale("log")
ax.yaxis.set_major_formatter(FuncFormatter(lambda value, _: f"${value:,.0f}B" if value >= 1 else f"${value:.2f}B"))
ax.set_ylabel("valuation (USD, log scale)")
ax.set_title(f"{profile.name}: daily mark with 80% and 95% bands, as of {meta.as_of}")
ax.grid(True, which="major", alpha=0.3)
ax.legend(loc="upper left")
caption = (
    f"{meta.data_mode} / {meta.provenance}, methodology {meta.methodology_version}, "
    f"dataset {meta.dataset_version}. {meta.disclaimer}"
)
fig.text(0.01, 0.015, textwrap.fill(caption, 160), fontsize=7, color="dimgray", va="bottom")

# %% Save
fig.savefig(out, dpi=120)
print(f"wrote {out}")
