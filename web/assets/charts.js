/* charts.js: the one plain SVG line chart on a logarithmic scale, with its keyboard model: a
   company's daily marks (/explore/{slug}), a comparison (/compare) and an index (/indices).

   lineChart(box, spec) draws into `box` (replacing what it held) and redraws when the box's
   width changes. spec:
     id, label          the <svg>'s id and its accessible name
     from, to           the days shown (day numbers: days since 1970-01-01)
     lines              [{ key, label, cls, days: [day], values: [v], axis: 'left' | 'right',
                           bands: [{ lower: [v], upper: [v], cls }],   (drawn in this order)
                           exit: { day, value, label } }]   (days ascending)
                        exit: a company's outcome (listing, sale, failure), drawn as a diamond
                        at its day and value (0 on the bottom edge), joined to the line's end
     left, right        the axes: { format(v), title }; right only when a line uses it
     marker             a day to mark with a vertical line (or null)
     endLabels          write each line's label at its end (wide charts only): in the right
                        margin for a line that runs to the end, beside its exit marker for one
                        that ends earlier; labels are moved up or down until none overlaps
                        another (measured boxes, a simple vertical de-overlap), and kept below
                        the axis titles they would otherwise overprint
     readout(day, initial)  the readout for a day (the page writes it): text, or an array of
                        text and nodes; `initial` when no cursor is set yet (the last day)
     readoutNode        where that text goes (an aria-live element)
     onPick(day)        a click, or Enter on the focused chart (optional)
   and, optionally:
     until              the last day the time axis shows (default `to`), e.g. an outcome's day
                        after the line's end that the page draws itself
     values             more values the left axis must hold (points the page draws itself)
     snap               the cursor moves from point to point of the first line, not by the
                        calendar day (a company's daily marks)
     size(W)            { H, M } the height and margins for a width (default: the comparison's)
     scale              the left axis's padding: logScale's options
     overlay(geom)      nodes drawn above the lines and the cursor (event markers, an outcome);
                        geom: { x, y, W, H, M, d0, d1, setCursor(day) }
     attrs              more attributes of the <svg> (data-* a test reads)
   Values are drawn on a log scale; 0 (a bankruptcy) sits on the bottom edge. Each line is one
   <polyline> with data-key and data-points (its number of points), so a test can count them.
   The chart takes the focus: Left and Right move a cursor by a day (a point, with snap), Page Up
   and Page Down by 30, Home and End to the ends; keys pressed on a link inside the chart (an
   event's source) are the link's. */

import {
  svgEl, setAttrs, logTicks, timeTicks, nearestIn, chartWidth, redrawOnResize,
} from '/assets/common.js';

export function lineChart(box, spec) {
  const state = { day: null, width: 0, geom: null, spec };
  const draw = () => {
    state.width = chartWidth(box);
    render(box, state);
  };
  draw();
  redrawOnResize(box, () => state.width, draw);
  return {
    setCursor: (day) => setCursor(state, day),
  };
}

/* ---------- the pieces every chart of the pages draws with (the line chart, and the
   explorer's backtest and published history) ---------- */

/** The least and the greatest positive number of `values`, widening `into` ({ lo, hi }). */
export function extent(values, into = { lo: Infinity, hi: -Infinity }) {
  for (const v of values) {
    if (typeof v === 'number' && v > 0) {
      into.lo = Math.min(into.lo, v);
      into.hi = Math.max(into.hi, v);
    }
  }
  return into;
}

/** A log scale of a range ({ lo, hi }: extent) onto [top, top + height]: { l0, l1, y }; 0 (a
 * bankruptcy) sits on the bottom edge. Padded each way by `share` of the range (at least
 * `least` decades); with `widen`, a range narrower than 1.5 times is widened first. */
export function logScale(range, top, height, { share = 0.04, least = 0.03, widen = true } = {}) {
  let { lo, hi } = range;
  if (!Number.isFinite(lo)) { lo = 1; hi = 10; }
  if (widen && hi / lo < 1.5) { lo /= 1.25; hi *= 1.25; }
  const pad = Math.max(least, (Math.log10(hi) - Math.log10(lo)) * share);
  const l0 = Math.log10(lo) - pad;
  const l1 = Math.log10(hi) + pad;
  const y = (v) => {
    const l = v > 0 ? Math.max(l0, Math.min(l1, Math.log10(v))) : l0;
    return Math.round((top + (1 - (l - l0) / (l1 - l0)) * height) * 10) / 10;
  };
  return { l0, l1, y };
}

/** The value axis of a plot (margins M, width W): a grid line and a label at each tick. */
export function valueGrid(scale, format, M, W) {
  return logTicks(scale.l0, scale.l1).flatMap((v) => [
    svgEl('line', { class: 'grid', x1: M.l, x2: W - M.r, y1: scale.y(v), y2: scale.y(v) }),
    svgEl('text', { class: 'axis', x: M.l - 6, y: scale.y(v) + 4, 'text-anchor': 'end', text: format(v) })]);
}

/** The time axis: at each [day, label] tick its label and, with `lines`, a grid line; then the
 * bottom axis line. */
export function timeGrid(ticks, x, { M, W, H }, { lines = true } = {}) {
  return [
    ...ticks.flatMap(([t, label]) => [
      lines ? svgEl('line', { class: 'grid', x1: x(t), x2: x(t), y1: M.t, y2: H - M.b }) : null,
      svgEl('text', { class: 'axis', x: x(t), y: H - M.b + 18, 'text-anchor': 'middle', text: label })]),
    svgEl('line', { class: 'axis-line', x1: M.l, x2: W - M.r, y1: H - M.b, y2: H - M.b }),
  ].filter(Boolean);
}

/* ---------- the line chart ---------- */

function render(box, state) {
  const { spec } = state;
  const W = state.width;
  const wide = W >= 560;
  const hasRight = Boolean(spec.right) && spec.lines.some((l) => l.axis === 'right');
  const labels = spec.endLabels && wide;
  const { H, M } = spec.size ? spec.size(W) : {
    H: Math.round(Math.min(440, Math.max(260, W * 0.5))),
    M: { l: 62, r: (hasRight ? 62 : 14) + (labels ? 96 : 0), t: 12, b: 28 },
  };
  const pw = W - M.l - M.r;
  const ph = H - M.t - M.b;
  const d0 = spec.from;
  const d1 = Math.max(spec.until ?? spec.to, d0 + 1);
  const x = (d) => Math.round((M.l + ((d - d0) / (d1 - d0)) * pw) * 10) / 10;

  // Only the points in [from, to] are drawn and scaled.
  const shown = spec.lines.map((line) => {
    const first = line.days.findIndex((d) => d >= d0);
    let last = line.days.length - 1;
    while (last >= 0 && line.days[last] > d1) last -= 1;
    return { line, a: first < 0 ? 0 : first, b: first < 0 ? -1 : last };
  });
  const ranges = { left: { lo: Infinity, hi: -Infinity }, right: { lo: Infinity, hi: -Infinity } };
  for (const { line, a, b } of shown) {
    const r = ranges[line.axis === 'right' ? 'right' : 'left'];
    extent(line.values.slice(a, b + 1), r);
    if (line.exit && line.exit.day >= d0 && line.exit.day <= d1) extent([line.exit.value], r);
    for (const band of line.bands || []) {
      extent(band.lower.slice(a, b + 1), r);
      extent(band.upper.slice(a, b + 1), r);
    }
  }
  if (spec.values) extent(spec.values, ranges.left);
  const left = logScale(ranges.left, M.t, ph, spec.scale);
  const right = hasRight ? logScale(ranges.right, M.t, ph) : null;
  const yOf = (line) => (line.axis === 'right' && right ? right.y : left.y);
  state.geom = { x, yOf, d0, d1, pw, M, W, shown };

  const grid = svgEl('g', { 'aria-hidden': 'true' }, valueGrid(left, spec.left.format, M, W));
  if (right) {
    for (const v of logTicks(right.l0, right.l1)) {
      grid.append(svgEl('text', {
        class: 'axis axis-right', x: M.l + pw + 6, y: right.y(v) + 4, 'text-anchor': 'start', text: spec.right.format(v),
      }));
    }
    grid.append(svgEl('line', { class: 'axis-line', x1: M.l + pw, x2: M.l + pw, y1: M.t, y2: H - M.b }));
  }
  grid.append(...timeGrid(timeTicks(d0, d1, pw), x, { M, W, H }));
  const titles = []; // the axis titles, at the plot's top corners: no end label may cover them
  if (spec.left.title) {
    titles.push(svgEl('text', { class: 'axis axis-title', x: M.l + 4, y: M.t + 12, text: spec.left.title }));
  }
  if (right && spec.right.title) {
    titles.push(svgEl('text', { class: 'axis axis-title', x: M.l + pw - 4, y: M.t + 12, 'text-anchor': 'end', text: spec.right.title }));
  }
  grid.append(...titles);

  const bands = svgEl('g', { class: 'bands' });
  const lines = svgEl('g', { class: 'lines' });
  const exits = svgEl('g', { class: 'exits' });
  const ends = [];
  for (const { line, a, b } of shown) {
    const y = yOf(line);
    for (const band of b >= a ? line.bands || [] : []) {
      const top = [];
      const bottom = [];
      for (let i = a; i <= b; i += 1) {
        const [lo, hi] = [band.lower[i], band.upper[i]];
        if (typeof lo !== 'number' || typeof hi !== 'number') continue;
        top.push(`${x(line.days[i])},${y(hi)}`);
        bottom.push(`${x(line.days[i])},${y(lo)}`);
      }
      if (top.length) {
        bands.append(svgEl('path', { class: band.cls, d: `M${top.join('L')}L${bottom.reverse().join('L')}Z`, 'data-key': line.key }));
      }
    }
    const points = [];
    let lastDrawn = -1;
    for (let i = a; i <= b; i += 1) {
      if (typeof line.values[i] !== 'number') continue; // no value that day (a rebase on 0)
      points.push(`${x(line.days[i])},${y(line.values[i])}`);
      lastDrawn = i;
    }
    lines.append(svgEl('polyline', { class: line.cls, points: points.join(' '), 'data-key': line.key, 'data-points': points.length }));
    const end = lastDrawn >= 0 ? { line, x: x(line.days[lastDrawn]), y: y(line.values[lastDrawn]) } : null;
    const ex = line.exit;
    if (ex && ex.day >= d0 && ex.day <= d1 && end) {
      // The outcome: a diamond at its day and value, joined to the last private mark.
      const cx = x(ex.day);
      const cy = typeof ex.value === 'number' ? y(ex.value) : end.y;
      exits.append(svgEl('g', { class: `exit ${line.cls}`, 'data-key': line.key, 'aria-hidden': 'true' },
        svgEl('line', { class: 'exit-link', x1: end.x, y1: end.y, x2: cx, y2: cy }),
        svgEl('path', { class: 'exit-marker', d: `M${cx} ${cy - 6} l6 6 l-6 6 l-6 -6 z` })));
      ends.push({ line, x: cx, y: cy, exit: true, text: `${line.short || line.label}: ${ex.label}` });
    } else if (end) {
      ends.push({ ...end, exit: false, text: line.short || line.label });
    }
  }

  const endLabels = svgEl('g', { class: 'end-labels', 'aria-hidden': 'true' });

  const marker = spec.marker != null && spec.marker >= d0 && spec.marker <= d1
    ? svgEl('line', { class: 'date-marker', x1: x(spec.marker), x2: x(spec.marker), y1: M.t, y2: H - M.b, 'aria-hidden': 'true' })
    : null;

  const cursor = svgEl('g', { class: 'cursor-group', visibility: 'hidden', 'aria-hidden': 'true' },
    svgEl('line', { class: 'cursor', y1: M.t, y2: H - M.b, x1: 0, x2: 0 }),
    ...shown.map(({ line }) => svgEl('circle', { class: `cursor-dot ${line.cls}`, r: 4, cx: 0, cy: 0, visibility: 'hidden' })));
  state.cursor = cursor;
  const overlay = spec.overlay
    ? spec.overlay({ x, y: left.y, W, H, M, d0, d1, setCursor: (day) => setCursor(state, day) })
    : null;

  const root = svgEl('svg', {
    viewBox: `0 0 ${W} ${H}`, width: W, height: H, tabindex: 0, role: 'group', id: spec.id,
    'aria-label': `${spec.label} Arrow keys move a cursor by a day; Page Up and Page Down by 30 days; Home and End to the ends.`,
    'aria-describedby': spec.readoutNode ? spec.readoutNode.id : null,
    'data-from': d0,
    'data-to': spec.to,
    ...spec.attrs,
  }, grid, bands, marker, lines, exits, endLabels, cursor, overlay);

  const dayAt = (ev) => {
    const r = root.getBoundingClientRect();
    const px = ((ev.clientX - r.left) * W) / r.width;
    return Math.round(d0 + ((px - M.l) / pw) * (d1 - d0));
  };
  root.addEventListener('pointermove', (ev) => setCursor(state, dayAt(ev)));
  root.addEventListener('pointerdown', (ev) => setCursor(state, dayAt(ev)));
  if (spec.onPick) root.addEventListener('click', (ev) => spec.onPick(clampDay(state, dayAt(ev))));
  root.addEventListener('focus', () => {
    if (state.day == null) setCursor(state, spec.to);
  });
  root.addEventListener('keydown', (ev) => {
    if (ev.target !== root) return; // keys on a link in the chart are the link's
    const at = state.day == null ? spec.to : state.day;
    const steps = spec.snap ? spec.lines[0].days : null;
    const by = (n) => (steps ? steps[Math.max(0, Math.min(steps.length - 1, nearestIn(steps, at) + n))] : at + n);
    const moves = { ArrowLeft: by(-1), ArrowRight: by(1), PageDown: by(-30), PageUp: by(30), Home: d0, End: spec.to };
    if (ev.key === 'Enter' && spec.onPick) {
      ev.preventDefault();
      spec.onPick(at);
      return;
    }
    if (!(ev.key in moves)) return;
    ev.preventDefault();
    setCursor(state, moves[ev.key]);
  });
  box.replaceChildren(root);
  if (labels) placeLabels(endLabels, ends, { W, H, M, right: W - M.r + (hasRight ? 62 : 0) + 4, titles });
  if (state.day != null) setCursor(state, state.day);
  else showReadout(spec, spec.to, true);
}

function showReadout(spec, day, initial) {
  if (spec.readoutNode) spec.readoutNode.replaceChildren(...[spec.readout(day, initial)].flat());
}


/**
 * Each line named at its end: a line that runs to the chart's end in the right margin, one
 * that ends at an exit beside its marker (left of it when the margin is too narrow). Labels are
 * measured once drawn, then pushed apart: each pair whose boxes share columns and lie less than
 * a label's height (and a gap) apart is moved apart, half each way, and every label is kept
 * between the plot's top and bottom, until no pair clashes (a simple vertical de-overlap). A
 * label that shares columns with an axis title (`titles`, drawn at the plot's top corners: an
 * exit's label inside the plot may reach them) is kept below it, so it never overprints it. A
 * leader joins each label to its line's end.
 */
function placeLabels(group, ends, { W, H, M, right, titles = [] }) {
  const top = M.t + 6;
  const bottom = H - M.b - 6;
  const scale = group.ownerSVGElement.getBoundingClientRect().width / W || 1;
  // The titles' boxes in the chart's own units (they are drawn in the grid, untransformed).
  const blocked = titles.map((t) => t.getBBox()).filter((b) => b.width > 0)
    .map((b) => ({ x0: b.x, x1: b.x + b.width, bottom: b.y + b.height }));
  let step = 18; // the least distance between two labels' middles: their height and a gap, measured below
  const items = ends.map((end) => {
    const text = svgEl('text', { class: `end-label ${end.line.cls}`, x: 0, y: 0, 'data-key': end.line.key, text: end.text });
    group.append(text);
    const box = text.getBoundingClientRect();
    const own = text.getBBox(); // drawn on the baseline 0: own.y is its top above the baseline
    step = Math.max(step, Math.ceil(box.height / scale) + 4);
    const width = Math.ceil(Math.max(text.getComputedTextLength(), box.width / scale));
    let x0 = end.exit ? end.x + 9 : right;
    if (x0 + width > W - 2) x0 = end.exit ? end.x - 9 - width : W - 2 - width;
    // The label is written on the baseline y + 4: its top is y + 4 + own.y. Below every title
    // whose columns it shares, with a 3-unit gap.
    let least = top;
    for (const b of blocked) {
      if (x0 < b.x1 + 4 && b.x0 < x0 + width + 4) least = Math.max(least, b.bottom + 3 - 4 - own.y);
    }
    least = Math.min(least, bottom);
    return { end, text, width, x0, least, y: Math.max(least, Math.min(bottom, end.y)) };
  });
  const columns = (p, q) => p.x0 < q.x0 + q.width + 4 && q.x0 < p.x0 + p.width + 4;
  for (let round = 0; round < 500; round += 1) {
    items.sort((p, q) => p.y - q.y);
    let moved = false;
    for (let a = 0; a < items.length; a += 1) {
      for (let b = a + 1; b < items.length; b += 1) {
        const [p, q] = [items[a], items[b]];
        const gap = q.y - p.y;
        if (gap >= step - 0.01 || !columns(p, q)) continue;
        const push = (step - gap) / 2 + 0.01;
        p.y -= push;
        q.y += push;
        moved = true;
      }
    }
    for (const it of items) it.y = Math.max(it.least, Math.min(bottom, it.y));
    if (!moved) break;
  }
  for (const it of items) {
    setAttrs(it.text, { x: it.x0, y: Math.round((it.y + 4) * 10) / 10 });
    const rightOf = it.x0 > it.end.x;
    if (!it.end.exit || Math.abs(it.y - it.end.y) > 3) {
      group.insertBefore(svgEl('line', {
        class: `leader ${it.end.line.cls}`,
        x1: it.end.x + (rightOf ? 2 : -2) + (it.end.exit ? (rightOf ? 5 : -5) : 0),
        x2: rightOf ? it.x0 - 2 : it.x0 + it.width + 2,
        y1: it.end.y,
        y2: it.y,
      }), group.firstChild);
    }
  }
}

function clampDay(state, day) {
  return Math.max(state.geom.d0, Math.min(state.spec.to, day));
}

function setCursor(state, day) {
  if (!state.geom) return;
  const steps = state.spec.snap ? state.spec.lines[0].days : null;
  let d = clampDay(state, day);
  if (steps && steps.length) d = steps[nearestIn(steps, d)];
  state.day = d;
  const { x, yOf, shown } = state.geom;
  const [line, ...dots] = state.cursor.children;
  setAttrs(line, { x1: x(d), x2: x(d) });
  shown.forEach(({ line: l }, k) => {
    const i = l.days.length ? nearestIn(l.days, d) : -1;
    const on = i >= 0 && l.days[i] === d && typeof l.values[i] === 'number';
    setAttrs(dots[k], on ? { cx: x(d), cy: yOf(l)(l.values[i]), visibility: 'visible' } : { visibility: 'hidden' });
  });
  state.cursor.setAttribute('visibility', 'visible');
  showReadout(state.spec, d, false);
}

/** The value of a line on day d, or null (days ascending). */
export function valueOn(line, d) {
  if (!line.days.length) return null;
  const i = nearestIn(line.days, d);
  return line.days[i] === d ? line.values[i] : null;
}

