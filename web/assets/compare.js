/* compare.js: the comparison view (/compare).

   Up to five companies (picked with the same search suggestions as the explorer) and at most
   one index, read from the /v1 API with the visitor's key (Research and above: the daily
   marks, GET /v1/companies/{slug}/marks, and the indices, GET /v1/indices/{id}), drawn on one
   plain SVG chart with a logarithmic scale:
   - rebased (the default): every series divided by its value on the rebase date, times 100,
     from that date on. The date is a day every series has; by default the latest of their
     first days (the first day they all have).
   - US dollars: each company's whole series in dollars on the left axis; an index is not in
     dollars, so it has its own axis on the right (its level, 100 on its first day). The rebase
     date is then marked on the chart and used by the table.
   Beside the chart, a table: each series on the rebase date and on its last day, and the
   change between. Below, the chart's numbers sampled (month, quarter or year ends). "Download
   CSV" saves the chart's daily values as shown (written here: the API has no route for a
   comparison).

   The page's address holds the comparison (c=slug,slug&index=id&scale=usd&at=YYYY-MM-DD), so
   it can be shared: slugs, the index id, the scale and the date, never the key. */

import {
  $, el, say, usd, level, levelTick, displayName, ended, outcomeText, OUTCOME_WORDS, money, initExactToggles,
  api, problemWords, showError, keyThenView, allows, needsTier, initKeyPanel, showMeta,
  dayNumber, dateOf, isDate,
  toCsv, fileName, downloadButton, companySearch,
} from '/assets/common.js';
import { lineChart, valueOn } from '/assets/charts.js';

const MAX_COMPANIES = 5;
const SLUG = /^[a-z0-9][a-z0-9-]{0,99}$/;

const state = {
  companies: [], // { slug, name, outcome, over, line: { days, values } | null }
  index: null, // { id, name, line } | null
  indices: null, // the list from /v1/indices, or null when the key may not read it
  scale: 'rebased',
  at: '', // the date asked for (address or date field); '' for the default
  busy: 0,
  run: 0,
  view: null, // what was drawn: { lines, from, to, at, rebased }
};

/* ---------- loading ---------- */

function busy(delta) {
  state.busy += delta;
  if (state.busy > 0) $('main').setAttribute('aria-busy', 'true');
  else $('main').removeAttribute('aria-busy');
}

const errors = new Map(); // what failed, in words, by series

function showErrors() {
  const seen = new Set();
  const lines = [];
  for (const text of errors.values()) {
    if (seen.has(text)) continue;
    seen.add(text);
    lines.push(el('p', { class: /not included in this key's tier|needs an? /.test(text) ? 'note' : 'error', text }));
  }
  $('compare-error').replaceChildren(...lines);
}

function fail(key, err, what) {
  if (err.status === 401 || err.status === 429) showError(err, what);
  errors.set(key, problemWords(err, what));
}

function toLine(points, field) {
  return { days: points.map((p) => dayNumber(p.date)), values: points.map((p) => p[field]) };
}

/** A company's name and outcome, from its profile or a list item (the search's). */
function setCompany(entry, c) {
  entry.name = displayName(c);
  entry.outcome = c.outcome || null;
  entry.over = ended(c);
}

async function loadCompany(entry) {
  const base = `/v1/companies/${encodeURIComponent(entry.slug)}`;
  const needName = !entry.name;
  const [profile, series] = await Promise.allSettled([
    needName ? api(base) : Promise.resolve(null),
    allows('marks:80') === false ? Promise.resolve(null) : api(`${base}/marks?coverage=80`),
  ]);
  if (profile.status === 'fulfilled' && profile.value) setCompany(entry, profile.value);
  else if (profile.status === 'rejected') {
    fail(entry.slug, profile.reason, `The company ${entry.slug}`);
    entry.missing = profile.reason.status === 404;
    return;
  }
  if (series.status === 'rejected') {
    fail(entry.slug, series.reason, `The mark series of ${entry.name || entry.slug}`);
    return;
  }
  if (!series.value) {
    errors.set(entry.slug, needsTier('marks:80', 'Comparing daily marks'));
    return;
  }
  errors.delete(entry.slug);
  entry.line = toLine(series.value.series || [], 'mark_usd');
  showMeta(series.value.meta);
}

async function loadIndex(id) {
  const known = (state.indices || []).find((i) => i.index === id);
  const entry = { id, name: known ? known.name : id, sector: known ? known.sector : null, line: null };
  state.index = entry;
  try {
    const data = await api(`/v1/indices/${encodeURIComponent(id)}`);
    entry.name = data.name || entry.name;
    entry.sector = data.sector || entry.sector;
    entry.line = toLine(data.series || [], 'level');
    errors.delete('index');
  } catch (err) {
    fail('index', err, `The index ${entry.name}`);
  }
}

async function loadIndexList() {
  const select = $('index');
  if (allows('marks:80') === false) {
    state.indices = null;
  } else {
    try {
      const data = await api('/v1/indices');
      state.indices = data.indices || [];
      errors.delete('indices');
    } catch (err) {
      state.indices = null;
      if (err.status === 401 || err.status === 429) showError(err, 'The list of indices');
      else if (err.status !== 403) errors.set('indices', problemWords(err, 'The list of indices'));
    }
  }
  if (!state.indices) {
    select.replaceChildren(el('option', { value: '', text: 'None (the indices need a Research key)' }));
    select.disabled = true;
    return;
  }
  select.disabled = false;
  select.replaceChildren(el('option', { value: '', text: 'None' }),
    ...state.indices.map((i) => el('option', { value: i.index, text: i.name })));
}

/* ---------- the address ---------- */

function readAddress() {
  const query = new URLSearchParams(location.search);
  const slugs = [];
  for (const part of query.getAll('c').join(',').split(',')) {
    const slug = part.trim().toLowerCase();
    if (SLUG.test(slug) && !slugs.includes(slug) && slugs.length < MAX_COMPANIES) slugs.push(slug);
  }
  const index = (query.get('index') || '').trim().toLowerCase();
  return {
    slugs,
    index: /^[a-z0-9-]{1,100}$/.test(index) ? index : '',
    scale: query.get('scale') === 'usd' ? 'usd' : 'rebased',
    at: isDate(query.get('at') || '') ? query.get('at') : '',
  };
}

function writeAddress() {
  const query = new URLSearchParams();
  if (state.companies.length) query.set('c', state.companies.map((c) => c.slug).join(','));
  if (state.index) query.set('index', state.index.id);
  if (state.scale === 'usd') query.set('scale', 'usd');
  if (state.at) query.set('at', state.at);
  const qs = query.toString().replace(/%2C/g, ',');
  history.replaceState(null, '', `/compare${qs ? `?${qs}` : ''}`);
}

/* ---------- the picks ---------- */

function renderChips() {
  const items = state.companies.map((c, k) => el('li', { class: 'chip' },
    el('span', { class: `swatch line s${k}`, 'aria-hidden': 'true' }),
    el('span', { text: c.name || c.slug }),
    el('button', {
      type: 'button', class: 'chip-remove', 'data-slug': c.slug, 'aria-label': `Remove ${c.name || c.slug}`, title: 'Remove',
    }, '×')));
  $('chosen').replaceChildren(...items);
  $('chosen').hidden = items.length === 0;
  const full = state.companies.length >= MAX_COMPANIES;
  $('add-company').disabled = full;
  $('add-status').textContent = full ? `Five companies chosen: remove one to add another.` : $('add-status').textContent;
}

async function addCompany(c) {
  if (state.companies.some((x) => x.slug === c.slug)) return;
  if (state.companies.length >= MAX_COMPANIES) {
    $('add-status').textContent = 'Five companies chosen: remove one to add another.';
    return;
  }
  const entry = { slug: c.slug, name: '', line: null };
  setCompany(entry, c);
  state.companies.push(entry);
  $('add-company').value = '';
  renderChips();
  writeAddress();
  busy(1);
  try {
    await loadCompany(entry);
  } finally {
    busy(-1);
  }
  draw();
}

function removeCompany(slug) {
  state.companies = state.companies.filter((c) => c.slug !== slug);
  errors.delete(slug);
  renderChips();
  writeAddress();
  draw();
  $('add-company').focus();
}

/* ---------- the drawing ---------- */

const CLASSES = ['s0', 's1', 's2', 's3', 's4'];

/** The series shown: each company that loaded, then the index; with the class of its line. */
function seriesShown() {
  const out = [];
  state.companies.forEach((c, k) => {
    if (c.line && c.line.days.length) {
      out.push({
        key: c.slug, label: c.name || c.slug, short: shortName(c.name || c.slug), cls: `line ${CLASSES[k]}`, kind: 'company', src: c.line,
        outcome: c.over ? c.outcome : null,
      });
    }
  });
  if (state.index && state.index.line && state.index.line.days.length) {
    const label = `Index: ${state.index.sector || (state.index.id === 'all' ? 'all companies' : state.index.id)}`;
    out.push({ key: `index:${state.index.id}`, label, short: shortName(label.replace(/^Index: /, ''), 'index'), cls: 'line idx', kind: 'index', src: state.index.line, id: state.index.id });
  }
  return out;
}

function shortName(name, suffix) {
  const plain = name.replace(/ \(.*\)$/, '');
  const short = plain.length > 14 ? `${plain.slice(0, 13)}…` : plain;
  return suffix ? `${short} ${suffix}` : short;
}

const fmtValue = (s, v) => (s.kind === 'index' ? level(v) : usd(v));

function draw() {
  showErrors();
  const series = seriesShown();
  const result = $('compare-result');
  const at = $('at');
  if (!series.length) {
    result.hidden = true;
    $('compare-text').hidden = true;
    state.view = null;
    at.disabled = true;
    at.value = '';
    if (state.companies.length || state.index) {
      say($('compare-note'), 'Nothing to draw yet.');
    } else {
      say($('compare-note'), 'Add up to five companies with the search box, and an index if you like: their daily marks are drawn here. For example, ');
      $('compare-note').append(el('a', { href: '/compare?c=stripe,revolut,klarna&index=fintech', text: 'Stripe, Revolut and Klarna against the fintech index' }), '.');
    }
    return;
  }
  const first = Math.max(...series.map((s) => s.src.days[0]));
  const last = Math.min(...series.map((s) => s.src.days[s.src.days.length - 1]));
  const end = Math.max(...series.map((s) => (s.outcome ? dayNumber(s.outcome.occurred_on) : s.src.days[s.src.days.length - 1])));
  const start = Math.min(...series.map((s) => s.src.days[0]));
  const notes = [];
  let rebased = state.scale === 'rebased';
  let atDay = null;
  if (first <= last) {
    at.min = dateOf(first);
    at.max = dateOf(last);
    at.disabled = false;
    atDay = first;
    if (state.at) {
      const asked = dayNumber(state.at);
      if (asked >= first && asked <= last) atDay = asked;
      else notes.push(`${state.at} is not a day every series has (they all have ${dateOf(first)} to ${dateOf(last)}): the rebase date is ${dateOf(first)}, the first day they all have.`);
    }
    at.value = dateOf(atDay);
  } else {
    at.disabled = true;
    at.value = '';
    if (rebased) notes.push('These series have no day in common, so they cannot be rebased to one date: they are shown in US dollars.');
    rebased = false;
  }

  const lines = series.map((s) => {
    const base = atDay != null ? valueOn(s.src, atDay) : null;
    const values = rebased ? s.src.values.map((v) => (base > 0 ? (v / base) * 100 : null)) : s.src.values;
    const line = { ...s, days: s.src.days, values, base, axis: !rebased && s.kind === 'index' ? 'right' : 'left' };
    // A listed, sold or failed company: its line ends the day before the outcome (its series
    // does), and the outcome is drawn at its day and value (rebased like the line); a sale
    // whose price was not disclosed is marked at the last private mark's level.
    const o = s.outcome;
    if (o) {
      const known = o.valuation_usd > 0 || o.kind === 'bankrupt' || o.kind === 'wound_down';
      const raw = known ? o.valuation_usd : s.src.values[s.src.values.length - 1];
      line.exit = {
        day: dayNumber(o.occurred_on),
        value: rebased ? (base > 0 ? (raw / base) * 100 : null) : raw,
        label: `${OUTCOME_WORDS[o.kind]} ${known ? usd(o.valuation_usd) : '(price n/d)'}`,
        text: outcomeText(o),
      };
    }
    return line;
  });
  if (rebased) {
    const zero = lines.filter((l) => !(l.base > 0));
    for (const l of zero) notes.push(`${l.label} is at 0 on ${dateOf(atDay)}, so it cannot be rebased to it.`);
  }
  const from = rebased ? atDay : start;
  const to = end; // the chart runs to the last outcome or the last mark, whichever is later
  const lastMark = Math.max(...series.map((s) => s.src.days[s.src.days.length - 1]));
  state.view = { lines, from, to: lastMark, atDay, rebased };
  say($('compare-note'), notes.join(' '));
  result.hidden = false;

  const names = lines.map((l) => l.label).join(', ');
  lineChart($('compare-chart'), {
    id: 'compare-svg',
    label: rebased
      ? `Chart of ${names}, rebased to 100 on ${dateOf(atDay)}, daily from ${dateOf(from)} to ${dateOf(to)}, on a logarithmic scale.`
      : `Chart of ${names} in US dollars${lines.some((l) => l.axis === 'right') ? ' (the index on its own axis, right)' : ''}, daily from ${dateOf(from)} to ${dateOf(to)}, on a logarithmic scale.`,
    from,
    to,
    lines,
    left: rebased ? { format: levelTick, title: `100 = ${dateOf(atDay)}` } : { format: usd, title: 'Mark, USD' },
    right: rebased ? null : { format: levelTick, title: 'Index level' },
    marker: rebased ? null : atDay,
    endLabels: true,
    readoutNode: $('compare-readout'),
    readout: (d) => readoutText(lines, d, rebased),
  });
  $('compare-legend').replaceChildren(...lines.map((l) => el('li', {},
    el('span', { class: `swatch ${l.cls}` }),
    `${l.label}${l.axis === 'right' ? ' (right axis)' : ''}${l.exit ? `: ${l.exit.text} (◆)` : ''}`)));
  $('compare-caption').textContent = rebased
    ? `Each series divided by its value on ${dateOf(atDay)} and multiplied by 100, so every line starts at 100 there: a line at 150 is up 50% since. Logarithmic scale: equal steps are equal percentage changes. Point at the chart, or focus it and press ← → (a day), Page Up and Page Down (30 days), Home and End, to read a day's values.`
    : `Daily marks in US dollars on a logarithmic scale${lines.some((l) => l.axis === 'right') ? '; the index is a level (100 on its first day), not dollars, so it has its own axis on the right' : ''}.`
      + `${atDay != null ? ` The dashed line marks ${dateOf(atDay)}, the date the table starts from.` : ''} Point at the chart, or focus it and use the arrow keys, to read a day's values.`;
  renderTable(lines, atDay, rebased);
  renderSample(lines, from, lastMark, atDay, rebased);
}

function readoutText(lines, d, rebased) {
  const parts = lines.map((l) => {
    const v = valueOn(l, d);
    if (v == null && l.exit && d >= l.exit.day - 1) return `${l.label}: ${l.exit.text}; no private marks after it`;
    if (v == null) return `${l.label}: no value`;
    if (!rebased) return `${l.label}: ${fmtValue(l, v)}`;
    const raw = valueOn(l.src, d);
    return `${l.label}: ${level(v)} (${fmtValue(l, raw)})`;
  });
  return `${dateOf(d)}: ${parts.join('; ')}.`;
}

const pctShort = (v) => (typeof v !== 'number' ? 'n/a'
  : `${v > 0 ? '+' : v < 0 ? '−' : ''}${Math.abs(v).toLocaleString('en-US', { maximumFractionDigits: Math.abs(v) >= 100 ? 0 : 1 })}%`);

function renderTable(lines, atDay, rebased) {
  const table = $('compare-table');
  const atDate = atDay != null ? dateOf(atDay) : null;
  const lastDays = lines.map((l) => l.src.days[l.src.days.length - 1]);
  const sameLast = lastDays.every((d) => d === lastDays[0]);
  $('compare-table-caption').textContent = atDate
    ? `Each series on ${atDate} and on its last day, and the change between${rebased ? ' (below each value: rebased, 100 on that date)' : ''}`
    : 'Each series on its first and last day, and the change between';
  table.tHead.replaceChildren(el('tr', {},
    el('th', { scope: 'col', text: 'Series' }),
    el('th', { scope: 'col', class: 'num', text: atDate || 'First' }),
    el('th', { scope: 'col', class: 'num', text: sameLast ? dateOf(lastDays[0]) : 'Last' }),
    el('th', { scope: 'col', class: 'num', text: 'Change' })));
  table.tBodies[0].replaceChildren(...lines.map((l, k) => {
    const n = l.src.days.length;
    const d0 = atDay != null ? atDay : l.src.days[0];
    const v0 = valueOn(l.src, d0);
    const d1 = lastDays[k];
    const v1 = l.src.values[n - 1];
    const change = v0 > 0 && typeof v1 === 'number' ? (v1 / v0 - 1) * 100 : null;
    const cell = (v, d, showDate, last) => {
      const r = rebased && l.base > 0 && v != null ? (v / l.base) * 100 : null;
      const when = showDate ? `${last && l.exit ? 'last private mark, ' : 'on '}${dateOf(d)}` : null;
      const sub = [r != null ? `= ${level(r)}` : null, when].filter(Boolean).join(' ');
      return el('td', {
        class: 'num', 'data-value': v, 'data-date': dateOf(d), 'data-rebased': r != null ? Number(r.toFixed(4)) : null,
      }, l.kind === 'index' ? level(v) : money(v), sub ? el('span', { class: 'sub', text: sub }) : null);
    };
    return el('tr', { 'data-key': l.key },
      el('th', { scope: 'row' }, el('span', { class: `swatch ${l.cls}`, 'aria-hidden': 'true' }), ' ', l.kind === 'company'
        ? el('a', { href: `/explore/${encodeURIComponent(l.key)}`, text: l.label })
        : el('a', { href: `/indices?index=${encodeURIComponent(l.id)}`, text: l.label }),
      l.exit ? el('span', { class: 'sub', text: l.exit.text }) : null),
      cell(v0, d0, atDay == null, false),
      cell(v1, d1, !sameLast || Boolean(l.exit), true),
      el('td', { class: `num ${change > 0 ? 'up' : change < 0 ? 'down' : ''}`.trim(), 'data-change': change, text: pctShort(change) }));
  }));
}

/** The rows of the sampled table: the rebase date, then each period's last day, then the last
 * day; months for up to five years, quarters up to fifteen, years beyond. */
function sampleDays(from, to, atDay) {
  const months = (to - from) / 30.44;
  const step = months <= 60 ? 1 : months <= 180 ? 3 : 12;
  const days = new Set([from]);
  if (atDay != null && atDay >= from) days.add(atDay);
  const start = new Date(from * 86400000);
  let y = start.getUTCFullYear();
  let m = start.getUTCMonth();
  for (;;) {
    const endOfMonth = Date.UTC(y, m + 1, 0) / 86400000;
    if (endOfMonth > to) break;
    if ((m + 1) % step === 0 && endOfMonth >= from) days.add(endOfMonth);
    m += 1;
    if (m === 12) { m = 0; y += 1; }
  }
  days.add(to);
  return { days: [...days].sort((a, b) => a - b), step };
}

function renderSample(lines, from, to, atDay, rebased) {
  const { days, step } = sampleDays(from, to, atDay);
  const every = step === 1 ? 'month' : step === 3 ? 'quarter' : 'year';
  $('compare-sample-caption').textContent = `${rebased ? 'Rebased to 100 on ' + dateOf(atDay) : 'Marks in US dollars (an index: its level)'}, `
    + `on the first day shown, each ${every}'s last day and the last day`;
  const table = $('compare-sample');
  table.tHead.replaceChildren(el('tr', {}, el('th', { scope: 'col', text: 'Date' }),
    ...lines.map((l) => el('th', { scope: 'col', class: 'num', text: l.label }))));
  table.tBodies[0].replaceChildren(...days.map((d) => el('tr', { class: d === atDay ? 'event-row' : null },
    el('th', { scope: 'row', class: 'nowrap', text: dateOf(d) }),
    ...lines.map((l) => {
      const v = valueOn(l, d);
      return el('td', { class: 'num', text: v == null ? '—' : rebased ? level(v) : fmtValue(l, v) });
    }))));
  $('compare-text').hidden = false;
}

/** The chart's daily values as CSV: a row per day shown; per company its mark in whole
 * dollars (and rebased, when rebased), per index its level (and rebased). */
function compareCsv() {
  const view = state.view;
  if (!view) throw new Error('there is nothing to download yet');
  const columns = ['date'];
  for (const l of view.lines) {
    const stem = l.kind === 'index' ? `index_${l.id}` : l.key;
    columns.push(l.kind === 'index' ? `${stem}_level` : `${stem}_mark_usd`);
    if (view.rebased) columns.push(`${stem}_rebased_${dateOf(view.atDay)}`);
  }
  const rows = [];
  for (let d = view.from; d <= view.to; d += 1) {
    const row = [dateOf(d)];
    for (const l of view.lines) {
      row.push(valueOn(l.src, d));
      if (view.rebased) {
        const r = valueOn(l, d);
        row.push(r == null ? null : Number(r.toFixed(4)));
      }
    }
    rows.push(row);
  }
  const names = view.lines.map((l) => (l.kind === 'index' ? `index-${l.id}` : l.key));
  return { text: toCsv(columns, rows), filename: fileName('compare', ...names, view.rebased ? `rebased-${dateOf(view.atDay)}` : 'usd') };
}

/* ---------- start ---------- */

async function route() {
  $('compare-view').hidden = true;
  state.run += 1;
  const run = state.run;
  await keyThenView(async () => {
    $('compare-view').hidden = false;
    const wanted = readAddress();
    state.scale = wanted.scale;
    state.at = wanted.at;
    for (const input of document.querySelectorAll('input[name="scale"]')) input.checked = input.value === state.scale;
    errors.clear();
    await loadIndexList();
    if (run !== state.run) return;
    state.companies = wanted.slugs.map((slug) => ({ slug, name: '', line: null }));
    renderChips();
    state.index = null;
    const loads = state.companies.map(loadCompany);
    if (wanted.index && state.indices) loads.push(loadIndex(wanted.index));
    else if (wanted.index) errors.set('index', needsTier('marks:80', 'Comparing with an index'));
    await Promise.all(loads);
    if (run !== state.run) return;
    state.companies = state.companies.filter((c) => !c.missing);
    $('index').value = state.index ? state.index.id : '';
    renderChips();
    writeAddress();
    draw();
  }, { busy });
}

function start() {
  initKeyPanel(() => route());
  initExactToggles();
  const search = companySearch({
    input: $('add-company'),
    list: $('add-list'),
    status: $('add-status'),
    onPick: addCompany,
    exclude: () => state.companies.map((c) => c.slug),
  });
  $('compare-form').addEventListener('submit', (ev) => {
    ev.preventDefault(); // Enter in the search box with none highlighted: the first suggestion
    const first = search.first();
    if (first) {
      search.close();
      addCompany(first);
    }
  });
  $('chosen').addEventListener('click', (ev) => {
    const button = ev.target.closest('button[data-slug]');
    if (button) removeCompany(button.dataset.slug);
  });
  $('index').addEventListener('change', async () => {
    const id = $('index').value;
    errors.delete('index');
    if (!id) {
      state.index = null;
      writeAddress();
      draw();
      return;
    }
    busy(1);
    try {
      await loadIndex(id);
    } finally {
      busy(-1);
    }
    writeAddress();
    draw();
  });
  for (const input of document.querySelectorAll('input[name="scale"]')) {
    input.addEventListener('change', () => {
      if (!input.checked) return;
      state.scale = input.value;
      writeAddress();
      draw();
    });
  }
  $('at').addEventListener('change', () => {
    const value = $('at').value;
    if (!isDate(value)) return;
    state.at = value;
    writeAddress();
    draw();
  });
  downloadButton($('compare-download'), $('compare-download-status'), async () => compareCsv(), 'The comparison download');
  route();
}

start();

