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
