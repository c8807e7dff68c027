// A task: its definition, next fires, recent runs and lag, its parents,
// children, alert rules and open incidents, and its actions (trigger with params, disable with a reason, enable, edit,
// delete, backfill with a dry run first).
import { h, svg, clear, api, qs, can, timeEl, fmtTime, ms, badge, strip, statusClass, onEvent, debounce, keepFocus, dialog, toast, errorBox, field, table, duration } from '../lib.js';

export async function render(main, id) {
  let t;
  const runsBox = h('section', { 'aria-labelledby': 'runs-h' });
  const nextBox = h('section', { 'aria-labelledby': 'next-h' });
  const lagBox = h('section', { 'aria-labelledby': 'lag-h' });
  const timelineBox = h('section', { 'aria-labelledby': 'timeline-h' });
  const linksBox = h('section', { 'aria-labelledby': 'links-h' });

  async function load() {
    t = await api('GET', '/tasks/' + id);
    draw();
    await Promise.all([loadRuns(), loadNext(), loadLinks()]);
  }

  function draw() {
    const st = t.state || {};
    const actions = [];
    if (can('operator')) {
      actions.push(h('button', { type: 'button', class: 'primary', onclick: trigger }, 'Trigger'));
      if (t.status === 'ENABLED') actions.push(h('button', { type: 'button', onclick: disable }, 'Disable'));
      if (t.status === 'DISABLED') actions.push(h('button', { type: 'button', onclick: enable }, 'Enable'));
      if (t.cron_expr) actions.push(h('button', { type: 'button', onclick: backfill }, 'Backfill'));
    }
    if (can('editor')) {
      actions.push(h('a', { class: 'button', href: '#/tasks/' + t.id + '/edit' }, 'Edit'));
      actions.push(h('button', { type: 'button', class: 'danger', onclick: del }, 'Delete'));
    }
    clear(main,
      h('p', { class: 'crumbs' }, h('a', { href: '#/tasks' }, 'Tasks'), ' / ', t.name),
      h('div', { class: 'head' }, h('h1', {}, t.name, ' ', badge(t.status)), h('div', { class: 'actions' }, actions)),
      t.status === 'DISABLED' && (t.disabled_reason || t.disabled_by)
        ? h('p', { class: 'banner', role: 'note' }, 'Disabled', t.disabled_by ? ' by ' + t.disabled_by : '',
          t.disabled_at ? [' at ', timeEl(t.disabled_at, t.timezone)] : '', t.disabled_reason ? ': ' + t.disabled_reason : '')
        : null,
      t.description ? h('p', {}, t.description) : null,
      h('div', { class: 'labels' }, Object.entries(t.labels || {}).map(([k, v]) => h('span', { class: 'chip' }, v ? k + '=' + v : k))),
      h('div', { class: 'tiles' },
        tile('Next fire', timeEl(st.next_fire_time || t.next_fire_time, t.timezone, true)),
        tile('Last outcomes', strip(st.recent)),
        tile('Lag p50 / p95', ms(st.lag_p50_ms) + ' / ' + ms(st.lag_p95_ms)),
        tile('Failures in a row', String(st.consecutive_failures || 0)),
        tile('Last success', timeEl(st.last_success_at, t.timezone, true))),
      timelineBox,
      h('div', { class: 'cols' }, definition(t), h('div', {}, nextBox, lagBox, linksBox)),
      runsBox);
  }

  function tile(label, value) {
    return h('div', { class: 'tile' }, h('div', { class: 'tile-label' }, label), h('div', { class: 'tile-value' }, value));
  }

  async function loadRuns() {
    const all = await api('GET', '/tasks/' + id + '/runs' + qs({ limit: 100 }));
    clear(lagBox, h('h2', { id: 'lag-h' }, 'Lag of its last fires'), lagHistogram(all.items));
    clear(timelineBox, h('h2', { id: 'timeline-h' }, 'Timeline of its last runs'), timeline(all.items, t.timezone));
    const res = { items: all.items.slice(0, 20) };
    t.state = t.state || {};
    t.state.recent = res.items.filter(r => ['SUCCESS', 'FAILED', 'TIMEOUT', 'FAILED_TIMEOUT', 'CANCELED', 'SKIPPED'].includes(r.status));
    const stripTile = main.querySelector('.tiles .tile:nth-child(2) .tile-value');
    if (stripTile) clear(stripTile, strip(t.state.recent));
    clear(runsBox, h('h2', { id: 'runs-h' }, 'Recent runs'),
      res.items.length ? table(['Run', 'Scheduled', 'Status', 'Trigger', 'HTTP', 'Lag', 'Duration'], res.items.map(r =>
        h('tr', {},
          h('td', {}, h('a', { class: 'row-link', href: '#/runs/' + r.id }, '#' + r.id)),
          h('td', {}, timeEl(r.scheduled_time, t.timezone)),
          h('td', {}, badge(r.status), r.skip_reason ? h('span', { class: 'muted small' }, ' ' + r.skip_reason) : null),
          h('td', {}, r.trigger),
          h('td', { class: 'num' }, r.http_status || '—'),
          h('td', { class: 'num' }, lagCounts(r) ? ms(duration(r.scheduled_time, r.started_at)) : '—'),
          h('td', { class: 'num' }, ms(duration(r.started_at, r.finished_at)))))) : h('p', { class: 'empty' }, 'No run yet.'));
  }

  async function loadNext() {
    clear(nextBox, h('h2', { id: 'next-h' }, t.status === 'ENABLED' ? 'Next 10 fires' : 'Its schedule\'s next 10 times (not planned: the task is ' + t.status.toLowerCase() + ')'));
    if (!t.cron_expr) {
      nextBox.append(h('p', {}, t.run_at ? ['Once, at ', timeEl(t.run_at, t.timezone, true)] : 'No schedule: it fires after its parents.'));
      return;
    }
    try {
      const r = await api('GET', '/cron/next' + qs({ expr: t.cron_expr, tz: t.timezone, dst: t.dst, count: 10 }));
      let times = r.next.map(at => ({ at }));
      if (t.status === 'ENABLED') {
        // The fires as the planner will make them: those planned already
        // (with their jitter and calendars), then the schedule's.
        const up = await api('GET', '/tasks/' + id + '/upcoming' + qs({ limit: 10 }));
        times = up.runs.map(x => ({ at: x.scheduled_time, run: x })).concat(up.next.map(at => ({ at }))).slice(0, 10);
      }
      nextBox.append(h('p', {}, r.description), h('ol', { class: 'times' }, times.map(x => h('li', {}, timeEl(x.at, t.timezone, true),
        x.run ? h('span', { class: 'muted' }, ' planned' + (x.run.status === 'SKIPPED' ? ', skipped: ' + x.run.skip_reason : '')) : null))));
    } catch (e) {
      nextBox.append(errorBox(e));
    }
  }

  async function loadLinks() {
    const [deps, inc, rules] = await Promise.all([
      api('GET', '/tasks/' + id + '/deps').catch(() => null),
      api('GET', '/incidents' + qs({ task_id: id, status: 'OPEN', limit: 20 })).catch(() => ({ items: [] })),
      api('GET', '/alert-rules' + qs({ task_id: id })).catch(() => ({ items: [] })),
    ]);
    const byName = n => h('a', { href: '#/tasks' + qs({ q: n }) }, n);
    clear(linksBox, h('h2', { id: 'links-h' }, 'Dependencies, alert rules and incidents'),
      h('dl', { class: 'def' },
        h('dt', {}, 'Parents'), h('dd', {}, deps && deps.parents.length
          ? [deps.parents.map((d, i) => [i ? ', ' : '', byName(d.task), d.on ? ' (on ' + d.on + ')' : '']), deps.join ? ' — join ' + deps.join : '']
          : 'none'),
        h('dt', {}, 'Children'), h('dd', {}, deps && deps.children.length ? deps.children.map((c, i) => [i ? ', ' : '', byName(c)]) : 'none'),
        h('dt', {}, 'Alert rules'), h('dd', { class: 'rules' }, rules.items.length
          ? rules.items.map((r, i) => [i ? ', ' : '', h('a', { href: '#/incidents' }, r.name), ' (' + r.condition.kind + (r.selector ? ', by selector ' + r.selector : '') + ' → ' + r.channels.join(', ') + ')'])
          : 'none'),
        h('dt', {}, 'Open incidents'), h('dd', {}, inc.items.length
          ? inc.items.map((x, i) => [i ? ', ' : '', h('a', { href: '#/incidents' }, x.rule + ': ' + x.reason)]) : 'none')));
  }

  async function trigger() {
    const params = h('textarea', { name: 'params', rows: 5, placeholder: '{"key": "value"}' });
    const run = await dialog('Trigger ' + t.name, [
      h('p', {}, 'Runs the task now, under its concurrency policy.'),
      field('Params (JSON, optional: replaces the task\'s for this run)', params)], [{ label: 'Trigger', primary: true, onclick: async () => {
      let body;
      if (params.value.trim()) {
        try { body = { params: JSON.parse(params.value) }; } catch (e) {
          throw Object.assign(new Error('not valid JSON: ' + e.message), { field: 'params' });
        }
      }
      return api('POST', '/tasks/' + t.id + '/trigger', body);
    } }]);
    if (run) {
      toast('Triggered: run #' + run.id + ' ' + run.status);
      loadRuns();
    }
  }

  async function disable() {
    const reason = h('input', { type: 'text', name: 'reason', maxlength: 1024 });
    const ok = await dialog('Disable ' + t.name, [h('p', {}, 'No fire is planned while it is disabled; it can still be triggered.'),
      field('Reason (recorded on the task and in the audit log)', reason)],
    [{ label: 'Disable', primary: true, onclick: () => api('POST', '/tasks/' + t.id + '/disable', reason.value.trim() ? { reason: reason.value.trim() } : undefined) }]);
    if (ok) { toast('Disabled ' + t.name); load(); }
  }

  async function enable() {
    try {
      await api('POST', '/tasks/' + t.id + '/enable');
      toast('Enabled ' + t.name);
      load();
    } catch (e) { toast(e.message, true); }
  }

  async function del() {
    const ok = await dialog('Delete ' + t.name, h('p', {}, 'Deletes the task and its planned fires. Its runs stay listed.'),
      [{ label: 'Delete', danger: true, onclick: () => api('DELETE', '/tasks/' + t.id) }]);
    if (ok !== null) { toast('Deleted ' + t.name); location.hash = '#/tasks'; }
  }

  async function backfill() {
    const now = new Date();
    now.setMilliseconds(0);
    const from = h('input', { type: 'text', name: 'from', value: new Date(now - 3600e3).toISOString().replace('.000', '') });
    const to = h('input', { type: 'text', name: 'to', value: now.toISOString().replace('.000', '') });
    const out = h('div', { class: 'preview', 'aria-live': 'polite' });
    const body = () => ({ from: from.value.trim(), to: to.value.trim() });
    const form = h('div', {}, h('p', {}, 'Runs the task\'s fire times in a past range, oldest first (at most 500). Times are RFC 3339.'),
      field('From', from), field('To', to), out);
    const preview = async () => {
      const r = await api('POST', '/tasks/' + t.id + '/backfill', Object.assign(body(), { dry_run: true }));
      clear(out, h('p', { class: 'dry-run' }, r.count + (r.count === 1 ? ' fire time would run (' : ' fire times would run (') + r.existing + ' backfilled before)'),
        h('ol', { class: 'times' }, r.items.slice(0, 20).map(i => h('li', {}, fmtTime(i.scheduled_time, t.timezone), i.run_id ? ' (run #' + i.run_id + ')' : ''))),
        r.items.length > 20 ? h('p', { class: 'muted' }, '… and ' + (r.items.length - 20) + ' more') : null);
      return false;
    };
    const done = await dialog('Backfill ' + t.name, form, [
      { label: 'Preview (dry run)', onclick: preview },
      { label: 'Run backfill', primary: true, onclick: () => api('POST', '/tasks/' + t.id + '/backfill', body()) }]);
    if (done) { toast('Backfill: ' + done.created + ' runs made'); loadRuns(); }
  }

  const refresh = debounce(() => keepFocus(main, load).catch(() => {}), 300);
  const off = onEvent(ev => { if (ev.task && ev.task.id === Number(id)) refresh(); });
  await load();
  return off;
}

function definition(t) {
  const rows = [
    ['Schedule', t.cron_expr ? h('code', {}, t.cron_expr) : t.run_at ? 'once' : '—'],
    ['Time zone', t.timezone], ['Daylight saving', t.dst],
    t.calendars && t.calendars.length ? ['Calendars', 'skips the days of ' + t.calendars.join(', ')] : null,
    t.jitter_seconds ? ['Jitter', 'up to ' + t.jitter_seconds + ' s'] : null,
    t.start_at || t.end_at ? ['Active', [t.start_at ? ['from ', timeEl(t.start_at, t.timezone)] : '', t.start_at && t.end_at ? ' ' : '',
      t.end_at ? ['until ', timeEl(t.end_at, t.timezone)] : '']] : null,
    t.max_runs ? ['Runs', t.fire_count + ' of at most ' + t.max_runs] : null,
    ['Target', h('code', {}, t.http_method + ' ' + t.target_url)],
    ['Execution', t.exec_type + (t.timeout_seconds ? ', timeout ' + t.timeout_seconds + ' s' : '') +
      (t.exec_type === 'ASYNC' ? ', callback within ' + (t.callback_timeout_sec ? t.callback_timeout_sec + ' s' : 'the server\'s default') : '')],
    t.signing_secret ? ['Signing secret', 'set (Standard Webhooks signature on every delivery)'] : null,
    t.oidc ? ['OIDC ID token', 'audience ' + (t.oidc.audience || 'the target URL')] : null,
    ['Headers', Object.keys(t.headers || {}).length ? h('pre', {}, Object.entries(t.headers).map(([k, v]) => k + ': ' + v).join('\n')) : '—'],
    ['Body template', t.body_template ? h('pre', {}, t.body_template) : '—'],
    ['Params', t.params ? h('pre', {}, JSON.stringify(t.params, null, 2)) : '—'],
    ['Policies', 'overlap ' + t.overlap_action + ', failure ' + t.failure_action + ', concurrency ' + t.concurrency_policy +
      (t.max_concurrency ? ' (max ' + t.max_concurrency + ')' : '') + ', catch-up ' + t.catch_up_mode],
    ['Retry policy', h('pre', {}, JSON.stringify(t.retry_policy))],
    t.pause_after_failures ? ['Auto-disable', 'after ' + t.pause_after_failures + ' failures in a row'] : null,
    t.priority ? ['Priority', String(t.priority)] : null,
    ['Version', String(t.version)],
  ].filter(Boolean);
  return h('section', { 'aria-labelledby': 'def-h' }, h('h2', { id: 'def-h' }, 'Definition'),
    h('dl', { class: 'def' }, rows.map(([k, v]) => [h('dt', {}, k), h('dd', {}, v)])));
}

// lagCounts tells whether run r's lag is one the task's lag p50/p95
// count, as the server does: a backfilled fire, or a child's (scheduled at
// its parents' time), is late on purpose.
function lagCounts(r) { return r.trigger !== 'BACKFILL' && r.trigger !== 'DEPENDENCY'; }

// lagHistogram draws how late the task's scheduled fires started, in
// buckets by order of magnitude.
function lagHistogram(runs) {
  const lags = runs.filter(r => lagCounts(r) && r.started_at).map(r => duration(r.scheduled_time, r.started_at));
  if (!lags.length) return h('p', { class: 'empty' }, 'No fire has started yet.');
  const buckets = [['< 10 ms', 10], ['< 100 ms', 100], ['< 1 s', 1000], ['< 10 s', 10000], ['≥ 10 s', Infinity]];
  const counts = buckets.map(() => 0);
  for (const l of lags) counts[buckets.findIndex(([, max]) => l < max)]++;
  const top = Math.max(...counts);
  const W = 360, H = 90, bw = W / buckets.length;
  const label = 'lag of ' + lags.length + ' fires: ' + buckets.map(([name], i) => counts[i] + ' ' + name).join(', ');
  return svg('svg', { viewBox: `0 0 ${W} ${H + 16}`, class: 'chart small-chart', role: 'img', 'aria-label': label },
    svg('title', {}, label),
    buckets.map(([name], i) => {
      const bh = top ? (H - 12) * counts[i] / top : 0;
      return [svg('rect', { x: i * bw + 6, y: H - bh, width: bw - 12, height: bh, class: 'bar-ok' }),
        svg('text', { x: i * bw + bw / 2, y: H + 12, 'text-anchor': 'middle', class: 'axis' }, name),
        counts[i] ? svg('text', { x: i * bw + bw / 2, y: H - bh - 2, 'text-anchor': 'middle', class: 'axis' }, String(counts[i])) : null];
    }));
}

// The timeline's marks: a shape and a word for each kind of status, so
// color is never the only sign.
const KINDS = [
  ['ok', 'succeeded', 'circle'],
  ['bad', 'failed', 'cross'],
  ['off', 'skipped or canceled', 'square'],
  ['busy', 'running or waiting', 'diamond'],
];

function shape(kind, cx, cy, r) {
  const [, , form] = KINDS.find(k => k[0] === kind);
  const cls = 'tl ' + kind;
  if (form === 'circle') return svg('circle', { cx, cy, r, class: cls });
  if (form === 'square') return svg('rect', { x: cx - r, y: cy - r, width: 2 * r, height: 2 * r, class: cls });
  if (form === 'diamond') return svg('polygon', { points: `${cx},${cy - r - 1} ${cx + r + 1},${cy} ${cx},${cy + r + 1} ${cx - r - 1},${cy}`, class: cls });
  const a = r * 0.45;
  return svg('polygon', { class: cls, points: [[-r, -r + a], [-r + a, -r], [0, -a], [r - a, -r], [r, -r + a], [a, 0], [r, r - a], [r - a, r], [0, a], [-r + a, r], [-r, r - a], [-a, 0]].map(([x, y]) => (cx + x) + ',' + (cy + y)).join(' ') });
}

// timeline places the task's last runs (up to 100) along their
// scheduled times, one mark each, shaped and colored by status, each a
// link to the run.
function timeline(runs, zone) {
  if (!runs.length) return h('p', { class: 'empty' }, 'No run yet.');
  const at = r => new Date(r.scheduled_time).getTime();
  const first = Math.min(...runs.map(at)), last = Math.max(...runs.map(at));
  const W = 900, H = 44, pad = 10, span = Math.max(1, last - first);
  const counts = {};
  for (const r of runs) counts[statusClass(r.status)] = (counts[statusClass(r.status)] || 0) + 1;
  const label = runs.length + (runs.length === 1 ? ' run from ' : ' runs from ') + fmtTime(new Date(first).toISOString(), zone) + ' to ' + fmtTime(new Date(last).toISOString(), zone) + ': ' +
    KINDS.filter(([k]) => counts[k]).map(([k, word]) => counts[k] + ' ' + word).join(', ');
  return [
    svg('svg', { viewBox: `0 0 ${W} ${H + 18}`, class: 'timeline', role: 'group', 'aria-labelledby': 'timeline-title' },
      svg('title', { id: 'timeline-title' }, label),
      svg('line', { x1: pad, x2: W - pad, y1: H / 2, y2: H / 2, class: 'axis-line' }),
      svg('text', { x: pad, y: H + 14, class: 'axis' }, fmtTime(new Date(first).toISOString(), zone)),
      svg('text', { x: W - pad, y: H + 14, 'text-anchor': 'end', class: 'axis' }, fmtTime(new Date(last).toISOString(), zone)),
      runs.map(r => {
        const name = 'run #' + r.id + ', ' + r.status + ', ' + fmtTime(r.scheduled_time, zone);
        return svg('a', { href: '#/runs/' + r.id, class: 'tl-run', 'aria-label': name, 'data-status': r.status, 'data-at': r.scheduled_time },
          svg('title', {}, name), shape(statusClass(r.status), pad + (W - 2 * pad) * (at(r) - first) / span, H / 2, 5));
      })),
    h('ul', { class: 'legend', 'aria-label': 'Legend' }, KINDS.map(([k, word]) => h('li', {},
      svg('svg', { width: 12, height: 12, viewBox: '0 0 12 12', 'aria-hidden': 'true' }, shape(k, 6, 6, 5)), ' ', word))),
    h('p', { class: 'small muted' }, label),
  ];
}
