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
  $, el, svgEl, say, facts, sourceLink, hostOf,
  usd, usdFull, band, an, pct, pctCell, displayName, money, moneyBand, initExactToggles,
  eventWords, GRADE_WORDS, REPORTED_WORDS, OUTCOME_WORDS, ended, pending, outcomeParts, outcomeText, holdsAgreedPrice,
  companyOption,
  getKey, api, problemWords, showError, keyThenView, allows, needsTier, initKeyPanel, showMeta,
  dayNumber, nearestIn, timeTicks, chartWidth, redrawOnResize, DAY_MS, MONTHS,
  apiText, toCsv, fetchCsv, fileName, downloadButton, companySearch,
} from '/assets/common.js';
import {
  lineChart, extent, logScale, valueGrid, timeGrid,
} from '/assets/charts.js';

const PAGE_SIZE = 50;

/* ---------- /explore: the list ---------- */

let listRun = 0; // bumps on every new list, so a stale page answer is dropped
let nextCursor = null;
let sectorsFor = null; // the key the sector menu was filled for
const LIST_PARAMS = ['q', 'sort', 'sector', 'status', 'outcome'];
const DOWNLOAD_PAGE = 100; // the list's CSV is fetched 100 rows a page, following X-Next-Cursor
/* The list's default view: the companies whose marks are current (still private, or a sale or
   listing agreed and pending); outcome=all in the address shows every company. */
const CURRENT = 'none,sale_agreed,listing_agreed';

/** The list's parameters as the page's address holds them. */
function listParams() {
  const query = new URLSearchParams(location.search);
  const params = {};
  for (const name of LIST_PARAMS) {
    const value = (query.get(name) || '').trim();
    if (value) params[name] = value;
  }
  return params;
}

/** The same as the API takes them: no outcome means current marks (a search, every company);
 * outcome=all, no filter. */
function apiParams() {
  const params = listParams();
  if (!params.outcome && !params.q) params.outcome = CURRENT;
  else if (params.outcome === 'all') delete params.outcome;
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
  const outcome = $('outcome');
  // A search looks through every company unless a Show is chosen.
  outcome.options[0].textContent = params.q ? 'Any (a search)' : 'Current marks';
  outcome.value = params.outcome || '';
  if (outcome.value !== (params.outcome || '')) { // a combination the menu lacks (the API will judge it)
    outcome.append(el('option', { value: params.outcome, text: params.outcome }));
    outcome.value = params.outcome;
  }
  $('scope-note').textContent = scopeWords(params);
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

/** What the list holds, in a line: by default only companies whose marks are current. */
function scopeWords(params) {
  const status = params.status ? ` with status ${params.status}` : '';
  switch (params.outcome || (params.q ? 'all' : '')) {
    case '':
      return `Companies whose marks are current${status}: still private, or a sale agreed and pending. `
        + 'Show “All companies” to add listed, sold and failed ones (their last private marks).';
    case 'all':
      return `${params.q ? 'Searching' : 'Showing'} every company${status}: for a listed, sold or failed company the mark is its last private one, with its date.`;
    default: {
      const kinds = params.outcome.split(',').map((k) => (k === 'none' ? 'private with no sale agreed' : (OUTCOME_WORDS[k] || k).toLowerCase()));
      return `Showing companies ${kinds.length > 1 ? 'whose outcome is ' : ''}${kinds.join(', ')}${status}.`;
    }
  }
}

async function loadPage(cursor, run) {
  const query = new URLSearchParams({ limit: String(PAGE_SIZE), ...apiParams() });
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
    // The free tier's note says its ten are the highest current marks: the scope line would repeat it.
    $('scope-note').hidden = Boolean(data.universe_note) && !listParams().outcome;
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
  const text = await fetchCsv(`/v1/companies?${new URLSearchParams({ ...apiParams(), limit: String(DOWNLOAD_PAGE) })}`, { follow: true });
  const scope = !params.outcome ? (params.q ? '' : 'current') : params.outcome === 'all' ? '' : params.outcome;
  return { text, filename: fileName('companies', params.sector, params.status, scope, params.q, params.sort && `by-${params.sort.replace(/^-/, '')}${params.sort.startsWith('-') ? '-desc' : ''}`) };
}

/** What ended or fixed a company's private marks, in a few words; "Private" when nothing did. */
function outcomeWords(c) {
  const o = c.outcome;
  if (!o) return c.status === 'ipo_completed' ? 'Listed' : 'Private';
  return `${OUTCOME_WORDS[o.kind] || eventWords(o.event_type)} ${o.occurred_on}`;
}

/** A 30-day change cell: the percent, and when it is only the method's curve moving with the
 * days since the last report (delta_30d_basis "profile"), a mark saying so; for a pending sale
 * agreed at a disclosed price, whose mark holds that price, that it is held instead. */
function changeCell(c, extra = '') {
  const td = pctCell(c.delta_30d_pct, extra);
  if (c.delta_30d_basis === 'profile' && typeof c.delta_30d_pct === 'number' && holdsAgreedPrice(c)) {
    // A pending agreed sale: the mark holds the agreed price; no drift to speak of.
    td.append(el('span', { class: 'sub', text: 'agreed price held' }));
    td.title = `A sale was agreed on ${c.outcome.occurred_on} at ${usd(c.outcome.valuation_usd)} and is pending: `
      + 'the mark holds the agreed price and adds nothing while the sale is pending.';
  } else if (c.delta_30d_basis === 'profile' && typeof c.delta_30d_pct === 'number') {
    td.append(el('span', { class: 'sub', text: 'drift, no news' }));
    td.title = 'No value was reported in these 30 days: this is the method\'s curve moving with the days since the last report, not new evidence.';
  } else if (c.delta_30d_basis === 'events') {
    td.append(el('span', { class: 'sub', text: 'a value reported' }));
  } else if (c.delta_30d_pct == null && ended(c)) {
    td.textContent = 'ended';
  }
  return td;
}

function companyRow(c) {
  const m = c.latest_mark || {};
  const last = c.last_event;
  const outcome = outcomeWords(c);
  const name = c.name || c.slug;
  const aka = displayName(c).slice(name.length).replace(/^ \((.*)\)$/, '$1');
  const over = ended(c);
  // A company whose private period ended: its mark is its last private one, dated; no
  // percentage against anything (read beside the outcome it would pass for a move since).
  const markSub = over ? `last private mark, ${m.as_of_date}` : '';
  const lastSub = last ? [last.occurred_on, over || typeof m.vs_last_event_pct !== 'number' ? null : `mark ${pct(m.vs_last_event_pct)}`]
    .filter(Boolean).join(' · ') : '';
  return el('tr', { class: over ? 'ended' : null, 'data-slug': c.slug },
    el('th', { scope: 'row' },
      el('a', { href: `/explore/${encodeURIComponent(c.slug)}`, text: c.name || c.slug }),
      aka ? el('span', { class: 'sub', text: `also ${aka}` }) : null,
      el('span', { class: 'sub narrow-only', text: `${c.sector || ''} · ${outcome}` })),
    el('td', { class: 'wide-only', text: c.sector || '' }),
    el('td', { class: 'wide-only nowrap', text: outcome }),
    el('td', { class: 'num' }, money(m.value_usd), markSub ? el('span', { class: 'sub', text: markSub }) : ''),
    el('td', { class: 'num' }, last ? money(last.valuation_usd) : 'n/a', lastSub ? el('span', { class: 'sub', text: lastSub }) : ''),
    el('td', { class: 'num wide-only' }, moneyBand(m.lower_usd, m.upper_usd)),
    changeCell(c));
}

function onFilters(event) {
  event.preventDefault();
  const query = new URLSearchParams();
  const kept = listParams(); // status has no menu: an address's status is kept
  for (const name of LIST_PARAMS) {
    const value = ($(name) ? $(name).value : kept[name] || '').trim();
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

/* The confidence is a track record: the share of the method's past month-end marks whose next
   reported valuation came within this many percent (DESIGN section 3; the scorecard's
   params.confidence_tolerance). */
const CONFIDENCE_TOLERANCE_PCT = 20;

/** The confidence in words, as its track record: "20.4%: historically about 1 in 5 ...". */
function confidenceWords(c) {
  if (typeof c !== 'number') return 'n/a';
  const oneIn = c > 0 ? Math.max(1, Math.round(1 / c)) : null;
  return `${(c * 100).toFixed(1)}%: historically about ${oneIn ? `1 in ${oneIn}` : 'none'} of our marks was within `
    + `±${CONFIDENCE_TOLERANCE_PCT}% of the next reported valuation; not a company-specific probability`;
}

/** The 30-day change with what it rests on (delta_30d_basis); for a pending sale agreed at a
 * disclosed price, that the mark holds it (not the method's drift). */
function changeWords(p) {
  if (typeof p.delta_30d_pct !== 'number') {
    return ended(p) ? `none: the private marks ended on ${(p.latest_mark || {}).as_of_date}` : 'none (the series is shorter than 31 days)';
  }
  if (p.delta_30d_basis === 'profile' && holdsAgreedPrice(p)) {
    const o = p.outcome;
    return [`${pct(p.delta_30d_pct)}: the mark holds the agreed price, `, money(o.valuation_usd),
      ` (a sale agreed on ${o.occurred_on}, pending), and adds nothing while the sale is pending`];
  }
  if (p.delta_30d_basis === 'profile') {
    return `${pct(p.delta_30d_pct)}: no value was reported in these 30 days; this is the method's drift moving with the days `
      + 'since the last report, not new evidence';
  }
  if (p.delta_30d_basis === 'events') return `${pct(p.delta_30d_pct)}: a value was reported in these 30 days`;
  return pct(p.delta_30d_pct);
}

/** A source grade as a badge, its meaning in its title and in words: for screen readers only
 * (a table, whose legend says it), or shown (`spelt`). */
function gradeBadge(grade, spelt = false) {
  const g = grade && GRADE_WORDS[grade] ? grade : null;
  const meaning = g ? GRADE_WORDS[g] : 'not graded';
  const badge = el('span', {
    class: `grade grade-${g ? g.toLowerCase() : 'none'}`, title: g ? `Grade ${g}: ${meaning}` : 'Not graded',
  }, g || '–', spelt ? null : el('span', { class: 'visually-hidden', text: g ? ` (grade ${g}: ${meaning})` : ' (not graded)' }));
  return spelt ? [badge, ` ${meaning}`] : badge;
}

/** The last reported value, its kind, day, age and source grade. */
function lastReported(p) {
  const last = p.last_event;
  if (!last) return 'n/a';
  return [money(last.valuation_usd), `, ${an(eventWords(last.event_type).toLowerCase())} on ${last.occurred_on}`
    + ` (${daysWords(p.days_since_last_event)} ago); source grade `, gradeBadge(last.source_grade, true)];
}

/** One headline figure: a label, the figure, a line under it. */
function figureCard(label, value, sub, cls = '') {
  return el('div', { class: `figure-card ${cls}`.trim() },
    el('p', { class: 'figure-label', text: label }),
    el('p', { class: 'figure-value' }, value),
    sub ? el('p', { class: 'figure-sub' }, sub) : null);
}

/* The method's record on this company: /v1/companies/{slug}/backtest. */
async function renderBacktest(slug, name) {
  $('backtest-heading').textContent = `How the method did on ${name}`;
  $('backtest-figure').hidden = true;
  $('backtest-wrap').hidden = true;
  $('backtest-summary').textContent = '';
  if (allows('marks:80') === false) { // a free key: not asked, it would be refused
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
    : 'Below the Pro tier, what happened at each event is shown as where it fell against the mark made before it, without its value.');
  if (targets.length === 0) {
    $('backtest-summary').textContent = 'No event of this company could be scored: it has no earlier event to forecast from.';
    return;
  }
  tolerance = typeof data.tolerance_pct === 'number' ? data.tolerance_pct : CONFIDENCE_TOLERANCE_PCT;
  $('backtest-summary').textContent = `${s.scored_events} scored event${s.scored_events === 1 ? '' : 's'}: `
    + `${s.inside_80} inside the 80% band, ${s.inside_95} inside the 95% band, ${s.hits} within ±${tolerance}% of the mark made before it`
    + `${targets.length > s.scored_events ? '; and the outcome, against the mark the day before' : ''}.`;
  // On a phone the band goes under the forecast and what happened under the event, as the
  // events table puts its note under the type: five columns do not fit 390 pixels.
  $('backtest-table').tBodies[0].replaceChildren(...targets.map((t) => {
    const band80 = band(t.band_80 && t.band_80.lower, t.band_80 && t.band_80.upper);
    const what = happened(t);
    return el('tr', {},
      el('td', { class: 'nowrap', text: t.occurred_on }),
      el('td', {}, eventWords(t.event_type) + (t.kind === 'event' ? '' : ' (outcome)'),
        el('span', { class: 'sub narrow-only' }, what)),
      el('td', { class: 'num' }, money(t.mark_usd), el('span', { class: 'sub narrow-only', text: `80%: ${band80}` })),
      el('td', { class: 'num wide-only' }, moneyBand(t.band_80 && t.band_80.lower, t.band_80 && t.band_80.upper)),
      el('td', { class: 'num wide-only', text: `${(t.confidence * 100).toFixed(0)}%` }),
      el('td', { class: 'wide-only' }, happened(t)));
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

let tolerance = CONFIDENCE_TOLERANCE_PCT; // the backtest's own tolerance_pct, once read

/* The value scale of the charts of points (the backtest, the published history): padded by 6%
   of the range, at least 0.05 decades, never widened. */
const POINTS_SCALE = { share: 0.06, least: 0.05, widen: false };

/** What happened at a scored event, in words (an array of text and figures): its value when
 * this key may read it, else where it fell against the mark made before it. */
function happened(t) {
  const where = t.hit ? `within ±${tolerance}% of the mark`
    : t.inside_80 ? 'inside the 80% band' : t.inside_95 ? 'inside the 95% band only' : 'outside the 95% band';
  const side = t.hit ? '' : t.above ? ', above the mark' : ', below the mark';
  return typeof t.observed_usd === 'number' ? [money(t.observed_usd), `: ${where}${side}`] : [`${where}${side}`];
}

/** The same in plain text (the chart's labels). */
const happenedText = (t) => happened(t).map((p) => (typeof p === 'string' ? p : p.dataset.compact)).join('');

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
  const days = targets.map((t) => dayNumber(t.marked_on));
  const d0 = Math.min(...days) - 30;
  const d1 = Math.max(...days) + 30;
  const pw = W - M.l - M.r;
  const ph = H - M.t - M.b;
  const x = (d) => Math.round((M.l + ((d - d0) / (d1 - d0)) * pw) * 10) / 10;
  const scale = logScale(extent(values), M.t, ph, POINTS_SCALE);
  const { y } = scale;
  const grid = svgEl('g', { 'aria-hidden': 'true' },
    valueGrid(scale, usd, M, W), timeGrid(timeTicks(d0, d1, pw), x, { M, W, H }, { lines: false }));
  const marks = svgEl('g', { class: 'backtest' });
  targets.forEach((t, i) => {
    const cx = x(days[i]);
    const verdict = t.hit ? 'hit' : t.inside_80 ? 'covered_80' : t.inside_95 ? 'covered_95' : 'miss';
    const label = `${eventWords(t.event_type)} on ${t.occurred_on}: mark before it ${usd(t.mark_usd)}, 80% band `
      + `${band(t.band_80.lower, t.band_80.upper)}; ${happenedText(t)}`;
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
    'aria-label': `The method's mark before each of ${targets.length} scored events, with its bands and what was reported`,
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
  $('profile-suggest').hidden = true;
  $('profile-suggest-list').replaceChildren();
  $('company-view').hidden = false;
  $('back').hidden = false;
  $('lede').hidden = true;
  $('title').textContent = slug;
  document.title = `${slug} · Valuation Marks`;
  const base = `/v1/companies/${encodeURIComponent(slug)}`;

  // Only what the key may read is asked: a free key reads the profile alone (one request a
  // company page); when the scopes are unknown (the key check itself was refused, e.g. a 429),
  // the lesser scope is tried first and the greater only when it worked.
  const profileP = api(base);
  const s80P = allows('marks:80') === false ? null : api(`${base}/marks?coverage=80`);
  const eventsP = allows('events:read') === false ? null : api(`${base}/events`);
  const [profile, s80, events] = await Promise.allSettled([profileP, s80P, eventsP]);

  const want95 = allows('marks:95') ?? (s80.status === 'fulfilled' && s80.value != null);
  const wantRes = allows('resolution:read') ?? (events.status === 'fulfilled' && events.value != null);
  const s95P = want95 ? api(`${base}/marks?coverage=95`) : null;
  // The published history (Research and above): the company's entries of the publication log,
  // the log's checkpoint, and the signing keys (asked once, for the resolution record too).
  const wantLog = allows('marks:80') ?? (s80.status === 'fulfilled' && s80.value != null);
  let keysP = null;
  const signingKeys = () => {
    keysP = keysP || api('/v1/signing-keys', { auth: false });
    return keysP;
  };
  const resP = wantRes ? Promise.all([api(`${base}/resolution`), signingKeys()]) : null;
  const logP = wantLog ? Promise.all([api(`${base}/published`), apiText('/v1/log/checkpoint'), signingKeys()]) : null;

  renderProfile(profile);
  const missing = profile.status === 'rejected' && profile.reason.status === 404;
  const suggestP = missing ? suggestCompanies(slug) : null;
  const p = profile.status === 'fulfilled' ? profile.value : null;
  const name = p ? p.name || slug : slug;
  const backtestP = renderBacktest(slug, name);
  const evs = events.status === 'fulfilled' && events.value ? events.value.events || [] : null;
  renderEvents(events, evs);
  const [s95, res, pub] = await Promise.allSettled([s95P, resP, logP]);
  renderSeries(s80, s95, evs, p);
  await Promise.all([renderResolution(res, wantRes), renderPublished(pub, wantLog, s80), backtestP, suggestP]);
}

const SUGGESTIONS = 5; // how many companies a page that names none suggests

/** The words of an address's slug, as the search takes them: "celsius-network" gives
 * "celsius network". */
const slugWords = (slug) => slug.toLowerCase().split(/[^\p{L}\p{N}]+/u).filter(Boolean);

/**
 * An address that names no company (/explore/celsius): the companies whose names come closest,
 * found with the search the list's box uses (q on listCompanies, in relevance order, within the
 * key's universe): the slug's words, and when they find none its first word of three letters or
 * more alone (so "stripe-inc" finds Stripe). Each is a link to its page, its fate beside it.
 */
async function suggestCompanies(slug) {
  const box = $('profile-suggest');
  const words = slugWords(slug);
  const queries = [words.join(' ')];
  const first = words.find((w) => w.length >= 3);
  if (words.length > 1 && first) queries.push(first);
  let found = [];
  let asked = '';
  try {
    for (const q of queries.filter(Boolean)) {
      asked = q;
      const data = await api(`/v1/companies?${new URLSearchParams({ q, limit: String(SUGGESTIONS) })}`);
      found = Array.isArray(data && data.companies) ? data.companies : [];
      if (found.length) break;
    }
  } catch (err) {
    say($('profile-suggest-note'), problemWords(err, 'The search for similar names'), 'error');
    box.hidden = false;
    return;
  }
  $('profile-suggest-list').replaceChildren(...found.map((c) => el('li', { 'data-slug': c.slug }, companyOption(c, { link: true }))));
  say($('profile-suggest-note'), found.length
    ? `Did you mean ${found.length === 1 ? 'this company' : `one of these ${found.length} companies`}? `
      + `The closest to “${asked}”, as the search finds them:`
    : `None of this key's companies matches “${queries[0] || slug}” either. `);
  if (!found.length) $('profile-suggest-note').append(el('a', { href: '/explore', text: 'See the list of companies' }), '.');
  box.hidden = false;
}

function renderProfile(result) {
  if (result.status === 'rejected') {
    showError(result.reason, 'The company profile', $('profile-error'));
    return;
  }
  $('profile-error').textContent = '';
  const p = result.value;
  $('title').textContent = p.name || p.slug;
  document.title = `${p.name || p.slug} · Valuation Marks`;
  const o = p.outcome;
  facts($('company-facts'), [
    ['Sector', p.sector || 'n/a'],
    ['Outcome', o ? outcomeParts(o) : (p.status === 'ipo_completed' ? 'Listed' : 'Private, no sale agreed')],
    ['Slug', el('code', { text: p.slug })],
  ]);
  const m = p.latest_mark || {};
  const over = ended(p);
  const next = m.next_reported;
  $('latest-heading').textContent = over ? 'Last private mark' : 'Latest mark';
  if (over) {
    // Its private period ended: the mark is its last private one, of the day before the
    // outcome, kept for the record, beside the outcome. No percentage against anything that
    // would read as a move since.
    say($('outcome-note'), '');
    $('headline-figures').replaceChildren(
      figureCard(`Last private mark, ${m.as_of_date}`, money(m.value_usd), 'the day before the outcome; not a value today', 'last-private'),
      figureCard(`${OUTCOME_WORDS[o.kind]} on ${o.occurred_on}`,
        o.valuation_usd > 0 || o.kind === 'bankrupt' || o.kind === 'wound_down' ? money(o.valuation_usd) : 'price not disclosed',
        o.kind === 'listed' ? `${eventWords(o.event_type)}: the value at listing`
          : o.kind === 'sold' ? 'the sale price' : 'the equity as reported',
        'outcome'));
    facts($('latest-facts'), [
      ['Last reported before it', lastReported(p)],
      [`80% band on ${m.as_of_date}`, moneyBand(m.lower_usd, m.upper_usd)],
      ['30-day change', changeWords(p)],
    ]);
  } else {
    say($('outcome-note'), pending(o)
      ? `${outcomeText(o)}: the private period goes on.` : '');
    $('headline-figures').replaceChildren(
      figureCard('Today\'s value estimate', money(m.value_usd), `on ${m.as_of_date}`, 'estimate'),
      next ? figureCard('Forecast of the next reported valuation', money(next.value_usd), next.label, 'forecast') : null);
    facts($('latest-facts'), [
      ['Last reported', lastReported(p)],
      ['Estimate vs last reported', pct(m.vs_last_event_pct)],
      ['80% band', [moneyBand(m.lower_usd, m.upper_usd), ' (for the next reported value)']],
      ['Confidence', confidenceWords(m.confidence)],
      ['30-day change', changeWords(p)],
    ]);
  }
  // The paragraph is the API's own, built for the company's case: the page adds no words that
  // could contradict the figures beside it.
  const summary = p.explanation && p.explanation.summary;
  $('mark-explained').replaceChildren(...(summary
    ? [el('p', { class: 'summary', 'data-case': p.explanation.case || '', text: summary })] : []));
  showMeta(p.meta);
}

/** Whether an event is read by the marks (the effective view): not corrected, not withdrawn,
 * not a retraction. */
const effective = (e) => !e.superseded_by && !e.retracted_by && e.event_type !== 'retraction';

/**
 * Every record in the order the table shows them: the API's order (oldest first), each
 * correction or retraction moved to just under the record it corrects or withdraws, so a
 * correction is read beside what it corrected.
 */
function eventOrder(evs) {
  const byId = new Map(evs.map((e) => [e.event_id, e]));
  const under = new Map(); // id -> the records that correct or withdraw it
  const placed = new Set();
  for (const e of evs) {
    if (e.supersedes && byId.has(e.supersedes)) {
      under.set(e.supersedes, [...(under.get(e.supersedes) || []), e]);
    }
  }
  const out = [];
  const put = (e) => {
    if (placed.has(e.event_id)) return;
    placed.add(e.event_id);
    out.push(e);
    for (const c of under.get(e.event_id) || []) put(c);
  };
  for (const e of evs) {
    if (e.supersedes && byId.has(e.supersedes)) continue; // placed under what it corrects
    put(e);
  }
  for (const e of evs) put(e); // a chain that loops (refused by the builder) still shows
  return out;
}

const eventLink = (id, text) => el('a', { href: `#event-${encodeURIComponent(id)}`, class: 'record-link', text });

/** What a record is in the history: corrected, withdrawn, a correction or a retraction. */
function recordParts(e) {
  const parts = [];
  if (e.event_type === 'retraction' && e.supersedes) parts.push(['withdraws ', eventLink(e.supersedes, e.supersedes)]);
  else if (e.supersedes) parts.push(['corrects ', eventLink(e.supersedes, e.supersedes)]);
  if (e.superseded_by) parts.push(['corrected by ', eventLink(e.superseded_by, e.superseded_by)]);
  if (e.retracted_by) parts.push(['withdrawn by ', eventLink(e.retracted_by, e.retracted_by)]);
  return parts;
}

function renderEvents(result, evs) {
  if (result.status === 'rejected') {
    showError(result.reason, 'The event history', $('events-error'));
    return;
  }
  if (!evs) {
    say($('events-error'), needsTier('events:read', 'The event history (every record with its source and grade)'));
    return;
  }
  const none = evs.length === 0;
  $('events-wrap').hidden = none;
  $('events-download-box').hidden = none;
  $('grade-legend').hidden = none;
  $('events-intro').hidden = none;
  if (none) say($('events-error'), 'No events recorded for this company.');
  $('events-table').tBodies[0].replaceChildren(...eventOrder(evs).map((e) => {
    const state = e.retracted_by ? 'withdrawn' : e.superseded_by ? 'superseded' : e.supersedes ? 'correction' : '';
    const flag = REPORTED_WORDS[e.reported_as];
    const kind = el('span', { class: 'event-kind' }, eventWords(e.event_type),
      flag ? el('span', { class: `flag flag-${e.reported_as}`, text: flag }) : null,
      state === 'withdrawn' ? el('span', { class: 'flag flag-withdrawn', text: 'withdrawn' }) : null,
      state === 'superseded' ? el('span', { class: 'flag flag-superseded', text: 'corrected' }) : null);
    const record = recordParts(e);
    const recordCell = () => [el('code', { text: e.event_id }), ...record.flatMap(([w, a]) => [el('br'), w, a])];
    const source = () => [gradeBadge(e.source_grade), ' ', sourceLink(e.source_url)];
    // A corrected or withdrawn record's value is struck: the marks do not read it.
    const value = state === 'withdrawn' || state === 'superseded' ? el('s', {}, money(e.valuation_usd)) : money(e.valuation_usd);
    return el('tr', { id: `event-${e.event_id}`, class: [state, flag ? `reported-${e.reported_as}` : ''].filter(Boolean).join(' ') || null, 'data-event-id': e.event_id },
      el('td', { class: 'nowrap', text: e.occurred_on }),
      el('td', {}, kind,
        el('span', { class: 'sub narrow-only' }, e.note ? `${e.note} · ` : '', 'source ', source(),
          ...record.flatMap(([w, a]) => [' · ', w, a]))),
      el('td', { class: 'num' }, value),
      el('td', { class: 'wide-only source-cell' }, source()),
      el('td', { class: 'wide-only', text: e.note || '' }),
      el('td', { class: 'wide-only record-cell' }, recordCell()));
  }));
}

function renderSeries(s80, s95, evs, profile) {
  if (s80.status === 'rejected') {
    showError(s80.reason, 'The mark series', $('series-error'));
    return;
  }
  if (!s80.value) {
    say($('series-error'), needsTier('marks:80', 'The chart of the daily marks'));
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
  const exit = profile && ended(profile) ? profile.outcome : null;
  if (exit) notes.push(`The line ends on ${profile.latest_mark.as_of_date}, the day before the outcome, marked on the chart.`);
  $('series-note').textContent = notes.join(' ');
  $('legend-95').hidden = !p95;
  const shownEvents = (evs || []).filter(effective).filter((e) => !exit || e.event_id !== exit.event_id);
  $('legend-events').hidden = shownEvents.length === 0;
  $('legend-tentative').hidden = !shownEvents.some((e) => e.reported_as === 'in_talks' || e.reported_as === 'estimate');
  $('legend-exit').hidden = !exit;
  if (exit) $('legend-exit-text').textContent = `Outcome: ${outcomeText(exit)}`;

  const pts = s80.value.series;
  if (pts.length === 0) {
    say($('series-note'), 'This company has no mark series yet.');
    return;
  }
  chart.pts = pts;
  chart.p95 = p95;
  chart.days = pts.map((p) => dayNumber(p.date));
  chart.events = shownEvents;
  chart.exit = exit;
  $('chart-figure').hidden = false;
  $('series-download-box').hidden = false;
  $('series95-download').hidden = !p95;
  drawChart();
  renderSeriesText();
}

/* ---------- the chart: charts.js's line chart, with the events and the outcome drawn over it ---------- */

const chart = { pts: [], p95: null, days: [], events: [], exit: null };

/** Index of the series day nearest to day number d (days are ascending). */
function nearestIndex(d) {
  return nearestIn(chart.days, d);
}

function drawChart() {
  const { pts, p95, days, events, exit } = chart;
  // A company whose private period ended: the line ends the day before its outcome, which is
  // marked at its day and value (a value of 0 on the bottom edge), with room for its label.
  const exitDay = exit ? dayNumber(exit.occurred_on) : null;
  const last = days[days.length - 1];
  lineChart($('chart'), {
    id: 'chart-svg',
    label: `Chart of ${pts.length} daily marks from ${pts[0].date} to ${pts[pts.length - 1].date}.`,
    from: days[0],
    to: last,
    until: Math.max(exitDay ?? last, last),
    snap: true,
    lines: [{
      key: 'mark',
      label: 'Mark',
      cls: 'mark-line',
      days,
      values: pts.map((p) => p.mark_usd),
      bands: [
        ...(p95 ? [{ lower: p95.map((q) => q && q.lower_usd), upper: p95.map((q) => q && q.upper_usd), cls: 'band95' }] : []),
        { lower: pts.map((p) => p.lower_usd), upper: pts.map((p) => p.upper_usd), cls: 'band80' },
      ],
    }],
    values: [...events.map((e) => e.valuation_usd), ...(exit ? [exit.valuation_usd] : [])],
    left: { format: usd },
    scale: { share: 0.04, least: 0.05, widen: false },
    size: (W) => ({
      H: Math.round(Math.min(420, Math.max(240, W * 0.46))),
      M: { l: 58, r: exit && W >= 560 ? Math.max(14, Math.min(150, Math.round(W * 0.12))) : 14, t: 12, b: 28 },
    }),
    attrs: { 'data-days': pts.length, 'data-events': events.length },
    overlay: (g) => [eventMarkers(g), exitMarker(g, exitDay)],
    readoutNode: $('chart-readout'),
    readout: (d, initial) => (initial
      ? readoutText(nearestIndex(d), exit ? 'Last private mark' : 'Latest')
      : readoutParts(nearestIndex(d))),
  });
}

/** The events the marks read, each a dot at its day and value linking to its source; focused,
 * it moves the chart's cursor to its day. */
function eventMarkers({ x, y, d0, d1, setCursor }) {
  const { pts, events } = chart;
  const markers = svgEl('g', { class: 'events' });
  for (const e of events) {
    const d = dayNumber(e.occurred_on);
    const v = typeof e.valuation_usd === 'number' ? e.valuation_usd : pts[nearestIndex(d)].mark_usd;
    const grade = e.source_grade ? `, source grade ${e.source_grade}` : '';
    const firm = REPORTED_WORDS[e.reported_as] ? ` (${REPORTED_WORDS[e.reported_as]})` : '';
    const label = `${eventWords(e.event_type)}${firm} on ${e.occurred_on}: valuation ${usd(v)}${grade}`;
    // A figure reported as in talks or as an estimate is drawn hollow: not a price paid.
    const tentative = e.reported_as === 'in_talks' || e.reported_as === 'estimate';
    const dot = svgEl('circle', {
      class: `event-marker${tentative ? ' tentative' : ''}`, cx: x(Math.min(Math.max(d, d0), d1)), cy: y(v), r: 6, 'data-event-id': e.event_id,
    }, svgEl('title', { text: `${label}. Opens the source.` }));
    const ok = typeof e.source_url === 'string' && /^https?:\/\//i.test(e.source_url);
    const mark = ok
      ? svgEl('a', { href: e.source_url, target: '_blank', rel: 'noopener noreferrer', 'aria-label': `${label} (source: ${hostOf(e.source_url)})` }, dot)
      : dot;
    mark.addEventListener('focus', () => setCursor(d));
    markers.append(mark);
  }
  return markers;
}

/** The outcome of a company whose private period ended: a diamond at its day and value, joined
 * to the last private mark, with its kind, day and value beside it. */
function exitMarker({ x, y, W, H, M }, exitDay) {
  const { pts, days, exit } = chart;
  if (!exit) return null;
  const ex = x(exitDay);
  const known = exit.valuation_usd > 0 || exit.kind === 'bankrupt' || exit.kind === 'wound_down';
  // A sale whose price was not disclosed has no value: marked at the last private mark's level.
  const ey = y(known ? exit.valuation_usd : pts[pts.length - 1].mark_usd);
  const text = outcomeText(exit);
  const lastX = x(days[days.length - 1]);
  const lastY = y(pts[pts.length - 1].mark_usd);
  // The label right of the marker where the margin holds it (about 80 px), else left of it.
  const right = W - (ex + 9) >= 80;
  const lx = right ? ex + 9 : ex - 9;
  return svgEl('g', { class: 'exit', role: 'img', 'aria-label': `Outcome: ${text}`, 'data-day': exit.occurred_on },
    svgEl('line', { class: 'exit-link', x1: lastX, y1: lastY, x2: ex, y2: ey }),
    svgEl('path', { class: 'exit-marker', d: `M${ex} ${ey - 7} l7 7 l-7 7 l-7 -7 z` }),
    svgEl('text', {
      class: 'exit-label', x: lx, y: Math.max(M.t + 10, Math.min(H - M.b - 32, ey - 2)), 'text-anchor': right ? 'start' : 'end',
    }, svgEl('tspan', { x: lx, text: `${OUTCOME_WORDS[exit.kind] || ''}` }),
    svgEl('tspan', { x: lx, dy: 14, text: exit.occurred_on }),
    svgEl('tspan', { x: lx, dy: 14, text: known ? usd(exit.valuation_usd) : 'price n/d' })));
}

function readoutText(i, prefix) {
  const p = chart.pts[i];
  const q = chart.p95 && chart.p95[i];
  let text = `${prefix ? `${prefix}: ` : ''}${p.date}: mark ${usd(p.mark_usd)}; 80% band ${band(p.lower_usd, p.upper_usd)}`;
  if (q) text += `; 95% band ${band(q.lower_usd, q.upper_usd)}`;
  return `${text}.`;
}

/** The readout of the cursor's day: the mark and its bands, the day's events with their
 * sources, and on the last private mark, the outcome that followed. */
function readoutParts(i) {
  const p = chart.pts[i];
  const parts = [readoutText(i)];
  for (const e of chart.events) {
    if (e.occurred_on !== p.date) continue;
    parts.push(` Event: ${eventWords(e.event_type)}${REPORTED_WORDS[e.reported_as] ? ` (${REPORTED_WORDS[e.reported_as]})` : ''}, valuation ${usd(e.valuation_usd)}`,
      e.note ? ` (${e.note})` : '', '; source: ', sourceLink(e.source_url), e.source_grade ? `, grade ${e.source_grade}` : '', '.');
  }
  if (chart.exit && i === chart.pts.length - 1) {
    parts.push(` The last private mark: next day, ${outcomeText(chart.exit)}.`);
  }
  return parts;
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
    + `${events.length} event${events.length === 1 ? '' : 's'} on the chart.`
    + `${chart.exit ? ` The line ends on ${last.date}, its last private mark; the next day: ${outcomeText(chart.exit)}.` : ''}`;

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
      el('td', { text: evs ? evs.map((e) => `${eventWords(e.event_type)} at ${usd(e.valuation_usd)}`).join('; ') : '' })));
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
  $('resolution-hint').hidden = false;
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

/* ---------- the published history: the publication log, verified in the browser ---------- */

/* Every build appends each company's mark as of its day to an append-only log (an RFC 6962
   Merkle tree) and signs a checkpoint of it (a C2SP signed note). The daily series is
   recomputed by every version; the log keeps what each version published. The page checks,
   with Web Crypto, what GET /v1/companies/{slug}/published says against the signed checkpoint,
   as the Python SDK's verify_published does: each entry's leaf hash from its fields, each
   inclusion proof (RFC 9162 section 2.1.3.2) to the checkpoint's root, the checkpoint's Ed25519
   signature by a published signing key (found by its C2SP key hash), and the entries' places. */

/** A check of the log that failed: `check` names which, `leaf` the entry's leaf index. */
class LogCheck extends Error {
  constructor(check, message, leaf = null) {
    super(message);
    this.check = check;
    this.leaf = leaf;
  }
}

const utf8 = (text) => new TextEncoder().encode(text);
const toBase64 = (bytes) => btoa(String.fromCharCode(...bytes));
const toBase64Url = (bytes) => toBase64(bytes).replace(/\+/g, '-').replace(/\//g, '_').replace(/=+$/, '');
const sameBytes = (a, b) => a.length === b.length && a.every((v, i) => v === b[i]);
const hex = (bytes) => [...bytes].map((b) => b.toString(16).padStart(2, '0')).join('');

/** Standard base64 with its padding, as the log's hashes are sent; `what` names it in the error. */
function base64Bytes(text, what) {
  if (typeof text !== 'string' || text.length % 4 !== 0 || !/^[A-Za-z0-9+/]*={0,2}$/.test(text)) {
    throw new LogCheck('format', `${what} is not base64`);
  }
  return Uint8Array.from(atob(text), (ch) => ch.charCodeAt(0));
}

async function sha256(...parts) {
  const joined = new Uint8Array(parts.reduce((n, p) => n + p.length, 0));
  let at = 0;
  for (const p of parts) {
    joined.set(p, at);
    at += p.length;
  }
  return new Uint8Array(await crypto.subtle.digest('SHA-256', joined));
}

const LEAF_PREFIX = Uint8Array.of(0);
const NODE_PREFIX = Uint8Array.of(1);

/** RFC 6962's hash of a leaf: SHA-256(0x00 || leaf). */
const leafHash = (leaf) => sha256(LEAF_PREFIX, leaf);

/**
 * RFC 9162 section 2.1.3.2: the root an inclusion proof leads to from the leaf hash `leaf` at
 * `index` of a tree of `size` leaves, or null when the proof cannot be one for that place.
 * Halving by arithmetic: JavaScript's bitwise operators are 32-bit.
 */
async function rootFromInclusion(index, size, leaf, proof) {
  if (!Number.isSafeInteger(index) || !Number.isSafeInteger(size) || index < 0 || index >= size) return null;
  const odd = (n) => n % 2 === 1;
  const half = (n) => Math.floor(n / 2);
  let fn = index;
  let sn = size - 1;
  let r = leaf;
  for (const p of proof) {
    if (sn === 0 || p.length !== 32) return null;
    if (odd(fn) || fn === sn) {
      r = await sha256(NODE_PREFIX, p, r);
      while (fn !== 0 && !odd(fn)) {
        fn = half(fn);
        sn = half(sn);
      }
    } else {
      r = await sha256(NODE_PREFIX, r, p);
    }
    fn = half(fn);
    sn = half(sn);
  }
  return sn === 0 ? r : null;
}

/** A C2SP tlog-checkpoint signed note: {origin, size, root, version, text, signatures}; its
 * signature is not checked here. */
function parseCheckpoint(note, what) {
  if (typeof note !== 'string') throw new LogCheck('format', `${what} is not a signed note`);
  const cut = note.indexOf('\n\n');
  if (cut < 0 || !note.endsWith('\n')) {
    throw new LogCheck('format', `${what} is not a signed note (text, a blank line, then signature lines)`);
  }
  if (/[\u0000-\u0009\u000b-\u001f]/.test(note)) throw new LogCheck('format', `${what} holds control characters`);
  const lines = note.slice(0, cut).split('\n');
  if (lines.length < 3) throw new LogCheck('format', `${what} lacks an origin, a tree size or a root hash`);
  const [origin, size, root] = lines;
  if (!origin) throw new LogCheck('format', `${what} has no origin`);
  if (!/^(0|[1-9][0-9]{0,15})$/.test(size) || !Number.isSafeInteger(Number(size))) {
    throw new LogCheck('format', `the tree size of ${what} (${size}) is not a number`);
  }
  const rootBytes = base64Bytes(root, `the root hash of ${what}`);
  if (rootBytes.length !== 32) throw new LogCheck('format', `the root hash of ${what} is not 32 bytes`);
  const version = lines.slice(3).find((l) => l.startsWith('dataset_version '));
  const signatures = note.slice(cut + 2, -1).split('\n').map((line) => {
    const m = /^\u2014 (\S+) ([A-Za-z0-9+/]+={0,2})$/.exec(line);
    if (!m) throw new LogCheck('format', `${what} has a signature line that is not one`);
    return { name: m[1], bytes: base64Bytes(m[2], `a signature of ${what}`) };
  });
  return {
    origin, size: Number(size), root: rootBytes, version: version ? version.slice(16) : null,
    text: `${note.slice(0, cut)}\n`, signatures,
  };
}

/** The C2SP signed-note key hash of an Ed25519 key: SHA-256(name || "\n" || 0x01 || key)[:4]. */
async function noteKeyHash(name, raw) {
  return (await sha256(utf8(name), Uint8Array.of(0x0a, 0x01), raw)).slice(0, 4);
}

/**
 * Checks a checkpoint's signature: a signature line under its origin whose key hash is that of a
 * published Ed25519 signing key (the keys the resolution record is checked with), verified with
 * that key. {thumbprint, keyHash} of the key that verified it, or a LogCheck saying why not.
 */
async function verifyCheckpoint(cp, jwks, what) {
  const keys = [];
  for (const jwk of (jwks && Array.isArray(jwks.keys) ? jwks.keys : [])) {
    if (!jwk || jwk.kty !== 'OKP' || jwk.crv !== 'Ed25519' || typeof jwk.x !== 'string') continue;
    let raw;
    try {
      raw = base64UrlBytes(jwk.x);
    } catch {
      continue;
    }
    if (raw.length === 32) keys.push({ jwk, hash: await noteKeyHash(cp.origin, raw) });
  }
  const lines = cp.signatures.filter((s) => s.name === cp.origin && s.bytes.length === 68);
  if (lines.length === 0) {
    throw new LogCheck('signature', `${what} carries no Ed25519 signature under its origin ${cp.origin}`);
  }
  let named = null;
  for (const line of lines) {
    for (const { jwk, hash } of keys) {
      if (!sameBytes(hash, line.bytes.slice(0, 4))) continue;
      named = hash;
      let key;
      try {
        key = await crypto.subtle.importKey('jwk', { kty: 'OKP', crv: 'Ed25519', x: jwk.x }, { name: 'Ed25519' }, false, ['verify']);
      } catch {
        throw new LogCheck('browser', 'this browser cannot verify Ed25519 signatures with Web Crypto');
      }
      let ok = false;
      try {
        ok = await crypto.subtle.verify({ name: 'Ed25519' }, key, line.bytes.slice(4), utf8(cp.text));
      } catch {
        ok = false;
      }
      if (ok) return { thumbprint: await thumbprint(jwk), keyHash: hex(hash) };
    }
  }
  throw new LogCheck('signature', named
    ? `the signature of ${what} does not verify with the published key of key hash ${hex(named)}: the checkpoint was changed, or signed by another key`
    : `${what} is signed by no published signing key (its key hash is ${lines.map((l) => hex(l.bytes.slice(0, 4))).join(', ')})`);
}

/** The published versions, in order, each [dataset_version, tree_size], the last that of the
 * checkpoint. */
function publishedVersions(body, cp) {
  const listed = body.versions;
  if (!Array.isArray(listed) || listed.length === 0) throw new LogCheck('versions', 'the answer lists no published version');
  const versions = [];
  for (const v of listed) {
    if (!v || typeof v.dataset_version !== 'string' || !Number.isSafeInteger(v.tree_size) || v.tree_size <= 0) {
      throw new LogCheck('format', 'a published version has no dataset version or tree size');
    }
    const last = versions[versions.length - 1];
    if (last && !(v.dataset_version > last[0] && v.tree_size > last[1])) {
      throw new LogCheck('versions', `the versions are not in publication order: ${v.dataset_version} (${v.tree_size} entries) follows ${last[0]} (${last[1]})`);
    }
    versions.push([v.dataset_version, v.tree_size]);
  }
  const [version, size] = versions[versions.length - 1];
  if (size !== cp.size || (cp.version && version !== cp.version)) {
    throw new LogCheck('versions', `the last version listed is ${version} with ${size} entries; the signed checkpoint says ${cp.version} with ${cp.size}`);
  }
  return versions;
}

/**
 * Checks a company's published history (the JSON of /published) against its signed checkpoint,
 * and that checkpoint against the one /v1/log/checkpoint serves (`headNote`). What was checked,
 * or a LogCheck naming the first check that failed.
 */
async function verifyPublished(body, headNote, jwks) {
  if (!globalThis.crypto || !crypto.subtle) {
    throw new LogCheck('browser', 'this page is not a secure context (HTTPS), so the browser offers no Web Crypto');
  }
  const log = body && body.log;
  const cp = parseCheckpoint(log && log.checkpoint, 'the checkpoint of the history');
  const signer = await verifyCheckpoint(cp, jwks, 'the checkpoint of the history');
  if (log.origin !== cp.origin) throw new LogCheck('origin', `the answer names the log ${log.origin}, its checkpoint ${cp.origin}`);
  if (log.tree_size !== cp.size || log.root_hash !== toBase64(cp.root)) {
    throw new LogCheck('checkpoint', 'the tree size or root hash of the answer is not what its signed checkpoint says');
  }
  const head = parseCheckpoint(headNote, 'the log\'s checkpoint');
  await verifyCheckpoint(head, jwks, 'the log\'s checkpoint');
  if (head.origin !== cp.origin || head.size !== cp.size || !sameBytes(head.root, cp.root)) {
    throw new LogCheck('checkpoint', `the log's checkpoint (${head.size} entries, ${head.version}) is not the one the history is proved against (${cp.size} entries, ${cp.version}): the log changed between the two answers (reload the page), or the server shows two logs`);
  }
  const versions = publishedVersions(body, cp);
  const starts = new Map(versions.map(([v, size], i) => [v, [i ? versions[i - 1][1] : 0, size]]));
  const slug = body.slug;
  if (!Array.isArray(body.series)) throw new LogCheck('format', 'the answer has no series of entries');
  const seen = [];
  let previous = -1;
  let bands = 0;
  for (const item of body.series) {
    const entry = item && item.entry;
    const index = item && item.leaf_index;
    if (!entry || typeof entry !== 'object' || !Number.isSafeInteger(index)) {
      throw new LogCheck('format', 'an entry of the series has no entry or leaf index');
    }
    const where = `the entry of ${entry.dataset_version} (leaf ${index})`;
    let hashed;
    try {
      hashed = await leafHash(utf8(canonicalJson(entry)));
    } catch (err) {
      if (err instanceof LogCheck) throw err;
      throw new LogCheck('leaf_hash', `${where} is not canonical JSON`, index);
    }
    if (item.leaf_hash != null && !sameBytes(base64Bytes(item.leaf_hash, `the leaf hash of ${where}`), hashed)) {
      throw new LogCheck('leaf_hash', `${where} does not hash to the leaf hash sent with it: it was changed`, index);
    }
    if (!Array.isArray(item.inclusion_proof)) throw new LogCheck('format', `${where} has no inclusion proof`, index);
    const proof = item.inclusion_proof.map((p) => base64Bytes(p, `the inclusion proof of ${where}`));
    const root = await rootFromInclusion(index, cp.size, hashed, proof);
    if (!root || !sameBytes(root, cp.root)) {
      throw new LogCheck('inclusion', `${where} is not in the log of the signed checkpoint (${cp.size} entries): a changed or forged entry, or one moved to another place`, index);
    }
    if (index <= previous) throw new LogCheck('order', `${where} comes after leaf ${previous}: the entries are not in log order`, index);
    previous = index;
    if (entry.slug !== slug) throw new LogCheck('entry', `${where} is an entry of ${entry.slug}`, index);
    if (item.date !== entry.as_of) throw new LogCheck('entry', `${where} is dated ${item.date}, its entry says ${entry.as_of}`, index);
    const span = starts.get(entry.dataset_version);
    if (!span) throw new LogCheck('versions', `${where}: ${entry.dataset_version} is not a published version`, index);
    if (index < span[0] || index >= span[1]) {
      throw new LogCheck('versions', `${where} lies outside the leaves ${span[0]} to ${span[1] - 1} of ${entry.dataset_version}`, index);
    }
    if (seen[seen.length - 1] === entry.dataset_version) throw new LogCheck('completeness', `${where} is a second entry of ${entry.dataset_version}`, index);
    seen.push(entry.dataset_version);
    if (item.band_95 != null) {
      const digest = toBase64Url(await sha256(utf8(canonicalJson(item.band_95))));
      if (digest !== entry.band_95_digest) throw new LogCheck('band_95', `the 95% band of ${where} is not the one its entry commits to`, index);
      bands += 1;
    }
  }
  if (seen.length) {
    const order = versions.map(([v]) => v);
    const missing = order.slice(order.indexOf(seen[0])).filter((v) => !seen.includes(v));
    if (missing.length) {
      throw new LogCheck('completeness', `the history has entries of ${seen[0]} and later, but none of ${missing.join(', ')}: an entry was left out (a company with a mark is published in every version)`);
    }
  }
  return { cp, signer, entries: seen.length, versions: versions.length, bands };
}

/** A change in percent with one decimal: "−13.2%", "+0.4%", "less than 0.1%". */
function revisedPct(from, to) {
  const p = (to / from - 1) * 100;
  if (Math.abs(p) < 0.05) return `${p < 0 ? '−' : '+'}less than 0.1%`;
  return `${p < 0 ? '−' : '+'}${Math.abs(p).toFixed(1)}%`;
}

/** How today's recomputed mark of an entry's day stands to the published one. */
function revisionOf(entry, today) {
  if (!today) return { kind: 'none', words: 'no recomputed mark of that day' };
  if (today.mark_usd === entry.value_usd) {
    const same = today.lower_usd === entry.lower_80_usd && today.upper_usd === entry.upper_80_usd;
    return { kind: same ? 'same' : 'bounds', words: same ? 'unchanged' : 'the same mark; its 80% band revised' };
  }
  const by = entry.value_usd > 0 ? revisedPct(entry.value_usd, today.mark_usd) : `from ${usd(0)}`;
  return { kind: 'revised', words: `revised by ${by}`, by };
}

/** The sentence of one entry: what was published, what is recomputed today, the revision. */
function publishedSentence(entry, today, rev) {
  return `Published ${usd(entry.value_usd)} for ${entry.marked_on} (version ${entry.dataset_version}); `
    + (today ? `recomputed today ${usd(today.mark_usd)}: ${rev.words}.` : `${rev.words}.`);
}

const publishedChart = { items: [], pts: [], width: 0 };

async function renderPublished(result, wanted, s80) {
  const status = $('published-verify');
  if (!wanted) {
    say($('published-note'), allows('marks:80') === false
      ? needsTier('marks:80', 'The published history (every mark as first published, verified in your browser)')
      : 'The published history was not asked for: the daily marks could not be read (see above).');
    return;
  }
  if (result.status === 'rejected') {
    showError(result.reason, 'The published history', $('published-note'));
    return;
  }
  const [body, headNote, jwks] = result.value;
  const series = body && Array.isArray(body.series) ? body.series : [];
  $('published-intro').hidden = false;
  const pts = s80.status === 'fulfilled' && s80.value ? s80.value.series || [] : [];
  const byDate = new Map(pts.map((p) => [p.date, p]));
  const items = series.filter((s) => s && s.entry).map((s) => {
    const today = byDate.get(s.entry.marked_on);
    const rev = revisionOf(s.entry, today);
    return { ...s, today, rev, sentence: publishedSentence(s.entry, today, rev) };
  });
  if (items.length === 0) say($('published-note'), 'Nothing has been published for this company yet.');
  $('published-table').tBodies[0].replaceChildren(...items.map((it) => {
    const e = it.entry;
    const cls = it.rev.kind === 'revised' ? (it.today.mark_usd > e.value_usd ? 'up' : 'down') : null;
    // On a phone the bounds go under the published mark and the revision under today's mark.
    return el('tr', { 'data-leaf': it.leaf_index, 'data-revision': it.rev.kind },
      el('td', {}, el('span', { class: 'nowrap', text: e.marked_on }),
        el('span', { class: 'sub', text: `${e.as_of !== e.marked_on ? `as of ${e.as_of}, ` : ''}published in ${e.dataset_version}` }),
        el('span', { class: 'sub', text: `leaf ${it.leaf_index}` })),
      el('td', { class: 'num' }, money(e.value_usd), el('span', { class: 'sub narrow-only', text: `80%: ${band(e.lower_80_usd, e.upper_80_usd)}` })),
      el('td', { class: 'num wide-only' }, moneyBand(e.lower_80_usd, e.upper_80_usd)),
      el('td', { class: 'num' }, it.today ? money(it.today.mark_usd) : 'n/a', el('span', { class: `sub narrow-only ${cls || ''}`.trim(), text: it.rev.words })),
      el('td', { class: `wide-only ${cls || ''}`.trim() }, it.rev.words));
  }));
  $('published-wrap').hidden = items.length === 0;
  publishedChart.items = items;
  publishedChart.pts = pts;
  if (items.length) {
    $('published-figure').hidden = false;
    $('legend-revision').hidden = !items.some((it) => it.rev.kind === 'revised');
    drawPublished();
    redrawOnResize($('published-chart'), () => publishedChart.width, drawPublished);
    const last = items[items.length - 1];
    $('published-readout').textContent = `Latest: ${last.sentence}`;
  }

  say(status, 'Verifying the published history in your browser…');
  try {
    const v = await verifyPublished(body, headNote, jwks);
    const { cp, signer } = v;
    say(status, `Verified in your browser: ${v.entries} published entr${v.entries === 1 ? 'y' : 'ies'} of this company. `
      + 'Each one\'s leaf hash is recomputed from its fields and its inclusion proof leads to the root of the log\'s '
      + `checkpoint (${cp.size} entries, dataset ${cp.version || 'n/a'}), signed (Ed25519) by the published signing key `
      + `${signer.thumbprint}${v.bands ? `; the ${v.bands} 95% band${v.bands === 1 ? '' : 's'} match the digests their entries commit to` : ''}. `
      + 'That proves who published them only if that key is one the publisher states as its own (the sample\'s demo key '
      + 'is listed in docs/publishing.md).', 'ok');
    status.dataset.verdict = 'verified';
    facts($('published-facts'), [
      ['Log', el('code', { text: cp.origin })],
      ['Checkpoint', `${cp.size} entries, dataset ${cp.version || 'n/a'}`],
      ['Root hash', el('code', { text: toBase64(cp.root) })],
      ['Signed by', [el('code', { text: signer.thumbprint }), ` (key hash ${signer.keyHash})`]],
    ]);
  } catch (err) {
    const check = err instanceof LogCheck ? err : new LogCheck('format', `the answer could not be read (${err.message})`);
    say(status, `NOT verified: ${check.message}. Do not rely on these published marks.`, 'error');
    status.dataset.verdict = 'failed';
    status.dataset.check = check.check;
    if (check.leaf != null) {
      const row = document.querySelector(`#published-table tr[data-leaf="${check.leaf}"]`);
      if (row) {
        row.classList.add('failed');
        row.cells[0].append(el('span', { class: 'flag flag-failed', text: 'fails the check' }));
      }
    }
  }
}

/** Day ticks for a window of a few weeks (timeTicks' months for a longer one). */
function dayTicks(d0, d1, plotWidth) {
  if (d1 - d0 > 120) return timeTicks(d0, d1, plotWidth);
  const step = [1, 2, 3, 7, 14, 28].find((s) => ((d1 - d0) / s) * 56 <= plotWidth) || 28;
  const ticks = [];
  for (let d = Math.ceil(d0); d <= d1; d += 1) {
    if (d % step !== 0) continue;
    const date = new Date(d * DAY_MS);
    ticks.push([d, `${MONTHS[date.getUTCMonth()]} ${date.getUTCDate()}`]);
  }
  return ticks;
}

/** The published marks (squares, their 80% bounds as bars) over today's recomputed series of
 * the days they cover (line and 80% band); a revision drawn from the one to the other. */
function drawPublished() {
  const { items, pts } = publishedChart;
  const box = $('published-chart');
  const W = chartWidth(box);
  const H = Math.round(Math.min(320, Math.max(220, W * 0.36)));
  const M = { l: 58, r: 14, t: 12, b: 28 };
  publishedChart.width = W;
  const marked = items.map((it) => dayNumber(it.entry.marked_on));
  const lo = Math.min(...marked);
  const hi = Math.max(...marked);
  const pad = Math.max(2, Math.round((hi - lo) * 0.12));
  const d0 = lo - pad;
  const d1 = hi + pad;
  const inWindow = pts.filter((p) => {
    const d = dayNumber(p.date);
    return d >= d0 && d <= d1;
  });
  const values = [];
  for (const p of inWindow) values.push(p.mark_usd, p.lower_usd, p.upper_usd);
  for (const it of items) values.push(it.entry.value_usd, it.entry.lower_80_usd, it.entry.upper_80_usd);
  const pw = W - M.l - M.r;
  const ph = H - M.t - M.b;
  const x = (d) => Math.round((M.l + ((d - d0) / (d1 - d0)) * pw) * 10) / 10;
  const scale = logScale(extent(values), M.t, ph, POINTS_SCALE);
  const { y } = scale;
  const ticks = dayTicks(d0, d1, pw).filter(([t]) => x(t) >= M.l + 20 && x(t) <= W - 22); // not a label cut by the edge
  const grid = svgEl('g', { 'aria-hidden': 'true' }, valueGrid(scale, usd, M, W), timeGrid(ticks, x, { M, W, H }));
  const wx = inWindow.map((p) => x(dayNumber(p.date)));
  const recomputed = svgEl('g', { class: 'recomputed', 'aria-hidden': 'true' });
  if (inWindow.length) {
    const top = inWindow.map((p, i) => `${wx[i]},${y(p.upper_usd)}`);
    const bottom = inWindow.map((p, i) => `${wx[i]},${y(p.lower_usd)}`).reverse();
    recomputed.append(
      svgEl('path', { class: 'recomputed-band', d: `M${top.join('L')}L${bottom.join('L')}Z` }),
      svgEl('polyline', { class: 'recomputed-line', points: inWindow.map((p, i) => `${wx[i]},${y(p.mark_usd)}`).join(' ') }));
  }
  // Entries of one day (a company's last private mark, published again by each version) are
  // drawn side by side around it, in publication order, 12 px apart.
  const sameDay = marked.map((d, i) => [marked.filter((e) => e === d).length, marked.slice(0, i).filter((e) => e === d).length]);
  const xAt = (i) => x(marked[i]) + (sameDay[i][1] - (sameDay[i][0] - 1) / 2) * 12;
  const marks = svgEl('g', { class: 'published' });
  const LABEL = 52; // room for a label such as "+193.7%" beside a mark
  let taken = M.l; // where the last label ends
  items.forEach((it, i) => {
    const e = it.entry;
    const cx = xAt(i);
    const py = y(e.value_usd);
    const g = svgEl('g', {
      class: `published-entry ${it.rev.kind}`, tabindex: 0, role: 'img', 'aria-label': it.sentence,
      'data-leaf': it.leaf_index, 'data-revision': it.rev.kind,
    }, svgEl('title', { text: it.sentence }),
    svgEl('line', { class: 'published-bounds', x1: cx, x2: cx, y1: y(e.lower_80_usd), y2: y(e.upper_80_usd) }));
    if (it.rev.kind === 'revised') {
      const ty = y(it.today.mark_usd);
      g.append(svgEl('line', { class: 'revision-link', x1: cx, x2: cx, y1: py, y2: ty }),
        svgEl('circle', { class: 'revision-dot', cx, cy: ty, r: 3 }));
      // The revision in a few characters beside it: right of it where the next mark leaves room,
      // else left where the last label does; else only in its label and the table.
      const next = i + 1 < items.length ? xAt(i + 1) : W - M.r + 6;
      const ly = Math.round(((py + ty) / 2 + 4) * 10) / 10;
      if (next - cx >= LABEL + 6) {
        g.append(svgEl('text', { class: 'revision-label', x: cx + 9, y: ly, text: it.rev.by }));
        taken = cx + LABEL + 9;
      } else if (cx - Math.max(taken, i ? xAt(i - 1) : M.l) >= LABEL + 6) {
        g.append(svgEl('text', { class: 'revision-label', x: cx - 9, y: ly, 'text-anchor': 'end', text: it.rev.by }));
        taken = cx;
      }
    }
    g.append(svgEl('rect', { class: 'published-marker', x: cx - 5, y: py - 5, width: 10, height: 10 }));
    const show = () => { $('published-readout').textContent = it.sentence; };
    g.addEventListener('focus', show);
    g.addEventListener('pointerenter', show);
    marks.append(g);
  });
  const revised = items.filter((it) => it.rev.kind === 'revised').length;
  box.replaceChildren(svgEl('svg', {
    viewBox: `0 0 ${W} ${H}`, width: W, height: H, role: 'group', id: 'published-svg',
    'aria-label': `${items.length} published mark${items.length === 1 ? '' : 's'} from ${items[0].entry.marked_on} to `
      + `${items[items.length - 1].entry.marked_on} against today's recomputed marks of those days; `
      + `${revised ? `${revised} revised since` : 'none revised since'}. Tab to each published mark to read it.`,
    'data-entries': items.length,
    'data-revised': revised,
  }, grid, recomputed, marks));
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

let routed = ''; // the address (path and query) the page last loaded its data for

async function route() {
  routed = location.pathname + location.search;
  const match = location.pathname.match(/^\/explore\/([^/]+)\/?$/);
  document.body.classList.toggle('explore-list', !match);
  $('list-view').hidden = true;
  $('company-view').hidden = true;
  await keyThenView(() => (match ? showCompany(slugOf(match[1])) : showList()));
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
  initExactToggles();
  $('load-more').addEventListener('click', () => loadPage(nextCursor, listRun));
  downloadButton($('list-download'), $('list-download-status'), listCsv, 'The list download');
  wireCompanyDownloads();
  // A history step that changes the page's address reloads its data; one that only moves to a
  // fragment (an event's record, "corrected by e0981") does not.
  window.addEventListener('popstate', () => {
    if (location.pathname + location.search !== routed) route();
  });
  route();
}

start();
