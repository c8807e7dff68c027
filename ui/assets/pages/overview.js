// Overview: the cluster at a glance over the last hour, from GET /stats
// (what each node counted per minute, summed by the server): fires a
// minute with failures, lag p50/p99 for each five minutes, each node's
// share of the fires; open incidents and the next fires due.
import { h, svg, clear, api, qs, timeEl, ms, onEvent, debounce, table } from '../lib.js';

export async function render(main) {
  async function load() {
    const now = Date.now();
    const soon = new Date(now + 600e3).toISOString();
    const [nodes, perMinute, perFive, incidents, upcoming] = await Promise.all([
      api('GET', '/nodes'),
      api('GET', '/stats' + qs({ since: '1h', step: '1m' })),
      api('GET', '/stats' + qs({ since: '1h', step: '5m' })),
      api('GET', '/incidents' + qs({ status: 'OPEN', limit: 20 })).catch(() => ({ items: [] })),
      api('GET', '/runs' + qs({ status: 'SCHEDULED', planned: 'true', from: new Date(now).toISOString(), to: soon, limit: 1000 })),
    ]);
    const tot = perMinute.totals;
    const share = {};
    for (const n of perMinute.nodes) share[n.node_id] = n;
    const alive = nodes.items.filter(n => n.state === 'ALIVE').length;
    const next = upcoming.items.slice().reverse().slice(0, 10);

    clear(main, h('h1', {}, 'Overview'),
      h('div', { class: 'tiles' },
        tile('Nodes alive', alive + ' of ' + nodes.items.length, 'tile-nodes'),
        tile('Fires, last hour', String(tot.fires), 'tile-fires'),
        tile('Failures, last hour', h('span', { class: tot.failed ? 'bad-text' : '' }, String(tot.failed)), 'tile-failures'),
        tile('Lag p50 / p99', upTo(tot.lag_p50_ms) + ' / ' + upTo(tot.lag_p99_ms), 'tile-lag'),
        tile('Open incidents', h('a', { href: '#/incidents' }, String(incidents.items.length)), 'tile-incidents')),
      h('section', { 'aria-labelledby': 'chart-h' }, h('h2', { id: 'chart-h' }, 'Fires a minute, last hour'), chart(perMinute)),
      h('section', { 'aria-labelledby': 'lag-h', class: 'lag' }, h('h2', { id: 'lag-h' }, 'Fire lag p50 / p99, last hour'), lagChart(perFive)),
      h('div', { class: 'cols' },
        h('section', { 'aria-labelledby': 'nodes-h' }, h('h2', { id: 'nodes-h' }, 'Nodes'),
          table(['Node', 'State', 'Heartbeat', 'Share of fires'], nodes.items.map(n => h('tr', {},
            h('td', {}, h('code', {}, n.id)), h('td', {}, h('span', { class: 'badge ' + (n.state === 'ALIVE' ? 'ok' : 'off') }, n.state)),
            h('td', {}, timeEl(n.heartbeat_at, 'UTC', true)),
            h('td', { class: 'num share' }, tot.fires ? Math.round(100 * (share[n.id] ? share[n.id].share : 0)) + '%' : '—'))))),
        h('section', { 'aria-labelledby': 'due-h' }, h('h2', { id: 'due-h' }, 'Next fires due'),
          next.length ? h('ol', { class: 'times' }, next.map(r => h('li', {}, timeEl(r.scheduled_time, 'UTC', true), ' ',
            h('a', { href: '#/tasks/' + r.task_id }, 'task ' + r.task_id)))) : h('p', { class: 'empty' }, 'None planned in the next 10 minutes.'))),
      incidents.items.length ? h('section', {}, h('h2', {}, 'Open incidents'),
        h('ul', {}, incidents.items.map(i => h('li', {}, h('a', { href: '#/tasks/' + i.task_id }, i.task), ': ', i.rule, ' (', i.reason, ')')))) : null);
  }

  // The nodes write their counts every few seconds: a finished run
  // refreshes the page a little later, at most every five seconds.
  const refresh = debounce(() => load().catch(() => {}), 5000);
  const off = onEvent(ev => { if (ev.kind === 'run.finished') refresh(); });
  await load();
  return off;
}

function tile(label, value, cls) {
  return h('div', { class: 'tile ' + cls }, h('div', { class: 'tile-label' }, label), h('div', { class: 'tile-value' }, value));
}

// lagMs is a lag in milliseconds, rounded for reading.
function lagMs(v) {
  if (v == null) return '—';
  return ms(v < 10 ? Math.round(v * 10) / 10 : Math.round(v));
}

// upTo is a lag percentile, an upper estimate: "≤ 5 ms".
function upTo(v) {
  return v == null ? '—' : '≤ ' + lagMs(v);
}

// chart draws the fires started each minute of the last hour (a bar per
// minute), and the runs that failed in it (a narrower red bar in front).
function chart(stats) {
  const steps = stats.steps;
  const top = Math.max(1, ...steps.map(s => Math.max(s.fires, s.failed)));
  const W = 900, H = 110, L = 44, T = 8;
  const bw = (W - L) / steps.length;
  const busiest = Math.max(0, ...steps.map(s => s.fires));
  const label = stats.totals.fires + ' fires in the last hour, ' + stats.totals.failed + ' runs failed; busiest minute ' + busiest + ' fires';
  const y = v => T + (H - T) * (1 - v / top);
  return svg('svg', { viewBox: `0 0 ${W} ${H + 16}`, class: 'chart fires-chart', role: 'img', 'aria-label': label },
    svg('title', {}, label),
    svg('text', { x: L - 6, y: T + 4, 'text-anchor': 'end', class: 'axis' }, String(top)),
    svg('text', { x: L - 6, y: H, 'text-anchor': 'end', class: 'axis' }, '0'),
    svg('text', { x: L, y: H + 14, class: 'axis' }, '−60 min'),
    svg('text', { x: W, y: H + 14, 'text-anchor': 'end', class: 'axis' }, 'now'),
    steps.map((s, i) => {
      const at = new Date(s.start).toISOString().slice(11, 16) + ' UTC';
      return [s.fires ? svg('rect', { x: L + i * bw + 1, y: y(s.fires), width: Math.max(1, bw - 2), height: H - y(s.fires), class: 'bar-ok' },
        svg('title', {}, at + ': ' + s.fires + ' fires')) : null,
      s.failed ? svg('rect', { x: L + i * bw + bw / 4, y: y(s.failed), width: Math.max(1, bw / 2), height: H - y(s.failed), class: 'bar-bad' },
        svg('title', {}, at + ': ' + s.failed + ' failed')) : null];
    }));
}

// lagChart draws the fire lag (start minus due time) of the hour's
// scheduled fires, p50 and p99 for each five minutes, as the server
// merged them from every node's histograms: upper estimates, each the
// upper bound of its bucket (or the largest lag).
function lagChart(stats) {
  const points = stats.steps.map(s => ({ n: s.scheduled_fires, p50: s.lag_p50_ms, p99: s.lag_p99_ms }))
    .map(pt => ({ ...pt, n: pt.p50 == null ? 0 : pt.n }));
  const have = points.filter(pt => pt.n);
  if (!have.length) return h('p', { class: 'empty' }, 'No scheduled fire started in the last hour.');
  const STEPS = points.length;
  const worst = Math.max(...have.map(pt => pt.p99)), top = Math.max(1, worst);
  const W = 900, H = 110, L = 44, sw = (W - L) / STEPS;
  const x = i => L + i * sw + sw / 2, y = v => 8 + (H - 8) * (1 - v / top);
  const line = (key, cls) => {
    const pts = points.map((pt, i) => pt.n ? x(i) + ',' + y(pt[key]) : null).filter(Boolean);
    return [svg('polyline', { points: pts.join(' '), class: 'lag-line ' + cls }),
      points.map((pt, i) => {
        if (!pt.n) return null;
        const tip = svg('title', {}, key + ' at most ' + lagMs(pt[key]) + ' of ' + pt.n + ' fires');
        return key === 'p50'
          ? svg('circle', { cx: x(i), cy: y(pt[key]), r: 3, class: 'lag-dot ' + cls }, tip)
          : svg('rect', { x: x(i) - 3, y: y(pt[key]) - 3, width: 6, height: 6, class: 'lag-dot ' + cls }, tip);
      })];
  };
  const t = stats.totals;
  const summary = 'p50 at most ' + lagMs(t.lag_p50_ms) + ', p99 at most ' + lagMs(t.lag_p99_ms) + ' over ' + t.scheduled_fires +
    ' scheduled fires; worst five minutes p99 at most ' + lagMs(worst) + ' (upper estimates: the bound of the histogram bucket)';
  return [svg('svg', { viewBox: `0 0 ${W} ${H + 18}`, class: 'chart lag-chart', role: 'img', 'aria-labelledby': 'lag-title lag-desc' },
    svg('title', { id: 'lag-title' }, 'Fire lag p50 and p99 for each five minutes of the last hour'),
    svg('desc', { id: 'lag-desc' }, summary),
    svg('text', { x: L - 4, y: 12, 'text-anchor': 'end', class: 'axis' }, lagMs(top)),
    svg('text', { x: L - 4, y: H, 'text-anchor': 'end', class: 'axis' }, '0'),
    svg('text', { x: L, y: H + 14, class: 'axis' }, '−60 min'),
    svg('text', { x: W, y: H + 14, 'text-anchor': 'end', class: 'axis' }, 'now'),
    line('p99', 'p99'), line('p50', 'p50')),
  h('p', { class: 'lag-summary small' }, key('circle', 'p50'), ' p50 (solid) ', key('rect', 'p99'), ' p99 (dashed) — ', summary)];
}

function key(shape, cls) {
  return svg('svg', { width: 10, height: 10, viewBox: '0 0 10 10', 'aria-hidden': 'true' },
    shape === 'circle' ? svg('circle', { cx: 5, cy: 5, r: 4, class: 'lag-dot ' + cls }) : svg('rect', { x: 1, y: 1, width: 8, height: 8, class: 'lag-dot ' + cls }));
}
