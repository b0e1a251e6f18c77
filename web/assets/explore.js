/* explore.js: the company explorer behind /explore (the list) and /explore/{slug} (one company).

   It reads the /v1 API with the visitor's own key, so the key's tier and request budget apply.
   The key lives in this tab's sessionStorage only and travels only in the X-API-Key header:
   never in a URL, a cookie or a log. The list's sort, filters and pages are the API's own
   (sort, sector, status, cursor). A company's daily marks, 80% and 95% bands and events are
   drawn as plain inline SVG with a hover and keyboard readout and a text alternative. For an
   Enterprise key, the signed resolution record is verified in the browser with Web Crypto
   (Ed25519 over the RFC 8785 canonical JSON of the record without its signature).

   No framework, no build step, no eval, no inline styles: it runs under the site's strict
   Content-Security-Policy. */

import {
  $, el, svgEl, setAttrs, say, facts, sourceLink, hostOf,
  usd, usdFull, band, words, an, pct, pctCell, STATUS, displayName,
  getKey, api, problemWords, showError, loadUsage, allows, needsTier, showKeyStatus, initKeyPanel, showMeta,
  dayNumber, nearestIn, logTicks, timeTicks, chartWidth, redrawOnResize,
  toCsv, fetchCsv, fileName, downloadButton, companySearch,
} from '/assets/common.js';

const PAGE_SIZE = 50;

/* ---------- /explore: the list ---------- */

let listRun = 0; // bumps on every new list, so a stale page answer is dropped
let nextCursor = null;
let sectorsFor = null; // the key the sector menu was filled for
const LIST_PARAMS = ['q', 'sort', 'sector', 'status'];
const DOWNLOAD_PAGE = 100; // the list's CSV is fetched 100 rows a page, following X-Next-Cursor

function listParams() {
  const query = new URLSearchParams(location.search);
  const params = {};
  for (const name of LIST_PARAMS) {
    const value = (query.get(name) || '').trim();
    if (value) params[name] = value;
  }
  return params;
}

/** The sector menu: every sector of the key's universe with its companies (/v1/sectors), so
 * no sector can be mistyped. A sector in the address that is not listed is kept as asked. */
async function fillSectors(wanted) {
  const select = $('sector');
  if (sectorsFor !== getKey()) {
    try {
      const data = await api('/v1/sectors');
      sectorsFor = getKey();
      select.replaceChildren(el('option', { value: '', text: 'Any sector' }),
        ...(data.sectors || []).map((s) => el('option', {
          value: s.sector,
          text: `${s.sector} (${s.companies}${s.private !== s.companies ? `, ${s.private} private` : ''})`,
        })));
    } catch (err) {
      if (err.status === 401 || err.status === 429) throw err;
      say($('list-error'), problemWords(err, 'The list of sectors'), 'error');
    }
  }
  const value = (wanted || '').toLowerCase();
  if (value && ![...select.options].some((o) => o.value === value)) {
    select.append(el('option', { value, text: `${value} (not a sector of this key's universe)` }));
  }
  select.value = value;
}

async function showList() {
  $('list-view').hidden = false;
  const params = listParams();
  const sort = $('sort');
  // With a search and no sort, the API orders by relevance.
  sort.options[0].textContent = params.q ? 'Best match' : 'Slug (A–Z)';
  sort.value = params.sort || '';
  if (sort.value !== (params.sort || '')) { // a sort the menu lacks (the API will judge it)
    sort.append(el('option', { value: params.sort, text: params.sort }));
    sort.value = params.sort;
  }
  $('q').value = params.q || '';
  $('status').value = params.status || '';
  const field = (params.sort || '').replace(/^-/, '');
  for (const th of document.querySelectorAll('#companies th[data-sort]')) {
    if (th.dataset.sort === field) th.setAttribute('aria-sort', params.sort.startsWith('-') ? 'descending' : 'ascending');
    else th.removeAttribute('aria-sort');
  }
  $('company-rows').replaceChildren();
  $('list-count').textContent = '';
  $('universe-note').textContent = '';
  $('list-error').textContent = '';
  $('load-more').hidden = true;
  listRun += 1;
  const run = listRun;
  try {
    await fillSectors(params.sector);
  } catch (err) {
    showError(err, 'The list of sectors', $('list-error'));
    return;
  }
  if (run === listRun) await loadPage(null, run);
}

async function loadPage(cursor, run) {
  const query = new URLSearchParams({ limit: String(PAGE_SIZE), ...listParams() });
  if (cursor) query.set('cursor', cursor);
  const more = $('load-more');
  more.disabled = true;
  $('list-count').textContent = 'Loading…';
  try {
    const data = await api(`/v1/companies?${query}`);
    if (run !== listRun) return;
    $('list-error').textContent = '';
    const rows = $('company-rows');
    for (const c of data.companies) rows.append(companyRow(c));
    $('universe-note').textContent = data.universe_note || '';
    nextCursor = data.page && data.page.has_more ? data.page.next_cursor : null;
    more.hidden = !nextCursor;
    const n = rows.children.length;
    const q = listParams().q;
    $('list-count').textContent = n === 0
      ? `No company matches ${q ? `“${q}” with ` : ''}these filters.`
      : `Showing ${n} compan${n === 1 ? 'y' : 'ies'}${q ? ` matching “${q}”` : ''}`
        + `${nextCursor ? '; more are available' : ', all there are for these filters'}.`;
    showMeta(data.meta);
  } catch (err) {
    if (run !== listRun) return;
    $('list-count').textContent = '';
    showError(err, 'The company list', $('list-error'));
  } finally {
    more.disabled = false;
  }
}

/** The list as CSV, as it is filtered, searched and sorted: every page, not just those shown. */
async function listCsv() {
  const params = listParams();
  const text = await fetchCsv(`/v1/companies?${new URLSearchParams({ ...params, limit: String(DOWNLOAD_PAGE) })}`, { follow: true });
  return { text, filename: fileName('companies', params.sector, params.status, params.q, params.sort && `by-${params.sort.replace(/^-/, '')}${params.sort.startsWith('-') ? '-desc' : ''}`) };
}

/** What ended or fixed a company's private marks, in a few words; "Private" when nothing did. */
function outcomeWords(c) {
  const o = c.outcome;
  if (!o) return STATUS[c.status] || 'Private';
  switch (o.event_type) {
    case 'ipo': return `Listed ${o.occurred_on}`;
    case 'direct_listing': return `Listed directly ${o.occurred_on}`;
    case 'acquisition': return `Sale agreed ${o.occurred_on}`;
    case 'bankruptcy': return `Bankrupt ${o.occurred_on}`;
    default: return `${words(o.event_type)} ${o.occurred_on}`;
  }
}

function companyRow(c) {
  const m = c.latest_mark || {};
  const last = c.last_event;
  const outcome = outcomeWords(c);
  const name = c.name || c.slug;
  const aka = displayName(c).slice(name.length).replace(/^ \((.*)\)$/, '$1');
  // A mark whose series ended (a listing, a bankruptcy) says from when it is.
  const markDate = m.as_of_date && c.outcome && c.outcome.event_type !== 'acquisition' ? `as of ${m.as_of_date}` : '';
  return el('tr', {},
    el('th', { scope: 'row' },
      el('a', { href: `/explore/${encodeURIComponent(c.slug)}`, text: c.name || c.slug }),
      aka ? el('span', { class: 'sub', text: `also ${aka}` }) : null,
      el('span', { class: 'sub narrow-only', text: `${c.sector || ''} · ${outcome}` })),
    el('td', { class: 'wide-only', text: c.sector || '' }),
    el('td', { class: 'wide-only nowrap', text: outcome }),
    el('td', { class: 'num' }, usd(m.value_usd), markDate ? el('span', { class: 'sub', text: markDate }) : ''),
    el('td', { class: 'num' }, last ? usd(last.valuation_usd) : 'n/a',
      last ? el('span', { class: 'sub', text: `${last.occurred_on} · ${pct(m.vs_last_event_pct)} since` }) : ''),
    el('td', { class: 'num wide-only', text: band(m.lower_usd, m.upper_usd) }),
    pctCell(c.delta_30d_pct));
}

function onFilters(event) {
  event.preventDefault();
  const query = new URLSearchParams();
  for (const name of LIST_PARAMS) {
    const value = $(name).value.trim();
    if (value) query.set(name, value);
  }
  const qs = query.toString();
  history.pushState(null, '', `/explore${qs ? `?${qs}` : ''}`);
  route();
}

/* ---------- /explore/{slug}: one company ---------- */

/** "437 days" or "1 day". */
function daysWords(n) {
  return typeof n === 'number' ? `${n} day${n === 1 ? '' : 's'}` : 'some time';
}

/** What happened to a listed, sold or bankrupt company, in a sentence; empty for a private one. */
function outcomeSentence(p) {
  const o = p.outcome;
  if (!o) return '';
  const m = p.latest_mark || {};
  switch (o.event_type) {
    case 'ipo':
    case 'direct_listing':
      return `Listed on ${o.occurred_on} at ${usd(o.valuation_usd)}${o.event_type === 'direct_listing' ? ' (direct listing)' : ''}; `
        + `private marks end the day before${m.as_of_date ? `, at ${usd(m.value_usd)} on ${m.as_of_date}` : ''}.`;
    case 'acquisition':
      return `Agreed to be sold for ${usd(o.valuation_usd)} on ${o.occurred_on}. The mark holds the agreed price; `
        + 'its bands still widen with time, because agreed deals can fail.';
    case 'bankruptcy':
      return `Bankrupt on ${o.occurred_on}; the value reported after it, ${usd(o.valuation_usd)}, is the mark.`;
    default:
      return `${words(o.event_type)} on ${o.occurred_on} at ${usd(o.valuation_usd)}.`;
  }
}

/** The latest mark in words: what it starts from, what the method adds and why, what the
 * confidence and the bands mean. The drift's own words come from the API. */
function explanation(p) {
  const m = p.latest_mark;
  if (!m) return [];
  const out = [];
  const parts = Array.isArray(p.observations) ? p.observations : [];
  const event = parts.find((o) => o.part === 'event');
  const drift = parts.find((o) => o.part === 'drift');
  if (event && event.event_type !== 'bankruptcy') {
    const daysAgo = drift ? ` (${daysWords(drift.days)} before the mark)` : '';
    out.push(`The mark starts from the last reported valuation: ${usd(event.valuation_usd)}, `
      + `${an(words(event.event_type).toLowerCase())} on ${event.occurred_on}${daysAgo}.`
      + (drift ? ` ${drift.explanation}` : ''));
  }
  out.push('The mark is the method\'s estimate of the valuation at which the company will next be reported to '
    + 'transact (its next round, tender, sale or listing), not a price: most reported valuations are rises, so the '
    + 'mark of a company that has been quiet sits above its last reported value.');
  if (typeof m.confidence === 'number') {
    const c = Math.round(m.confidence * 100);
    out.push(`Confidence ${(m.confidence * 100).toFixed(1)}%: by the method's record, about ${c} in 100 forecasts `
      + 'made at this distance from the last event landed within ±10% of the value next reported.');
  }
  out.push(`80% band ${band(m.lower_usd, m.upper_usd)}: the value next reported has landed inside bands like this `
    + 'about 4 times in 5 (the 95% band, about 19 times in 20); the scorecard checks both.');
  return out;
}

/* The method's record on this company: /v1/companies/{slug}/backtest. */
async function renderBacktest(slug, name) {
  $('backtest-heading').textContent = `How the method did on ${name}`;
  $('backtest-figure').hidden = true;
  $('backtest-wrap').hidden = true;
  $('backtest-summary').textContent = '';
  if (allows('marks:80') === false) {
    say($('backtest-note'), needsTier('marks:80', 'The backtest of this company'));
    return;
  }
  let data;
  try {
    data = await api(`/v1/companies/${encodeURIComponent(slug)}/backtest`);
  } catch (err) {
    showError(err, 'The backtest of this company', $('backtest-note'));
    return;
  }
  const targets = Array.isArray(data.targets) ? data.targets : [];
  const s = data.summary || {};
  say($('backtest-note'), data.disclosure === 'full'
    ? ''
    : 'Below the Pro tier, what happened at each event is shown as where it fell against the forecast, without its value.');
  if (targets.length === 0) {
    $('backtest-summary').textContent = 'No event of this company could be scored: it has no earlier event to forecast from.';
    return;
  }
  $('backtest-summary').textContent = `${s.scored_events} scored event${s.scored_events === 1 ? '' : 's'}: `
    + `${s.inside_80} inside the 80% band, ${s.inside_95} inside the 95% band, ${s.hits} within ±10% of the forecast`
    + `${targets.length > s.scored_events ? '; and the outcome, against the mark the day before' : ''}.`;
  // On a phone the band goes under the forecast and what happened under the event, as the
  // events table puts its note under the type: five columns do not fit 390 pixels.
  $('backtest-table').tBodies[0].replaceChildren(...targets.map((t) => {
    const band80 = band(t.band_80 && t.band_80.lower, t.band_80 && t.band_80.upper);
    const what = happened(t);
    return el('tr', {},
      el('td', { class: 'nowrap', text: t.occurred_on }),
      el('td', {}, words(t.event_type) + (t.kind === 'event' ? '' : ' (outcome)'),
        el('span', { class: 'sub narrow-only', text: what })),
      el('td', { class: 'num' }, usd(t.mark_usd), el('span', { class: 'sub narrow-only', text: `80%: ${band80}` })),
      el('td', { class: 'num wide-only', text: band80 }),
      el('td', { class: 'num wide-only', text: `${(t.confidence * 100).toFixed(0)}%` }),
      el('td', { class: 'wide-only', text: what }));
  }));
  $('backtest-wrap').hidden = false;
  $('backtest-download-box').hidden = false;
  shown.backtest = targets;
  // Shown before it is drawn: a hidden box has no width to draw at.
  $('backtest-figure').hidden = false;
  drawBacktest(targets);
  redrawOnResize($('backtest-chart'), () => Number($('backtest-svg')?.getAttribute('width')),
    () => shown.backtest.length && drawBacktest(shown.backtest));
}

/** What happened at a scored event, in words: its value when this key may read it, else where
 * it fell against the forecast. */
function happened(t) {
  const where = t.hit ? 'within ±10% of the forecast'
    : t.inside_80 ? 'inside the 80% band' : t.inside_95 ? 'inside the 95% band only' : 'outside the 95% band';
  const side = t.hit ? '' : t.above ? ', above the forecast' : ', below the forecast';
  const value = typeof t.observed_usd === 'number' ? `${usd(t.observed_usd)}: ` : '';
  return `${value}${where}${side}`;
}

function drawBacktest(targets) {
  const box = $('backtest-chart');
  const W = chartWidth(box);
  const H = Math.round(Math.min(300, Math.max(200, W * 0.36)));
  const M = { l: 58, r: 14, t: 12, b: 28 };
  const values = [];
  for (const t of targets) {
    values.push(t.mark_usd, t.band_80 && t.band_80.lower, t.band_80 && t.band_80.upper, t.observed_usd);
    if (t.band_95) values.push(t.band_95.lower, t.band_95.upper);
  }
  const positive = values.filter((v) => typeof v === 'number' && v > 0);
  const lo = positive.length ? Math.min(...positive) : 1;
  const hi = positive.length ? Math.max(...positive) : 10;
  const pad = Math.max(0.05, (Math.log10(hi) - Math.log10(lo)) * 0.06);
  const l0 = Math.log10(lo) - pad;
  const l1 = Math.log10(hi) + pad;
  const days = targets.map((t) => dayNumber(t.marked_on));
  const d0 = Math.min(...days) - 30;
  const d1 = Math.max(...days) + 30;
  const pw = W - M.l - M.r;
  const ph = H - M.t - M.b;
  const x = (d) => Math.round((M.l + ((d - d0) / (d1 - d0)) * pw) * 10) / 10;
  const y = (v) => {
    const l = v > 0 ? Math.max(l0, Math.log10(v)) : l0;
    return Math.round((M.t + (1 - (l - l0) / (l1 - l0)) * ph) * 10) / 10;
  };
  const grid = svgEl('g', { 'aria-hidden': 'true' });
  for (const v of logTicks(l0, l1)) {
    grid.append(
      svgEl('line', { class: 'grid', x1: M.l, x2: W - M.r, y1: y(v), y2: y(v) }),
      svgEl('text', { class: 'axis', x: M.l - 6, y: y(v) + 4, 'text-anchor': 'end', text: usd(v) }));
  }
  for (const [tick, label] of timeTicks(d0, d1, pw)) {
    grid.append(svgEl('text', { class: 'axis', x: x(tick), y: H - M.b + 18, 'text-anchor': 'middle', text: label }));
  }
  grid.append(svgEl('line', { class: 'axis-line', x1: M.l, x2: W - M.r, y1: H - M.b, y2: H - M.b }));
  const marks = svgEl('g', { class: 'backtest' });
  targets.forEach((t, i) => {
    const cx = x(days[i]);
    const verdict = t.hit ? 'hit' : t.inside_80 ? 'covered_80' : t.inside_95 ? 'covered_95' : 'miss';
    const label = `${words(t.event_type)} on ${t.occurred_on}: forecast ${usd(t.mark_usd)}, 80% band `
      + `${band(t.band_80.lower, t.band_80.upper)}; ${happened(t)}`;
    const g = svgEl('g', { class: `target ${verdict}`, tabindex: 0, role: 'img', 'aria-label': label, 'data-kind': t.kind },
      svgEl('title', { text: label }));
    if (t.band_95) {
      g.append(svgEl('line', { class: 'band95-bar', x1: cx, x2: cx, y1: y(t.band_95.lower), y2: y(t.band_95.upper) }));
    }
    g.append(
      svgEl('line', { class: 'band80-bar', x1: cx, x2: cx, y1: y(t.band_80.lower), y2: y(t.band_80.upper) }),
      svgEl('circle', { class: 'mark-dot', cx, cy: y(t.mark_usd), r: 4 }));
    if (typeof t.observed_usd === 'number') {
      const oy = y(t.observed_usd);
      g.append(svgEl('path', { class: 'outcome-marker', d: `M${cx} ${oy - 6} l6 6 l-6 6 l-6 -6 z` }));
    }
    marks.append(g);
  });
  box.replaceChildren(svgEl('svg', {
    viewBox: `0 0 ${W} ${H}`, width: W, height: H, role: 'group', id: 'backtest-svg',
    'aria-label': `The method's forecast before each of ${targets.length} scored events, with its bands and what was reported`,
    'data-targets': targets.length,
  }, grid, marks));
}

/* What the company page shows, for its downloads. */
const shown = { slug: '', backtest: [] };

const BACKTEST_COLUMNS = ['slug', 'kind', 'event_id', 'event_type', 'occurred_on', 'marked_on', 'gap_years',
  'mark_usd', 'lower_80_usd', 'upper_80_usd', 'lower_95_usd', 'upper_95_usd', 'confidence',
  'observed_usd', 'error_pct', 'above', 'inside_80', 'inside_95', 'hit'];

/** The backtest table as CSV, written here (the API has no CSV form of it) with the API's
 * rules: one row per scored target, its fields as the JSON names them, the bands split in two
 * columns each; what this key may not read (a value withheld below Pro) is an empty cell. */
function backtestCsv() {
  const rows = shown.backtest.map((t) => [shown.slug, t.kind, t.event_id, t.event_type, t.occurred_on, t.marked_on,
    t.gap_years, t.mark_usd, t.band_80 && t.band_80.lower, t.band_80 && t.band_80.upper,
    t.band_95 && t.band_95.lower, t.band_95 && t.band_95.upper, t.confidence,
    t.observed_usd, t.error_pct, t.above, t.inside_80, t.inside_95, t.hit]);
  return { text: toCsv(BACKTEST_COLUMNS, rows), filename: fileName(shown.slug, 'backtest') };
}

function wireCompanyDownloads() {
  const base = () => `/v1/companies/${encodeURIComponent(shown.slug)}`;
  const series = (coverage) => async () => ({
    text: await fetchCsv(`${base()}/marks?coverage=${coverage}`),
    filename: fileName(shown.slug, 'marks', coverage),
  });
  downloadButton($('series-download'), $('series-download-status'), series(80), 'The mark series download');
  downloadButton($('series95-download'), $('series-download-status'), series(95), 'The mark series download');
  downloadButton($('events-download'), $('events-download-status'), async () => ({
    text: await fetchCsv(`${base()}/events`), filename: fileName(shown.slug, 'events'),
  }), 'The events download');
  downloadButton($('backtest-download'), $('backtest-download-status'), async () => backtestCsv(), 'The backtest download');
}

async function showCompany(slug) {
  shown.slug = slug;
  shown.backtest = [];
  $('company-view').hidden = false;
  $('back').hidden = false;
  $('lede').hidden = true;
  $('title').textContent = slug;
  document.title = `${slug} · Valuation Marks`;
  const base = `/v1/companies/${encodeURIComponent(slug)}`;

  const profileP = api(base);
  const s80P = allows('marks:80') === false ? null : api(`${base}/marks?coverage=80`);
  const eventsP = allows('events:read') === false ? null : api(`${base}/events`);
  const [profile, s80, events] = await Promise.allSettled([profileP, s80P, eventsP]);

  // The 95% band and the resolution record: asked when the key has the scope, or, when its
  // scopes are unknown, when the lesser scope worked (so a free key is not sent to spend its
  // budget on what it cannot have).
  const want95 = allows('marks:95') ?? (s80.status === 'fulfilled' && s80.value != null);
  const wantRes = allows('resolution:read') ?? (events.status === 'fulfilled' && events.value != null);
  const s95P = want95 ? api(`${base}/marks?coverage=95`) : null;
  const resP = wantRes ? Promise.all([api(`${base}/resolution`), api('/v1/signing-keys', { auth: false })]) : null;

  renderProfile(profile);
  const name = profile.status === 'fulfilled' ? profile.value.name || slug : slug;
  const backtestP = renderBacktest(slug, name);
  const evs = events.status === 'fulfilled' && events.value ? events.value.events || [] : null;
  renderEvents(events, evs);
  const [s95, res] = await Promise.allSettled([s95P, resP]);
  renderSeries(s80, s95, evs);
  await Promise.all([renderResolution(res, wantRes), backtestP]);
}

function renderProfile(result) {
  if (result.status === 'rejected') {
    showError(result.reason, 'The company profile', $('profile-error'));
    return;
  }
  const p = result.value;
  $('title').textContent = p.name || p.slug;
  document.title = `${p.name || p.slug} · Valuation Marks`;
  facts($('company-facts'), [
    ['Sector', p.sector || 'n/a'],
    ['Status', outcomeWords(p)],
    ['Slug', el('code', { text: p.slug })],
  ]);
  const m = p.latest_mark || {};
  const last = p.last_event;
  facts($('latest-facts'), [
    ['Mark', `${usd(m.value_usd)} (${usdFull(m.value_usd)}) on ${m.as_of_date || 'n/a'}`],
    ['Last reported', last
      ? `${usd(last.valuation_usd)}, ${an(words(last.event_type).toLowerCase())} on ${last.occurred_on} (${daysWords(p.days_since_last_event)} ago)`
      : 'n/a'],
    ['Mark vs last reported', pct(m.vs_last_event_pct)],
    ['80% band', band(m.lower_usd, m.upper_usd)],
    ['Confidence', typeof m.confidence === 'number' ? `${(m.confidence * 100).toFixed(1)}%` : 'n/a'],
    ['30-day change', p.delta_30d_pct === null || p.delta_30d_pct === undefined ? 'none (no marks to date)' : pct(p.delta_30d_pct)],
  ]);
  say($('outcome-note'), outcomeSentence(p));
  $('mark-explained').replaceChildren(...explanation(p).map((text) => el('p', { text })));
  showMeta(p.meta);
}

function renderEvents(result, evs) {
  if (result.status === 'rejected') {
    showError(result.reason, 'The event history', $('events-error'));
    return;
  }
  if (!evs) {
    say($('events-error'), needsTier('events:read', 'The event history'));
    return;
  }
  $('events-wrap').hidden = evs.length === 0;
  $('events-download-box').hidden = evs.length === 0;
  if (evs.length === 0) say($('events-error'), 'No events recorded for this company.');
  $('events-table').tBodies[0].replaceChildren(...evs.map((e) => el('tr', {},
    el('td', { class: 'nowrap', text: e.occurred_on }),
    el('td', {}, words(e.event_type),
      el('span', { class: 'sub narrow-only' }, e.note ? `${e.note} · ` : '', sourceLink(e.source_url))),
    el('td', { class: 'num', text: usd(e.valuation_usd) }),
    el('td', { class: 'wide-only', text: e.note || '' }),
    el('td', { class: 'wide-only' }, sourceLink(e.source_url)))));
}

function renderSeries(s80, s95, evs) {
  if (s80.status === 'rejected') {
    showError(s80.reason, 'The mark series', $('series-error'));
    return;
  }
  if (!s80.value) {
    say($('series-error'), needsTier('marks:80', 'The mark series'));
    return;
  }
  const notes = [];
  let p95 = null;
  if (s95.status === 'rejected') notes.push(problemWords(s95.reason, 'The 95% band'));
  else if (!s95.value) notes.push(needsTier('marks:95', 'The 95% band'));
  else {
    const byDate = new Map(s95.value.series.map((p) => [p.date, p]));
    p95 = s80.value.series.map((p) => byDate.get(p.date) || null);
  }
  if (!p95) notes.push('The chart shows the 80% band only.');
  if (!evs) notes.push('Events are not shown: this key cannot read them.');
  $('series-note').textContent = notes.join(' ');
  $('legend-95').hidden = !p95;
  $('legend-events').hidden = !evs || evs.length === 0;

  const pts = s80.value.series;
  if (pts.length === 0) {
    say($('series-note'), 'This company has no mark series yet.');
    return;
  }
  chart.pts = pts;
  chart.p95 = p95;
  chart.days = pts.map((p) => dayNumber(p.date));
  chart.events = evs || [];
  chart.idx = -1;
  $('chart-figure').hidden = false;
  $('series-download-box').hidden = false;
  $('series95-download').hidden = !p95;
  drawChart();
  redrawOnResize($('chart'), () => chart.width, drawChart);
  renderSeriesText();
}

/* ---------- the chart: plain SVG ---------- */

const chart = { pts: [], p95: null, days: [], events: [], idx: -1, width: 0, geom: null };

/** Index of the series day nearest to day number d (days are ascending). */
function nearestIndex(d) {
  return nearestIn(chart.days, d);
}

function drawChart() {
  const box = $('chart');
  const W = chartWidth(box);
  const H = Math.round(Math.min(420, Math.max(240, W * 0.46)));
  const M = { l: 58, r: 14, t: 12, b: 28 };
  const { pts, p95, days, events } = chart;
  chart.width = W;

  const values = [];
  for (const p of pts) values.push(p.mark_usd, p.lower_usd, p.upper_usd);
  if (p95) for (const p of p95) if (p) values.push(p.lower_usd, p.upper_usd);
  for (const e of events) values.push(e.valuation_usd);
  let lo = Infinity;
  let hi = -Infinity;
  for (const v of values) {
    if (typeof v === 'number' && v > 0) {
      lo = Math.min(lo, v);
      hi = Math.max(hi, v);
    }
  }
  if (!Number.isFinite(lo)) { lo = 1; hi = 10; }
  const pad = Math.max(0.05, (Math.log10(hi) - Math.log10(lo)) * 0.04);
  const l0 = Math.log10(lo) - pad;
  const l1 = Math.log10(hi) + pad;
  const d0 = days[0];
  const d1 = Math.max(days[days.length - 1], d0 + 1);
  const pw = W - M.l - M.r;
  const ph = H - M.t - M.b;
  const x = (d) => Math.round((M.l + ((d - d0) / (d1 - d0)) * pw) * 10) / 10;
  // Log scale; a value of 0 (a bankruptcy) sits on the bottom edge.
  const y = (v) => {
    const l = v > 0 ? Math.max(l0, Math.log10(v)) : l0;
    return Math.round((M.t + (1 - (l - l0) / (l1 - l0)) * ph) * 10) / 10;
  };
  chart.geom = { x, y, d0, d1, pw, M, W };

  const area = (lower, upper) => {
    const top = [];
    const bottom = [];
    for (let i = 0; i < pts.length; i += 1) {
      const [a, b] = [lower(i), upper(i)];
      if (typeof a !== 'number' || typeof b !== 'number') continue;
      top.push(`${x(days[i])},${y(b)}`);
      bottom.push(`${x(days[i])},${y(a)}`);
    }
    return top.length ? `M${top.join('L')}L${bottom.reverse().join('L')}Z` : '';
  };

  const grid = svgEl('g', { 'aria-hidden': 'true' });
  for (const v of logTicks(l0, l1)) {
    grid.append(
      svgEl('line', { class: 'grid', x1: M.l, x2: W - M.r, y1: y(v), y2: y(v) }),
      svgEl('text', { class: 'axis', x: M.l - 6, y: y(v) + 4, 'text-anchor': 'end', text: usd(v) }));
  }
  for (const [t, label] of timeTicks(d0, d1, pw)) {
    grid.append(
      svgEl('line', { class: 'grid', x1: x(t), x2: x(t), y1: M.t, y2: H - M.b }),
      svgEl('text', { class: 'axis', x: x(t), y: H - M.b + 18, 'text-anchor': 'middle', text: label }));
  }
  grid.append(svgEl('line', { class: 'axis-line', x1: M.l, x2: W - M.r, y1: H - M.b, y2: H - M.b }));

  const markPoints = pts.map((p, i) => `${x(days[i])},${y(p.mark_usd)}`).join(' ');
  const markers = svgEl('g', { class: 'events' });
  for (const e of events) {
    const d = dayNumber(e.occurred_on);
    const v = typeof e.valuation_usd === 'number' ? e.valuation_usd : pts[nearestIndex(d)].mark_usd;
    const label = `${words(e.event_type)} on ${e.occurred_on}: valuation ${usd(v)}`;
    const dot = svgEl('circle', {
      class: 'event-marker', cx: x(Math.min(Math.max(d, d0), d1)), cy: y(v), r: 6, 'data-event-id': e.event_id,
    }, svgEl('title', { text: `${label}. Opens the source.` }));
    const ok = typeof e.source_url === 'string' && /^https?:\/\//i.test(e.source_url);
    const mark = ok
      ? svgEl('a', { href: e.source_url, target: '_blank', rel: 'noopener noreferrer', 'aria-label': `${label} (source: ${hostOf(e.source_url)})` }, dot)
      : dot;
    mark.addEventListener('focus', () => setCursor(nearestIndex(d)));
    markers.append(mark);
  }

  const cursor = svgEl('g', { class: 'cursor-group', visibility: 'hidden', 'aria-hidden': 'true' },
    svgEl('line', { class: 'cursor', y1: M.t, y2: H - M.b, x1: 0, x2: 0 }),
    svgEl('circle', { class: 'cursor-dot', r: 4, cx: 0, cy: 0 }));

  const root = svgEl('svg', {
    viewBox: `0 0 ${W} ${H}`, width: W, height: H, tabindex: 0, role: 'group', id: 'chart-svg',
    'aria-label': `Chart of ${pts.length} daily marks from ${pts[0].date} to ${pts[pts.length - 1].date}. `
      + 'Arrow keys move a cursor by a day; Page Up and Page Down by 30 days; Home and End to the ends.',
    'aria-describedby': 'chart-readout',
    'data-days': pts.length,
    'data-events': events.length,
  },
  grid,
  p95 ? svgEl('path', { class: 'band95', d: area((i) => p95[i] && p95[i].lower_usd, (i) => p95[i] && p95[i].upper_usd) }) : null,
  svgEl('path', { class: 'band80', d: area((i) => pts[i].lower_usd, (i) => pts[i].upper_usd) }),
  svgEl('polyline', { class: 'mark-line', points: markPoints, 'data-points': pts.length }),
  cursor,
  markers);

  const pointAt = (ev) => {
    const r = root.getBoundingClientRect();
    const px = ((ev.clientX - r.left) * W) / r.width;
    setCursor(nearestIndex(d0 + ((px - M.l) / pw) * (d1 - d0)));
  };
  root.addEventListener('pointermove', pointAt);
  root.addEventListener('pointerdown', pointAt); // a tap on a touch screen
  root.addEventListener('focus', (ev) => {
    if (ev.target === root && chart.idx < 0) setCursor(pts.length - 1);
  });
  root.addEventListener('keydown', onChartKey);
  chart.cursor = cursor;
  box.replaceChildren(root);
  if (chart.idx >= 0) setCursor(chart.idx);
  else $('chart-readout').textContent = readoutText(pts.length - 1, 'Latest');
}

function onChartKey(ev) {
  if (ev.target !== ev.currentTarget) return; // keys on an event link are the link's
  const last = chart.pts.length - 1;
  const at = chart.idx < 0 ? last : chart.idx;
  const moves = { ArrowLeft: at - 1, ArrowRight: at + 1, PageDown: at - 30, PageUp: at + 30, Home: 0, End: last };
  if (!(ev.key in moves)) return;
  ev.preventDefault();
  setCursor(Math.max(0, Math.min(last, moves[ev.key])));
}

function readoutText(i, prefix) {
  const p = chart.pts[i];
  const q = chart.p95 && chart.p95[i];
  let text = `${prefix ? `${prefix}: ` : ''}${p.date}: mark ${usd(p.mark_usd)}; 80% band ${band(p.lower_usd, p.upper_usd)}`;
  if (q) text += `; 95% band ${band(q.lower_usd, q.upper_usd)}`;
  return `${text}.`;
}

function setCursor(i) {
  if (!chart.geom || i < 0) return;
  chart.idx = i;
  const { x, y } = chart.geom;
  const p = chart.pts[i];
  const cx = x(chart.days[i]);
  const [line, dot] = chart.cursor.children;
  setAttrs(line, { x1: cx, x2: cx });
  setAttrs(dot, { cx, cy: y(p.mark_usd) });
  chart.cursor.setAttribute('visibility', 'visible');
  const readout = $('chart-readout');
  readout.replaceChildren(readoutText(i));
  for (const e of chart.events) {
    if (e.occurred_on !== p.date) continue;
    readout.append(` Event: ${words(e.event_type)}, valuation ${usd(e.valuation_usd)}`,
      e.note ? ` (${e.note})` : '', '; source: ', sourceLink(e.source_url), '.');
  }
}

function renderSeriesText() {
  const { pts, p95, events } = chart;
  const first = pts[0];
  const last = pts[pts.length - 1];
  let min = first;
  let max = first;
  for (const p of pts) {
    if (p.mark_usd < min.mark_usd) min = p;
    if (p.mark_usd > max.mark_usd) max = p;
  }
  const q = p95 && p95[p95.length - 1];
  $('chart-summary').textContent = `${pts.length} daily marks from ${first.date} to ${last.date}. `
    + `The mark went from ${usd(first.mark_usd)} to ${usd(last.mark_usd)}; lowest ${usd(min.mark_usd)} on ${min.date}, `
    + `highest ${usd(max.mark_usd)} on ${max.date}. Latest 80% band ${band(last.lower_usd, last.upper_usd)}`
    + `${q ? `, 95% band ${band(q.lower_usd, q.upper_usd)}` : ''}. `
    + `${events.length} event${events.length === 1 ? '' : 's'} on the chart.`;

  const table = $('series-table');
  const heads = ['Date', 'Mark', '80% low', '80% high', ...(p95 ? ['95% low', '95% high'] : []), 'Event'];
  table.tHead.replaceChildren(el('tr', {}, heads.map((h, k) => el('th', {
    scope: 'col', class: k > 0 && k < heads.length - 1 ? 'num' : null, text: h,
  }))));
  const byDate = new Map();
  for (const e of events) byDate.set(e.occurred_on, [...(byDate.get(e.occurred_on) || []), e]);
  const rows = [];
  pts.forEach((p, i) => {
    const monthEnd = i === pts.length - 1 || pts[i + 1].date.slice(0, 7) !== p.date.slice(0, 7);
    const evs = byDate.get(p.date);
    if (!monthEnd && !evs) return;
    const b = p95 && p95[i];
    rows.push(el('tr', { class: evs ? 'event-row' : null },
      el('th', { scope: 'row', text: p.date }),
      el('td', { class: 'num', text: usd(p.mark_usd) }),
      el('td', { class: 'num', text: usd(p.lower_usd) }),
      el('td', { class: 'num', text: usd(p.upper_usd) }),
      p95 ? [el('td', { class: 'num', text: usd(b && b.lower_usd) }), el('td', { class: 'num', text: usd(b && b.upper_usd) })] : [],
      el('td', { text: evs ? evs.map((e) => `${words(e.event_type)} at ${usd(e.valuation_usd)}`).join('; ') : '' })));
  });
  table.tBodies[0].replaceChildren(...rows);
  $('chart-text').hidden = false;
}

/* ---------- the signed resolution record ---------- */

/**
 * RFC 8785 (JCS) canonical JSON. Object members sorted by their names' UTF-16 code units
 * (what Array.prototype.sort does with strings), no whitespace, strings and numbers written
 * as ECMAScript's JSON.stringify writes them (which is what JCS specifies). Records hold
 * strings, whole numbers and nested objects; a number past 2^53 would have lost precision in
 * JSON.parse and then fails verification rather than passing.
 */
function canonicalJson(value) {
  if (value === null || typeof value !== 'object') {
    if (typeof value === 'number' && !Number.isFinite(value)) throw new Error('not a finite number');
    return JSON.stringify(value);
  }
  if (Array.isArray(value)) return `[${value.map(canonicalJson).join(',')}]`;
  const names = Object.keys(value).filter((k) => value[k] !== undefined).sort();
  return `{${names.map((k) => `${JSON.stringify(k)}:${canonicalJson(value[k])}`).join(',')}}`;
}

function base64UrlBytes(text) {
  const b64 = text.replace(/-/g, '+').replace(/_/g, '/').padEnd(Math.ceil(text.length / 4) * 4, '=');
  return Uint8Array.from(atob(b64), (ch) => ch.charCodeAt(0));
}

/** The RFC 7638 thumbprint of an Ed25519 JWK: SHA-256 of its required members in order, base64url. */
async function thumbprint(jwk) {
  const members = `{"crv":"Ed25519","kty":"OKP","x":${JSON.stringify(jwk.x)}}`;
  const digest = new Uint8Array(await crypto.subtle.digest('SHA-256', new TextEncoder().encode(members)));
  return btoa(String.fromCharCode(...digest)).replace(/\+/g, '-').replace(/\//g, '_').replace(/=+$/, '');
}

/**
 * {ok, kid, reason}: whether the record's signature verifies with the published key it names,
 * and that key is the one its id names: the id is the RFC 7638 thumbprint of the key, computed
 * here, never taken from the server, so a server cannot hand out its own key under another's id.
 */
async function verifyRecord(record, jwks) {
  const { signature, ...unsigned } = record;
  const kid = record.key_id;
  if (typeof signature !== 'string') return { ok: false, kid, reason: 'the record carries no signature' };
  const jwk = (jwks.keys || []).find((k) => k.kid === kid);
  if (!jwk) return { ok: false, kid, reason: `no published signing key has the id ${kid}` };
  if (jwk.kty !== 'OKP' || jwk.crv !== 'Ed25519' || typeof jwk.x !== 'string') {
    return { ok: false, kid, reason: 'the named key is not an Ed25519 key' };
  }
  if (!globalThis.crypto || !crypto.subtle) {
    return { ok: false, kid, reason: 'this page is not a secure context (HTTPS), so the browser offers no Web Crypto' };
  }
  const computed = await thumbprint(jwk);
  if (computed !== kid) {
    return {
      ok: false,
      kid,
      reason: `the key published under the id ${kid} is another key (its thumbprint is ${computed}): a forged record or a broken server`,
    };
  }
  let key;
  try {
    key = await crypto.subtle.importKey('jwk', { kty: 'OKP', crv: 'Ed25519', x: jwk.x }, { name: 'Ed25519' }, false, ['verify']);
  } catch {
    return { ok: false, kid, reason: 'this browser cannot verify Ed25519 signatures with Web Crypto' };
  }
  const bytes = new TextEncoder().encode(canonicalJson(unsigned));
  let ok = false;
  try {
    ok = await crypto.subtle.verify({ name: 'Ed25519' }, key, base64UrlBytes(signature), bytes);
  } catch {
    ok = false;
  }
  return { ok, kid, reason: ok ? '' : 'the signature does not match the record (it was changed, or signed by another key)' };
}

async function renderResolution(result, wanted) {
  const status = $('verify-status');
  if (!wanted) {
    say($('resolution-note'), needsTier('resolution:read', 'The signed resolution record'));
    return;
  }
  if (result.status === 'rejected') {
    showError(result.reason, 'The signed resolution record', $('resolution-note'));
    return;
  }
  const [record, jwks] = result.value;
  const b80 = record.band_80 || {};
  const b95 = record.band_95 || {};
  facts($('resolution-facts'), [
    ['Record', el('code', { text: record.record_id || 'n/a' })],
    ['Value', usdFull(record.value_usd)],
    ['80% band', `${usdFull(b80.lower)} – ${usdFull(b80.upper)}`],
    ['95% band', `${usdFull(b95.lower)} – ${usdFull(b95.upper)}`],
    ['Basis', `${record.basis || 'n/a'}${record.basis_date ? ` (${record.basis_date})` : ''}`],
    ['Marked on', record.marked_on || 'n/a'],
    ['Dataset, methodology', `${record.dataset_version || 'n/a'}, ${record.methodology_version || 'n/a'}`],
    ['Signing key', el('code', { text: record.key_id || 'n/a' })],
    ['Signature', el('code', { text: record.signature || 'n/a' })],
  ]);
  say(status, 'Verifying the signature…');
  const v = await verifyRecord(record, jwks);
  say(status, v.ok
    ? `Signature verified with key ${v.kid}: this record is exactly what the holder of that key signed (Ed25519 over its RFC 8785 canonical JSON, checked in your browser, and ${v.kid} is the thumbprint of the key that verified it). That proves who signed only if ${v.kid} is a key the publisher states as its own: compare it with the publisher's published thumbprints (the bundled sample's demo key is listed in docs/publishing.md).`
    : `NOT verified: ${v.reason}. Do not rely on this record.`, v.ok ? 'ok' : 'error');
}

/* ---------- start ---------- */

/** The slug an address names; a malformed escape is taken as written, so the API says it names no company. */
function slugOf(segment) {
  try {
    return decodeURIComponent(segment);
  } catch {
    return segment;
  }
}

async function route() {
  $('alert').replaceChildren();
  showKeyStatus();
  const match = location.pathname.match(/^\/explore\/([^/]+)\/?$/);
  $('list-view').hidden = true;
  $('company-view').hidden = true;
  if (!getKey()) return;
  try {
    await loadUsage();
  } catch (err) {
    showError(err, 'The key check');
    return;
  }
  showKeyStatus();
  if (match) await showCompany(slugOf(match[1]));
  else await showList();
}

function start() {
  initKeyPanel(({ forgotten }) => {
    if (forgotten) $('company-rows').replaceChildren();
    sectorsFor = null;
    if (location.pathname.startsWith('/explore/')) location.reload();
    else route();
  });
  companySearch({
    input: $('q'),
    list: $('q-list'),
    status: $('q-status'),
    onPick: (c) => { location.assign(`/explore/${encodeURIComponent(c.slug)}`); },
  });
  $('filters').addEventListener('submit', onFilters);
  $('load-more').addEventListener('click', () => loadPage(nextCursor, listRun));
  downloadButton($('list-download'), $('list-download-status'), listCsv, 'The list download');
  wireCompanyDownloads();
  window.addEventListener('popstate', route);
  route();
}

start();
