// registryd operator console. Every figure comes from the internal API,
// read with the key this tab keeps in sessionStorage (no cookie, so no
// cross-site request can use it): the read-only operator key, which every
// read here admits (the internal key works too). Values reach the page through
// textContent and attributes only: the Content-Security-Policy requires
// Trusted Types, so an innerHTML with data would throw. No read returns a
// token (the operator views carry fingerprints).
'use strict';

const KEY = 'registryd.consoleKey';
const REFRESH_MS = 10000;
const STATES = ['queued', 'sending', 'delivered', 'failed', 'unknown', 'expired', 'cancelled'];
const REASONS = ['feedback', 'signOut', 'permissionWithdrawn', 'deleted', 'movedToDevice', 'movedToUser',
  'deviceCap', 'activityCap', 'expired'];
// Feedback reasons: APNs' three, and FCM's InvalidToken.
const FEEDBACK = ['Unregistered', 'BadDeviceToken', 'DeviceTokenNotForTopic', 'InvalidToken', 'ExpiredToken'];
// Providers by platform, as deliveries and devices name them.
const PROVIDERS = { apns: 'APNs', fcm: 'FCM' };
const NOT_CONFIGURED = 'Delivery is not configured on this server (no --apns-key-file or --fcm-service-account).';
// Colour classes of the states: delivered green, failed red, waiting blue, the rest muted.
const STATE_COLORS = [0, 8, 2, 1, 4, 7, 9];
// A due delivery that waited longer than this means the sender is behind (it claims due ones at once).
const LATE_SECONDS = 60;
const samples = [];  // {devices, queued}: the overview's own history since this tab opened

// ---- DOM: elements built from parts; strings always become text nodes.

function el(tag, attrs, ...children) { return build(document.createElement(tag), attrs, children); }
function svg(tag, attrs, ...children) {
  return build(document.createElementNS('http://www.w3.org/2000/svg', tag), attrs, children);
}
function build(node, attrs, children) {
  for (const [name, value] of Object.entries(attrs || {})) {
    if (value !== null && value !== undefined && value !== false) node.setAttribute(name, String(value));
  }
  for (const child of children.flat()) {
    if (child === null || child === undefined || child === false) continue;
    node.append(child instanceof Node ? child : document.createTextNode(String(child)));
  }
  return node;
}

const number = (n) => Number(n).toLocaleString('en-US');
function bytes(n) {
  const units = ['B', 'KiB', 'MiB', 'GiB', 'TiB'];
  let value = n, unit = 0;
  while (value >= 1024 && unit < units.length - 1) { value /= 1024; unit++; }
  return (unit === 0 ? value : value.toFixed(1)) + ' ' + units[unit];
}
function ago(iso) {
  if (!iso) return 'never';
  const seconds = Math.round((Date.now() - Date.parse(iso)) / 1000);
  if (seconds < 0) return 'in ' + duration(-seconds);
  return duration(seconds) + ' ago';
}
function duration(seconds) {
  if (seconds < 90) return seconds + ' s';
  if (seconds < 5400) return Math.round(seconds / 60) + ' min';
  if (seconds < 129600) return Math.round(seconds / 3600) + ' h';
  return Math.round(seconds / 86400) + ' d';
}
const utc = (iso) => iso ? iso.replace('T', ' ').replace(/\.\d+Z$/, 'Z') : '—';
const when = (iso) => iso ? el('span', { class: 'when', title: iso }, utc(iso), el('span', { class: 'muted' }, ' (' + ago(iso) + ')'))
  : el('span', { class: 'muted' }, 'never');
// A figure as a tile: [data-figure=name] holds what a person reads (the browser test reads it too).
const tile = (name, text, label) =>
  el('div', { class: 'card' }, el('div', { class: 'figure', 'data-figure': name }, text), el('div', { class: 'label' }, label));
const figure = (name, value, label) => tile(name, number(value), label);
const badge = (text) => el('span', { class: 'badge ' + text }, text);
const card = (title, ...children) => el('div', { class: 'card' }, el('h3', null, title), ...children);

function table(headers, rows, numeric = []) {
  return el('table', null,
    el('thead', null, el('tr', null, headers.map((h, i) => el('th', { class: numeric.includes(i) ? 'num' : null }, h)))),
    el('tbody', null, rows.map((cells) =>
      el('tr', null, cells.map((c, i) => el('td', { class: numeric.includes(i) ? 'num' : null }, c))))));
}

// ---- Charts: inline SVG, one shape per value, colours from the stylesheet (c0…c9): key i
// gets colours[i], or c<i> when no colours are given.

const colour = (colours, i) => 'c' + (colours ? colours[i] : i);
function legend(keys, colours) {
  return el('div', { class: 'legend' }, keys.map((k, i) => el('span', null, el('span', { class: 'swatch ' + colour(colours, i) }), k)));
}

// Stacked vertical bars: one per point ({label, values: {key: n}}), `keys` in stack order.
function stackedBars(points, keys, { width = 640, height = 160, chart } = {}) {
  const top = Math.max(1, ...points.map((p) => keys.reduce((sum, k) => sum + (p.values[k] || 0), 0)));
  const plot = height - 18, step = width / Math.max(1, points.length), labelEvery = Math.ceil(points.length / 8);
  const shapes = [svg('line', { class: 'axis', x1: 0, y1: plot, x2: width, y2: plot }),
    svg('text', { x: 2, y: 10 }, number(top))];
  points.forEach((p, i) => {
    let y = plot;
    keys.forEach((k, j) => {
      const n = p.values[k] || 0;
      if (!n) return;
      const h = (n / top) * (plot - 14);
      y -= h;
      shapes.push(svg('rect', { class: 'c' + j, x: i * step + 1, y, width: Math.max(1, step - 2), height: h },
        svg('title', null, p.label + ': ' + number(n) + ' ' + k)));
    });
    if (i % labelEvery === 0) shapes.push(svg('text', { x: i * step + 1, y: height - 4 }, p.label));
  });
  return svg('svg', { viewBox: `0 0 ${width} ${height}`, width, height, role: 'img', 'data-chart': chart }, shapes);
}

// One horizontal bar split into parts ({key: n}), `keys` in order.
function splitBar(values, keys, { width = 360, chart, colours } = {}) {
  const total = keys.reduce((sum, k) => sum + (values[k] || 0), 0);
  const shapes = [svg('rect', { class: 'track', x: 0, y: 0, width, height: 14 })];
  let x = 0;
  keys.forEach((k, i) => {
    const w = total ? (values[k] || 0) / total * width : 0;
    if (w > 0) shapes.push(svg('rect', { class: colour(colours, i), x, y: 0, width: w, height: 14 }, svg('title', null, k + ': ' + number(values[k]))));
    x += w;
  });
  return svg('svg', { viewBox: `0 0 ${width} 14`, width, height: 14, role: 'img', 'data-chart': chart }, shapes);
}

// Horizontal bars with their labels and values, one per entry ([label, n]); the bars start after
// the longest label (at least 120 px in).
function bars(entries, { width = 360, chart } = {}) {
  const top = Math.max(1, ...entries.map((e) => e[1])), row = 22;
  const start = Math.max(120, ...entries.map(([label]) => Math.ceil(String(label).length * 6.5) + 10));
  const span = Math.max(40, width - start - 70);
  const shapes = entries.flatMap(([label, n], i) => [
    svg('text', { x: 0, y: i * row + 14 }, label),
    svg('rect', { class: 'track', x: start, y: i * row + 4, width: span, height: 12 }),
    svg('rect', { class: 'c' + i, x: start, y: i * row + 4, width: (n / top) * span, height: 12 }),
    svg('text', { x: start + span + 6, y: i * row + 14 }, number(n))]);
  return svg('svg', { viewBox: `0 0 ${width} ${entries.length * row}`, width, height: entries.length * row, role: 'img', 'data-chart': chart }, shapes);
}

function sparkline(values, { width = 300, height = 40, chart } = {}) {
  const top = Math.max(1, ...values), step = width / Math.max(1, values.length - 1);
  const points = values.map((v, i) => `${(i * step).toFixed(1)},${(height - 2 - (v / top) * (height - 4)).toFixed(1)}`);
  return svg('svg', { viewBox: `0 0 ${width} ${height}`, width, height, role: 'img', 'data-chart': chart },
    svg('polyline', { class: 'spark', points: points.join(' ') }));
}

// ---- The internal API.

class KeyRefused extends Error {}
class ApiError extends Error {
  constructor(status, code, message) { super(message); this.status = status; this.code = code; }
}

async function api(path) {
  const key = sessionStorage.getItem(KEY);
  if (!key) throw new KeyRefused('');
  let response;
  try {
    response = await fetch(path, { headers: { Authorization: 'Bearer ' + key }, cache: 'no-store', credentials: 'omit' });
  } catch (e) {
    throw new ApiError(0, 'unreachable', 'registryd did not answer (' + e.message + ')');
  }
  const body = await response.json().catch(() => ({}));
  const error = body.error || {};
  if (response.status === 401) throw new KeyRefused('The server refused this key: ' + (error.message || 'unauthenticated') + '.');
  if (response.status === 403) {
    throw new KeyRefused('Not a key for this console (' + (error.message || 'forbidden') + '): paste the operator key.');
  }
  if (!response.ok) throw new ApiError(response.status, error.code, error.message || response.statusText);
  return body;
}

// A delivery read, or null when the server has neither an APNs key nor an FCM service account
// (409 delivery_not_configured).
async function deliveryApi(path) {
  try { return await api(path); } catch (e) {
    if (e instanceof ApiError && e.code === 'delivery_not_configured') return null;
    throw e;
  }
}

// ---- Pages. Each returns the nodes of its page; the router swaps them in whole.

async function overview() {
  const [stats, removals, queue, recent] = await Promise.all([api('internal/v1/stats'),
    api('internal/v1/removals?bucket=hour&buckets=24'), deliveryApi('internal/v1/deliveries/queue'),
    deliveryApi('internal/v1/notifications?limit=50')]);
  const c = stats.counts;
  samples.push({ devices: c.devices, queued: queue ? queue.queued : 0 });
  if (samples.length > 90) samples.shift();

  const verdicts = [];
  const t = removals.totals, feedback = FEEDBACK.filter((r) => t.feedbackReasons[r]).map((r) => `${r} ${number(t.feedbackReasons[r])}`);
  verdicts.push([t.reasons.feedback ? 'warn' : 'ok', `APNs and FCM removed ${number(t.reasons.feedback)} token(s) in the last 24 h` +
    (feedback.length ? ` (${feedback.join(', ')})` : '') + `; ${number(t.removed)} removal(s) in all.`]);
  if (queue) {
    verdicts.push([queue.oldestWaitSeconds > LATE_SECONDS ? 'bad' : 'ok', queue.queued === 0 ? 'Delivery queue is empty.'
      : `${number(queue.queued)} deliveries queued; the oldest due one has waited ${duration(queue.oldestWaitSeconds)}.`]);
  } else {
    verdicts.push(['ok', NOT_CONFIGURED]);
  }
  verdicts.push([stats.lastSweepAt ? 'ok' : 'warn', stats.lastSweepAt ? `Last sweep ${ago(stats.lastSweepAt)}.` : 'No sweep has run yet.']);

  const nodes = [el('h2', null, 'Overview'),
    el('ul', { class: 'verdicts' }, verdicts.map(([level, text]) => el('li', { class: level }, text))),
    el('div', { class: 'grid' }, figure('devices', c.devices, 'devices'), figure('pushTokens', c.pushTokens, 'push tokens'),
      figure('pushToStartTokens', c.pushToStartTokens, 'push-to-start tokens'),
      figure('activityTokens', c.activityTokens, 'activity tokens'), figure('tombstones', c.tombstones, 'tombstones'))];
  const panels = [];
  if (queue) {
    const states = {};
    for (const n of recent.notifications) for (const s of STATES) states[s] = (states[s] || 0) + n.counts[s];
    panels.push(card('Delivery queue',
      el('div', { class: 'row' }, figure('queued', queue.queued, 'queued'), figure('sending', queue.sending, 'sending'),
        tile('oldestWait', duration(queue.oldestWaitSeconds), 'oldest due waited')),
      sparkline(samples.map((s) => s.queued), { chart: 'queued-trend' })));
    panels.push(card(`Deliveries by state, newest ${recent.notifications.length} notifications`,
      splitBar(states, STATES, { chart: 'deliveries-by-state', colours: STATE_COLORS }),
      legend(STATES.map((s) => `${s} ${number(states[s] || 0)}`), STATE_COLORS),
      el('p', null, el('a', { href: '#/notifications' }, 'Notifications →'))));
  }
  panels.push(card('Removals, last 24 h by hour', removalChart(removals, 360), legend(REASONS),
    el('p', null, el('a', { href: '#/removals' }, 'Removals over time →'))),
  card('Tokens by kind', bars([['push', c.pushTokens], ['push-to-start', c.pushToStartTokens], ['activity', c.activityTokens]],
    { chart: 'tokens-by-kind' })),
  card('Store', storeUse(stats), el('p', null, 'Last sweep: ', when(stats.lastSweepAt))),
  card('Devices since this tab opened', sparkline(samples.map((s) => s.devices), { chart: 'devices-trend' }),
    el('p', { class: 'muted' }, `${samples.length} sample(s), one every ${REFRESH_MS / 1000} s`)));
  return [...nodes, el('div', { class: 'panels' }, panels)];
}

function storeUse(stats) {
  // PostgreSQL reports its database size as both figures: there is no map to fill.
  if (stats.mapSizeBytes === stats.usedBytes) {
    return el('p', null, 'Database size ', el('strong', { 'data-figure': 'usedBytes', 'data-value': stats.usedBytes }, bytes(stats.usedBytes)));
  }
  const share = stats.usedBytes / Math.max(1, stats.mapSizeBytes);
  const meter = svg('svg', { viewBox: '0 0 360 14', width: 360, height: 14, role: 'img', 'data-chart': 'store-use' },
    svg('rect', { class: 'track', x: 0, y: 0, width: 360, height: 14 }),
    svg('rect', { class: share > 0.8 ? 'c1' : 'c0', x: 0, y: 0, width: Math.max(2, share * 360), height: 14 }));
  return el('div', null, meter,
    el('p', null, el('strong', { 'data-figure': 'usedBytes', 'data-value': stats.usedBytes }, bytes(stats.usedBytes)), ' used of a ',
      el('span', { 'data-figure': 'mapSizeBytes', 'data-value': stats.mapSizeBytes }, bytes(stats.mapSizeBytes)),
      ` map (${(share * 100).toFixed(1)}%; the map grows by itself)`));
}

function removalChart(removals, width) {
  const label = (iso) => removals.bucket === 'hour' ? iso.slice(11, 16) : iso.slice(5, 10);
  return stackedBars(removals.series.map((p) => ({ label: label(p.start), values: p.reasons })), REASONS,
    { width, chart: 'removals' });
}

async function user(userId) {
  const nodes = [el('h2', null, 'User'), lookupForm('user', userId, 'user id, e.g. alice')];
  if (!userId) return nodes;
  const id = encodeURIComponent(userId);
  const [devices, history] = await Promise.all([api(`internal/v1/users/${id}/devices?view=operator`),
    api(`internal/v1/users/${id}/history?limit=100`)]);
  const list = devices.devices, events = history.events;
  const withToken = list.filter((d) => d.pushTokenFingerprint).length;
  const apps = [...new Set(list.map((d) => d.appId))];
  const lastRemoval = events.find((e) => e.action === 'removed');
  let verdict = [withToken ? 'ok' : 'bad', `${userId}: ${list.length} device(s) in ${apps.length} app(s); ${withToken} hold a push token.`];
  if (!withToken && lastRemoval) {
    verdict = ['bad', `${userId} holds no push token: the last one went ${ago(lastRemoval.at)} (${lastRemoval.reason}` +
      (lastRemoval.feedbackReason ? ` ${lastRemoval.feedbackReason}` : '') + ` on ${lastRemoval.deviceId}).`];
  }
  nodes.push(el('ul', { class: 'verdicts' }, el('li', { class: verdict[0], 'data-figure': 'userVerdict' }, verdict[1])));
  for (const app of apps) {
    nodes.push(el('h3', null, 'App ', el('code', null, app)), table(['device', 'platform', 'environment', 'push token', 'push-to-start', 'activities', 'versions', 'last seen'],
      list.filter((d) => d.appId === app).map((d) => [
        el('span', { class: 'mono', 'data-device': d.deviceId }, d.deviceId), d.platform, d.environment,
        d.pushTokenFingerprint ? el('span', { class: 'mono' }, d.pushTokenFingerprint) : el('span', { class: 'muted' }, 'none'),
        d.pushToStartTokenFingerprint ? el('span', { class: 'mono' }, `${d.pushToStartTokenFingerprint} (${d.pushToStartEnvironment})`) : el('span', { class: 'muted' }, 'none'),
        number(d.activityCount), `${d.platform === 'fcm' ? 'Android' : 'iOS'} ${d.osVersion || '?'} · app ${d.appVersion || '?'}`, when(d.lastSeenAt)]), [5]));
  }
  if (!list.length) nodes.push(el('p', { class: 'muted' }, 'No device: the registry holds nothing for this user now.'));
  nodes.push(el('h3', null, `Token history (${events.length}, newest first)`), el('ol', { class: 'timeline', 'data-list': 'history' },
    events.map((e) => el('li', { class: e.action }, el('div', null, badge(e.action), ' ', e.kind, e.activityId ? ` (${e.activityId})` : '',
      ' on ', el('span', { class: 'mono' }, e.deviceId), e.appId !== 'default' ? ` · ${e.appId}` : '',
      e.reason ? ` · ${e.reason}` : '', e.feedbackReason ? ` ${e.feedbackReason}` : ''),
    el('div', { class: 'muted' }, when(e.at), ' · token ', el('span', { class: 'mono' }, e.tokenFingerprint))))));
  if (!events.length) nodes.push(el('p', { class: 'muted' }, 'No history.'));
  return nodes;
}

async function activity(activityId) {
  const nodes = [el('h2', null, 'Activity'), lookupForm('activity', activityId, 'activity id, e.g. match-42')];
  if (!activityId) return nodes;
  const counts = await api(`internal/v1/activities/${encodeURIComponent(activityId)}/token-counts`);
  const env = counts.environments;
  nodes.push(el('div', { class: 'grid' }, figure('activityTokens', counts.tokens, `update tokens of ${activityId}`),
    figure('production', env.production, 'production'), figure('sandbox', env.sandbox, 'sandbox')),
  card('By environment', bars([['production', env.production], ['sandbox', env.sandbox]], { chart: 'activity-environments' })),
  el('h3', null, 'By app'),
  table(['app', 'tokens', 'production', 'sandbox'],
    counts.apps.map((a) => [a.appId, number(a.tokens), number(a.environments.production), number(a.environments.sandbox)]), [1, 2, 3]));
  return nodes;
}

async function notifications(cursor) {
  const nodes = [el('h2', null, 'Notifications')];
  const [queue, page] = await Promise.all([deliveryApi('internal/v1/deliveries/queue'),
    deliveryApi('internal/v1/notifications?limit=20' + (cursor ? '&cursor=' + encodeURIComponent(cursor) : ''))]);
  if (!queue || !page) return [...nodes, el('p', { 'data-figure': 'deliveryOff' }, NOT_CONFIGURED)];
  nodes.push(el('div', { class: 'grid' }, figure('queued', queue.queued, 'queued'), figure('sending', queue.sending, 'sending'),
    tile('oldestWait', duration(queue.oldestWaitSeconds), 'oldest due waited')),
    table(['created', 'notification', 'app', 'type', 'deliveries', 'by state', ...STATES],
      page.notifications.map((n) => {
        const total = STATES.reduce((sum, s) => sum + n.counts[s], 0);
        return [when(n.createdAt), el('a', { href: '#/notification/' + n.id, class: 'mono', 'data-notification': n.id }, n.id.slice(0, 8)),
          n.appId, n.pushType, number(total), splitBar(n.counts, STATES, { width: 120, colours: STATE_COLORS }),
          ...STATES.map((s) => number(n.counts[s]))];
      }), [4, 6, 7, 8, 9, 10, 11, 12]),
    legend(STATES, STATE_COLORS));
  if (!page.notifications.length) nodes.push(el('p', { class: 'muted' }, 'No notification in the last 7 days.'));
  if (page.nextCursor) nodes.push(el('p', null, el('a', { href: '#/notifications/' + encodeURIComponent(page.nextCursor) }, 'Older →')));
  return nodes;
}

async function notification(id) {
  const page = await deliveryApi(`internal/v1/notifications/${encodeURIComponent(id)}?limit=500`);
  if (!page) return [el('p', { 'data-figure': 'deliveryOff' }, NOT_CONFIGURED)];
  const n = page.notification, reasons = {}, platforms = {};
  for (const d of page.deliveries) {
    if (d.reason) reasons[d.reason] = (reasons[d.reason] || 0) + 1;
    platforms[d.platform] = (platforms[d.platform] || 0) + 1;
  }
  const provider = (platform) => PROVIDERS[platform] || platform;
  return [el('h2', null, 'Notification ', el('span', { class: 'mono' }, n.id)),
    el('p', null, `${n.pushType} to ${n.appId}, created `, when(n.createdAt)),
    el('div', { class: 'grid' }, STATES.map((s) => figure(s, n.counts[s], s))),
    splitBar(n.counts, STATES, { width: 640, chart: 'notification-states', colours: STATE_COLORS }), legend(STATES, STATE_COLORS),
    Object.keys(reasons).length ? card('Reasons', bars(Object.entries(reasons), { chart: 'delivery-reasons' })) : '',
    card('Deliveries by platform', bars(Object.entries(platforms).map(([p, k]) => [provider(p), k]), { chart: 'delivery-platforms' })),
    el('h3', null, `Deliveries (${page.deliveries.length}${page.nextCursor ? ', first page' : ''})`),
    table(['user', 'device', 'app', 'kind', 'platform', 'token', 'environment', 'state', 'status', 'reason', 'attempts', 'updated'],
      page.deliveries.map((d) => [d.userId, el('span', { class: 'mono' }, d.deviceId), d.appId, d.kind + (d.activityId ? ` (${d.activityId})` : ''),
        el('span', { 'data-platform': d.platform }, provider(d.platform)),
        el('span', { class: 'mono' }, d.tokenFingerprint), d.environment, badge(d.state), d.status === null ? '—' : String(d.status),
        d.reason || '—', number(d.attempts), when(d.updatedAt)]), [10])];
}

async function removalsPage(choice) {
  const [bucket, buckets] = (choice || 'hour-48').split('-');
  const removals = await api(`internal/v1/removals?bucket=${bucket}&buckets=${buckets}`);
  const choices = [['hour-24', '24 hours'], ['hour-48', '48 hours'], ['hour-168', '7 days by hour'], ['day-14', '14 days'], ['day-90', '90 days']];
  const t = removals.totals;
  return [el('h2', null, 'Removals over time'),
    el('div', { class: 'controls' }, choices.map(([value, label]) =>
      el('a', { href: '#/removals/' + value, class: value === `${bucket}-${buckets}` ? 'current' : null }, label))),
    el('div', { class: 'grid' }, figure('removed', t.removed, 'removals'), figure('feedback', t.reasons.feedback, 'by APNs or FCM feedback')),
    card(`Removals per ${bucket}, by reason`, el('p', { class: 'muted' }, `${utc(removals.from)} to ${utc(removals.to)} (UTC)`),
      removalChart(removals, 960), legend(REASONS)),
    el('h3', null, 'Totals'),
    table(['reason', 'removals'], [...REASONS.map((r) => [r, el('span', { 'data-reason': r }, number(t.reasons[r]))]),
      ...FEEDBACK.map((r) => [`feedback: ${r}`, el('span', { 'data-feedback-reason': r }, number(t.feedbackReasons[r]))])], [1])];
}

function lookupForm(page, value, placeholder) {
  const input = el('input', { name: page, value: value || '', placeholder, autocomplete: 'off', spellcheck: 'false' });
  const form = el('form', { class: 'inline' }, input, el('button', { type: 'submit' }, 'Show'));
  form.addEventListener('submit', (event) => {
    event.preventDefault();
    if (input.value) location.hash = `#/${page}/${encodeURIComponent(input.value)}`;
  });
  return form;
}

// ---- Router, key and refresh.

const pages = { overview, user, activity, notifications, notification, removals: removalsPage };
// Pages that refresh by themselves; a page with a lookup form waits for the operator.
const live = new Set(['overview', 'notifications', 'notification', 'removals']);
let generation = 0;

async function render() {
  const [name, ...rest] = location.hash.replace(/^#\/?/, '').split('/');
  const page = pages[name] ? name : 'overview';
  for (const a of document.querySelectorAll('nav a')) a.classList.toggle('current', a.dataset.page === (page === 'notification' ? 'notifications' : page));
  const mine = ++generation;
  const target = document.getElementById('page');
  try {
    const nodes = await pages[page](rest.length ? decodeURIComponent(rest.join('/')) : '');
    if (mine !== generation) return;
    showKeyPanel(false);
    target.replaceChildren(...nodes);
    target.dataset.page = page;
    document.getElementById('updated').textContent = 'updated ' + new Date().toLocaleTimeString('en-GB');
  } catch (e) {
    if (mine !== generation) return;
    if (e instanceof KeyRefused) {
      sessionStorage.removeItem(KEY);
      target.replaceChildren();
      showKeyPanel(true, e.message);
    } else {
      target.replaceChildren(el('p', { class: 'alert', 'data-figure': 'error' },
        e instanceof ApiError ? `registryd answered ${e.status} ${e.code || ''}: ${e.message}` : `The console failed: ${e.message}`));
    }
  }
}

function showKeyPanel(show, message) {
  document.getElementById('key-panel').hidden = !show;
  document.getElementById('forget').hidden = show;
  document.getElementById('key-message').textContent = message || '';
  if (show) document.getElementById('key-input').focus();
}

document.addEventListener('DOMContentLoaded', () => {
  document.getElementById('key-form').addEventListener('submit', (event) => {
    event.preventDefault();
    const input = document.getElementById('key-input');
    if (!input.value.trim()) return;
    sessionStorage.setItem(KEY, input.value.trim());
    input.value = '';
    render();
  });
  document.getElementById('forget').addEventListener('click', () => {
    sessionStorage.removeItem(KEY);
    render();
  });
  window.addEventListener('hashchange', render);
  setInterval(() => {
    if (!document.hidden && sessionStorage.getItem(KEY) && live.has(document.getElementById('page').dataset.page)) render();
  }, REFRESH_MS);
  render();
});
