/* indices.js: the indices page (/indices).

   Read from the /v1 API with the visitor's key (Research and above; the 95% band with Pro
   and above; a free key is told so in words):
   - GET /v1/indices: every index (all companies, and one per sector) on its latest day, as a
     table;
   - GET /v1/indices/{id}?coverage=&from=&to=: the chosen index, one point per day, drawn as
     a plain SVG line with its band on a logarithmic scale, with a hover and keyboard readout
     and its numbers sampled in a table;
   - GET /v1/indices/{id}/constituents?date=&coverage=: the companies in it on a day (the last
     day shown, or a day picked in the date field or on the chart) with their weights.
   Each table and the chart has "Download CSV": the series and the constituents are the API's
   own CSV (Accept: text/csv, with the key); the list of indices is written here.

   The page's address holds what is shown (index, from, to, coverage, date), never the key. */

import {
  $, el, say, level, levelTick, money, moneyBand, initExactToggles,
  api, showError, keyThenView, allows, needsTier, initKeyPanel, showMeta,
  dayNumber, dateOf, isDate,
  toCsv, fetchCsv, fileName, downloadButton,
} from '/assets/common.js';
import { lineChart } from '/assets/charts.js';

const state = {
  indices: [],
  id: 'all',
  coverage: 80,
  from: '',
  to: '',
  date: '',
  series: [],
  busy: 0,
  run: 0,
  constituentsRun: 0,
  /* The request of a day's companies under way (settled when it ends). */
  constituentsQueue: Promise.resolve(),
  constituents: null,
};

function busy(delta) {
  state.busy += delta;
  if (state.busy > 0) $('main').setAttribute('aria-busy', 'true');
  else $('main').removeAttribute('aria-busy');
}

const current = () => state.indices.find((i) => i.index === state.id);

/* ---------- the address ---------- */

function readAddress() {
  const query = new URLSearchParams(location.search);
  const id = (query.get('index') || '').trim().toLowerCase();
  const date = (name) => (isDate(query.get(name) || '') ? query.get(name) : '');
  return { id, from: date('from'), to: date('to'), date: date('date'), coverage: query.get('coverage') === '95' ? 95 : 80 };
}

function writeAddress() {
  const query = new URLSearchParams();
  if (state.id !== 'all') query.set('index', state.id);
  if (state.from) query.set('from', state.from);
  if (state.to) query.set('to', state.to);
  if (state.coverage === 95) query.set('coverage', '95');
  if (state.date) query.set('date', state.date);
  const qs = query.toString();
  history.replaceState(null, '', `/indices${qs ? `?${qs}` : ''}`);
}

/* ---------- the list ---------- */

function renderList() {
  const dates = new Set(state.indices.map((i) => i.latest && i.latest.date));
  const one = dates.size === 1 ? [...dates][0] : null;
  $('indices-caption').textContent = `Each index on ${one ? `its latest day, ${one}` : 'its latest day'}: its level, its 80% band and how many companies it holds`;
  $('indices-table').tBodies[0].replaceChildren(...state.indices.map((i) => {
    const l = i.latest || {};
    const link = el('a', { href: `/indices?index=${encodeURIComponent(i.index)}`, 'data-index': i.index, text: i.name });
    if (i.index === state.id) link.setAttribute('aria-current', 'true');
    return el('tr', { 'data-index': i.index, class: i.index === state.id ? 'selected' : null },
      el('th', { scope: 'row' }, link, el('span', { class: 'sub narrow-only', text: `${bandText(l.lower, l.upper)} · since ${i.first_date}` })),
      el('td', { class: 'num', text: level(l.level) }, one ? null : el('span', { class: 'sub', text: l.date || '' })),
      el('td', { class: 'num wide-only', text: bandText(l.lower, l.upper) }),
      el('td', { class: 'num', text: l.constituents == null ? 'n/a' : String(l.constituents) }),
      el('td', { class: 'num wide-only nowrap', text: i.first_date || '' }));
  }));
  $('pick-index').replaceChildren(...state.indices.map((i) => el('option', { value: i.index, text: i.name })));
  $('pick-index').value = state.id;
}

const bandText = (lo, hi) => `${level(lo)} – ${level(hi)}`;
const pct1 = (w) => `${(w * 100).toFixed(1)}%`;

/** The weight cap in words, from the method's published parameters (/v1/scorecard, public:
 * `index_weight_cap`); the page's sentence stays as written when it cannot be read. */
async function showWeightRule() {
  try {
    const card = await api('/v1/scorecard', { auth: false });
    const cap = card && card.index_weight_cap;
    if (typeof cap !== 'number' || !(cap > 0)) return;
    const n = Math.round(1 / cap); // below this many companies the cap cannot bind: equal weights
    $('weights-rule').textContent = `Weights: each company's share of the day's marks, capped at ${Number((cap * 100).toFixed(1))}% `
      + `(equal weights below ${n} companies); a sector with fewer than five companies marked on the latest day counts in `
      + '“other”, and each index starts on the first day from which it has at least five companies every day.';
  } catch { /* the sentence as written */ }
}

function indicesCsv() {
  const columns = ['index', 'name', 'sector', 'first_date', 'last_date', 'date', 'level', 'lower', 'upper', 'constituents'];
  const rows = state.indices.map((i) => {
    const l = i.latest || {};
    return [i.index, i.name, i.sector, i.first_date, i.last_date, l.date, l.level, l.lower, l.upper, l.constituents];
  });
  return { text: toCsv(columns, rows), filename: fileName('indices') };
}

/* ---------- the chosen index ---------- */

function seriesPath() {
  const query = new URLSearchParams({ coverage: String(state.coverage) });
  if (state.from) query.set('from', state.from);
  if (state.to) query.set('to', state.to);
  return `/v1/indices/${encodeURIComponent(state.id)}?${query}`;
}

async function loadSeries() {
  const run = (state.run += 1);
  const info = current();
  $('index-heading').textContent = info ? info.name : state.id;
  $('pick-index').value = state.id;
  const from = $('from');
  const to = $('to');
  for (const input of [from, to, $('day')]) {
    input.min = info ? info.first_date : '';
    input.max = info ? info.last_date : '';
  }
  from.value = state.from || (info ? info.first_date : '');
  to.value = state.to || (info ? info.last_date : '');
  $('coverage').value = String(state.coverage);
  $('series-error').textContent = '';
  let data;
  busy(1);
  try {
    data = await api(seriesPath());
  } catch (err) {
    if (run !== state.run) return;
    $('index-figure').hidden = true;
    $('series-download-box').hidden = true;
    $('index-text').hidden = true;
    showError(err, `The index ${info ? info.name : state.id}`, $('series-error'));
    return;
  } finally {
    busy(-1);
  }
  if (run !== state.run) return;
  showMeta(data.meta);
  state.series = data.series || [];
  const pts = state.series;
  const bandName = `${data.coverage || state.coverage}% band`;
  $('band-label').textContent = bandName;
  $('band-swatch').className = `swatch band${data.coverage === 95 ? 95 : 80}`;
  if (!pts.length) {
    $('index-figure').hidden = true;
    $('index-text').hidden = true;
    $('series-download-box').hidden = true;
    say($('series-error'), `The index has no day from ${state.from || 'its first day'} to ${state.to || 'its last day'}: it runs from ${info.first_date} to ${info.last_date}.`, 'note');
    return;
  }
  $('index-figure').hidden = false;
  $('series-download-box').hidden = false;
  const days = pts.map((p) => dayNumber(p.date));
  const bandCls = data.coverage === 95 ? 'band95' : 'band80';
  lineChart($('index-chart'), {
    id: 'index-svg',
    label: `Chart of ${pts.length} daily levels of ${data.name || state.id} from ${pts[0].date} to ${pts[pts.length - 1].date}, with its ${bandName}, on a logarithmic scale.`,
    from: days[0],
    to: days[days.length - 1],
    lines: [{
      key: state.id,
      label: data.name || state.id,
      cls: 'mark-line',
      days,
      values: pts.map((p) => p.level),
      bands: [{ lower: pts.map((p) => p.lower), upper: pts.map((p) => p.upper), cls: bandCls }],
    }],
    left: { format: levelTick, title: 'Level (100 on the first day)' },
    endLabels: false,
    readoutNode: $('index-readout'),
    readout: (d) => {
      const i = days.indexOf(d);
      if (i < 0) return `${dateOf(d)}: no level.`;
      const p = pts[i];
      return `${p.date}: level ${level(p.level)}; ${bandName} ${bandText(p.lower, p.upper)}; ${p.constituents} compan${p.constituents === 1 ? 'y' : 'ies'}. Click or press Enter to list them.`;
    },
    onPick: (d) => {
      state.date = dateOf(d);
      $('day').value = state.date;
      writeAddress();
      loadConstituents();
    },
  });
  renderSample(pts, bandName);
  const last = pts[pts.length - 1].date;
  if (!state.date || state.date < pts[0].date || state.date > last) {
    state.date = '';
    $('day').value = last;
  } else {
    $('day').value = state.date;
  }
  await loadConstituents();
}

function renderSample(pts, bandName) {
  const first = pts[0];
  const last = pts[pts.length - 1];
  let lo = first;
  let hi = first;
  for (const p of pts) {
    if (p.level < lo.level) lo = p;
    if (p.level > hi.level) hi = p;
  }
  $('index-summary').textContent = `${pts.length} daily levels from ${first.date} to ${last.date}: from ${level(first.level)} to `
    + `${level(last.level)} (${((last.level / first.level - 1) * 100).toFixed(1)}%); lowest ${level(lo.level)} on ${lo.date}, `
    + `highest ${level(hi.level)} on ${hi.date}. Latest ${bandName} ${bandText(last.lower, last.upper)}, ${last.constituents} companies.`;
  const months = (dayNumber(last.date) - dayNumber(first.date)) / 30.44;
  const step = months <= 60 ? 1 : months <= 180 ? 3 : 12;
  const every = step === 1 ? 'month' : step === 3 ? 'quarter' : 'year';
  $('index-sample-caption').textContent = `The level on the first day, each ${every}'s last day and the last day`;
  const coverage = bandName.slice(0, 2);
  $('sample-lower').textContent = `${coverage}% low`;
  $('sample-upper').textContent = `${coverage}% high`;
  const rows = pts.filter((p, i) => {
    if (i === 0 || i === pts.length - 1) return true;
    const next = pts[i + 1].date;
    if (next.slice(0, 7) === p.date.slice(0, 7)) return false; // not a month's last day
    return Number(p.date.slice(5, 7)) % step === 0;
  });
  $('index-sample').tBodies[0].replaceChildren(...rows.map((p) => el('tr', {},
    el('th', { scope: 'row', class: 'nowrap', text: p.date }),
    el('td', { class: 'num', text: level(p.level) }),
    el('td', { class: 'num', text: level(p.lower) }),
    el('td', { class: 'num', text: level(p.upper) }),
    el('td', { class: 'num', text: String(p.constituents) }))));
  $('index-text').hidden = false;
}

/* ---------- a day's constituents ---------- */

function constituentsPath(date) {
  return `/v1/indices/${encodeURIComponent(state.id)}/constituents?${new URLSearchParams({ date, coverage: String(state.coverage) })}`;
}

async function loadConstituents() {
  const run = (state.constituentsRun += 1);
  const date = $('day').value;
  const info = current();
  $('constituents-error').textContent = '';
  if (!isDate(date)) {
    say($('constituents-error'), 'Choose a day (YYYY-MM-DD).', 'error');
    return;
  }
  let data;
  busy(1);
  // One day's companies asked at a time: the server makes a past day's within one place per
  // key, so a second asked before the first ends would be refused. A day chosen while one is
  // under way waits for it, and only the day chosen last is then asked.
  const previous = state.constituentsQueue;
  let release = () => {};
  state.constituentsQueue = new Promise((resolve) => { release = resolve; });
  try {
    await previous;
    if (run !== state.constituentsRun) return;
    data = await api(constituentsPath(date));
  } catch (err) {
    if (run !== state.constituentsRun) return;
    $('constituents-wrap').hidden = true;
    $('constituents-download-box').hidden = true;
    $('constituents-summary').textContent = '';
    showError(err, `The companies of ${info ? info.name : state.id} on ${date}`, $('constituents-error'));
    return;
  } finally {
    release();
    busy(-1);
  }
  if (run !== state.constituentsRun) return;
  state.constituents = data;
  const list = data.constituents || [];
  const total = list.reduce((sum, c) => sum + c.weight, 0);
  const bandName = `${data.coverage}% band`;
  $('constituents-heading').textContent = `Companies in ${info ? info.name : state.id} on ${data.date}`;
  const shares = list.reduce((sum, c) => sum + (typeof c.value_weight === 'number' ? c.value_weight : 0), 0);
  const capped = list.filter((c) => typeof c.value_weight === 'number' && c.value_weight > c.weight + 1e-9).length;
  $('constituents-caption').textContent = `The ${list.length} companies in the index on ${data.date}, largest mark first: `
    + `each one's weight in the index (capped) beside its share of the day's marks (uncapped); level ${level(data.level)}`;
  $('constituents-band').textContent = bandName;
  const top = list[0];
  $('constituents-summary').textContent = `On ${data.date} the index stood at ${level(data.level)} with ${list.length} compan${list.length === 1 ? 'y' : 'ies'}`
    + `${top ? `; the largest, ${top.name}, weighs ${pct1(top.weight)}${typeof top.value_weight === 'number' ? ` (${pct1(top.value_weight)} of the day's marks)` : ''}` : ''}`
    + `${capped ? `; ${capped} compan${capped === 1 ? 'y is' : 'ies are'} held to the cap` : ''}.`;
  $('constituents-table').tBodies[0].replaceChildren(...list.map((c) => el('tr', { 'data-slug': c.slug },
    el('th', { scope: 'row' }, el('a', { href: `/explore/${encodeURIComponent(c.slug)}`, text: c.name || c.slug })),
    el('td', { class: 'num', 'data-weight': c.weight, text: `${(c.weight * 100).toFixed(2)}%` }),
    el('td', { class: 'num', 'data-value-weight': c.value_weight ?? null, text: typeof c.value_weight === 'number' ? `${(c.value_weight * 100).toFixed(2)}%` : 'n/a' }),
    el('td', { class: 'num' }, money(c.mark_usd)),
    el('td', { class: 'num wide-only' }, moneyBand(c.lower_usd, c.upper_usd)))));
  $('constituents-table').tFoot.replaceChildren(el('tr', {},
    el('th', { scope: 'row', text: 'Total' }),
    el('td', { class: 'num', 'data-weight': total, text: `${(total * 100).toFixed(2)}%` }),
    el('td', { class: 'num', 'data-value-weight': shares, text: `${(shares * 100).toFixed(2)}%` }),
    el('td', { class: 'num' }, money(list.reduce((sum, c) => sum + c.mark_usd, 0))),
    el('td', { class: 'wide-only' })));
  $('constituents-wrap').hidden = list.length === 0;
  $('constituents-download-box').hidden = list.length === 0;
}

/* ---------- start ---------- */

async function route() {
  $('indices-error').textContent = '';
  $('indices-view').hidden = true;
  await keyThenView(showIndices, { busy });
}

async function showIndices() {
  if (allows('marks:80') === false) {
    say($('indices-error'), needsTier('marks:80', 'Index data'));
    return;
  }
  let data;
  try {
    data = await api('/v1/indices');
  } catch (err) {
    showError(err, 'Index data', $('indices-error'));
    return;
  }
  showMeta(data.meta);
  state.indices = data.indices || [];
  const wanted = readAddress();
  state.id = state.indices.some((i) => i.index === wanted.id) ? wanted.id : 'all';
  if (wanted.id && wanted.id !== state.id) {
    say($('indices-error'), `No index has the id “${wanted.id}”: showing ${current() ? current().name : 'the first'} instead.`);
  }
  if (!current() && state.indices.length) state.id = state.indices[0].index;
  const may95 = allows('marks:95') !== false;
  const option95 = $('coverage').querySelector('option[value="95"]');
  option95.disabled = !may95;
  option95.textContent = may95 ? '95%' : '95% (Pro and above)';
  state.coverage = wanted.coverage === 95 && may95 ? 95 : 80;
  say($('series-note'), wanted.coverage === 95 && !may95 ? needsTier('marks:95', 'The 95% band') : '');
  state.from = wanted.from;
  state.to = wanted.to;
  state.date = wanted.date;
  renderList();
  $('indices-view').hidden = false;
  writeAddress();
  await loadSeries();
}

function choose(id) {
  state.id = id;
  state.from = '';
  state.to = '';
  state.date = '';
  renderList();
  writeAddress();
  loadSeries();
}

function start() {
  initKeyPanel(() => route());
  initExactToggles();
  showWeightRule();
  $('indices-table').addEventListener('click', (ev) => {
    const link = ev.target.closest('a[data-index]');
    if (!link || ev.ctrlKey || ev.metaKey || ev.shiftKey) return;
    ev.preventDefault();
    choose(link.dataset.index);
    $('index-heading').scrollIntoView({ block: 'start' });
  });
  $('pick-index').addEventListener('change', () => choose($('pick-index').value));
  $('range-form').addEventListener('submit', (ev) => {
    ev.preventDefault();
    const info = current();
    const from = $('from').value;
    const to = $('to').value;
    if (from && to && from > to) {
      say($('series-error'), `“From” (${from}) is after “To” (${to}): choose a From on or before To.`, 'error');
      return;
    }
    state.from = from && info && from !== info.first_date ? from : '';
    state.to = to && info && to !== info.last_date ? to : '';
    state.coverage = Number($('coverage').value) === 95 ? 95 : 80;
    writeAddress();
    loadSeries();
  });
  for (const button of document.querySelectorAll('.presets button[data-years]')) {
    button.addEventListener('click', () => {
      const info = current();
      if (!info) return;
      const years = Number(button.dataset.years);
      state.to = '';
      if (years) {
        const from = dayNumber(info.last_date) - Math.round(years * 365.25) + 1;
        state.from = from > dayNumber(info.first_date) ? dateOf(from) : '';
      } else {
        state.from = '';
      }
      writeAddress();
      loadSeries();
    });
  }
  $('day-form').addEventListener('submit', (ev) => {
    ev.preventDefault();
    state.date = $('day').value;
    writeAddress();
    loadConstituents();
  });
  downloadButton($('indices-download'), $('indices-download-status'), async () => indicesCsv(), 'The download of the indices');
  downloadButton($('series-download'), $('series-download-status'), async () => ({
    text: await fetchCsv(seriesPath()),
    filename: fileName('index', state.id, state.coverage, state.from && `from-${state.from}`, state.to && `to-${state.to}`),
  }), 'The download of the index');
  downloadButton($('constituents-download'), $('constituents-download-status'), async () => {
    const date = state.constituents ? state.constituents.date : $('day').value;
    return {
      text: await fetchCsv(constituentsPath(date)),
      filename: fileName('index', state.id, 'constituents', date, state.coverage),
    };
  }, 'The download of the constituents');
  route();
}

start();
