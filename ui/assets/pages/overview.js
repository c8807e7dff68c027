// Overview: the cluster at a glance, from the last hour's runs: fires a
// minute, failures, lag p50/p99, each node's share, open incidents and
// the next fires due.
import { h, svg, clear, api, qs, timeEl, ms, onEvent, debounce, table, statusClass } from '../lib.js';

export async function render(main) {
  async function load() {
    const now = Date.now();
    const hourAgo = new Date(now - 3600e3).toISOString();
    const soon = new Date(now + 600e3).toISOString();
    const [nodes, runs, incidents, upcoming] = await Promise.all([
      api('GET', '/nodes'),
      api('GET', '/runs' + qs({ finished_after: hourAgo, limit: 1000 })),
      api('GET', '/incidents' + qs({ status: 'OPEN', limit: 20 })).catch(() => ({ items: [] })),
      api('GET', '/runs' + qs({ status: 'SCHEDULED', planned: 'true', from: new Date(now).toISOString(), to: soon, limit: 1000 })),
    ]);
    const items = runs.items;
    const failed = items.filter(r => statusClass(r.status) === 'bad').length;
    const lags = items.filter(r => r.trigger === 'SCHEDULE' && r.started_at)
      .map(r => new Date(r.started_at) - new Date(r.scheduled_time)).sort((a, b) => a - b);
    const pct = p => lags.length ? lags[Math.min(lags.length - 1, Math.ceil(p / 100 * lags.length) - 1)] : null;
    const share = {};
    for (const r of items) if (r.node_id) share[r.node_id] = (share[r.node_id] || 0) + 1;
    const alive = nodes.items.filter(n => n.state === 'ALIVE').length;
    const next = upcoming.items.slice().reverse().slice(0, 10);

    clear(main, h('h1', {}, 'Overview'),
      h('div', { class: 'tiles' },
        tile('Nodes alive', alive + ' of ' + nodes.items.length),
        tile('Runs ended, last hour', String(items.length) + (items.length === 1000 ? '+' : '')),
        tile('Failures, last hour', h('span', { class: failed ? 'bad-text' : '' }, String(failed))),
        tile('Lag p50 / p99', ms(pct(50)) + ' / ' + ms(pct(99))),
        tile('Open incidents', h('a', { href: '#/incidents' }, String(incidents.items.length)))),
      h('section', { 'aria-labelledby': 'chart-h' }, h('h2', { id: 'chart-h' }, 'Runs a minute, last hour'), chart(items, now)),
      h('section', { 'aria-labelledby': 'lag-h', class: 'lag' }, h('h2', { id: 'lag-h' }, 'Fire lag p50 / p99, last hour'), lagChart(items, now, items.length === 1000)),
      h('div', { class: 'cols' },
        h('section', { 'aria-labelledby': 'nodes-h' }, h('h2', { id: 'nodes-h' }, 'Nodes'),
          table(['Node', 'State', 'Heartbeat', 'Share of runs'], nodes.items.map(n => h('tr', {},
            h('td', {}, h('code', {}, n.id)), h('td', {}, h('span', { class: 'badge ' + (n.state === 'ALIVE' ? 'ok' : 'off') }, n.state)),
            h('td', {}, timeEl(n.heartbeat_at, 'UTC', true)),
            h('td', { class: 'num' }, items.length ? Math.round(100 * (share[n.id] || 0) / items.length) + '%' : '—'))))),
        h('section', { 'aria-labelledby': 'due-h' }, h('h2', { id: 'due-h' }, 'Next fires due'),
          next.length ? h('ol', { class: 'times' }, next.map(r => h('li', {}, timeEl(r.scheduled_time, 'UTC', true), ' ',
            h('a', { href: '#/tasks/' + r.task_id }, 'task ' + r.task_id)))) : h('p', { class: 'empty' }, 'None planned in the next 10 minutes.'))),
      incidents.items.length ? h('section', {}, h('h2', {}, 'Open incidents'),
        h('ul', {}, incidents.items.map(i => h('li', {}, h('a', { href: '#/tasks/' + i.task_id }, i.task), ': ', i.rule, ' (', i.reason, ')')))) : null);
  }

  const refresh = debounce(() => load().catch(() => {}), 2000);
  const off = onEvent(ev => { if (ev.kind === 'run.finished') refresh(); });
  await load();
  return off;
}

function tile(label, value) {
  return h('div', { class: 'tile' }, h('div', { class: 'tile-label' }, label), h('div', { class: 'tile-value' }, value));
}

// chart draws runs ended per minute over the last hour, failures on top.
function chart(runs, now) {
  const ok = new Array(60).fill(0), bad = new Array(60).fill(0);
  for (const r of runs) {
    if (!r.finished_at) continue;
    const i = 59 - Math.floor((now - new Date(r.finished_at)) / 60e3);
    if (i < 0 || i > 59) continue;
    (statusClass(r.status) === 'bad' ? bad : ok)[i]++;
  }
  const top = Math.max(1, ...ok.map((n, i) => n + bad[i]));
  const W = 600, H = 120;
  const bw = W / 60;
  const label = runs.length + ' runs ended in the last hour, ' + bad.reduce((a, b) => a + b, 0) + ' failed; busiest minute ' + top;
  return svg('svg', { viewBox: `0 0 ${W} ${H}`, class: 'chart', role: 'img', 'aria-label': label },
    svg('title', {}, label),
    ok.map((n, i) => {
      const hOk = H * n / top, hBad = H * bad[i] / top;
      return [svg('rect', { x: i * bw + 1, y: H - hOk - hBad, width: bw - 2, height: hOk, class: 'bar-ok' }),
        svg('rect', { x: i * bw + 1, y: H - hBad, width: bw - 2, height: hBad, class: 'bar-bad' })];
    }));
}

// lagChart draws the fire lag (started minus scheduled) of the hour's
// scheduled runs, p50 and p99 for each five minutes, from the same runs
// the tiles read (the last 1,000 ended; it says so when it hit that).
function lagChart(runs, now, capped) {
  const STEPS = 12, STEP = 300e3;
  const per = Array.from({ length: STEPS }, () => []);
  for (const r of runs) {
    if (r.trigger !== 'SCHEDULE' || !r.started_at) continue;
    const i = STEPS - 1 - Math.floor((now - new Date(r.scheduled_time)) / STEP);
    if (i >= 0 && i < STEPS) per[i].push(new Date(r.started_at) - new Date(r.scheduled_time));
  }
  const pct = (xs, p) => xs.length ? xs[Math.min(xs.length - 1, Math.ceil(p / 100 * xs.length) - 1)] : null;
  const points = per.map(xs => { xs.sort((a, b) => a - b); return { n: xs.length, p50: pct(xs, 50), p99: pct(xs, 99) }; });
  const have = points.filter(pt => pt.n);
  const note = capped ? ' (from the last 1,000 runs ended)' : '';
  if (!have.length) return h('p', { class: 'empty' }, 'No scheduled fire started in the last hour' + note + '.');
  const worst = Math.max(...have.map(pt => pt.p99)), top = Math.max(1, worst);
  const W = 900, H = 110, L = 44, sw = (W - L) / STEPS;
  const x = i => L + i * sw + sw / 2, y = v => 8 + (H - 8) * (1 - v / top);
  const line = (key, cls) => {
    const pts = points.map((pt, i) => pt.n ? x(i) + ',' + y(pt[key]) : null).filter(Boolean);
    return [svg('polyline', { points: pts.join(' '), class: 'lag-line ' + cls }),
      points.map((pt, i) => {
        if (!pt.n) return null;
        const tip = svg('title', {}, key + ' ' + ms(pt[key]) + ' of ' + pt.n + ' fires');
        return key === 'p50'
          ? svg('circle', { cx: x(i), cy: y(pt[key]), r: 3, class: 'lag-dot ' + cls }, tip)
          : svg('rect', { x: x(i) - 3, y: y(pt[key]) - 3, width: 6, height: 6, class: 'lag-dot ' + cls }, tip);
      })];
  };
  const all = per.flat().sort((a, b) => a - b);
  const summary = 'p50 ' + ms(pct(all, 50)) + ', p99 ' + ms(pct(all, 99)) + ' over ' + all.length + ' scheduled fires; worst five minutes p99 ' + ms(worst) + note;
  return [svg('svg', { viewBox: `0 0 ${W} ${H + 18}`, class: 'chart lag-chart', role: 'img', 'aria-labelledby': 'lag-title lag-desc' },
    svg('title', { id: 'lag-title' }, 'Fire lag p50 and p99 for each five minutes of the last hour'),
    svg('desc', { id: 'lag-desc' }, summary),
    svg('text', { x: L - 4, y: 12, 'text-anchor': 'end', class: 'axis' }, ms(top)),
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
