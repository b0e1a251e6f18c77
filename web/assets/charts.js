/* charts.js: a plain SVG line chart on a logarithmic scale, for /compare and /indices.

   lineChart(box, spec) draws into `box` (replacing what it held) and redraws when the box's
   width changes. spec:
     id, label          the <svg>'s id and its accessible name
     from, to           the days shown (day numbers: days since 1970-01-01)
     lines              [{ key, label, cls, days: [day], values: [v], axis: 'left' | 'right',
                           band: { lower: [v], upper: [v], cls },
                           exit: { day, value, label } }]   (days ascending)
                        exit: a company's outcome (listing, sale, failure), drawn as a diamond
                        at its day and value (0 on the bottom edge), joined to the line's end
     left, right        the axes: { format(v), title }; right only when a line uses it
     marker             a day to mark with a vertical line (or null)
     endLabels          write each line's label at its end (wide charts only): in the right
                        margin for a line that runs to the end, beside its exit marker for one
                        that ends earlier; labels are moved up or down until none overlaps
                        another (measured boxes, a simple vertical de-overlap)
     readout(day)       the text of the readout for a day (the page writes it)
     readoutNode        where that text goes (an aria-live element)
     onPick(day)        a click, or Enter on the focused chart (optional)
   Values are drawn on a log scale; 0 (a bankruptcy) sits on the bottom edge. Each line is one
   <polyline> with data-key and data-points (its number of points), so a test can count them.
   The chart takes the focus: Left and Right move a cursor by a day, Page Up and Page Down by 30
   days, Home and End to the ends. */

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

function extent(values, into) {
  for (const v of values) {
    if (typeof v === 'number' && v > 0) {
      into.lo = Math.min(into.lo, v);
      into.hi = Math.max(into.hi, v);
    }
  }
}

function scale(range, top, height) {
  let { lo, hi } = range;
  if (!Number.isFinite(lo)) { lo = 1; hi = 10; }
  if (hi / lo < 1.5) { lo /= 1.25; hi *= 1.25; }
  const pad = Math.max(0.03, (Math.log10(hi) - Math.log10(lo)) * 0.04);
  const l0 = Math.log10(lo) - pad;
  const l1 = Math.log10(hi) + pad;
  const y = (v) => {
    const l = v > 0 ? Math.max(l0, Math.min(l1, Math.log10(v))) : l0;
    return Math.round((top + (1 - (l - l0) / (l1 - l0)) * height) * 10) / 10;
  };
  return { l0, l1, y };
}

function render(box, state) {
  const { spec } = state;
  const W = state.width;
  const wide = W >= 560;
  const H = Math.round(Math.min(440, Math.max(260, W * 0.5)));
  const hasRight = Boolean(spec.right) && spec.lines.some((l) => l.axis === 'right');
  const labels = spec.endLabels && wide;
  const M = { l: 62, r: (hasRight ? 62 : 14) + (labels ? 96 : 0), t: 12, b: 28 };
  const pw = W - M.l - M.r;
  const ph = H - M.t - M.b;
  const d0 = spec.from;
  const d1 = Math.max(spec.to, d0 + 1);
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
    if (line.band) {
      extent(line.band.lower.slice(a, b + 1), r);
      extent(line.band.upper.slice(a, b + 1), r);
    }
  }
  const left = scale(ranges.left, M.t, ph);
  const right = hasRight ? scale(ranges.right, M.t, ph) : null;
  const yOf = (line) => (line.axis === 'right' && right ? right.y : left.y);
  state.geom = { x, yOf, d0, d1, pw, M, W, shown };

  const grid = svgEl('g', { 'aria-hidden': 'true' });
  for (const v of logTicks(left.l0, left.l1)) {
    grid.append(
      svgEl('line', { class: 'grid', x1: M.l, x2: M.l + pw, y1: left.y(v), y2: left.y(v) }),
      svgEl('text', { class: 'axis', x: M.l - 6, y: left.y(v) + 4, 'text-anchor': 'end', text: spec.left.format(v) }));
  }
  if (right) {
    for (const v of logTicks(right.l0, right.l1)) {
      grid.append(svgEl('text', {
        class: 'axis axis-right', x: M.l + pw + 6, y: right.y(v) + 4, 'text-anchor': 'start', text: spec.right.format(v),
      }));
    }
    grid.append(svgEl('line', { class: 'axis-line', x1: M.l + pw, x2: M.l + pw, y1: M.t, y2: H - M.b }));
  }
  for (const [t, label] of timeTicks(d0, d1, pw)) {
    grid.append(
      svgEl('line', { class: 'grid', x1: x(t), x2: x(t), y1: M.t, y2: H - M.b }),
      svgEl('text', { class: 'axis', x: x(t), y: H - M.b + 18, 'text-anchor': 'middle', text: label }));
  }
  grid.append(svgEl('line', { class: 'axis-line', x1: M.l, x2: M.l + pw, y1: H - M.b, y2: H - M.b }));
  if (spec.left.title) {
    grid.append(svgEl('text', { class: 'axis axis-title', x: M.l + 4, y: M.t + 12, text: spec.left.title }));
  }
  if (right && spec.right.title) {
    grid.append(svgEl('text', { class: 'axis axis-title', x: M.l + pw - 4, y: M.t + 12, 'text-anchor': 'end', text: spec.right.title }));
  }

  const bands = svgEl('g', { class: 'bands' });
  const lines = svgEl('g', { class: 'lines' });
  const exits = svgEl('g', { class: 'exits' });
  const ends = [];
  for (const { line, a, b } of shown) {
    const y = yOf(line);
    if (line.band && b >= a) {
      const top = [];
      const bottom = [];
      for (let i = a; i <= b; i += 1) {
        const [lo, hi] = [line.band.lower[i], line.band.upper[i]];
        if (typeof lo !== 'number' || typeof hi !== 'number') continue;
        top.push(`${x(line.days[i])},${y(hi)}`);
        bottom.push(`${x(line.days[i])},${y(lo)}`);
      }
      if (top.length) {
        bands.append(svgEl('path', { class: line.band.cls, d: `M${top.join('L')}L${bottom.reverse().join('L')}Z`, 'data-key': line.key }));
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

  const root = svgEl('svg', {
    viewBox: `0 0 ${W} ${H}`, width: W, height: H, tabindex: 0, role: 'group', id: spec.id,
    'aria-label': `${spec.label} Arrow keys move a cursor by a day; Page Up and Page Down by 30 days; Home and End to the ends.`,
    'aria-describedby': spec.readoutNode ? spec.readoutNode.id : null,
    'data-from': d0,
    'data-to': spec.to,
  }, grid, bands, marker, lines, exits, endLabels, cursor);

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
    const at = state.day == null ? spec.to : state.day;
    const moves = { ArrowLeft: at - 1, ArrowRight: at + 1, PageDown: at - 30, PageUp: at + 30, Home: d0, End: spec.to };
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
  if (labels) placeLabels(endLabels, ends, { W, H, M, right: W - M.r + (hasRight ? 62 : 0) + 4 });
  if (state.day != null) setCursor(state, state.day);
  else if (spec.readoutNode) spec.readoutNode.textContent = spec.readout(spec.to);
}


/**
 * Each line named at its end: a line that runs to the chart's end in the right margin, one
 * that ends at an exit beside its marker (left of it when the margin is too narrow). Labels are
 * measured once drawn, then pushed apart: each pair whose boxes share columns and lie less than
 * a label's height (and a gap) apart is moved apart, half each way, and every label is kept
 * between the plot's top and bottom, until no pair clashes (a simple vertical de-overlap). A
 * leader joins each label to its line's end.
 */
function placeLabels(group, ends, { W, H, M, right }) {
  const top = M.t + 6;
  const bottom = H - M.b - 6;
  const scale = group.ownerSVGElement.getBoundingClientRect().width / W || 1;
  let step = 18; // the least distance between two labels' middles: their height and a gap, measured below
  const items = ends.map((end) => {
    const text = svgEl('text', { class: `end-label ${end.line.cls}`, x: 0, y: 0, 'data-key': end.line.key, text: end.text });
    group.append(text);
    const box = text.getBoundingClientRect();
    step = Math.max(step, Math.ceil(box.height / scale) + 4);
    const width = Math.ceil(Math.max(text.getComputedTextLength(), box.width / scale));
    let x0 = end.exit ? end.x + 9 : right;
    if (x0 + width > W - 2) x0 = end.exit ? end.x - 9 - width : W - 2 - width;
    return { end, text, width, x0, y: Math.max(top, Math.min(bottom, end.y)) };
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
    for (const it of items) it.y = Math.max(top, Math.min(bottom, it.y));
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
  const d = clampDay(state, day);
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
  if (state.spec.readoutNode) state.spec.readoutNode.textContent = state.spec.readout(d);
}

/** The value of a line on day d, or null (days ascending). */
export function valueOn(line, d) {
  if (!line.days.length) return null;
  const i = nearestIn(line.days, d);
  return line.days[i] === d ? line.values[i] : null;
}

