// A run: its status and timings, every attempt with its HTTP status,
// body and error, the request Sundial sends (GET /runs/{id}/request:
// rendered, secrets masked) with "copy as curl", the state of an ASYNC
// run, cancel and rerun.
import { h, clear, api, can, timeEl, ms, badge, onEvent, debounce, keepFocus, toast, table, duration, FINAL } from '../lib.js';

export async function render(main, id) {
  let r, t, req;

  async function load() {
    r = await api('GET', '/runs/' + id);
    try { t = await api('GET', '/tasks/' + r.task_id); } catch { t = null; }
    req = t ? await api('GET', '/runs/' + id + '/request').catch(() => null) : null;
    draw();
  }

  function draw() {
    const zone = t ? t.timezone : 'UTC';
    const actions = [];
    if (can('operator')) {
      if (!FINAL.includes(r.status)) actions.push(h('button', { type: 'button', class: 'danger', onclick: cancel }, 'Cancel run'));
      if (t) actions.push(h('button', { type: 'button', onclick: rerun }, 'Rerun'));
    }
    clear(main,
      h('p', { class: 'crumbs' }, h('a', { href: '#/runs' }, 'Runs'), ' / ',
        t ? [h('a', { href: '#/tasks/' + t.id }, t.name), ' / '] : 'deleted task / ', '#' + r.id),
      h('div', { class: 'head' }, h('h1', {}, 'Run #' + r.id, ' ', badge(r.status)), h('div', { class: 'actions' }, actions)),
      h('dl', { class: 'def' }, [
        ['Task', t ? h('a', { href: '#/tasks/' + t.id }, t.name) : 'task ' + r.task_id + ' (deleted)'],
        ['Trigger', r.trigger + (r.rerun_of ? ' (rerun of #' + r.rerun_of + ')' : '')],
        ['Scheduled', timeEl(r.scheduled_time, zone, true)],
        ['Started', timeEl(r.started_at, zone)],
        ['Finished', timeEl(r.finished_at, zone)],
        ['Lag', ms(duration(r.scheduled_time, r.started_at))],
        ['Duration', ms(duration(r.started_at, r.finished_at))],
        ['Attempt / deliveries', r.attempt + ' / ' + r.deliveries],
        ['Node', r.node_id || '—'],
        r.skip_reason ? ['Skip reason', r.skip_reason] : null,
        r.http_status ? ['HTTP status', String(r.http_status)] : null,
        r.error ? ['Error', h('pre', { class: 'bad-text' }, r.error)] : null,
        r.response_body ? ['Response body', h('pre', {}, r.response_body)] : null,
        ['Idempotency-Key', h('code', {}, r.idempotency_key)],
        r.trace_id ? ['Trace', h('code', {}, r.trace_id)] : null,
        r.params ? ['Params', h('pre', {}, JSON.stringify(r.params, null, 2))] : null,
        r.status === 'WAITING_CALLBACK' ? ['Callback deadline', timeEl(r.due_at, zone, true)] : null,
        r.message ? ['Callback message', r.message] : null,
        r.result ? ['Callback result', h('pre', {}, JSON.stringify(r.result, null, 2))] : null,
        r.progress ? ['Progress', h('pre', {}, JSON.stringify(r.progress, null, 2))] : null,
        r.checkpoint ? ['Checkpoint', h('pre', {}, JSON.stringify(r.checkpoint, null, 2))] : null,
        r.cancel_requested ? ['Cancel', 'requested'] : null,
      ].filter(Boolean).map(([k, v]) => [h('dt', {}, k), h('dd', {}, v)])),
      h('h2', {}, 'Attempts'),
      r.attempts.length ? table(['Delivery', 'Status', 'HTTP', 'Error', 'Response body', 'Started', 'Finished', 'Node'],
        r.attempts.map(a => h('tr', { class: 'attempt' },
          h('td', { class: 'num' }, String(a.delivery)),
          h('td', {}, badge(a.status)),
          h('td', { class: 'num' }, a.http_status ? String(a.http_status) : '—'),
          h('td', {}, a.error ? h('span', { class: 'bad-text' }, a.error) : '—'),
          h('td', {}, a.response_body ? h('details', {}, h('summary', {}, a.response_body.length + ' bytes'), h('pre', {}, a.response_body)) : '—'),
          h('td', {}, timeEl(a.started_at, zone)),
          h('td', {}, timeEl(a.finished_at, zone)),
          h('td', {}, a.node_id || '—')))) : h('p', { class: 'empty' }, 'No delivery has ended yet.'),
      req ? [h('h2', {}, 'Request'),
        h('p', { class: 'muted' }, 'What delivery ' + req.delivery + ' sends, made from the task as it is now: every header, Sundial\'s included, and the rendered body; secrets as ***.'),
        h('pre', { class: 'curl', tabindex: '0', 'aria-label': 'The request as a curl command' }, req.curl),
        h('button', { type: 'button', onclick: () => copy(req.curl) }, 'Copy as curl')] : null);
  }

  async function cancel() {
    try {
      await api('POST', '/runs/' + r.id + '/cancel');
      toast('Cancel asked for run #' + r.id);
      load();
    } catch (e) { toast(e.message, true); }
  }

  async function rerun() {
    try {
      const n = await api('POST', '/runs/' + r.id + '/rerun');
      toast('Rerun: run #' + n.id);
      location.hash = '#/runs/' + n.id;
    } catch (e) { toast(e.message, true); }
  }

  const refresh = debounce(() => keepFocus(main, load).catch(() => {}), 200);
  const off = onEvent(ev => { if (ev.run && ev.run.id === Number(id)) refresh(); });
  await load();
  return off;
}

async function copy(text) {
  try {
    await navigator.clipboard.writeText(text);
    toast('Copied the curl command');
  } catch {
    const sel = getSelection();
    sel.selectAllChildren(document.querySelector('pre.curl'));
    toast('Selected the curl command: copy it with Ctrl+C');
  }
}
