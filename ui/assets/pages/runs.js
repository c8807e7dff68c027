// Runs: every task's, newest first, filtered by status, trigger, task,
// selector and time range, with a live tail.
import { h, clear, api, qs, timeEl, badge, onEvent, debounce, keepFocus, errorBox, field, showFieldError, table, ms, duration } from '../lib.js';

const STATUSES = ['', 'SUCCESS', 'FAILED', 'TIMEOUT', 'FAILED_TIMEOUT', 'CANCELED', 'SKIPPED', 'RUNNING', 'WAITING_CALLBACK', 'QUEUED', 'SCHEDULED', 'INTERRUPTED'];
const TRIGGERS = ['', 'SCHEDULE', 'MANUAL', 'CATCH_UP', 'BACKFILL', 'DEPENDENCY'];

export async function render(main, _id, params) {
  const f = {};
  const mk = (name, el) => { f[name] = el; el.value = params.get(name) || ''; return el; };
  const status = mk('status', h('select', { name: 'status' }, STATUSES.map(s => h('option', { value: s }, s || 'Any status'))));
  const trigger = mk('trigger', h('select', { name: 'trigger' }, TRIGGERS.map(s => h('option', { value: s }, s || 'Any trigger'))));
  const task = mk('task', h('input', { type: 'text', name: 'task', placeholder: 'name or id', spellcheck: 'false', autocomplete: 'off' }));
  if (!task.value && params.get('task_id')) task.value = params.get('task_id');
  const selector = mk('selector', h('input', { type: 'text', name: 'selector', placeholder: 'team=payments' }));
  const from = mk('from', h('input', { type: 'text', name: 'from', placeholder: '2026-01-01T00:00:00Z' }));
  const to = mk('to', h('input', { type: 'text', name: 'to', placeholder: 'RFC 3339' }));
  const tail = h('input', { type: 'checkbox', id: 'tail', checked: true });
  const err = h('div', { role: 'alert' });
  const body = h('div');
  const pager = h('div', { class: 'pager' });
  let cursors = [''], page = 0, next = '';

  const form = h('form', { class: 'filters', role: 'search', onsubmit: e => { e.preventDefault(); reload(true); } },
    field('Status', status), field('Trigger', trigger), field('Task', task), field('Label selector', selector),
    field('From', from), field('To', to),
    h('div', { class: 'field check' }, tail, h('label', { for: 'tail' }, 'Live tail')),
    h('button', { type: 'submit' }, 'Apply'));
  clear(main, h('h1', {}, 'Runs'), form, err, body, pager);
  for (const el of [status, trigger]) el.addEventListener('change', () => reload(true));

  function filters() {
    const o = {};
    for (const [k, el] of Object.entries(f)) if (el.value.trim()) o[k] = el.value.trim();
    return o;
  }

  // query is the filters as GET /runs takes them: a task given by name
  // is looked up (a live task's) for its id.
  async function query() {
    const o = filters();
    if (o.task) {
      if (/^\d+$/.test(o.task)) o.task_id = o.task;
      else {
        const found = await api('GET', '/tasks' + qs({ name: o.task, limit: 1 }));
        if (!found.items.length) throw Object.assign(new Error('no live task is named "' + o.task + '" (give the id of a deleted one)'), { field: 'task' });
        o.task_id = String(found.items[0].id);
      }
      delete o.task;
    }
    return o;
  }

  async function reload(fromStart) {
    if (fromStart) { cursors = ['']; page = 0; history.replaceState(null, '', '#/runs' + qs(filters())); }
    let res;
    try {
      res = await api('GET', '/runs' + qs(Object.assign({ limit: 50, cursor: cursors[page] }, await query())));
    } catch (e) {
      // At the filter the API names (from or to, say), else above the list.
      if (showFieldError(form, e)) clear(err);
      else clear(err, errorBox(e));
      return;
    }
    showFieldError(form, {});
    clear(err);
    next = res.next_cursor;
    const names = await taskNames(res.items.map(r => r.task_id));
    clear(body, res.items.length ? table(['Run', 'Task', 'Scheduled', 'Status', 'Trigger', 'HTTP', 'Duration'], res.items.map(r =>
      h('tr', {},
        h('td', {}, h('a', { class: 'row-link', href: '#/runs/' + r.id }, '#' + r.id)),
        h('td', {}, names[r.task_id] ? h('a', { href: '#/tasks/' + r.task_id }, names[r.task_id].name) : 'task ' + r.task_id),
        h('td', {}, timeEl(r.scheduled_time, names[r.task_id] ? names[r.task_id].timezone : 'UTC', true)),
        h('td', {}, badge(r.status), r.skip_reason ? h('span', { class: 'muted small' }, ' ' + r.skip_reason) : null),
        h('td', {}, r.trigger),
        h('td', { class: 'num' }, r.http_status ? String(r.http_status) : '—'),
        h('td', { class: 'num' }, ms(duration(r.started_at, r.finished_at)))))) : h('p', { class: 'empty' }, 'No run matches.'));
    clear(pager,
      h('button', { type: 'button', disabled: page === 0, onclick: () => { page--; reload(); } }, 'Previous page'),
      h('span', { class: 'muted' }, 'Page ' + (page + 1)),
      h('button', { type: 'button', disabled: !next, onclick: () => { cursors[page + 1] = next; page++; reload(); } }, 'Next page'));
  }

  const refresh = debounce(() => keepFocus(main, reload), 300);
  const off = onEvent(ev => { if (ev.run && tail.checked && page === 0) refresh(); });
  await reload();
  return off;
}

// taskNames reads the names and zones of the tasks of a page of runs.
const known = new Map();
async function taskNames(ids) {
  const missing = [...new Set(ids)].filter(id => !known.has(id));
  await Promise.all(missing.map(id => api('GET', '/tasks/' + id).then(t => known.set(id, { name: t.name, timezone: t.timezone }), () => known.set(id, null))));
  const out = {};
  for (const id of ids) out[id] = known.get(id);
  return out;
}
