/* common.js: what the pages that read the /v1 API with the visitor's key share (/explore,
   /compare, /indices). Imported as a module by explore.js, compare.js and indices.js, at its
   plain address (/assets/common.js, revalidated on every load), since a module cannot name
   another's fingerprinted address.

   - DOM helpers (el, svgEl), formatting of dollars, percents and dates;
   - the key: in this tab's sessionStorage only, sent only in the X-API-Key header, never in a
     URL, a cookie or a log; the key panel every such page carries (the same ids on each);
   - api(): a JSON GET with the key, errors in words (401, 403 with the tier needed, 429 with
     when to retry);
   - CSV: files fetched from the API with Accept: text/csv (following X-Next-Cursor across
     pages) or written here with the API's own rules, saved through a Blob and <a download>;
   - the company search box: a combobox with suggestions from /v1/companies?q=, each with its fate
     (listed, sold, sale agreed, bankrupt, wound down) beside its name;
   - ticks for the charts (log scale, time).

   No framework, no build step, no eval, no inline styles: it runs under the site's strict
   Content-Security-Policy. */

export const KEY_ITEM = 'marks.apiKey';
const USAGE_ITEM = 'marks.usage';
export const SVG_NS = 'http://www.w3.org/2000/svg';
export const DAY_MS = 86400000;

export const $ = (id) => document.getElementById(id);

/* ---------- DOM helpers ---------- */

export function setAttrs(node, attrs) {
  for (const [name, value] of Object.entries(attrs)) {
    if (value == null || value === false) continue;
    if (name === 'text') node.textContent = value;
    else node.setAttribute(name, value === true ? '' : String(value));
  }
  return node;
}

export function el(tag, attrs = {}, ...children) {
  const node = setAttrs(document.createElement(tag), attrs);
  node.append(...children.flat(Infinity).filter((c) => c != null && c !== false));
  return node;
}

export function svgEl(tag, attrs = {}, ...children) {
  const node = setAttrs(document.createElementNS(SVG_NS, tag), attrs);
  node.append(...children.flat(Infinity).filter((c) => c != null && c !== false));
  return node;
}

/** The width a chart is drawn at in `box`: the box's, at least 280 px (720 while it has none). */
export const chartWidth = (box) => Math.max(280, Math.round(box.clientWidth || 720));

/** Calls `draw` whenever `box`'s chart width moves more than 2 px from `drawnWidth()`, the
 * width it was last drawn at; one observer per box, however often the chart is drawn anew. */
export function redrawOnResize(box, drawnWidth, draw) {
  if (box.chartObserver) box.chartObserver.disconnect();
  box.chartObserver = new ResizeObserver(() => {
    if (Math.abs(chartWidth(box) - drawnWidth()) > 2) draw();
  });
  box.chartObserver.observe(box);
}

export function hostOf(url) {
  try { return new URL(url).hostname.replace(/^www\./, ''); } catch { return url; }
}

/** A link to an event's source, or plain text when the URL is not http(s). */
export function sourceLink(url, label) {
  if (typeof url !== 'string' || !/^https?:\/\//i.test(url)) return document.createTextNode(label || 'none');
  return el('a', { href: url, rel: 'noopener noreferrer', target: '_blank', text: label || hostOf(url) });
}

/** Puts text in a message line and styles it: 'note' (neutral), 'error' or 'ok'. */
export function say(node, text, kind = 'note') {
  node.className = kind;
  node.textContent = text;
}

export function facts(dl, rows) {
  dl.replaceChildren(...rows.flatMap(([term, value]) => [el('dt', { text: term }), el('dd', {}, value)]));
}

/* ---------- formatting ---------- */

const usdCompact = new Intl.NumberFormat('en-US', {
  style: 'currency', currency: 'USD', notation: 'compact', maximumSignificantDigits: 3,
});
const usdWhole = new Intl.NumberFormat('en-US', { style: 'currency', currency: 'USD', maximumFractionDigits: 0 });
const level2 = new Intl.NumberFormat('en-US', { minimumFractionDigits: 2, maximumFractionDigits: 2 });
const level0 = new Intl.NumberFormat('en-US', { maximumFractionDigits: 0 });
/** Dollars in three significant figures: $286B, $1.14T, $47B. */
export const usd = (v) => (typeof v === 'number' ? usdCompact.format(v) : 'n/a');
/** Dollars to the dollar: $286,450,592,196 (the signed record; the exact-figure toggle). */
export const usdFull = (v) => (typeof v === 'number' ? usdWhole.format(v) : 'n/a');
export const band = (lo, hi) => `${usd(lo)} – ${usd(hi)}`;
export const words = (s) => (s ? s.charAt(0).toUpperCase() + s.slice(1).replace(/_/g, ' ') : '');
export const an = (word) => (/^[aeiou]/i.test(word) ? `an ${word}` : `a ${word}`);
export const STATUS = { private: 'Private', ipo_completed: 'IPO completed' };

/* ---------- dollars: three significant figures, the exact figure one click away ---------- */

const EXACT_ITEM = 'marks.exactDollars';

/** Whether the page shows whole dollars instead of three significant figures (kept for the tab). */
export function exactDollars() {
  try { return sessionStorage.getItem(EXACT_ITEM) === '1'; } catch { return false; }
}

/**
 * A dollar figure as a <data> element: three significant figures ($286B), its whole-dollar
 * value in `value` and in its title. Every "Exact dollars" toggle on the page (exactToggle)
 * switches every such figure between the two; a figure made while it is on is made exact.
 */
export function money(v) {
  if (typeof v !== 'number') return document.createTextNode('n/a');
  const compact = usd(v);
  const exact = usdFull(v);
  return el('data', {
    class: 'usd', value: String(v), title: exact, 'data-compact': compact, 'data-exact': exact,
    text: exactDollars() ? exact : compact,
  });
}

/** Two figures as a band: "$69.6B – $601B". */
export function moneyBand(lo, hi) {
  return [money(lo), ' – ', money(hi)];
}

function showExact(on) {
  try { sessionStorage.setItem(EXACT_ITEM, on ? '1' : '0'); } catch { /* fine */ }
  for (const node of document.querySelectorAll('data.usd')) {
    node.textContent = on ? node.dataset.exact : node.dataset.compact;
  }
  for (const button of document.querySelectorAll('button.exact-toggle')) {
    button.setAttribute('aria-pressed', on ? 'true' : 'false');
  }
}

/**
 * Wires every "Exact dollars" button of the page (button.exact-toggle, aria-pressed): one click
 * shows every dollar figure to the dollar, another back in three significant figures.
 */
export function initExactToggles() {
  const on = exactDollars();
  for (const button of document.querySelectorAll('button.exact-toggle')) {
    button.setAttribute('aria-pressed', on ? 'true' : 'false');
    button.addEventListener('click', () => showExact(button.getAttribute('aria-pressed') !== 'true'));
  }
}

/* ---------- events and outcomes in words ---------- */

export const EVENT_WORDS = {
  primary_round: 'Funding round',
  down_round: 'Down round',
  tender_offer: 'Tender offer',
  secondary_sale: 'Secondary sale',
  fund_mark: 'Fund mark',
  ipo: 'IPO',
  direct_listing: 'Direct listing',
  spac_listing: 'SPAC listing',
  acquisition: 'Sale agreed',
  acquisition_closed: 'Sale closed',
  acquisition_terminated: 'Sale terminated',
  bankruptcy: 'Bankruptcy',
  wind_down: 'Wind-down',
  retraction: 'Retraction',
  buyback: 'Buyback',
  internal_valuation: 'Internal valuation (409A)',
};
export const eventWords = (type) => EVENT_WORDS[type] || words(type);

/** What a source grade means (DESIGN section 2; the API's SourceGrade). */
export const GRADE_WORDS = {
  A: 'a primary document (the company\'s or an investor\'s own announcement, a filing, an exchange notice)',
  B: 'a major news organisation',
  C: 'another outlet with a masthead',
  D: 'a blog, an aggregator or a copy',
};

/** How firm a reported figure is (the API's ReportedAs); closed needs no flag. */
export const REPORTED_WORDS = { in_talks: 'in talks', estimate: 'estimate', announced: 'announced' };

/** The outcome's kind in a few words. */
export const OUTCOME_WORDS = {
  listed: 'Listed', sold: 'Sold', sale_agreed: 'Sale agreed', bankrupt: 'Bankrupt', wound_down: 'Wound down',
  listing_agreed: 'Listing agreed',
};

/** Whether an outcome is an agreed deal, sale or listing, still pending. */
export const pending = (o) => Boolean(o && (o.kind === 'sale_agreed' || o.kind === 'listing_agreed'));

/** Whether a company's private period ended (its latest mark is its last private one). */
export function ended(c) {
  const m = c.latest_mark || {};
  if (typeof m.current === 'boolean') return !m.current;
  return Boolean(c.outcome && !pending(c.outcome));
}

/**
 * Whether a company's mark holds the price of a pending agreed deal: a sale or listing agreed at
 * a disclosed price and not closed. Its mark is that price and adds nothing while the deal is
 * pending (the API's explanation, case sale_agreed or listing_agreed), so its 30-day change is no
 * drift: it is the price held. A deal agreed at an undisclosed price holds nothing: its mark runs
 * from the last value reported.
 */
export function holdsAgreedPrice(c) {
  const o = c.outcome;
  return Boolean(pending(o) && o.valuation_usd > 0 && !ended(c));
}

/**
 * What ended or fixed a company's private marks, with its day and value, as an array of
 * strings and figures: "Listed 2021-01-13 at $12B", "Sold 2026-03-11, price not disclosed",
 * "Bankrupt 2022-11-11, equity reported at $0". Empty when it has no outcome.
 */
export function outcomeParts(o) {
  if (!o) return [];
  const kind = OUTCOME_WORDS[o.kind] || words(o.event_type);
  const v = o.valuation_usd;
  const listing = o.event_type === 'direct_listing' ? ' (direct listing)' : o.event_type === 'spac_listing' ? ' (SPAC)' : '';
  switch (o.kind) {
    case 'listed':
      return [`${kind} ${o.occurred_on}${listing} at `, money(v)];
    case 'sold':
    case 'sale_agreed':
    case 'listing_agreed':
      return v > 0 ? [`${kind} ${o.occurred_on}${o.kind === 'listing_agreed' ? `${listing} at ` : ' for '}`, money(v), pending(o) ? ', pending' : '']
        : [`${kind} ${o.occurred_on}, price not disclosed${pending(o) ? ', pending' : ''}`];
    case 'bankrupt':
    case 'wound_down':
      return v > 0 ? [`${kind} ${o.occurred_on}, equity reported at `, money(v)]
        : [`${kind} ${o.occurred_on}, equity reported at $0`];
    default:
      return [`${kind} ${o.occurred_on}`];
  }
}

/** The same in plain text, three significant figures (for chart labels and readouts). */
export function outcomeText(o) {
  return outcomeParts(o).map((p) => (typeof p === 'string' ? p : p.dataset.compact)).join('');
}

/**
 * A company's fate in a few words, for a suggestion or a list of them: "Listed 2020-12-10",
 * "Sold 2026-03-11", "Sale agreed 2026-01-22, pending", "Bankrupt 2022-07-13", "Wound down
 * 2023-05-01"; '' for a company still private with no sale agreed.
 */
export function fateWords(c) {
  const o = c.outcome;
  if (!o) return c.status === 'ipo_completed' ? OUTCOME_WORDS.listed : '';
  return `${OUTCOME_WORDS[o.kind] || eventWords(o.event_type)} ${o.occurred_on}${pending(o) ? ', pending' : ''}`;
}

/**
 * A company's mark as a suggestion names it: today's value estimate ("$95.6B") while its marks
 * are current; for a listed, sold or failed company its last private mark, said so and dated
 * ("last private mark $18B, 2020-12-09"), never passed off as a value today.
 */
export function markWords(c) {
  const m = c.latest_mark;
  if (!m || typeof m.value_usd !== 'number') return '';
  return ended(c) ? `last private mark ${usd(m.value_usd)}${m.as_of_date ? `, ${m.as_of_date}` : ''}` : usd(m.value_usd);
}

/**
 * The content of a suggestion (the search's listbox, the suggestions of a page that names no
 * company): the name (with its aliases; with `link`, a link to the company's page), its fate
 * beside it (span.fate, classed by its kind) and, under them, the sector, the mark (markWords)
 * and the slug.
 */
export function companyOption(c, { link = false } = {}) {
  const fate = fateWords(c);
  const kind = c.outcome ? c.outcome.kind : c.status === 'ipo_completed' ? 'listed' : 'private';
  return [
    link
      ? el('a', { class: 'option-name', href: `/explore/${encodeURIComponent(c.slug)}`, text: displayName(c) })
      : el('span', { class: 'option-name', text: displayName(c) }),
    fate ? [' ', el('span', { class: `fate fate-${kind}`, 'data-kind': kind, text: fate })] : null,
    el('span', { class: 'sub', text: [c.sector, markWords(c), c.slug].filter(Boolean).join(' · ') }),
  ];
}

/** An index level or a rebased value: 1,234.56 (two decimals). */
export const level = (v) => (typeof v === 'number' ? level2.format(v) : 'n/a');
/** A level on an axis: whole numbers from 10 up. */
export const levelTick = (v) => (v >= 10 ? level0.format(v) : String(Number(v.toPrecision(2))));

export function pct(v) {
  if (typeof v !== 'number') return 'n/a';
  const sign = v > 0 ? '+' : v < 0 ? '−' : '';
  return `${sign}${Math.abs(v).toFixed(2)}%`;
}

export function pctCell(v, extra = '') {
  return el('td', { class: `num ${v > 0 ? 'up' : v < 0 ? 'down' : ''} ${extra}`.trim(), text: pct(v) });
}

/** A company as the search and the tables name it: its name, and its aliases that the name
 * does not already hold ("Nubank (Nu Holdings)"; "Anysphere (Cursor)" stays as it is). */
export function displayName(c) {
  const name = c.name || c.slug;
  const lower = name.toLowerCase();
  const extra = (Array.isArray(c.aliases) ? c.aliases : []).filter((a) => a && !lower.includes(a.toLowerCase()));
  return extra.length ? `${name} (${extra.join(', ')})` : name;
}

/* ---------- dates ---------- */

export function dayNumber(date) {
  const [y, m, d] = date.split('-').map(Number);
  return Date.UTC(y, m - 1, d) / DAY_MS;
}

export function dateOf(day) {
  return new Date(day * DAY_MS).toISOString().slice(0, 10);
}

export const isDate = (s) => typeof s === 'string' && /^\d{4}-\d{2}-\d{2}$/.test(s) && !Number.isNaN(Date.parse(s));

/** Index of the entry of an ascending list of day numbers nearest to day d. */
export function nearestIn(days, d) {
  let lo = 0;
  let hi = days.length - 1;
  while (lo < hi) {
    const mid = (lo + hi) >> 1;
    if (days[mid] < d) lo = mid + 1;
    else hi = mid;
  }
  return lo > 0 && d - days[lo - 1] < days[lo] - d ? lo - 1 : lo;
}

/** Index of day d in an ascending list of day numbers, or -1. */
export function indexOfDay(days, d) {
  if (!days.length) return -1;
  const i = nearestIn(days, d);
  return days[i] === d ? i : -1;
}

/* ---------- chart ticks ---------- */

export function logTicks(l0, l1) {
  for (const factors of [[1, 2, 5], [1, 3], [1], [1, 1.5, 2, 3, 4, 5, 6, 8]]) {
    const ticks = [];
    for (let k = Math.floor(l0); k <= Math.ceil(l1); k += 1) {
      for (const f of factors) {
        const v = f * 10 ** k;
        if (Math.log10(v) >= l0 && Math.log10(v) <= l1) ticks.push(v);
      }
    }
    if (ticks.length >= 3 && ticks.length <= 8) return ticks;
    if (factors.length === 8) return ticks;
  }
  return [];
}

export const MONTHS = ['Jan', 'Feb', 'Mar', 'Apr', 'May', 'Jun', 'Jul', 'Aug', 'Sep', 'Oct', 'Nov', 'Dec'];

export function timeTicks(d0, d1, plotWidth) {
  const first = new Date(d0 * DAY_MS);
  const months = (d1 - d0) / 30.44;
  for (const step of [1, 2, 3, 6, 12, 24, 60, 120]) {
    const label = step >= 12 ? 44 : 72;
    if ((months / step) * label > plotWidth) continue;
    const ticks = [];
    let y = first.getUTCFullYear();
    let m = first.getUTCMonth() + 1;
    for (;;) {
      if (m === 12) { y += 1; m = 0; }
      const t = Date.UTC(y, m, 1) / DAY_MS;
      if (t > d1) break;
      if ((y * 12 + m) % step === 0) ticks.push([t, step >= 12 ? String(y) : `${MONTHS[m]} ${y}`]);
      m += 1;
    }
    return ticks;
  }
  return [];
}

/* ---------- the key: sessionStorage only ---------- */

let memoryKey = ''; // used only when sessionStorage is unavailable (then the key lasts one page view)

export function getKey() {
  try { return sessionStorage.getItem(KEY_ITEM) || ''; } catch { return memoryKey; }
}

function setKey(key) {
  try {
    sessionStorage.setItem(KEY_ITEM, key);
    sessionStorage.removeItem(USAGE_ITEM);
  } catch {
    memoryKey = key;
  }
}

function forgetKey() {
  memoryKey = '';
  try {
    sessionStorage.removeItem(KEY_ITEM);
    sessionStorage.removeItem(USAGE_ITEM);
  } catch { /* nothing stored */ }
}

/* ---------- the API ---------- */

export class ApiError extends Error {
  constructor(status, problem, retryAfter) {
    super(problem.detail || `HTTP ${status}`);
    this.status = status;
    this.problem = problem;
    this.retryAfter = retryAfter;
  }
}

const budget = { limit: null, remaining: null, quota: null };

/** The quota of a RateLimit-Policy header ("minute";q=10;w=60 gives 10), or null. */
function policyQuota(header) {
  const q = /;\s*q=(\d+)/.exec(header || '');
  return q ? Number(q[1]) : null;
}

/** GET with the key in the X-API-Key header and nowhere else; the Response, or an ApiError. */
async function get(path, accept, auth) {
  const headers = { Accept: accept };
  if (auth) headers['X-API-Key'] = getKey();
  let res;
  try {
    res = await fetch(path, { headers, credentials: 'omit', referrerPolicy: 'no-referrer' });
  } catch {
    throw new ApiError(0, { detail: 'The API could not be reached (network error). Check the connection and try again.' });
  }
  if (auth && res.headers.has('X-RateLimit-Limit')) {
    budget.limit = Number(res.headers.get('X-RateLimit-Limit'));
    budget.remaining = Number(res.headers.get('X-RateLimit-Remaining'));
    budget.quota = policyQuota(res.headers.get('RateLimit-Policy')) ?? budget.limit;
    showBudget();
  }
  if (!res.ok) {
    let body = null;
    try { body = await res.json(); } catch { body = null; }
    const retry = parseInt(res.headers.get('Retry-After') || '', 10);
    throw new ApiError(res.status, body && typeof body === 'object' ? body : {}, Number.isFinite(retry) ? retry : null);
  }
  return res;
}

/** GET a JSON document. */
export async function api(path, { auth = true } = {}) {
  const res = await get(path, 'application/json', auth);
  try { return await res.json(); } catch { return null; }
}

/** GET a text document (e.g. the log's signed checkpoint, text/plain), as sent. */
export async function apiText(path) {
  const res = await get(path, 'text/plain', true);
  return res.text();
}

/** An API error in words: what failed, why (the problem's detail), and what to do. */
export function problemWords(err, what) {
  const p = err.problem || {};
  const detail = p.detail || p.title || `HTTP ${err.status}`;
  switch (err.status) {
    case 0:
      return detail;
    case 401:
      return `The API did not accept this key: ${detail} Enter a valid key above.`;
    case 403:
      return p.code === 'tier_forbidden'
        ? `${what} is not included in this key's tier. ${detail}`
        : `${what}: access refused. ${detail}`;
    case 404:
      return `${what}: not found. ${detail}`;
    case 429: {
      const secs = err.retryAfter;
      const when = secs != null
        ? ` Retry after ${secs} second${secs === 1 ? '' : 's'} (at ${new Date(Date.now() + secs * 1000).toLocaleTimeString()}).`
        : ' Retry in a little while.';
      return `Too many requests for this key: the API says “${detail}”${when}`;
    }
    default:
      return `${what} failed (HTTP ${err.status}${p.code ? `, ${p.code}` : ''}): ${detail}`;
  }
}

/** Key-wide problems (401, 429) go to the page's alert; others to the section's own line. */
export function showError(err, what, target) {
  if (err.status === 401 || err.status === 429) {
    const alert = $('alert');
    const retry = err.status === 429 ? el('button', { type: 'button', class: 'secondary', id: 'retry' }, 'Retry') : null;
    alert.replaceChildren(el('span', { text: problemWords(err, what) }), retry ? ' ' : '', retry || '');
    if (retry) retry.addEventListener('click', () => location.reload());
    if (err.status === 401) { // let the visitor type another key at once
      dropUsage();
      changingKey = true;
      showKeyStatus();
      $('key-status').textContent = 'The API did not accept the key set for this tab: enter another, or forget it.';
    }
    if (target) say(target, `${what} could not be loaded (see above).`, 'error');
  } else if (target) {
    say(target, problemWords(err, what), err.status === 403 ? 'note' : 'error');
  }
}

/* ---------- the key's tier: learnt once per key and tab ---------- */

let usage = null;

export const getUsage = () => usage;

function dropUsage() {
  usage = null;
  try { sessionStorage.removeItem(USAGE_ITEM); } catch { /* nothing stored */ }
}

/** What the free tier may read (DESIGN section 4): listCompanies and getCompany, nothing else. */
export const FREE_SCOPES = ['companies:list', 'companies:read'];

/**
 * {tier, rate, scopes}, learnt once per key and tab (kept in sessionStorage), by asking only what
 * every tier may read first: /v1/companies?limit=1 (listCompanies). A free key's list answer
 * carries `universe_note` (the free tier lists its ten companies; no other tier's does): that
 * answer tells the pages the key is free, so it may read the list and a company's profile only
 * (FREE_SCOPES), and its budget is the RateLimit-Policy quota of that answer. /v1/usage, which
 * needs Research, is asked only of a key whose list answer had no such note; so a free key is
 * never sent a request it is certain to be refused (not even the key check).
 * scopes is null only when the answers said nothing (e.g. a 429: asked again on the next page).
 */
export async function loadUsage() {
  try {
    const cached = sessionStorage.getItem(USAGE_ITEM);
    if (cached) {
      usage = JSON.parse(cached);
      if (usage.tier === 'free' && !usage.scopes) usage.scopes = FREE_SCOPES; // kept by an older page
      return usage;
    }
  } catch { /* not cached */ }
  let known;
  try {
    const first = await api('/v1/companies?limit=1');
    if (first && typeof first.universe_note === 'string' && first.universe_note) {
      known = { tier: 'free', rate: budget.quota, scopes: FREE_SCOPES };
    } else {
      const u = await api('/v1/usage');
      known = { tier: u.tier, rate: u.rate_per_min, scopes: Array.isArray(u.scopes) ? u.scopes : [] };
    }
  } catch (err) {
    if (err.status === 401) throw err;
    if (err.status !== 403 || (err.problem && err.problem.code && err.problem.code !== 'tier_forbidden')) {
      return (usage = { tier: null, rate: null, scopes: null }); // e.g. 429: ask again later
    }
    // /v1/usage refused after all (a server whose free list carries no note): the key is free.
    const named = /tier \(([a-z]+)\)/i.exec((err.problem && err.problem.detail) || '');
    known = { tier: named ? named[1] : 'free', rate: budget.quota, scopes: FREE_SCOPES };
  }
  try { sessionStorage.setItem(USAGE_ITEM, JSON.stringify(known)); } catch { /* fine */ }
  return (usage = known);
}

/** true, false, or null when the key's scopes are unknown (then the API is asked). */
export function allows(scope) {
  return usage && usage.scopes ? usage.scopes.includes(scope) : null;
}

const TIER_FOR = {
  'marks:80': 'Research', 'marks:95': 'Pro', 'events:read': 'Pro', 'resolution:read': 'Enterprise', 'usage:read': 'Research',
};

export function needsTier(scope, what) {
  const tier = usage && usage.tier ? `this key's tier is ${usage.tier}` : 'this key does not have it';
  return `${what} needs ${an(TIER_FOR[scope])} key or above (scope ${scope}); ${tier}.`;
}

/* ---------- the key panel (#key-panel: web/key-panel.html, included in every page that reads the API) ---------- */

let changingKey = false; // the form is open again to replace a key

export function showKeyStatus() {
  const status = $('key-status');
  const has = Boolean(getKey());
  $('forget-key').hidden = !has;
  $('change-key').hidden = !has || changingKey;
  $('key-form').hidden = has && !changingKey;
  $('key-help').hidden = has && !changingKey;
  if (!has) {
    status.textContent = 'No key yet: enter an API key to load data.';
    return;
  }
  let text = 'A key is set for this tab.';
  if (usage && usage.tier) text = `Using ${an(usage.tier)} key${usage.rate ? ` (${usage.rate} requests a minute)` : ''}.`;
  if (usage && usage.scopes && !usage.scopes.includes('marks:80')) text += ' It reads the list and latest marks.';
  status.textContent = text;
  showBudget();
}

/** The budget line is not a live region: it changes with every request. */
function showBudget() {
  const line = $('key-budget');
  if (!line) return;
  line.textContent = getKey() && budget.limit != null
    ? `${budget.remaining} of ${budget.limit} requests left in this minute's budget.`
    : '';
}

/**
 * Wires the key panel: a key typed in is kept for the tab, "Change key" opens the form again,
 * "Forget key" drops it. `changed({ forgotten })` runs after either; the page reloads its data.
 */
export function initKeyPanel(changed) {
  $('key-form').addEventListener('submit', (event) => {
    event.preventDefault();
    const input = $('api-key');
    const key = input.value.trim();
    input.value = '';
    if (!key) {
      $('key-status').textContent = 'Enter a key first: it starts with vmk_.';
      return;
    }
    setKey(key);
    changingKey = false;
    usage = null;
    budget.limit = null;
    changed({ forgotten: false });
  });
  $('change-key').addEventListener('click', () => {
    changingKey = true;
    showKeyStatus();
    $('api-key').focus();
  });
  $('forget-key').addEventListener('click', () => {
    forgetKey();
    changingKey = false;
    usage = null;
    budget.limit = null;
    changed({ forgotten: true });
  });
}

/**
 * What every page that reads the API does before it shows its view (/explore, /compare,
 * /indices): the alert cleared and the key panel's state shown; with no key, nothing more (the
 * key panel is what the page shows, and #main stops being busy); with a key, its tier asked
 * (loadUsage, once per key and tab) and shown, then `show()` draws the page's view. A key check
 * that failed is said in the alert, and the view is not shown. `busy(+1 | -1)`, when given,
 * marks the page busy from the key check until the view is drawn.
 */
export async function keyThenView(show, { busy = null } = {}) {
  $('alert').replaceChildren();
  showKeyStatus();
  if (!getKey()) {
    $('main').removeAttribute('aria-busy');
    return;
  }
  if (busy) busy(1);
  try {
    try {
      await loadUsage();
    } catch (err) {
      showError(err, 'The key check');
      return;
    }
    showKeyStatus();
    await show();
  } finally {
    if (busy) busy(-1);
  }
}

export function showMeta(meta) {
  if (!meta) return;
  $('meta-note').textContent = `Data: ${meta.data_mode}, ${meta.provenance}; methodology ${meta.methodology_version}, `
    + `dataset ${meta.dataset_version}, as of ${meta.as_of}. ${meta.disclaimer || ''}`;
}

/* ---------- CSV ---------- */

/**
 * One CSV cell as the API writes it (RFC 4180; format/src/table.rs): text in double quotes with
 * a quote inside doubled, and a text that a spreadsheet would run as a formula (starting with
 * =, +, -, @, a tab or a carriage return) neutralised with a leading apostrophe; numbers and
 * booleans bare; a missing value an empty cell.
 */
export function csvCell(value) {
  if (value == null) return '';
  if (typeof value === 'number') return Number.isFinite(value) ? String(value) : '';
  if (typeof value === 'boolean') return value ? 'true' : 'false';
  let text = String(value);
  if (/^[=+\-@\t\r]/.test(text)) text = `'${text}`;
  return `"${text.replace(/"/g, '""')}"`;
}

/** A whole CSV file: the header row (column names, bare) and the rows, CRLF line ends. */
export function toCsv(columns, rows) {
  return [columns.join(','), ...rows.map((row) => row.map(csvCell).join(','))].map((line) => `${line}\r\n`).join('');
}

/** Hands text to the browser as a file download: a Blob, an object URL, an <a download>. */
export function saveFile(text, filename, type = 'text/csv;charset=utf-8') {
  const url = URL.createObjectURL(new Blob([text], { type }));
  const a = el('a', { href: url, download: filename, hidden: true });
  document.body.append(a);
  a.click();
  a.remove();
  setTimeout(() => URL.revokeObjectURL(url), 30000);
}

/**
 * The CSV form of an API route (Accept: text/csv), with the key. With `follow`, every page:
 * the next page's cursor is in X-Next-Cursor; the pages' rows are joined under one header.
 */
export async function fetchCsv(path, { follow = false } = {}) {
  let text = '';
  let next = path;
  for (let pages = 0; next && pages < 1000; pages += 1) {
    const res = await get(next, 'text/csv', true);
    const body = await res.text();
    if (!text) text = body;
    else text += body.slice(body.indexOf('\n') + 1); // the header row once
    const cursor = follow ? res.headers.get('X-Next-Cursor') : null;
    if (!cursor) break;
    const url = new URL(next, location.origin);
    url.searchParams.set('cursor', cursor);
    next = `${url.pathname}${url.search}`;
  }
  return text;
}

/** A file name from its parts: lower case, letters, digits and hyphens ("stripe-marks-80.csv"). */
export function fileName(...parts) {
  const stem = parts.filter((p) => p != null && p !== '').map((p) => String(p).toLowerCase()
    .normalize('NFKD').replace(/[\u0300-\u036f]/g, '')
    .replace(/[^a-z0-9.]+/g, '-')
    .replace(/^-+|-+$/g, '')).filter(Boolean).join('-');
  return `${stem || 'data'}.csv`;
}

/**
 * A "Download CSV" button: `make()` returns {text, filename} (fetching it from the API or
 * writing it here); the button says it is working meanwhile, and an error is said in words in
 * `status` (the line beside the button).
 */
export function downloadButton(button, status, make, what = 'The download') {
  button.addEventListener('click', async () => {
    if (button.disabled) return;
    button.disabled = true;
    button.setAttribute('aria-busy', 'true');
    status.className = 'hint';
    status.textContent = 'Preparing the file…';
    try {
      const { text, filename } = await make();
      saveFile(text, filename);
      const rows = Math.max(0, text.split('\r\n').filter(Boolean).length - 1);
      status.textContent = `Saved ${filename} (${rows} row${rows === 1 ? '' : 's'}).`;
    } catch (err) {
      status.className = 'hint error-text';
      status.textContent = err instanceof ApiError ? problemWords(err, what) : `${what} failed: ${err.message}`;
    } finally {
      button.disabled = false;
      button.removeAttribute('aria-busy');
    }
  });
}

/* ---------- the company search: a combobox with suggestions ---------- */

const SEARCHABLE = /[\p{L}\p{N}]/u;

/**
 * Suggestions as the visitor types (ARIA 1.2 combobox with a listbox popup). `input` is the
 * text field, `list` an empty <ul> after it, `status` a line for what happened (how many
 * matched, none, or an error in words). The API is asked with q= (debounced; answers kept per
 * query, so typing back costs nothing; a late answer to an older query is dropped).
 * Up and Down move through the suggestions, Enter picks the highlighted one (`onPick(company)`),
 * Escape closes the list, then clears the field.
 * `exclude()` returns slugs not to suggest (already chosen).
 */
export function companySearch({ input, list, status, onPick, limit = 8, exclude = () => [] }) {
  const cache = new Map();
  let timer = 0;
  let seq = 0;
  let items = [];
  let active = -1;

  setAttrs(input, {
    role: 'combobox', 'aria-autocomplete': 'list', 'aria-expanded': 'false', 'aria-controls': list.id,
    autocomplete: 'off', autocapitalize: 'off', spellcheck: 'false',
  });
  setAttrs(list, { role: 'listbox', 'aria-label': 'Suggestions' });
  list.hidden = true;

  const close = () => {
    list.hidden = true;
    input.setAttribute('aria-expanded', 'false');
    input.removeAttribute('aria-activedescendant');
    active = -1;
  };
  const highlight = (i) => {
    active = i;
    [...list.children].forEach((li, k) => li.setAttribute('aria-selected', k === i ? 'true' : 'false'));
    if (i >= 0) {
      input.setAttribute('aria-activedescendant', list.children[i].id);
      list.children[i].scrollIntoView({ block: 'nearest' });
    } else {
      input.removeAttribute('aria-activedescendant');
    }
  };
  const pick = (c) => {
    close();
    onPick(c);
  };
  const render = (query, companies) => {
    const skip = new Set(exclude());
    items = companies.filter((c) => !skip.has(c.slug));
    list.replaceChildren(...items.map((c, i) => el('li', {
      role: 'option', id: `${list.id}-${i}`, 'aria-selected': 'false', 'data-slug': c.slug,
    }, companyOption(c))));
    active = -1;
    input.removeAttribute('aria-activedescendant');
    if (items.length) {
      list.hidden = false;
      input.setAttribute('aria-expanded', 'true');
      status.textContent = `${items.length} suggestion${items.length === 1 ? '' : 's'} for “${query}”: Up and Down to choose, Enter to pick.`;
    } else {
      close();
      status.textContent = companies.length ? `Every company matching “${query}” is already chosen.` : `No company matches “${query}”.`;
    }
  };
  const lookup = async (query) => {
    const mine = (seq += 1);
    const cacheKey = query.toLowerCase();
    let companies = cache.get(cacheKey);
    if (!companies) {
      try {
        const data = await api(`/v1/companies?${new URLSearchParams({ q: query, limit: String(limit) })}`);
        companies = Array.isArray(data && data.companies) ? data.companies : [];
        cache.set(cacheKey, companies);
      } catch (err) {
        if (mine !== seq) return;
        close();
        status.textContent = problemWords(err, 'The search');
        return;
      }
    }
    if (mine !== seq || input.value.trim() !== query) return;
    render(query, companies);
  };

  input.addEventListener('input', () => {
    clearTimeout(timer);
    seq += 1; // an answer on its way is now stale
    const query = input.value.trim();
    if (!SEARCHABLE.test(query)) {
      close();
      status.textContent = '';
      return;
    }
    if (!getKey()) {
      status.textContent = 'Enter an API key above to search.';
      return;
    }
    timer = setTimeout(() => lookup(query), 250);
  });
  input.addEventListener('keydown', (ev) => {
    const open = !list.hidden && items.length > 0;
    switch (ev.key) {
      case 'ArrowDown':
        if (!items.length) return;
        ev.preventDefault();
        if (!open) { list.hidden = false; input.setAttribute('aria-expanded', 'true'); }
        highlight(active + 1 >= items.length ? 0 : active + 1);
        break;
      case 'ArrowUp':
        if (!open) return;
        ev.preventDefault();
        highlight(active <= 0 ? items.length - 1 : active - 1);
        break;
      case 'Enter':
        if (open && active >= 0) {
          ev.preventDefault();
          pick(items[active]);
        }
        break;
      case 'Escape':
        if (open) {
          ev.preventDefault();
          close();
        } else if (input.value) {
          ev.preventDefault();
          input.value = '';
          status.textContent = '';
        }
        break;
      case 'Tab':
        close();
        break;
      default:
    }
  });
  input.addEventListener('blur', () => setTimeout(close, 150));
  list.addEventListener('mousedown', (ev) => ev.preventDefault()); // keeps the focus in the field
  list.addEventListener('click', (ev) => {
    const li = ev.target.closest('li[role="option"]');
    if (!li) return;
    const i = [...list.children].indexOf(li);
    if (i >= 0) pick(items[i]);
  });
  list.addEventListener('mousemove', (ev) => {
    const li = ev.target.closest('li[role="option"]');
    const i = li ? [...list.children].indexOf(li) : -1;
    if (i >= 0 && i !== active) highlight(i);
  });

  return {
    /** The first suggestion shown, if any (for Enter with none highlighted). */
    first: () => (!list.hidden && items.length ? items[0] : null),
    close,
    clear: () => { input.value = ''; items = []; close(); status.textContent = ''; },
  };
}
